# server_start.sh — sourced by the load_*.sh tests: start a real crowd-server
# on ephemeral ports, wait for the log lines that say where it listens, and
# stop it when the test exits (its log's tail shown when the test failed).
# Usage: server_start DIR CROWD_SERVER [ARGS...]; sets server_pid, port and
# http_port. Exit 77 (a skipped test) is not a failure.
server_start() {
	local dir=$1 bin=$2
	shift 2
	server_log=$dir/server.log
	"$bin" --listen 127.0.0.1:0 --http 127.0.0.1:0 "$@" >"$server_log" 2>&1 &
	server_pid=$!
	trap server_finish EXIT
	port= http_port=
	for _ in $(seq 600); do # the guard is generous for a busy machine
		port=$(sed -n 's/.*listening tcp 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$server_log" | head -n1)
		http_port=$(sed -n 's/.*listening http 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$server_log" | head -n1)
		[ -n "$port" ] && [ -n "$http_port" ] && return 0
		kill -0 $server_pid 2>/dev/null || { cat "$server_log"; echo "crowd-server died"; exit 1; }
		sleep 0.1
	done
	cat "$server_log"
	echo "crowd-server did not say where it listens"
	exit 1
}

server_finish() {
	local rc=$?
	kill -TERM $server_pid 2>/dev/null || true
	wait $server_pid 2>/dev/null || true
	if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
		echo "--- crowd-server log (last 30 lines)"
		tail -n 30 "$server_log"
	fi
	return $rc
}
