/* test_worlds.c — many worlds in one real server (protocol minor 2): create,
 * list, join, close; every refused request changes nothing (the list is the
 * same after it); worlds are isolated (another world's agents cannot be
 * reached by id, seen by area or heard of by events); /metrics has a series
 * per world; a token limited to one world; worlds and their agents survive a restart on the same data dir; an
 * idle world closes. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "crowd/wire.h"
#include "harness.h"

static server_proc server;

static int start_server(void **state) {
	(void)state;
	const char *args[] = {"--token",         "adm=admin",         "--token",     "pl=player",    "--token",
	                      "pa=player@arena", "--token",           "view=viewer", "--max-worlds", "4",
	                      "--world-bounds",  "-100,-100,100,100", "--log-level", "warn",         NULL};
	return server_start(&server, args) ? 0 : -1;
}

static int stop_server(void **state) {
	(void)state;
	server_stop(&server);
	return 0;
}

static crowd_v1_WorldSettings small_world(void) {
	crowd_v1_WorldSettings s = crowd_v1_WorldSettings_init_zero;
	s.tick_rate = 20;
	s.bounds_min_x = s.bounds_min_y = -50;
	s.bounds_max_x = s.bounds_max_y = 50;
	return s;
}

/* A CreateWorld sent raw: names the library would refuse to send. */
static int64_t create_raw(tc *t, const char *name, const crowd_v1_WorldSettings *settings) {
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_create_world_tag;
	m.msg.create_world.name = (char *)name;
	if (settings) {
		m.msg.create_world.has_settings = true;
		m.msg.create_world.settings = *settings;
	}
	return crowd_client_send_message(t->client, &m);
}

static void ensure_world(tc *admin, const char *name) {
	const crowd_v1_WorldSettings s = small_world();
	const tc_answer *a = tc_await(admin, crowd_client_create_world(admin->client, name, &s));
	assert_non_null(a);
	if (!a->ok) assert_int_equal(a->code, crowd_v1_ErrorCode_ERROR_WORLD_EXISTS);
}

static void assert_same_list(tc *admin, uint32_t count) {
	assert_true(tc_list_worlds(admin));
	assert_int_equal(admin->world_count, count);
}

static void test_create_list_join_close(void **state) {
	(void)state;
	tc *admin = tc_connect(server.port, "adm", false);
	assert_non_null(admin);
	assert_string_equal(admin->welcome.world, "default");
	assert_int_equal(admin->welcome.protocol_minor, CROWD_PROTOCOL_MINOR);
	assert_true(tc_list_worlds(admin));
	assert_int_equal(admin->max_worlds, 4);
	assert_non_null(tc_world(admin, "default"));
	const uint32_t before = admin->world_count;

	const crowd_v1_WorldSettings s = small_world();
	tc_assert_ack(tc_await(admin, crowd_client_create_world(admin->client, "lobby-1", &s)));
	assert_true(tc_list_worlds(admin));
	assert_int_equal(admin->world_count, before + 1);
	const crowd_v1_WorldInfo *w = tc_world(admin, "lobby-1");
	assert_non_null(w);
	assert_int_equal(w->tick_rate, 20);
	assert_int_equal(w->agents, 0);
	assert_false(w->persisted);
	/* listed ascending by name */
	for (uint32_t i = 1; i < admin->world_count; i++)
		assert_true(strcmp(admin->worlds[i - 1].name, admin->worlds[i].name) < 0);

	/* a client that names it gets its settings in Welcome */
	tc *p = tc_connect_world(server.port, "pl", "lobby-1", false);
	assert_non_null(p);
	assert_string_equal(p->welcome.world, "lobby-1");
	assert_int_equal(p->welcome.tick_rate_hz, 20);
	assert_true(p->welcome.world_bounds.max_x == 50.0f);
	tc_assert_ack(tc_await(p, tc_spawn_grid(p, 3, 3, 0, 0, 3, 0)));
	/* its bounds, not the server's, decide what is inside */
	tc_assert_error(tc_await(p, tc_spawn_grid(p, 1, 1, 80, 80, 1, 0)), crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT);
	crowd_v1_WorldSettings wide = small_world();
	wide.bounds_min_x = wide.bounds_min_y = -500;
	wide.bounds_max_x = wide.bounds_max_y = 500;
	tc_assert_ack(tc_await(admin, crowd_client_create_world(admin->client, "wide", &wide)));
	tc *q = tc_connect_world(server.port, "pl", "wide", false);
	assert_non_null(q);
	tc_assert_ack(tc_await(q, tc_spawn_grid(q, 1, 1, 300, 300, 1, 0)));
	tc_close(q);
	tc_assert_ack(tc_await(admin, crowd_client_close_world(admin->client, "wide", true)));
	/* JoinWorld while owning agents: refused, nothing moves */
	tc_assert_error(tc_await(p, crowd_client_join_world(p->client, "default")),
	             crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT);
	assert_true(tc_list_worlds(admin));
	assert_int_equal(tc_world(admin, "lobby-1")->clients, 1);

	/* CloseWorld: its client is told and closed, the list no longer has it */
	tc_assert_ack(tc_await(admin, crowd_client_close_world(admin->client, "lobby-1", false)));
	assert_int_equal(tc_await_unasked_error(p), crowd_v1_ErrorCode_ERROR_WORLD_CLOSED);
	assert_true(tc_await_closed(p));
	assert_true(tc_list_worlds(admin));
	assert_int_equal(admin->world_count, before);
	assert_null(tc_world(admin, "lobby-1"));
	tc_close(p);
	tc_close(admin);
}

static void test_refused_requests_change_nothing(void **state) {
	(void)state;
	tc *admin = tc_connect(server.port, "adm", false);
	assert_non_null(admin);
	ensure_world(admin, "arena");
	assert_true(tc_list_worlds(admin));
	const uint32_t count = admin->world_count;

	const char *bad_names[] = {"",          ".",     "..",
	                           "a/b",       "a b",   "caf\xc3\xa9",
	                           "tab\there", "x\x01", "123456789012345678901234567890123" /* 33 bytes */};
	for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
		assert_false(crowd_world_name_valid(bad_names[i]));
		tc_assert_error(tc_await(admin, create_raw(admin, bad_names[i], NULL)),
		             crowd_v1_ErrorCode_ERROR_BAD_WORLD_NAME);
	}
	assert_true(crowd_world_name_valid("12345678901234567890123456789012")); /* 32 bytes */
	/* the library refuses them before sending */
	assert_int_equal(crowd_client_create_world(admin->client, "a/b", NULL), CROWD_CLIENT_ERR_ARGUMENT);
	assert_same_list(admin, count);

	crowd_v1_WorldSettings s = small_world();
	s.tick_rate = 31; /* above the server's 30 */
	tc_assert_error(tc_await(admin, crowd_client_create_world(admin->client, "fast", &s)),
	             crowd_v1_ErrorCode_ERROR_BAD_WORLD_SETTINGS);
	s = small_world();
	s.bounds_max_x = -60; /* min > max */
	tc_assert_error(tc_await(admin, crowd_client_create_world(admin->client, "inside-out", &s)),
	             crowd_v1_ErrorCode_ERROR_BAD_WORLD_SETTINGS);
	s = small_world();
	s.bounds_max_y = 1e7f;
	tc_assert_error(tc_await(admin, crowd_client_create_world(admin->client, "huge", &s)),
	             crowd_v1_ErrorCode_ERROR_BAD_WORLD_SETTINGS);
	s = small_world();
	s.max_agents = 100001; /* above --max-agents */
	tc_assert_error(tc_await(admin, crowd_client_create_world(admin->client, "crowded", &s)),
	             crowd_v1_ErrorCode_ERROR_BAD_WORLD_SETTINGS);
	s = small_world();
	s.avoidance = (crowd_v1_Avoidance)7;
	tc_assert_error(tc_await(admin, crowd_client_create_world(admin->client, "odd", &s)),
	             crowd_v1_ErrorCode_ERROR_BAD_WORLD_SETTINGS);
	tc_assert_error(tc_await(admin, crowd_client_create_world(admin->client, "arena", NULL)),
	             crowd_v1_ErrorCode_ERROR_WORLD_EXISTS);
	tc_assert_error(tc_await(admin, crowd_client_close_world(admin->client, "default", true)),
	             crowd_v1_ErrorCode_ERROR_WORLD_FORBIDDEN);
	tc_assert_error(tc_await(admin, crowd_client_close_world(admin->client, "nowhere", false)),
	             crowd_v1_ErrorCode_ERROR_NO_SUCH_WORLD);
	tc_assert_error(tc_await(admin, crowd_client_join_world(admin->client, "nowhere")),
	             crowd_v1_ErrorCode_ERROR_NO_SUCH_WORLD);
	assert_same_list(admin, count);

	/* roles: a player or viewer may not create or close */
	tc *p = tc_connect(server.port, "pl", false);
	tc *v = tc_connect(server.port, "view", false);
	assert_non_null(p);
	assert_non_null(v);
	tc_assert_error(tc_await(p, crowd_client_create_world(p->client, "mine", NULL)),
	             crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED);
	tc_assert_error(tc_await(v, crowd_client_close_world(v->client, "arena", false)),
	             crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED);
	/* but may list */
	assert_true(tc_list_worlds(v));
	assert_int_equal(v->world_count, count);
	assert_same_list(admin, count);

	/* more than --max-worlds (4, the default world counts) */
	char name[16];
	uint32_t open = count;
	for (int i = 0; open < 4; i++, open++) {
		snprintf(name, sizeof name, "fill-%d", i);
		tc_assert_ack(tc_await(admin, crowd_client_create_world(admin->client, name, NULL)));
	}
	tc_assert_error(tc_await(admin, crowd_client_create_world(admin->client, "one-more", NULL)),
	             crowd_v1_ErrorCode_ERROR_LIMIT_WORLDS);
	assert_same_list(admin, 4);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof name, "fill-%d", i);
		tc_await(admin, crowd_client_close_world(admin->client, name, true));
	}
	assert_same_list(admin, count);

	/* Hello naming an unknown world, or a bad name: an Error, then close */
	tc *lost = tc_connect_world(server.port, "pl", "nowhere", false);
	assert_null(lost);
	tc *raw = tc_open(server.port, 0, true);
	assert_non_null(raw);
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_hello_tag;
	m.msg.hello.protocol_major = 1;
	m.msg.hello.protocol_minor = 2;
	strcpy(m.msg.hello.token, "pl");
	m.msg.hello.world = "../etc";
	assert_true(crowd_client_send_message(raw->client, &m) > 0);
	assert_int_equal(tc_await_any_error(raw), crowd_v1_ErrorCode_ERROR_BAD_WORLD_NAME);
	assert_true(tc_await_closed(raw));
	tc_close(raw);
	assert_same_list(admin, count);
	tc_close(p);
	tc_close(v);
	tc_close(admin);
}

static void test_token_limited_to_one_world(void **state) {
	(void)state;
	tc *admin = tc_connect(server.port, "adm", false);
	assert_non_null(admin);
	ensure_world(admin, "arena");
	/* pa=player@arena: the default world is not its */
	tc *t = tc_open(server.port, 0, true);
	assert_non_null(t);
	assert_true(crowd_client_hello(t->client, "pa", "itest", false) > 0);
	assert_int_equal(tc_await_any_error(t), crowd_v1_ErrorCode_ERROR_WORLD_FORBIDDEN);
	assert_true(tc_await_closed(t));
	tc_close(t);
	tc *pa = tc_connect_world(server.port, "pa", "arena", false);
	assert_non_null(pa);
	tc_assert_error(tc_await(pa, crowd_client_join_world(pa->client, "default")),
	             crowd_v1_ErrorCode_ERROR_WORLD_FORBIDDEN);
	assert_string_equal(pa->welcome.world, "arena");
	tc_close(pa);
	tc_close(admin);
}

typedef struct events_wait {
	tc *t;
	uint64_t at_least;
} events_wait;

static bool events_arrived(void *ctx) {
	const events_wait *w = ctx;
	return crowd_client_get_counters(w->t->client).events_received >= w->at_least || w->t->closed;
}

typedef struct agents_wait {
	tc *t;
	uint32_t count;
	uint64_t after;
} agents_wait;

static bool agents_seen(void *ctx) {
	const agents_wait *w = ctx;
	return (w->t->snapshots > 0 && w->t->last_tick > w->after && w->t->last_world_agent_count == w->count) ||
	       w->t->closed;
}

/* A client of world B tries to reach world A's agents by id, by area and by
 * events: refused or invisible, and A's agents are untouched. */
static void test_worlds_are_isolated(void **state) {
	(void)state;
	tc *admin = tc_connect(server.port, "adm", false);
	assert_non_null(admin);
	ensure_world(admin, "arena");
	/* world A (default): an owner with 4 agents walking to a near target */
	tc *a = tc_connect(server.port, "pl", false);
	assert_non_null(a);
	const tc_answer *spawned = tc_await(a, tc_spawn_grid(a, 4, 2, 10, 10, 3, 2));
	tc_assert_ack(spawned);
	assert_int_equal(spawned->ids_count, 4);
	uint32_t a_ids[4];
	memcpy(a_ids, spawned->ids, sizeof a_ids);
	/* world B (arena): an admin (who may command any agent of its own world) and one agent */
	tc *b = tc_connect_world(server.port, "adm", "arena", false);
	assert_non_null(b);
	tc_assert_ack(tc_await(b, tc_spawn_grid(b, 1, 1, 0, 0, 1, 0)));
	tc_assert_ack(tc_await(b, crowd_client_subscribe_events(b->client, true, false)));

	/* by id: A's ids beyond B's one agent are unknown in B */
	const float tx = 12, ty = 12;
	tc_assert_error(tc_await(b, crowd_client_set_targets(b->client, &a_ids[3], 1, &tx, &ty, 1)),
	             crowd_v1_ErrorCode_ERROR_UNKNOWN_ID);
	tc_assert_error(tc_await(b, crowd_client_remove_agents(b->client, &a_ids[2], 1)),
	             crowd_v1_ErrorCode_ERROR_UNKNOWN_ID);
	/* A's agents are all there, and A's own commands work on them */
	tc_assert_ack(tc_await(a, crowd_client_set_targets(a->client, a_ids, 4, &tx, &ty, 1)));

	/* by area: B's whole-world subscription counts B's one agent only */
	tc_assert_ack(tc_await(b, crowd_client_subscribe(b->client, NULL, 1)));
	agents_wait bw = {b, 1, 0};
	assert_true(tc_pump_until(agents_seen, &bw, HARNESS_GUARD_MS));
	assert_int_equal(b->last_world_agent_count, 1);
	tc_assert_ack(tc_await(a, crowd_client_subscribe(a->client, NULL, 1)));
	agents_wait aw = {a, 4, 0};
	assert_true(tc_pump_until(agents_seen, &aw, HARNESS_GUARD_MS));

	/* by events: A hears its agents arrive; B, subscribed to every agent's
	 * events in its world, hears nothing of A's */
	events_wait ew = {a, 1};
	assert_true(tc_pump_until(events_arrived, &ew, HARNESS_GUARD_MS));
	/* B's snapshots kept coming meanwhile: B would have had A's events by now */
	const uint64_t b_tick = b->last_tick;
	agents_wait later = {b, 1, b_tick + 5};
	assert_true(tc_pump_until(agents_seen, &later, HARNESS_GUARD_MS));
	assert_int_equal(crowd_client_get_counters(b->client).events_received, 0);
	assert_int_equal(b->last_world_agent_count, 1);

	/* /metrics: a series per world, labelled by name */
	char *metrics = server_metrics(&server);
	assert_non_null(metrics);
	assert_true(metric_value(metrics, "crowd_world_agents{world=\"arena\"}") == 1.0);
	assert_true(metric_value(metrics, "crowd_world_clients{world=\"arena\"}") == 1.0);
	assert_true(metric_value(metrics, "crowd_world_ticks_total{world=\"arena\"}") > 0.0);
	assert_true(metric_value(metrics, "crowd_world_tick_lateness_p99_seconds{world=\"default\"}") >= 0.0);
	assert_true(metric_value(metrics, "crowd_world_tick_rate_hz{world=\"arena\"}") == 20.0);
	assert_true(metric_value(metrics, "crowd_worlds") >= 2.0);
	assert_true(metric_value(metrics, "crowd_worlds_max") == 4.0);
	free(metrics);
	tc_close(b);
	tc_close(a);
	tc_close(admin);
}

static void test_join_world_moves_the_subscription(void **state) {
	(void)state;
	tc *admin = tc_connect(server.port, "adm", false);
	assert_non_null(admin);
	ensure_world(admin, "arena");
	tc *v = tc_connect(server.port, "view", false);
	assert_non_null(v);
	tc_assert_ack(tc_await(v, crowd_client_subscribe(v->client, NULL, 1)));
	assert_true(tc_await_snapshots(v, 1));
	tc_assert_ack(tc_await(v, crowd_client_join_world(v->client, "arena")));
	/* the subscription reset with the move: no snapshot of either world comes until it asks */
	const uint64_t seen = v->snapshots;
	assert_true(tc_list_worlds(v)); /* a round trip: snapshots due meanwhile would have come first */
	assert_true(tc_list_worlds(v));
	assert_int_equal(v->snapshots, seen);
	assert_int_equal(tc_world(v, "arena")->clients, 1);
	tc_close(v);
	tc_close(admin);
}

/* ---------------------------------------------------------------- restart, idle */

static void test_worlds_survive_a_restart(void **state) {
	(void)state;
	char dir[] = "/tmp/crowd-worlds-XXXXXX";
	assert_non_null(mkdtemp(dir));
	const char *args[] = {
	    "--data-dir", dir, "--world-bounds", "-100,-100,100,100", "--fsync", "always", "--log-level", "warn", NULL};
	server_proc srv;
	assert_true(server_start(&srv, args));
	tc *admin = tc_connect(srv.port, NULL, true);
	assert_non_null(admin);
	const crowd_v1_WorldSettings s = small_world();
	tc_assert_ack(tc_await(admin, crowd_client_create_world(admin->client, "kept", &s)));
	tc *p = tc_connect_world(srv.port, NULL, "kept", true);
	assert_non_null(p);
	tc_assert_ack(tc_await(p, tc_spawn_grid(p, 6, 3, 0, 0, 3, 0)));
	tc_close(p);
	tc_close(admin);
	assert_true(WIFEXITED(server_signal_and_wait(&srv, SIGTERM)));
	server_stop(&srv);

	assert_true(server_start(&srv, args));
	admin = tc_connect(srv.port, NULL, true);
	assert_non_null(admin);
	assert_true(tc_list_worlds(admin));
	const crowd_v1_WorldInfo *w = tc_world(admin, "kept");
	assert_non_null(w);
	assert_int_equal(w->agents, 6);
	assert_int_equal(w->tick_rate, 20);
	assert_true(w->persisted);
	/* closed with its data kept, created again: it is back as recorded */
	tc_assert_ack(tc_await(admin, crowd_client_close_world(admin->client, "kept", false)));
	crowd_v1_WorldSettings other = small_world();
	other.tick_rate = 10;
	tc_assert_ack(tc_await(admin, crowd_client_create_world(admin->client, "kept", &other)));
	assert_true(tc_list_worlds(admin));
	w = tc_world(admin, "kept");
	assert_non_null(w);
	assert_int_equal(w->agents, 6);
	assert_int_equal(w->tick_rate, 20);
	/* closed with its data: gone after the next restart too */
	tc_assert_ack(tc_await(admin, crowd_client_close_world(admin->client, "kept", true)));
	tc_close(admin);
	assert_true(WIFEXITED(server_signal_and_wait(&srv, SIGTERM)));
	server_stop(&srv);
	assert_true(server_start(&srv, args));
	admin = tc_connect(srv.port, NULL, true);
	assert_non_null(admin);
	assert_true(tc_list_worlds(admin));
	assert_null(tc_world(admin, "kept"));
	tc_close(admin);
	server_stop(&srv);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

typedef struct gone_wait {
	tc *t;
	const char *name;
} gone_wait;

static bool world_gone(void *ctx) {
	const gone_wait *w = ctx;
	return !tc_list_worlds(w->t) || !tc_world(w->t, w->name);
}

static void test_idle_world_closes(void **state) {
	(void)state;
	const char *args[] = {
	    "--world-idle-seconds", "0.3", "--world-bounds", "-100,-100,100,100", "--log-level", "warn", NULL};
	server_proc srv;
	assert_true(server_start(&srv, args));
	tc *admin = tc_connect(srv.port, NULL, false);
	assert_non_null(admin);
	tc_assert_ack(tc_await(admin, crowd_client_create_world(admin->client, "brief", NULL)));
	/* a world with an agent in it stays open */
	tc *p = tc_connect_world(srv.port, NULL, "brief", true);
	assert_non_null(p);
	tc_assert_ack(tc_await(p, tc_spawn_grid(p, 1, 1, 0, 0, 1, 0)));
	const uint64_t tick = p->welcome.tick;
	tc_close(p);
	tc *v = tc_connect_world(srv.port, NULL, "brief", false);
	assert_non_null(v);
	tc_assert_ack(tc_await(v, crowd_client_subscribe(v->client, NULL, 1)));
	/* 0.3 s at 30 Hz is 9 ticks: 20 ticks later it is still open, with its agent */
	assert_true(tc_await_tick(v, tick + 30));
	assert_true(tc_list_worlds(admin));
	assert_non_null(tc_world(admin, "brief"));
	/* the agent removed and the last client gone: it closes by itself */
	tc_assert_ack(tc_await(admin, crowd_client_join_world(admin->client, "brief")));
	const uint32_t id = 1;
	tc_assert_ack(tc_await(admin, crowd_client_remove_agents(admin->client, &id, 1)));
	tc_assert_ack(tc_await(admin, crowd_client_join_world(admin->client, "default")));
	tc_close(v);
	gone_wait g = {admin, "brief"};
	assert_true(tc_pump_until(world_gone, &g, HARNESS_GUARD_MS));
	assert_false(admin->closed);
	tc_close(admin);
	server_stop(&srv);
}

int main(void) {
	const struct CMUnitTest shared[] = {
	    cmocka_unit_test(test_create_list_join_close),
	    cmocka_unit_test(test_refused_requests_change_nothing),
	    cmocka_unit_test(test_token_limited_to_one_world),
	    cmocka_unit_test(test_worlds_are_isolated),
	    cmocka_unit_test(test_join_world_moves_the_subscription),
	};
	const struct CMUnitTest own[] = {
	    cmocka_unit_test(test_worlds_survive_a_restart),
	    cmocka_unit_test(test_idle_world_closes),
	};
	int failed = cmocka_run_group_tests_name("worlds", shared, start_server, stop_server);
	return failed + cmocka_run_group_tests_name("worlds_own_server", own, NULL, NULL);
}
