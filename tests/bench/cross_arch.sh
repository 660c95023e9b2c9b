#!/bin/sh
# cross_arch.sh — the same runs on x86-64 and on arm64, compared bit for bit.
#
# Builds the engine, navigation (core/nav, linked against Debian's own arm64
# librecast: Recast/Detour as Debian compiles them, fused multiply-adds
# included) and three programs for arm64 with Debian's cross compilers, runs
# them under qemu-aarch64 and compares with the x86-64 build:
#   engine     quality_bench hash --steps 300 (cross4, quality mode) and
#              orca-replay on blocks without navigation (its CSV)
#   navigation orca-replay SETUP OUT.csv --navigate on the walled set-ups
#              (tests/nav/data/*, tests/data/ref/blocks) in reference and
#              quality avoidance: every row of the CSV
#              nav_hash determinism: the nav_determinism scenario's state
#              hash after each of its 1,000 steps and its events
#              nav_hash crowd: 1,000 agents with random targets among 150
#              random blocks, odd bounds and radius, 600 steps, likewise
# and prints "identical" or "DIFFERENT" per case.
#
# usage: tests/bench/cross_arch.sh [BUILD_DIR]   (default: build)
#   BUILD_DIR holds the x86-64 programs (core/orca-replay, tests/nav/nav_hash,
#   tests/bench/quality_bench); the arm64 build and Debian's arm64 packages go
#   to BUILD_DIR/cross-arm64 (apt-get with its own state there: the machine's
#   dpkg and apt lists are not touched).
# Needs (deploy/debian-packages.txt): gcc-aarch64-linux-gnu,
# g++-aarch64-linux-gnu, binutils-aarch64-linux-gnu, qemu-user.
# Exit: 0 all identical, 1 some differ or a step failed, 77 a tool is missing.
set -eu

SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
WORK=$BUILD/cross-arm64
X86_REPLAY=$BUILD/core/orca-replay
X86_NAV_HASH=$BUILD/tests/nav/nav_hash
X86_QUALITY=$BUILD/tests/bench/quality_bench

for tool in aarch64-linux-gnu-gcc aarch64-linux-gnu-g++ aarch64-linux-gnu-objdump qemu-aarch64 apt-get dpkg-deb; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "cross_arch: $tool not found (deploy/debian-packages.txt lists what installs it): skipped"
		exit 77
	fi
done
for prog in "$X86_REPLAY" "$X86_NAV_HASH" "$X86_QUALITY"; do
	[ -x "$prog" ] || { echo "cross_arch: $prog not built"; exit 1; }
done

# Debian's arm64 Recast/Detour, through apt with a private state directory
mkdir -p "$WORK/apt/state/lists/partial" "$WORK/apt/cache/archives/partial" "$WORK/debs"
touch "$WORK/apt/state/status"
set -- -o Dir::State="$WORK/apt/state" -o Dir::State::status="$WORK/apt/state/status" \
	-o Dir::Cache="$WORK/apt/cache" -o APT::Architecture=arm64 -o APT::Architectures::=arm64 \
	-o APT::Sandbox::User=root -o Debug::NoLocking=1
if ! ls "$WORK"/debs/librecast1_*_arm64.deb >/dev/null 2>&1 || ! ls "$WORK"/debs/librecast-dev_*_arm64.deb >/dev/null 2>&1; then
	apt-get "$@" -qq update
	(cd "$WORK/debs" && apt-get "$@" -qq download librecast1:arm64 librecast-dev:arm64)
fi
ROOT=$WORK/root
rm -rf "$ROOT"
for deb in "$WORK"/debs/*_arm64.deb; do
	dpkg-deb -x "$deb" "$ROOT"
	echo "debian package: $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version) arm64"
done
LIB=$ROOT/usr/lib/aarch64-linux-gnu
for l in Recast Detour DetourCrowd; do
	echo "fused multiply-adds in Debian's arm64 lib$l: $(aarch64-linux-gnu-objdump -d "$LIB/lib$l.so" | grep -c -E '	f(n)?m(add|sub)	' || true)"
done

# the arm64 build: the same sources and the flags the CMake build gives them
OBJ=$WORK/obj
rm -rf "$OBJ"
mkdir -p "$OBJ"
CFLAGS="-O2 -ffp-contract=off -fno-fast-math -D_GNU_SOURCE -I$SRC/core/include -I$SRC/core/src -I$SRC/core/tools -I$SRC/core/nav/include"
# (every source of the engine, the navigation and the scenario tools but
# orca-replay's main; a file added there is picked up)
for f in "$SRC"/core/src/*.c "$SRC"/core/nav/src/*.c "$SRC"/core/tools/*.c; do
	[ "$(basename "$f")" != orca_replay.c ] || continue
	aarch64-linux-gnu-gcc -std=c11 $CFLAGS -c "$f" -o "$OBJ/lib_$(basename "$f").o"
done
for f in "$SRC"/core/nav/src/*.cpp; do
	aarch64-linux-gnu-g++ -std=c++11 $CFLAGS -fno-exceptions -isystem "$ROOT/usr/include" \
		-c "$f" -o "$OBJ/lib_$(basename "$f").o"
done
for o in "$OBJ"/lib_*.o; do
	n=$(aarch64-linux-gnu-objdump -d "$o" | grep -c -E '	f(n)?m(add|sub)	' || true)
	[ "$n" = 0 ] || { echo "cross_arch: $o has $n fused multiply-adds (-ffp-contract=off lost?)"; exit 1; }
done
aarch64-linux-gnu-gcc -std=c11 $CFLAGS -c "$SRC/core/tools/orca_replay.c" -o "$OBJ/orca_replay.o"
aarch64-linux-gnu-gcc -std=c11 $CFLAGS -I"$SRC/tests/nav" -c "$SRC/tests/nav/nav_hash.c" -o "$OBJ/nav_hash.o"
aarch64-linux-gnu-gcc -std=c11 $CFLAGS -I"$SRC/tests/bench" -DCROWD_REF_DIR="\"$SRC/tests/data/ref\"" \
	-c "$SRC/tests/bench/quality_bench.c" -o "$OBJ/quality_bench.o"
for p in orca_replay nav_hash quality_bench; do
	aarch64-linux-gnu-g++ -o "$WORK/$p" "$OBJ/$p.o" "$OBJ"/lib_*.o -L"$LIB" -lDetourCrowd -lDetour -lRecast -lpthread -lm
done
arm() {
	qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH="$LIB" "$@"
}

OUT=$WORK/out
rm -rf "$OUT"
mkdir -p "$OUT"
same=0
differ=0
# compare NAME X86_FILE ARM_FILE
compare() {
	if cmp -s "$2" "$3"; then
		echo "$1: identical ($(wc -l <"$2") lines; $(tail -n 1 "$2" | cut -c1-60))"
		same=$((same + 1))
	else
		echo "$1: DIFFERENT from line $(cmp "$2" "$3" | awk '{print $NF}' || true)"
		differ=$((differ + 1))
	fi
}

"$X86_QUALITY" hash --steps 300 >"$OUT/quality_x86.txt"
arm "$WORK/quality_bench" hash --steps 300 >"$OUT/quality_arm.txt"
compare "engine quality_bench hash --steps 300" "$OUT/quality_x86.txt" "$OUT/quality_arm.txt"

"$X86_REPLAY" "$SRC/tests/data/ref/blocks_setup.txt" "$OUT/blocks_x86.csv" --cap 600 >/dev/null
arm "$WORK/orca_replay" "$SRC/tests/data/ref/blocks_setup.txt" "$OUT/blocks_arm.csv" --cap 600 >/dev/null
compare "engine orca-replay blocks (no navigation)" "$OUT/blocks_x86.csv" "$OUT/blocks_arm.csv"

for setup in "$SRC"/tests/nav/data/*_setup.txt "$SRC/tests/data/ref/blocks_setup.txt"; do
	name=$(basename "$setup" _setup.txt)
	for mode in reference quality; do
		"$X86_REPLAY" "$setup" "$OUT/${name}_${mode}_x86.csv" --navigate --mode "$mode" --cap 4000 \
			>"$OUT/${name}_${mode}_x86.txt"
		arm "$WORK/orca_replay" "$setup" "$OUT/${name}_${mode}_arm.csv" --navigate --mode "$mode" --cap 4000 \
			>"$OUT/${name}_${mode}_arm.txt"
		cat "$OUT/${name}_${mode}_x86.txt" >>"$OUT/${name}_${mode}_x86.csv"
		cat "$OUT/${name}_${mode}_arm.txt" >>"$OUT/${name}_${mode}_arm.csv"
		compare "navigation orca-replay --navigate --mode $mode $name" \
			"$OUT/${name}_${mode}_x86.csv" "$OUT/${name}_${mode}_arm.csv"
	done
done

"$X86_NAV_HASH" determinism "$SRC/tests/nav/data" >"$OUT/nav_hash_x86.txt"
arm "$WORK/nav_hash" determinism "$SRC/tests/nav/data" >"$OUT/nav_hash_arm.txt"
compare "navigation nav_hash determinism (nav_determinism's scenario), hash after each of 1,000 steps" \
	"$OUT/nav_hash_x86.txt" "$OUT/nav_hash_arm.txt"

"$X86_NAV_HASH" crowd >"$OUT/nav_crowd_x86.txt"
arm "$WORK/nav_hash" crowd >"$OUT/nav_crowd_arm.txt"
compare "navigation nav_hash crowd (1,000 agents, 150 blocks), hash after each of 600 steps" \
	"$OUT/nav_crowd_x86.txt" "$OUT/nav_crowd_arm.txt"

echo "cross_arch: $same identical, $differ different (outputs in $OUT)"
[ "$differ" = 0 ]
