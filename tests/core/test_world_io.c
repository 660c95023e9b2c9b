/* test_world_io.c — orca_world_save / orca_world_load: a loaded world steps
 * bit-identically to the saved one (state hash after every step, and the ids
 * the next adds get), for any worker count; truncated, bit-flipped and garbage
 * bytes are refused or loaded without a crash, and a refused load leaves an
 * empty world. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "orca/orca.h"

typedef struct variant {
	orca_avoidance avoidance;
	bool bounds;         /* positions clamped to a box */
	bool grid_history;   /* obstacles added and removed after steps: the edge grid with holes */
	orca_obstacle_index index;
} variant;

static const variant plain = {ORCA_AVOIDANCE_REFERENCE, false, false, ORCA_OBSTACLE_INDEX_AUTO};

static orca_world *make_world_v(int workers, const variant *v)
{
	orca_world_def d = orca_default_world_def();
	d.worker_count = workers;
	d.agent_capacity = 16;
	d.avoidance = v->avoidance;
	d.obstacle_index = v->index;
	if (v->bounds) {
		d.has_bounds = true;
		d.bounds_min = (orca_vec2){-40.0f, -40.0f};
		d.bounds_max = (orca_vec2){40.0f, 40.0f};
	}
	orca_world *w = NULL;
	assert_int_equal(orca_world_create(&d, &w), ORCA_OK);
	return w;
}

static orca_world *make_world(int workers)
{
	orca_world_def d = orca_default_world_def();
	d.worker_count = workers;
	d.agent_capacity = 16;
	orca_world *w = NULL;
	assert_int_equal(orca_world_create(&d, &w), ORCA_OK);
	return w;
}

static uint32_t rng_state = 12345u;
static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}
static float rndf(float lo, float hi) { return lo + (hi - lo) * (float)(rnd() >> 8) / (float)(1u << 24); }

/* A busy world: agents in every steer mode with varied parameters, some
 * removed (free and pending lists, a dirty order), obstacles added and one
 * removed (a free obstacle slot). */
static orca_world *busy_world_v(int workers, uint32_t agents, const variant *v)
{
	orca_world *w = make_world_v(workers, v);
	const orca_vec2 box[4] = {{-5, -5}, {5, -5}, {5, 5}, {-5, 5}};
	const orca_vec2 seg[2] = {{20, -30}, {20, 30}};
	const orca_vec2 tri[3] = {{-30, 10}, {-20, 10}, {-25, 20}};
	orca_obstacle_id o1, o2, o3;
	assert_int_equal(orca_obstacle_add(w, box, 4, &o1), ORCA_OK);
	assert_int_equal(orca_obstacle_add(w, seg, 2, &o2), ORCA_OK);
	assert_int_equal(orca_obstacle_add(w, tri, 3, &o3), ORCA_OK);
	assert_int_equal(orca_obstacle_remove(w, o2), ORCA_OK);
	orca_agent_id *ids = calloc(agents, sizeof *ids);
	for (uint32_t i = 0; i < agents; i++) {
		orca_agent_def d = orca_default_agent_def();
		d.position = (orca_vec2){rndf(-60, 60), rndf(-60, 60)};
		d.radius = rndf(0.3f, 1.2f);
		d.max_neighbors = 1 + rnd() % 12;
		d.weight = rndf(0.0f, 1.0f);
		d.layer = 1u << (rnd() % 3);
		d.mask = (rnd() % 4 == 0) ? 0x3u : UINT32_MAX;
		d.steer_mode = (orca_steer_mode)(rnd() % 3);
		d.target = (orca_vec2){rndf(-60, 60), rndf(-60, 60)};
		d.pref_velocity = (orca_vec2){rndf(-1, 1), rndf(-1, 1)};
		assert_int_equal(orca_agent_add(w, &d, &ids[i]), ORCA_OK);
	}
	for (int s = 0; s < 5; s++) assert_int_equal(orca_world_step(w, 0.1f), ORCA_OK);
	for (uint32_t i = 0; i < agents; i += 7) assert_int_equal(orca_agent_remove(w, ids[i]), ORCA_OK);
	assert_int_equal(orca_world_step(w, 0.1f), ORCA_OK);
	for (uint32_t i = 3; i < agents; i += 11) orca_agent_remove(w, ids[i]); /* pending, order dirty */
	if (v->grid_history) { /* changes after the first step: the grid, with freed vertex slots */
		const orca_vec2 a[4] = {{30, 30}, {36, 30}, {36, 36}, {30, 36}};
		const orca_vec2 b[3] = {{-10, 30}, {-4, 30}, {-7, 35}};
		const orca_vec2 c[2] = {{-30, -30}, {-20, -25}};
		orca_obstacle_id oa, ob, oc;
		assert_int_equal(orca_obstacle_add(w, a, 4, &oa), ORCA_OK);
		assert_int_equal(orca_world_step(w, 0.1f), ORCA_OK);
		assert_int_equal(orca_obstacle_add(w, b, 3, &ob), ORCA_OK);
		assert_int_equal(orca_obstacle_add(w, c, 2, &oc), ORCA_OK);
		assert_int_equal(orca_obstacle_remove(w, oa), ORCA_OK);
		assert_int_equal(orca_world_step(w, 0.1f), ORCA_OK);
		assert_int_equal(orca_obstacle_add(w, c, 2, &oc), ORCA_OK); /* takes some freed vertex slots */
	}
	free(ids);
	return w;
}

static orca_world *busy_world(int workers, uint32_t agents) { return busy_world_v(workers, agents, &plain); }

static uint8_t *save(const orca_world *w, size_t *size)
{
	assert_int_equal(orca_world_save(w, NULL, 0, size), ORCA_ERR_CAPACITY);
	uint8_t *buf = malloc(*size);
	size_t again = 0;
	assert_int_equal(orca_world_save(w, buf, *size, &again), ORCA_OK);
	assert_int_equal(again, *size);
	return buf;
}

static void step_both_equal(orca_world *a, orca_world *b, int steps)
{
	for (int s = 0; s < steps; s++) {
		if (s == steps / 2) { /* adds after a load get the same ids */
			orca_agent_def d = orca_default_agent_def();
			d.position = (orca_vec2){1.0f * (float)s, 40.0f};
			orca_agent_id ia, ib;
			assert_int_equal(orca_agent_add(a, &d, &ia), ORCA_OK);
			assert_int_equal(orca_agent_add(b, &d, &ib), ORCA_OK);
			assert_int_equal(ia, ib);
			const orca_vec2 seg[2] = {{0, 50}, {10, 50}};
			orca_obstacle_id oa, ob;
			assert_int_equal(orca_obstacle_add(a, seg, 2, &oa), ORCA_OK);
			assert_int_equal(orca_obstacle_add(b, seg, 2, &ob), ORCA_OK);
			assert_int_equal(oa, ob);
		}
		assert_int_equal(orca_world_step(a, 0.1f), ORCA_OK);
		assert_int_equal(orca_world_step(b, 0.1f), ORCA_OK);
		assert_int_equal(orca_world_state_hash(a), orca_world_state_hash(b));
		assert_int_equal(orca_world_step_count(a), orca_world_step_count(b));
	}
}

static void test_loaded_world_steps_identically(void **state)
{
	(void)state;
	const variant variants[] = {
	    plain,
	    {ORCA_AVOIDANCE_QUALITY, true, false, ORCA_OBSTACLE_INDEX_AUTO},
	    {ORCA_AVOIDANCE_REFERENCE, false, true, ORCA_OBSTACLE_INDEX_AUTO},
	    {ORCA_AVOIDANCE_QUALITY, true, true, ORCA_OBSTACLE_INDEX_GRID},
	    {ORCA_AVOIDANCE_REFERENCE, true, true, ORCA_OBSTACLE_INDEX_RVO2},
	};
	for (size_t k = 0; k < sizeof variants / sizeof variants[0]; k++)
	for (int workers = 1; workers <= 3; workers += 2) {
		orca_world *a = busy_world_v(1, 400, &variants[k]);
		size_t size;
		uint8_t *buf = save(a, &size);
		orca_world *b = make_world(workers); /* the default definition: the save carries the settings */
		assert_int_equal(orca_world_load(b, buf, size), ORCA_OK);
		assert_int_equal(orca_world_state_hash(a), orca_world_state_hash(b));
		assert_int_equal(orca_world_agent_count(a), orca_world_agent_count(b));
		assert_int_equal(orca_world_obstacle_count(a), orca_world_obstacle_count(b));
		/* saving the loaded world gives the same bytes */
		size_t size2;
		uint8_t *buf2 = save(b, &size2);
		assert_int_equal(size, size2);
		assert_memory_equal(buf, buf2, size);
		step_both_equal(a, b, 60);
		free(buf);
		free(buf2);
		orca_world_destroy(a);
		orca_world_destroy(b);
	}
}

static void test_load_needs_a_fresh_world(void **state)
{
	(void)state;
	orca_world *a = busy_world(1, 20);
	size_t size;
	uint8_t *buf = save(a, &size);
	assert_int_equal(orca_world_load(a, buf, size), ORCA_ERR_INVALID_ARGUMENT);
	assert_int_equal(orca_world_load(NULL, buf, size), ORCA_ERR_INVALID_ARGUMENT);
	free(buf);
	orca_world_destroy(a);
}

/* Every truncation is refused and leaves an empty world that still works. */
static void test_truncated_is_refused(void **state)
{
	(void)state;
	orca_world *a = busy_world(1, 30);
	size_t size;
	uint8_t *buf = save(a, &size);
	for (size_t n = 0; n < size; n++) {
		orca_world *b = make_world(1);
		uint8_t *part = malloc(n ? n : 1);
		memcpy(part, buf, n);
		assert_int_equal(orca_world_load(b, part, n), ORCA_ERR_INVALID_ARGUMENT);
		assert_int_equal(orca_world_agent_count(b), 0);
		assert_int_equal(orca_world_obstacle_count(b), 0);
		assert_int_equal(orca_world_step(b, 0.1f), ORCA_OK);
		free(part);
		orca_world_destroy(b);
	}
	free(buf);
	orca_world_destroy(a);
}

/* Flipped bits and garbage: refused, or loaded into a world that steps. */
static void test_corrupt_never_crashes(void **state)
{
	(void)state;
	orca_world *a = busy_world(1, 30);
	size_t size;
	uint8_t *buf = save(a, &size);
	uint8_t *copy = malloc(size);
	int refused = 0;
	for (size_t i = 0; i < size * 8; i += 3) {
		memcpy(copy, buf, size);
		copy[i / 8] ^= (uint8_t)(1u << (i % 8));
		orca_world *b = make_world(1);
		int rc = orca_world_load(b, copy, size);
		if (rc != ORCA_OK) {
			refused++;
			assert_int_equal(orca_world_agent_count(b), 0);
		}
		assert_int_equal(orca_world_step(b, 0.1f), ORCA_OK);
		orca_world_destroy(b);
	}
	assert_true(refused > 0);
	for (int k = 0; k < 200; k++) {
		for (size_t i = 0; i < size; i++) copy[i] = (uint8_t)rnd();
		if (k % 2) memcpy(copy, buf, 24); /* valid header, garbage sections */
		orca_world *b = make_world(1);
		assert_int_equal(orca_world_load(b, copy, size), ORCA_ERR_INVALID_ARGUMENT);
		orca_world_destroy(b);
	}
	free(copy);
	free(buf);
	orca_world_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_loaded_world_steps_identically),
	    cmocka_unit_test(test_load_needs_a_fresh_world),
	    cmocka_unit_test(test_truncated_is_refused),
	    cmocka_unit_test(test_corrupt_never_crashes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
