// test_wire.mjs — the crowd-client package without a real server: framing, the
// World over the C encoder's snapshot vectors, and scripted fake servers
// (node:net) for AgentEvents, Paths, timeouts, the resume key, desync recovery
// and garbage that must not crash the client.
// Usage: node --test test_wire.mjs [SNAPSHOT_VECTORS.jsonl]
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { crowd, fakeServer, nextEvent, welcome, until } from './harness.mjs';

const { CrowdClient, FrameReader, FrameError, frame, World, RequestTimeoutError, ConnectionClosedError,
        AgentEventKind, ServerMessage, decodeServerMessage } = crowd;
const vectorsPath = process.argv[2];

test('FrameReader: frames split anywhere, several in one chunk, hostile prefixes refused', () => {
  const payloads = [new Uint8Array(0), new Uint8Array([1, 2, 3]), new Uint8Array(300).fill(7), new Uint8Array(70000).fill(9)];
  const stream = Buffer.concat(payloads.map((p) => Buffer.from(frame(p))));
  for (const step of [1, 2, 7, 1000, stream.length]) {
    const r = new FrameReader();
    const got = [];
    for (let i = 0; i < stream.length; i += step)
      for (const f of r.push(stream.subarray(i, i + step))) got.push(Buffer.from(f));
    assert.deepEqual(got.map((b) => b.length), payloads.map((p) => p.length), `chunks of ${step}`);
    assert.ok(got[3].every((b) => b === 9));
    assert.equal(r.buffered, 0);
  }
  assert.throws(() => new FrameReader(100).push(frame(new Uint8Array(101))), FrameError);
  assert.throws(() => new FrameReader().push(new Uint8Array([0x80, 0x80, 0x80, 0x80, 0x80, 0x01])), FrameError);
  assert.throws(() => new FrameReader().push(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x1f])), FrameError);
  assert.deepEqual(new FrameReader().push(new Uint8Array([0x80, 0x80])), [], 'an unfinished prefix waits');
});

test('World over the C encoder\'s vectors: same agents in world units; interpolation continuous', { skip: !vectorsPath && 'no vectors file given' }, () => {
  const lines = readFileSync(vectorsPath, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const w = new World();
  w.precision = 100;
  let now = 1000;
  for (const v of lines) {
    const msg = decodeServerMessage(Buffer.from(v.hex, 'hex'));
    const before = new Map([...w.agents].map(([id, a]) => [id, w.positionAt(a, now)]));
    w.apply(msg.snapshot, now);
    assert.equal(w.tick, v.tick);
    assert.equal(w.keyframe, v.keyframe);
    const got = [...w.agents.values()].map((a) => [a.id, Math.round(a.x * 100), Math.round(a.y * 100),
      Math.round(a.vx * 100), Math.round(a.vy * 100), Math.round(a.radius * 100), a.owner]);
    assert.deepEqual(got, v.agents, `tick ${v.tick}`);
    // No jump: each agent starts gliding from where it was drawn.
    for (const [id, p] of before) {
      const a = w.agents.get(id);
      if (a) assert.deepEqual(w.positionAt(a, now), p);
    }
    now += 33;
  }
  assert.ok(w.keyframes >= 2);
  assert.ok(w.interval > 30 && w.interval < 36, 'interval estimated from arrivals');
});

function serverMessage(obj) {
  return ServerMessage.encode(ServerMessage.fromObject(obj)).finish();
}

test('AgentEvents and Paths from hand-built frames reach their events and promises', async () => {
  const fake = await fakeServer(async (conn) => {
    const hello = await conn.next();
    assert.equal(hello.hello.protocolMinor, 2, 'the client speaks minor 2');
    assert.equal(hello.hello.world, '', 'no world named: the default world');
    conn.send(welcome());
    const getPaths = await conn.next();
    assert.deepEqual(getPaths.getPaths.ids, [4, 5]);
    conn.send({ agentEvents: { tick: 77, events: [
      { agentId: 4, kind: AgentEventKind.AGENT_EVENT_ARRIVED, point: { x: 1, y: 2 }, target: { x: 1, y: 2.5 }, owner: 7 },
      { agentId: 5, kind: AgentEventKind.AGENT_EVENT_UNREACHABLE, point: { x: 9, y: 9 }, target: { x: 50, y: 50 }, owner: 7 },
      { agentId: 6, kind: 42 }] } });
    conn.send({ paths: { requestId: getPaths.requestId, paths: [
      { agentId: 4, x: [0, 3, 6], y: [0, 4, 4], goal: { x: 6, y: 4 },
        corridor: [{ x: [0, 1, 1], y: [0, 0, 1] }, { x: [1, 2, 2, 1], y: [0, 0, 1, 1] }] },
      { agentId: 5, x: [9], y: [9], goal: { x: 9, y: 9 }, unreachable: true }] } });
  });
  const c = new CrowdClient(`tcp://127.0.0.1:${fake.port}`, { reconnect: false });
  try {
    await c.connect();
    const batch = nextEvent(c, 'agentEvents');
    const single = [];
    c.on('agentEvent', (e, tick) => single.push([e.agentId, e.kindName, tick]));
    const paths = await c.getPaths([4, 5]);
    const [{ tick, events }] = await batch;
    assert.equal(tick, 77);
    assert.deepEqual(events[0], { agentId: 4, kind: 1, kindName: 'ARRIVED', point: { x: 1, y: 2 }, target: { x: 1, y: 2.5 }, owner: 7 });
    assert.equal(events[1].kindName, 'UNREACHABLE');
    assert.deepEqual(events[1].point, { x: 9, y: 9 });
    assert.equal(events[2].kindName, '42', 'a kind from a newer server is passed on by number');
    assert.deepEqual(single, [[4, 'ARRIVED', 77], [5, 'UNREACHABLE', 77], [6, '42', 77]]);
    assert.deepEqual(paths[0], {
      agentId: 4, points: [{ x: 0, y: 0 }, { x: 3, y: 4 }, { x: 6, y: 4 }], goal: { x: 6, y: 4 }, unreachable: false,
      corridor: [[{ x: 0, y: 0 }, { x: 1, y: 0 }, { x: 1, y: 1 }], [{ x: 1, y: 0 }, { x: 2, y: 0 }, { x: 2, y: 1 }, { x: 1, y: 1 }]],
    });
    assert.equal(paths[1].unreachable, true);
  } finally {
    c.close();
    await fake.close();
  }
});

test('a request without an answer rejects with RequestTimeoutError; close() rejects the rest', async () => {
  const fake = await fakeServer(async (conn) => {
    await conn.next();
    conn.send(welcome());
  });
  const c = new CrowdClient(`tcp://127.0.0.1:${fake.port}`, { reconnect: false, requestTimeoutMs: 150 });
  try {
    await c.connect();
    await assert.rejects(c.removeAgents([1]), (e) => e instanceof RequestTimeoutError && e.codeName === 'TIMEOUT');
    const pending = c.spawnAgents([{}]);
    c.close();
    await assert.rejects(pending, ConnectionClosedError);
  } finally {
    c.close();
    await fake.close();
  }
});

test('after a lost connection the next Hello presents the Welcome\'s resume key', async () => {
  const hellos = [];
  let n = 0;
  const fake = await fakeServer(async (conn) => {
    const m = await conn.next();
    hellos.push(m.hello);
    n++;
    conn.send(welcome({ clientId: 10 + n, resumeKey: 'key-' + n, resumed: n > 1 }));
    if (n === 1) conn.socket.destroy();
  });
  const c = new CrowdClient(`tcp://127.0.0.1:${fake.port}`, { reconnectMinMs: 10, token: 't' });
  try {
    const second = nextEvent(c, 'welcome', (w) => w.clientId === 12);
    await c.connect();
    const [w] = await second;
    assert.equal(w.resumed, true);
    assert.equal(hellos[0].resumeKey, '');
    assert.equal(hellos[1].resumeKey, 'key-1');
    assert.equal(hellos[1].token, 't');
    assert.equal(c.resumeKey, 'key-2');
  } finally {
    c.close();
    await fake.close();
  }
});

test('a snapshot that does not fit makes the client subscribe again for a keyframe', async () => {
  let resubscribed;
  const gotResubscribe = new Promise((r) => { resubscribed = r; });
  const fake = await fakeServer(async (conn) => {
    await conn.next();
    conn.send(welcome());
    const sub = await conn.next();
    conn.send({ ack: { requestId: sub.requestId } });
    conn.send({ snapshot: { tick: 2, keyframe: true, entries: [1 * 32 + 31], x: [100], y: [200], vx: [0], vy: [0], radius: [50], owner: [0] } });
    conn.send({ snapshot: { tick: 3, entries: [9 * 32 + 1], x: [5] } }); // a delta for agent 9, unknown
    conn.send({ snapshot: { tick: 4, entries: [1 * 32 + 1], x: [5] } }); // dropped: waiting for the keyframe
    const again = await conn.next();
    assert.ok(again.subscribe, 'Subscribe sent again');
    conn.send({ ack: { requestId: again.requestId } });
    conn.send({ snapshot: { tick: 5, keyframe: true, entries: [2 * 32 + 31], x: [300], y: [400], vx: [0], vy: [0], radius: [50], owner: [1] } });
    resubscribed();
  });
  const c = new CrowdClient(`tcp://127.0.0.1:${fake.port}`, { reconnect: false });
  const errors = [];
  c.on('protocolError', (e) => errors.push(e.name));
  try {
    await c.connect();
    await c.subscribe();
    await gotResubscribe;
    await until('the keyframe applied', () => c.world.tick === 5);
    assert.deepEqual([...c.world.agents.keys()], [2]);
    assert.deepEqual(c.world.positionAt(2, c.world.receivedAt), { x: 3, y: 4 });
    assert.deepEqual(errors, ['SnapshotError']);
    assert.equal(c.stats.decodeErrors, 1);
    assert.equal(c.stats.snapshotsDropped, 1);
  } finally {
    c.close();
    await fake.close();
  }
});

test('a garbage-sending server does not crash the client: it reports, closes and retries', async () => {
  const garbage = [
    (conn) => conn.sendRaw(Buffer.from('HTTP/1.1 400 Bad Request\r\n\r\n')),          // a frame of garbage
    (conn) => conn.sendRaw(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff])),     // a prefix over 5 bytes
    (conn) => conn.sendRaw(frame(new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]))), // a field longer than the frame
    (conn) => conn.sendRaw(new Uint8Array([0xff, 0xff, 0xff, 0x7f])),                 // a 256 MiB frame announced
    (conn) => { conn.sendRaw(frame(serverMessage(welcome()).subarray(0, 5))); },       // a truncated Welcome
  ];
  // Random bytes from a fixed seed.
  let seed = 99;
  const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
  for (let i = 0; i < 6; i++) garbage.push((conn) => conn.sendRaw(Uint8Array.from({ length: 64 + i * 50 }, rand)));
  let connections = 0;
  const fake = await fakeServer(async (conn) => {
    const i = connections++;
    await conn.next();
    if (i < garbage.length) {
      garbage[i](conn);
    } else if (i === garbage.length) {
      conn.send(welcome({ clientId: 99 }));
      await conn.next(); // a ping
      conn.sendRaw(frame(new Uint8Array([0x22, 0x03, 0x28, 0x80, 0x80]))); // then a broken snapshot
    } else {
      conn.send(welcome({ clientId: 100 }));
    }
  });
  const c = new CrowdClient(`tcp://127.0.0.1:${fake.port}`, { retry: true, reconnectMinMs: 5, reconnectMaxMs: 20, connectTimeoutMs: 1000 });
  let problems = 0;
  c.on('protocolError', () => problems++);
  try {
    const w = await c.connect(); // resolves only with the last, well-behaved connection
    assert.equal(w.clientId, 99);
    assert.equal(connections, garbage.length + 1);
    // Bytes that announce a longer frame than they bring can only end by the Hello's timeout.
    assert.ok(problems >= 4 && problems <= garbage.length, `problems reported: ${problems}`);
    assert.ok(c.stats.reconnects >= garbage.length);
    assert.equal(c.state, 'connected');
    // Garbage after the Welcome: the ping's connection closes, the client comes back.
    const back = nextEvent(c, 'welcome', (x) => x.clientId === 100);
    await assert.rejects(c.ping(), ConnectionClosedError);
    await back;
    assert.equal(c.state, 'connected');
  } finally {
    c.close();
    await fake.close();
  }
});

test('index.d.ts declares every export of the package', async () => {
  const dts = readFileSync(new URL('../../clients/js/index.d.ts', import.meta.url), 'utf8');
  const declared = new Set([...dts.matchAll(/^export (?:declare )?(?:const|class|function|interface|type) (\w+)/gm)].map((m) => m[1]));
  for (const m of dts.matchAll(/^export declare const ((?:\w+: \d+, )+\w+: \d+);/gm))
    for (const part of m[1].split(', ')) declared.add(part.split(':')[0]);
  const missing = Object.keys(crowd).filter((name) => !declared.has(name));
  assert.deepEqual(missing, []);
});
