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

#include "scenario.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* CPU time of the whole process: on a shared machine it shows what a step
 * costs when the cores are not taken away by other programs. */
static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void usage(void)
{
	fprintf(stderr, "usage: orca_bench random N | setup FILE | circle N  [--steps K] [--workers W] [--ref-dir DIR] [--mode M]\n"
	                "  --mode reference|quality  avoidance mode (default reference, RVO2 bit for bit)\n"
	                "  random N loads DIR/randomN_setup.csv (N = 1000, 10000, 50000)\n"
	                "  setup FILE loads any *_setup.csv (agent_id,x,y,goal_x,goal_y)\n"
	                "  circle N builds RVO2's Circle example with N agents (R = 200N/250)\n");
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

	const double t_setup = now_ms();
	orca_agent_id *ids = calloc(sc.agent_count, sizeof *ids);
	orca_world *w;
	int rc = scenario_make_world(&sc, workers, &w, ids);
	if (rc == ORCA_OK)
		rc = orca_world_set_avoidance(w, mode);
	if (rc != ORCA_OK) {
		fprintf(stderr, "orca_bench: %s\n", orca_strerror(rc));
		return 1;
	}
	const double setup_ms = now_ms() - t_setup;

	double *total = calloc((size_t)steps, sizeof *total), *tree = calloc((size_t)steps, sizeof *tree);
	double *vel = calloc((size_t)steps, sizeof *vel), *integ = calloc((size_t)steps, sizeof *integ);
	double *pref = calloc((size_t)steps, sizeof *pref), *cpu = calloc((size_t)steps, sizeof *cpu);
	uint64_t neighbors = 0, lp3 = 0, allocs = 0;
	const double t0 = now_ms();
	for (int s = 0; s < steps; ++s) {
		const double a = now_ms(), c = cpu_ms();
		rc = orca_world_step(w, sc.time_step);
		total[s] = now_ms() - a;
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
	const double wall = now_ms() - t0;
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
