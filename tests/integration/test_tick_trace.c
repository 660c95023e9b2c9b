/* test_tick_trace.c — --tick-trace FILE (what tests/bench/server_load.py reads
 * for each part's percentiles): a header naming the columns, then one line per
 * tick in tick order, whose parts add up to its wall time (they are measured
 * back to back), and whose counters say what the tick did (the snapshots the
 * one subscriber got). The server is stopped first, so the file is complete. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#define TRACE_COLUMNS 15
#define TRACE_PARTS 8 /* columns 2..9 */

static const char HEADER[] = "tick total_us apply_us wait_us navigation_us step_us table_us handoff_us snapshots_us "
                             "events_us commands snapshots snapshot_bytes paths_planned replans";

static void test_one_line_per_tick_parts_add_up(void **state) {
	(void)state;
	char path[64];
	snprintf(path, sizeof path, "/tmp/crowd-tick-trace-%d.txt", (int)getpid());
	const char *args[] = {"--demo", "--demo-agents", "200", "--tick-rate", "50", "--tick-trace", path,
	                      "--log-level", "warn", NULL};
	server_proc server;
	assert_true(server_start(&server, args));
	tc *t = tc_connect(server.port, NULL, false);
	assert_non_null(t);
	assert_true(tc_await(t, crowd_client_subscribe(t->client, NULL, 1))->ok);
	assert_true(tc_await_snapshots(t, 10));
	const uint64_t last_seen = t->last_tick;
	tc_close(t);
	int status = server_signal_and_wait(&server, SIGTERM);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	char *text = harness_read_file(path);
	assert_non_null(text);
	char *save = NULL;
	char *line = strtok_r(text, "\n", &save);
	assert_non_null(line);
	assert_string_equal(line, HEADER);
	uint64_t lines = 0, prev_tick = 0, snapshot_ticks = 0, bytes = 0;
	while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
		uint64_t v[TRACE_COLUMNS];
		int n = 0;
		char *p = line, *end;
		while (n < TRACE_COLUMNS) {
			v[n] = strtoull(p, &end, 10);
			if (end == p) break;
			n++;
			p = end;
		}
		if (n != TRACE_COLUMNS || *p != '\0') fail_msg("line %llu is not %d numbers: '%s'", (unsigned long long)lines + 2,
		                                               TRACE_COLUMNS, line);
		if (lines > 0 && v[0] != prev_tick + 1)
			fail_msg("tick %llu after %llu", (unsigned long long)v[0], (unsigned long long)prev_tick);
		prev_tick = v[0];
		uint64_t parts = 0;
		for (int k = 2; k < 2 + TRACE_PARTS; k++) parts += v[k];
		/* back to back, each rounded to a microsecond on its own */
		if (parts + TRACE_PARTS < v[1] || parts > v[1] + TRACE_PARTS)
			fail_msg("tick %llu: parts sum to %llu us, the tick took %llu", (unsigned long long)v[0],
			         (unsigned long long)parts, (unsigned long long)v[1]);
		assert_true(v[11] <= 1); /* one subscriber */
		snapshot_ticks += v[11];
		if (v[11]) assert_true(v[12] > 0);
		bytes += v[12];
		lines++;
	}
	assert_true(lines >= 10);
	assert_true(prev_tick >= last_seen); /* every tick the client saw is in the file */
	assert_true(snapshot_ticks >= 10);
	assert_true(bytes > 0);
	free(text);
	unlink(path);
	server_stop(&server);
}

static void test_unwritable_trace_refuses_to_start(void **state) {
	(void)state;
	const char *args[] = {"--tick-trace", "/nonexistent-dir/trace.txt", "--listen", "127.0.0.1:0", "--http",
	                      "127.0.0.1:0", "--log-level",
	                      "warn", NULL};
	int status;
	char *out = server_run_to_exit(args, &status);
	free(out);
	assert_true(WIFEXITED(status));
	assert_int_not_equal(WEXITSTATUS(status), 0);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_one_line_per_tick_parts_add_up),
	    cmocka_unit_test(test_unwritable_trace_refuses_to_start),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
