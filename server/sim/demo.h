/* demo.h — the built-in demo crowd (--demo): agents walking between a few
 * waypoints around some obstacles, forever, each picking a new waypoint when
 * it arrives. Deterministic: the same ticks give the same world. */
#ifndef CROWD_SERVER_DEMO_H
#define CROWD_SERVER_DEMO_H

#include <stdint.h>

#include <orca/orca.h>

#include "config.h"

typedef struct demo_crowd demo_crowd;

/** Add the obstacles and `cfg->demo_agents` agents (owner 0) to the world. NULL on failure. */
demo_crowd *demo_create(orca_world *world, const server_config *cfg);

/** Before each step: give every demo agent that arrived its next waypoint. */
void demo_update(demo_crowd *demo, orca_world *world);

void demo_destroy(demo_crowd *demo);

#endif
