/* test_hostile.c — hostile input against the real server: garbage bytes, an
 * oversized length prefix, truncated frames, NaN and infinite numbers, a
 * 10^6-agent spawn, unknown and stale ids, unknown messages, a request flood.
 * Each gets the right Error or a clean close, while a watcher connection
 * subscribed to every tick keeps receiving every snapshot (no tick missing). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crowd/wire.h"
#include "harness.h"

#define MAX_AGENTS 3000
#define MAX_BATCH 5000

static server_proc server;
static tc *watcher;

static int start_server(void **state) {
	(void)state;
	const char *args[] = {
	    "--max-agents",    "3000", "--max-batch", "5000",  "--max-frame", "1m", "--requests-per-second", "50",
	    "--request-burst", "100",  "--log-level", "error", NULL};
	if (!server_start(&server, args)) return -1;
	watcher = tc_connect(server.port, NULL, false);
	if (!watcher || crowd_client_subscribe(watcher->client, NULL, 1) <= 0) return -1;
	return tc_await_snapshots(watcher, 2) ? 0 : -1;
}

static int stop_server(void **state) {
	(void)state;
	tc_close(watcher);
	server_stop(&server);
	return 0;
}

/* The watcher got every tick's snapshot so far and keeps getting them; the
 * server still answers a fresh client. */
static void assert_server_serving_everyone(void) {
	assert_true(tc_await_snapshots(watcher, 5));
	assert_false(watcher->closed);
	assert_int_equal(watcher->missed_snapshots, 0);
	assert_int_equal(watcher->snapshots, watcher->last_tick - watcher->first_tick + 1);
	tc *fresh = tc_connect(server.port, NULL, false);
	assert_non_null(fresh);
	uint32_t pongs = fresh->pongs;
	assert_true(crowd_client_ping(fresh->client, 0) > 0);
	while (fresh->pongs == pongs && !fresh->closed) tc_pump(10);
	assert_int_equal(fresh->pongs, pongs + 1);
	tc_close(fresh);
}

static uint32_t world_agents(void) {
	assert_true(tc_await_snapshots(watcher, 2));
	return crowd_client_latest_snapshot(watcher->client)->world_agent_count;
}

static void assert_code(int got, int want) {
	if (got != want)
		fail_msg("expected %s, got %s", crowd_client_error_name(want),
		         got < 0 ? "no error" : crowd_client_error_name(got));
}

/* A frame: varint length + body. The server may close as soon as it has seen
 * the prefix; then the rest cannot be written (CLOSED), and its Error is read. */
static void send_frame(tc *t, const uint8_t *body, size_t len) {
	uint8_t prefix[CROWD_VARINT_MAX];
	size_t n = crowd_varint_put(prefix, len);
	assert_int_equal(crowd_client_send_raw(t->client, prefix, n), 0);
	int r = len ? crowd_client_send_raw(t->client, body, len) : 0;
	assert_true(r == 0 || r == CROWD_CLIENT_ERR_CLOSED);
}

static void test_garbage_bytes(void **state) {
	(void)state;
	/* A well-framed body that is not protobuf. */
	tc *t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	send_frame(t, junk, sizeof junk);
	assert_code(tc_await_any_error(t), crowd_v1_ErrorCode_ERROR_MALFORMED);
	tc_close(t);

	/* Random bytes, framing and all: some Error, or a close. */
	t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	uint8_t noise[4096];
	uint32_t seed = 12345;
	for (size_t i = 0; i < sizeof noise; i++) {
		seed = seed * 1103515245u + 12345u;
		noise[i] = (uint8_t)(seed >> 16);
	}
	assert_int_equal(crowd_client_send_raw(t->client, noise, sizeof noise), 0);
	int code = tc_await_any_error(t);
	assert_true(code > 0 || t->closed);
	if (code >= 0) assert_int_not_equal(code, crowd_v1_ErrorCode_ERROR_INTERNAL);
	tc_close(t);
	assert_server_serving_everyone();
}

static void test_oversized_length_prefix(void **state) {
	(void)state;
	tc *t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	uint8_t prefix[CROWD_VARINT_MAX];
	size_t n = crowd_varint_put(prefix, (uint64_t)1 << 30);
	assert_int_equal(crowd_client_send_raw(t->client, prefix, n), 0);
	assert_int_equal(crowd_client_send_raw(t->client, "abc", 3), 0);
	assert_code(tc_await_any_error(t), crowd_v1_ErrorCode_ERROR_FRAME_TOO_LARGE);
	assert_true(tc_await_closed(t));

	/* A varint that never ends (11 continuation bytes). */
	tc_close(t);
	t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	const uint8_t endless[11] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	assert_int_equal(crowd_client_send_raw(t->client, endless, sizeof endless), 0);
	assert_true(tc_await_closed(t));
	tc_close(t);
	assert_server_serving_everyone();
}

static void test_truncated_frames(void **state) {
	(void)state;
	/* The prefix matches, the protobuf inside is cut short. */
	tc *t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	crowd_v1_AgentSpec specs[4];
	for (int i = 0; i < 4; i++) {
		specs[i] = (crowd_v1_AgentSpec)crowd_v1_AgentSpec_init_zero;
		specs[i].has_position = true;
		specs[i].position.x = 400.0f + (float)i * 4.0f;
	}
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.request_id = 9;
	m.which_msg = crowd_v1_ClientMessage_spawn_agents_tag;
	m.msg.spawn_agents.agents_count = 4;
	m.msg.spawn_agents.agents = specs;
	crowd_buf body;
	crowd_buf_init(&body);
	assert_true(crowd_encode_client_message(&m, false, &body));
	uint32_t before = world_agents();
	send_frame(t, body.data, body.len - 3);
	assert_code(tc_await_any_error(t), crowd_v1_ErrorCode_ERROR_MALFORMED);
	assert_int_equal(world_agents(), before);
	tc_close(t);

	/* The prefix promises more than ever comes, then the client goes away. */
	t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	uint8_t prefix[CROWD_VARINT_MAX];
	size_t n = crowd_varint_put(prefix, body.len);
	assert_int_equal(crowd_client_send_raw(t->client, prefix, n), 0);
	assert_int_equal(crowd_client_send_raw(t->client, body.data, body.len / 2), 0);
	assert_int_equal(crowd_client_flush(t->client, HARNESS_GUARD_MS), 0);
	tc_close(t);
	crowd_buf_free(&body);
	assert_int_equal(world_agents(), before);
	assert_server_serving_everyone();
}

static void test_non_finite_numbers(void **state) {
	(void)state;
	tc *t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	uint32_t before = world_agents();
	const float bad[] = {NAN, INFINITY, -INFINITY};
	for (int b = 0; b < 3; b++) {
		crowd_v1_AgentSpec specs[3];
		for (int i = 0; i < 3; i++) {
			specs[i] = (crowd_v1_AgentSpec)crowd_v1_AgentSpec_init_zero;
			specs[i].has_position = true;
			specs[i].position.x = 500.0f + (float)i * 4.0f;
		}
		/* The bad value in a different field each round, always in item 2. */
		if (b == 0) specs[2].position.y = bad[b];
		if (b == 1) specs[2].has_target = true, specs[2].target.x = bad[b];
		if (b == 2) specs[2].has_radius = true, specs[2].radius = bad[b];
		const tc_answer *a = tc_await(t, crowd_client_spawn(t->client, specs, 3));
		tc_assert_error(a, crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT);
		assert_int_equal(a->index, 2);
	}
	assert_int_equal(world_agents(), before); /* all or nothing */

	const tc_answer *a = tc_await(t, tc_spawn_grid(t, 2, 2, 500.0f, 500.0f, 4.0f, 0));
	assert_true(a && a->ok && a->ids_count == 2);
	uint32_t ids[2] = {a->ids[0], a->ids[1]};
	float fine = 1.0f, nan = NAN, inf = INFINITY;
	tc_assert_error(tc_await(t, crowd_client_set_targets(t->client, ids, 1, &nan, &fine, 1)),
	             crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT);
	tc_assert_error(tc_await(t, crowd_client_set_targets(t->client, ids, 1, &fine, &inf, 1)),
	             crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT);
	tc_assert_error(tc_await(t, crowd_client_set_velocities(t->client, ids, 2, &inf, &fine, 1)),
	             crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT);
	const float ox[] = {0.0f, 1.0f, NAN}, oy[] = {600.0f, 600.0f, 601.0f};
	tc_assert_error(tc_await(t, crowd_client_add_obstacle(t->client, ox, oy, 3)),
	             crowd_v1_ErrorCode_ERROR_BAD_POLYGON);
	crowd_v1_Rect area = {0.0f, 0.0f, INFINITY, 10.0f};
	area.max_y = NAN;
	tc_assert_error(tc_await(t, crowd_client_subscribe(t->client, &area, 1)),
	             crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT);
	/* Finite but out of range. */
	crowd_v1_AgentSpec negative = crowd_v1_AgentSpec_init_zero;
	negative.has_radius = true;
	negative.radius = -1.0f;
	tc_assert_error(tc_await(t, crowd_client_spawn(t->client, &negative, 1)),
	             crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT);
	assert_false(t->closed);
	tc_close(t);
	assert_server_serving_everyone();
}

/* SpawnAgents with `count` empty AgentSpecs, encoded by hand: the library (and
 * nanopb's 16-bit counts) cannot build a list this long. */
static void send_huge_spawn(tc *t, uint32_t request_id, uint32_t count) {
	size_t spawn_len = (size_t)count * 2; /* each: tag 0x0a, length 0 */
	uint8_t head[32];
	size_t h = 0;
	head[h++] = 0x08; /* request_id, varint */
	h += crowd_varint_put(head + h, request_id);
	head[h++] = 0x1a; /* spawn_agents, length-delimited */
	h += crowd_varint_put(head + h, spawn_len);
	uint8_t *msg = malloc(h + spawn_len);
	assert_non_null(msg);
	memcpy(msg, head, h);
	for (size_t i = 0; i < count; i++) {
		msg[h + 2 * i] = 0x0a;
		msg[h + 2 * i + 1] = 0x00;
	}
	send_frame(t, msg, h + spawn_len);
	free(msg);
}

static void test_million_agent_spawn(void **state) {
	(void)state;
	uint32_t before = world_agents();
	/* 10^6 agents take 2 MB: over the frame limit (1 MiB), refused and closed. */
	tc *t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	send_huge_spawn(t, 77, 1000000);
	assert_code(tc_await_any_error(t), crowd_v1_ErrorCode_ERROR_FRAME_TOO_LARGE);
	assert_true(tc_await_closed(t));
	tc_close(t);

	/* 6,000 and 400,000 fit in a frame: refused by the batch limit with their
	 * request_id before they are decoded (400,000 is past nanopb's 16-bit
	 * counts), and the connection stays. */
	t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	send_huge_spawn(t, 78, MAX_BATCH + 1000);
	tc_assert_error(tc_await(t, 78), crowd_v1_ErrorCode_ERROR_LIMIT_BATCH);
	send_huge_spawn(t, 79, 400000);
	tc_assert_error(tc_await(t, 79), crowd_v1_ErrorCode_ERROR_LIMIT_BATCH);
	assert_int_equal(world_agents(), before);

	/* Under the batch limit but over the world's agent limit. */
	const tc_answer *a = tc_await(t, tc_spawn_grid(t, MAX_AGENTS + 1, 60, -900.0f, -900.0f, 4.0f, 0));
	tc_assert_error(a, crowd_v1_ErrorCode_ERROR_LIMIT_AGENTS_WORLD);
	assert_int_equal(world_agents(), before);
	assert_false(t->closed);
	tc_close(t);
	assert_server_serving_everyone();
}

static void test_unknown_and_stale_ids(void **state) {
	(void)state;
	tc *t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	uint32_t unknown = 0x000ffff0u;
	float x = 0.0f, y = 0.0f;
	tc_assert_error(tc_await(t, crowd_client_set_targets(t->client, &unknown, 1, &x, &y, 1)),
	             crowd_v1_ErrorCode_ERROR_UNKNOWN_ID);
	tc_assert_error(tc_await(t, crowd_client_remove_agents(t->client, &unknown, 1)),
	             crowd_v1_ErrorCode_ERROR_UNKNOWN_ID);
	tc_assert_error(tc_await(t, crowd_client_remove_obstacle(t->client, 4242)), crowd_v1_ErrorCode_ERROR_UNKNOWN_ID);

	const tc_answer *a = tc_await(t, tc_spawn_grid(t, 1, 1, 700.0f, 700.0f, 1.0f, 0));
	assert_true(a && a->ok && a->ids_count == 1);
	uint32_t id = a->ids[0];
	assert_true(tc_await(t, crowd_client_remove_agents(t->client, &id, 1))->ok);
	tc_assert_error(tc_await(t, crowd_client_set_targets(t->client, &id, 1, &x, &y, 1)),
	             crowd_v1_ErrorCode_ERROR_STALE_ID);
	tc_assert_error(tc_await(t, crowd_client_remove_agents(t->client, &id, 1)), crowd_v1_ErrorCode_ERROR_STALE_ID);
	/* Mismatched parallel arrays. */
	uint32_t two[2] = {unknown, unknown};
	float xs[2] = {0.0f, 1.0f};
	tc_assert_error(tc_await(t, crowd_client_set_targets(t->client, two, 1, xs, xs, 2)),
	             crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT);
	assert_false(t->closed);
	tc_close(t);
	assert_server_serving_everyone();
}

static void test_unknown_messages_and_versions(void **state) {
	(void)state;
	tc *t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	/* A ClientMessage with a request_id and no oneof case. */
	const uint8_t empty[] = {0x08, 0x05};
	send_frame(t, empty, sizeof empty);
	tc_assert_error(tc_await(t, 5), crowd_v1_ErrorCode_ERROR_UNKNOWN_MESSAGE);
	/* An oneof case from the future (field 30, varint). */
	const uint8_t future[] = {0x08, 0x06, 0xf0, 0x01, 0x01};
	send_frame(t, future, sizeof future);
	tc_assert_error(tc_await(t, 6), crowd_v1_ErrorCode_ERROR_UNKNOWN_MESSAGE);
	/* A second Hello. */
	tc_assert_error(tc_await(t, crowd_client_hello(t->client, NULL, "again", false)),
	             crowd_v1_ErrorCode_ERROR_ALREADY_HELLO);
	assert_false(t->closed);
	tc_close(t);

	/* Another protocol major: refused, closed. */
	t = tc_open(server.port, 0, true);
	assert_non_null(t);
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_hello_tag;
	m.msg.hello.protocol_major = CROWD_PROTOCOL_MAJOR + 1;
	tc_assert_error(tc_await(t, crowd_client_send_message(t->client, &m)),
	             crowd_v1_ErrorCode_ERROR_UNSUPPORTED_VERSION);
	assert_true(tc_await_closed(t));
	tc_close(t);
	assert_server_serving_everyone();
}

typedef struct flood {
	tc *t;
	uint32_t sent;
} flood;

static uint32_t rate_limited(const tc *t) {
	uint32_t n = 0;
	for (uint64_t i = 0; i < t->answer_count && i < TC_ANSWERS; i++)
		n += !t->answers[i].ok && t->answers[i].code == crowd_v1_ErrorCode_ERROR_RATE_LIMITED;
	return n;
}

static bool flood_answered(void *ctx) {
	flood *f = ctx;
	return f->t->pongs + f->t->answer_count >= f->sent || f->t->closed;
}

static void test_request_flood_is_rate_limited(void **state) {
	(void)state;
	tc *t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	/* 200 pings in one burst: the burst allows 100, the rest are refused, and
	 * every one of them gets exactly one answer (a Pong or an Error). */
	flood f = {t, 200};
	for (uint32_t i = 0; i < f.sent; i++) assert_true(crowd_client_ping(t->client, i + 1) > 0);
	assert_true(tc_pump_until(flood_answered, &f, HARNESS_GUARD_MS));
	assert_int_equal(t->pongs + t->answer_count, f.sent);
	assert_true(rate_limited(t) > 0);
	assert_int_equal(rate_limited(t), t->answer_count);
	assert_false(t->closed);
	tc_close(t);
	assert_server_serving_everyone();
}

/* AddObstacle: a segment, degenerate and self-intersecting polygons are
 * refused with BAD_POLYGON (counted); a clockwise one is stored
 * counter-clockwise, as the snapshot's obstacle list shows. */
static double stored_area2(uint32_t id) {
	for (uint32_t i = 0; i < crowd_client_obstacle_count(watcher->client); i++) {
		uint32_t got, count;
		const float *x, *y;
		if (!crowd_client_obstacle(watcher->client, i, &got, &x, &y, &count) || got != id) continue;
		double a = 0.0;
		for (uint32_t k = 0; k < count; k++)
			a += (double)x[k] * y[(k + 1) % count] - (double)x[(k + 1) % count] * y[k];
		return a;
	}
	return NAN;
}

typedef struct obstacle_seen {
	uint32_t id;
} obstacle_seen;

static bool watcher_has_obstacle(void *ctx) {
	return !isnan(stored_area2(((obstacle_seen *)ctx)->id));
}

static void test_bad_polygons_refused(void **state) {
	(void)state;
	tc *t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	char *m = server_metrics(&server);
	assert_non_null(m);
	double before = metric_value(m, "crowd_errors_total{code=\"BAD_POLYGON\"}");
	free(m);
	static const struct {
		const char *what;
		uint32_t n;
		float x[6], y[6];
	} bad[] = {
	    {"a segment", 2, {700, 710}, {700, 700}},
	    {"a segment drawn there and back", 4, {700, 710, 700, 710}, {700, 700, 700, 700}},
	    {"collinear", 3, {700, 705, 710}, {700, 700, 700}},
	    {"zero area: a vertex repeated", 3, {700, 710, 700}, {700, 700, 700}},
	    {"a bow tie", 4, {700, 710, 710, 700}, {700, 710, 700, 710}},
	    {"a pentagram", 5, {750, 779, 702, 798, 721}, {700, 791, 735, 735, 791}},
	    {"touching itself", 6, {700, 710, 705, 710, 700, 705}, {700, 700, 705, 710, 710, 705}},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const tc_answer *a = tc_await(t, crowd_client_add_obstacle(t->client, bad[i].x, bad[i].y, bad[i].n));
		assert_non_null(a);
		if (a->ok || a->code != crowd_v1_ErrorCode_ERROR_BAD_POLYGON)
			fail_msg("%s: expected BAD_POLYGON, got %s", bad[i].what,
			         a->ok ? "Ack" : crowd_client_error_name(a->code));
	}
	m = server_metrics(&server);
	assert_non_null(m);
	assert_true(metric_value(m, "crowd_errors_total{code=\"BAD_POLYGON\"}") ==
	            before + (double)(sizeof bad / sizeof bad[0]));
	free(m);
	/* Clockwise: accepted, stored counter-clockwise. */
	const float cx[] = {800, 800, 810, 810}, cy[] = {800, 810, 810, 800};
	const tc_answer *a = tc_await(t, crowd_client_add_obstacle(t->client, cx, cy, 4));
	assert_true(a && a->ok && a->ids_count == 1);
	obstacle_seen seen = {a->ids[0]};
	assert_true(tc_pump_until(watcher_has_obstacle, &seen, HARNESS_GUARD_MS));
	assert_true(stored_area2(seen.id) > 0.0);
	assert_true(tc_await(t, crowd_client_remove_obstacle(t->client, seen.id))->ok);
	tc_close(t);
	assert_server_serving_everyone();
}

/* A socket connected to port from 127.0.0.1 that never sends anything; -1 on failure. */
static int idle_connection(uint16_t port) {
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&to, sizeof to) == 0) return fd;
	if (fd >= 0) close(fd);
	return -1;
}

/* One GET from 127.0.0.1: the status, or -1. */
static int http_status(uint16_t port, const char *path) {
	int fd = idle_connection(port);
	if (fd < 0) return -1;
	char req[128], buf[256];
	int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
	int status = -1;
	if (send(fd, req, (size_t)n, MSG_NOSIGNAL) == n) {
		ssize_t got = recv(fd, buf, sizeof buf - 1, MSG_WAITALL);
		if (got > 12) {
			buf[got] = '\0';
			status = atoi(buf + 9);
		}
	}
	close(fd);
	return status;
}

/* About 1,000 HTTP connections from one address that never send a request:
 * past --max-pending-per-peer (64) they take reserved slots, where only
 * /healthz and /metrics are served. /healthz and /metrics from that same
 * address still answer 200; anything else from it is refused 503 and counted. */
static void test_idle_http_from_one_address(void **state) {
	(void)state;
	uint16_t http = server_http_port(&server);
	assert_true(http > 0);
	struct rlimit nofile;
	int idle_count = 1000;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
		if (nofile.rlim_cur < nofile.rlim_max) {
			nofile.rlim_cur = nofile.rlim_max;
			setrlimit(RLIMIT_NOFILE, &nofile);
			getrlimit(RLIMIT_NOFILE, &nofile);
		}
		if (nofile.rlim_cur != RLIM_INFINITY && nofile.rlim_cur < (rlim_t)idle_count + 128)
			idle_count = (int)nofile.rlim_cur - 128;
	}
	assert_true(idle_count > 200);
	int *idle = calloc((size_t)idle_count, sizeof *idle);
	assert_non_null(idle);
	for (int i = 0; i < idle_count; i++) {
		idle[i] = idle_connection(http);
		assert_true(idle[i] >= 0);
	}
	assert_int_equal(http_status(http, "/healthz"), 200);
	assert_int_equal(http_status(http, "/healthz"), 200);
	assert_int_equal(http_status(http, "/crowd.proto"), 503);
	char *m = server_metrics(&server);
	assert_non_null(m);
	assert_true(metric_value(m, "crowd_http_over_limit_total{limit=\"per_peer\"}") >= (double)idle_count - 64);
	assert_true(metric_value(m, "crowd_http_refused_total{reason=\"per_peer\"}") >= 1.0);
	free(m);
	for (int i = 0; i < idle_count; i++) close(idle[i]);
	free(idle);
	assert_server_serving_everyone();
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_garbage_bytes),
	    cmocka_unit_test(test_oversized_length_prefix),
	    cmocka_unit_test(test_truncated_frames),
	    cmocka_unit_test(test_non_finite_numbers),
	    cmocka_unit_test(test_million_agent_spawn),
	    cmocka_unit_test(test_unknown_and_stale_ids),
	    cmocka_unit_test(test_unknown_messages_and_versions),
	    cmocka_unit_test(test_request_flood_is_rate_limited),
	    cmocka_unit_test(test_bad_polygons_refused),
	    cmocka_unit_test(test_idle_http_from_one_address),
	};
	return cmocka_run_group_tests(tests, start_server, stop_server);
}
