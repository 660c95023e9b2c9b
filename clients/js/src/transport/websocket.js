// websocket.js — crowd.v1 over WebSocket (subprotocol crowd.v1): one binary
// message per protobuf message. Uses the browser's WebSocket, or any class with
// its interface passed as options.WebSocket (e.g. Node 22's global, or `ws`).
export class WebSocketTransport {
  constructor(url, handlers, { WebSocket: WS = globalThis.WebSocket } = {}) {
    if (!WS) throw new Error('crowd-client: no WebSocket here (Node < 22): use a tcp:// address or pass options.WebSocket');
    this.url = url;
    this.handlers = handlers;
    this.WS = WS;
    this.ws = null;
    this.closed = false;
  }

  open() {
    return new Promise((resolve, reject) => {
      const ws = new this.WS(this.url, 'crowd.v1');
      ws.binaryType = 'arraybuffer';
      this.ws = ws;
      let opened = false;
      ws.onopen = () => {
        if (ws.protocol !== 'crowd.v1') {
          this.lastError = Object.assign(new Error('the WebSocket server did not take subprotocol crowd.v1: not a crowd server\'s /ws'),
                                         { connectKind: 'not-crowd' });
          ws.close(1002, 'subprotocol crowd.v1 required');
          return;
        }
        opened = true;
        resolve();
      };
      ws.onmessage = (ev) => {
        if (this.closed) return;
        if (typeof ev.data === 'string') {
          this.lastError = new Error('text message on a crowd.v1 WebSocket');
          ws.close(1003, 'binary messages only');
          return;
        }
        this.handlers.onMessage(new Uint8Array(ev.data));
      };
      // Before open, the first of error and close ends the attempt (browsers send
      // both; Node 20's WebSocket only the error, and stays CONNECTING).
      const failBeforeOpen = (code) => {
        if (this.closed) return;
        if (!(this.lastError && (this.lastError.code || this.lastError.connectKind))) {
          this.lastError = Object.assign(new Error(`the WebSocket handshake with ${this.url} failed` +
            (code ? ` (close code ${code})` : '') + ': nothing listening, not a crowd server\'s /ws, or ws:// and wss:// mixed up'),
          { connectKind: 'websocket', cause: this.lastError });
        }
        reject(this.lastError);
        this.#closed(this.lastError.message, this.lastError);
        try { ws.close(); } catch { /* already closing */ }
      };
      ws.onerror = (ev) => {
        if (!this.lastError) {
          // Browsers say nothing more; Node's WebSocket may carry the socket's error (ECONNREFUSED…).
          const cause = ev && ev.error && (ev.error.cause || ev.error);
          this.lastError = cause && cause.code ? cause : new Error('WebSocket error');
        }
        if (!opened) failBeforeOpen(0);
      };
      ws.onclose = (ev) => {
        if (!opened) { failBeforeOpen(ev.code); return; }
        const reason = this.lastError ? this.lastError.message : `closed ${ev.code}${ev.reason ? ' ' + ev.reason : ''}`;
        this.#closed(reason, this.lastError || null);
      };
    });
  }

  #closed(reason, error) {
    if (this.closed) return;
    this.closed = true;
    this.handlers.onClose({ reason, error });
  }

  send(bytes) { this.ws.send(bytes); }

  get bufferedAmount() { return this.ws ? this.ws.bufferedAmount : 0; }

  // A WebSocket cannot stop reading: the client drops snapshots while paused
  // and asks for a keyframe on resume instead.
  get canPause() { return false; }
  pause() {}
  resume() {}

  close() {
    if (this.ws && this.ws.readyState <= 1) this.ws.close(1000, 'closed by the client');
    this.#closed('closed by the client', null);
  }
}
