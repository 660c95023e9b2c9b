/* viewer.js — the crowd viewer: connects to /ws with the crowd-client package
 * (clients/js, served as /crowd/; the one JavaScript implementation of the
 * wire), draws agents and obstacles on a canvas at 60 fps (interpolated by the
 * client's World), keeps the subscription's area on the view, sends spawn /
 * target / obstacle commands the token's role allows, and for selected agents
 * draws their paths (GetPaths) and marks unreachable targets (AgentEvents).
 * A world picker lists the server's worlds (ListWorlds) and moves the view to
 * the one picked (JoinWorld; ?world=NAME picks one at start). */
import { CrowdClient } from './crowd/index.js';

var BACKOFF_MIN_MS = 500, BACKOFF_MAX_MS = 10000;
var PING_EVERY_MS = 1000;
var PATHS_EVERY_MS = 500;      // paths of the selected agents, refreshed this often
var PATHS_MAX = 64;            // selected agents whose paths are asked for
var SUBSCRIBE_MARGIN = 0.25;   // area of interest = view + this share on each side
var SPAWN_MAX = 400;           // agents in one dragged group
var ROLE_NAMES = ['none', 'viewer', 'player', 'admin'];
var WORLDS_EVERY_MS = 3000;    // the world picker's list, refreshed this often

var canvas = document.getElementById('world');
var ctx = canvas.getContext('2d');
var el = function (id) { return document.getElementById(id); };

var client = null;

// Everything the page knows; also the test hook (window.crowdViewer).
var state = {
  status: 'starting',    // starting, connecting, connected, reconnecting, refused
  attempts: 0,
  reconnectAt: 0,
  closeInfo: '',
  clientId: 0,
  role: 0,
  worldBounds: null,
  tick: 0,
  worldAgents: 0,
  get view() { return world().agents; },   // id -> agent (world units), the subscribed area
  get obstacles() { return world().obstacles; },
  snapshots: 0,
  onScreen: 0,           // agents drawn in the last frame
  keyframes: 0,
  decodeErrors: 0,
  rtt: null,
  selected: new Set(),
  paths: new Map(),      // agent id -> {points, corridor, goal, unreachable} from GetPaths
  pathsUnsupported: false,
  unreachable: new Map(), // agent id -> {point, target}: AgentEvents UNREACHABLE, until it arrives or is retargeted
  agentEvents: 0,
  lastError: null,
  lastAck: null,
  acks: 0,
  errors: 0,
  world: '',             // the world watched (Welcome / JoinWorld)
  worlds: [],            // [{name, agents, clients, tickRate, latenessP99Ms, …}] from ListWorlds
  worldSwitches: 0,      // JoinWorld (or a reconnect into another world) done from the picker
};

var emptyWorld = null;
function world() {
  if (client) return client.world;
  return emptyWorld || (emptyWorld = { agents: new Map(), obstacles: [], forEachAt: function () {}, agentsIn: function () { return []; } });
}

// Camera: world point at the canvas centre, and pixels per world unit.
var camera = { x: 0, y: 0, scale: 4, fitted: false };
var rateWindow = [];               // [time, bytes] of recent messages
var snapshotTimes = [];
var tool = 'view';
var drag = null;                   // {button, x0, y0, x1, y1, cam}
var obstacleDraft = [];
var lastSubscribed = null;
var subscribeDue = 0;
var bytesSeen = 0;

// ------------------------------------------------------------------ protocol

function token() {
  return el('token').value.trim();
}

function connect(worldName) {
  var url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws';
  var c = new CrowdClient(url, { token: token(), clientName: 'web viewer', reconnectMinMs: BACKOFF_MIN_MS,
                                 reconnectMaxMs: BACKOFF_MAX_MS, world: worldName || '' });
  client = c;
  bytesSeen = 0;
  c.on('state', function (s, info) {
    if (client !== c) return;
    if (s === 'connecting') {
      state.status = 'connecting';
    } else if (s === 'connected') {
      state.status = 'connected';
      state.attempts = 0;
    } else if (s === 'reconnecting') {
      state.status = 'reconnecting';
      state.attempts = info.attempt;
      state.reconnectAt = performance.now() + info.delayMs;
      state.closeInfo = info.reason || 'connection lost';
      lastSubscribed = null;
    } else if (s === 'closed') {
      var err = info.error;
      state.status = 'refused';
      state.closeInfo = err && err.codeName === 'BAD_TOKEN'
        ? 'The server does not know this token: enter another and press connect.'
        : err && err.codeName === 'UNSUPPORTED_VERSION' ? 'The server speaks another protocol version.'
          : err && (err.codeName === 'NO_SUCH_WORLD' || err.codeName === 'WORLD_FORBIDDEN' ||
                    err.codeName === 'BAD_WORLD_NAME')
            ? 'The world \'' + (c.options.world || 'default') + '\' cannot be watched (' + err.codeName +
              '): press connect for the default world.'
            : 'Disconnected (' + (info.reason || 'closed') + '): press connect.';
    }
  });
  c.on('welcome', function (w) { if (client === c) onWelcome(w); });
  c.on('snapshot', function (wd, info) { if (client === c) onSnapshot(wd, info); });
  c.on('agentEvent', function (e) { if (client === c) onAgentEvent(e); });
  c.on('serverError', noteError);
  c.on('protocolError', function () { state.decodeErrors++; });
  c.connect().catch(noteError);
}

function reconnectNow(worldName) {
  if (client) {
    var old = client;
    client = null;
    old.close();
  }
  state.attempts = 0;
  connect(worldName);
}

// ------------------------------------------------------------------ worlds

function refreshWorlds() {
  if (state.status !== 'connected' || !client) return Promise.resolve();
  var c = client;
  return c.listWorlds().then(function (list) {
    if (client !== c) return;
    state.worlds = list.worlds;
    fillWorldSelect();
  }, function () { /* an older server (minor < 2) has no worlds: the picker keeps the one it knows */ });
}

function fillWorldSelect() {
  var select = el('world-select');
  var names = state.worlds.map(function (w) { return w.name; });
  if (state.world && names.indexOf(state.world) < 0) names.unshift(state.world);
  var want = names.join('\n');
  if (select.dataset.names !== want) {
    select.textContent = '';
    names.forEach(function (name) {
      var o = document.createElement('option');
      o.value = name;
      select.appendChild(o);
    });
    select.dataset.names = want;
  }
  Array.prototype.forEach.call(select.options, function (o) {
    var w = state.worlds.find(function (x) { return x.name === o.value; });
    o.textContent = w ? w.name + ' (' + w.agents + ' agents)' : o.value;
  });
  if (document.activeElement !== select) select.value = state.world;
}

// The picker: JoinWorld keeps this connection; while it owns agents the server
// refuses (INVALID_ARGUMENT), and the viewer reconnects into that world instead
// (agents of a connection go when it closes, as when the page is left).
function switchWorld(name) {
  if (!client || name === state.world) return;
  var c = client;
  state.worldSwitches++;
  c.joinWorld(name).then(function () {
    if (client === c) enteredWorld(name);
  }, function (err) {
    if (client !== c) return;
    if (err && err.codeName === 'INVALID_ARGUMENT') reconnectNow(name);
    else { noteError(err); fillWorldSelect(); }
  });
}

function enteredWorld(name) {
  state.world = name;
  state.selected.clear();
  state.paths.clear();
  state.unreachable.clear();
  state.worldAgents = 0;
  camera.fitted = false;
  lastSubscribed = null;
  if (history.replaceState) {
    var q = new URLSearchParams(location.search);
    if (name === 'default') q.delete('world'); else q.set('world', name);
    var s = q.toString();
    history.replaceState(null, '', location.pathname + (s ? '?' + s : ''));
  }
  if (client && !client.subscription) client.subscribe().catch(noteError);
  fillWorldSelect();
  refreshWorlds();
}

function noteError(err) {
  if (!err || err.code === undefined) return;
  state.errors++;
  state.lastError = { code: err.code, name: err.codeName, message: err.message.replace(/^[A-Z_]+: /, ''), at: performance.now() };
}

// A command's promise: the ids of an Ack (recorded as lastAck), or null after an error (shown in the HUD).
function command(p) {
  return p.then(function (ids) {
    state.acks++;
    state.lastAck = { ids: ids || [] };
    return ids || [];
  }, function (err) {
    noteError(err);
    return null;
  });
}

function onWelcome(w) {
  state.clientId = w.clientId;
  state.role = w.role;
  state.worldBounds = w.worldBounds;
  state.tick = w.tick;
  // Whole world first; the first snapshot fits the camera, then the area follows the view.
  enteredWorld(w.world || 'default');
  updateTools();
}

function onSnapshot(wd, info) {
  var now = performance.now();
  state.snapshots++;
  if (info.keyframe) state.keyframes++;
  state.tick = wd.tick;
  state.worldAgents = wd.worldAgentCount;
  state.decodeErrors = client.stats.decodeErrors + client.stats.protocolErrors;
  snapshotTimes.push(now);
  state.selected.forEach(function (id) { if (!wd.agents.has(id)) state.selected.delete(id); });
  if (!camera.fitted) {
    if (wd.agents.size || wd.obstacles.length) {
      fitCamera();
    } else {
      // An empty world: look at 100 x 100 units around the origin; the area follows from here.
      camera.x = 0;
      camera.y = 0;
      camera.scale = Math.min(canvas.width, canvas.height) / 100;
      camera.fitted = true;
    }
  }
}

function onAgentEvent(e) {
  state.agentEvents++;
  if (e.kindName === 'UNREACHABLE') {
    state.unreachable.set(e.agentId, { point: e.point, target: e.target });
  } else if (e.kindName === 'ARRIVED') {
    state.unreachable.delete(e.agentId);
  }
}

// Paths (and corridors) of the selected agents, when the server knows GetPaths.
var pathsDue = 0;
function refreshPaths() { pathsDue = 0; }
function maybeGetPaths(now) {
  if (state.status !== 'connected' || state.pathsUnsupported || now < pathsDue) return;
  pathsDue = now + PATHS_EVERY_MS;
  if (!state.selected.size) { state.paths.clear(); return; }
  var ids = Array.from(state.selected).slice(0, PATHS_MAX);
  client.getPaths(ids).then(function (paths) {
    var m = new Map();
    paths.forEach(function (p) { m.set(p.agentId, p); });
    state.paths = m;
  }, function (err) {
    // A server before navigation answers UNKNOWN_MESSAGE: stop asking until the next connection.
    if (err.codeName === 'UNKNOWN_MESSAGE') state.pathsUnsupported = true;
    else if (err.code) noteError(err);
  });
}

function fitCamera() {
  var minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  world().agents.forEach(function (a) {
    minX = Math.min(minX, a.x - a.radius); maxX = Math.max(maxX, a.x + a.radius);
    minY = Math.min(minY, a.y - a.radius); maxY = Math.max(maxY, a.y + a.radius);
  });
  world().obstacles.forEach(function (o) {
    for (var i = 0; i < o.x.length; i++) {
      minX = Math.min(minX, o.x[i]); maxX = Math.max(maxX, o.x[i]);
      minY = Math.min(minY, o.y[i]); maxY = Math.max(maxY, o.y[i]);
    }
  });
  if (!isFinite(minX)) return;
  var w = Math.max(10, maxX - minX), h = Math.max(10, maxY - minY);
  camera.x = (minX + maxX) / 2;
  camera.y = (minY + maxY) / 2;
  camera.scale = Math.min(canvas.width / (w * 1.15), canvas.height / (h * 1.15));
  camera.fitted = true;
  subscribeDue = 0;
}

function visibleRect() {
  var hw = canvas.width / 2 / camera.scale, hh = canvas.height / 2 / camera.scale;
  return { minX: camera.x - hw, minY: camera.y - hh, maxX: camera.x + hw, maxY: camera.y + hh };
}

// Keep the subscription's area on the view (plus a margin), at most 4 times a second.
function maybeSubscribe(now) {
  if (state.status !== 'connected' || !camera.fitted || now < subscribeDue) return;
  var v = visibleRect();
  var mx = (v.maxX - v.minX) * SUBSCRIBE_MARGIN, my = (v.maxY - v.minY) * SUBSCRIBE_MARGIN;
  var area = { minX: v.minX - mx, minY: v.minY - my, maxX: v.maxX + mx, maxY: v.maxY + my };
  if (lastSubscribed) {
    // Re-subscribe only when the view left the inner half of the margin.
    var inside = v.minX >= lastSubscribed.minX + mx / 2 && v.maxX <= lastSubscribed.maxX - mx / 2 &&
                 v.minY >= lastSubscribed.minY + my / 2 && v.maxY <= lastSubscribed.maxY - my / 2;
    var zoomedIn = (v.maxX - v.minX) < (lastSubscribed.maxX - lastSubscribed.minX) * 0.4;
    if (inside && !zoomedIn) return;
  }
  lastSubscribed = area;
  subscribeDue = now + 250;
  client.subscribe({ area: area }).catch(noteError);
}

// Selected agents' paths: the corridor's polygons faintly, the corners as a line from the agent.
function drawPaths(now) {
  if (!state.paths.size) return;
  // Corridors first, each polygon once however many selected agents cross it.
  var seen = new Set();
  ctx.fillStyle = 'rgba(90,140,200,0.12)';
  state.paths.forEach(function (p, id) {
    if (!state.selected.has(id)) return;
    p.corridor.forEach(function (poly) {
      if (poly.length < 3) return;
      var key = poly.map(function (q) { return q.x + ',' + q.y; }).join(' ');
      if (seen.has(key)) return;
      seen.add(key);
      ctx.beginPath();
      poly.forEach(function (q, i) {
        var s = toScreen(q.x, q.y);
        if (i === 0) ctx.moveTo(s[0], s[1]); else ctx.lineTo(s[0], s[1]);
      });
      ctx.closePath();
      ctx.fill();
    });
  });
  state.paths.forEach(function (p, id) {
    if (!state.selected.has(id)) return;
    var at = world().positionAt(id, now);
    var pts = (at ? [at] : []).concat(p.points);
    if (pts.length < 2) return;
    ctx.strokeStyle = p.unreachable ? 'rgba(240,112,112,0.8)' : 'rgba(120,200,255,0.8)';
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    pts.forEach(function (q, i) {
      var s = toScreen(q.x, q.y);
      if (i === 0) ctx.moveTo(s[0], s[1]); else ctx.lineTo(s[0], s[1]);
    });
    ctx.stroke();
  });
}

// Unreachable targets (AgentEvents): a red cross on the target, a dashed line to the point chosen instead.
function drawUnreachable() {
  if (!state.unreachable.size) return;
  ctx.strokeStyle = '#f07070';
  ctx.lineWidth = 2;
  state.unreachable.forEach(function (u) {
    if (!u.target) return;
    var t = toScreen(u.target.x, u.target.y);
    ctx.beginPath();
    ctx.moveTo(t[0] - 6, t[1] - 6); ctx.lineTo(t[0] + 6, t[1] + 6);
    ctx.moveTo(t[0] + 6, t[1] - 6); ctx.lineTo(t[0] - 6, t[1] + 6);
    ctx.stroke();
    if (u.point) {
      var q = toScreen(u.point.x, u.point.y);
      ctx.setLineDash([4, 4]);
      ctx.beginPath();
      ctx.moveTo(t[0], t[1]); ctx.lineTo(q[0], q[1]);
      ctx.stroke();
      ctx.setLineDash([]);
    }
  });
}

// ------------------------------------------------------------------ drawing

function ownerColour(owner, alpha) {
  if (!owner) return 'rgba(150,160,172,' + alpha + ')';
  var hue = (owner * 137.508) % 360;
  return 'hsla(' + hue.toFixed(1) + ',70%,58%,' + alpha + ')';
}

function toScreen(x, y) {
  return [canvas.width / 2 + (x - camera.x) * camera.scale, canvas.height / 2 - (y - camera.y) * camera.scale];
}

function toWorld(sx, sy) {
  return [camera.x + (sx - canvas.width / 2) / camera.scale, camera.y - (sy - canvas.height / 2) / camera.scale];
}

function draw(now) {
  ctx.fillStyle = '#101418';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  drawGrid();
  drawBounds();
  // obstacles
  ctx.lineWidth = 2;
  state.obstacles.forEach(function (o) {
    if (!o.x.length) return;
    ctx.beginPath();
    for (var i = 0; i < o.x.length; i++) {
      var s = toScreen(o.x[i], o.y[i]);
      if (i === 0) ctx.moveTo(s[0], s[1]); else ctx.lineTo(s[0], s[1]);
    }
    if (o.x.length > 2) {
      ctx.closePath();
      ctx.fillStyle = '#3a4552';
      ctx.fill();
    }
    ctx.strokeStyle = '#6f7f90';
    ctx.stroke();
  });
  drawPaths(now);
  // agents, at their true radius
  var v = visibleRect();
  var own = state.clientId;
  var onScreen = 0;
  world().forEachAt(now, function (a, x, y) {
    if (x + a.radius < v.minX || x - a.radius > v.maxX || y + a.radius < v.minY || y - a.radius > v.maxY) return;
    onScreen++;
    var s = toScreen(x, y);
    var r = Math.max(1, a.radius * camera.scale);
    ctx.beginPath();
    ctx.arc(s[0], s[1], r, 0, Math.PI * 2);
    ctx.fillStyle = ownerColour(a.owner, 0.9);
    ctx.fill();
    if (state.selected.has(a.id)) {
      ctx.lineWidth = 2;
      ctx.strokeStyle = '#ffffff';
      ctx.stroke();
    } else if (own && a.owner === own && r > 3) {
      ctx.lineWidth = 1;
      ctx.strokeStyle = 'rgba(255,255,255,0.5)';
      ctx.stroke();
    }
  });
  drawUnreachable(now);
  state.onScreen = onScreen;
  drawDrag();
  drawObstacleDraft();
}

function drawGrid() {
  var v = visibleRect();
  var step = Math.pow(10, Math.ceil(Math.log10(60 / camera.scale)));
  ctx.strokeStyle = '#1a2129';
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (var x = Math.floor(v.minX / step) * step; x <= v.maxX; x += step) {
    var a = toScreen(x, 0)[0];
    ctx.moveTo(a, 0); ctx.lineTo(a, canvas.height);
  }
  for (var y = Math.floor(v.minY / step) * step; y <= v.maxY; y += step) {
    var b = toScreen(0, y)[1];
    ctx.moveTo(0, b); ctx.lineTo(canvas.width, b);
  }
  ctx.stroke();
}

function drawBounds() {
  var b = state.worldBounds;
  if (!b) return;
  var p0 = toScreen(b.minX, b.maxY), p1 = toScreen(b.maxX, b.minY);
  ctx.strokeStyle = '#2c3a48';
  ctx.lineWidth = 2;
  ctx.strokeRect(p0[0], p0[1], p1[0] - p0[0], p1[1] - p0[1]);
}

function drawDrag() {
  if (!drag || drag.button !== 0 || (tool !== 'spawn' && tool !== 'select')) return;
  var x = Math.min(drag.x0, drag.x1), y = Math.min(drag.y0, drag.y1);
  ctx.strokeStyle = tool === 'spawn' ? '#62d26f' : '#ffffff';
  ctx.setLineDash([5, 4]);
  ctx.lineWidth = 1;
  ctx.strokeRect(x, y, Math.abs(drag.x1 - drag.x0), Math.abs(drag.y1 - drag.y0));
  ctx.setLineDash([]);
}

function drawObstacleDraft() {
  if (!obstacleDraft.length) return;
  ctx.strokeStyle = '#f0a040';
  ctx.lineWidth = 2;
  ctx.beginPath();
  obstacleDraft.forEach(function (w, i) {
    var s = toScreen(w[0], w[1]);
    if (i === 0) ctx.moveTo(s[0], s[1]); else ctx.lineTo(s[0], s[1]);
  });
  ctx.stroke();
}

// ------------------------------------------------------------------ HUD

function fmtRate(n) {
  if (n >= 1e6) return (n / 1e6).toFixed(2) + ' M';
  if (n >= 1e3) return (n / 1e3).toFixed(1) + ' k';
  return n.toFixed(0);
}

function updateHud(now) {
  if (client && client.stats.bytesIn !== bytesSeen) {
    rateWindow.push([now, client.stats.bytesIn - bytesSeen]);
    bytesSeen = client.stats.bytesIn;
  }
  while (rateWindow.length && rateWindow[0][0] < now - 1000) rateWindow.shift();
  while (snapshotTimes.length && snapshotTimes[0] < now - 1000) snapshotTimes.shift();
  var bytes = 0;
  rateWindow.forEach(function (r) { bytes += r[1]; });
  var status = el('status'), banner = el('banner');
  if (state.status === 'reconnecting') {
    var secs = Math.max(0, (state.reconnectAt - now) / 1000).toFixed(1);
    status.textContent = 'reconnecting';
    banner.textContent = 'Server unreachable (' + state.closeInfo + '). Reconnecting in ' + secs +
      ' s, attempt ' + state.attempts + '…';
    banner.classList.remove('hidden');
  } else if (state.status === 'refused') {
    status.textContent = 'refused';
    banner.textContent = state.closeInfo;
    banner.classList.remove('hidden');
  } else {
    status.textContent = state.status;
    banner.classList.add('hidden');
  }
  status.className = 'status ' + state.status;
  el('hud-tick').textContent = state.tick;
  // On screen, and in the subscribed area (the view plus a margin).
  el('hud-view').textContent = state.onScreen + ' / ' + state.view.size;
  el('hud-world').textContent = state.worldAgents;
  el('hud-rate').textContent = snapshotTimes.length;
  el('hud-bytes').textContent = fmtRate(bytes);
  el('hud-rtt').textContent = state.rtt === null ? '–' : state.rtt.toFixed(1) + ' ms';
  el('hud-world-name').textContent = state.world || '–';
  el('hud-role').textContent = state.status === 'connected'
    ? ROLE_NAMES[state.role] + ' #' + state.clientId : '–';
  el('hud-selected').textContent = state.selected.size;
  var err = state.lastError;
  el('hud-error').textContent = err && now - err.at < 5000 ? err.name + ': ' + err.message : '';
}

function frame() {
  var now = performance.now();
  var w = Math.floor(canvas.clientWidth * (window.devicePixelRatio || 1));
  var h = Math.floor(canvas.clientHeight * (window.devicePixelRatio || 1));
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
  }
  maybeSubscribe(now);
  maybeGetPaths(now);
  draw(now);
  updateHud(now);
  requestAnimationFrame(frame);
}

// ------------------------------------------------------------------ input

function canCommand() { return state.status === 'connected' && state.role >= 2; }

function updateTools() {
  document.querySelectorAll('#tools [data-tool]').forEach(function (b) {
    b.classList.toggle('active', b.dataset.tool === tool);
    var t = b.dataset.tool;
    b.disabled = state.status === 'connected' && ((t === 'spawn' || t === 'select') && state.role < 2 ||
                                                 t === 'obstacle' && state.role < 3);
  });
  canvas.className = 'tool-' + tool;
  var hints = {
    view: 'drag to pan, wheel to zoom, F to fit the crowd',
    spawn: 'drag a rectangle to spawn a group there (right-drag pans)',
    select: 'drag to select your agents, then click to send them there',
    obstacle: 'click the corners, double-click or Enter to finish, Esc to cancel',
  };
  el('hint').textContent = hints[tool];
}

function setTool(t) {
  tool = t;
  obstacleDraft = [];
  updateTools();
}

function eventPos(ev) {
  var r = canvas.getBoundingClientRect();
  var k = canvas.width / r.width;
  return [(ev.clientX - r.left) * k, (ev.clientY - r.top) * k];
}

function spawnGroup(x0, y0, x1, y1) {
  if (!canCommand()) return;
  var spacing = 4; // world units: room for the default radius (1.5) and some slack
  var minX = Math.min(x0, x1), maxX = Math.max(x0, x1), minY = Math.min(y0, y1), maxY = Math.max(y0, y1);
  var cols = Math.max(1, Math.floor((maxX - minX) / spacing) + 1);
  var rows = Math.max(1, Math.floor((maxY - minY) / spacing) + 1);
  while (cols * rows > SPAWN_MAX) {
    spacing *= 1.2;
    cols = Math.max(1, Math.floor((maxX - minX) / spacing) + 1);
    rows = Math.max(1, Math.floor((maxY - minY) / spacing) + 1);
  }
  var agents = [];
  for (var i = 0; i < rows; i++)
    for (var j = 0; j < cols; j++)
      agents.push({ position: { x: minX + j * spacing, y: minY + i * spacing } });
  command(client.spawnAgents(agents)).then(function (ids) {
    if (!ids) return;
    state.selected = new Set(ids);
    refreshPaths();
  });
}

function selectIn(x0, y0, x1, y1) {
  var minX = Math.min(x0, x1), maxX = Math.max(x0, x1), minY = Math.min(y0, y1), maxY = Math.max(y0, y1);
  var sel = new Set();
  world().agentsIn({ minX: minX, minY: minY, maxX: maxX, maxY: maxY }).forEach(function (a) {
    if (state.role >= 3 || a.owner === state.clientId) sel.add(a.id);
  });
  state.selected = sel;
  refreshPaths();
}

function sendTarget(x, y) {
  if (!canCommand() || !state.selected.size) return;
  var ids = Array.from(state.selected);
  ids.forEach(function (id) { state.unreachable.delete(id); });
  command(client.setTargets(ids, { x: x, y: y })).then(function () { refreshPaths(); });
}

function finishObstacle() {
  var pts = obstacleDraft;
  obstacleDraft = [];
  if (pts.length < 3 || state.role < 3) return; // the server refuses fewer (BAD_POLYGON)
  // RVO2 wants counter-clockwise polygons.
  var area = 0;
  for (var i = 0; i < pts.length; i++) {
    var a = pts[i], b = pts[(i + 1) % pts.length];
    area += a[0] * b[1] - b[0] * a[1];
  }
  if (area < 0) pts.reverse();
  command(client.addObstacle(pts.map(function (p) { return { x: p[0], y: p[1] }; })));
}

canvas.addEventListener('contextmenu', function (ev) { ev.preventDefault(); });
canvas.addEventListener('mousedown', function (ev) {
  canvas.focus();
  var p = eventPos(ev);
  drag = { button: ev.button, x0: p[0], y0: p[1], x1: p[0], y1: p[1], cam: { x: camera.x, y: camera.y } };
});
window.addEventListener('mousemove', function (ev) {
  if (!drag) return;
  var p = eventPos(ev);
  drag.x1 = p[0];
  drag.y1 = p[1];
  var panning = drag.button !== 0 || tool === 'view';
  if (panning) {
    camera.x = drag.cam.x - (drag.x1 - drag.x0) / camera.scale;
    camera.y = drag.cam.y + (drag.y1 - drag.y0) / camera.scale;
  }
});
window.addEventListener('mouseup', function (ev) {
  if (!drag) return;
  var d = drag;
  drag = null;
  var p = eventPos(ev);
  d.x1 = p[0];
  d.y1 = p[1];
  if (d.button !== 0 || tool === 'view') return;
  var moved = Math.abs(d.x1 - d.x0) + Math.abs(d.y1 - d.y0) > 6;
  var w0 = toWorld(d.x0, d.y0), w1 = toWorld(d.x1, d.y1);
  if (tool === 'spawn') {
    spawnGroup(w0[0], w0[1], w1[0], w1[1]);
  } else if (tool === 'select') {
    if (moved) selectIn(w0[0], w0[1], w1[0], w1[1]);
    else sendTarget(w1[0], w1[1]);
  } else if (tool === 'obstacle' && !moved) {
    obstacleDraft.push(w1);
  }
});
canvas.addEventListener('dblclick', function () {
  if (tool === 'obstacle') finishObstacle();
});
canvas.addEventListener('wheel', function (ev) {
  ev.preventDefault();
  var p = eventPos(ev);
  var before = toWorld(p[0], p[1]);
  camera.scale = Math.min(400, Math.max(0.02, camera.scale * Math.exp(-ev.deltaY * 0.0015)));
  var after = toWorld(p[0], p[1]);
  camera.x += before[0] - after[0];
  camera.y += before[1] - after[1];
}, { passive: false });
window.addEventListener('keydown', function (ev) {
  if (ev.target === el('token')) return;
  var tools = { '1': 'view', '2': 'spawn', '3': 'select', '4': 'obstacle' };
  if (tools[ev.key]) setTool(tools[ev.key]);
  else if (ev.key === 'f') fitCamera();
  else if (ev.key === 'Enter' && tool === 'obstacle') finishObstacle();
  else if (ev.key === 'Escape') { obstacleDraft = []; state.selected.clear(); state.paths.clear(); }
});
document.querySelectorAll('#tools [data-tool]').forEach(function (b) {
  b.addEventListener('click', function () { setTool(b.dataset.tool); });
});
el('token-form').addEventListener('submit', function (ev) {
  ev.preventDefault();
  try { localStorage.setItem('crowd.token', token()); } catch (e) { /* private mode */ }
  // A world that refused this page is left for the default one; otherwise stay where we are.
  reconnectNow(state.status === 'refused' ? '' : state.world);
});
el('world-select').addEventListener('change', function (ev) { switchWorld(ev.target.value); });
setInterval(refreshWorlds, WORLDS_EVERY_MS);

setInterval(function () {
  if (state.status !== 'connected') return;
  client.ping().then(function (p) { state.rtt = p.rttMs; }, function () { /* the next one will tell */ });
}, PING_EVERY_MS);

// ------------------------------------------------------------------ start

var params = new URLSearchParams(location.search);
var saved = null;
try { saved = localStorage.getItem('crowd.token'); } catch (e) { /* private mode */ }
el('token').value = params.get('token') || saved || '';

// For people poking around and for the end-to-end test.
window.crowdViewer = {
  state: state,
  camera: camera,
  get client() { return client; },
  worldToScreen: function (x, y) {
    var s = toScreen(x, y), r = canvas.getBoundingClientRect(), k = r.width / canvas.width;
    return { x: r.left + s[0] * k, y: r.top + s[1] * k };
  },
  screenToWorld: function (x, y) {
    var r = canvas.getBoundingClientRect(), k = canvas.width / r.width;
    return toWorld((x - r.left) * k, (y - r.top) * k);
  },
  setTool: setTool,
  reconnect: reconnectNow,
  switchWorld: switchWorld,
  refreshWorlds: refreshWorlds,
};

updateTools();
connect(params.get('world') || '');
requestAnimationFrame(frame);
