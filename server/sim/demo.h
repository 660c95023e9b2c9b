/* demo.h — the built-in demo crowd (--demo): agents spread over the places of
 * a map (map.h: rooms joined by doors and corridors, by default), each walking
 * through navigation to a random spot in another place, then on to the next,
 * forever; an agent that makes no progress for long is sent elsewhere.
 * Deterministic: the same ticks give the same world. */
#ifndef CROWD_SERVER_DEMO_H
#define CROWD_SERVER_DEMO_H

#include <stddef.h>
#include <stdint.h>

#include <orca/orca.h>

#include "config.h"
#include "map.h"
#include "navigation.h"

typedef struct demo_crowd demo_crowd;

/** Add `cfg->demo_agents` agents (owner 0) to the world, spread over the map's
 * places (its walls are the caller's: map_build). NULL on failure. */
demo_crowd *demo_create(orca_world *world, const server_config *cfg, const map_def *map);

/** Before each step (and before navigation's update): give every demo agent
 * that arrived, or made no progress for long, a spot in another place. nav
 * NULL (--navigation=false): the agents walk straight at their spots. */
void demo_update(demo_crowd *demo, orca_world *world, server_navigation *nav);

void demo_destroy(demo_crowd *demo);

/** The demo's whole state (random generator, map, its agents' ids, places and
 * stuck counters) as little-endian bytes, for checkpoints; malloc'd, NULL when
 * out of memory. */
uint8_t *demo_save(const demo_crowd *demo, size_t *len);

/** A demo crowd from demo_save bytes (its agents are in the world already).
 * NULL when the bytes are malformed, or were written by a version before the
 * map (their format is refused). */
demo_crowd *demo_load(const uint8_t *data, size_t len);

#endif
