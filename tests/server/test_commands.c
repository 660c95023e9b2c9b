/* test_commands.c — applying requests to a real world: ids in order, owners,
 * NOT_OWNER / UNKNOWN_ID / STALE_ID, all-or-nothing batches, agent limits,
 * obstacles, and dropping a departed client's agents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "messages.h"
#include "config.h"
#include "map.h"

#define CLIENTS 8
static uint32_t owned_by[CLIENTS];
static server_config cfg;
static orca_world *world;
static uint32_t scratch[64];

static uint32_t owned(void *user, uint32_t id) {
	(void)user;
	return id < CLIENTS ? owned_by[id] : 0;
}
static void changed(void *user, uint32_t id, int64_t delta) {
	(void)user;
	if (id < CLIENTS) owned_by[id] = (uint32_t)((int64_t)owned_by[id] + delta);
}
static const command_owners owners = {owned, changed, NULL};

static int setup(void **state) {
	(void)state;
	config_init(&cfg);
	cfg.max_batch = 64;
	cfg.max_agents = 20;
	cfg.max_agents_per_connection = 8;
	cfg.max_obstacles = 2;
	memset(owned_by, 0, sizeof owned_by);
	orca_world_def def = orca_default_world_def();
	def.max_agents = cfg.max_agents;
	assert_int_equal(orca_world_create(&def, &world), ORCA_OK);
	return 0;
}

static int teardown(void **state) {
	(void)state;
	orca_world_destroy(world);
	config_free(&cfg);
	return 0;
}

static command_result run(command *c) {
	command_result r;
	message_apply(world, &cfg, c, &owners, scratch, &r);
	return r;
}

static command spawn_cmd(uint32_t client, crowd_v1_Role role, crowd_v1_AgentSpec *specs, pb_size_t n) {
	command c = {0};
	c.kind = COMMAND_CLIENT;
	c.client_id = client;
	c.role = role;
	c.msg.which_msg = crowd_v1_ClientMessage_spawn_agents_tag;
	c.msg.msg.spawn_agents.agents = specs;
	c.msg.msg.spawn_agents.agents_count = n;
	return c;
}

/* Spawn n default agents spread along x for `client`; returns the first id. */
static uint32_t spawn(uint32_t client, crowd_v1_Role role, pb_size_t n, uint32_t *ids_out) {
	crowd_v1_AgentSpec specs[16];
	for (pb_size_t i = 0; i < n; i++) {
		specs[i] = (crowd_v1_AgentSpec)crowd_v1_AgentSpec_init_zero;
		specs[i].has_position = true;
		specs[i].position = (crowd_v1_Vec2){(float)(client * 100 + i * 5), 0};
	}
	command c = spawn_cmd(client, role, specs, n);
	command_result r = run(&c);
	assert_int_equal(r.error.code, crowd_v1_ErrorCode_ERROR_NONE);
	assert_int_equal(r.id_count, n);
	if (ids_out) memcpy(ids_out, r.ids, n * sizeof *ids_out);
	return r.ids[0];
}

static void test_spawn_defaults_and_owner(void **state) {
	(void)state;
	crowd_v1_AgentSpec specs[2] = {crowd_v1_AgentSpec_init_zero, crowd_v1_AgentSpec_init_zero};
	specs[1].has_radius = true;
	specs[1].radius = 0.25f;
	specs[1].has_target = true;
	specs[1].target = (crowd_v1_Vec2){10, 10};
	command c = spawn_cmd(3, crowd_v1_Role_ROLE_PLAYER, specs, 2);
	command_result r = run(&c);
	assert_int_equal(r.error.code, crowd_v1_ErrorCode_ERROR_NONE);
	assert_int_equal(r.id_count, 2);
	assert_true(r.ids[0] < r.ids[1]); /* ids in request order */
	assert_int_equal(owned_by[3], 2);
	orca_agent_state st;
	assert_int_equal(orca_agent_get(world, r.ids[0], &st), ORCA_OK);
	assert_int_equal(st.user_data, 3); /* owner = client id */
	assert_float_equal(st.radius, (float)cfg.agent_radius, 1e-6);
	assert_int_equal(st.steer_mode, ORCA_STEER_VELOCITY);
	assert_int_equal(orca_agent_get(world, r.ids[1], &st), ORCA_OK);
	assert_float_equal(st.radius, 0.25f, 1e-6);
	assert_int_equal(st.steer_mode, ORCA_STEER_TARGET);
	assert_float_equal(st.target.x, 10, 1e-6);
}

static void test_limits(void **state) {
	(void)state;
	uint32_t ids[16];
	spawn(1, crowd_v1_Role_ROLE_PLAYER, 8, ids);
	/* the connection's limit (8) */
	crowd_v1_AgentSpec one = crowd_v1_AgentSpec_init_zero;
	command c = spawn_cmd(1, crowd_v1_Role_ROLE_PLAYER, &one, 1);
	command_result r = run(&c);
	assert_int_equal(r.error.code, crowd_v1_ErrorCode_ERROR_LIMIT_AGENTS_CONNECTION);
	assert_int_equal(orca_world_agent_count(world), 8);
	/* the world's limit (20): 8 + 8 + 4 fit, one more does not */
	spawn(2, crowd_v1_Role_ROLE_PLAYER, 8, NULL);
	spawn(3, crowd_v1_Role_ROLE_PLAYER, 4, NULL);
	c = spawn_cmd(4, crowd_v1_Role_ROLE_PLAYER, &one, 1);
	r = run(&c);
	assert_int_equal(r.error.code, crowd_v1_ErrorCode_ERROR_LIMIT_AGENTS_WORLD);
	assert_int_equal(orca_world_agent_count(world), 20);
}

static command ids_cmd(pb_size_t tag, uint32_t client, crowd_v1_Role role, uint32_t *ids, pb_size_t n, float *x,
                       float *y, pb_size_t nv) {
	command c = {0};
	c.kind = COMMAND_CLIENT;
	c.client_id = client;
	c.role = role;
	c.msg.which_msg = tag;
	if (tag == crowd_v1_ClientMessage_set_targets_tag) {
		c.msg.msg.set_targets = (crowd_v1_SetTargets){.ids_count = n, .ids = ids, .x_count = nv, .x = x, .y_count = nv, .y = y};
	} else if (tag == crowd_v1_ClientMessage_set_velocities_tag) {
		c.msg.msg.set_velocities = (crowd_v1_SetVelocities){n, ids, nv, x, nv, y};
	} else {
		c.msg.msg.remove_agents = (crowd_v1_RemoveAgents){n, ids};
	}
	return c;
}

static void test_ownership(void **state) {
	(void)state;
	uint32_t mine[2], theirs[2];
	spawn(1, crowd_v1_Role_ROLE_PLAYER, 2, mine);
	spawn(2, crowd_v1_Role_ROLE_PLAYER, 2, theirs);
	float x[1] = {50}, y[1] = {50};
	const pb_size_t tags[] = {crowd_v1_ClientMessage_set_targets_tag, crowd_v1_ClientMessage_set_velocities_tag,
	                          crowd_v1_ClientMessage_remove_agents_tag};
	for (size_t t = 0; t < 3; t++) {
		uint32_t batch[3] = {mine[0], theirs[1], mine[1]};
		command c = ids_cmd(tags[t], 1, crowd_v1_Role_ROLE_PLAYER, batch, 3, x, y, 1);
		command_result r = run(&c);
		assert_int_equal(r.error.code, crowd_v1_ErrorCode_ERROR_NOT_OWNER);
		assert_int_equal(r.error.index, 1);
	}
	/* all or nothing: nothing moved, nothing removed */
	orca_agent_state st;
	assert_int_equal(orca_agent_get(world, mine[0], &st), ORCA_OK);
	assert_int_equal(st.steer_mode, ORCA_STEER_VELOCITY);
	assert_float_equal(st.pref_velocity.x, 0, 0);
	assert_int_equal(orca_world_agent_count(world), 4);
	/* own agents: fine */
	command c = ids_cmd(crowd_v1_ClientMessage_set_targets_tag, 1, crowd_v1_Role_ROLE_PLAYER, mine, 2, x, y, 1);
	assert_int_equal(run(&c).error.code, crowd_v1_ErrorCode_ERROR_NONE);
	assert_int_equal(orca_agent_get(world, mine[1], &st), ORCA_OK);
	assert_int_equal(st.steer_mode, ORCA_STEER_TARGET);
	/* an admin may command anyone's and removing them updates the owner's count */
	c = ids_cmd(crowd_v1_ClientMessage_remove_agents_tag, 5, crowd_v1_Role_ROLE_ADMIN, theirs, 1, NULL, NULL, 0);
	assert_int_equal(run(&c).error.code, crowd_v1_ErrorCode_ERROR_NONE);
	assert_int_equal(owned_by[2], 1);
}

static void test_unknown_and_stale(void **state) {
	(void)state;
	uint32_t ids[2];
	spawn(1, crowd_v1_Role_ROLE_PLAYER, 2, ids);
	command c =
	    ids_cmd(crowd_v1_ClientMessage_remove_agents_tag, 1, crowd_v1_Role_ROLE_PLAYER, ids, 1, NULL, NULL, 0);
	assert_int_equal(run(&c).error.code, crowd_v1_ErrorCode_ERROR_NONE);
	assert_int_equal(owned_by[1], 1);
	/* the removed id is stale now */
	float x[1] = {1}, y[1] = {1};
	uint32_t batch[2] = {ids[1], ids[0]};
	c = ids_cmd(crowd_v1_ClientMessage_set_targets_tag, 1, crowd_v1_Role_ROLE_PLAYER, batch, 2, x, y, 1);
	command_result r = run(&c);
	assert_int_equal(r.error.code, crowd_v1_ErrorCode_ERROR_STALE_ID);
	assert_int_equal(r.error.index, 1);
	uint32_t never[2] = {0, 123456};
	for (int i = 0; i < 2; i++) {
		c = ids_cmd(crowd_v1_ClientMessage_set_velocities_tag, 1, crowd_v1_Role_ROLE_ADMIN, &never[i], 1, x, y,
		            1);
		assert_int_equal(run(&c).error.code, crowd_v1_ErrorCode_ERROR_UNKNOWN_ID);
	}
}

static void test_drop_owner(void **state) {
	(void)state;
	spawn(1, crowd_v1_Role_ROLE_PLAYER, 3, NULL);
	spawn(2, crowd_v1_Role_ROLE_PLAYER, 2, NULL);
	command c = {0};
	c.kind = COMMAND_DROP_OWNER;
	c.client_id = 1;
	assert_int_equal(run(&c).error.code, crowd_v1_ErrorCode_ERROR_NONE);
	assert_int_equal(orca_world_agent_count(world), 2);
	assert_int_equal(owned_by[1], 0);
	assert_int_equal(owned_by[2], 2);
}

static void test_drop_many_owners(void **state) {
	(void)state;
	spawn(1, crowd_v1_Role_ROLE_PLAYER, 3, NULL);
	spawn(2, crowd_v1_Role_ROLE_PLAYER, 2, NULL);
	spawn(3, crowd_v1_Role_ROLE_PLAYER, 4, NULL);
	uint32_t gone[2] = {3, 1};
	command_drop_owners(world, gone, 2, &owners);
	assert_int_equal(orca_world_agent_count(world), 2);
	assert_int_equal(owned_by[1], 0);
	assert_int_equal(owned_by[2], 2);
	assert_int_equal(owned_by[3], 0);
}

static void test_obstacles(void **state) {
	(void)state;
	float xs[4] = {0, 1, 1, 0}, ys[4] = {0, 0, 1, 1};
	command c = {0};
	c.kind = COMMAND_CLIENT;
	c.role = crowd_v1_Role_ROLE_ADMIN;
	c.msg.which_msg = crowd_v1_ClientMessage_add_obstacle_tag;
	c.msg.msg.add_obstacle = (crowd_v1_AddObstacle){4, xs, 4, ys};
	command_result r = run(&c);
	assert_int_equal(r.error.code, crowd_v1_ErrorCode_ERROR_NONE);
	assert_int_equal(r.id_count, 1);
	uint32_t first = r.ids[0];
	assert_int_equal(run(&c).error.code, crowd_v1_ErrorCode_ERROR_NONE);
	/* max-obstacles is 2 */
	assert_int_not_equal(run(&c).error.code, crowd_v1_ErrorCode_ERROR_NONE);
	assert_int_equal(orca_world_obstacle_count(world), 2);

	command rm = {0};
	rm.kind = COMMAND_CLIENT;
	rm.role = crowd_v1_Role_ROLE_ADMIN;
	rm.msg.which_msg = crowd_v1_ClientMessage_remove_obstacle_tag;
	rm.msg.msg.remove_obstacle.id = first;
	assert_int_equal(run(&rm).error.code, crowd_v1_ErrorCode_ERROR_NONE);
	assert_int_equal(run(&rm).error.code, crowd_v1_ErrorCode_ERROR_STALE_ID);
	rm.msg.msg.remove_obstacle.id = 9999;
	assert_int_equal(run(&rm).error.code, crowd_v1_ErrorCode_ERROR_UNKNOWN_ID);
}

/* The walls of --map do not use up --max-obstacles: clients may still add theirs. */
static void test_obstacle_limit_besides_map_walls(void **state) {
	(void)state;
	cfg.map = CONFIG_MAP_ROOMS;
	const map_def map = map_def_of(&cfg);
	assert_true(map_wall_count(&map) > cfg.max_obstacles);
	assert_int_equal(map_build(&map, world), ORCA_OK);
	float xs[4] = {0, 1, 1, 0}, ys[4] = {0, 0, 1, 1};
	command c = {0};
	c.kind = COMMAND_CLIENT;
	c.role = crowd_v1_Role_ROLE_ADMIN;
	c.msg.which_msg = crowd_v1_ClientMessage_add_obstacle_tag;
	c.msg.msg.add_obstacle = (crowd_v1_AddObstacle){4, xs, 4, ys};
	assert_int_equal(run(&c).error.code, crowd_v1_ErrorCode_ERROR_NONE);
	assert_int_equal(run(&c).error.code, crowd_v1_ErrorCode_ERROR_NONE);
	/* max-obstacles is 2 */
	assert_int_equal(run(&c).error.code, crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT);
	assert_int_equal(orca_world_obstacle_count(world), map_wall_count(&map) + 2);
}

static void test_error_mapping(void **state) {
	(void)state;
	assert_int_equal(command_error_from_orca(ORCA_OK), crowd_v1_ErrorCode_ERROR_NONE);
	assert_int_equal(command_error_from_orca(ORCA_ERR_UNKNOWN_ID), crowd_v1_ErrorCode_ERROR_UNKNOWN_ID);
	assert_int_equal(command_error_from_orca(ORCA_ERR_STALE_ID), crowd_v1_ErrorCode_ERROR_STALE_ID);
	assert_int_equal(command_error_from_orca(ORCA_ERR_CAPACITY), crowd_v1_ErrorCode_ERROR_LIMIT_AGENTS_WORLD);
	assert_int_equal(command_error_from_orca(ORCA_ERR_BAD_POLYGON), crowd_v1_ErrorCode_ERROR_BAD_POLYGON);
	assert_int_equal(command_error_from_orca(ORCA_ERR_NO_MEMORY), crowd_v1_ErrorCode_ERROR_INTERNAL);
}

static void test_queue_order(void **state) {
	(void)state;
	command_queue q = {0};
	command *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *c = calloc(1, sizeof *c);
	a->kind = b->kind = c->kind = COMMAND_DROP_OWNER;
	a->client_id = 1, b->client_id = 2, c->client_id = 3;
	command_queue_push(&q, a);
	command_queue_push(&q, b);
	command_queue_push(&q, c);
	assert_int_equal(q.count, 3);
	command *all = command_queue_take(&q);
	assert_int_equal(q.count, 0);
	assert_null(q.head);
	assert_ptr_equal(all, a);
	assert_ptr_equal(all->next, b);
	assert_ptr_equal(all->next->next, c);
	assert_null(c->next);
	command_queue_push(&q, all); /* re-queue the chain's head only: clear frees it */
	a->next = NULL;
	command_free(b);
	command_free(c);
	command_queue_clear(&q);
	assert_null(q.head);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_spawn_defaults_and_owner, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ownership, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unknown_and_stale, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_drop_owner, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_drop_many_owners, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_obstacles, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_obstacle_limit_besides_map_walls, setup, teardown),
	    cmocka_unit_test(test_error_mapping),
	    cmocka_unit_test(test_queue_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
