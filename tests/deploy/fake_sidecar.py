"""A fake Agones SDK sidecar for tests: the REST gateway's /ready, /health, /shutdown
and /gameserver on loopback, recording every call. Modes: "ok" answers like the
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
        self.release = threading.Event()  # ends hanging requests at stop()
        sidecar = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                path = self.path
                with sidecar.lock:
                    sidecar.calls.append((time.monotonic(), self.command, path))
                if path == "/ready" and self.command == "POST":
                    results = [port_accepts(p) for p in sidecar.ready_probe_ports]
                    with sidecar.lock:
                        sidecar.ready_probe_results.append(results)
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

    def count(self, path, since=0.0):
        with self.lock:
            return sum(1 for t, _, p in self.calls if p == path and t >= since)

    def first(self, path):
        with self.lock:
            for t, _, p in self.calls:
                if p == path:
                    return t
        return None

    def wait_for(self, path, count=1, timeout=15.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.count(path) >= count:
                return True
            time.sleep(0.02)
        return False
