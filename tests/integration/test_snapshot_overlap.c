/* test_snapshot_overlap.c — against the real crowd-server: with
 * --snapshot-overlap (a tick's snapshots encoded on the thread pool while the
 * next tick steps) clients receive the same bytes as without it. The demo
 * crowd (no commands: every tick's world is the same in both runs) is watched
 * by whole-world subscribers (two share one encoding) and many area
 * subscribers (more than one batch) with divisors 1 to 3, over raw sockets;
 * every snapshot that both runs sent for the same tick against the same
 * previous tick must be the same frame. And while snapshots are in flight,
 * clients re-subscribe, move their area and disconnect: every whole-world
 * view stays the world, the server stays up. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cmocka.h>

#include <crowd/wire.h>

#include "harness.h"

enum { CLIENTS = 20, WHOLE = 3, SNAPSHOTS = 30, MAX_SNAPSHOTS = 512 };

typedef struct frame_rec {
	uint64_t tick, prev_tick; /* prev_tick 0: the first this client got */
	uint8_t *bytes;
	size_t len;
} frame_rec;

typedef struct raw_client {
	int fd;
	crowd_frame_splitter split;
	crowd_view view;
	crowd_obstacle_set obstacles;
	bool welcomed;
	frame_rec frames[MAX_SNAPSHOTS];
	uint32_t count;
	uint32_t most_in_view;
} raw_client;

static server_proc server;

static int stop_server(void **state) {
	(void)state;
	server_stop(&server);
	return 0;
}

static void send_msg(raw_client *c, const crowd_v1_ClientMessage *m) {
	crowd_buf b;
	crowd_buf_init(&b);
	assert_true(crowd_encode_client_message(m, true, &b));
	size_t at = 0;
	while (at < b.len) {
		ssize_t n = send(c->fd, b.data + at, b.len - at, 0);
		assert_true(n > 0 || errno == EINTR);
		if (n > 0) at += (size_t)n;
	}
	crowd_buf_free(&b);
}

static void raw_open(raw_client *c, uint16_t port, const crowd_v1_Rect *area, uint32_t divisor) {
	memset(c, 0, sizeof *c);
	crowd_frame_splitter_init(&c->split, 64u << 20);
	crowd_view_init(&c->view);
	crowd_obstacle_set_init(&c->obstacles);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(c->fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(c->fd, (struct sockaddr *)&a, sizeof a), 0);
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.request_id = 1;
	m.which_msg = crowd_v1_ClientMessage_hello_tag;
	m.msg.hello.protocol_major = 1;
	strcpy(m.msg.hello.client_name, "overlap");
	send_msg(c, &m);
	m = (crowd_v1_ClientMessage)crowd_v1_ClientMessage_init_zero;
	m.request_id = 2;
	m.which_msg = crowd_v1_ClientMessage_subscribe_tag;
	m.msg.subscribe.divisor = divisor;
	if (area) {
		m.msg.subscribe.has_area = true;
		m.msg.subscribe.area = *area;
	}
	send_msg(c, &m);
}

static void raw_close(raw_client *c) {
	close(c->fd);
	crowd_frame_splitter_free(&c->split);
	crowd_view_free(&c->view);
	crowd_obstacle_set_free(&c->obstacles);
	for (uint32_t i = 0; i < c->count; i++) free(c->frames[i].bytes);
}

/* Read what is there; record each snapshot's frame (prefix excluded). */
static void raw_read(raw_client *c) {
	uint8_t buf[65536];
	ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
	if (n <= 0) {
		assert_true(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
		return;
	}
	assert_true(crowd_frame_splitter_push(&c->split, buf, (size_t)n));
	const uint8_t *frame;
	size_t len;
	crowd_frame_result r;
	while ((r = crowd_frame_splitter_next(&c->split, &frame, &len)) == CROWD_FRAME_READY) {
		crowd_v1_ServerMessage m;
		assert_true(crowd_decode_server_message(frame, len, &m, &c->view, &c->obstacles, NULL));
		if (m.which_msg == crowd_v1_ServerMessage_welcome_tag) c->welcomed = true;
		if (m.which_msg == crowd_v1_ServerMessage_ack_tag) free(m.msg.ack.ids);
		assert_int_not_equal(m.which_msg, crowd_v1_ServerMessage_error_tag);
		if (m.which_msg != crowd_v1_ServerMessage_snapshot_tag || c->count == MAX_SNAPSHOTS) continue;
		if (c->view.count > c->most_in_view) c->most_in_view = c->view.count;
		frame_rec *f = &c->frames[c->count];
		f->tick = m.msg.snapshot.tick;
		f->prev_tick = c->count ? c->frames[c->count - 1].tick : 0;
		f->bytes = malloc(len);
		assert_non_null(f->bytes);
		memcpy(f->bytes, frame, len);
		f->len = len;
		c->count++;
	}
	assert_int_equal(r, CROWD_FRAME_NEED_MORE);
}

/* Until every client has `want` snapshots (guarded by HARNESS_GUARD_MS of polls). */
static void pump_all(raw_client *c, int n, uint32_t want) {
	for (int spins = 0; spins < HARNESS_GUARD_MS / 10; spins++) {
		bool done = true;
		for (int i = 0; i < n; i++) done &= c[i].count >= want;
		if (done) return;
		struct pollfd p[CLIENTS];
		for (int i = 0; i < n; i++) p[i] = (struct pollfd){.fd = c[i].fd, .events = POLLIN};
		poll(p, (nfds_t)n, 10);
		for (int i = 0; i < n; i++)
			if (p[i].revents) raw_read(&c[i]);
	}
	fail_msg("the clients did not get %u snapshots each", want);
}

/* One run of the demo with these extra flags: every client's snapshots. */
static void record_run(const char *overlap, raw_client *c) {
	const char *args[] = {"--demo", "--demo-agents",       "3000",   "--tick-rate", "60",   "--workers", "2",
	                      overlap,  "--keyframe-interval", "100000", "--log-level", "warn", NULL};
	assert_true(server_start(&server, args));
	for (int i = 0; i < CLIENTS; i++) {
		/* 0 and 1 share the whole world's encoding; areas tile the demo's rooms */
		const float x = -60.0f + 12.0f * (float)(i % 8), y = -40.0f + 15.0f * (float)(i / 8);
		const crowd_v1_Rect area = {x, y, x + 30.0f, y + 25.0f};
		raw_open(&c[i], server.port, i < WHOLE ? NULL : &area, i < 2 ? 1u : (uint32_t)(i % 3) + 1);
	}
	pump_all(c, CLIENTS, SNAPSHOTS);
	for (int i = 0; i < CLIENTS; i++) assert_true(c[i].welcomed);
	server_stop(&server);
}

static void test_same_bytes_with_and_without_overlap(void **state) {
	(void)state;
	static raw_client off[CLIENTS], on[CLIENTS];
	record_run("--snapshot-overlap=false", off);
	record_run("--snapshot-overlap=true", on);
	uint32_t compared = 0, compared_whole = 0, areas_seen = 0;
	for (int i = 0; i < CLIENTS; i++) {
		areas_seen += i >= WHOLE && on[i].most_in_view > 0;
		uint32_t mine = 0;
		for (uint32_t a = 0; a < off[i].count; a++) {
			const frame_rec *fa = &off[i].frames[a];
			if (fa->prev_tick == 0) continue; /* a keyframe at a tick that depends on when it subscribed */
			for (uint32_t b = 0; b < on[i].count; b++) {
				const frame_rec *fb = &on[i].frames[b];
				if (fb->tick != fa->tick || fb->prev_tick != fa->prev_tick) continue;
				assert_int_equal(fa->len, fb->len);
				assert_memory_equal(fa->bytes, fb->bytes, fa->len);
				mine++;
			}
		}
		if (i < 2) assert_true(mine >= SNAPSHOTS / 2); /* divisor 1: most ticks of the two runs meet */
		compared += mine;
		if (i < WHOLE) compared_whole += mine;
		raw_close(&off[i]);
		raw_close(&on[i]);
	}
	print_message("compared %u snapshots (%u whole-world); %u of %d areas had agents\n", compared, compared_whole,
	              areas_seen, CLIENTS - WHOLE);
	assert_true(compared >= CLIENTS * SNAPSHOTS / 4);
	assert_true(areas_seen >= (CLIENTS - WHOLE) / 2);
}

/* ------------------------------------------------------------------ churn */

static void test_subscriptions_change_while_snapshots_fly(void **state) {
	(void)state;
	const char *args[] = {"--demo", "--demo-agents", "1500", "--tick-rate", "120", "--workers",
	                      "2",      "--log-level",   "warn", NULL};
	assert_true(server_start(&server, args));
	tc *whole[4], *area[12];
	for (int i = 0; i < 4; i++) {
		whole[i] = tc_connect(server.port, NULL, false);
		assert_non_null(whole[i]);
	}
	for (int i = 0; i < 12; i++) {
		area[i] = tc_connect(server.port, NULL, false);
		assert_non_null(area[i]);
		const crowd_v1_Rect r = {-50.0f + 5.0f * (float)i, -30.0f, -20.0f + 5.0f * (float)i, 30.0f};
		tc_assert_ack(tc_await(area[i], crowd_client_subscribe(area[i]->client, &r, 1)));
	}
	for (int round = 0; round < 8; round++) {
		/* re-subscribe (whole world, another divisor) and move areas: answered
		 * at once, while the last tick's snapshots may still be encoding */
		for (int i = 0; i < 4; i++) {
			tc_assert_ack(tc_await(
			    whole[i], crowd_client_subscribe(whole[i]->client, NULL, (uint32_t)(round % 2) + 1)));
			assert_true(tc_await_snapshots(whole[i], 2));
			const crowd_client_snapshot *s = crowd_client_latest_snapshot(whole[i]->client);
			assert_non_null(s);
			assert_int_equal(s->count, s->world_agent_count); /* a wrong baseline would show here */
		}
		for (int i = 0; i < 12; i++) {
			const float x = -50.0f + (float)((i * 7 + round * 5) % 60);
			const crowd_v1_Rect r = {x, -30.0f, x + 30.0f, 30.0f};
			crowd_client_subscribe(area[i]->client, &r, 1);
		}
		/* one area client leaves and another comes, mid-flight */
		int k = round % 12;
		tc_close(area[k]);
		area[k] = tc_connect(server.port, NULL, false);
		assert_non_null(area[k]);
		const crowd_v1_Rect r = {-40.0f, -20.0f, 0.0f, 20.0f};
		tc_assert_ack(tc_await(area[k], crowd_client_subscribe(area[k]->client, &r, 1)));
	}
	for (int i = 0; i < 12; i++) {
		assert_true(tc_await_snapshots(area[i], 2));
		assert_false(area[i]->closed);
		tc_close(area[i]);
	}
	for (int i = 0; i < 4; i++) tc_close(whole[i]);
	assert_true(server_alive(&server));
	server_stop(&server);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_same_bytes_with_and_without_overlap, stop_server),
	    cmocka_unit_test_teardown(test_subscriptions_change_while_snapshots_fly, stop_server),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
