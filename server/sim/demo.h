/* demo.h — the built-in demo crowd (--demo): agents walking between a few
 * waypoints around some obstacles, forever, each picking a new waypoint when
 * it arrives. Deterministic: the same ticks give the same world. */
#ifndef CROWD_SERVER_DEMO_H
#define CROWD_SERVER_DEMO_H

#include <stddef.h>
#include <stdint.h>

#include <orca/orca.h>

#include "config.h"

typedef struct demo_crowd demo_crowd;

/** Add the obstacles and `cfg->demo_agents` agents (owner 0) to the world. NULL on failure. */
demo_crowd *demo_create(orca_world *world, const server_config *cfg);

/** Before each step: give every demo agent that arrived its next waypoint. */
void demo_update(demo_crowd *demo, orca_world *world);

void demo_destroy(demo_crowd *demo);

/** The demo's whole state (random generator, waypoints, its agents' ids and
 * stuck counters) as little-endian bytes, for checkpoints; malloc'd, NULL when
 * out of memory. */
uint8_t *demo_save(const demo_crowd *demo, size_t *len);

/** A demo crowd from demo_save bytes (its agents are in the world already).
 * NULL when the bytes are malformed. */
demo_crowd *demo_load(const uint8_t *data, size_t len);

#endif
