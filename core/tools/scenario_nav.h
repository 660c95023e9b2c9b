/* scenario_nav.h — a scenario under navigation: the nav definition a set-up
 * implies (its bounding box plus a margin, its agents' radius) and every
 * agent sent to its goal by path. Used by orca-replay --navigate, the nav
 * tests and the nav benchmark. */
#ifndef CROWD_SCENARIO_NAV_H
#define CROWD_SCENARIO_NAV_H

#include "orca/nav.h"
#include "scenario.h"

/* The nav definition for this scenario: bounds = bounding box of starts,
 * goals and obstacles, grown by 10 radii; radius = the agents' radius. */
orca_nav_def scenario_nav_def(const scenario *s);

/* Create navigation over w and give every agent its goal by path. */
int scenario_navigate(const scenario *s, orca_world *w, const orca_agent_id *ids, orca_nav **out);

#endif /* CROWD_SCENARIO_NAV_H */
