/* quality_hooks.h — quality mode's two per-agent hooks in the velocity
 * stage (velocity.c calls them once per agent each): inline, so that a call
 * with ten arguments per agent does not cost more than the hooks' work.
 * The rest of the mode is in quality.c. Included by velocity.c. */
#ifndef ORCA_QUALITY_HOOKS_H
#define ORCA_QUALITY_HOOKS_H

#include "quality.h"

/* A speed below this share of the preferred speed counts as stuck (moving
 * sideways round a jam does not: that is the way out). */
#define ORCA_Q_PROGRESS_MIN 0.3f
/* Stuck this long (s), the widest turn did not help: start again from straight. */
#define ORCA_Q_STUCK_MAX 8.0f

/* The preferred velocity ORCA aims for: pref turned right while blocked. */
static inline vec2 orca_quality_aim(const struct orca_world *w, uint32_t self, uint32_t slot, vec2 pref)
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

/* The obstacle time horizon a blocked agent looks ahead with: its own over
 * (1 + ORCA_Q_OBST_GAIN * turn), at least ORCA_Q_OBST_MIN seconds (or its own,
 * if shorter). A long horizon keeps a walker well off the walls, but it also
 * pins a jammed one: its speed toward a wall is at most its gap over the
 * horizon, so the way round a corner or past a block stays closed to it
 * (SteerSuite's overtake-obstacle: the fast agent stalled beside the block).
 * The turn grows with being blocked and stuck (aim_turn, quality.c), so the
 * horizon shortens only for agents kept from their way; a free agent (turn
 * NAN) keeps the one it was given, bit for bit. */
#define ORCA_Q_OBST_GAIN 10.0f
#define ORCA_Q_OBST_MIN 1.0f

static inline float orca_quality_obstacle_horizon(const struct orca_world *w, uint32_t self, float horizon)
{
	const float turn = w->q_agents[self].turn;
	if (!(turn > 0.0f))
		return horizon;
	const float shorter = horizon / (1.0f + ORCA_Q_OBST_GAIN * turn);
	const float least = horizon < ORCA_Q_OBST_MIN ? horizon : ORCA_Q_OBST_MIN;
	return shorter > least ? shorter : least;
}

/* After the linear program: update the stuck timer, remember close neighbours. */
static inline void orca_quality_after(struct orca_world *w, uint32_t self, uint32_t slot, vec2 pref, vec2 aim, vec2 new_velocity,
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
	} else if (v2_abs_sq(new_velocity) < ORCA_Q_PROGRESS_MIN * ORCA_Q_PROGRESS_MIN * pref_sq) {
		/* stuck too long: the widest turn did not help either, try again
		 * from straight ahead */
		stuck = stuck + dt;
		stuck = stuck > ORCA_Q_STUCK_MAX ? 0.0f : stuck;
	} else {
		stuck = stuck - dt;
		stuck = stuck < 0.0f ? 0.0f : stuck;
	}
	qa->stuck = stuck; /* to its slot after the overlap pass */
	const self_params *p = &w->tself[self];
	qa->max_speed = p->max_speed; /* for the overlap pass, next to the rest */

	/* neighbours this step can bring into contact (or within the slop):
	 * this agent at its new speed, the other at most at our top speed;
	 * bounded with the largest radius, so the list (sorted by distance)
	 * ends at the first one too far */
	const float reach = (v2_abs(new_velocity) + p->max_speed) * dt + ORCA_Q_SLOP + 2.0f;
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

#endif /* ORCA_QUALITY_HOOKS_H */
