/* grid_scan_bench — the agent neighbour search's grid scan (agent_neighbors.c)
 * in its two x86-64 builds, SSE2 and AVX2, side by side in one run: a crowd is
 * stepped, then every agent's grid_neighbors query is asked of both builds in
 * alternating rounds (CPU time of this thread), with the answers compared.
 * A benchmark, never a pass/fail test on speed; it fails only if the builds
 * answer differently. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/src/agent_grid_scan.h"
#include "../../core/src/internal.h"
#include "bench_clock.h"
#include "scenario.h"

/* One round: every agent's query; a digest of the answers. */
static uint64_t round_of(const orca_world *w, bool avx2, nb_entry *out, uint32_t *refused)
{
	uint64_t digest = 1469598103934665603ull;
	*refused = 0;
	for (uint32_t self = 0; self < w->order_count; ++self) {
		const uint32_t k = w->tself[self].max_neighbors < w->order_count - 1 ? w->tself[self].max_neighbors
		                                                                    : w->order_count - 1;
		const uint32_t count =
		    orca_agent_grid_neighbors(w, self, k, (vec2){w->tpx[self], w->tpy[self]}, out, avx2);
		digest = (digest ^ count) * 1099511628211ull;
		if (count == ORCA_NONE) {
			++*refused;
			continue;
		}
		for (uint32_t i = 0; i < count; ++i) {
			uint32_t bits;
			memcpy(&bits, &out[i].dist_sq, sizeof bits);
			digest = (digest ^ out[i].index ^ (uint64_t)bits << 32) * 1099511628211ull;
		}
	}
	return digest;
}

int main(int argc, char **argv)
{
	uint32_t n = 50000;
	int steps = 20, rounds = 9;
	orca_avoidance mode = ORCA_AVOIDANCE_QUALITY;
	const char *ref_dir = CROWD_REF_DIR;
	for (int i = 1; i < argc; ++i) {
		if (strcmp(argv[i], "random") == 0 && i + 1 < argc)
			n = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--ref-dir") == 0 && i + 1 < argc)
			ref_dir = argv[++i];
		else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc && strcmp(argv[i + 1], "reference") == 0)
			mode = ORCA_AVOIDANCE_REFERENCE, ++i;
		else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc && strcmp(argv[i + 1], "quality") == 0)
			mode = ORCA_AVOIDANCE_QUALITY, ++i;
		else {
			fprintf(stderr, "usage: grid_scan_bench [random N] [--steps K] [--rounds R] [--mode reference|quality] "
			                "[--ref-dir DIR]\n  steps the crowd K steps, then times every agent's grid query, "
			                "SSE2 and AVX2 builds alternating, R rounds each\n");
			return 2;
		}
	}
	if (steps < 1 || rounds < 1 || rounds > 1000)
		return 2;
	if (!orca_agent_grid_scan_has_avx2())
		printf("no AVX2 on this CPU (or not x86-64): both rounds run the SSE2 build\n");
	char path[1024], err[512];
	snprintf(path, sizeof path, "%s/random%u_setup.csv", ref_dir, n);
	scenario sc;
	if (scenario_load(path, &sc, err, sizeof err) != 0) {
		fprintf(stderr, "grid_scan_bench: %s\n", err);
		return 1;
	}
	orca_agent_id *ids = calloc(sc.agent_count, sizeof *ids);
	orca_world *w;
	if (scenario_make_world(&sc, 1, &w, ids) != ORCA_OK || orca_world_set_avoidance(w, mode) != ORCA_OK)
		return 1;
	for (int s = 0; s < steps; ++s)
		if (orca_world_step(w, sc.time_step) != ORCA_OK)
			return 1;
	if (!w->grid_on) {
		fprintf(stderr, "grid_scan_bench: the grid is off for this crowd\n");
		return 1;
	}
	nb_entry *out = calloc(w->max_neighbors_max + 2u, sizeof *out); /* k + 1 and a spare */
	double *ms[2] = {calloc((size_t)rounds, sizeof(double)), calloc((size_t)rounds, sizeof(double))};
	uint64_t digest[2] = {0, 0};
	uint32_t refused[2] = {0, 0};
	for (int r = 0; r < rounds; ++r) {
		for (int t = 0; t < 2; ++t) {
			const int build = (r + t) % 2; /* 0: SSE2, 1: AVX2; who goes first alternates */
			const double a = thread_cpu_ms();
			digest[build] = round_of(w, build == 1, out, &refused[build]);
			ms[build][r] = thread_cpu_ms() - a;
		}
	}
	const double sse2 = median(ms[0], rounds), avx2 = median(ms[1], rounds);
	printf("random %u  %s mode  after %d steps  %u queries a round  %d rounds each\n", sc.agent_count,
	       mode == ORCA_AVOIDANCE_QUALITY ? "quality" : "reference", steps, w->order_count, rounds);
	printf("grid_neighbors CPU ms a round (median): SSE2 %.3f  AVX2 %.3f  (%.1f vs %.1f ns a query, AVX2/SSE2 %.3f)\n",
	       sse2, avx2, sse2 * 1e6 / w->order_count, avx2 * 1e6 / w->order_count, avx2 / sse2);
	printf("answers %s (digest %016" PRIx64 ", %u refused to the kd-tree)\n",
	       digest[0] == digest[1] && refused[0] == refused[1] ? "identical" : "DIFFER", digest[0], refused[0]);
	const int rc = digest[0] == digest[1] && refused[0] == refused[1] ? 0 : 1;
	orca_world_destroy(w);
	scenario_free(&sc);
	free(ids);
	free(out);
	free(ms[0]);
	free(ms[1]);
	return rc;
}
