/* test_hardening.c — issue 14 against the real server over real sockets: a
 * half-closed client gets its answers, velocity-steered agents stay inside the
 * world bounds (even at --precision 1000000), idle TCP connections that never
 * say Hello cannot keep a player out, and idle HTTP connections cannot make
 * /healthz fail. The idle connections come from other loopback addresses
 * (127.0.0.2...), as an attacker's would from other hosts. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "crowd/wire.h"
#include "harness.h"

#define MAX_CONNECTIONS 40

static server_proc server;

static int start_server(void **state) {
	(void)state;
	/* Hello timeouts (normal and busy) of a minute: no idle connection may time
	 * out while a test counts on it being held. */
	const char *args[] = {"--precision", "1000000", "--max-connections", "40", "--max-pending-per-peer", "16",
	                      "--hello-timeout", "60", "--hello-timeout-busy", "60", "--log-level", "error", NULL};
	return server_start(&server, args) ? 0 : -1;
}

static int stop_server(void **state) {
	(void)state;
	server_stop(&server);
	return 0;
}

/* A blocking TCP connection to 127.0.0.1:port from source address `from`
 * (127.0.0.x); -1 on failure. */
static int connect_from(const char *from, uint16_t port) {
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) return -1;
	struct sockaddr_in src = {.sin_family = AF_INET};
	inet_pton(AF_INET, from, &src.sin_addr);
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(port)};
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct timeval guard = {HARNESS_GUARD_MS / 1000, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard);
	if (bind(fd, (struct sockaddr *)&src, sizeof src) < 0 || connect(fd, (struct sockaddr *)&dst, sizeof dst) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void send_message(int fd, const crowd_v1_ClientMessage *m) {
	crowd_buf b;
	crowd_buf_init(&b);
	assert_true(crowd_encode_client_message(m, true, &b));
	assert_int_equal(send(fd, b.data, b.len, MSG_NOSIGNAL), (ssize_t)b.len);
	crowd_buf_free(&b);
}

/* Read until EOF; count Welcome, Acks for request_id and Errors. */
typedef struct answers {
	int welcomes, acks, errors, last_error;
	bool eof;
} answers;

static answers read_to_eof(int fd, uint32_t request_id) {
	answers a = {0};
	crowd_frame_splitter sp;
	crowd_frame_splitter_init(&sp, 1u << 24);
	crowd_view view;
	crowd_view_init(&view);
	crowd_obstacle_set obstacles;
	crowd_obstacle_set_init(&obstacles);
	uint8_t buf[65536];
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof buf, 0);
		if (n == 0) {
			a.eof = true;
			break;
		}
		if (n < 0) break; /* the guard (SO_RCVTIMEO) passed */
		assert_true(crowd_frame_splitter_push(&sp, buf, (size_t)n));
		const uint8_t *frame;
		size_t len;
		while (crowd_frame_splitter_next(&sp, &frame, &len) == CROWD_FRAME_READY) {
			crowd_v1_ServerMessage m;
			assert_true(crowd_decode_server_message(frame, len, &m, &view, &obstacles, NULL));
			if (m.which_msg == crowd_v1_ServerMessage_welcome_tag) a.welcomes++;
			if (m.which_msg == crowd_v1_ServerMessage_ack_tag && m.msg.ack.request_id == request_id) a.acks++;
			if (m.which_msg == crowd_v1_ServerMessage_error_tag) {
				a.errors++;
				a.last_error = m.msg.error.code;
			}
			crowd_server_message_release(&m);
		}
	}
	crowd_frame_splitter_free(&sp);
	crowd_view_free(&view);
	crowd_obstacle_set_free(&obstacles);
	return a;
}

/* Hello, Spawn, then shutdown(SHUT_WR): the spawn is applied at the next tick
 * and its Ack still arrives before the server closes. */
static void test_half_closed_client_gets_its_ack(void **state) {
	(void)state;
	int fd = connect_from("127.0.0.1", server.port);
	assert_true(fd >= 0);
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.request_id = 1;
	m.which_msg = crowd_v1_ClientMessage_hello_tag;
	m.msg.hello.protocol_major = CROWD_PROTOCOL_MAJOR;
	send_message(fd, &m);
	crowd_v1_AgentSpec spec = crowd_v1_AgentSpec_init_zero;
	m = (crowd_v1_ClientMessage)crowd_v1_ClientMessage_init_zero;
	m.request_id = 2;
	m.which_msg = crowd_v1_ClientMessage_spawn_agents_tag;
	m.msg.spawn_agents = (crowd_v1_SpawnAgents){1, &spec};
	send_message(fd, &m);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	answers a = read_to_eof(fd, 2);
	close(fd);
	assert_int_equal(a.welcomes, 1);
	assert_int_equal(a.acks, 1);
	assert_int_equal(a.errors, 0);
	assert_true(a.eof);
}

/* Velocity-steered agents pushing out of the world stop at its bounds; at
 * --precision 1000000 the bound (1000) still fits a snapshot's sint32. */
static void test_agents_stay_inside_the_bounds(void **state) {
	(void)state;
	tc *t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	crowd_v1_AgentSpec spec = crowd_v1_AgentSpec_init_zero;
	spec.has_position = spec.has_pref_velocity = spec.has_max_speed = true;
	spec.position = (crowd_v1_Vec2){990, 0};
	spec.pref_velocity = (crowd_v1_Vec2){100, 0};
	spec.max_speed = 100;
	const tc_answer *a = tc_await(t, crowd_client_spawn(t->client, &spec, 1));
	assert_true(a && a->ok);
	assert_true(tc_await(t, crowd_client_subscribe(t->client, NULL, 1))->ok);
	/* 100 units/s from 990: past 1,000 after 0.1 s (3 ticks); watch 2 s (60 ticks). */
	uint64_t first = 0;
	float most = 0;
	for (int i = 0; i < 60; i++) {
		assert_true(tc_await_snapshots(t, 1));
		const crowd_client_snapshot *s = crowd_client_latest_snapshot(t->client);
		if (!first) first = s->tick;
		for (uint32_t k = 0; k < s->count; k++)
			if (s->x[k] > most) most = s->x[k];
	}
	print_message("largest x seen: %.6f\n", (double)most);
	assert_true(most <= 1000.0f);
	assert_true(most >= 999.0f);
	tc_close(t);
}

/* MAX_CONNECTIONS + 10 connections from other addresses that never say Hello
 * (at most 16 per address): a player still gets in. */
static void test_idle_tcp_cannot_keep_players_out(void **state) {
	(void)state;
	int idle[MAX_CONNECTIONS + 10];
	int held = 0;
	for (int i = 0; i < MAX_CONNECTIONS + 10; i++) {
		char from[32];
		snprintf(from, sizeof from, "127.0.0.%d", 2 + i / 10);
		idle[held] = connect_from(from, server.port);
		if (idle[held] >= 0) held++;
	}
	assert_int_equal(held, MAX_CONNECTIONS + 10);
	/* A player: Welcome, not SERVER_FULL. */
	tc *player = tc_connect(server.port, NULL, false);
	assert_non_null(player);
	assert_true(player->welcomed);
	tc_close(player);
	/* 17 from one address: past --max-pending-per-peer 16 the newcomer is refused. */
	int same[17];
	for (int i = 0; i < 17; i++) same[i] = connect_from("127.0.0.100", server.port);
	answers refused = read_to_eof(same[16], 0);
	assert_int_equal(refused.last_error, crowd_v1_ErrorCode_ERROR_SERVER_FULL);
	for (int i = 0; i < 17; i++) close(same[i]);
	for (int i = 0; i < held; i++) close(idle[i]);
}

/* The HTTP status line of one GET, from address `from`. */
static int http_get_status(const char *from, uint16_t port, const char *path) {
	int fd = connect_from(from, port);
	if (fd < 0) return -1;
	char req[256];
	int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
	int status = -1;
	char buf[512];
	if (send(fd, req, (size_t)n, MSG_NOSIGNAL) == n) {
		ssize_t got = recv(fd, buf, sizeof buf - 1, 0);
		if (got > 12) {
			buf[got] = '\0';
			status = atoi(buf + 9);
		}
	}
	close(fd);
	return status;
}

/* More idle HTTP connections than the HTTP listener's limit (max connections
 * + 64 = 104), from several addresses: /healthz still answers 200. */
static void test_idle_http_cannot_starve_healthz(void **state) {
	(void)state;
	uint16_t http = server_http_port(&server);
	assert_true(http > 0);
	enum { IDLE = 150 };
	int idle[IDLE];
	for (int i = 0; i < IDLE; i++) {
		char from[32];
		snprintf(from, sizeof from, "127.0.1.%d", 1 + i / 15);
		idle[i] = connect_from(from, http);
		assert_true(idle[i] >= 0);
	}
	assert_int_equal(http_get_status("127.0.0.1", http, "/healthz"), 200);
	assert_int_equal(http_get_status("127.0.0.1", http, "/metrics"), 200);
	for (int i = 0; i < IDLE; i++) close(idle[i]);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_half_closed_client_gets_its_ack),
	    cmocka_unit_test(test_agents_stay_inside_the_bounds),
	    cmocka_unit_test(test_idle_tcp_cannot_keep_players_out),
	    cmocka_unit_test(test_idle_http_cannot_starve_healthz),
	};
	return cmocka_run_group_tests(tests, start_server, stop_server);
}
