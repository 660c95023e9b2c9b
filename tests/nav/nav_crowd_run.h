/* nav_crowd_run.h — a navigating crowd for determinism checks, shared by
 * test_nav_determinism (same hashes for 1..4 workers: the navigation update
 * runs its per-agent part on the world's workers) and nav_hash (prints them,
 * for tests/bench/cross_arch.sh): 1,000 agents with random targets up to 60
 * away among 150 random blocks, in a world whose bounds and agent radius are
 * not round numbers (the mesh's grid is snapped, not given), a wall added at
 * step 40 and removed at 160, 600 steps; the world's state hash after every
 * step and a running hash of the navigation events (agent, kind, point). */
#ifndef CROWD_NAV_CROWD_RUN_H
#define CROWD_NAV_CROWD_RUN_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nav_test_util.h"

#define CROWD_AGENTS 1000
#define CROWD_BLOCKS 150
#define CROWD_STEPS 600

static float crowd_frand(uint32_t *rng, float lo, float hi)
{
	*rng = *rng * 1664525u + 1013904223u;
	return lo + (hi - lo) * (float)(*rng >> 8) / 16777216.0f;
}

static uint64_t crowd_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

/* 0 on success; -1 (with a line on stderr) when a call failed. A wall is
 * added on the way (step 40) and removed (step 160): corridors re-planned. */
static int crowd_run(int workers, uint64_t *hashes, uint64_t *events)
{
	uint32_t rng = 2024u;
	const float x_lo = -151.3f, x_hi = 148.7f, y_lo = -149.1f, y_hi = 150.9f, radius = 1.2f;
	orca_world_def wd = orca_default_world_def();
	wd.agent_capacity = CROWD_AGENTS;
	wd.worker_count = workers;
	orca_world *w;
	if (orca_world_create(&wd, &w) != ORCA_OK)
		return -1;
	float box[CROWD_BLOCKS][4];
	for (int i = 0; i < CROWD_BLOCKS;) {
		const float x = crowd_frand(&rng, x_lo + 10, x_hi - 30), y = crowd_frand(&rng, y_lo + 10, y_hi - 30);
		const float b[4] = {x, y, x + crowd_frand(&rng, 3, 20), y + crowd_frand(&rng, 3, 20)};
		int clear = 1;
		for (int k = 0; k < i && clear; ++k)
			clear = b[2] + 5 < box[k][0] || b[0] > box[k][2] + 5 || b[3] + 5 < box[k][1] || b[1] > box[k][3] + 5;
		if (!clear)
			continue;
		memcpy(box[i++], b, sizeof b);
		add_rect(w, b[0], b[1], b[2], b[3]);
	}
	orca_nav_def d = orca_nav_default_def();
	d.bounds_min = (orca_vec2){x_lo, y_lo};
	d.bounds_max = (orca_vec2){x_hi, y_hi};
	d.agent_radius = radius;
	d.path_budget = 100;
	d.arrival_distance = 2.0f * radius;
	orca_nav *nav;
	if (orca_nav_create(&d, w, &nav) != ORCA_OK) {
		orca_world_destroy(w);
		return -1;
	}
	int rc = -1;
	for (int i = 0; i < CROWD_AGENTS;) {
		const float x = crowd_frand(&rng, x_lo + 5, x_hi - 5), y = crowd_frand(&rng, y_lo + 5, y_hi - 5);
		int near = 0;
		for (int k = 0; k < CROWD_BLOCKS && !near; ++k)
			near = x > box[k][0] - 2 && x < box[k][2] + 2 && y > box[k][1] - 2 && y < box[k][3] + 2;
		if (near)
			continue;
		orca_agent_def a = orca_default_agent_def();
		a.position = (orca_vec2){x, y};
		a.radius = radius;
		a.neighbor_dist = 8.0f;
		a.time_horizon = 4.0f;
		a.time_horizon_obst = 2.0f;
		orca_agent_id id;
		float tx = x + crowd_frand(&rng, -60, 60), ty = y + crowd_frand(&rng, -60, 60);
		tx = tx < x_lo + 2 ? x_lo + 2 : tx > x_hi - 2 ? x_hi - 2 : tx;
		ty = ty < y_lo + 2 ? y_lo + 2 : ty > y_hi - 2 ? y_hi - 2 : ty;
		if (orca_agent_add(w, &a, &id) != ORCA_OK || orca_nav_set_target(nav, id, (orca_vec2){tx, ty}) != ORCA_OK)
			goto done;
		++i;
	}
	*events = 0;
	orca_obstacle_id wall = 0;
	for (int s = 0; s < CROWD_STEPS; ++s) {
		if (s == 40)
			wall = add_rect(w, -20.3f, -40.1f, -17.9f, 40.2f);
		if (s == 160 && orca_obstacle_remove(w, wall) != ORCA_OK)
			goto done;
		if (orca_nav_update(nav, 0.25f) != ORCA_OK)
			goto done;
		uint32_t n;
		const orca_nav_event *ev = orca_nav_events(nav, &n);
		for (uint32_t k = 0; k < n; ++k)
			*events = *events * 31u + ev[k].agent * 4u + (uint64_t)ev[k].kind + crowd_bits(ev[k].point.x) * 7u +
			          crowd_bits(ev[k].point.y) * 13u;
		if (orca_world_step(w, 0.25f) != ORCA_OK)
			goto done;
		hashes[s] = orca_world_state_hash(w);
	}
	rc = 0;
done:
	if (rc != 0)
		fprintf(stderr, "nav_hash crowd: a call failed\n");
	orca_nav_destroy(nav);
	orca_world_destroy(w);
	return rc;
}

#endif /* CROWD_NAV_CROWD_RUN_H */
