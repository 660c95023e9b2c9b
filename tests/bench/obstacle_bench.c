/* obstacle_bench — what an obstacle change costs a running world. A crowd
 * walks a 2,000 x 2,000 field; polygons of V vertices are added one call at a
 * time (then removed) while it steps, and a batch of B polygons is added in
 * one go before one step. Each index is run side by side in this process:
 * the edge grid (ORCA_OBSTACLE_INDEX_GRID, what AUTO uses once the world has
 * stepped) and RVO2's tree rebuilt after every change (ORCA_OBSTACLE_INDEX_RVO2,
 * the engine before the grid). Prints wall and CPU milliseconds; a
 * benchmark, never a pass/fail test.
 *
 *   obstacle_bench [--agents N] [--polygons P] [--vertices V] [--batch B] [--reps R] [--wall]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

#include <orca/orca.h>

/* Every figure is measured on one clock: the thread's CPU time by default
 * (one worker: the step runs on this thread), so other jobs on a shared
 * machine do not inflate it; --wall measures wall-clock time instead. */
static int use_wall;

static double now_ms(void) { return use_wall ? wall_ms() : thread_cpu_ms(); }

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(float lo, float hi)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return lo + (hi - lo) * (float)((rng >> 11) % 1000000u) / 1000000.0f;
}

static void ngon(orca_vec2 *v, uint32_t k, float cx, float cy, float r)
{
	for (uint32_t i = 0; i < k; ++i) {
		const double a = 6.283185307179586 * i / k;
		v[i].x = cx + r * (float)cos(a);
		v[i].y = cy + r * (float)sin(a);
	}
}

static orca_world *make_world(orca_obstacle_index index, uint32_t agents)
{
	orca_world_def def = orca_default_world_def();
	def.obstacle_index = index;
	orca_world *w;
	if (orca_world_create(&def, &w) != ORCA_OK)
		exit(1);
	for (uint32_t i = 0; i < agents; ++i) {
		orca_agent_def a = orca_default_agent_def();
		a.radius = 0.5f;
		a.position = (orca_vec2){frand(-1000, 1000), frand(-1000, 1000)};
		a.steer_mode = ORCA_STEER_TARGET;
		a.target = (orca_vec2){frand(-1000, 1000), frand(-1000, 1000)};
		orca_agent_add(w, &a, NULL);
	}
	orca_world_step(w, 0.1f); /* running: the first step is behind it */
	return w;
}

typedef struct figures {
	double add_max, add_cpu_max, add_sum, remove_max, step_max, step_sum_after, lines_after;
	double batch_add, batch_check, batch_step;
	int steps_after;
} figures;

/* P polygons one call at a time, a step after every 10 adds; then 100 steps
 * with all of them; then all removed one at a time, a step after every 10. */
static void one_at_a_time(orca_obstacle_index index, uint32_t agents, uint32_t polygons, uint32_t vertices,
                          figures *f)
{
	orca_world *w = make_world(index, agents);
	orca_obstacle_id *ids = calloc(polygons, sizeof *ids);
	orca_vec2 *v = calloc(vertices, sizeof *v);
	for (uint32_t i = 0; i < polygons; ++i) {
		ngon(v, vertices, frand(-1000, 1000), frand(-1000, 1000), frand(2, 12));
		const double t0 = now_ms(), c0 = thread_cpu_ms();
		orca_obstacle_add(w, v, vertices, &ids[i]);
		const double dt = now_ms() - t0, dc = thread_cpu_ms() - c0;
		f->add_cpu_max = dc > f->add_cpu_max ? dc : f->add_cpu_max;
		f->add_sum += dt;
		f->add_max = dt > f->add_max ? dt : f->add_max;
		if (i % 10 == 9) {
			const double s0 = now_ms();
			orca_world_step(w, 0.1f);
			const double ds = now_ms() - s0;
			f->step_max = ds > f->step_max ? ds : f->step_max;
		}
	}
	for (int s = 0; s < 100; ++s) {
		const double s0 = now_ms();
		orca_world_step(w, 0.1f);
		f->step_sum_after += now_ms() - s0;
		f->steps_after++;
		orca_step_profile p;
		orca_world_profile(w, &p);
		f->lines_after += (double)p.obstacle_line_count;
	}
	for (uint32_t i = 0; i < polygons; ++i) {
		const double t0 = now_ms();
		orca_obstacle_remove(w, ids[i]);
		double dt = now_ms() - t0;
		if (i % 10 == 9) {
			const double s0 = now_ms();
			orca_world_step(w, 0.1f);
			dt += now_ms() - s0;
		}
		f->remove_max = dt > f->remove_max ? dt : f->remove_max;
	}
	free(ids);
	free(v);
	orca_world_destroy(w);
}

/* B polygons in one write, then the next step (issue 14's stall). */
static void batch(orca_obstacle_index index, uint32_t agents, uint32_t b, uint32_t vertices, figures *f)
{
	orca_world *w = make_world(index, agents);
	orca_vec2 *v = calloc((size_t)vertices * b, sizeof *v);
	for (uint32_t i = 0; i < b; ++i)
		ngon(v + (size_t)i * vertices, vertices, frand(-1000, 1000), frand(-1000, 1000), frand(2, 12));
	/* the validity check orca_obstacle_add starts with, alone */
	const double c0 = now_ms();
	for (uint32_t i = 0; i < b; ++i) {
		orca_polygon_issue issue;
		orca_polygon_check(v + (size_t)i * vertices, vertices, &issue);
	}
	f->batch_check = now_ms() - c0;
	const double t0 = now_ms();
	for (uint32_t i = 0; i < b; ++i)
		orca_obstacle_add(w, v + (size_t)i * vertices, vertices, NULL);
	const double t1 = now_ms();
	orca_world_step(w, 0.1f);
	const double t2 = now_ms();
	f->batch_add = t1 - t0;
	f->batch_step = t2 - t1;
	/* steady state: the query itself, tree against grid */
	for (int s = 0; s < 20; ++s) {
		const double s0 = now_ms();
		orca_world_step(w, 0.1f);
		f->step_sum_after += now_ms() - s0;
		f->steps_after++;
		orca_step_profile p;
		orca_world_profile(w, &p);
		f->lines_after += (double)p.obstacle_line_count;
	}
	free(v);
	orca_world_destroy(w);
}

int main(int argc, char **argv)
{
	uint32_t agents = 5000, polygons = 1000, vertices = 256, b = 75, reps = 2;
	for (int i = 1; i < argc && !strcmp(argv[i], "--wall"); ++i, use_wall = 1) {
	}
	for (int i = 1 + use_wall; i + 1 < argc; i += 2) {
		const uint32_t val = (uint32_t)strtoul(argv[i + 1], NULL, 10);
		if (!strcmp(argv[i], "--agents"))
			agents = val;
		else if (!strcmp(argv[i], "--polygons"))
			polygons = val;
		else if (!strcmp(argv[i], "--vertices"))
			vertices = val;
		else if (!strcmp(argv[i], "--batch"))
			b = val;
		else if (!strcmp(argv[i], "--reps"))
			reps = val;
	}
	printf("obstacle_bench: %u agents, polygons of %u vertices; %s milliseconds\n", agents, vertices,
	       use_wall ? "wall-clock" : "CPU");
	/* the batch: grid and RVO2 interleaved */
	for (uint32_t r = 0; r < reps; ++r) {
		const orca_obstacle_index order[2] = {ORCA_OBSTACLE_INDEX_GRID, ORCA_OBSTACLE_INDEX_RVO2};
		for (int k = 0; k < 2; ++k) {
			figures f = {0};
			batch(order[k], agents, b, vertices, &f);
			printf("batch %-4s rep %u: %u polygons (%u vertices) added in %.2f ms (%.2f of it the polygon check), "
			       "next step %.2f ms; then %.2f ms/step, %.0f obstacle lines/step\n",
			       order[k] == ORCA_OBSTACLE_INDEX_GRID ? "grid" : "rvo2", r, b, b * vertices, f.batch_add,
			       f.batch_check, f.batch_step, f.step_sum_after / f.steps_after, f.lines_after / f.steps_after);
		}
	}
	/* one at a time, up to P polygons: the grid only (RVO2's tree would take
	 * hours at 256,000 vertices: a few seconds per rebuild, once per 10 adds) */
	figures f = {0};
	one_at_a_time(ORCA_OBSTACLE_INDEX_GRID, agents, polygons, vertices, &f);
	printf("grid: %u polygons one call at a time: add mean %.3f ms, max %.3f ms; worst step during adds %.2f ms\n",
	       polygons, f.add_sum / polygons, f.add_max, f.step_max);
	printf("grid: step with all %u polygons (%u vertices) mean %.2f ms over %d steps, %.0f obstacle lines/step\n",
	       polygons, polygons * vertices, f.step_sum_after / f.steps_after, f.steps_after,
	       f.lines_after / f.steps_after);
	printf("grid: worst remove (+ the step after it) %.3f ms\n", f.remove_max);
	/* and the world without obstacles, for the step's own cost */
	orca_world *w = make_world(ORCA_OBSTACLE_INDEX_GRID, agents);
	double sum = 0;
	for (int s = 0; s < 100; ++s) {
		const double s0 = now_ms();
		orca_world_step(w, 0.1f);
		sum += now_ms() - s0;
	}
	printf("no obstacles: step mean %.2f ms over 100 steps\n", sum / 100);
	orca_world_destroy(w);
	return 0;
}
