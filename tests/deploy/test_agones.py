"""The Agones integration against a fake SDK sidecar on loopback: /ready only once the
listeners accept connections, /health at the configured period, retries while the
sidecar starts late, /shutdown on SIGTERM, and a sidecar answering 500 or hanging
does not slow the tick. Runs against crowd-server (--server) or the stand-in
agones_harness (--harness). Counts periods; never asserts on the server's speed,
and never waits a fixed time: each wait is for an event (a sidecar call, a
counter, a line on stdout), with a guard that only stops a hung test."""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_sidecar import FakeSidecar, free_port  # noqa: E402

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

    def __init__(self, exe, sidecar_port):
        env = dict(os.environ, AGONES_SDK_HTTP_PORT=str(sidecar_port))
        self.proc = subprocess.Popen(
            [exe, "--agones", "--agones-health-ms", str(HEALTH_MS), "--agones-timeout-ms", str(TIMEOUT_MS),
             "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--tick-rate", "30", "--log-level", "info"],
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
    ARGS, rest = parser.parse_known_args()
    result = unittest.main(argv=[sys.argv[0]] + rest, verbosity=2, exit=False).result
    LOG.seek(0)
    log = LOG.read()
    if not result.wasSuccessful():
        sys.stderr.write("---- server logs ----\n" + log[-20000:])
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
