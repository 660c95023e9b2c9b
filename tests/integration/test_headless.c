/* test_headless.c — the headless fixed-length demo run (--demo --headless-ticks
 * N: no network, no real-time pacing) prints the same final state hash for 1
 * and 4 workers, and a different one for a different tick count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "harness.h"

/* Run the demo headless; returns the state hash printed, asserting a clean exit
 * and the tick count on the result line. */
static uint64_t headless_hash(const char *ticks, const char *workers) {
	const char *args[] = {"--demo",      "--demo-agents", "400", "--headless-ticks", ticks, "--workers", workers,
	                      "--log-level", "warn",          NULL};
	int status;
	char *out = server_run_to_exit(args, &status);
	assert_non_null(out);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	const char *line = strstr(out, "state_hash 0x");
	assert_non_null(line);
	uint64_t hash = strtoull(line + strlen("state_hash 0x"), NULL, 16);
	char expect[64];
	snprintf(expect, sizeof expect, "ticks %s agents 400 workers %s ", ticks, workers);
	if (!strstr(out, expect)) fail_msg("no '%s' in: %s", expect, out);
	free(out);
	return hash;
}

static void test_same_hash_for_1_and_4_workers(void **state) {
	(void)state;
	uint64_t one = headless_hash("300", "1");
	uint64_t four = headless_hash("300", "4");
	assert_int_not_equal(one, 0);
	assert_int_equal(one, four);
	/* The hash does depend on the run: one tick fewer changes it. */
	assert_int_not_equal(headless_hash("299", "4"), one);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_hash_for_1_and_4_workers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
