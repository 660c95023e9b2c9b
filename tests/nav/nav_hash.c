/* nav_hash — prints the navigation determinism scenario's state hash after
 * every step ("step hash", hex) and its events' hash, for comparing builds
 * across CPUs (tests/bench/cross_arch.sh runs it on x86-64 and, built for
 * arm64 against Debian's arm64 Recast/Detour, under qemu-aarch64).
 * usage: nav_hash DATA_DIR [WORKERS] */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "nav_determinism_run.h"

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: nav_hash DATA_DIR [WORKERS]\n");
		return 2;
	}
	const int workers = argc == 3 ? atoi(argv[2]) : 1;
	if (workers < 1 || workers > 64) {
		fprintf(stderr, "nav_hash: bad WORKERS (1..64)\n");
		return 2;
	}
	static uint64_t hashes[NAV_DETERMINISM_STEPS];
	uint64_t events;
	if (nav_determinism_run(argv[1], workers, hashes, &events) != 0)
		return 1;
	for (int s = 0; s < NAV_DETERMINISM_STEPS; ++s)
		printf("%d %016" PRIx64 "\n", s + 1, hashes[s]);
	printf("events %016" PRIx64 "\n", events);
	return 0;
}
