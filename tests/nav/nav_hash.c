/* nav_hash — prints a navigation run's world state hash after every step
 * ("step hash", hex) and a hash of its events, for comparing builds across
 * CPUs: tests/bench/cross_arch.sh runs it on x86-64 and, built for arm64
 * against Debian's arm64 Recast/Detour, under qemu-aarch64.
 *   nav_hash determinism DATA_DIR [WORKERS]   the nav_determinism scenario
 *   nav_hash crowd [WORKERS]                  nav_crowd_run.h's crowd (1,000 agents
 *       among 150 blocks, a wall added and removed, 600 steps) */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nav_crowd_run.h"
#include "nav_determinism_run.h"

static int workers_arg(const char *s)
{
	const int w = s ? atoi(s) : 1;
	if (w < 1 || w > 64) {
		fprintf(stderr, "nav_hash: bad WORKERS (1..64)\n");
		exit(2);
	}
	return w;
}

int main(int argc, char **argv)
{
	static uint64_t hashes[NAV_DETERMINISM_STEPS > CROWD_STEPS ? NAV_DETERMINISM_STEPS : CROWD_STEPS];
	uint64_t events;
	int steps;
	if (argc >= 3 && argc <= 4 && strcmp(argv[1], "determinism") == 0) {
		if (nav_determinism_run(argv[2], workers_arg(argc == 4 ? argv[3] : NULL), hashes, &events) != 0)
			return 1;
		steps = NAV_DETERMINISM_STEPS;
	} else if (argc >= 2 && argc <= 3 && strcmp(argv[1], "crowd") == 0) {
		if (crowd_run(workers_arg(argc == 3 ? argv[2] : NULL), hashes, &events) != 0)
			return 1;
		steps = CROWD_STEPS;
	} else {
		fprintf(stderr, "usage: nav_hash determinism DATA_DIR [WORKERS] | nav_hash crowd [WORKERS]\n");
		return 2;
	}
	for (int s = 0; s < steps; ++s)
		printf("%d %016" PRIx64 "\n", s + 1, hashes[s]);
	printf("events %016" PRIx64 "\n", events);
	return 0;
}
