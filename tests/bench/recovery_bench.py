#!/usr/bin/env python3
"""recovery_bench.py — how fast a killed world comes back (docs/benchmarks.md).

For each size N (default 10,000, 50,000 and 100,000 demo agents walking) it
starts crowd-server with --data-dir (checkpoints by --checkpoint-seconds),
lets it run, SIGKILLs it, copies the data dir as the kill left it, restarts
the server on the same dir and prints:
  - seconds from exec to the `recovered tick T ... from checkpoint C` line,
    and to the server listening (after the recovery checkpoint is written);
  - ticks replayed (T - C) and the cadence in ticks (checkpoint seconds x tick
    rate, +1: a checkpoint is taken at the first tick boundary once due);
  - the state hash crowd-replay gives for tick T re-simulating the copy from
    its oldest checkpoint with --replay-workers (1 by default, the server
    replays on every core), and whether it equals the recovered one.

Bench mode (default): the server runs --run-seconds (90) of wall time before
the kill. Check mode (--check, the ctest): no fixed wait: the kill follows the
event "the K-th checkpoint after tick 0's is renamed into place" (the server is
stopped with SIGSTOP at once, so nothing moves while the dir is copied), and
the script exits 1 unless the hashes are equal, recovery started from the
newest complete checkpoint of the copy, and T - C is at most the cadence's
ticks. No wall-clock figure is asserted.

With --tick-cost-pairs N it measures instead what checkpoints cost the tick:
N interleaved pairs of runs without checkpoints (after tick 0's) and with
them, each --run-seconds long, and prints the tick-trace p50 / p99 / max and
the copy at the tick boundary (crowd_storage_checkpoint_copy_seconds).

With --reference-server/--reference-replay (a build of the code before
--checkpoint-seconds) each size runs first with it, at its default cadence,
then with this build: the pairs are interleaved.

Wall-clock figures depend on the machine's load: it prints the load average.
"""
import argparse
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def metric(port, name):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return None


class Server:
    """crowd-server with its stdout in a file; lines are waited for, never slept for."""

    def __init__(self, binary, args, log):
        self.out = open(log + ".out", "w+")
        self.err = open(log + ".err", "w")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"] + args,
                                     stdout=self.out, stderr=self.err)
        self.log = log
        self.ports, self.recovered, self.t_recovered, self.t_listening = {}, None, None, None

    def scan(self):
        self.out.seek(0)
        for line in self.out.read().splitlines():
            m = re.match(r"listening (tcp|http) [^ ]*:(\d+)$", line)
            if m and m.group(1) not in self.ports:
                self.ports[m.group(1)] = int(m.group(2))
                if len(self.ports) == 2:
                    self.t_listening = time.monotonic() - self.t0
            m = re.match(r"recovered tick (\d+) agents (\d+) state_hash (0x[0-9a-f]+) from checkpoint (\d+)", line)
            if m and self.recovered is None:
                self.recovered = (int(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4)))
                self.t_recovered = time.monotonic() - self.t0

    def wait_listening(self, limit_s):
        deadline = time.monotonic() + limit_s
        while len(self.ports) < 2:
            if self.proc.poll() is not None:
                raise RuntimeError("crowd-server exited (%d); see %s.err" % (self.proc.returncode, self.log))
            if time.monotonic() > deadline:
                raise RuntimeError("crowd-server is not listening after %d s; see %s.err" % (limit_s, self.log))
            self.scan()
            time.sleep(0.005)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait()


def files(data, prefix, suffix):
    out = []
    for name in os.listdir(data):
        m = re.match(prefix + r"(\d{20})" + re.escape(suffix) + "$", name)
        if m:
            out.append(int(m.group(1)))
    return sorted(out)


def wait_checkpoints(srv, data, count, ticks_after, limit_s):
    """Block until `count` complete checkpoints newer than tick 0's exist and the
    server ran `ticks_after` ticks past the newest; then SIGSTOP it."""
    deadline = time.monotonic() + limit_s
    target = None  # the tick to reach, fixed once the K-th checkpoint is in: on a slow machine checkpoints
    while True:     # (by time) come every few ticks, and "past the newest" would never come
        done = [t for t in files(data, "checkpoint-", ".ckpt") if t > 0]
        if target is None and len(done) >= count:
            target = done[-1] + ticks_after
        if target is not None and (metric(srv.ports["http"], "crowd_tick") or 0) >= target:
            break
        if srv.proc.poll() is not None:
            raise RuntimeError("crowd-server exited; see %s.err" % srv.log)
        if time.monotonic() > deadline:
            raise RuntimeError("no %d checkpoints after %d s" % (count, limit_s))
        time.sleep(0.002)
    srv.proc.send_signal(signal.SIGSTOP)


def replay_hash(replay, data, tick, workers):
    out = subprocess.run([replay, data, "--to-tick", str(tick), "--workers", str(workers), "--verify"],
                         capture_output=True, text=True)
    m = re.search(r"tick (\d+) state_hash (0x[0-9a-f]+)", out.stdout)
    if out.returncode != 0 or not m:
        raise RuntimeError("crowd-replay failed (%d): %s %s" % (out.returncode, out.stdout, out.stderr))
    return int(m.group(1)), m.group(2)


def one(a, n, work, reference=False):
    server, replay = (a.reference_server, a.reference_replay) if reference else (a.server, a.replay)
    tag = "%d%s" % (n, "-reference" if reference else "")
    data = os.path.join(work, "data-" + tag)
    killed = os.path.join(work, "killed-" + tag)
    shutil.rmtree(data, ignore_errors=True)
    shutil.rmtree(killed, ignore_errors=True)
    args = ["--demo", "--demo-agents", str(n), "--max-agents", str(n + 1000), "--tick-rate", str(a.tick_rate),
            "--data-dir", data, "--fsync", a.fsync, "--log-level", "info"] + a.server_arg
    if not reference:  # the reference is the code before --checkpoint-seconds, with its default cadence
        args += ["--checkpoint-seconds", str(a.checkpoint_seconds)]
    srv = Server(server, args, os.path.join(work, "first-" + tag))
    srv.wait_listening(900)
    if a.kill_fraction is not None:
        # a bench of recovery time against the cadence: the kill falls a given part of a cadence
        # after the K-th checkpoint (wall time, as the cadence is)
        wait_checkpoints(srv, data, a.kill_after_checkpoints, 0, 900)
        srv.proc.send_signal(signal.SIGCONT)
        time.sleep(a.kill_fraction * a.checkpoint_seconds)
        srv.proc.send_signal(signal.SIGSTOP)
        shutil.copytree(data, killed)
        killed_tick = None
    elif a.check:
        # half a cadence after the checkpoint: recovery has ticks to replay
        wait_checkpoints(srv, data, a.kill_after_checkpoints, int(a.checkpoint_seconds * a.tick_rate) // 2, 900)
        shutil.copytree(data, killed)  # the server is stopped: this is what the kill leaves
        killed_tick = None
    else:
        time.sleep(a.run_seconds)  # a bench: the run's length is the figure's condition
        killed_tick = metric(srv.ports["http"], "crowd_tick")
        srv.proc.send_signal(signal.SIGSTOP)
        shutil.copytree(data, killed)
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait()
    ckpt_bytes = os.path.getsize(os.path.join(killed, "checkpoint-%020d.ckpt" % files(killed, "checkpoint-", ".ckpt")[-1]))
    load = os.getloadavg()[0]
    again = Server(server, args, os.path.join(work, "second-" + tag))
    again.wait_listening(900)
    again.stop()
    if not again.recovered:
        raise RuntimeError("no `recovered` line; see %s.err" % again.log)
    tick, agents, rec_hash, from_ckpt = again.recovered
    r_tick, r_hash = replay_hash(replay, killed, tick, a.replay_workers)
    cadence = math.ceil(a.checkpoint_seconds * a.tick_rate) + 1
    complete = [t for t in files(killed, "checkpoint-", ".ckpt") if t <= tick]
    segments = files(killed, "journal-", ".log")
    if reference:
        print("  %6d agents, reference: recovered tick %d %.2f s after exec, listening after %.2f s; %d ticks replayed "
              "from the checkpoint of tick %d (its default cadence); crowd-replay: %s; load average %.1f"
              % (n, tick, again.t_recovered, again.t_listening, tick - from_ckpt, from_ckpt,
                 "equal" if (r_tick, r_hash) == (tick, rec_hash) else "DIFFERENT", load), flush=True)
        return [] if (r_tick, r_hash) == (tick, rec_hash) else ["reference: the recovered state differs"]
    print("  %6d agents: recovered tick %d (%d agents) %.2f s after exec, listening after %.2f s; %d ticks replayed "
          "from the checkpoint of tick %d (cadence %g s = %d ticks at %d Hz); checkpoint %.1f MB; "
          "crowd-replay --workers %d: tick %d state_hash %s, recovered %s: %s; load average %.1f"
          % (n, tick, agents, again.t_recovered, again.t_listening, tick - from_ckpt, from_ckpt,
             a.checkpoint_seconds, cadence, a.tick_rate, ckpt_bytes / 1e6, a.replay_workers, r_tick, r_hash,
             rec_hash, "equal" if (r_tick, r_hash) == (tick, rec_hash) else "DIFFERENT", load), flush=True)
    failures = []
    if (r_tick, r_hash) != (tick, rec_hash):
        failures.append("the recovered state differs from crowd-replay's")
    if not complete or from_ckpt != complete[-1]:
        failures.append("recovery started from checkpoint %d, the newest complete one is %s"
                        % (from_ckpt, complete[-1] if complete else None))
    newer = [s for s in segments if s > from_ckpt]
    if not newer and tick - from_ckpt > cadence:
        failures.append("%d ticks replayed, more than the cadence's %d" % (tick - from_ckpt, cadence))
    elif newer:
        print("    (a checkpoint of tick %d was being written at the kill: replayed from the one before)" % newer[-1])
    if killed_tick is not None:
        # a tick's hash record goes out with the next tick's batch, and with everysec a kill loses what the
        # writer had not written yet: the recovered tick may be a little before the one /metrics showed
        print("    (/metrics showed tick %d just before the kill)" % killed_tick)
    return failures


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(math.ceil(q * len(xs))) - 1)] if xs else float("nan")


def tick_cost(a, work):
    """What checkpoints cost the tick: runs with and without them, interleaved."""
    n = int(a.agents.split(",")[0])
    print("tick cost of checkpoints at %d agents: %d interleaved pairs of %g s, --checkpoint-seconds %g vs none "
          "(--checkpoint-every 1e9)" % (n, a.tick_cost_pairs, a.run_seconds, a.checkpoint_seconds), flush=True)
    rows = {"none": [], "checkpoints": []}
    for i in range(a.tick_cost_pairs):
        for mode in ("none", "checkpoints"):
            data = os.path.join(work, "cost-%s-%d" % (mode, i))
            shutil.rmtree(data, ignore_errors=True)
            trace = data + ".trace"
            cadence = (["--checkpoint-seconds", str(a.checkpoint_seconds)] if mode == "checkpoints"
                       else ["--checkpoint-every", "1000000000"])
            args = ["--demo", "--demo-agents", str(n), "--max-agents", str(n + 1000), "--tick-rate",
                    str(a.tick_rate), "--data-dir", data, "--fsync", a.fsync, "--tick-trace", trace,
                    "--log-level", "warn"] + cadence + a.server_arg
            srv = Server(a.server, args, data)
            srv.wait_listening(900)
            time.sleep(a.run_seconds)  # a bench: the run's length is the figure's condition
            copy_ms = (metric(srv.ports["http"], "crowd_storage_checkpoint_copy_seconds") or 0) * 1e3
            cks = metric(srv.ports["http"], "crowd_storage_checkpoints_total") or 0
            skipped = metric(srv.ports["http"], "crowd_tick_periods_skipped_total")
            srv.stop()
            with open(trace) as f:
                totals = [float(line.split()[1]) / 1e3 for line in f.readlines()[1:] if line.strip()]
            totals = totals[10:]  # the first ticks fill the world's arrays
            r = (percentile(totals, 0.5), percentile(totals, 0.99), max(totals), len(totals), cks, copy_ms)
            rows[mode].append(r)
            print("  pair %d %-11s tick p50 %.1f ms p99 %.1f ms max %.1f ms over %d ticks; %d checkpoints, the "
                  "last copied in %.1f ms at the tick boundary; periods skipped %s; load average %.1f"
                  % ((i + 1, mode) + r + (skipped, os.getloadavg()[0])), flush=True)
            shutil.rmtree(data, ignore_errors=True)
    for mode in rows:
        print("  median of %-11s tick p99 %.1f ms, p50 %.1f ms" % (mode, statistics.median(r[1] for r in rows[mode]),
                                                                statistics.median(r[0] for r in rows[mode])))
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--replay", required=True)
    p.add_argument("--agents", default="10000,50000,100000")
    p.add_argument("--tick-rate", type=int, default=30)
    p.add_argument("--checkpoint-seconds", type=float, default=2.0)
    p.add_argument("--fsync", default="everysec")
    p.add_argument("--run-seconds", type=float, default=90.0, help="bench: wall time before the kill")
    p.add_argument("--check", action="store_true",
                   help="test: kill after --kill-after-checkpoints checkpoints; exit 1 on any failed check")
    p.add_argument("--kill-after-checkpoints", type=int, default=2)
    p.add_argument("--kill-fraction", type=float, default=None,
                   help="bench: kill this part of --checkpoint-seconds after the --kill-after-checkpoints-th "
                        "checkpoint (0.9: near the longest replay) instead of after --run-seconds")
    p.add_argument("--replay-workers", type=int, default=1)
    p.add_argument("--server-arg", action="append", default=[], help="one more crowd-server argument")
    p.add_argument("--reference-server", help="crowd-server before --checkpoint-seconds: run first at each size")
    p.add_argument("--reference-replay", help="its crowd-replay")
    p.add_argument("--tick-cost-pairs", type=int, default=0,
                   help="instead: what checkpoints cost the tick (tick-trace p50/p99), N interleaved pairs of "
                        "--run-seconds at the first --agents size, without and with checkpoints")
    p.add_argument("--work", default=None)
    a = p.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="crowd-recovery-bench-")
    os.makedirs(work, exist_ok=True)
    print("recovery_bench: demo crowd at %d Hz, --checkpoint-seconds %g, --fsync %s, %s; %d cores, load average "
          "%.1f before" % (a.tick_rate, a.checkpoint_seconds, a.fsync,
                           "kill after %d checkpoints" % a.kill_after_checkpoints if a.check
                           else "SIGKILL %g of a cadence after checkpoint %d" % (a.kill_fraction,
                                                                                    a.kill_after_checkpoints)
                           if a.kill_fraction is not None else "SIGKILL after %g s" % a.run_seconds, os.cpu_count(), os.getloadavg()[0]), flush=True)
    if a.tick_cost_pairs:
        return tick_cost(a, work)
    failures = []
    for n in [int(x) for x in a.agents.split(",")]:
        if a.reference_server:  # interleaved: the code before this change, then this one, at each size
            failures += one(a, n, work, reference=True)
        failures += one(a, n, work)
    for f in failures:
        print("FAIL: " + f)
    if not a.work and not failures:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
