/* test_determinism.c — the same world stepped with 1, 2, 3, 4 and 8 workers
 * must hash identically after every one of 300 steps: a circle and a random
 * crowd, with agents removed and added on the way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../core/src/internal.h" /* simd_sse2_only */
#include "scenario.h"

#define STEPS 300

/* Runs the scenario with `workers` workers, writing the hash after each step. */
static void run(const scenario *sc, int workers, uint64_t *hashes)
{
	orca_agent_id *ids = calloc(sc->agent_count, sizeof *ids);
	assert_non_null(ids);
	orca_world *w;
	assert_int_equal(scenario_make_world(sc, workers, &w, ids), ORCA_OK);
	for (int step = 0; step < STEPS; ++step) {
		if (step == 100) {
			for (uint32_t i = 0; i < sc->agent_count; i += 7)
				assert_int_equal(orca_agent_remove(w, ids[i]), ORCA_OK);
		}
		if (step == 150) {
			for (uint32_t i = 0; i < sc->agent_count; i += 7) {
				orca_agent_def d = sc->agent;
				d.position = sc->goal[i];
				d.target = sc->start[i];
				assert_int_equal(orca_agent_add(w, &d, &ids[i]), ORCA_OK);
			}
		}
		assert_int_equal(orca_world_step(w, sc->time_step), ORCA_OK);
		hashes[step] = orca_world_state_hash(w);
	}
	orca_step_profile prof;
	orca_world_profile(w, &prof);
	assert_int_equal(prof.workers, (uint32_t)workers);
	orca_world_destroy(w);
	free(ids);
}

static void compare_workers(const scenario *sc, const char *name)
{
	static const int counts[] = {2, 3, 4, 8};
	uint64_t base[STEPS], other[STEPS];
	run(sc, 1, base);
	for (size_t k = 0; k < sizeof counts / sizeof counts[0]; ++k) {
		run(sc, counts[k], other);
		for (int step = 0; step < STEPS; ++step) {
			if (base[step] != other[step])
				fprintf(stderr, "%s: %d workers differ from 1 worker at step %d\n", name, counts[k], step + 1);
			assert_true(base[step] == other[step]);
		}
	}
	fprintf(stderr, "%s: %u agents, %d steps, hashes equal for 1,2,3,4,8 workers (final %016llx)\n", name,
	        sc->agent_count, STEPS, (unsigned long long)base[STEPS - 1]);
}

static void test_circle_workers(void **state)
{
	(void)state;
	scenario sc;
	assert_int_equal(scenario_circle(250, &sc), 0);
	compare_workers(&sc, "circle 250");
	scenario_free(&sc);
}

static void test_random_workers(void **state)
{
	(void)state;
	scenario sc;
	char err[256];
	assert_int_equal(scenario_load(CROWD_REF_DIR "/random1000_setup.csv", &sc, err, sizeof err), 0);
	sc.agent_count = 400; /* the first 400 of the dense random crowd */
	compare_workers(&sc, "random 400");
	scenario_free(&sc);
}

/* The engine takes fast paths when every agent has the same weight and no
 * mask excludes anything; an extra agent far away that has another weight and
 * a mask forces the general paths. The crowd must not notice. */
static void test_general_paths_match_fast_paths(void **state)
{
	(void)state;
	scenario sc;
	char err[256];
	assert_int_equal(scenario_load(CROWD_REF_DIR "/random1000_setup.csv", &sc, err, sizeof err), 0);
	sc.agent_count = 300;
	orca_agent_id ids[2][300];
	orca_world *w[2];
	for (int k = 0; k < 2; ++k) {
		assert_int_equal(scenario_make_world(&sc, 2, &w[k], ids[k]), ORCA_OK);
		if (k == 1) {
			orca_agent_def d = sc.agent;
			d.position = (orca_vec2){1e6f, 1e6f};
			d.target = d.position;
			d.weight = 0.3f;
			d.layer = 2;
			d.mask = 2;
			assert_int_equal(orca_agent_add(w[k], &d, NULL), ORCA_OK);
		}
	}
	for (int step = 0; step < 200; ++step) {
		for (int k = 0; k < 2; ++k)
			assert_int_equal(orca_world_step(w[k], sc.time_step), ORCA_OK);
		for (uint32_t i = 0; i < sc.agent_count; ++i) {
			orca_agent_state a, b;
			assert_int_equal(orca_agent_get(w[0], ids[0][i], &a), ORCA_OK);
			assert_int_equal(orca_agent_get(w[1], ids[1][i], &b), ORCA_OK);
			assert_memory_equal(&a.position, &b.position, sizeof a.position);
			assert_memory_equal(&a.velocity, &b.velocity, sizeof a.velocity);
		}
	}
	for (int k = 0; k < 2; ++k)
		orca_world_destroy(w[k]);
	scenario_free(&sc);
}

/* Where the CPU has AVX the engine builds the agent lines eight at a time
 * and runs the AVX build of the linear programs, and with AVX2 it scans the
 * neighbour grid eight at a time; the SSE2 paths every x86-64 has
 * must give the same bits: one world each
 * way, in both avoidance modes, with and without the fast paths. */
static void test_avx_matches_sse2(void **state)
{
	(void)state;
	scenario sc;
	char err[256];
	assert_int_equal(scenario_load(CROWD_REF_DIR "/random1000_setup.csv", &sc, err, sizeof err), 0);
	sc.agent_count = 400;
	orca_agent_id ids[400];
	for (int config = 0; config < 3; ++config) {
		orca_world *w[2];
		for (int k = 0; k < 2; ++k) {
			assert_int_equal(scenario_make_world(&sc, 1, &w[k], ids), ORCA_OK);
			w[k]->simd_sse2_only = k == 1;
			if (config == 1)
				assert_int_equal(orca_world_set_avoidance(w[k], ORCA_AVOIDANCE_QUALITY), ORCA_OK);
			if (config == 2) {
				/* far away, another weight and mask: the general paths */
				orca_agent_def d = sc.agent;
				d.position = (orca_vec2){1e6f, 1e6f};
				d.target = d.position;
				d.weight = 0.3f;
				d.layer = 2;
				d.mask = 2;
				assert_int_equal(orca_agent_add(w[k], &d, NULL), ORCA_OK);
			}
		}
		for (int step = 0; step < 200; ++step) {
			for (int k = 0; k < 2; ++k)
				assert_int_equal(orca_world_step(w[k], sc.time_step), ORCA_OK);
			if (orca_world_state_hash(w[0]) != orca_world_state_hash(w[1]))
				fprintf(stderr, "config %d: AVX and SSE2 differ at step %d\n", config, step + 1);
			assert_true(orca_world_state_hash(w[0]) == orca_world_state_hash(w[1]));
		}
		for (int k = 0; k < 2; ++k)
			orca_world_destroy(w[k]);
	}
	scenario_free(&sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_circle_workers),
	    cmocka_unit_test(test_random_workers),
	    cmocka_unit_test(test_general_paths_match_fast_paths),
	    cmocka_unit_test(test_avx_matches_sse2),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
