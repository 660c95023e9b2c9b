/* test_session.c — the session layer over a fake transport (no sockets):
 * Hello first, tokens and roles, version check, rights, one answer per
 * request, rate limit, connection limit, queued commands answered at the
 * tick, subscriptions and snapshot skipping above the soft output limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server.h"

/* ---- a transport that decodes what the session sends */

#define MAX_SEEN 64
typedef struct fake_conn {
	crowd_v1_ServerMessage seen[MAX_SEEN];
	uint32_t ack_ids[MAX_SEEN][8];
	int count;
	int snapshots;
	bool closed, flushed;
	size_t pending; /* what pending_bytes reports */
	crowd_view view;
	crowd_obstacle_set obstacles;
	session *s;
} fake_conn;

static int fake_send(void *c_, const uint8_t *data, size_t len) {
	fake_conn *c = c_;
	crowd_v1_ServerMessage m;
	assert_true(crowd_decode_server_message(data, len, &m, &c->view, &c->obstacles, NULL));
	if (m.which_msg == crowd_v1_ServerMessage_snapshot_tag) c->snapshots++;
	if (c->count < MAX_SEEN) {
		if (m.which_msg == crowd_v1_ServerMessage_ack_tag) {
			for (pb_size_t i = 0; i < m.msg.ack.ids_count && i < 8; i++)
				c->ack_ids[c->count][i] = m.msg.ack.ids[i];
			free(m.msg.ack.ids);
			m.msg.ack.ids = NULL;
		}
		c->seen[c->count++] = m;
	} else if (m.which_msg == crowd_v1_ServerMessage_ack_tag) {
		free(m.msg.ack.ids);
	}
	return 0;
}
static size_t fake_pending(void *c) {
	return ((fake_conn *)c)->pending;
}
static void fake_close(void *c_, bool flush) {
	fake_conn *c = c_;
	c->closed = true;
	c->flushed = flush;
}
static const transport_ops fake_ops = {TRANSPORT_WS, false, fake_send, fake_pending, fake_close};

static server_config cfg;
static server srv;

static int setup(void **state) {
	(void)state;
	log_set_level(LOG_WARN);
	config_init(&cfg);
	char err[128];
	assert_int_equal(config_set(&cfg, "token", "v=viewer", err, sizeof err), 0);
	assert_int_equal(config_set(&cfg, "token", "p=player", err, sizeof err), 0);
	assert_int_equal(config_set(&cfg, "token", "a=admin", err, sizeof err), 0);
	cfg.max_connections = 3;
	cfg.request_burst = 1000;
	assert_int_equal(server_init(&srv, uv_default_loop(), &cfg), 0);
	return 0;
}

static int teardown(void **state) {
	(void)state;
	while (srv.session_count > 0) session_on_closed(srv.sessions[0], DISCONNECT_PEER_CLOSED);
	server_destroy(&srv);
	config_free(&cfg);
	return 0;
}

static fake_conn *open_conn(void) {
	fake_conn *c = calloc(1, sizeof *c);
	crowd_view_init(&c->view);
	crowd_obstacle_set_init(&c->obstacles);
	c->s = session_open(&srv, &fake_ops, c, "test");
	return c;
}

static void free_conn(fake_conn *c) {
	crowd_view_free(&c->view);
	crowd_obstacle_set_free(&c->obstacles);
	free(c);
}

static void deliver(fake_conn *c, const crowd_v1_ClientMessage *m) {
	crowd_buf b;
	crowd_buf_init(&b);
	assert_true(crowd_encode_client_message(m, false, &b));
	session_on_message(c->s, b.data, b.len);
	crowd_buf_free(&b);
}

static void hello(fake_conn *c, const char *token, uint32_t major) {
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.request_id = 1;
	m.which_msg = crowd_v1_ClientMessage_hello_tag;
	m.msg.hello.protocol_major = major;
	strcpy(m.msg.hello.token, token);
	strcpy(m.msg.hello.client_name, "unit");
	deliver(c, &m);
}

static const crowd_v1_ServerMessage *last(fake_conn *c) {
	assert_true(c->count > 0);
	return &c->seen[c->count - 1];
}

static void expect_error(fake_conn *c, uint32_t request_id, crowd_v1_ErrorCode code) {
	const crowd_v1_ServerMessage *m = last(c);
	assert_int_equal(m->which_msg, crowd_v1_ServerMessage_error_tag);
	assert_int_equal(m->msg.error.request_id, request_id);
	assert_int_equal(m->msg.error.code, code);
}

static void test_hello_and_roles(void **state) {
	(void)state;
	fake_conn *c = open_conn();
	assert_non_null(c->s);
	/* a command before Hello */
	crowd_v1_ClientMessage ping = crowd_v1_ClientMessage_init_zero;
	ping.request_id = 7;
	ping.which_msg = crowd_v1_ClientMessage_ping_tag;
	deliver(c, &ping);
	expect_error(c, 7, crowd_v1_ErrorCode_ERROR_HELLO_REQUIRED);
	assert_false(c->closed);
	hello(c, "p", 1);
	const crowd_v1_ServerMessage *w = last(c);
	assert_int_equal(w->which_msg, crowd_v1_ServerMessage_welcome_tag);
	assert_int_equal(w->msg.welcome.role, crowd_v1_Role_ROLE_PLAYER);
	assert_int_equal(w->msg.welcome.client_id, c->s->client_id);
	assert_int_equal(w->msg.welcome.protocol_major, 1);
	assert_int_equal(w->msg.welcome.precision, cfg.precision);
	assert_int_equal(w->msg.welcome.tick_rate_hz, cfg.tick_rate_hz);
	assert_true(w->msg.welcome.has_world_bounds);
	/* a second Hello */
	hello(c, "p", 1);
	expect_error(c, 1, crowd_v1_ErrorCode_ERROR_ALREADY_HELLO);
	/* ping → pong */
	ping.msg.ping.client_time_us = 12345;
	deliver(c, &ping);
	assert_int_equal(last(c)->which_msg, crowd_v1_ServerMessage_pong_tag);
	assert_int_equal(last(c)->msg.pong.client_time_us, 12345);
	/* a player may not add obstacles */
	float xs[2] = {0, 1}, ys[2] = {0, 0};
	crowd_v1_ClientMessage ob = crowd_v1_ClientMessage_init_zero;
	ob.request_id = 9;
	ob.which_msg = crowd_v1_ClientMessage_add_obstacle_tag;
	ob.msg.add_obstacle = (crowd_v1_AddObstacle){2, xs, 2, ys};
	deliver(c, &ob);
	expect_error(c, 9, crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED);
	assert_int_equal(srv.metrics.errors[crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED], 1);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);

	/* a viewer may not spawn */
	c = open_conn();
	hello(c, "v", 1);
	crowd_v1_AgentSpec spec = crowd_v1_AgentSpec_init_zero;
	crowd_v1_ClientMessage sp = crowd_v1_ClientMessage_init_zero;
	sp.request_id = 3;
	sp.which_msg = crowd_v1_ClientMessage_spawn_agents_tag;
	sp.msg.spawn_agents = (crowd_v1_SpawnAgents){1, &spec};
	size_t queued = srv.queue.count;
	deliver(c, &sp);
	expect_error(c, 3, crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED);
	assert_int_equal(srv.queue.count, queued); /* nothing queued */
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);
}

static void test_bad_token_and_version(void **state) {
	(void)state;
	fake_conn *c = open_conn();
	hello(c, "wrong", 1);
	expect_error(c, 1, crowd_v1_ErrorCode_ERROR_BAD_TOKEN);
	assert_true(c->closed);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	assert_int_equal(srv.metrics.disconnects[DISCONNECT_BAD_TOKEN], 1);
	free_conn(c);

	c = open_conn();
	hello(c, "a", 2);
	expect_error(c, 1, crowd_v1_ErrorCode_ERROR_UNSUPPORTED_VERSION);
	assert_true(c->closed);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	assert_int_equal(srv.metrics.disconnects[DISCONNECT_UNSUPPORTED_VERSION], 1);
	free_conn(c);
}

static void test_garbage(void **state) {
	(void)state;
	fake_conn *c = open_conn();
	hello(c, "a", 1);
	const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x80};
	session_on_message(c->s, garbage, sizeof garbage);
	expect_error(c, 0, crowd_v1_ErrorCode_ERROR_MALFORMED);
	/* an empty message decodes, but has no oneof case */
	session_on_message(c->s, garbage, 0);
	expect_error(c, 0, crowd_v1_ErrorCode_ERROR_UNKNOWN_MESSAGE);
	/* unknown field number 15 (a newer client's message) is also unknown here */
	const uint8_t unknown[] = {0x08, 0x05, 0x7a, 0x00};
	session_on_message(c->s, unknown, sizeof unknown);
	expect_error(c, 5, crowd_v1_ErrorCode_ERROR_UNKNOWN_MESSAGE);
	assert_false(c->closed);
	/* transport-level framing error: Error, then a flushing close */
	session_on_transport_error(c->s, crowd_v1_ErrorCode_ERROR_FRAME_TOO_LARGE, DISCONNECT_FRAME_TOO_LARGE,
	                           "too big");
	expect_error(c, 0, crowd_v1_ErrorCode_ERROR_FRAME_TOO_LARGE);
	assert_true(c->closed && c->flushed);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	assert_int_equal(srv.metrics.disconnects[DISCONNECT_FRAME_TOO_LARGE], 1);
	free_conn(c);
}

static void test_connection_limit(void **state) {
	(void)state;
	fake_conn *c[4];
	for (int i = 0; i < 3; i++) {
		c[i] = open_conn();
		assert_non_null(c[i]->s);
	}
	c[3] = open_conn();
	assert_null(c[3]->s);
	expect_error(c[3], 0, crowd_v1_ErrorCode_ERROR_SERVER_FULL);
	assert_true(c[3]->closed);
	assert_int_equal(srv.status.connections, 3);
	for (int i = 0; i < 3; i++) session_on_closed(c[i]->s, DISCONNECT_PEER_CLOSED);
	assert_int_equal(srv.status.connections, 0);
	for (int i = 0; i < 4; i++) free_conn(c[i]);
}

static void test_rate_limit(void **state) {
	(void)state;
	cfg.request_burst = 5;
	cfg.requests_per_second = 0.001; /* no refill during the test */
	fake_conn *c = open_conn();
	hello(c, "a", 1); /* 1 token */
	crowd_v1_ClientMessage ping = crowd_v1_ClientMessage_init_zero;
	ping.which_msg = crowd_v1_ClientMessage_ping_tag;
	for (uint32_t i = 0; i < 4; i++) {
		ping.request_id = 100 + i;
		deliver(c, &ping);
		assert_int_equal(last(c)->which_msg, crowd_v1_ServerMessage_pong_tag);
	}
	ping.request_id = 200;
	deliver(c, &ping);
	expect_error(c, 200, crowd_v1_ErrorCode_ERROR_RATE_LIMITED);
	assert_int_equal(srv.metrics.errors[crowd_v1_ErrorCode_ERROR_RATE_LIMITED], 1);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);
	cfg.request_burst = 1000;
	cfg.requests_per_second = 2000;
}

static void test_commands_answered_at_tick(void **state) {
	(void)state;
	fake_conn *p1 = open_conn(), *p2 = open_conn();
	hello(p1, "p", 1);
	hello(p2, "p", 1);
	crowd_v1_AgentSpec specs[2] = {crowd_v1_AgentSpec_init_zero, crowd_v1_AgentSpec_init_zero};
	specs[1].has_position = true;
	specs[1].position = (crowd_v1_Vec2){10, 0};
	crowd_v1_ClientMessage sp = crowd_v1_ClientMessage_init_zero;
	sp.request_id = 42;
	sp.which_msg = crowd_v1_ClientMessage_spawn_agents_tag;
	sp.msg.spawn_agents = (crowd_v1_SpawnAgents){2, specs};
	int before = p1->count;
	deliver(p1, &sp);
	assert_int_equal(p1->count, before); /* queued, not answered yet */
	assert_int_equal(srv.queue.count, 1);
	server_apply_commands(&srv);
	const crowd_v1_ServerMessage *ack = last(p1);
	assert_int_equal(ack->which_msg, crowd_v1_ServerMessage_ack_tag);
	assert_int_equal(ack->msg.ack.request_id, 42);
	assert_int_equal(ack->msg.ack.ids_count, 2);
	uint32_t id0 = p1->ack_ids[p1->count - 1][0];
	assert_int_equal(p1->s->agents_owned, 2);

	/* p2 may not move p1's agent */
	uint32_t ids[1] = {id0};
	float x[1] = {5}, y[1] = {5};
	crowd_v1_ClientMessage st = crowd_v1_ClientMessage_init_zero;
	st.request_id = 43;
	st.which_msg = crowd_v1_ClientMessage_set_targets_tag;
	st.msg.set_targets = (crowd_v1_SetTargets){.ids_count = 1, .ids = ids, .x_count = 1, .x = x, .y_count = 1, .y = y};
	deliver(p2, &st);
	server_apply_commands(&srv);
	expect_error(p2, 43, crowd_v1_ErrorCode_ERROR_NOT_OWNER);

	/* p1 leaves without keeping its agents: they go at the next tick */
	assert_int_equal(orca_world_agent_count(srv.world), 2);
	session_on_closed(p1->s, DISCONNECT_PEER_CLOSED);
	server_apply_commands(&srv);
	assert_int_equal(orca_world_agent_count(srv.world), 0);
	session_on_closed(p2->s, DISCONNECT_PEER_CLOSED);
	free_conn(p1);
	free_conn(p2);
}

static void test_subscribe_and_skip(void **state) {
	(void)state;
	fake_conn *c = open_conn(), *slow = open_conn();
	hello(c, "a", 1);
	hello(slow, "v", 1);
	crowd_v1_AgentSpec spec = crowd_v1_AgentSpec_init_zero;
	crowd_v1_ClientMessage sp = crowd_v1_ClientMessage_init_zero;
	sp.request_id = 2;
	sp.which_msg = crowd_v1_ClientMessage_spawn_agents_tag;
	sp.msg.spawn_agents = (crowd_v1_SpawnAgents){1, &spec};
	deliver(c, &sp);
	server_apply_commands(&srv);

	crowd_v1_ClientMessage sub = crowd_v1_ClientMessage_init_zero;
	sub.request_id = 3;
	sub.which_msg = crowd_v1_ClientMessage_subscribe_tag;
	deliver(c, &sub);
	assert_int_equal(last(c)->which_msg, crowd_v1_ServerMessage_ack_tag);
	deliver(slow, &sub);
	/* a subscription whose area holds nothing */
	sub.msg.subscribe.has_area = true;
	sub.msg.subscribe.area = (crowd_v1_Rect){500, 500, 600, 600};

	slow->pending = cfg.output_soft_limit + 1;
	for (int tick = 1; tick <= 3; tick++) {
		srv.status.tick = (uint64_t)tick;
		assert_true(world_table_build(&srv.table, srv.world, (float)cfg.precision));
		snapshots_send(&srv);
	}
	assert_int_equal(c->snapshots, 3);
	assert_int_equal(c->view.count, 1);
	assert_int_equal(slow->snapshots, 0);
	assert_int_equal(srv.metrics.snapshots_skipped, 3);
	/* drained: the next one is a keyframe */
	slow->pending = 0;
	srv.status.tick = 4;
	snapshots_send(&srv);
	assert_int_equal(slow->snapshots, 1);
	assert_true(last(slow)->msg.snapshot.keyframe);
	assert_int_equal(slow->view.count, 1);

	/* area subscription: nothing in view */
	deliver(c, &sub);
	srv.status.tick = 5;
	snapshots_send(&srv);
	assert_int_equal(c->view.count, 0);
	assert_int_equal(last(c)->msg.snapshot.world_agent_count, srv.status.agents);

	/* output far above the hard limit: closed at the next check */
	slow->pending = cfg.output_hard_limit + 1;
	session_check_timers(slow->s, server_now_ns());
	assert_true(slow->closed);
	session_on_closed(slow->s, DISCONNECT_PEER_CLOSED);
	assert_int_equal(srv.metrics.disconnects[DISCONNECT_OUTPUT_HARD_LIMIT], 1);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);
	free_conn(slow);
}

static void test_hello_timeout(void **state) {
	(void)state;
	fake_conn *c = open_conn();
	session_check_timers(c->s, c->s->opened_ns + 1000);
	assert_false(c->closed);
	session_check_timers(c->s, c->s->opened_ns + (uint64_t)(cfg.hello_timeout_s * 1e9) + 1000);
	assert_true(c->closed);
	expect_error(c, 0, crowd_v1_ErrorCode_ERROR_HELLO_TIMEOUT);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	assert_int_equal(srv.metrics.disconnects[DISCONNECT_HELLO_TIMEOUT], 1);
	free_conn(c);
}

static void test_queue_bound(void **state) {
	(void)state;
	cfg.max_queued_bytes = 4096;
	fake_conn *c = open_conn();
	hello(c, "a", 1);
	crowd_v1_AgentSpec specs[20];
	for (int i = 0; i < 20; i++) {
		specs[i] = (crowd_v1_AgentSpec)crowd_v1_AgentSpec_init_zero;
		specs[i].has_position = true;
		specs[i].position = (crowd_v1_Vec2){(float)i * 4, 0};
	}
	crowd_v1_ClientMessage sp = crowd_v1_ClientMessage_init_zero;
	sp.which_msg = crowd_v1_ClientMessage_spawn_agents_tag;
	sp.msg.spawn_agents = (crowd_v1_SpawnAgents){20, specs};
	uint32_t sent = 0;
	for (sent = 1; sent < 50; sent++) {
		sp.request_id = sent;
		deliver(c, &sp);
		if (c->count > 0 && last(c)->which_msg == crowd_v1_ServerMessage_error_tag) break;
	}
	/* a few fit, then the bound answers RATE_LIMITED */
	assert_true(sent > 1 && sent < 50);
	expect_error(c, sent, crowd_v1_ErrorCode_ERROR_RATE_LIMITED);
	assert_true(c->s->queued_bytes <= cfg.max_queued_bytes);
	/* the tick drains the queue; every queued request got its Ack */
	server_apply_commands(&srv);
	assert_int_equal(c->s->queued_bytes, 0);
	assert_int_equal(last(c)->which_msg, crowd_v1_ServerMessage_ack_tag);
	assert_int_equal(orca_world_agent_count(srv.world), 20 * (sent - 1));
	sp.request_id = 99;
	deliver(c, &sp);
	server_apply_commands(&srv);
	assert_int_equal(last(c)->msg.ack.request_id, 99);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);
	cfg.max_queued_bytes = 8u << 20;
}

static void test_shared_encoding(void **state) {
	(void)state;
	fake_conn *c[3];
	for (int i = 0; i < 3; i++) {
		c[i] = open_conn();
		hello(c[i], "a", 1);
	}
	crowd_v1_AgentSpec specs[6];
	for (int i = 0; i < 6; i++) {
		specs[i] = (crowd_v1_AgentSpec)crowd_v1_AgentSpec_init_zero;
		specs[i].has_position = true;
		specs[i].position = (crowd_v1_Vec2){(float)i * 5, 0};
		specs[i].has_target = true;
		specs[i].target = (crowd_v1_Vec2){(float)(30 - i * 5), 10};
	}
	crowd_v1_ClientMessage sp = crowd_v1_ClientMessage_init_zero;
	sp.request_id = 1;
	sp.which_msg = crowd_v1_ClientMessage_spawn_agents_tag;
	sp.msg.spawn_agents = (crowd_v1_SpawnAgents){6, specs};
	deliver(c[0], &sp);
	server_apply_commands(&srv);
	crowd_v1_ClientMessage sub = crowd_v1_ClientMessage_init_zero;
	sub.which_msg = crowd_v1_ClientMessage_subscribe_tag;
	deliver(c[0], &sub);
	deliver(c[1], &sub);
	sub.msg.subscribe.has_area = true; /* the left half */
	sub.msg.subscribe.area = (crowd_v1_Rect){-100, -100, 12, 100};
	deliver(c[2], &sub);
	for (int tick = 1; tick <= 40; tick++) {
		assert_int_equal(orca_world_step(srv.world, 1.0f / 30.0f), ORCA_OK);
		srv.status.tick = orca_world_step_count(srv.world);
		srv.status.state_hash = orca_world_state_hash(srv.world);
		assert_true(world_table_build(&srv.table, srv.world, (float)cfg.precision));
		snapshots_send(&srv);
		/* every whole-world client holds exactly the world */
		for (int i = 0; i < 2; i++) {
			assert_int_equal(c[i]->view.count, srv.table.count);
			assert_memory_equal(c[i]->view.agents, srv.table.agents,
			                    srv.table.count * sizeof *srv.table.agents);
			assert_memory_equal(c[i]->s->baseline.agents, srv.table.agents,
			                    srv.table.count * sizeof *srv.table.agents);
		}
		/* the area client holds exactly the agents whose centre is in its area */
		uint32_t in_area = 0;
		for (uint32_t k = 0; k < srv.table.count; k++)
			if (srv.table.agents[k].x <= 12 * (int32_t)cfg.precision) in_area++;
		assert_int_equal(c[2]->view.count, in_area);
	}
	assert_int_equal(c[0]->snapshots, 40);
	assert_int_equal(c[1]->snapshots, 40);
	assert_int_equal(c[2]->snapshots, 40);
	/* the second whole-world subscriber reused the first one's bytes every tick */
	assert_true(srv.metrics.snapshots_shared >= 40);
	for (int i = 0; i < 3; i++) {
		session_on_closed(c[i]->s, DISCONNECT_PEER_CLOSED);
		free_conn(c[i]);
	}
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_hello_and_roles, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_token_and_version, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_garbage, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_connection_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rate_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_commands_answered_at_tick, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_subscribe_and_skip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hello_timeout, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_queue_bound, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shared_encoding, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
