/* test_headless.c — the headless fixed-length demo run (--demo --headless-ticks
 * N: no network, no real-time pacing) prints the same final state hash for 1
 * and 4 workers, and a different one for a different tick count. It runs with
 * navigation when navigation is on (the default), as the live tick does: the
 * mesh over the map's walls, its update before every step. The demo's agents
 * walk from room to room through navigation, so without it (they walk straight
 * at the walls) the world is another one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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
static uint64_t headless_run(const char *ticks, const char *workers, bool navigation, unsigned *polygons) {
	const char *args[] = {"--demo",      "--demo-agents", "400",  "--headless-ticks", ticks, "--workers", workers,
	                      "--log-level", "warn",          navigation ? NULL : "--navigation=false", NULL};
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
	const char *nav = strstr(out, navigation ? " navigation on polygons " : " navigation off polygons ");
	if (!nav) fail_msg("navigation %s not said in: %s", navigation ? "on" : "off", out);
	*polygons = (unsigned)strtoul(strstr(nav, "polygons ") + strlen("polygons "), NULL, 10);
	free(out);
	return hash;
}

static uint64_t headless_hash(const char *ticks, const char *workers) {
	unsigned polygons;
	uint64_t hash = headless_run(ticks, workers, true, &polygons);
	assert_true(polygons > 0); /* the mesh around the map's walls */
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
	/* without navigation: no mesh, and another world (the demo walks straight) */
	unsigned polygons = 1;
	assert_int_not_equal(headless_run("300", "1", false, &polygons), one);
	assert_int_equal(polygons, 0);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_hash_for_1_and_4_workers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
