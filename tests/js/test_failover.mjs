// test_failover.mjs — the package with several addresses against real crowd-server
// processes over TCP: connect() skips an address that refuses; after a SIGKILL the
// client reconnects to the next address that answers, presenting its resume key,
// and owns its agents there. The stand-in for a promoted standby is a second
// process on the killed one's --data-dir at another port (resume identities live
// in the data dir). With requireResumed a server that does not know the client
// (its own, fresh data dir) is passed over; with every address down the client
// gives up after reconnectMaxAttempts with a ConnectError of kind 'gave-up'.
// Every wait is for an event; the test runner's timeout only stops a hang.
// Usage: CROWD_SERVER=build/server/crowd-server node --test test_failover.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { crowd, startServer, stopServer, nextEvent, until } from './harness.mjs';

const { CrowdClient, ConnectError } = crowd;

/** A port nothing listens on: bound, then closed again. */
async function freePort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

const at = (port) => `tcp://127.0.0.1:${port}`;

async function kill9(server) {
  server.proc.kill('SIGKILL'); // a crash: no goodbye
  await stopServer(server.proc);
}

test('connect() skips an address that refuses and takes the next', async () => {
  const server = await startServer();
  const refusing = await freePort();
  const c = new CrowdClient(`${at(refusing)}, ${at(server.tcp)}`, { reconnect: false });
  const states = [];
  c.on('state', (s) => states.push(s));
  try {
    await c.connect();
    assert.equal(c.where, at(server.tcp));
    assert.equal(c.addresses.length, 2);
    assert.deepEqual(states, ['connecting', 'connected'], 'the next address at once, no back-off');
  } finally {
    c.close();
    await server.stop();
  }
});

test('connect() with every address refusing rejects with the last one\'s ConnectError', async () => {
  const a = await freePort(), b = await freePort();
  const c = new CrowdClient([at(a), at(b)], { reconnect: false });
  await assert.rejects(c.connect(), (e) => {
    assert.ok(e instanceof ConnectError);
    assert.equal(e.kind, 'refused');
    assert.equal(e.address, at(b));
    return true;
  });
  assert.equal(c.state, 'closed');
});

test('after a SIGKILL the client resumes at the next address that answers (the data dir on another port)', async () => {
  const dir = mkdtempSync(`${tmpdir()}/crowd-js-failover-`);
  const args = ['--data-dir', `${dir}/data`, '--token', 'p1=player'];
  const refusing = await freePort(), portB = await freePort();
  const a = await startServer(args);
  let b = null;
  const c = new CrowdClient([at(a.tcp), at(refusing), at(portB)], { token: 'p1', reconnectMinMs: 20, reconnectMaxMs: 200 });
  const reconnecting = [];
  c.on('state', (s, info) => { if (s === 'reconnecting') reconnecting.push(info); });
  try {
    const first = await c.connect();
    assert.equal(c.where, at(a.tcp));
    const ids = await c.spawnAgents([{ position: { x: 0, y: 0 } }, { position: { x: 5, y: 0 } }]);
    await c.subscribe();
    await until('our agents in view', () => c.world.size === 2);

    const back = nextEvent(c, 'reconnected');
    await kill9(a);
    b = await startServer(args, { tcp: `127.0.0.1:${portB}` });
    const [info] = await back;
    assert.equal(info.address, at(portB));
    assert.equal(info.resumed, true, 'the key was honoured');
    assert.equal(info.clientId, first.clientId);
    assert.equal(c.where, at(portB));
    assert.equal(c.welcome.resumed, true);
    // the lost address first, then the refusing one skipped at once inside the pass
    assert.equal(reconnecting[0].failedAddress, at(a.tcp));
    assert.equal(reconnecting[0].address, at(refusing));
    assert.ok(reconnecting[0].delayMs > 0, 'a wait before the first pass');
    const skipped = reconnecting.find((r) => r.failedAddress === at(refusing));
    assert.ok(skipped, 'the refusing address was tried');
    assert.equal(skipped.error.kind, 'refused');
    assert.equal(skipped.address, at(portB));
    assert.equal(skipped.delayMs, 0, 'no wait inside a pass');

    await c.setTargets(ids, { x: 30, y: 30 }); // its agents answer to it at B
    await until('its agents in view again, its subscription replayed',
                () => c.world.size === 2 && [...c.world.agents.values()].every((g) => g.owner === first.clientId));
  } finally {
    c.close();
    if (b) await b.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('requireResumed passes over a server that does not know the client', async () => {
  const dir = mkdtempSync(`${tmpdir()}/crowd-js-failover-`);
  const args = ['--data-dir', `${dir}/data`, '--token', 'p1=player'];
  const a = await startServer(args);
  const fresh = await startServer(['--data-dir', `${dir}/fresh`, '--token', 'p1=player']);
  const portC = await freePort();
  let cServer = null;
  const c = new CrowdClient([at(a.tcp), at(fresh.tcp), at(portC)],
                            { token: 'p1', reconnectMinMs: 20, reconnectMaxMs: 200, requireResumed: true });
  const failures = [];
  c.on('state', (s, info) => { if (s === 'reconnecting' && info.error) failures.push(info); });
  try {
    const first = await c.connect();
    await c.spawnAgents([{ position: { x: 0, y: 0 } }]);
    const back = nextEvent(c, 'reconnected');
    await kill9(a);
    cServer = await startServer(args, { tcp: `127.0.0.1:${portC}` });
    const [info] = await back;
    assert.equal(info.address, at(portC));
    assert.equal(info.resumed, true);
    assert.equal(info.clientId, first.clientId);
    const passed = failures.find((f) => f.failedAddress === at(fresh.tcp));
    assert.ok(passed, 'the fresh server was tried first');
    assert.equal(passed.error.kind, 'not-resumed');
  } finally {
    c.close();
    await fresh.stop();
    if (cServer) await cServer.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a Hello refused by one server (its connection left open) moves on to the next address', async () => {
  const { fakeServer } = await import('./harness.mjs');
  const full = await fakeServer(async (conn) => {
    const hello = await conn.next();
    conn.send({ error: { requestId: hello.requestId, code: crowd.ErrorCode.ERROR_SERVER_FULL, message: 'full' } });
  });
  const real = await startServer();
  const c = new CrowdClient([at(full.port), at(real.tcp)], { reconnect: false });
  try {
    await c.connect();
    assert.equal(c.where, at(real.tcp));
  } finally {
    c.close();
    await full.close();
    await real.stop();
  }
});

test('idleTimeoutMs: a server that goes silent without closing counts as lost', async () => {
  // A fake server that welcomes and then says nothing, its socket left open (a vanished machine).
  const { fakeServer, welcome } = await import('./harness.mjs');
  const silent = await fakeServer(async (conn) => { await conn.next(); conn.send(welcome({ resumeKey: 'k'.repeat(32) })); });
  const real = await startServer();
  const c = new CrowdClient([at(silent.port), at(real.tcp)], { idleTimeoutMs: 300, reconnectMinMs: 5, reconnectMaxMs: 20 });
  const reconnecting = nextEvent(c, 'state', (s) => s === 'reconnecting');
  try {
    await c.connect();
    assert.equal(c.where, at(silent.port));
    const back = nextEvent(c, 'reconnected');
    const [, info] = await reconnecting;
    assert.match(info.reason, /nothing from the server for 300 ms/);
    assert.equal(info.failedAddress, at(silent.port));
    const [r] = await back;
    assert.equal(r.address, at(real.tcp));
  } finally {
    c.close();
    await silent.close();
    await real.stop();
  }
});

test('every address down: the client gives up after reconnectMaxAttempts', async () => {
  const a = await startServer();
  const refusing = await freePort();
  const c = new CrowdClient([at(a.tcp), at(refusing)], { reconnectMinMs: 5, reconnectMaxMs: 20, reconnectMaxAttempts: 4 });
  const reconnecting = [];
  c.on('state', (s, info) => { if (s === 'reconnecting') reconnecting.push(info); });
  await c.connect();
  const closed = nextEvent(c, 'state', (s) => s === 'closed');
  await kill9(a);
  const [, info] = await closed;
  assert.ok(info.error instanceof ConnectError, String(info.error));
  assert.equal(info.error.kind, 'gave-up');
  assert.match(info.error.message, /4 attempts/);
  assert.deepEqual(reconnecting.map((r) => r.attempt), [1, 2, 3, 4]);
  assert.deepEqual(reconnecting.map((r) => r.address), [at(refusing), at(a.tcp), at(refusing), at(a.tcp)]);
  assert.deepEqual(reconnecting.map((r) => r.delayMs > 0), [true, false, true, false], 'a wait before each pass only');
  await assert.rejects(c.spawnAgents([{ position: { x: 0, y: 0 } }]));
});
