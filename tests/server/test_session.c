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
	int discards;   /* discard_pending calls */
	int sent_after_discard;
	crowd_view view;
	crowd_obstacle_set obstacles;
	session *s;
} fake_conn;

static int fake_send(void *c_, const uint8_t *data, size_t len) {
	fake_conn *c = c_;
	crowd_v1_ServerMessage m;
	assert_true(crowd_decode_server_message(data, len, &m, &c->view, &c->obstacles, NULL));
	if (m.which_msg == crowd_v1_ServerMessage_snapshot_tag) c->snapshots++;
	if (c->discards) c->sent_after_discard++;
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
static void fake_discard(void *c_) {
	fake_conn *c = c_;
	c->discards++;
	c->pending = 0;
}
static const transport_ops fake_ops = {TRANSPORT_WS, false, fake_send, fake_pending, fake_close, fake_discard, NULL};

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
	while (srv.host.sessions.count > 0) session_on_closed(srv.host.sessions.items[0], DISCONNECT_PEER_CLOSED);
	server_destroy(&srv);
	config_free(&cfg);
	return 0;
}

static fake_conn *open_conn_from(const char *peer) {
	fake_conn *c = calloc(1, sizeof *c);
	crowd_view_init(&c->view);
	crowd_obstacle_set_init(&c->obstacles);
	c->s = session_open(&srv.host, &fake_ops, c, peer);
	return c;
}

static fake_conn *open_conn(void) {
	return open_conn_from("test");
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
	size_t queued = srv.world->queue.count;
	deliver(c, &sp);
	expect_error(c, 3, crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED);
	assert_int_equal(srv.world->queue.count, queued); /* nothing queued */
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
	/* unknown field number 20 (a newer client's message) is also unknown here */
	const uint8_t unknown[] = {0x08, 0x05, 0xa2, 0x01, 0x00};
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
		hello(c[i], "v", 1); /* past Hello: none of them makes room */
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
	assert_int_equal(srv.world->queue.count, 1);
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
	assert_int_equal(orca_world_agent_count(srv.world->sim->world), 2);
	session_on_closed(p1->s, DISCONNECT_PEER_CLOSED);
	server_apply_commands(&srv);
	assert_int_equal(orca_world_agent_count(srv.world->sim->world), 0);
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
		assert_true(world_table_build(&srv.world->table, srv.world->sim->world, (float)cfg.precision));
		snapshots_send(srv.world);
	}
	assert_int_equal(c->snapshots, 3);
	assert_int_equal(c->view.count, 1);
	assert_int_equal(slow->snapshots, 0);
	assert_int_equal(srv.metrics.snapshots_skipped, 3);
	/* drained: the next one is a keyframe */
	slow->pending = 0;
	srv.status.tick = 4;
	snapshots_send(srv.world);
	assert_int_equal(slow->snapshots, 1);
	assert_true(last(slow)->msg.snapshot.keyframe);
	assert_int_equal(slow->view.count, 1);

	/* area subscription: nothing in view */
	deliver(c, &sub);
	srv.status.tick = 5;
	snapshots_send(srv.world);
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
	assert_int_equal(orca_world_agent_count(srv.world->sim->world), 20 * (sent - 1));
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
		assert_int_equal(orca_world_step(srv.world->sim->world, 1.0f / 30.0f), ORCA_OK);
		srv.status.tick = orca_world_step_count(srv.world->sim->world);
		srv.status.state_hash = orca_world_state_hash(srv.world->sim->world);
		assert_true(world_table_build(&srv.world->table, srv.world->sim->world, (float)cfg.precision));
		snapshots_send(srv.world);
		/* every whole-world client holds exactly the world */
		for (int i = 0; i < 2; i++) {
			assert_int_equal(c[i]->view.count, srv.world->table.count);
			assert_memory_equal(c[i]->view.agents, srv.world->table.agents,
			                    srv.world->table.count * sizeof *srv.world->table.agents);
			assert_memory_equal(c[i]->s->baseline.agents, srv.world->table.agents,
			                    srv.world->table.count * sizeof *srv.world->table.agents);
		}
		/* the area client holds exactly the agents whose centre is in its area */
		uint32_t in_area = 0;
		for (uint32_t k = 0; k < srv.world->table.count; k++)
			if (srv.world->table.agents[k].x <= 12 * (int32_t)cfg.precision) in_area++;
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

/* ---- hardening (issue 14) */

/* A ClientMessage{request_id 1, hello{major 1, token, client_name}} built by
 * hand: the generated struct cannot hold what a hostile client sends. */
static void raw_hello(fake_conn *c, const char *token, size_t token_len, const char *name, size_t name_len) {
	uint8_t inner[1024], msg[1100];
	size_t n = 0, m = 0;
	inner[n++] = 0x08;
	inner[n++] = 1;
	inner[n++] = 0x1a;
	n += crowd_varint_put(inner + n, token_len);
	memcpy(inner + n, token, token_len);
	n += token_len;
	inner[n++] = 0x22;
	n += crowd_varint_put(inner + n, name_len);
	memcpy(inner + n, name, name_len);
	n += name_len;
	msg[m++] = 0x08;
	msg[m++] = 1;
	msg[m++] = 0x12;
	m += crowd_varint_put(msg + m, n);
	memcpy(msg + m, inner, n);
	m += n;
	session_on_message(c->s, msg, m);
}

static void test_hello_string_lengths(void **state) {
	(void)state;
	/* A client_name over 32 bytes is cut (at a character boundary), not refused. */
	char name[100];
	memset(name, 'n', sizeof name);
	memcpy(name + 31, "\xc3\xa9", 2); /* 'é' across the 32-byte cut */
	fake_conn *c = open_conn();
	raw_hello(c, "p", 1, name, sizeof name);
	assert_int_equal(last(c)->which_msg, crowd_v1_ServerMessage_welcome_tag);
	assert_int_equal(strlen(c->s->name), 31);
	assert_false(c->closed);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);

	/* A token over 64 bytes: BAD_TOKEN, then close. */
	char token[65];
	memset(token, 'p', sizeof token);
	c = open_conn();
	raw_hello(c, token, sizeof token, "x", 1);
	expect_error(c, 1, crowd_v1_ErrorCode_ERROR_BAD_TOKEN);
	assert_true(c->closed && c->flushed);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);

	/* A token with a NUL: never matched on the part before it ("v" is a real token). */
	c = open_conn();
	raw_hello(c, "v\0junk", 6, "x", 1);
	expect_error(c, 1, crowd_v1_ErrorCode_ERROR_BAD_TOKEN);
	assert_true(c->closed);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);

	/* A NUL in the name: refused, the connection stays for another Hello. */
	c = open_conn();
	raw_hello(c, "v", 1, "a\0b", 3);
	expect_error(c, 1, crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT);
	assert_false(c->closed);
	raw_hello(c, "v", 1, "a\nb", 3);
	assert_int_equal(last(c)->which_msg, crowd_v1_ServerMessage_welcome_tag);
	assert_string_equal(c->s->name, "a?b"); /* no forged log lines */
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);
}

/* A Ping whose scalar field is repeated 5,001 times is one Ping (the last
 * value wins), not a list of 5,001 items. */
static void test_repeated_scalar_is_not_a_batch(void **state) {
	(void)state;
	fake_conn *c = open_conn();
	hello(c, "v", 1);
	size_t reps = 5001, n = 0;
	uint8_t *inner = malloc(reps * 2), *msg = malloc(reps * 2 + 16);
	for (size_t i = 0; i < reps; i++) {
		inner[n++] = 0x08; /* client_time_us */
		inner[n++] = (uint8_t)(i % 100);
	}
	size_t m = 0;
	msg[m++] = 0x08;
	msg[m++] = 7;
	msg[m++] = 0x52; /* ping = 10 */
	m += crowd_varint_put(msg + m, n);
	memcpy(msg + m, inner, n);
	m += n;
	session_on_message(c->s, msg, m);
	assert_int_equal(last(c)->which_msg, crowd_v1_ServerMessage_pong_tag);
	assert_int_equal(last(c)->msg.pong.client_time_us, (reps - 1) % 100);
	free(inner);
	free(msg);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);
}

/* Hello comes first, even for a frame whose list is too long; an obstacle
 * with too many vertices is a BAD_POLYGON, as documented. */
static void test_check_order(void **state) {
	(void)state;
	uint32_t count = 100000;
	float *xy = calloc(count, sizeof *xy);
	for (uint32_t i = 0; i < count; i++) xy[i] = (float)(i % 100);
	crowd_v1_ClientMessage ob = crowd_v1_ClientMessage_init_zero;
	ob.request_id = 11;
	ob.which_msg = crowd_v1_ClientMessage_add_obstacle_tag;
	ob.msg.add_obstacle = (crowd_v1_AddObstacle){(pb_size_t)count, xy, (pb_size_t)count, xy};
	/* pb_size_t is 16-bit: encode the 100,000 floats by hand instead. */
	size_t body = (size_t)count * 4;
	uint8_t *inner = malloc(2 * (body + 8)), *msg = malloc(2 * (body + 8) + 16);
	size_t n = 0, m = 0;
	for (int f = 1; f <= 2; f++) {
		inner[n++] = (uint8_t)(f << 3 | 2);
		n += crowd_varint_put(inner + n, body);
		memcpy(inner + n, xy, body);
		n += body;
	}
	msg[m++] = 0x08;
	msg[m++] = 11;
	msg[m++] = 0x3a; /* add_obstacle = 7 */
	m += crowd_varint_put(msg + m, n);
	memcpy(msg + m, inner, n);
	m += n;
	fake_conn *c = open_conn();
	session_on_message(c->s, msg, m);
	expect_error(c, 11, crowd_v1_ErrorCode_ERROR_HELLO_REQUIRED);
	hello(c, "a", 1);
	session_on_message(c->s, msg, m);
	expect_error(c, 11, crowd_v1_ErrorCode_ERROR_BAD_POLYGON);
	(void)ob;
	free(inner);
	free(msg);
	free(xy);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);
}

/* Undecodable frames take from the rate limit; past it the connection closes. */
static void test_malformed_frames_rate_limited(void **state) {
	(void)state;
	cfg.request_burst = 5;
	cfg.requests_per_second = 0.001; /* no refill during the test */
	fake_conn *c = open_conn();
	hello(c, "a", 1); /* 1 token */
	const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x80};
	int frames = 0;
	while (!c->closed && frames < 5000) {
		session_on_message(c->s, garbage, sizeof garbage);
		frames++;
	}
	assert_true(c->closed);
	assert_int_equal(frames, 5);
	expect_error(c, 0, crowd_v1_ErrorCode_ERROR_RATE_LIMITED);
	assert_int_equal(srv.metrics.errors[crowd_v1_ErrorCode_ERROR_MALFORMED], 4);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);

	/* Frames that are protobuf at the tag level but not a ClientMessage
	 * (request_id sent as a string) close it too once over the limit. */
	c = open_conn();
	hello(c, "a", 1);
	const uint8_t wrong_type[] = {0x0a, 0x00};
	frames = 0;
	while (!c->closed && frames < 5000) {
		session_on_message(c->s, wrong_type, sizeof wrong_type);
		frames++;
	}
	assert_int_equal(frames, 5);
	expect_error(c, 0, crowd_v1_ErrorCode_ERROR_RATE_LIMITED);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);
	cfg.request_burst = 1000;
	cfg.requests_per_second = 2000;
}

static void add_obstacle(fake_conn *c, uint32_t rid, const float *x, const float *y, pb_size_t n) {
	crowd_v1_ClientMessage ob = crowd_v1_ClientMessage_init_zero;
	ob.request_id = rid;
	ob.which_msg = crowd_v1_ClientMessage_add_obstacle_tag;
	ob.msg.add_obstacle = (crowd_v1_AddObstacle){n, (float *)x, n, (float *)y};
	deliver(c, &ob);
}

static void test_polygons_checked(void **state) {
	(void)state;
	fake_conn *c = open_conn();
	hello(c, "a", 1);
	/* self-intersecting (a bow tie) */
	const float bx[] = {0, 10, 10, 0}, by[] = {0, 10, 0, 10};
	add_obstacle(c, 2, bx, by, 4);
	expect_error(c, 2, crowd_v1_ErrorCode_ERROR_BAD_POLYGON);
	/* a collinear vertex */
	const float lx[] = {0, 5, 10, 10, 0}, ly[] = {0, 0, 0, 10, 10};
	add_obstacle(c, 3, lx, ly, 5);
	expect_error(c, 3, crowd_v1_ErrorCode_ERROR_BAD_POLYGON);
	/* back and forth */
	const float fx[] = {0, 10, 5}, fy[] = {0, 0, 0};
	add_obstacle(c, 4, fx, fy, 3);
	expect_error(c, 4, crowd_v1_ErrorCode_ERROR_BAD_POLYGON);
	/* a duplicate vertex */
	const float dx[] = {0, 10, 10, 10, 0}, dy[] = {0, 0, 10, 10, 10};
	add_obstacle(c, 5, dx, dy, 5);
	expect_error(c, 5, crowd_v1_ErrorCode_ERROR_BAD_POLYGON);
	/* a sliver 1e-3 wide */
	const float sx[] = {0, 10, 10, 0}, sy[] = {0, 0, 0.001f, 0.001f};
	add_obstacle(c, 6, sx, sy, 4);
	expect_error(c, 6, crowd_v1_ErrorCode_ERROR_BAD_POLYGON);
	assert_int_equal(srv.world->queue.count, 0);
	/* clockwise: accepted, and stored counter-clockwise */
	const float cx[] = {0, 0, 10, 10}, cy[] = {0, 10, 10, 0};
	add_obstacle(c, 7, cx, cy, 4);
	assert_int_equal(srv.world->queue.count, 1);
	server_apply_commands(&srv);
	assert_int_equal(last(c)->which_msg, crowd_v1_ServerMessage_ack_tag);
	orca_obstacle_id ids[1];
	assert_int_equal(orca_world_obstacle_ids(srv.world->sim->world, ids, 1), 1);
	orca_vec2 v[4];
	uint32_t got = 0;
	assert_int_equal(orca_obstacle_get(srv.world->sim->world, ids[0], v, 4, &got), ORCA_OK);
	assert_int_equal(got, 4);
	double area2 = 0;
	for (int i = 0; i < 4; i++) area2 += (double)v[i].x * v[(i + 1) % 4].y - (double)v[(i + 1) % 4].x * v[i].y;
	assert_true(area2 > 0);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);
}

/* The cut slow consumer's Error goes ahead of its queued output. */
static void test_slow_consumer_gets_its_error(void **state) {
	(void)state;
	fake_conn *c = open_conn();
	hello(c, "v", 1);
	c->pending = cfg.output_soft_limit + 1;
	uint64_t t0 = server_now_ns();
	session_check_timers(c->s, t0);
	session_check_timers(c->s, t0 + (uint64_t)(cfg.output_soft_seconds * 1e9) + 1000);
	assert_true(c->closed && c->flushed);
	assert_int_equal(c->discards, 1);
	assert_int_equal(c->sent_after_discard, 1);
	expect_error(c, 0, crowd_v1_ErrorCode_ERROR_SLOW_CONSUMER);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);
}

/* A half-closed client still gets the answers to what it sent. */
static void test_half_close_answered(void **state) {
	(void)state;
	fake_conn *c = open_conn();
	hello(c, "p", 1);
	crowd_v1_AgentSpec spec = crowd_v1_AgentSpec_init_zero;
	crowd_v1_ClientMessage sp = crowd_v1_ClientMessage_init_zero;
	sp.request_id = 5;
	sp.which_msg = crowd_v1_ClientMessage_spawn_agents_tag;
	sp.msg.spawn_agents = (crowd_v1_SpawnAgents){1, &spec};
	deliver(c, &sp);
	session_on_peer_eof(c->s);
	assert_false(c->closed);
	session_check_timers(c->s, server_now_ns());
	server_apply_commands(&srv);
	assert_int_equal(last(c)->which_msg, crowd_v1_ServerMessage_ack_tag);
	assert_int_equal(last(c)->msg.ack.request_id, 5);
	assert_false(c->closed);
	session_check_timers(c->s, server_now_ns());
	assert_true(c->closed && c->flushed);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);
}

static void spawn_n(fake_conn *c, uint32_t rid, uint32_t n, uint32_t max_neighbors) {
	crowd_v1_AgentSpec *specs = calloc(n, sizeof *specs);
	for (uint32_t i = 0; i < n; i++) {
		specs[i].has_position = true;
		specs[i].position = (crowd_v1_Vec2){(float)(i % 100) * 4, (float)(i / 100) * 4};
		if (max_neighbors) {
			specs[i].has_max_neighbors = true;
			specs[i].max_neighbors = max_neighbors;
		}
	}
	crowd_v1_ClientMessage sp = crowd_v1_ClientMessage_init_zero;
	sp.request_id = rid;
	sp.which_msg = crowd_v1_ClientMessage_spawn_agents_tag;
	sp.msg.spawn_agents = (crowd_v1_SpawnAgents){(pb_size_t)n, specs};
	deliver(c, &sp);
	free(specs);
}

/* agents x max_neighbors per connection stays within the budget. */
static void test_neighbor_budget(void **state) {
	(void)state;
	fake_conn *c = open_conn();
	hello(c, "p", 1);
	cfg.max_batch = 5000;
	spawn_n(c, 2, 4000, 64); /* 256,000 */
	expect_error(c, 2, crowd_v1_ErrorCode_ERROR_LIMIT_COST);
	spawn_n(c, 3, 3000, 64); /* 192,000: fits */
	assert_int_equal(srv.world->queue.count, 1);
	spawn_n(c, 4, 200, 0); /* counted at 64 neighbours too, with the 3,000 still queued */
	expect_error(c, 4, crowd_v1_ErrorCode_ERROR_LIMIT_COST);
	server_apply_commands(&srv);
	assert_int_equal(c->s->agents_owned, 3000);
	assert_int_equal(c->s->agents_queued, 0);
	spawn_n(c, 5, 100, 0); /* 3,100 x 64 = 198,400 */
	server_apply_commands(&srv);
	assert_int_equal(last(c)->which_msg, crowd_v1_ServerMessage_ack_tag);
	session_on_closed(c->s, DISCONNECT_PEER_CLOSED);
	free_conn(c);
}

/* Connections without Hello cannot hold every slot. */
static void test_idle_connections_make_room(void **state) {
	(void)state;
	fake_conn *c[5];
	c[0] = open_conn_from("10.0.0.1:1");
	c[1] = open_conn_from("10.0.0.2:1");
	c[2] = open_conn_from("10.0.0.3:1");
	hello(c[1], "v", 1);
	/* full: the oldest without Hello (c[0]) is closed to make room */
	c[3] = open_conn_from("10.0.0.4:1");
	assert_non_null(c[3]->s);
	assert_true(c[0]->closed);
	expect_error(c[0], 0, crowd_v1_ErrorCode_ERROR_HELLO_TIMEOUT);
	assert_false(c[1]->closed || c[2]->closed);
	/* under pressure the Hello timeout is the short one */
	session_check_timers(c[2]->s, c[2]->s->opened_ns + (uint64_t)(cfg.hello_timeout_busy_s * 1e9) + 1000);
	assert_true(c[2]->closed);
	/* one address may hold only so many connections without Hello */
	cfg.max_pending_per_peer = 1;
	c[4] = open_conn_from("10.0.0.4:2");
	assert_null(c[4]->s);
	expect_error(c[4], 0, crowd_v1_ErrorCode_ERROR_SERVER_FULL);
	cfg.max_pending_per_peer = 64;
	session_on_closed(c[0]->s, DISCONNECT_PEER_CLOSED);
	session_on_closed(c[1]->s, DISCONNECT_PEER_CLOSED);
	session_on_closed(c[2]->s, DISCONNECT_PEER_CLOSED);
	session_on_closed(c[3]->s, DISCONNECT_PEER_CLOSED);
	for (int i = 0; i < 5; i++) free_conn(c[i]);
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
	    cmocka_unit_test_setup_teardown(test_hello_string_lengths, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_repeated_scalar_is_not_a_batch, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_check_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_malformed_frames_rate_limited, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_polygons_checked, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_slow_consumer_gets_its_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_half_close_answered, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_neighbor_budget, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_idle_connections_make_room, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
