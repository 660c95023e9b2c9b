/* test_spawn_failure.c — a SpawnAgents that fails midway leaves no trace.
 *
 * The engine's world starts with room for 1,024 agents; a client spawns
 * 1,000, then, while --world-alloc-fail-file exists (the engine is out of
 * memory), 100 more: the arrays would have to grow after the 24th, so the
 * request fails there (ERROR_INTERNAL). A failed request is not journaled,
 * so it must leave nothing behind -- no id, generation or slot used: the
 * next spawn gets ids 1001..1005, exactly what the replay of the journal
 * hands out. After more ticks the server is killed (SIGKILL); crowd-replay
 * --verify re-simulates the recording with every recorded hash checked,
 * every snapshot hash the client saw equals the replayed hash of its tick,
 * and a restart recovers to a replayed hash with every acknowledged agent.
 * (Before orca_world_add_agents the failed request's agents were added and
 * removed again, moving their slots' generations: the next spawn got other
 * ids than the replay, and every later hash differed.) */
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#define SEEN 64

static void test_failed_spawn_leaves_no_trace(void **state) {
	(void)state;
	char dir[] = "/tmp/crowd-spawnfail-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char data[128], nomem[128];
	snprintf(data, sizeof data, "%s/data", dir);
	snprintf(nomem, sizeof nomem, "%s/no-memory", dir);
	const char *args[] = {"--data-dir", data, "--tick-rate", "100", "--world-alloc-fail-file", nomem,
	                      "--log-level", "warn", NULL}; /* fsync always: every state a client sees is durable */
	server_proc srv;
	assert_true(server_start(&srv, args));
	tc *t = tc_connect(srv.port, NULL, true);
	assert_non_null(t);
	assert_true(crowd_client_subscribe(t->client, NULL, 1) > 0);

	const tc_answer *a = tc_await(t, tc_spawn_grid(t, 1000, 40, -60, -40, 3, 1));
	assert_non_null(a);
	assert_true(a->ok);
	assert_int_equal(a->ids_count, 1000);
	assert_int_equal(a->ids[999], 1000); /* a fresh world hands out 1, 2, 3, ... */
	assert_true(tc_await_snapshots(t, 5)); /* stepped: the step's own arrays have their size */

	int fd = open(nomem, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	a = tc_await(t, tc_spawn_grid(t, 100, 10, 70, -40, 3, 1));
	assert_non_null(a);
	assert_false(a->ok);
	assert_int_equal(a->code, crowd_v1_ErrorCode_ERROR_INTERNAL);
	assert_int_equal(unlink(nomem), 0);

	a = tc_await(t, tc_spawn_grid(t, 5, 5, 70, -40, 3, 1));
	assert_non_null(a);
	assert_true(a->ok);
	assert_int_equal(a->ids_count, 5);
	for (uint32_t i = 0; i < 5; i++) assert_int_equal(a->ids[i], 1001 + i); /* nothing was used by the failure */

	uint64_t seen_tick[SEEN], seen_hash[SEEN];
	for (int i = 0; i < SEEN; i++) {
		assert_true(tc_await_snapshots(t, 1));
		seen_tick[i] = t->last_tick;
		seen_hash[i] = t->last_state_hash;
	}
	assert_true(server_signal_and_wait(&srv, SIGKILL) >= 0);
	tc_close(t);
	server_stop(&srv);

	/* the recording re-simulated: every recorded hash, and every hash the client saw */
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s %s --verify --hashes", CROWD_REPLAY_PATH, data);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	static uint64_t replayed[1 << 16];
	char line[256];
	uint64_t tk, h, last = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "tick %" SCNu64 " state_hash 0x%" SCNx64, &tk, &h) == 2 && tk < (1 << 16)) {
			replayed[tk] = h;
			if (tk > last) last = tk;
		}
	assert_int_equal(pclose(f), 0);
	/* the last tick a client saw may lack its hash record (its commands are
	 * durable, its TickEnd went with the next batch): recovery runs it again */
	if (last + 1 < seen_tick[SEEN - 1])
		fprintf(stderr, "replayed to tick %" PRIu64 ", the client saw tick %" PRIu64 "\n", last, seen_tick[SEEN - 1]);
	assert_true(last + 1 >= seen_tick[SEEN - 1]);
	int compared = 0;
	for (int i = 0; i < SEEN; i++) {
		if (seen_tick[i] > last) continue;
		if (replayed[seen_tick[i]] != seen_hash[i])
			fprintf(stderr, "tick %" PRIu64 ": live 0x%016" PRIx64 ", replay 0x%016" PRIx64 "\n", seen_tick[i],
			        seen_hash[i], replayed[seen_tick[i]]);
		assert_int_equal(replayed[seen_tick[i]], seen_hash[i]);
		compared++;
	}
	assert_true(compared >= SEEN - 1);

	/* and a restart recovers there, with the 1,005 acknowledged agents */
	const char *again[] = {"--data-dir", data, "--tick-rate", "100", "--log-level", "warn", NULL};
	assert_true(server_start(&srv, again));
	char *out = harness_read_file(srv.out_path);
	const char *p = out ? strstr(out, "recovered tick ") : NULL;
	uint32_t agents = 0;
	assert_non_null(p);
	assert_int_equal(sscanf(p, "recovered tick %" SCNu64 " agents %u state_hash 0x%" SCNx64, &tk, &agents, &h), 3);
	assert_true(tk <= last);
	assert_int_equal(replayed[tk], h);
	assert_int_equal(agents, 1005);
	free(out);
	assert_true(server_signal_and_wait(&srv, SIGTERM) >= 0);
	server_stop(&srv);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_failed_spawn_leaves_no_trace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
