/* test_snapshot.c — the per-tick world table: quantization with the configured
 * precision, ascending ids after slot reuse, owners; and a table encoded with
 * the wire codec decodes back to the same agents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "server.h"

static void test_quantize_table(void **state) {
	(void)state;
	orca_world *world;
	orca_world_def wdef = orca_default_world_def();
	assert_int_equal(orca_world_create(&wdef, &world), ORCA_OK);
	orca_agent_def def = orca_default_agent_def();
	orca_agent_id ids[4];
	const float xs[4] = {1.234f, -7.5f, 0.004f, 1000.0f};
	for (int i = 0; i < 4; i++) {
		def.position = (orca_vec2){xs[i], -xs[i]};
		def.radius = 0.5f;
		def.user_data = 10 + (uint32_t)i;
		assert_int_equal(orca_agent_add(world, &def, &ids[i]), ORCA_OK);
	}
	/* remove and re-add: the reused slot's id is larger than later slots' ids */
	assert_int_equal(orca_agent_remove(world, ids[0]), ORCA_OK);
	def.position = (orca_vec2){3, 3};
	def.user_data = 99;
	orca_agent_id reused;
	assert_int_equal(orca_agent_add(world, &def, &reused), ORCA_OK);

	world_table t = {0};
	assert_true(world_table_build(&t, world, 100.0f));
	assert_int_equal(t.count, 4);
	for (uint32_t i = 1; i < t.count; i++) assert_true(t.agents[i - 1].id < t.agents[i].id);
	for (uint32_t i = 0; i < t.count; i++) {
		orca_agent_state st;
		assert_int_equal(orca_agent_get(world, t.agents[i].id, &st), ORCA_OK);
		assert_int_equal(t.agents[i].x, (int32_t)lroundf(st.position.x * 100.0f));
		assert_int_equal(t.agents[i].y, (int32_t)lroundf(st.position.y * 100.0f));
		assert_int_equal(t.agents[i].radius, 50);
		assert_int_equal(t.agents[i].owner, st.user_data);
	}
	/* precision 1000 scales */
	assert_true(world_table_build(&t, world, 1000.0f));
	const crowd_agent_q *q = NULL;
	for (uint32_t i = 0; i < t.count; i++)
		if (t.agents[i].id == ids[1]) q = &t.agents[i];
	assert_non_null(q);
	assert_int_equal(q->x, -7500);
	assert_int_equal(q->y, 7500);
	world_table_free(&t);
	orca_world_destroy(world);
}

static void test_round_trip(void **state) {
	(void)state;
	orca_world *world;
	orca_world_def wdef = orca_default_world_def();
	assert_int_equal(orca_world_create(&wdef, &world), ORCA_OK);
	orca_agent_def def = orca_default_agent_def();
	def.steer_mode = ORCA_STEER_TARGET;
	def.target = (orca_vec2){20, 20};
	for (int i = 0; i < 50; i++) {
		def.position = (orca_vec2){(float)(i % 10) * 4.0f, (float)(i / 10) * 4.0f};
		orca_agent_id id;
		assert_int_equal(orca_agent_add(world, &def, &id), ORCA_OK);
	}
	world_table t = {0};
	crowd_view baseline, received;
	crowd_view_init(&baseline);
	crowd_view_init(&received);
	crowd_obstacle_set obstacles;
	crowd_obstacle_set_init(&obstacles);
	crowd_buf out;
	crowd_buf_init(&out);
	for (int tick = 0; tick < 5; tick++) {
		assert_int_equal(orca_world_step(world, 1.0f / 30.0f), ORCA_OK);
		assert_true(world_table_build(&t, world, 100.0f));
		crowd_snapshot_header h = {.tick = (uint64_t)tick + 1,
		                           .state_hash = orca_world_state_hash(world),
		                           .world_agent_count = t.count,
		                           .keyframe = tick == 0};
		out.len = 0;
		assert_true(crowd_snapshot_encode(&h, t.agents, t.count, &baseline, NULL, false, &out));
		crowd_v1_ServerMessage msg;
		assert_true(crowd_decode_server_message(out.data, out.len, &msg, &received, &obstacles, NULL));
		assert_int_equal(msg.which_msg, crowd_v1_ServerMessage_snapshot_tag);
		assert_int_equal(msg.msg.snapshot.state_hash, orca_world_state_hash(world));
		assert_int_equal(received.count, t.count);
		assert_memory_equal(received.agents, t.agents, t.count * sizeof *t.agents);
	}
	crowd_buf_free(&out);
	crowd_view_free(&baseline);
	crowd_view_free(&received);
	crowd_obstacle_set_free(&obstacles);
	world_table_free(&t);
	orca_world_destroy(world);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_quantize_table),
	    cmocka_unit_test(test_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
