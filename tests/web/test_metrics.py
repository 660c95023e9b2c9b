#!/usr/bin/python3
"""test_metrics.py — GET /metrics of a real crowd-server, parsed by the Prometheus
client's own text-format parser (Debian's python3-prometheus-client): every
family has HELP and TYPE, the names are the documented ones, and the counters
move as this test sends traffic over TCP, WebSocket and plain HTTP; and a
WebSocket client that never reads is cut off at the output limits like a TCP one.

Usage: /usr/bin/python3 test_metrics.py CROWD_SERVER
"""
import base64
import json
import os
import re
import socket
import struct
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from crowd_wire import varint, ws_client_frame, ws_upgrade_request  # noqa: E402

SERVER = None

# Hand-encoded crowd.v1.ClientMessage bodies (protobuf wire format), so the test
# needs no protobuf runtime: field 1 request_id, field 2 hello{1: major},
# field 10 ping{1: client_time_us}.
HELLO = bytes([0x08, 0x01, 0x12, 0x02, 0x08, 0x01])
PING = bytes([0x08, 0x02, 0x52, 0x02, 0x08, 0x05])

EXPECTED_FAMILIES = {
    # name as the parser reports it (counters lose "_total") -> type
    "crowd_tick_duration_seconds": "histogram",
    "crowd_ticks": "counter",
    "crowd_ticks_overrun": "counter",
    "crowd_tick_periods_skipped": "counter",
    "crowd_step_seconds": "counter",
    "crowd_table_seconds": "counter",
    "crowd_snapshot_seconds": "counter",
    "crowd_tick": "gauge",
    "crowd_tick_rate_hz": "gauge",
    "crowd_uptime_seconds": "gauge",
    "crowd_heap_live_bytes": "gauge",
    "crowd_heap_held_bytes": "gauge",
    "crowd_agents": "gauge",
    "crowd_obstacles": "gauge",
    "crowd_connections": "gauge",
    "crowd_connections_accepted": "counter",
    "crowd_disconnects": "counter",
    "crowd_messages_in": "counter",
    "crowd_messages_out": "counter",
    "crowd_bytes_in": "counter",
    "crowd_bytes_out": "counter",
    "crowd_snapshots_sent": "counter",
    "crowd_snapshots_skipped": "counter",
    "crowd_snapshot_bytes": "counter",
    "crowd_keyframes_sent": "counter",
    "crowd_snapshots_shared": "counter",
    "crowd_requests": "counter",
    "crowd_commands_applied": "counter",
    "crowd_acks": "counter",
    "crowd_errors": "counter",
    "crowd_http_responses": "counter",
    "crowd_http_bytes_in": "counter",
    "crowd_http_bytes_out": "counter",
    "crowd_websocket_closes": "counter",
}


def http_get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def scrape(port):
    """{(name, frozenset(labels)): value} and {family: (type, documentation)}."""
    status, text = http_get(port, "/metrics")
    assert status == 200, status
    samples, families = {}, {}
    for fam in text_string_to_metric_families(text):
        families[fam.name] = (fam.type, fam.documentation)
        for s in fam.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return text, samples, families


def value(samples, name, **labels):
    return samples[(name, frozenset(labels.items()))]


def ws_connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(ws_upgrade_request(key))
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    assert b"Sec-WebSocket-Protocol: crowd.v1" in head
    return s


def ws_read_frame(s):
    def exact(n):
        b = b""
        while len(b) < n:
            chunk = s.recv(n - len(b))
            if not chunk:
                raise EOFError
            b += chunk
        return b
    h = exact(2)
    n = h[1] & 0x7F
    if n == 126:
        n = struct.unpack("!H", exact(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", exact(8))[0]
    return h[0] & 0x0F, exact(n)


class MetricsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc = subprocess.Popen(
            [SERVER, "--demo", "--demo-agents", "50", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
             "--log-level", "warn"], stdout=subprocess.PIPE, text=True)
        cls.tcp_port = cls.http_port = None
        deadline = time.time() + 10
        while time.time() < deadline and not (cls.tcp_port and cls.http_port):
            line = cls.proc.stdout.readline()
            m = re.match(r"listening (tcp|http) .*:(\d+)$", line.strip())
            if m:
                setattr(cls, m.group(1) + "_port", int(m.group(2)))
        assert cls.tcp_port and cls.http_port, "crowd-server did not report its ports"
        # Gauges are set after each tick: wait for a couple.
        while time.time() < deadline and json.loads(http_get(cls.http_port, "/healthz")[1])["tick"] < 2:
            time.sleep(0.05)

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        cls.proc.wait(timeout=10)
        cls.proc.stdout.close()

    def test_exposition_is_valid_and_complete(self):
        text, samples, families = scrape(self.http_port)
        for name, typ in EXPECTED_FAMILIES.items():
            self.assertIn(name, families, name)
            self.assertEqual(families[name][0], typ, name)
            self.assertTrue(families[name][1], "HELP text for " + name)
        for fam in families:
            self.assertTrue(fam.startswith("crowd_"), fam)
        # Every family has its HELP and TYPE lines in the text itself.
        for line in text.splitlines():
            if line and not line.startswith("#"):
                base = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
                family = re.sub(r"_(bucket|sum|count)$", "", base)
                self.assertIn("# TYPE %s " % family, text, line)
                self.assertIn("# HELP %s " % family, text, line)
        # The histogram is cumulative and ends with +Inf = _count.
        buckets = sorted(((float(dict(k[1])["le"]), v) for k, v in samples.items()
                          if k[0] == "crowd_tick_duration_seconds_bucket"))
        self.assertEqual(buckets[-1][0], float("inf"))
        self.assertTrue(all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])))
        self.assertEqual(buckets[-1][1], value(samples, "crowd_tick_duration_seconds_count"))
        self.assertEqual(value(samples, "crowd_agents"), 50)
        # The allocator's own count: a server holding a world has a live heap,
        # and the allocator holds at least what is live.
        heap = {k[0]: (dict(k[1])["allocator"], v) for k, v in samples.items() if k[0].startswith("crowd_heap_")}
        self.assertIn(heap["crowd_heap_live_bytes"][0], ("asan", "glibc"))
        self.assertGreater(heap["crowd_heap_live_bytes"][1], 0)
        self.assertGreaterEqual(heap["crowd_heap_held_bytes"][1], heap["crowd_heap_live_bytes"][1])

    def test_counters_move_with_traffic(self):
        _, before, _ = scrape(self.http_port)

        # HTTP: a 404.
        self.assertEqual(http_get(self.http_port, "/no-such-file")[0], 404)

        # WebSocket: Hello, Ping -> Welcome, Pong.
        ws = ws_connect(self.http_port)
        ws.sendall(ws_client_frame(2, HELLO) + ws_client_frame(2, PING))
        got = [ws_read_frame(ws) for _ in range(2)]
        self.assertTrue(all(op == 2 for op, _ in got))
        self.assertEqual(got[0][1][0], 0x0A, "first answer is ServerMessage.welcome (field 1)")
        _, mid, _ = scrape(self.http_port)
        self.assertEqual(value(mid, "crowd_connections", transport="ws", role="admin")
                         - value(before, "crowd_connections", transport="ws", role="admin"), 1)

        # A text frame: close 1003, counted as a protocol disconnect.
        ws.sendall(ws_client_frame(1, b"hi"))
        op, payload = ws_read_frame(ws)
        self.assertEqual((op, struct.unpack("!H", payload[:2])[0]), (8, 1003))
        ws.close()

        # TCP: Ping before Hello -> Error HELLO_REQUIRED.
        t = socket.create_connection(("127.0.0.1", self.tcp_port), timeout=5)
        t.sendall(varint(len(PING)) + PING)
        t.recv(256)
        t.close()

        deadline = time.time() + 5
        while True:
            _, after, _ = scrape(self.http_port)
            settled = value(after, "crowd_disconnects_total", reason="protocol") > \
                value(before, "crowd_disconnects_total", reason="protocol") and \
                value(after, "crowd_ticks_total") > value(before, "crowd_ticks_total")
            if settled or time.time() > deadline:
                break
            time.sleep(0.05)

        def moved(name, **labels):
            return value(after, name, **labels) - value(before, name, **labels)

        self.assertEqual(moved("crowd_http_responses_total", code="404"), 1)
        self.assertEqual(moved("crowd_http_responses_total", code="101"), 1)
        self.assertGreaterEqual(moved("crowd_http_responses_total", code="200"), 2)  # earlier scrapes
        self.assertEqual(moved("crowd_connections_accepted_total", transport="ws"), 1)
        self.assertEqual(moved("crowd_connections_accepted_total", transport="tcp"), 1)
        self.assertEqual(moved("crowd_messages_in_total", transport="ws"), 2)
        self.assertEqual(moved("crowd_bytes_in_total", transport="ws"), len(HELLO) + len(PING))
        self.assertGreaterEqual(moved("crowd_messages_out_total", transport="ws"), 2)
        self.assertGreater(moved("crowd_http_bytes_in_total"), 0)
        self.assertEqual(moved("crowd_websocket_closes_total", code="1003"), 1)
        self.assertEqual(moved("crowd_disconnects_total", reason="protocol"), 1)
        self.assertEqual(moved("crowd_errors_total", code="HELLO_REQUIRED"), 1)
        self.assertGreater(moved("crowd_ticks_total"), 0)


class SlowWebSocketTest(unittest.TestCase):
    """A WebSocket client is a session like a TCP one: one that never reads is cut
    off at the output limits, and the cut-off is counted."""

    def test_non_reading_websocket_client_is_cut_off(self):
        proc = subprocess.Popen(
            [SERVER, "--demo", "--demo-agents", "3000", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
             "--output-soft-limit", "64k", "--output-hard-limit", "512k", "--output-soft-seconds", "0.5",
             # every snapshot a keyframe: the kernel's send buffer (up to 4 MiB) fills
             # in a few dozen ticks even when a loaded ASan build makes 8 ticks/s
             "--keyframe-interval", "1", "--log-level", "warn"], stdout=subprocess.PIPE, text=True)
        try:
            port = None
            while port is None:
                m = re.match(r"listening http .*:(\d+)$", proc.stdout.readline().strip())
                port = int(m.group(1)) if m else None
            _, before, _ = scrape(port)
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.settimeout(5)
            s.connect(("127.0.0.1", port))
            key = base64.b64encode(os.urandom(16)).decode()
            s.sendall(("GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
                       "Sec-WebSocket-Protocol: crowd.v1\r\n\r\n" % key).encode())
            s.sendall(ws_client_frame(2, HELLO) + ws_client_frame(2, bytes([0x08, 0x02, 0x4A, 0x00])))  # Subscribe{}
            # Never read; wait for the server to give up on us (the event: the
            # disconnect counted; the guard only stops a hung test).
            deadline = time.time() + 90
            cut = 0
            while time.time() < deadline and not cut:
                time.sleep(0.2)
                _, now, _ = scrape(port)
                cut = sum(value(now, "crowd_disconnects_total", reason=r)
                          - value(before, "crowd_disconnects_total", reason=r)
                          for r in ("slow_consumer", "output_hard_limit"))
            self.assertEqual(cut, 1, "the non-reading WebSocket client was disconnected")
            self.assertEqual(value(now, "crowd_connections_accepted_total", transport="ws")
                             - value(before, "crowd_connections_accepted_total", transport="ws"), 1)
            self.assertGreater(value(now, "crowd_snapshots_skipped_total")
                               - value(before, "crowd_snapshots_skipped_total"), 0)
            s.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            proc.stdout.close()


if __name__ == "__main__":
    SERVER = sys.argv.pop(1)
    unittest.main(verbosity=2)
