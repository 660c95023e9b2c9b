/* steerbench — SteerSuite's test cases (tests/data/steersuite, converted by
 * tests/bench/steersuite/convert.py) run the way the server runs a crowd: the
 * engine (orca.h) in quality or reference avoidance, navigation (nav.h) over
 * the case's obstacles, each agent's goal given by orca_nav_set_target with
 * the server's defaults (neighbour distance 15, 10 neighbours, time horizons
 * 10, weight 0.5, max speed 2 or the desired speed if higher, arrival 0.5,
 * 8 tiles and 256 paths per update, stuck after 10 s). Each agent walks its
 * goals in order at its desired speed; within its radius of its last goal it
 * has arrived and leaves the world, as SteerSuite disables an agent there. An
 * agent told UNREACHABLE walks to the nearest reachable point and leaves there
 * without arriving. A case ends when every agent has left or at its time limit.
 *
 * Prints one Markdown row per case and mode (the columns of
 * steerbench_case.h's sb_summary); detourcrowd_bench's `steersuite` mode
 * prints the same row for DetourCrowd. Shortest paths come from a second
 * navigation over the same obstacles, with room for the longest corridor.
 *
 * With --expect FILE, each (case, mode) must have a line there (the ctest
 * ratchet, tests/data/steersuite/expected.txt) and the run fails if fewer
 * agents arrive or more deep overlaps happen than it allows.
 *
 * With --stuck, every agent still walking at the end gets a line on stderr:
 * where it started, its goal, where it stands, its velocity and navigation
 * phase, and its path's next corner (to find why a case does not finish).
 * --time-horizon and --time-horizon-obst replace the server's default time
 * horizons (10 s each) for every agent.
 *
 *   steerbench [--mode quality|reference|quality,reference] [--workers N]
 *              [--time-limit S] [--expect FILE] [--time-horizon S] [--time-horizon-obst S]
 *              [--stuck] [--no-header] CASE.txt... */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_clock.h"
#include "orca/nav.h"
#include "orca/orca.h"
#include "steerbench_case.h"

#define PROBE_BATCH 256u
#define PROBE_CORNERS 4096u

static float dist(orca_vec2 a, orca_vec2 b) {
	const float dx = a.x - b.x, dy = a.y - b.y;
	return sqrtf(dx * dx + dy * dy);
}

/* Add the case's obstacles; returns how many were refused (reported). */
static uint32_t add_obstacles(const sb_case *c, orca_world *w) {
	uint32_t bad = 0;
	for (uint32_t k = 0; k < c->obstacle_count; ++k)
		if (orca_obstacle_add(w, c->obstacles[k], c->obstacle_sizes[k], NULL) != ORCA_OK) bad++;
	return bad;
}

static orca_nav_def nav_def(const sb_case *c) {
	orca_nav_def d = orca_nav_default_def();
	d.bounds_min = c->bounds_min;
	d.bounds_max = c->bounds_max;
	d.agent_radius = c->max_radius;
	d.arrival_distance = 0.5f; /* the server's --nav-arrival-distance */
	return d;
}

/* Shortest path length of every agent through its goals, leg by leg, on a
 * navigation over the same obstacles (no crowd): probes placed at each leg's
 * start, planned in batches, their string-pulled corners summed. A leg with
 * no path counts its straight length. */
static int shortest_paths(const sb_case *c, float *out) {
	orca_world_def wd = orca_default_world_def();
	wd.agent_capacity = PROBE_BATCH + 1;
	orca_world *w;
	if (orca_world_create(&wd, &w) != ORCA_OK) return -1;
	add_obstacles(c, w);
	orca_nav_def nd = nav_def(c);
	nd.path_budget = 0;
	nd.tile_budget = 0;
	nd.max_path = PROBE_CORNERS;
	nd.max_nodes = 65535;
	orca_nav *nav;
	if (orca_nav_create(&nd, w, &nav) != ORCA_OK) {
		orca_world_destroy(w);
		return -1;
	}
	orca_vec2 *corners = malloc(PROBE_CORNERS * sizeof *corners);
	uint32_t *leg_agent = malloc(PROBE_BATCH * sizeof *leg_agent);
	orca_vec2 *leg_from = malloc(PROBE_BATCH * sizeof *leg_from), *leg_to = malloc(PROBE_BATCH * sizeof *leg_to);
	orca_agent_id *ids = malloc(PROBE_BATCH * sizeof *ids);
	if (!corners || !leg_agent || !leg_from || !leg_to || !ids) {
		free(corners), free(leg_agent), free(leg_from), free(leg_to), free(ids);
		orca_nav_destroy(nav);
		orca_world_destroy(w);
		return -1;
	}
	for (uint32_t i = 0; i < c->agent_count; ++i) out[i] = 0.0f;
	uint32_t ai = 0, gi = 0;
	int rc = 0;
	while (ai < c->agent_count && rc == 0) {
		uint32_t n = 0;
		for (; n < PROBE_BATCH && ai < c->agent_count; ++n) {
			const sb_agent *a = &c->agents[ai];
			leg_agent[n] = ai;
			leg_from[n] = gi == 0 ? a->start : a->goals[gi - 1];
			leg_to[n] = a->goals[gi];
			orca_agent_def d = orca_default_agent_def();
			d.radius = a->radius;
			d.position = d.target = leg_from[n];
			d.steer_mode = ORCA_STEER_TARGET;
			if (orca_agent_add(w, &d, &ids[n]) != ORCA_OK ||
			    orca_nav_set_target(nav, ids[n], leg_to[n]) != ORCA_OK) {
				rc = -1;
				break;
			}
			if (++gi == a->goal_count) gi = 0, ai++;
		}
		if (rc == 0 && orca_nav_update(nav, c->time_step) != ORCA_OK) rc = -1;
		for (uint32_t k = 0; k < n && rc == 0; ++k) {
			orca_nav_path p;
			float len = dist(leg_from[k], leg_to[k]);
			if (orca_nav_get_path(nav, ids[k], &p, corners, PROBE_CORNERS) == ORCA_OK &&
			    p.corner_count > 0 && (p.phase == ORCA_NAV_MOVING || p.phase == ORCA_NAV_DONE)) {
				const uint32_t m = p.corner_count < PROBE_CORNERS ? p.corner_count : PROBE_CORNERS;
				len = dist(leg_from[k], corners[0]);
				for (uint32_t j = 1; j < m; ++j) len += dist(corners[j - 1], corners[j]);
				len += dist(corners[m - 1], leg_to[k]); /* 0 unless the corridor stops short */
			}
			out[leg_agent[k]] += len;
		}
		for (uint32_t k = 0; k < n; ++k) {
			orca_nav_stop(nav, ids[k]);
			orca_agent_remove(w, ids[k]);
		}
	}
	free(corners), free(leg_agent), free(leg_from), free(leg_to), free(ids);
	orca_nav_destroy(nav);
	orca_world_destroy(w);
	return rc;
}

static uint32_t index_of(orca_agent_id id) {
	return (id & ((1u << ORCA_ID_INDEX_BITS) - 1u)) - 1u; /* a fresh world hands out slot + 1 */
}

/* --stuck: one line per agent still walking */
static void report_stuck(const sb_case *c, const char *mode, orca_nav *nav, const orca_agent_id *ids,
                         const orca_agent_motion *mo, const bool *active, const uint32_t *goal) {
	for (uint32_t i = 0; i < c->agent_count; ++i) {
		if (!active[i]) continue;
		const sb_agent *a = &c->agents[i];
		orca_nav_path p = {0};
		orca_vec2 corner[1] = {{0}};
		orca_nav_get_path(nav, ids[i], &p, corner, 1);
		fprintf(stderr,
		        "%s %s: agent %u from (%.2f, %.2f) to goal %u (%.2f, %.2f): at (%.2f, %.2f) velocity (%.2f, "
		        "%.2f), phase %d%s, %u corners, next (%.2f, %.2f)\n",
		        c->name, mode, i, a->start.x, a->start.y, goal[i], a->goals[goal[i]].x, a->goals[goal[i]].y,
		        mo[i].position.x, mo[i].position.y, mo[i].velocity.x, mo[i].velocity.y, (int)p.phase,
		        p.unreachable ? " unreachable" : "", p.corner_count, corner[0].x, corner[0].y);
	}
}

/* The agents' time horizons: the server's defaults unless --time-horizon
 * and --time-horizon-obst say otherwise. */
typedef struct horizons {
	float agents, obstacles;
} horizons;

static int run(const sb_case *c, const float *shortest, orca_avoidance avoidance, int workers, float time_limit,
               horizons horizon, bool stuck, sb_summary *out, double *ms_per_step) {
	const uint32_t n = c->agent_count;
	orca_world_def wd = orca_default_world_def();
	wd.worker_count = workers;
	wd.agent_capacity = n + 1;
	wd.avoidance = avoidance;
	wd.has_bounds = true;
	wd.bounds_min = c->bounds_min;
	wd.bounds_max = c->bounds_max;
	orca_world *w;
	if (orca_world_create(&wd, &w) != ORCA_OK) return -1;
	const uint32_t bad = add_obstacles(c, w);
	if (bad) fprintf(stderr, "steerbench: %s: %u obstacles refused by orca_obstacle_add\n", c->name, bad);
	orca_agent_def *defs = calloc(n, sizeof *defs);
	orca_agent_id *ids = calloc(n, sizeof *ids);
	orca_agent_motion *mo = calloc(n, sizeof *mo);
	orca_vec2 *pos = calloc(n, sizeof *pos);
	bool *active = calloc(n, sizeof *active), *leg_unreachable = calloc(n, sizeof *leg_unreachable);
	uint32_t *goal = calloc(n, sizeof *goal);
	sb_metrics *m = sb_metrics_create(c, shortest);
	orca_nav *nav = NULL;
	int rc = -1;
	if (!defs || !ids || !mo || !pos || !active || !leg_unreachable || !goal || !m) goto done;
	for (uint32_t i = 0; i < n; ++i) {
		const sb_agent *a = &c->agents[i];
		orca_agent_def d = orca_default_agent_def(); /* the server's defaults, as config.c sets them */
		d.neighbor_dist = 15.0f;
		d.max_neighbors = 10;
		d.time_horizon = horizon.agents;
		d.time_horizon_obst = horizon.obstacles;
		d.weight = 0.5f;
		d.radius = a->radius;
		d.pref_speed = a->speed;
		d.max_speed = a->speed > 2.0f ? a->speed : 2.0f;
		d.steer_mode = ORCA_STEER_TARGET;
		d.position = d.target = a->start;
		d.velocity = a->velocity;
		defs[i] = d;
		pos[i] = a->start;
		active[i] = true;
	}
	uint32_t failed = 0;
	if (orca_world_add_agents(w, defs, n, ids, &failed) != ORCA_OK) {
		fprintf(stderr, "steerbench: %s: agent %u refused\n", c->name, failed);
		goto done;
	}
	const orca_nav_def nd = nav_def(c);
	if (orca_nav_create(&nd, w, &nav) != ORCA_OK) goto done;
	for (uint32_t i = 0; i < n; ++i)
		if (orca_nav_set_target(nav, ids[i], c->agents[i].goals[0]) != ORCA_OK) goto done;
	const float dt = c->time_step;
	const uint64_t max_steps = (uint64_t)ceil((double)time_limit / dt);
	uint32_t left = n;
	double ms = 0.0;
	uint64_t step = 0;
	while (left > 0 && step < max_steps) {
		const double t0 = wall_ms();
		if (orca_nav_update(nav, dt) != ORCA_OK) goto done;
		uint32_t ev_count;
		const orca_nav_event *ev = orca_nav_events(nav, &ev_count);
		/* events first, copied: the world step below does not change them */
		for (uint32_t e = 0; e < ev_count; ++e) {
			const uint32_t i = index_of(ev[e].agent);
			if (i >= n || !active[i]) continue;
			if (ev[e].kind == ORCA_NAV_UNREACHABLE) {
				leg_unreachable[i] = true;
				sb_metrics_unreachable(m, i);
			} else if (ev[e].kind == ORCA_NAV_ARRIVED && leg_unreachable[i]) {
				/* as near as it can get: on to the next goal, or out */
				leg_unreachable[i] = false;
				if (++goal[i] < c->agents[i].goal_count) {
					orca_nav_set_target(nav, ids[i], c->agents[i].goals[goal[i]]);
				} else {
					active[i] = false;
					left--;
					orca_nav_stop(nav, ids[i]);
					orca_agent_remove(w, ids[i]);
				}
			}
		}
		if (orca_world_step(w, dt) != ORCA_OK) goto done;
		ms += wall_ms() - t0;
		step++;
		orca_agents_read_motion(w, ids, n, mo);
		for (uint32_t i = 0; i < n; ++i)
			if (active[i]) pos[i] = mo[i].position;
		sb_metrics_step(m, dt, pos, active);
		const double now = (double)step * dt;
		for (uint32_t i = 0; i < n; ++i) {
			if (!active[i] || leg_unreachable[i]) continue;
			const sb_agent *a = &c->agents[i];
			if (dist(pos[i], a->goals[goal[i]]) > a->radius) continue;
			if (++goal[i] < a->goal_count) {
				orca_nav_set_target(nav, ids[i], a->goals[goal[i]]);
				continue;
			}
			sb_metrics_arrived(m, i, now);
			active[i] = false;
			left--;
			orca_nav_stop(nav, ids[i]);
			orca_agent_remove(w, ids[i]);
		}
	}
	if (stuck)
		report_stuck(c, avoidance == ORCA_AVOIDANCE_QUALITY ? "quality" : "reference", nav, ids, mo, active,
		             goal);
	sb_metrics_summary(m, out);
	*ms_per_step = step ? ms / (double)step : 0.0;
	rc = 0;
done:
	sb_metrics_destroy(m);
	orca_nav_destroy(nav);
	orca_world_destroy(w);
	free(defs), free(ids), free(mo), free(pos), free(active), free(leg_unreachable), free(goal);
	return rc;
}

int main(int argc, char **argv) {
	const char *modes = "quality,reference", *expect = NULL;
	int workers = 1;
	float limit_override = 0.0f;
	bool header = true, stuck = false;
	horizons horizon = {10.0f, 10.0f};
	int first = argc;
	for (int i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			modes = argv[++i];
		else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
			workers = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--time-limit") && i + 1 < argc)
			limit_override = strtof(argv[++i], NULL);
		else if (!strcmp(argv[i], "--expect") && i + 1 < argc)
			expect = argv[++i];
		else if (!strcmp(argv[i], "--no-header"))
			header = false;
		else if (!strcmp(argv[i], "--time-horizon") && i + 1 < argc)
			horizon.agents = strtof(argv[++i], NULL);
		else if (!strcmp(argv[i], "--time-horizon-obst") && i + 1 < argc)
			horizon.obstacles = strtof(argv[++i], NULL);
		else if (!strcmp(argv[i], "--stuck"))
			stuck = true;
		else if (argv[i][0] == '-') {
			first = argc;
			break;
		} else {
			first = i;
			break;
		}
	}
	if (first >= argc || workers < 1 || !(horizon.agents > 0.0f) || !(horizon.obstacles > 0.0f)) {
		fprintf(stderr, "usage: steerbench [--mode quality|reference|quality,reference] [--workers N] "
		                "[--time-limit S] [--expect FILE] [--time-horizon S] [--time-horizon-obst S] [--stuck] "
		                "[--no-header] CASE.txt...\n");
		return 2;
	}
	if (header) sb_print_header();
	int status = 0;
	for (int i = first; i < argc; ++i) {
		sb_case c;
		char err[512];
		if (sb_case_load(argv[i], &c, err, sizeof err) != 0) {
			fprintf(stderr, "steerbench: %s\n", err);
			return 1;
		}
		float *shortest = malloc(c.agent_count * sizeof *shortest);
		if (!shortest || shortest_paths(&c, shortest) != 0) {
			fprintf(stderr, "steerbench: %s: shortest paths failed\n", c.name);
			return 1;
		}
		static const struct {
			const char *name;
			orca_avoidance mode;
		} all[] = {{"quality", ORCA_AVOIDANCE_QUALITY}, {"reference", ORCA_AVOIDANCE_REFERENCE}};
		for (size_t k = 0; k < sizeof all / sizeof all[0]; ++k) {
			if (!strstr(modes, all[k].name)) continue;
			sb_expect ex = {0};
			if (expect) {
				if (sb_expect_load(expect, c.name, all[k].name, &ex) != 0 || !ex.found) {
					fprintf(stderr, "steerbench: %s %s: no line in %s\n", c.name, all[k].name,
					        expect);
					status = 1;
					continue;
				}
			}
			const float limit = limit_override > 0.0f  ? limit_override
			                    : ex.time_limit > 0.0f ? ex.time_limit
			                                           : c.time_limit;
			sb_summary s;
			double ms;
			if (run(&c, shortest, all[k].mode, workers, limit, horizon, stuck, &s, &ms) != 0) {
				fprintf(stderr, "steerbench: %s %s: run failed\n", c.name, all[k].name);
				return 1;
			}
			sb_print_row(c.name, all[k].name, &s, ms);
			if (expect && (s.arrived < ex.min_arrived || s.deep > ex.max_deep)) {
				fprintf(stderr,
				        "steerbench: %s %s: %u arrived (at least %u expected), %llu deep overlaps (at "
				        "most %llu)\n",
				        c.name, all[k].name, s.arrived, ex.min_arrived, (unsigned long long)s.deep,
				        (unsigned long long)ex.max_deep);
				status = 1;
			}
		}
		free(shortest);
		sb_case_free(&c);
	}
	return status;
}
