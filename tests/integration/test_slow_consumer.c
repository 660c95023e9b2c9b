/* test_slow_consumer.c — clients that subscribe and stop reading.
 *  - hard limit: a client that never reads is cut off once its queued output
 *    passes the hard limit, while a second client keeps receiving a snapshot
 *    every tick (the soft-limit timer is set to an hour so only the hard limit
 *    can close it);
 *  - soft limit: a client that stops reading is cut --output-soft-seconds
 *    after it falls behind, counted by the server's own ticks (what the kernel
 *    holds unsent counts towards the limit, so several MiB of socket buffer do
 *    not delay the timer), and after it resumes reading it gets the Error
 *    SLOW_CONSUMER, last, with no snapshot after it;
 *  - a cut client that never reads again is given up after --flush-timeout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

#define AGENTS 2500

static server_proc server;

static int start_hard_limit_server(void **state) {
	(void)state;
	/* Every snapshot a keyframe: the slow client's snapshots stay ~12 bytes per
	 * agent whether or not the agents move, far above the 4 KiB limit. */
	const char *args[] = {"--tick-rate",
	                      "60",
	                      "--keyframe-interval",
	                      "1",
	                      "--output-soft-limit",
	                      "4k",
	                      "--output-hard-limit",
	                      "4k",
	                      "--output-soft-seconds",
	                      "3600",
	                      "--flush-timeout", /* the cut client reads its Error only after the watcher's window */
	                      "600",
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

typedef struct drain {
	tc *slow;
	uint64_t tick_limit;
	bool alive_past_limit;
} drain;

static bool closed_or_alive_past(void *ctx) {
	drain *d = ctx;
	if (d->slow->snapshots && d->slow->last_tick > d->tick_limit) d->alive_past_limit = true;
	return d->slow->closed || d->alive_past_limit;
}

typedef struct metric_wait {
	const char *sample;
	double value;
} metric_wait;

static bool metric_reached(void *ctx) {
	metric_wait *w = ctx;
	char *m = server_metrics(&server);
	double v = m ? metric_value(m, w->sample) : -1.0;
	free(m);
	return v >= w->value;
}

/* The server counts a disconnect once the socket is closed, which is after the
 * kernel has sent the last bytes: the client may see them first. Wait for it. */
static bool await_metric(const char *sample, double value) {
	metric_wait w = {sample, value};
	return tc_pump_until(metric_reached, &w, HARNESS_GUARD_MS);
}

/* The most the kernel may hold for a client that never reads: the server's
 * send buffer can autotune up to tcp_wmem's maximum (4 MiB by default). */
static uint64_t kernel_buffer_bound(void) {
	unsigned long lo = 0, def = 0, max = 4u << 20;
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r");
	if (f) {
		if (fscanf(f, "%lu %lu %lu", &lo, &def, &max) != 3) max = 4u << 20;
		fclose(f);
	}
	return (uint64_t)max + (1u << 20);
}

static void test_client_that_never_reads_is_cut_off(void **state) {
	(void)state;
	tc *owner = tc_connect(server.port, NULL, false);
	assert_non_null(owner);
	const tc_answer *a = tc_await(owner, tc_spawn_grid(owner, AGENTS, 50, 0.0f, 0.0f, 4.0f, 0));
	assert_true(a && a->ok && a->ids_count == AGENTS);

	/* How big is a whole-world snapshot (every one is a keyframe)? */
	assert_true(tc_await(owner, crowd_client_subscribe(owner->client, NULL, 1))->ok);
	assert_true(tc_await_snapshots(owner, 1));
	size_t snapshot_bytes = crowd_client_latest_snapshot(owner->client)->frame_bytes;
	assert_true(snapshot_bytes > 4096);
	assert_true(tc_await(owner, crowd_client_unsubscribe(owner->client))->ok);
	/* Ticks until the kernel buffers are surely full and one more snapshot queues. */
	uint64_t window_ticks = kernel_buffer_bound() / snapshot_bytes + 60;

	/* The watcher looks at 4 agents only: its snapshots are tiny. */
	tc *watcher = tc_connect(server.port, NULL, false);
	assert_non_null(watcher);
	crowd_v1_Rect corner = {-1.0f, -1.0f, 5.0f, 5.0f};
	assert_true(tc_await(watcher, crowd_client_subscribe(watcher->client, &corner, 1))->ok);
	assert_true(tc_await_snapshots(watcher, 2));
	assert_int_equal(crowd_client_latest_snapshot(watcher->client)->count, 4);
	uint64_t start_tick = watcher->last_tick;

	/* The slow client: a tiny receive buffer, Hello and Subscribe, then never read. */
	tc *slow = tc_open(server.port, 4096, false);
	assert_non_null(slow);
	assert_true(crowd_client_hello(slow->client, NULL, "never-reads", false) > 0);
	assert_true(crowd_client_subscribe(slow->client, NULL, 1) > 0);
	assert_int_equal(crowd_client_flush(slow->client, HARNESS_GUARD_MS), 0);

	/* window_ticks of the watcher's snapshots, every one of them. */
	assert_true(tc_await_tick(watcher, start_tick + window_ticks));
	assert_int_equal(watcher->missed_snapshots, 0);
	assert_int_equal(watcher->snapshots, watcher->last_tick - watcher->first_tick + 1);

	/* Now read the slow client: it must end in a close, before any snapshot
	 * newer than what the watcher has already seen. */
	drain d = {slow, watcher->last_tick, false};
	slow->pumped = true;
	assert_true(tc_pump_until(closed_or_alive_past, &d, HARNESS_GUARD_MS));
	assert_false(d.alive_past_limit);
	assert_true(slow->closed);
	assert_true(slow->welcomed);
	print_message(
	    "slow client: %llu snapshots (ticks %llu..%llu), %llu bytes before the cut; watcher at tick %llu\n",
	    (unsigned long long)slow->snapshots, (unsigned long long)slow->first_tick,
	    (unsigned long long)slow->last_tick,
	    (unsigned long long)crowd_client_get_counters(slow->client).bytes_received,
	    (unsigned long long)watcher->last_tick);
	/* It is told why: its queued output was dropped and the Error followed what
	 * the kernel already held. */
	assert_int_equal(slow->unasked_errors, 1);
	assert_int_equal(slow->last_unasked_code, crowd_v1_ErrorCode_ERROR_SLOW_CONSUMER);

	/* The server says why: the hard limit, not the (hour-long) soft timer. */
	assert_true(await_metric("crowd_disconnects_total{reason=\"output_hard_limit\"}", 1.0));
	char *metrics = server_metrics(&server);
	assert_non_null(metrics);
	assert_true(metric_value(metrics, "crowd_disconnects_total{reason=\"output_hard_limit\"}") == 1.0);
	assert_true(metric_value(metrics, "crowd_disconnects_total{reason=\"slow_consumer\"}") == 0.0);
	free(metrics);

	/* The watcher never noticed. */
	assert_true(tc_await_snapshots(watcher, 10));
	assert_int_equal(watcher->missed_snapshots, 0);
	assert_false(watcher->closed);
	tc_close(slow);
	tc_close(watcher);
	tc_close(owner);
}

/* ---- the soft limit, on time */

#define SOFT_RATE 30
#define SOFT_SECONDS 1
#define SOFT_LIMIT (64 * 1024)

static int start_soft_limit_server(void **state) {
	(void)state;
	/* The hard limit far away, so only the soft-limit timer can cut; a long
	 * flush time, so the Error waits for the client to read again. */
	const char *args[] = {"--tick-rate",
	                      "30",
	                      "--keyframe-interval",
	                      "1",
	                      "--output-soft-limit",
	                      "64k",
	                      "--output-hard-limit",
	                      "1g",
	                      "--output-soft-seconds",
	                      "1",
	                      "--flush-timeout",
	                      "600",
	                      "--log-level",
	                      "warn",
	                      NULL};
	return server_start(&server, args) ? 0 : -1;
}

/* A client read by hand: crowd_client_poll only while the test wants it to read. */
typedef struct reader {
	crowd_client *client;
	bool welcomed, closed;
	uint64_t snapshots, last_tick;
	uint32_t errors;
	int code;
	char message[160];
	uint64_t snapshots_after_error;
} reader;

static void r_welcome(void *user, const crowd_v1_Welcome *w) {
	(void)w;
	((reader *)user)->welcomed = true;
}

static void r_snapshot(void *user, const crowd_client_snapshot *snap) {
	reader *r = user;
	r->snapshots++;
	r->last_tick = snap->tick;
	if (r->errors) r->snapshots_after_error++;
}

static void r_error(void *user, const crowd_v1_Error *e) {
	reader *r = user;
	r->errors++;
	r->code = (int)e->code;
	snprintf(r->message, sizeof r->message, "%s", e->message);
}

static void r_closed(void *user, int status) {
	(void)status;
	((reader *)user)->closed = true;
}

/* Poll until done(r) or the guard passes. */
static bool reader_until(reader *r, bool (*done)(const reader *)) {
	uint64_t guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u;
	while (!done(r) && !r->closed && crowd_client_now_us() < guard) crowd_client_poll(r->client, 50);
	return done(r);
}

static bool has_snapshot(const reader *r) {
	return r->welcomed && r->snapshots > 0;
}

static bool is_closed(const reader *r) {
	return r->closed;
}

typedef struct cut_watch {
	tc *watcher;
	uint64_t seen;
} cut_watch;

/* One step of the wait for the cut: the watcher's next snapshot, then the
 * server's count of SLOW_CONSUMER errors (the event waited for). */
static bool cut_counted(void *ctx) {
	cut_watch *w = ctx;
	if (w->watcher->snapshots == w->seen) return false;
	w->seen = w->watcher->snapshots;
	char *m = server_metrics(&server);
	double n = m ? metric_value(m, "crowd_errors_total{code=\"SLOW_CONSUMER\"}") : -1.0;
	free(m);
	return n >= 1.0;
}

static void test_soft_limit_cuts_on_time_and_error_comes_first(void **state) {
	(void)state;
	tc *owner = tc_connect(server.port, NULL, false);
	assert_non_null(owner);
	const tc_answer *a = tc_await(owner, tc_spawn_grid(owner, AGENTS, 50, 0.0f, 0.0f, 4.0f, 0));
	assert_true(a && a->ok && a->ids_count == AGENTS);
	assert_true(tc_await(owner, crowd_client_subscribe(owner->client, NULL, 1))->ok);
	assert_true(tc_await_snapshots(owner, 1));
	size_t snapshot_bytes = crowd_client_latest_snapshot(owner->client)->frame_bytes;
	assert_true(snapshot_bytes > 8192);
	/* From here on the owner watches 4 agents only: tiny snapshots, one a tick. */
	crowd_v1_Rect corner = {-1.0f, -1.0f, 5.0f, 5.0f};
	assert_true(tc_await(owner, crowd_client_subscribe(owner->client, &corner, 1))->ok);

	/* The slow client: a tiny receive buffer; it reads until its first
	 * snapshot (tick t0), then stops reading. */
	reader r = {0};
	crowd_client_options o = crowd_client_default_options();
	o.recv_buffer_bytes = 4096;
	o.user = &r;
	o.callbacks.on_welcome = r_welcome;
	o.callbacks.on_snapshot = r_snapshot;
	o.callbacks.on_error = r_error;
	o.callbacks.on_closed = r_closed;
	assert_int_equal(crowd_client_connect("127.0.0.1", server.port, &o, &r.client), CROWD_CLIENT_OK);
	assert_true(crowd_client_hello(r.client, NULL, "stops-reading", false) > 0);
	assert_true(crowd_client_subscribe(r.client, NULL, 1) > 0);
	assert_true(reader_until(&r, has_snapshot));
	uint64_t t0 = r.last_tick;

	/* Wait (by the watcher's ticks) until the server has cut it. */
	cut_watch w = {owner, owner->snapshots};
	assert_true(tc_pump_until(cut_counted, &w, HARNESS_GUARD_MS * 2));

	/* Read again: whatever the kernel still held, then the Error, then the close. */
	assert_true(reader_until(&r, is_closed));
	print_message("slow client: snapshots up to tick %llu (stopped reading at %llu, %zu bytes each); \"%s\"\n",
	              (unsigned long long)r.last_tick, (unsigned long long)t0, snapshot_bytes, r.message);
	assert_int_equal(r.errors, 1);
	assert_int_equal(r.code, crowd_v1_ErrorCode_ERROR_SLOW_CONSUMER);
	assert_int_equal(r.snapshots_after_error, 0);
	unsigned long long since = 0, cut = 0;
	const char *ticks = strstr(r.message, "since tick ");
	assert_non_null(ticks);
	assert_int_equal(sscanf(ticks, "since tick %llu, cut at tick %llu", &since, &cut), 2);
	/* The server's clock: ticks never run faster than the rate (a late tick is
	 * skipped, never caught up), and the timer is checked once a tick. */
	assert_true(cut > since);
	assert_true(cut - since <= SOFT_RATE * SOFT_SECONDS + 1);
	/* It fell behind at t0: the soft limit (what waits in the server and what
	 * the kernel holds unsent) fills within a few snapshots, not after the
	 * several MiB a socket's send buffer can take. */
	uint64_t fill_ticks = (SOFT_LIMIT + 256 * 1024) / snapshot_bytes + 1;
	assert_true(since >= t0);
	if (since - t0 > fill_ticks)
		fail_msg("over the soft limit at tick %llu, %llu ticks after it stopped reading (at most %llu)", since,
		         (unsigned long long)(since - t0), (unsigned long long)fill_ticks);
	assert_true(cut - t0 <= SOFT_RATE * SOFT_SECONDS + 1 + fill_ticks);

	assert_true(await_metric("crowd_disconnects_total{reason=\"slow_consumer\"}", 1.0));
	char *metrics = server_metrics(&server);
	assert_non_null(metrics);
	assert_true(metric_value(metrics, "crowd_disconnects_total{reason=\"slow_consumer\"}") == 1.0);
	assert_true(metric_value(metrics, "crowd_disconnects_total{reason=\"output_hard_limit\"}") == 0.0);
	free(metrics);
	crowd_client_close(r.client, 0);
	tc_close(owner);
}

/* ---- a cut client that never reads again: the flush gives up */

static int start_flush_timeout_server(void **state) {
	(void)state;
	const char *args[] = {"--tick-rate",
	                      "30",
	                      "--keyframe-interval",
	                      "1",
	                      "--output-soft-limit",
	                      "64k",
	                      "--output-hard-limit",
	                      "1g",
	                      "--output-soft-seconds",
	                      "0.2",
	                      "--flush-timeout",
	                      "1",
	                      "--log-level",
	                      "error",
	                      NULL};
	return server_start(&server, args) ? 0 : -1;
}

/* The Error waits behind a closed window; the server does not wait for it
 * longer than --flush-timeout: the connection is given up (reset) and counted,
 * though the client never reads again. */
static void test_flush_gives_up_at_the_flush_timeout(void **state) {
	(void)state;
	tc *owner = tc_connect(server.port, NULL, false);
	assert_non_null(owner);
	const tc_answer *a = tc_await(owner, tc_spawn_grid(owner, AGENTS, 50, 0.0f, 0.0f, 4.0f, 0));
	assert_true(a && a->ok && a->ids_count == AGENTS);
	tc *slow = tc_open(server.port, 4096, false);
	assert_non_null(slow);
	assert_true(crowd_client_hello(slow->client, NULL, "never-again", false) > 0);
	assert_true(crowd_client_subscribe(slow->client, NULL, 1) > 0);
	assert_int_equal(crowd_client_flush(slow->client, HARNESS_GUARD_MS), 0);
	assert_true(await_metric("crowd_errors_total{code=\"SLOW_CONSUMER\"}", 1.0));
	assert_true(await_metric("crowd_disconnects_total{reason=\"slow_consumer\"}", 1.0));
	assert_false(slow->closed); /* it never read: it has not seen anything yet */
	tc_close(slow);
	tc_close(owner);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_client_that_never_reads_is_cut_off, start_hard_limit_server,
	                                    stop_server),
	    cmocka_unit_test_setup_teardown(test_soft_limit_cuts_on_time_and_error_comes_first, start_soft_limit_server,
	                                    stop_server),
	    cmocka_unit_test_setup_teardown(test_flush_gives_up_at_the_flush_timeout, start_flush_timeout_server,
	                                    stop_server),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
