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
static inline float quality_share(const struct orca_world *w, uint32_t self, uint32_t other, float share)
{
	if (share != 0.5f || w->q_rank[self] == w->q_rank[other])
		return share;
	return w->q_rank[self] < w->q_rank[other] ? ORCA_Q_YIELD_SHARE : 1.0f - ORCA_Q_YIELD_SHARE;
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
