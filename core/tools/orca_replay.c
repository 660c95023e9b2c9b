/* orca-replay — run a reference scenario set-up through the engine and write
 * its trajectory in the reference format (`step,agent_id,x,y,vx,vy`, %.9g),
 * so it can be compared with RVO2's files. Prints the final state hash.
 * --navigate: agents find their way around the obstacles (orca/nav.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orca/nav.h"
#include "scenario_nav.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: orca-replay SETUP OUT.csv [--cap N] [--workers W] [--navigate] [--mode reference|quality]\n"
	           "  SETUP   a *_setup.csv (agent_id,x,y,goal_x,goal_y) or blocks_setup.txt file\n"
	           "  OUT.csv trajectory rows step,agent_id,x,y,vx,vy (step 0 = initial state)\n"
	           "  --cap N      stop after N steps even if not every agent is at its goal (default 10000)\n"
	           "  --workers W  engine worker threads (default 1; results are identical for any W)\n"
	           "  --navigate   steer by paths on a navigation mesh around the obstacles (world: the\n"
	           "               set-up's bounding box plus a margin) instead of straight at the goal\n"
	           "  --mode M     avoidance: reference (default, RVO2 bit for bit) or quality\n");
}

static int write_rows(FILE *out, uint64_t step, const orca_world *w, const orca_agent_id *ids, uint32_t n)
{
	for (uint32_t i = 0; i < n; ++i) {
		orca_agent_state st;
		if (orca_agent_get(w, ids[i], &st) != ORCA_OK)
			return -1;
		fprintf(out, "%" PRIu64 ",%u,%.9g,%.9g,%.9g,%.9g\n", step, i, (double)st.position.x,
		        (double)st.position.y, (double)st.velocity.x, (double)st.velocity.y);
	}
	return ferror(out) ? -1 : 0;
}

static bool parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	const unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v > max)
		return false;
	*out = v;
	return true;
}

int main(int argc, char **argv)
{
	const char *setup = NULL, *out_path = NULL;
	unsigned long cap = 10000, workers = 1;
	bool navigate = false;
	orca_avoidance mode = ORCA_AVOIDANCE_REFERENCE;
	for (int i = 1; i < argc; ++i) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--cap") == 0 && i + 1 < argc) {
			if (!parse_uint(argv[++i], 100000000ul, &cap)) {
				fprintf(stderr, "orca-replay: bad --cap\n");
				return 2;
			}
		} else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc) {
			if (!parse_uint(argv[++i], 256ul, &workers) || workers < 1) {
				fprintf(stderr, "orca-replay: bad --workers (1..256)\n");
				return 2;
			}
		} else if (strcmp(argv[i], "--navigate") == 0) {
			navigate = true;
		} else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc) {
			++i;
			if (strcmp(argv[i], "reference") == 0) {
				mode = ORCA_AVOIDANCE_REFERENCE;
			} else if (strcmp(argv[i], "quality") == 0) {
				mode = ORCA_AVOIDANCE_QUALITY;
			} else {
				fprintf(stderr, "orca-replay: bad --mode (reference|quality)\n");
				return 2;
			}
		} else if (!setup) {
			setup = argv[i];
		} else if (!out_path) {
			out_path = argv[i];
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!setup || !out_path) {
		usage(stderr);
		return 2;
	}

	scenario sc;
	char err[256];
	if (scenario_load(setup, &sc, err, sizeof err) != 0) {
		fprintf(stderr, "orca-replay: %s\n", err);
		return 1;
	}
	orca_agent_id *ids = calloc(sc.agent_count ? sc.agent_count : 1, sizeof *ids);
	orca_world *w = NULL;
	int rc = ids ? scenario_make_world(&sc, (int)workers, &w, ids) : ORCA_ERR_NO_MEMORY;
	if (rc == ORCA_OK)
		rc = orca_world_set_avoidance(w, mode);
	if (rc != ORCA_OK) {
		fprintf(stderr, "orca-replay: %s\n", orca_strerror(rc));
		return 1;
	}
	orca_nav *nav = NULL;
	if (navigate && (rc = scenario_navigate(&sc, w, ids, &nav)) != ORCA_OK) {
		fprintf(stderr, "orca-replay: navigation: %s\n", orca_strerror(rc));
		return 1;
	}
	uint32_t unreachable = 0, stuck = 0;
	FILE *out = fopen(out_path, "w");
	if (!out) {
		fprintf(stderr, "orca-replay: cannot write %s: %s\n", out_path, strerror(errno));
		return 1;
	}
	int status = 0;
	fprintf(out, "step,agent_id,x,y,vx,vy\n");
	uint64_t step = 0;
	if (write_rows(out, 0, w, ids, sc.agent_count) != 0)
		status = 1;
	while (status == 0 && step < cap) {
		if (nav) {
			uint32_t n;
			orca_nav_update(nav, sc.time_step);
			const orca_nav_event *ev = orca_nav_events(nav, &n);
			for (uint32_t k = 0; k < n; ++k) {
				unreachable += ev[k].kind == ORCA_NAV_UNREACHABLE;
				stuck += ev[k].kind == ORCA_NAV_STUCK;
			}
		}
		rc = orca_world_step(w, sc.time_step);
		if (rc != ORCA_OK) {
			fprintf(stderr, "orca-replay: step: %s\n", orca_strerror(rc));
			status = 1;
			break;
		}
		++step;
		if (write_rows(out, step, w, ids, sc.agent_count) != 0)
			status = 1;
		if (scenario_done(&sc, w, ids))
			break;
	}
	if (fclose(out) != 0)
		status = 1;
	printf("steps %" PRIu64 " agents %u done %s hash %016" PRIx64 "\n", step, sc.agent_count,
	       scenario_done(&sc, w, ids) ? "yes" : "no", orca_world_state_hash(w));
	if (nav)
		printf("navigation: unreachable %u stuck %u\n", unreachable, stuck);
	orca_nav_destroy(nav);
	orca_world_destroy(w);
	free(ids);
	scenario_free(&sc);
	return status;
}
