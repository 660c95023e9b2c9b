#!/usr/bin/env bash
# load_worlds.sh — crowd-load --worlds against a real crowd-server: a bad
# --world-prefix is refused in one line; with --worlds 2 the connections are
# spread over two worlds the run creates, and the JSON lists each world with
# its agents, clients and the server's tick lateness. A server that holds one
# world refuses CreateWorld with LIMIT_WORLDS: crowd-load must say so in one
# line; the rest is then skipped (exit 77).
# Usage: load_worlds.sh CROWD_SERVER CROWD_LOAD WORKDIR
set -euo pipefail
server_bin=$1 load_bin=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"

. "$(dirname "$0")/server_start.sh"
server_start "$dir" "$server_bin" --tick-rate 30 --max-worlds 4 --log-level info

set +e
"$load_bin" --server "127.0.0.1:$port" --worlds 2 --world-prefix 'no/slash' >"$dir/prefix.out" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "^crowd-load: --world-prefix: 'no/slash1' is no world name" "$dir/prefix.out" ||
	{ cat "$dir/prefix.out"; echo "load_worlds: FAIL: a bad --world-prefix gave exit $rc"; exit 1; }
echo "load_worlds: ok (a bad --world-prefix is refused)"

# 6 connections x 10 agents over 2 worlds: connections 0 and 1 create load-0 and
# load-1 and join them, 2..5 name their world in Hello.
set +e
"$load_bin" --server "127.0.0.1:$port" --worlds 2 --connections 6 --agents 10 --retarget 0.5 --retarget-count 3 \
	--duration 2 --ramp-up 0.2 --json "$dir/worlds.json" --max-errors 0 --quiet >"$dir/worlds.out" 2>"$dir/worlds.err"
rc=$?
set -e
if grep -q "CreateWorld load-0 refused: LIMIT_WORLDS" "$dir/worlds.err"; then
	[ $rc -eq 2 ] || { echo "load_worlds: FAIL: refused worlds gave exit $rc, not 2"; exit 1; }
	echo "load_worlds: ok (one-world server: $(head -n1 "$dir/worlds.err"))"
	echo "load_worlds: SKIP the multi-world run: this server holds one world (CreateWorld answers LIMIT_WORLDS)"
	exit 77
fi
cat "$dir/worlds.out" "$dir/worlds.err"
[ $rc -eq 0 ] || { echo "load_worlds: FAIL: exit $rc"; exit 1; }
/usr/bin/python3 - "$dir/worlds.json" <<-'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))
w = r["worlds"]
problems = []
def check(cond, what):
    if not cond:
        problems.append(what)
check(w["count"] == 2 and w["ready"] == 2 and w["failed"] == 0, "worlds: %s" % {k: w[k] for k in ("count", "ready", "failed")})
check(w["max_worlds"] == 4, "max_worlds %s, expected 4" % w["max_worlds"])
listed = {x["name"]: x for x in w["listed"]}
for name in ("load-0", "load-1"):
    x = listed.get(name)
    check(x is not None, name + " not listed: %s" % sorted(listed))
    if x:
        check(x["agents"] == 30, "%s holds %s agents, expected 30" % (name, x["agents"]))
        check(x["clients"] == 3, "%s has %s clients, expected 3" % (name, x["clients"]))
        check(math.isfinite(x["lateness_p99_ms"]) and x["lateness_p99_ms"] >= 0, "%s lateness %r" % (name, x["lateness_p99_ms"]))
check(r["agents_spawned"] == 60, "agents spawned %s" % r["agents_spawned"])
check(r["snapshots"]["received"] > 0, "no snapshots")
check(r["errors"]["total"] == 0 and r["connect_failures"] == 0, "errors %s" % r["errors"])
if problems:
    print("load_worlds: FAIL\n  " + "\n  ".join(problems))
    sys.exit(1)
print("load_worlds: ok (2 worlds x 30 agents, lateness p99 %s ms)" % [listed[n]["lateness_p99_ms"] for n in ("load-0", "load-1")])
PY
