/* test_api.c — the engine's public contract: id scheme and stale ids, error
 * codes for bad arguments, no allocation inside a step once capacities are
 * reached (counting allocator), area queries against brute force, obstacles
 * added and removed at run time, profile counters. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "orca/orca.h"

static orca_world *make_world(int workers)
{
	orca_world_def d = orca_default_world_def();
	d.worker_count = workers;
	orca_world *w = NULL;
	assert_int_equal(orca_world_create(&d, &w), ORCA_OK);
	assert_non_null(w);
	return w;
}

static orca_agent_id add_at(orca_world *w, float x, float y)
{
	orca_agent_def d = orca_default_agent_def();
	d.position = (orca_vec2){x, y};
	orca_agent_id id = 0;
	assert_int_equal(orca_agent_add(w, &d, &id), ORCA_OK);
	return id;
}

/* The defaults are RVO2's example defaults (Circle.cpp: setAgentDefaults(15.0f,
 * 10, 10.0f, 10.0f, 1.5f, 2.0f)), with ORCA's reciprocal half and every layer seen. */
static void test_defaults_are_rvo2s(void **state)
{
	(void)state;
	const orca_agent_def d = orca_default_agent_def();
	assert_true(d.neighbor_dist == 15.0f);
	assert_int_equal(d.max_neighbors, 10);
	assert_true(d.time_horizon == 10.0f);
	assert_true(d.time_horizon_obst == 10.0f);
	assert_true(d.radius == 1.5f);
	assert_true(d.max_speed == 2.0f);
	assert_true(d.velocity.x == 0.0f && d.velocity.y == 0.0f);
	assert_true(d.weight == 0.5f);
	assert_int_equal(d.mask, UINT32_MAX);
	assert_int_not_equal(d.layer & d.mask, 0);
	assert_int_equal(d.steer_mode, ORCA_STEER_VELOCITY);
	const orca_world_def w = orca_default_world_def();
	assert_int_equal(w.worker_count, 1);
}

static void test_ids(void **state)
{
	(void)state;
	orca_world *w = make_world(1);
	assert_int_equal(add_at(w, 0, 0), 1);
	assert_int_equal(add_at(w, 5, 0), 2);
	const orca_agent_id c = add_at(w, 10, 0);
	assert_int_equal(c, 3);
	assert_int_equal(orca_world_agent_count(w), 3);
	assert_int_equal(orca_agent_remove(w, 2), ORCA_OK);
	assert_int_equal(orca_agent_check(w, 2), ORCA_ERR_STALE_ID);
	assert_int_equal(orca_agent_remove(w, 2), ORCA_ERR_STALE_ID);
	assert_int_equal(orca_agent_check(w, 0), ORCA_ERR_UNKNOWN_ID);
	assert_int_equal(orca_agent_check(w, 4), ORCA_ERR_UNKNOWN_ID);
	assert_int_equal(orca_agent_check(w, 1u | (5u << ORCA_ID_INDEX_BITS)), ORCA_ERR_UNKNOWN_ID);
	assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
	/* slot 2 comes back with generation 1: a new id, the old one stays stale */
	const orca_agent_id d = add_at(w, 20, 0);
	assert_int_equal(d, 2u | (1u << ORCA_ID_INDEX_BITS));
	assert_int_equal(orca_agent_check(w, 2), ORCA_ERR_STALE_ID);
	assert_int_equal(orca_agent_check(w, d), ORCA_OK);
	orca_agent_id ids[8];
	assert_int_equal(orca_world_agent_ids(w, ids, 8), 3);
	assert_int_equal(ids[0], 1);
	assert_int_equal(ids[1], d);
	assert_int_equal(ids[2], 3);
	assert_int_equal(orca_world_agent_ids(w, ids, 1), 3);
	/* remove and re-add without a step in between: still distinct ids */
	assert_int_equal(orca_agent_remove(w, 1), ORCA_OK);
	const orca_agent_id e = add_at(w, 30, 0);
	assert_true(e != 1);
	assert_int_equal(orca_world_agent_count(w), 3);
	assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
	assert_int_equal(orca_world_step_count(w), 2);
	orca_world_destroy(w);
}

/* A slot whose generation would wrap is retired: an id is never reused. */
static void test_generation_retire(void **state)
{
	(void)state;
	orca_world *w = make_world(1);
	orca_agent_id first = add_at(w, 0, 0), id = first;
	for (int i = 0; i < 5000; ++i) {
		assert_int_equal(orca_agent_remove(w, id), ORCA_OK);
		id = add_at(w, 0, 0);
		assert_true(id != first);
	}
	/* 4096 generations of slot 0, then a new slot */
	assert_true((id & 0xFFFFFu) > 1u);
	assert_int_equal(orca_agent_check(w, first), ORCA_ERR_STALE_ID);
	orca_world_destroy(w);
}

static void *count_alloc_stub(size_t size, void *user)
{
	(void)user;
	return malloc(size);
}

static void test_errors(void **state)
{
	(void)state;
	orca_world *w = make_world(1);
	orca_agent_def d = orca_default_agent_def();
	orca_agent_id id;
	d.position.x = NAN;
	assert_int_equal(orca_agent_add(w, &d, &id), ORCA_ERR_INVALID_ARGUMENT);
	d = orca_default_agent_def();
	d.velocity.y = INFINITY;
	assert_int_equal(orca_agent_add(w, &d, &id), ORCA_ERR_INVALID_ARGUMENT);
	d = orca_default_agent_def();
	d.radius = -1.0f;
	assert_int_equal(orca_agent_add(w, &d, &id), ORCA_ERR_INVALID_ARGUMENT);
	d = orca_default_agent_def();
	d.max_speed = -0.5f;
	assert_int_equal(orca_agent_add(w, &d, &id), ORCA_ERR_INVALID_ARGUMENT);
	d = orca_default_agent_def();
	d.time_horizon = 0.0f;
	assert_int_equal(orca_agent_add(w, &d, &id), ORCA_ERR_INVALID_ARGUMENT);
	d = orca_default_agent_def();
	d.weight = -0.1f;
	assert_int_equal(orca_agent_add(w, &d, &id), ORCA_ERR_INVALID_ARGUMENT);
	d = orca_default_agent_def();
	d.steer_mode = (orca_steer_mode)7;
	assert_int_equal(orca_agent_add(w, &d, &id), ORCA_ERR_INVALID_ARGUMENT);
	assert_int_equal(orca_agent_add(w, NULL, &id), ORCA_ERR_INVALID_ARGUMENT);
	assert_int_equal(orca_world_agent_count(w), 0);

	id = add_at(w, 0, 0);
	assert_int_equal(orca_agent_set_target(w, id, (orca_vec2){NAN, 0}), ORCA_ERR_INVALID_ARGUMENT);
	assert_int_equal(orca_agent_set_pref_velocity(w, id, (orca_vec2){0, INFINITY}), ORCA_ERR_INVALID_ARGUMENT);
	assert_int_equal(orca_agent_set_position(w, id, (orca_vec2){-INFINITY, 0}), ORCA_ERR_INVALID_ARGUMENT);
	d = orca_default_agent_def();
	d.neighbor_dist = -3.0f;
	assert_int_equal(orca_agent_set_def(w, id, &d), ORCA_ERR_INVALID_ARGUMENT);
	assert_int_equal(orca_world_step(w, 0.0f), ORCA_ERR_INVALID_ARGUMENT);
	assert_int_equal(orca_world_step(w, NAN), ORCA_ERR_INVALID_ARGUMENT);
	assert_int_equal(orca_world_step(w, -1.0f), ORCA_ERR_INVALID_ARGUMENT);

	/* stale and unknown ids everywhere */
	assert_int_equal(orca_agent_remove(w, id), ORCA_OK);
	orca_agent_state st;
	assert_int_equal(orca_agent_get(w, id, &st), ORCA_ERR_STALE_ID);
	assert_int_equal(orca_agent_set_target(w, id, (orca_vec2){1, 1}), ORCA_ERR_STALE_ID);
	assert_int_equal(orca_agent_set_pref_velocity(w, id, (orca_vec2){1, 1}), ORCA_ERR_STALE_ID);
	assert_int_equal(orca_agent_set_position(w, id, (orca_vec2){1, 1}), ORCA_ERR_STALE_ID);
	assert_int_equal(orca_agent_set_def(w, id, &d), ORCA_ERR_STALE_ID);
	assert_int_equal(orca_agent_get(w, 12345, &st), ORCA_ERR_UNKNOWN_ID);

	/* polygons */
	const orca_vec2 one[1] = {{0, 0}};
	const orca_vec2 bad[3] = {{0, 0}, {1, NAN}, {0, 1}};
	const orca_vec2 dup[3] = {{0, 0}, {0, 0}, {0, 1}};
	orca_obstacle_id oid;
	assert_int_equal(orca_obstacle_add(w, one, 1, &oid), ORCA_ERR_BAD_POLYGON);
	assert_int_equal(orca_obstacle_add(w, one, 0, &oid), ORCA_ERR_BAD_POLYGON);
	assert_int_equal(orca_obstacle_add(w, bad, 3, &oid), ORCA_ERR_BAD_POLYGON);
	assert_int_equal(orca_obstacle_add(w, dup, 3, &oid), ORCA_ERR_BAD_POLYGON);
	assert_int_equal(orca_obstacle_add(w, NULL, 3, &oid), ORCA_ERR_INVALID_ARGUMENT);
	const orca_vec2 seg[2] = {{0, 0}, {1, 0}};
	assert_int_equal(orca_obstacle_add(w, seg, 2, &oid), ORCA_OK);
	assert_int_equal(orca_obstacle_remove(w, oid), ORCA_OK);
	assert_int_equal(orca_obstacle_remove(w, oid), ORCA_ERR_STALE_ID);
	assert_int_equal(orca_obstacle_remove(w, 999), ORCA_ERR_UNKNOWN_ID);

	/* world definitions */
	orca_world_def wd = orca_default_world_def();
	orca_world *w2;
	wd.worker_count = 0;
	assert_int_equal(orca_world_create(&wd, &w2), ORCA_ERR_INVALID_ARGUMENT);
	wd = orca_default_world_def();
	wd.agent_capacity = ORCA_MAX_AGENTS + 1u;
	assert_int_equal(orca_world_create(&wd, &w2), ORCA_ERR_INVALID_ARGUMENT);
	wd = orca_default_world_def();
	wd.allocator.alloc = count_alloc_stub; /* alloc without free */
	assert_int_equal(orca_world_create(&wd, &w2), ORCA_ERR_INVALID_ARGUMENT);
	wd = orca_default_world_def();
	wd.max_agents = 2;
	assert_int_equal(orca_world_create(&wd, &w2), ORCA_OK);
	add_at(w2, 0, 0);
	add_at(w2, 5, 0);
	d = orca_default_agent_def();
	assert_int_equal(orca_agent_add(w2, &d, &id), ORCA_ERR_CAPACITY);
	orca_world_destroy(w2);
	assert_string_equal(orca_strerror(ORCA_ERR_STALE_ID), "stale id");
	assert_non_null(orca_strerror(-99));
	orca_world_destroy(w);
	orca_world_destroy(NULL);
}

/* ---------------------------------------------------------- allocation */

typedef struct counting {
	uint64_t allocs, frees;
	int64_t live_bytes;
} counting;

static void *count_alloc(size_t size, void *user)
{
	counting *c = user;
	c->allocs++;
	c->live_bytes += (int64_t)size;
	return malloc(size);
}

static void count_free(void *p, size_t size, void *user)
{
	counting *c = user;
	c->frees++;
	c->live_bytes -= (int64_t)size;
	free(p);
}

static void test_no_allocation_in_step(void **state)
{
	(void)state;
	for (int workers = 1; workers <= 3; workers += 2) {
		counting c = {0};
		orca_world_def wd = orca_default_world_def();
		wd.worker_count = workers;
		wd.agent_capacity = 600;
		wd.allocator = (orca_allocator){count_alloc, count_free, &c};
		orca_world *w;
		assert_int_equal(orca_world_create(&wd, &w), ORCA_OK);
		const orca_vec2 box[4] = {{-5, -5}, {5, -5}, {5, 5}, {-5, 5}};
		assert_int_equal(orca_obstacle_add(w, box, 4, NULL), ORCA_OK);
		for (int i = 0; i < 500; ++i) {
			orca_agent_def d = orca_default_agent_def();
			d.position = (orca_vec2){(float)(i % 25) * 4.0f - 50.0f, (float)(i / 25) * 4.0f + 10.0f};
			d.steer_mode = ORCA_STEER_TARGET;
			d.target = (orca_vec2){-d.position.x, -d.position.y};
			assert_int_equal(orca_agent_add(w, &d, NULL), ORCA_OK);
		}
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK); /* may size scratch */
		const uint64_t before = c.allocs + c.frees;
		for (int s = 0; s < 50; ++s) {
			assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
			orca_step_profile p;
			orca_world_profile(w, &p);
			assert_int_equal(p.allocations, 0);
		}
		assert_int_equal(c.allocs + c.frees, before);
		orca_world_destroy(w);
		assert_int_equal(c.live_bytes, 0);
		assert_int_equal(c.allocs, c.frees);
	}
}

/* ---------------------------------------------------------- queries */

static uint32_t brute(orca_world *w, const orca_agent_id *all, uint32_t n, orca_vec2 lo, orca_vec2 hi, bool round,
                      orca_vec2 c, float r, orca_agent_id *out)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; ++i) {
		orca_agent_state st;
		if (orca_agent_get(w, all[i], &st) != ORCA_OK)
			continue;
		const orca_vec2 p = st.position;
		bool in = round ? ((p.x - c.x) * (p.x - c.x) + (p.y - c.y) * (p.y - c.y) <= r * r)
		                : (p.x >= lo.x && p.x <= hi.x && p.y >= lo.y && p.y <= hi.y);
		if (in)
			out[k++] = all[i];
	}
	/* ascending */
	for (uint32_t i = 1; i < k; ++i)
		for (uint32_t j = i; j > 0 && out[j - 1] > out[j]; --j) {
			orca_agent_id t = out[j];
			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return k;
}

static void check_queries(orca_world *w, const orca_agent_id *all, uint32_t n, uint32_t seed)
{
	orca_agent_id got[1200], want[1200];
	srand(seed);
	for (int q = 0; q < 40; ++q) {
		const orca_vec2 c = {(float)(rand() % 200) - 100.0f, (float)(rand() % 200) - 100.0f};
		const float r = (float)(rand() % 60);
		const orca_vec2 lo = {c.x - r, c.y - r * 0.5f}, hi = {c.x + r, c.y + r * 0.5f};
		uint32_t k = brute(w, all, n, lo, hi, false, c, r, want);
		assert_int_equal(orca_query_rect(w, lo, hi, got, 1200), k);
		assert_memory_equal(got, want, k * sizeof *got);
		k = brute(w, all, n, lo, hi, true, c, r, want);
		assert_int_equal(orca_query_radius(w, c, r, got, 1200), k);
		assert_memory_equal(got, want, k * sizeof *got);
		/* truncated: the smallest ids, ascending */
		const uint32_t cap = k / 2;
		assert_int_equal(orca_query_radius(w, c, r, got, cap), k);
		assert_memory_equal(got, want, cap * sizeof *got);
		assert_int_equal(orca_query_radius(w, c, r, NULL, 0), k);
	}
}

static void test_queries(void **state)
{
	(void)state;
	orca_world *w = make_world(2);
	enum { N = 1000 };
	orca_agent_id all[N];
	srand(7);
	for (int i = 0; i < N; ++i) {
		orca_agent_def d = orca_default_agent_def();
		d.position = (orca_vec2){(float)(rand() % 2000) / 10.0f - 100.0f, (float)(rand() % 2000) / 10.0f - 100.0f};
		d.steer_mode = ORCA_STEER_TARGET;
		d.target = (orca_vec2){-d.position.x, d.position.y};
		assert_int_equal(orca_agent_add(w, &d, &all[i]), ORCA_OK);
	}
	check_queries(w, all, N, 1); /* linear scan */
	for (int s = 0; s < 5; ++s)
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
	check_queries(w, all, N, 2); /* kd-tree of the last step, refitted */
	for (int i = 0; i < N; i += 3)
		assert_int_equal(orca_agent_remove(w, all[i]), ORCA_OK);
	check_queries(w, all, N, 3);
	assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
	check_queries(w, all, N, 4);
	assert_int_equal(orca_query_rect(w, (orca_vec2){NAN, 0}, (orca_vec2){1, 1}, NULL, 0), 0);
	assert_int_equal(orca_query_radius(w, (orca_vec2){0, 0}, -1.0f, NULL, 0), 0);
	orca_world_destroy(w);
}

/* ---------------------------------------------------------- obstacles */

static void test_obstacles_runtime(void **state)
{
	(void)state;
	orca_world *w = make_world(1);
	orca_agent_def d = orca_default_agent_def();
	d.position = (orca_vec2){-20, 3};
	d.steer_mode = ORCA_STEER_TARGET;
	d.target = (orca_vec2){20, 9}; /* ORCA has no planner: aim past the corner */
	d.radius = 1.0f;
	orca_agent_id a;
	assert_int_equal(orca_agent_add(w, &d, &a), ORCA_OK);
	const orca_vec2 wall[4] = {{-2, -6}, {2, -6}, {2, 6}, {-2, 6}};
	const uint32_t v0 = orca_world_obstacle_version(w);
	orca_obstacle_id o;
	assert_int_equal(orca_obstacle_add(w, wall, 4, &o), ORCA_OK);
	assert_true(orca_world_obstacle_version(w) != v0);
	assert_int_equal(orca_world_obstacle_count(w), 1);
	orca_obstacle_id oids[2];
	assert_int_equal(orca_world_obstacle_ids(w, oids, 2), 1);
	assert_int_equal(oids[0], o);
	orca_vec2 back[8];
	uint32_t cnt = 0;
	assert_int_equal(orca_obstacle_get(w, o, back, 8, &cnt), ORCA_OK);
	assert_int_equal(cnt, 4);
	assert_memory_equal(back, wall, sizeof wall);

	/* with the wall the agent goes around it and never enters it */
	float max_abs_y = 0.0f;
	orca_agent_state st;
	for (int s = 0; s < 150; ++s) {
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
		assert_int_equal(orca_agent_get(w, a, &st), ORCA_OK);
		assert_false(st.position.x > -2.0f && st.position.x < 2.0f && fabsf(st.position.y) < 6.0f);
		if (fabsf(st.position.y) > max_abs_y)
			max_abs_y = fabsf(st.position.y);
		if (getenv("TRACE"))
			fprintf(stderr, "%d %g %g\n", s, (double)st.position.x, (double)st.position.y);
	}
	assert_true(max_abs_y > 5.0f);
	orca_step_profile p;
	orca_world_profile(w, &p);

	/* removed: the way back is straight through where the wall was */
	assert_int_equal(orca_obstacle_remove(w, o), ORCA_OK);
	assert_int_equal(orca_world_obstacle_count(w), 0);
	assert_int_equal(orca_obstacle_get(w, o, back, 8, &cnt), ORCA_ERR_STALE_ID);
	assert_int_equal(orca_agent_set_position(w, a, (orca_vec2){20, 0}), ORCA_OK);
	assert_int_equal(orca_agent_set_target(w, a, (orca_vec2){-20, 0}), ORCA_OK);
	for (int s = 0; s < 200; ++s) {
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
		assert_int_equal(orca_agent_get(w, a, &st), ORCA_OK);
		assert_true(fabsf(st.position.y) < 1e-3f);
	}
	assert_true(st.arrived);
	assert_true(fabsf(st.position.x + 20.0f) <= 0.05f);
	/* a segment obstacle (2 vertices) also blocks */
	const orca_vec2 seg[2] = {{0, 8}, {0, -8}};
	assert_int_equal(orca_obstacle_add(w, seg, 2, &o), ORCA_OK);
	assert_int_equal(orca_agent_set_target(w, a, (orca_vec2){20, 0}), ORCA_OK);
	float min_abs_x = 1e9f;
	for (int s = 0; s < 200; ++s) {
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
		assert_int_equal(orca_agent_get(w, a, &st), ORCA_OK);
		if (fabsf(st.position.y) < 8.0f && fabsf(st.position.x) < min_abs_x)
			min_abs_x = fabsf(st.position.x);
	}
	assert_true(min_abs_x > 0.5f); /* never crossed the segment within its span */
	orca_world_destroy(w);
}

/* Degenerate input: thousands of agents on one point (the kd-tree becomes a
 * list 3,000 deep) and on one line. Nothing crashes, everything stays finite,
 * and agents spawned on one point separate (the engine picks a direction where
 * RVO2's formula has none). */
static void test_degenerate_positions(void **state)
{
	(void)state;
	for (int layout = 0; layout < 2; ++layout) {
		orca_world *w = make_world(2);
		enum { N = 3000 };
		orca_agent_id ids[N];
		for (int i = 0; i < N; ++i) {
			orca_agent_def d = orca_default_agent_def();
			d.position = layout == 0 ? (orca_vec2){5, 5} : (orca_vec2){(float)i * 0.01f, 0};
			d.steer_mode = ORCA_STEER_TARGET;
			d.target = (orca_vec2){0, 100};
			assert_int_equal(orca_agent_add(w, &d, &ids[i]), ORCA_OK);
		}
		for (int s = 0; s < 20; ++s)
			assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
		float spread = 0.0f;
		orca_vec2 first[300];
		for (int i = 0; i < N; ++i) {
			orca_agent_state st;
			assert_int_equal(orca_agent_get(w, ids[i], &st), ORCA_OK);
			assert_true(isfinite(st.position.x) && isfinite(st.position.y));
			assert_true(isfinite(st.velocity.x) && isfinite(st.velocity.y));
			spread = fmaxf(spread, fabsf(st.position.y));
			if (i < 300)
				first[i] = st.position;
		}
		for (int i = 0; i < 300; ++i)
			for (int j = i + 1; j < 300; ++j)
				assert_false(first[i].x == first[j].x && first[i].y == first[j].y);
		assert_true(spread > 0.0f); /* everyone walked toward y = 100 */
		assert_true(orca_query_radius(w, (orca_vec2){5, 5}, 1000.0f, NULL, 0) == N);
		orca_world_destroy(w);
	}
}

/* The state hash walks agents in ascending id order, also once removed slots
 * are reused (a reused slot's id carries a higher generation). */
static uint64_t fnv_word(uint64_t h, uint32_t v)
{
	for (int i = 0; i < 4; ++i) {
		h ^= (v >> (8 * i)) & 0xffu;
		h *= 1099511628211ull;
	}
	return h;
}

static uint32_t bits_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static int compare_ids(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* orca_world_state_hash as orca.h defines it, from the public API only. */
static uint64_t hash_by_definition(const orca_world *w)
{
	const uint64_t basis = 14695981039346656037ull, prime = 1099511628211ull;
	const uint32_t n = orca_world_agent_ids(w, NULL, 0);
	orca_agent_id *live = calloc(n ? n : 1, sizeof *live);
	assert_non_null(live);
	assert_int_equal(orca_world_agent_ids(w, live, n), n);
	qsort(live, n, sizeof live[0], compare_ids);
	uint64_t h = (basis ^ n) * prime;
	for (uint32_t begin = 0; begin < n; begin += ORCA_HASH_BLOCK) {
		uint64_t b = basis;
		for (uint32_t i = begin; i < n && i < begin + ORCA_HASH_BLOCK; ++i) {
			orca_agent_state st;
			assert_int_equal(orca_agent_get(w, live[i], &st), ORCA_OK);
			const uint64_t p = (uint64_t)bits_of(st.position.x) << 32 | bits_of(st.position.y);
			const uint64_t v = (uint64_t)bits_of(st.velocity.x) << 32 | bits_of(st.velocity.y);
			b = (b ^ mix64(st.id ^ mix64(p ^ mix64(v)))) * prime;
		}
		h = (h ^ mix64(b)) * prime;
	}
	free(live);
	return h;
}

static void test_state_hash_in_id_order(void **state)
{
	(void)state;
	orca_world_def wd = orca_default_world_def();
	orca_world *w = NULL;
	assert_int_equal(orca_world_create(&wd, &w), ORCA_OK);
	orca_agent_def ad = orca_default_agent_def();
	orca_agent_id ids[40];
	for (int i = 0; i < 40; ++i) {
		ad.position = (orca_vec2){(float)(i % 8) * 5.0f, (float)(i / 8) * 5.0f};
		assert_int_equal(orca_agent_add(w, &ad, &ids[i]), ORCA_OK);
	}
	for (int round = 0; round < 3; ++round) { /* churn: generations 1..3 in reused slots */
		for (int i = round; i < 40; i += 3)
			assert_int_equal(orca_agent_remove(w, ids[i]), ORCA_OK);
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
		for (int i = round; i < 40; i += 3) {
			ad.position = (orca_vec2){(float)i * 3.0f, -7.0f - (float)round};
			assert_int_equal(orca_agent_add(w, &ad, &ids[i]), ORCA_OK);
		}
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
	}
	orca_agent_id live[64];
	uint32_t n = orca_world_agent_ids(w, live, 64);
	assert_int_equal(n, 40);
	qsort(live, n, sizeof live[0], compare_ids);
	assert_true(live[n - 1] >> ORCA_ID_INDEX_BITS > 0); /* slots were reused */
	uint64_t h = 14695981039346656037ull;
	for (uint32_t i = 0; i < n; ++i) {
		orca_agent_state st;
		assert_int_equal(orca_agent_get(w, live[i], &st), ORCA_OK);
		h = fnv_word(h, st.id);
		h = fnv_word(h, bits_of(st.position.x));
		h = fnv_word(h, bits_of(st.position.y));
		h = fnv_word(h, bits_of(st.velocity.x));
		h = fnv_word(h, bits_of(st.velocity.y));
	}
	assert_int_equal(orca_world_state_hash_v1(w), h);
	assert_int_equal(orca_world_state_hash(w), hash_by_definition(w));
	orca_world_destroy(w);
}

/* More agents than two blocks, slots reused: the hash is its definition's,
 * block by block, and any one agent's change changes it. */
static void test_state_hash_blocks(void **state)
{
	(void)state;
	orca_world_def wd = orca_default_world_def();
	orca_world *w = NULL;
	assert_int_equal(orca_world_create(&wd, &w), ORCA_OK);
	orca_agent_def ad = orca_default_agent_def();
	const uint32_t count = 2u * ORCA_HASH_BLOCK + 917u;
	orca_agent_id *ids = calloc(count, sizeof *ids);
	assert_non_null(ids);
	for (uint32_t i = 0; i < count; ++i) {
		ad.position = (orca_vec2){(float)(i % 97) * 2.5f, (float)(i / 97) * 2.5f};
		ad.pref_velocity = (orca_vec2){(float)(i % 5) * 0.1f, 0.3f};
		assert_int_equal(orca_agent_add(w, &ad, &ids[i]), ORCA_OK);
	}
	assert_int_equal(orca_world_step(w, 0.1f), ORCA_OK);
	assert_int_equal(orca_world_state_hash(w), hash_by_definition(w));
	for (uint32_t i = 0; i < count; i += 7) /* reused slots: ids out of slot order */
		assert_int_equal(orca_agent_remove(w, ids[i]), ORCA_OK);
	for (uint32_t i = 0; i < count; i += 7)
		assert_int_equal(orca_agent_add(w, &ad, &ids[i]), ORCA_OK);
	assert_int_equal(orca_world_step(w, 0.1f), ORCA_OK);
	const uint64_t before = orca_world_state_hash(w);
	assert_int_equal(before, hash_by_definition(w));
	/* one agent of the last block moved by one float step */
	orca_agent_state st;
	assert_int_equal(orca_agent_get(w, ids[count - 2], &st), ORCA_OK);
	assert_int_equal(orca_agent_set_position(w, ids[count - 2], (orca_vec2){nextafterf(st.position.x, INFINITY),
	                                                                        st.position.y}),
	                 ORCA_OK);
	assert_true(orca_world_state_hash(w) != before);
	assert_int_equal(orca_world_state_hash(w), hash_by_definition(w));
	free(ids);
	orca_world_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults_are_rvo2s),
	    cmocka_unit_test(test_ids),
	    cmocka_unit_test(test_state_hash_in_id_order),
	    cmocka_unit_test(test_state_hash_blocks),
	    cmocka_unit_test(test_generation_retire),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_no_allocation_in_step),
	    cmocka_unit_test(test_queries),
	    cmocka_unit_test(test_obstacles_runtime),
	    cmocka_unit_test(test_degenerate_positions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
