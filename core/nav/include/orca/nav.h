/* nav.h — navigation beside the ORCA engine: a tiled navigation mesh of the
 * walkable world (the bounds minus every obstacle, inflated by one agent
 * radius; Recast/Detour underneath), a path corridor per navigating agent, and
 * its preferred direction toward the next string-pulled corner. ORCA still does
 * the local avoidance. Uses only orca.h's public API; the engine does not know
 * this module exists.
 *
 * Each step: orca_nav_update(nav, dt) then orca_world_step(world, dt). The
 * update reads obstacle changes from the world (orca_world_obstacle_version)
 * and rebuilds the tiles they touch, at most `tile_budget` tiles per update;
 * answers at most `path_budget` path queries from its queue (new targets
 * first, in order, then re-plans, in order); refreshes each
 * agent's corridor, re-plans when needed, and sets each navigating agent's
 * target (ORCA_STEER_TARGET) to its next corner. It runs on the calling thread
 * and depends only on the sequence of calls, never on timing or the world's
 * worker count. */
#ifndef ORCA_NAV_H
#define ORCA_NAV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "orca/orca.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct orca_nav orca_nav;

/** Navigation definition. Get one from orca_nav_default_def(). */
typedef struct orca_nav_def {
	/** The walkable world before obstacles (agents outside it are off-mesh). */
	orca_vec2 bounds_min, bounds_max;
	/** Obstacles and bounds are inflated by this: the largest radius of the
	 * agents that navigate (smaller ones get paths a little wider than needed). */
	float agent_radius;
	/** Voxel size of the mesh build; 0: agent_radius / 3. Rounded down to a
	 * power of two (so the mesh is the same on every CPU; see the README). */
	float cell_size;
	/** Tile edge in voxels; 0: 64 (raised until the world fits 4,096 tiles). */
	uint32_t tile_cells;
	/** Tiles rebuilt per update after obstacles change; 0: all of them at once. */
	uint32_t tile_budget;
	/** Path queries answered per update (the rest wait, in order); 0: all. */
	uint32_t path_budget;
	/** Polygons a corridor holds; a longer path is walked in parts. At 32 or
	 * fewer the visibility shortcut is skipped (Detour 1.5.1 overruns smaller
	 * corridors there). */
	uint32_t max_path;
	/** A* node pool of a path query (<= 65535). */
	uint32_t max_nodes;
	/** Updates between two corridor refreshes of one agent (staggered by id;
	 * sooner when it nears a corner or its goal). Only due agents cost
	 * anything in an update. */
	uint32_t refresh_interval;
	/** Seconds without progress (moving at least agent_radius) before a STUCK
	 * event (said once, again only after moving 4 radii on); half of it
	 * triggers a re-plan. 0: never. */
	float stuck_time;
	/** A target farther than this from its nearest walkable point is unreachable. */
	float goal_tolerance;
	/** Arrived within this of the goal (besides the engine's own arrival, which
	 * uses the agent's arrival_distance). */
	float arrival_distance;
} orca_nav_def;

/** Defaults: world -1000..1000, radius 1.5, cell radius/3, 64-cell tiles, 8
 * tiles and 256 paths per update, 128-polygon corridors, 8,192 nodes, refresh
 * every 16 updates, stuck after 10 s, goal tolerance radius/2, arrival 0. */
orca_nav_def orca_nav_default_def(void);

/** Create navigation for `world` and build the whole mesh from its obstacles
 * now (the one build that is not spread over updates). The world must outlive it:
 * navigation allocates through the world's allocator. */
int orca_nav_create(const orca_nav_def *def, orca_world *world, orca_nav **out);

/** NULL is allowed. The agents keep their last target. */
void orca_nav_destroy(orca_nav *nav);

/** Navigate agent `id` to `target`: its path is queued (until then it walks
 * straight at the target); re-planned as needed until it arrives. */
int orca_nav_set_target(orca_nav *nav, orca_agent_id id, orca_vec2 target);

/** Stop navigating `id` (it keeps its current engine target). Not an error if
 * it was not navigating. Setting the agent's preferred velocity, or a target
 * through orca.h, also ends navigation when the agent is next looked at
 * (within refresh_interval updates; nav never steers it before noticing). */
int orca_nav_stop(orca_nav *nav, orca_agent_id id);

/** Obstacle changes, tile rebuilds, path queue, corridors, preferred
 * directions and events: call once before every orca_world_step. */
int orca_nav_update(orca_nav *nav, float dt);

/** Event kinds: same numbers as crowd.v1's AgentEventKind. */
typedef enum orca_nav_event_kind {
	ORCA_NAV_ARRIVED = 1,     /* reached its goal (the target, or the point chosen) */
	ORCA_NAV_UNREACHABLE = 2, /* no path to the target: walks to `point`, the nearest reachable point */
	ORCA_NAV_STUCK = 3,       /* no progress for stuck_time seconds; `point` is where it is */
} orca_nav_event_kind;

typedef struct orca_nav_event {
	orca_agent_id agent;
	orca_nav_event_kind kind;
	orca_vec2 point;
	orca_vec2 target;
} orca_nav_event;

/** Events of the last orca_nav_update, in the order they happened; valid
 * until the next update. */
const orca_nav_event *orca_nav_events(const orca_nav *nav, uint32_t *count);

typedef enum orca_nav_agent_phase {
	ORCA_NAV_NONE = 0,     /* not navigating */
	ORCA_NAV_WAITING = 1,  /* its path query is queued */
	ORCA_NAV_MOVING = 2,   /* following its corridor */
	ORCA_NAV_DONE = 3,     /* arrived at its goal */
} orca_nav_agent_phase;

/** One agent's navigation: phase, target, goal (where its corridor ends), and
 * up to `corner_capacity` string-pulled corners from where it stands. */
typedef struct orca_nav_path {
	orca_nav_agent_phase phase;
	orca_vec2 target;
	orca_vec2 goal;
	bool unreachable;
	uint32_t corner_count;    /* corners written */
	uint32_t corridor_count;  /* polygons in its corridor */
} orca_nav_path;

int orca_nav_get_path(orca_nav *nav, orca_agent_id id, orca_nav_path *out, orca_vec2 *corners,
                      uint32_t corner_capacity);

/** Vertices (counter-clockwise, up to 6) of polygon i of the agent's corridor;
 * returns the count, 0 when out of range. */
uint32_t orca_nav_corridor_polygon(const orca_nav *nav, orca_agent_id id, uint32_t i, orca_vec2 vertices[6]);

/** The nearest walkable point to p (false when the mesh is empty): p itself
 * when p is on the mesh, else a point of navigation's cell / 8 grid. */
bool orca_nav_nearest_point(const orca_nav *nav, orca_vec2 p, orca_vec2 *out);

/** Why a path was planned again. */
typedef enum orca_nav_replan_reason {
	ORCA_NAV_REPLAN_MESH_CHANGED = 0, /* a rebuilt tile touched the corridor */
	ORCA_NAV_REPLAN_OFF_CORRIDOR = 1, /* the crowd pushed the agent off it */
	ORCA_NAV_REPLAN_NO_PROGRESS = 2,  /* no progress for stuck_time / 2 */
	ORCA_NAV_REPLAN_NEXT_PART = 3,    /* the end of a path longer than max_path */
	ORCA_NAV_REPLAN_REASONS = 4,
} orca_nav_replan_reason;

/** Counters. */
typedef struct orca_nav_stats {
	uint32_t tiles_x, tiles_y;
	uint32_t tiles_pending;     /* tiles waiting to be rebuilt */
	uint32_t polygons;
	uint32_t agents;            /* agents navigating (any phase but NONE) */
	uint32_t paths_pending;     /* path queries waiting */
	uint64_t paths_planned;     /* path queries answered since creation */
	uint64_t tiles_built;       /* tiles built since creation */
	uint64_t replans[ORCA_NAV_REPLAN_REASONS]; /* re-plans since creation, by reason */
	size_t memory_bytes;        /* mesh, query, corridors, agent state */
} orca_nav_stats;

void orca_nav_get_stats(const orca_nav *nav, orca_nav_stats *out);

/** The counters without memory_bytes (left 0), whose sum walks every agent's
 * corridor (~1.7 ms for 50,000 agents): for a caller that reads them after
 * every update (the server, for /metrics, each tick). */
void orca_nav_get_counts(const orca_nav *nav, orca_nav_stats *out);

/** Save everything that decides navigation's future into buf (NULL: just the
 * size; returns the bytes needed): the update count and counters; its view
 * of the obstacles; the mesh's tiles in the order they were last added (that
 * order decides the order of Detour's links, and so ties in path search),
 * each with its tile ref, and the bytes of those waiting for a rebuild (the
 * others are what the world's obstacles build); the rebuild queue; every
 * navigating agent in order with all its state and its corridor (polygon
 * refs, position, target); the path queue in order. A world saved with
 * orca_world_save at the same moment and loaded, with a navigation loaded
 * from this, steps bit-identically to the pair saved (tests/nav
 * nav_checkpoint). Size: ~110 bytes per agent plus 4 per corridor polygon,
 * plus the waiting tiles (a few kB each). */
size_t orca_nav_save(const orca_nav *nav, uint8_t *buf, size_t capacity);

/** Restore a save into a nav just created (orca_nav_create, no update yet) on
 * the world loaded from the save made with it. ORCA_ERR_INVALID_ARGUMENT on
 * a malformed blob or one made with another tile grid or max_path (the nav
 * is then unchanged, but for the mesh if the error came from its tiles:
 * destroy it). */
int orca_nav_load(orca_nav *nav, const uint8_t *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* ORCA_NAV_H */
