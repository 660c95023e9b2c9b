/* nav_bench — what navigation (orca/nav.h) costs: navmesh build time for the
 * default 2,000 x 2,000 world with 0, 100 and 1,000 obstacles; the rebuild
 * after one obstacle is added or removed; path queries per second; and the
 * step cost of N navigating agents against the same agents steering straight
 * (RVO2's random N set-up plus 200 blocks, less the agents starting on one;
 * both worlds stepped alternately in
 * one run, 100 retargets about 20 away per step in both, 1 worker, process
 * CPU time). With --workers W, also the navigation update on the world's
 * W workers against 1: two identical navigating worlds, updated alternately
 * (which goes first alternates too), wall-clock time of each update, and
 * whether their states stayed equal. A
 * benchmark: it prints figures, it never passes or fails on speed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

#include "scenario_nav.h"

static uint32_t rng = 2024u;
static uint32_t refresh_interval; /* 0: the default */
static int ab_workers;            /* --workers: the update on W workers against 1 */

static float frand(float lo, float hi)
{
	rng = rng * 1664525u + 1013904223u;
	return lo + (hi - lo) * (float)(rng >> 8) / 16777216.0f;
}

static orca_obstacle_id add_block(orca_world *w, float x, float y, float sx, float sy)
{
	const orca_vec2 r[4] = {{x, y}, {x + sx, y}, {x + sx, y + sy}, {x, y + sy}};
	orca_obstacle_id id = 0;
	orca_obstacle_add(w, r, 4, &id);
	return id;
}

static orca_world *world_with_blocks(uint32_t blocks, int workers)
{
	orca_world_def wd = orca_default_world_def();
	wd.worker_count = workers;
	orca_world *w;
	if (orca_world_create(&wd, &w) != ORCA_OK)
		exit(1);
	for (uint32_t i = 0; i < blocks; ++i)
		add_block(w, frand(-980, 960), frand(-980, 960), frand(4, 25), frand(4, 25));
	return w;
}

static void bench_build(void)
{
	const uint32_t counts[3] = {0, 100, 1000};
	printf("navmesh build, world -1000..1000, radius 1.5, cell 0.5, 64-cell tiles (63 x 63):\n");
	for (int k = 0; k < 3; ++k) {
		orca_world *w = world_with_blocks(counts[k], 1);
		orca_nav_def d = orca_nav_default_def();
		const double c0 = cpu_ms(), t0 = wall_ms();
		orca_nav *nav;
		if (orca_nav_create(&d, w, &nav) != ORCA_OK)
			exit(1);
		const double cpu = cpu_ms() - c0, wall = wall_ms() - t0;
		orca_nav_stats s;
		orca_nav_get_stats(nav, &s);
		printf("  %4u obstacles: %8.1f ms CPU (%8.1f ms wall), %u polygons, %.2f MB\n", counts[k], cpu, wall,
		       s.polygons, (double)s.memory_bytes / 1e6);
		if (counts[k] == 1000) {
			/* one obstacle added, then removed: the tiles it touches, all in one update */
			double add[10], rem[10];
			uint64_t tiles = 0;
			d.tile_budget = 0;
			for (int r = 0; r < 10; ++r) {
				const orca_obstacle_id id = add_block(w, frand(-900, 880), frand(-900, 880), 10, 10);
				orca_nav_get_stats(nav, &s);
				const uint64_t before = s.tiles_built;
				double c = cpu_ms();
				orca_nav_update(nav, 0.05f);
				while (orca_nav_get_stats(nav, &s), s.tiles_pending > 0)
					orca_nav_update(nav, 0.05f);
				add[r] = cpu_ms() - c;
				tiles += s.tiles_built - before;
				orca_obstacle_remove(w, id);
				c = cpu_ms();
				orca_nav_update(nav, 0.05f);
				while (orca_nav_get_stats(nav, &s), s.tiles_pending > 0)
					orca_nav_update(nav, 0.05f);
				rem[r] = cpu_ms() - c;
			}
			printf("  one 10 x 10 obstacle added: median %.2f ms CPU, removed: %.2f ms CPU (%.1f tiles each; "
			       "8 tiles per update by default)\n",
			       median(add, 10), median(rem, 10), (double)tiles / 10.0);
			/* path queries: random start and target among the 1,000 obstacles */
			enum { Q = 2000 };
			orca_nav_destroy(nav);
			d = orca_nav_default_def();
			d.path_budget = 0;
			orca_nav_create(&d, w, &nav);
			orca_agent_id *ids = malloc(Q * sizeof *ids);
			for (int i = 0; i < Q; ++i) {
				orca_agent_def a = orca_default_agent_def();
				orca_vec2 p = {frand(-990, 990), frand(-990, 990)};
				orca_nav_nearest_point(nav, p, &a.position);
				orca_agent_add(w, &a, &ids[i]);
				orca_nav_set_target(nav, ids[i], (orca_vec2){frand(-990, 990), frand(-990, 990)});
			}
			const double c = cpu_ms();
			orca_nav_update(nav, 0.05f);
			const double ms = cpu_ms() - c;
			orca_nav_get_stats(nav, &s);
			printf("  path queries (random start and target, any distance, 1,000 obstacles): %u in %.1f ms CPU "
			       "= %.0f paths/s\n",
			       (unsigned)s.paths_planned, ms, (double)s.paths_planned / (ms * 1e-3));
			free(ids);
		}
		orca_nav_destroy(nav);
		orca_world_destroy(w);
	}
}

/* RVO2's random N set-up plus 200 blocks; agents starting within 3 of a
 * block are left out (the same in both worlds). Returns the agents added. */
static orca_world *crowd_world(const scenario *sc, bool navigate, int workers, orca_agent_id *ids, uint32_t *count,
                               orca_nav **nav)
{
	orca_world_def wd = orca_default_world_def();
	wd.agent_capacity = sc->agent_count + 1;
	wd.worker_count = workers;
	orca_world *w;
	orca_world_create(&wd, &w);
	float blocks[200][4];
	const uint32_t saved = rng;
	rng = 77u; /* the same blocks in both worlds */
	for (int b = 0; b < 200; ++b) {
		blocks[b][0] = frand(20, 850);
		blocks[b][1] = frand(20, 850);
		blocks[b][2] = blocks[b][0] + frand(5, 15);
		blocks[b][3] = blocks[b][1] + frand(5, 15);
		add_block(w, blocks[b][0], blocks[b][1], blocks[b][2] - blocks[b][0], blocks[b][3] - blocks[b][1]);
	}
	rng = saved;
	*count = 0;
	for (uint32_t i = 0; i < sc->agent_count; ++i) {
		bool clear = true;
		for (int b = 0; b < 200 && clear; ++b)
			clear = !(sc->start[i].x > blocks[b][0] - 3 && sc->start[i].x < blocks[b][2] + 3 &&
			          sc->start[i].y > blocks[b][1] - 3 && sc->start[i].y < blocks[b][3] + 3);
		if (!clear)
			continue;
		orca_agent_def a = sc->agent;
		a.steer_mode = ORCA_STEER_TARGET;
		a.position = sc->start[i];
		a.target = sc->goal[i];
		orca_agent_add(w, &a, &ids[(*count)++]);
	}
	*nav = NULL;
	if (navigate) {
		orca_nav_def d = scenario_nav_def(sc);
		d.path_budget = 0; /* the first update plans every agent; the bench measures the steady state */
		if (refresh_interval)
			d.refresh_interval = refresh_interval;
		orca_nav_create(&d, w, nav);
		uint32_t k = 0;
		for (uint32_t i = 0; i < sc->agent_count; ++i) {
			orca_agent_state st;
			if (k < *count && orca_agent_get(w, ids[k], &st) == ORCA_OK && st.position.x == sc->start[i].x &&
			    st.position.y == sc->start[i].y)
				orca_nav_set_target(*nav, ids[k++], sc->goal[i]);
		}
	}
	return w;
}

/* The navigation update on W workers against 1, interleaved (see the top). */
static void bench_parallel_update(const scenario *sc, int workers, int steps)
{
	const uint32_t n = sc->agent_count;
	orca_agent_id *i1 = malloc(n * sizeof *i1), *iw = malloc(n * sizeof *iw);
	orca_nav *nav1, *navw;
	uint32_t n1, nw;
	const uint32_t saved = rng;
	orca_world *w1 = crowd_world(sc, true, 1, i1, &n1, &nav1);
	orca_world *ww = crowd_world(sc, true, workers, iw, &nw, &navw);
	const float dt = sc->time_step;
	orca_nav_update(nav1, dt); /* every agent's first path */
	orca_nav_update(navw, dt);
	orca_world_step(w1, dt);
	orca_world_step(ww, dt);
	double *t1 = malloc((size_t)steps * sizeof *t1), *tw = malloc((size_t)steps * sizeof *tw);
	double *c1 = malloc((size_t)steps * sizeof *c1), *cw = malloc((size_t)steps * sizeof *cw);
	uint32_t cursor = 0;
	bool same = true;
	for (int s = 0; s < steps; ++s) {
		for (int k = 0; k < 100; ++k, cursor = (cursor + 7919u) % n1) {
			orca_agent_state st;
			orca_agent_get(w1, i1[cursor], &st);
			float tx = st.position.x + frand(-20, 20), ty = st.position.y + frand(-20, 20);
			tx = tx < 2 ? 2 : tx > 894 ? 894 : tx;
			ty = ty < 2 ? 2 : ty > 894 ? 894 : ty;
			orca_nav_set_target(nav1, i1[cursor], (orca_vec2){tx, ty});
			orca_nav_set_target(navw, iw[cursor], (orca_vec2){tx, ty});
		}
		for (int k = 0; k < 2; ++k) {
			const bool one = (k == 0) == (s % 2 == 0);
			const double c = wall_ms(), tc = thread_cpu_ms();
			orca_nav_update(one ? nav1 : navw, dt);
			(one ? t1 : tw)[s] = wall_ms() - c;
			(one ? c1 : cw)[s] = thread_cpu_ms() - tc;
		}
		orca_world_step(w1, dt);
		orca_world_step(ww, dt);
		same = same && orca_world_state_hash(w1) == orca_world_state_hash(ww);
	}
	const double m1 = median(t1, steps), mw = median(tw, steps);
	printf("navigation update, %u agents, %d steps, interleaved, medians: 1 worker %.2f ms wall (%.2f ms CPU on the "
	       "calling thread), %d workers %.2f ms wall (%.2f ms CPU on the calling thread): wall x%.2f; states equal "
	       "every step: %s\n",
	       n1, steps, m1, median(c1, steps), workers, mw, median(cw, steps), m1 / mw, same ? "yes" : "NO");
	orca_nav_destroy(nav1);
	orca_nav_destroy(navw);
	orca_world_destroy(w1);
	orca_world_destroy(ww);
	free(i1);
	free(iw);
	free(t1);
	free(tw);
	free(c1);
	free(cw);
	rng = saved;
	(void)nw;
}

static void bench_steps(uint32_t n, int steps)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/random%u_setup.csv", CROWD_REF_DIR, n);
	scenario sc;
	char err[512];
	if (scenario_load(path, &sc, err, sizeof err) != 0) {
		fprintf(stderr, "nav_bench: %s\n", err);
		exit(1);
	}
	orca_agent_id *ia = malloc(n * sizeof *ia), *ib = malloc(n * sizeof *ib);
	orca_nav *none, *nav;
	uint32_t na, nb;
	orca_world *a = crowd_world(&sc, false, 1, ia, &na, &none);
	orca_world *b = crowd_world(&sc, true, 1, ib, &nb, &nav);
	n = na; /* agents left after the blocks */
	const float dt = sc.time_step;
	double c = cpu_ms();
	orca_nav_update(nav, dt); /* every agent's first path */
	const double first = cpu_ms() - c;
	orca_world_step(b, dt);
	orca_world_step(a, dt);
	double *ta = malloc((size_t)steps * sizeof *ta), *tb = malloc((size_t)steps * sizeof *tb);
	double *tn = malloc((size_t)steps * sizeof *tn);
	uint32_t cursor = 0;
	for (int s = 0; s < steps; ++s) {
		/* 100 retargets per step in both, each about 20 away: the load bench's
		 * rate (2,000/s at 20 Hz) and distance */
		for (int k = 0; k < 100; ++k, cursor = (cursor + 7919u) % n) {
			orca_agent_state st;
			orca_agent_get(a, ia[cursor], &st);
			float tx = st.position.x + frand(-20, 20), ty = st.position.y + frand(-20, 20);
			tx = tx < 2 ? 2 : tx > 894 ? 894 : tx;
			ty = ty < 2 ? 2 : ty > 894 ? 894 : ty;
			const orca_vec2 t = {tx, ty};
			orca_agent_set_target(a, ia[cursor], t);
			orca_nav_set_target(nav, ib[cursor], t);
		}
		c = cpu_ms();
		orca_world_step(a, dt);
		ta[s] = cpu_ms() - c;
		c = cpu_ms();
		orca_nav_update(nav, dt);
		tn[s] = cpu_ms() - c;
		orca_world_step(b, dt);
		tb[s] = cpu_ms() - c;
	}
	orca_nav_stats st;
	orca_nav_get_stats(nav, &st);
	const double ma = median(ta, steps), mb = median(tb, steps), mn = median(tn, steps);
	printf("random %u (%u agents left beside 200 blocks), 1 worker, %d steps, 100 retargets/step (~20 away): straight %.2f ms/step, navigating "
	       "%.2f ms/step (navigation update %.2f) = %+.1f %%; first paths for all %u agents %.0f ms; nav memory "
	       "%.1f MB (%.0f B/agent)\n",
	       sc.agent_count, n, steps, ma, mb, mn, 100.0 * (mb - ma) / ma, n, first, (double)st.memory_bytes / 1e6,
	       (double)st.memory_bytes / n);
	orca_nav_destroy(nav);
	orca_world_destroy(a);
	orca_world_destroy(b);
	free(ia);
	free(ib);
	free(ta);
	free(tb);
	free(tn);
	if (ab_workers > 1)
		bench_parallel_update(&sc, ab_workers, steps);
	scenario_free(&sc);
}

int main(int argc, char **argv)
{
	int steps = 20;
	bool build = true;
	uint32_t agents[4];
	int na = 0;
	for (int i = 1; i < argc; ++i) {
		if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--agents") == 0 && i + 1 < argc && na < 4)
			agents[na++] = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--refresh") == 0 && i + 1 < argc)
			refresh_interval = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--no-build") == 0)
			build = false;
		else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc)
			ab_workers = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: nav_bench [--no-build] [--agents N]... [--steps K] [--refresh U] [--workers W]\n"
			                "  N: 1000, 10000 or 50000 (RVO2's random N set-ups); default 10000 and 50000\n");
			return 2;
		}
	}
	if (na == 0) {
		agents[na++] = 10000;
		agents[na++] = 50000;
	}
	if (steps < 1)
		steps = 1;
	if (build)
		bench_build();
	for (int i = 0; i < na; ++i)
		bench_steps(agents[i], steps);
	return 0;
}
