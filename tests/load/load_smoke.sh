#!/usr/bin/env bash
# load_smoke.sh — crowd-load against a small real crowd-server for a few
# seconds, over TCP and then over WebSocket; its --json figures must be sane:
# snapshots received, every request answered, no errors or disconnects,
# latencies finite. Then what it says when no connection can run: the HTTP
# port spoken to as TCP, and a closed port (the server's, once it has exited):
# one line saying why, no table of zeros, a non-zero exit.
# Usage: load_smoke.sh CROWD_SERVER CROWD_LOAD WORKDIR
set -euo pipefail
server_bin=$1 load_bin=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"

. "$(dirname "$0")/server_start.sh"
server_start "$dir" "$server_bin" --tick-rate 30 --log-level info

# 4 connections x 25 agents, each watching a 60x60 window around its own
# agents, retargeting 5 agents twice a second, snapshots at 15 Hz.
for transport in tcp ws; do
	# over TCP, --server is a list whose first address refuses (nothing listens on port 1): skipped
	if [ $transport = tcp ]; then args=(--server "127.0.0.1:1,127.0.0.1:$port"); else args=(--ws --server "127.0.0.1:$http_port"); fi
	echo "== crowd-load over $transport"
	"$load_bin" "${args[@]}" --connections 4 --agents 25 --area 60x60 --divisor 2 \
		--retarget 0.5 --retarget-count 5 --ping 1 --duration 3 --ramp-up 0.2 \
		--json "$dir/load-$transport.json" --max-errors 0 --quiet | tee "$dir/load-$transport.txt"
	/usr/bin/python3 - "$dir/load-$transport.json" $transport <<-'PY'
	import json, math, sys
	r = json.load(open(sys.argv[1]))
	problems = []
	def check(cond, what):
	    if not cond:
	        problems.append(what)
	check(r["snapshots"]["received"] > 0, "no snapshots received")
	check(r["snapshots"]["agents_per_snapshot"] > 0, "snapshots carried no agents")
	check(0 < r["snapshots"]["bytes_per_agent"] < 64, "bytes per agent out of range")
	check(r["agents_spawned"] == 100, "expected 100 agents spawned, got %s" % r["agents_spawned"])
	check(r["connections_running"] == 4, "not every connection was running at the end")
	check(r["errors"]["total"] == 0, "errors: %s" % r["errors"])
	check(r["disconnects"] == 0 and r["connect_failures"] == 0, "disconnects or failed connects")
	check(r["decode_failures"] == 0, "snapshots that did not decode")
	check(r["commands"]["requests"] > 0 and r["commands"]["answered"] == r["commands"]["requests"],
	      "requests not all answered: %s" % r["commands"])
	check(r["commands"]["set_targets"] > 0, "no SetTargets sent")
	for name in ("request_ack", "command_snapshot", "command_visible", "snapshot_interval"):
	    h = r["latency_ms"][name]
	    check(h["count"] > 0, name + ": no samples")
	    for k in ("p50", "p90", "p99", "p99_9", "max", "mean"):
	        v = h[k]
	        check(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0, "%s.%s = %r" % (name, k, v))
	    check(h["p50"] <= h["p99"] <= h["max"], name + ": percentiles out of order")
	check(r["thresholds"]["passed"], "thresholds failed")
	if problems:
	    print("load_smoke: FAIL\n  " + "\n  ".join(problems))
	    sys.exit(1)
	print("load_smoke: ok over %s (%d snapshots, ack p99 %.2f ms, visible p99 %.1f ms)" % (
	    sys.argv[2], r["snapshots"]["received"], r["latency_ms"]["request_ack"]["p99"], r["latency_ms"]["command_visible"]["p99"]))
	PY
done

# The gate: an impossible --max-p99-ms must make crowd-load exit 1 and say so in its JSON.
echo "== crowd-load with an impossible threshold"
set +e
"$load_bin" --server "127.0.0.1:$port" --connections 1 --agents 5 --retarget 0.2 --duration 1 --ramp-up 0 \
	--max-p99-ms 0 --json "$dir/gate.json" --quiet >"$dir/gate.txt" 2>&1
gate_rc=$?
set -e
[ $gate_rc -eq 1 ] || { cat "$dir/gate.txt"; echo "load_smoke: FAIL: --max-p99-ms 0 gave exit $gate_rc, not 1"; exit 1; }
/usr/bin/python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["thresholds"]["passed"] is False else 1)' \
	"$dir/gate.json" || { echo "load_smoke: FAIL: the JSON does not record the failed threshold"; exit 1; }
echo "load_smoke: ok (the threshold gate fails a run as it should)"

# No connection can run: crowd-load says why in one line, prints no table, exits non-zero.
expect_no_run() { # WHAT EXPECTED-STDERR-LINE ARGS...
	local what=$1 want=$2
	shift 2
	set +e
	"$load_bin" "$@" --connections 2 --agents 5 --duration 1 --ramp-up 0 >"$dir/norun.out" 2>"$dir/norun.err"
	local rc=$?
	set -e
	if [ $rc -eq 0 ] || ! grep -qxF -- "$want" "$dir/norun.err" || grep -q "latency" "$dir/norun.out"; then
		echo "load_smoke: FAIL ($what): exit $rc, expected a non-zero exit, no table and the line: $want"
		echo "--- stdout"; cat "$dir/norun.out"; echo "--- stderr"; cat "$dir/norun.err"
		exit 1
	fi
	echo "load_smoke: ok ($what: exit $rc, \"$want\")"
}
echo "== crowd-load where no connection can run"
expect_no_run "HTTP port over TCP" \
	"crowd-load: no connection ran: 127.0.0.1:$http_port: the answer to Hello is not a crowd.v1 message; is this a crowd server's TCP port? (its HTTP port needs --ws)" \
	--server "127.0.0.1:$http_port"
kill -TERM $server_pid
wait $server_pid || true
expect_no_run "closed port" "crowd-load: no connection ran: connect 127.0.0.1:$port: connection refused" \
	--server "127.0.0.1:$port"
