/* test_navigation.c — navigation over the protocol, against the real server:
 * a wall with two doors; four agents head for the near door; a block added
 * at run time closes it and they re-plan through the other (checked from the
 * snapshots: each crosses the wall inside the far door) and report ARRIVED
 * to their owner; GetPaths answers their corridors; an enclosed target is
 * UNREACHABLE with the point chosen (the nearest one outside the box); a minor-0 client gets no AgentEvents; an
 * admin who asked for every agent's events gets the others'; a player may
 * not ask for every agent's; /metrics counts the paths, re-plans and events.
 * Every wait is for a message; the wall clock only guards against a hang. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <crowd/wire.h>

#include "harness.h"

#define MAX_AGENTS 8

typedef struct nav_client {
	crowd_client *c;
	uint32_t acked_request;
	uint32_t ack_ids[MAX_AGENTS];
	size_t ack_count;
	uint32_t error_request;
	int error_code;
	uint32_t events[4];        /* by kind */
	uint32_t arrived_of[MAX_AGENTS];
	crowd_v1_AgentEvent last_unreachable;
	uint32_t paths_request;
	uint32_t path_count;
	float path_max_y;          /* the largest corner y of any path */
	uint32_t path_corridor_polys;
	uint64_t pongs;
	/* snapshots: where each agent of ack_ids was, and where it crossed x = 0 */
	float last_x[MAX_AGENTS], last_y[MAX_AGENTS];
	bool seen[MAX_AGENTS];
	float crossed_y[MAX_AGENTS];
	uint64_t last_tick;
	uint32_t inside_block; /* snapshot positions inside the closing block */
} nav_client;

static uint64_t now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int agent_index(const nav_client *n, uint32_t id) {
	for (size_t i = 0; i < n->ack_count; i++)
		if (n->ack_ids[i] == id) return (int)i;
	return -1;
}

static void on_ack(void *user, uint32_t request_id, const uint32_t *ids, size_t count) {
	nav_client *n = user;
	n->acked_request = request_id;
	if (count > 0) {
		n->ack_count = count < MAX_AGENTS ? count : MAX_AGENTS;
		memcpy(n->ack_ids, ids, n->ack_count * sizeof *ids);
	}
}

static void on_error(void *user, const crowd_v1_Error *e) {
	nav_client *n = user;
	n->error_request = e->request_id;
	n->error_code = e->code;
}

static void on_events(void *user, const crowd_v1_AgentEvents *ev) {
	nav_client *n = user;
	for (pb_size_t i = 0; i < ev->events_count; i++) {
		const crowd_v1_AgentEvent *e = &ev->events[i];
		if ((unsigned)e->kind < 4) n->events[e->kind]++;
		const int k = agent_index(n, e->agent_id);
		if (e->kind == crowd_v1_AgentEventKind_AGENT_EVENT_ARRIVED && k >= 0) n->arrived_of[k]++;
		if (e->kind == crowd_v1_AgentEventKind_AGENT_EVENT_UNREACHABLE) n->last_unreachable = *e;
	}
}

static void on_paths(void *user, const crowd_v1_Paths *p) {
	nav_client *n = user;
	n->paths_request = p->request_id;
	n->path_count = p->paths_count;
	n->path_max_y = -1e9f;
	n->path_corridor_polys = 0;
	for (pb_size_t i = 0; i < p->paths_count; i++) {
		for (pb_size_t k = 0; k < p->paths[i].y_count; k++)
			if (p->paths[i].y[k] > n->path_max_y) n->path_max_y = p->paths[i].y[k];
		n->path_corridor_polys += p->paths[i].corridor_count;
	}
}

static void on_snapshot(void *user, const crowd_client_snapshot *s) {
	nav_client *n = user;
	n->last_tick = s->tick;
	for (uint32_t i = 0; i < s->count; i++) {
		const int k = agent_index(n, s->id[i]);
		if (k < 0) continue;
		if (n->seen[k] && n->last_x[k] < 0.0f && s->x[i] >= 0.0f && n->crossed_y[k] > 1e8f)
			n->crossed_y[k] = s->y[i];
		if (s->x[i] > -1.0f && s->x[i] < 1.0f && s->y[i] > -4.0f && s->y[i] < 4.0f && n->last_tick > 40)
			n->inside_block++;
		n->last_x[k] = s->x[i];
		n->last_y[k] = s->y[i];
		n->seen[k] = true;
	}
}

static void on_pong(void *user, uint64_t client_time_us, uint64_t tick) {
	(void)client_time_us;
	(void)tick;
	((nav_client *)user)->pongs++;
}

/* Connect and say Hello with this protocol minor. */
static nav_client *nav_connect(uint16_t port, const char *token, uint32_t minor) {
	nav_client *n = calloc(1, sizeof *n);
	for (int i = 0; i < MAX_AGENTS; i++) n->crossed_y[i] = 1e9f;
	crowd_client_options o = crowd_client_default_options();
	o.callbacks.on_ack = on_ack;
	o.callbacks.on_error = on_error;
	o.callbacks.on_agent_events = on_events;
	o.callbacks.on_paths = on_paths;
	o.callbacks.on_snapshot = on_snapshot;
	o.callbacks.on_pong = on_pong;
	o.user = n;
	assert_int_equal(crowd_client_connect("127.0.0.1", port, &o, &n->c), CROWD_CLIENT_OK);
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_hello_tag;
	m.msg.hello.protocol_major = CROWD_PROTOCOL_MAJOR;
	m.msg.hello.protocol_minor = minor;
	snprintf(m.msg.hello.token, sizeof m.msg.hello.token, "%s", token);
	assert_true(crowd_client_send_message(n->c, &m) > 0);
	const uint64_t guard = now_ms() + HARNESS_GUARD_MS;
	while (!crowd_client_welcome(n->c) && now_ms() < guard) assert_true(crowd_client_poll(n->c, 50) >= 0);
	assert_non_null(crowd_client_welcome(n->c));
	return n;
}

static void nav_close(nav_client *n) {
	crowd_client_close(n->c, 1000);
	free(n);
}

/* Poll every client until done(ctx) (guarded against a hang). */
static bool pump_until(nav_client **all, int count, bool (*done)(void *), void *ctx) {
	const uint64_t guard = now_ms() + 4 * HARNESS_GUARD_MS;
	while (!done(ctx)) {
		if (now_ms() > guard) return false;
		for (int i = 0; i < count; i++)
			if (crowd_client_poll(all[i]->c, i == 0 ? 20 : 0) < 0) return false;
	}
	return true;
}

typedef struct wait_answer {
	nav_client *n;
	uint32_t request;
} wait_answer;

static bool answered(void *ctx) {
	wait_answer *w = ctx;
	return w->n->acked_request == w->request || w->n->error_request == w->request ||
	       w->n->paths_request == w->request;
}

static bool await_answer(nav_client **all, int count, nav_client *n, int64_t request) {
	assert_true(request > 0);
	wait_answer w = {n, (uint32_t)request};
	return pump_until(all, count, answered, &w);
}

static bool all_arrived(void *ctx) {
	nav_client *n = ctx;
	for (size_t i = 0; i < n->ack_count; i++)
		if (!n->arrived_of[i]) return false;
	return true;
}

/* The five agents' ARRIVED (the player's four, the old client's one): the
 * admin's copies come on its own connection, maybe after the player's. */
static bool five_arrived(void *ctx) {
	return ((nav_client *)ctx)->events[crowd_v1_AgentEventKind_AGENT_EVENT_ARRIVED] >= 5;
}

static bool tick_passed(void *ctx) {
	nav_client *n = ctx;
	return n->last_tick >= 30;
}

static bool got_unreachable(void *ctx) {
	return ((nav_client *)ctx)->events[crowd_v1_AgentEventKind_AGENT_EVENT_UNREACHABLE] > 0;
}

static bool got_pong(void *ctx) {
	return ((nav_client *)ctx)->pongs > 0;
}

static int64_t add_rect(nav_client *n, float x0, float y0, float x1, float y1) {
	const float x[4] = {x0, x1, x1, x0}, y[4] = {y0, y0, y1, y1};
	return crowd_client_add_obstacle(n->c, x, y, 4);
}

static void wall_added_at_run_time_replans_through_other_door(void **state) {
	(void)state;
	server_proc srv;
	const char *args[] = {"--token", "adm=admin", "--token", "pl=player", "--token", "old=player",
	                      "--world-bounds", "-60,-60,60,60", "--tick-rate", "60", "--nav-tile-budget", "1",
	                      "--log-level", "warn", NULL};
	assert_true(server_start(&srv, args));
	nav_client *admin = nav_connect(srv.port, "adm", 1);
	nav_client *player = nav_connect(srv.port, "pl", 1);
	nav_client *old = nav_connect(srv.port, "old", 0);
	nav_client *all[3] = {admin, player, old};

	/* a wall at x = 0: door A |y| < 4, door B 20 < y < 28 */
	assert_true(await_answer(all, 3, admin, add_rect(admin, -1, -60, 1, -4)));
	assert_true(await_answer(all, 3, admin, add_rect(admin, -1, 4, 1, 20)));
	assert_true(await_answer(all, 3, admin, add_rect(admin, -1, 28, 1, 60)));
	assert_int_equal(admin->error_request, 0);
	/* the admin asks for every agent's events; a player may not */
	assert_true(await_answer(all, 3, admin, crowd_client_subscribe_events(admin->c, true, false)));
	assert_int_equal(admin->acked_request, admin->error_request ? 0 : admin->acked_request);
	assert_int_equal(admin->error_request, 0);
	int64_t rq = crowd_client_subscribe_events(player->c, true, false);
	assert_true(await_answer(all, 3, player, rq));
	assert_int_equal(player->error_request, (uint32_t)rq);
	assert_int_equal(player->error_code, crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED);

	/* four agents of the player, targets across the wall (steer: the default, navigate) */
	crowd_v1_AgentSpec specs[4];
	for (int i = 0; i < 4; i++) {
		specs[i] = (crowd_v1_AgentSpec)crowd_v1_AgentSpec_init_zero;
		specs[i].has_position = specs[i].has_target = true;
		specs[i].position = (crowd_v1_Vec2){-15, -3 + 2 * (float)i};
		specs[i].target = (crowd_v1_Vec2){15, -3 + 2 * (float)i};
		specs[i].has_max_speed = specs[i].has_pref_speed = true;
		specs[i].max_speed = 6;
		specs[i].pref_speed = 5;
	}
	assert_true(await_answer(all, 3, player, crowd_client_spawn(player->c, specs, 4)));
	assert_int_equal(player->ack_count, 4);
	/* the old client's agent, walking in the open (its events go to the admin only) */
	crowd_v1_AgentSpec lone = crowd_v1_AgentSpec_init_zero;
	lone.has_position = lone.has_target = true;
	lone.position = (crowd_v1_Vec2){-40, -40};
	lone.target = (crowd_v1_Vec2){-30, -40};
	assert_true(await_answer(all, 3, old, crowd_client_spawn(old->c, &lone, 1)));
	assert_true(await_answer(all, 3, player, crowd_client_subscribe(player->c, NULL, 1)));

	/* half a second in, the agents head for door A: close it */
	assert_true(pump_until(all, 3, tick_passed, player));
	assert_true(await_answer(all, 3, admin, add_rect(admin, -1, -4, 1, 4)));
	assert_int_equal(admin->error_request, 0);

	assert_true(pump_until(all, 3, all_arrived, player));
	for (int i = 0; i < 4; i++) {
		printf("agent %u crossed x = 0 at y = %.2f\n", player->ack_ids[i], (double)player->crossed_y[i]);
		assert_true(player->crossed_y[i] > 20.0f && player->crossed_y[i] < 28.0f);
		assert_int_equal(player->arrived_of[i], 1);
	}
	assert_int_equal(player->inside_block, 0);
	/* the admin gets the player's events (and the old client's agent's) */
	assert_true(pump_until(all, 3, five_arrived, admin));

	/* GetPaths: the player's own agents, answered with Paths */
	const uint32_t ids2[2] = {player->ack_ids[0], player->ack_ids[1]};
	rq = crowd_client_get_paths(player->c, ids2, 2);
	assert_true(await_answer(all, 3, player, rq));
	assert_int_equal(player->paths_request, (uint32_t)rq);
	assert_int_equal(player->path_count, 2);
	/* the old client may not ask for the player's agent */
	rq = crowd_client_get_paths(old->c, ids2, 1);
	assert_true(await_answer(all, 3, old, rq));
	assert_int_equal(old->error_code, crowd_v1_ErrorCode_ERROR_NOT_OWNER);

	/* an enclosed target: UNREACHABLE with the point chosen, left of the box */
	assert_true(await_answer(all, 3, admin, add_rect(admin, 34, -30, 56, -28)));
	assert_true(await_answer(all, 3, admin, add_rect(admin, 34, 8, 56, 10)));
	assert_true(await_answer(all, 3, admin, add_rect(admin, 34, -28, 36, 8)));
	assert_true(await_answer(all, 3, admin, add_rect(admin, 54, -28, 56, 8)));
	const float tx = 40, ty = -10;
	rq = crowd_client_set_targets_steer(player->c, &player->ack_ids[0], 1, &tx, &ty, 1,
	                                    crowd_v1_SteerMode_STEER_NAVIGATE);
	assert_true(await_answer(all, 3, player, rq));
	assert_true(pump_until(all, 3, got_unreachable, player));
	const crowd_v1_AgentEvent *u = &player->last_unreachable;
	printf("unreachable (40, -10): point (%.2f, %.2f)\n", (double)u->point.x, (double)u->point.y);
	assert_int_equal(u->agent_id, player->ack_ids[0]);
	assert_true(u->has_point && u->point.x < 34.0f && u->point.x > 31.0f);
	assert_true(u->point.y > -12.0f && u->point.y < -8.0f);
	assert_true(u->target.x == 40.0f && u->target.y == -10.0f);

	/* the minor-0 client never got an AgentEvents message: everything sent to
	 * it before its Pong has arrived by the time the Pong does */
	assert_true(crowd_client_ping(old->c, 0) > 0);
	assert_true(pump_until(all, 3, got_pong, old));
	assert_int_equal(crowd_client_get_counters(old->c).events_received, 0);
	assert_true(crowd_client_get_counters(player->c).events_received >= 5);

	/* /metrics over HTTP: navigation's counters, as of the ticks whose
	 * events the clients already got */
	char *metrics = server_metrics(&srv);
	assert_non_null(metrics);
	printf("metrics: navigation %g, polygons %g, paths planned %g, re-plans (mesh) %g, arrived %g, unreachable %g\n",
	       metric_value(metrics, "crowd_navigation_enabled"), metric_value(metrics, "crowd_navigation_polygons"),
	       metric_value(metrics, "crowd_navigation_paths_planned_total"),
	       metric_value(metrics, "crowd_navigation_replans_total{reason=\"mesh_changed\"}"),
	       metric_value(metrics, "crowd_navigation_events_total{kind=\"arrived\"}"),
	       metric_value(metrics, "crowd_navigation_events_total{kind=\"unreachable\"}"));
	assert_true(metric_value(metrics, "crowd_navigation_enabled") == 1.0);
	assert_true(metric_value(metrics, "crowd_navigation_polygons") > 0.0);
	assert_true(metric_value(metrics, "crowd_navigation_agents") >= 5.0);
	assert_true(metric_value(metrics, "crowd_navigation_paths_planned_total") >= 6.0); /* 5 spawned, 1 retarget */
	assert_true(metric_value(metrics, "crowd_navigation_replans_total{reason=\"mesh_changed\"}") >= 1.0); /* door A */
	assert_true(metric_value(metrics, "crowd_navigation_events_total{kind=\"arrived\"}") >= 5.0);
	assert_true(metric_value(metrics, "crowd_navigation_events_total{kind=\"unreachable\"}") >= 1.0);
	assert_true(metric_value(metrics, "crowd_navigation_tiles_pending") >= 0.0); /* present */
	assert_true(metric_value(metrics, "crowd_navigation_events_total{kind=\"stuck\"}") >= 0.0);
	free(metrics);

	nav_close(old);
	nav_close(player);
	nav_close(admin);
	server_stop(&srv);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(wall_added_at_run_time_replans_through_other_door),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
