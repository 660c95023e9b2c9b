// tcp.js — crowd.v1 over TCP (Node only): varint-delimited frames on node:net.
import { FrameReader, FrameError, frame } from '../codec.js';

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
  }

  async open() {
    const net = await import('node:net');
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: this.host, port: this.port, noDelay: true });
      this.socket = socket;
      const timer = setTimeout(() => socket.destroy(new Error('connect timed out')), this.connectTimeoutMs);
      let opened = false;
      socket.once('connect', () => { opened = true; clearTimeout(timer); resolve(); });
      socket.on('data', (chunk) => this.#onData(chunk));
      socket.on('error', (error) => { this.lastError = error; });
      socket.on('close', () => {
        clearTimeout(timer);
        if (!opened) reject(this.lastError || new Error('connection closed'));
        this.#closed(this.lastError ? this.lastError.message : 'connection closed', this.lastError);
      });
    });
  }

  #onData(chunk) {
    if (this.closed) return;
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
