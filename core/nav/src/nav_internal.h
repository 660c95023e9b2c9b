/* nav_internal.h — navigation's private state, shared by its files (one per
 * concept, along DetourCrowd's seams):
 *   nav.c        lifecycle, memory (the world's allocator), events, queries, stats;
 *   nav_tiles.c  the obstacle cache and the dirty-tile queue (the mesh's tiles);
 *   nav_crowd.c  the agents: targets, the path queue, visits, corridor refreshes,
 *                re-plans, arrival and STUCK, the update;
 *   nav_flow.c   the rules for crowds where paths meet: waiting one's turn, lanes,
 *                arrived agents that make way and walk back;
 *   nav_io.c     save and load.
 * Recast/Detour sit behind navmesh.h. Everything runs on the caller's thread
 * in a fixed order, or in parallel visits that write only their own agent, so
 * it is deterministic. */
#ifndef CROWD_NAV_INTERNAL_H
#define CROWD_NAV_INTERNAL_H

#include <math.h>
#include <string.h>

#include "navmesh.h"
#include "orca/nav.h"

#define NAV_NO_INDEX UINT32_MAX
#define NAV_MAX_CORNERS 3
#define NAV_DONE_VISIT 64u /* arrived agents are checked this often (removed? taken over?) */
#define NAV_WAIT_VISIT 4u  /* agents waiting their turn are looked at this often */
#define NAV_RETURN 4.0f    /* an arrived agent pushed this many radii (and arrival_distance) off its goal navigates back */

/* A FIFO ring of agent ids. */
typedef struct nav_ring {
	orca_agent_id *ids;
	uint32_t head, len, cap;
} nav_ring;

enum { NAV_RING_TARGETS = 0, NAV_RING_REPLANS = 1, NAV_RINGS = 2 };

typedef struct nav_agent {
	orca_agent_id id;
	orca_nav_agent_phase phase;
	bool queued;             /* in the path queue */
	bool far;                /* corridor is a part of a longer way: plan again at its end */
	bool unreachable;        /* goal is the nearest reachable point, not the target */
	bool unreachable_sent;   /* UNREACHABLE already reported for this target */
	bool stuck_sent;
	bool replanned_for_stall;
	bool making_way;         /* arrived, stepping aside for a stalled agent (steer: where to) */
	bool waiting;            /* waiting its turn behind an agent ahead (steer: where it stands) */
	bool returning;          /* arrived, pushed far off its goal, navigating back (no second ARRIVED) */
	bool was_waiting;        /* waiting and heading as of the last commit: what other agents' */
	orca_vec2 was_heading;   /* visits read (visits run in parallel; equal between updates) */
	bool done;               /* phase DONE as of the last commit: what other agents' visits read
	                          * (visits run in parallel; phase may change under them) */
	uint64_t next_visit;     /* the update at which it is looked at next (an update's scan
	                          * reads its copy in orca_nav's due array: sync_due) */
	orca_vec2 target;        /* as given */
	orca_vec2 goal;          /* where the corridor ends */
	orca_vec2 steer;         /* the point given to the engine as its target */
	bool final_leg;          /* steer == goal */
	orca_vec2 heading;       /* the corner (or goal) its path heads for, before any detour */
	orca_vec2 progress_ref;  /* the corner progress is measured against */
	float best_dist;         /* the closest it has been to progress_ref */
	orca_vec2 prev_ref;      /* the corner headed for before progress_ref */
	float prev_best;         /* the closest it had been to prev_ref */
	orca_vec2 stuck_pos;     /* where STUCK was last said */
	float stall_time;        /* seconds since */
	float plan_off;          /* its distance from the corridor when the path was planned */
	uint64_t last_visit;
	uint64_t found_in;       /* updates + 1 of the update whose batch found its path (find_paths) */
	navmesh_corridor *corridor;
} nav_agent;

/* What one agent's visit decided beyond the agent itself, applied after all
 * visits of an update in agent order (commit_visit): visits run in parallel. */
typedef struct nav_visit {
	bool drop;      /* forget it (removed, or taken over) */
	bool enqueue;   /* into the path queue (a->queued is set already) */
	bool set_steer; /* give the engine a->steer */
	bool make_way;  /* ask the arrived agents it touches to make way */
	uint8_t event_count;
	uint8_t replans[ORCA_NAV_REPLAN_REASONS];
	orca_nav_event_kind kinds[2];
	orca_vec2 points[2];
	/* make_way's candidates, found in the visit: way_count entries of
	 * way_lists[way_worker] from way_begin (way_found false: the commit looks) */
	bool way_found;
	uint8_t way_count;
	uint16_t way_worker;
	uint32_t way_begin;
} nav_visit;

/* An agent that make_way may move, and where to: what of make_way depends
 * only on positions and the mesh (which an update does not change), so the
 * parallel visits find it; the commit checks what visits change (phase,
 * making_way) and moves them, in agent order. */
typedef struct nav_way {
	orca_agent_id id;
	orca_vec2 aside;
	bool checked; /* aside is known (touching, walkable); else the commit looks, if it gets that far */
} nav_way;

typedef struct nav_way_list { /* one per worker: only that worker writes it during the visits */
	nav_way *items;
	uint32_t count, cap;
	uint32_t want; /* room a visit lacked (visits do not allocate: the next update makes it) */
	/* a cache line between two workers' fields: each writes its own count
	 * in its visits, and one line for both would go to and fro */
	char apart[64];
} nav_way_list;

typedef struct nav_obstacle {
	orca_obstacle_id id;
	orca_vec2 lo, hi;
	uint32_t count;
	orca_vec2 *vertices;
} nav_obstacle;

/* One agent's path query answered ahead, in parallel, with what it was
 * asked (plan takes the answer only for the same question). */
typedef struct nav_found {
	orca_agent_id id;
	orca_vec2 position, target;
	bool crowded; /* weighs crowding (nav_avoids_crowds) */
	navmesh_plan_answer answer;
} nav_found;

struct orca_nav {
	orca_nav_def def;
	orca_world *world;
	navmesh *mesh;
	int tiles_x, tiles_y;
	uint64_t updates;

	nav_agent *agents;          /* dense, in order of first navigation */
	uint32_t agent_count, agent_cap;
	/* per agent, in agents' order: the update it is due at (next_visit; never
	 * while it waits for its first path). An update's scan of every agent
	 * reads this, 8 bytes each, not a nav_agent's cache line each. */
	uint64_t *due;
	uint32_t due_cap;
	/* per agent, in agents' order, for the first crowd_cap agents: the
	 * polygon it marks crowded (nav_crowd_poly; 0: none), kept by sync_due,
	 * so that an update's marks read 4 bytes an agent (nav_crowd_mark) */
	uint32_t *crowd_poly;
	uint32_t crowd_cap;
	bool crowd_marked;          /* the mesh holds this update's crowding marks */
	uint32_t *index_of_slot;    /* agent slot -> index in agents */
	uint32_t slot_cap;
	/* agent slot -> 1 if an entry of that slot was done (arrived) at its last
	 * commit: a hint that lets make_way's candidate search in the visits skip
	 * reading each neighbour's nav_agent; a wrong hint costs time, never a
	 * different result (way_candidates) */
	uint8_t *done_hint;
	/* agent slot -> 1 if the entry its slot names may be done (arrived) now;
	 * 0 only if it is not (set at every change of phase; a visit sets its
	 * own agent's): lets make_way_found skip most candidates without reading
	 * their nav_agent, exactly as reading it would */
	uint8_t *phase_hint;
	uint32_t hint_cap;          /* of done_hint and phase_hint */

	/* The path queue: agents waiting for a path, in two rings served in
	 * order, new targets (phase WAITING) before re-plans, so that a command
	 * is answered within path_budget's reach even when a jam floods the
	 * queue with re-plans (100,000 agents in a jam keep about 40,000 queued).
	 * An entry whose agent is no longer queued for its ring's kind is stale
	 * and skipped. */
	nav_ring queue[NAV_RINGS];

	nav_obstacle *obstacles;    /* ascending id */
	uint32_t obstacle_count, obstacle_cap;
	uint32_t obstacle_version;
	bool obstacles_unseen;      /* compare with the world's at the next update whatever its version says */
	orca_obstacle_id *id_scratch;
	uint32_t id_scratch_cap;
	navmesh_obstacle *build_scratch;
	uint32_t build_scratch_cap;

	uint32_t *tile_queue;       /* ring of dirty tiles */
	uint32_t tile_head, tile_len;
	uint8_t *tile_dirty;

	orca_nav_event *events;
	uint32_t event_count, event_cap;

	nav_visit *visits;          /* per agent, in agents' order: the update's parallel part */
	uint32_t visit_cap;
	uint8_t *visited;           /* per agent: visits[i] holds this update's visit */
	uint32_t visited_cap;
	float visit_dt;
	bool visit_mesh_changed;
	nav_way_list *way_lists; /* per worker, emptied at each update */
	uint32_t way_list_count;

	nav_found *found;           /* a batch of path queries answered in parallel (find_paths) */
	uint32_t found_count, found_next, found_cap;
	uint32_t *found_paths;      /* found_cap * max_path polygons */

	uint64_t paths_planned, tiles_built;
	uint64_t replans[ORCA_NAV_REPLAN_REASONS];
};

static inline uint32_t slot_of(orca_agent_id id)
{
	return (id & ((1u << ORCA_ID_INDEX_BITS) - 1u)) - 1u;
}

static inline float dist(orca_vec2 a, orca_vec2 b)
{
	const float dx = a.x - b.x, dy = a.y - b.y;
	return sqrtf(dx * dx + dy * dy);
}

static inline bool same_point(orca_vec2 a, orca_vec2 b)
{
	return a.x == b.x && a.y == b.y;
}

/* The same bits (a query's input: -0 and 0 may not answer alike) */
static inline bool same_bits(orca_vec2 a, orca_vec2 b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

/* ------------------------------------------------------------------ memory (nav.c)
 * Every allocation through the world's allocator (freed with its size). */
void *nav_alloc(const orca_nav *nav, size_t size);
void *nav_calloc(const orca_nav *nav, size_t count, size_t size); /* zeroed */
void nav_free(const orca_nav *nav, void *p, size_t size);
/* Room for need elements of elem bytes in *p (capacity *cap); keeps contents. */
bool nav_grow(const orca_nav *nav, void **p, uint32_t *cap, uint32_t need, size_t elem);
void nav_emit(orca_nav *nav, const nav_agent *a, orca_nav_event_kind kind, orca_vec2 point);

/* ------------------------------------------------------------------ tiles (nav_tiles.c) */
int nav_sync_obstacles(orca_nav *nav);
bool nav_rebuild_tiles(orca_nav *nav, uint32_t budget);
void nav_free_obstacles(const orca_nav *nav, nav_obstacle *obstacles, uint32_t count, uint32_t cap);

/* ------------------------------------------------------------------ agents (nav_crowd.c) */
static inline void set_done(orca_nav *nav, nav_agent *a, bool done)
{
	a->done = done;
	nav->done_hint[slot_of(a->id)] = done;
}

/* After a's phase changed (or it was named by its slot). */
static inline void note_phase(orca_nav *nav, const nav_agent *a)
{
	const uint32_t s = slot_of(a->id);
	if (nav->index_of_slot[s] == (uint32_t)(a - nav->agents))
		nav->phase_hint[s] = a->phase == ORCA_NAV_DONE;
}


uint32_t nav_crowd_poly(const orca_nav *nav, const nav_agent *a);

/* After a's phase, next_visit, stall or corridor changed (due and crowd_poly
 * are what an update's scans read). */
static inline void sync_due(orca_nav *nav, const nav_agent *a)
{
	const uint32_t i = (uint32_t)(a - nav->agents);
	nav->due[i] = a->phase == ORCA_NAV_WAITING ? UINT64_MAX : a->next_visit;
	if (i < nav->crowd_cap)
		nav->crowd_poly[i] = nav_crowd_poly(nav, a);
}

static inline nav_agent *find_agent(const orca_nav *nav, orca_agent_id id)
{
	const uint32_t s = slot_of(id);
	if (id == ORCA_NULL_ID || s >= nav->slot_cap || nav->index_of_slot[s] == NAV_NO_INDEX)
		return NULL;
	nav_agent *a = &nav->agents[nav->index_of_slot[s]];
	return a->id == id ? a : NULL;
}

/* The k-th entry of the path queue (the targets' ring, then the re-plans')
 * and its ring. */
static inline orca_agent_id queue_at(const orca_nav *nav, uint32_t k, int *ring)
{
	*ring = NAV_RING_TARGETS;
	if (k >= nav->queue[NAV_RING_TARGETS].len) {
		k -= nav->queue[NAV_RING_TARGETS].len;
		*ring = NAV_RING_REPLANS;
	}
	const nav_ring *q = &nav->queue[*ring];
	return q->ids[(q->head + k) % q->cap];
}

static inline uint32_t queue_length(const orca_nav *nav)
{
	return nav->queue[NAV_RING_TARGETS].len + nav->queue[NAV_RING_REPLANS].len;
}

/* The ring an agent queued now waits in. */
static inline int queue_ring(const nav_agent *a)
{
	return a->phase == ORCA_NAV_WAITING ? NAV_RING_TARGETS : NAV_RING_REPLANS;
}

/* Appends to a ring of the path queue; false: out of memory. */
bool nav_queue_push(orca_nav *nav, int ring, orca_agent_id id);

/* An entry of `ring` for a: not stale. */
static inline bool queue_entry_live(const nav_agent *a, int ring)
{
	return a && a->queued && queue_ring(a) == ring;
}

/* A path query for the agent, counted under `reason` (in a visit: queued at
 * the commit). */
static inline void request_path(nav_visit *v, nav_agent *a, orca_nav_replan_reason reason)
{
	if (a->queued)
		return;
	a->queued = true;
	v->enqueue = true;
	v->replans[reason]++;
}

static inline void note_event(nav_visit *v, orca_nav_event_kind kind, orca_vec2 point)
{
	if (v->event_count < 2) {
		v->kinds[v->event_count] = kind;
		v->points[v->event_count++] = point;
	}
}

/* A corner, the goal, or a detour on the way to the target given: a waypoint,
 * which leaves the agent's right of way as orca_nav_set_target gave it. In a
 * visit (v) the engine gets it at the commit; else now. */
static inline void steer_to(orca_nav *nav, nav_visit *v, nav_agent *a, orca_vec2 p)
{
	a->steer = p;
	if (v)
		v->set_steer = true;
	else
		orca_agent_set_waypoint(nav->world, a->id, p);
}

bool nav_grow_hints(orca_nav *nav, uint32_t need);
void nav_schedule(orca_nav *nav, nav_agent *a, const orca_agent_state *st, float dt);

/* ------------------------------------------------------------------ flow rules (nav_flow.c) */
/* On the mesh: a point an agent's centre may stand on. */
static inline bool walkable(const orca_nav *nav, int worker, orca_vec2 p)
{
	return navmesh_on_mesh(nav->mesh, worker, p);
}

#define NAV_AHEAD 3.5f
void nav_crowd_ahead(const orca_nav *nav, const nav_agent *a, const orca_agent_state *st, orca_vec2 p, float ux,
                     float uy, bool any_speed, bool *oncoming, bool *wait);
bool nav_in_corridor(const orca_nav *nav, int worker, orca_vec2 p, float ux, float uy);
bool nav_sees_oncoming(const orca_nav *nav, const nav_agent *a, const orca_agent_state *st, float ux, float uy);
bool nav_lane_point(const orca_nav *nav, int worker, const orca_agent_state *st, float ux, float uy, float len,
                    orca_vec2 *out);
void nav_rest(orca_nav *nav, nav_visit *v, nav_agent *a, const orca_agent_state *st);
void nav_visit_arrived(orca_nav *nav, nav_visit *v, nav_agent *a, const orca_agent_state *st, float dt,
                       uint64_t since);
bool nav_goal_taken(const orca_nav *nav, const nav_agent *a, const orca_agent_state *st);
void nav_make_way(orca_nav *nav, const nav_agent *a, const orca_agent_state *st);
void nav_find_way(orca_nav *nav, nav_visit *v, int worker, const nav_agent *a, const orca_agent_state *st);
void nav_make_way_found(orca_nav *nav, const nav_agent *a, const orca_agent_state *st, const nav_way *way,
                        uint32_t count);
bool nav_avoids_crowds(const orca_nav *nav, const nav_agent *a);
void nav_crowd_mark(orca_nav *nav);  /* before an update's path queries */
void nav_crowd_clear(orca_nav *nav); /* after them */

#endif
