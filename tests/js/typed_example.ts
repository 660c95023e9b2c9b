// typed_example.ts — a small typed use of @crowd-sim/client; `tsc --noEmit` checks
// it against clients/js/index.d.ts (ctest js.types). Never run.
import {
  CrowdClient, CrowdError, RequestTimeoutError, ConnectError, ErrorCode, SteerMode, Role, AgentEventKind,
  type AgentEvent, type AgentPath, type Welcome, type World, type ConnectionState, type ConnectFailureKind,
  type WorldSettings, type WorldList, type WorldInfo,
} from '@crowd-sim/client';

// The enums are types too: a steer mode is one of SteerMode's values, not any number.
const direct: SteerMode = SteerMode.STEER_DIRECT;
// @ts-expect-error 7 is no SteerMode
const notASteerMode: SteerMode = 7;
const admin: Role = Role.ROLE_ADMIN;
const limit: ErrorCode = ErrorCode.ERROR_LIMIT_COST;
console.log(direct, notASteerMode, admin, limit);

async function firstTry(): Promise<string> {
  const client = new CrowdClient('tcp://127.0.0.1:7777', { connectTimeoutMs: 2000 });
  try {
    await client.connect();
    return 'connected';
  } catch (e) {
    if (e instanceof ConnectError) {
      const kind: ConnectFailureKind = e.kind;
      return kind === 'http' ? 'that is the HTTP port' : e.message;
    }
    throw e;
  }
}
firstTry().then((s) => console.log(s));

async function main(): Promise<number> {
  const client = new CrowdClient('tcp://127.0.0.1:7777', { token: 'secret', requestTimeoutMs: 5000 });
  client.on('state', (state: ConnectionState, info) => {
    if (state === 'reconnecting') console.log(`retry ${info.attempt} in ${info.delayMs} ms`);
  });
  client.on('snapshot', (world: World, info) => {
    const first = world.agents.values().next().value;
    if (first) {
      const p = world.positionAt(first, performance.now());
      if (p) console.log(p.x + p.y, info.keyframe, world.stateHash + 1n);
    }
  });
  client.on('agentEvent', (e: AgentEvent, tick: number) => {
    if (e.kindName === 'ARRIVED' && e.point) console.log(e.agentId, e.point.x, tick);
    if (e.kind === AgentEventKind.AGENT_EVENT_STUCK) console.log('stuck', e.agentId);
  });
  const welcome: Welcome = await client.connect({ retry: true });
  if (welcome.role !== Role.ROLE_ADMIN) return 1;
  await client.subscribe({ area: { minX: -10, minY: -10, maxX: 10, maxY: 10 }, divisor: 2 });
  const ids: number[] = await client.spawnAgents([{ position: { x: 0, y: 0 }, maxSpeed: 2, steer: SteerMode.STEER_NAVIGATE }]);
  await client.setTargets(ids, { x: 5, y: 5 });
  const obstacle: number = await client.addObstacle([{ x: 1, y: 1 }, { x: 2, y: 1 }]);
  const paths: AgentPath[] = await client.getPaths(ids);
  for (const p of paths) console.log(p.points.length, p.corridor.length, p.unreachable);
  try {
    await client.removeObstacle(obstacle);
  } catch (e) {
    if (e instanceof RequestTimeoutError) return 2;
    if (e instanceof CrowdError && e.code === ErrorCode.ERROR_UNKNOWN_ID) return 3;
    throw e;
  }
  // Worlds (minor 2): the one this connection is in, the list, create / join / close.
  const here: string = client.worldName;
  const settings: WorldSettings = { tickRate: 20, bounds: { minX: 0, minY: 0, maxX: 50, maxY: 50 }, avoidance: 'quality' };
  await client.createWorld('match-1', settings);
  const list: WorldList = await client.listWorlds();
  const info: WorldInfo | undefined = list.worlds.find((w) => w.name === 'match-1');
  if (info && info.latenessP99Ms > 10) console.log(here, info.tickRate, list.maxWorlds);
  client.on('world', (name: string) => console.log('now in', name));
  await client.joinWorld('match-1');
  await client.closeWorld('match-1', { deleteData: true });
  const arena = new CrowdClient('tcp://127.0.0.1:7777', { world: 'arena' });
  arena.close();
  const { rttMs } = await client.ping();
  client.close();
  return rttMs > 0 ? 0 : 4;
}

main().then((code) => console.log(code));

// Several addresses: a primary and its standby; the reconnect is reported.
function failover(): CrowdClient {
  const client = new CrowdClient(['tcp://10.0.0.1:7777', 'tcp://10.0.0.2:7777'], {
    token: 's3cret', reconnectMaxAttempts: 20, requireResumed: true,
  });
  client.on('reconnected', (info) => {
    const resumed: boolean = info.resumed;
    console.log(`back at ${info.address} after ${info.attempt} attempts`, resumed);
  });
  client.on('state', (state, info) => {
    if (state === 'closed' && info.error instanceof ConnectError && info.error.kind === 'gave-up') console.log('no server left');
  });
  const where: string = client.where;
  console.log(where, client.addresses.length);
  return client;
}
failover();
