/* test_nav_determinism.c — navigation on: the same run with 1, 2, 3 and 4
 * engine workers hashes identically after every step (navigation itself runs
 * on the caller's thread; this proves the pair stays deterministic), with an
 * obstacle added and one removed on the way (tiles rebuilt one per update)
 * and agents retargeted. The navigation's own observable output — each
 * agent's engine target — is part of the hash through the velocities. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "nav_test_util.h"
#include "scenario_nav.h"

#define STEPS 1000

static void run(int workers, uint64_t *hashes, uint64_t *events)
{
	char path[512];
	snprintf(path, sizeof path, "%s/serpentine_setup.txt", CROWD_NAV_DATA_DIR);
	scenario sc;
	char err[256];
	assert_int_equal(scenario_load(path, &sc, err, sizeof err), 0);
	/* more agents: a second group starting at the right end, going left */
	const uint32_t base = sc.agent_count;
	orca_agent_id *ids = calloc(base * 2, sizeof *ids);
	orca_world *w;
	assert_int_equal(scenario_make_world(&sc, workers, &w, ids), ORCA_OK);
	orca_nav_def d = scenario_nav_def(&sc);
	d.tile_budget = 1;
	d.path_budget = 3;
	orca_nav *nav;
	assert_int_equal(orca_nav_create(&d, w, &nav), ORCA_OK);
	for (uint32_t i = 0; i < base; ++i) {
		assert_int_equal(orca_nav_set_target(nav, ids[i], sc.goal[i]), ORCA_OK);
		orca_agent_def a = sc.agent;
		a.position = sc.goal[i];
		assert_int_equal(orca_agent_add(w, &a, &ids[base + i]), ORCA_OK);
		assert_int_equal(orca_nav_set_target(nav, ids[base + i], sc.start[i]), ORCA_OK);
	}
	orca_obstacle_id added = 0;
	*events = 0;
	for (int s = 0; s < STEPS; ++s) {
		if (s == 60)
			added = add_rect(w, -25, -10, -15, 10);
		if (s == 200)
			assert_int_equal(orca_obstacle_remove(w, added), ORCA_OK);
		if (s == 250)
			for (uint32_t i = 0; i < base; i += 2)
				assert_int_equal(orca_nav_set_target(nav, ids[i], sc.start[i]), ORCA_OK);
		assert_int_equal(orca_nav_update(nav, sc.time_step), ORCA_OK);
		uint32_t n;
		const orca_nav_event *ev = orca_nav_events(nav, &n);
		for (uint32_t k = 0; k < n; ++k)
			*events = *events * 31u + ev[k].agent * 4u + (uint64_t)ev[k].kind;
		assert_int_equal(orca_world_step(w, sc.time_step), ORCA_OK);
		hashes[s] = orca_world_state_hash(w);
	}
	orca_nav_destroy(nav);
	orca_world_destroy(w);
	free(ids);
	scenario_free(&sc);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(same_for_any_worker_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
