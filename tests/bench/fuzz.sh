#!/bin/sh
# fuzz.sh — run every libFuzzer target (or those named) for N minutes each and
# print executions, speed and coverage per target.
#
#   cmake -S . -B build-fuzz -DCROWD_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCROWD_BENCH=OFF -DCROWD_BROWSER_TESTS=OFF
#   cmake --build build-fuzz --target crowd_fuzz_all
#   tests/bench/fuzz.sh [-m MINUTES] [-n RUNS] [-b BUILD_DIR] [-N NICE] [-p] [fuzz_target ...]
#
# -m minutes per target (default 5); -n stop a target after this many
# executions (default: no cap; with -p the CPU then goes to the slower ones);
# -p runs the targets at once instead of one after another. Every run is
# `nice -n NICE` (default 19: a shared machine's other work comes first). The
# working corpus grows in BUILD_DIR/fuzz-corpus/<target> (seeded from
# tests/fuzz/corpus/<target>, which stays untouched); crashes land in
# BUILD_DIR/fuzz-artifacts/. Coverage is libFuzzer's own count of covered edges
# (cov) and features (ft) at the end of the run.
set -u
MINUTES=5
BUILD=build-fuzz
PARALLEL=0
RUNS=-1
NICE=19
while getopts "m:n:b:N:p" opt; do
	case $opt in
	m) MINUTES=$OPTARG ;;
	n) RUNS=$OPTARG ;;
	b) BUILD=$OPTARG ;;
	N) NICE=$OPTARG ;;
	p) PARALLEL=1 ;;
	*) echo "usage: $0 [-m MINUTES] [-n RUNS] [-b BUILD_DIR] [-N NICE] [-p] [target ...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
SRC=$(cd "$(dirname "$0")/../.." && pwd)
SEEDS=$SRC/tests/fuzz/corpus
TARGETS=${*:-$(ls "$SEEDS")}
SECONDS_EACH=$(awk "BEGIN{printf \"%d\", $MINUTES * 60}")
mkdir -p "$BUILD/fuzz-corpus" "$BUILD/fuzz-artifacts" "$BUILD/fuzz-logs"

run_one() {
	t=$1
	exe=$BUILD/fuzz/$t
	[ -x "$exe" ] || { echo "$t: not built ($exe)" >&2; return 1; }
	mkdir -p "$BUILD/fuzz-corpus/$t"
	# Targets that keep state across inputs (a server, a libuv loop, OpenSSL)
	# make libFuzzer's per-input leak scan run almost every time: off for them
	# (-rss_limit_mb still catches growth); the others check every input.
	case $t in
	fuzz_session | fuzz_http | fuzz_load) leaks=-detect_leaks=0 ;;
	*) leaks=-detect_leaks=1 ;;
	esac
	nice -n "$NICE" "$exe" $leaks -max_total_time="$SECONDS_EACH" -runs="$RUNS" -print_final_stats=1 -rss_limit_mb=2048 \
		-timeout=10 -artifact_prefix="$BUILD/fuzz-artifacts/$t-" \
		"$BUILD/fuzz-corpus/$t" "$SEEDS/$t" >"$BUILD/fuzz-logs/$t.log" 2>&1
	echo $? >"$BUILD/fuzz-logs/$t.rc"
}

uptime
if [ "$PARALLEL" = 1 ]; then
	for t in $TARGETS; do run_one "$t" & done
	wait
else
	for t in $TARGETS; do run_one "$t"; done
fi
uptime

printf '%-18s %14s %10s %8s %8s %8s %s\n' target executions exec/s cov ft corpus result
fail=0
for t in $TARGETS; do
	log=$BUILD/fuzz-logs/$t.log
	[ -f "$log" ] || continue
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+' "$log" | grep 'cov:' | tail -1)
	cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
	corp=$(ls "$BUILD/fuzz-corpus/$t" | wc -l)
	rc=$(cat "$BUILD/fuzz-logs/$t.rc" 2>/dev/null || echo '?')
	if [ "$rc" = 0 ]; then result=ok; else result="FAILED rc=$rc (see $log)"; fail=1; fi
	printf '%-18s %14s %10s %8s %8s %8s %s\n' "$t" "${execs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "$corp" "$result"
done
exit $fail
