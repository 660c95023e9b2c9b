/* quality_bench — the quality avoidance mode against the reference mode (RVO2
 * bit for bit), side by side in one run: both worlds are stepped in lockstep
 * (reference, quality, reference, ...) so machine noise hits both alike. For
 * each scenario it prints, per mode: the step at which every agent was at its
 * goal (or "-" if not by the cap), the (pair, step)s overlapping by more than
 * 0.01, the smallest centre distance seen, steps with an agent centre inside
 * an obstacle, and the mean ms per step (orca_world_step only).
 *
 *   quality_bench all                      every scenario of issue 11
 *   quality_bench circles [FROM TO]        antipodal circles, every N (default 5..50)
 *   quality_bench circle N | random N | swap SIDE | cross4 SIDE | blocks
 *   quality_bench hash [--steps K]         cross4's state hash in quality mode
 *                                          after K steps (default 500) and at the end,
 *                                          random 1000's after K steps
 *   options: --workers W  --cap STEPS  --steps STEPS (random crowds; default 500)
 *            --ref-dir DIR (tests/data/ref) */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

#include "quality_scenarios.h"
#include "scenario.h"

#ifndef CROWD_REF_DIR
#define CROWD_REF_DIR "tests/data/ref"
#endif

typedef struct run_stats {
	uint64_t finish;   /* first step with every agent at its goal; 0 = not yet */
	uint64_t steps;    /* steps taken */
	uint64_t deep;     /* (pair, step)s with overlap > 0.01 */
	uint64_t inside;   /* (agent, step)s with the centre inside an obstacle */
	float min_dist;    /* smallest centre distance seen */
	double step_ms;    /* time in orca_world_step */
} run_stats;

typedef struct run {
	orca_world *w;
	orca_agent_id *ids;
	run_stats st;
} run;

/* scratch for the overlap count: a hashed uniform grid */
static orca_vec2 *g_pos;
static float *g_rad;
static int32_t *g_cx, *g_cy;
static uint32_t *g_count, *g_sorted, g_buckets;

static uint32_t cell_hash(int32_t x, int32_t y)
{
	return ((uint32_t)x * 73856093u ^ (uint32_t)y * 19349663u) & (g_buckets - 1u);
}

static bool scratch_init(uint32_t n)
{
	g_buckets = 1024;
	while (g_buckets < 2 * n)
		g_buckets *= 2;
	g_pos = calloc(n, sizeof *g_pos);
	g_rad = calloc(n, sizeof *g_rad);
	g_cx = calloc(n, sizeof *g_cx);
	g_cy = calloc(n, sizeof *g_cy);
	g_sorted = calloc(n, sizeof *g_sorted);
	g_count = calloc(g_buckets + 1, sizeof *g_count);
	return g_pos && g_rad && g_cx && g_cy && g_sorted && g_count;
}

static void scratch_free(void)
{
	free(g_pos), free(g_rad), free(g_cx), free(g_cy), free(g_sorted), free(g_count);
	g_pos = NULL, g_rad = NULL, g_cx = g_cy = NULL, g_sorted = g_count = NULL;
}

static bool inside_polygon(orca_vec2 p, const orca_vec2 *v, uint32_t n)
{
	if (n < 3)
		return false;
	bool in = false;
	for (uint32_t i = 0, j = n - 1; i < n; j = i++) {
		if ((v[i].y > p.y) != (v[j].y > p.y) &&
		    p.x < (v[j].x - v[i].x) * (p.y - v[i].y) / (v[j].y - v[i].y) + v[i].x)
			in = !in;
	}
	return in;
}

/* Count deep overlaps, the smallest distance and centres inside obstacles. */
static void measure(const scenario *sc, run *r)
{
	const uint32_t n = sc->agent_count;
	float max_r = 0.0f;
	for (uint32_t i = 0; i < n; ++i) {
		orca_agent_state st;
		orca_agent_get(r->w, r->ids[i], &st);
		g_pos[i] = st.position;
		g_rad[i] = st.radius;
		max_r = st.radius > max_r ? st.radius : max_r;
	}
	const float cell = 2.0f * max_r;
	memset(g_count, 0, (g_buckets + 1) * sizeof *g_count);
	for (uint32_t i = 0; i < n; ++i) {
		g_cx[i] = (int32_t)floorf(g_pos[i].x / cell);
		g_cy[i] = (int32_t)floorf(g_pos[i].y / cell);
		g_count[cell_hash(g_cx[i], g_cy[i]) + 1]++;
	}
	for (uint32_t b = 0; b < g_buckets; ++b)
		g_count[b + 1] += g_count[b];
	/* place (g_count[b] becomes the end of bucket b) */
	for (uint32_t i = 0; i < n; ++i)
		g_sorted[g_count[cell_hash(g_cx[i], g_cy[i])]++] = i;
	for (uint32_t i = 0; i < n; ++i) {
		for (int dy = -1; dy <= 1; ++dy) {
			for (int dx = -1; dx <= 1; ++dx) {
				const int32_t x = g_cx[i] + dx, y = g_cy[i] + dy;
				const uint32_t b = cell_hash(x, y);
				const uint32_t begin = b ? g_count[b - 1] : 0, end = g_count[b];
				for (uint32_t k = begin; k < end; ++k) {
					const uint32_t j = g_sorted[k];
					if (j <= i || g_cx[j] != x || g_cy[j] != y)
						continue;
					const float ex = g_pos[i].x - g_pos[j].x, ey = g_pos[i].y - g_pos[j].y;
					const float d = sqrtf(ex * ex + ey * ey);
					if (d < r->st.min_dist)
						r->st.min_dist = d;
					if (d < g_rad[i] + g_rad[j] - 0.01f)
						r->st.deep++;
				}
			}
		}
	}
	for (uint32_t o = 0; o < sc->obstacle_count; ++o)
		for (uint32_t i = 0; i < n; ++i)
			r->st.inside += inside_polygon(g_pos[i], sc->obstacles[o], sc->obstacle_sizes[o]);
}

static void print_row(const char *name, uint32_t agents, const char *mode, const run_stats *s, const run_stats *ref)
{
	char finish[32];
	if (s->finish)
		snprintf(finish, sizeof finish, "%" PRIu64, s->finish);
	else
		snprintf(finish, sizeof finish, "- (%" PRIu64 ")", s->steps);
	const double ms = s->steps ? s->step_ms / (double)s->steps : 0.0;
	const double ref_ms = ref && ref->steps ? ref->step_ms / (double)ref->steps : 0.0;
	printf("| %-12s | %6u | %-9s | %10s | %10" PRIu64 " | %6.3f | %6" PRIu64 " | %8.3f", name, agents, mode, finish,
	       s->deep, (double)s->min_dist, s->inside, ms);
	if (ref && ref_ms > 0.0)
		printf(" (%.2fx)", ms / ref_ms);
	printf(" |\n");
	fflush(stdout);
}

/* Run both modes in lockstep up to `cap` steps; stop a mode when done if
 * stop_when_done. */
static int run_pair(const char *name, const scenario *sc, uint64_t cap, bool stop_when_done, int workers)
{
	run runs[2];
	memset(runs, 0, sizeof runs);
	const orca_avoidance modes[2] = {ORCA_AVOIDANCE_REFERENCE, ORCA_AVOIDANCE_QUALITY};
	if (!scratch_init(sc->agent_count))
		return -1;
	for (int m = 0; m < 2; ++m) {
		runs[m].ids = calloc(sc->agent_count, sizeof *runs[m].ids);
		if (!runs[m].ids || scenario_make_world(sc, workers, &runs[m].w, runs[m].ids) != ORCA_OK)
			return -1;
		orca_world_set_avoidance(runs[m].w, modes[m]);
		runs[m].st.min_dist = INFINITY;
	}
	bool active[2] = {true, true};
	for (uint64_t step = 1; step <= cap && (active[0] || active[1]); ++step) {
		for (int m = 0; m < 2; ++m) {
			if (!active[m])
				continue;
			run *r = &runs[m];
			const double t0 = wall_ms();
			if (orca_world_step(r->w, sc->time_step) != ORCA_OK)
				return -1;
			r->st.step_ms += wall_ms() - t0;
			r->st.steps = step;
			measure(sc, r);
			if (!r->st.finish && scenario_done(sc, r->w, r->ids)) {
				r->st.finish = step;
				if (stop_when_done)
					active[m] = false;
			}
		}
	}
	print_row(name, sc->agent_count, "reference", &runs[0].st, NULL);
	print_row(name, sc->agent_count, "quality", &runs[1].st, &runs[0].st);
	for (int m = 0; m < 2; ++m) {
		orca_world_destroy(runs[m].w);
		free(runs[m].ids);
	}
	scratch_free();
	return 0;
}

static void header(void)
{
	printf("| scenario     | agents | mode      | done at step | deep overlaps | min dist | inside | ms/step |\n");
	printf("|---|---|---|---|---|---|---|---|\n");
}

static int bench_circle(uint32_t n, uint64_t cap, int workers)
{
	scenario sc;
	if (scenario_circle(n, &sc) != 0)
		return -1;
	char name[32];
	snprintf(name, sizeof name, "circle %u", n);
	const int rc = run_pair(name, &sc, cap, true, workers);
	scenario_free(&sc);
	return rc;
}

static int bench_file(const char *name, const char *path, uint64_t cap, bool stop_when_done, int workers)
{
	scenario sc;
	char err[256];
	if (scenario_load(path, &sc, err, sizeof err) != 0) {
		fprintf(stderr, "quality_bench: %s\n", err);
		return -1;
	}
	const int rc = run_pair(name, &sc, cap, stop_when_done, workers);
	scenario_free(&sc);
	return rc;
}

static int bench_built(const char *kind, uint32_t side, uint64_t cap, int workers)
{
	scenario sc;
	const bool swap = strcmp(kind, "swap") == 0;
	if ((swap ? qs_swap(&sc, side) : qs_cross4(&sc, side)) != 0)
		return -1;
	char name[32];
	snprintf(name, sizeof name, "%s %u", kind, swap ? 2 * side * side : 4 * side * side);
	const int rc = run_pair(name, &sc, cap, true, workers);
	scenario_free(&sc);
	return rc;
}

static int bench_random(const char *ref_dir, uint32_t n, uint64_t steps, int workers)
{
	char path[1024], name[32];
	snprintf(path, sizeof path, "%s/random%u_setup.csv", ref_dir, n);
	snprintf(name, sizeof name, "random %u", n);
	return bench_file(name, path, steps, false, workers);
}

/* `hash`: the state hash of cross4 8 in quality mode after `steps` steps (and
 * at the end), then of random 1000 after `steps` steps: the numbers compared
 * across x86-64 and arm64. */
static int print_hash(const char *ref_dir, uint64_t steps, int workers)
{
	scenario sc;
	if (qs_cross4(&sc, 8) != 0)
		return -1;
	orca_agent_id *ids = calloc(sc.agent_count, sizeof *ids);
	orca_world *w = NULL;
	if (!ids || scenario_make_world(&sc, workers, &w, ids) != ORCA_OK ||
	    orca_world_set_avoidance(w, ORCA_AVOIDANCE_QUALITY) != ORCA_OK)
		return -1;
	uint64_t step = 0;
	while (step < 3000 && !scenario_done(&sc, w, ids)) {
		if (orca_world_step(w, sc.time_step) != ORCA_OK)
			return -1;
		if (++step == steps)
			printf("cross4 256 quality: step %" PRIu64 " hash %016" PRIx64 "\n", step, orca_world_state_hash(w));
	}
	printf("cross4 256 quality: done at step %" PRIu64 " hash %016" PRIx64 "\n", step, orca_world_state_hash(w));
	orca_world_destroy(w);
	free(ids);
	scenario_free(&sc);

	/* a spread-out crowd: quality mode's grid path (no kd-tree) */
	char path[1024], err[256];
	snprintf(path, sizeof path, "%s/random1000_setup.csv", ref_dir);
	if (scenario_load(path, &sc, err, sizeof err) != 0) {
		fprintf(stderr, "quality_bench: %s\n", err);
		return -1;
	}
	ids = calloc(sc.agent_count, sizeof *ids);
	if (!ids || scenario_make_world(&sc, workers, &w, ids) != ORCA_OK ||
	    orca_world_set_avoidance(w, ORCA_AVOIDANCE_QUALITY) != ORCA_OK)
		return -1;
	for (step = 0; step < steps; ++step)
		if (orca_world_step(w, sc.time_step) != ORCA_OK)
			return -1;
	printf("random 1000 quality: step %" PRIu64 " hash %016" PRIx64 "\n", step, orca_world_state_hash(w));
	orca_world_destroy(w);
	free(ids);
	scenario_free(&sc);
	return 0;
}

int main(int argc, char **argv)
{
	const char *ref_dir = CROWD_REF_DIR;
	int workers = 1;
	uint64_t cap = 0, steps = 500;
	const char *args[3] = {NULL, NULL, NULL};
	int nargs = 0;
	for (int i = 1; i < argc; ++i) {
		if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc)
			workers = atoi(argv[++i]);
		else if (strcmp(argv[i], "--cap") == 0 && i + 1 < argc)
			cap = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
			steps = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--ref-dir") == 0 && i + 1 < argc)
			ref_dir = argv[++i];
		else if (nargs < 3)
			args[nargs++] = argv[i];
	}
	if (nargs == 0 || workers < 1 || workers > 256) {
		fprintf(stderr, "usage: quality_bench all | circles [FROM TO] | circle N | random N | swap SIDE | "
		                "cross4 SIDE | blocks | hash [--workers W] [--cap STEPS] [--steps STEPS] [--ref-dir DIR]\n");
		return 2;
	}
	const char *what = args[0];
	const uint32_t arg = nargs > 1 ? (uint32_t)strtoul(args[1], NULL, 10) : 0;
	int rc = 0;
	if (strcmp(what, "hash") == 0)
		return print_hash(ref_dir, steps, workers) == 0 ? 0 : 1;
	header();
	if (strcmp(what, "all") == 0 || strcmp(what, "circles") == 0) {
		const uint32_t from = arg ? arg : 5, to = nargs > 2 ? (uint32_t)strtoul(args[2], NULL, 10) : 50;
		for (uint32_t n = from; n <= to && rc == 0; ++n)
			rc = bench_circle(n, cap ? cap : 3000, workers);
	}
	if (strcmp(what, "all") == 0 && rc == 0) {
		rc = bench_built("swap", 6, cap ? cap : 3000, workers);
		if (rc == 0)
			rc = bench_built("cross4", 8, cap ? cap : 3000, workers);
		if (rc == 0) {
			char path[1024];
			snprintf(path, sizeof path, "%s/blocks_setup.txt", ref_dir);
			rc = bench_file("blocks", path, cap ? cap : 10000, true, workers);
		}
		if (rc == 0)
			rc = bench_circle(250, cap ? cap : 20000, workers);
		if (rc == 0)
			rc = bench_circle(1000, cap ? cap : 20000, workers);
		if (rc == 0)
			rc = bench_random(ref_dir, 10000, steps, workers);
	} else if (strcmp(what, "circle") == 0 && arg) {
		rc = bench_circle(arg, cap ? cap : 20000, workers);
	} else if (strcmp(what, "random") == 0 && arg) {
		rc = bench_random(ref_dir, arg, steps, workers);
	} else if ((strcmp(what, "swap") == 0 || strcmp(what, "cross4") == 0) && arg) {
		rc = bench_built(what, arg, cap ? cap : 3000, workers);
	} else if (strcmp(what, "blocks") == 0) {
		char path[1024];
		snprintf(path, sizeof path, "%s/blocks_setup.txt", ref_dir);
		rc = bench_file("blocks", path, cap ? cap : 10000, true, workers);
	} else if (strcmp(what, "all") != 0 && strcmp(what, "circles") != 0) {
		fprintf(stderr, "quality_bench: unknown scenario %s\n", what);
		return 2;
	}
	if (rc != 0)
		fprintf(stderr, "quality_bench: failed\n");
	return rc == 0 ? 0 : 1;
}
