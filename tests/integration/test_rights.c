/* test_rights.c — roles over the real server started with tokens: a player
 * cannot move, steer, remove or claim another player's agents (NOT_OWNER, and
 * snapshots name the real owner), a viewer cannot spawn (PERMISSION_DENIED),
 * obstacles are admin-only; unknown tokens, commands before Hello and silence
 * past the Hello timeout are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "harness.h"

static server_proc server;

static int start_server(void **state) {
	(void)state;
	const char *args[] = {"--token",
	                      "adm-secret=admin",
	                      "--token",
	                      "p1-secret=player",
	                      "--token",
	                      "p2-secret=player",
	                      "--token",
	                      "view-secret=viewer",
	                      "--hello-timeout",
	                      "0.5",
	                      "--log-level",
	                      "warn",
	                      NULL};
	return server_start(&server, args) ? 0 : -1;
}

static int stop_server(void **state) {
	(void)state;
	server_stop(&server);
	return 0;
}

static int find_index(const crowd_client_snapshot *s, uint32_t id) {
	for (uint32_t i = 0; i < s->count; i++)
		if (s->id[i] == id) return (int)i;
	return -1;
}

static void test_player_cannot_touch_another_players_agents(void **state) {
	(void)state;
	tc *p1 = tc_connect(server.port, "p1-secret", false);
	tc *p2 = tc_connect(server.port, "p2-secret", false);
	assert_non_null(p1);
	assert_non_null(p2);
	assert_int_equal(p1->welcome.role, crowd_v1_Role_ROLE_PLAYER);
	assert_int_not_equal(p1->welcome.client_id, p2->welcome.client_id);

	const tc_answer *a = tc_await(p1, tc_spawn_grid(p1, 3, 3, 0.0f, 0.0f, 4.0f, 0));
	assert_true(a && a->ok && a->ids_count == 3);
	uint32_t ids[3];
	memcpy(ids, a->ids, sizeof ids);
	float x = 50.0f, y = 50.0f, vx = 1.0f, vy = 0.0f;

	tc_assert_error(tc_await(p2, crowd_client_set_targets(p2->client, ids, 3, &x, &y, 1)),
	             crowd_v1_ErrorCode_ERROR_NOT_OWNER);
	tc_assert_error(tc_await(p2, crowd_client_set_velocities(p2->client, ids, 3, &vx, &vy, 1)),
	             crowd_v1_ErrorCode_ERROR_NOT_OWNER);
	tc_assert_error(tc_await(p2, crowd_client_remove_agents(p2->client, &ids[1], 1)),
	             crowd_v1_ErrorCode_ERROR_NOT_OWNER);
	/* One foreign id in a batch of its own spoils the batch (all or nothing). */
	a = tc_await(p2, tc_spawn_grid(p2, 1, 1, 0.0f, 20.0f, 1.0f, 0));
	assert_true(a && a->ok && a->ids_count == 1);
	uint32_t mixed[2] = {a->ids[0], ids[0]};
	const tc_answer *e = tc_await(p2, crowd_client_remove_agents(p2->client, mixed, 2));
	tc_assert_error(e, crowd_v1_ErrorCode_ERROR_NOT_OWNER);
	assert_int_equal(e->index, 1);

	/* Nothing moved or vanished: p2 sees p1's agents, still p1's, still still. */
	assert_true(tc_await(p2, crowd_client_subscribe(p2->client, NULL, 1))->ok);
	assert_true(tc_await_snapshots(p2, 3));
	const crowd_client_snapshot *s = crowd_client_latest_snapshot(p2->client);
	for (int i = 0; i < 3; i++) {
		int k = find_index(s, ids[i]);
		assert_true(k >= 0);
		assert_int_equal(s->owner[k], p1->welcome.client_id);
		assert_int_not_equal(s->owner[k], p2->welcome.client_id);
		assert_float_equal(s->x[k], (float)i * 4.0f, 0.05f);
		assert_float_equal(s->vx[k], 0.0f, 0.01f);
	}
	assert_true(find_index(s, mixed[0]) >= 0);
	assert_int_equal(s->owner[find_index(s, mixed[0])], p2->welcome.client_id);

	/* The owner may, and so may an admin. */
	assert_true(tc_await(p1, crowd_client_set_targets(p1->client, ids, 1, &x, &y, 1))->ok);
	tc *adm = tc_connect(server.port, "adm-secret", false);
	assert_non_null(adm);
	assert_int_equal(adm->welcome.role, crowd_v1_Role_ROLE_ADMIN);
	assert_true(tc_await(adm, crowd_client_remove_agents(adm->client, &ids[2], 1))->ok);
	tc_close(adm);
	tc_close(p2);
	tc_close(p1);
}

static void test_viewer_cannot_spawn_or_command(void **state) {
	(void)state;
	tc *v = tc_connect(server.port, "view-secret", false);
	assert_non_null(v);
	assert_int_equal(v->welcome.role, crowd_v1_Role_ROLE_VIEWER);
	tc_assert_error(tc_await(v, tc_spawn_grid(v, 1, 1, 0.0f, 0.0f, 1.0f, 0)),
	             crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED);
	uint32_t id = 1;
	float x = 0.0f, y = 0.0f;
	tc_assert_error(tc_await(v, crowd_client_set_targets(v->client, &id, 1, &x, &y, 1)),
	             crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED);
	tc_assert_error(tc_await(v, crowd_client_remove_agents(v->client, &id, 1)),
	             crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED);
	/* What a viewer may do: subscribe and ping. */
	assert_true(tc_await(v, crowd_client_subscribe(v->client, NULL, 1))->ok);
	assert_true(tc_await_snapshots(v, 1));
	assert_false(v->closed);
	tc_close(v);
}

static void test_obstacles_are_admin_only(void **state) {
	(void)state;
	const float x[] = {10.0f, 12.0f, 12.0f, 10.0f}, y[] = {300.0f, 300.0f, 302.0f, 302.0f};
	tc *p = tc_connect(server.port, "p1-secret", false);
	tc *adm = tc_connect(server.port, "adm-secret", false);
	assert_non_null(p);
	assert_non_null(adm);
	tc_assert_error(tc_await(p, crowd_client_add_obstacle(p->client, x, y, 4)),
	             crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED);
	const tc_answer *a = tc_await(adm, crowd_client_add_obstacle(adm->client, x, y, 4));
	assert_true(a && a->ok && a->ids_count == 1);
	uint32_t obstacle = a->ids[0];
	tc_assert_error(tc_await(p, crowd_client_remove_obstacle(p->client, obstacle)),
	             crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED);
	assert_true(tc_await(adm, crowd_client_remove_obstacle(adm->client, obstacle))->ok);
	tc_close(adm);
	tc_close(p);
}

static void test_bad_token_is_refused_and_closed(void **state) {
	(void)state;
	tc *t = tc_open(server.port, 0, true);
	assert_non_null(t);
	assert_true(crowd_client_hello(t->client, "wrong", "itest", false) > 0);
	const tc_answer *a = tc_await(t, 1);
	tc_assert_error(a, crowd_v1_ErrorCode_ERROR_BAD_TOKEN);
	assert_true(tc_await_closed(t));
	assert_false(t->welcomed);
	tc_close(t);
}

static void test_commands_before_hello_are_refused(void **state) {
	(void)state;
	tc *t = tc_open(server.port, 0, true);
	assert_non_null(t);
	int64_t req = tc_spawn_grid(t, 1, 1, 0.0f, 0.0f, 1.0f, 0);
	tc_assert_error(tc_await(t, req), crowd_v1_ErrorCode_ERROR_HELLO_REQUIRED);
	assert_false(t->welcomed);
	tc_close(t);
}

static void test_silent_connection_times_out(void **state) {
	(void)state;
	tc *t = tc_open(server.port, 0, true);
	assert_non_null(t);
	assert_int_equal(tc_await_unasked_error(t), crowd_v1_ErrorCode_ERROR_HELLO_TIMEOUT);
	assert_true(tc_await_closed(t));
	tc_close(t);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_player_cannot_touch_another_players_agents),
	    cmocka_unit_test(test_viewer_cannot_spawn_or_command),
	    cmocka_unit_test(test_obstacles_are_admin_only),
	    cmocka_unit_test(test_bad_token_is_refused_and_closed),
	    cmocka_unit_test(test_commands_before_hello_are_refused),
	    cmocka_unit_test(test_silent_connection_times_out),
	};
	return cmocka_run_group_tests(tests, start_server, stop_server);
}
