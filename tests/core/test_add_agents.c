/* test_add_agents.c — orca_world_add_agents is all or nothing: a batch that
 * succeeds is exactly `count` orca_agent_add calls (same ids, same saved
 * world, same steps after), and a batch that fails -- an invalid definition
 * at any index, the agent limit, the allocator saying no at any of its calls
 * -- leaves the world byte for byte as it was (orca_world_save), so the next
 * ids and every later step equal those of a world that never saw the batch.
 * The server's SpawnAgents relies on this: a failed request is not
 * journaled, so it must leave nothing a replay could miss. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "orca/orca.h"

/* An allocator that says no once `left` reaches 0 (left < 0: never). */
typedef struct failing {
	int64_t left;
	uint64_t allocs, frees;
} failing;

static void *failing_alloc(size_t size, void *user)
{
	failing *f = user;
	if (f->left == 0)
		return NULL;
	if (f->left > 0)
		f->left--;
	f->allocs++;
	return malloc(size);
}

static void failing_free(void *p, size_t size, void *user)
{
	(void)size;
	((failing *)user)->frees++;
	free(p);
}

static orca_world *make_world(uint32_t capacity, uint32_t max_agents, failing *f)
{
	orca_world_def d = orca_default_world_def();
	d.agent_capacity = capacity;
	d.max_agents = max_agents;
	if (f)
		d.allocator = (orca_allocator){failing_alloc, failing_free, f};
	orca_world *w = NULL;
	assert_int_equal(orca_world_create(&d, &w), ORCA_OK);
	return w;
}

static orca_agent_def agent_def(uint32_t i)
{
	orca_agent_def d = orca_default_agent_def();
	d.position = (orca_vec2){(float)(i % 17) * 4.0f, (float)(i / 17) * 4.0f};
	d.steer_mode = ORCA_STEER_TARGET;
	d.target = (orca_vec2){60.0f - d.position.x, 40.0f - d.position.y};
	d.user_data = i;
	return d;
}

/* The whole world's bytes (ids, generations, free lists, order, agents). */
static uint8_t *saved(const orca_world *w, size_t *len)
{
	size_t need = 0;
	orca_world_save(w, NULL, 0, &need);
	uint8_t *buf = malloc(need);
	assert_non_null(buf);
	assert_int_equal(orca_world_save(w, buf, need, len), ORCA_OK);
	return buf;
}

static void assert_same_world(const orca_world *a, const orca_world *b)
{
	size_t la, lb;
	uint8_t *x = saved(a, &la), *y = saved(b, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(x, y, la);
	assert_int_equal(orca_world_state_hash(a), orca_world_state_hash(b));
	free(x);
	free(y);
}

/* A history with removals: a free list, removed-but-pending slots and a dirty order. */
static void history(orca_world *w, uint32_t agents, uint32_t *next_def)
{
	orca_agent_id ids[64];
	for (uint32_t i = 0; i < agents; ++i) {
		orca_agent_def d = agent_def((*next_def)++);
		assert_int_equal(orca_agent_add(w, &d, &ids[i]), ORCA_OK);
	}
	for (uint32_t i = 0; i < agents; i += 3)
		assert_int_equal(orca_agent_remove(w, ids[i]), ORCA_OK); /* freed at the step */
	assert_int_equal(orca_world_step(w, 0.1f), ORCA_OK);
	for (uint32_t i = 1; i < agents; i += 5)
		if (i % 3 != 0)
			assert_int_equal(orca_agent_remove(w, ids[i]), ORCA_OK); /* pending, order dirty */
}

/* A batch equals the same adds one by one, from every kind of free-slot state. */
static void test_batch_equals_single_adds(void **state)
{
	(void)state;
	for (uint32_t count = 1; count <= 40; count += 3) {
		orca_world *a = make_world(16, ORCA_MAX_AGENTS, NULL), *b = make_world(16, ORCA_MAX_AGENTS, NULL);
		uint32_t na = 0, nb = 0;
		history(a, 30, &na);
		history(b, 30, &nb);
		orca_agent_def defs[40];
		orca_agent_id ia[40], ib[40];
		for (uint32_t i = 0; i < count; ++i)
			defs[i] = agent_def(100 + i);
		uint32_t failed = 99;
		assert_int_equal(orca_world_add_agents(a, defs, count, ia, &failed), ORCA_OK);
		assert_int_equal(failed, 0);
		for (uint32_t i = 0; i < count; ++i)
			assert_int_equal(orca_agent_add(b, &defs[i], &ib[i]), ORCA_OK);
		assert_memory_equal(ia, ib, sizeof ia[0] * count);
		assert_same_world(a, b);
		for (int s = 0; s < 5; ++s) {
			assert_int_equal(orca_world_step(a, 0.1f), ORCA_OK);
			assert_int_equal(orca_world_step(b, 0.1f), ORCA_OK);
		}
		assert_same_world(a, b);
		orca_world_destroy(a);
		orca_world_destroy(b);
	}
}

/* A failed batch, then the same later history as a world that never saw it. */
static void check_no_trace(orca_world *w, orca_world *control, uint32_t d)
{
	assert_same_world(w, control);
	orca_agent_def defs[3] = {agent_def(d), agent_def(d + 1), agent_def(d + 2)};
	orca_agent_id a[3], b[3];
	assert_int_equal(orca_world_add_agents(w, defs, 3, a, NULL), ORCA_OK);
	assert_int_equal(orca_world_add_agents(control, defs, 3, b, NULL), ORCA_OK);
	assert_memory_equal(a, b, sizeof a); /* the next ids */
	for (int s = 0; s < 3; ++s) {
		assert_int_equal(orca_world_step(w, 0.1f), ORCA_OK);
		assert_int_equal(orca_world_step(control, 0.1f), ORCA_OK);
	}
	assert_same_world(w, control);
}

static void test_invalid_definition_leaves_no_trace(void **state)
{
	(void)state;
	for (uint32_t bad = 0; bad < 20; bad += 4) {
		orca_world *w = make_world(16, ORCA_MAX_AGENTS, NULL), *control = make_world(16, ORCA_MAX_AGENTS, NULL);
		uint32_t n1 = 0, n2 = 0;
		history(w, 30, &n1);
		history(control, 30, &n2);
		orca_agent_def defs[20];
		orca_agent_id ids[20];
		for (uint32_t i = 0; i < 20; ++i)
			defs[i] = agent_def(200 + i);
		defs[bad].time_horizon = 0.0f; /* must be > 0 */
		uint32_t failed = 99;
		assert_int_equal(orca_world_add_agents(w, defs, 20, ids, &failed), ORCA_ERR_INVALID_ARGUMENT);
		assert_int_equal(failed, bad);
		check_no_trace(w, control, n1);
		orca_world_destroy(w);
		orca_world_destroy(control);
	}
}

static void test_agent_limit_leaves_no_trace(void **state)
{
	(void)state;
	orca_world *w = make_world(16, 40, NULL), *control = make_world(16, 40, NULL);
	uint32_t n1 = 0, n2 = 0;
	history(w, 30, &n1); /* 30 - 10 - 4 = 16 live */
	history(control, 30, &n2);
	const uint32_t room = 40 - orca_world_agent_count(w);
	orca_agent_def defs[64];
	orca_agent_id ids[64];
	for (uint32_t i = 0; i < room + 1; ++i)
		defs[i] = agent_def(300 + i);
	assert_int_equal(orca_world_add_agents(w, defs, room + 1, ids, NULL), ORCA_ERR_CAPACITY);
	check_no_trace(w, control, n1);
	assert_int_equal(orca_world_add_agents(w, defs, room - 3, ids, NULL), ORCA_OK); /* exactly full */
	assert_int_equal(orca_world_agent_count(w), 40);
	assert_int_equal(orca_world_add_agents(w, defs, 1, ids, NULL), ORCA_ERR_CAPACITY);
	orca_world_destroy(w);
	orca_world_destroy(control);
}

/* The allocator fails at its k-th call inside the batch, for every k the
 * batch makes: each time the world is as before and goes on as the control. */
static void test_out_of_memory_leaves_no_trace(void **state)
{
	(void)state;
	/* how many allocations a batch that grows the arrays makes */
	failing probe = {.left = -1};
	orca_world *p = make_world(16, ORCA_MAX_AGENTS, &probe);
	uint32_t np = 0;
	history(p, 12, &np);
	orca_agent_def defs[64];
	orca_agent_id ids[64];
	for (uint32_t i = 0; i < 64; ++i)
		defs[i] = agent_def(400 + i);
	const uint64_t before = probe.allocs;
	assert_int_equal(orca_world_add_agents(p, defs, 64, ids, NULL), ORCA_OK);
	const uint64_t calls = probe.allocs - before;
	assert_true(calls > 0); /* 16 slots cannot hold 64 more agents */
	orca_world_destroy(p);
	assert_int_equal(probe.allocs, probe.frees);

	for (uint64_t k = 0; k < calls; ++k) {
		failing f = {.left = -1};
		orca_world *w = make_world(16, ORCA_MAX_AGENTS, &f), *control = make_world(16, ORCA_MAX_AGENTS, NULL);
		uint32_t n1 = 0, n2 = 0;
		history(w, 12, &n1);
		history(control, 12, &n2);
		f.left = (int64_t)k; /* the (k+1)-th allocation fails */
		assert_int_equal(orca_world_add_agents(w, defs, 64, ids, NULL), ORCA_ERR_NO_MEMORY);
		f.left = -1;
		check_no_trace(w, control, n1);
		/* and the same batch goes through once memory is there again */
		orca_agent_id again[64], expect[64];
		assert_int_equal(orca_world_add_agents(w, defs, 64, again, NULL), ORCA_OK);
		assert_int_equal(orca_world_add_agents(control, defs, 64, expect, NULL), ORCA_OK);
		assert_memory_equal(again, expect, sizeof again);
		assert_same_world(w, control);
		orca_world_destroy(w);
		orca_world_destroy(control);
		assert_int_equal(f.allocs, f.frees);
	}
}

static void test_arguments(void **state)
{
	(void)state;
	orca_world *w = make_world(16, ORCA_MAX_AGENTS, NULL);
	orca_agent_def d = agent_def(0);
	orca_agent_id id;
	assert_int_equal(orca_world_add_agents(NULL, &d, 1, &id, NULL), ORCA_ERR_INVALID_ARGUMENT);
	assert_int_equal(orca_world_add_agents(w, NULL, 1, &id, NULL), ORCA_ERR_INVALID_ARGUMENT);
	assert_int_equal(orca_world_add_agents(w, &d, 1, NULL, NULL), ORCA_ERR_INVALID_ARGUMENT);
	assert_int_equal(orca_world_add_agents(w, NULL, 0, NULL, NULL), ORCA_OK);
	assert_int_equal(orca_world_agent_count(w), 0);
	assert_int_equal(orca_world_add_agents(w, &d, 1, &id, NULL), ORCA_OK);
	assert_int_equal(id, 1); /* fresh worlds hand out 1, 2, 3, ... */
	orca_world_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_batch_equals_single_adds),
	    cmocka_unit_test(test_invalid_definition_leaves_no_trace),
	    cmocka_unit_test(test_agent_limit_leaves_no_trace),
	    cmocka_unit_test(test_out_of_memory_leaves_no_trace),
	    cmocka_unit_test(test_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
