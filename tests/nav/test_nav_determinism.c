/* test_nav_determinism.c — navigation on: the same run with 1, 2, 3 and 4
 * workers hashes identically after every step (the engine's step and the
 * navigation update's per-agent part both run on the world's workers), with
 * an obstacle added and one removed on the way (tiles rebuilt one per
 * update) and agents retargeted: the serpentine scenario (tens of agents),
 * and a crowd of 1,000 among 150 blocks (nav_crowd_run.h: enough agents for
 * the update's parallel part to be split among workers). The navigation's
 * own observable output — each agent's engine target — is part of the hash
 * through the velocities; its events are hashed with their points. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "nav_crowd_run.h"
#include "nav_determinism_run.h"

#define STEPS NAV_DETERMINISM_STEPS

static void run(int workers, uint64_t *hashes, uint64_t *events)
{
	assert_int_equal(nav_determinism_run(CROWD_NAV_DATA_DIR, workers, hashes, events), 0);
}

static void same_for_any_worker_count(void **state)
{
	(void)state;
	uint64_t ref[STEPS], got[STEPS], ref_events, got_events;
	run(1, ref, &ref_events);
	for (int workers = 2; workers <= 4; ++workers) {
		run(workers, got, &got_events);
		for (int s = 0; s < STEPS; ++s)
			assert_int_equal(got[s], ref[s]);
		assert_int_equal(got_events, ref_events);
	}
	assert_true(ref_events != 0); /* events happened */
	printf("final hash %016llx\n", (unsigned long long)ref[STEPS - 1]);
}

static void crowd_same_for_any_worker_count(void **state)
{
	(void)state;
	static uint64_t ref[CROWD_STEPS], got[CROWD_STEPS];
	uint64_t ref_events, got_events;
	assert_int_equal(crowd_run(1, ref, &ref_events), 0);
	for (int workers = 2; workers <= 4; ++workers) {
		assert_int_equal(crowd_run(workers, got, &got_events), 0);
		for (int s = 0; s < CROWD_STEPS; ++s)
			assert_int_equal(got[s], ref[s]);
		assert_int_equal(got_events, ref_events);
	}
	assert_true(ref_events != 0);
	printf("crowd: final hash %016llx\n", (unsigned long long)ref[CROWD_STEPS - 1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(same_for_any_worker_count),
	    cmocka_unit_test(crowd_same_for_any_worker_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
