#!/bin/sh
# vs_rvo2.sh — this engine against RVO2, side by side on this machine.
#
# Builds RVO2 (snape/RVO2; the reference is commit 1c25b27) from the source
# directory it is given, outside that directory and outside this repo: its
# src/*.cc as a static library with -O3 -flto -DNDEBUG (no -march, no
# fast-math: RVO2's fastest portable form, the reference's "fast" build), once
# plain and once with -fopenmp (RVO2's doStep is an OpenMP loop then), each
# linked with tests/bench/rvo2_driver.cpp (ours, written from RVO2's public
# API). Then for every scenario it runs RVO2 and orca_bench alternately,
# PAIRS pairs, and prints the median of each side's per-run medians (ms per
# step) and their ratio. Nothing here asserts on time.
#
# usage: tests/bench/vs_rvo2.sh RVO2_SOURCE_DIR [options]
#   --build-dir DIR    where RVO2 and the driver are built (default: a new
#                      directory under ${TMPDIR:-/tmp})
#   --orca-bench PATH  orca_bench to run (default: build/tests/bench/orca_bench)
#   --pairs K          alternating pairs per scenario (default 3)
#   --only NAME[,NAME] run only these scenarios (names below)
#   --args NAME=ARGS   extra orca_bench arguments for scenario NAME, or `all`
#                      (e.g. --args all='--mode quality'); repeatable
#   --mode M           shorthand for --args all='--mode M'
#   --steps-scale F    multiply every scenario's step count by F (e.g. 0.2)
#   --rvo2-native      also build RVO2 with -march=native (this CPU's AVX2/FMA,
#                      as orca_bench picks AVX at run time) and run it in every
#                      pair; RVO2's side is then the faster of its two builds
#   --check            first check the driver: circle16 and blocks must equal
#                      the reference trajectories in tests/data/ref byte for byte
#
# Scenarios (name: set-up, steps, threads):
#   r10k-1t   random 10,000 (tests/data/ref), 200 steps, 1 thread
#   r50k-1t   random 50,000, 100 steps, 1 thread
#   r50k-2t   random 50,000, 100 steps, 2 threads (RVO2 with OpenMP)
#   r100k-2t  random 100,000 (tests/data/gen_random_setup.py, 1,268 square), 60 steps, 2 threads
#   c20k-1t   circle 20,000, 500 steps, 1 thread
set -eu

usage() {
	sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
	exit 2
}

[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage ;; esac
RVO2_SRC=$(cd "$1" && pwd)
shift
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD_DIR=""
ORCA_BENCH="$ROOT/build/tests/bench/orca_bench"
PAIRS=3
ONLY=""
EXTRA_ARGS=""   # lines NAME=ARGS
STEPS_SCALE=1
CHECK=0
NATIVE=0
while [ $# -gt 0 ]; do
	case "$1" in
	--build-dir) BUILD_DIR=$2; shift 2 ;;
	--orca-bench) ORCA_BENCH=$2; shift 2 ;;
	--pairs) PAIRS=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	--args) EXTRA_ARGS="$EXTRA_ARGS
$2"; shift 2 ;;
	--mode) EXTRA_ARGS="$EXTRA_ARGS
all=--mode $2"; shift 2 ;;
	--steps-scale) STEPS_SCALE=$2; shift 2 ;;
	--check) CHECK=1; shift ;;
	--rvo2-native) NATIVE=1; shift ;;
	*) usage ;;
	esac
done
[ -f "$RVO2_SRC/src/RVOSimulator.cc" ] || { echo "vs_rvo2: $RVO2_SRC/src/RVOSimulator.cc not found" >&2; exit 1; }
[ -x "$ORCA_BENCH" ] || { echo "vs_rvo2: $ORCA_BENCH not built (cmake --build build --target orca_bench)" >&2; exit 1; }
[ -n "$BUILD_DIR" ] || BUILD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/vs_rvo2.XXXXXX")
mkdir -p "$BUILD_DIR"
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
case "$BUILD_DIR/" in "$RVO2_SRC"/*) echo "vs_rvo2: the build dir must be outside RVO2's source tree" >&2; exit 1 ;; esac

CXX=${CXX:-g++}
AR=${AR:-gcc-ar}
# RVO2's fastest portable build: the reference's "fast" flags.
RVO2_FLAGS="-std=c++17 -O3 -flto -DNDEBUG -DRVO_STATIC_DEFINE"

build_variant() { # NAME EXTRA_FLAGS
	dir="$BUILD_DIR/$1"
	# reuse an earlier build of the same sources with a driver newer than its source
	if [ -x "$dir/rvo2_driver" ] && [ "$(cat "$dir/source" 2>/dev/null)" = "$RVO2_SRC" ] &&
		[ -z "$(find "$HERE/rvo2_driver.cpp" -newer "$dir/rvo2_driver")" ]; then
		return
	fi
	mkdir -p "$dir"
	rm -f "$dir"/*.o "$dir/librvo2.a" "$dir/rvo2_driver"
	for f in "$RVO2_SRC"/src/*.cc; do
		# shellcheck disable=SC2086 # the flags are words
		$CXX $RVO2_FLAGS $2 -I"$RVO2_SRC/src" -c "$f" -o "$dir/$(basename "$f" .cc).o"
	done
	$AR rcs "$dir/librvo2.a" "$dir"/*.o
	# shellcheck disable=SC2086
	$CXX $RVO2_FLAGS $2 -I"$RVO2_SRC/src" "$HERE/rvo2_driver.cpp" "$dir/librvo2.a" -o "$dir/rvo2_driver"
	printf '%s\n' "$RVO2_SRC" >"$dir/source"
}
echo "building RVO2 from $RVO2_SRC into $BUILD_DIR ($RVO2_FLAGS; and with -fopenmp)" >&2
build_variant st ""
build_variant omp "-fopenmp"
if [ $NATIVE = 1 ]; then
	build_variant st-native "-march=native"
	build_variant omp-native "-fopenmp -march=native"
fi
if [ -d "$RVO2_SRC/.git" ] || [ -f "$RVO2_SRC/.git" ]; then
	echo "RVO2 commit: $(git -C "$RVO2_SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)" >&2
fi

REF="$ROOT/tests/data/ref"
if [ $CHECK = 1 ]; then
	"$BUILD_DIR/st/rvo2_driver" setup "$REF/circle16_setup.csv" --steps 2000 --dump "$BUILD_DIR/circle16.csv" >/dev/null
	cmp "$BUILD_DIR/circle16.csv" "$REF/circle16.csv"
	"$BUILD_DIR/st/rvo2_driver" blocks "$REF/blocks_setup.txt" --steps 600 --dump "$BUILD_DIR/blocks.csv" >/dev/null
	cmp "$BUILD_DIR/blocks.csv" "$REF/blocks_0-600.csv"
	echo "driver check: circle16 (2,000 steps) and blocks (600 steps) equal RVO2's reference files" >&2
fi
R100K="$BUILD_DIR/random100000_setup.csv"
[ -f "$R100K" ] || python3 "$ROOT/tests/data/gen_random_setup.py" 100000 "$R100K"

steps() { awk -v s="$1" -v f="$STEPS_SCALE" 'BEGIN { n = int(s * f + 0.5); print (n < 3 ? 3 : n) }'; }
extra_for() { # NAME -> orca_bench extra args (all= first, then NAME=)
	printf '%s\n' "$EXTRA_ARGS" | awk -v n="$1" '
		index($0, "all=") == 1 { a = a " " substr($0, 5) }
		index($0, n "=") == 1 { a = a " " substr($0, length(n) + 2) }
		END { print a }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ms_of() { sed -n 's/^median ms\/step \([0-9.]*\).*/\1/p'; }
cpu_of() { sed -n 's/^median CPU ms\/step (all threads) \([0-9.]*\).*/\1/p'; }

echo "# vs_rvo2: $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# RVO2: $RVO2_FLAGS (static, LTO), 2 threads = -fopenmp with OMP_NUM_THREADS=2; orca_bench: $ORCA_BENCH"
[ $NATIVE = 0 ] || echo "# RVO2 also built with -march=native and run in every pair; its side is the faster build's median"
echo "# each side: median of $PAIRS runs' median ms/step, runs alternating RVO2, ours; wall clock (steady"
echo "# clock around each step) and process CPU time (all threads; what a step costs when other jobs"
echo "# take the cores away: on a busy machine compare these)"
echo
echo "| scenario | steps | RVO2 ms/step (runs) | ours ms/step (runs) | ratio | RVO2 CPU ms/step | ours CPU ms/step | CPU ratio | orca_bench args |"
echo "|---|---|---|---|---|---|---|---|---|"

run_scenario() { # NAME LABEL THREADS STEPS RVO2_ARGS ORCA_ARGS
	name=$1 label=$2 threads=$3 n=$(steps "$4")
	if [ -n "$ONLY" ]; then
		case ",$ONLY," in *",$name,"*) ;; *) return ;; esac
	fi
	extra=$(extra_for "$name")
	if [ "$threads" = 1 ]; then v=st; else v=omp; fi
	drv="$BUILD_DIR/$v/rvo2_driver" ndrv="$BUILD_DIR/$v-native/rvo2_driver" which=""
	rv="" us="" rc="" uc="" nv="" nc=""
	i=0
	while [ $i -lt "$PAIRS" ]; do
		# shellcheck disable=SC2086
		rout=$(OMP_NUM_THREADS=$threads "$drv" $5 --steps "$n")
		if [ $NATIVE = 1 ]; then
			# shellcheck disable=SC2086
			nout=$(OMP_NUM_THREADS=$threads "$ndrv" $5 --steps "$n")
			nv="$nv $(echo "$nout" | ms_of)" nc="$nc $(echo "$nout" | cpu_of)"
		fi
		# shellcheck disable=SC2086
		oout=$("$ORCA_BENCH" $6 --steps "$n" --workers "$threads" $extra)
		r=$(echo "$rout" | ms_of) o=$(echo "$oout" | ms_of)
		r_cpu=$(echo "$rout" | cpu_of) o_cpu=$(echo "$oout" | cpu_of)
		if [ -z "$r" ] || [ -z "$o" ] || [ -z "$r_cpu" ] || [ -z "$o_cpu" ]; then
			echo "vs_rvo2: $name: a run printed no median" >&2
			exit 1
		fi
		rv="$rv $r" us="$us $o" rc="$rc $r_cpu" uc="$uc $o_cpu"
		echo "  $name pair $((i + 1)): RVO2 $r ms (CPU $r_cpu), ours $o ms (CPU $o_cpu) (load $(cut -d' ' -f1 /proc/loadavg))" >&2
		i=$((i + 1))
	done
	# (the lists are space-separated numbers: split on purpose)
	# shellcheck disable=SC2086
	rm=$(printf '%s\n' $rv | median) om=$(printf '%s\n' $us | median)
	# shellcheck disable=SC2086
	rcm=$(printf '%s\n' $rc | median) ocm=$(printf '%s\n' $uc | median)
	if [ $NATIVE = 1 ]; then
		# shellcheck disable=SC2086
		nm=$(printf '%s\n' $nv | median) ncm=$(printf '%s\n' $nc | median)
		echo "  $name: RVO2 baseline $rm ms (CPU $rcm), RVO2 -march=native $nm ms (CPU $ncm) ($(echo $nv | tr ' ' '/'))" >&2
		if awk -v a="$nm" -v b="$rm" 'BEGIN { exit !(a < b) }'; then rm=$nm rcm=$ncm rv=$nv which=" native"; fi
	fi
	ratio=$(awk -v a="$rm" -v b="$om" 'BEGIN { printf "%.2f", a / b }')
	cratio=$(awk -v a="$rcm" -v b="$ocm" 'BEGIN { printf "%.2f", a / b }')
	# shellcheck disable=SC2086
	echo "| $label | $n | $rm$which ($(echo $rv | tr ' ' '/')) | $om ($(echo $us | tr ' ' '/')) | ${ratio}× | $rcm | $ocm | ${cratio}× |$extra |"
}

run_scenario r10k-1t "random 10,000, 1 thread" 1 200 "setup $REF/random10000_setup.csv" "setup $REF/random10000_setup.csv"
run_scenario r50k-1t "random 50,000, 1 thread" 1 100 "setup $REF/random50000_setup.csv" "setup $REF/random50000_setup.csv"
run_scenario r50k-2t "random 50,000, 2 threads" 2 100 "setup $REF/random50000_setup.csv" "setup $REF/random50000_setup.csv"
run_scenario r100k-2t "random 100,000, 2 threads" 2 60 "setup $R100K" "setup $R100K"
run_scenario c20k-1t "circle 20,000, 1 thread" 1 500 "circle 20000" "circle 20000"
echo
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
