// client.js — CrowdClient: one API over TCP (Node) and WebSocket (browsers, or
// Node with a WebSocket class): Hello/Welcome, requests as promises answered by
// Ack/Error/Paths, snapshots into a World, agent events, reconnect with back-off
// that presents the Welcome's resume_key, request timeouts, and pause/resume
// for consumers that fall behind (the server then skips to a keyframe).
// connect() rejects on its first failure with a ConnectError saying what it met
// (refused, HTTP, TLS, not crowd.v1…) unless asked to keep trying ({retry: true}).
// Worlds (minor 2): `world` in the options picks one at Hello (and again after a
// reconnect); createWorld/closeWorld/listWorlds/joinWorld manage and switch them.
// Several addresses (a primary and its standbys): connect() takes the first that
// welcomes it, and a reconnect goes through the list from the one after the
// address lost, a back-off wait before each pass over the list and none inside it.
import { Emitter } from './emitter.js';
import { World } from './world.js';
import { SnapshotError, num } from './snapshot.js';
import { CrowdError, RequestTimeoutError, ConnectionClosedError, ConnectError, errorCodeName } from './errors.js';
import {
  PROTOCOL_MAJOR, PROTOCOL_MINOR, ErrorCode, AgentEventKind, Avoidance, encodeClientMessage, decodeServerMessage,
} from './codec.js';
import { WebSocketTransport } from './transport/websocket.js';

const eventKindNames = Object.fromEntries(Object.entries(AgentEventKind).map(([k, v]) => [v, k.replace(/^AGENT_EVENT_/, '')]));

// Refusals that another try cannot cure: the client stops instead of reconnecting.
const FINAL_HELLO_ERRORS = new Set([
  ErrorCode.ERROR_BAD_TOKEN, ErrorCode.ERROR_UNSUPPORTED_VERSION,
  ErrorCode.ERROR_NO_SUCH_WORLD, ErrorCode.ERROR_WORLD_FORBIDDEN, ErrorCode.ERROR_BAD_WORLD_NAME,
]);

const AVOIDANCE_NAMES = { default: Avoidance.AVOIDANCE_DEFAULT, quality: Avoidance.AVOIDANCE_QUALITY,
                          reference: Avoidance.AVOIDANCE_REFERENCE };

/** WorldSettings from {tickRate, bounds: {minX, minY, maxX, maxY}, avoidance, navigation, maxAgents}. */
function worldSettings(s = {}) {
  const out = {};
  if (s.tickRate) out.tickRate = s.tickRate;
  if (s.bounds) {
    out.boundsMinX = s.bounds.minX; out.boundsMinY = s.bounds.minY;
    out.boundsMaxX = s.bounds.maxX; out.boundsMaxY = s.bounds.maxY;
  }
  if (s.avoidance !== undefined) {
    const v = typeof s.avoidance === 'string' ? AVOIDANCE_NAMES[s.avoidance] : s.avoidance;
    if (v === undefined) throw new TypeError(`crowd-client: avoidance '${s.avoidance}' is not default, quality or reference`);
    out.avoidance = v;
  }
  if (s.navigation) out.navigation = true;
  if (s.maxAgents) out.maxAgents = s.maxAgents;
  return out;
}

/** Converts a decoded WorldInfo to {name, agents, clients, tickRate, latenessP99Ms, tick, persisted}. */
function worldInfoFrom(w) {
  return { name: w.name || '', agents: w.agents || 0, clients: w.clients || 0, tickRate: w.tickRate || 0,
           latenessP99Ms: w.latenessP99Ms || 0, tick: num(w.tick || 0), persisted: !!w.persisted };
}

const DEFAULTS = {
  token: '',
  clientName: 'crowd-client',
  keepAgentsOnDisconnect: false,
  requestTimeoutMs: 10000,
  connectTimeoutMs: 10000,
  retry: false,
  reconnect: true,
  reconnectMinMs: 250,
  reconnectMaxMs: 10000,
  reconnectMaxAttempts: Infinity,
  requireResumed: false,
  idleTimeoutMs: 0,
  maxFrameBytes: 16 << 20,
  resumeKey: '',
  world: '',
  WebSocket: undefined,
};

function vec(v) { return v ? { x: v.x || 0, y: v.y || 0 } : null; }
function points(xs, ys) {
  const out = [];
  for (let i = 0; i < Math.min(xs?.length || 0, ys?.length || 0); i++) out.push({ x: xs[i], y: ys[i] });
  return out;
}

/** Converts a decoded AgentEvent to {agentId, kind, kindName, point, target, owner}. */
export function agentEventFrom(e) {
  return {
    agentId: e.agentId || 0,
    kind: e.kind || 0,
    kindName: eventKindNames[e.kind || 0] || String(e.kind),
    point: vec(e.point),
    target: vec(e.target),
    owner: e.owner || 0,
  };
}

/** Converts a decoded AgentPath to {agentId, points, corridor, goal, unreachable}. */
export function agentPathFrom(p) {
  return {
    agentId: p.agentId || 0,
    points: points(p.x, p.y),
    corridor: (p.corridor || []).map((poly) => points(poly.x, poly.y)),
    goal: vec(p.goal),
    unreachable: !!p.unreachable,
  };
}

const SYSCALL_FAILURES = {
  ECONNREFUSED: ['refused', 'connection refused: nothing listens there (is crowd-server running, and is this its --listen port?)'],
  ENOTFOUND: ['unreachable', 'host not found'],
  EAI_AGAIN: ['unreachable', 'host name lookup failed'],
  EHOSTUNREACH: ['unreachable', 'host unreachable'],
  ENETUNREACH: ['unreachable', 'network unreachable'],
  ECONNRESET: ['closed', 'connection reset by the peer before a Welcome'],
};

/** The first bytes a peer sent, as text if they are text, else in hex. */
function preview(bytes) {
  const b = bytes.subarray(0, 32);
  const text = b.every((c) => (c >= 0x20 && c < 0x7f) || c === 0x0a || c === 0x0d || c === 0x09);
  const shown = text ? JSON.stringify(String.fromCharCode(...b)) : [...b].map((c) => c.toString(16).padStart(2, '0')).join(' ');
  return shown + (bytes.length > b.length ? '…' : '');
}

/**
 * What a failed connection attempt met, as a ConnectError: from the socket's
 * error code, what the transport recognised (HTTP, TLS), the bytes the peer
 * sent, or the client's own finding (no Welcome in time, not crowd.v1).
 */
function connectFailure(where, error, transport, finding) {
  const fail = (kind, text, cause) => new ConnectError(kind, `${where}: ${text}`, { address: where, cause });
  if (finding) return fail(finding.kind, finding.text, error || undefined);
  const sys = error && SYSCALL_FAILURES[error.code];
  if (sys) return fail(sys[0], sys[1], error);
  if (error && error.code === 'ETIMEDOUT') return fail('timeout', error.message, error);
  if (error && error.connectKind === 'http')
    return fail('http', 'an HTTP server answered, not a crowd server: is this the server\'s --http port? ' +
                'Its TCP protocol port is --listen (7777 by default); over HTTP use ws://HOST:PORT/ws', error);
  if (error && error.connectKind === 'tls')
    return fail('tls', 'a TLS server answered: tcp:// is plain TCP (for TLS, use wss:// through a TLS proxy)', error);
  if (error && error.connectKind) return fail(error.connectKind, error.message, error);
  const head = transport && transport.head;
  if (head && head.length)
    return fail('not-crowd', `not a crowd server: it sent ${transport.received} bytes that are not crowd.v1 (${preview(head)})`, error || undefined);
  if (error && error.name === 'FrameError') return fail('not-crowd', 'not a crowd server: ' + error.message, error);
  return fail('closed', 'the peer closed the connection before a Welcome (not a crowd server?)', error || undefined);
}

/** One address, an array of them, or a string of comma-separated ones: [{kind, host, port | url, where}]. */
function parseAddresses(address) {
  const list = Array.isArray(address) ? address
    : typeof address === 'string' && address.includes(',') ? address.split(',') : [address];
  if (list.length === 0) throw new TypeError('crowd-client: an empty address list');
  return list.map((a) => {
    const parsed = parseAddress(a);
    return { ...parsed, where: typeof a === 'string' ? a.trim() : `tcp://${parsed.host}:${parsed.port}` };
  });
}

/** Parses 'tcp://host:port', 'ws://host:port/ws', 'wss://…' or {host, port}. */
function parseAddress(address) {
  if (typeof address === 'string') address = address.trim();
  if (typeof address === 'object' && address) return { kind: 'tcp', host: address.host || '127.0.0.1', port: address.port };
  const m = /^tcp:\/\/(\[[^\]]+\]|[^:/]+):(\d+)\/?$/.exec(address);
  if (m) return { kind: 'tcp', host: m[1].replace(/^\[|\]$/g, ''), port: Number(m[2]) };
  if (/^wss?:\/\//.test(address)) return { kind: 'ws', url: address };
  throw new TypeError(`crowd-client: address '${address}' is not tcp://HOST:PORT, ws://… or wss://…`);
}

export class CrowdClient extends Emitter {
  constructor(address, options = {}) {
    super();
    this.addresses = parseAddresses(address);
    this.addressIndex = 0;          // the address connected to, or tried next
    this.options = { ...DEFAULTS, ...options };
    this.state = 'idle';            // idle, connecting, connected, reconnecting, closed
    this.welcome = null;
    this.resumeKey = this.options.resumeKey;
    this.world = new World();
    this.subscription = null;       // the last subscribe() arguments, replayed after a reconnect
    this.eventsSubscription = null; // the last subscribeEvents() arguments, likewise
    this.paused = false;
    this.attempts = 0;              // attempts that failed since the last Welcome (or connect())
    this.presentedKey = '';         // the resume key this attempt's Hello carried
    this.lastError = null;          // the last CrowdError the server sent
    this.stats = { messagesIn: 0, bytesIn: 0, snapshots: 0, keyframes: 0, snapshotsDropped: 0,
                   decodeErrors: 0, protocolErrors: 0, reconnects: 0 };
    this.transport = null;
    this.nextRequestId = 1;
    this.pending = new Map();       // request id -> {resolve, reject, timer, expect}
    this.pings = new Map();         // client_time_us -> {resolve, reject, timer, sentAt}
    this.lastPingUs = 0;
    this.needKeyframe = true;
    this.resubscribing = false;
    this.reconnectTimer = null;
    this.connectWaiters = [];
    this.retrying = false;          // connect({retry}): keep trying until the first Welcome
    this.established = false;       // a Welcome since connect(): from then on `reconnect` applies
    this.finding = null;            // what this attempt met, when the client found it out itself
    this.idleTimer = null;          // idleTimeoutMs: fires when the server has been silent that long
    this.idleReason = null;
  }

  get connected() { return this.state === 'connected'; }
  /** The address connected to (or tried now): {kind, host, port | url, where}. */
  get address() { return this.addresses[this.addressIndex]; }
  /** The address connected to (or tried now), as given. */
  get where() { return this.address.where; }
  get clientId() { return this.welcome ? this.welcome.clientId : 0; }
  get role() { return this.welcome ? this.welcome.role : 0; }

  /**
   * Connects and says Hello. Resolves with the Welcome. The first failure rejects
   * it: a ConnectError whose `kind` says what was met ('refused', 'http', 'tls',
   * 'not-crowd', 'timeout', …), or the CrowdError of a refused Hello (BAD_TOKEN…).
   * With `retry` (here or in the options) a failed attempt is retried with
   * back-off instead, until a Welcome, a final refusal (BAD_TOKEN,
   * UNSUPPORTED_VERSION) or close(). After a Welcome, `reconnect` decides what a
   * lost connection does.
   */
  connect({ retry = this.options.retry } = {}) {
    if (this.state === 'connected') return Promise.resolve(this.welcome);
    const p = new Promise((resolve, reject) => this.connectWaiters.push({ resolve, reject }));
    if (this.state === 'idle' || this.state === 'closed') {
      this.closing = false;
      this.attempts = 0;
      this.addressIndex = 0;
      this.retrying = !!retry;
      this.established = false;
      this.#open();
    } else if (retry) {
      this.retrying = true;
    }
    return p;
  }

  /** Closes for good: no reconnect; pending requests reject with ConnectionClosedError. */
  close() {
    this.closing = true;
    clearTimeout(this.idleTimer);
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    if (this.transport) this.transport.close();
    else this.#setState('closed', { reason: 'closed by the client' });
    this.#settleConnect(null, new ConnectionClosedError('closed by the client'));
  }

  #setState(state, info = {}) {
    if (this.state === state && state !== 'reconnecting') return;
    this.state = state;
    this.emit('state', state, info);
  }

  #settleConnect(welcome, error) {
    const waiters = this.connectWaiters;
    this.connectWaiters = [];
    for (const w of waiters) error ? w.reject(error) : w.resolve(welcome);
  }

  async #open() {
    this.finding = null;
    this.#setState('connecting');
    const handlers = {
      onMessage: (bytes) => { if (this.transport === transport) this.#onMessage(bytes); },
      onClose: (info) => { if (this.transport === transport) this.#onClose({ ...info, transport }); },
    };
    let transport;
    try {
      if (this.address.kind === 'tcp') {
        const { TcpTransport } = await import('./transport/tcp.js');
        transport = new TcpTransport(this.address.host, this.address.port, handlers, this.options);
      } else {
        transport = new WebSocketTransport(this.address.url, handlers, this.options);
      }
    } catch (e) {
      this.closing = true;
      this.#setState('closed', { reason: e.message, error: e });
      this.#settleConnect(null, e);
      return;
    }
    if (this.closing) return; // close() while the transport module loaded
    this.transport = transport;
    try {
      await transport.open();
    } catch (e) {
      if (this.transport === transport) this.#onClose({ reason: e.message, error: e, transport });
      return;
    }
    if (this.transport !== transport || this.closing) return;
    if (this.paused) transport.pause();
    const hello = {
      protocolMajor: PROTOCOL_MAJOR, protocolMinor: PROTOCOL_MINOR, token: this.options.token,
      clientName: this.options.clientName, keepAgentsOnDisconnect: this.options.keepAgentsOnDisconnect,
    };
    this.presentedKey = this.resumeKey;
    if (this.resumeKey) hello.resumeKey = this.resumeKey;
    if (this.options.world) hello.world = this.options.world;
    this.#send({ hello }, 'welcome').then((w) => this.#onWelcome(w), () => { /* #onClose or a refusal handles it */ });
  }

  #onWelcome(w) {
    if (w.protocolMajor !== PROTOCOL_MAJOR) {
      // A crowd server of another major: final, as if it had refused the Hello.
      const message = `server speaks protocol ${w.protocolMajor}, this client ${PROTOCOL_MAJOR}`;
      this.helloRefusal = new CrowdError(ErrorCode.ERROR_UNSUPPORTED_VERSION, message);
      this.#protocolError(new Error(message));
      return;
    }
    const again = this.established; // a reconnect's Welcome
    if (again && this.options.requireResumed && this.presentedKey && !w.resumed) {
      // A server that does not know this client (a standby not promoted yet, a lost data dir): not this one.
      this.finding = { kind: 'not-resumed', text: 'it gave a new identity instead of resuming (requireResumed)' };
      if (this.transport) this.transport.close();
      return;
    }
    const attempt = this.attempts + 1;
    this.established = true;
    this.welcome = {
      protocolMajor: w.protocolMajor, protocolMinor: w.protocolMinor || 0, serverVersion: w.serverVersion || '',
      clientId: w.clientId || 0, role: w.role || 0, tickRateHz: w.tickRateHz || 30,
      snapshotDivisor: w.snapshotDivisor || 1, precision: w.precision || 100,
      worldBounds: w.worldBounds ? { minX: w.worldBounds.minX || 0, minY: w.worldBounds.minY || 0,
                                     maxX: w.worldBounds.maxX || 0, maxY: w.worldBounds.maxY || 0 } : null,
      tick: num(w.tick || 0), resumeKey: w.resumeKey || '', resumed: !!w.resumed,
      world: w.world || 'default',
    };
    if (this.welcome.resumeKey) this.resumeKey = this.welcome.resumeKey;
    this.world.reset();
    this.world.precision = this.welcome.precision;
    this.world.interval = 1000 * this.welcome.snapshotDivisor / this.welcome.tickRateHz;
    this.needKeyframe = true;
    this.attempts = 0;
    this.#setState('connected', { welcome: this.welcome });
    this.#armIdle();
    this.emit('welcome', this.welcome);
    if (again)
      this.emit('reconnected', { address: this.where, resumed: this.welcome.resumed, clientId: this.welcome.clientId, attempt });
    // What this client had asked for before a reconnect, asked again.
    if (this.subscription) this.#send({ subscribe: this.subscription }).catch((e) => this.emit('serverError', e));
    if (this.eventsSubscription)
      this.#send({ subscribeEvents: this.eventsSubscription }).catch((e) => this.emit('serverError', e));
    this.#settleConnect(this.welcome, null);
  }

  // A server whose machine vanished sends no FIN: silence for idleTimeoutMs counts as a loss.
  #armIdle() {
    const ms = this.options.idleTimeoutMs;
    if (!ms) return;
    clearTimeout(this.idleTimer);
    const t = this.transport;
    this.idleTimer = setTimeout(() => {
      if (this.transport !== t || !this.connected) return;
      this.idleReason = `nothing from the server for ${ms} ms`;
      t.close();
    }, ms);
  }

  #onClose({ reason, error, transport }) {
    const attempt = this.state === 'connecting'; // closed before its Welcome
    this.transport = null;
    clearTimeout(this.idleTimer);
    if (this.idleReason) { reason = this.idleReason; this.idleReason = null; }
    if (error && error.name === 'FrameError') {
      this.stats.protocolErrors++;
      this.emit('protocolError', error);
    }
    const closed = new ConnectionClosedError('connection closed: ' + reason);
    for (const [, p] of this.pending) { clearTimeout(p.timer); p.reject(closed); }
    this.pending.clear();
    for (const [, p] of this.pings) { clearTimeout(p.timer); p.reject(closed); }
    this.pings.clear();
    const refused = this.helloRefusal;
    this.helloRefusal = null;
    let failure = null;
    if (attempt && !this.closing && !refused) {
      failure = this.finding instanceof CrowdError ? this.finding : connectFailure(this.where, error, transport, this.finding);
      reason = failure.message;
      error = failure;
    }
    this.finding = null;
    const failedAt = this.where;
    const n = this.addresses.length;
    if (attempt) this.attempts++;
    if (attempt && !this.established && !this.retrying && !this.closing && !refused && this.attempts < n) {
      // connect(): the next address of the list, at once
      this.addressIndex = (this.addressIndex + 1) % n;
      this.#open();
      return;
    }
    const retry = attempt ? (this.established ? this.options.reconnect : this.retrying) : this.options.reconnect;
    const gaveUp = retry && this.attempts >= this.options.reconnectMaxAttempts;
    if (this.closing || refused || !retry || gaveUp) {
      let final = refused || failure;
      if (gaveUp && !this.closing && !refused) {
        final = new ConnectError('gave-up', `no address answered in ${this.attempts} attempts; the last, ${reason}`,
                                 { address: failedAt, cause: error || undefined });
        reason = final.message;
      }
      this.closing = true;
      this.#setState('closed', { reason, error: final || error || null });
      this.#settleConnect(null, final || new ConnectionClosedError(reason));
      return;
    }
    // The next address (after the one lost or refused); a back-off wait before each pass over the list.
    this.stats.reconnects++;
    this.addressIndex = (this.addressIndex + 1) % n;
    const next = this.attempts + 1;
    const o = this.options;
    const pass = Math.floor((next - 1) / n);
    const base = (next - 1) % n ? 0 : Math.min(o.reconnectMaxMs, o.reconnectMinMs * 2 ** Math.min(pass, 20));
    const delayMs = Math.round(base * (0.75 + Math.random() * 0.25));
    this.#setState('reconnecting', { reason, error: error || null, attempt: next, delayMs, address: this.where, failedAddress: failedAt });
    this.reconnectTimer = setTimeout(() => { this.reconnectTimer = null; if (!this.closing) this.#open(); }, delayMs);
  }

  #protocolError(error) {
    this.stats.protocolErrors++;
    this.emit('protocolError', error);
    if (this.state === 'connecting' && !this.finding)
      this.finding = { kind: 'not-crowd', text: 'not a crowd server: ' + error.message };
    // A peer that sends what is not crowd.v1 is not trusted further: close, and reconnect.
    if (this.transport) this.transport.close();
  }

  #onMessage(bytes) {
    if (this.connected) this.#armIdle();
    this.stats.messagesIn++;
    this.stats.bytesIn += bytes.length;
    let msg;
    try {
      msg = decodeServerMessage(bytes);
    } catch (e) {
      this.#protocolError(new Error('not a crowd.v1 ServerMessage: ' + e.message));
      return;
    }
    const now = performance.now();
    if (this.state === 'connecting' && msg.msg !== 'welcome' && msg.msg !== 'error') {
      // A crowd server's first word is a Welcome or an Error.
      this.#protocolError(new Error(`its first message was ${msg.msg ? 'a ' + msg.msg : 'not a crowd.v1 ServerMessage'}, not a Welcome`));
      return;
    }
    switch (msg.msg) {
      case 'welcome': this.#answer(0, 'welcome', msg.welcome); break;
      case 'ack': this.#answer(msg.ack.requestId, 'ack', msg.ack); break;
      case 'paths': this.#answer(msg.paths.requestId, 'paths', msg.paths); break;
      case 'worldList': this.#answer(msg.worldList.requestId, 'worldList', msg.worldList); break;
      case 'error': this.#onError(msg.error); break;
      case 'snapshot': this.#onSnapshot(msg.snapshot, now); break;
      case 'pong': this.#onPong(msg.pong, now); break;
      case 'agentEvents': {
        const events = (msg.agentEvents.events || []).map(agentEventFrom);
        const tick = num(msg.agentEvents.tick || 0);
        this.emit('agentEvents', { tick, events });
        for (const e of events) this.emit('agentEvent', e, tick);
        break;
      }
      default: break; // a case from a newer minor: ignored
    }
  }

  #answer(requestId, kind, body) {
    let rid = requestId;
    if (kind === 'welcome') {
      for (const [id, p] of this.pending) if (p.expect === 'welcome') { rid = id; break; }
    }
    const p = this.pending.get(rid);
    if (!p) {
      if (kind === 'welcome') this.#protocolError(new Error('a Welcome nobody asked for'));
      return;
    }
    this.pending.delete(rid);
    clearTimeout(p.timer);
    if (kind === 'worldList')
      p.resolve({ worlds: (body.worlds || []).map(worldInfoFrom), maxWorlds: body.maxWorlds || 0 });
    else if (kind === 'paths' || p.expect === 'paths') p.resolve((body.paths || []).map(agentPathFrom));
    else if (kind === 'ack') p.resolve([...(body.ids || [])]);
    else p.resolve(body);
  }

  #onError(e) {
    const err = new CrowdError(e.code || 0, e.message || '', { requestId: e.requestId || 0, index: e.index || 0 });
    this.lastError = err;
    const p = e.requestId ? this.pending.get(e.requestId) : undefined;
    if (p) {
      this.pending.delete(e.requestId);
      clearTimeout(p.timer);
      if (p.expect === 'welcome' && FINAL_HELLO_ERRORS.has(err.code)) this.helloRefusal = err;
      else if (p.expect === 'welcome') { // SERVER_FULL, SHUTTING_DOWN…: what this attempt met; on to the next
        this.finding = err;
        if (this.transport) this.transport.close();
      }
      p.reject(err);
    } else {
      if (this.state === 'connecting') this.finding = err;
      this.emit('serverError', err); // unasked: SLOW_CONSUMER, SHUTTING_DOWN, HELLO_TIMEOUT, MALFORMED…
    }
  }

  #onSnapshot(snap, now) {
    if (this.paused && !this.transport?.canPause) {
      // The transport could not stop reading (WebSocket): drop, and ask for a keyframe on resume.
      this.stats.snapshotsDropped++;
      this.needKeyframe = true;
      return;
    }
    if (this.needKeyframe && !snap.keyframe && this.world.snapshots === 0) {
      // Deltas before the first keyframe of this connection cannot be decoded.
      this.stats.snapshotsDropped++;
      return;
    }
    if (this.resubscribing && !snap.keyframe) {
      this.stats.snapshotsDropped++;
      return;
    }
    let info;
    try {
      info = this.world.apply(snap, now);
    } catch (e) {
      if (!(e instanceof SnapshotError)) throw e;
      this.stats.decodeErrors++;
      this.emit('protocolError', e);
      this.#askKeyframe();
      return;
    }
    if (snap.keyframe) { this.needKeyframe = false; this.resubscribing = false; this.stats.keyframes++; }
    this.stats.snapshots++;
    this.emit('snapshot', this.world, info);
  }

  // A fresh Subscribe brings a keyframe (the server forgets its baseline).
  #askKeyframe() {
    this.needKeyframe = true;
    if (!this.subscription || this.resubscribing || !this.connected) return;
    this.resubscribing = true;
    this.#send({ subscribe: this.subscription }).catch((e) => { this.resubscribing = false; this.emit('serverError', e); });
  }

  #onPong(pong, now) {
    const key = String(num(pong.clientTimeUs || 0));
    const p = this.pings.get(key);
    if (!p) return;
    this.pings.delete(key);
    clearTimeout(p.timer);
    p.resolve({ rttMs: now - p.sentAt, serverTick: num(pong.serverTick || 0) });
  }

  #send(body, expect = 'ack') {
    const t = this.transport;
    const helloPhase = expect === 'welcome';
    if (!t || (!this.connected && !helloPhase))
      return Promise.reject(new ConnectionClosedError('not connected (state ' + this.state + ')'));
    const requestId = this.nextRequestId;
    this.nextRequestId = this.nextRequestId >= 0xffffffff ? 1 : this.nextRequestId + 1;
    let bytes;
    try {
      bytes = encodeClientMessage({ requestId, ...body });
    } catch (e) {
      return Promise.reject(e);
    }
    return new Promise((resolve, reject) => {
      const ms = helloPhase ? this.options.connectTimeoutMs : this.options.requestTimeoutMs;
      const timer = setTimeout(() => {
        if (!this.pending.delete(requestId)) return;
        reject(new RequestTimeoutError(requestId, ms));
        if (helloPhase && this.transport === t) { // no Welcome: this attempt failed
          if (!this.finding) {
            this.finding = t.received
              ? { kind: 'not-crowd', text: `not a crowd server: no Welcome within ${ms} ms, and the ${t.received} bytes it sent are not crowd.v1 (${preview(t.head)})` }
              : { kind: 'timeout', text: `connected, but no Welcome within ${ms} ms (not a crowd server?)` };
          }
          t.close();
        }
      }, ms);
      this.pending.set(requestId, { resolve, reject, timer, expect });
      t.send(bytes);
    });
  }

  /** Sends any ClientMessage body ({spawnAgents: {...}}); resolves with the Ack's ids. */
  request(body) { return this.#send(body, body.getPaths ? 'paths' : body.listWorlds ? 'worldList' : 'ack'); }

  /** Spawns agents (AgentSpec objects: {position: {x, y}, target, radius, maxSpeed, steer, …}); resolves with their ids. */
  spawnAgents(agents) { return this.#send({ spawnAgents: { agents } }); }

  /** Sends agents to targets: one {x, y} for all, or one per id. */
  async setTargets(ids, targets, { steer } = {}) {
    const list = Array.isArray(targets) ? targets : [targets];
    const body = { ids, x: list.map((t) => t.x), y: list.map((t) => t.y) };
    if (steer !== undefined) body.steer = steer;
    await this.#send({ setTargets: body });
  }

  /** Sets preferred velocities directly (clears targets): one {x, y} for all, or one per id. */
  async setVelocities(ids, velocities) {
    const list = Array.isArray(velocities) ? velocities : [velocities];
    await this.#send({ setVelocities: { ids, vx: list.map((v) => v.x), vy: list.map((v) => v.y) } });
  }

  async removeAgents(ids) { await this.#send({ removeAgents: { ids } }); }

  /** Adds a polygon obstacle (vertices counter-clockwise; admin); resolves with its id. */
  async addObstacle(vertices) {
    const ids = await this.#send({ addObstacle: { x: vertices.map((v) => v.x), y: vertices.map((v) => v.y) } });
    return ids[0];
  }

  async removeObstacle(id) { await this.#send({ removeObstacle: { id } }); }

  /** Snapshots of `area` (whole world if absent), every `divisor` ticks. Kept across reconnects. */
  async subscribe({ area, divisor } = {}) {
    const sub = {};
    if (area) sub.area = { minX: area.minX, minY: area.minY, maxX: area.maxX, maxY: area.maxY };
    if (divisor) sub.divisor = divisor;
    this.subscription = sub;
    await this.#send({ subscribe: sub });
  }

  async unsubscribe() {
    this.subscription = null;
    await this.#send({ subscribe: { unsubscribe: true } });
  }

  /** Agent events for this client's agents (the default at minor 1), or every agent's (admin). */
  async subscribeEvents({ allAgents = false } = {}) {
    this.eventsSubscription = { allAgents };
    await this.#send({ subscribeEvents: { allAgents } });
  }

  async unsubscribeEvents() {
    this.eventsSubscription = { unsubscribe: true };
    await this.#send({ subscribeEvents: { unsubscribe: true } });
  }

  /** The current paths of these agents: [{agentId, points, corridor, goal, unreachable}]. */
  getPaths(ids) { return this.#send({ getPaths: { ids } }, 'paths'); }

  /** Round trip to the server: resolves with {rttMs, serverTick}. */
  ping() {
    const t = this.transport;
    if (!t || !this.connected) return Promise.reject(new ConnectionClosedError('not connected (state ' + this.state + ')'));
    const sentAt = performance.now();
    let us = Math.round(sentAt * 1000);
    if (us <= this.lastPingUs) us = this.lastPingUs + 1;
    this.lastPingUs = us;
    const key = String(us);
    const requestId = this.nextRequestId;
    this.nextRequestId = this.nextRequestId >= 0xffffffff ? 1 : this.nextRequestId + 1;
    return new Promise((resolve, reject) => {
      const ms = this.options.requestTimeoutMs;
      const timer = setTimeout(() => {
        if (this.pings.delete(key)) reject(new RequestTimeoutError(requestId, ms));
      }, ms);
      this.pings.set(key, { resolve, reject, timer, sentAt });
      t.send(encodeClientMessage({ requestId, ping: { clientTimeUs: us } }));
    });
  }

  /**
   * Stop taking snapshots in (a consumer that fell behind). Over TCP the socket
   * stops reading, so the server sees its output queue grow and skips snapshots
   * (its next one is a keyframe; it closes a connection that stays behind for
   * --output-soft-seconds). Over WebSocket snapshots are dropped here instead
   * and resume() asks for a keyframe.
   */
  pause() {
    this.paused = true;
    this.transport?.pause();
  }

  resume() {
    if (!this.paused) return;
    this.paused = false;
    if (this.transport?.canPause) {
      this.transport.resume();
    } else if (this.needKeyframe && this.world.snapshots > 0) {
      this.#askKeyframe();
    }
  }

  /** The world this connection is in (the Welcome's, or the last joinWorld's); '' before a Welcome. */
  get worldName() { return this.welcome ? this.welcome.world : ''; }

  /**
   * Opens a world (admin). settings: {tickRate, bounds: {minX, minY, maxX, maxY},
   * avoidance: 'default'|'quality'|'reference', navigation, maxAgents}; a field left
   * out takes the server's own. Rejects with WORLD_EXISTS, BAD_WORLD_NAME,
   * BAD_WORLD_SETTINGS, LIMIT_WORLDS or WORLD_FORBIDDEN.
   */
  async createWorld(name, settings = {}) {
    await this.#send({ createWorld: { name, settings: worldSettings(settings) } });
  }

  /** Closes a world (admin): its clients get WORLD_CLOSED; its data stays on disk unless deleteData. */
  async closeWorld(name, { deleteData = false } = {}) {
    await this.#send({ closeWorld: { name, deleteData } });
  }

  /** The open worlds: {worlds: [{name, agents, clients, tickRate, latenessP99Ms, tick, persisted}], maxWorlds}. */
  listWorlds() { return this.#send({ listWorlds: {} }, 'worldList'); }

  /**
   * Moves this connection to another world. The server resets its subscription and
   * events there, and so does the client (subscribe again); refused (INVALID_ARGUMENT)
   * while this client owns agents. A reconnect comes back to this world.
   */
  async joinWorld(name) {
    await this.#send({ joinWorld: { name } });
    this.options.world = name;
    if (this.welcome) this.welcome.world = name;
    this.subscription = null;
    this.eventsSubscription = null;
    this.resubscribing = false;
    this.world.reset();
    this.needKeyframe = true;
    this.emit('world', name);
  }

  /** The name of an ErrorCode ("BAD_TOKEN"). */
  static errorName(code) { return errorCodeName(code); }
}
