// test_worlds.mjs — worlds (crowd.v1 minor 2) from the JavaScript client against a
// real crowd-server: the world option at Hello, listWorlds, the refusals
// (NO_SUCH_WORLD, BAD_WORLD_NAME, WORLD_FORBIDDEN, LIMIT_WORLDS…), and, where the
// server holds many worlds, create / join / isolation / close end to end.
// Usage: CROWD_SERVER=build/server/crowd-server node --test test_worlds.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { crowd, startServer, nextEvent, until } from './harness.mjs';

const { CrowdClient, CrowdError, ErrorCode } = crowd;
const MAX_WORLDS = 3;
const TOKENS = ['--token', 'boss=admin', '--token', 'p1=player', '--token', 'arena=player@arena'];
let server;
const clients = [];

function client(token, options = {}) {
  const c = new CrowdClient(`tcp://127.0.0.1:${server.tcp}`, { token, clientName: 'worlds ' + token, reconnect: false, ...options });
  clients.push(c);
  return c;
}

async function connected(token, options = {}) {
  const c = client(token, options);
  await c.connect();
  return c;
}

async function rejectsWith(promise, code) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof CrowdError, 'a CrowdError: ' + e);
    assert.equal(e.codeName, crowd.errorCodeName(code));
    return true;
  });
}

/** Creates a world, or says why the test cannot go on: a one-world server answers LIMIT_WORLDS. */
async function createOrSkip(t, c, name, settings) {
  try {
    await c.createWorld(name, settings);
    return true;
  } catch (e) {
    if (e instanceof CrowdError && e.code === ErrorCode.ERROR_LIMIT_WORLDS) {
      t.skip('CreateWorld answers LIMIT_WORLDS: this server holds one world');
      return false;
    }
    throw e;
  }
}

before(async () => { server = await startServer([...TOKENS, '--max-worlds', String(MAX_WORLDS)]); });
after(async () => {
  for (const c of clients) c.close();
  if (server) await server.stop();
});

test('no world named: the Welcome says "default"; the world option names it', async () => {
  const c = await connected('p1');
  assert.equal(c.welcome.world, 'default');
  assert.equal(c.worldName, 'default');
  const d = await connected('p1', { world: 'default' });
  assert.equal(d.worldName, 'default');
});

test('listWorlds: the default world with its tick rate, and --max-worlds', async () => {
  const c = await connected('p1');
  const list = await c.listWorlds();
  assert.equal(list.maxWorlds, MAX_WORLDS);
  const def = list.worlds.find((w) => w.name === 'default');
  assert.ok(def, 'the default world is listed: ' + JSON.stringify(list));
  assert.equal(def.tickRate, c.welcome.tickRateHz);
  assert.ok(def.clients >= 1, 'this client counts');
  assert.equal(typeof def.latenessP99Ms, 'number');
  // The same through request(), the generic path.
  const raw = await c.request({ listWorlds: {} });
  assert.equal(raw.maxWorlds, MAX_WORLDS);
});

test('a world that does not exist, a bad name, a forbidden world: refused at connect, for good', async () => {
  for (const [world, token, code] of [['nowhere', 'p1', ErrorCode.ERROR_NO_SUCH_WORLD],
                                      ['../etc', 'p1', ErrorCode.ERROR_BAD_WORLD_NAME],
                                      ['default', 'arena', ErrorCode.ERROR_WORLD_FORBIDDEN]]) {
    const c = client(token, { world, reconnect: true, retry: true });
    await rejectsWith(c.connect(), code);
    assert.equal(c.state, 'closed', `${crowd.errorCodeName(code)} is final: no retry`);
  }
});

test('createWorld: bad names and a taken name are refused; a player may not create', async () => {
  const boss = await connected('boss');
  await rejectsWith(boss.createWorld('default'), ErrorCode.ERROR_WORLD_EXISTS);
  const p1 = await connected('p1');
  await assert.rejects(p1.createWorld('mine'), (e) => e instanceof CrowdError && e.code !== 0);
  await assert.rejects(boss.createWorld('x', { avoidance: 'fastest' }), /avoidance/);
  await rejectsWith(boss.closeWorld('default'), ErrorCode.ERROR_WORLD_FORBIDDEN);
  await rejectsWith(boss.closeWorld('nowhere'), ErrorCode.ERROR_NO_SUCH_WORLD);
  await rejectsWith(boss.joinWorld('nowhere'), ErrorCode.ERROR_NO_SUCH_WORLD);
});

test('joinWorld is refused while the client owns agents', async () => {
  const c = await connected('p1');
  await c.spawnAgents([{ position: { x: 1, y: 1 } }]);
  await rejectsWith(c.joinWorld('default'), ErrorCode.ERROR_INVALID_ARGUMENT);
});

test('--max-worlds: LIMIT_WORLDS past it', async (t) => {
  const boss = await connected('boss');
  const made = [];
  try {
    for (let i = 1; i < MAX_WORLDS; i++) {
      if (!(await createOrSkip(t, boss, `limit-${i}`))) return;
      made.push(`limit-${i}`);
    }
    await rejectsWith(boss.createWorld('limit-extra'), ErrorCode.ERROR_LIMIT_WORLDS);
  } finally {
    for (const name of made) await boss.closeWorld(name, { deleteData: true });
  }
});

test('two worlds: each sees only its own agents; joinWorld moves a viewer; closeWorld ends its clients', async (t) => {
  const boss = await connected('boss');
  if (!(await createOrSkip(t, boss, 'arena', { tickRate: 20, avoidance: 'quality', maxAgents: 100 }))) return;
  const listed = (await boss.listWorlds()).worlds.find((w) => w.name === 'arena');
  assert.ok(listed, 'arena is listed');
  assert.equal(listed.tickRate, 20);

  const inArena = await connected('arena', { world: 'arena' });
  assert.equal(inArena.worldName, 'arena');
  await inArena.spawnAgents([{ position: { x: 5, y: 5 } }]);
  const inDefault = await connected('p1');
  await inDefault.spawnAgents([{ position: { x: -5, y: -5 } }]);
  // Agents are told apart by where they stand: ids are per world and may be equal.
  const near = (view, x, y) => [...view.world.agents.values()].some((a) => Math.hypot(a.x - x, a.y - y) < 2);

  // A viewer in the default world sees the default world's agents, never arena's.
  const viewer = await connected('boss');
  await viewer.subscribe();
  await until('the default world\'s agent in a snapshot', () => near(viewer, -5, -5));
  assert.ok(!near(viewer, 5, 5), 'arena\'s agent is not in the default world\'s snapshots');
  assert.equal((await boss.listWorlds()).worlds.find((w) => w.name === 'arena').agents, 1, 'arena holds its one agent');

  // The viewer moves to arena: its subscription resets; subscribed again it sees arena's agent only.
  const moved = nextEvent(viewer, 'world');
  await viewer.joinWorld('arena');
  await moved;
  assert.equal(viewer.worldName, 'arena');
  assert.equal(viewer.world.agents.size, 0, 'the old world\'s agents are gone from the view');
  await viewer.subscribe();
  await until('arena\'s agent in a snapshot', () => near(viewer, 5, 5));
  assert.ok(!near(viewer, -5, -5), 'the default world\'s agent is not in arena\'s snapshots');

  // Closing arena: its clients hear WORLD_CLOSED and are closed; the default world goes on.
  const closedError = nextEvent(inArena, 'serverError', (e) => e.code === ErrorCode.ERROR_WORLD_CLOSED);
  await boss.closeWorld('arena', { deleteData: true });
  await closedError;
  await until('arena\'s client closed', () => inArena.state === 'closed');
  assert.ok(!(await boss.listWorlds()).worlds.some((w) => w.name === 'arena'));
  await inDefault.ping();
});
