// e2e.mjs — the viewer end to end: a real `crowd-server --demo`, Debian's
// chromium driven by playwright-core (1.61, the last to run on Node 18), and an
// independent client (the crowd-client package over TCP) that checks the
// server's state. Runs on Debian 12's own Node 18 and on newer Node.
// Screenshots go to ARTIFACTS_DIR.
// Usage: node e2e.mjs CROWD_SERVER WEB_SRC_DIR ARTIFACTS_DIR
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [serverBin, webDir, artifacts] = process.argv.slice(2);
const require = createRequire(path.join(webDir, 'package.json'));
const { chromium } = require('playwright-core');
const { CrowdClient } = await import(pathToFileURL(path.join(webDir, '..', 'js', 'src', 'index.js')).href);
mkdirSync(artifacts, { recursive: true });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let server = null, httpPort = 0, tcpPort = 0, browser = null, page = null, profile = null;

// Start crowd-server and read its ports from stdout ("listening tcp|http HOST:PORT").
function startServer(http = '127.0.0.1:0', extra = []) {
  return new Promise((resolve, reject) => {
    const p = spawn(serverBin, ['--demo', '--listen', '127.0.0.1:0', '--http', http, '--log-level', 'warn', ...extra],
                    { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    const timer = setTimeout(() => reject(new Error('crowd-server did not start: ' + out)), 10000);
    p.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening http [^\n]*:(\d+)\n/), t = out.match(/listening tcp [^\n]*:(\d+)\n/);
      if (m && t) {
        clearTimeout(timer);
        resolve({ proc: p, port: Number(m[1]), tcp: Number(t[1]) });
      }
    });
    p.on('exit', (code) => { clearTimeout(timer); reject(new Error('crowd-server exited ' + code + ': ' + out)); });
  });
}

function stopServer(proc) {
  return new Promise((resolve) => {
    if (proc.exitCode !== null) return resolve(proc.exitCode);
    proc.removeAllListeners('exit');
    proc.on('exit', (code) => resolve(code));
    proc.kill('SIGTERM');
  });
}

async function healthz() {
  const r = await fetch(`http://127.0.0.1:${httpPort}/healthz`);
  return r.json();
}

async function waitFor(what, fn, ms = 15000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    last = await fn();
    if (last) return last;
    await sleep(100);
  }
  throw new Error('timed out waiting for ' + what + ' (last: ' + JSON.stringify(last) + ')');
}

const viewer = (expr, arg) => page.evaluate(expr, arg);

async function shot(name) {
  await page.screenshot({ path: path.join(artifacts, name) });
}

// An independent client over TCP: Hello, subscribe to the whole world, keep the decoded view.
async function watchWorld() {
  const c = new CrowdClient(`tcp://127.0.0.1:${tcpPort}`, { clientName: 'e2e watcher', reconnect: false });
  await c.connect();
  await c.subscribe();
  await waitFor('watcher snapshots', () => c.world.snapshots > 2);
  return c;
}

function ownedBy(c, owner) {
  return [...c.world.agents.values()].filter((a) => a.owner === owner).map((a) => ({ id: a.id, x: a.x, y: a.y }));
}

function centroid(agents) {
  const c = agents.reduce((s, a) => ({ x: s.x + a.x, y: s.y + a.y }), { x: 0, y: 0 });
  return { x: c.x / agents.length, y: c.y / agents.length };
}

before(async () => {
  ({ proc: server, port: httpPort, tcp: tcpPort } = await startServer());
  profile = mkdtempSync(path.join(tmpdir(), 'crowd-chromium-'));
  // A fresh profile each run (playwright takes it as userDataDir, not as a flag).
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1100, height: 760 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = browser.pages()[0] || await browser.newPage();
  page.on('pageerror', (e) => console.error('page error:', e.message));
});

after(async () => {
  if (browser) await browser.close();
  if (server) await stopServer(server);
  if (profile) rmSync(profile, { recursive: true, force: true });
});

test('the page connects and draws the demo crowd moving', async () => {
  await page.goto(`http://127.0.0.1:${httpPort}/`);
  await waitFor('connected with snapshots', () =>
    viewer(() => crowdViewer.state.status === 'connected' && crowdViewer.state.snapshots > 10));
  const canvasA = await viewer(() => document.getElementById('world').toDataURL());
  const snapshotsA = await viewer(() => crowdViewer.state.snapshots);
  await shot('1-connected.png');
  // A second of the demo's 30 Hz snapshots later (waited for, not slept).
  await waitFor('30 more snapshots', () => viewer((n) => crowdViewer.state.snapshots >= n, snapshotsA + 30));
  const canvasB = await viewer(() => document.getElementById('world').toDataURL());
  await shot('2-one-second-later.png');
  assert.notEqual(canvasA, canvasB, 'the canvas changed between two frames 30 snapshots apart');
  const s = await viewer(() => ({ errors: crowdViewer.state.decodeErrors, view: crowdViewer.state.view.size }));
  assert.equal(s.errors, 0, 'every snapshot decoded');
  assert.ok(s.view > 0, 'agents in view');
});

test("the HUD's agent count matches /healthz", async () => {
  const h = await healthz();
  assert.ok(h.agents > 0);
  await waitFor('HUD count = /healthz', async () =>
    Number(await page.textContent('#hud-world')) === (await healthz()).agents);
  assert.match(await page.textContent('#hud-rate'), /^\d+$/);
  await waitFor('a round-trip time', async () => (await page.textContent('#hud-rtt')).endsWith('ms'));
});

test('a drag spawns a group, a click sends it to a target, and the server shows both', async () => {
  const watcher = await watchWorld();
  assert.equal(await viewer(() => crowdViewer.client.transport.ws.protocol), 'crowd.v1', 'subprotocol echoed');
  const before = (await healthz()).agents;
  const me = await viewer(() => crowdViewer.state.clientId);
  assert.ok(me > 0);

  // Spawn: a rectangle near the bottom-left corner of the view.
  await page.click('button[data-tool="spawn"]');
  await page.mouse.move(60, 640);
  await page.mouse.down();
  await page.mouse.move(110, 680, { steps: 5 });
  await page.mouse.move(140, 700, { steps: 5 });
  await page.mouse.up();
  const spawned = await waitFor('spawn ack', () =>
    viewer(() => crowdViewer.state.lastAck && crowdViewer.state.lastAck.ids.length));
  assert.ok(spawned > 0);
  await waitFor('/healthz counts the new agents', async () => (await healthz()).agents === before + spawned);
  await waitFor('the watcher sees them, owned by the page', () => ownedBy(watcher, me).length === spawned);
  await shot('3-spawned.png');

  // Target: the spawned group is selected; click a point to the right of it.
  assert.equal(await viewer(() => crowdViewer.state.selected.size), spawned, 'the new group is selected');
  await page.click('button[data-tool="select"]');
  const target = await viewer(() => crowdViewer.screenToWorld(330, 600));
  const start = centroid(ownedBy(watcher, me));
  const d0 = Math.hypot(target[0] - start.x, target[1] - start.y);
  await page.mouse.click(330, 600);
  await waitFor('the group walks toward the target', () => {
    const c = centroid(ownedBy(watcher, me));
    return d0 - Math.hypot(target[0] - c.x, target[1] - c.y) > Math.min(4, d0 / 2);
  }, 20000);
  // The selected group's paths, from the server's GetPaths (minor 1), drawn over their corridors.
  await waitFor('paths of the selected agents', () =>
    viewer(() => !crowdViewer.state.pathsUnsupported && crowdViewer.state.paths.size > 0));
  await shot('4-walking-to-target.png');
  watcher.close();
});

test('an admin draws an obstacle and the server adds it', async () => {
  const before = await viewer(() => crowdViewer.state.obstacles.length);
  await page.click('button[data-tool="obstacle"]');
  await page.mouse.click(900, 620);
  await page.mouse.click(1000, 620);
  await page.mouse.click(950, 700);
  await page.keyboard.press('Enter');
  await waitFor('the new obstacle in a snapshot', () =>
    viewer((n) => crowdViewer.state.obstacles.length === n + 1, before));
  const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
  assert.match(text, new RegExp(`\ncrowd_obstacles ${before + 1}\n`));
  await shot('5-obstacle.png');
});

test('the page reconnects after the server restarts, and says so meanwhile', async () => {
  const code = await stopServer(server);
  assert.equal(code, 0, 'crowd-server exits 0 on SIGTERM');
  server = null;
  await waitFor('reconnecting banner', () =>
    viewer(() => crowdViewer.state.status === 'reconnecting' &&
                 !document.getElementById('banner').classList.contains('hidden')));
  assert.match(await page.textContent('#banner'), /Reconnecting in/);
  await shot('6-server-down.png');
  ({ proc: server, tcp: tcpPort } = await startServer(`127.0.0.1:${httpPort}`));
  await waitFor('connected again', () =>
    viewer(() => crowdViewer.state.status === 'connected' &&
                 document.getElementById('banner').classList.contains('hidden')), 20000);
  const s0 = await viewer(() => crowdViewer.state.snapshots);
  await waitFor('snapshots flowing again', () => viewer((n) => crowdViewer.state.snapshots > n + 5, s0));
  await waitFor('fresh world in the HUD', async () =>
    Number(await page.textContent('#hud-world')) === (await healthz()).agents);
  await shot('7-reconnected.png');
});

test('zooming in narrows the subscription to the view (area of interest)', async () => {
  const world = await viewer(() => crowdViewer.state.worldAgents);
  // Zoom in on one of the demo's groups (lower left of the page).
  await page.mouse.move(350, 575);
  for (let i = 0; i < 3; i++) await page.mouse.wheel(0, -400);
  await waitFor('fewer agents in view than in the world', () =>
    viewer((w) => crowdViewer.state.view.size < w / 2 && crowdViewer.state.worldAgents === w, world));
  assert.match(await page.textContent('#hud-view'), /^\d+ \/ \d+$/);
  await shot('8-zoomed-in.png');
});

test('the token field: an unknown token is refused on screen, a viewer token cannot command', async () => {
  const ini = path.join(profile, 'tokens.ini');
  writeFileSync(ini, '[tokens]\nlook = viewer\nboss = admin\n');
  const { proc, port } = await startServer('127.0.0.1:0', ['--config', ini]);
  try {
    await page.goto(`http://127.0.0.1:${port}/?token=nope`);
    await waitFor('refused', () => viewer(() => crowdViewer.state.status === 'refused'));
    assert.match(await page.textContent('#banner'), /does not know this token/);
    assert.match(await page.textContent('#hud-error'), /BAD_TOKEN/);
    await shot('9-bad-token.png');
    await page.fill('#token', 'look');
    await page.click('#token-form button');
    await waitFor('connected as viewer', () =>
      viewer(() => crowdViewer.state.status === 'connected' && crowdViewer.state.role === 1));
    assert.equal(await page.isDisabled('button[data-tool="spawn"]'), true);
    assert.equal(await page.isDisabled('button[data-tool="obstacle"]'), true);
    assert.match(await page.textContent('#hud-role'), /^viewer #/);
  } finally {
    await stopServer(proc);
  }
});

test('selected agents show their paths; an unreachable target is marked until arrival (hand-fed minor-1 answers)', async () => {
  await page.goto(`http://127.0.0.1:${httpPort}/`);
  await waitFor('connected with snapshots', () =>
    viewer(() => crowdViewer.state.status === 'connected' && crowdViewer.state.snapshots > 3));
  const ids = await viewer(async () => {
    const c = crowdViewer.client;
    const ids = await c.spawnAgents([{ position: { x: -20, y: -20 } }, { position: { x: -16, y: -20 } }]);
    // Until the server navigates, GetPaths is answered here the way proto/crowd.proto says it will be.
    c.getPaths = (asked) => Promise.resolve(asked.map((id, i) => ({
      agentId: id, points: [{ x: 0, y: 10 * i }, { x: 20, y: 10 * i }], goal: { x: 20, y: 10 * i }, unreachable: i === 1,
      corridor: [[{ x: -25, y: -25 }, { x: 25, y: -25 }, { x: 25, y: 25 }, { x: -25, y: 25 }]] })));
    crowdViewer.state.pathsUnsupported = false;
    crowdViewer.state.selected = new Set(ids);
    return ids;
  });
  await waitFor('both paths fetched', () => viewer(() => crowdViewer.state.paths.size === 2));
  const red = (p) => p[0] > 200 && p[1] < 150 && p[2] < 150;
  const pixel = (x, y) => viewer(([x, y]) => {
    const s = crowdViewer.worldToScreen(x, y);
    return Array.from(document.getElementById('world').getContext('2d').getImageData(Math.round(s.x), Math.round(s.y), 1, 1).data);
  }, [x, y]);
  const target = { x: 60, y: 40 };
  await viewer(([id, target]) => crowdViewer.client.emit('agentEvent',
    { agentId: id, kind: 2, kindName: 'UNREACHABLE', point: { x: 30, y: 30 }, target, owner: 0 }, 1), [ids[0], target]);
  await waitFor('the unreachable target marked red', async () => red(await pixel(target.x, target.y)));
  await shot('10-paths-and-unreachable.png');
  await viewer((id) => crowdViewer.client.emit('agentEvent', { agentId: id, kind: 1, kindName: 'ARRIVED', point: { x: 30, y: 30 } }, 2), ids[0]);
  await waitFor('the mark gone on arrival', async () =>
    (await viewer(() => crowdViewer.state.unreachable.size)) === 0 && !red(await pixel(target.x, target.y)));
});

test('the example page draws the crowd with the crowd-client package', async () => {
  await page.goto(`http://127.0.0.1:${httpPort}/example.html`);
  await waitFor('example connected with agents', () =>
    viewer(() => window.crowdExample && crowdExample.connected && crowdExample.world.size > 0));
  const n = await viewer(() => crowdExample.world.size);
  assert.equal(n, (await healthz()).agents, 'every agent of the world in its view');
  await shot('11-example-page.png');
});

test('the world picker lists the server\'s worlds; an unknown ?world= is refused on screen', async () => {
  await page.goto(`http://127.0.0.1:${httpPort}/`);
  await waitFor('connected in the default world', () =>
    viewer(() => crowdViewer.state.status === 'connected' && crowdViewer.state.world === 'default'));
  await waitFor('the picker filled by ListWorlds', async () =>
    (await page.$$eval('#world-select option', (os) => os.map((o) => o.value))).includes('default'));
  assert.equal(await page.inputValue('#world-select'), 'default');
  assert.equal(await page.textContent('#hud-world-name'), 'default');
  // The list's count is the world's, as its snapshots say (the list is refreshed every few seconds).
  await waitFor('the listed agent count = the snapshots\' world count', () => viewer(async () => {
    await crowdViewer.refreshWorlds();
    const w = crowdViewer.state.worlds.find((x) => x.name === 'default');
    return w && w.agents === crowdViewer.state.worldAgents;
  }));

  await page.goto(`http://127.0.0.1:${httpPort}/?world=nowhere`);
  await waitFor('refused', () => viewer(() => crowdViewer.state.status === 'refused'));
  assert.match(await page.textContent('#banner'), /'nowhere' cannot be watched \(NO_SUCH_WORLD\)/);
  await shot('12-no-such-world.png');
  await page.click('#token-form button');
  await waitFor('back in the default world', () =>
    viewer(() => crowdViewer.state.status === 'connected' && crowdViewer.state.world === 'default'));
});

test('picking a world moves the view there (JoinWorld), and back (a reconnect while the page owns agents)', async (t) => {
  const admin = new CrowdClient(`tcp://127.0.0.1:${tcpPort}`, { clientName: 'e2e admin', reconnect: false });
  await admin.connect();
  try {
    try {
      await admin.createWorld('plaza', { tickRate: 20 });
    } catch (e) {
      if (e.codeName === 'LIMIT_WORLDS') return t.skip('CreateWorld answers LIMIT_WORLDS: this server holds one world');
      throw e;
    }
    const player = new CrowdClient(`tcp://127.0.0.1:${tcpPort}`, { clientName: 'e2e plaza', world: 'plaza', reconnect: false });
    await player.connect();
    await player.spawnAgents([{ position: { x: 0, y: 0 } }, { position: { x: 4, y: 0 } }, { position: { x: 8, y: 0 } }]);
    await page.goto(`http://127.0.0.1:${httpPort}/`);
    await waitFor('connected', () => viewer(() => crowdViewer.state.status === 'connected'));
    await viewer(() => crowdViewer.refreshWorlds());
    await waitFor('plaza in the picker', async () =>
      (await page.$$eval('#world-select option', (os) => os.map((o) => o.value))).includes('plaza'));
    await page.selectOption('#world-select', 'plaza');
    await waitFor('the view shows plaza\'s three agents', () =>
      viewer(() => crowdViewer.state.world === 'plaza' && crowdViewer.state.view.size === 3 &&
                   crowdViewer.state.worldAgents === 3));
    assert.equal(await page.textContent('#hud-world-name'), 'plaza');
    assert.match(page.url(), /\?world=plaza$/);
    await shot('13-world-plaza.png');

    // The page spawns in plaza, so JoinWorld is refused: it reconnects into the default world instead.
    await viewer(() => crowdViewer.client.spawnAgents([{ position: { x: 20, y: 20 } }]));
    await page.selectOption('#world-select', 'default');
    await waitFor('back in the default world with its crowd', async () =>
      viewer((n) => crowdViewer.state.status === 'connected' && crowdViewer.state.world === 'default' &&
                    crowdViewer.state.worldAgents === n,
             (await admin.listWorlds()).worlds.find((w) => w.name === 'default').agents));
    assert.equal((await admin.listWorlds()).worlds.find((w) => w.name === 'plaza').agents, 3,
                 'the page\'s plaza agent went with its connection');
    player.close();
    await admin.closeWorld('plaza', { deleteData: true });
  } finally {
    admin.close();
  }
});
