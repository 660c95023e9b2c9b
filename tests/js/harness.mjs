// harness.mjs — the real crowd-server for the client tests (port 0; its ports
// read from the "listening tcp|http HOST:PORT" lines), and a scripted fake server.
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export const serverBin = process.env.CROWD_SERVER;
const jsDir = process.env.CROWD_JS_DIR || path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'clients', 'js');
export const crowd = await import(pathToFileURL(path.join(jsDir, 'src', 'index.js')).href);

/** Starts crowd-server with `args`; resolves with {proc, tcp, http, stop()} once both ports are printed. */
export function startServer(args = [], { tcp = '127.0.0.1:0' } = {}) {
  if (!serverBin) throw new Error('set CROWD_SERVER to the crowd-server binary');
  return new Promise((resolve, reject) => {
    const proc = spawn(serverBin, ['--listen', tcp, '--http', '127.0.0.1:0', '--log-level', 'warn', ...args],
                       { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const t = out.match(/listening tcp [^\n]*:(\d+)\n/), h = out.match(/listening http [^\n]*:(\d+)\n/);
      if (t && h) {
        proc.stdout.removeAllListeners('data');
        proc.stdout.resume();
        resolve({ proc, tcp: Number(t[1]), http: Number(h[1]), stop: () => stopServer(proc) });
      }
    });
    proc.on('exit', (code) => reject(new Error(`crowd-server exited ${code} before listening: ${out}`)));
  });
}

export function stopServer(proc) {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve(proc.exitCode);
    proc.removeAllListeners('exit');
    proc.on('exit', (code) => resolve(code));
    proc.kill('SIGTERM');
  });
}

/** Resolves when `emitter` emits `name` with arguments `pred` accepts. */
export function nextEvent(emitter, name, pred = () => true) {
  return new Promise((resolve) => {
    const fn = (...args) => { if (pred(...args)) { emitter.off(name, fn); resolve(args); } };
    emitter.on(name, fn);
  });
}

/** Polls `fn` on every event-loop turn of a timer until it returns a truthy value. */
export async function until(what, fn, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function metric(http, name) {
  const text = await (await fetch(`http://127.0.0.1:${http}/metrics`)).text();
  const m = text.match(new RegExp(`^${name} (\\d+)$`, 'm'));
  return m ? Number(m[1]) : NaN;
}

/**
 * A fake server on 127.0.0.1:0 speaking varint-delimited frames. onConnection(conn)
 * gets {socket, messages (async iterator of decoded ClientMessages), send(obj), sendRaw(bytes)}.
 */
export async function fakeServer(onConnection) {
  const { FrameReader, frame, protoRoot } = crowd;
  const ClientMessage = protoRoot.lookupType('crowd.v1.ClientMessage');
  const ServerMessage = protoRoot.lookupType('crowd.v1.ServerMessage');
  const sockets = new Set();
  const srv = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    const reader = new FrameReader();
    const queue = [], waiters = [];
    socket.on('data', (chunk) => {
      for (const f of reader.push(chunk)) {
        const m = ClientMessage.decode(f);
        if (waiters.length) waiters.shift()(m); else queue.push(m);
      }
    });
    const conn = {
      socket,
      next: () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((r) => waiters.push(r))),
      send: (obj) => socket.write(frame(ServerMessage.encode(ServerMessage.fromObject(obj)).finish())),
      sendRaw: (bytes) => socket.write(bytes),
    };
    Promise.resolve(onConnection(conn)).catch((e) => { console.error('fake server:', e); socket.destroy(); });
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    port: srv.address().port,
    close: () => new Promise((r) => { for (const s of sockets) s.destroy(); srv.close(r); }),
  };
}

export const welcome = (extra = {}) => ({
  welcome: { protocolMajor: 1, protocolMinor: 1, clientId: 7, role: 3, tickRateHz: 30, snapshotDivisor: 1,
             precision: 100, tick: 1, ...extra },
});
