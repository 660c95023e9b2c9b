/* scenario.h — the reference scenarios outside the engine: load a set-up file
 * in the format of tests/data/ref (`*_setup.csv` or `blocks_setup.txt`), or
 * build `circle N`; make a world from it; test whether it is done. Used by
 * orca-replay, the core tests and the benchmark. */
#ifndef CROWD_SCENARIO_H
#define CROWD_SCENARIO_H

#include <stdbool.h>
#include <stdint.h>

#include "orca/orca.h"

typedef struct scenario {
	float time_step;
	orca_agent_def agent;   /* defaults shared by every agent */
	float goal_dist_sq;     /* done when every |pos - goal|^2 <= this; < 0: use radius^2 */
	uint32_t agent_count;
	orca_vec2 *start, *goal;
	uint32_t obstacle_count;
	uint32_t *obstacle_sizes;
	orca_vec2 **obstacles;
} scenario;

/* Load a set-up file. Returns 0, or -1 with a message in err. */
int scenario_load(const char *path, scenario *out, char *err, size_t err_len);

/* RVO2's Circle example scaled: agent i at R(cos 2πi/N, sin 2πi/N), R = 200N/250,
 * goal at the antipode. */
int scenario_circle(uint32_t n, scenario *out);

void scenario_free(scenario *s);

/* A world with the scenario's obstacles and agents (ids[i] for agent i);
 * agents steer with the reference rule (ORCA_STEER_TARGET_RVO2, speed 1). */
int scenario_make_world(const scenario *s, int workers, orca_world **out, orca_agent_id *ids);

/* Every agent at its goal (the reference files' test). */
bool scenario_done(const scenario *s, const orca_world *w, const orca_agent_id *ids);

#endif /* CROWD_SCENARIO_H */
