/* test_session.c — the happy path against the real crowd-server over loopback:
 * spawn is answered by an Ack listing the new ids, the agents show up in
 * snapshots as ours, agents given targets all arrive within a bounded number
 * of ticks (counted from snapshot tick numbers, never wall-clock), and a
 * client's agents go or stay when it disconnects, as its Hello asked. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

#define TICK_RATE 60

static server_proc server;

static int start_server(void **state) {
	(void)state;
	const char *args[] = {"--tick-rate", "60", "--log-level", "warn", NULL};
	return server_start(&server, args) ? 0 : -1;
}

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

static void test_spawn_ack_lists_new_ids(void **state) {
	(void)state;
	tc *t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	const uint32_t n = 10;
	const tc_answer *a = tc_await(t, tc_spawn_grid(t, n, 5, -200.0f, 100.0f, 4.0f, 0));
	assert_non_null(a);
	assert_true(a->ok);
	assert_int_equal(a->ids_count, n);
	uint32_t ids[10];
	memcpy(ids, a->ids, sizeof ids);
	for (uint32_t i = 0; i < n; i++) {
		assert_int_not_equal(ids[i], 0);
		for (uint32_t j = 0; j < i; j++) assert_int_not_equal(ids[i], ids[j]);
	}

	/* The snapshot shows them, ours, where we put them. */
	assert_true(tc_await(t, crowd_client_subscribe(t->client, NULL, 1))->ok);
	assert_true(tc_await_snapshots(t, 2));
	const crowd_client_snapshot *s = crowd_client_latest_snapshot(t->client);
	assert_non_null(s);
	assert_true(s->world_agent_count >= n);
	for (uint32_t i = 0; i < n; i++) {
		int k = find_index(s, ids[i]);
		assert_true(k >= 0);
		assert_int_equal(s->owner[k], t->welcome.client_id);
		assert_float_equal(s->x[k], -200.0f + (float)(i % 5) * 4.0f, 0.05f);
		assert_float_equal(s->y[k], 100.0f + (float)(i / 5) * 4.0f, 0.05f);
		assert_true(s->radius[k] > 0.0f);
	}
	assert_int_equal(t->missed_snapshots, 0);

	/* A second spawn gets other ids, and a ping is answered with the tick. */
	a = tc_await(t, tc_spawn_grid(t, 1, 1, -200.0f, 140.0f, 1.0f, 0));
	assert_true(a && a->ok && a->ids_count == 1);
	for (uint32_t i = 0; i < n; i++) assert_int_not_equal(a->ids[0], ids[i]);
	uint32_t pongs = t->pongs;
	uint64_t seen_tick = t->last_tick; /* a snapshot of this tick was sent before the ping was read */
	assert_true(crowd_client_ping(t->client, 0) > 0);
	while (t->pongs == pongs && !t->closed) tc_pump(10);
	assert_int_equal(t->pongs, pongs + 1);
	assert_true(t->last_pong_tick >= seen_tick);
	tc_close(t);
}

typedef struct arrival {
	tc *t;
	const uint32_t *ids;
	const float *tx, *ty;
	uint32_t n;
	uint64_t give_up_tick;
	bool all_arrived;
	uint64_t arrival_tick;
	float max_overshoot;
} arrival;

static bool arrived_or_late(void *ctx) {
	arrival *a = ctx;
	const crowd_client_snapshot *s = crowd_client_latest_snapshot(a->t->client);
	if (!s || a->t->closed) return a->t->closed;
	uint32_t done = 0;
	for (uint32_t i = 0; i < a->n; i++) {
		int k = find_index(s, a->ids[i]);
		if (k < 0) continue;
		float over = s->x[k] - a->tx[i]; /* they walk in +x: past the target is overshoot */
		if (over > a->max_overshoot) a->max_overshoot = over;
		if (hypotf(s->x[k] - a->tx[i], s->y[k] - a->ty[i]) < 0.05f) done++;
	}
	if (done == a->n) {
		a->all_arrived = true;
		a->arrival_tick = s->tick;
		return true;
	}
	return s->tick >= a->give_up_tick;
}

static void test_targets_every_agent_arrives(void **state) {
	(void)state;
	tc *t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	enum { N = 8 };
	const float speed = 6.0f, distance = 12.0f, x0 = 100.0f, y0 = -100.0f, spacing = 4.0f;
	const tc_answer *a = tc_await(t, tc_spawn_grid(t, N, 1, x0, y0, spacing, speed));
	assert_true(a && a->ok && a->ids_count == N);
	uint32_t ids[N];
	float tx[N], ty[N];
	memcpy(ids, a->ids, sizeof ids);
	for (int i = 0; i < N; i++) {
		tx[i] = x0 + distance;
		ty[i] = y0 + (float)i * spacing;
	}
	assert_true(tc_await(t, crowd_client_subscribe(t->client, NULL, 1))->ok);
	assert_true(tc_await_snapshots(t, 1));

	a = tc_await(t, crowd_client_set_targets(t->client, ids, N, tx, ty, N));
	assert_true(a && a->ok);
	uint64_t start_tick = t->last_tick;
	/* Straight walk: distance / speed seconds at TICK_RATE, plus slack for
	 * acceleration and arrival; twice that is a generous bound. */
	uint64_t nominal = (uint64_t)ceilf(distance / speed * TICK_RATE);
	uint64_t bound = 2 * nominal + 30;
	arrival ar = {.t = t, .ids = ids, .tx = tx, .ty = ty, .n = N, .give_up_tick = start_tick + bound};
	assert_true(tc_pump_until(arrived_or_late, &ar, HARNESS_GUARD_MS));
	assert_true(ar.all_arrived);
	assert_true(ar.arrival_tick - start_tick <= bound);
	assert_true(ar.arrival_tick - start_tick >= nominal / 2); /* it walked; it did not teleport */
	assert_true(ar.max_overshoot < 0.05f);

	/* Once there they stay there. */
	assert_true(tc_await_snapshots(t, 10));
	ar.give_up_tick = t->last_tick;
	ar.all_arrived = false;
	assert_true(arrived_or_late(&ar) && ar.all_arrived);
	assert_int_equal(t->missed_snapshots, 0);
	tc_close(t);
}

typedef struct presence {
	tc *watcher;
	uint32_t id;
	bool want_present;
	uint64_t give_up_tick;
	bool reached;
} presence;

static bool presence_reached(void *ctx) {
	presence *p = ctx;
	const crowd_client_snapshot *s = crowd_client_latest_snapshot(p->watcher->client);
	if (!s) return p->watcher->closed;
	p->reached = (find_index(s, p->id) >= 0) == p->want_present;
	return p->reached || s->tick >= p->give_up_tick || p->watcher->closed;
}

static void test_agents_stay_or_go_on_disconnect_as_asked(void **state) {
	(void)state;
	tc *watcher = tc_connect(server.port, NULL, false);
	tc *leaver = tc_connect(server.port, NULL, false);
	tc *keeper = tc_connect(server.port, NULL, true);
	assert_non_null(watcher);
	assert_non_null(leaver);
	assert_non_null(keeper);
	const tc_answer *a = tc_await(leaver, tc_spawn_grid(leaver, 1, 1, 300.0f, 300.0f, 1.0f, 0));
	assert_true(a && a->ok && a->ids_count == 1);
	uint32_t gone = a->ids[0];
	a = tc_await(keeper, tc_spawn_grid(keeper, 1, 1, 310.0f, 300.0f, 1.0f, 0));
	assert_true(a && a->ok && a->ids_count == 1);
	uint32_t kept = a->ids[0];
	uint32_t keeper_id = keeper->welcome.client_id;
	assert_true(tc_await(watcher, crowd_client_subscribe(watcher->client, NULL, 1))->ok);
	assert_true(tc_await_snapshots(watcher, 1));
	const crowd_client_snapshot *s = crowd_client_latest_snapshot(watcher->client);
	assert_true(find_index(s, gone) >= 0 && find_index(s, kept) >= 0);
	assert_int_equal(s->owner[find_index(s, kept)], keeper_id);

	tc_close(leaver);
	tc_close(keeper);
	/* Within 60 ticks: the leaver's agent is gone ... */
	presence p = {watcher, gone, false, watcher->last_tick + 60, false};
	assert_true(tc_pump_until(presence_reached, &p, HARNESS_GUARD_MS));
	assert_true(p.reached);
	/* ... and the keeper's is still there. */
	assert_true(tc_await_snapshots(watcher, 2));
	s = crowd_client_latest_snapshot(watcher->client);
	assert_true(find_index(s, kept) >= 0);
	assert_true(find_index(s, gone) < 0);
	assert_true(tc_await(watcher, crowd_client_remove_agents(watcher->client, &kept, 1))->ok);
	tc_close(watcher);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_spawn_ack_lists_new_ids),
	    cmocka_unit_test(test_targets_every_agent_arrives),
	    cmocka_unit_test(test_agents_stay_or_go_on_disconnect_as_asked),
	};
	return cmocka_run_group_tests(tests, start_server, stop_server);
}
