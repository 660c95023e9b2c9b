/* pile_bench — what one connection can cost the step (issue 14, fairness):
 * N agents piled on a 0.5-unit grid (radius 1.5: every one overlaps its
 * neighbours), neighbor_dist 100, K max_neighbors, stepping at 30 Hz. The
 * server's --neighbor-budget bounds N x K per connection (default 200,000).
 * Prints the mean and best ms per step over S steps; never passes or fails on speed.
 *
 *   pile_bench N K [--steps S] */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

#include "orca/orca.h"

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: pile_bench N K [--steps S]\n");
		return 2;
	}
	uint32_t n = (uint32_t)strtoul(argv[1], NULL, 10), k = (uint32_t)strtoul(argv[2], NULL, 10);
	int steps = argc > 4 && strcmp(argv[3], "--steps") == 0 ? atoi(argv[4]) : 30;
	orca_world_def d = orca_default_world_def();
	orca_world *w;
	if (orca_world_create(&d, &w) != ORCA_OK) return 1;
	for (uint32_t i = 0; i < n; i++) {
		orca_agent_def a = orca_default_agent_def();
		a.position = (orca_vec2){(float)(i % 141) * 0.5f, (float)(i / 141) * 0.5f};
		a.max_neighbors = k;
		a.neighbor_dist = 100;
		if (orca_agent_add(w, &a, NULL) != ORCA_OK) return 1;
	}
	double sum = 0, best = 1e300;
	for (int s = 0; s < steps; s++) {
		double t0 = wall_ms();
		if (orca_world_step(w, 1.0f / 30.0f) != ORCA_OK) return 1;
		double dt = wall_ms() - t0;
		sum += dt;
		if (dt < best) best = dt;
	}
	printf("pile %u agents x %u neighbours (cost %llu): mean %.1f ms/step, best %.1f (%d steps)\n", n, k,
	       (unsigned long long)n * k, sum / steps, best, steps);
	orca_world_destroy(w);
	return 0;
}
