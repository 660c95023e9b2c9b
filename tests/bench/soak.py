#!/usr/bin/env python3
"""soak.py — crowd-server (an ASan+UBSan build) under mixed load for N minutes.

Every kind of client at once, each restarted in a loop so connections keep
opening and closing:
  tcp      crowd-load over TCP: spawn, retarget every second, whole-world
           subscription, disconnect at the end of each run (agents removed);
  ws       the same over WebSocket;
  ctl      crowdctl adding polygons (4 to 64 vertices) and removing old ones;
  sub      subscribe and drop: Hello, Subscribe (random area), read a few
           snapshots, close;
  slow     slow consumers: Hello, Subscribe to the whole world every tick,
           never read (the server must cut them, others keep their rate);
  garbage  random bytes on TCP, on HTTP, and as WebSocket frames after a
           valid upgrade.
Every --sample seconds: server RSS (and, from /proc/PID/smaps, how much of it is
ASan's shadow, its primary allocator's space, and everything else), the live
heap and the allocator's held bytes (crowd_heap_live_bytes / _held_bytes, the
allocator's own count), ticks done (tick rate), errors by code, from /metrics.
At the end: SIGTERM, then the server log and ASan/UBSan log files are searched
for sanitizer reports (LeakSanitizer runs at exit). Prints the series and one
verdict line, and exits 1 unless every bar holds: the live heap flat after the
first minute (least-squares slope <= --max-heap-slope MiB/min), tick rate held
(every sample >= 90 % of the set rate), 0 INTERNAL errors, 0 sanitizer reports,
the server alive and exiting 0 on SIGTERM. The RSS slope is printed, and judged
only with --max-rss-slope: under ASan, RSS is mostly the sanitizer's own
caches (quarantine, per-size-class free lists, their shadow, its stack depot),
which fill for minutes with nothing kept. The server gets ASAN_OPTIONS
detect_leaks=1:halt_on_error=1:quarantine_size_mb=32:atexit=1:print_stats=1
(log files in --work; CONTRIBUTING.md says why each).
A benchmark, not a ctest test (it runs for minutes); `--minutes 0.5` checks it works.

  python3 tests/bench/soak.py --server build-asan/server/crowd-server \
      --load build-asan/clients/load/crowd-load --ctl build-asan/clients/cli/crowdctl --minutes 30
"""
import argparse
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request


# /proc readers shared with the load benchmark (this script's folder is on sys.path).
from server_load import cpu_s, rss_kb  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from crowd_wire import varint  # noqa: E402,F401 (obstacle_stall.py takes it from here too)


def field(num, wire, payload):
    if wire == 0:
        return varint(num << 3) + varint(payload)
    if wire == 2:
        return varint(num << 3 | 2) + varint(len(payload)) + payload
    if wire == 5:
        return varint(num << 3 | 5) + payload
    raise ValueError(wire)


def delimited(msg):
    return varint(len(msg)) + msg


def hello(token, rid=1):
    body = field(1, 0, 1) + field(2, 0, 1) + field(3, 2, token.encode()) + field(4, 2, b"soak")
    return field(1, 0, rid) + field(2, 2, body)


def subscribe(rid, area=None, divisor=1):
    body = b""
    if area:
        rect = b"".join(field(i + 1, 5, struct.pack("<f", v)) for i, v in enumerate(area))
        body += field(1, 2, rect)
    body += field(2, 0, divisor)
    return field(1, 0, rid) + field(9, 2, body)


class Server:
    def __init__(self, binary, args, log_path, env, prefix=()):
        self.log_path = log_path
        self.log = open(log_path, "w")
        cmd = list(prefix) + [binary, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"] + args
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.port = self.http_port = None
        while self.port is None or self.http_port is None:  # wait for the lines themselves
            if self.proc.poll() is not None:
                raise RuntimeError("crowd-server exited: " + open(log_path).read()[-3000:])
            text = open(log_path).read()
            m = re.search(r"listening tcp 127\.0\.0\.1:(\d+)", text)
            self.port = int(m.group(1)) if m else None
            m = re.search(r"listening http 127\.0\.0\.1:(\d+)", text)
            self.http_port = int(m.group(1)) if m else None
            if self.port is None or self.http_port is None:
                time.sleep(0.05)

    def metrics(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.http_port, timeout=10) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            name, _, value = line.rpartition(" ")
            try:
                out[name] = float(value)
            except ValueError:
                pass
        return out


class Soak:
    def __init__(self, a, server):
        self.a = a
        self.server = server
        self.stop = threading.Event()
        self.counts = {}
        self.lock = threading.Lock()
        self.procs = []

    def count(self, what, n=1):
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + n

    def loop(self, name, fn):
        def run():
            rnd = random.Random(hash(name) & 0xFFFF)
            while not self.stop.is_set():
                try:
                    fn(rnd)
                except (OSError, subprocess.SubprocessError) as e:
                    self.count(name + "_exceptions")
                    if self.a.verbose:
                        print(name, "exception:", e, file=sys.stderr)
                    time.sleep(0.2)
        t = threading.Thread(target=run, name=name, daemon=True)
        t.start()
        return t

    def run_proc(self, cmd, timeout):
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        return p.returncode, err

    # ---- clients
    def load_client(self, ws):
        def fn(rnd):
            port = self.server.http_port if ws else self.server.port
            cmd = [self.a.load, "--server", "127.0.0.1:%d" % port, "--connections", str(self.a.connections),
                   "--agents", str(self.a.agents), "--retarget", "1", "--retarget-count", "20",
                   "--duration", str(rnd.randint(20, 60)), "--ramp-up", "2", "--token", "p", "--quiet",
                   "--seed", str(rnd.randint(1, 1 << 30)), "--area", rnd.choice(["world", "200x200", "none"])]
            if ws:
                cmd.append("--ws")
            rc, err = self.run_proc(cmd, 300)
            self.count(("ws" if ws else "tcp") + "_runs")
            if rc not in (0, 1):
                self.count(("ws" if ws else "tcp") + "_failed_runs")
                with self.lock, open(os.path.join(self.a.work, "client-failures.log"), "a") as f:
                    f.write("crowd-load rc %s: %s\n%s\n\n" % (rc, " ".join(cmd), err[-3000:]))
                if self.a.verbose:
                    print("crowd-load rc", rc, err[-500:], file=sys.stderr)
        return fn

    def ctl(self, rnd, live=[]):
        base = [self.a.ctl, "--server", "127.0.0.1:%d" % self.server.port, "--token", "a", "--timeout", "10000"]
        if live and (len(live) > 40 or rnd.random() < 0.4):
            oid = live.pop(rnd.randrange(len(live)))
            self.run_proc(base + ["obstacle", "remove", str(oid)], 30)
            self.count("obstacles_removed")
        else:
            n = rnd.randint(4, 64)
            cx, cy, r = rnd.uniform(-900, 900), rnd.uniform(-900, 900), rnd.uniform(1, 15)
            import math
            pts = ["%.3f,%.3f" % (cx + r * math.cos(2 * math.pi * i / n), cy + r * math.sin(2 * math.pi * i / n))
                   for i in range(n)]
            p = subprocess.run(base + ["obstacle", "add"] + pts, capture_output=True, text=True, timeout=30)
            m = re.search(r"obstacle added:?\s*(\d+)", p.stdout)
            if m:
                live.append(int(m.group(1)))
                self.count("obstacles_added")
        time.sleep(rnd.uniform(0.05, 0.5))

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        return s

    def sub_and_drop(self, rnd):
        s = self.connect()
        try:
            x, y = rnd.uniform(-1000, 800), rnd.uniform(-1000, 800)
            s.sendall(delimited(hello(rnd.choice(["v", "p", "a"]))) +
                      delimited(subscribe(2, (x, y, x + rnd.uniform(10, 400), y + rnd.uniform(10, 400)),
                                          rnd.randint(1, 5))))
            got, deadline = 0, time.time() + rnd.uniform(0.2, 3)
            while time.time() < deadline:
                if not s.recv(65536):
                    break
                got += 1
            self.count("subscribe_drop")
        finally:
            s.close()

    def slow_consumer(self, rnd):
        s = self.connect()
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(delimited(hello("v")) + delimited(subscribe(2, None, 1)))
            # never read: wait for the server to cut it (the close itself is the event)
            s.settimeout(120)
            time.sleep(rnd.uniform(20, 50))  # past the soft limit (256k here) + output_soft_seconds
            s.settimeout(0.1)
            try:
                while s.recv(1 << 20):
                    pass
            except socket.timeout:
                pass
            self.count("slow_consumers")
        finally:
            s.close()

    def garbage(self, rnd):
        kind = rnd.choice(["tcp", "http", "ws"])
        port = self.server.port if kind == "tcp" else self.server.http_port
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            junk = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 4096)))
            if kind == "tcp" and rnd.random() < 0.5:
                junk = delimited(hello("p")) + junk
            if kind == "http" and rnd.random() < 0.5:
                junk = b"GET /" + junk[:200] + b" HTTP/1.1\r\n" + junk[200:]
            if kind == "ws":
                s.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                          b"Sec-WebSocket-Protocol: crowd.v1\r\n\r\n")
                mask = bytes(rnd.getrandbits(8) for _ in range(4))
                frame = bytes([0x82, 0x80 | min(len(junk), 125)]) + mask
                junk = frame + bytes(b ^ mask[i % 4] for i, b in enumerate(junk[:125])) + junk[125:]
            s.sendall(junk)
            s.settimeout(2)
            try:
                while s.recv(65536):
                    pass
            except socket.timeout:
                pass
            self.count("garbage_" + kind)
        except OSError:
            self.count("garbage_" + kind)
        finally:
            s.close()


# Where ASan puts things on x86-64 (asan_mapping.h, sanitizer_allocator
# parameters in asan_allocator.h): shadow memory, and the primary allocator's
# space (chunks up to 128 KiB, one region per size class). Elsewhere: the
# program, thread stacks, ASan's large-chunk mmaps, its stack depot.
ASAN_SHADOW = (0x00007FFF8000, 0x10007FFF8000)
ASAN_PRIMARY = (0x600000000000, 0x640000000000)


def rss_parts_kb(pid):
    """RSS split by mapping: {'shadow', 'primary', 'other'} in KiB, from /proc/PID/smaps."""
    parts = {"shadow": 0, "primary": 0, "other": 0}
    try:
        with open("/proc/%d/smaps" % pid) as f:
            start = 0
            for line in f:
                head = line.split(None, 1)[0]
                if "-" in head and not head.endswith(":"):
                    start = int(head.split("-")[0], 16)
                elif head == "Rss:":
                    kb = int(line.split()[1])
                    if ASAN_SHADOW[0] <= start < ASAN_SHADOW[1]:
                        parts["shadow"] += kb
                    elif ASAN_PRIMARY[0] <= start < ASAN_PRIMARY[1]:
                        parts["primary"] += kb
                    else:
                        parts["other"] += kb
    except OSError:
        pass
    return parts


SANITIZER_REPORT = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:")


def slope(ts, values):
    """Least-squares slope of values (MiB) over times ts (seconds), MiB per minute (0 for < 2 points)."""
    if len(ts) < 2:
        return 0.0
    xs = [t / 60 for t in ts]
    mx, my = sum(xs) / len(xs), sum(values) / len(values)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, values)) / sxx if sxx else 0.0


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", default=os.path.join(root, "build-asan/server/crowd-server"))
    ap.add_argument("--load", default=os.path.join(root, "build-asan/clients/load/crowd-load"))
    ap.add_argument("--ctl", default=os.path.join(root, "build-asan/clients/cli/crowdctl"))
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--sample", type=float, default=10, help="seconds between samples")
    ap.add_argument("--connections", type=int, default=3, help="per crowd-load run (3 runs at once)")
    ap.add_argument("--agents", type=int, default=100, help="per connection")
    ap.add_argument("--tick-rate", type=int, default=30)
    ap.add_argument("--work", default="/tmp/crowd-soak")
    ap.add_argument("--nice", type=int, default=0,
                    help="run the server and clients at this niceness (negative, as root: ahead of a busy "
                         "machine's other work, so the tick rate measures the server)")
    ap.add_argument("--rt", type=int, default=0,
                    help="run the server under `chrt -r RT` (round-robin real-time priority, as root): "
                         "on a machine busy with other work its ticks then wait for no one")
    ap.add_argument("--max-heap-slope", type=float, default=0.1,
                    help="bar: least-squares slope of the live heap (crowd_heap_live_bytes) after the first "
                         "minute, MiB/min")
    ap.add_argument("--max-rss-slope", type=float, default=None,
                    help="bar on the RSS slope after the first minute, MiB/min (default: reported, not judged)")
    ap.add_argument("--asan-options", default="",
                    help="more ASAN_OPTIONS, appended to the script's own (colon-separated, later wins)")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    if a.nice:
        os.nice(a.nice)
    env = dict(os.environ)
    # A small quarantine (default 256 MiB) so that RSS settles within the
    # first minute and growth after it means memory really kept.
    env["ASAN_OPTIONS"] = ("detect_leaks=1:halt_on_error=1:quarantine_size_mb=32:atexit=1:print_stats=1:log_path=" +
                           os.path.join(a.work, "asan") + (":" + a.asan_options if a.asan_options else ""))
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:log_path=" + os.path.join(a.work, "ubsan")
    for f in os.listdir(a.work):
        if f.startswith(("asan", "ubsan", "client-failures")):
            os.remove(os.path.join(a.work, f))
    log_path = os.path.join(a.work, "server.log")
    server = Server(a.server, ["--tick-rate", str(a.tick_rate), "--token", "a=admin", "--token", "p=player",
                               "--token", "v=viewer", "--output-soft-limit", "256k"], log_path, env,
                    ["chrt", "-r", str(a.rt)] if a.rt else [])
    print("soak: %s, %.1f minutes, tick rate %d, pid %d, tcp %d, http %d, nice %d, rt %d, load average %s" %
          (a.server, a.minutes, a.tick_rate, server.proc.pid, server.port, server.http_port, os.nice(0), a.rt,
           load_average()))
    print("ASAN_OPTIONS=%s" % env["ASAN_OPTIONS"])
    soak = Soak(a, server)
    soak.loop("tcp", soak.load_client(False))
    soak.loop("tcp2", soak.load_client(False))
    soak.loop("ws", soak.load_client(True))
    soak.loop("ctl", soak.ctl)
    soak.loop("sub", soak.sub_and_drop)
    soak.loop("slow", soak.slow_consumer)
    soak.loop("garbage", soak.garbage)

    t0 = time.time()
    end = t0 + a.minutes * 60
    samples = []  # one dict a sample: t (s), rss/live/held/shadow/primary/other (KiB), rate, work_ms, ...
    print("%7s %8s %8s %8s %8s %8s %8s %7s %7s %6s %7s %9s %s" %
          ("t_s", "rss_MiB", "live", "held", "shadow", "primary", "other", "tick_Hz", "work_ms", "cpu_%", "agents",
           "obstacles", "errors so far"))
    last = None
    while time.time() < end and server.proc.poll() is None:
        time.sleep(max(0.0, min(a.sample, end - time.time())))
        try:
            m = server.metrics()
        except OSError as e:
            print("metrics failed:", e)
            continue
        now = time.time() - t0
        rss = rss_kb(server.proc.pid) or 0
        parts = rss_parts_kb(server.proc.pid)
        heap = {k.split("{")[0]: v / 1024 for k, v in m.items() if k.startswith("crowd_heap_")}
        errors = {k[len('crowd_errors_total{code="'):-2]: int(v) for k, v in m.items()
                  if k.startswith("crowd_errors_total{") and v}
        ticks = m.get("crowd_ticks_total", 0)
        work = m.get("crowd_tick_duration_seconds_sum", 0)
        cpu = cpu_s(server.proc.pid) or 0.0
        if last:
            dt = now - last[0]
            rate = (ticks - last[1]) / dt
            work_ms = (work - last[2]) / max(1, ticks - last[1]) * 1e3
            share = (cpu - last[3]) / dt * 100
        else:
            rate = work_ms = share = float("nan")
        last = (now, ticks, work, cpu)
        sample = dict(t=now, rss=rss, live=heap.get("crowd_heap_live_bytes", float("nan")),
                      held=heap.get("crowd_heap_held_bytes", float("nan")), rate=rate, work_ms=work_ms,
                      share=share, agents=m.get("crowd_agents", 0), obstacles=m.get("crowd_obstacles", 0),
                      errors=errors, **parts)
        samples.append(sample)
        print("%7.0f %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %7.1f %7.2f %6.0f %7d %9d %s" %
              (now, rss / 1024, sample["live"] / 1024, sample["held"] / 1024, parts["shadow"] / 1024,
               parts["primary"] / 1024, parts["other"] / 1024, rate, work_ms, share, sample["agents"],
               sample["obstacles"], " ".join("%s=%d" % kv for kv in sorted(errors.items()))), flush=True)
    alive = server.proc.poll() is None
    soak.stop.set()
    disconnects = {k: int(v) for k, v in (server.metrics().items() if alive else []) if
                   k.startswith("crowd_disconnects_total{") and v}
    if alive:
        server.proc.send_signal(signal.SIGTERM)
        try:
            server.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            server.proc.kill()
    rc = server.proc.returncode
    log = open(log_path, errors="replace").read()
    # The sanitizers' log files: reports, and (atexit=1:print_stats=1) ASan's
    # exit statistics, which are not reports. A log file without either counts
    # as a report (something wrote there).
    sanitizer_text, san = log, 0
    for f in sorted(os.listdir(a.work)):
        if f.startswith(("asan", "ubsan")):
            text = open(os.path.join(a.work, f), errors="replace").read()
            sanitizer_text += text
            if "AddressSanitizer exit stats" not in text and not SANITIZER_REPORT.search(text):
                san += 1
    san += len(SANITIZER_REPORT.findall(sanitizer_text))
    depot = re.search(r"StackDepot: (\d+) ids; (\d+)M allocated", sanitizer_text)
    quarantine = re.search(r"Global quarantine stats: .*?bytes: (\d+)", sanitizer_text)

    print("clients:", " ".join("%s=%d" % kv for kv in sorted(soak.counts.items())))
    print("disconnects:", " ".join("%s=%d" % (k[len('crowd_disconnects_total{reason="'):-2], v)
                                   for k, v in sorted(disconnects.items())))
    after = [s for s in samples if s["t"] >= 60]
    asan = any('allocator="asan"' in k for k in m) if samples else False
    verdict = []
    ok = alive and rc == 0
    if after:
        def mib(key, s):
            return s[key] / 1024

        def describe(key, what):
            first, top, final = mib(key, after[0]), max(mib(key, s) for s in after), mib(key, after[-1])
            whole = slope([s["t"] for s in after], [mib(key, s) for s in after])
            half = after[len(after) // 2:]
            late = slope([s["t"] for s in half], [mib(key, s) for s in half])
            return whole, late, ("%s after 1 min %.1f MiB, max %.1f, end %.1f (%+.1f); slope after 1 min %+.3f "
                                 "MiB/min, over the second half %+.3f" % (what, first, top, final, final - first,
                                                                         whole, late))
        live_slope, live_late, text = describe("live", "live heap")
        verdict.append(text + " (bar <= %.2f)" % a.max_heap_slope)
        rss_whole, rss_late, text = describe("rss", "RSS")
        verdict.append(text + (" (bar <= %.2f)" % a.max_rss_slope if a.max_rss_slope is not None else
                               " (not judged: %s's own caches)" % ("ASan" if asan else "the allocator")))
        if asan:
            parts = []
            for key in ("held", "primary", "shadow", "other"):
                parts.append("%s %.1f -> %.1f MiB (%+.3f MiB/min)" % (
                    key, mib(key, after[0]), mib(key, after[-1]),
                    slope([s["t"] for s in after], [mib(key, s) for s in after])))
            verdict.append("ASan allocator held / RSS by mapping after 1 min: " + ", ".join(parts))
        if live_slope != live_slope:
            verdict.append("no crowd_heap_live_bytes in /metrics (a server from before it)")
            ok = False
        else:
            ok = ok and live_slope <= a.max_heap_slope
        if a.max_rss_slope is not None:
            ok = ok and rss_whole <= a.max_rss_slope
        rates = [s["rate"] for s in samples if s["rate"] == s["rate"]]
        works = [s["work_ms"] for s in samples if s["work_ms"] == s["work_ms"]]
        verdict.append("tick rate min %.1f / mean %.1f Hz (target %d), tick work mean %.1f / max %.1f ms" %
                       (min(rates), sum(rates) / len(rates), a.tick_rate, sum(works) / len(works), max(works)))
        ok = ok and min(rates) >= 0.9 * a.tick_rate
    internal = samples[-1]["errors"].get("ERROR_INTERNAL", 0) if samples else 0
    verdict.append("INTERNAL errors %d" % internal)
    verdict.append("sanitizer reports %d" % san)
    verdict.append("server exit %s" % rc)
    if depot:
        verdict.append("ASan at exit: stack depot %s ids, %s MiB; quarantine %.1f MiB" %
                       (depot.group(1), depot.group(2), int(quarantine.group(1)) / 2**20 if quarantine else 0))
    verdict.append("load average at the end %s" % load_average())
    ok = ok and internal == 0 and san == 0
    print("soak: %.1f minutes: %s -> %s" % ((time.time() - t0) / 60, "; ".join(verdict), "OK" if ok else "FAILED"))
    if san:
        print("sanitizer output: %s and %s/asan*, ubsan*" % (log_path, a.work))
    if os.path.exists(os.path.join(a.work, "client-failures.log")):
        print("crowd-load runs that failed (exit not 0 or 1): %s" % os.path.join(a.work, "client-failures.log"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
