/* quality.c — the quality avoidance mode (ORCA_AVOIDANCE_QUALITY): RVO2's ORCA
 * lines and linear programs, plus what keeps a crowd from freezing and from
 * overlapping. Each technique stays because a figure of
 * tests/bench/quality_bench says it helps (docs/engine.md, "Avoidance modes"):
 *
 *  1. Keep right while blocked: an agent that avoidance kept from what it
 *     aimed for aims to the right of it, more the more it was kept and the longer it
 *     has been stuck (a per-agent timer, q_stuck), up to 135 degrees (past
 *     sideways: out of a ring pressed together, only backwards is free). All
 *     agents turning the same way is a traffic rule: symmetric jams
 *     (antipodal circles, crossing groups) become a roundabout. The timer
 *     restarts from straight ahead after Q_STUCK_MAX; near its target an
 *     agent goes straight.
 *  2. A tiny jitter of that turn, a hash of the agent id and the step count
 *     (the same on every platform and for every worker count), so exactly
 *     symmetric agents do not stay symmetric.
 *  3. Right of way between equals (equal weights, see internal.h's
 *     quality_share): idle < walking < newly retargeted; the lower rank takes
 *     the whole avoidance, in ORCA and in the overlap pass. Between equals
 *     the follow rules (quality.h, quality_follow): in ORCA, the one behind
 *     yields to the one ahead that is nearer its target, as a queue does,
 *     and one going in lets out first one leaving where it goes.
 *  4. An overlap pass after each move: agents closer than their radii plus
 *     Q_SLOP are pushed apart (Jacobi iterations: every push is computed from
 *     the same positions, then applied), each taking its share, then pushed
 *     out of obstacle edges; the velocity becomes what the agent really did,
 *     pushes included, so the next step's ORCA sees the crowd as it moves.
 *  5. A shorter obstacle horizon while blocked: the more an agent turns
 *     (1), the shorter the time horizon its obstacle lines use (down to
 *     1 s), so a jammed agent may pass close by a wall or round a block's
 *     corner; a free agent keeps the horizon it was given
 *     (quality_hooks.h, orca_quality_obstacle_horizon).
 *
 * Float operations only (+ - * / sqrtf), -ffp-contract=off, nothing
 * allocated in the step, each agent written by one task only. */
#include <math.h>
#include <string.h>

#include "agents.h"
#include "obstacles.h"
#include "quality.h"
#include "world_internal.h"

/* How far right a blocked agent aims, as a turn t: 0..1 is tan(angle) (up to
 * 45 degrees), 1..3 goes on to 135. t = BIAS * blocked (0..1) + STUCK_GAIN *
 * stuck seconds, at most TURN_MAX (about 117 degrees); blocked = 1 - (last
 * new velocity . last aim) / |pref|^2. With t = 0 (free way) the aim is the
 * preferred velocity itself, bit for bit. */
#define Q_BIAS 0.35f
#define Q_STUCK_GAIN 0.25f
#define Q_TURN_MAX 2.5f
/* The turn fades from 1 + Q_NEAR radii from the target down to 1 radius. */
#define Q_NEAR 5.0f
/* Jitter of t: +-Q_JITTER/2. */
#define Q_JITTER 0.02f
/* Overlap pass: at most Q_ITERATIONS; pushed Q_SLOP past contact (so that the
 * next step's small approach does not overlap again); a push deeper than
 * Q_MOVED makes the neighbours look again; at most Q_PUSH_MAX radii per
 * iteration (so no push carries a centre across an obstacle edge it touched:
 * the obstacle push after each iteration puts it back). */
#define Q_ITERATIONS 4u
#define Q_SLOP ORCA_Q_SLOP
#define Q_MOVED 0.01f
#define Q_PUSH_MAX 0.5f

/* Per-worker counters sit this many uint32 apart: a cache line each. */
#define Q_LINE_U32 16u

static inline uint32_t hash_u32(uint32_t a, uint32_t b)
{
	uint32_t h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u;
	h ^= h >> 15;
	h *= 0x2C1B3C6Du;
	h ^= h >> 12;
	return h;
}

static void free_tree_arrays(struct orca_world *w, uint32_t c)
{
	orca_mem_free(w, w->q_contact, (size_t)c * ORCA_Q_CONTACTS * sizeof(uint32_t));
	orca_mem_free(w, w->q_contact_count, c * sizeof(uint8_t));
	orca_mem_free(w, w->q_bx, c * sizeof(float));
	orca_mem_free(w, w->q_by, c * sizeof(float));
	orca_mem_free(w, w->q_flag, c * sizeof(uint8_t));
	orca_mem_free(w, w->q_look, 2 * (size_t)c * sizeof(uint8_t));
	orca_mem_free(w, w->q_moved, (size_t)w->worker_count * Q_LINE_U32 * sizeof(uint32_t));
	orca_mem_free(w, w->q_agents, c * sizeof(q_agent));
	orca_mem_free(w, w->q_rank, c * sizeof(uint8_t));
	orca_mem_free(w, w->q_follow, QF_STRIDE * (size_t)c * sizeof(float));
	w->q_follow = NULL;
	w->q_contact = NULL;
	w->q_contact_count = w->q_flag = w->q_look = w->q_rank = NULL;
	w->q_agents = NULL;
	w->q_bx = w->q_by = NULL;
	w->q_moved = NULL;
}

void orca_quality_free(struct orca_world *w)
{
	free_tree_arrays(w, w->q_cap);
	w->q_cap = 0;
}

bool orca_quality_reserve(struct orca_world *w)
{
	if (w->q_cap >= w->tree_cap && w->q_contact)
		return true;
	free_tree_arrays(w, w->q_cap);
	const uint32_t c = w->tree_cap;
	w->q_cap = 0;
	w->q_contact = orca_mem_alloc(w, (size_t)c * ORCA_Q_CONTACTS * sizeof(uint32_t));
	w->q_contact_count = orca_mem_alloc(w, c * sizeof(uint8_t));
	w->q_bx = orca_mem_alloc(w, c * sizeof(float));
	w->q_by = orca_mem_alloc(w, c * sizeof(float));
	w->q_flag = orca_mem_alloc(w, c * sizeof(uint8_t));
	w->q_look = orca_mem_alloc(w, 2 * (size_t)c * sizeof(uint8_t));
	w->q_moved = orca_mem_alloc(w, (size_t)w->worker_count * Q_LINE_U32 * sizeof(uint32_t));
	w->q_agents = orca_mem_alloc(w, c * sizeof(q_agent));
	w->q_rank = orca_mem_alloc(w, c * sizeof(uint8_t));
	w->q_follow = orca_mem_alloc(w, QF_STRIDE * (size_t)c * sizeof(float));
	if (!w->q_follow || !w->q_contact || !w->q_contact_count || !w->q_bx || !w->q_by || !w->q_flag ||
	    !w->q_look || !w->q_moved || !w->q_agents || !w->q_rank) {
		free_tree_arrays(w, c);
		return false;
	}
	memset(w->q_contact_count, 0, c);
	memset(w->q_flag, 0, c);
	memset(w->q_look, 0, 2 * (size_t)c);
	w->q_cap = c;
	return true;
}

/* What aim_turn reads of the world, copied out once per task. */
typedef struct turn_inputs {
	const agent_params *params;
	const uint32_t *gen;
	const float *tpx, *tpy;
	uint32_t steps;
} turn_inputs;

/* The turn an agent aims with this step (q_agent.turn, NAN: none), from its
 * slot's saved state, in tree order: computed while ranking, where the
 * scattered per-slot reads are the loop's only work, not in the middle of
 * the velocity computation. */
static float aim_turn(const turn_inputs *in, uint32_t self, uint32_t slot, float stuck_saved, float blocked)
{
	const float stuck = stuck_saved > 0.0f ? stuck_saved : 0.0f;
	float turn = Q_BIAS * blocked + Q_STUCK_GAIN * stuck;
	if (!(turn > 0.0f))
		return NAN; /* free way: walk exactly as asked, as in reference mode */
	turn = turn > Q_TURN_MAX ? Q_TURN_MAX : turn;
	/* Close to its target an agent goes straight: the others there have
	 * arrived and make way (reciprocally) as in ORCA, while turning away
	 * would only stir them up. Fades in from 1 to 4 radii out. */
	const agent_params *ap = &in->params[slot];
	if (ap->steer_mode != ORCA_STEER_VELOCITY) {
		const float r = ap->radius;
		const float d = v2_abs(v2_sub(ap->target, v2(in->tpx[self], in->tpy[self])));
		const float f = (d - r) / (Q_NEAR * r);
		turn *= f < 0.0f ? 0.0f : (f > 1.0f ? 1.0f : f);
	}
	const uint32_t id = (slot + 1u) | (in->gen[slot] << ORCA_ID_INDEX_BITS);
	const uint32_t h = hash_u32(id, in->steps);
	return turn + Q_JITTER * ((float)(h >> 8) * (1.0f / 16777216.0f) - 0.5f);
}

/* Each agent's right of way (q_rank) and aim turn, in tree order: called by
 * each gather chunk (agent_tree.c) right after it copied the chunk, when the
 * slots' lines it read are still in cache. */
void orca_quality_rank_range(struct orca_world *w, uint32_t begin, uint32_t end, int worker)
{
	uint32_t count[3] = {0, 0, 0}, targets = 0;
	float r_min = w->tself[begin].radius, r_max = r_min;
	/* the arrays in locals: the byte stores (q_rank) could alias the
	 * world's fields, and every one would be reloaded per agent */
	const turn_inputs in = {w->params, w->gen, w->tpx, w->tpy, (uint32_t)w->steps};
	const self_params *tself = w->tself;
	const uint32_t *order = w->order;
	const float *q_stuck = w->q_stuck, *q_blocked = w->q_blocked;
	uint8_t *q_rank = w->q_rank;
	float *q_follow = w->q_follow;
	q_agent *q_agents = w->q_agents;
	for (uint32_t i = begin; i < end; ++i) {
		const self_params *p = &tself[i];
		const bool idle = p->pvx * p->pvx + p->pvy * p->pvy < ORCA_Q_IDLE * ORCA_Q_IDLE;
		const uint32_t s = order[i];
		const float stuck = q_stuck[s];
		const uint8_t rank = idle ? 0 : (stuck < 0.0f ? 2 : 1);
		q_rank[i] = rank;
		float *f = &q_follow[QF_STRIDE * (size_t)i];
		const bool has_target = p->steer_mode == ORCA_STEER_TARGET;
		targets += has_target;
		f[QF_PVX] = p->pvx;
		f[QF_PVY] = p->pvy;
		f[QF_GX] = has_target ? p->target_x : NAN;
		f[QF_GY] = has_target ? p->target_y : NAN;
		q_agents[i].stuck = stuck;
		q_agents[i].turn = aim_turn(&in, i, s, stuck, q_blocked[s]);
		count[rank]++;
		r_min = p->radius < r_min ? p->radius : r_min;
		r_max = p->radius > r_max ? p->radius : r_max;
	}
	worker_scratch *sc = &w->scratch[worker];
	for (int r = 0; r < 3; ++r)
		sc->q_rank_count[r] += count[r];
	sc->q_target_count += targets;
	sc->q_radius_min = r_min < sc->q_radius_min ? r_min : sc->q_radius_min;
	sc->q_radius_max = r_max > sc->q_radius_max ? r_max : sc->q_radius_max;
}

void orca_quality_rank_reset(struct orca_world *w)
{
	for (int k = 0; k < w->worker_count; ++k) {
		memset(w->scratch[k].q_rank_count, 0, sizeof w->scratch[k].q_rank_count);
		w->scratch[k].q_target_count = 0;
		w->scratch[k].q_radius_min = INFINITY;
		w->scratch[k].q_radius_max = 0.0f;
	}
}

void orca_quality_prepare(struct orca_world *w)
{
	w->q_radius_max = 0.0f;
	w->q_same_radius = false;
	w->q_follow_now = false;
	if (w->order_count == 0)
		return;
	/* the gather ranked every agent (orca_quality_rank_range) */
	uint32_t count[3] = {0, 0, 0}, targets = 0;
	float r_min = INFINITY, r_max = 0.0f;
	for (int k = 0; k < w->worker_count; ++k) {
		for (int r = 0; r < 3; ++r)
			count[r] += w->scratch[k].q_rank_count[r];
		targets += w->scratch[k].q_target_count;
		r_min = w->scratch[k].q_radius_min < r_min ? w->scratch[k].q_radius_min : r_min;
		r_max = w->scratch[k].q_radius_max > r_max ? w->scratch[k].q_radius_max : r_max;
	}
	/* one rank for all is as good as none: every share stays 0.5 */
	w->q_any_rank = count[0] < w->order_count && count[1] < w->order_count && count[2] < w->order_count;
	w->q_follow_now = w->q_follow_rule && targets >= 2;
	w->q_radius_max = r_max;
	/* one radius and one share rule for all: the overlap pass reads no
	 * other agent's parameters */
	w->q_same_radius = r_min == r_max && w->uniform_share;
}

/* One of 8 fixed directions for two coincident agents, opposite for the two. */
static vec2 apart_direction(uint32_t self, uint32_t other)
{
	static const float dir[8][2] = {
	    {1.0f, 0.0f},  {0.70710677f, 0.70710677f},   {0.0f, 1.0f},  {-0.70710677f, 0.70710677f},
	    {-1.0f, 0.0f}, {-0.70710677f, -0.70710677f}, {0.0f, -1.0f}, {0.70710677f, -0.70710677f},
	};
	const uint32_t lo = self < other ? self : other, hi = self < other ? other : self;
	const uint32_t k = hash_u32(lo, hi) & 7u;
	return self < other ? v2(dir[k][0], dir[k][1]) : v2(-dir[k][0], -dir[k][1]);
}

/* The share of an overlap agent i takes against a contact when every agent
 * has the same radius: half, or the yielding share where right of way
 * differs. */
static inline float same_radius_share(bool any_rank, uint8_t rank, uint8_t rank_j)
{
	if (any_rank && rank_j != rank)
		return rank < rank_j ? ORCA_Q_YIELD_SHARE : 1.0f - ORCA_Q_YIELD_SHARE;
	return 0.5f;
}

/* One close contact's push on agent i: its share of the overlap rsum - d,
 * away from the contact j (r = i - j, d = |r|), or along a fixed direction
 * when they coincide. */
static inline void add_push(uint32_t i, uint32_t j, float rx, float ry, float d_sq, float rsum, float share, float *dx,
                            float *dy)
{
	const float d = sqrtf(d_sq);
	const vec2 n = d > 0.0f ? v2(rx / d, ry / d) : apart_direction(i, j);
	const float push = (rsum - d) * share;
	*dx += n.x * push;
	*dy += n.y * push;
}

/* Overlap pass flag (q_flag, per tree index, set for every agent by the
 * first iteration): pushed in the last iteration, so the other position
 * buffer is one push behind. */
#define F_CHANGED 1u


/* Move the centre out of every obstacle edge it is within a radius of (on the
 * edge's outer side), in the obstacle query's order. */
static vec2 out_of_obstacles(const struct orca_world *w, nb_entry *nb, vec2 pos, float radius)
{
	const uint32_t count = orca_obstacle_tree_query(w, pos, radius * radius, nb);
	for (uint32_t k = 0; k < count; ++k) {
		const obst_vertex *a = &w->verts[nb[k].index];
		const obst_vertex *b = &w->verts[a->next];
		const vec2 ab = v2_sub(b->point, a->point);
		float t = v2_dot(v2_sub(pos, a->point), ab) / v2_abs_sq(ab);
		t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
		const vec2 closest = v2_add(a->point, v2_scale(ab, t));
		const vec2 rel = v2_sub(pos, closest);
		const float d_sq = v2_abs_sq(rel);
		if (!(d_sq < radius * radius))
			continue;
		if (d_sq > 0.0f) {
			pos = v2_add(closest, v2_scale(rel, radius / sqrtf(d_sq)));
		} else {
			/* on the edge: out along its outer normal (obstacles are counter-clockwise) */
			pos = v2_add(closest, v2_scale(v2(a->unit_dir.y, -a->unit_dir.x), radius));
		}
	}
	return pos;
}

typedef struct pass_ctx {
	struct orca_world *w;
	const float *cx, *cy;  /* every agent's position before this iteration */
	float *nx, *ny;        /* and after it (the other buffer) */
	const uint8_t *look;   /* who looks this iteration; NULL: every agent */
	uint8_t *look_next;    /* who looks in the next; NULL: this is the last */
	bool first;            /* the first iteration (every flag is set afresh) */
} pass_ctx;

/* Mark agent j to look in the next iteration. Workers may mark the same
 * agent at once, all with the same value: a relaxed atomic byte store (a
 * plain store on x86-64 and arm64), so the result is the union of the marks
 * whichever worker stores last. */
static inline void mark_look(uint8_t *look_next, uint32_t j)
{
	__atomic_store_n(&look_next[j], (uint8_t)1, __ATOMIC_RELAXED);
}

/* One Jacobi iteration over [begin, end) of the tree order: every push is
 * computed from the positions before it (cx, cy) and written to the other
 * buffer (nx, ny), so pushes and moves are one pass. An agent looks when it
 * is marked (look) or in the first iteration; pushed deeper than Q_MOVED,
 * it marks itself and its contacts for the next. Which worker runs which
 * agent changes nothing: each agent writes only its own entries, and the
 * marks' union. */
static void pass_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	const pass_ctx *pc = ctx;
	struct orca_world *w = pc->w;
	const bool first = pc->first;
	/* the world's arrays in locals: the byte stores (flags) could alias
	 * them, and every one would be reloaded per agent */
	const float *cx = pc->cx, *cy = pc->cy;
	float *nx = pc->nx, *ny = pc->ny;
	uint8_t *look = (uint8_t *)pc->look, *look_next = pc->look_next;
	float *tnvx = w->tnvx, *tnvy = w->tnvy;
	const bool bounded = w->has_bounds;
	const float min_x = w->bounds_min_x, max_x = w->bounds_max_x, min_y = w->bounds_min_y, max_y = w->bounds_max_y;
	const self_params *tself = w->tself;
	const tree_agent *tagent = w->tagent;
	const q_agent *q_agents = w->q_agents;
	const uint8_t *q_contact_count = w->q_contact_count, *q_rank = w->q_rank;
	uint8_t *q_flag = w->q_flag;
	const uint32_t *q_contact = w->q_contact;
	const bool same_radius = w->q_same_radius, any_rank = w->q_any_rank;
	const bool obstacles = w->obst_root != ORCA_NONE;
	nb_entry *obst_nb = w->scratch[worker].obst_nb;
	const float inv_dt = 1.0f / w->dt, same_r = w->q_radius_max;
	uint32_t moved = 0;
	for (uint32_t i = begin; i < end; ++i) {
		if (!first) {
			if ((i & 7u) == 0 && i + 8 <= end) {
				/* most agents neither look nor changed: eight at a time */
				uint64_t lw, fw;
				memcpy(&lw, look + i, sizeof lw);
				memcpy(&fw, q_flag + i, sizeof fw);
				if (!(lw | (fw & (F_CHANGED * 0x0101010101010101ull)))) {
					i += 7;
					continue;
				}
			}
			const bool looks = look[i] != 0;
			if (!looks) {
				if (q_flag[i] & F_CHANGED) { /* keep the other buffer current */
					nx[i] = cx[i];
					ny[i] = cy[i];
					q_flag[i] &= (uint8_t)~F_CHANGED;
				}
				continue;
			}
			look[i] = 0; /* every mark clear between steps */
		}
		const uint32_t count = q_contact_count[i];
		const uint32_t *c = &q_contact[(size_t)i * ORCA_Q_CONTACTS];
		const float xi = cx[i], yi = cy[i];
		const float radius = same_radius ? same_r : tself[i].radius;
		float dx = 0.0f, dy = 0.0f;
		if (same_radius) {
			/* every pair: the same radius sum, share 0.5 or the right of way */
			const float rsum = 2.0f * radius + Q_SLOP, rsum_sq = rsum * rsum;
			const uint8_t rank = q_rank[i];
			for (uint32_t m = 0; m < count; ++m) {
				const uint32_t j = c[m];
				const float rx = xi - cx[j], ry = yi - cy[j];
				const float d_sq = rx * rx + ry * ry;
				if (!(d_sq < rsum_sq))
					continue;
				const float share = same_radius_share(any_rank, rank, q_rank[j]);
				if (share == 0.0f)
					continue;
				add_push(i, j, rx, ry, d_sq, rsum, share, &dx, &dy);
			}
		}
		for (uint32_t m = 0; m < count && !same_radius; ++m) {
			const uint32_t j = c[m];
			const tree_agent *o = &tagent[j];
			const float rx = xi - cx[j], ry = yi - cy[j];
			const float d_sq = rx * rx + ry * ry;
			const float rsum = radius + o->radius + Q_SLOP;
			if (!(d_sq < rsum * rsum))
				continue;
			float share = avoidance_share(tself[i].weight, o->weight, (o->mask & tself[i].layer) != 0);
			if (share == 0.0f)
				continue;
			if (any_rank)
				share = quality_rank_share(w, i, j, share);
			if (share == 0.0f)
				continue;
			add_push(i, j, rx, ry, d_sq, rsum, share, &dx, &dy);
		}
		const float len_sq = dx * dx + dy * dy, max_push = Q_PUSH_MAX * radius;
		const uint8_t flag = first ? 0u : q_flag[i];
		if (!(len_sq > 0.0f)) {
			/* no overlap: nothing to apply (ORCA's obstacle lines kept it out) */
			if (first || (flag & F_CHANGED)) {
				nx[i] = xi;
				ny[i] = yi;
			}
			q_flag[i] = (uint8_t)(flag & ~F_CHANGED);
			continue;
		}
		if (len_sq > max_push * max_push) {
			const float f = max_push / sqrtf(len_sq);
			dx *= f;
			dy *= f;
		}
		vec2 pos = v2(xi + dx, yi + dy);
		if (obstacles)
			pos = out_of_obstacles(w, obst_nb, pos, radius);
		/* the world's bounds hold after the pushes too (orca.h): a push
		 * across one stops there, and that velocity component with it, as
		 * integration does */
		const bool stop_x = bounded && orca_clamp_to_bound(&pos.x, min_x, max_x);
		const bool stop_y = bounded && orca_clamp_to_bound(&pos.y, min_y, max_y);
		/* the velocity becomes what the agent really did this step
		 * (tnvx/tnvy: the velocity it moved with, then its pushes) */
		float vx = stop_x ? 0.0f : tnvx[i] + (pos.x - xi) * inv_dt;
		float vy = stop_y ? 0.0f : tnvy[i] + (pos.y - yi) * inv_dt;
		const float v_sq = vx * vx + vy * vy, max = q_agents[i].max_speed;
		if (v_sq > max * max) {
			const float f = max / sqrtf(v_sq);
			vx *= f;
			vy *= f;
		}
		tnvx[i] = vx;
		tnvy[i] = vy;
		nx[i] = pos.x;
		ny[i] = pos.y;
		q_flag[i] = (uint8_t)F_CHANGED;
		/* a push too small to make a deep overlap does not make the
		 * neighbours look again */
		if (look_next && dx * dx + dy * dy > Q_MOVED * Q_MOVED) {
			moved++;
			mark_look(look_next, i);
			for (uint32_t m = 0; m < count; ++m)
				mark_look(look_next, c[m]);
		}
	}
	w->q_moved[(size_t)worker * Q_LINE_U32] += moved;
}

/* After an odd number of iterations the final positions are in q_bx/q_by:
 * tpx/tpy lack the last iteration's pushes (every other agent has the same
 * position in both). */
static void copy_back_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	(void)worker;
	struct orca_world *w = ctx;
	const float *bx = w->q_bx, *by = w->q_by;
	const uint8_t *q_flag = w->q_flag;
	float *tpx = w->tpx, *tpy = w->tpy;
	for (uint32_t i = begin; i < end; ++i) {
		if (q_flag[i] & F_CHANGED) {
			tpx[i] = bx[i];
			tpy[i] = by[i];
		}
	}
}

/* Jacobi iterations: every push of an iteration is computed from the same
 * positions, and written to the other of two position buffers (tpx/tpy and
 * q_bx/q_by), one pool run each. The first looks at every agent; each later
 * one only at the agents that moved deeper than Q_MOVED and their contacts.
 * Tree order only: positions, and velocities in tnvx/tnvy (the velocity
 * stage leaves there the velocity each agent moved with); the final
 * positions end in tpx/tpy, and the step's settle pass (world.c) gives the
 * slots their agents' outcome. */
void orca_quality_resolve(struct orca_world *w)
{
	const uint32_t n = w->order_count;
	if (n == 0)
		return;
	float *bx[2] = {w->tpx, w->q_bx}, *by[2] = {w->tpy, w->q_by};
	uint8_t *look[2] = {w->q_look, w->q_look + w->q_cap};
	uint32_t it = 0;
	for (;;) {
		const bool last = it + 1 == Q_ITERATIONS;
		pass_ctx ctx = {w, bx[it & 1u], by[it & 1u], bx[(it + 1) & 1u], by[(it + 1) & 1u],
		                it == 0 ? NULL : look[it & 1u], last ? NULL : look[(it + 1) & 1u], it == 0};
		for (int k = 0; k < w->worker_count; ++k)
			w->q_moved[(size_t)k * Q_LINE_U32] = 0;
		/* long runs: a mover marks contacts in the rows above and below,
		 * and those should mostly be its own worker's */
		orca_pool_run(w->pool, pass_task, &ctx, n, 1024);
		++it;
		uint32_t moved = 0;
		for (int k = 0; k < w->worker_count; ++k)
			moved += w->q_moved[(size_t)k * Q_LINE_U32];
		if (last || moved == 0)
			break; /* every deep overlap looked at again, or the iterations spent */
	}
	if (it & 1u)
		orca_pool_run(w->pool, copy_back_task, w, n, 4096);
}
