/* velocity.c — one agent's new velocity, RVO2's Agent::computeNewVelocity with
 * the same float operations in the same order: obstacle ORCA lines first (in
 * obstacle-neighbour order), then one line per agent neighbour, then LP2 and
 * the LP3 fallback. Reads only the previous state; writes only this agent's
 * slot, so any split over workers gives identical bits. */
#include "agents.h"
#include "linear_program.h"
#include "obstacles.h"
#include "quality.h"
#include "quality_hooks.h"
#include "velocity.h"
#include "world_internal.h"

/* Two agents exactly on top of each other with equal velocities leave RVO2's
 * collision formula without a direction (0/0: RVO2's line is NaN and ignored,
 * so they would never separate). The engine picks one instead: one of 16
 * fixed directions chosen by the pair, opposite for the two agents (tree
 * indices order them), identical on every platform. */
static vec2 separation_direction(uint32_t self, uint32_t other)
{
	static const float dir[16][2] = {
	    {1.0f, 0.0f},         {0.9238795f, 0.38268343f},  {0.70710677f, 0.70710677f},  {0.38268343f, 0.9238795f},
	    {0.0f, 1.0f},         {-0.38268343f, 0.9238795f}, {-0.70710677f, 0.70710677f}, {-0.9238795f, 0.38268343f},
	    {-1.0f, 0.0f},        {-0.9238795f, -0.38268343f}, {-0.70710677f, -0.70710677f}, {-0.38268343f, -0.9238795f},
	    {0.0f, -1.0f},        {0.38268343f, -0.9238795f}, {0.70710677f, -0.70710677f}, {0.9238795f, -0.38268343f},
	};
	const uint32_t lo = self < other ? self : other, hi = self < other ? other : self;
	const uint32_t h = (lo * 0x9E3779B1u) ^ (hi * 0x85EBCA77u);
	const uint32_t k = (h ^ (h >> 15)) & 15u;
	/* unit_w points from the cut-off centre to the relative velocity, i.e.
	 * away from the other agent: opposite for the two of them */
	return self < other ? v2(dir[k][0], dir[k][1]) : v2(-dir[k][0], -dir[k][1]);
}

static inline void put_line(const orca_lines *lines, uint32_t n, orca_line line)
{
	lines->px[n] = line.point.x;
	lines->py[n] = line.point.y;
	lines->dx[n] = line.direction.x;
	lines->dy[n] = line.direction.y;
}
static inline vec2 line_point(const orca_lines *lines, uint32_t j) { return v2(lines->px[j], lines->py[j]); }
static inline vec2 line_direction(const orca_lines *lines, uint32_t j) { return v2(lines->dx[j], lines->dy[j]); }

static uint32_t obstacle_lines(const struct orca_world *w, const nb_entry *obst_nb, uint32_t obst_count,
                               vec2 position, vec2 velocity, float radius, float time_horizon_obst,
                               const orca_lines *lines)
{
	uint32_t n = 0;
	const float inv_th_obst = 1.0f / time_horizon_obst;
	const obst_vertex *verts = w->verts;

	for (uint32_t i = 0; i < obst_count; ++i) {
		const obst_vertex *obstacle1 = &verts[obst_nb[i].index];
		const obst_vertex *obstacle2 = &verts[obstacle1->next];

		const vec2 rel1 = v2_sub(obstacle1->point, position);
		const vec2 rel2 = v2_sub(obstacle2->point, position);

		/* already covered by an earlier obstacle line? */
		bool covered = false;
		for (uint32_t j = 0; j < n; ++j) {
			if (v2_det(v2_sub(v2_scale(rel1, inv_th_obst), line_point(lines, j)), line_direction(lines, j)) -
			            inv_th_obst * radius >=
			        -ORCA_EPSILON &&
			    v2_det(v2_sub(v2_scale(rel2, inv_th_obst), line_point(lines, j)), line_direction(lines, j)) -
			            inv_th_obst * radius >=
			        -ORCA_EPSILON) {
				covered = true;
				break;
			}
		}
		if (covered)
			continue;

		const float dist_sq1 = v2_abs_sq(rel1);
		const float dist_sq2 = v2_abs_sq(rel2);
		const float radius_sq = sqrf(radius);
		const vec2 obstacle_vector = v2_sub(obstacle2->point, obstacle1->point);
		const float s = v2_dot(v2_neg(rel1), obstacle_vector) / v2_abs_sq(obstacle_vector);
		const float dist_sq_line = v2_abs_sq(v2_sub(v2_neg(rel1), v2_scale(obstacle_vector, s)));

		orca_line line;
		if (s < 0.0f && dist_sq1 <= radius_sq) {
			/* collision with left vertex; ignore if non-convex */
			if (obstacle1->convex) {
				line.point = v2(0.0f, 0.0f);
				line.direction = v2_normalize(v2(-rel1.y, rel1.x));
				put_line(lines, n++, line);
			}
			continue;
		}
		if (s > 1.0f && dist_sq2 <= radius_sq) {
			/* collision with right vertex; ignore if non-convex or if the
			 * neighbouring edge takes care of it */
			if (obstacle2->convex && v2_det(rel2, obstacle2->unit_dir) >= 0.0f) {
				line.point = v2(0.0f, 0.0f);
				line.direction = v2_normalize(v2(-rel2.y, rel2.x));
				put_line(lines, n++, line);
			}
			continue;
		}
		if (s >= 0.0f && s <= 1.0f && dist_sq_line <= radius_sq) {
			/* collision with the edge */
			line.point = v2(0.0f, 0.0f);
			line.direction = v2_neg(obstacle1->unit_dir);
			put_line(lines, n++, line);
			continue;
		}

		/* No collision: compute the legs. Seen obliquely, both legs can come
		 * from one vertex; at a non-convex vertex a leg extends the cut-off. */
		vec2 left_leg, right_leg;
		if (s < 0.0f && dist_sq_line <= radius_sq) {
			/* left vertex defines the velocity obstacle */
			if (!obstacle1->convex)
				continue;
			obstacle2 = obstacle1;
			const float leg1 = sqrtf(dist_sq1 - radius_sq);
			left_leg = v2_div(v2(rel1.x * leg1 - rel1.y * radius, rel1.x * radius + rel1.y * leg1), dist_sq1);
			right_leg = v2_div(v2(rel1.x * leg1 + rel1.y * radius, -rel1.x * radius + rel1.y * leg1), dist_sq1);
		} else if (s > 1.0f && dist_sq_line <= radius_sq) {
			/* right vertex defines the velocity obstacle */
			if (!obstacle2->convex)
				continue;
			obstacle1 = obstacle2;
			const float leg2 = sqrtf(dist_sq2 - radius_sq);
			left_leg = v2_div(v2(rel2.x * leg2 - rel2.y * radius, rel2.x * radius + rel2.y * leg2), dist_sq2);
			right_leg = v2_div(v2(rel2.x * leg2 + rel2.y * radius, -rel2.x * radius + rel2.y * leg2), dist_sq2);
		} else {
			/* usual situation */
			if (obstacle1->convex) {
				const float leg1 = sqrtf(dist_sq1 - radius_sq);
				left_leg =
				    v2_div(v2(rel1.x * leg1 - rel1.y * radius, rel1.x * radius + rel1.y * leg1), dist_sq1);
			} else {
				left_leg = v2_neg(obstacle1->unit_dir);
			}
			if (obstacle2->convex) {
				const float leg2 = sqrtf(dist_sq2 - radius_sq);
				right_leg =
				    v2_div(v2(rel2.x * leg2 + rel2.y * radius, -rel2.x * radius + rel2.y * leg2), dist_sq2);
			} else {
				right_leg = obstacle1->unit_dir;
			}
		}

		/* A leg never points into the neighbouring edge at a convex vertex:
		 * use that edge's cut-off instead; a velocity projected on such a
		 * "foreign" leg adds no constraint. */
		const obst_vertex *left_neighbor = &verts[obstacle1->prev];
		bool left_foreign = false, right_foreign = false;
		if (obstacle1->convex && v2_det(left_leg, v2_neg(left_neighbor->unit_dir)) >= 0.0f) {
			left_leg = v2_neg(left_neighbor->unit_dir);
			left_foreign = true;
		}
		if (obstacle2->convex && v2_det(right_leg, obstacle2->unit_dir) <= 0.0f) {
			right_leg = obstacle2->unit_dir;
			right_foreign = true;
		}

		/* cut-off centres */
		const vec2 left_cutoff = v2_scale(v2_sub(obstacle1->point, position), inv_th_obst);
		const vec2 right_cutoff = v2_scale(v2_sub(obstacle2->point, position), inv_th_obst);
		const vec2 cutoff_vec = v2_sub(right_cutoff, left_cutoff);
		const bool same = (obstacle1 == obstacle2);

		const float t =
		    same ? 0.5f : v2_dot(v2_sub(velocity, left_cutoff), cutoff_vec) / v2_abs_sq(cutoff_vec);
		const float t_left = v2_dot(v2_sub(velocity, left_cutoff), left_leg);
		const float t_right = v2_dot(v2_sub(velocity, right_cutoff), right_leg);

		if ((t < 0.0f && t_left < 0.0f) || (same && t_left < 0.0f && t_right < 0.0f)) {
			/* project on the left cut-off circle */
			const vec2 unit_w = v2_normalize(v2_sub(velocity, left_cutoff));
			line.direction = v2(unit_w.y, -unit_w.x);
			line.point = v2_add(left_cutoff, v2_scale(unit_w, radius * inv_th_obst));
			put_line(lines, n++, line);
			continue;
		}
		if (t > 1.0f && t_right < 0.0f) {
			/* project on the right cut-off circle */
			const vec2 unit_w = v2_normalize(v2_sub(velocity, right_cutoff));
			line.direction = v2(unit_w.y, -unit_w.x);
			line.point = v2_add(right_cutoff, v2_scale(unit_w, radius * inv_th_obst));
			put_line(lines, n++, line);
			continue;
		}

		/* project on the left leg, the right leg or the cut-off line,
		 * whichever is closest to the velocity */
		const float dist_sq_cutoff = (t < 0.0f || t > 1.0f || same)
		                                 ? INFINITY
		                                 : v2_abs_sq(v2_sub(velocity, v2_add(left_cutoff, v2_scale(cutoff_vec, t))));
		const float dist_sq_left = (t_left < 0.0f)
		                               ? INFINITY
		                               : v2_abs_sq(v2_sub(velocity, v2_add(left_cutoff, v2_scale(left_leg, t_left))));
		const float dist_sq_right =
		    (t_right < 0.0f) ? INFINITY
		                     : v2_abs_sq(v2_sub(velocity, v2_add(right_cutoff, v2_scale(right_leg, t_right))));

		if (dist_sq_cutoff <= dist_sq_left && dist_sq_cutoff <= dist_sq_right) {
			/* cut-off line */
			line.direction = v2_neg(obstacle1->unit_dir);
			line.point = v2_add(left_cutoff, v2_scale(v2(-line.direction.y, line.direction.x), radius * inv_th_obst));
			put_line(lines, n++, line);
			continue;
		}
		if (dist_sq_left <= dist_sq_right) {
			/* left leg */
			if (left_foreign)
				continue;
			line.direction = left_leg;
			line.point = v2_add(left_cutoff, v2_scale(v2(-line.direction.y, line.direction.x), radius * inv_th_obst));
			put_line(lines, n++, line);
			continue;
		}
		/* right leg */
		if (right_foreign)
			continue;
		line.direction = v2_neg(right_leg);
		line.point = v2_add(right_cutoff, v2_scale(v2(-line.direction.y, line.direction.x), radius * inv_th_obst));
		put_line(lines, n++, line);
	}
	return n;
}

#ifndef __SSE2__
/* One line per agent neighbour, RVO2's loop as written. */
static uint32_t agent_lines_scalar(const struct orca_world *w, uint32_t self, const nb_entry *nb, uint32_t agent_count,
                                   const self_params *p, vec2 position, vec2 velocity, float inv_time_horizon,
                                   float dt, const orca_lines *lines, uint32_t n)
{
	const float radius = p->radius;
	const tree_agent *ta = w->tagent;
	for (uint32_t i = 0; i < agent_count; ++i) {
		const uint32_t j = nb[i].index;
		const tree_agent *other = &ta[j];
		float share = avoidance_share(p->weight, other->weight, (other->mask & p->layer) != 0);
		if (w->avoidance == ORCA_AVOIDANCE_QUALITY && (w->q_any_rank || w->q_follow_now))
			share = quality_share(w, self, j, share);
		if (share == 0.0f)
			continue; /* this agent never yields to that one */

		const vec2 rel_pos = v2(w->tpx[j] - position.x, w->tpy[j] - position.y);
		const vec2 rel_vel = v2(velocity.x - other->vx, velocity.y - other->vy);
		const float dist_sq = v2_abs_sq(rel_pos);
		const float combined_radius = radius + other->radius;
		const float combined_radius_sq = sqrf(combined_radius);
		orca_line line;
		vec2 u;

		if (dist_sq > combined_radius_sq) {
			/* no collision; w: from cut-off centre to relative velocity */
			const vec2 wv = v2_sub(rel_vel, v2_scale(rel_pos, inv_time_horizon));
			const float w_length_sq = v2_abs_sq(wv);
			const float dot_product1 = v2_dot(wv, rel_pos);

			if (dot_product1 < 0.0f && sqrf(dot_product1) > combined_radius_sq * w_length_sq) {
				/* project on the cut-off circle */
				const float w_length = sqrtf(w_length_sq);
				const vec2 unit_w = v2_div(wv, w_length);
				line.direction = v2(unit_w.y, -unit_w.x);
				u = v2_scale(unit_w, combined_radius * inv_time_horizon - w_length);
			} else {
				/* project on the legs */
				const float leg = sqrtf(dist_sq - combined_radius_sq);
				if (v2_det(rel_pos, wv) > 0.0f) {
					line.direction = v2_div(v2(rel_pos.x * leg - rel_pos.y * combined_radius,
					                           rel_pos.x * combined_radius + rel_pos.y * leg),
					                        dist_sq);
				} else {
					line.direction = v2_div(v2_neg(v2(rel_pos.x * leg + rel_pos.y * combined_radius,
					                                  -rel_pos.x * combined_radius + rel_pos.y * leg)),
					                        dist_sq);
				}
				const float dot_product2 = v2_dot(rel_vel, line.direction);
				u = v2_sub(v2_scale(line.direction, dot_product2), rel_vel);
			}
		} else {
			/* collision: project on the cut-off circle of time dt */
			const float inv_time_step = 1.0f / dt;
			const vec2 wv = v2_sub(rel_vel, v2_scale(rel_pos, inv_time_step));
			const float w_length = v2_abs(wv);
			const vec2 unit_w = w_length > 0.0f ? v2_div(wv, w_length) : separation_direction(self, j);
			line.direction = v2(unit_w.y, -unit_w.x);
			u = v2_scale(unit_w, combined_radius * inv_time_step - w_length);
		}
		line.point = v2_add(velocity, v2_scale(u, share));
		put_line(lines, n++, line);
	}
	return n;
}
#else
/* The same lines from one SIMD body (agent_lines_impl.h): for SSE2, the
 * baseline, and for AVX where the CPU has it (checked at run time: the build
 * stays baseline x86-64), eight neighbours at a time, with the three-operand
 * forms and no register copies; 10 neighbours take two blocks instead of
 * three. Both write the same bits. */
#include <emmintrin.h>

#define AL_AVX 0
#include "agent_lines_impl.h"
#undef AL_AVX

#if defined(__x86_64__) && defined(__GNUC__)
#define ORCA_AGENT_LINES_AVX 1
#include <immintrin.h>
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx")
#endif
#define AL_AVX 1
#include "agent_lines_impl.h"
#undef AL_AVX
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
#endif


static inline uint32_t agent_lines(const struct orca_world *w, bool avx, uint32_t self, const nb_entry *nb,
                                   uint32_t agent_count, const self_params *p, vec2 position, vec2 velocity,
                                   float inv_time_horizon, float dt, const orca_lines *lines, uint32_t n)
{
	(void)avx;
#ifdef __SSE2__
#ifdef ORCA_AGENT_LINES_AVX
	if (avx)
		return agent_lines_avx(w, self, nb, agent_count, p, position, velocity, inv_time_horizon, 1.0f / dt, lines,
		                       n);
#endif
	return agent_lines_sse(w, self, nb, agent_count, p, position, velocity, inv_time_horizon, 1.0f / dt, lines, n);
#else
	return agent_lines_scalar(w, self, nb, agent_count, p, position, velocity, inv_time_horizon, dt, lines, n);
#endif
}

/* Quality mode: the move itself, integrate_task's operations (world.c) in
 * tree order, into tnx/tny (the others still read this step's positions in
 * tpx/tpy) and the agent's own tnvx/tnvy and t_arrived: every write lands in
 * this worker's run of the tree order; the slots get them after the overlap
 * pass. Here rather than in a pass of its own: the agent's data is in cache. */
static void quality_move(struct orca_world *w, worker_scratch *sc, uint32_t self, const self_params *p, vec2 position,
                         vec2 velocity, float dt)
{
	float nvx = velocity.x, nvy = velocity.y;
	float x = position.x + nvx * dt, y = position.y + nvy * dt;
	if (w->has_bounds) { /* a wall at the bounds: stop there, keep the other axis */
		if (orca_clamp_to_bound(&x, w->bounds_min_x, w->bounds_max_x))
			nvx = 0.0f;
		if (orca_clamp_to_bound(&y, w->bounds_min_y, w->bounds_max_y))
			nvy = 0.0f;
	}
	w->tnvx[self] = nvx;
	w->tnvy[self] = nvy;
	w->tnx[self] = x;
	w->tny[self] = y;
	if (p->steer_mode != ORCA_STEER_VELOCITY) {
		const vec2 g = v2_sub(v2(p->target_x, p->target_y), v2(x, y));
		const uint8_t arrived = v2_abs_sq(g) <= sqrf(p->arrival_distance);
		w->t_arrived[self] = arrived;
		sc->arrived += arrived;
	}
}

static void compute_one(struct orca_world *w, worker_scratch *sc, uint32_t self, float dt, bool avx)
{
	const self_params *p = &w->tself[self];
	const vec2 position = v2(w->tpx[self], w->tpy[self]);
	const vec2 velocity = v2(w->tagent[self].vx, w->tagent[self].vy);
	const vec2 pref = v2(p->pvx, p->pvy);
	const float radius = p->radius;

	/* neighbours (RVO2's computeNeighbors) */
	uint32_t obst_count = 0;
	if (w->obst_root != ORCA_NONE) {
		const float range_sq = sqrf(p->time_horizon_obst * p->max_speed + radius);
		obst_count = orca_obstacle_tree_query(w, position, range_sq, sc->obst_nb);
	}
	uint32_t agent_count = 0;
	const uint32_t slot = w->order[self];
	if (p->max_neighbors > 0 && w->order_count > 1) {
		const uint32_t max_nb = p->max_neighbors < w->order_count ? p->max_neighbors : w->order_count;
		agent_count = orca_agent_neighbors(w, sc, self, slot, p, max_nb, position);
	}

	const bool quality = w->avoidance == ORCA_AVOIDANCE_QUALITY;
	const orca_lines lines_soa = orca_lines_of(sc->lines, sc->lines_cap), *lines = &lines_soa;
	const float horizon_obst =
	    quality ? orca_quality_obstacle_horizon(w, self, p->time_horizon_obst) : p->time_horizon_obst;
	const uint32_t num_obst_lines =
	    obst_count ? obstacle_lines(w, sc->obst_nb, obst_count, position, velocity, radius, horizon_obst, lines)
	               : 0;
	uint32_t n = num_obst_lines;

	/* agent ORCA lines */
	const float inv_time_horizon = 1.0f / p->time_horizon;
	n = agent_lines(w, avx, self, sc->agent_nb, agent_count, p, position, velocity, inv_time_horizon, dt, lines, n);
	sc->neighbor_count += agent_count;
	sc->obstacle_line_count += num_obst_lines;

	const vec2 aim = quality ? orca_quality_aim(w, self, slot, pref) : pref;
	vec2 new_velocity;
	const uint32_t line_fail = orca_linear_program2(lines, n, p->max_speed, aim, false, &new_velocity, avx);
	if (line_fail < n) {
		orca_lines proj = orca_lines_of(sc->proj, sc->proj_cap);
		orca_linear_program3(lines, n, num_obst_lines, line_fail, p->max_speed, &new_velocity, &proj, avx);
		sc->lp3_fallbacks++;
	}
	if (quality) {
		orca_quality_after(w, self, slot, pref, aim, new_velocity, sc->agent_nb, agent_count, dt);
		quality_move(w, sc, self, p, position, new_velocity, dt);
	} else {
		w->tnvx[self] = new_velocity.x;
		w->tnvy[self] = new_velocity.y;
	}
}

void orca_compute_velocities(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	worker_scratch *sc = &w->scratch[worker];
	/* the AVX builds where the CPU has it (tests may ask for SSE2 alone) */
#if defined(__x86_64__) && defined(__GNUC__)
	const bool avx = !w->simd_sse2_only && __builtin_cpu_supports("avx");
#else
	const bool avx = false;
#endif
	for (uint32_t i = begin; i < end; ++i)
		compute_one(w, sc, i, w->dt, avx);
}
