/* quality_scenarios.h — the crossing set-ups of issue 11, built in code (the
 * circles and random crowds come from scenario.h): two groups swapping places
 * head-on, four groups crossing a square. RVO2's example parameters (radius
 * 1.5, max speed 2, preferred speed 1, time step 0.25); done when every agent
 * is within its radius of its goal. Shared by tests/core/test_quality.c, the
 * quality benchmark and the DetourCrowd driver. Header-only. */
#ifndef CROWD_QUALITY_SCENARIOS_H
#define CROWD_QUALITY_SCENARIOS_H

#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "scenario.h"
#ifdef __cplusplus
}
#endif

static inline int qs_begin(scenario *s, uint32_t n)
{
	memset(s, 0, sizeof *s);
	s->time_step = 0.25f;
	s->agent = orca_default_agent_def();
	s->agent.steer_mode = ORCA_STEER_TARGET_RVO2;
	s->agent.pref_speed = 1.0f;
	s->goal_dist_sq = -1.0f;
	s->start = (orca_vec2 *)calloc(n ? n : 1, sizeof(orca_vec2));
	s->goal = (orca_vec2 *)calloc(n ? n : 1, sizeof(orca_vec2));
	if (!s->start || !s->goal) {
		scenario_free(s);
		return -1;
	}
	return 0;
}

/* A side x side block of agents (spacing 4) centred on (cx, cy), walking to
 * the same block centred on (gx, gy). */
static inline void qs_block(scenario *s, uint32_t side, float cx, float cy, float gx, float gy)
{
	const float half = 2.0f * (float)(side - 1);
	for (uint32_t r = 0; r < side; ++r) {
		for (uint32_t c = 0; c < side; ++c) {
			const float dx = 4.0f * (float)c - half, dy = 4.0f * (float)r - half;
			orca_vec2 *start = &s->start[s->agent_count], *goal = &s->goal[s->agent_count];
			start->x = cx + dx, start->y = cy + dy;
			goal->x = gx + dx, goal->y = gy + dy;
			s->agent_count++;
		}
	}
}

/* Two side x side groups 60 apart swap places head-on (side 6: 72 agents). */
static inline int qs_swap(scenario *s, uint32_t side)
{
	if (qs_begin(s, 2 * side * side) != 0)
		return -1;
	qs_block(s, side, -30.0f, 0.0f, 30.0f, 0.0f);
	qs_block(s, side, 30.0f, 0.0f, -30.0f, 0.0f);
	return 0;
}

/* Four side x side groups on the sides of a square cross to the opposite
 * side, all through the centre (side 8: 256 agents). */
static inline int qs_cross4(scenario *s, uint32_t side)
{
	if (qs_begin(s, 4 * side * side) != 0)
		return -1;
	const float d = 40.0f;
	qs_block(s, side, -d, 0.0f, d, 0.0f);
	qs_block(s, side, d, 0.0f, -d, 0.0f);
	qs_block(s, side, 0.0f, -d, 0.0f, d);
	qs_block(s, side, 0.0f, d, 0.0f, -d);
	return 0;
}

#endif /* CROWD_QUALITY_SCENARIOS_H */
