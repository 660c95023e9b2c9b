/* orca_bench — engine speed on the scenarios RVO2 is measured on:
 * `random N` loads tests/data/ref/randomN_setup.csv, `setup FILE` any
 * `*_setup.csv`, `circle N` builds RVO2's Circle example scaled to N agents.
 * Prints median ms/step, agent-steps/s and the per-stage breakdown. Ratios to
 * RVO2 come only from a side-by-side run on one machine:
 * tests/bench/vs_rvo2.sh. A benchmark, never a pass/fail test. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

#include "scenario.h"
#include "scenario_nav.h"

static void usage(void)
{
	fprintf(stderr, "usage: orca_bench random N | setup FILE | circle N | maze N  [--steps K] [--workers W] [--ref-dir DIR] [--mode M]\n"
	                "  --mode reference|quality  avoidance mode (default reference, RVO2 bit for bit)\n"
	                "  random N loads DIR/randomN_setup.csv (N = 1000, 10000, 50000)\n"
	                "  setup FILE loads any *_setup.csv (agent_id,x,y,goal_x,goal_y)\n"
	                "  circle N builds RVO2's Circle example with N agents (R = 200N/250)\n"
	                "  maze N: N agents cross 8 walls by path (navigation, orca/nav.h)\n");
}

/* maze N (navigation, orca/nav.h): N agents in the left chamber of a
 * 200-wide corridor crossed by 8 walls with 60-wide gaps alternating top and bottom,
 * goals the same grid in the right chamber (the first to arrive go deepest). Each step is orca_nav_update then
 * orca_world_step; prints the median of both and how many agents got home. */
static int bench_maze(uint32_t n, int steps, int workers)
{
	const float half_h = 100.0f, chamber = 10.0f + (float)(n * 16u / 200u);
	const float half_w = chamber + 8.0f * 25.0f / 2.0f + 10.0f;
	orca_world_def wd = orca_default_world_def();
	wd.worker_count = workers;
	wd.agent_capacity = n + 1;
	orca_world *w;
	if (orca_world_create(&wd, &w) != ORCA_OK)
		return 1;
	const orca_vec2 outer[2][4] = {{{-half_w, -half_h - 2}, {half_w, -half_h - 2}, {half_w, -half_h}, {-half_w, -half_h}},
	                               {{-half_w, half_h}, {half_w, half_h}, {half_w, half_h + 2}, {-half_w, half_h + 2}}};
	orca_obstacle_add(w, outer[0], 4, NULL);
	orca_obstacle_add(w, outer[1], 4, NULL);
	for (int k = 0; k < 8; ++k) {
		const float x = -half_w + chamber + 10.0f + 25.0f * (float)k;
		const float y0 = k % 2 ? -half_h + 60.0f : -half_h, y1 = k % 2 ? half_h : half_h - 60.0f;
		const orca_vec2 wall[4] = {{x - 1, y0}, {x + 1, y0}, {x + 1, y1}, {x - 1, y1}};
		orca_obstacle_add(w, wall, 4, NULL);
	}
	orca_nav_def d = orca_nav_default_def();
	d.bounds_min = (orca_vec2){-half_w - 5, -half_h - 5};
	d.bounds_max = (orca_vec2){half_w + 5, half_h + 5};
	d.path_budget = 0;
	orca_nav *nav;
	const double b0 = wall_ms();
	if (orca_nav_create(&d, w, &nav) != ORCA_OK)
		return 1;
	const double build_ms = wall_ms() - b0;
	orca_agent_id *ids = calloc(n, sizeof *ids);
	orca_vec2 *goals = calloc(n, sizeof *goals);
	const uint32_t rows = (uint32_t)((2.0f * half_h - 6.0f) / 4.0f);
	for (uint32_t i = 0; i < n; ++i) {
		orca_agent_def a = orca_default_agent_def();
		a.position = (orca_vec2){-half_w + 3.0f + 4.0f * (float)(i / rows), -half_h + 3.0f + 4.0f * (float)(i % rows)};
		a.max_speed = 2.5f;
		a.pref_speed = 2.0f;
		a.time_horizon = a.time_horizon_obst = 5.0f;
		goals[i] = (orca_vec2){a.position.x + 2.0f * half_w - chamber, a.position.y}; /* first out, deepest in */
		orca_agent_add(w, &a, &ids[i]);
		orca_nav_set_target(nav, ids[i], goals[i]);
	}
	double *nav_ms = calloc((size_t)steps, sizeof *nav_ms), *step_ms = calloc((size_t)steps, sizeof *step_ms);
	for (int s = 0; s < steps; ++s) {
		const double a = wall_ms();
		orca_nav_update(nav, 0.25f);
		const double b = wall_ms();
		orca_world_step(w, 0.25f);
		nav_ms[s] = b - a;
		step_ms[s] = wall_ms() - b;
	}
	uint32_t home = 0;
	for (uint32_t i = 0; i < n; ++i) {
		orca_agent_state st;
		orca_agent_get(w, ids[i], &st);
		const float dx = st.position.x - goals[i].x, dy = st.position.y - goals[i].y;
		home += dx * dx + dy * dy <= st.radius * st.radius;
	}
	printf("scenario maze %u  workers %d  steps %d  navmesh build %.1f ms\n", n, workers, steps, build_ms);
	printf("median ms/step: navigation %.3f  engine step %.3f  (first step plans every path)\n",
	       median(nav_ms, steps), median(step_ms, steps));
	printf("agents home after %d steps: %u of %u\n", steps, home, n);
	printf("final state hash %016" PRIx64 "\n", orca_world_state_hash(w));
	orca_nav_destroy(nav);
	orca_world_destroy(w);
	free(ids);
	free(goals);
	free(nav_ms);
	free(step_ms);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		usage();
		return 2;
	}
	const char *kind = argv[1];
	const bool from_file = strcmp(kind, "setup") == 0;
	const uint32_t n = from_file ? 1u : (uint32_t)strtoul(argv[2], NULL, 10);
	int steps = 100, workers = 1;
	const char *ref_dir = CROWD_REF_DIR;
	orca_avoidance mode = ORCA_AVOIDANCE_REFERENCE;
	for (int i = 3; i < argc; ++i) {
		if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc)
			workers = atoi(argv[++i]);
		else if (strcmp(argv[i], "--ref-dir") == 0 && i + 1 < argc)
			ref_dir = argv[++i];
		else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc && strcmp(argv[i + 1], "reference") == 0)
			mode = ORCA_AVOIDANCE_REFERENCE, ++i;
		else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc && strcmp(argv[i + 1], "quality") == 0)
			mode = ORCA_AVOIDANCE_QUALITY, ++i;
		else {
			usage();
			return 2;
		}
	}
	if (n == 0 || steps < 1 || workers < 1 || workers > 256) {
		usage();
		return 2;
	}

	if (strcmp(kind, "maze") == 0)
		return bench_maze(n, steps, workers);
	scenario sc;
	char err[512];
	if (from_file) {
		if (scenario_load(argv[2], &sc, err, sizeof err) != 0) {
			fprintf(stderr, "orca_bench: %s\n", err);
			return 1;
		}
	} else if (strcmp(kind, "random") == 0) {
		char path[1024];
		snprintf(path, sizeof path, "%s/random%u_setup.csv", ref_dir, n);
		if (scenario_load(path, &sc, err, sizeof err) != 0) {
			fprintf(stderr, "orca_bench: %s\n", err);
			return 1;
		}
	} else if (strcmp(kind, "circle") == 0) {
		if (scenario_circle(n, &sc) != 0)
			return 1;
	} else {
		usage();
		return 2;
	}

	const double t_setup = wall_ms();
	orca_agent_id *ids = calloc(sc.agent_count, sizeof *ids);
	orca_world *w;
	int rc = scenario_make_world(&sc, workers, &w, ids);
	if (rc == ORCA_OK)
		rc = orca_world_set_avoidance(w, mode);
	if (rc != ORCA_OK) {
		fprintf(stderr, "orca_bench: %s\n", orca_strerror(rc));
		return 1;
	}
	const double setup_ms = wall_ms() - t_setup;

	double *total = calloc((size_t)steps, sizeof *total), *tree = calloc((size_t)steps, sizeof *tree);
	double *vel = calloc((size_t)steps, sizeof *vel), *integ = calloc((size_t)steps, sizeof *integ);
	double *pref = calloc((size_t)steps, sizeof *pref), *cpu = calloc((size_t)steps, sizeof *cpu);
	uint64_t neighbors = 0, lp3 = 0, allocs = 0;
	const double t0 = wall_ms();
	for (int s = 0; s < steps; ++s) {
		const double a = wall_ms(), c = cpu_ms();
		rc = orca_world_step(w, sc.time_step);
		total[s] = wall_ms() - a;
		cpu[s] = cpu_ms() - c;
		if (rc != ORCA_OK) {
			fprintf(stderr, "orca_bench: step: %s\n", orca_strerror(rc));
			return 1;
		}
		orca_step_profile p;
		orca_world_profile(w, &p);
		tree[s] = p.agent_tree_ms;
		vel[s] = p.velocity_ms;
		integ[s] = p.integrate_ms;
		pref[s] = p.pref_velocity_ms;
		neighbors += p.neighbor_count;
		lp3 += p.lp3_fallbacks;
		allocs += p.allocations;
	}
	const double wall = wall_ms() - t0;
	const double med = median(total, steps);
	printf("scenario %s %s  agents %u  workers %d  steps %d  setup %.1f ms\n", kind, argv[2], sc.agent_count, workers,
	       steps, setup_ms);
	const double cpu_med = median(cpu, steps);
	printf("median ms/step %.3f  mean %.3f  agent-steps/s %.3g\n", med, wall / steps,
	       (double)sc.agent_count / (med * 1e-3));
	printf("median CPU ms/step (all threads) %.3f  = %.3f per worker\n", cpu_med, cpu_med / workers);
	printf("stages (median ms): pref %.3f  agent tree %.3f  velocities %.3f  integrate+refit %.3f\n",
	       median(pref, steps), median(tree, steps), median(vel, steps), median(integ, steps));
	printf("per step: neighbours %.1f/agent  lp3 fallbacks %.1f  allocations in steps %" PRIu64 "\n",
	       (double)neighbors / steps / sc.agent_count, (double)lp3 / steps, allocs);
	printf("final state hash %016" PRIx64 "\n", orca_world_state_hash(w));
	orca_world_destroy(w);
	free(ids);
	free(total);
	free(tree);
	free(vel);
	free(integ);
	free(pref);
	free(cpu);
	scenario_free(&sc);
	return 0;
}
