"""The Agones integration against a fake SDK sidecar on loopback: /ready only once the
listeners accept connections, /health at the configured period, retries while the
sidecar starts late, /shutdown on SIGTERM, a sidecar answering 500 or hanging
does not slow the tick, and the Counter "rooms" and List "worlds" follow the worlds
the server holds. Runs against crowd-server (--server) or the stand-in
agones_harness (--harness). Counts periods; never asserts on the server's speed,
and never waits a fixed time: each wait is for an event (a sidecar call, a
counter, a line on stdout), with a guard that only stops a hung test."""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from fake_sidecar import FakeSidecar, free_port  # noqa: E402
from crowd_wire import generated_messages, take_delimited, varint  # noqa: E402

HEALTH_MS = 200  # short, so a test sees many periods in a few seconds
TIMEOUT_MS = 150  # below the period: a hanging sidecar never stacks health pings
ARGS = None
LOG = tempfile.TemporaryFile(mode="w+")  # the servers' stderr: shown at the end, never blocks them


class Harness:
    """agones_harness: prints "listening PORT", serves one counters line per connection."""

    def __init__(self, exe, sidecar_port, extra=()):
        env = dict(os.environ, AGONES_SDK_HTTP_PORT=str(sidecar_port))
        self.proc = subprocess.Popen(
            [exe, "--tick-hz", "100", "--health-ms", str(HEALTH_MS), "--timeout-ms", str(TIMEOUT_MS), *extra],
            env=env, stdout=subprocess.PIPE, stderr=LOG, text=True)
        line = self.proc.stdout.readline()
        m = re.match(r"listening (\d+)", line)
        assert m, "harness did not report its port: %r" % line
        self.port = int(m.group(1))
        self.ports = [self.port]
        self.tick_hz = 100

    def stats(self):
        import socket
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(256)
                if not chunk:
                    break
                data += chunk
        words = data.decode().split()
        fields = dict(zip(words[0::2], (int(v) for v in words[1::2])))
        return {"ticks": fields["ticks"], "overruns": fields["overruns"],
                "health_failed": fields["health_failed"], "ready_failed": fields["ready_failed"],
                "health_withheld": fields["health_withheld"]}


def wait_until(predicate, timeout=15.0, what="a condition"):
    """Wait for predicate() to hold, checking it again and again; the timeout only
    stops a hung test (it never decides a pass)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.01)


class Server:
    """crowd-server --agones on loopback ports it picks itself (port 0); the ports
    come from its "listening" lines. Counters from /healthz and /metrics."""

    def __init__(self, exe, sidecar_port, extra=()):
        env = dict(os.environ, AGONES_SDK_HTTP_PORT=str(sidecar_port))
        self.proc = subprocess.Popen(
            [exe, "--agones", "--agones-health-ms", str(HEALTH_MS), "--agones-timeout-ms", str(TIMEOUT_MS),
             "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--tick-rate", "30", "--log-level", "info",
             *extra],
            env=env, stdout=subprocess.PIPE, stderr=LOG, text=True)
        self.game_port = self.http_port = None
        while self.game_port is None or self.http_port is None:
            line = self.proc.stdout.readline()  # the event: the server says where it listens
            assert line, "crowd-server did not start (log above)"
            m = re.match(r"listening (tcp|http) .*:(\d+)$", line.strip())
            if m and m.group(1) == "tcp":
                self.game_port = int(m.group(2))
            elif m:
                self.http_port = int(m.group(2))
        self.ports = [self.game_port, self.http_port]
        self.tick_hz = 30

    def get(self, path):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.http_port, path), timeout=5) as r:
            return r.read().decode()

    def stats(self):
        health = json.loads(self.get("/healthz"))
        metrics = {}
        for line in self.get("/metrics").splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                metrics[name] = float(value)
        return {"ticks": int(health["tick"]),
                "overruns": int(metrics.get("crowd_ticks_overrun_total", 0)),
                "health_failed": int(metrics.get('crowd_agones_requests_total{call="health",result="error"}', 0)),
                "ready_failed": int(metrics.get('crowd_agones_requests_total{call="ready",result="error"}', 0)),
                "healthz": health}


def start_target(sidecar_port):
    if ARGS.server:
        return Server(ARGS.server, sidecar_port)
    return Harness(ARGS.harness, sidecar_port)


def stop_target(target, timeout=25.0):
    """SIGTERM, as Kubernetes sends it; returns the exit code (within the 30 s grace)."""
    if target.proc.poll() is None:
        target.proc.send_signal(signal.SIGTERM)
    try:
        return target.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        target.proc.kill()
        target.proc.wait()
        return None
    finally:
        if target.proc.stdout:
            target.proc.stdout.close()


class Conn:
    """crowd.v1 over TCP with the protoc-generated classes (tests/pylib)."""

    def __init__(self, port, pb):
        self.pb = pb
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""

    def send(self, msg):
        body = msg.SerializeToString()
        self.sock.sendall(varint(len(body)) + body)

    def answer(self, request_id):
        """The Welcome, Ack or Error answering request_id (snapshots skipped); None once closed."""
        while True:
            frame = take_delimited(self.buf)
            if frame is None:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return None
                self.buf += chunk
                continue
            body, self.buf = frame
            m = self.pb.ServerMessage()
            m.ParseFromString(body)
            which = m.WhichOneof("msg")
            if which == "welcome" or (which in ("ack", "error") and getattr(m, which).request_id == request_id):
                return m

    def close(self):
        self.sock.close()


class RoomsTest(unittest.TestCase):
    """The GameServer's Counter "rooms" (count = worlds open, capacity = --max-worlds)
    and List "worlds" (their names), kept by crowd-server through the sidecar."""

    def setUp(self):
        if not ARGS.server:
            self.skipTest("only crowd-server holds worlds")

    def start(self, sidecar_port):
        self.max_worlds = 4
        return Server(ARGS.server, sidecar_port, ("--max-worlds", str(self.max_worlds)))

    def test_counter_and_list_at_start(self):
        sidecar = FakeSidecar(0, "ok").start()
        target = self.start(sidecar.port)
        try:
            want = lambda c, l: (c == {"count": 1, "capacity": self.max_worlds}  # noqa: E731
                                 and l["values"] == ["default"] and l["capacity"] == self.max_worlds)
            self.assertTrue(sidecar.wait_state(want), "rooms 1/%d and worlds [default]; the sidecar holds %r"
                            % (self.max_worlds, sidecar.state()))
            path, body = sidecar.bodies[0]
            self.assertIn(path, ("/v1beta1/counters/rooms", "/v1beta1/lists/worlds"))
            # int64 fields travel as JSON strings, as the gateway's proto3 JSON mapping has them.
            counter = next(b for p, b in sidecar.bodies if p == "/v1beta1/counters/rooms")
            self.assertEqual(counter, {"count": "1", "capacity": str(self.max_worlds)})
            self.assertEqual(stop_target(target), 0)
        finally:
            stop_target(target)
            sidecar.stop()

    def test_late_sidecar_gets_the_counter(self):
        """The sidecar may start after the server: the counter and list are retried."""
        sidecar_port = free_port()
        target = self.start(sidecar_port)
        sidecar = None
        try:
            wait_until(lambda: target.proc.poll() is not None or int(re.search(
                r'crowd_agones_requests_total\{call="counter",result="error"\} (\d+)',
                target.get("/metrics")).group(1)) >= 1, what="a failed counter update")
            sidecar = FakeSidecar(sidecar_port, "ok").start()
            self.assertTrue(sidecar.wait_state(lambda c, l: c["count"] == 1 and l["values"] == ["default"]),
                            "the counter and list arrive once the sidecar is up: %r" % (sidecar.state(),))
            self.assertEqual(stop_target(target), 0)
        finally:
            stop_target(target)
            if sidecar:
                sidecar.stop()

    def test_worlds_opened_and_closed_move_the_counter(self):
        pb = generated_messages(ARGS.proto) if ARGS.proto else None
        if pb is None:
            self.skipTest("python3-protobuf missing")
        if "create_world" not in pb.ClientMessage.DESCRIPTOR.fields_by_name:
            self.skipTest("crowd.proto has no CreateWorld: the server holds one world")
        sidecar = FakeSidecar(0, "ok").start()
        target = self.start(sidecar.port)
        conn = None
        try:
            self.assertTrue(sidecar.wait_state(lambda c, l: c["count"] == 1))
            conn = Conn(target.game_port, pb)
            hello = pb.ClientMessage(request_id=1)
            hello.hello.protocol_major = 1
            hello.hello.protocol_minor = 2
            hello.hello.client_name = "agones-test"
            conn.send(hello)
            self.assertEqual(conn.answer(1).WhichOneof("msg"), "welcome")
            create = pb.ClientMessage(request_id=2)
            create.create_world.name = "match-1"
            conn.send(create)
            m = conn.answer(2)
            if m.WhichOneof("msg") == "error" and m.error.code == pb.ERROR_LIMIT_WORLDS:
                self.skipTest("CreateWorld answers LIMIT_WORLDS: the server holds one world")
            self.assertEqual(m.WhichOneof("msg"), "ack", "CreateWorld: %s" % m)
            self.assertTrue(sidecar.wait_state(lambda c, l: c["count"] == 2 and sorted(l["values"])
                                               == ["default", "match-1"]),
                            "a world opened: rooms 2, worlds [default, match-1]; sidecar %r" % (sidecar.state(),))
            close = pb.ClientMessage(request_id=3)
            close.close_world.name = "match-1"
            conn.send(close)
            self.assertEqual(conn.answer(3).WhichOneof("msg"), "ack")
            self.assertTrue(sidecar.wait_state(lambda c, l: c["count"] == 1 and l["values"] == ["default"]),
                            "a world closed: rooms 1, worlds [default]; sidecar %r" % (sidecar.state(),))
            self.assertEqual(stop_target(target), 0)
        finally:
            if conn:
                conn.close()
            stop_target(target)
            sidecar.stop()


class AgonesTest(unittest.TestCase):
    def test_late_sidecar_ready_health_shutdown(self):
        sidecar_port = free_port()
        target = start_target(sidecar_port)
        sidecar = None
        try:
            # The sidecar comes up after the server (it may in a real pod): wait until
            # a /ready attempt has failed and been counted.
            wait_until(lambda: target.proc.poll() is not None or target.stats()["ready_failed"] >= 1,
                       what="a failed /ready attempt")
            self.assertIsNone(target.proc.poll(), "the server must survive an absent sidecar")
            sidecar = FakeSidecar(sidecar_port, "ok")
            sidecar.ready_probe_ports = target.ports
            sidecar.start()
            self.assertTrue(sidecar.wait_for("/ready", timeout=15), "no /ready after the sidecar came up")
            self.assertTrue(sidecar.wait_for("/gameserver", timeout=15), "no GET /gameserver after the sidecar came up")
            self.assertEqual(sidecar.count("/ready"), 1, "/ready is sent once it succeeded")
            self.assertEqual(sidecar.ready_probe_results, [[True] * len(target.ports)],
                             "every listener accepts connections when /ready arrives")
            # /health at the configured period: wait for 11 more pings, then check
            # the 10 intervals between them average at least half a period (a busy
            # machine can only make them later, never sooner; averaging absorbs the
            # jitter of the fake sidecar's threads noting when each arrived).
            seen = sidecar.count("/health")
            self.assertTrue(sidecar.wait_for("/health", count=seen + 11, timeout=30), "health pings keep coming")
            times = sidecar.times("/health")[seen:seen + 11]
            self.assertGreaterEqual((times[-1] - times[0]) / 10, 0.5 * HEALTH_MS / 1000.0,
                                    "health pings not faster than the configured period")
            if ARGS.server:
                healthz = target.stats()["healthz"]
                self.assertEqual(healthz["agones"]["name"], "crowd-fleet-abcde-fghij")
                self.assertEqual(healthz["agones"]["labels"]["world"], "test-plaza")
                self.assertTrue(healthz["agones"]["ready"])
            # A client still connected when SIGTERM comes (it never reads): the drain is
            # bounded all the same.
            import socket
            idle_client = socket.create_connection(("127.0.0.1", target.ports[0]), timeout=5)
            start_stop = time.monotonic()
            code = stop_target(target)
            idle_client.close()
            self.assertEqual(code, 0, "SIGTERM drains and exits 0 within the grace period")
            self.assertLess(time.monotonic() - start_stop, 25, "drain inside Kubernetes' 30 s grace")
            self.assertEqual(sidecar.count("/shutdown"), 1, "/shutdown on SIGTERM")
        finally:
            stop_target(target)
            if sidecar:
                sidecar.stop()

    def _tick_keeps_pace(self, mode):
        sidecar = FakeSidecar(0, mode).start()
        target = start_target(sidecar.port)
        try:
            self.assertTrue(sidecar.wait_for("/health", count=2, timeout=15))
            first = target.stats()
            self.assertTrue(sidecar.wait_for("/health", count=12, timeout=30))
            last = target.stats()
            ticks = last["ticks"] - first["ticks"]
            # A blocking client would stall the loop for each request (for ever, when
            # the sidecar hangs): the tick would stop, or lose most of each period.
            # Measured against the server's own clock, its health period (at least
            # 10 periods passed between the two reads): half the nominal ticks is a
            # loose bar; the point is "did not stall". No wall-clock time involved.
            periods = 10
            self.assertGreaterEqual(ticks, 0.5 * periods * HEALTH_MS / 1000.0 * target.tick_hz,
                                    "tick kept pace while the sidecar %s" % mode)
            self.assertLessEqual(last["overruns"] - first["overruns"], max(2, ticks // 4), "overruns stay rare")
            self.assertGreater(last["health_failed"], first["health_failed"], "failures are counted")
            start_shutdown = time.monotonic()
            code = stop_target(target)
            self.assertEqual(code, 0)
            self.assertLess(time.monotonic() - start_shutdown, 25, "drain within Kubernetes' 30 s grace")
            self.assertGreaterEqual(sidecar.count("/shutdown"), 1)
        finally:
            stop_target(target)
            sidecar.stop()

    def test_stalled_world_withholds_health(self):
        """Health means the world advances: when the tick stops while the loop still runs
        (a step wedged on the thread pool), pings stop and Agones will mark the server
        Unhealthy. Only the harness can stall its tick on demand."""
        if not ARGS.harness:
            self.skipTest("crowd-server cannot be told to stall its tick")
        sidecar = FakeSidecar(0, "ok").start()
        target = Harness(ARGS.harness, sidecar.port, extra=("--stall-after-ms", str(5 * HEALTH_MS)))
        try:
            self.assertTrue(sidecar.wait_for("/health", count=2, timeout=15), "pings while the tick runs")
            wait_until(lambda: target.stats()["health_withheld"] >= 2, what="pings withheld once the tick stopped")
            # Five more periods, counted by the harness itself (one withheld ping each).
            before = sidecar.count("/health")
            withheld = target.stats()["health_withheld"]
            wait_until(lambda: target.stats()["health_withheld"] >= withheld + 5, what="five more withheld periods")
            self.assertLessEqual(sidecar.count("/health") - before, 1, "no pings while the world is stuck")
            self.assertEqual(stop_target(target), 0)
        finally:
            stop_target(target)
            sidecar.stop()

    def test_sidecar_500_does_not_slow_tick(self):
        self._tick_keeps_pace("500")

    def test_sidecar_hang_does_not_slow_tick(self):
        self._tick_keeps_pace("hang")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--server")
    group.add_argument("--harness")
    parser.add_argument("--proto", help="proto/crowd.proto, for the test that opens worlds")
    ARGS, rest = parser.parse_known_args()
    result = unittest.main(argv=[sys.argv[0]] + rest, verbosity=2, exit=False).result
    LOG.seek(0)
    log = LOG.read()
    if not result.wasSuccessful():
        sys.stderr.write("---- server logs ----\n" + log[-20000:])
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
