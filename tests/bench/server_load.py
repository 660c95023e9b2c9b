#!/usr/bin/env python3
"""server_load.py — the crowd server under load. Starts a real crowd-server,
drives it with crowd-load, and prints one table: agents, clients, tick rate,
tick duration p50/p99, snapshot bytes per agent, request->ack and
command->visible p50/p99, skipped snapshots, server RSS.

A benchmark, not a test: it reports figures and fails only when something does
not run at all. Scenarios (--scenarios, comma separated):
  crowd    N agents of a tests/data/ref random crowd, spawned by C crowd-load
           connections (one compact tile each), each subscribed to a window of
           about 1,000 agents, retargeting some agents every second;
  idle     many connections that only ping now and then (server memory);
  compact  the demo crowd at 30 Hz, one whole-world subscriber: bytes per agent
           per snapshot with delta coding vs every snapshot a keyframe;
  city     N agents on random trips through the server's --map city with
           navigation on (crowd-load --trips): each ARRIVED starts a new trip
           along the agent's street or onto a crossing one; trips finished
           within twice their free-walk time, trip time p50/p99 and trips more
           than 60 s late, all in simulated time (not in the defaults: run it
           with --scenarios city).
Default sizes are the issue's targets (50,000 agents, 200 clients, 20 Hz,
1,000 idle connections); --small runs a tiny version (ctest label `bench`).
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, "..", "data", "ref")
PAGE_KB = 1024


def cpu_s(pid):
    """User + system CPU seconds a process has used so far."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Server:
    """A crowd-server process on free loopback ports; knows its TCP and HTTP ports."""

    def __init__(self, binary, args, log_path, tick_trace=None, start_timeout=20):
        help_text = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
        self.has_http = "--http" in help_text
        # --tick-trace (a newer server): one line per tick with its parts; older ones go without
        self.tick_trace = tick_trace if tick_trace and "--tick-trace" in help_text else None
        if self.tick_trace:
            args = args + ["--tick-trace", self.tick_trace]
        cmd = [binary, "--listen", "127.0.0.1:0"] + args
        if self.has_http:
            cmd += ["--http", "127.0.0.1:0"]
        self.cmd = cmd
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        self.port = self.http_port = None
        deadline = time.time() + start_timeout
        while time.time() < deadline and (self.port is None or (self.has_http and self.http_port is None)):
            if self.proc.poll() is not None:
                raise RuntimeError("crowd-server exited: " + open(log_path).read()[-2000:])
            text = open(log_path).read()
            m = re.search(r"listening tcp 127\.0\.0\.1:(\d+)", text)
            if m:
                self.port = int(m.group(1))
            m = re.search(r"listening http 127\.0\.0\.1:(\d+)", text)
            if m:
                self.http_port = int(m.group(1))
            time.sleep(0.05)
        if self.port is None:
            self.stop()
            raise RuntimeError("crowd-server did not say where it listens: " + open(log_path).read()[-2000:])

    def metrics(self):
        if not self.http_port:
            return None
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.http_port, timeout=5) as r:
                return parse_metrics(r.read().decode())
        except OSError:
            return None

    def rss_kb(self):
        return rss_kb(self.proc.pid)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def parse_metrics(text):
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        try:
            out[name] = float(value)
        except ValueError:
            pass
    return out


def tick_quantiles(m0, m1, qs):
    """Quantiles of tick duration (ms) between two scrapes, from the cumulative
    Prometheus buckets, interpolated linearly inside a bucket (bucket resolution)."""
    if not m0 or not m1:
        return [None for _ in qs]
    buckets = []
    for key, v in m1.items():
        m = re.match(r'crowd_tick_duration_seconds_bucket\{le="([^"]+)"\}', key)
        if m:
            le = math.inf if m.group(1) == "+Inf" else float(m.group(1))
            buckets.append((le, v - m0.get(key, 0.0)))
    buckets.sort()
    if not buckets or buckets[-1][1] <= 0:
        return [None for _ in qs]
    total = buckets[-1][1]
    out = []
    for q in qs:
        rank = q * total
        prev_le, prev_c = 0.0, 0.0
        val = None
        for le, c in buckets:
            if c >= rank:
                if math.isinf(le):
                    val = prev_le * 1000.0  # above the last bound: report the bound (a floor)
                else:
                    frac = (rank - prev_c) / (c - prev_c) if c > prev_c else 1.0
                    val = (prev_le + (le - prev_le) * frac) * 1000.0
                break
            prev_le, prev_c = le, c
        out.append(val)
    return out


SNAPSHOT_SYMBOLS = ("snapshots_send", "orca_agent_tree_query_box", "orca_query_rect", "sift_down", "collect",
                    "world_table_build", "orca_agent_get", "aoi_grid_query", "aoi_grid_build", "select_area",
                    "encode_jobs", "helper_main")


def profile_shares(lines):
    """Self time by part of the server: the ORCA step (engine), snapshots (area
    query, id sort, quantize, delta-encode, buffers), the kernel, the rest."""
    parts = {"ORCA step": 0.0, "snapshots": 0.0, "kernel": 0.0, "other": 0.0}
    for ln in lines:
        fields = ln.split()
        try:
            pct = float(fields[0].rstrip("%"))
        except (ValueError, IndexError):
            continue
        kind, sym = fields[1], fields[2] if len(fields) > 2 else ""
        if kind == "[k]":
            parts["kernel"] += pct
        elif sym.startswith(SNAPSHOT_SYMBOLS) or sym.startswith(("crowd_", "pb_")):
            parts["snapshots"] += pct
        elif sym.startswith("orca_") or sym.endswith("_task") or sym.startswith(("split_node", "lp_", "kd_")):
            parts["ORCA step"] += pct
        else:
            parts["other"] += pct
    return parts


def m0_m1_ticks(samples):
    """The world's tick number at the first and the last /metrics sample of the measured time."""
    if len(samples) < 2 or not samples[0][1] or not samples[-1][1]:
        return None
    t0, t1 = samples[0][1].get("crowd_tick"), samples[-1][1].get("crowd_tick")
    return None if t0 is None or t1 is None else (int(t0), int(t1))


def metric_delta(m0, m1, name):
    if not m0 or not m1 or name not in m1:
        return None
    return m1[name] - m0.get(name, 0.0)


def run_load(load_bin, server, args, json_path, samples, on_measuring=None, nice=0):
    """Run crowd-load; while it measures (progress lines marked 'run'), sample
    the server's /metrics and RSS once per line. on_measuring() is called once,
    at the first such line."""
    cmd = [load_bin, "--server", "127.0.0.1:%d" % server.port, "--json", json_path] + args
    if nice:  # crowd-load below the server on the shared cores (clients are elsewhere in production)
        cmd = ["nice", "-n", str(nice)] + cmd
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err_lines = []

    def watch():
        for line in proc.stderr:
            err_lines.append(line)
            if "] run " in line:
                if not samples and on_measuring:
                    on_measuring()
                samples.append((time.time(), server.metrics(), server.rss_kb(), cpu_s(server.proc.pid),
                                cpu_s(proc.pid)))
            sys.stderr.write("  " + line)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    out = proc.stdout.read()
    proc.wait()
    t.join(timeout=5)
    if proc.returncode not in (0, 1):
        raise RuntimeError("crowd-load failed (%d): %s" % (proc.returncode, "".join(err_lines[-20:])))
    with open(json_path) as f:
        return json.load(f), out


def fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return "%.*f" % (digits, v)
    return str(v)


def crowd_setup(a, work):
    """tests/data/ref's randomN_setup.csv, or one written by
    tests/data/gen_random_setup.py (the same jittered grid, spacing 4) for
    other N; and --world-bounds holding it with a margin when the default
    (-1000..1000) does not."""
    setup = os.path.join(REF, "random%d_setup.csv" % a.agents)
    if not os.path.exists(setup):
        setup = os.path.join(work, "random%d_setup.csv" % a.agents)
        if not os.path.exists(setup):
            subprocess.run([sys.executable, os.path.join(HERE, "..", "data", "gen_random_setup.py"), str(a.agents),
                            setup], check=True)
    lo, hi = math.inf, -math.inf
    with open(setup) as f:
        for line in f:
            if line[:1].isdigit():
                v = [float(x) for x in line.split(",")[1:5]]
                lo, hi = min(lo, *v), max(hi, *v)
    bounds = [] if lo > -1000 and hi < 1000 else ["--world-bounds", "%d,%d,%d,%d" % (
        math.floor(lo) - 100, math.floor(lo) - 100, math.ceil(hi) + 100, math.ceil(hi) + 100)]
    return setup, bounds


TICK_PARTS = ("apply", "wait", "navigation", "step", "table", "handoff", "snapshots", "events")


def percentile(sorted_values, q):
    """Nearest-rank quantile of an ascending list."""
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))]


def tick_trace_stats(path, first_tick, last_tick):
    """From crowd-server's --tick-trace (one line per tick, microseconds): each
    part's p50 / p99 over the ticks in (first_tick, last_tick], and the mean of
    each part over the slowest 1 % of those ticks and over the median ones
    (p40..p60), so the part that grows on slow ticks shows."""
    rows = []
    try:
        with open(path) as f:
            header = f.readline().split()
            for line in f:
                v = line.split()
                if len(v) != len(header):
                    continue
                v = v[:10]  # tick, total and the parts (later columns: what the tick did)
                tick = int(v[0])
                if first_tick is not None and tick <= first_tick:
                    continue
                if last_tick is not None and tick > last_tick:
                    continue
                rows.append([float(x) / 1000.0 for x in v[1:]])
    except (OSError, ValueError):
        return None
    if len(rows) < 10:
        return None
    names = [h[:-3] for h in header[1:10]]  # "total", then the parts
    out = {"ticks": len(rows), "p50": {}, "p99": {}}
    for i, name in enumerate(names):
        col = sorted(r[i] for r in rows)
        out["p50"][name], out["p99"][name] = percentile(col, 0.5), percentile(col, 0.99)
    by_total = sorted(rows, key=lambda r: r[0])
    slow = by_total[-max(1, len(rows) // 100):]
    mid = by_total[int(len(rows) * 0.4):int(len(rows) * 0.6)] or by_total
    out["slow_n"] = len(slow)
    out["slow_mean"] = {n: sum(r[i] for r in slow) / len(slow) for i, n in enumerate(names)}
    out["mid_mean"] = {n: sum(r[i] for r in mid) / len(mid) for i, n in enumerate(names)}
    return out


def scenario_crowd(a, work, server_bin=None, workers=None, nice=0):
    server_bin = server_bin or a.server
    workers = workers or a.workers
    setup, bounds = crowd_setup(a, work)
    scenario_crowd.runs = getattr(scenario_crowd, "runs", 0) + 1
    tag = "" if scenario_crowd.runs == 1 else "-%d" % scenario_crowd.runs
    load_start = os.getloadavg()[0]
    per_conn = math.ceil(a.agents / a.clients)
    # a window holding about --window-agents agents of this crowd (grid spacing 4: 16 units^2 each)
    side = math.sqrt(a.window_agents * 16.0)
    server = Server(server_bin, ["--tick-rate", str(a.tick_rate), "--snapshot-divisor", str(a.divisor),
                                 "--workers", str(workers), "--max-agents", str(a.agents + 1000),
                                 "--max-connections", str(a.clients + 100), "--max-batch", str(max(per_conn, 1000)),
                                 "--log-level", "info"] + bounds + a.server_arg, os.path.join(work, "crowd-server%s.log" % tag),
                    tick_trace=os.path.join(work, "tick-trace%s.txt" % tag))
    perf = []

    def start_perf():
        # where the server's time goes, sampled while crowd-load measures
        if a.perf > 0 and not shutil.which("perf"):
            print("server_load: --perf needs perf (Debian package linux-perf); skipping the profile", file=sys.stderr)
        elif a.perf > 0:
            perf.append(subprocess.Popen(
                ["perf", "record", "-F", "499", "-g", "-p", str(server.proc.pid), "-o",
                 os.path.join(work, "perf%s.data" % tag), "--", "sleep", str(a.perf)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    try:
        rss0 = server.rss_kb()
        samples = []
        r, table = run_load(a.load, server, [
            "--connections", str(a.clients), "--setup", setup, "--local-targets",
            "--area", "%gx%g" % (side, side), "--divisor", str(a.divisor),
            "--retarget", "1", "--retarget-count", "10", "--spawn-batch", str(min(per_conn, 5000)),
            "--duration", str(a.duration), "--ramp-up", str(a.ramp_up)], os.path.join(work, "crowd%s.json" % tag), samples,
            start_perf, nice)
        for proc in perf:
            proc.wait()
    finally:
        server.stop()
    trace = None
    if server.tick_trace and m0_m1_ticks(samples):
        trace = tick_trace_stats(server.tick_trace, *m0_m1_ticks(samples))
    profile = shares = None
    if perf:
        rep_out = subprocess.run(["perf", "report", "--stdio", "--no-children", "--percent-limit", "0", "-i",
                                  os.path.join(work, "perf%s.data" % tag), "--sort", "symbol", "-g", "none"],
                                 capture_output=True, text=True).stdout
        lines = [ln for ln in rep_out.splitlines() if ln.strip() and not ln.startswith("#")]
        profile = [ln for ln in lines if float(ln.split("%")[0]) >= 1.5][:25]
        shares = profile_shares(lines)
    m0 = samples[0][1] if samples else None
    m1 = samples[-1][1] if samples else None
    p50, p99 = tick_quantiles(m0, m1, [0.5, 0.99])
    ticks = metric_delta(m0, m1, "crowd_ticks_total")
    span = samples[-1][0] - samples[0][0] if len(samples) > 1 else None
    step_s = metric_delta(m0, m1, "crowd_step_seconds_total")
    rss = max((s[2] for s in samples if s[2]), default=None)
    agents = r["agents_spawned"]
    parts = {}
    for part in TICK_PARTS:
        d = metric_delta(m0, m1, 'crowd_tick_part_seconds_total{part="%s"}' % part)
        if d is not None and ticks:
            parts[part] = d / ticks * 1000.0
    def cpu_share(i):
        if len(samples) < 2 or samples[0][i] is None or samples[-1][i] is None or not span:
            return None
        return (samples[-1][i] - samples[0][i]) / span
    return {
        "scenario": "crowd", "agents": agents, "clients": a.clients, "server": server_bin, "workers": workers,
        "load_nice": nice,
        "tick_parts_ms": parts or None, "tick_trace": trace,
        "load_avg": (load_start, os.getloadavg()[0]),
        "tick_hz_set": a.tick_rate, "tick_hz": ticks / span if ticks is not None and span else None,
        "tick_p50_ms": p50, "tick_p99_ms": p99,
        "step_mean_ms": step_s / ticks * 1000.0 if step_s is not None and ticks else None,
        "overruns": metric_delta(m0, m1, "crowd_ticks_overrun_total"),
        "snapshot_ways": (metric_delta(m0, m1, 'crowd_snapshot_ticks_total{way="at_once"}'),
                          metric_delta(m0, m1, 'crowd_snapshot_ticks_total{way="pool"}')),
        "snap_hz": r["snapshots"]["hz_per_connection"], "nominal_hz": r["snapshots"].get("nominal_hz"),
        "agents_per_snap": r["snapshots"]["agents_per_snapshot"],
        "bytes_per_agent": r["snapshots"]["bytes_per_agent"],
        "ack_p50": r["latency_ms"]["request_ack"]["p50"], "ack_p99": r["latency_ms"]["request_ack"]["p99"],
        "vis_p50": r["latency_ms"]["command_visible"]["p50"], "vis_p99": r["latency_ms"]["command_visible"]["p99"],
        "snap_p50": r["latency_ms"]["command_snapshot"]["p50"], "snap_p99": r["latency_ms"]["command_snapshot"]["p99"],
        "vis_unseen": r["commands"]["visible_unseen"],
        "skipped": r["snapshots"]["skipped"], "errors": r["errors"]["total"] + r["disconnects"],
        "rss_mb": rss / 1024.0 if rss else None,
        "rss_per_agent_b": (rss - rss0) * 1024.0 / agents if rss and rss0 and agents else None,
        "server_cpu": cpu_share(3), "load_cpu": cpu_share(4),
        "cpu_ms_per_tick": cpu_share(3) * span / ticks * 1000.0 if cpu_share(3) is not None and ticks else None,
        # with --server-arg=--data-dir=DIR (persistence): journal bytes and fsyncs per second
        "journal_bps": (metric_delta(m0, m1, "crowd_storage_journal_bytes_total") or 0) / span
        if span and m0 and "crowd_storage_journal_bytes_total" in m0 else None,
        "fsyncs_per_s": (metric_delta(m0, m1, "crowd_storage_fsyncs_total") or 0) / span
        if span and m0 and "crowd_storage_fsyncs_total" in m0 else None,
        "table": table, "profile": profile, "shares": shares,
    }


def scenario_idle(a, work):
    server = Server(a.server, ["--tick-rate", str(a.tick_rate), "--max-connections", str(a.idle + 100),
                               "--log-level", "warn"] + a.server_arg, os.path.join(work, "idle-server.log"))
    try:
        time.sleep(0.5)
        rss0 = server.rss_kb()
        samples = []
        r, table = run_load(a.load, server, [
            "--connections", str(a.idle), "--agents", "0", "--area", "none", "--retarget", "0", "--ping", "5",
            "--duration", str(max(5.0, a.duration / 2)), "--ramp-up", str(a.ramp_up)],
            os.path.join(work, "idle.json"), samples)
    finally:
        server.stop()
    rss = max((s[2] for s in samples if s[2]), default=None)
    m1 = samples[-1][1] if samples else None
    return {
        "scenario": "idle", "agents": 0, "clients": r["connections_running"], "tick_hz_set": a.tick_rate,
        "ack_p50": r["latency_ms"]["request_ack"]["p50"], "ack_p99": r["latency_ms"]["request_ack"]["p99"],
        "errors": r["errors"]["total"] + r["disconnects"] + r["connect_failures"],
        "rss_mb": rss / 1024.0 if rss else None,
        "rss_per_conn_kb": (rss - rss0) / max(1, r["connections_running"]) if rss and rss0 else None,
        "connections_metric": sum(v for k, v in (m1 or {}).items() if k.startswith("crowd_connections{")) or None,
        "table": table,
    }


def scenario_compact(a, work):
    out = {}
    for label, extra in (("delta", []), ("keyframes", ["--keyframe-interval", "1"])):
        server = Server(a.server, ["--demo", "--tick-rate", "30", "--log-level", "warn"] + extra + a.server_arg,
                        os.path.join(work, "compact-%s.log" % label))
        try:
            samples = []
            r, _ = run_load(a.load, server, [
                "--connections", "1", "--agents", "0", "--area", "world", "--divisor", "1", "--retarget", "0",
                "--duration", str(a.compact_duration), "--ramp-up", "0", "--quiet"],
                os.path.join(work, "compact-%s.json" % label), samples)
        finally:
            server.stop()
        out[label] = r["snapshots"]
    return {"scenario": "compact", "agents_per_snap": out["delta"]["agents_per_snapshot"],
            "bytes_per_agent": out["delta"]["bytes_per_agent"],
            "keyframe_bytes_per_agent": out["keyframes"]["bytes_per_agent"],
            "snap_hz": out["delta"]["hz_per_connection"], "raw_bytes_per_agent": 20.0}


def city_bounds(agents):
    """A square city with about 80 m^2 of ground (streets and blocks) per agent:
    the default 2,000 m world for 50,000 agents; never under 300 m."""
    half = max(150.0, math.ceil(math.sqrt(agents * 80.0) / 2.0))
    return ["--world-bounds", "%g,%g,%g,%g" % (-half, -half, half, half)], half


def scenario_city(a, work):
    agents, clients, duration, reach = a.agents, a.clients, a.duration, a.trip_reach
    if a.small:  # long enough for a first trip, then timed ones, to finish
        agents, clients, duration, reach = 300, 4, 20, 25
    per_conn = math.ceil(agents / clients)
    bounds, half = city_bounds(agents)
    load_start = os.getloadavg()[0]
    server = Server(a.server, ["--map", "city", "--city-block", str(a.city_block), "--city-street", str(a.city_street),
                               "--tick-rate", str(a.tick_rate), "--workers", str(a.workers),
                               "--max-agents", str(agents + 1000), "--max-connections", str(clients + 100),
                               "--max-batch", str(max(per_conn, 1000)), "--log-level", "info"] + bounds + a.server_arg,
                    os.path.join(work, "city-server.log"), start_timeout=300)  # the mesh of a big city takes a while
    try:
        samples = []
        r, table = run_load(a.load, server, [
            "--connections", str(clients), "--agents", str(per_conn), "--trips", "%g,%g" % (a.city_block, a.city_street),
            "--trip-reach", str(reach), "--area", "none", "--retarget", "0",
            "--spawn-batch", str(min(per_conn, 5000)), "--duration", str(duration), "--ramp-up", str(a.ramp_up)]
            + a.load_arg,
            os.path.join(work, "city.json"), samples)
    finally:
        server.stop()
    m0 = samples[0][1] if samples else None
    m1 = samples[-1][1] if samples else None
    ticks = metric_delta(m0, m1, "crowd_ticks_total")
    span = samples[-1][0] - samples[0][0] if len(samples) > 1 else None
    p50, p99 = tick_quantiles(m0, m1, [0.5, 0.99])
    t = r.get("trips", {})
    finished, opened = t.get("finished", 0), t.get("open", 0)
    late = t.get("late_60s", 0) + t.get("open_late_60s", 0)
    return {
        "scenario": "city", "agents": r["agents_spawned"], "clients": clients, "tick_hz_set": a.tick_rate,
        "tick_hz": ticks / span if ticks is not None and span else None, "tick_p50_ms": p50, "tick_p99_ms": p99,
        "world_m": 2 * half, "block": a.city_block, "street": a.city_street, "reach": reach,
        "workers": a.workers, "load_avg": (load_start, os.getloadavg()[0]), "measured_s": r["measured_s"],
        "sim_s": ticks / a.tick_rate if ticks is not None else None,
        "trips": finished, "within_2x": t.get("within_2x", 0) / finished if finished else None,
        "trip_p50_s": t.get("p50_s"), "trip_p99_s": t.get("p99_s"), "free_mean_s": t.get("free_walk_mean_s"),
        "late": late, "late_share": late / (finished + opened) if finished + opened else None, "open": opened,
        "unreachable": r["navigation"]["unreachable"], "stuck_events": r["navigation"]["stuck"],
        "errors": r["errors"]["total"] + r["disconnects"], "table": table,
    }


def trace_row(r, key):
    t = r.get("tick_trace")
    if not t:
        return "- (the server has no --tick-trace)"
    row = ", ".join("%s %.2f" % (k, v) for k, v in t[key].items())
    return row + (" (%d ticks)" % t["slow_n"] if key == "slow_mean" else "")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server", required=True, help="crowd-server binary (a Release build); for crowd, a comma "
                   "separated list runs each in turn (A/B comparisons in one window)")
    p.add_argument("--load", required=True, help="crowd-load binary")
    p.add_argument("--work", default="server_load.out", help="directory for logs and JSON")
    p.add_argument("--scenarios", default="crowd,idle,compact")
    p.add_argument("--small", action="store_true", help="tiny sizes, for ctest")
    p.add_argument("--agents", type=int, default=50000, help="1000, 10000 or 50000 use tests/data/ref's set-ups; any "
                   "other N one written by tests/data/gen_random_setup.py (e.g. 100000: the 1,268 square)")
    p.add_argument("--clients", type=int, default=200)
    p.add_argument("--window-agents", type=int, default=1000)
    p.add_argument("--tick-rate", type=int, default=20)
    p.add_argument("--divisor", type=int, default=2)
    p.add_argument("--workers", default="2", help="step workers; for crowd, a comma separated list runs each in turn")
    p.add_argument("--load-nice", default="0", help="crowd: run crowd-load under `nice -n N` (the server's 200 "
                   "clients are on other machines in production; here they share its cores); a comma separated "
                   "list runs each in turn, like --workers")
    p.add_argument("--rounds", type=int, default=1, help="crowd: run every (server, workers) pair this many times, "
                   "interleaved (A B A B ...)")
    p.add_argument("--idle", type=int, default=1000)
    p.add_argument("--duration", type=float, default=30)
    p.add_argument("--ramp-up", type=float, default=10)
    p.add_argument("--compact-duration", type=float, default=10)
    p.add_argument("--city-block", type=float, default=40, help="city: side of a block (m)")
    p.add_argument("--city-street", type=float, default=12, help="city: width of a street (m)")
    p.add_argument("--trip-reach", type=float, default=50, help="city: a trip ends at most this far away along each axis")
    p.add_argument("--perf", type=float, default=0, help="profile the server with perf for this many seconds")
    p.add_argument("--server-arg", action="append", default=[], help="extra crowd-server flag (repeatable)")
    p.add_argument("--load-arg", action="append", default=[], help="city: extra crowd-load flag (repeatable), e.g. "
                   "--load-arg=--time-horizon=3 --load-arg=--time-horizon-obst=1")
    a = p.parse_args()
    if a.small:
        a.agents, a.clients, a.window_agents, a.idle = 1000, 10, 200, 50
        a.duration, a.ramp_up, a.compact_duration = 3, 0.5, 2
    os.makedirs(a.work, exist_ok=True)
    load_before = os.getloadavg()
    servers = a.server.split(",")
    worker_counts = [int(x) for x in a.workers.split(",")]
    nices = [int(x) for x in a.load_nice.split(",")]
    a.server, a.workers = servers[0], worker_counts[0]
    results = []
    for name in a.scenarios.split(","):
        if name == "crowd":
            for rnd in range(a.rounds):
                for srv in servers:
                    for wk in worker_counts:
                        for nice in nices:
                            print("== crowd: %s, %d worker(s), crowd-load nice %d, round %d" % (srv, wk, nice, rnd + 1),
                                  file=sys.stderr, flush=True)
                            results.append(scenario_crowd(a, a.work, srv, wk, nice))
            continue
        fn = {"idle": scenario_idle, "compact": scenario_compact, "city": scenario_city}[name]
        print("== %s" % name, file=sys.stderr, flush=True)
        results.append(fn(a, a.work))

    print("\nserver_load on %s (%d cores); crowd-server and crowd-load on the same machine; "
          "load average %.1f before, %.1f after (other work on the machine competes)" %
          (os.uname().nodename, os.cpu_count(), load_before[0], os.getloadavg()[0]))
    for r in results:
        if r["scenario"] == "crowd":
            print("\ncrowd: %d agents, %d clients, tick %d Hz set / %s Hz run, snapshots %.1f Hz per client "
                  "(nominal %s) of %.0f agents; %s, %d worker(s)%s" % (
                      r["agents"], r["clients"], r["tick_hz_set"], fmt(r["tick_hz"]), r["snap_hz"],
                      fmt(r["nominal_hz"]), r["agents_per_snap"], os.path.basename(r["server"]), r["workers"],
                      ", crowd-load nice %d" % r["load_nice"] if r.get("load_nice") else ""))
            print("  load average %.1f at the start, %.1f at the end" % r["load_avg"])
            rows = [("tick duration p50 / p99 (ms)", "%s / %s" % (fmt(r["tick_p50_ms"]), fmt(r["tick_p99_ms"]))),
                    ("ORCA step mean (ms)", fmt(r["step_mean_ms"])),
                    ("server CPU per tick (ms)", fmt(r["cpu_ms_per_tick"])),
                    ("ticks overrun (in the measured time)", fmt(r["overruns"], 0)),
                    ("tick parts, ms per tick (wall)", ", ".join("%s %.2f" % kv for kv in r["tick_parts_ms"].items())
                     if r.get("tick_parts_ms") else "-"),
                    ("tick parts p50 (ms, --tick-trace)", trace_row(r, "p50")),
                    ("tick parts p99 (ms, each part alone)", trace_row(r, "p99")),
                    ("slowest 1% of ticks, mean parts (ms)", trace_row(r, "slow_mean")),
                    ("ticks whose snapshots went at once / on the pool", "%s / %s" % (
                        fmt(r["snapshot_ways"][0], 0), fmt(r["snapshot_ways"][1], 0))),
                    ("median ticks (p40-p60), mean parts (ms)", trace_row(r, "mid_mean")),
                    ("snapshot bytes per agent", fmt(r["bytes_per_agent"], 2)),
                    ("request->ack p50 / p99 (ms)", "%s / %s" % (fmt(r["ack_p50"], 2), fmt(r["ack_p99"], 2))),
                    ("command->next snapshot p50 / p99 (ms)", "%s / %s" % (fmt(r["snap_p50"]), fmt(r["snap_p99"]))),
                    ("command->visible p50 / p99 (ms)", "%s / %s" % (fmt(r["vis_p50"]), fmt(r["vis_p99"]))),
                    ("retargets never seen turning", fmt(r["vis_unseen"], 0)),
                    ("skipped snapshots", fmt(r["skipped"], 0)),
                    ("journal bytes/s; fsyncs/s (--data-dir)", "%s; %s" % (fmt(r["journal_bps"], 0),
                                                                         fmt(r["fsyncs_per_s"], 1))),
                    ("errors + disconnects", fmt(r["errors"], 0)),
                    ("CPU cores busy: crowd-server / crowd-load", "%s / %s" % (fmt(r["server_cpu"], 2), fmt(r["load_cpu"], 2))),
                    ("server CPU time per tick (ms, all threads)", fmt(r["cpu_ms_per_tick"])),
                    ("server RSS (MB) / per agent (bytes)", "%s / %s" % (fmt(r["rss_mb"]), fmt(r["rss_per_agent_b"], 0)))]
        elif r["scenario"] == "city":
            print("\ncity: %d agents on trips through a %g m city (blocks %g m, streets %g m, trips within %g m), "
                  "%d clients, tick %d Hz set / %s Hz run, %d worker(s)" % (
                      r["agents"], r["world_m"], r["block"], r["street"], r["reach"], r["clients"], r["tick_hz_set"],
                      fmt(r["tick_hz"]), r["workers"]))
            print("  load average %.1f at the start, %.1f at the end" % r["load_avg"])
            rows = [("tick duration p50 / p99 (ms)", "%s / %s" % (fmt(r["tick_p50_ms"]), fmt(r["tick_p99_ms"]))),
                    ("measured: wall s / simulated s", "%s / %s" % (fmt(r["measured_s"]), fmt(r["sim_s"]))),
                    ("trips finished (timed)", fmt(r["trips"], 0)),
                    ("... within 2x free-walk time", "%s%%" % fmt(100.0 * r["within_2x"], 1) if r["within_2x"] is not None else "-"),
                    ("trip time p50 / p99 (s, simulated)", "%s / %s" % (fmt(r["trip_p50_s"]), fmt(r["trip_p99_s"]))),
                    ("free-walk time mean (s)", fmt(r["free_mean_s"])),
                    ("trips > 60 s late (finished + open)", "%d = %s%% of %d" % (
                        r["late"], fmt(100.0 * r["late_share"], 2) if r["late_share"] is not None else "-",
                        r["trips"] + r["open"])),
                    ("unreachable / STUCK events", "%d / %d" % (r["unreachable"], r["stuck_events"])),
                    ("errors + disconnects", fmt(r["errors"], 0))]
        elif r["scenario"] == "idle":
            print("\nidle: %d connections (ping every 5 s), tick %d Hz" % (r["clients"], r["tick_hz_set"]))
            rows = [("server RSS (MB)", fmt(r["rss_mb"])),
                    ("RSS per connection (KB)", fmt(r["rss_per_conn_kb"])),
                    ("ping->pong p50 / p99 (ms)", "%s / %s" % (fmt(r["ack_p50"], 2), fmt(r["ack_p99"], 2))),
                    ("errors + disconnects", fmt(r["errors"], 0))]
        else:
            print("\ncompact: demo crowd at 30 Hz, %.0f agents per snapshot, %.1f snapshots/s"
                  % (r["agents_per_snap"], r["snap_hz"]))
            rows = [("bytes per agent per snapshot, delta-coded", fmt(r["bytes_per_agent"], 2)),
                    ("... every snapshot a keyframe", fmt(r["keyframe_bytes_per_agent"], 2)),
                    ("... raw floats (id + 4 x float32)", fmt(r["raw_bytes_per_agent"], 0))]
        for k, v in rows:
            print("  %-40s %s" % (k, v))
        if r.get("shares"):
            print("  server CPU by part (perf self time): " +
                  ", ".join("%s %.0f%%" % (k, v) for k, v in r["shares"].items()))
        if r.get("profile"):
            print("  server profile (perf, self time):")
            for ln in r["profile"]:
                print("    " + ln.strip())
    with open(os.path.join(a.work, "server_load.json"), "w") as f:
        json.dump([{k: v for k, v in r.items() if k not in ("table", "profile")} for r in results], f, indent=1)
    for r in results:  # the city's trips must finish: a city where none does is not running
        if r["scenario"] == "city" and (not r["trips"] or r["errors"]):
            print("server_load: city: %d trips finished, %d errors" % (r["trips"], r["errors"]), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
