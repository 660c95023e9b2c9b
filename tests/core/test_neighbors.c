/* test_neighbors.c — the neighbour search's fast path (a uniform grid, used
 * for crowds of 256 agents and more with plain masks) must give RVO2's
 * neighbour lists exactly: the same end state as RVO2 itself on a dense
 * random crowd, and the same state after every step as the kd-tree path
 * (forced by a mask that changes nothing but rules the grid out), also on a
 * lattice where equal distances are everywhere, and across removals, adds
 * and teleports. Its scan has an AVX2 build and an SSE2 one: every query of
 * both must answer alike, and as a search of every agent would. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../core/src/agent_grid_scan.h" /* the grid scan's two builds */
#include "../../core/src/internal.h"
#include "scenario.h"

/* RVO2's own end state (the engine's state hashes over RVO2's positions and
 * velocities) after 300 steps of random1000_setup.csv: printed by
 * tests/bench/rvo2_driver.cpp built from snape/RVO2 1c25b27 by
 * tests/bench/vs_rvo2.sh (`rvo2_driver setup random1000_setup.csv --steps 300`:
 * "final state hash" and "final state hash v1"). */
#define RVO2_RANDOM1000_300 0x499b8196def0d304ull
#define RVO2_RANDOM1000_300_V1 0x29b4b885699dbdf6ull

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
		assert_true(orca_world_state_hash_v1(w) == RVO2_RANDOM1000_300_V1);
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

/* Every agent's distance from (x, y) under radius, self left out, sorted (by
 * insertion: few). The same float operations as the scan's. */
static uint32_t all_within(const orca_world *w, uint32_t self, float x, float y, float radius, nb_entry *all)
{
	const float range_sq = radius * radius;
	uint32_t n = 0;
	for (uint32_t k = 0; k < w->order_count; ++k) {
		const float dx = x - w->grid_x[k], dy = y - w->grid_y[k];
		const float d = dx * dx + dy * dy;
		if (!(d < range_sq) || w->grid_index[k] == self)
			continue;
		uint32_t i = n++;
		for (; i != 0 && d < all[i - 1].dist_sq; --i)
			all[i] = all[i - 1];
		all[i] = (nb_entry){d, w->grid_index[k]};
	}
	return n;
}

typedef struct scan_tally {
	uint32_t answered, refused, answered_over_16; /* the last: more than 16 candidates ranked */
} scan_tally;

/* One query to both builds: the same count or refusal, the same list; an
 * answer is the cap nearest of all_within, which has no tie among them. */
static void check_query(const orca_world *w, uint32_t self, float x, float y, float radius, uint32_t cap,
                        nb_entry *all, scan_tally *t)
{
	nb_entry by_avx2[40], by_sse2[40];
	const uint32_t a = orca_agent_grid_scan(w, self, (vec2){x, y}, radius, cap, by_avx2, true);
	const uint32_t b = orca_agent_grid_scan(w, self, (vec2){x, y}, radius, cap, by_sse2, false);
	if (a != b)
		fprintf(stderr, "query (%g, %g) r %g cap %u: AVX2 %u, SSE2 %u\n", (double)x, (double)y, (double)radius, cap,
		        a, b);
	assert_int_equal(a, b);
	const uint32_t n = all_within(w, self, x, y, radius, all);
	if (a == ORCA_NONE) {
		t->refused++;
		return;
	}
	t->answered++;
	t->answered_over_16 += n > 16;
	assert_int_equal(a, n < cap ? n : cap);
	for (uint32_t i = 0; i < a; ++i) {
		assert_memory_equal(&by_avx2[i], &by_sse2[i], sizeof by_avx2[i]);
		assert_memory_equal(&by_avx2[i].dist_sq, &all[i].dist_sq, sizeof all[i].dist_sq);
		assert_int_equal(by_avx2[i].index, all[i].index);
	}
	if (n > a) /* no tie across the cap's edge either */
		assert_true(all[a].dist_sq > all[a - 1].dist_sq);
}

/* Queries around every agent of a stepped world (grid_on): at the agent
 * itself (left out), beside it, and far off the crowd's edge, with radii from
 * under a cell to more than the scan takes and list lengths 1 to 16. */
static void check_world(const orca_world *w, scan_tally *t)
{
	assert_true(w->grid_on);
	static const float radii[] = {0.3f, 1.0f, 2.0f, 3.0f, 4.5f, 6.0f, 9.0f, 15.0f, 40.0f};
	static const uint32_t caps[] = {1, 4, 11, 16};
	nb_entry *all = calloc(w->order_count, sizeof *all);
	assert_non_null(all);
	for (uint32_t k = 0; k < w->order_count; ++k) {
		const float x = w->grid_x[k], y = w->grid_y[k];
		const float at[3][2] = {{x, y}, {x + 0.37f, y - 0.61f}, {x * 1.5f + 7.0f, y * 1.5f - 5.0f}};
		const uint32_t self[3] = {w->grid_index[k], w->order_count, w->order_count};
		for (int q = 0; q < 3; ++q)
			for (size_t r = 0; r < sizeof radii / sizeof radii[0]; ++r)
				for (size_t c = 0; c < sizeof caps / sizeof caps[0]; ++c)
					check_query(w, self[q], at[q][0], at[q][1], radii[r], caps[c], all, t);
	}
	free(all);
}

static void test_grid_scan_avx2_matches_sse2(void **state)
{
	(void)state;
	if (!orca_agent_grid_scan_has_avx2()) {
		fprintf(stderr, "no AVX2 on this CPU: only the SSE2 scan runs here\n");
		skip();
	}
	scenario sc;
	char err[256];
	assert_int_equal(scenario_load(CROWD_REF_DIR "/random1000_setup.csv", &sc, err, sizeof err), 0);
	scan_tally t = {0};
	for (int quality = 0; quality < 2; ++quality) {
		orca_agent_id *ids = calloc(sc.agent_count, sizeof *ids);
		orca_world *w = make(&sc, 1, PLAIN, ids);
		if (quality)
			assert_int_equal(orca_world_set_avoidance(w, ORCA_AVOIDANCE_QUALITY), ORCA_OK);
		for (int s = 0; s < 3; ++s)
			assert_int_equal(orca_world_step(w, sc.time_step), ORCA_OK);
		check_world(w, &t);
		orca_world_destroy(w);
		free(ids);
	}
	scenario_free(&sc);
	/* the lattice: equal distances everywhere, refused alike */
	assert_int_equal(scenario_circle(16, &sc), 0);
	const uint32_t side = 20;
	sc.agent_count = side * side;
	sc.start = realloc(sc.start, sc.agent_count * sizeof *sc.start);
	sc.goal = realloc(sc.goal, sc.agent_count * sizeof *sc.goal);
	for (uint32_t i = 0; i < sc.agent_count; ++i) {
		sc.start[i] = (orca_vec2){4.0f * (float)(i % side), 4.0f * (float)(i / side)};
		sc.goal[i] = sc.start[i];
	}
	orca_agent_id ids[20 * 20];
	orca_world *w = make(&sc, 1, PLAIN, ids);
	assert_int_equal(orca_world_step(w, sc.time_step), ORCA_OK);
	check_world(w, &t);
	orca_world_destroy(w);
	scenario_free(&sc);
	fprintf(stderr, "grid scan: %u queries answered alike (%u with more than 16 candidates), %u refused alike\n",
	        t.answered, t.answered_over_16, t.refused);
	assert_true(t.answered > 0 && t.answered_over_16 > 0 && t.refused > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random1000_equals_rvo2),
	    cmocka_unit_test(test_random_grid_equals_kd_tree),
	    cmocka_unit_test(test_lattice_ties),
	    cmocka_unit_test(test_lattice_ties_every_k),
	    cmocka_unit_test(test_edits_grid_equals_kd_tree),
	    cmocka_unit_test(test_grid_scan_avx2_matches_sse2),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
