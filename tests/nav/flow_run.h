/* flow_run.h — the four kinds of crowd where paths meet (issue 23), built
 * with the public APIs the server uses and its defaults: quality avoidance,
 * agents of radius 1.5, cruising at 1.5 (top speed 2), neighbours within 15
 * (10 of them), time horizons 10 s, 30 steps per second, navigation with the
 * server's definition (radius 1.5, stuck after 10 s, ARRIVED within 0.5) and
 * orca_nav_update before every orca_world_step, as the server's tick does.
 *
 *  - crossing: two corridors 12 wide (four agents abreast) crossing at right
 *    angles; `size` agents in each of the four arms, three abreast, each
 *    walking straight across to the opposite arm: each arm's block moves
 *    across as it stands (its front row to the far end);
 *  - door: a long wall with one door 9 wide (three agents); `size` agents on
 *    each side, eight abreast, each block moving across to the other side as
 *    it stands (its front row furthest);
 *  - evacuation: a room of `size` agents whose one exit is 4.5 wide (an agent
 *    is 3), each going to its own spot of a grid outside (5 apart);
 *  - city: 5 x 5 blocks of 14 with streets 8 wide between and around them
 *    (up to 8 x 8 for more than 300 agents: as many per street), `size`
 *    agents on random trips (at least 30 long) from street to street,
 *    starts and goals apart (seeded: the same trips every run).
 *
 * flow_run steps until every agent has arrived (an ARRIVED event each) and
 * then `settle` steps more, or until `max_steps` if not all arrive by then,
 * and reports: arrivals, the
 * step of the last first arrival, agents on their goals at the end (within
 * the nav's arrival distance plus a radius), agent-steps with a centre
 * inside a wall, pair-steps overlapping deeper than FLOW_DEEP and the
 * deepest overlap, STUCK events, and a hash of every step's world state and
 * of the events (equal for any worker count). */
#ifndef CROWD_NAV_FLOW_RUN_H
#define CROWD_NAV_FLOW_RUN_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nav_test_util.h"

#define FLOW_RADIUS 1.5f
#define FLOW_DT (1.0f / 30.0f)
#define FLOW_ARRIVAL 0.5f
#define FLOW_DEEP 0.01f
/* the server's default time horizons (--agent-time-horizon, -obst); the
 * nav_flow tool may set others */
static float flow_time_horizon = 10.0f, flow_time_horizon_obst = 10.0f;
#define FLOW_MAX_RECTS 64

typedef enum flow_kind { FLOW_CROSSING, FLOW_DOOR, FLOW_EVACUATION, FLOW_CITY, FLOW_KINDS } flow_kind;

static const char *const flow_kind_names[FLOW_KINDS] = {"crossing", "door", "evacuation", "city"};

typedef struct flow_setup {
	orca_vec2 lo, hi; /* world (and navigation) bounds */
	float rects[FLOW_MAX_RECTS][4];
	uint32_t rect_count;
	orca_vec2 *start, *goal;
	uint32_t agents;
} flow_setup;

typedef struct flow_result {
	uint32_t agents;
	uint32_t arrived;      /* agents told ARRIVED at least once */
	uint32_t on_goal;      /* at the end, within FLOW_ARRIVAL + radius of their goal */
	uint32_t last_arrival; /* step of the last first ARRIVED (0: not all arrived) */
	uint32_t steps;        /* steps run */
	uint32_t inside;       /* agent-steps with a centre inside a wall */
	uint32_t deep;         /* pair-steps overlapping deeper than FLOW_DEEP */
	float max_overlap;
	uint32_t stuck_events;
	uint32_t unreachable;
	uint64_t hash;         /* every step's state hash and every event */
} flow_result;

static float flow_frand(uint32_t *rng, float lo, float hi)
{
	*rng = *rng * 1664525u + 1013904223u;
	return lo + (hi - lo) * (float)(*rng >> 8) / 16777216.0f;
}

static void flow_rect(flow_setup *s, float x0, float y0, float x1, float y1)
{
	if (s->rect_count < FLOW_MAX_RECTS) {
		float *r = s->rects[s->rect_count++];
		r[0] = x0, r[1] = y0, r[2] = x1, r[3] = y1;
	}
}

static bool flow_alloc(flow_setup *s, uint32_t n)
{
	s->agents = n;
	s->start = calloc(n ? n : 1, sizeof *s->start);
	s->goal = calloc(n ? n : 1, sizeof *s->goal);
	return s->start && s->goal;
}

static void flow_setup_free(flow_setup *s)
{
	free(s->start);
	free(s->goal);
}

/* Four arms of `size` agents each, three abreast 3.5 apart, rows 4 apart. */
static bool flow_crossing(flow_setup *s, uint32_t size)
{
	const uint32_t rows = (size + 2) / 3;
	const float h = 6.0f, first = h + 4.0f, last = first + 4.0f * (float)(rows ? rows - 1 : 0), L = last + 6.0f;
	s->lo = (orca_vec2){-L, -L};
	s->hi = (orca_vec2){L, L};
	flow_rect(s, h, h, L, L);
	flow_rect(s, -L, h, -h, L);
	flow_rect(s, -L, -L, -h, -h);
	flow_rect(s, h, -L, L, -h);
	if (!flow_alloc(s, 4 * size))
		return false;
	static const float dir[4][2] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}}; /* toward the centre: from W, S, E, N */
	uint32_t k = 0;
	for (uint32_t i = 0; i < size; ++i)
		for (int a = 0; a < 4; ++a) {
			const float along = first + 4.0f * (float)(i / 3), lat = 3.5f * ((float)(i % 3) - 1.0f);
			const float to = last + first - along; /* the block moves across as it stands: the front row goes furthest */
			const float dx = dir[a][0], dy = dir[a][1];
			s->start[k] = (orca_vec2){-dx * along - dy * lat, -dy * along + dx * lat};
			s->goal[k] = (orca_vec2){dx * to - dy * lat, dy * to + dx * lat};
			++k;
		}
	return true;
}

/* A wall across the world at y = 0 (2 thick), one door 9 wide at x = 0;
 * `size` agents each side, eight abreast 4 apart. */
static bool flow_door(flow_setup *s, uint32_t size)
{
	const uint32_t rows = (size + 7) / 8;
	const float X = 40.0f, door = 4.5f, last = 5.0f + 4.0f * (float)(rows ? rows - 1 : 0), Y = last + 6.0f;
	s->lo = (orca_vec2){-X, -Y};
	s->hi = (orca_vec2){X, Y};
	flow_rect(s, -X, -1.0f, -door, 1.0f);
	flow_rect(s, door, -1.0f, X, 1.0f);
	if (!flow_alloc(s, 2 * size))
		return false;
	uint32_t k = 0;
	for (uint32_t i = 0; i < size; ++i)
		for (int side = 0; side < 2; ++side) {
			const float x = -14.0f + 4.0f * (float)(i % 8), y = 5.0f + 4.0f * (float)(i / 8);
			const float to = last + 5.0f - y; /* the block moves across as it stands: the front row goes furthest */
			const float sy = side ? 1.0f : -1.0f;
			s->start[k] = (orca_vec2){x, sy * y};
			s->goal[k] = (orca_vec2){x, -sy * to};
			++k;
		}
	return true;
}

/* A room of `size` agents 3.6 apart; its one exit (4.5 wide) in the east wall;
 * a grid of goals 5 apart outside, 12 east of the wall (the room's east
 * column, out first, goes furthest). */
static bool flow_evacuation(flow_setup *s, uint32_t size)
{
	uint32_t cols = 1;
	while (cols * cols < size)
		++cols;
	const float R = 1.8f * (float)cols + 2.0f, exit_half = 2.25f, t = 2.0f;
	const float gx = R + t + 12.0f, gspan = 5.0f * (float)(cols - 1);
	const float Y = (R + t > gspan / 2.0f + 6.0f ? R + t : gspan / 2.0f + 6.0f) + 4.0f;
	s->lo = (orca_vec2){-R - t - 4.0f, -Y};
	s->hi = (orca_vec2){gx + gspan + 6.0f, Y};
	flow_rect(s, -R - t, R, R + t, R + t);       /* north */
	flow_rect(s, -R - t, -R - t, R + t, -R);     /* south */
	flow_rect(s, -R - t, -R, -R, R);             /* west */
	flow_rect(s, R, exit_half, R + t, R);        /* east, above the exit */
	flow_rect(s, R, -R, R + t, -exit_half);      /* east, below it */
	if (!flow_alloc(s, size))
		return false;
	for (uint32_t i = 0; i < size; ++i) {
		const float c = (float)(i % cols), r = (float)(i / cols), mid = (float)(cols - 1) / 2.0f;
		s->start[i] = (orca_vec2){3.6f * (c - mid), 3.6f * (r - mid)};
		s->goal[i] = (orca_vec2){gx + 5.0f * c, 5.0f * (r - mid)};
	}
	return true;
}

/* On a street of the city (x, y in [0, side]): at least `margin` from every block. */
static bool flow_city_street(const flow_setup *s, orca_vec2 p, float margin)
{
	for (uint32_t k = 0; k < s->rect_count; ++k) {
		const float *r = s->rects[k];
		if (p.x > r[0] - margin && p.x < r[2] + margin && p.y > r[1] - margin && p.y < r[3] + margin)
			return false;
	}
	return p.x > margin && p.x < s->hi.x - margin && p.y > margin && p.y < s->hi.y - margin;
}

/* Blocks per side: 5 up to 300 trips (the streets hold about 310 starts
 * 3.5 apart), more beyond, as many trips per street as at 300. */
static int flow_city_blocks(uint32_t size)
{
	int n = 5;
	while (n < 8 && (uint32_t)(n * n) * 300u < size * 25u)
		++n;
	return n;
}

static bool flow_city(flow_setup *s, uint32_t size)
{
	const int blocks = flow_city_blocks(size);
	const float side = 8.0f + 22.0f * (float)blocks;
	s->lo = (orca_vec2){0.0f, 0.0f};
	s->hi = (orca_vec2){side, side};
	for (int by = 0; by < blocks; ++by)
		for (int bx = 0; bx < blocks; ++bx)
			flow_rect(s, 8.0f + 22.0f * (float)bx, 8.0f + 22.0f * (float)by, 22.0f + 22.0f * (float)bx,
			          22.0f + 22.0f * (float)by);
	if (!flow_alloc(s, size))
		return false;
	uint32_t rng = 23u;
	for (uint32_t i = 0; i < size; ++i) {
		for (int tries = 0;; ++tries) {
			if (tries > 100000)
				return false;
			const orca_vec2 a = {flow_frand(&rng, 0, side), flow_frand(&rng, 0, side)};
			const orca_vec2 b = {flow_frand(&rng, 0, side), flow_frand(&rng, 0, side)};
			if (!flow_city_street(s, a, 2.0f) || !flow_city_street(s, b, 2.0f))
				continue;
			const float dx = a.x - b.x, dy = a.y - b.y;
			if (dx * dx + dy * dy < 30.0f * 30.0f)
				continue;
			bool apart = true;
			for (uint32_t k = 0; k < i && apart; ++k) {
				const float ax = a.x - s->start[k].x, ay = a.y - s->start[k].y;
				const float gx = b.x - s->goal[k].x, gy = b.y - s->goal[k].y;
				apart = ax * ax + ay * ay >= 3.5f * 3.5f && gx * gx + gy * gy >= 3.5f * 3.5f;
			}
			if (!apart)
				continue;
			s->start[i] = a;
			s->goal[i] = b;
			break;
		}
	}
	return true;
}

static bool flow_build(flow_kind kind, uint32_t size, flow_setup *s)
{
	memset(s, 0, sizeof *s);
	switch (kind) {
	case FLOW_CROSSING:
		return flow_crossing(s, size);
	case FLOW_DOOR:
		return flow_door(s, size);
	case FLOW_EVACUATION:
		return flow_evacuation(s, size);
	case FLOW_CITY:
		return flow_city(s, size);
	default:
		return false;
	}
}

static bool flow_inside_wall(const flow_setup *s, orca_vec2 p)
{
	for (uint32_t k = 0; k < s->rect_count; ++k) {
		const float *r = s->rects[k];
		if (p.x > r[0] && p.x < r[2] && p.y > r[1] && p.y < r[3])
			return true;
	}
	return false;
}

static uint64_t flow_mix(uint64_t h, uint64_t v)
{
	for (int b = 0; b < 8; ++b) {
		h ^= (v >> (8 * b)) & 0xffu;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Called after every step when given (nav_flow's pictures). */
typedef struct flow_observer {
	void (*after_step)(void *ctx, const orca_world *w, orca_nav *nav, uint32_t step, const flow_setup *s, const orca_agent_motion *m,
	                   const uint8_t *arrived);
	void *ctx;
} flow_observer;

/* 0 on success, -1 when a call failed. obs may be NULL. */
static int flow_run(flow_kind kind, uint32_t size, int workers, uint32_t max_steps, uint32_t settle,
                    const flow_observer *obs, flow_result *out)
{
	memset(out, 0, sizeof *out);
	flow_setup s;
	if (!flow_build(kind, size, &s)) {
		flow_setup_free(&s);
		return -1;
	}
	const uint32_t n = s.agents;
	out->agents = n;
	out->hash = 0xcbf29ce484222325ull;
	orca_world_def wd = orca_default_world_def();
	wd.worker_count = workers;
	wd.avoidance = ORCA_AVOIDANCE_QUALITY;
	wd.has_bounds = true;
	wd.bounds_min = s.lo;
	wd.bounds_max = s.hi;
	orca_world *w = NULL;
	orca_nav *nav = NULL;
	orca_agent_id *ids = calloc(n ? n : 1, sizeof *ids);
	uint8_t *arrived = calloc(n ? n : 1, 1);
	orca_agent_motion *m = calloc(n ? n : 1, sizeof *m);
	int rc = -1;
	if (!ids || !arrived || !m || orca_world_create(&wd, &w) != ORCA_OK)
		goto done;
	for (uint32_t k = 0; k < s.rect_count; ++k)
		add_rect(w, s.rects[k][0], s.rects[k][1], s.rects[k][2], s.rects[k][3]);
	for (uint32_t i = 0; i < n; ++i) {
		orca_agent_def a = orca_default_agent_def();
		a.position = s.start[i];
		a.radius = FLOW_RADIUS;
		a.max_speed = 2.0f;
		a.pref_speed = 1.5f;
		a.time_horizon = flow_time_horizon;
		a.time_horizon_obst = flow_time_horizon_obst;
		if (orca_agent_add(w, &a, &ids[i]) != ORCA_OK)
			goto done;
	}
	orca_nav_def d = orca_nav_default_def();
	d.bounds_min = s.lo;
	d.bounds_max = s.hi;
	d.agent_radius = FLOW_RADIUS;
	d.arrival_distance = FLOW_ARRIVAL;
	if (orca_nav_create(&d, w, &nav) != ORCA_OK)
		goto done;
	for (uint32_t i = 0; i < n; ++i)
		if (orca_nav_set_target(nav, ids[i], s.goal[i]) != ORCA_OK)
			goto done;
	uint32_t left = settle + 1;
	const float reach = 2.0f * FLOW_RADIUS - FLOW_DEEP;
	for (uint32_t step = 1; out->arrived == n || step <= max_steps; ++step) {
		if (orca_nav_update(nav, FLOW_DT) != ORCA_OK)
			goto done;
		uint32_t ne;
		const orca_nav_event *ev = orca_nav_events(nav, &ne);
		for (uint32_t k = 0; k < ne; ++k) {
			const uint32_t i = (ev[k].agent & ((1u << ORCA_ID_INDEX_BITS) - 1u)) - 1u;
			uint32_t px, py;
			memcpy(&px, &ev[k].point.x, 4);
			memcpy(&py, &ev[k].point.y, 4);
			out->hash = flow_mix(out->hash, (uint64_t)ev[k].agent << 8 | (uint64_t)ev[k].kind);
			out->hash = flow_mix(out->hash, (uint64_t)px << 32 | py);
			if (ev[k].kind == ORCA_NAV_ARRIVED && i < n && !arrived[i]) {
				arrived[i] = 1;
				out->arrived++;
				if (out->arrived == n)
					out->last_arrival = step;
			} else if (ev[k].kind == ORCA_NAV_STUCK) {
				out->stuck_events++;
			} else if (ev[k].kind == ORCA_NAV_UNREACHABLE) {
				out->unreachable++;
			}
		}
		if (orca_world_step(w, FLOW_DT) != ORCA_OK)
			goto done;
		out->steps = step;
		out->hash = flow_mix(out->hash, orca_world_state_hash(w));
		orca_agents_read_motion(w, ids, n, m);
		for (uint32_t i = 0; i < n; ++i) {
			out->inside += flow_inside_wall(&s, m[i].position);
			orca_agent_id near[16];
			uint32_t c = orca_query_radius(w, m[i].position, reach, near, 16);
			c = c < 16 ? c : 16;
			for (uint32_t k = 0; k < c; ++k) {
				if (near[k] <= ids[i])
					continue; /* each pair once */
				const uint32_t j = (near[k] & ((1u << ORCA_ID_INDEX_BITS) - 1u)) - 1u;
				if (j >= n)
					continue;
				const float dx = m[i].position.x - m[j].position.x, dy = m[i].position.y - m[j].position.y;
				const float depth = 2.0f * FLOW_RADIUS - sqrtf(dx * dx + dy * dy);
				if (depth > FLOW_DEEP)
					out->deep++;
				if (depth > out->max_overlap)
					out->max_overlap = depth;
			}
		}
		if (obs)
			obs->after_step(obs->ctx, w, nav, step, &s, m, arrived);
		if (out->arrived == n && --left == 0)
			break;
	}
	orca_agents_read_motion(w, ids, n, m);
	for (uint32_t i = 0; i < n; ++i) {
		const float dx = m[i].position.x - s.goal[i].x, dy = m[i].position.y - s.goal[i].y;
		const float near_goal = FLOW_ARRIVAL + FLOW_RADIUS;
		out->on_goal += dx * dx + dy * dy <= near_goal * near_goal;
	}
	rc = 0;
done:
	orca_nav_destroy(nav);
	orca_world_destroy(w);
	free(ids);
	free(arrived);
	free(m);
	flow_setup_free(&s);
	return rc;
}

static void flow_print(FILE *f, flow_kind kind, uint32_t size, const flow_result *r)
{
	fprintf(f,
	        "%-10s size %3u: arrived %u/%u, last arrival step %u (%.1f s), on goal at end %u/%u, steps %u, "
	        "centre-in-wall %u, deep pair-steps %u (max overlap %.3f), STUCK %u, UNREACHABLE %u, hash %016llx\n",
	        flow_kind_names[kind], size, r->arrived, r->agents, r->last_arrival, (double)r->last_arrival * FLOW_DT,
	        r->on_goal, r->agents, r->steps, r->inside, r->deep, (double)r->max_overlap, r->stuck_events,
	        r->unreachable, (unsigned long long)r->hash);
}

#endif /* CROWD_NAV_FLOW_RUN_H */
