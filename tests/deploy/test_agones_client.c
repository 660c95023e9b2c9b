/* test_agones_client.c — the Agones client against a scripted fake sidecar on the
 * same libuv loop, over real loopback sockets: well-formed, chunked and EOF-ended
 * replies, and hostile ones (garbage, truncated, oversized, hanging); every outcome
 * counted, nothing leaked, close always completes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "agones.h"

/* ---- the fake sidecar: answers each request with the script for its path ---- */

typedef struct fake_sidecar {
	uv_tcp_t listener;
	int port;
	const char *gameserver_reply; /* NULL: hang (never answer) */
	const char *post_reply;       /* for /ready, /health, /shutdown; NULL: hang */
	int requests[CROWD_AGONES_CALL_COUNT];
	int open_conns;
	char last_body[CROWD_AGONES_CALL_COUNT][512]; /* of the last PATCH of each call */
	int patch_failures;                           /* PATCHes answered 500 before the first 200 */
} fake_sidecar;

typedef struct fake_conn {
	uv_tcp_t tcp;
	uv_write_t write;
	fake_sidecar *sidecar;
	char head[2048];
	size_t len;
	bool answered;
} fake_conn;

static void on_fake_conn_closed(uv_handle_t *h) {
	fake_conn *c = h->data;
	c->sidecar->open_conns--;
	free(c);
}

static void on_fake_written(uv_write_t *w, int status) {
	(void)status;
	fake_conn *c = w->data;
	uv_close((uv_handle_t *)&c->tcp, on_fake_conn_closed);
}

static void on_fake_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
	(void)suggested;
	fake_conn *c = h->data;
	size_t room = sizeof c->head - 1 - c->len;
	*buf = uv_buf_init(c->head + c->len, (unsigned)(room > 0 ? room : 0));
}

static void on_fake_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
	(void)buf;
	fake_conn *c = s->data;
	if (n < 0) {
		if (!uv_is_closing((uv_handle_t *)&c->tcp)) uv_close((uv_handle_t *)&c->tcp, on_fake_conn_closed);
		return;
	}
	c->len += (size_t)n;
	c->head[c->len] = '\0';
	const char *end = strstr(c->head, "\r\n\r\n");
	if (c->answered || end == NULL) return;
	const char *length = strstr(c->head, "Content-Length: ");
	size_t body_len = length != NULL && length < end ? strtoul(length + 16, NULL, 10) : 0;
	if (c->len < (size_t)(end + 4 - c->head) + body_len) return; /* the body is still on its way */
	c->answered = true;
	static const char *const paths[CROWD_AGONES_CALL_COUNT] = {"GET /gameserver ",
	                                                           "POST /ready ",
	                                                           "POST /health ",
	                                                           "POST /shutdown ",
	                                                           "PATCH /v1beta1/counters/rooms ",
	                                                           "PATCH /v1beta1/lists/worlds "};
	int call = -1;
	for (int i = 0; i < CROWD_AGONES_CALL_COUNT; i++)
		if (strncmp(c->head, paths[i], strlen(paths[i])) == 0) call = i;
	assert_true(call >= 0);
	assert_non_null(strstr(c->head, "Host: 127.0.0.1:"));
	c->sidecar->requests[call]++;
	if (call == CROWD_AGONES_COUNTER || call == CROWD_AGONES_LIST)
		snprintf(c->sidecar->last_body[call], sizeof c->sidecar->last_body[call], "%.*s", (int)body_len,
		         end + 4);
	const char *reply = call == CROWD_AGONES_GAMESERVER ? c->sidecar->gameserver_reply : c->sidecar->post_reply;
	if ((call == CROWD_AGONES_COUNTER || call == CROWD_AGONES_LIST) && c->sidecar->patch_failures > 0) {
		c->sidecar->patch_failures--;
		reply = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n";
	}
	if (reply == NULL) return; /* hang: keep the connection open, never answer */
	uv_buf_t out = uv_buf_init((char *)reply, (unsigned)strlen(reply));
	c->write.data = c;
	assert_int_equal(uv_write(&c->write, (uv_stream_t *)&c->tcp, &out, 1, on_fake_written), 0);
}

static void on_fake_connection(uv_stream_t *server, int status) {
	assert_int_equal(status, 0);
	fake_sidecar *f = server->data;
	fake_conn *c = calloc(1, sizeof *c);
	assert_non_null(c);
	c->sidecar = f;
	c->tcp.data = c;
	uv_tcp_init(server->loop, &c->tcp);
	f->open_conns++;
	assert_int_equal(uv_accept(server, (uv_stream_t *)&c->tcp), 0);
	uv_read_start((uv_stream_t *)&c->tcp, on_fake_alloc, on_fake_read);
}

static void fake_start(fake_sidecar *f, uv_loop_t *loop) {
	struct sockaddr_in addr;
	uv_ip4_addr("127.0.0.1", 0, &addr);
	uv_tcp_init(loop, &f->listener);
	f->listener.data = f;
	assert_int_equal(uv_tcp_bind(&f->listener, (const struct sockaddr *)&addr, 0), 0);
	assert_int_equal(uv_listen((uv_stream_t *)&f->listener, 16, on_fake_connection), 0);
	struct sockaddr_storage bound;
	int len = sizeof bound;
	uv_tcp_getsockname(&f->listener, (struct sockaddr *)&bound, &len);
	f->port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
}

static void close_any(uv_handle_t *h, void *arg) {
	(void)arg;
	if (!uv_is_closing(h)) uv_close(h, h->type == UV_TCP && h->data && h->data != arg ? on_fake_conn_closed : NULL);
}

/* ---- a run: the client for `run_ms` of loop time, then shutdown + close ---- */

typedef struct run_result {
	crowd_agones_counters counters;
	crowd_agones_gameserver gameserver;
	bool have_gameserver;
	bool shutdown_called, shutdown_ok, closed;
	int requests[CROWD_AGONES_CALL_COUNT];
} run_result;

typedef struct run_ctx {
	crowd_agones *client;
	run_result *result;
	uv_timer_t stop_timer;
	fake_sidecar *sidecar;
} run_ctx;

static void on_closed(void *arg) {
	run_ctx *ctx = arg;
	ctx->result->closed = true;
	/* The sidecar goes last, with any connection it still holds (a hang). */
	uv_walk(ctx->stop_timer.loop, close_any, &ctx->sidecar->listener);
}

static void on_shutdown_done(void *arg, bool ok) {
	run_ctx *ctx = arg;
	ctx->result->shutdown_called = true;
	ctx->result->shutdown_ok = ok;
}

static void on_stop_timer(uv_timer_t *t) {
	run_ctx *ctx = t->data;
	const crowd_agones_gameserver *gs = crowd_agones_gameserver_info(ctx->client);
	if (gs) {
		ctx->result->gameserver = *gs;
		ctx->result->have_gameserver = true;
	}
	uv_close((uv_handle_t *)t, NULL);
	crowd_agones_shutdown(ctx->client, on_shutdown_done, ctx);
	crowd_agones_close(ctx->client, on_closed, ctx);
}

static void run(const char *gameserver_reply, const char *post_reply, bool absent, uint64_t run_ms, run_result *out) {
	memset(out, 0, sizeof *out);
	uv_loop_t loop;
	uv_loop_init(&loop);
	fake_sidecar sidecar = {.gameserver_reply = gameserver_reply, .post_reply = post_reply};
	fake_start(&sidecar, &loop);
	if (absent) /* a port that was just free: connections are refused */
		uv_close((uv_handle_t *)&sidecar.listener, NULL);

	crowd_agones_config cfg;
	crowd_agones_default_config(&cfg);
	cfg.port = (uint16_t)sidecar.port;
	cfg.health_period_ms = 40;
	cfg.request_timeout_ms = 250;
	cfg.retry_min_ms = 10;
	cfg.retry_max_ms = 40;
	run_ctx ctx = {.result = out, .sidecar = &sidecar};
	assert_int_equal(crowd_agones_start(&ctx.client, &loop, &cfg, &out->counters), 0);
	crowd_agones_ready(ctx.client);
	uv_timer_init(&loop, &ctx.stop_timer);
	ctx.stop_timer.data = &ctx;
	uv_timer_start(&ctx.stop_timer, on_stop_timer, run_ms, 0);

	uv_run(&loop, UV_RUN_DEFAULT);
	assert_true(out->closed);
	assert_int_equal(uv_loop_close(&loop), 0); /* every handle closed: nothing leaked */
	memcpy(out->requests, sidecar.requests, sizeof out->requests);
}

static void run_against(const char *gameserver_reply, const char *post_reply, uint64_t run_ms, run_result *out) {
	run(gameserver_reply, post_reply, false, run_ms, out);
}

static void run_against_absent(uint64_t run_ms, run_result *out) {
	run(NULL, NULL, true, run_ms, out);
}

static const char ok_post[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
static const char ok_gameserver[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 60\r\n\r\n"
                                    "{\"object_meta\":{\"name\":\"gs-1\",\"labels\":{\"world\":\"w\"}},\"x\":1}";

static void test_well_formed(void **state) {
	(void)state;
	run_result r;
	run_against(ok_gameserver, ok_post, 300, &r);
	assert_true(r.have_gameserver);
	assert_string_equal(r.gameserver.name, "gs-1");
	assert_int_equal(r.gameserver.label_count, 1);
	assert_int_equal(r.counters.ok[CROWD_AGONES_GAMESERVER], 1);
	assert_int_equal(r.counters.ok[CROWD_AGONES_READY], 1);
	assert_int_equal(r.requests[CROWD_AGONES_READY], 1);
	assert_int_equal(r.counters.ready, 1);
	assert_true(r.counters.ok[CROWD_AGONES_HEALTH] >= 2);
	assert_int_equal(r.counters.failed[CROWD_AGONES_HEALTH], 0);
	assert_true(r.shutdown_called);
	assert_true(r.shutdown_ok);
	assert_int_equal(r.requests[CROWD_AGONES_SHUTDOWN], 1);
}

static void test_chunked_and_eof_bodies(void **state) {
	(void)state;
	run_result r;
	run_against("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	            "10\r\n{\"object_meta\":{\r\n"
	            "11\r\n\"name\":\"chunky\"}}\r\n"
	            "0\r\n\r\n",
	            "HTTP/1.0 200 OK\r\n\r\n{}", 200, &r);
	assert_true(r.have_gameserver);
	assert_string_equal(r.gameserver.name, "chunky");
	assert_int_equal(r.counters.ok[CROWD_AGONES_READY], 1); /* body ended by EOF */
	assert_int_equal(r.counters.failed[CROWD_AGONES_READY], 0);
}

static void test_garbage_replies(void **state) {
	(void)state;
	run_result r;
	run_against("\x16\x03\x01 not http at all\r\n\r\n", "SSH-2.0-OpenSSH\r\n\r\n", 200, &r);
	assert_false(r.have_gameserver);
	assert_int_equal(r.counters.ok[CROWD_AGONES_GAMESERVER], 0);
	assert_true(r.counters.failed[CROWD_AGONES_GAMESERVER] >= 2); /* retried with back-off */
	assert_true(r.counters.failed[CROWD_AGONES_READY] >= 2);
	assert_int_equal(r.counters.ready, 0);
	assert_true(r.counters.failed[CROWD_AGONES_HEALTH] >= 2);
	assert_true(r.shutdown_called);
	assert_false(r.shutdown_ok);
}

static void test_truncated_and_non_2xx(void **state) {
	(void)state;
	run_result r;
	run_against("HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"object_meta\"",
	            "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n", 200, &r);
	assert_false(r.have_gameserver);
	assert_true(r.counters.failed[CROWD_AGONES_GAMESERVER] >= 1);
	assert_true(r.counters.failed[CROWD_AGONES_READY] >= 1);
	assert_int_equal(r.counters.ok[CROWD_AGONES_HEALTH], 0);
	assert_int_equal(r.counters.timeouts[CROWD_AGONES_HEALTH], 0); /* answered, just not 2xx */
}

static void test_oversized_and_bad_json(void **state) {
	(void)state;
	size_t body = 100 * 1024;
	char *reply = malloc(body + 128);
	assert_non_null(reply);
	int n = snprintf(reply, 128, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", body);
	memset(reply + n, 'x', body);
	reply[(size_t)n + body] = '\0';
	run_result r;
	run_against(reply, ok_post, 200, &r);
	assert_false(r.have_gameserver);
	assert_true(r.counters.failed[CROWD_AGONES_GAMESERVER] >= 1);
	assert_int_equal(r.counters.ok[CROWD_AGONES_READY], 1);
	free(reply);

	run_against("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"a\":[}", ok_post, 200, &r);
	assert_false(r.have_gameserver);
	assert_true(r.counters.failed[CROWD_AGONES_GAMESERVER] >= 1);
	assert_int_equal(r.counters.ok[CROWD_AGONES_GAMESERVER], 0);
}

static void test_hanging_sidecar_times_out_and_close_completes(void **state) {
	(void)state;
	run_result r;
	run_against(NULL, NULL, 700, &r);
	assert_true(r.counters.timeouts[CROWD_AGONES_HEALTH] >= 1);
	assert_true(r.counters.timeouts[CROWD_AGONES_GAMESERVER] >= 1);
	assert_int_equal(r.counters.ok[CROWD_AGONES_READY], 0);
	/* A health ping due while the last one hangs is skipped, not stacked. */
	assert_true(r.counters.health_skipped >= 1);
	assert_true(r.shutdown_called);
	assert_false(r.shutdown_ok);
	assert_int_equal(r.counters.timeouts[CROWD_AGONES_SHUTDOWN], 1); /* close waited for it, bounded */
}

static void test_absent_sidecar(void **state) {
	(void)state;
	/* Nothing listens: every call is refused at once, counted and retried; close completes. */
	run_result r;
	run_against_absent(200, &r);
	assert_true(r.counters.failed[CROWD_AGONES_READY] >= 2);
	assert_true(r.counters.failed[CROWD_AGONES_GAMESERVER] >= 2);
	assert_true(r.counters.failed[CROWD_AGONES_HEALTH] >= 2);
	assert_int_equal(r.counters.timeouts[CROWD_AGONES_READY], 0);
	assert_int_equal(r.counters.ready, 0);
	assert_true(r.shutdown_called);
	assert_false(r.shutdown_ok);
}

/* ---- Counter "rooms" and List "worlds": the latest state reaches the sidecar ---- */

typedef struct rooms_ctx {
	crowd_agones *client;
	fake_sidecar *sidecar;
	uv_timer_t check;
	int checks;
	bool synced;
	bool closed;
} rooms_ctx;

static void on_rooms_closed(void *arg) {
	rooms_ctx *ctx = arg;
	ctx->closed = true;
	uv_walk(ctx->check.loop, close_any, &ctx->sidecar->listener);
}

/* Waits for the event (the client says the sidecar took the latest state); the check
 * count only ends a hung run. */
static void on_rooms_check(uv_timer_t *t) {
	rooms_ctx *ctx = t->data;
	ctx->synced = crowd_agones_rooms_synced(ctx->client);
	if (!ctx->synced && ++ctx->checks < 2000) return;
	uv_close((uv_handle_t *)t, NULL);
	crowd_agones_close(ctx->client, on_rooms_closed, ctx);
}

/* Runs the client, hands it each state of `states` back to back (without running the
 * loop between them) and waits until the sidecar took the last one. */
static void run_rooms(int patch_failures, uint32_t capacity, const char *const *names, const uint32_t *counts,
                      int states, fake_sidecar *sidecar, crowd_agones_counters *counters) {
	uv_loop_t loop;
	uv_loop_init(&loop);
	memset(sidecar, 0, sizeof *sidecar);
	sidecar->gameserver_reply = ok_gameserver;
	sidecar->post_reply = ok_post;
	sidecar->patch_failures = patch_failures;
	fake_start(sidecar, &loop);
	crowd_agones_config cfg;
	crowd_agones_default_config(&cfg);
	cfg.port = (uint16_t)sidecar->port;
	cfg.health_period_ms = 1000;
	cfg.request_timeout_ms = 250;
	cfg.retry_min_ms = 10;
	cfg.retry_max_ms = 40;
	rooms_ctx ctx = {.sidecar = sidecar};
	memset(counters, 0, sizeof *counters);
	assert_int_equal(crowd_agones_start(&ctx.client, &loop, &cfg, counters), 0);
	for (int i = 0; i < states; i++)
		assert_int_equal(crowd_agones_set_rooms(ctx.client, capacity, names, counts[i]), 0);
	uv_timer_init(&loop, &ctx.check);
	ctx.check.data = &ctx;
	uv_timer_start(&ctx.check, on_rooms_check, 5, 5);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_true(ctx.synced);
	assert_true(ctx.closed);
	assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_rooms_latest_state_wins(void **state) {
	(void)state;
	static const char *const names[] = {"default", "match-1", "match-2"};
	static const uint32_t counts[] = {1, 2, 3, 2};
	fake_sidecar sidecar;
	crowd_agones_counters counters;
	run_rooms(0, 64, names, counts, 4, &sidecar, &counters);
	assert_string_equal(sidecar.last_body[CROWD_AGONES_COUNTER], "{\"count\":\"2\",\"capacity\":\"64\"}");
	assert_string_equal(sidecar.last_body[CROWD_AGONES_LIST],
	                    "{\"capacity\":\"64\",\"values\":[\"default\",\"match-1\"]}");
	/* The first state went out at once; the three after it, given while it was in
	 * flight, are one request: the newest. */
	assert_int_equal(sidecar.requests[CROWD_AGONES_COUNTER], 2);
	assert_int_equal(sidecar.requests[CROWD_AGONES_LIST], 2);
	assert_int_equal(counters.ok[CROWD_AGONES_COUNTER], 2);
	assert_int_equal(counters.failed[CROWD_AGONES_LIST], 0);
}

static void test_rooms_bounds_and_quoting(void **state) {
	(void)state;
	/* More worlds than the capacity says (the sidecar refuses count > capacity), a
	 * capacity past Agones' 1000-value List cap, and a name that needs quoting. */
	static const char *const names[] = {"a\"b", "c\\d"};
	static const uint32_t counts[] = {2};
	fake_sidecar sidecar;
	crowd_agones_counters counters;
	run_rooms(0, 1, names, counts, 1, &sidecar, &counters);
	assert_string_equal(sidecar.last_body[CROWD_AGONES_COUNTER], "{\"count\":\"2\",\"capacity\":\"2\"}");
	assert_string_equal(sidecar.last_body[CROWD_AGONES_LIST],
	                    "{\"capacity\":\"2\",\"values\":[\"a\\\"b\",\"c\\\\d\"]}");
	run_rooms(0, 5000, names, counts, 1, &sidecar, &counters);
	assert_string_equal(sidecar.last_body[CROWD_AGONES_COUNTER], "{\"count\":\"2\",\"capacity\":\"5000\"}");
	assert_non_null(strstr(sidecar.last_body[CROWD_AGONES_LIST], "{\"capacity\":\"1000\","));
}

static void test_rooms_retried_after_errors(void **state) {
	(void)state;
	/* A sidecar refusing the first PATCHes: each is counted and retried with back-off. */
	static const char *const names[] = {"default"};
	static const uint32_t counts[] = {1};
	fake_sidecar sidecar;
	crowd_agones_counters counters;
	run_rooms(3, 8, names, counts, 1, &sidecar, &counters);
	assert_true(counters.failed[CROWD_AGONES_COUNTER] >= 1);
	assert_true(counters.ok[CROWD_AGONES_COUNTER] >= 1);
	assert_string_equal(sidecar.last_body[CROWD_AGONES_LIST], "{\"capacity\":\"8\",\"values\":[\"default\"]}");
}

static void test_config_checked(void **state) {
	(void)state;
	uv_loop_t loop;
	uv_loop_init(&loop);
	crowd_agones_config cfg;
	crowd_agones_default_config(&cfg);
	crowd_agones *client = (crowd_agones *)&cfg;
	snprintf(cfg.host, sizeof cfg.host, "not-an-ip");
	assert_true(crowd_agones_start(&client, &loop, &cfg, NULL) < 0);
	assert_null(client);
	crowd_agones_default_config(&cfg);
	cfg.health_period_ms = 0;
	assert_true(crowd_agones_start(&client, &loop, &cfg, NULL) < 0);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_well_formed),
	    cmocka_unit_test(test_chunked_and_eof_bodies),
	    cmocka_unit_test(test_garbage_replies),
	    cmocka_unit_test(test_truncated_and_non_2xx),
	    cmocka_unit_test(test_oversized_and_bad_json),
	    cmocka_unit_test(test_hanging_sidecar_times_out_and_close_completes),
	    cmocka_unit_test(test_absent_sidecar),
	    cmocka_unit_test(test_config_checked),
	    cmocka_unit_test(test_rooms_latest_state_wins),
	    cmocka_unit_test(test_rooms_bounds_and_quoting),
	    cmocka_unit_test(test_rooms_retried_after_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
