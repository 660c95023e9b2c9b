/* polygon_bench — what orca_polygon_check costs (it runs twice per AddObstacle:
 * in the server's validation, on the loop, and in orca_obstacle_add, in the
 * tick). Regular N-gons of radius 5, the shape of the 75-polygon write;
 * prints microseconds per check, best of 5 runs of R checks. Never fails on speed.
 *
 *   polygon_bench [N] [R] */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "orca/orca.h"

static double now_us(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
	uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 256;
	int reps = argc > 2 ? atoi(argv[2]) : 1000;
	if (n < 3 || reps < 1) return 2;
	orca_vec2 *v = malloc(n * sizeof *v);
	if (!v) return 1;
	for (uint32_t k = 0; k < n; k++)
		v[k] = (orca_vec2){(float)(5.0 * cos(6.283185307179586 * k / n)), (float)(5.0 * sin(6.283185307179586 * k / n))};
	double best = 1e300;
	int ok = 0;
	for (int run = 0; run < 5; run++) {
		double t0 = now_us();
		for (int r = 0; r < reps; r++) ok += orca_polygon_check(v, n, NULL) == ORCA_OK;
		double per = (now_us() - t0) / reps;
		if (per < best) best = per;
	}
	printf("polygon_check %u-gon: %.2f us per check (best of 5 x %d; %d valid)\n", n, best, reps, ok);
	free(v);
	return ok == 5 * reps ? 0 : 1;
}
