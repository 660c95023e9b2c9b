/* viewer.js — the crowd viewer: connects to /ws (subprotocol crowd.v1), decodes
 * snapshots with snapshot.js, draws agents and obstacles on a canvas at 60 fps
 * (interpolating between snapshots), keeps the subscription's area on the view,
 * and sends spawn / target / obstacle commands the token's role allows. */
(function () {
  'use strict';

  var PROTOCOL_MAJOR = 1, PROTOCOL_MINOR = 0;
  var BACKOFF_MIN_MS = 500, BACKOFF_MAX_MS = 10000;
  var PING_EVERY_MS = 1000;
  var SUBSCRIBE_MARGIN = 0.25;   // area of interest = view + this share on each side
  var SPAWN_MAX = 400;           // agents in one dragged group
  var ROLE_NAMES = ['none', 'viewer', 'player', 'admin'];

  var canvas = document.getElementById('world');
  var ctx = canvas.getContext('2d');
  var el = function (id) { return document.getElementById(id); };

  var proto = null;        // {ClientMessage, ServerMessage, ErrorCode}
  var ws = null;
  var nextRequestId = 1;
  var pending = new Map(); // request id -> callback(ack | error)

  // Everything the page knows; also the test hook (window.crowdViewer).
  var state = {
    status: 'starting',    // starting, connecting, connected, reconnecting
    attempts: 0,
    reconnectAt: 0,
    clientId: 0,
    role: 0,
    precision: 100,
    tickRate: 30,
    worldBounds: null,
    tick: 0,
    worldAgents: 0,
    view: new Map(),       // decoded snapshot state, fixed point
    drawn: new Map(),      // id -> interpolation state in world units
    obstacles: [],
    snapshots: 0,
    onScreen: 0,           // agents drawn in the last frame
    keyframes: 0,
    decodeErrors: 0,
    needKeyframe: true,
    rtt: null,
    selected: new Set(),
    lastError: null,
    lastAck: null,
    acks: 0,
    errors: 0,
  };

  // Camera: world point at the canvas centre, and pixels per world unit.
  var camera = { x: 0, y: 0, scale: 4, fitted: false };
  var snapshotInterval = 1000 / 30;  // estimated, ms
  var lastSnapshotAt = 0;
  var rateWindow = [];               // [time, bytes] of recent messages
  var snapshotTimes = [];
  var tool = 'view';
  var drag = null;                   // {button, x0, y0, x1, y1, cam}
  var obstacleDraft = [];
  var lastSubscribed = null;
  var subscribeDue = 0;

  // ------------------------------------------------------------------ protocol

  function loadProto() {
    return protobuf.load('crowd.proto').then(function (root) {
      proto = {
        ClientMessage: root.lookupType('crowd.v1.ClientMessage'),
        ServerMessage: root.lookupType('crowd.v1.ServerMessage'),
        ErrorCode: root.lookupEnum('crowd.v1.ErrorCode'),
      };
    });
  }

  function send(body, onAnswer) {
    if (!ws || ws.readyState !== WebSocket.OPEN) return 0;
    var id = nextRequestId++;
    body.requestId = id;
    var msg = proto.ClientMessage.fromObject(body);
    var bytes = proto.ClientMessage.encode(msg).finish();
    ws.send(bytes);
    if (onAnswer) pending.set(id, onAnswer);
    return id;
  }

  function token() {
    return el('token').value.trim();
  }

  function connect() {
    state.status = 'connecting';
    var url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws';
    var sock = new WebSocket(url, 'crowd.v1');
    sock.binaryType = 'arraybuffer';
    ws = sock;
    sock.onopen = function () {
      state.attempts = 0;
      send({ hello: { protocolMajor: PROTOCOL_MAJOR, protocolMinor: PROTOCOL_MINOR, token: token(),
                      clientName: 'web viewer', keepAgentsOnDisconnect: false } });
    };
    sock.onmessage = function (ev) { if (ws === sock) onMessage(new Uint8Array(ev.data)); };
    sock.onclose = function (ev) {
      if (ws !== sock) return;
      ws = null;
      pending.clear();
      scheduleReconnect(ev.code, ev.reason);
    };
    sock.onerror = function () { /* onclose follows */ };
  }

  function scheduleReconnect(code, reason) {
    var err = state.lastError;
    if (err && performance.now() - err.at < 3000 && (err.name === 'BAD_TOKEN' || err.name === 'UNSUPPORTED_VERSION')) {
      // Retrying cannot help: wait for the person to enter another token.
      state.status = 'refused';
      state.closeInfo = err.name === 'BAD_TOKEN' ? 'The server does not know this token: enter another and press connect.'
                                                 : 'The server speaks another protocol version.';
      return;
    }
    state.attempts++;
    var delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * Math.pow(2, state.attempts - 1));
    state.status = 'reconnecting';
    state.reconnectAt = performance.now() + delay;
    state.closeInfo = code ? ('closed ' + code + (reason ? ' ' + reason : '')) : 'connection lost';
    state.needKeyframe = true;
    lastSubscribed = null;
    setTimeout(connect, delay);
  }

  function reconnectNow() {
    if (ws) {
      var old = ws;
      ws = null;
      old.close(1000, 'token changed');
    }
    state.attempts = 0;
    connect();
  }

  function errorName(code) {
    var n = proto && proto.ErrorCode.valuesById[code];
    return n ? n.replace(/^ERROR_/, '') : String(code);
  }

  function onMessage(bytes) {
    var now = performance.now();
    rateWindow.push([now, bytes.length]);
    var msg;
    try {
      msg = proto.ServerMessage.decode(bytes);
    } catch (e) {
      state.decodeErrors++;
      return;
    }
    switch (msg.msg) {
      case 'welcome': onWelcome(msg.welcome); break;
      case 'snapshot': onSnapshot(msg.snapshot, now); break;
      case 'ack': onAnswer(msg.ack.requestId, msg.ack, null); break;
      case 'error': onAnswer(msg.error.requestId, null, msg.error); break;
      case 'pong': state.rtt = now - Number(msg.pong.clientTimeUs) / 1000; break;
    }
  }

  function onWelcome(w) {
    state.status = 'connected';
    state.clientId = w.clientId;
    state.role = w.role;
    state.precision = w.precision || 100;
    state.tickRate = w.tickRateHz || 30;
    state.worldBounds = w.worldBounds || null;
    state.tick = Number(w.tick);
    state.view = new Map();
    state.drawn = new Map();
    state.obstacles = [];   // the first snapshot brings the server's set
    state.selected.clear();
    state.needKeyframe = true;
    snapshotInterval = 1000 * (w.snapshotDivisor || 1) / state.tickRate;
    // Whole world first; the first snapshot fits the camera, then the area follows the view.
    send({ subscribe: {} });
    lastSubscribed = null;
    updateTools();
  }

  function onAnswer(requestId, ack, err) {
    if (err) {
      state.errors++;
      state.lastError = { code: err.code, name: errorName(err.code), message: err.message, at: performance.now() };
    } else {
      state.acks++;
      state.lastAck = { requestId: requestId, ids: ack.ids || [] };
    }
    var cb = pending.get(requestId);
    if (cb) {
      pending.delete(requestId);
      cb(ack, err);
    }
  }

  function onSnapshot(s, now) {
    var result;
    try {
      result = crowdSnapshot.applySnapshot(state.view, s);
    } catch (e) {
      // Out of step with the server: ask again, which brings a keyframe.
      state.decodeErrors++;
      state.view = new Map();
      lastSubscribed = null;
      return;
    }
    state.view = result.view;
    state.snapshots++;
    if (s.keyframe) state.keyframes++;
    state.tick = Number(s.tick);
    state.worldAgents = s.worldAgentCount;
    if (s.obstaclesChanged) {
      state.obstacles = (s.obstacles || []).map(function (o) {
        return { id: o.id, x: o.x || [], y: o.y || [] };
      });
    }
    if (lastSnapshotAt) {
      var gap = now - lastSnapshotAt;
      if (gap > 0 && gap < 1000) snapshotInterval = snapshotInterval * 0.8 + gap * 0.2;
    }
    lastSnapshotAt = now;
    snapshotTimes.push(now);
    retarget(now);
    if (!camera.fitted) {
      if (state.view.size || state.obstacles.length) {
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

  // Every agent glides from where it is drawn now to its new position over one snapshot interval.
  function retarget(now) {
    var p = state.precision;
    var next = new Map();
    state.view.forEach(function (a, id) {
      var d = state.drawn.get(id);
      var x = a.x / p, y = a.y / p;
      if (d) {
        var cur = drawnPosition(d, now);
        next.set(id, { fx: cur[0], fy: cur[1], tx: x, ty: y, t0: now, r: a.radius / p, owner: a.owner });
      } else {
        next.set(id, { fx: x, fy: y, tx: x, ty: y, t0: now, r: a.radius / p, owner: a.owner });
      }
    });
    state.drawn = next;
    state.selected.forEach(function (id) { if (!next.has(id)) state.selected.delete(id); });
  }

  function drawnPosition(d, now) {
    var t = Math.min(1, Math.max(0, (now - d.t0) / snapshotInterval));
    return [d.fx + (d.tx - d.fx) * t, d.fy + (d.ty - d.fy) * t];
  }

  function fitCamera() {
    var minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    state.drawn.forEach(function (d) {
      minX = Math.min(minX, d.tx - d.r); maxX = Math.max(maxX, d.tx + d.r);
      minY = Math.min(minY, d.ty - d.r); maxY = Math.max(maxY, d.ty + d.r);
    });
    state.obstacles.forEach(function (o) {
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
    send({ subscribe: { area: area } });
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
    // agents, at their true radius
    var v = visibleRect();
    var own = state.clientId;
    var onScreen = 0;
    state.drawn.forEach(function (d, id) {
      var p = drawnPosition(d, now);
      if (p[0] + d.r < v.minX || p[0] - d.r > v.maxX || p[1] + d.r < v.minY || p[1] - d.r > v.maxY) return;
      onScreen++;
      var s = toScreen(p[0], p[1]);
      var r = Math.max(1, d.r * camera.scale);
      ctx.beginPath();
      ctx.arc(s[0], s[1], r, 0, Math.PI * 2);
      ctx.fillStyle = ownerColour(d.owner, 0.9);
      ctx.fill();
      if (state.selected.has(id)) {
        ctx.lineWidth = 2;
        ctx.strokeStyle = '#ffffff';
        ctx.stroke();
      } else if (own && d.owner === own && r > 3) {
        ctx.lineWidth = 1;
        ctx.strokeStyle = 'rgba(255,255,255,0.5)';
        ctx.stroke();
      }
    });
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
    send({ spawnAgents: { agents: agents } }, function (ack) {
      if (!ack) return;
      state.selected = new Set(ack.ids);
    });
  }

  function selectIn(x0, y0, x1, y1) {
    var minX = Math.min(x0, x1), maxX = Math.max(x0, x1), minY = Math.min(y0, y1), maxY = Math.max(y0, y1);
    var now = performance.now();
    var sel = new Set();
    state.drawn.forEach(function (d, id) {
      if (state.role < 3 && d.owner !== state.clientId) return;
      var p = drawnPosition(d, now);
      if (p[0] >= minX && p[0] <= maxX && p[1] >= minY && p[1] <= maxY) sel.add(id);
    });
    state.selected = sel;
  }

  function sendTarget(x, y) {
    if (!canCommand() || !state.selected.size) return;
    send({ setTargets: { ids: Array.from(state.selected), x: [x], y: [y] } });
  }

  function finishObstacle() {
    var pts = obstacleDraft;
    obstacleDraft = [];
    if (pts.length < 2 || state.role < 3) return;
    // RVO2 wants counter-clockwise polygons.
    var area = 0;
    for (var i = 0; i < pts.length; i++) {
      var a = pts[i], b = pts[(i + 1) % pts.length];
      area += a[0] * b[1] - b[0] * a[1];
    }
    if (area < 0) pts.reverse();
    send({ addObstacle: { x: pts.map(function (p) { return p[0]; }), y: pts.map(function (p) { return p[1]; }) } });
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
    else if (ev.key === 'Escape') { obstacleDraft = []; state.selected.clear(); }
  });
  document.querySelectorAll('#tools [data-tool]').forEach(function (b) {
    b.addEventListener('click', function () { setTool(b.dataset.tool); });
  });
  el('token-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    try { localStorage.setItem('crowd.token', token()); } catch (e) { /* private mode */ }
    reconnectNow();
  });

  setInterval(function () {
    if (state.status === 'connected')
      send({ ping: { clientTimeUs: Math.round(performance.now() * 1000) } });
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
  };

  loadProto().then(function () {
    updateTools();
    connect();
    requestAnimationFrame(frame);
  }, function (e) {
    state.status = 'error';
    el('status').textContent = 'cannot load crowd.proto: ' + e.message;
  });
})();
