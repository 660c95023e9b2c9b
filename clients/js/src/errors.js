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
  constructor(message, requestId = 0) {
    super(0, message, { requestId, codeName: 'CLOSED' });
    this.name = 'ConnectionClosedError';
  }
}
