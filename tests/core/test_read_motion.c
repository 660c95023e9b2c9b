/* test_read_motion.c — orca_agents_read_motion says of every agent what
 * orca_agent_get says (id, position, velocity, radius, user_data), for live
 * agents after steps, and answers id 0 for ids that are unknown, stale
 * (their slot reused) or removed, counting only the live ones. The server's
 * snapshot table reads the whole world with it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "orca/orca.h"

#define N 300u

static orca_world *make_world(orca_agent_id *ids)
{
	orca_world_def d = orca_default_world_def();
	orca_world *w = NULL;
	assert_int_equal(orca_world_create(&d, &w), ORCA_OK);
	for (uint32_t i = 0; i < N; ++i) {
		orca_agent_def a = orca_default_agent_def();
		a.position = (orca_vec2){(float)(i % 20) * 3.0f, (float)(i / 20) * 3.0f};
		a.pref_velocity = (orca_vec2){i % 3 == 0 ? 1.0f : -0.5f, i % 2 ? 0.75f : -1.0f};
		a.radius = 0.5f + (float)(i % 5) * 0.1f;
		a.user_data = 1000u + i * 7u;
		assert_int_equal(orca_agent_add(w, &a, &ids[i]), ORCA_OK);
	}
	for (int s = 0; s < 10; ++s)
		assert_int_equal(orca_world_step(w, 0.1f), ORCA_OK);
	return w;
}

static void assert_same_as_get(const orca_world *w, orca_agent_id id, const orca_agent_motion *m)
{
	orca_agent_state st;
	if (orca_agent_get(w, id, &st) != ORCA_OK) {
		assert_int_equal(m->id, 0);
		return;
	}
	assert_int_equal(m->id, id);
	assert_memory_equal(&m->position, &st.position, sizeof st.position);
	assert_memory_equal(&m->velocity, &st.velocity, sizeof st.velocity);
	assert_memory_equal(&m->radius, &st.radius, sizeof st.radius);
	assert_int_equal(m->user_data, st.user_data);
}

static void every_live_agent_as_get_says(void **state)
{
	(void)state;
	orca_agent_id ids[N];
	orca_world *w = make_world(ids);
	orca_agent_id listed[N + 1];
	const uint32_t n = orca_world_agent_ids(w, listed, N + 1);
	assert_int_equal(n, N);
	orca_agent_motion *m = calloc(n, sizeof *m);
	assert_non_null(m);
	assert_int_equal(orca_agents_read_motion(w, listed, n, m), n);
	uint32_t moving = 0;
	for (uint32_t i = 0; i < n; ++i) {
		assert_same_as_get(w, listed[i], &m[i]);
		moving += m[i].velocity.x != 0.0f || m[i].velocity.y != 0.0f;
	}
	assert_true(moving > 0); /* the steps moved them: velocities are not all the defaults */
	/* a part of the list, from the middle */
	assert_int_equal(orca_agents_read_motion(w, listed + 100, 7, m), 7);
	for (uint32_t i = 0; i < 7; ++i)
		assert_same_as_get(w, listed[100 + i], &m[i]);
	free(m);
	orca_world_destroy(w);
}

static void gone_ids_read_as_zero(void **state)
{
	(void)state;
	orca_agent_id ids[N];
	orca_world *w = make_world(ids);
	assert_int_equal(orca_agent_remove(w, ids[5]), ORCA_OK);
	assert_int_equal(orca_agent_remove(w, ids[6]), ORCA_OK);
	orca_agent_def a = orca_default_agent_def();
	a.user_data = 42;
	orca_agent_id reused;
	assert_int_equal(orca_agent_add(w, &a, &reused), ORCA_OK); /* may take 5's or 6's slot: their ids are stale */
	const orca_agent_id asked[6] = {ids[4], ids[5], ids[6], reused, 0xffffffu, ids[7]};
	orca_agent_motion m[6];
	memset(m, 0xab, sizeof m);
	assert_int_equal(orca_agents_read_motion(w, asked, 6, m), 3);
	assert_int_equal(m[1].id, 0);
	assert_int_equal(m[2].id, 0);
	assert_int_equal(m[4].id, 0);
	assert_int_equal(m[3].user_data, 42);
	for (uint32_t i = 0; i < 6; ++i)
		assert_same_as_get(w, asked[i], &m[i]);
	/* nothing asked, nothing written; no world: none live */
	assert_int_equal(orca_agents_read_motion(w, asked, 0, m), 0);
	assert_int_equal(orca_agents_read_motion(NULL, asked, 6, m), 0);
	orca_world_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(every_live_agent_as_get_says),
	    cmocka_unit_test(gone_ids_read_as_zero),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
