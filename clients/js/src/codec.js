// codec.js — crowd.v1 messages from proto/crowd.proto (embedded at build time
// by scripts/embed-proto.mjs) and the TCP framing: every message preceded by
// its length as a varint. WebSocket messages carry one message each, unframed.
import protobuf from 'protobufjs';
import protoText from './crowd_proto.gen.js';

export const PROTOCOL_MAJOR = 1;
export const PROTOCOL_MINOR = 2;

const root = protobuf.parse(protoText, { keepCase: false }).root;
export const ClientMessage = root.lookupType('crowd.v1.ClientMessage');
export const ServerMessage = root.lookupType('crowd.v1.ServerMessage');
export const protoRoot = root;

const enumValues = (name) => Object.freeze({ ...root.lookupEnum('crowd.v1.' + name).values });
export const ErrorCode = enumValues('ErrorCode');
export const Role = enumValues('Role');
export const SteerMode = enumValues('SteerMode');
export const AgentEventKind = enumValues('AgentEventKind');
export const Avoidance = enumValues('Avoidance');

/** Encodes a ClientMessage given as a plain object ({requestId, hello: {...}}). */
export function encodeClientMessage(body) {
  const err = ClientMessage.verify(body);
  if (err) throw new TypeError('crowd-client: invalid message: ' + err);
  return ClientMessage.encode(ClientMessage.fromObject(body)).finish();
}

/** Decodes one ServerMessage; throws on bytes that are not one. */
export function decodeServerMessage(bytes) {
  return ServerMessage.decode(bytes);
}

/** Bytes of a varint-delimited frame holding `payload`. */
export function frame(payload) {
  const head = [];
  let n = payload.length;
  while (n >= 0x80) { head.push((n & 0x7f) | 0x80); n = Math.floor(n / 128); }
  head.push(n);
  const out = new Uint8Array(head.length + payload.length);
  out.set(head, 0);
  out.set(payload, head.length);
  return out;
}

/** The byte stream does not hold varint-delimited frames (or one is over the limit). */
export class FrameError extends Error {
  constructor(message) { super('framing: ' + message); this.name = 'FrameError'; }
}

/**
 * Splits a TCP byte stream into frames. push() takes a chunk and returns the
 * complete frames in it (views into an internal buffer, valid until the next
 * push); a length prefix over `maxFrameBytes` or longer than 5 bytes throws
 * FrameError, after which the stream cannot be trusted.
 */
export class FrameReader {
  constructor(maxFrameBytes = 16 << 20) {
    this.maxFrameBytes = maxFrameBytes;
    this.buf = new Uint8Array(4096);
    this.start = 0;
    this.end = 0;
  }

  get buffered() { return this.end - this.start; }

  push(chunk) {
    this.#append(chunk);
    const frames = [];
    for (;;) {
      let len = 0, shift = 0, p = this.start, done = false;
      while (p < this.end) {
        const b = this.buf[p++];
        if (shift === 28 && b > 0x0f) throw new FrameError('length prefix over 32 bits');
        len += (b & 0x7f) * 2 ** shift;
        if (!(b & 0x80)) { done = true; break; }
        shift += 7;
        if (shift > 28) throw new FrameError('length prefix longer than 5 bytes');
      }
      if (!done) break;
      if (len > this.maxFrameBytes) throw new FrameError(`frame of ${len} bytes, over the limit of ${this.maxFrameBytes}`);
      if (this.end - p < len) break;
      frames.push(this.buf.subarray(p, p + len));
      this.start = p + len;
    }
    return frames;
  }

  #append(chunk) {
    const have = this.end - this.start;
    if (this.end + chunk.length > this.buf.length) {
      if (have + chunk.length <= this.buf.length && this.start > 0) {
        this.buf.copyWithin(0, this.start, this.end);
      } else {
        const grown = new Uint8Array(Math.max(this.buf.length * 2, have + chunk.length));
        grown.set(this.buf.subarray(this.start, this.end), 0);
        this.buf = grown;
      }
      this.start = 0;
      this.end = have;
    }
    this.buf.set(chunk, this.end);
    this.end += chunk.length;
    if (this.start === this.end) this.start = this.end = 0;
  }
}
