/* nav_crowd_bench — the navigation update (orca_nav_update, what the server's
 * tick calls "navigation") for a crowd like server_load.py's crowd scenario,
 * without sockets: tests/data/ref's random N set-up (the jittered grid,
 * spacing 4, no obstacles), the server's default avoidance (quality), agent
 * (pref_speed 1.5) and navigation (arrival 0.5, path budget 256), each agent
 * sent to a random point within 63 of its start (crowd-load --local-targets:
 * a point of its connection's window), then 100 retargets about 20 away per
 * tick (200 connections, 10 agents each per second at 20 Hz). After `warmup`
 * ticks (the server's ramp-up: the first paths come 256 per tick), `ticks`
 * ticks are timed: wall and calling-thread CPU of each update, and the wall
 * time of the world's step after it (the tick: update and step). Prints
 * their medians (and the update's wall p90 and max) and a hash of every
 * tick's state hash and events, which must not change with the code's speed,
 * and how many updates the timed ticks' retargets waited for their paths
 * (the path queue: new targets go before re-plans).
 * Other crowd sizes from a set-up file written by
 * tests/data/gen_random_setup.py (targets stay within the crowd's square,
 * and navigation's bounds hold it). A benchmark, never a pass/fail test. For instruction counts
 * of the timed updates (1 worker: callgrind counts only the thread whose
 * stack holds the toggle):
 *   valgrind --tool=callgrind --toggle-collect='timed_update*' nav_crowd_bench 10000 20 1 100
 *
 *   nav_crowd_bench [agents 50000] [ticks 40] [workers 2] [warmup 200] [setup.csv]
 *   e.g. python3 tests/data/gen_random_setup.py 100000 /tmp/random100000_setup.csv
 *        nav_crowd_bench 100000 40 2 200 /tmp/random100000_setup.csv */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_clock.h"

#include "scenario_nav.h"

static uint32_t rng = 20261203u;

static float frand(float lo, float hi)
{
	rng = rng * 1664525u + 1013904223u;
	return lo + (hi - lo) * (float)(rng >> 8) / 16777216.0f;
}

typedef struct retarget {
	orca_agent_id id;
	int tick;
} retarget;

static float clampf(float v, float lo, float hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* The timed updates only, so that callgrind can count them alone
 * (--toggle-collect='timed_update*': gcc may rename it): not inlined. */
__attribute__((noinline)) static int timed_update(orca_nav *nav, float dt)
{
	return orca_nav_update(nav, dt);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; ++i)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

int main(int argc, char **argv)
{
	const uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 50000;
	const int ticks = argc > 2 ? atoi(argv[2]) : 40;
	const int workers = argc > 3 ? atoi(argv[3]) : 2;
	const int warmup = argc > 4 ? atoi(argv[4]) : 200;
	if (ticks < 1 || workers < 1 || warmup < 0) {
		fprintf(stderr, "usage: nav_crowd_bench [agents 50000] [ticks 40] [workers 2] [warmup 200] [setup.csv]\n");
		return 2;
	}
	char path[1024];
	if (argc > 5)
		snprintf(path, sizeof path, "%s", argv[5]);
	else
		snprintf(path, sizeof path, "%s/random%u_setup.csv", CROWD_REF_DIR, n);
	scenario sc;
	char err[512];
	if (scenario_load(path, &sc, err, sizeof err) != 0) {
		fprintf(stderr, "nav_crowd_bench: %s (agents: 1000, 10000 or 50000, or a set-up file)\n", err);
		return 1;
	}
	if (sc.agent_count < n) {
		fprintf(stderr, "nav_crowd_bench: %s holds %u agents, not %u\n", path, sc.agent_count, n);
		return 1;
	}
	/* targets within [2, hi]: 898 for the reference crowds (which fit in it),
	 * the crowd's square for larger ones */
	float hi = 898.0f;
	for (uint32_t i = 0; i < n; ++i)
		hi = fmaxf(hi, fmaxf(sc.start[i].x, sc.start[i].y) + 2.0f);
	orca_world_def wd = orca_default_world_def();
	wd.agent_capacity = n + 1;
	wd.worker_count = workers;
	wd.avoidance = ORCA_AVOIDANCE_QUALITY; /* the server's default */
	orca_world *w;
	if (orca_world_create(&wd, &w) != ORCA_OK)
		return 1;
	orca_agent_id *ids = malloc(n * sizeof *ids);
	orca_agent_def def = orca_default_agent_def();
	def.pref_speed = 1.5f; /* the server's --agent-pref-speed */
	def.steer_mode = ORCA_STEER_TARGET;
	for (uint32_t i = 0; i < n; ++i) {
		def.position = def.target = sc.start[i];
		if (orca_agent_add(w, &def, &ids[i]) != ORCA_OK)
			return 1;
	}
	orca_nav_def nd = orca_nav_default_def();
	nd.arrival_distance = 0.5f; /* the server's --nav-arrival-distance */
	if (hi > 900.0f) /* as server_load.py's --world-bounds */
		nd.bounds_max = (orca_vec2){hi + 100.0f, hi + 100.0f};
	orca_nav *nav;
	if (orca_nav_create(&nd, w, &nav) != ORCA_OK)
		return 1;
	for (uint32_t i = 0; i < n; ++i) {
		const orca_vec2 t = {clampf(sc.start[i].x + frand(-63, 63), 2, hi),
		                     clampf(sc.start[i].y + frand(-63, 63), 2, hi)};
		orca_nav_set_target(nav, ids[i], t);
	}
	const float dt = 0.05f;
	double *wall = malloc((size_t)ticks * sizeof *wall), *cpu = malloc((size_t)ticks * sizeof *cpu);
	double *step = malloc((size_t)ticks * sizeof *step), *tick = malloc((size_t)ticks * sizeof *tick);
	uint64_t hash = 14695981039346656037ull, events = 0, kinds[4] = {0};
	uint32_t cursor = 0;
	/* the timed ticks' retargets not answered yet (their agents still
	 * WAITING), and how many updates each answered one waited */
	retarget *open = malloc((size_t)ticks * 100 * sizeof *open);
	double *waited = malloc((size_t)ticks * 100 * sizeof *waited);
	uint32_t open_count = 0, answered = 0, asked = 0;
	for (int t = 0; t < warmup + ticks; ++t) {
		for (int k = 0; k < 100; ++k, cursor = (cursor + 7919u) % n) {
			orca_agent_state st;
			orca_agent_get(w, ids[cursor], &st);
			const orca_vec2 p = {clampf(st.position.x + frand(-20, 20), 2, hi),
			                     clampf(st.position.y + frand(-20, 20), 2, hi)};
			orca_nav_set_target(nav, ids[cursor], p);
			if (t >= warmup) {
				open[open_count++] = (retarget){ids[cursor], t};
				asked++;
			}
		}
		const double w0 = wall_ms(), c0 = thread_cpu_ms();
		if (t >= warmup)
			timed_update(nav, dt);
		else
			orca_nav_update(nav, dt);
		if (t >= warmup) {
			wall[t - warmup] = wall_ms() - w0;
			cpu[t - warmup] = thread_cpu_ms() - c0;
		}
		uint32_t kept = 0;
		for (uint32_t k = 0; k < open_count; ++k) {
			orca_nav_path path;
			if (orca_nav_get_path(nav, open[k].id, &path, NULL, 0) == ORCA_OK && path.phase == ORCA_NAV_WAITING)
				open[kept++] = open[k];
			else
				waited[answered++] = (double)(t - open[k].tick + 1);
		}
		open_count = kept;
		uint32_t count;
		const orca_nav_event *ev = orca_nav_events(nav, &count);
		for (uint32_t k = 0; k < count; ++k) {
			hash = fnv(hash, &ev[k].agent, sizeof ev[k].agent);
			hash = fnv(hash, &ev[k].kind, sizeof ev[k].kind);
			hash = fnv(hash, &ev[k].point, sizeof ev[k].point);
			kinds[ev[k].kind & 3u]++;
		}
		events += count;
		const double s0 = wall_ms();
		orca_world_step(w, dt);
		if (t >= warmup) {
			step[t - warmup] = wall_ms() - s0;
			tick[t - warmup] = wall[t - warmup] + step[t - warmup];
		}
		const uint64_t s = orca_world_state_hash(w);
		hash = fnv(hash, &s, sizeof s);
	}
	orca_nav_stats st;
	orca_nav_get_counts(nav, &st);
	const double wall_median = median(wall, ticks); /* sorts wall */
	printf("nav_crowd_bench: %u agents, %d workers, %d warm-up + %d timed ticks: navigation update median %.3f ms "
	       "wall (p90 %.3f, max %.3f), %.3f ms CPU on the calling thread; step median %.3f ms, tick (update + "
	       "step) median %.3f ms; %" PRIu64 " paths planned, %" PRIu64 " events; hash %016" PRIx64 "\n",
	       n, workers, warmup, ticks, wall_median, wall[(ticks * 9) / 10], wall[ticks - 1], median(cpu, ticks),
	       median(step, ticks), median(tick, ticks), st.paths_planned, events, hash);
	/* how soon a command gets its path: updates from the retarget to the one
	 * that answered it (1: the next update) */
	qsort(waited, answered, sizeof *waited, bench_cmp_double);
	printf("events: %" PRIu64 " ARRIVED, %" PRIu64 " UNREACHABLE, %" PRIu64 " STUCK\n", kinds[ORCA_NAV_ARRIVED],
	       kinds[ORCA_NAV_UNREACHABLE], kinds[ORCA_NAV_STUCK]);
	printf("retargets in the timed ticks: %u, %u answered; updates until answered p50 %.0f, p99 %.0f, max %.0f\n", asked,
	       answered, answered ? waited[answered / 2] : 0.0, answered ? waited[(answered * 99) / 100] : 0.0,
	       answered ? waited[answered - 1] : 0.0);
	free(open);
	free(waited);
	orca_nav_destroy(nav);
	orca_world_destroy(w);
	free(ids);
	free(wall);
	free(cpu);
	free(step);
	free(tick);
	scenario_free(&sc);
	return 0;
}
