/* nav_hash — prints a navigation run's world state hash after every step
 * ("step hash", hex) and a hash of its events, for comparing builds across
 * CPUs: tests/bench/cross_arch.sh runs it on x86-64 and, built for arm64
 * against Debian's arm64 Recast/Detour, under qemu-aarch64.
 *   nav_hash determinism DATA_DIR [WORKERS]   the nav_determinism scenario
 *   nav_hash crowd [WORKERS]                  1,000 agents with random targets up
 *       to 60 away among 150 random blocks, in a world whose bounds and agent
 *       radius are not round numbers (the mesh's grid is snapped, not given),
 *       600 steps */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nav_determinism_run.h"

#define CROWD_AGENTS 1000
#define CROWD_BLOCKS 150
#define CROWD_STEPS 600

static uint32_t rng = 2024u;

static float frand(float lo, float hi)
{
	rng = rng * 1664525u + 1013904223u;
	return lo + (hi - lo) * (float)(rng >> 8) / 16777216.0f;
}

static int crowd_run(int workers, uint64_t *hashes, uint64_t *events)
{
	const float x_lo = -151.3f, x_hi = 148.7f, y_lo = -149.1f, y_hi = 150.9f, radius = 1.2f;
	orca_world_def wd = orca_default_world_def();
	wd.agent_capacity = CROWD_AGENTS;
	wd.worker_count = workers;
	orca_world *w;
	if (orca_world_create(&wd, &w) != ORCA_OK)
		return -1;
	float box[CROWD_BLOCKS][4];
	for (int i = 0; i < CROWD_BLOCKS;) {
		const float x = frand(x_lo + 10, x_hi - 30), y = frand(y_lo + 10, y_hi - 30);
		const float b[4] = {x, y, x + frand(3, 20), y + frand(3, 20)};
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
		const float x = frand(x_lo + 5, x_hi - 5), y = frand(y_lo + 5, y_hi - 5);
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
		float tx = x + frand(-60, 60), ty = y + frand(-60, 60);
		tx = tx < x_lo + 2 ? x_lo + 2 : tx > x_hi - 2 ? x_hi - 2 : tx;
		ty = ty < y_lo + 2 ? y_lo + 2 : ty > y_hi - 2 ? y_hi - 2 : ty;
		if (orca_agent_add(w, &a, &id) != ORCA_OK || orca_nav_set_target(nav, id, (orca_vec2){tx, ty}) != ORCA_OK)
			goto done;
		++i;
	}
	*events = 0;
	for (int s = 0; s < CROWD_STEPS; ++s) {
		if (orca_nav_update(nav, 0.25f) != ORCA_OK)
			goto done;
		uint32_t n;
		const orca_nav_event *ev = orca_nav_events(nav, &n);
		for (uint32_t k = 0; k < n; ++k)
			*events = *events * 31u + ev[k].agent * 4u + (uint64_t)ev[k].kind;
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

static int workers_arg(const char *s)
{
	const int w = s ? atoi(s) : 1;
	if (w < 1 || w > 64) {
		fprintf(stderr, "nav_hash: bad WORKERS (1..64)\n");
		exit(2);
	}
	return w;
}

int main(int argc, char **argv)
{
	static uint64_t hashes[NAV_DETERMINISM_STEPS > CROWD_STEPS ? NAV_DETERMINISM_STEPS : CROWD_STEPS];
	uint64_t events;
	int steps;
	if (argc >= 3 && argc <= 4 && strcmp(argv[1], "determinism") == 0) {
		if (nav_determinism_run(argv[2], workers_arg(argc == 4 ? argv[3] : NULL), hashes, &events) != 0)
			return 1;
		steps = NAV_DETERMINISM_STEPS;
	} else if (argc >= 2 && argc <= 3 && strcmp(argv[1], "crowd") == 0) {
		if (crowd_run(workers_arg(argc == 3 ? argv[2] : NULL), hashes, &events) != 0)
			return 1;
		steps = CROWD_STEPS;
	} else {
		fprintf(stderr, "usage: nav_hash determinism DATA_DIR [WORKERS] | nav_hash crowd [WORKERS]\n");
		return 2;
	}
	for (int s = 0; s < steps; ++s)
		printf("%d %016" PRIx64 "\n", s + 1, hashes[s]);
	printf("events %016" PRIx64 "\n", events);
	return 0;
}
