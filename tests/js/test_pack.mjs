// test_pack.mjs — the package as a user gets it: `npm pack` of clients/js into a
// temporary directory, an empty project there, `npm install <tarball>`
// (protobufjs from the registry, or npm's cache), then a script in that project
// imports '@crowd-sim/client' by name and talks to a real crowd-server: Welcome,
// an Ack with the spawned agent's id, a snapshot holding it. Its types resolve
// there too (tsc on a typed file, against the installed index.d.ts).
// Usage: CROWD_SERVER=build/server/crowd-server node --test test_pack.mjs
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, rmSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startServer } from './harness.mjs';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const jsDir = process.env.CROWD_JS_DIR || path.join(here, '..', '..', 'clients', 'js');
const npm = process.env.NPM || 'npm';
const tmp = realpathSync(mkdtempSync(path.join(tmpdir(), 'crowd-js-pack-')));
after(() => rmSync(tmp, { recursive: true, force: true }));

const npmEnv = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

test('npm pack, npm install <tarball> in an empty project, import it by name, talk to a real server', async () => {
  // 1. The tarball (prepack embeds crowd.proto).
  const { stdout: packed } = await run(npm, ['pack', '--json', '--pack-destination', tmp], { cwd: jsDir, env: npmEnv });
  const [info] = JSON.parse(packed.slice(packed.indexOf('[')));
  const pkg = JSON.parse(readFileSync(path.join(jsDir, 'package.json'), 'utf8'));
  assert.equal(info.name, '@crowd-sim/client');
  assert.equal(info.version, pkg.version);
  const files = info.files.map((f) => f.path);
  for (const f of ['package.json', 'LICENSE', 'index.d.ts', 'src/index.js', 'src/crowd_proto.gen.js', 'src/transport/tcp.js'])
    assert.ok(files.includes(f), `${f} in the tarball: ${files.join(' ')}`);
  assert.ok(!files.some((f) => f.startsWith('node_modules/')), 'no node_modules in the tarball');
  const tarball = path.join(tmp, info.filename);

  // 2. An empty project that installs it.
  const app = path.join(tmp, 'app');
  const { mkdirSync } = await import('node:fs');
  mkdirSync(app);
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }, null, 2));
  await run(npm, ['install', '--prefer-offline', '--no-save', tarball], { cwd: app, env: npmEnv });

  // 3. A script that imports the package by name and uses it.
  writeFileSync(path.join(app, 'main.mjs'), `
import { createRequire } from 'node:module';
import { CrowdClient, ErrorCode } from '@crowd-sim/client';
const where = createRequire(import.meta.url).resolve('@crowd-sim/client'); // (Node 18: no import.meta.resolve)
const c = new CrowdClient(process.argv[2], { clientName: 'packed' });
const welcome = await c.connect();
await c.subscribe();
const ids = await c.spawnAgents([{ position: { x: 3, y: 4 } }]);
const snap = await new Promise((resolve) => c.on('snapshot', (w) => { if (w.agents.has(ids[0])) resolve(w.agents.get(ids[0])); }));
c.close();
console.log(JSON.stringify({ where, clientId: welcome.clientId, ids, x: snap.x, y: snap.y, limitCost: ErrorCode.ERROR_LIMIT_COST }));
`);
  const server = await startServer();
  let out;
  try {
    ({ stdout: out } = await run(process.execPath, ['main.mjs', `tcp://127.0.0.1:${server.tcp}`], { cwd: app, timeout: 60000 }));
  } finally {
    await server.stop();
  }
  const r = JSON.parse(out.trim().split('\n').pop());
  assert.ok(r.where.startsWith(path.join(app, 'node_modules', '@crowd-sim', 'client')), 'imported from the install: ' + r.where);
  assert.ok(r.clientId > 0, 'a Welcome');
  assert.equal(r.ids.length, 1, 'an Ack with one id');
  assert.ok(r.ids[0] > 0);
  assert.deepEqual([r.x, r.y], [3, 4], 'the agent in a snapshot where it was spawned');
  assert.equal(r.limitCost, 27);

  // 4. Its types, as a TypeScript user resolves them (package.json "exports" -> index.d.ts).
  writeFileSync(path.join(app, 'check.ts'), `
import { CrowdClient, SteerMode, type Welcome } from '@crowd-sim/client';
const c = new CrowdClient('tcp://127.0.0.1:7777', { retry: true });
const w: Promise<Welcome> = c.connect();
const steer: SteerMode = SteerMode.STEER_NAVIGATE;
console.log(w, steer);
`);
  writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022', 'DOM'], types: [] },
    files: ['check.ts'],
  }));
  const tsc = path.join(jsDir, 'node_modules', 'typescript', 'bin', 'tsc');
  await run(process.execPath, [tsc, '-p', app], { cwd: app }).catch((e) => { throw new Error('tsc: ' + e.stdout + e.stderr); });
});
