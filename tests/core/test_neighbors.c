/* test_neighbors.c — the neighbour search's fast path (a uniform grid, used
 * for crowds of 256 agents and more with plain masks) must give RVO2's
 * neighbour lists exactly: the same end state as RVO2 itself on a dense
 * random crowd, and the same state after every step as the kd-tree path
 * (forced by a mask that changes nothing but rules the grid out), also on a
 * lattice where equal distances are everywhere, and across removals, adds
 * and teleports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "scenario.h"

/* RVO2's own end state (the engine's state hash over RVO2's positions and
 * velocities) after 300 steps of random1000_setup.csv: printed by
 * tests/bench/rvo2_driver.cpp built from snape/RVO2 1c25b27 by
 * tests/bench/vs_rvo2.sh (`rvo2_driver setup random1000_setup.csv --steps 300`). */
#define RVO2_RANDOM1000_300 0x29b4b885699dbdf6ull

enum { PLAIN, KD_ONLY };

static orca_world *make(const scenario *sc, int workers, int mode, orca_agent_id *ids)
{
	orca_world *w;
	assert_int_equal(scenario_make_world(sc, workers, &w, ids), ORCA_OK);
	if (mode == KD_ONLY) {
		/* every agent is on layer 1, so this mask still sees everyone; but
		 * the masks are no longer plain and the grid stands aside */
		orca_agent_state st;
		assert_int_equal(orca_agent_get(w, ids[0], &st), ORCA_OK);
		orca_agent_def d = sc->agent;
		d.position = st.position;
		d.target = sc->goal[0];
		d.mask = 0x7fffffffu;
		assert_int_equal(orca_agent_set_def(w, ids[0], &d), ORCA_OK);
	}
	return w;
}

static void test_random1000_equals_rvo2(void **state)
{
	(void)state;
	scenario sc;
	char err[256];
	assert_int_equal(scenario_load(CROWD_REF_DIR "/random1000_setup.csv", &sc, err, sizeof err), 0);
	for (int workers = 1; workers <= 2; ++workers) {
		orca_agent_id *ids = calloc(sc.agent_count, sizeof *ids);
		orca_world *w = make(&sc, workers, PLAIN, ids);
		for (int s = 0; s < 300; ++s)
			assert_int_equal(orca_world_step(w, sc.time_step), ORCA_OK);
		assert_true(orca_world_state_hash(w) == RVO2_RANDOM1000_300);
		orca_world_destroy(w);
		free(ids);
	}
	scenario_free(&sc);
}

/* Steps a grid run and a kd-tree run side by side; `edit` changes both
 * worlds alike between steps. */
static void compare_paths(const scenario *sc, int steps, void (*edit)(orca_world *, orca_agent_id *, int))
{
	orca_agent_id *ia = calloc(sc->agent_count, sizeof *ia), *ib = calloc(sc->agent_count, sizeof *ib);
	orca_world *a = make(sc, 1, PLAIN, ia), *b = make(sc, 2, KD_ONLY, ib);
	for (int s = 0; s < steps; ++s) {
		if (edit) {
			edit(a, ia, s);
			edit(b, ib, s);
		}
		assert_int_equal(orca_world_step(a, sc->time_step), ORCA_OK);
		assert_int_equal(orca_world_step(b, sc->time_step), ORCA_OK);
		if (orca_world_state_hash(a) != orca_world_state_hash(b))
			fprintf(stderr, "grid and kd-tree paths differ after step %d\n", s + 1);
		assert_true(orca_world_state_hash(a) == orca_world_state_hash(b));
	}
	orca_world_destroy(a);
	orca_world_destroy(b);
	free(ia);
	free(ib);
}

static void test_random_grid_equals_kd_tree(void **state)
{
	(void)state;
	scenario sc;
	char err[256];
	assert_int_equal(scenario_load(CROWD_REF_DIR "/random1000_setup.csv", &sc, err, sizeof err), 0);
	compare_paths(&sc, 200, NULL);
	scenario_free(&sc);
}

/* A perfect lattice: every agent has four neighbours at exactly one distance,
 * four at the next, so nearly every list has ties and goes to the kd-tree;
 * the goals break the symmetry over time. */
static void test_lattice_ties(void **state)
{
	(void)state;
	scenario sc;
	assert_int_equal(scenario_circle(16, &sc), 0); /* defaults, then replace the agents */
	const uint32_t side = 24;
	sc.agent_count = side * side;
	sc.start = realloc(sc.start, sc.agent_count * sizeof *sc.start);
	sc.goal = realloc(sc.goal, sc.agent_count * sizeof *sc.goal);
	for (uint32_t i = 0; i < sc.agent_count; ++i) {
		sc.start[i] = (orca_vec2){4.0f * (float)(i % side), 4.0f * (float)(i / side)};
		sc.goal[i] = (orca_vec2){4.0f * (float)(side - 1 - i % side), 4.0f * (float)(i / side)};
	}
	compare_paths(&sc, 150, NULL);
	scenario_free(&sc);
}

/* The same lattice with other list lengths: the first ring's four equal
 * distances then fall inside the list, across its end or at its k-th place,
 * and each must send the agent to the kd-tree. */
static void test_lattice_ties_every_k(void **state)
{
	(void)state;
	const uint32_t ks[] = {1, 3, 4, 5, 8, 12};
	for (size_t t = 0; t < sizeof ks / sizeof ks[0]; ++t) {
		scenario sc;
		assert_int_equal(scenario_circle(16, &sc), 0);
		const uint32_t side = 20;
		sc.agent_count = side * side;
		sc.start = realloc(sc.start, sc.agent_count * sizeof *sc.start);
		sc.goal = realloc(sc.goal, sc.agent_count * sizeof *sc.goal);
		for (uint32_t i = 0; i < sc.agent_count; ++i) {
			sc.start[i] = (orca_vec2){4.0f * (float)(i % side), 4.0f * (float)(i / side)};
			sc.goal[i] = (orca_vec2){4.0f * (float)(i / side), 4.0f * (float)(side - 1 - i % side)};
		}
		sc.agent.max_neighbors = ks[t];
		compare_paths(&sc, 60, NULL);
		scenario_free(&sc);
	}
}

static void edit_world(orca_world *w, orca_agent_id *ids, int step)
{
	if (step == 40) {
		for (uint32_t i = 3; i < 1000; i += 9)
			assert_int_equal(orca_agent_remove(w, ids[i]), ORCA_OK);
	}
	if (step == 60) {
		for (uint32_t i = 3; i < 1000; i += 9) {
			orca_agent_def d = orca_default_agent_def();
			d.position = (orca_vec2){(float)(i % 50) * 2.5f + 0.3f, (float)(i / 50) * 2.5f + 0.1f};
			d.steer_mode = ORCA_STEER_TARGET_RVO2;
			d.pref_speed = 1.0f;
			d.target = (orca_vec2){60.0f, 60.0f};
			assert_int_equal(orca_agent_add(w, &d, &ids[i]), ORCA_OK);
		}
	}
	if (step == 80) {
		/* teleports: last step's neighbour distances mean nothing now */
		for (uint32_t i = 5; i < 1000; i += 11)
			assert_int_equal(orca_agent_set_position(w, ids[i], (orca_vec2){(float)(i % 7) * 30.0f, 5.0f}),
			                 ORCA_OK);
	}
}

static void test_edits_grid_equals_kd_tree(void **state)
{
	(void)state;
	scenario sc;
	char err[256];
	assert_int_equal(scenario_load(CROWD_REF_DIR "/random1000_setup.csv", &sc, err, sizeof err), 0);
	compare_paths(&sc, 120, edit_world);
	scenario_free(&sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random1000_equals_rvo2),
	    cmocka_unit_test(test_random_grid_equals_kd_tree),
	    cmocka_unit_test(test_lattice_ties),
	    cmocka_unit_test(test_lattice_ties_every_k),
	    cmocka_unit_test(test_edits_grid_equals_kd_tree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
