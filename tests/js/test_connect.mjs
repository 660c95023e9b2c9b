// test_connect.mjs — what connect() says when it does not meet a crowd server,
// all on real sockets: a closed port, the real server's HTTP port, a TCP server
// that sends junk, one that speaks TLS, one that says nothing; each rejects the
// first connect() with a ConnectError of its kind and makes no second attempt.
// With {retry: true} it keeps trying until the server is there.
// Usage: CROWD_SERVER=build/server/crowd-server node --test test_connect.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { crowd, startServer, nextEvent } from './harness.mjs';

const { CrowdClient, ConnectError, ConnectionClosedError } = crowd;
let server;
before(async () => { server = await startServer(); });
after(async () => { if (server) await server.stop(); });

/** A TCP server on 127.0.0.1:0 that runs `onConnection(socket)` for each connection. */
async function rawServer(onConnection) {
  const sockets = new Set();
  let connections = 0;
  const srv = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    onConnection(socket);
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    port: srv.address().port,
    get connections() { return connections; },
    close: () => new Promise((r) => { for (const s of sockets) s.destroy(); srv.close(r); }),
  };
}

/** A port nothing listens on: bound, then closed again. */
async function closedPort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/** connect() rejects with a ConnectError of `kind`, message matching `re`; one attempt only. */
async function failsWith(address, kind, re, options = {}) {
  const c = new CrowdClient(address, options);
  const states = [];
  c.on('state', (s) => states.push(s));
  let err;
  await assert.rejects(c.connect(), (e) => { err = e; return true; });
  assert.ok(err instanceof ConnectError, `a ConnectError, got ${err && err.stack}`);
  assert.ok(err instanceof ConnectionClosedError, 'a ConnectionClosedError too');
  assert.equal(err.kind, kind, err.message);
  assert.equal(err.codeName, 'CONNECT');
  assert.match(err.message, re);
  assert.ok(err.message.includes(address), 'the message names the address: ' + err.message);
  assert.deepEqual(states, ['connecting', 'closed'], 'no reconnecting');
  assert.equal(c.state, 'closed');
  assert.equal(c.stats.reconnects, 0);
  return err;
}

test('a closed port: refused', async () => {
  const port = await closedPort();
  const e = await failsWith(`tcp://127.0.0.1:${port}`, 'refused', /connection refused/);
  assert.equal(e.cause.code, 'ECONNREFUSED');
});

test("the server's HTTP port: an HTTP server answered, use the TCP port or ws://", async () => {
  await failsWith(`tcp://127.0.0.1:${server.http}`, 'http', /HTTP server answered.*--listen/);
});

test('a TCP server that sends junk and keeps the connection open: not a crowd server, with what it sent', async () => {
  const junk = await rawServer((s) => s.write('SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n'));
  try {
    const e = await failsWith(`tcp://127.0.0.1:${junk.port}`, 'not-crowd', /not.*crowd.*"SSH-2\.0-OpenSSH/, { connectTimeoutMs: 2000 });
    assert.match(e.message, /no Welcome within 2000 ms/);
    assert.equal(junk.connections, 1);
  } finally { await junk.close(); }
});

test('a TCP server that sends bytes that are no frame and closes: not a crowd server', async () => {
  const junk = await rawServer((s) => s.end(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])));
  try {
    await failsWith(`tcp://127.0.0.1:${junk.port}`, 'not-crowd', /not a crowd server.*ff ff ff/);
    assert.equal(junk.connections, 1);
  } finally { await junk.close(); }
});

test('a TCP server whose first frame is not a ServerMessage: not a crowd server', async () => {
  const junk = await rawServer((s) => s.write(Buffer.from([0x04, 0x0a, 0xff, 0xff, 0xff])));
  try {
    await failsWith(`tcp://127.0.0.1:${junk.port}`, 'not-crowd', /not a crowd server/);
  } finally { await junk.close(); }
});

test('a TLS server (its alert record): TLS', async () => {
  // What a TLS server answers a ClientHello it cannot parse: an alert record.
  const tls = await rawServer((s) => s.once('data', () => s.end(Buffer.from([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x32]))));
  try {
    await failsWith(`tcp://127.0.0.1:${tls.port}`, 'tls', /TLS server answered/);
  } finally { await tls.close(); }
});

test('a server that accepts and closes without a word: closed before a Welcome', async () => {
  const mute = await rawServer((s) => s.once('data', () => s.end()));
  try {
    await failsWith(`tcp://127.0.0.1:${mute.port}`, 'closed', /closed the connection before a Welcome/);
  } finally { await mute.close(); }
});

test('a server that accepts and never answers: timeout', async () => {
  const silent = await rawServer(() => {});
  try {
    await failsWith(`tcp://127.0.0.1:${silent.port}`, 'timeout', /no Welcome within 300 ms/, { connectTimeoutMs: 300 });
  } finally { await silent.close(); }
});

test('{retry: true} keeps trying (reconnecting states carry the ConnectError) until the server is up', async () => {
  const port = await closedPort();
  const c = new CrowdClient(`tcp://127.0.0.1:${port}`, { reconnectMinMs: 10, reconnectMaxMs: 50 });
  const retried = nextEvent(c, 'state', (s, info) => s === 'reconnecting' && info.attempt === 2);
  const welcome = c.connect({ retry: true });
  const [, info] = await retried;
  assert.ok(info.error instanceof ConnectError && info.error.kind === 'refused', String(info.error));
  const own = await startServer([], { tcp: `127.0.0.1:${port}` });
  try {
    const w = await welcome;
    assert.ok(w.clientId > 0);
    assert.equal(c.state, 'connected');
    assert.ok(c.stats.reconnects >= 2);
  } finally {
    c.close();
    await own.stop();
  }
});

test('an unknown host: unreachable', async () => {
  // .invalid never resolves (RFC 6761); a resolver that cannot be asked says EAI_AGAIN.
  const e = await failsWith('tcp://no-such-host.invalid:7777', 'unreachable', /host/, { connectTimeoutMs: 60000 });
  assert.ok(['ENOTFOUND', 'EAI_AGAIN'].includes(e.cause.code), e.cause.code);
});

test('a Welcome of another protocol major: UNSUPPORTED_VERSION, final even with retry', async () => {
  const { fakeServer, welcome } = await import('./harness.mjs');
  let n = 0;
  const fake = await fakeServer(async (conn) => { n++; await conn.next(); conn.send(welcome({ protocolMajor: 2 })); });
  const c = new CrowdClient(`tcp://127.0.0.1:${fake.port}`, { reconnectMinMs: 10 });
  try {
    await assert.rejects(c.connect({ retry: true }), (e) => e instanceof crowd.CrowdError && e.codeName === 'UNSUPPORTED_VERSION' &&
                                                              /protocol 2/.test(e.message));
    assert.equal(c.state, 'closed');
    assert.equal(n, 1);
  } finally {
    c.close();
    await fake.close();
  }
});
