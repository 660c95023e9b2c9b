/* navigation.h — the server's glue to crowd_nav (orca/nav.h): builds the
 * navigation mesh over the world at start-up, gives targets that arrive over
 * the protocol to navigation (SteerMode STEER_NAVIGATE, the default; DIRECT
 * keeps the straight line), runs the navigation update on the step's thread
 * just before each step, keeps the AgentEvents of that update for the server
 * to send, and builds the answers to GetPaths. It sends nothing itself.
 * Everything but navigation_before_step runs on the loop thread while no step
 * runs. */
#ifndef CROWD_SERVER_NAVIGATION_H
#define CROWD_SERVER_NAVIGATION_H

#include <stdbool.h>
#include <stdint.h>

#include <orca/orca.h>

#include "commands.h"
#include "config.h"

typedef struct server_navigation server_navigation;

/** NULL when navigation is off (--navigation=false) or failed (logged). */
server_navigation *navigation_create(orca_world *world, const server_config *cfg);
void navigation_destroy(server_navigation *nav);

/** A command was applied with success (the message table's navigation
 * hooks): hand its targets to navigation (or stop navigating agents given a
 * direct target or a velocity). nav is not NULL. */
void navigation_after_spawn(server_navigation *nav, const command *cmd, const command_result *r);
void navigation_after_set_targets(server_navigation *nav, const command *cmd, const command_result *r);
void navigation_after_set_velocities(server_navigation *nav, const command *cmd, const command_result *r);

/** The demo crowd's trips (on the step's thread, before the update): navigate
 * agent id to target, as a SetTargets with STEER_NAVIGATE does. */
void navigation_set_target(server_navigation *nav, uint32_t id, orca_vec2 target);

/** Where an agent stands in navigation (orca_nav_agent_phase's numbers). */
typedef enum navigation_phase {
	NAVIGATION_NONE = 0,    /* not navigating (never was, or steered straight or by velocity since) */
	NAVIGATION_WAITING = 1, /* its path query is queued */
	NAVIGATION_MOVING = 2,  /* following its corridor */
	NAVIGATION_DONE = 3,    /* arrived at its goal */
} navigation_phase;

navigation_phase navigation_agent_phase(server_navigation *nav, uint32_t id);

/** On the step's thread, just before orca_world_step: obstacles, paths,
 * preferred directions; keeps the events for navigation_events. */
void navigation_before_step(server_navigation *nav, float dt);

/** The AgentEvents of the last update (owner filled in), for the server to
 * send after the tick's snapshots; valid until the next update. NULL nav: none. */
const crowd_v1_AgentEvent *navigation_events(const server_navigation *nav, uint32_t *count);

/** A GetPaths answer: the Paths message and the memory its arrays live in. */
typedef struct navigation_paths_reply {
	crowd_v1_ServerMessage msg;
	struct path_block *blocks;
	uint32_t count;
} navigation_paths_reply;

/** Answer a GetPaths command (NULL nav: every path empty). True with *out
 * filled (free it with navigation_paths_free), or false with *err: an id
 * unknown or not the sender's (all or nothing), or out of memory. */
bool navigation_paths(const server_navigation *nav, const orca_world *world, const command *cmd,
                      navigation_paths_reply *out, request_error *err);
void navigation_paths_free(navigation_paths_reply *r);

/** Persistence (server/storage): the navigation state for a checkpoint
 * (orca_nav_save: everything that decides its future; NULL buf: the size),
 * and back into a navigation just created on the world loaded with it: the
 * two then step exactly as the saved ones would have. */
size_t navigation_save(const server_navigation *nav, uint8_t *buf, size_t capacity);
int navigation_load(server_navigation *nav, const uint8_t *buf, size_t len);

/** Counters for /metrics and logs. */
typedef struct navigation_counters {
	uint64_t events[4];       /* by AgentEventKind */
	uint64_t paths_planned;
	uint32_t paths_pending;
	uint32_t tiles_pending;
	uint32_t agents;          /* navigating now */
	uint32_t polygons;        /* in the navigation mesh */
	uint64_t tiles_built;     /* tile (re)builds since start */
	uint64_t replans[4];      /* by orca_nav_replan_reason */
} navigation_counters;

void navigation_get_counters(const server_navigation *nav, navigation_counters *out);

#endif
