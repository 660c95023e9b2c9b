/* quality.h — the quality avoidance mode (quality.c): right of way, the
 * aim turned while blocked, the overlap pass. Its per-agent hooks in the
 * velocity stage are in quality_hooks.h. */
#ifndef ORCA_QUALITY_H
#define ORCA_QUALITY_H

#include <stdbool.h>
#include <stdint.h>

#include "world_internal.h"

#define ORCA_Q_CONTACTS 6u /* close neighbours remembered for the overlap pass */
/* The overlap pass pushes agents this far past contact (quality.c). */
#define ORCA_Q_SLOP 0.2f

/* Quality mode, per tree index during a step: the turn it aims with (NAN:
 * none), and its stuck timer and blockage, back to their slots after the
 * overlap pass; its top speed, for that pass (quality.c). */
typedef struct q_agent {
	float turn, stuck, blocked, max_speed;
} q_agent;

/* Quality mode, right of way between equals (share 0.5): an idle agent
 * (wanting less than ORCA_Q_IDLE speed: arrived, or waiting) makes way for a
 * walking one, a walking one for one given a new target in the last
 * ORCA_Q_FRESH seconds. The lower rank takes ORCA_Q_YIELD_SHARE. One second
 * is enough to turn (the jammed agent of core_quality turns in one step);
 * longer, more agents hold it at once and it means less: with 2,000 retargets
 * a second among 50,000 agents, 3 s gave the load bench's probes a p99 of
 * 1.25 s to turn visibly, 1 s gives 150 ms (tests/bench/retarget_bench). */
#define ORCA_Q_IDLE 0.1f
#define ORCA_Q_FRESH 1.0f
#define ORCA_Q_YIELD_SHARE 1.0f

/* Between equals of one rank, the follow rules: a crowd heading one way
 * queues behind its front instead of pressing on it, and lets out first
 * those who leave where it goes. In order, for self a against other b:
 *  - the same target point: the one farther from it takes the whole
 *    avoidance (ORCA_Q_YIELD_SHARE);
 *  - let them out first: one leaving the other's target (within 4 m of that
 *    point, nearer it than the other is, and walking away from it) is let
 *    out, the other takes the avoidance; unless both leave each other's;
 *  - walking the same way (preferred velocities within 60 degrees): the one
 *    behind (the other lies within 45 degrees of their summed direction)
 *    takes it, if the other is nearer its own target.
 * The way left to the target orders all agents, so no ring of agents can
 * each wait on the next, and every test is exactly antisymmetric (offsets
 * and sums are the same numbers negated or swapped): two agents never both
 * yield or both hold on. ORCA's lines only: the overlap pass shares every
 * contact, so an agent pinned behind another is still pushed free. Each
 * agent's inputs, per tree index (w->q_follow, written while ranking): */
#define QF_PVX 0 /* preferred velocity */
#define QF_PVY 1
#define QF_GX 2 /* its target point; NaN without one (never equal, never nearer) */
#define QF_GY 3
#define QF_STRIDE 4
#define QF_ALONG_COS_SQ 0.25f /* 60 degrees */
#define QF_AHEAD_COS_SQ 0.5f  /* 45 degrees */
/* Let them out first near the target only: within 4 m of it. A target is
 * often a corner of a path, not a destination, and at a corridor's mouth
 * the agent just in "leaves" the corner the one coming out heads for: with
 * 5 m, the server demo's corridor between two rooms let 4 agents through
 * one way in two minutes and 31 the other (tests/server/test_demo.c), with
 * 4 m 13 and 36. Unbounded, the whole SteerSuite run (steersuite.md) had 3
 * times the deep overlaps. */
#define QF_LET_OUT_NEAR_SQ 16.0f

/* The rules' share for self (inputs a, at pa) against other (inputs b, at
 * pb); vectorized lane by lane in agent_lines_impl.h, with the same
 * operations. */
static inline float quality_follow(const float *a, const float *b, float pax, float pay, float pbx, float pby)
{
	const float ax = a[QF_PVX], ay = a[QF_PVY], bx = b[QF_PVX], by = b[QF_PVY];
	const float agx = a[QF_GX], agy = a[QF_GY], bgx = b[QF_GX], bgy = b[QF_GY];
	const float alx = agx - pax, aly = agy - pay, blx = bgx - pbx, bly = bgy - pby;
	const float a_left = alx * alx + aly * aly, b_left = blx * blx + bly * bly;
	bool behind;
	if (agx == bgx && agy == bgy) {
		behind = b_left < a_left;
	} else {
		/* b leaving a's target, a leaving b's */
		const float box = pbx - agx, boy = pby - agy, aox = pax - bgx, aoy = pay - bgy;
		const float bo_sq = box * box + boy * boy, ao_sq = aox * aox + aoy * aoy;
		const bool a_waits = bo_sq < a_left && bo_sq < QF_LET_OUT_NEAR_SQ && bx * box + by * boy > 0.0f;
		const bool b_waits = ao_sq < b_left && ao_sq < QF_LET_OUT_NEAR_SQ && ax * aox + ay * aoy > 0.0f;
		if (a_waits != b_waits)
			return a_waits ? ORCA_Q_YIELD_SHARE : 1.0f - ORCA_Q_YIELD_SHARE;
		const float dot = ax * bx + ay * by;
		const float a_sq = ax * ax + ay * ay, b_sq = bx * bx + by * by;
		if (!(dot > 0.0f && dot * dot > QF_ALONG_COS_SQ * (a_sq * b_sq)))
			return 0.5f;
		const float rx = pbx - pax, ry = pby - pay;
		const float dx = ax + bx, dy = ay + by;
		const float ahead = rx * dx + ry * dy;
		const float dist_sq = rx * rx + ry * ry;
		if (!(ahead * ahead > QF_AHEAD_COS_SQ * (dist_sq * (dx * dx + dy * dy))))
			return 0.5f;
		behind = ahead > 0.0f;
	}
	if (behind)
		return b_left < a_left ? ORCA_Q_YIELD_SHARE : 0.5f;
	return a_left < b_left ? 1.0f - ORCA_Q_YIELD_SHARE : 0.5f;
}

/* Quality mode's share for self against other (tree indices), given the
 * share by weights and masks: the right of way (the overlap pass's share). */
static inline float quality_rank_share(const struct orca_world *w, uint32_t self, uint32_t other, float share)
{
	if (share != 0.5f || w->q_rank[self] == w->q_rank[other])
		return share;
	return w->q_rank[self] < w->q_rank[other] ? ORCA_Q_YIELD_SHARE : 1.0f - ORCA_Q_YIELD_SHARE;
}

/* ORCA's lines: the right of way, then between equals the follow rules. */
static inline float quality_share(const struct orca_world *w, uint32_t self, uint32_t other, float share)
{
	if (share != 0.5f || w->q_rank[self] != w->q_rank[other] || !w->q_follow_now)
		return quality_rank_share(w, self, other, share);
	return quality_follow(&w->q_follow[QF_STRIDE * (size_t)self], &w->q_follow[QF_STRIDE * (size_t)other],
	                      w->tpx[self], w->tpy[self], w->tpx[other], w->tpy[other]);
}

bool orca_quality_reserve(struct orca_world *w);
void orca_quality_free(struct orca_world *w);
/* Right of way, in three parts: before the tree (or grid order) build, the
 * per-worker counts cleared; each gather chunk ranks its agents while their
 * slots' lines are still in cache (orca_agent_gather_task); after the build,
 * the counts summed. */
void orca_quality_rank_reset(struct orca_world *w);
void orca_quality_rank_range(struct orca_world *w, uint32_t begin, uint32_t end, int worker);
void orca_quality_prepare(struct orca_world *w);
/* After integration, before the tree refit: push overlapping agents apart. */
void orca_quality_resolve(struct orca_world *w);

#endif /* ORCA_QUALITY_H */
