// backend.mjs — a game backend in a few lines: connect with an admin token,
// spawn a squad on the west side, walk it across the world, log arrivals.
// Usage: node backend.mjs [tcp://127.0.0.1:7777] [TOKEN] [DISTANCE (200)]
import { CrowdClient } from '../src/index.js'; // from npm: 'crowd-client'

const [address = 'tcp://127.0.0.1:7777', token = '', distance = '200'] = process.argv.slice(2);
const client = new CrowdClient(address, { token, clientName: 'backend example' });
client.on('state', (state, info) => console.log('connection:', state, info.reason || ''));

const welcome = await client.connect();
console.log(`connected as client ${welcome.clientId}, server ${welcome.serverVersion}`);

// A 4 x 4 squad, 4 units apart, at x = -100; its target DISTANCE units east.
const squad = [];
for (let i = 0; i < 16; i++) squad.push({ position: { x: -100 + (i % 4) * 4, y: Math.floor(i / 4) * 4 } });
const ids = await client.spawnAgents(squad);
console.log('spawned', ids.length, 'agents:', ids.join(' '));

const waiting = new Set(ids);
client.on('agentEvent', (e) => {
  if (e.kindName !== 'ARRIVED' || !waiting.delete(e.agentId)) return;
  console.log(`agent ${e.agentId} arrived at (${e.point.x.toFixed(1)}, ${e.point.y.toFixed(1)}), ${waiting.size} to go`);
  if (waiting.size === 0) { console.log('squad arrived'); client.close(); }
});
client.on('agentEvent', (e) => { if (e.kindName === 'UNREACHABLE') console.log(`agent ${e.agentId}: target unreachable`); });

await client.setTargets(ids, ids.map((_, i) => ({ x: -100 + Number(distance) + (i % 4) * 4, y: Math.floor(i / 4) * 4 })));
console.log('walking east');
