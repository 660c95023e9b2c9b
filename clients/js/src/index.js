// @crowd-sim/client — a JavaScript client for the crowd server (crowd.v1).
export { CrowdClient, agentEventFrom, agentPathFrom } from './client.js';
export { World } from './world.js';
export { CrowdError, RequestTimeoutError, ConnectionClosedError, ConnectError, errorCodeName } from './errors.js';
export { applySnapshot, SnapshotError, FIELD_X, FIELD_Y, FIELD_VX, FIELD_VY, FIELD_NEW } from './snapshot.js';
export {
  PROTOCOL_MAJOR, PROTOCOL_MINOR, ErrorCode, Role, SteerMode, AgentEventKind, Avoidance,
  ClientMessage, ServerMessage, protoRoot, encodeClientMessage, decodeServerMessage, frame, FrameReader, FrameError,
} from './codec.js';
