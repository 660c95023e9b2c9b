// test_websocket.mjs — the same client over WebSocket (ws://…/ws, subprotocol
// crowd.v1) in Node, where Node has a WebSocket class (20 with
// --experimental-websocket, 22 and newer); the browser test covers the transport
// in Chromium on every Node. Against a real crowd-server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crowd, startServer, nextEvent, until } from './harness.mjs';

const { CrowdClient, CrowdError, ErrorCode } = crowd;

test('over WebSocket: requests, snapshots, errors, and pause dropping to a keyframe', async () => {
  assert.equal(typeof WebSocket, 'function', 'this Node has a WebSocket class');
  const server = await startServer(['--demo', '--demo-agents', '40']);
  const c = new CrowdClient(`ws://127.0.0.1:${server.http}/ws`, { reconnect: false });
  try {
    const w = await c.connect();
    assert.ok(w.clientId > 0);
    await c.subscribe();
    const ids = await c.spawnAgents([{ position: { x: 1, y: 2 } }]);
    await until('the new agent in view', () => c.world.agents.has(ids[0]) && c.world.size === 41);
    await assert.rejects(c.removeAgents([424242]), (e) => e instanceof CrowdError && e.code === ErrorCode.ERROR_UNKNOWN_ID);
    assert.ok((await c.ping()).rttMs >= 0);
    // A WebSocket cannot stop reading: paused, the client drops snapshots; resumed, it asks for a keyframe.
    const keyframes = c.world.keyframes;
    c.pause();
    await until('snapshots dropped while paused', () => c.stats.snapshotsDropped > 2);
    c.resume();
    await nextEvent(c, 'snapshot', (world, info) => info.keyframe);
    assert.ok(c.world.keyframes > keyframes);
    assert.equal(c.stats.decodeErrors, 0);
    assert.equal(c.world.size, 41);
  } finally {
    c.close();
    await server.stop();
  }
});

test('over WebSocket, connect() rejects on its first failure: a closed port, the TCP port', async () => {
  const server = await startServer();
  const { ConnectError } = crowd;
  try {
    const net = await import('node:net');
    const srv = net.createServer();
    await new Promise((r) => srv.listen(0, '127.0.0.1', r));
    const closed = srv.address().port;
    await new Promise((r) => srv.close(r));
    for (const [url, kinds] of [[`ws://127.0.0.1:${closed}/ws`, ['refused', 'websocket']],
                                [`ws://127.0.0.1:${server.tcp}/ws`, ['websocket']]]) {
      const c = new CrowdClient(url, { connectTimeoutMs: 5000 });
      const states = [];
      c.on('state', (s) => states.push(s));
      await assert.rejects(c.connect(), (e) => e instanceof ConnectError && kinds.includes(e.kind) && e.message.includes(url));
      assert.deepEqual(states, ['connecting', 'closed']);
    }
  } finally {
    await server.stop();
  }
});
