// CrowdWebSocket.jslib — the browser's WebSocket for CrowdClient in WebGL builds
// (Transport.cs, class BrowserWebSocket, [DllImport("__Internal")]). A WebGL
// build has no threads, so nothing here calls back into C#: received messages
// wait in a queue per socket and CrowdClient.Poll reads them, with the socket's
// state and the reason it closed. crowd.v1 is binary only: a text message closes
// the socket (1003), and an open whose subprotocol is not crowd.v1 is closed (1002).
var CrowdWebSocketLibrary = {
  $CrowdWs: { sockets: {}, next: 1 },

  CrowdWsOpen: function (urlPtr, protocolPtr) {
    var url = UTF8ToString(urlPtr);
    var protocol = UTF8ToString(protocolPtr);
    var id = CrowdWs.next++;
    var s = { ws: null, queue: [], reason: '', failed: false, opened: false, protocol: protocol };
    CrowdWs.sockets[id] = s;
    try {
      s.ws = new WebSocket(url, protocol);
    } catch (e) {
      s.failed = true;
      s.reason = 'cannot open ' + url + ': ' + (e && e.message ? e.message : String(e));
      return id;
    }
    s.ws.binaryType = 'arraybuffer';
    s.ws.onopen = function () {
      s.opened = true;
      if (s.ws.protocol !== protocol) {
        s.reason = 'the server did not accept subprotocol ' + protocol + ' (not a crowd server?)';
        s.ws.close(1002, 'subprotocol ' + protocol + ' required');
      }
    };
    s.ws.onmessage = function (ev) {
      if (typeof ev.data === 'string') {
        if (!s.reason) s.reason = 'text message on a crowd.v1 WebSocket';
        s.ws.close(1003, 'binary messages only');
        return;
      }
      s.queue.push(new Uint8Array(ev.data));
    };
    s.ws.onerror = function () {
      if (!s.reason) s.reason = 'WebSocket error (refused, not a WebSocket endpoint, or TLS)';
      // An error before open is a failed connection (some runtimes stay "connecting" after it).
      if (!s.opened) s.failed = true;
    };
    s.ws.onclose = function (ev) {
      var closed = 'closed ' + ev.code + (ev.reason ? ' ' + ev.reason : '');
      s.reason = s.reason ? s.reason + ' (' + closed + ')' : closed;
    };
    return id;
  },

  // 0 connecting, 1 open, 2 closing, 3 closed (the WebSocket's readyState); an open whose
  // subprotocol is refused counts as closing until it is closed.
  CrowdWsState: function (id) {
    var s = CrowdWs.sockets[id];
    if (!s || s.failed || !s.ws) return 3;
    var st = s.ws.readyState;
    if (st === 1 && s.ws.protocol !== s.protocol) return 2;
    return st;
  },

  // Size of the next queued message, -1 when none.
  CrowdWsNextSize: function (id) {
    var s = CrowdWs.sockets[id];
    if (!s || s.queue.length === 0) return -1;
    return s.queue[0].length;
  },

  // Copies the next queued message into buffer (capacity bytes) and drops it; returns its size.
  CrowdWsReceive: function (id, buffer, capacity) {
    var s = CrowdWs.sockets[id];
    if (!s || s.queue.length === 0) return -1;
    var m = s.queue.shift();
    HEAPU8.set(m.length <= capacity ? m : m.subarray(0, capacity), buffer);
    return m.length;
  },

  // 1 when queued for sending, 0 when the socket is not open.
  CrowdWsSend: function (id, data, length) {
    var s = CrowdWs.sockets[id];
    if (!s || !s.ws || s.ws.readyState !== 1) return 0;
    try {
      s.ws.send(HEAPU8.slice(data, data + length));
      return 1;
    } catch (e) {
      if (!s.reason) s.reason = 'send failed: ' + (e && e.message ? e.message : String(e));
      return 0;
    }
  },

  CrowdWsClose: function (id, code, reasonPtr) {
    var s = CrowdWs.sockets[id];
    if (!s || !s.ws || s.ws.readyState >= 2) return;
    try { s.ws.close(code, UTF8ToString(reasonPtr)); } catch (e) { s.ws.close(); }
  },

  // Why it failed or closed ('' while all is well); the runtime frees the returned string.
  CrowdWsReason: function (id) {
    var s = CrowdWs.sockets[id];
    var text = s ? s.reason : 'no such socket';
    var size = lengthBytesUTF8(text) + 1;
    var ptr = _malloc(size);
    stringToUTF8(text, ptr, size);
    return ptr;
  },

  // Forgets the socket (after CrowdWsClose): later events from it are dropped.
  CrowdWsFree: function (id) {
    var s = CrowdWs.sockets[id];
    if (!s) return;
    if (s.ws) {
      s.ws.onopen = s.ws.onmessage = s.ws.onerror = s.ws.onclose = null;
    }
    delete CrowdWs.sockets[id];
  },
};

autoAddDeps(CrowdWebSocketLibrary, '$CrowdWs');
mergeInto(LibraryManager.library, CrowdWebSocketLibrary);
