/* load_setup.c — agents for crowd-load from a *_setup.csv (agent_id,x,y,
 * goal_x,goal_y, as in tests/data/ref/), split into one compact tile per
 * connection: horizontal bands by y, each band cut by x into equal counts, so a
 * connection's window around its tile sees its own agents. */
#include "load.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_y(const void *a, const void *b) {
	const load_agent_spec *p = a, *q = b;
	return (p->y > q->y) - (p->y < q->y);
}

static int cmp_x(const void *a, const void *b) {
	const load_agent_spec *p = a, *q = b;
	return (p->x > q->x) - (p->x < q->x);
}

static int read_csv(const char *path, load_agent_spec **out, uint32_t *count) {
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "crowd-load: cannot open %s\n", path);
		return -1;
	}
	char line[512];
	uint32_t n = 0, cap = 0;
	load_agent_spec *a = NULL;
	unsigned line_no = 0;
	while (fgets(line, sizeof line, f)) {
		line_no++;
		if (line_no == 1 && strncmp(line, "agent_id", 8) == 0) continue;
		if (line[0] == '\n' || line[0] == '#') continue;
		unsigned long id;
		float x, y, gx, gy;
		if (sscanf(line, "%lu,%f,%f,%f,%f", &id, &x, &y, &gx, &gy) != 5 || !isfinite(x) || !isfinite(y) ||
		    !isfinite(gx) || !isfinite(gy)) {
			fprintf(stderr, "crowd-load: %s:%u: expected agent_id,x,y,goal_x,goal_y\n", path, line_no);
			free(a);
			fclose(f);
			return -1;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			load_agent_spec *na = realloc(a, cap * sizeof *na);
			if (!na) {
				free(a);
				fclose(f);
				return -1;
			}
			a = na;
		}
		a[n++] = (load_agent_spec){x, y, gx, gy};
	}
	fclose(f);
	if (n == 0) {
		fprintf(stderr, "crowd-load: %s has no agents\n", path);
		free(a);
		return -1;
	}
	*out = a;
	*count = n;
	return 0;
}

int load_plan_from_csv(load_plan *plan, const char *path, uint32_t connections, uint32_t max_per_conn, double w,
                       double h) {
	memset(plan, 0, sizeof *plan);
	uint32_t n;
	if (read_csv(path, &plan->agents, &n) < 0) return -1;
	uint64_t cap = (uint64_t)connections * max_per_conn;
	if (n > cap) n = (uint32_t)cap; /* the first rows of the file */
	plan->connections = connections;
	plan->from_file = true;
	plan->first = calloc(connections + 1, sizeof *plan->first);
	plan->window = calloc(4 * (size_t)connections, sizeof *plan->window);
	if (!plan->first || !plan->window) {
		load_plan_free(plan);
		return -1;
	}
	uint32_t bands = (uint32_t)lround(sqrt((double)connections));
	if (bands < 1) bands = 1;
	qsort(plan->agents, n, sizeof *plan->agents, cmp_y);
	uint32_t conn = 0;
	for (uint32_t b = 0; b < bands; b++) {
		uint32_t band_conns = connections / bands + (b < connections % bands ? 1 : 0);
		uint32_t lo = (uint32_t)((uint64_t)n * conn / connections);
		uint32_t hi = (uint32_t)((uint64_t)n * (conn + band_conns) / connections);
		qsort(plan->agents + lo, hi - lo, sizeof *plan->agents, cmp_x);
		for (uint32_t k = 0; k < band_conns; k++, conn++) {
			plan->first[conn] = (uint32_t)((uint64_t)n * conn / connections);
			plan->first[conn + 1] = (uint32_t)((uint64_t)n * (conn + 1) / connections);
		}
	}
	for (uint32_t i = 0; i < connections; i++) {
		float min_x = INFINITY, min_y = INFINITY, max_x = -INFINITY, max_y = -INFINITY;
		for (uint32_t j = plan->first[i]; j < plan->first[i + 1]; j++) {
			const load_agent_spec *a = &plan->agents[j];
			min_x = fminf(min_x, a->x);
			min_y = fminf(min_y, a->y);
			max_x = fmaxf(max_x, a->x);
			max_y = fmaxf(max_y, a->y);
		}
		if (plan->first[i] == plan->first[i + 1]) min_x = min_y = max_x = max_y = 0;
		float *win = &plan->window[4 * i];
		if (w > 0 && h > 0) {
			float cx = 0.5f * (min_x + max_x), cy = 0.5f * (min_y + max_y);
			win[0] = cx - (float)w / 2;
			win[1] = cy - (float)h / 2;
			win[2] = cx + (float)w / 2;
			win[3] = cy + (float)h / 2;
		} else {
			win[0] = min_x;
			win[1] = min_y;
			win[2] = max_x > min_x ? max_x : min_x + 1;
			win[3] = max_y > min_y ? max_y : min_y + 1;
		}
	}
	return 0;
}

void load_plan_free(load_plan *plan) {
	free(plan->agents);
	free(plan->first);
	free(plan->window);
	memset(plan, 0, sizeof *plan);
}
