/* test_replay.c — the engine against RVO2's own trajectories: circle16 (2,000
 * steps) and blocks (steps 0-600) must match every agent's position and
 * velocity at every step bit for bit; plus properties of those runs (no overlap
 * in the circle, blocks reaching its goals, never entering an obstacle). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scenario.h"

typedef struct ref_row {
	float x, y, vx, vy;
} ref_row;

/* Reads step,agent_id,x,y,vx,vy rows into rows[step * agents + id]. */
static ref_row *load_reference(const char *path, uint32_t agents, uint32_t *steps_out)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[256];
	assert_non_null(fgets(line, sizeof line, f));
	uint32_t cap = 1024, steps = 0;
	ref_row *rows = calloc((size_t)cap * agents, sizeof *rows);
	assert_non_null(rows);
	while (fgets(line, sizeof line, f)) {
		unsigned step, id;
		float x, y, vx, vy;
		assert_int_equal(sscanf(line, "%u,%u,%f,%f,%f,%f", &step, &id, &x, &y, &vx, &vy), 6);
		assert_true(id < agents);
		if (step >= cap) {
			rows = realloc(rows, (size_t)cap * 2 * agents * sizeof *rows);
			assert_non_null(rows);
			cap *= 2;
		}
		rows[(size_t)step * agents + id] = (ref_row){x, y, vx, vy};
		if (step + 1 > steps)
			steps = step + 1;
	}
	fclose(f);
	*steps_out = steps;
	return rows;
}

/* Replays a set-up against its reference, asserting every position and velocity
 * bit-identical; returns how many times the 3-D fallback (LP3) ran on the way. */
static uint64_t replay(const char *setup_name, const char *ref_name, uint32_t steps_wanted, int workers,
                       scenario *sc_out, float *min_dist_out)
{
	char setup[512], ref[512], err[256];
	snprintf(setup, sizeof setup, "%s/%s", CROWD_REF_DIR, setup_name);
	snprintf(ref, sizeof ref, "%s/%s", CROWD_REF_DIR, ref_name);
	scenario sc;
	assert_int_equal(scenario_load(setup, &sc, err, sizeof err), 0);
	uint32_t ref_steps;
	ref_row *rows = load_reference(ref, sc.agent_count, &ref_steps);
	assert_int_equal(ref_steps, steps_wanted + 1);

	orca_agent_id *ids = calloc(sc.agent_count, sizeof *ids);
	orca_world *w;
	assert_int_equal(scenario_make_world(&sc, workers, &w, ids), ORCA_OK);
	float max_diff = 0.0f, min_dist = 1e30f;
	uint32_t mismatches = 0;
	uint64_t lp3_fallbacks = 0;
	orca_vec2 *pos = calloc(sc.agent_count, sizeof *pos);
	for (uint32_t step = 0; step <= steps_wanted; ++step) {
		if (step > 0) {
			assert_int_equal(orca_world_step(w, sc.time_step), ORCA_OK);
			orca_step_profile prof;
			orca_world_profile(w, &prof);
			lp3_fallbacks += prof.lp3_fallbacks;
		}
		for (uint32_t i = 0; i < sc.agent_count; ++i) {
			orca_agent_state st;
			assert_int_equal(orca_agent_get(w, ids[i], &st), ORCA_OK);
			const ref_row r = rows[(size_t)step * sc.agent_count + i];
			const float d = fabsf(st.position.x - r.x) + fabsf(st.position.y - r.y);
			if (d > max_diff)
				max_diff = d;
			if (memcmp(&st.position.x, &r.x, 4) || memcmp(&st.position.y, &r.y, 4) ||
			    memcmp(&st.velocity.x, &r.vx, 4) || memcmp(&st.velocity.y, &r.vy, 4)) {
				if (mismatches++ == 0)
					fprintf(stderr, "%s: first difference at step %u agent %u: (%.9g,%.9g) vs (%.9g,%.9g)\n",
					        setup_name, step, i, (double)st.position.x, (double)st.position.y, (double)r.x,
					        (double)r.y);
			}
			pos[i] = st.position;
		}
		for (uint32_t i = 0; i < sc.agent_count; ++i)
			for (uint32_t j = i + 1; j < sc.agent_count; ++j) {
				const float dx = pos[i].x - pos[j].x, dy = pos[i].y - pos[j].y;
				const float d = sqrtf(dx * dx + dy * dy);
				if (d < min_dist)
					min_dist = d;
			}
	}
	fprintf(stderr, "%s: %u steps x %u agents, max |position difference| %.9g, bit mismatches %u, 3-D fallbacks %llu\n",
	        setup_name, steps_wanted, sc.agent_count, (double)max_diff, mismatches, (unsigned long long)lp3_fallbacks);
	assert_int_equal(mismatches, 0);
	orca_world_destroy(w);
	free(ids);
	free(rows);
	free(pos);
	if (min_dist_out)
		*min_dist_out = min_dist;
	if (sc_out)
		*sc_out = sc;
	else
		scenario_free(&sc);
	return lp3_fallbacks;
}

static void test_circle16_bit_identical(void **state)
{
	(void)state;
	float min_dist;
	scenario sc;
	replay("circle16_setup.csv", "circle16.csv", 2000, 1, &sc, &min_dist);
	/* no overlap: centre distance never below the radius sum (3.0) minus a
	 * small tolerance */
	fprintf(stderr, "circle16: smallest centre distance %.6f (radius sum %.1f)\n", (double)min_dist,
	        2.0 * (double)sc.agent.radius);
	assert_true(min_dist >= 2.0f * sc.agent.radius - 0.05f);
	scenario_free(&sc);
}

static void test_circle16_bit_identical_with_workers(void **state)
{
	(void)state;
	replay("circle16_setup.csv", "circle16.csv", 2000, 3, NULL, NULL);
}

static void test_blocks_bit_identical(void **state)
{
	(void)state;
	/* Dense enough at the blocks' corners that the 3-D fallback runs: it too matches RVO2 bit for bit. */
	assert_true(replay("blocks_setup.txt", "blocks_0-600.csv", 600, 2, NULL, NULL) > 0);
}

/* Blocks to the end: every agent reaches its goal region, none enters a block. */
static void test_blocks_reaches_goals(void **state)
{
	(void)state;
	char setup[512], err[256];
	snprintf(setup, sizeof setup, "%s/blocks_setup.txt", CROWD_REF_DIR);
	scenario sc;
	assert_int_equal(scenario_load(setup, &sc, err, sizeof err), 0);
	orca_agent_id *ids = calloc(sc.agent_count, sizeof *ids);
	orca_world *w;
	assert_int_equal(scenario_make_world(&sc, 2, &w, ids), ORCA_OK);
	uint32_t step = 0;
	bool done = false;
	while (!done && step < 6000) {
		assert_int_equal(orca_world_step(w, sc.time_step), ORCA_OK);
		++step;
		for (uint32_t i = 0; i < sc.agent_count; ++i) {
			orca_agent_state st;
			assert_int_equal(orca_agent_get(w, ids[i], &st), ORCA_OK);
			/* the blocks are the squares 10..40 in |x| and |y| */
			const float ax = fabsf(st.position.x), ay = fabsf(st.position.y);
			assert_false(ax > 10.0f && ax < 40.0f && ay > 10.0f && ay < 40.0f);
		}
		done = scenario_done(&sc, w, ids);
	}
	fprintf(stderr, "blocks: every agent at its goal after %u steps (RVO2: 4306)\n", step);
	assert_true(done);
	assert_int_equal(step, 4306);
	orca_world_destroy(w);
	free(ids);
	scenario_free(&sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_circle16_bit_identical),
	    cmocka_unit_test(test_circle16_bit_identical_with_workers),
	    cmocka_unit_test(test_blocks_bit_identical),
	    cmocka_unit_test(test_blocks_reaches_goals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
