/* test_behaviour.c — what the engine adds to RVO2, and properties ORCA must
 * keep: avoidance weights (shares, weight 0 never yields, both 0 = both 0.5),
 * layers and masks, a weight-0 agent crossing a crowd in a straight line,
 * arrival without overshoot, every agent of a circle reaching its goal, and
 * no overlap in circle scenarios. */
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

static orca_world *make_world(int workers)
{
	orca_world_def d = orca_default_world_def();
	d.worker_count = workers;
	orca_world *w = NULL;
	assert_int_equal(orca_world_create(&d, &w), ORCA_OK);
	return w;
}

static orca_agent_id walker(orca_world *w, float x, float y, float tx, float ty, float weight)
{
	orca_agent_def d = orca_default_agent_def();
	d.position = (orca_vec2){x, y};
	d.steer_mode = ORCA_STEER_TARGET;
	d.target = (orca_vec2){tx, ty};
	d.weight = weight;
	orca_agent_id id;
	assert_int_equal(orca_agent_add(w, &d, &id), ORCA_OK);
	return id;
}

static orca_vec2 pos(orca_world *w, orca_agent_id id)
{
	orca_agent_state st;
	assert_int_equal(orca_agent_get(w, id, &st), ORCA_OK);
	return st.position;
}

typedef struct head_on {
	float dev_a, dev_b, min_dist;
	uint64_t hash;
} head_on;

/* Two agents walking at each other along y = 0 (b slightly off-axis so the
 * side they pass on is defined); returns their largest sideways deviations. */
static head_on run_head_on(float wa, float wb)
{
	orca_world *w = make_world(1);
	const orca_agent_id a = walker(w, -15, 0, 15, 0, wa);
	const orca_agent_id b = walker(w, 15, 0.1f, -15, 0.1f, wb);
	head_on r = {0, 0, 1e9f, 0};
	for (int s = 0; s < 200; ++s) {
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
		const orca_vec2 pa = pos(w, a), pb = pos(w, b);
		r.dev_a = fmaxf(r.dev_a, fabsf(pa.y));
		r.dev_b = fmaxf(r.dev_b, fabsf(pb.y - 0.1f));
		r.min_dist = fminf(r.min_dist, hypotf(pa.x - pb.x, pa.y - pb.y));
	}
	r.hash = orca_world_state_hash(w);
	orca_world_destroy(w);
	return r;
}

static void test_weights(void **state)
{
	(void)state;
	const head_on even = run_head_on(0.5f, 0.5f);
	fprintf(stderr, "weights 0.5/0.5: deviations %.3f %.3f, closest %.3f\n", (double)even.dev_a,
	        (double)even.dev_b, (double)even.min_dist);
	assert_true(even.dev_a > 0.5f && even.dev_b > 0.5f);
	assert_true(fabsf(even.dev_a - even.dev_b) < 0.2f * even.dev_a);
	assert_true(even.min_dist >= 3.0f - 0.05f);

	/* a takes 20 %, b 80 % */
	const head_on skew = run_head_on(0.2f, 0.8f);
	fprintf(stderr, "weights 0.2/0.8: deviations %.3f %.3f\n", (double)skew.dev_a, (double)skew.dev_b);
	assert_true(skew.dev_a < 0.5f * skew.dev_b);
	assert_true(skew.min_dist >= 3.0f - 0.05f);

	/* weight 0 never yields: a walks the straight line, b takes it all */
	const head_on vip = run_head_on(0.0f, 0.5f);
	fprintf(stderr, "weights 0/0.5: deviations %.3f %.3f\n", (double)vip.dev_a, (double)vip.dev_b);
	assert_true(vip.dev_a == 0.0f);
	assert_true(vip.dev_b > 1.0f);
	assert_true(vip.min_dist >= 3.0f - 0.05f);

	/* both 0: each takes half, bit for bit the same as both 0.5 */
	const head_on zero = run_head_on(0.0f, 0.0f);
	assert_true(zero.hash == even.hash);
	/* scaling both weights changes nothing either (1/(1+1) == 0.5) */
	assert_true(run_head_on(1.0f, 1.0f).hash == even.hash);
}

static void test_layers_and_masks(void **state)
{
	(void)state;
	orca_world *w = make_world(1);
	orca_agent_def d = orca_default_agent_def();
	d.steer_mode = ORCA_STEER_TARGET;
	/* a on layer 1 avoids layer 1 only; b on layer 2 avoids layer 2 only */
	d.position = (orca_vec2){-15, 0};
	d.target = (orca_vec2){15, 0};
	d.layer = 1;
	d.mask = 1;
	orca_agent_id a, b;
	assert_int_equal(orca_agent_add(w, &d, &a), ORCA_OK);
	d.position = (orca_vec2){15, 0};
	d.target = (orca_vec2){-15, 0};
	d.layer = 2;
	d.mask = 2;
	assert_int_equal(orca_agent_add(w, &d, &b), ORCA_OK);
	float min_dist = 1e9f;
	for (int s = 0; s < 150; ++s) {
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
		const orca_vec2 pa = pos(w, a), pb = pos(w, b);
		assert_true(pa.y == 0.0f && pb.y == 0.0f); /* straight through each other */
		min_dist = fminf(min_dist, fabsf(pa.x - pb.x));
	}
	assert_true(min_dist < 0.5f);
	orca_world_destroy(w);

	/* one-sided: c ignores e's layer, e still avoids c and takes all of it */
	w = make_world(1);
	d.position = (orca_vec2){-15, 0};
	d.target = (orca_vec2){15, 0};
	d.layer = 1;
	d.mask = ~4u;
	orca_agent_id c, e;
	assert_int_equal(orca_agent_add(w, &d, &c), ORCA_OK);
	d.position = (orca_vec2){15, 0.1f};
	d.target = (orca_vec2){-15, 0.1f};
	d.layer = 4;
	d.mask = UINT32_MAX;
	assert_int_equal(orca_agent_add(w, &d, &e), ORCA_OK);
	min_dist = 1e9f;
	for (int s = 0; s < 150; ++s) {
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
		const orca_vec2 pc = pos(w, c), pe = pos(w, e);
		assert_true(pc.y == 0.0f);
		min_dist = fminf(min_dist, hypotf(pc.x - pe.x, pc.y - pe.y));
	}
	assert_true(min_dist >= 3.0f - 0.05f);
	orca_world_destroy(w);
}

/* A weight-0 agent crosses a standing crowd in a straight line; the crowd
 * parts around it. */
static void test_vip_straight_through_crowd(void **state)
{
	(void)state;
	orca_world *w = make_world(2);
	orca_agent_def d = orca_default_agent_def();
	d.radius = 1.0f;
	d.max_speed = 3.0f;
	enum { ROWS = 5, COLS = 8 };
	orca_agent_id crowd[ROWS * COLS];
	for (int r = 0; r < ROWS; ++r)
		for (int c = 0; c < COLS; ++c) {
			d.position = (orca_vec2){(float)c * 5.0f - 17.5f, (float)r * 5.0f - 10.0f + 0.3f};
			d.steer_mode = ORCA_STEER_TARGET; /* each wants to stay where it stands */
			d.target = d.position;
			assert_int_equal(orca_agent_add(w, &d, &crowd[r * COLS + c]), ORCA_OK);
		}
	orca_agent_def v = orca_default_agent_def();
	v.radius = 1.0f;
	v.position = (orca_vec2){-40, 0};
	v.steer_mode = ORCA_STEER_TARGET;
	v.target = (orca_vec2){40, 0};
	v.pref_speed = 1.0f;
	v.weight = 0.0f;
	orca_agent_id vip;
	assert_int_equal(orca_agent_add(w, &v, &vip), ORCA_OK);
	float min_dist = 1e9f, last_x = -40.0f;
	orca_agent_state st;
	for (int s = 0; s < 400; ++s) {
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
		assert_int_equal(orca_agent_get(w, vip, &st), ORCA_OK);
		assert_true(st.position.y == 0.0f);    /* straight line */
		assert_true(st.position.x >= last_x);  /* never pushed back */
		last_x = st.position.x;
		for (int i = 0; i < ROWS * COLS; ++i) {
			const orca_vec2 p = pos(w, crowd[i]);
			min_dist = fminf(min_dist, hypotf(p.x - st.position.x, p.y - st.position.y));
		}
	}
	fprintf(stderr, "vip: reached x=%.3f, closest crowd centre %.3f (radius sum 2)\n", (double)st.position.x,
	        (double)min_dist);
	assert_true(st.arrived);
	assert_true(min_dist >= 2.0f - 0.1f); /* the crowd got out of the way */
	orca_world_destroy(w);
}

static void test_arrival_never_overshoots(void **state)
{
	(void)state;
	orca_world *w = make_world(1);
	orca_agent_def d = orca_default_agent_def();
	d.position = (orca_vec2){0, 0};
	d.steer_mode = ORCA_STEER_TARGET;
	d.target = (orca_vec2){10.1f, 3.3f};
	d.pref_speed = 1.7f;
	d.arrival_distance = 0.01f;
	orca_agent_id a;
	assert_int_equal(orca_agent_add(w, &d, &a), ORCA_OK);
	const float dir_x = 10.1f, dir_y = 3.3f;
	float last = 1e9f;
	orca_agent_state st;
	int arrived_at = -1;
	for (int s = 0; s < 60; ++s) {
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
		assert_int_equal(orca_agent_get(w, a, &st), ORCA_OK);
		const float gx = d.target.x - st.position.x, gy = d.target.y - st.position.y;
		const float dist = hypotf(gx, gy);
		assert_true(dist <= last + 1e-6f);           /* never moves away */
		assert_true(gx * dir_x + gy * dir_y >= -1e-4f); /* never passes the target */
		assert_true(hypotf(st.velocity.x, st.velocity.y) <= 1.7f + 1e-5f);
		last = dist;
		if (st.arrived && arrived_at < 0)
			arrived_at = s;
	}
	assert_true(arrived_at > 0);
	assert_true(last <= 0.01f);
	assert_true(st.arrived);
	/* a new target clears the flag */
	assert_int_equal(orca_agent_set_target(w, a, (orca_vec2){0, 0}), ORCA_OK);
	assert_int_equal(orca_agent_get(w, a, &st), ORCA_OK);
	assert_false(st.arrived);
	orca_step_profile p;
	assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
	orca_world_profile(w, &p);
	assert_int_equal(p.agents, 1);
	assert_int_equal(p.arrived, 0);
	orca_world_destroy(w);
}

/* Runs circle n (R = 200n/250, RVO2's Circle example scaled) until everyone
 * is home or `cap` steps; returns whether all got home and the closest two
 * centres ever came. */
static bool run_circle(uint32_t n, orca_steer_mode mode, int cap, float *min_dist_out, int *steps_out)
{
	scenario sc;
	assert_int_equal(scenario_circle(n, &sc), 0);
	sc.agent.steer_mode = mode;
	sc.agent.arrival_distance = sc.agent.radius;
	orca_agent_id *ids = calloc(n, sizeof *ids);
	orca_world *w;
	assert_int_equal(scenario_make_world(&sc, 2, &w, ids), ORCA_OK);
	orca_vec2 *p = calloc(n, sizeof *p);
	float min_dist = 1e9f;
	int step = 0;
	bool done = false;
	for (; step < cap && !done; ++step) {
		assert_int_equal(orca_world_step(w, sc.time_step), ORCA_OK);
		for (uint32_t i = 0; i < n; ++i)
			p[i] = pos(w, ids[i]);
		for (uint32_t i = 0; i < n; ++i)
			for (uint32_t j = i + 1; j < n; ++j)
				min_dist = fminf(min_dist, hypotf(p[i].x - p[j].x, p[i].y - p[j].y));
		orca_step_profile prof;
		orca_world_profile(w, &prof);
		done = mode == ORCA_STEER_TARGET_RVO2 ? scenario_done(&sc, w, ids) : prof.arrived == n;
	}
	fprintf(stderr, "circle %u (steer mode %d): %s after %d steps, closest centres %.4f (radius sum 3)\n", n,
	        (int)mode, done ? "all home" : "NOT all home", step, (double)min_dist);
	orca_world_destroy(w);
	free(ids);
	free(p);
	scenario_free(&sc);
	*min_dist_out = min_dist;
	*steps_out = step;
	return done;
}

/* Circles of 16 to 48 agents: no two agents overlap (RVO2's rule; these
 * deadlock near the centre exactly as RVO2 does, see circle16). */
static void test_circle_no_overlap(void **state)
{
	(void)state;
	for (uint32_t n = 16; n <= 48; n += 16) {
		float min_dist;
		int steps;
		run_circle(n, ORCA_STEER_TARGET_RVO2, 600, &min_dist, &steps);
		assert_true(min_dist >= 3.0f - 0.05f);
	}
}

/* Circle 100: every agent gets home, with RVO2's rule and with arrival. */
static void test_circle_reaches_goals(void **state)
{
	(void)state;
	float min_dist;
	int steps;
	assert_true(run_circle(100, ORCA_STEER_TARGET_RVO2, 3000, &min_dist, &steps));
	assert_true(min_dist > 2.0f); /* dense centre: ORCA's 3-D fallback lets discs overlap a little */
	assert_true(run_circle(100, ORCA_STEER_TARGET, 3000, &min_dist, &steps));
	assert_true(min_dist > 2.0f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_weights),
	    cmocka_unit_test(test_layers_and_masks),
	    cmocka_unit_test(test_vip_straight_through_crowd),
	    cmocka_unit_test(test_arrival_never_overshoots),
	    cmocka_unit_test(test_circle_no_overlap),
	    cmocka_unit_test(test_circle_reaches_goals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
