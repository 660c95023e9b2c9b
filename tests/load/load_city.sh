#!/usr/bin/env bash
# load_city.sh — crowd-load --trips against a real crowd-server with --map
# city and navigation on: 200 agents (2 connections) on random trips through
# a 300 m city of 40 m blocks and 12 m streets. The run ends when every agent
# has finished 2 trips (--trips-each), or as soon as one trip is more than
# 60 s past its free-walk time (--max-late-trips 0: exit 1); --duration is
# only a guard. Passes when every agent finished its trips and none was late.
# The agents look 3 s ahead at each other and 1 s at the blocks: with the
# server's defaults (10 s and 10 s) a walker that meets another head-on 3 m
# from a block may not step toward the block and backs off instead, and a few
# trips in a thousand end a minute late (tests/bench/city_trips_bench,
# docs/benchmarks.md).
# Usage: load_city.sh CROWD_SERVER CROWD_LOAD WORKDIR
set -euo pipefail
server_bin=$1 load_bin=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"

. "$(dirname "$0")/server_start.sh"
server_start "$dir" "$server_bin" --map city --city-block 40 --city-street 12 --world-bounds -150,-150,150,150 --tick-rate 20 --log-level info

set +e
"$load_bin" --server "127.0.0.1:$port" --connections 2 --agents 100 --trips 40,12 --trip-reach 30 --area none \
	--retarget 0 --ramp-up 0 --time-horizon 3 --time-horizon-obst 1 --trips-each 2 --max-late-trips 0 --duration 600 --max-errors 0 \
	--json "$dir/city.json" --quiet >"$dir/city.out" 2>"$dir/city.err"
rc=$?
set -e
cat "$dir/city.out" "$dir/city.err"
/usr/bin/python3 - "$dir/city.json" <<-'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["trips"]
problems = []
def check(cond, what):
    if not cond:
        problems.append(what)
check(r["agents_spawned"] == 200, "agents spawned %s, expected 200" % r["agents_spawned"])
late = t["late_60s"] + t["open_late_60s"]
check(late == 0, "%d trips more than 60 s past their free-walk time (%d finished, %d still walking)" % (
    late, t["late_60s"], t["open_late_60s"]))
check(t["all_done"], "not every agent finished %d trips" % t["each"])
check(t["finished"] >= 400, "%d trips finished, expected at least 400" % t["finished"])
check(r["errors"]["total"] == 0, "errors %s" % r["errors"])
if problems:
    print("load_city: FAIL: " + "; ".join(problems))
    sys.exit(1)
print("load_city: ok (%d trips, p50 %.1f s, p99 %.1f s, none 60 s late)" % (t["finished"], t["p50_s"], t["p99_s"]))
PY
[ $rc -eq 0 ] || { echo "load_city: FAIL: crowd-load exit $rc"; exit 1; }
