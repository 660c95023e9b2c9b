// errors.js — what a request's promise rejects with.
import { ErrorCode } from './codec.js';

const codeNames = Object.fromEntries(Object.entries(ErrorCode).map(([k, v]) => [v, k]));

/** The name of an ErrorCode without its ERROR_ prefix ("BAD_TOKEN"), or the number as text. */
export function errorCodeName(code) {
  const n = codeNames[code];
  return n ? n.replace(/^ERROR_/, '') : String(code);
}

/** The server refused a request: `code` is the crowd.v1 ErrorCode. */
export class CrowdError extends Error {
  constructor(code, message, { requestId = 0, index = 0, codeName = errorCodeName(code) } = {}) {
    super(codeName + (message ? ': ' + message : ''));
    this.name = 'CrowdError';
    this.code = code;
    this.codeName = codeName;
    this.requestId = requestId;
    this.index = index;
  }
}

/** No answer within the request timeout (the request may still take effect). */
export class RequestTimeoutError extends CrowdError {
  constructor(requestId, ms) {
    super(0, `no answer to request ${requestId} within ${ms} ms`, { requestId, codeName: 'TIMEOUT' });
    this.name = 'RequestTimeoutError';
  }
}

/** The connection was not open, or closed before the answer came. */
export class ConnectionClosedError extends CrowdError {
  constructor(message, requestId = 0, codeName = 'CLOSED') {
    super(0, message, { requestId, codeName });
    this.name = 'ConnectionClosedError';
  }
}

/**
 * connect() met something other than a crowd server's Welcome. `kind` says what:
 * 'refused' (nothing listens there), 'unreachable' (no such host, no route),
 * 'timeout' (no TCP connection, or no Welcome, within connectTimeoutMs),
 * 'http' (an HTTP server answered: the server's HTTP port, not its TCP port),
 * 'tls' (a TLS server answered), 'not-crowd' (bytes that are not crowd.v1),
 * 'closed' (the peer closed before a Welcome), 'websocket' (the WebSocket
 * handshake failed; browsers do not say why). `cause`: the underlying error.
 */
export class ConnectError extends ConnectionClosedError {
  constructor(kind, message, { address = '', cause } = {}) {
    super(message, 0, 'CONNECT');
    this.name = 'ConnectError';
    this.kind = kind;
    this.address = address;
    if (cause !== undefined) this.cause = cause;
  }
}
