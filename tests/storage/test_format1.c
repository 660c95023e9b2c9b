/* test_format1.c — a data dir of storage format 1 (state hashes by
 * orca_world_state_hash_v1) still verifies, recovers and continues.
 *
 * tests/data/storage_format1 was recorded by crowd-server of format 1 (the
 * demo crowd of 40 at 200 Hz, navigation on, 9 agents spawned and an obstacle
 * added by crowdctl; checkpoints of ticks 0 and 900, segments every 300
 * ticks, to tick 1172). crowd-replay verifies every recorded hash with the
 * older definition; the server recovers the world and records on in format 2
 * (orca_world_state_hash), at 1000 Hz; a replay from tick 0 then crosses from
 * the old segments into the new ones (taking the new settings from the
 * checkpoint the recovery wrote), and every snapshot hash a client saw after
 * the recovery equals the replayed hash of its tick. */
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

#define RECORDED_LAST_TICK 1172u
#define RECORDED_LAST_HASH 0x40fb76d7aea11745ull /* its TickEnd: the older definition */
#define RUN_TICKS 800u                           /* recorded on after the recovery */
#define MAX_TICKS 4096u

static uint64_t seen_hash[MAX_TICKS]; /* by tick, as the client saw it (0: not seen) */
static uint64_t last_tick;

static void on_snapshot(void *user, const crowd_client_snapshot *s) {
	(void)user;
	if (s->tick < MAX_TICKS) seen_hash[s->tick] = s->state_hash;
	if (s->tick > last_tick) last_tick = s->tick;
}

/* `crowd-replay ARGS`: its last tick and that tick's hash, and every tick's
 * hash compared with what the client saw; the exit status. */
static int replay(const char *args, uint64_t *tick, uint64_t *hash, uint64_t *compared) {
	const replay_hashes r = harness_replay_hashes(CROWD_REPLAY_PATH, args, MAX_TICKS);
	*tick = r.last;
	*hash = r.last < MAX_TICKS ? r.hashes[r.last] : 0;
	*compared = 0;
	for (uint64_t t = 0; t < MAX_TICKS && t <= r.last; t++)
		if (seen_hash[t] && r.hashes[t]) {
			if (seen_hash[t] != r.hashes[t])
				fprintf(stderr, "tick %" PRIu64 ": live 0x%016" PRIx64 ", replay 0x%016" PRIx64 "\n", t,
				        seen_hash[t], r.hashes[t]);
			assert_int_equal(seen_hash[t], r.hashes[t]);
			(*compared)++;
		}
	free(r.hashes);
	return r.status;
}

static void test_format1_verifies_recovers_and_continues(void **state) {
	(void)state;
	char dir[] = "/tmp/crowd-format1-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char data[128], cmd[512];
	snprintf(data, sizeof data, "%s/data", dir);
	snprintf(cmd, sizeof cmd, "cp -r %s %s && chmod 700 %s", CROWD_STORAGE_FORMAT1_DIR, data, data);
	assert_int_equal(system(cmd), 0);

	uint64_t tick, hash, compared;
	char args[512];
	snprintf(args, sizeof args, "%s --verify", data);
	assert_int_equal(replay(args, &tick, &hash, &compared), 0);
	assert_int_equal(tick, RECORDED_LAST_TICK);
	assert_int_equal(hash, RECORDED_LAST_HASH);

	const char *server_args[] = {"--data-dir", data, "--fsync", "no", "--checkpoint-every", "300",
	                             "--keep-checkpoints", "100", "--demo", "--demo-agents", "40", "--tick-rate",
	                             "1000", "--log-level", "warn", NULL}; /* the recording's, but 1000 Hz, not 200 */
	server_proc srv;
	assert_true(server_start(&srv, server_args));
	crowd_client_options o = crowd_client_default_options();
	o.callbacks.on_snapshot = on_snapshot;
	crowd_client *c;
	assert_int_equal(crowd_client_connect("127.0.0.1", srv.port, &o, &c), 0);
	assert_true(crowd_client_hello(c, NULL, "format1", true) > 0);
	assert_true(crowd_client_subscribe(c, NULL, 3) > 0);
	uint64_t guard = crowd_client_now_us() + 20ull * HARNESS_GUARD_MS * 1000u;
	while (last_tick < RECORDED_LAST_TICK + RUN_TICKS && crowd_client_now_us() < guard) crowd_client_poll(c, 10);
	crowd_client_close(c, 0);
	assert_true(last_tick >= RECORDED_LAST_TICK + RUN_TICKS);
	assert_true(server_signal_and_wait(&srv, SIGTERM) >= 0);
	server_stop(&srv);

	/* from tick 0: the format-1 checkpoint and segments, then this server's */
	snprintf(args, sizeof args, "%s --verify --hashes", data);
	assert_int_equal(replay(args, &tick, &hash, &compared), 0);
	fprintf(stderr, "replayed to tick %" PRIu64 "; %" PRIu64 " live snapshot hashes compared\n", tick, compared);
	assert_true(tick >= RECORDED_LAST_TICK + RUN_TICKS);
	assert_true(compared > RUN_TICKS / 3 / 2);
	/* from a checkpoint this server wrote (format 2) */
	snprintf(args, sizeof args, "%s --from-tick %u --verify --hashes", data, RECORDED_LAST_TICK + 400u);
	assert_int_equal(replay(args, &tick, &hash, &compared), 0);
	assert_true(tick >= RECORDED_LAST_TICK + RUN_TICKS);
	assert_true(compared > 0);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_format1_verifies_recovers_and_continues),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
