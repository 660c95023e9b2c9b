// Type declarations for @crowd-sim/client (crowd.v1). Checked by `tsc --noEmit` on
// tests/js/typed_example.ts (ctest js.types); the enums below are compared with
// proto/crowd.proto's, names and values, by ctest js.enums (a new value in the
// proto fails it until it is added here).

export const PROTOCOL_MAJOR: 1;
export const PROTOCOL_MINOR: number;

export declare const ErrorCode: Readonly<{
  ERROR_NONE: 0; ERROR_MALFORMED: 1; ERROR_FRAME_TOO_LARGE: 2; ERROR_UNKNOWN_MESSAGE: 3; ERROR_HELLO_REQUIRED: 4;
  ERROR_HELLO_TIMEOUT: 5; ERROR_UNSUPPORTED_VERSION: 6; ERROR_BAD_TOKEN: 7; ERROR_PERMISSION_DENIED: 8;
  ERROR_NOT_OWNER: 9; ERROR_INVALID_ARGUMENT: 10; ERROR_UNKNOWN_ID: 11; ERROR_STALE_ID: 12;
  ERROR_LIMIT_AGENTS_WORLD: 13; ERROR_LIMIT_AGENTS_CONNECTION: 14; ERROR_LIMIT_BATCH: 15; ERROR_RATE_LIMITED: 16;
  ERROR_BAD_POLYGON: 17; ERROR_ALREADY_HELLO: 18; ERROR_SLOW_CONSUMER: 19; ERROR_SHUTTING_DOWN: 20;
  ERROR_SERVER_FULL: 21; ERROR_INTERNAL: 22; ERROR_STORAGE_UNAVAILABLE: 23; ERROR_LIMIT_COST: 27;
  ERROR_WORLD_EXISTS: 28; ERROR_BAD_WORLD_NAME: 29; ERROR_BAD_WORLD_SETTINGS: 30; ERROR_LIMIT_WORLDS: 31;
  ERROR_WORLD_FORBIDDEN: 32; ERROR_NO_SUCH_WORLD: 33; ERROR_WORLD_CLOSED: 34;
  ERROR_READ_ONLY: 35; ERROR_NOT_PRIMARY: 36; ERROR_HISTORY_MISMATCH: 37;
}>;
/** A crowd.v1 ErrorCode value (a newer server may send others: CrowdError.code is a number). */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];
export declare const Role: Readonly<{ ROLE_UNSPECIFIED: 0; ROLE_VIEWER: 1; ROLE_PLAYER: 2; ROLE_ADMIN: 3 }>;
export type Role = (typeof Role)[keyof typeof Role];
export declare const SteerMode: Readonly<{ STEER_DEFAULT: 0; STEER_NAVIGATE: 1; STEER_DIRECT: 2 }>;
export type SteerMode = (typeof SteerMode)[keyof typeof SteerMode];
export declare const AgentEventKind: Readonly<{
  AGENT_EVENT_UNSPECIFIED: 0; AGENT_EVENT_ARRIVED: 1; AGENT_EVENT_UNREACHABLE: 2; AGENT_EVENT_STUCK: 3;
}>;
export type AgentEventKind = (typeof AgentEventKind)[keyof typeof AgentEventKind];
export declare const Avoidance: Readonly<{ AVOIDANCE_DEFAULT: 0; AVOIDANCE_QUALITY: 1; AVOIDANCE_REFERENCE: 2 }>;
export type Avoidance = (typeof Avoidance)[keyof typeof Avoidance];

export interface Vec2 { x: number; y: number }
export interface Rect { minX: number; minY: number; maxX: number; maxY: number }

/** What a spawned agent is given; every field optional (the server's defaults fill the rest). */
export interface AgentSpec {
  position?: Vec2;
  target?: Vec2;
  prefVelocity?: Vec2;
  radius?: number;
  maxSpeed?: number;
  prefSpeed?: number;
  neighborDist?: number;
  maxNeighbors?: number;
  timeHorizon?: number;
  timeHorizonObst?: number;
  weight?: number;
  layer?: number;
  mask?: number;
  steer?: SteerMode;
}

export interface Welcome {
  protocolMajor: number;
  protocolMinor: number;
  serverVersion: string;
  clientId: number;
  role: Role;
  tickRateHz: number;
  snapshotDivisor: number;
  precision: number;
  worldBounds: Rect | null;
  tick: number;
  resumeKey: string;
  resumed: boolean;
  /** The world joined (minor 2; "default" from a server that names none). */
  world: string;
}

/** How a new world runs; a field left out takes the server's own setting. */
export interface WorldSettings {
  tickRate?: number;
  bounds?: Rect;
  avoidance?: 'default' | 'quality' | 'reference' | Avoidance;
  navigation?: boolean;
  maxAgents?: number;
}

/** One open world as listWorlds() sees it. */
export interface WorldInfo {
  name: string;
  agents: number;
  clients: number;
  tickRate: number;
  /** How late its ticks started, 99th percentile over the recent ticks. */
  latenessP99Ms: number;
  tick: number;
  /** Kept in the server's data dir: re-opens on restart. */
  persisted: boolean;
}

export interface WorldList { worlds: WorldInfo[]; maxWorlds: number }

/** An agent of the last snapshot, in world units; fromX/fromY: where interpolation starts. */
export interface Agent {
  id: number;
  x: number;
  y: number;
  vx: number;
  vy: number;
  radius: number;
  owner: number;
  fromX: number;
  fromY: number;
}

export interface Obstacle { id: number; x: number[]; y: number[] }

export interface SnapshotInfo { removed: number[]; entered: number; keyframe: boolean }

export declare class World {
  precision: number;
  /** Estimated ms between snapshots. */
  interval: number;
  /** Agents of the last snapshot (the subscribed area), by id. */
  agents: Map<number, Agent>;
  obstacles: Obstacle[];
  tick: number;
  stateHash: bigint;
  worldAgentCount: number;
  keyframe: boolean;
  receivedAt: number;
  snapshots: number;
  keyframes: number;
  readonly size: number;
  reset(): void;
  /** Applies one decoded crowd.v1.Snapshot; throws SnapshotError (world unchanged) if it does not fit. */
  apply(snapshot: object, now?: number): SnapshotInfo;
  /** Where to draw an agent at `now` (performance.now() ms), gliding over one snapshot interval. */
  positionAt(agent: Agent | number, now?: number): Vec2 | null;
  forEachAt(now: number, fn: (agent: Agent, x: number, y: number) => void): void;
  agentsIn(rect: Rect, now?: number): Agent[];
}

export type AgentEventKindName = 'UNSPECIFIED' | 'ARRIVED' | 'UNREACHABLE' | 'STUCK';

export interface AgentEvent {
  agentId: number;
  kind: AgentEventKind;
  kindName: AgentEventKindName | string;
  /** ARRIVED, STUCK: where the agent is; UNREACHABLE: the nearest reachable point it walks to. */
  point: Vec2 | null;
  target: Vec2 | null;
  owner: number;
}

export interface AgentPath {
  agentId: number;
  /** Corners from the agent's position to its goal. */
  points: Vec2[];
  /** The navigation polygons the path crosses. */
  corridor: Vec2[][];
  goal: Vec2 | null;
  unreachable: boolean;
}

export type ConnectionState = 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'closed';

export interface StateInfo {
  reason?: string;
  error?: Error | null;
  /** 'reconnecting': the number of the next attempt since the last Welcome. */
  attempt?: number;
  /** 'reconnecting': the wait before it (0 inside a pass over the address list). */
  delayMs?: number;
  /** 'reconnecting': where the next attempt goes, as given. */
  address?: string;
  /** 'reconnecting': the address that was lost or failed. */
  failedAddress?: string;
  welcome?: Welcome;
}

/** The 'reconnected' event: a reconnect got its Welcome. */
export interface ReconnectInfo {
  /** The address that answered, as given. */
  address: string;
  /** The identity came back (the same clientId, and the agents it owned). */
  resumed: boolean;
  clientId: number;
  /** Attempts since the connection was lost, this one included. */
  attempt: number;
}

/** One address as the constructor parsed it. */
export interface ParsedAddress {
  kind: 'tcp' | 'ws';
  host?: string;
  port?: number;
  url?: string;
  /** As given. */
  where: string;
}

export type Address = string | { host?: string; port: number };

export interface ClientOptions {
  token?: string;
  clientName?: string;
  keepAgentsOnDisconnect?: boolean;
  /** A request without an answer this long rejects with RequestTimeoutError (default 10000). */
  requestTimeoutMs?: number;
  /** The TCP (or WebSocket) connection and the Welcome must come within this (default 10000). */
  connectTimeoutMs?: number;
  /**
   * connect() keeps trying with back-off until a Welcome (default false: it
   * rejects with a ConnectError on the first failure). Also an option of connect().
   */
  retry?: boolean;
  /**
   * After a Welcome: reconnect when the connection is lost (default true), presenting
   * the last Welcome's resumeKey. Attempts go through the addresses from the one after
   * the address lost; each pass over the list starts after a wait of reconnectMinMs
   * doubled per earlier pass up to reconnectMaxMs (times a jitter in [0.75, 1)), and
   * inside a pass the next address is tried at once.
   */
  reconnect?: boolean;
  /** Default 250. */
  reconnectMinMs?: number;
  /** Default 10000. */
  reconnectMaxMs?: number;
  /**
   * Failed attempts (one address each) before giving up (default Infinity): then the
   * state is 'closed' with a ConnectError of kind 'gave-up'. Also bounds connect({retry}).
   */
  reconnectMaxAttempts?: number;
  /**
   * A reconnect's Welcome that does not resume the identity (resumed false although a
   * key was presented) counts as a failed attempt ('not-resumed'): for lists holding a
   * standby that answers before it is promoted (default false).
   */
  requireResumed?: boolean;
  /**
   * > 0: a connection that brings nothing for this long counts as lost (then reconnect):
   * a server whose machine vanished sends no FIN. Keep it above the quietest gap
   * (snapshots come every divisor ticks to a subscriber; others should ping). Default 0: off.
   */
  idleTimeoutMs?: number;
  /** TCP: a frame longer than this closes the connection (default 16 MiB). */
  maxFrameBytes?: number;
  /** A Welcome.resumeKey from an earlier connection: take that identity back. */
  resumeKey?: string;
  /** The world to join at Hello, and again after a reconnect (default: the server's "default"). */
  world?: string;
  /** The WebSocket class for ws:// addresses where there is no global one (Node < 22). */
  WebSocket?: unknown;
}

export interface ClientStats {
  messagesIn: number;
  bytesIn: number;
  snapshots: number;
  keyframes: number;
  snapshotsDropped: number;
  decodeErrors: number;
  protocolErrors: number;
  reconnects: number;
}

export interface ClientEvents {
  state: (state: ConnectionState, info: StateInfo) => void;
  welcome: (welcome: Welcome) => void;
  snapshot: (world: World, info: SnapshotInfo) => void;
  agentEvents: (batch: { tick: number; events: AgentEvent[] }) => void;
  agentEvent: (event: AgentEvent, tick: number) => void;
  /** An Error the server sent unasked (SLOW_CONSUMER, SHUTTING_DOWN, …) or for a request nobody waits for. */
  serverError: (error: CrowdError) => void;
  /** Bytes that are not crowd.v1, or a snapshot that does not fit (the client then asks for a keyframe). */
  protocolError: (error: Error) => void;
  listenerError: (error: unknown, event: string) => void;
  /** joinWorld() moved this connection to another world (subscriptions reset). */
  world: (name: string) => void;
  /** A reconnect got its Welcome (after 'welcome'); resumed: the same identity and agents. */
  reconnected: (info: ReconnectInfo) => void;
}

export declare class CrowdClient {
  /**
   * 'tcp://HOST:PORT' (Node), 'ws://HOST:PORT/ws' or 'wss://…', or {host, port} for TCP;
   * or several (an array, or one string of comma-separated addresses): connect() takes
   * the first that welcomes it, skipping those that refuse or fail.
   */
  constructor(address: Address | Address[], options?: ClientOptions);
  /** Every address, as parsed. */
  readonly addresses: ParsedAddress[];
  /** The address connected to (or being tried). */
  readonly address: ParsedAddress;
  /** The same, as given ('tcp://127.0.0.1:7777'). */
  readonly where: string;
  readonly state: ConnectionState;
  readonly connected: boolean;
  readonly welcome: Welcome | null;
  readonly clientId: number;
  /** The Welcome's role; ROLE_UNSPECIFIED (0) before one. */
  readonly role: Role;
  readonly resumeKey: string;
  readonly world: World;
  /** The world this connection is in; '' before a Welcome. */
  readonly worldName: string;
  readonly stats: ClientStats;
  readonly lastError: CrowdError | null;
  readonly paused: boolean;

  on<K extends keyof ClientEvents>(event: K, listener: ClientEvents[K]): this;
  once<K extends keyof ClientEvents>(event: K, listener: ClientEvents[K]): this;
  off<K extends keyof ClientEvents>(event: K, listener: ClientEvents[K]): this;

  /**
   * Resolves with the Welcome. Rejects on the first failure with a ConnectError
   * (or the CrowdError of a refused Hello: BAD_TOKEN, …) unless `retry`.
   */
  connect(options?: { retry?: boolean }): Promise<Welcome>;
  close(): void;

  spawnAgents(agents: AgentSpec[]): Promise<number[]>;
  setTargets(ids: number[], targets: Vec2 | Vec2[], options?: { steer?: SteerMode }): Promise<void>;
  setVelocities(ids: number[], velocities: Vec2 | Vec2[]): Promise<void>;
  removeAgents(ids: number[]): Promise<void>;
  addObstacle(vertices: Vec2[]): Promise<number>;
  removeObstacle(id: number): Promise<void>;
  subscribe(options?: { area?: Rect; divisor?: number }): Promise<void>;
  unsubscribe(): Promise<void>;
  subscribeEvents(options?: { allAgents?: boolean }): Promise<void>;
  unsubscribeEvents(): Promise<void>;
  getPaths(ids: number[]): Promise<AgentPath[]>;
  ping(): Promise<{ rttMs: number; serverTick: number }>;
  /** Opens a world (admin); rejects with WORLD_EXISTS, BAD_WORLD_NAME, BAD_WORLD_SETTINGS, LIMIT_WORLDS, … */
  createWorld(name: string, settings?: WorldSettings): Promise<void>;
  /** Closes a world (admin); its data stays on disk unless deleteData. */
  closeWorld(name: string, options?: { deleteData?: boolean }): Promise<void>;
  listWorlds(): Promise<WorldList>;
  /** Moves this connection to another world; subscribe again there. Refused while this client owns agents. */
  joinWorld(name: string): Promise<void>;
  /** Any ClientMessage body, e.g. {removeAgents: {ids: [1]}}; resolves with the Ack's ids. */
  request(body: object): Promise<unknown>;
  pause(): void;
  resume(): void;
  static errorName(code: number): string;
}

export declare class CrowdError extends Error {
  constructor(code: number, message: string, extra?: { requestId?: number; index?: number; codeName?: string });
  /** The crowd.v1 ErrorCode (0 for TIMEOUT and CLOSED). */
  code: number;
  /** 'BAD_TOKEN', 'NOT_OWNER', …, or 'TIMEOUT' / 'CLOSED'. */
  codeName: string;
  requestId: number;
  /** Which item of a batch was refused. */
  index: number;
}
export declare class RequestTimeoutError extends CrowdError {}
export declare class ConnectionClosedError extends CrowdError {}

/** What connect() met instead of a crowd server (see ConnectError.kind). */
export type ConnectFailureKind =
  /** Nothing listens there. */
  | 'refused'
  /** No such host, or no route to it. */
  | 'unreachable'
  /** No TCP connection, or no Welcome, within connectTimeoutMs. */
  | 'timeout'
  /** An HTTP server answered: the server's --http port, not its --listen port. */
  | 'http'
  /** A TLS server answered a plain tcp:// connection. */
  | 'tls'
  /** Bytes that are not crowd.v1. */
  | 'not-crowd'
  /** The peer closed before a Welcome. */
  | 'closed'
  /** requireResumed: a reconnect's Welcome gave a new identity. */
  | 'not-resumed'
  /** reconnectMaxAttempts attempts failed; `cause` is the last one's error. */
  | 'gave-up'
  /** A WebSocket handshake failed (browsers do not say why). */
  | 'websocket';

/** connect() failed: `kind` says what it met; codeName is 'CONNECT'. */
export declare class ConnectError extends ConnectionClosedError {
  constructor(kind: ConnectFailureKind, message: string, extra?: { address?: string; cause?: unknown });
  kind: ConnectFailureKind;
  /** The address connect() tried. */
  address: string;
  /** The socket's error (code 'ECONNREFUSED', …), where there is one. */
  cause?: unknown;
}
export declare function errorCodeName(code: number): string;

export declare class SnapshotError extends Error {}
export interface FixedAgent { id: number; x: number; y: number; vx: number; vy: number; radius: number; owner: number }
export declare function applySnapshot(view: Map<number, FixedAgent>, snapshot: object):
  { view: Map<number, FixedAgent>; removed: number[]; entered: number };
export declare const FIELD_X: 1, FIELD_Y: 2, FIELD_VX: 4, FIELD_VY: 8, FIELD_NEW: 16;

export declare function agentEventFrom(decoded: object): AgentEvent;
export declare function agentPathFrom(decoded: object): AgentPath;

export declare const ClientMessage: import('protobufjs').Type;
export declare const ServerMessage: import('protobufjs').Type;
export declare const protoRoot: import('protobufjs').Root;
export declare function encodeClientMessage(body: object): Uint8Array;
export declare function decodeServerMessage(bytes: Uint8Array): any;
export declare function frame(payload: Uint8Array): Uint8Array;
export declare class FrameError extends Error {}
export declare class FrameReader {
  constructor(maxFrameBytes?: number);
  readonly buffered: number;
  push(chunk: Uint8Array): Uint8Array[];
}
