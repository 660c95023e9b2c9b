"""A fake Agones SDK sidecar for tests: the REST gateway's /ready, /health, /shutdown,
/gameserver and the Counters and Lists (beta) PATCH /v1beta1/counters/NAME and
/v1beta1/lists/NAME on loopback, recording every call. Modes: "ok" answers like the
real sidecar, "500" answers every call with a server error, "hang" accepts and
reads the request but never answers. Python stdlib only (runs under /usr/bin/python3)."""
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GAMESERVER = {
    "object_meta": {
        "name": "crowd-fleet-abcde-fghij",
        "namespace": "default",
        "labels": {"agones.dev/fleet": "crowd", "world": "test-plaza"},
        "annotations": {},
    },
    "status": {"state": "Scheduled", "address": "127.0.0.1", "ports": []},
}


def free_port():
    """A loopback port that was free a moment ago (the caller binds it soon after)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_accepts(port, timeout=1.0):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


class FakeSidecar:
    def __init__(self, port=0, mode="ok"):
        self.mode = mode
        self.calls = []  # (monotonic time, method, path)
        self.ready_probe_ports = []  # ports that must accept connections when /ready arrives
        self.ready_probe_results = []  # one list of bools per /ready
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)  # notified on every recorded call
        self.release = threading.Event()  # ends hanging requests at stop()
        # The GameServer's Counters and Lists as the fleet declares them (name -> state);
        # a PATCH to one not declared answers 404 like the sidecar's "not found".
        self.counters = {"rooms": {"count": 0, "capacity": 0}}
        self.lists = {"worlds": {"capacity": 0, "values": []}}
        self.bodies = []  # (path, parsed JSON) of every PATCH, in order
        sidecar = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                path = self.path
                # A /ready is probed first and recorded with its probe results in
                # one step: whoever sees the call also sees what the probe found.
                results = None
                if path == "/ready" and self.command == "POST":
                    results = [port_accepts(p) for p in sidecar.ready_probe_ports]
                patched = None
                if self.command == "PATCH" and sidecar.mode == "ok":
                    patched = sidecar._patch(path, raw)
                with sidecar.changed:
                    if results is not None:
                        sidecar.ready_probe_results.append(results)
                    sidecar.calls.append((time.monotonic(), self.command, path))
                    sidecar.changed.notify_all()
                if sidecar.mode == "hang":
                    sidecar.release.wait(60)
                    self.close_connection = True
                    return
                if sidecar.mode == "500":
                    self._reply(500, b'{"error":"boom","code":2}')
                    return
                if path == "/gameserver" and self.command == "GET":
                    self._reply(200, json.dumps(GAMESERVER).encode())
                elif path in ("/ready", "/health", "/shutdown") and self.command == "POST":
                    self._reply(200, b"{}")
                elif patched is not None:
                    self._reply(patched[0], json.dumps(patched[1]).encode())
                else:
                    self._reply(404, b'{"error":"not found"}')

            def _reply(self, status, body):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = _handle
            do_POST = _handle
            do_PATCH = _handle

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def _patch(self, path, raw):
        """(status, reply) for a Counters/Lists PATCH, applied as the SDK server does:
        int64 fields as JSON strings (numbers accepted), count within [0, capacity],
        list capacity within [0, 1000], values replaced whole."""
        try:
            body = json.loads(raw.decode() or "{}")
        except ValueError:
            return 400, {"error": "bad JSON", "code": 3}
        kind, _, name = path.partition("/v1beta1/")[2].partition("/")
        with self.changed:
            self.bodies.append((path, body))
            if kind == "counters" and name in self.counters:
                c = dict(self.counters[name])
                if "capacity" in body:
                    c["capacity"] = int(body["capacity"])
                if "count" in body:
                    c["count"] = int(body["count"])
                if c["capacity"] < 0 or not 0 <= c["count"] <= c["capacity"]:
                    return 500, {"error": "out of range", "code": 2}
                self.counters[name] = c
                return 200, {"name": name, "count": str(c["count"]), "capacity": str(c["capacity"])}
            if kind == "lists" and name in self.lists:
                entry = dict(self.lists[name])
                if "capacity" in body:
                    entry["capacity"] = int(body["capacity"])
                if "values" in body:
                    entry["values"] = list(body["values"])
                if not 0 <= entry["capacity"] <= 1000 or len(entry["values"]) > entry["capacity"]:
                    return 500, {"error": "out of range", "code": 2}
                self.lists[name] = entry
                return 200, {"name": name, "capacity": str(entry["capacity"]), "values": entry["values"]}
        return 404, {"error": "not found", "code": 5}

    def state(self):
        """(counter rooms, list worlds) as the sidecar holds them now."""
        with self.lock:
            return dict(self.counters["rooms"]), dict(self.lists["worlds"], values=list(self.lists["worlds"]["values"]))

    def wait_state(self, predicate, timeout=15.0):
        """Wait until predicate(counter, list) holds (woken by each call). True once it does."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not predicate(dict(self.counters["rooms"]), dict(self.lists["worlds"])):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(left)
        return True

    def count(self, path, since=0.0):
        with self.lock:
            return sum(1 for t, _, p in self.calls if p == path and t >= since)

    def first(self, path):
        with self.lock:
            for t, _, p in self.calls:
                if p == path:
                    return t
        return None

    def times(self, path):
        """When each call to path arrived (monotonic seconds), in order."""
        with self.lock:
            return [t for t, _, p in self.calls if p == path]

    def wait_for(self, path, count=1, timeout=15.0):
        """Wait for the count-th call to path (woken by each call; the timeout
        only stops a hung test). True once it arrived."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while sum(1 for _, _, p in self.calls if p == path) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(left)
        return True
