/* state_hash_bench — the world's state hash against the definition before it
 * (orca_world_state_hash_v1, FNV-1a over every agent's bytes), the two
 * alternating on the same world in one run: median ms of each over the
 * repeats, one thread (the server computes it on one).
 *   state_hash_bench [AGENTS (100000)] [REPEATS (50)] [REUSED (0: every id in
 *   slot order; N: N agents removed and added again, their ids later)]
 * A benchmark, never a pass/fail test. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_clock.h"

#include "orca/orca.h"

static uint32_t rng(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

int main(int argc, char **argv)
{
	const uint32_t agents = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 100000u;
	const int repeats = argc > 2 ? atoi(argv[2]) : 50;
	const uint32_t reused = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 0u;
	if (agents == 0 || agents > ORCA_MAX_AGENTS || repeats < 1 || reused > agents)
		return 2;
	orca_world_def wd = orca_default_world_def();
	wd.max_agents = agents;
	orca_world *w;
	if (orca_world_create(&wd, &w) != ORCA_OK)
		return 1;
	orca_agent_def ad = orca_default_agent_def();
	orca_agent_id *ids = calloc(agents, sizeof *ids);
	uint32_t seed = 12345u, side = 1;
	while (side * side < agents)
		side++;
	for (uint32_t i = 0; i < agents; ++i) {
		ad.position = (orca_vec2){(float)(i % side) * 3.0f + (float)(rng(&seed) % 100) * 0.01f,
		                          (float)(i / side) * 3.0f + (float)(rng(&seed) % 100) * 0.01f};
		ad.pref_velocity = (orca_vec2){(float)(rng(&seed) % 200) * 0.01f - 1.0f, 0.5f};
		if (orca_agent_add(w, &ad, &ids[i]) != ORCA_OK)
			return 1;
	}
	for (uint32_t k = 0; k < reused; ++k) {
		const uint32_t i = (uint32_t)(((uint64_t)k * agents) / reused);
		orca_agent_remove(w, ids[i]);
		orca_agent_add(w, &ad, &ids[i]);
	}
	orca_world_step(w, 0.1f);
	double *t[2] = {calloc((size_t)repeats, sizeof(double)), calloc((size_t)repeats, sizeof(double))};
	uint64_t h[2] = {0, 0};
	for (int r = 0; r < repeats; ++r)
		for (int v = 0; v < 2; ++v) {
			const double t0 = thread_cpu_ms();
			h[v] = v == 0 ? orca_world_state_hash(w) : orca_world_state_hash_v1(w);
			t[v][r] = thread_cpu_ms() - t0;
		}
	for (int v = 0; v < 2; ++v)
		qsort(t[v], (size_t)repeats, sizeof(double), bench_cmp_double);
	printf("agents %u, ids reused %u, repeats %d (thread CPU ms, median)\n", agents, reused, repeats);
	printf("state hash (blocks)      %.3f ms  %016" PRIx64 "\n", t[0][repeats / 2], h[0]);
	printf("state hash v1 (FNV-1a)   %.3f ms  %016" PRIx64 "\n", t[1][repeats / 2], h[1]);
	printf("ratio                    %.2fx\n", t[1][repeats / 2] / t[0][repeats / 2]);
	free(t[0]);
	free(t[1]);
	free(ids);
	orca_world_destroy(w);
	return 0;
}
