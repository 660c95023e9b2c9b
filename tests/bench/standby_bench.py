#!/usr/bin/env python3
"""standby_bench.py — a hot standby's figures (docs/benchmarks.md, docs/operations.md).

Every run starts a primary (crowd-server --data-dir) and a follower
(crowd-server --follow) on loopback, waits for crowd_follower_connected 1,
then, by mode:

  --mode promote: a player spawns agents on the primary; the primary is
      SIGKILLed; the clock starts as `crowdctl promote` is started against the
      follower and stops when a following `crowdctl spawn` on it exits with
      its Ack (so the figure includes two crowdctl processes starting and
      connecting). Repeated --runs times.
  --mode ack: interleaved pairs of runs of crowd-load against the primary,
      with --min-followers-ack 0 and 1 (the follower attached in both), each
      --duration seconds; prints crowd-load's request->Ack p50 / p99. With
      --ack-demo-agents N the primary also runs N walking demo agents (--map
      city), and the load starts once the follower has caught up (all N
      agents, lag of at most 2 ticks).
  --mode lag: the primary runs --agents demo agents (walking, --map city) and
      crowd-load's players; the follower's crowd_follower_lag_ticks is sampled
      every 0.2 s for --duration seconds: p50 / p99 / max. It also prints the
      slowest answer of the follower's /metrics (asked back to back) from the
      follower's start until it holds every agent (its first sync).

It prints the load average: the machine may be shared. No figure is asserted.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

TOKENS = ["--token", "adm=admin", "--token", "pl=player"]


def metric(port, name):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return None


class Server:
    """crowd-server with its stdout in a file; its listening lines are waited for."""

    def __init__(self, binary, args, log):
        self.out = open(log + ".out", "w+")
        self.err = open(log + ".err", "w")
        self.proc = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"] + args,
                                     stdout=self.out, stderr=self.err)
        self.log = log
        self.ports = {}
        deadline = time.monotonic() + 120
        while len(self.ports) < 2:
            if self.proc.poll() is not None:
                raise RuntimeError("crowd-server exited (%d); see %s.err" % (self.proc.returncode, log))
            if time.monotonic() > deadline:
                raise RuntimeError("crowd-server is not listening; see %s.err" % log)
            self.out.seek(0)
            for line in self.out.read().splitlines():
                m = re.match(r"listening (tcp|http) [^ ]*:(\d+)$", line)
                if m:
                    self.ports[m.group(1)] = int(m.group(2))
            time.sleep(0.005)

    def addr(self):
        return "127.0.0.1:%d" % self.ports["tcp"]

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait()


def wait_metric(srv, name, want, limit_s=120):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        v = metric(srv.ports["http"], name)
        if v is not None and v >= want:
            return
        time.sleep(0.01)
    raise RuntimeError("%s did not reach %g" % (name, want))


class MetricsProbe:
    """Asks a server's /metrics back to back on a thread; keeps the slowest answer."""

    def __init__(self, port):
        self.port = port
        self.slowest = 0.0
        self.count = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping.is_set():
            t0 = time.monotonic()
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=120) as r:
                    r.read()
            except OSError:
                continue
            dt = time.monotonic() - t0
            self.count += 1
            self.slowest = max(self.slowest, dt)

    def stop(self):
        self.stopping.set()
        self.thread.join()
        return self.slowest


def pair(args, tmp, name, primary_args, follower_args=(), on_follower=None):
    pdir, fdir = os.path.join(tmp, name + "-p"), os.path.join(tmp, name + "-f")
    shutil.rmtree(pdir, ignore_errors=True)
    shutil.rmtree(fdir, ignore_errors=True)
    p = Server(args.server, ["--data-dir", pdir] + TOKENS + list(primary_args), os.path.join(tmp, name + "-p"))
    try:
        f = Server(args.server, ["--data-dir", fdir, "--follow", p.addr(), "--follow-token", "adm"] + TOKENS +
                   list(follower_args), os.path.join(tmp, name + "-f"))
    except Exception:
        p.stop()
        raise
    if on_follower:
        on_follower(f)
    try:
        wait_metric(f, "crowd_follower_connected", 1, limit_s=600)
    except Exception:
        p.stop()
        f.stop()
        raise
    return p, f


def crowdctl(args, server, *cmd, token="pl"):
    env = dict(os.environ, CROWD_TOKEN=token)
    return subprocess.run([args.crowdctl, "--server", server] + list(cmd), env=env, capture_output=True, text=True)


def mode_promote(args, tmp):
    times = []
    for run in range(args.runs):
        p, f = pair(args, tmp, "promote%d" % run, ["--tick-rate", "30", "--min-followers-ack", "1"])
        r = crowdctl(args, p.addr(), "spawn", "--count", str(args.agents), "--area", "-90,-90,90,90")
        if r.returncode != 0:
            raise RuntimeError("spawn: " + r.stderr)
        p.stop(signal.SIGKILL)
        t0 = time.monotonic()
        r1 = crowdctl(args, f.addr(), "promote", token="adm")
        r2 = crowdctl(args, f.addr(), "spawn", "--count", "1", "--at", "95,95")
        dt = time.monotonic() - t0
        if r1.returncode != 0 or r2.returncode != 0:
            raise RuntimeError("promote: %s %s" % (r1.stderr, r2.stderr))
        times.append(dt)
        print("run %d: promote sent -> first command acked %.1f ms (%d agents)" % (run, dt * 1e3, args.agents))
        f.stop()
    print("promotion: median %.1f ms, max %.1f ms over %d runs" % (statistics.median(times) * 1e3,
                                                                   max(times) * 1e3, len(times)))


def load(args, tmp, server, tag):
    out = os.path.join(tmp, tag + ".json")
    cmd = [args.load, "--server", server, "--token", "pl", "--connections", str(args.connections), "--agents",
           str(args.load_agents), "--retarget", "0.2", "--retarget-count", "10", "--area", "none", "--duration",
           str(args.duration), "--quiet", "--json", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise RuntimeError("crowd-load: " + r.stderr)
    with open(out) as fh:
        return json.load(fh)


def caught_up(f, agents, limit_s=600):
    """The follower holds every agent and is at most 2 ticks behind."""
    wait_metric(f, "crowd_agents", agents, limit_s=limit_s)
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        lag = metric(f.ports["http"], "crowd_follower_lag_ticks")
        if lag is not None and lag <= 2:
            return
        time.sleep(0.05)
    raise RuntimeError("the follower did not catch up")


def mode_ack(args, tmp):
    rows = {0: [], 1: []}
    demo = []
    if args.ack_demo_agents:
        demo = ["--demo", "--demo-agents", str(args.ack_demo_agents), "--map", "city", "--max-agents",
                str(args.ack_demo_agents + 10000)]
    for i in range(args.pairs):
        for acks in (0, 1):
            p, f = pair(args, tmp, "ack%d-%d" % (i, acks), ["--min-followers-ack", str(acks)] + demo)
            if args.ack_demo_agents:
                try:
                    caught_up(f, args.ack_demo_agents)
                except Exception:
                    p.stop()
                    f.stop()
                    raise
            j = load(args, tmp, p.addr(), "ack%d-%d" % (i, acks))
            p.stop()
            f.stop()
            ack = j["latency_ms"]["request_ack"]
            p50, p99 = ack["p50"], ack["p99"]
            rows[acks].append((p50, p99))
            print("pair %d --min-followers-ack %d: request->Ack p50 %s ms p99 %s ms (%d demo agents)" %
                  (i, acks, p50, p99, args.ack_demo_agents))
    for acks in (0, 1):
        p99s = [r[1] for r in rows[acks] if r[1] is not None]
        if p99s:
            print("--min-followers-ack %d: request->Ack p99 median of %d runs %.2f ms" %
                  (acks, len(p99s), statistics.median(p99s)))


def mode_lag(args, tmp):
    probes = []
    p, f = pair(args, tmp, "lag", ["--demo", "--demo-agents", str(args.agents), "--map", "city",
                                   "--max-agents", str(args.agents + 10000)],
                on_follower=lambda srv: probes.append(MetricsProbe(srv.ports["http"])))
    try:
        wait_metric(f, "crowd_agents", args.agents, limit_s=600)
    except Exception:
        for probe in probes:
            probe.stop()
        p.stop()
        f.stop()
        raise
    slowest = probes[0].stop()
    print("follower's /metrics during its first sync: slowest answer %.1f ms (%d asked)" %
          (slowest * 1e3, probes[0].count))
    loader = subprocess.Popen([args.load, "--server", p.addr(), "--token", "pl", "--connections",
                               str(args.connections), "--agents", str(args.load_agents), "--area", "none",
                               "--duration", str(args.duration), "--quiet"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    samples = []
    end = time.monotonic() + args.duration
    while time.monotonic() < end:
        samples.append(metric(f.ports["http"], "crowd_follower_lag_ticks"))
        time.sleep(0.2)
    loader.wait()
    ptick, ftick = metric(p.ports["http"], "crowd_tick"), metric(f.ports["http"], "crowd_tick")
    p.stop()
    f.stop()
    samples = sorted(s for s in samples if s is not None)
    print("follower lag with %d demo agents + %d x %d players: p50 %.0f p99 %.0f max %.0f ticks (%d samples); "
          "primary tick %.0f, follower tick %.0f at the end" %
          (args.agents, args.connections, args.load_agents, samples[len(samples) // 2],
           samples[min(len(samples) - 1, int(len(samples) * 0.99))], samples[-1], len(samples), ptick, ftick))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", required=True)
    ap.add_argument("--crowdctl", required=True)
    ap.add_argument("--load", required=True, help="crowd-load")
    ap.add_argument("--mode", choices=["promote", "ack", "lag"], required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--agents", type=int, default=1000)
    ap.add_argument("--connections", type=int, default=10)
    ap.add_argument("--load-agents", type=int, default=100)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--ack-demo-agents", type=int, default=0,
                    help="--mode ack: walking demo agents on the primary (the follower catches up first)")
    args = ap.parse_args()
    print("load average: %.2f %.2f %.2f" % os.getloadavg())
    tmp = tempfile.mkdtemp(prefix="standby_bench_")
    try:
        {"promote": mode_promote, "ack": mode_ack, "lag": mode_lag}[args.mode](args, tmp)
    finally:
        print("load average: %.2f %.2f %.2f" % os.getloadavg())
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
