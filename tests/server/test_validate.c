/* test_validate.c — rights by role and the stateless checks of every request field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "config.h"
#include "validate.h"

static server_config cfg;

static int setup(void **state) {
	(void)state;
	config_init(&cfg);
	cfg.max_batch = 10;
	cfg.max_obstacle_vertices = 8;
	return 0;
}

static int teardown(void **state) {
	(void)state;
	config_free(&cfg);
	return 0;
}

static void test_rights(void **state) {
	(void)state;
	request_error err;
	const pb_size_t viewer_ok[] = {crowd_v1_ClientMessage_subscribe_tag, crowd_v1_ClientMessage_ping_tag};
	const pb_size_t player_ok[] = {crowd_v1_ClientMessage_spawn_agents_tag, crowd_v1_ClientMessage_set_targets_tag,
	                               crowd_v1_ClientMessage_set_velocities_tag,
	                               crowd_v1_ClientMessage_remove_agents_tag};
	const pb_size_t admin_only[] = {crowd_v1_ClientMessage_add_obstacle_tag,
	                                crowd_v1_ClientMessage_remove_obstacle_tag};
	for (size_t i = 0; i < 2; i++) {
		assert_true(validate_rights(crowd_v1_Role_ROLE_VIEWER, viewer_ok[i], &err));
		assert_true(validate_rights(crowd_v1_Role_ROLE_PLAYER, viewer_ok[i], &err));
		assert_true(validate_rights(crowd_v1_Role_ROLE_ADMIN, viewer_ok[i], &err));
		assert_false(validate_rights(crowd_v1_Role_ROLE_UNSPECIFIED, viewer_ok[i], &err));
	}
	for (size_t i = 0; i < 4; i++) {
		assert_false(validate_rights(crowd_v1_Role_ROLE_VIEWER, player_ok[i], &err));
		assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED);
		assert_true(validate_rights(crowd_v1_Role_ROLE_PLAYER, player_ok[i], &err));
		assert_true(validate_rights(crowd_v1_Role_ROLE_ADMIN, player_ok[i], &err));
	}
	for (size_t i = 0; i < 2; i++) {
		assert_false(validate_rights(crowd_v1_Role_ROLE_VIEWER, admin_only[i], &err));
		assert_false(validate_rights(crowd_v1_Role_ROLE_PLAYER, admin_only[i], &err));
		assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED);
		assert_true(validate_rights(crowd_v1_Role_ROLE_ADMIN, admin_only[i], &err));
	}
	assert_false(validate_rights(crowd_v1_Role_ROLE_ADMIN, 0, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_UNKNOWN_MESSAGE);
	assert_false(validate_rights(crowd_v1_Role_ROLE_ADMIN, 77, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_UNKNOWN_MESSAGE);
}

static crowd_v1_ClientMessage spawn_msg(crowd_v1_AgentSpec *specs, pb_size_t n) {
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_spawn_agents_tag;
	m.msg.spawn_agents.agents = specs;
	m.msg.spawn_agents.agents_count = n;
	return m;
}

static void expect_spawn_error(crowd_v1_AgentSpec spec, crowd_v1_ErrorCode code) {
	crowd_v1_AgentSpec specs[3] = {crowd_v1_AgentSpec_init_zero, crowd_v1_AgentSpec_init_zero, spec};
	crowd_v1_ClientMessage m = spawn_msg(specs, 3);
	request_error err;
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, code);
	assert_int_equal(err.index, 2); /* the item that failed */
}

static void test_spawn(void **state) {
	(void)state;
	request_error err;
	crowd_v1_AgentSpec specs[11];
	for (int i = 0; i < 11; i++) specs[i] = (crowd_v1_AgentSpec)crowd_v1_AgentSpec_init_zero;
	crowd_v1_ClientMessage m = spawn_msg(specs, 10);
	assert_true(validate_message(&cfg, &m, &err)); /* all fields optional */
	m = spawn_msg(specs, 11);
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_LIMIT_BATCH);

	crowd_v1_AgentSpec ok = crowd_v1_AgentSpec_init_zero;
	ok.has_position = true;
	ok.position = (crowd_v1_Vec2){10, -10};
	ok.has_target = true;
	ok.target = (crowd_v1_Vec2){999, 999};
	ok.has_radius = true;
	ok.radius = 0.5f;
	ok.has_weight = true;
	ok.weight = 1;
	specs[0] = ok;
	m = spawn_msg(specs, 1);
	assert_true(validate_message(&cfg, &m, &err));

	crowd_v1_AgentSpec s;
	const crowd_v1_ErrorCode bad = crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT;
	s = ok, s.position.x = NAN;
	expect_spawn_error(s, bad);
	s = ok, s.position.y = INFINITY;
	expect_spawn_error(s, bad);
	s = ok, s.position.x = 1001; /* outside the default bounds */
	expect_spawn_error(s, bad);
	s = ok, s.target.y = -INFINITY;
	expect_spawn_error(s, bad);
	s = ok, s.has_pref_velocity = true; /* target and velocity both */
	expect_spawn_error(s, bad);
	s = ok, s.has_target = false, s.has_pref_velocity = true, s.pref_velocity = (crowd_v1_Vec2){1000, 0};
	expect_spawn_error(s, bad);
	s = ok, s.radius = 0;
	expect_spawn_error(s, bad);
	s = ok, s.radius = -1;
	expect_spawn_error(s, bad);
	s = ok, s.radius = NAN;
	expect_spawn_error(s, bad);
	s = ok, s.radius = 51;
	expect_spawn_error(s, bad);
	s = ok, s.has_max_speed = true, s.max_speed = -0.1f;
	expect_spawn_error(s, bad);
	s = ok, s.has_pref_speed = true, s.pref_speed = INFINITY;
	expect_spawn_error(s, bad);
	s = ok, s.has_neighbor_dist = true, s.neighbor_dist = 1e9f;
	expect_spawn_error(s, bad);
	s = ok, s.has_max_neighbors = true, s.max_neighbors = 100000;
	expect_spawn_error(s, bad);
	s = ok, s.has_time_horizon = true, s.time_horizon = 0;
	expect_spawn_error(s, bad);
	s = ok, s.has_time_horizon_obst = true, s.time_horizon_obst = NAN;
	expect_spawn_error(s, bad);
	s = ok, s.has_time_horizon = true, s.time_horizon = 1e-45f; /* denormal: agents would drift */
	expect_spawn_error(s, bad);
	s = ok, s.has_time_horizon_obst = true, s.time_horizon_obst = 0.05f; /* under --min-time-horizon 0.1 */
	expect_spawn_error(s, bad);
	s = ok, s.weight = 1.5f;
	expect_spawn_error(s, bad);
	s = ok, s.weight = -0.5f;
	expect_spawn_error(s, bad);
}

static void test_targets_and_velocities(void **state) {
	(void)state;
	request_error err;
	uint32_t ids[12] = {1, 2, 3};
	float xs[3] = {1, 2, 3}, ys[3] = {4, 5, 6};
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_set_targets_tag;
	crowd_v1_SetTargets *t = &m.msg.set_targets;
	t->ids = ids, t->x = xs, t->y = ys;
	t->ids_count = 3, t->x_count = 3, t->y_count = 3;
	assert_true(validate_message(&cfg, &m, &err));
	t->x_count = 1, t->y_count = 1; /* one target for every id */
	assert_true(validate_message(&cfg, &m, &err));
	t->x_count = 2, t->y_count = 2;
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT);
	t->x_count = 3, t->y_count = 2;
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT);
	t->x_count = 3, t->y_count = 3;
	ys[1] = NAN;
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.index, 1);
	ys[1] = 5;
	xs[2] = -2000;
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.index, 2);
	xs[2] = 3;
	t->ids_count = 11;
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_LIMIT_BATCH);

	memset(&m, 0, sizeof m);
	m.which_msg = crowd_v1_ClientMessage_set_velocities_tag;
	crowd_v1_SetVelocities *v = &m.msg.set_velocities;
	float vx[1] = {1}, vy[1] = {1};
	v->ids = ids, v->vx = vx, v->vy = vy, v->ids_count = 3, v->vx_count = 1, v->vy_count = 1;
	assert_true(validate_message(&cfg, &m, &err));
	vx[0] = INFINITY;
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT);
	vx[0] = 200; /* faster than max-agent-speed */
	assert_false(validate_message(&cfg, &m, &err));

	memset(&m, 0, sizeof m);
	m.which_msg = crowd_v1_ClientMessage_remove_agents_tag;
	m.msg.remove_agents.ids = ids;
	m.msg.remove_agents.ids_count = 10;
	assert_true(validate_message(&cfg, &m, &err));
	m.msg.remove_agents.ids_count = 12;
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_LIMIT_BATCH);
}

static void test_obstacles(void **state) {
	(void)state;
	request_error err;
	float xs[9] = {0, 1, 1, 0}, ys[9] = {0, 0, 1, 1};
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_add_obstacle_tag;
	crowd_v1_AddObstacle *o = &m.msg.add_obstacle;
	o->x = xs, o->y = ys, o->x_count = 4, o->y_count = 4;
	assert_true(validate_message(&cfg, &m, &err));
	o->x_count = o->y_count = 2; /* a segment: not a polygon */
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_BAD_POLYGON);
	assert_non_null(strstr(err.message, "segment"));
	o->x_count = o->y_count = 1;
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_BAD_POLYGON);
	o->x_count = o->y_count = 9; /* over max-obstacle-vertices */
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_BAD_POLYGON);
	o->x_count = 4, o->y_count = 3;
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_BAD_POLYGON);
	o->y_count = 4;
	xs[3] = NAN;
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_BAD_POLYGON);
	assert_int_equal(err.index, 3);
	xs[3] = 0;
	/* self-intersecting: the reason is in the message */
	float bx[4] = {0, 1, 1, 0}, by[4] = {0, 1, 0, 1};
	o->x = bx, o->y = by;
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_BAD_POLYGON);
	assert_non_null(strstr(err.message, "cross"));
}

static void test_subscribe_and_misc(void **state) {
	(void)state;
	request_error err;
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_subscribe_tag;
	assert_true(validate_message(&cfg, &m, &err));
	m.msg.subscribe.has_area = true;
	m.msg.subscribe.area = (crowd_v1_Rect){-5, -5, 5, 5};
	assert_true(validate_message(&cfg, &m, &err));
	m.msg.subscribe.area.max_x = -6; /* min > max */
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT);
	m.msg.subscribe.area.max_x = NAN;
	assert_false(validate_message(&cfg, &m, &err));

	memset(&m, 0, sizeof m);
	m.which_msg = crowd_v1_ClientMessage_hello_tag;
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_ALREADY_HELLO);
	m.which_msg = 0;
	assert_false(validate_message(&cfg, &m, &err));
	assert_int_equal(err.code, crowd_v1_ErrorCode_ERROR_UNKNOWN_MESSAGE);
	m.which_msg = crowd_v1_ClientMessage_ping_tag;
	assert_true(validate_message(&cfg, &m, &err));
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rights),
	    cmocka_unit_test(test_spawn),
	    cmocka_unit_test(test_targets_and_velocities),
	    cmocka_unit_test(test_obstacles),
	    cmocka_unit_test(test_subscribe_and_misc),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
