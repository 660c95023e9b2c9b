/* test_slow_consumer.c — a client that subscribes and never reads is cut off
 * once its queued output passes the hard limit, while a second client keeps
 * receiving a snapshot every tick. Small output limits come from flags; the
 * soft-limit timer is set to an hour so only the hard limit can close it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "harness.h"

#define AGENTS 2500

static server_proc server;

static int start_server(void **state) {
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

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_client_that_never_reads_is_cut_off),
	};
	return cmocka_run_group_tests(tests, start_server, stop_server);
}
