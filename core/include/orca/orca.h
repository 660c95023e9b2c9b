/* orca.h — the public face of the crowd engine: a 2-D world of disc agents and
 * polygon obstacles moved by ORCA (Optimal Reciprocal Collision Avoidance, the
 * algorithm of RVO2). Pure C11, no I/O. Everything not declared here is private.
 *
 * Style follows Box2D v3: fill a definition from orca_default_*_def(), change
 * what differs, create; ids are opaque values with a generation, checked on
 * every call; one orca_world_step() call advances the world. */
#ifndef ORCA_ORCA_H
#define ORCA_ORCA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ basics */

/** A 2-D vector in world units. */
typedef struct orca_vec2 {
	float x, y;
} orca_vec2;

/** Status codes: 0 is success, errors are negative. Map 1:1 onto the wire's ErrorCode. */
typedef enum orca_status {
	ORCA_OK = 0,
	ORCA_ERR_INVALID_ARGUMENT = -1, /* non-finite number, negative radius/speed, null pointer */
	ORCA_ERR_UNKNOWN_ID = -2,       /* never issued, or null */
	ORCA_ERR_STALE_ID = -3,         /* issued, then removed */
	ORCA_ERR_CAPACITY = -4,         /* a hard limit of the world (max agents/obstacles) */
	ORCA_ERR_NO_MEMORY = -5,        /* the allocator said no */
	ORCA_ERR_BAD_POLYGON = -6,      /* not a valid obstacle: see orca_polygon_check */
} orca_status;

/** A human-readable name for a status code. Never NULL. */
const char *orca_strerror(int status);

/** An agent id: 0 is the null id. Bits 0..19 hold slot+1, bits 20..31 the slot's
 * generation. A slot whose generation would wrap is retired, so an id is never
 * reused. Fresh worlds hand out 1, 2, 3, ... */
typedef uint32_t orca_agent_id;
/** An obstacle id, same scheme as agent ids. */
typedef uint32_t orca_obstacle_id;

#define ORCA_NULL_ID 0u
#define ORCA_ID_INDEX_BITS 20u
#define ORCA_MAX_AGENTS ((1u << ORCA_ID_INDEX_BITS) - 2u)

/** Allocator callbacks; all NULL means malloc/free. `user` is passed back. */
typedef struct orca_allocator {
	void *(*alloc)(size_t size, void *user);
	void (*free)(void *ptr, size_t size, void *user);
	void *user;
} orca_allocator;

/* ------------------------------------------------------------------ world */

typedef struct orca_world orca_world;

/** How obstacles are indexed for the neighbour search. */
typedef enum orca_obstacle_index {
	/** RVO2's obstacle kd-tree when every obstacle was added before the first
	 * step and they have at most ORCA_RVO2_TREE_MAX_VERTICES vertices in all
	 * (RVO2's results bit for bit, edge splits and neighbour order included);
	 * from the first change after that, or for more vertices, the edge grid. */
	ORCA_OBSTACLE_INDEX_AUTO = 0,
	/** Always the edge grid: a uniform grid over the edges, updated in place by
	 * each add and remove (cost proportional to the polygon), never rebuilt.
	 * Obstacle neighbours come in (distance, edge) order; no edge is split. */
	ORCA_OBSTACLE_INDEX_GRID = 1,
	/** Always RVO2's kd-tree, rebuilt at the next step after any change: exact
	 * RVO2 behaviour at any size, but O(n^2) in the vertex count per rebuild
	 * (seconds at tens of thousands of vertices). */
	ORCA_OBSTACLE_INDEX_RVO2 = 2,
} orca_obstacle_index;

#define ORCA_RVO2_TREE_MAX_VERTICES 1024u

/** How agents avoid each other. */
typedef enum orca_avoidance {
	/** RVO2's ORCA, bit for bit (the engine's default: the replay tests prove it). */
	ORCA_AVOIDANCE_REFERENCE = 0,
	/** ORCA plus what keeps a crowd moving (core/src/quality.c): blocked
	 * agents keep to the right, stuck ones turn further, overlaps are pushed
	 * apart after each step and never into an obstacle. Deterministic like
	 * the reference mode, but not RVO2's trajectories. */
	ORCA_AVOIDANCE_QUALITY = 1,
} orca_avoidance;

/** World definition. Get one from orca_default_world_def(). */
typedef struct orca_world_def {
	/** Threads used by orca_world_step (1 = the caller's thread only). Results
	 * are bit-identical for every worker count. */
	int worker_count;
	/** Agents and obstacle vertices to reserve room for up front; the world grows
	 * past them, but no step allocates once they are reached. */
	uint32_t agent_capacity;
	uint32_t obstacle_vertex_capacity;
	/** Hard limit on live agents (<= ORCA_MAX_AGENTS). */
	uint32_t max_agents;
	/** Optional world bounds: with has_bounds, every agent's position is kept
	 * inside [bounds_min, bounds_max] after each step (a velocity component that
	 * pushed it out is zeroed), whatever steers it. min <= max, finite. */
	bool has_bounds;
	orca_vec2 bounds_min, bounds_max;
	orca_allocator allocator;
	/** Obstacle index (default ORCA_OBSTACLE_INDEX_AUTO). */
	orca_obstacle_index obstacle_index;
	/** ORCA_AVOIDANCE_REFERENCE (default) or ORCA_AVOIDANCE_QUALITY. */
	orca_avoidance avoidance;
	/** Quality avoidance's follow rules (default true): between agents of
	 * equal weight and right of way walking one way, the one behind takes
	 * the whole avoidance of the one ahead that is nearer its target; of
	 * agents heading for one target point the one farther from it yields;
	 * and an agent lets out first one that leaves its target, so crowds
	 * queue at exits and shared goals instead of pressing on them
	 * (docs/engine.md). Saved with the world: a save made without the rule
	 * loads without it, so a recording replays as it ran. */
	bool quality_follow;
} orca_world_def;

/** Defaults: 1 worker, capacity 1024 agents / 1024 vertices, max ORCA_MAX_AGENTS,
 * reference avoidance, the quality follow rule on. */
orca_world_def orca_default_world_def(void);

/** Create a world. Returns ORCA_OK and sets *out, or an error. */
int orca_world_create(const orca_world_def *def, orca_world **out);

/** Destroy a world and everything in it. NULL is allowed. */
void orca_world_destroy(orca_world *world);

/** Advance the world by dt (> 0, finite): compute preferred velocities from
 * targets, build the kd-trees, compute every agent's new velocity from the
 * previous state (in parallel), then move every agent. */
int orca_world_step(orca_world *world, float dt);

/** A loop body for orca_world_parallel_for: items [begin, end), run by
 * worker `worker` (0 .. orca_world_worker_count - 1). */
typedef void (*orca_parallel_fn)(void *ctx, uint32_t begin, uint32_t end, int worker);

/** Run fn over items [0, count) in chunks of `grain` on the world's worker
 * threads and the caller's, returning when all are done. Between steps only
 * (never during orca_world_step or from inside fn). Which worker runs which
 * chunk varies from run to run: for results independent of the worker count
 * fn writes only per-item results and per-worker scratch. fn may read the
 * world (orca_agent_get, orca_query_*: they only read here) but must not
 * change it, nor call orca_world_parallel_for; except that an item may set
 * the waypoint (orca_agent_set_waypoint) of an agent that no other item sets
 * or reads (that writes the agent's own target alone). For modules beside the
 * engine (crowd_nav's per-agent update). */
void orca_world_parallel_for(orca_world *world, orca_parallel_fn fn, void *ctx, uint32_t count, uint32_t grain);

/** The world's worker count (orca_world_def.worker_count). */
int orca_world_worker_count(const orca_world *world);

/** Switch avoidance mode from the next step on (per-agent quality state is kept). */
int orca_world_set_avoidance(orca_world *world, orca_avoidance avoidance);

/** The current avoidance mode. */
orca_avoidance orca_world_avoidance(const orca_world *world);

/** Live agents. */
uint32_t orca_world_agent_count(const orca_world *world);

/** Steps taken since creation. */
uint64_t orca_world_step_count(const orca_world *world);

/** Agents per block of the state hash (orca_world_state_hash). */
#define ORCA_HASH_BLOCK 4096u

/** A 64-bit hash of every live agent's id, position and velocity bits, in
 * ascending id order. Equal worlds hash equal on every platform. Its
 * definition (protocol 1.4, storage format 2): each agent's fields make one
 * word, w = m(id ^ m(p ^ m(v))), with p = x bits << 32 | y bits, v = vx bits
 * << 32 | vy bits and m splitmix64's finalizer; the agents in id order are cut
 * into blocks of ORCA_HASH_BLOCK, a block's hash b folds its words from the
 * FNV-1a basis (b = (b ^ w) * FNV prime) and is finished by m; the state hash
 * folds the live count into the basis, then each m(b) in block order. Blocks
 * are independent: the hash may be computed in parts, in parallel. */
uint64_t orca_world_state_hash(const orca_world *world);

/** The state hash of protocol 1.3 and storage format 1 and before: FNV-1a
 * over 20 little-endian bytes per live agent (id, x, y, vx, vy bits), in
 * ascending id order. Kept so that data recorded with it still verifies. */
uint64_t orca_world_state_hash_v1(const orca_world *world);

/** Fill `ids` with up to `capacity` live agent ids in slot order; returns the
 * number of live agents (which may exceed capacity). */
uint32_t orca_world_agent_ids(const orca_world *world, orca_agent_id *ids, uint32_t capacity);

/* ------------------------------------------------------------------ agents */

/** How an agent's preferred velocity is chosen each step. */
typedef enum orca_steer_mode {
	ORCA_STEER_VELOCITY = 0, /* pref_velocity as given (default: zero) */
	ORCA_STEER_TARGET = 1,   /* toward target at pref_speed, slowing to arrive exactly */
	/** Added: RVO2's examples' rule, g = target - position, scaled down to
	 * pref_speed when longer (pref_speed 1 gives the reference data's rule
	 * bit for bit). Arrival is reported as in ORCA_STEER_TARGET. */
	ORCA_STEER_TARGET_RVO2 = 2,
} orca_steer_mode;

/** Agent definition. Defaults are RVO2's example defaults (see orca_default_agent_def). */
typedef struct orca_agent_def {
	orca_vec2 position;
	orca_vec2 velocity;
	orca_vec2 pref_velocity;
	orca_steer_mode steer_mode;
	orca_vec2 target;
	float pref_speed;        /* cruising speed toward a target (<= max_speed is sensible) */
	float arrival_distance;  /* within this distance of its target an agent has arrived */
	float radius;
	float max_speed;
	float neighbor_dist;
	uint32_t max_neighbors;
	float time_horizon;
	float time_horizon_obst;
	/** Share of avoidance this agent takes on against another: w_self/(w_self+w_other).
	 * 0 = never yields. Both 0: each takes half, as if both were 0.5. */
	float weight;
	uint32_t layer;          /* bits this agent is on */
	uint32_t mask;           /* avoids agents whose layer has a bit in this mask */
	uint32_t user_data;      /* carried, never read (the server stores the owner) */
} orca_agent_def;

/** RVO2 defaults: neighbor_dist 15, max_neighbors 10, time_horizon 10,
 * time_horizon_obst 10, radius 1.5, max_speed 2; pref_speed 1, arrival 0.05,
 * weight 0.5, layer 1, mask all bits, velocity mode with zero velocity. */
orca_agent_def orca_default_agent_def(void);

/** Validate and add an agent. */
int orca_agent_add(orca_world *world, const orca_agent_def *def, orca_agent_id *out);

/** Validate and add `count` agents, all or nothing: either every one is
 * added (ids[i] for defs[i], exactly the ids and state `count` calls of
 * orca_agent_add would give) or, on any error, the world is left exactly as
 * it was -- no id handed out, no generation or slot used, the next ids and
 * the state hash unchanged -- so a batch that fails leaves no trace a replay
 * of the successful requests could miss. Every definition is validated and
 * the capacity and memory reserved before anything changes. Errors:
 * ORCA_ERR_INVALID_ARGUMENT (defs[*failed] is not valid), ORCA_ERR_CAPACITY,
 * ORCA_ERR_NO_MEMORY. `failed` (may be NULL) gets the index of the bad
 * definition, 0 for the other errors. count 0: ORCA_OK, nothing changes. */
int orca_world_add_agents(orca_world *world, const orca_agent_def *defs, uint32_t count, orca_agent_id *ids,
                          uint32_t *failed);

/** Remove an agent; its id becomes stale. */
int orca_agent_remove(orca_world *world, orca_agent_id id);

/** ORCA_OK if id names a live agent, else ORCA_ERR_UNKNOWN_ID or ORCA_ERR_STALE_ID. */
int orca_agent_check(const orca_world *world, orca_agent_id id);

/** Walk toward target (steer mode becomes ORCA_STEER_TARGET unless it is
 * ORCA_STEER_TARGET_RVO2, which stays; arrived clears). */
int orca_agent_set_target(orca_world *world, orca_agent_id id, orca_vec2 target);

/** Steer at a waypoint on the way to the target already given: like
 * orca_agent_set_target, but not a new target, so in quality mode the agent
 * keeps the right of way it has (a new target gets it for ORCA_Q_FRESH
 * seconds; navigation moves the waypoint at every corner and while a stalled
 * agent keeps right, and would otherwise hold it for ever). */
int orca_agent_set_waypoint(orca_world *world, orca_agent_id id, orca_vec2 waypoint);

/** Use this preferred velocity from now on (steer mode becomes ORCA_STEER_VELOCITY). */
int orca_agent_set_pref_velocity(orca_world *world, orca_agent_id id, orca_vec2 pref_velocity);

/** Replace every parameter except position, velocity and id (validated as in add). */
int orca_agent_set_def(orca_world *world, orca_agent_id id, const orca_agent_def *def);

/** Teleport (position only). */
int orca_agent_set_position(orca_world *world, orca_agent_id id, orca_vec2 position);

/** One agent's full state. */
typedef struct orca_agent_state {
	orca_agent_id id;
	orca_vec2 position;
	orca_vec2 velocity;
	orca_vec2 pref_velocity; /* the one used in the last step */
	orca_steer_mode steer_mode;
	orca_vec2 target;
	bool arrived;            /* target mode: within arrival_distance of target */
	float radius;
	float max_speed;
	float pref_speed;
	float weight;
	uint32_t layer, mask;
	uint32_t user_data;
} orca_agent_state;

int orca_agent_get(const orca_world *world, orca_agent_id id, orca_agent_state *out);

/** What a snapshot needs of an agent: orca_agent_get's id, position,
 * velocity, radius and user_data. */
typedef struct orca_agent_motion {
	orca_agent_id id; /* 0 (no agent has it): ids[i] is not a live agent */
	orca_vec2 position;
	orca_vec2 velocity;
	float radius;
	uint32_t user_data;
} orca_agent_motion;

/** For i in [0, count): out[i] as orca_agent_get(ids[i]) says of these fields
 * (out[i].id = 0 when ids[i] is unknown, stale or removed). Returns how many
 * were live. One call for many agents (a snapshot table of the whole world,
 * from orca_world_agent_ids): no per-agent call and no full orca_agent_state.
 * Only reads: several threads may call it at once between steps. */
uint32_t orca_agents_read_motion(const orca_world *world, const orca_agent_id *ids, uint32_t count,
                                 orca_agent_motion *out);

/* ------------------------------------------------------------------ queries */

/** Agents whose centre lies in [min, max] (inclusive), ascending id order. Writes
 * up to `capacity` ids; returns how many matched (may exceed capacity). Uses the
 * agent kd-tree of the last step when no agent was added, removed or moved
 * since, else a linear scan. */
uint32_t orca_query_rect(const orca_world *world, orca_vec2 min, orca_vec2 max, orca_agent_id *ids,
                         uint32_t capacity);

/** Agents whose centre is within `radius` of `center`, ascending id order. */
uint32_t orca_query_radius(const orca_world *world, orca_vec2 center, float radius, orca_agent_id *ids,
                           uint32_t capacity);

/* ------------------------------------------------------------------ obstacles */

/** The smallest feature of a valid obstacle (world units): edge length, the
 * distance of a vertex to an edge it is not on; and the smallest area. */
#define ORCA_POLYGON_MIN_FEATURE 0.01f

/** Why a polygon is not a valid obstacle. */
typedef struct orca_polygon_issue {
	const char *reason; /* static text, NULL when valid */
	uint32_t index;     /* the vertex (or the first vertex of the edge) at fault */
	bool clockwise;     /* valid but clockwise: reverse it before orca_obstacle_add */
} orca_polygon_issue;

/** Is this a valid obstacle? 2 vertices: a segment at least
 * ORCA_POLYGON_MIN_FEATURE long. 3 or more: a simple polygon (no two edges
 * cross or touch but neighbours at their shared vertex), every edge at least
 * ORCA_POLYGON_MIN_FEATURE long, no vertex collinear with its neighbours (no
 * back-and-forth spike), no vertex closer than ORCA_POLYGON_MIN_FEATURE to an
 * edge it is not on (no sliver), area at least ORCA_POLYGON_MIN_FEATURE.
 * Every coordinate finite and within +-1e9. Returns ORCA_OK (issue->clockwise
 * tells the orientation) or ORCA_ERR_BAD_POLYGON with issue->reason. O(n^2)
 * in the vertex count: callers bound it. `issue` may be NULL. */
int orca_polygon_check(const orca_vec2 *vertices, uint32_t count, orca_polygon_issue *issue);

/** Add a polygon obstacle: vertices counter-clockwise as in RVO2 (2 vertices =
 * a line segment); it must pass orca_polygon_check and be counter-clockwise,
 * else ORCA_ERR_BAD_POLYGON. Takes effect at the next step. With the edge grid
 * (see orca_obstacle_index) the cost is paid here, in proportion to the polygon. */
int orca_obstacle_add(orca_world *world, const orca_vec2 *vertices, uint32_t count, orca_obstacle_id *out);

int orca_obstacle_remove(orca_world *world, orca_obstacle_id id);

/** Live obstacles. */
uint32_t orca_world_obstacle_count(const orca_world *world);

/** Fill `ids` with up to `capacity` live obstacle ids in slot order; returns the count. */
uint32_t orca_world_obstacle_ids(const orca_world *world, orca_obstacle_id *ids, uint32_t capacity);

/** Copy an obstacle's vertices as given to orca_obstacle_add; *count gets the
 * vertex count (which may exceed capacity). */
int orca_obstacle_get(const orca_world *world, orca_obstacle_id id, orca_vec2 *vertices, uint32_t capacity,
                      uint32_t *count);

/** Bumped whenever an obstacle is added or removed (for "did it change?" checks). */
uint32_t orca_world_obstacle_version(const orca_world *world);

/* ------------------------------------------------------------------ save / load */

/** Write the whole world (agents with every parameter, ids with generations
 * and retired slots, the persistent agent order, obstacles with their ids and
 * add order, the step count) to buf as portable little-endian bytes. *size
 * gets the bytes needed; returns ORCA_ERR_CAPACITY (writing nothing) when
 * capacity is smaller, so a caller may ask with (NULL, 0) first. A world
 * loaded from these bytes steps bit-identically to this one. Each engine
 * module writes its own section (core/src/world_io.c). */
int orca_world_save(const orca_world *world, void *buf, size_t capacity, size_t *size);

/** Load bytes written by orca_world_save into a freshly created world (its
 * definition's workers and allocator stay). Every byte is checked: anything
 * malformed gives ORCA_ERR_INVALID_ARGUMENT and leaves the world empty. */
int orca_world_load(orca_world *world, const void *buf, size_t size);

/* ------------------------------------------------------------------ profile */

/** What the last step did and how long each stage took (milliseconds). */
typedef struct orca_step_profile {
	double total_ms;
	double pref_velocity_ms;
	double agent_tree_ms;
	double obstacle_tree_ms;  /* 0 unless obstacles changed */
	double velocity_ms;       /* neighbour search + ORCA lines + linear programs */
	double integrate_ms;
	uint32_t agents;
	uint32_t workers;
	uint64_t neighbor_count;  /* agent neighbours used, summed over agents */
	uint64_t obstacle_line_count;
	uint32_t lp3_fallbacks;   /* agents whose 2-D program was infeasible */
	uint32_t arrived;         /* agents in target mode that have arrived */
	uint64_t allocations;     /* allocator calls made inside this step */
} orca_step_profile;

void orca_world_profile(const orca_world *world, orca_step_profile *out);

#ifdef __cplusplus
}
#endif

#endif /* ORCA_ORCA_H */
