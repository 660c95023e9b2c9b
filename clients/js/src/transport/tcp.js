// tcp.js — crowd.v1 over TCP (Node only): varint-delimited frames on node:net.
import { FrameReader, FrameError, frame } from '../codec.js';

const HEAD_BYTES = 64;
const HTTP = [0x48, 0x54, 0x54, 0x50, 0x2f]; // "HTTP/"

/** An Error that tells connect() what answered instead of a crowd server. */
function peerError(kind, message) {
  const e = new Error(message);
  e.connectKind = kind;
  return e;
}

export class TcpTransport {
  /** handlers: {onMessage(bytes), onClose({reason, error})} */
  constructor(host, port, handlers, { maxFrameBytes, connectTimeoutMs = 10000 } = {}) {
    this.host = host;
    this.port = port;
    this.handlers = handlers;
    this.reader = new FrameReader(maxFrameBytes);
    this.connectTimeoutMs = connectTimeoutMs;
    this.socket = null;
    this.closed = false;
    this.received = 0;     // bytes read
    this.framesIn = 0;     // frames handed on
    this.head = new Uint8Array(0); // the first bytes the peer sent, for telling what it is
  }

  async open() {
    const net = await import('node:net');
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: this.host, port: this.port, noDelay: true });
      this.socket = socket;
      const timer = setTimeout(() => {
        socket.destroy(Object.assign(new Error(`no TCP connection within ${this.connectTimeoutMs} ms`), { code: 'ETIMEDOUT' }));
      }, this.connectTimeoutMs);
      let opened = false;
      socket.once('connect', () => { opened = true; clearTimeout(timer); resolve(); });
      socket.on('data', (chunk) => this.#onData(chunk));
      socket.on('error', (error) => { if (!this.lastError) this.lastError = error; });
      socket.on('close', () => {
        clearTimeout(timer);
        if (!opened) reject(this.lastError || new Error('connection closed'));
        this.#closed(this.lastError ? this.lastError.message : 'connection closed', this.lastError);
      });
    });
  }

  #onData(chunk) {
    if (this.closed) return;
    this.received += chunk.length;
    if (this.framesIn === 0 && this.head.length < HEAD_BYTES) {
      const head = new Uint8Array(Math.min(HEAD_BYTES, this.head.length + chunk.length));
      head.set(this.head, 0);
      head.set(chunk.subarray(0, head.length - this.head.length), this.head.length);
      this.head = head;
      // Neither can begin a crowd.v1 frame: its second byte is a protobuf tag, and
      // 'T' (wire type 4) and 0x03 (field 0) are not tags a ServerMessage starts with.
      // (A frame completes only after more bytes than these 5, so this check comes first.)
      const failure = head.length >= HTTP.length && HTTP.every((b, i) => head[i] === b)
        ? peerError('http', 'an HTTP server answered')
        : head.length >= 2 && (head[0] === 0x15 || head[0] === 0x16) && head[1] === 0x03
          ? peerError('tls', 'a TLS server answered') : null;
      if (failure) {
        this.lastError = failure;
        this.socket.destroy();
        return;
      }
    }
    let frames;
    try {
      frames = this.reader.push(chunk);
    } catch (e) {
      if (!(e instanceof FrameError)) throw e;
      this.lastError = e;
      this.socket.destroy();
      return;
    }
    for (const f of frames) {
      if (this.closed) return;
      this.framesIn++;
      this.handlers.onMessage(f);
    }
  }

  #closed(reason, error) {
    if (this.closed) return;
    this.closed = true;
    this.handlers.onClose({ reason, error });
  }

  send(bytes) { this.socket.write(frame(bytes)); }

  /** Bytes written but not yet handed to the kernel. */
  get bufferedAmount() { return this.socket ? this.socket.writableLength : 0; }

  /** Stop reading: the kernel's buffers fill, then the server's, and the server skips snapshots. */
  get canPause() { return true; }
  pause() { this.socket?.pause(); }
  resume() { this.socket?.resume(); }

  close() {
    if (this.socket && !this.socket.destroyed) this.socket.end(() => this.socket.destroy());
    this.#closed('closed by the client', null);
  }
}
