/* retarget_bench — command→visible of the server load bench, without the
 * server, the network or the machine's load: the engine (and navigation, as
 * the server runs it) on a tests/data/ref random crowd laid out as
 * tests/bench/server_load.py's crowd scenario lays it out (crowd-load's
 * tiles and windows, targets at random points of the own window), each
 * "connection" retargeting 10 of its agents once a simulated second the way
 * crowd-load does (moving agents first, round-robin, the target 20 units
 * straight back), checked at each 10 Hz "snapshot" with crowd-load's rule
 * (at the target, moving within 60 degrees of it, or the velocity swung
 * toward it by 0.2 units/s). Prints p50/p99 of simulated seconds to visible
 * and the share never seen within 5 s. Simulated time, so the figure is the
 * same on a busy and a quiet machine; the load bench adds the wait for the
 * next tick and snapshot (command→next snapshot) and any tick-rate loss.
 *
 *   retarget_bench [--agents N] [--clients C] [--seconds S] [--workers W]
 *                  [--mode quality|reference] [--navigation 0|1] [--path-budget B]
 *                  [--max-p99-ms MS]
 * --max-p99-ms: exit 1 if p99 is above MS or more than 1 % are never seen
 * (the bar, simulated time: ctest `retarget_visible`).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <orca/nav.h>
#include <orca/orca.h>

#define HZ 20
#define SNAPSHOT_DIVISOR 2
#define RETARGET_COUNT 10
#define RETARGET_DISTANCE 20.0f
#define PROBE_MIN_SPEED 0.3f
#define TURN_SHOWN 0.2f
#define TIMEOUT_STEPS (5 * HZ)
#define WINDOW_AGENTS 1000.0

typedef struct spec {
	float x, y;
} spec;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rng_unit(void) {
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static int cmp_y(const void *a, const void *b) {
	const spec *p = a, *q = b;
	return (p->y > q->y) - (p->y < q->y);
}
static int cmp_x(const void *a, const void *b) {
	const spec *p = a, *q = b;
	return (p->x > q->x) - (p->x < q->x);
}
static int cmp_u32(const void *a, const void *b) {
	const uint32_t p = *(const uint32_t *)a, q = *(const uint32_t *)b;
	return (p > q) - (p < q);
}

typedef struct probe {
	uint32_t agent;
	int64_t sent_step;
	float tx, ty, vx0, vy0;
	bool live;
} probe;

int main(int argc, char **argv) {
	uint32_t agents = 50000, clients = 200, seconds = 30, workers = 2, path_budget = 256;
	double max_p99_ms = 0;
	int navigation = 1;
	orca_avoidance mode = ORCA_AVOIDANCE_QUALITY;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--agents")) agents = (uint32_t)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--clients")) clients = (uint32_t)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--seconds")) seconds = (uint32_t)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--workers")) workers = (uint32_t)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--navigation")) navigation = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--path-budget")) path_budget = (uint32_t)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--max-p99-ms")) max_p99_ms = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--mode"))
			mode = !strcmp(argv[i + 1], "reference") ? ORCA_AVOIDANCE_REFERENCE : ORCA_AVOIDANCE_QUALITY;
		else {
			fprintf(stderr, "usage: retarget_bench [--agents N] [--clients C] [--seconds S] [--workers W] "
			                "[--mode quality|reference] [--navigation 0|1] [--path-budget B] [--max-p99-ms MS]\n");
			return 2;
		}
	}
	char path[1024];
	snprintf(path, sizeof path, "%s/random%u_setup.csv", CROWD_REF_DIR, agents);
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "retarget_bench: cannot open %s\n", path);
		return 1;
	}
	spec *sp = malloc(sizeof *sp * agents);
	char line[512];
	uint32_t n = 0;
	while (n < agents && fgets(line, sizeof line, f)) {
		unsigned long id;
		float x, y, gx, gy;
		if (sscanf(line, "%lu,%f,%f,%f,%f", &id, &x, &y, &gx, &gy) == 5) sp[n++] = (spec){x, y};
	}
	fclose(f);
	/* crowd-load's tiles: bands by y, each cut by x into equal counts; a
	 * window of about WINDOW_AGENTS agents (spacing 4) around each tile */
	uint32_t bands = (uint32_t)lround(sqrt((double)clients));
	qsort(sp, n, sizeof *sp, cmp_y);
	uint32_t *first = calloc(clients + 1, sizeof *first);
	float *win = calloc(4 * (size_t)clients, sizeof *win);
	for (uint32_t b = 0, conn = 0; b < bands; b++) {
		uint32_t band_conns = clients / bands + (b < clients % bands ? 1 : 0);
		uint32_t lo = (uint32_t)((uint64_t)n * conn / clients), hi = (uint32_t)((uint64_t)n * (conn + band_conns) / clients);
		qsort(sp + lo, hi - lo, sizeof *sp, cmp_x);
		for (uint32_t k = 0; k < band_conns; k++, conn++) {
			first[conn] = (uint32_t)((uint64_t)n * conn / clients);
			first[conn + 1] = (uint32_t)((uint64_t)n * (conn + 1) / clients);
		}
	}
	const float side = (float)sqrt(WINDOW_AGENTS * 16.0);
	for (uint32_t c = 0; c < clients; c++) {
		float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
		for (uint32_t j = first[c]; j < first[c + 1]; j++) {
			x0 = fminf(x0, sp[j].x), y0 = fminf(y0, sp[j].y);
			x1 = fmaxf(x1, sp[j].x), y1 = fmaxf(y1, sp[j].y);
		}
		const float cx = 0.5f * (x0 + x1), cy = 0.5f * (y0 + y1);
		win[4 * c] = cx - side / 2, win[4 * c + 1] = cy - side / 2;
		win[4 * c + 2] = cx + side / 2, win[4 * c + 3] = cy + side / 2;
	}

	/* the world as crowd-server makes it (defaults of server/ops/config.c) */
	orca_world_def wd = orca_default_world_def();
	wd.worker_count = (int)workers;
	wd.avoidance = mode;
	wd.max_agents = n + 1000;
	wd.has_bounds = true;
	wd.bounds_min = (orca_vec2){-1000, -1000};
	wd.bounds_max = (orca_vec2){1000, 1000};
	orca_world *w;
	if (orca_world_create(&wd, &w) != ORCA_OK) return 1;
	orca_nav *nav = NULL;
	if (navigation) {
		orca_nav_def nd = orca_nav_default_def();
		nd.bounds_min = wd.bounds_min;
		nd.bounds_max = wd.bounds_max;
		nd.agent_radius = 1.5f;
		nd.path_budget = path_budget;
		nd.stuck_time = 10.0f;
		nd.arrival_distance = 0.5f;
		if (orca_nav_create(&nd, w, &nav) != ORCA_OK) return 1;
	}
	orca_agent_id *ids = malloc(sizeof *ids * n);
	for (uint32_t c = 0; c < clients; c++)
		for (uint32_t j = first[c]; j < first[c + 1]; j++) {
			orca_agent_def a = orca_default_agent_def();
			a.position = (orca_vec2){sp[j].x, sp[j].y};
			a.pref_speed = 1.5f;
			a.weight = 0.5f;
			a.steer_mode = ORCA_STEER_TARGET;
			const float *r = &win[4 * c];
			a.target = (orca_vec2){r[0] + (float)rng_unit() * (r[2] - r[0]), r[1] + (float)rng_unit() * (r[3] - r[1])};
			if (orca_agent_add(w, &a, &ids[j]) != ORCA_OK) return 1;
			if (nav) orca_nav_set_target(nav, ids[j], a.target);
		}

	const float dt = 1.0f / HZ;
	const uint32_t steps = seconds * HZ;
	probe *pr = calloc(n, sizeof *pr); /* one pending probe per agent at most */
	uint32_t *cursor = calloc(clients, sizeof *cursor);
	uint32_t *lat = malloc(sizeof *lat * (size_t)(seconds + 5) * clients * RETARGET_COUNT);
	uint32_t lat_n = 0, unseen = 0, superseded = 0, probes = 0;
	const uint32_t warmup = 5 * HZ; /* count probes sent after 5 s (crowd-load's ramp-up) */
	for (uint32_t step = 0; step < steps + TIMEOUT_STEPS; step++) {
		/* each connection once a second, spread over the second */
		for (uint32_t c = 0; c < clients && step < steps; c++) {
			if ((step + c * HZ / clients) % HZ != 0) continue;
			const uint32_t cnt = first[c + 1] - first[c];
			uint32_t chosen[RETARGET_COUNT], nc = 0;
			for (int pass = 0; pass < 2 && nc < RETARGET_COUNT; pass++)
				for (uint32_t k = 0; k < cnt && nc < RETARGET_COUNT; k++) {
					const uint32_t j = first[c] + (cursor[c] + k) % cnt;
					orca_agent_state st;
					orca_agent_get(w, ids[j], &st);
					const float sp2 = st.velocity.x * st.velocity.x + st.velocity.y * st.velocity.y;
					if (pass == 0 && sp2 < PROBE_MIN_SPEED * PROBE_MIN_SPEED) continue;
					bool dup = false;
					for (uint32_t q = 0; q < nc; q++) dup |= chosen[q] == j;
					if (!dup) chosen[nc++] = j;
				}
			cursor[c] = (cursor[c] + nc) % (cnt ? cnt : 1);
			for (uint32_t q = 0; q < nc; q++) {
				const uint32_t j = chosen[q];
				orca_agent_state st;
				orca_agent_get(w, ids[j], &st);
				const float *r = &win[4 * c];
				const float speed = sqrtf(st.velocity.x * st.velocity.x + st.velocity.y * st.velocity.y);
				float bx = st.position.x, by = st.position.y, best = -1e30f;
				for (int att = 0; att < 12; att++) { /* crowd-load's pick_target */
					const float ang = (float)(rng_unit() * 2.0 * M_PI);
					float dx = cosf(ang), dy = sinf(ang);
					if (att == 0 && speed > 1e-3f) dx = -st.velocity.x / speed, dy = -st.velocity.y / speed;
					float x = fminf(fmaxf(st.position.x + dx * RETARGET_DISTANCE, r[0]), r[2]);
					float y = fminf(fmaxf(st.position.y + dy * RETARGET_DISTANCE, r[1]), r[3]);
					const float ex = x - st.position.x, ey = y - st.position.y, len = sqrtf(ex * ex + ey * ey);
					if (len < 1e-3f) continue;
					const float turn = speed > 1e-3f ? -(ex * st.velocity.x + ey * st.velocity.y) / (len * speed) : 1.0f;
					const float score = turn + (len >= 0.5f * RETARGET_DISTANCE ? 1.0f : len / RETARGET_DISTANCE);
					if (score > best) best = score, bx = x, by = y;
					if (turn > 0.5f && len >= 0.5f * RETARGET_DISTANCE) break;
				}
				if (pr[j].live && pr[j].sent_step >= warmup) superseded++;
				pr[j] = (probe){j, step, bx, by, st.velocity.x, st.velocity.y, true};
				orca_agent_set_target(w, ids[j], (orca_vec2){bx, by});
				if (nav) orca_nav_set_target(nav, ids[j], (orca_vec2){bx, by});
				if (step >= warmup) probes++;
			}
		}
		if (nav) orca_nav_update(nav, dt);
		orca_world_step(w, dt);
		if ((step + 1) % SNAPSHOT_DIVISOR) continue;
		for (uint32_t j = 0; j < n; j++) {
			probe *p = &pr[j];
			if (!p->live) continue;
			orca_agent_state st;
			orca_agent_get(w, ids[j], &st);
			const float dx = p->tx - st.position.x, dy = p->ty - st.position.y;
			const float vx = st.velocity.x, vy = st.velocity.y;
			const float d = sqrtf(dx * dx + dy * dy), s = sqrtf(vx * vx + vy * vy);
			const bool seen = d < 0.5f || (s > 0.02f && dx * vx + dy * vy >= 0.5f * d * s) ||
			                  ((vx - p->vx0) * dx + (vy - p->vy0) * dy) >= TURN_SHOWN * d;
			const uint32_t waited = step + 1 - (uint32_t)p->sent_step;
			if (seen || waited > TIMEOUT_STEPS) {
				if (p->sent_step >= warmup) {
					if (seen) lat[lat_n++] = waited;
					else unseen++;
				}
				p->live = false;
			}
		}
	}
	qsort(lat, lat_n, sizeof *lat, cmp_u32);
	const double ms = 1000.0 / HZ;
	printf("retarget_bench: %u agents, %u clients, %s, navigation %s (path budget %u), %u s at %d Hz\n", n, clients,
	       mode == ORCA_AVOIDANCE_QUALITY ? "quality" : "reference", nav ? "on" : "off", path_budget, seconds, HZ);
	printf("probes %u: seen %u, never seen within 5 s %u (%.2f %%), retargeted again first %u\n", probes, lat_n, unseen,
	       probes ? 100.0 * unseen / probes : 0.0, superseded);
	if (lat_n)
		printf("command->visible (simulated, steps of the step after the command): p50 %.0f ms  p90 %.0f ms  p99 %.0f ms  "
		       "max %.0f ms\n",
		       lat[lat_n / 2] * ms, lat[lat_n * 90 / 100] * ms, lat[lat_n * 99 / 100] * ms, lat[lat_n - 1] * ms);
	int rc = 0;
	if (max_p99_ms > 0) {
		const double p99 = lat_n ? lat[lat_n * 99 / 100] * ms : 1e30;
		if (p99 > max_p99_ms || unseen * 100u > probes) {
			fprintf(stderr, "retarget_bench: FAIL p99 %.0f ms (bar %.0f), never seen %u of %u (bar 1 %%)\n", p99,
			        max_p99_ms, unseen, probes);
			rc = 1;
		}
	}
	if (nav) orca_nav_destroy(nav);
	orca_world_destroy(w);
	free(sp), free(first), free(win), free(ids), free(pr), free(cursor), free(lat);
	return rc;
}
