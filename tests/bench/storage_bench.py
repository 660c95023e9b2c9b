#!/usr/bin/env python3
"""storage_bench.py — persistence figures at scale (docs/benchmarks.md).

Starts crowd-server with the demo crowd of N agents (default 50,000) and
--data-dir, a checkpoint every C ticks, and reads from /metrics:
  - checkpoint size, the loop thread's copy time (orca_world_save at a tick
    boundary) and the storage thread's encode + write + fsync time;
  - journal bytes per second and the tick duration.
Then SIGKILLs it K ticks after the second checkpoint (K may span more
checkpoints), restarts it on the same data dir and measures the recovery: from
exec to the `recovered tick ...` line, and how many ticks were replayed after
the checkpoint the server says it started from (the newest complete one);
crowd-replay gives the replay rate alone.

With --p99-pairs N it measures instead what --fsync everysec costs the load
bench: tests/bench/server_load.py's crowd scenario N times without persistence
and N times with --data-dir (a fresh one each run) --fsync everysec,
interleaved none/everysec/none/everysec... so the machine's drift hits both
alike, and prints each run's tick p99, the medians and their ratio
(everysec / none; the issue's bar is <= 1.05). Extra server_load.py flags
follow `--`.

A benchmark, not a test: it prints figures and fails only when something does
not run. Wall-clock figures depend on the machine's load: it prints uptime's.
"""
import json
import statistics
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request


def metrics(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        out = {}
        for line in r.read().decode().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                try:
                    out[name] = float(value)
                except ValueError:
                    pass
        return out


def start(server, args, log):
    out = open(log + ".out", "w+")
    err = open(log + ".err", "w")
    t0 = time.monotonic()
    proc = subprocess.Popen([server, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"] + args,
                            stdout=out, stderr=err)
    ports, recovered, t_recovered = {}, None, None
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and len(ports) < 2:
        if proc.poll() is not None:
            raise RuntimeError("crowd-server exited; see " + log + ".err")
        out.seek(0)
        for line in out.read().splitlines():
            m = re.match(r"listening (tcp|http) [^ ]*:(\d+)$", line)
            if m:
                ports[m.group(1)] = int(m.group(2))
            m = re.match(r"recovered tick (\d+) agents (\d+) state_hash (0x[0-9a-f]+)(?: from checkpoint (\d+))?", line)
            if m and recovered is None:
                # the checkpoint recovery started from, as the server says (None: a server before it said)
                recovered = (int(m.group(1)), int(m.group(2)), m.group(3),
                             int(m.group(4)) if m.group(4) is not None else None)
                t_recovered = time.monotonic() - t0
        time.sleep(0.01)
    return proc, ports, recovered, t_recovered, time.monotonic() - t0


def wait_metric(port, name, at_least, limit_s=900):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        m = metrics(port)
        if m.get(name, 0) >= at_least:
            return m
        time.sleep(0.05)
    raise RuntimeError("%s never reached %s" % (name, at_least))


def p99_pairs(a, extra):
    """Interleaved server_load.py crowd runs: no persistence vs --fsync everysec."""
    here = os.path.dirname(os.path.abspath(__file__))
    work = a.work or tempfile.mkdtemp(prefix="crowd-storage-p99-")
    os.makedirs(work, exist_ok=True)
    runs = {"none": [], "everysec": []}
    print("storage_bench --p99-pairs %d: load average %.1f before" % (a.p99_pairs, os.getloadavg()[0]), flush=True)
    for i in range(a.p99_pairs):
        for mode in ("none", "everysec"):
            out = os.path.join(work, "%s-%d" % (mode, i))
            shutil.rmtree(out, ignore_errors=True)
            cmd = [sys.executable, os.path.join(here, "server_load.py"), "--server", a.server, "--load", a.load,
                   "--scenarios", "crowd", "--work", out] + extra
            if mode == "everysec":
                cmd += ["--server-arg=--data-dir=" + os.path.join(out, "data"), "--server-arg=--fsync=everysec"]
            with open(out + ".log", "w") as log:
                subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT)
            with open(os.path.join(out, "server_load.json")) as f:
                r = [x for x in json.load(f) if x["scenario"] == "crowd"][0]
            runs[mode].append(r["tick_p99_ms"])
            print("  pair %d %-8s tick p50 %.2f ms p99 %.2f ms, %.1f Hz, journal %.0f bytes/s, load %.1f"
                  % (i + 1, mode, r["tick_p50_ms"], r["tick_p99_ms"], r["tick_hz"] or 0, r.get("journal_bps") or 0,
                     os.getloadavg()[0]), flush=True)
            shutil.rmtree(os.path.join(out, "data"), ignore_errors=True)
    none, every = statistics.median(runs["none"]), statistics.median(runs["everysec"])
    print("tick p99 median: none %.2f ms, everysec %.2f ms, ratio everysec/none %.3f (bar 1.05); "
          "load average %.1f after" % (none, every, every / none, os.getloadavg()[0]))
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--load", help="crowd-load binary (--p99-pairs)")
    p.add_argument("--p99-pairs", type=int, default=0,
                   help="interleaved server_load.py runs: tick p99 without persistence vs --fsync everysec")
    p.add_argument("--server", required=True)
    p.add_argument("--replay", help="crowd-replay binary")
    p.add_argument("--agents", type=int, default=50000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--tick-rate", type=int, default=20)
    p.add_argument("--checkpoint-every", type=int, default=200)
    p.add_argument("--kill-after", type=int, default=100,
                   help="ticks after the second checkpoint written after tick 0's (more than --checkpoint-every: "
                        "later checkpoints come first, and recovery starts at the newest)")
    p.add_argument("--fsync", default="everysec")
    p.add_argument("--work", default=None)
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    a = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if a.p99_pairs:
        return p99_pairs(a, extra)
    if not a.replay:
        p.error("--replay is required")
    work = a.work or tempfile.mkdtemp(prefix="crowd-storage-bench-")
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, "data")
    shutil.rmtree(data, ignore_errors=True)
    load0 = os.getloadavg()
    args = ["--demo", "--demo-agents", str(a.agents), "--max-agents", str(a.agents + 1000), "--workers",
            str(a.workers), "--tick-rate", str(a.tick_rate), "--data-dir", data, "--checkpoint-every",
            str(a.checkpoint_every), "--fsync", a.fsync, "--keep-checkpoints", "3", "--log-level", "warn"]
    proc, ports, _, _, startup = start(a.server, args, os.path.join(work, "first"))
    m1 = wait_metric(ports["http"], "crowd_storage_checkpoints_total", 1)
    t1 = time.monotonic()
    m2 = wait_metric(ports["http"], "crowd_storage_checkpoints_total", 2)
    t2 = time.monotonic()
    ck_tick = int(m2["crowd_tick"] // a.checkpoint_every * a.checkpoint_every)
    m3 = wait_metric(ports["http"], "crowd_tick", ck_tick + a.kill_after)
    t3 = time.monotonic()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    span = t3 - t1
    jbytes = m3["crowd_storage_journal_bytes_total"] - m1["crowd_storage_journal_bytes_total"]
    ticks = m3["crowd_ticks_total"] - m1["crowd_ticks_total"]
    step = (m3["crowd_step_seconds_total"] - m1["crowd_step_seconds_total"]) / ticks * 1e3 if ticks else 0
    print("storage_bench: %d demo agents, %d workers, %d Hz set, fsync %s; load average %.1f before"
          % (a.agents, a.workers, a.tick_rate, a.fsync, load0[0]))
    print("  first start (world made, checkpoint of tick 0 written): %.2f s" % startup)
    print("  checkpoint: %.1f MB, copy at the tick boundary %.1f ms, encode+write+fsync %.0f ms (thread)"
          % (m2["crowd_storage_checkpoint_bytes"] / 1e6, m2["crowd_storage_checkpoint_copy_seconds"] * 1e3,
             m2["crowd_storage_checkpoint_seconds"] * 1e3))
    print("  journal: %.0f bytes/s (%.1f bytes per tick) over %.0f ticks; %.1f ticks/s, ORCA step mean %.1f ms"
          % (jbytes / span, jbytes / ticks if ticks else 0, ticks, ticks / span, step))
    killed_at = int(m3["crowd_tick"])
    proc, ports, rec, t_rec, t_listen = start(a.server, args, os.path.join(work, "second"))
    proc.send_signal(signal.SIGTERM)
    proc.wait()
    if not rec:
        raise RuntimeError("no recovered line")
    # which checkpoint it started from: the server's word (the newest complete one). The
    # checkpoint the kill was counted from (ck_tick) is not it when checkpoints came after it.
    if rec[3] is None:
        raise RuntimeError("the recovered line does not name its checkpoint (an older server?)")
    newest = (killed_at // a.checkpoint_every) * a.checkpoint_every
    print("  recovery: killed at tick >= %d (%d ticks after the checkpoint of tick %d); recovered tick %d "
          "(%d agents) after %.2f s; listening after %.2f s; journal replayed from the checkpoint of tick %d "
          "(%d ticks)%s"
          % (killed_at, a.kill_after, ck_tick, rec[0], rec[1], t_rec, t_listen, rec[3], rec[0] - rec[3],
             "" if rec[3] == newest else "; NOT the newest checkpoint before the kill (%d): see the server's log"
             % newest))
    t0 = time.monotonic()
    out = subprocess.run([a.replay, data, "--workers", str(a.workers)], capture_output=True, text=True)
    dt = time.monotonic() - t0
    print("  crowd-replay of the kept recording: %s in %.2f s (%s)"
          % (out.stdout.strip(), dt, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else ""))
    print("  load average after: %.1f" % os.getloadavg()[0])
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
