// jslib-check.mjs — the WebGL plugin (clients/unity/Runtime/Plugins/WebGL/CrowdWebSocket.jslib)
// run as a Unity WebGL build runs it: its functions merged into an emscripten-like
// library object, called with pointers into a heap (HEAPU8, _malloc, UTF8ToString,
// stringToUTF8), over the runtime's WebSocket, against a real crowd-server.
// Usage: node jslib-check.mjs <crowd-server> [<jslib>]. Prints ok/FAIL lines and
// "N passed, N failed"; exits 0 only when every check passed.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import vm from 'node:vm';
import net from 'node:net';

if (typeof WebSocket === 'undefined') {
  // Node 20 has the browser's WebSocket behind a flag (22 has it by default).
  const r = spawnSync(process.execPath, ['--experimental-websocket', ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(r.status === null ? 1 : r.status);
}

const here = path.dirname(fileURLToPath(import.meta.url));
const serverExe = process.argv[2];
const jslib = process.argv[3] || path.join(here, '../../clients/unity/Runtime/Plugins/WebGL/CrowdWebSocket.jslib');
let passed = 0, failed = 0;
const check = (cond, what) => {
  if (cond) { passed++; console.log('ok   ' + what); } else { failed++; console.log('FAIL ' + what); }
};

// ---- the emscripten side a WebGL build provides to a .jslib
const HEAPU8 = new Uint8Array(1 << 20);
let heapTop = 16;
const env = {
  WebSocket,
  HEAPU8,
  _malloc(n) { const p = heapTop; heapTop += (n + 7) & ~7; if (heapTop > HEAPU8.length) throw new Error('heap full'); return p; },
  UTF8ToString(ptr) { let end = ptr; while (HEAPU8[end]) end++; return Buffer.from(HEAPU8.subarray(ptr, end)).toString('utf8'); },
  lengthBytesUTF8(s) { return Buffer.byteLength(s, 'utf8'); },
  stringToUTF8(s, ptr, max) { const b = Buffer.from(s, 'utf8'); const n = Math.min(b.length, max - 1); HEAPU8.set(b.subarray(0, n), ptr); HEAPU8[ptr + n] = 0; },
  LibraryManager: { library: {} },
  mergeInto(target, lib) { Object.assign(target, lib); },
  autoAddDeps(lib, dep) { lib[dep + '__deps'] = true; },
};
vm.createContext(env);
vm.runInContext(readFileSync(jslib, 'utf8'), env, { filename: jslib });
const lib = env.LibraryManager.library;
env.CrowdWs = lib.$CrowdWs; // emscripten makes a $name library member a global named name
const str = (s) => { const n = env.lengthBytesUTF8(s) + 1; const p = env._malloc(n); env.stringToUTF8(s, p, n); return p; };
const reason = (id) => env.UTF8ToString(lib.CrowdWsReason(id));
for (const f of ['CrowdWsOpen', 'CrowdWsState', 'CrowdWsNextSize', 'CrowdWsReceive', 'CrowdWsSend', 'CrowdWsClose', 'CrowdWsReason', 'CrowdWsFree'])
  check(typeof lib[f] === 'function', `the library exports ${f} (a [DllImport("__Internal")] in Transport.cs)`);
check(lib.$CrowdWs__deps === true, 'autoAddDeps names $CrowdWs for every function');

// Bounded by a generous guard (not a timing assertion): the event itself ends the wait.
const until = async (cond) => {
  const start = Date.now();
  while (Date.now() - start < 60000) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 5));
  }
  return false;
};

const server = spawn(serverExe, ['--listen', '127.0.0.1:0', '--http', '127.0.0.1:0', '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
const output = [];
let tcpPort = 0, httpPort = 0;
const onLine = (buf) => {
  for (const line of buf.toString().split('\n')) {
    if (line) output.push(line);
    let m = /^listening tcp 127\.0\.0\.1:(\d+)/.exec(line);
    if (m) tcpPort = Number(m[1]);
    m = /^listening http 127\.0\.0\.1:(\d+)/.exec(line);
    if (m) httpPort = Number(m[1]);
  }
};
server.stdout.on('data', onLine);
server.stderr.on('data', onLine);
let exited = null;
server.on('exit', (code) => { exited = code; });

try {
  check(await until(() => httpPort && tcpPort), 'crowd-server prints its ports');
  const url = `ws://127.0.0.1:${httpPort}/ws`;

  // A socket: open, Hello, Welcome, Subscribe, snapshots as whole messages.
  const id = lib.CrowdWsOpen(str(url), str('crowd.v1'));
  check(id > 0 && lib.CrowdWsState(id) === 0, 'CrowdWsOpen gives an id, state 0 (connecting)');
  check(lib.CrowdWsSend(id, 0, 0) === 0, 'CrowdWsSend before open: 0');
  check(await until(() => lib.CrowdWsState(id) === 1), 'state 1 (open) with subprotocol crowd.v1');
  check(reason(id) === '', 'no reason while open');
  // ClientMessage { request_id 1, hello { protocol_major 1, protocol_minor 1, client_name "jslib" } }
  const hello = [0x08, 0x01, 0x12, 0x0b, 0x08, 0x01, 0x10, 0x01, 0x22, 0x05, ...Buffer.from('jslib')];
  // ClientMessage { request_id 2, subscribe {} }
  const subscribe = [0x08, 0x02, 0x4a, 0x00];
  const out = env._malloc(64);
  HEAPU8.set(hello, out);
  check(lib.CrowdWsSend(id, out, hello.length) === 1, 'CrowdWsSend of the Hello: 1');
  HEAPU8.set(subscribe, out);
  check(lib.CrowdWsSend(id, out, subscribe.length) === 1, 'CrowdWsSend of a Subscribe: 1');
  const messages = [];
  const buffer = env._malloc(1 << 16);
  const drain = () => {
    for (;;) {
      const size = lib.CrowdWsNextSize(id);
      if (size < 0) return;
      HEAPU8.fill(0xee, buffer, buffer + size + 1);
      const got = lib.CrowdWsReceive(id, buffer, 1 << 16);
      messages.push({ size, got, bytes: Buffer.from(HEAPU8.subarray(buffer, buffer + got)), after: HEAPU8[buffer + got] });
    }
  };
  check(await until(() => { drain(); return messages.filter((m) => m.bytes[0] === 0x22).length >= 3; }),
        `a Welcome then snapshots arrive as whole messages (${messages.length})`);
  check(messages.length > 0 && messages[0].bytes[0] === 0x0a, 'the first message is the Welcome (ServerMessage field 1)');
  check(messages.every((m) => m.size === m.got && m.after === 0xee), 'CrowdWsReceive copies exactly CrowdWsNextSize bytes into the heap');
  check(lib.CrowdWsNextSize(id) === -1 || lib.CrowdWsNextSize(id) > 0, 'CrowdWsNextSize is -1 when the queue is empty, else a size');
  lib.CrowdWsClose(id, 1000, str('closed by the client'));
  check(await until(() => lib.CrowdWsState(id) === 3), 'CrowdWsClose: state 3 (closed)');
  check(/closed 1000/.test(reason(id)), `the reason names the close code (${reason(id)})`);
  lib.CrowdWsFree(id);
  check(lib.CrowdWsState(id) === 3 && lib.CrowdWsNextSize(id) === -1, 'CrowdWsFree: the id reads as closed and empty');

  // Nobody there: closed, with a reason.
  const closedPort = await new Promise((resolve) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); }); });
  const refused = lib.CrowdWsOpen(str(`ws://127.0.0.1:${closedPort}/ws`), str('crowd.v1'));
  check(await until(() => lib.CrowdWsState(refused) === 3) && reason(refused).length > 0, `a closed port: state 3 and a reason (${reason(refused)})`);
  lib.CrowdWsFree(refused);

  // Not a WebSocket endpoint (the health page): closed, with a reason.
  const health = lib.CrowdWsOpen(str(`ws://127.0.0.1:${httpPort}/healthz`), str('crowd.v1'));
  check(await until(() => lib.CrowdWsState(health) === 3) && reason(health).length > 0, `/healthz: state 3 and a reason (${reason(health)})`);
  lib.CrowdWsFree(health);

  // A bad URL: the constructor throws; the socket reads as closed with the reason.
  const bad = lib.CrowdWsOpen(str('not a url'), str('crowd.v1'));
  check(lib.CrowdWsState(bad) === 3 && /cannot open/.test(reason(bad)), `a bad URL: state 3 at once and a reason (${reason(bad)})`);
  lib.CrowdWsFree(bad);

  server.kill('SIGTERM');
  check(await until(() => exited !== null) && exited === 0, 'crowd-server exits 0');
} catch (e) {
  check(false, 'ended by an exception: ' + (e && e.stack ? e.stack : e));
} finally {
  if (exited === null) server.kill('SIGKILL');
  if (failed) for (const line of output) console.log('     server: ' + line);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
