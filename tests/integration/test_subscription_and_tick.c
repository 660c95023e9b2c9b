/* test_subscription_and_tick.c — against the real crowd-server: a subscription
 * with an area and a divisor gets a snapshot every `divisor` ticks holding only
 * the agents inside the area (one that walks out leaves the view); and a tick
 * that cannot keep up with its period is counted as an overrun while the
 * schedule skips ahead (every tick still gets its snapshot, pings answered). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

static server_proc server;

static int stop_server(void **state) {
	(void)state;
	server_stop(&server);
	return 0;
}

static int find_index(const crowd_client_snapshot *s, uint32_t id) {
	for (uint32_t i = 0; i < s->count; i++)
		if (s->id[i] == id) return (int)i;
	return -1;
}

/* Watches an area subscriber until the walker has entered and then left its view. */
typedef struct area_watch {
	tc *t;
	uint32_t still, walker, outside;
	uint64_t give_up_tick, seen_snapshots;
	bool walker_seen, walker_left, outside_seen, still_missing;
} area_watch;

static bool walker_left_or_late(void *ctx) {
	area_watch *w = ctx;
	const crowd_client_snapshot *s = crowd_client_latest_snapshot(w->t->client);
	if (!s || w->t->snapshots == w->seen_snapshots) return w->t->closed;
	w->seen_snapshots = w->t->snapshots;
	if (find_index(s, w->outside) >= 0) w->outside_seen = true;
	if (find_index(s, w->still) < 0) w->still_missing = true;
	if (find_index(s, w->walker) >= 0)
		w->walker_seen = true;
	else if (w->walker_seen)
		w->walker_left = true;
	return w->walker_left || s->tick >= w->give_up_tick || w->t->closed;
}

static void test_area_and_divisor_subscription(void **state) {
	(void)state;
	const char *args[] = {"--tick-rate", "60", "--log-level", "warn", NULL};
	assert_true(server_start(&server, args));
	tc *owner = tc_connect(server.port, NULL, false);
	tc *viewer = tc_connect(server.port, NULL, false);
	assert_non_null(owner);
	assert_non_null(viewer);

	/* One agent standing inside the area, one standing outside, one walking out. */
	crowd_v1_AgentSpec specs[3];
	const float px[3] = {0.0f, 100.0f, 5.0f}, py[3] = {0.0f, 100.0f, 0.0f};
	for (int i = 0; i < 3; i++) {
		specs[i] = (crowd_v1_AgentSpec)crowd_v1_AgentSpec_init_zero;
		specs[i].has_position = true;
		specs[i].position.x = px[i];
		specs[i].position.y = py[i];
	}
	const tc_answer *a = tc_await(owner, crowd_client_spawn(owner->client, specs, 3));
	assert_true(a && a->ok && a->ids_count == 3);
	area_watch w = {.t = viewer, .still = a->ids[0], .outside = a->ids[1], .walker = a->ids[2]};

	const crowd_v1_Rect area = {-10.0f, -10.0f, 10.0f, 10.0f};
	viewer->divisor = 3;
	assert_true(tc_await(viewer, crowd_client_subscribe(viewer->client, &area, 3))->ok);
	assert_true(tc_await_snapshots(viewer, 2));
	const crowd_client_snapshot *s = crowd_client_latest_snapshot(viewer->client);
	assert_int_equal(s->world_agent_count, 3);
	assert_int_equal(s->count, 2);
	assert_true(find_index(s, w.still) >= 0 && find_index(s, w.walker) >= 0);

	/* Walk it to x = 40 at the default speed (1.5/s: 5 units to the edge in ~3.3 s = 200 ticks). */
	const float tx = 40.0f, ty = 0.0f;
	assert_true(tc_await(owner, crowd_client_set_targets(owner->client, &w.walker, 1, &tx, &ty, 1))->ok);
	w.give_up_tick = viewer->last_tick + 600;
	assert_true(tc_pump_until(walker_left_or_late, &w, HARNESS_GUARD_MS));
	assert_true(w.walker_seen);
	assert_true(w.walker_left);
	assert_false(w.outside_seen);
	assert_false(w.still_missing);
	s = crowd_client_latest_snapshot(viewer->client);
	assert_int_equal(s->count, 1);
	assert_int_equal(s->world_agent_count, 3);

	/* One snapshot every third tick, none missing, none extra. */
	assert_true(viewer->snapshots > 10);
	assert_int_equal(viewer->missed_snapshots, 0);
	assert_int_equal(viewer->last_tick - viewer->first_tick, 3 * (viewer->snapshots - 1));
	tc_close(viewer);
	tc_close(owner);
}

static void test_overrun_is_counted_and_schedule_skips_ahead(void **state) {
	(void)state;
	/* 1000 Hz with 5,000 agents: no step fits in 1 ms, so every tick overruns. */
	const char *args[] = {"--tick-rate", "1000", "--demo", "--demo-agents", "5000", "--log-level", "error", NULL};
	assert_true(server_start(&server, args));
	tc *t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	assert_true(tc_await(t, crowd_client_subscribe(t->client, NULL, 1))->ok);
	assert_true(tc_await_snapshots(t, 20));

	char *m = server_metrics(&server);
	assert_non_null(m);
	double overruns = metric_value(m, "crowd_ticks_overrun_total");
	double skipped = metric_value(m, "crowd_tick_periods_skipped_total");
	free(m);
	assert_true(overruns >= 1);
	assert_true(skipped >= 1);

	/* Skipping periods never skips a tick: each tick still sends its snapshot,
	 * and the loop still answers. */
	assert_int_equal(t->missed_snapshots, 0);
	assert_int_equal(t->snapshots, t->last_tick - t->first_tick + 1);
	uint32_t pongs = t->pongs;
	assert_true(crowd_client_ping(t->client, 0) > 0);
	while (t->pongs == pongs && !t->closed) tc_pump(10);
	assert_int_equal(t->pongs, pongs + 1);
	tc_close(t);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_area_and_divisor_subscription, stop_server),
	    cmocka_unit_test_teardown(test_overrun_is_counted_and_schedule_skips_ahead, stop_server),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
