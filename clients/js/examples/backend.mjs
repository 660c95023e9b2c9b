// backend.mjs — a game backend in a few lines: connect with an admin token,
// spawn a squad on the west side, walk it east, report progress and arrivals.
// Usage: node backend.mjs [tcp://127.0.0.1:7777] [TOKEN] [DISTANCE (24)]
// At the server's default speed (1.5 units/s) the default walk takes about 20 s.
import { CrowdClient } from '../src/index.js'; // installed from npm: '@crowd-sim/client'

const [address = 'tcp://127.0.0.1:7777', token = '', distanceArg = '24'] = process.argv.slice(2);
const distance = Number(distanceArg);
if (!(distance > 0)) {
  console.error(`backend: DISTANCE '${distanceArg}' is not a positive number`);
  process.exit(2);
}
const client = new CrowdClient(address, { token, clientName: 'backend example' });
client.on('state', (state, info) => { if (state === 'reconnecting') console.log('connection lost:', info.reason, '- reconnecting'); });

let welcome;
try {
  welcome = await client.connect(); // rejects at once if nothing (or not a crowd server) answers there
} catch (e) {
  console.error('backend: ' + e.message);
  process.exit(1);
}
console.log(`connected as client ${welcome.clientId}, server ${welcome.serverVersion}`);

// A 4 x 4 squad, 4 units apart, at x = -100; its targets DISTANCE units east.
const squad = [];
for (let i = 0; i < 16; i++) squad.push({ position: { x: -100 + (i % 4) * 4, y: Math.floor(i / 4) * 4 } });
const ids = await client.spawnAgents(squad);
console.log('spawned', ids.length, 'agents:', ids.join(' '));
const targets = ids.map((_, i) => ({ x: -100 + distance + (i % 4) * 4, y: Math.floor(i / 4) * 4 }));
const targetOf = new Map(ids.map((id, i) => [id, targets[i]]));

const waiting = new Set(ids);
let done;
const finished = new Promise((resolve) => { done = resolve; });
client.on('agentEvent', (e) => {
  if (e.kindName === 'UNREACHABLE') console.log(`agent ${e.agentId}: target unreachable`);
  if (e.kindName !== 'ARRIVED' || !waiting.delete(e.agentId)) return;
  console.log(`agent ${e.agentId} arrived at (${e.point.x.toFixed(1)}, ${e.point.y.toFixed(1)}), ${waiting.size} to go`);
  if (waiting.size === 0) done(true);
});

// Watch the squad's corner of the world, to say how far it still has to go.
await client.subscribe({ area: { minX: -110, minY: -10, maxX: -100 + distance + 30, maxY: 30 }, divisor: 10 });
await client.setTargets(ids, targets);
console.log(`walking ${distance} units east`);
const started = Date.now();
const progress = setInterval(() => {
  let left = 0, seen = 0;
  for (const id of waiting) {
    const a = client.world.agents.get(id), t = targetOf.get(id);
    if (a) { left += Math.hypot(t.x - a.x, t.y - a.y); seen++; }
  }
  const mean = seen ? ` (mean ${(left / seen).toFixed(1)} units to go)` : '';
  console.log(`${((Date.now() - started) / 1000).toFixed(0)} s: ${ids.length - waiting.size} of ${ids.length} arrived${mean}`);
}, 2000);

// Generous: the walk's time at 1.5 units/s, three times over, and half a minute.
const limitMs = (distance / 1.5) * 3000 + 30000;
const timer = setTimeout(() => done(false), limitMs);
const ok = await finished;
clearInterval(progress);
clearTimeout(timer);
console.log(ok ? 'squad arrived' : `gave up after ${limitMs / 1000} s: ${waiting.size} agents still walking`);
await client.removeAgents(ids).catch(() => {}); // leave the world as we found it
client.close();
process.exitCode = ok ? 0 : 1;
