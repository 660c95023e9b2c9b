/* quality.c — the quality avoidance mode (ORCA_AVOIDANCE_QUALITY): RVO2's ORCA
 * lines and linear programs, plus what keeps a crowd from freezing and from
 * overlapping. Each technique stays because a figure of
 * tests/bench/quality_bench says it helps (README, "Avoidance modes"):
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
 *     the whole avoidance, in ORCA and in the overlap pass.
 *  4. An overlap pass after each move: agents closer than their radii plus
 *     Q_SLOP are pushed apart (Jacobi iterations: every push is computed from
 *     the same positions, then applied), each taking its share, then pushed
 *     out of obstacle edges; the velocity becomes what the agent really did,
 *     pushes included, so the next step's ORCA sees the crowd as it moves.
 *
 * Float operations only (+ - * / sqrtf), -ffp-contract=off, nothing
 * allocated in the step, each agent written by one task only. */
#include <string.h>

#include "internal.h"

/* How far right a blocked agent aims, as a turn t: 0..1 is tan(angle) (up to
 * 45 degrees), 1..3 goes on to 135. t = BIAS * blocked (0..1) + STUCK_GAIN *
 * stuck seconds, at most TURN_MAX (about 117 degrees); blocked = 1 - (last
 * new velocity . last aim) / |pref|^2. With t = 0 (free way) the aim is the
 * preferred velocity itself, bit for bit. */
#define Q_BIAS 0.35f
#define Q_STUCK_GAIN 0.25f
#define Q_TURN_MAX 2.5f
/* A speed below this share of the preferred speed counts as stuck (moving
 * sideways round a jam does not: that is the way out). */
#define Q_PROGRESS_MIN 0.3f
/* Stuck this long (s), the widest turn did not help: start again from straight. */
#define Q_STUCK_MAX 8.0f
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
#define Q_SLOP 0.2f
#define Q_MOVED 0.01f
#define Q_PUSH_MAX 0.5f

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
	orca_mem_free(w, w->q_dx, c * sizeof(float));
	orca_mem_free(w, w->q_dy, c * sizeof(float));
	orca_mem_free(w, w->q_flag, c * sizeof(uint8_t));
	orca_mem_free(w, w->q_list, c * sizeof(uint32_t));
	orca_mem_free(w, w->q_agents, c * sizeof(q_agent));
	orca_mem_free(w, w->q_rank, c * sizeof(uint8_t));
	w->q_contact = NULL;
	w->q_contact_count = w->q_flag = w->q_rank = NULL;
	w->q_list = NULL;
	w->q_agents = NULL;
	w->q_dx = w->q_dy = NULL;
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
	w->q_dx = orca_mem_alloc(w, c * sizeof(float));
	w->q_dy = orca_mem_alloc(w, c * sizeof(float));
	w->q_flag = orca_mem_alloc(w, c * sizeof(uint8_t));
	w->q_list = orca_mem_alloc(w, c * sizeof(uint32_t));
	w->q_agents = orca_mem_alloc(w, c * sizeof(q_agent));
	w->q_rank = orca_mem_alloc(w, c * sizeof(uint8_t));
	if (!w->q_contact || !w->q_contact_count || !w->q_dx || !w->q_dy || !w->q_flag || !w->q_list || !w->q_agents || !w->q_rank) {
		free_tree_arrays(w, c);
		return false;
	}
	memset(w->q_contact_count, 0, c);
	memset(w->q_flag, 0, c);
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

static void rank_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	uint32_t count[3] = {0, 0, 0};
	float r_min = w->tself[begin].radius, r_max = r_min;
	/* the arrays in locals: the byte stores (q_rank) could alias the
	 * world's fields, and every one would be reloaded per agent */
	const turn_inputs in = {w->params, w->gen, w->tpx, w->tpy, (uint32_t)w->steps};
	const self_params *tself = w->tself;
	const uint32_t *order = w->order;
	const float *q_stuck = w->q_stuck, *q_blocked = w->q_blocked;
	uint8_t *q_rank = w->q_rank;
	q_agent *q_agents = w->q_agents;
	for (uint32_t i = begin; i < end; ++i) {
		const self_params *p = &tself[i];
		const bool idle = p->pvx * p->pvx + p->pvy * p->pvy < ORCA_Q_IDLE * ORCA_Q_IDLE;
		const uint32_t s = order[i];
		const float stuck = q_stuck[s];
		const uint8_t rank = idle ? 0 : (stuck < 0.0f ? 2 : 1);
		q_rank[i] = rank;
		q_agents[i].stuck = stuck;
		q_agents[i].turn = aim_turn(&in, i, s, stuck, q_blocked[s]);
		count[rank]++;
		r_min = p->radius < r_min ? p->radius : r_min;
		r_max = p->radius > r_max ? p->radius : r_max;
	}
	worker_scratch *sc = &w->scratch[worker];
	for (int r = 0; r < 3; ++r)
		sc->q_rank_count[r] += count[r];
	sc->q_radius_min = r_min < sc->q_radius_min ? r_min : sc->q_radius_min;
	sc->q_radius_max = r_max > sc->q_radius_max ? r_max : sc->q_radius_max;
}

void orca_quality_prepare(struct orca_world *w)
{
	for (int k = 0; k < w->worker_count; ++k) {
		memset(w->scratch[k].q_rank_count, 0, sizeof w->scratch[k].q_rank_count);
		w->scratch[k].q_radius_min = INFINITY;
		w->scratch[k].q_radius_max = 0.0f;
	}
	w->q_radius_max = 0.0f;
	w->q_same_radius = false;
	if (w->order_count == 0)
		return;
	orca_pool_run(w->pool, rank_task, w, w->order_count, 4096);
	uint32_t count[3] = {0, 0, 0};
	float r_min = INFINITY, r_max = 0.0f;
	for (int k = 0; k < w->worker_count; ++k) {
		for (int r = 0; r < 3; ++r)
			count[r] += w->scratch[k].q_rank_count[r];
		r_min = w->scratch[k].q_radius_min < r_min ? w->scratch[k].q_radius_min : r_min;
		r_max = w->scratch[k].q_radius_max > r_max ? w->scratch[k].q_radius_max : r_max;
	}
	/* one rank for all is as good as none: every share stays 0.5 */
	w->q_any_rank = count[0] < w->order_count && count[1] < w->order_count && count[2] < w->order_count;
	w->q_radius_max = r_max;
	/* one radius and one share rule for all: the overlap pass reads no
	 * other agent's parameters */
	w->q_same_radius = r_min == r_max && w->uniform_share;
}

vec2 orca_quality_aim(const struct orca_world *w, uint32_t self, uint32_t slot, vec2 pref)
{
	(void)slot;
	const float pref_sq = v2_abs_sq(pref);
	if (!(pref_sq > 1e-8f))
		return pref;
	const float turn = w->q_agents[self].turn;
	if (turn != turn)
		return pref; /* free way */
	/* turn 0..1: up to 45 degrees right (tangent = turn); 1..3: on to 135
	 * degrees, past sideways, so that an agent pressed into a ring can step
	 * back out of it (continuous in turn, no trigonometry) */
	const float c = turn <= 1.0f ? 1.0f : 2.0f - turn, s = turn <= 1.0f ? turn : 1.0f;
	const vec2 aim = v2(c * pref.x + s * pref.y, c * pref.y - s * pref.x);
	return v2_scale(aim, sqrtf(pref_sq / v2_abs_sq(aim)));
}

void orca_quality_after(struct orca_world *w, uint32_t self, uint32_t slot, vec2 pref, vec2 aim, vec2 new_velocity,
                        const nb_entry *nb, uint32_t nb_count, float dt)
{
	(void)slot; /* the state is in tree order until the overlap pass */
	const float pref_sq = v2_abs_sq(pref);
	/* how far avoidance kept us from what we aimed for: 0 free, 1 stopped */
	float blocked = pref_sq > 1e-8f ? 1.0f - v2_dot(new_velocity, aim) / pref_sq : 0.0f;
	blocked = blocked < 0.0f ? 0.0f : (blocked > 1.0f ? 1.0f : blocked);
	q_agent *qa = &w->q_agents[self];
	qa->blocked = blocked;
	float stuck = qa->stuck;
	if (stuck < 0.0f) {
		/* a new target's right of way runs out */
		stuck = stuck + dt;
		stuck = stuck > 0.0f ? 0.0f : stuck;
	} else if (!(pref_sq > 1e-8f)) {
		stuck = 0.0f;
	} else if (v2_abs_sq(new_velocity) < Q_PROGRESS_MIN * Q_PROGRESS_MIN * pref_sq) {
		/* stuck too long: the widest turn did not help either, try again
		 * from straight ahead */
		stuck = stuck + dt;
		stuck = stuck > Q_STUCK_MAX ? 0.0f : stuck;
	} else {
		stuck = stuck - dt;
		stuck = stuck < 0.0f ? 0.0f : stuck;
	}
	qa->stuck = stuck; /* to its slot in the overlap pass */

	/* neighbours this step can bring into contact (or within the slop):
	 * this agent at its new speed, the other at most at our top speed;
	 * bounded with the largest radius, so the list (sorted by distance)
	 * ends at the first one too far */
	const self_params *p = &w->tself[self];
	const float reach = (v2_abs(new_velocity) + p->max_speed) * dt + Q_SLOP + 2.0f;
	const float limit = p->radius + w->q_radius_max + reach, limit_sq = limit * limit;
	uint32_t *out = &w->q_contact[(size_t)self * ORCA_Q_CONTACTS];
	const uint32_t most = nb_count < ORCA_Q_CONTACTS ? nb_count : ORCA_Q_CONTACTS;
	uint32_t k = 0;
	while (k < most && nb[k].dist_sq < limit_sq) {
		out[k] = nb[k].index;
		++k;
	}
	w->q_contact_count[self] = (uint8_t)k;
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

/* One close contact's push on agent i when every agent has the same radius:
 * half the overlap, or the yielding share where right of way differs (both
 * the AVX2 and the scalar contact loops). */
static inline void same_radius_push(uint32_t i, uint32_t j, float xj, float yj, float xi, float yi, float rsum,
                                    bool any_rank, uint8_t rank, uint8_t rank_j, float *dx, float *dy)
{
	float share = 0.5f;
	if (any_rank && rank_j != rank)
		share = rank < rank_j ? ORCA_Q_YIELD_SHARE : 1.0f - ORCA_Q_YIELD_SHARE;
	if (share == 0.0f)
		return;
	const float rx = xi - xj, ry = yi - yj;
	const float d = sqrtf(rx * rx + ry * ry);
	const vec2 n = d > 0.0f ? v2(rx / d, ry / d) : apart_direction(i, j);
	const float push = (rsum - d) * share;
	*dx += n.x * push;
	*dy += n.y * push;
}

/* Overlap pass flags (q_flag, per tree index): pushed this iteration, pushed
 * deep enough that its neighbours look again, to be examined next iteration. */
#define F_PUSHED 1u
#define F_MOVED 2u
#define F_NEXT 4u

#if defined(__x86_64__) && defined(__GNUC__)
#define ORCA_Q_HAVE_AVX2 1
#include <immintrin.h>

/* Which of the contacts c[0..count) (1 <= count <= 8) are closer than the
 * radius sum: bit m for contact m, each lane the pass's test with its
 * operations (d_sq < rsum_sq). AVX2 (checked at run time): one masked load of
 * the indices and two gathers instead of a loop; most contacts are not close. */
__attribute__((target("avx2"), noinline)) static unsigned close_contacts_avx2(const float *tx, const float *ty,
                                                                          const uint32_t *c, uint32_t count,
                                                                          float xi, float yi, float rsum_sq)
{
	_Static_assert(ORCA_Q_CONTACTS <= 8, "one block of eight");
	const __m256i in = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
	const __m256i idx = _mm256_maskload_epi32((const int *)c, in); /* 0 past count: tx[0] is an agent */
	const __m256 ox = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), tx, idx, _mm256_castsi256_ps(in), 4);
	const __m256 oy = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), ty, idx, _mm256_castsi256_ps(in), 4);
	const __m256 rx = _mm256_sub_ps(_mm256_set1_ps(xi), ox), ry = _mm256_sub_ps(_mm256_set1_ps(yi), oy);
	const __m256 d_sq = _mm256_add_ps(_mm256_mul_ps(rx, rx), _mm256_mul_ps(ry, ry));
	return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(d_sq, _mm256_set1_ps(rsum_sq), _CMP_LT_OQ)) &
	       ((1u << count) - 1u);
}
#endif

typedef struct pass_ctx {
	struct orca_world *w;
	const uint32_t *list; /* the agents to look at; NULL: every agent */
	bool avx2;            /* the CPU has AVX2 (and tests did not ask for SSE2 alone) */
} pass_ctx;

static void push_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ((pass_ctx *)ctx)->w;
	const uint32_t *list = ((pass_ctx *)ctx)->list;
	const bool avx2 = ((pass_ctx *)ctx)->avx2;
	(void)worker;
	(void)avx2;
	const float *tx = w->tpx, *ty = w->tpy;
	/* the world's arrays and flags in locals: the byte stores (q_flag)
	 * could alias them, and every one would be reloaded per agent */
	float *q_dx = w->q_dx, *q_dy = w->q_dy;
	const self_params *tself = w->tself;
	const tree_agent *tagent = w->tagent;
	const uint8_t *q_contact_count = w->q_contact_count, *q_rank = w->q_rank;
	uint8_t *q_flag = w->q_flag;
	const uint32_t *q_contact = w->q_contact;
	const bool same_radius = w->q_same_radius, any_rank = w->q_any_rank;
	for (uint32_t k = begin; k < end; ++k) {
		const uint32_t i = list ? list[k] : k;
		const self_params *p = &tself[i];
		const uint32_t count = q_contact_count[i];
		const uint32_t *c = &q_contact[(size_t)i * ORCA_Q_CONTACTS];
		const float xi = tx[i], yi = ty[i];
		float dx = 0.0f, dy = 0.0f;
		if (same_radius) {
			/* every pair: the same radius sum, share 0.5 or the right of way */
			const float rsum = 2.0f * p->radius + Q_SLOP, rsum_sq = rsum * rsum;
			const uint8_t rank = q_rank[i];
#ifdef ORCA_Q_HAVE_AVX2
			if (avx2 && count > 0) {
				/* the closeness tests of all contacts at once, then the
				 * close ones in contact order, as the loop below */
				for (unsigned close = close_contacts_avx2(tx, ty, c, count, xi, yi, rsum_sq); close != 0;
				     close &= close - 1u) {
					const uint32_t j = c[__builtin_ctz(close)];
					same_radius_push(i, j, tx[j], ty[j], xi, yi, rsum, any_rank, rank, q_rank[j], &dx, &dy);
				}
			} else
#endif
			for (uint32_t m = 0; m < count; ++m) {
				const uint32_t j = c[m];
				const float rx = xi - tx[j], ry = yi - ty[j];
				if (!(rx * rx + ry * ry < rsum_sq))
					continue;
				same_radius_push(i, j, tx[j], ty[j], xi, yi, rsum, any_rank, rank, q_rank[j], &dx, &dy);
			}
		}
		for (uint32_t m = 0; m < count && !same_radius; ++m) {
			const uint32_t j = c[m];
			const tree_agent *o = &tagent[j];
			const float rx = xi - tx[j], ry = yi - ty[j];
			const float d_sq = rx * rx + ry * ry;
			const float rsum = p->radius + o->radius + Q_SLOP;
			if (!(d_sq < rsum * rsum))
				continue;
			float share = avoidance_share(p->weight, o->weight, (o->mask & p->layer) != 0);
			if (share == 0.0f)
				continue;
			if (any_rank)
				share = quality_share(w, i, j, share);
			if (share == 0.0f)
				continue;
			const float d = sqrtf(d_sq);
			const vec2 n = d > 0.0f ? v2(rx / d, ry / d) : apart_direction(i, j);
			const float push = (rsum - d) * share;
			dx += n.x * push;
			dy += n.y * push;
		}
		const float len_sq = dx * dx + dy * dy, max_push = Q_PUSH_MAX * p->radius;
		if (!(len_sq > 0.0f))
			continue; /* no overlap: nothing to apply (ORCA's obstacle lines kept it out) */
		if (len_sq > max_push * max_push) {
			const float s = max_push / sqrtf(len_sq);
			dx *= s;
			dy *= s;
		}
		q_dx[i] = dx;
		q_dy[i] = dy;
		/* a push too small to make a deep overlap does not make the
		 * neighbours look again */
		q_flag[i] = (uint8_t)(F_PUSHED | (dx * dx + dy * dy > Q_MOVED * Q_MOVED ? F_MOVED : 0u));
	}
}

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

static void apply_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	nb_entry *obst_nb = w->scratch[worker].obst_nb;
	const bool obstacles = w->obst_root != ORCA_NONE;
	const float inv_dt = 1.0f / w->dt;
	/* the arrays in locals: the float stores could alias the world's fields */
	const uint32_t *q_list = w->q_list;
	const float *q_dx = w->q_dx, *q_dy = w->q_dy;
	const self_params *tself = w->tself;
	/* tree order only (tnvx/tnvy: the velocities it moved with); the
	 * slots get the outcome after the pass (world.c) */
	float *tpx = w->tpx, *tpy = w->tpy, *vxs = w->tnvx, *vys = w->tnvy;
	for (uint32_t k = begin; k < end; ++k) {
		const uint32_t i = q_list[k];
		vec2 pos = v2(tpx[i] + q_dx[i], tpy[i] + q_dy[i]);
		if (obstacles)
			pos = out_of_obstacles(w, obst_nb, pos, tself[i].radius);
		/* the velocity becomes what the agent really did this step */
		float vx = vxs[i] + (pos.x - tpx[i]) * inv_dt, vy = vys[i] + (pos.y - tpy[i]) * inv_dt;
		const float v_sq = vx * vx + vy * vy, max = tself[i].max_speed;
		if (v_sq > max * max) {
			const float f = max / sqrtf(v_sq);
			vx *= f;
			vy *= f;
		}
		vxs[i] = vx;
		vys[i] = vy;
		tpx[i] = pos.x;
		tpy[i] = pos.y;
	}
}

/* Collect, in ascending order, the agents whose flags have any of `bits`
 * into q_list, clearing those bits; returns how many. Most flags are 0:
 * eight at a time are skipped in one test. */
static uint32_t collect(struct orca_world *w, uint32_t n, uint8_t bits)
{
	uint8_t *f = w->q_flag;
	uint32_t count = 0, i = 0;
	const uint64_t any = bits * 0x0101010101010101ull;
	for (; i + 8 <= n; i += 8) {
		uint64_t word;
		memcpy(&word, f + i, sizeof word);
		if (!(word & any))
			continue;
		for (uint32_t k = i; k < i + 8; ++k) {
			if (f[k] & bits) {
				w->q_list[count++] = k;
				f[k] &= (uint8_t)~bits;
			}
		}
	}
	for (; i < n; ++i) {
		if (f[i] & bits) {
			w->q_list[count++] = i;
			f[i] &= (uint8_t)~bits;
		}
	}
	return count;
}

/* Jacobi iterations: every push of an iteration is computed from the same
 * positions, then all are applied. The first looks at every agent; each
 * later one only at the agents that moved deeper than Q_MOVED and their
 * contacts. Lists are in ascending tree index, so the split over workers
 * changes nothing. */
void orca_quality_resolve(struct orca_world *w)
{
	const uint32_t n = w->order_count;
	const uint32_t *look = NULL; /* NULL: every agent */
#ifdef ORCA_Q_HAVE_AVX2
	const bool avx2 = !w->simd_sse2_only && __builtin_cpu_supports("avx2");
#else
	const bool avx2 = false;
#endif
	uint32_t look_count = n;
	for (uint32_t it = 0; it < Q_ITERATIONS && look_count > 0; ++it) {
		pass_ctx ctx = {w, look, avx2};
		orca_pool_run(w->pool, push_task, &ctx, look_count, 256);
		uint32_t pushed;
		if (!look) {
			pushed = collect(w, n, F_PUSHED);
		} else {
			/* the pushed ones, compacted in place (order kept) */
			pushed = 0;
			for (uint32_t k = 0; k < look_count; ++k) {
				const uint32_t i = w->q_list[k];
				if (w->q_flag[i] & F_PUSHED) {
					w->q_flag[i] &= (uint8_t)~F_PUSHED;
					w->q_list[pushed++] = i;
				}
			}
		}
		if (pushed == 0)
			break; /* every overlap resolved */
		orca_pool_run(w->pool, apply_task, w, pushed, 256);
		if (it + 1 == Q_ITERATIONS) {
			for (uint32_t k = 0; k < pushed; ++k)
				w->q_flag[w->q_list[k]] = 0; /* every flag clear between steps */
			break;
		}
		/* who looks next: the deep movers and their contacts */
		bool again = false;
		for (uint32_t k = 0; k < pushed; ++k) {
			const uint32_t i = w->q_list[k];
			if (!(w->q_flag[i] & F_MOVED))
				continue;
			w->q_flag[i] = (uint8_t)((w->q_flag[i] & ~F_MOVED) | F_NEXT);
			again = true;
			const uint32_t *c = &w->q_contact[(size_t)i * ORCA_Q_CONTACTS];
			for (uint32_t m = 0; m < w->q_contact_count[i]; ++m)
				w->q_flag[c[m]] |= F_NEXT;
		}
		if (!again)
			break;
		look_count = collect(w, n, F_NEXT);
		look = w->q_list;
	}
}
