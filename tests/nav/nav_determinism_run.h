/* nav_determinism_run.h — the navigation determinism scenario, shared by
 * test_nav_determinism (same hashes for 1..4 workers) and nav_hash (prints
 * them, so tests/bench/cross_arch.sh can compare x86-64 with arm64): the
 * serpentine set-up with a second crowd going the other way, an obstacle
 * added at step 60 and removed at 200 (tiles rebuilt one per update), half
 * the agents retargeted at 250; the world's state hash after every step and
 * a running hash of the navigation events. */
#ifndef CROWD_NAV_DETERMINISM_RUN_H
#define CROWD_NAV_DETERMINISM_RUN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "nav_test_util.h"
#include "scenario_nav.h"

#define NAV_DETERMINISM_STEPS 1000

/* 0 on success; -1 (with a line on stderr) when a call failed. */
static int nav_determinism_run(const char *data_dir, int workers, uint64_t *hashes, uint64_t *events)
{
	char path[512];
	snprintf(path, sizeof path, "%s/serpentine_setup.txt", data_dir);
	scenario sc;
	char err[256];
	if (scenario_load(path, &sc, err, sizeof err) != 0) {
		fprintf(stderr, "nav_determinism_run: %s\n", err);
		return -1;
	}
	int rc = -1;
	orca_world *w = NULL;
	orca_nav *nav = NULL;
	/* more agents: a second group starting at the right end, going left */
	const uint32_t base = sc.agent_count;
	orca_agent_id *ids = calloc(base * 2, sizeof *ids);
	if (!ids || scenario_make_world(&sc, workers, &w, ids) != ORCA_OK)
		goto done;
	orca_nav_def d = scenario_nav_def(&sc);
	d.tile_budget = 1;
	d.path_budget = 3;
	if (orca_nav_create(&d, w, &nav) != ORCA_OK)
		goto done;
	for (uint32_t i = 0; i < base; ++i) {
		orca_agent_def a = sc.agent;
		a.position = sc.goal[i];
		if (orca_nav_set_target(nav, ids[i], sc.goal[i]) != ORCA_OK ||
		    orca_agent_add(w, &a, &ids[base + i]) != ORCA_OK ||
		    orca_nav_set_target(nav, ids[base + i], sc.start[i]) != ORCA_OK)
			goto done;
	}
	orca_obstacle_id added = 0;
	*events = 0;
	for (int s = 0; s < NAV_DETERMINISM_STEPS; ++s) {
		if (s == 60)
			added = add_rect(w, -25, -10, -15, 10);
		if (s == 200 && orca_obstacle_remove(w, added) != ORCA_OK)
			goto done;
		if (s == 250)
			for (uint32_t i = 0; i < base; i += 2)
				if (orca_nav_set_target(nav, ids[i], sc.start[i]) != ORCA_OK)
					goto done;
		if (orca_nav_update(nav, sc.time_step) != ORCA_OK)
			goto done;
		uint32_t n;
		const orca_nav_event *ev = orca_nav_events(nav, &n);
		for (uint32_t k = 0; k < n; ++k)
			*events = *events * 31u + ev[k].agent * 4u + (uint64_t)ev[k].kind;
		if (orca_world_step(w, sc.time_step) != ORCA_OK)
			goto done;
		hashes[s] = orca_world_state_hash(w);
	}
	rc = 0;
done:
	if (rc != 0)
		fprintf(stderr, "nav_determinism_run: a call failed\n");
	orca_nav_destroy(nav);
	orca_world_destroy(w);
	free(ids);
	scenario_free(&sc);
	return rc;
}

#endif /* CROWD_NAV_DETERMINISM_RUN_H */
