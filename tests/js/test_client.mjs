// test_client.mjs — the crowd-client package against a real crowd-server (TCP):
// every request type, errors with their codes, snapshots into the World,
// reconnect after a server restart, pause/resume dropping to a keyframe.
// Usage: CROWD_SERVER=build/server/crowd-server node --test test_client.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { crowd, startServer, stopServer, nextEvent, until, metric } from './harness.mjs';

const { CrowdClient, CrowdError, ConnectionClosedError, ErrorCode, Role, SteerMode } = crowd;
const TOKENS = ['--token', 'boss=admin', '--token', 'p1=player', '--token', 'p2=player', '--token', 'look=viewer'];
let server;
const clients = [];

async function connected(token, options = {}) {
  const c = new CrowdClient(`tcp://127.0.0.1:${server.tcp}`, { token, clientName: 'test ' + token, reconnect: false, ...options });
  clients.push(c);
  await c.connect();
  return c;
}

async function rejectsWith(promise, code, index) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof CrowdError, 'a CrowdError: ' + e);
    assert.equal(e.code, code, `code ${e.codeName}, expected ${crowd.errorCodeName(code)}`);
    assert.equal(e.codeName, crowd.errorCodeName(code));
    if (index !== undefined) assert.equal(e.index, index);
    return true;
  });
}

before(async () => { server = await startServer([...TOKENS, '--max-batch', '50']); });
after(async () => {
  for (const c of clients) c.close();
  if (server) await server.stop();
});

test('connect: Welcome with role, client id and world; state events in order', async () => {
  const c = new CrowdClient(`tcp://127.0.0.1:${server.tcp}`, { token: 'p1', reconnect: false });
  clients.push(c);
  const states = [];
  c.on('state', (s) => states.push(s));
  const w = await c.connect();
  assert.equal(w.protocolMajor, 1);
  assert.equal(w.role, Role.ROLE_PLAYER);
  assert.ok(w.clientId > 0);
  assert.equal(c.clientId, w.clientId);
  assert.ok(w.worldBounds && w.worldBounds.maxX > w.worldBounds.minX);
  assert.equal(w.precision, 100);
  assert.deepEqual(states, ['connecting', 'connected']);
  c.close();
  assert.equal(c.state, 'closed');
  assert.deepEqual(states, ['connecting', 'connected', 'closed']);
});

test('every request type is answered', async () => {
  const c = await connected('boss');
  await c.subscribe();
  const ids = await c.spawnAgents([{ position: { x: 0, y: 0 } }, { position: { x: 10, y: 0 }, radius: 2, maxSpeed: 3 },
                                   { position: { x: 20, y: 0 }, target: { x: 20, y: 30 }, steer: SteerMode.STEER_DIRECT }]);
  assert.equal(ids.length, 3);
  assert.ok(ids[0] < ids[1] && ids[1] < ids[2], 'ids in the order of the specs');
  assert.equal(await c.setTargets(ids, { x: 50, y: 50 }), undefined);
  await c.setTargets(ids, [{ x: 1, y: 1 }, { x: 2, y: 2 }, { x: 3, y: 3 }], { steer: SteerMode.STEER_DIRECT });
  await c.setVelocities(ids.slice(0, 1), { x: 1, y: 0 });
  await c.setVelocities(ids.slice(1), [{ x: 0, y: 1 }, { x: -1, y: 0 }]);
  const obstacle = await c.addObstacle([{ x: 100, y: 100 }, { x: 110, y: 100 }, { x: 105, y: 110 }]);
  assert.ok(obstacle > 0);
  await until('the obstacle in a snapshot', () => c.world.obstacles.some((o) => o.id === obstacle));
  await c.removeObstacle(obstacle);
  await until('the obstacle gone from snapshots', () => !c.world.obstacles.some((o) => o.id === obstacle));
  await until('the agents in the world view', () => ids.every((id) => c.world.agents.has(id)));
  const a = c.world.agents.get(ids[1]);
  assert.equal(a.radius, 2);
  assert.equal(a.owner, c.clientId);
  await c.removeAgents([ids[2]]);
  await until('the removed agent gone', () => !c.world.agents.has(ids[2]));
  const pong = await c.ping();
  assert.ok(pong.rttMs >= 0 && pong.serverTick > 0);
  await c.subscribe({ area: { minX: -5, minY: -50, maxX: 5, maxY: 50 }, divisor: 2 });
  await c.unsubscribe();
  // Minor 1 (navigation): answered once the server speaks it; before, refused as unknown.
  if (c.welcome.protocolMinor >= 1) {
    await c.setTargets(ids.slice(0, 2), { x: 40, y: 40 }); // walking somewhere: a path each
    const paths = await c.getPaths(ids.slice(0, 2));
    assert.deepEqual(paths.map((p) => p.agentId).sort(), ids.slice(0, 2).sort());
    await c.subscribeEvents({ allAgents: true });
    await c.unsubscribeEvents();
  } else {
    await rejectsWith(c.getPaths(ids), ErrorCode.ERROR_UNKNOWN_MESSAGE);
    await rejectsWith(c.subscribeEvents(), ErrorCode.ERROR_UNKNOWN_MESSAGE);
  }
  // The low-level door: any ClientMessage body.
  assert.deepEqual(await c.request({ removeAgents: { ids: [ids[0]] } }), []);
});

test('errors reject with their ErrorCode', async () => {
  const admin = await connected('boss');
  const p1 = await connected('p1');
  const p2 = await connected('p2');
  const viewer = await connected('look');
  const [mine] = await p1.spawnAgents([{ position: { x: -30, y: -30 } }]);
  await rejectsWith(p2.setTargets([mine], { x: 0, y: 0 }), ErrorCode.ERROR_NOT_OWNER);
  await rejectsWith(viewer.spawnAgents([{}]), ErrorCode.ERROR_PERMISSION_DENIED);
  await rejectsWith(p1.addObstacle([{ x: 0, y: 0 }, { x: 1, y: 0 }]), ErrorCode.ERROR_PERMISSION_DENIED);
  await rejectsWith(admin.removeAgents([987654]), ErrorCode.ERROR_UNKNOWN_ID);
  await rejectsWith(admin.addObstacle([{ x: 0, y: 0 }]), ErrorCode.ERROR_BAD_POLYGON);
  await rejectsWith(admin.spawnAgents([{}, { position: { x: 1e9, y: 0 } }]), ErrorCode.ERROR_INVALID_ARGUMENT, 1);
  await rejectsWith(admin.setTargets([mine], [{ x: 0, y: 0 }, { x: 1, y: 1 }]), ErrorCode.ERROR_INVALID_ARGUMENT);
  await rejectsWith(admin.spawnAgents(Array.from({ length: 51 }, () => ({}))), ErrorCode.ERROR_LIMIT_BATCH);
  await rejectsWith(admin.request({ hello: { protocolMajor: 1 } }), ErrorCode.ERROR_ALREADY_HELLO);
  await admin.removeAgents([mine]);
  await rejectsWith(admin.removeAgents([mine]), ErrorCode.ERROR_STALE_ID);
  // The connection survives every refusal.
  assert.ok((await admin.ping()).rttMs >= 0);
});

test('a refused Hello rejects connect() and does not reconnect', async () => {
  const c = new CrowdClient(`tcp://127.0.0.1:${server.tcp}`, { token: 'nope', reconnectMinMs: 10 });
  clients.push(c);
  await rejectsWith(c.connect(), ErrorCode.ERROR_BAD_TOKEN);
  assert.equal(c.state, 'closed');
  assert.equal(c.stats.reconnects, 0);
  await assert.rejects(c.spawnAgents([{}]), ConnectionClosedError);
});

test('snapshots: the world view follows the agents, interpolation glides between snapshots', async () => {
  const c = await connected('boss');
  await c.subscribe();
  const [id] = await c.spawnAgents([{ position: { x: 300, y: 300 }, target: { x: 400, y: 300 } }]);
  await until('the agent moving', () => { const a = c.world.agents.get(id); return a && a.x > 301; });
  const [w] = await nextEvent(c, 'snapshot');
  const a = w.agents.get(id);
  assert.ok(a.vx > 0, 'walking +x');
  const start = w.positionAt(a, w.receivedAt), end = w.positionAt(a, w.receivedAt + w.interval);
  assert.deepEqual(start, { x: a.fromX, y: a.fromY });
  assert.deepEqual(end, { x: a.x, y: a.y });
  const mid = w.positionAt(id, w.receivedAt + w.interval / 2);
  assert.ok(mid.x > start.x && mid.x < end.x);
  assert.equal(w.agentsIn({ minX: 299, minY: 299, maxX: 450, maxY: 301 }, w.receivedAt + w.interval).length, 1);
  assert.equal(c.stats.decodeErrors, 0);
});

test('reconnect after a server restart: back-off, Hello again, the subscription replayed', async () => {
  const own = await startServer(['--demo', '--demo-agents', '20']);
  const c = new CrowdClient(`tcp://127.0.0.1:${own.tcp}`, { reconnectMinMs: 20, reconnectMaxMs: 200 });
  clients.push(c);
  const states = [];
  c.on('state', (s, info) => states.push([s, info]));
  const first = await c.connect();
  await c.subscribe();
  await until('snapshots', () => c.world.size === 20);
  const reconnecting = nextEvent(c, 'state', (s) => s === 'reconnecting');
  assert.equal(await own.stop(), 0);
  const [, info] = await reconnecting;
  assert.ok(info.delayMs > 0 && info.attempt === 1 && info.reason);
  const again = nextEvent(c, 'welcome');
  const restarted = await startServer(['--demo', '--demo-agents', '25'], { tcp: `127.0.0.1:${own.tcp}` });
  try {
    const [w] = await again;
    assert.ok(w.clientId > 0);
    assert.notEqual(w, first);
    await until('snapshots of the new world, unasked', () => c.world.size === 25);
    assert.equal(c.state, 'connected');
    assert.ok(c.stats.reconnects >= 1);
    assert.equal(c.stats.decodeErrors, 0);
  } finally {
    c.close();
    await restarted.stop();
  }
});

test('a server restart on the same data dir: the reconnect presents the resume key and takes the agents back', async () => {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(`${tmpdir()}/crowd-js-resume-`);
  const args = ['--data-dir', `${dir}/data`, '--token', 'p1=player'];
  let own = await startServer(args);
  const c = new CrowdClient(`tcp://127.0.0.1:${own.tcp}`, { token: 'p1', reconnectMinMs: 20, reconnectMaxMs: 200 });
  clients.push(c);
  try {
    const first = await c.connect();
    assert.equal(first.resumed, false);
    assert.equal(first.resumeKey.length, 32, 'a resume key with --data-dir');
    const ids = await c.spawnAgents([{ position: { x: 0, y: 0 } }, { position: { x: 5, y: 0 } }]);
    const again = nextEvent(c, 'welcome');
    own.proc.kill('SIGKILL'); // a crash: no goodbye
    await stopServer(own.proc);
    own = await startServer(args, { tcp: `127.0.0.1:${own.tcp}` });
    const [w] = await again;
    assert.equal(w.resumed, true, 'the key was honoured');
    assert.equal(w.clientId, first.clientId);
    assert.equal(c.resumeKey, first.resumeKey);
    await c.setTargets(ids, { x: 30, y: 30 }); // its agents answer to it again (navigated on the recovered world)
    assert.ok((await c.ping()).rttMs >= 0, 'the server lives on');
  } finally {
    c.close();
    await own.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a paused consumer falls behind, the server skips, and the next snapshot is a keyframe', async () => {
  const own = await startServer(['--demo', '--demo-agents', '3000', '--keyframe-interval', '100000',
                                 '--output-soft-limit', '1k', '--output-soft-seconds', '600']);
  const c = new CrowdClient(`tcp://127.0.0.1:${own.tcp}`, { reconnect: false });
  clients.push(c);
  try {
    await c.connect();
    await c.subscribe();
    await until('a first keyframe', () => c.world.keyframes === 1);
    c.pause();
    await until('the server skipping snapshots', async () => (await metric(own.http, 'crowd_snapshots_skipped_total')) > 0, 60000);
    const keyframes = c.world.keyframes;
    c.resume();
    await until('a keyframe after the gap', () => c.world.keyframes > keyframes, 60000);
    assert.equal(c.stats.decodeErrors, 0, 'every snapshot decoded');
    assert.equal(c.world.size, 3000);
    assert.equal(c.state, 'connected');
  } finally {
    c.close();
    await own.stop();
  }
});

test('the backend example, with its default distance: progress lines, every arrival, exit 0, its agents removed', async () => {
  const { spawn } = await import('node:child_process');
  const example = new URL('../../clients/js/examples/backend.mjs', import.meta.url).pathname;
  const probe = await connected('look');
  const p = spawn(process.execPath, [example, `tcp://127.0.0.1:${server.tcp}`, 'boss'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  p.stdout.on('data', (d) => { out += d; });
  const exited = new Promise((resolve) => p.on('exit', (code) => resolve(code)));
  try {
    await until('the squad walking', () => /spawned 16 agents/.test(out) && /walking 24 units east/.test(out));
    await probe.subscribe({ area: { minX: -110, minY: -10, maxX: 120, maxY: 30 } });
    const owner = Number(out.match(/connected as client (\d+)/)[1]);
    const squad = () => [...probe.world.agents.values()].filter((a) => a.owner === owner);
    await until('the squad moving east', () => squad().length === 16 && squad().every((a) => a.vx > 0));
    // 24 units at the server's default 1.5 units/s: about 20 s; the example gives up (exit 1) after 78 s.
    assert.equal(await exited, 0, out);
    assert.match(out, /\d+ s: \d+ of 16 arrived \(mean [\d.]+ units to go\)/, 'progress while walking');
    assert.equal((out.match(/arrived at/g) || []).length, 16);
    assert.match(out, /squad arrived/);
    await until('the squad removed', () => squad().length === 0);
  } finally {
    p.kill();
  }
});

test('the backend example against the HTTP port: one line saying so, exit 1', async () => {
  const { execFile } = await import('node:child_process');
  const example = new URL('../../clients/js/examples/backend.mjs', import.meta.url).pathname;
  const r = await new Promise((resolve) => execFile(process.execPath, [example, `tcp://127.0.0.1:${server.http}`],
    (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr })));
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^backend: CONNECT: .*HTTP server answered/);
  assert.equal(r.stdout, '');
});
