/* steerbench_case.h — one SteerSuite case as converted into
 * tests/data/steersuite (format in that directory's README.md), and the
 * measurements steerbench and detourcrowd_bench take of a run of it: arrivals,
 * times against the free walk, path lengths against the shortest path,
 * collisions, and a composite score after SteerBench's (Singh et al. 2009:
 * 50 x collisions per agent + time per agent + kinetic energy per agent).
 * Plain C, so the C++ DetourCrowd driver uses the same code. */
#ifndef CROWD_STEERBENCH_CASE_H
#define CROWD_STEERBENCH_CASE_H

#include <stdbool.h>
#include <stdint.h>

#include "orca/orca.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sb_agent {
	orca_vec2 start;
	orca_vec2 *goals; /* in order; goal_count >= 1 */
	uint32_t goal_count;
	float speed; /* desired speed */
	float radius;
	orca_vec2 velocity; /* initial */
} sb_agent;

typedef struct sb_case {
	char name[128]; /* the file name without directory and .txt */
	float time_step;
	float time_limit; /* seconds */
	orca_vec2 bounds_min, bounds_max;
	uint32_t obstacle_count;
	uint32_t *obstacle_sizes;
	orca_vec2 **obstacles; /* counter-clockwise */
	uint32_t agent_count;
	sb_agent *agents;
	float max_radius;
} sb_case;

/* Load a set-up; 0, or -1 with a message in err. */
int sb_case_load(const char *path, sb_case *out, char *err, size_t err_len);
void sb_case_free(sb_case *c);

/* ---- measurements */

typedef struct sb_metrics sb_metrics;

/* shortest[i]: length of agent i's shortest path through all its goals (the
 * runner finds it on its own navigation mesh); copied. */
sb_metrics *sb_metrics_create(const sb_case *c, const float *shortest);
void sb_metrics_destroy(sb_metrics *m);

/* After each step of dt seconds: pos[i] for every agent, active[i] false once
 * an agent has left (arrived at its last goal). Collisions are counted among
 * active agents and against the case's obstacles. */
void sb_metrics_step(sb_metrics *m, float dt, const orca_vec2 *pos, const bool *active);

/* Agent i reached its last goal at time t (seconds since the start). */
void sb_metrics_arrived(sb_metrics *m, uint32_t i, double t);

/* Agent i was told its goal cannot be reached. */
void sb_metrics_unreachable(sb_metrics *m, uint32_t i);

typedef struct sb_summary {
	uint32_t agents, arrived, unreachable;
	double last_arrival; /* seconds; 0 when none arrived */
	double mean_time;    /* mean time to goal of the arrived agents */
	double time_ratio;   /* mean of time to goal / free-walk time, arrived agents */
	double path_ratio;   /* mean of walked length / shortest length, arrived agents */
	/* (free walk: the shortest path, less the agent's radius per goal, at its desired speed) */
	uint64_t collisions; /* distinct overlaps deeper than 0.001 (agent pairs, agent-obstacle) */
	uint64_t deep;       /* (agent pair, step)s overlapping by more than 0.01 */
	uint64_t wall;       /* (agent, step)s overlapping an obstacle by more than 0.01 */
	double score;        /* SteerBench composite 01 */
	uint64_t steps;
} sb_summary;

void sb_metrics_summary(const sb_metrics *m, sb_summary *out);

/* The Markdown table's header and one row (mode: quality, reference, detour). */
void sb_print_header(void);
void sb_print_row(const char *name, const char *mode, const sb_summary *s, double ms_per_step);

/* ---- the ctest ratchet: tests/data/steersuite/expected.txt */

typedef struct sb_expect {
	bool found;
	uint32_t min_arrived;
	uint64_t max_deep;
	float time_limit; /* 0: the case's own */
} sb_expect;

/* The line "case mode min_arrived max_deep [time_limit]" for (name, mode). */
int sb_expect_load(const char *path, const char *name, const char *mode, sb_expect *out);

#ifdef __cplusplus
}
#endif

#endif /* CROWD_STEERBENCH_CASE_H */
