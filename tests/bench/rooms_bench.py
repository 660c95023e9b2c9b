#!/usr/bin/env python3
"""rooms_bench.py — many worlds in one crowd-server. Starts a real server and
prints one table:

  memory   RSS per empty world (W worlds opened with crowdctl, then closed),
           and per agent (A agents spawned into one world);
  rooms    W worlds x N agents (navigation on; crowd-load --worlds spreads C
           connections and their agents over them, each subscribed to a window
           at every tick, retargeting every second): every world's tick
           lateness p99 (the server's crowd_world_tick_lateness_p99_seconds,
           over its last 1,024 ticks) and missed ticks (overruns and skipped
           periods, counted between two scrapes of /metrics);
  heavy    the same while one more world grows to B agents walking to a point:
           the other worlds' lateness p99 and missed ticks, and the big world's
           own (it may slow itself: its lateness and overruns say so).

A benchmark, not a test: it reports what it saw and fails only when something
does not run. --small runs a tiny version (ctest label `bench`); --quick skips
the memory phase; --server OLD,NEW --rounds N alternates builds (interleaved
pairs). The machine's load average, the server's CPU and its CPU per world tick
are printed beside the figures: compare only neighbouring runs.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_load import Server, cpu_s  # noqa: E402

LATE = "crowd_world_tick_lateness_p99_seconds"


def world_series(m, name):
    """{world: value} of one crowd_world_* series."""
    out = {}
    for key, v in (m or {}).items():
        mm = re.match(name + r'\{world="([^"]+)"\}$', key)
        if mm:
            out[mm.group(1)] = v
    return out


def missed(m0, m1, world):
    """Overruns plus periods skipped by `world` between two scrapes."""
    total = 0.0
    for name in ("crowd_world_ticks_overrun_total", "crowd_world_tick_periods_skipped_total"):
        total += world_series(m1, name).get(world, 0.0) - world_series(m0, name).get(world, 0.0)
    return int(total)


def ctl(a, server, *args, check=True):
    cmd = [a.crowdctl, "--server", "127.0.0.1:%d" % server.port, "--timeout", "60000"] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s%s" % (" ".join(args), r.stdout, r.stderr))
    return r.stdout


def wait_for(pred, guard_s, what):
    deadline = time.time() + guard_s
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.2)
    raise RuntimeError("gave up waiting for " + what)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def server_args(a, worlds):
    return ["--tick-rate", str(a.tick_rate), "--world-bounds", a.bounds, "--max-worlds", str(worlds + 8),
            "--max-connections", str(a.connections + 100), "--max-pending-per-peer", str(a.connections + 100),
            "--max-agents", str(max(a.big_agents, 100000)), "--world-idle-seconds", "3600",
            "--max-agents-per-connection", str(max(a.big_agents, a.memory_agents)),
            "--neighbor-budget", str(64 * max(a.big_agents, a.memory_agents)),
            "--log-level", "warn"] + (a.server_args.split() if a.server_args else [])


def measure_memory(a, work):
    """RSS per empty world, and per agent in one world."""
    srv = Server(a.server, server_args(a, a.empty_worlds), os.path.join(work, "memory.log"))
    try:
        ctl(a, srv, "ping")
        rss0 = srv.rss_kb()
        for i in range(a.empty_worlds):
            ctl(a, srv, "world", "create", "empty-%d" % i)
        wait_for(lambda: (srv.metrics() or {}).get("crowd_worlds", 0) >= a.empty_worlds + 1, 120, "empty worlds")
        rss1 = srv.rss_kb()
        ctl(a, srv, "world", "create", "agents", "--bounds", a.big_bounds)
        rss2 = srv.rss_kb()
        ctl(a, srv, "--world", "agents", "spawn", "--count", str(a.memory_agents), "--area", a.big_area,
            "--batch", "1000")
        wait_for(lambda: world_series(srv.metrics(), "crowd_world_agents").get("agents", 0) >= a.memory_agents,
                 120, "agents")
        rss3 = srv.rss_kb()
        return {"rss_start_kb": rss0, "kb_per_empty_world": (rss1 - rss0) / a.empty_worlds,
                "kb_per_agent": (rss3 - rss2) / a.memory_agents, "empty_worlds": a.empty_worlds,
                "agents": a.memory_agents}
    finally:
        srv.stop()


def summarize(m0, m1, worlds):
    late = world_series(m1, LATE)
    lat = [late.get(w, 0.0) * 1e3 for w in worlds]
    miss = [missed(m0, m1, w) for w in worlds]
    t0, t1 = world_series(m0, "crowd_world_ticks_total"), world_series(m1, "crowd_world_ticks_total")
    return {"worlds": len(worlds), "ticks": int(sum(t1.get(w, 0) - t0.get(w, 0) for w in worlds)),
            "lateness_p99_ms_max": max(lat) if lat else None,
            "lateness_p99_ms_mean": sum(lat) / len(lat) if lat else None,
            "worlds_with_missed_ticks": sum(1 for x in miss if x), "missed_ticks": sum(miss)}


def run_rooms(a, work):
    """W worlds under crowd-load; then one more world grows to B agents."""
    srv = Server(a.server, server_args(a, a.worlds), os.path.join(work, "rooms.log"))
    result = {}
    try:
        prefix = "r-"
        load_json = os.path.join(work, "load.json")
        # stopped at the end: a busy machine makes the spawns slow, and crowd-load must not leave early
        duration = 24 * 3600
        load = subprocess.Popen(
            (["nice", "-n", str(a.load_nice)] if a.load_nice else []) + [a.load, "--server", "127.0.0.1:%d" % srv.port, "--worlds", str(a.worlds), "--world-prefix", prefix,
             "--connections", str(a.connections), "--agents", str(a.agents * a.worlds // a.connections),
             "--retarget", "1", "--retarget-count", "5", "--area", a.area, "--divisor", "1",
             "--ramp-up", str(a.ramp), "--duration", str(duration), "--quiet", "--json", load_json],
            stdout=open(os.path.join(work, "load.out"), "w"), stderr=subprocess.STDOUT)
        names = ["%s%d" % (prefix, i) for i in range(a.worlds)]
        total = a.agents * a.worlds
        wait_for(lambda: sum(world_series(srv.metrics(), "crowd_world_agents").get(n, 0) for n in names) >= total,
                 a.ramp + 300, "%d agents in %d worlds" % (total, a.worlds))
        time.sleep(a.settle)  # the lateness window (1,024 ticks) fills with the loaded state
        m0 = srv.metrics()
        c0 = cpu_s(srv.proc.pid)
        time.sleep(a.measure)
        m1 = srv.metrics()
        c1 = cpu_s(srv.proc.pid)
        result["rooms"] = summarize(m0, m1, names)
        result["rooms"]["seconds"] = a.measure
        result["rooms"]["server_cpu"] = (c1 - c0) / a.measure if c0 is not None and c1 is not None else None
        # CPU per world tick: what a shared machine's contention changes least
        result["rooms"]["cpu_ms_per_tick"] = ((c1 - c0) * 1e3 / result["rooms"]["ticks"]
                                              if c0 is not None and c1 is not None and result["rooms"]["ticks"]
                                              else None)
        result["rooms"]["load_average"] = loadavg()
        result["rooms"]["rss_kb"] = srv.rss_kb()

        if not a.no_big:
            run_big(a, srv, names, result)
    finally:
        if "load" in locals() and load.poll() is None:
            load.terminate()
            try:
                load.wait(timeout=60)
            except subprocess.TimeoutExpired:
                load.kill()
        srv.stop()
    try:
        with open(load_json) as f:
            lj = json.load(f)
        result["load"] = {k: lj.get(k) for k in ("connections_ok", "errors", "disconnects", "snapshots")}
    except (OSError, ValueError):
        result["load"] = None
    return result


def run_big(a, srv, names, result):
    """One more world grows to B agents beside the W worlds."""
    ctl(a, srv, "world", "create", "big", "--bounds", a.big_bounds, "--navigation")
    t0 = time.time()
    ctl(a, srv, "--world", "big", "spawn", "--count", str(a.big_agents), "--area", a.big_area, "--target",
        "0,0", "--batch", "1000")
    wait_for(lambda: world_series(srv.metrics(), "crowd_world_agents").get("big", 0) >= a.big_agents, 300,
             "the big world's agents")
    result["big_spawn_seconds"] = time.time() - t0
    time.sleep(a.big_settle)
    m2 = srv.metrics()
    time.sleep(a.measure)
    m3 = srv.metrics()
    result["heavy"] = summarize(m2, m3, names)
    result["heavy"]["load_average"] = loadavg()
    result["heavy"]["rss_kb"] = srv.rss_kb()
    result["big"] = {"lateness_p99_ms": world_series(m3, LATE).get("big", 0.0) * 1e3,
                     "missed_ticks": missed(m2, m3, "big"),
                     "ticks": world_series(m3, "crowd_world_ticks_total").get("big", 0)
                     - world_series(m2, "crowd_world_ticks_total").get("big", 0),
                     "seconds": a.measure}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server", required=True, help="crowd-server; several, comma-separated, alternate (pairs)")
    p.add_argument("--crowdctl", required=True)
    p.add_argument("--load", required=True, help="crowd-load with --worlds")
    p.add_argument("--work", default="rooms_bench_work")
    p.add_argument("--small", action="store_true", help="a tiny run (ctest)")
    p.add_argument("--worlds", type=int, default=200)
    p.add_argument("--agents", type=int, default=250, help="agents per world")
    p.add_argument("--connections", type=int, default=1000)
    p.add_argument("--tick-rate", type=int, default=20)
    p.add_argument("--bounds", default="-60,-60,60,60", help="every world's bounds (--world-bounds)")
    p.add_argument("--area", default="30x30", help="each connection's window")
    p.add_argument("--big-agents", type=int, default=50000)
    p.add_argument("--big-bounds", default="-400,-400,400,400")
    p.add_argument("--big-area", default="-300,-300,300,300")
    p.add_argument("--empty-worlds", type=int, default=100)
    p.add_argument("--memory-agents", type=int, default=50000)
    p.add_argument("--ramp", type=float, default=20)
    p.add_argument("--settle", type=float, default=52, help="seconds before measuring (1,024 ticks at 20 Hz)")
    p.add_argument("--big-settle", type=float, default=52)
    p.add_argument("--measure", type=float, default=20)
    p.add_argument("--server-args", default="", help="more crowd-server arguments, e.g. '--heavy-world-nice 0'")
    p.add_argument("--no-memory", action="store_true", help="skip the memory phase")
    p.add_argument("--quick", action="store_true", help="the 200 worlds and the big world only (no memory phase)")
    p.add_argument("--rounds", type=int, default=1, help="run each --server this many times, alternating")
    p.add_argument("--no-big", action="store_true", help="skip the big world")
    p.add_argument("--load-nice", type=int, default=0,
                   help="run crowd-load at this nice value (the players are not on the server's machine in a game)")
    p.add_argument("--json")
    a = p.parse_args()
    help_text = subprocess.run([a.load, "--help"], capture_output=True, text=True).stdout
    if "--worlds" not in help_text:
        print("rooms_bench: %s has no --worlds: skipped" % a.load)
        return 77
    if a.small:
        a.worlds, a.agents, a.connections, a.big_agents = 4, 20, 8, 500
        a.empty_worlds, a.memory_agents, a.ramp, a.settle, a.big_settle, a.measure = 4, 500, 1, 1, 1, 2
        a.big_bounds, a.big_area = "-60,-60,60,60", "-50,-50,50,50"
    if a.quick:
        a.no_memory = True
    servers = a.server.split(",")
    if os.path.exists(a.work):
        shutil.rmtree(a.work)
    os.makedirs(a.work)
    print("rooms_bench: %d worlds x %d agents (navigation on), %d connections at %d Hz; cpus %d"
          % (a.worlds, a.agents, a.connections, a.tick_rate, os.cpu_count()), flush=True)
    print("| server | phase | lateness p99 max / mean (ms) | worlds with missed ticks | missed ticks | "
          "ticks done | server CPU (cores; ms per tick) | load average |")
    print("|---|---|---|---|---|---|---|---|", flush=True)
    runs = []
    for rnd in range(a.rounds):
        for server in servers:  # the builds alternate: compare only neighbouring runs
            a.server = server
            work = os.path.join(a.work, "%d-%d" % (rnd, servers.index(server)))
            os.makedirs(work)
            res = run_rooms(a, work)
            res["server"] = server
            runs.append(res)
            r = res["rooms"]
            print("| %s | %d worlds, %d s | %.2f / %.2f | %d | %d | %d of %d | %.2f; %.3f | %s |" % (
                server, a.worlds, a.measure, r["lateness_p99_ms_max"], r["lateness_p99_ms_mean"],
                r["worlds_with_missed_ticks"], r["missed_ticks"], r["ticks"], int(a.worlds * a.measure * a.tick_rate),
                r["server_cpu"] or 0, r["cpu_ms_per_tick"] or 0, r["load_average"]), flush=True)
            if "heavy" in res:
                h, b = res["heavy"], res["big"]
                print("| %s | + big world of %d agents, %d s | %.2f / %.2f | %d | %d | %d of %d | | %s |" % (
                    server, a.big_agents, a.measure, h["lateness_p99_ms_max"], h["lateness_p99_ms_mean"],
                    h["worlds_with_missed_ticks"], h["missed_ticks"], h["ticks"],
                    int(a.worlds * a.measure * a.tick_rate), h["load_average"]), flush=True)
                print("big world: lateness p99 %.1f ms, %d missed ticks, %d ticks in %d s (spawned in %.1f s)" % (
                    b["lateness_p99_ms"], b["missed_ticks"], b["ticks"], b["seconds"], res["big_spawn_seconds"]),
                    flush=True)
            print("server RSS %d KiB loaded" % r["rss_kb"], flush=True)
    mem = None
    if not a.no_memory:
        a.server = servers[-1]
        mem = measure_memory(a, a.work)
        print("memory: %.0f KiB per empty world (%d worlds), %.2f KiB per agent (%d agents in one world)" % (
            mem["kb_per_empty_world"], mem["empty_worlds"], mem["kb_per_agent"], mem["agents"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": runs, "memory": mem}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
