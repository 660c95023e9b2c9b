/* nav.c — navigation state and decisions: which agents navigate and where,
 * the obstacle cache and the dirty-tile queue, the path-query queue with its
 * per-update budget, corridor refreshes, re-plans, arrival/unreachable/stuck
 * events. Recast/Detour sit behind navmesh.h. Everything here runs on the
 * caller's thread in a fixed order, so it is deterministic. */
#include "orca/nav.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "navmesh.h"

#define NAV_NO_INDEX UINT32_MAX
#define NAV_MAX_CORNERS 3
#define NAV_DONE_VISIT 64u /* arrived agents are checked this often (removed? taken over?) */
#define NAV_WAIT_VISIT 4u  /* agents waiting their turn are looked at this often */
#define NAV_RETURN 4.0f    /* an arrived agent pushed this many radii (and arrival_distance) off its goal navigates back */

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

	orca_agent_id *queue;       /* ring of agents waiting for a path */
	uint32_t queue_head, queue_len, queue_cap;

	nav_obstacle *obstacles;    /* ascending id */
	uint32_t obstacle_count, obstacle_cap;
	uint32_t obstacle_version;
	bool obstacles_unseen;      /* compare with the world's at the next update whatever its version says */
	orca_obstacle_id *id_scratch;
	uint32_t id_scratch_cap;
	navmesh_obstacle *build_scratch;

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

static uint32_t slot_of(orca_agent_id id)
{
	return (id & ((1u << ORCA_ID_INDEX_BITS) - 1u)) - 1u;
}

static float dist(orca_vec2 a, orca_vec2 b)
{
	const float dx = a.x - b.x, dy = a.y - b.y;
	return sqrtf(dx * dx + dy * dy);
}

static bool same_point(orca_vec2 a, orca_vec2 b)
{
	return a.x == b.x && a.y == b.y;
}

/* The same bits (a query's input: -0 and 0 may not answer alike) */
static bool same_bits(orca_vec2 a, orca_vec2 b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

static bool grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	uint32_t nc = *cap ? *cap : 16;
	while (nc < need)
		nc *= 2;
	void *q = realloc(*p, (size_t)nc * elem);
	if (!q)
		return false;
	*p = q;
	*cap = nc;
	return true;
}

orca_nav_def orca_nav_default_def(void)
{
	orca_nav_def d;
	memset(&d, 0, sizeof d);
	d.bounds_min = (orca_vec2){-1000.0f, -1000.0f};
	d.bounds_max = (orca_vec2){1000.0f, 1000.0f};
	d.agent_radius = 1.5f;
	d.cell_size = 0.0f;
	d.tile_cells = 64;
	d.tile_budget = 8;
	d.path_budget = 256;
	d.max_path = 128;
	d.max_nodes = 8192;
	d.refresh_interval = 16;
	d.stuck_time = 10.0f;
	d.goal_tolerance = -1.0f; /* radius / 2 */
	d.arrival_distance = 0.0f;
	return d;
}

/* ------------------------------------------------------------------ events */

static void emit(orca_nav *nav, const nav_agent *a, orca_nav_event_kind kind, orca_vec2 point)
{
	if (!grow((void **)&nav->events, &nav->event_cap, nav->event_count + 1, sizeof *nav->events))
		return; /* out of memory: the event is lost, navigation goes on */
	nav->events[nav->event_count++] = (orca_nav_event){a->id, kind, point, a->target};
}

const orca_nav_event *orca_nav_events(const orca_nav *nav, uint32_t *count)
{
	*count = nav->event_count;
	return nav->events;
}

/* ------------------------------------------------------------------ obstacles and tiles */

static void mark_tiles(orca_nav *nav, orca_vec2 lo, orca_vec2 hi)
{
	int x0, y0, x1, y1;
	navmesh_tiles_touching(nav->mesh, lo, hi, &x0, &y0, &x1, &y1);
	const uint32_t total = (uint32_t)(nav->tiles_x * nav->tiles_y);
	for (int y = y0; y <= y1; ++y)
		for (int x = x0; x <= x1; ++x) {
			const uint32_t t = (uint32_t)(y * nav->tiles_x + x);
			if (nav->tile_dirty[t])
				continue;
			nav->tile_dirty[t] = 1;
			nav->tile_queue[(nav->tile_head + nav->tile_len) % total] = t;
			nav->tile_len++;
		}
}

static int cmp_id(const void *a, const void *b)
{
	const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static int cache_obstacle(orca_nav *nav, orca_obstacle_id id, nav_obstacle *o)
{
	uint32_t n = 0;
	int rc = orca_obstacle_get(nav->world, id, NULL, 0, &n);
	if (rc != ORCA_OK)
		return rc;
	o->id = id;
	o->count = n;
	o->vertices = malloc((size_t)(n ? n : 1) * sizeof *o->vertices);
	if (!o->vertices)
		return ORCA_ERR_NO_MEMORY;
	rc = orca_obstacle_get(nav->world, id, o->vertices, n, &n);
	if (rc != ORCA_OK) {
		free(o->vertices);
		return rc;
	}
	o->lo = o->hi = o->vertices[0];
	for (uint32_t i = 1; i < n; ++i) {
		const orca_vec2 v = o->vertices[i];
		o->lo.x = v.x < o->lo.x ? v.x : o->lo.x;
		o->lo.y = v.y < o->lo.y ? v.y : o->lo.y;
		o->hi.x = v.x > o->hi.x ? v.x : o->hi.x;
		o->hi.y = v.y > o->hi.y ? v.y : o->hi.y;
	}
	return ORCA_OK;
}

/* Diff the world's obstacles (ascending id) against the cache; mark the tiles
 * of every added or removed one. */
static int sync_obstacles(orca_nav *nav)
{
	const uint32_t version = orca_world_obstacle_version(nav->world);
	if (version == nav->obstacle_version && !nav->obstacles_unseen)
		return ORCA_OK;
	const uint32_t n = orca_world_obstacle_ids(nav->world, NULL, 0);
	if (!grow((void **)&nav->id_scratch, &nav->id_scratch_cap, n + 1, sizeof *nav->id_scratch))
		return ORCA_ERR_NO_MEMORY;
	orca_world_obstacle_ids(nav->world, nav->id_scratch, n);
	qsort(nav->id_scratch, n, sizeof *nav->id_scratch, cmp_id);
	nav_obstacle *merged = malloc((size_t)(n ? n : 1) * sizeof *merged);
	if (!merged)
		return ORCA_ERR_NO_MEMORY;
	uint32_t i = 0, k = 0, m = 0;
	int rc = ORCA_OK;
	while (i < n || k < nav->obstacle_count) {
		if (k < nav->obstacle_count && (i == n || nav->obstacles[k].id < nav->id_scratch[i])) {
			mark_tiles(nav, nav->obstacles[k].lo, nav->obstacles[k].hi); /* removed */
			free(nav->obstacles[k].vertices);
			++k;
		} else if (k < nav->obstacle_count && nav->obstacles[k].id == nav->id_scratch[i]) {
			merged[m++] = nav->obstacles[k++];
			++i;
		} else {
			nav_obstacle o;
			const int r = cache_obstacle(nav, nav->id_scratch[i++], &o); /* added */
			if (r != ORCA_OK) {
				rc = r;
				continue;
			}
			mark_tiles(nav, o.lo, o.hi);
			merged[m++] = o;
		}
	}
	free(nav->obstacles);
	nav->obstacles = merged;
	nav->obstacle_count = m;
	nav->obstacle_cap = n ? n : 1;
	if (rc == ORCA_OK) {
		nav->obstacle_version = version;
		nav->obstacles_unseen = false;
	}
	return rc;
}

static int build_tile(orca_nav *nav, uint32_t t)
{
	const int tx = (int)(t % (uint32_t)nav->tiles_x), ty = (int)(t / (uint32_t)nav->tiles_x);
	orca_vec2 lo, hi;
	navmesh_tile_read_rect(nav->mesh, tx, ty, &lo, &hi);
	uint32_t n = 0;
	for (uint32_t i = 0; i < nav->obstacle_count; ++i) {
		const nav_obstacle *o = &nav->obstacles[i];
		if (o->hi.x < lo.x || o->lo.x > hi.x || o->hi.y < lo.y || o->lo.y > hi.y)
			continue;
		nav->build_scratch[n++] = (navmesh_obstacle){o->vertices, o->count};
	}
	nav->tiles_built++;
	return navmesh_build_tile(nav->mesh, tx, ty, nav->build_scratch, n);
}

/* Rebuild up to `budget` dirty tiles (0: all); true if any was rebuilt. */
static bool rebuild_tiles(orca_nav *nav, uint32_t budget)
{
	const uint32_t total = (uint32_t)(nav->tiles_x * nav->tiles_y);
	if (nav->tile_len == 0)
		return false;
	if (nav->obstacle_count > 0 &&
	    !(nav->build_scratch = realloc(nav->build_scratch, nav->obstacle_count * sizeof *nav->build_scratch)))
		return false;
	uint32_t done = 0;
	while (nav->tile_len > 0 && (budget == 0 || done < budget)) {
		const uint32_t t = nav->tile_queue[nav->tile_head];
		nav->tile_head = (nav->tile_head + 1) % total;
		nav->tile_len--;
		nav->tile_dirty[t] = 0;
		build_tile(nav, t); /* a failed tile is a hole in the mesh: agents route around it */
		++done;
	}
	navmesh_update_components(nav->mesh);
	return true;
}

/* ------------------------------------------------------------------ agents */

static void set_done(orca_nav *nav, nav_agent *a, bool done)
{
	a->done = done;
	nav->done_hint[slot_of(a->id)] = done;
}

/* After a's phase changed (or it was named by its slot). */
static void note_phase(orca_nav *nav, const nav_agent *a)
{
	const uint32_t s = slot_of(a->id);
	if (nav->index_of_slot[s] == (uint32_t)(a - nav->agents))
		nav->phase_hint[s] = a->phase == ORCA_NAV_DONE;
}

/* Room for slots [0, need) in done_hint and phase_hint (new ones 0). */
static bool grow_hints(orca_nav *nav, uint32_t need)
{
	if (need <= nav->hint_cap)
		return true;
	uint32_t cap = nav->hint_cap ? nav->hint_cap : 16;
	while (cap < need)
		cap *= 2;
	uint8_t *done = realloc(nav->done_hint, cap);
	if (done)
		nav->done_hint = done;
	uint8_t *phase = done ? realloc(nav->phase_hint, cap) : NULL;
	if (phase)
		nav->phase_hint = phase;
	if (!done || !phase)
		return false; /* the larger one, if any, is kept; hint_cap says what both hold */
	memset(nav->done_hint + nav->hint_cap, 0, cap - nav->hint_cap);
	memset(nav->phase_hint + nav->hint_cap, 0, cap - nav->hint_cap);
	nav->hint_cap = cap;
	return true;
}

/* After a's phase or next_visit changed (due is what an update's scan reads). */
static void sync_due(orca_nav *nav, const nav_agent *a)
{
	nav->due[a - nav->agents] = a->phase == ORCA_NAV_WAITING ? UINT64_MAX : a->next_visit;
}

static nav_agent *find_agent(const orca_nav *nav, orca_agent_id id)
{
	const uint32_t s = slot_of(id);
	if (id == ORCA_NULL_ID || s >= nav->slot_cap || nav->index_of_slot[s] == NAV_NO_INDEX)
		return NULL;
	nav_agent *a = &nav->agents[nav->index_of_slot[s]];
	return a->id == id ? a : NULL;
}

static void drop_agent(orca_nav *nav, uint32_t index)
{
	nav_agent *a = &nav->agents[index];
	navmesh_corridor_destroy(a->corridor);
	/* the slot may already name a newer agent's entry (a removed agent is
	 * forgotten lazily): only clear it if it names this one */
	if (nav->index_of_slot[slot_of(a->id)] == index)
		nav->index_of_slot[slot_of(a->id)] = NAV_NO_INDEX;
	const uint32_t last = nav->agent_count - 1;
	if (index != last) {
		nav->agents[index] = nav->agents[last];
		nav->due[index] = nav->due[last];
		if (nav->index_of_slot[slot_of(nav->agents[index].id)] == last)
			nav->index_of_slot[slot_of(nav->agents[index].id)] = index;
	}
	nav->agent_count--;
}

static bool queue_push(orca_nav *nav, orca_agent_id id)
{
	if (nav->queue_len == nav->queue_cap) {
		const uint32_t nc = nav->queue_cap ? nav->queue_cap * 2 : 256;
		orca_agent_id *q = malloc((size_t)nc * sizeof *q);
		if (!q)
			return false;
		for (uint32_t i = 0; i < nav->queue_len; ++i)
			q[i] = nav->queue[(nav->queue_head + i) % nav->queue_cap];
		free(nav->queue);
		nav->queue = q;
		nav->queue_head = 0;
		nav->queue_cap = nc;
	}
	nav->queue[(nav->queue_head + nav->queue_len) % nav->queue_cap] = id;
	nav->queue_len++;
	return true;
}

/* A path query for the agent, counted under `reason` (in a visit: queued at
 * the commit). */
static void request_path(nav_visit *v, nav_agent *a, orca_nav_replan_reason reason)
{
	if (a->queued)
		return;
	a->queued = true;
	v->enqueue = true;
	v->replans[reason]++;
}

static void note_event(nav_visit *v, orca_nav_event_kind kind, orca_vec2 point)
{
	if (v->event_count < 2) {
		v->kinds[v->event_count] = kind;
		v->points[v->event_count++] = point;
	}
}

/* A corner, the goal, or a detour on the way to the target given: a waypoint,
 * which leaves the agent's right of way as orca_nav_set_target gave it. In a
 * visit (v) the engine gets it at the commit; else now. */
static void steer_to(orca_nav *nav, nav_visit *v, nav_agent *a, orca_vec2 p)
{
	a->steer = p;
	if (v)
		v->set_steer = true;
	else
		orca_agent_set_waypoint(nav->world, a->id, p);
}

static void make_way(orca_nav *nav, const nav_agent *a, const orca_agent_state *st);
static void make_way_found(orca_nav *nav, const nav_agent *a, const orca_agent_state *st, const nav_way *way,
                           uint32_t count);

/* Apply what a visit decided beyond its agent (serially, in agent order). */
static void commit_visit(orca_nav *nav, nav_agent *a, const nav_visit *v)
{
	set_done(nav, a, a->phase == ORCA_NAV_DONE);
	a->was_waiting = a->waiting;
	a->was_heading = a->heading;
	for (int r = 0; r < ORCA_NAV_REPLAN_REASONS; ++r)
		nav->replans[r] += v->replans[r];
	if (v->enqueue && !queue_push(nav, a->id))
		a->queued = false; /* out of memory: asked again at a later visit */
	for (uint8_t k = 0; k < v->event_count; ++k)
		emit(nav, a, v->kinds[k], v->points[k]);
	if (v->set_steer)
		orca_agent_set_waypoint(nav->world, a->id, a->steer);
	orca_agent_state st;
	if (v->make_way && v->way_found)
		make_way_found(nav, a, NULL, &nav->way_lists[v->way_worker].items[v->way_begin], v->way_count);
	else if (v->make_way && orca_agent_get(nav->world, a->id, &st) == ORCA_OK)
		make_way(nav, a, &st);
}

int orca_nav_set_target(orca_nav *nav, orca_agent_id id, orca_vec2 target)
{
	if (!nav)
		return ORCA_ERR_INVALID_ARGUMENT;
	int rc = orca_agent_check(nav->world, id);
	if (rc != ORCA_OK)
		return rc;
	nav_agent *a = find_agent(nav, id);
	if (!a) {
		const uint32_t s = slot_of(id);
		if (s >= nav->slot_cap) {
			uint32_t old = nav->slot_cap;
			if (!grow((void **)&nav->index_of_slot, &nav->slot_cap, s + 1, sizeof *nav->index_of_slot))
				return ORCA_ERR_NO_MEMORY;
			for (uint32_t i = old; i < nav->slot_cap; ++i)
				nav->index_of_slot[i] = NAV_NO_INDEX;
		}
		if (!grow_hints(nav, s + 1))
			return ORCA_ERR_NO_MEMORY;
		if (!grow((void **)&nav->agents, &nav->agent_cap, nav->agent_count + 1, sizeof *nav->agents) ||
		    !grow((void **)&nav->due, &nav->due_cap, nav->agent_count + 1, sizeof *nav->due))
			return ORCA_ERR_NO_MEMORY;
		navmesh_corridor *c = navmesh_corridor_create((int)nav->def.max_path);
		if (!c)
			return ORCA_ERR_NO_MEMORY;
		a = &nav->agents[nav->agent_count];
		memset(a, 0, sizeof *a);
		a->id = id;
		a->corridor = c;
		nav->index_of_slot[s] = nav->agent_count++;
	}
	orca_agent_state st;
	orca_agent_get(nav->world, id, &st);
	a->target = target;
	a->goal = target;
	a->phase = ORCA_NAV_WAITING;
	note_phase(nav, a);
	sync_due(nav, a);
	set_done(nav, a, false);
	a->far = a->unreachable = a->unreachable_sent = a->stuck_sent = a->replanned_for_stall = a->making_way = false;
	a->waiting = a->was_waiting = a->returning = false;
	a->heading = a->progress_ref = a->prev_ref = a->was_heading = target;
	a->best_dist = a->prev_best = dist(st.position, target);
	a->stall_time = 0.0f;
	a->final_leg = false;
	if (!a->queued) {
		if (!queue_push(nav, a->id))
			return ORCA_ERR_NO_MEMORY;
		a->queued = true;
	}
	/* until its path comes: straight at the target, a new target (quality
	 * mode's right of way) */
	a->steer = target;
	return orca_agent_set_target(nav->world, a->id, target);
}

int orca_nav_stop(orca_nav *nav, orca_agent_id id)
{
	if (!nav)
		return ORCA_ERR_INVALID_ARGUMENT;
	nav_agent *a = find_agent(nav, id);
	if (a)
		drop_agent(nav, (uint32_t)(a - nav->agents));
	return ORCA_OK;
}

/* On the mesh: a point an agent's centre may stand on. */
static bool walkable(const orca_nav *nav, int worker, orca_vec2 p)
{
	return navmesh_on_mesh(nav->mesh, worker, p);
}

/* What the crowd ahead asks of an agent heading along unit direction (ux,
 * uy) for the point p, from the agents within NAV_AHEAD radii of it, as the
 * engine and the last commit have them (visits run in parallel: nothing a
 * visit changes is read).
 *  - oncoming: a walking agent ahead (within 60 degrees of the way) whose
 *    own way runs against ours: keep right, so that counter-flows form lanes
 *    instead of meeting head-on;
 *  - wait: when the agent is slow (under half its cruising speed) and
 *    touches (centres within the two radii and half agent_radius) an agent
 *    ahead that is nearer p and walks the same way (within 90 degrees), or
 *    waits its turn heading the same way (within 60 degrees), or walks
 *    across or against us and has the lower id: it waits its turn (its
 *    engine target where it stands: idle, quality mode's lowest right of
 *    way, so the walkers pass it) instead of pressing. The front of a queue
 *    never waits, and in agents blocking each other across the lowest id
 *    walks. Arrived agents are never waited for (they make way). */
#define NAV_AHEAD 3.5f
static void crowd_ahead(const orca_nav *nav, const nav_agent *a, const orca_agent_state *st, orca_vec2 p, float ux,
                        float uy, bool any_speed, bool *oncoming, bool *wait)
{
	const float r = nav->def.agent_radius;
	const float pref = st->pref_speed > 0.0f ? st->pref_speed : 1.0f;
	const bool slow =
	    any_speed || st->velocity.x * st->velocity.x + st->velocity.y * st->velocity.y < 0.25f * pref * pref;
	const float mine = dist(st->position, p);
	orca_agent_id near[16];
	uint32_t n = orca_query_radius(nav->world, st->position, NAV_AHEAD * r, near, 16);
	n = n < 16 ? n : 16;
	*oncoming = *wait = false;
	for (uint32_t i = 0; i < n; ++i) {
		if (near[i] == a->id)
			continue;
		orca_agent_state os;
		if (orca_agent_get(nav->world, near[i], &os) != ORCA_OK)
			continue;
		const float rx = os.position.x - st->position.x, ry = os.position.y - st->position.y;
		const float d = sqrtf(rx * rx + ry * ry);
		const float ahead = (rx * ux + ry * uy) / (d > 0.0f ? d : 1.0f);
		if (!(ahead > 0.5f))
			continue; /* not ahead */
		const float ox = os.pref_velocity.x, oy = os.pref_velocity.y;
		const float olen = sqrtf(ox * ox + oy * oy);
		const bool idle = !(olen > 0.1f);
		const float along = idle ? 0.0f : (ox * ux + oy * uy) / olen;
		if (!idle && along < -0.5f && ahead > 0.5f)
			*oncoming = true;
		if (!slow || *wait || d > st->radius + os.radius + 0.5f * r || !(dist(os.position, p) < mine))
			continue;
		const nav_agent *o = find_agent(nav, near[i]);
		if (o && o->done && idle)
			continue; /* arrived and at rest: it makes way */
		if (o && o->was_waiting) {
			const float hx = o->was_heading.x - os.position.x, hy = o->was_heading.y - os.position.y;
			const float hlen = sqrtf(hx * hx + hy * hy);
			*wait = hlen > 0.0f && hx * ux + hy * uy > 0.5f * hlen;
		} else {
			/* a walker that does not move (pinned: reference mode does not
			 * push a waiting agent aside) is not waited for */
			const float moving = os.velocity.x * os.velocity.x + os.velocity.y * os.velocity.y;
			*wait = !idle && moving > 0.01f * pref * pref && (along > 0.0f || near[i] < a->id);
		}
	}
}

/* Choose the point to steer at from the corridor; re-plan when pushed off it. */
static void refresh(orca_nav *nav, nav_visit *v, int worker, nav_agent *a, const orca_agent_state *st, float dt,
                    bool optimize, bool fresh)
{
	orca_vec2 corners[NAV_MAX_CORNERS];
	bool end_is_last;
	float off;
	orca_vec2 on_mesh;
	const int n = navmesh_corridor_corners(nav->mesh, worker, a->corridor, st->position, optimize, corners,
	                                       NAV_MAX_CORNERS, &end_is_last, &off, &on_mesh);
	if (n < 0) {
		request_path(v, a, ORCA_NAV_REPLAN_MESH_CHANGED);
		return;
	}
	if (fresh)
		a->plan_off = off; /* off the mesh where the plan started (pressed into a wall's margin, or outside the world) */
	else if (off > a->plan_off + nav->def.agent_radius)
		request_path(v, a, ORCA_NAV_REPLAN_OFF_CORRIDOR); /* pushed off the corridor: keep the old corners until the new path */
	if (n == 0) {
		a->final_leg = true;
		a->heading = a->goal;
		if (!same_point(a->steer, a->goal))
			steer_to(nav, v, a, a->goal);
		return;
	}
	/* look past a corner the agent is about to reach, so it never slows at one */
	const float speed = st->pref_speed > 0.0f ? st->pref_speed : 1.0f;
	const float look = nav->def.agent_radius + 2.0f * speed * dt; /* visits come sooner near a corner */
	int k = 0;
	while (k + 1 < n && dist(st->position, corners[k]) < look)
		++k;
	a->final_leg = end_is_last && k == n - 1;
	orca_vec2 p = a->final_leg ? a->goal : corners[k];
	a->heading = p;
	a->waiting = false;
	/* The crowd ahead (crowd_ahead), looked at while the agent is slowed
	 * (under half its cruising speed; a walker that gets on pays nothing): behind
	 * an agent it waits for, it waits its turn where it stands, unless
	 * pressed into a wall's margin (below). */
	const float r = nav->def.agent_radius;
	const float dx = p.x - st->position.x, dy = p.y - st->position.y;
	const float len = sqrtf(dx * dx + dy * dy);
	const bool stalled = nav->def.stuck_time > 0.0f && a->stall_time >= 0.25f * nav->def.stuck_time;
	const float pref = st->pref_speed > 0.0f ? st->pref_speed : 1.0f;
	const bool slowed = st->velocity.x * st->velocity.x + st->velocity.y * st->velocity.y < 0.25f * pref * pref;
	/* only in quality avoidance, whose lowest right of way lets a walker
	 * pass a waiting agent: reference mode's ORCA is reciprocal, and walkers
	 * pressed into waiting agents (steerbench: deep overlaps in SteerSuite's
	 * hallway-two-way and bottleneck-evacuation) */
	const bool quality = orca_world_avoidance(nav->world) == ORCA_AVOIDANCE_QUALITY;
	bool oncoming = false, wait = false;
	if (len > 0.0f && slowed && quality)
		crowd_ahead(nav, a, st, p, dx / len, dy / len, false, &oncoming, &wait);
	if (wait && off <= 0.5f * r && !(a->stall_time >= nav->def.stuck_time && nav->def.stuck_time > 0.0f)) {
		a->waiting = true;
		a->final_leg = false;
		if (!same_point(a->steer, st->position))
			steer_to(nav, v, a, st->position);
		return;
	}
	/* Keep right: with oncoming agents ahead, aim two radii to the right of
	 * the way, so that counter-flows form lanes (when the right is a wall,
	 * straight on). Stalled for half of stuck_time (a quarter in reference
	 * avoidance; two agents meeting head-on settle it by waiting first,
	 * above), the same: aim two radii to
	 * the right until it moves again, or to the left when the right is a
	 * wall (the point is off the mesh: an agent pinned at a wall's corner,
	 * whom a step right would press into the wall for good); when both are,
	 * neither. Not when the goal itself is near. */
	const bool aside = nav->def.stuck_time > 0.0f && a->stall_time >= (quality ? 0.5f : 0.25f) * nav->def.stuck_time;
	if ((aside || oncoming) && len > 0.0f && dist(st->position, a->goal) > 4.0f * r) {
		const orca_vec2 right = {p.x + dy / len * 2.0f * r, p.y - dx / len * 2.0f * r};
		const orca_vec2 left = {p.x - dy / len * 2.0f * r, p.y + dx / len * 2.0f * r};
		const bool right_open = walkable(nav, worker, right);
		if (right_open || (aside && walkable(nav, worker, left))) {
			p = right_open ? right : left;
			a->final_leg = false;
		}
	}
	/* Pressed into a wall's margin (off the mesh), the straight line to the
	 * next corner can cut the wall's corner and pin the agent against it:
	 * first back onto the mesh, then on. Not once that has stalled it for a
	 * quarter of stuck_time: the way back can be taken (nav_scale: an agent
	 * pushed outside the world's margin, the mesh's edge lined with arrived
	 * agents), and the way on, or a step aside, may be open. */
	if (off > 0.5f * r && !stalled) {
		p = on_mesh;
		a->final_leg = false;
	}
	if (!same_point(a->steer, p))
		steer_to(nav, v, a, p);
}

static void schedule(orca_nav *nav, nav_agent *a, const orca_agent_state *st, float dt);

/* Answer an agent's path query (serially, worker 0's query). */
static void plan(orca_nav *nav, nav_agent *a, float dt)
{
	orca_agent_state st;
	if (orca_agent_get(nav->world, a->id, &st) != ORCA_OK)
		return;
	nav_visit v;
	memset(&v, 0, sizeof v);
	orca_vec2 goal = a->target;
	navmesh_plan_result r;
	const nav_found *f = nav->found_next < nav->found_count ? &nav->found[nav->found_next] : NULL;
	if (f && f->id == a->id && same_bits(f->position, st.position) && same_bits(f->target, a->target)) {
		nav->found_next++;
		navmesh_plan_apply(a->corridor, &f->answer);
		r = f->answer.result;
		if (r != NAVMESH_PLAN_FAILED)
			goal = f->answer.goal;
	} else {
		nav->found_count = nav->found_next = 0; /* not the batch's order (never so far): a new batch next */
		r = navmesh_plan(nav->mesh, a->corridor, st.position, a->target, &goal);
	}
	nav->paths_planned++;
	a->far = r == NAVMESH_PLAN_FAR;
	if (r == NAVMESH_PLAN_FAILED) {
		goal = st.position; /* no mesh near it (off the world or walled in): stay */
	}
	const float tol = nav->def.goal_tolerance >= 0.0f ? nav->def.goal_tolerance : 0.5f * nav->def.agent_radius;
	a->unreachable = r == NAVMESH_PLAN_FAILED || r == NAVMESH_PLAN_UNREACHABLE ||
	                 (r == NAVMESH_PLAN_COMPLETE && dist(goal, a->target) > tol);
	if (a->unreachable && !a->unreachable_sent) {
		note_event(&v, ORCA_NAV_UNREACHABLE, goal);
		a->unreachable_sent = true;
	}
	a->goal = goal;
	if (a->phase != ORCA_NAV_DONE)
		a->phase = ORCA_NAV_MOVING;
	note_phase(nav, a);
	a->last_visit = nav->updates;
	if (r == NAVMESH_PLAN_FAILED) {
		a->final_leg = true;
		a->heading = goal;
		steer_to(nav, &v, a, goal);
		a->next_visit = nav->updates + 1;
		sync_due(nav, a);
		commit_visit(nav, a, &v);
		return;
	}
	refresh(nav, &v, 0, a, &st, dt, false, true);
	commit_visit(nav, a, &v);
	schedule(nav, a, &st, dt);
	/* many agents planned in one update would all be due together: spread
	 * the first visit by id, the interval keeps them apart afterwards */
	const uint32_t interval = nav->def.refresh_interval ? nav->def.refresh_interval : 1;
	if (a->next_visit == nav->updates + interval)
		a->next_visit = nav->updates + 1u + a->id % interval;
	sync_due(nav, a);
}

/* When to look at this agent again: at its refresh interval, or sooner when
 * it will reach the point it steers at before then (so it never stops at a
 * corner, and ARRIVED is told on time). */
static void schedule(orca_nav *nav, nav_agent *a, const orca_agent_state *st, float dt)
{
	const uint32_t interval = nav->def.refresh_interval ? nav->def.refresh_interval : 1;
	/* at the speed it goes (a quarter of its cruising speed at least): an
	 * agent held in a crowd near its corner is not looked at every update */
	const float pref = st->pref_speed > 0.0f ? st->pref_speed : 1.0f;
	const float moving = sqrtf(st->velocity.x * st->velocity.x + st->velocity.y * st->velocity.y);
	const float speed = moving > 0.25f * pref ? moving : 0.25f * pref;
	const float left = dist(st->position, a->steer) - (a->final_leg ? 0.0f : nav->def.agent_radius);
	const float steps = left / (speed * dt);
	uint32_t wait = interval;
	if (steps < (float)interval)
		wait = steps < 1.0f ? 1u : (uint32_t)steps;
	if (a->waiting)
		wait = NAV_WAIT_VISIT < interval ? NAV_WAIT_VISIT : interval;
	a->next_visit = nav->updates + wait;
}

/* An arrived agent at rest: its engine target is where it stands, so it
 * wants no velocity and ORCA moves it only to make way. Looked at again soon
 * if it is being pushed (visit_arrived), else now and then. */
static void rest(orca_nav *nav, nav_visit *v, nav_agent *a, const orca_agent_state *st)
{
	const bool pushed = !same_point(a->steer, a->goal) && !same_point(a->steer, st->position);
	if (!same_point(a->steer, st->position))
		steer_to(nav, v, a, st->position);
	a->next_visit = nav->updates + (pushed ? 1u : nav->def.refresh_interval ? nav->def.refresh_interval : 1u);
}

/* An agent that has ARRIVED (phase DONE) makes way for those still walking.
 * It is in one of two states, told by its engine target:
 *  - walking on to its goal (target = goal): at the goal (the engine's
 *    arrival), it stays; while it gets closer it walks on; when it no longer
 *    does (someone stands at its goal, or on the way), it rests where it is;
 *  - resting where it stopped (target = a point of its own): pushed by a
 *    passer-by, it stays where it was pushed (its target follows it, so it
 *    never presses back: nav_scale, an arrived agent pressing back toward
 *    the spot it was pushed from walled a corner's passage for good) as long
 *    as that is within arrival_distance + 2 radii of its goal; pushed farther,
 *    it walks back to its goal (and rests again where that stops working).
 *    It walks back to its goal too once left alone for a refresh interval
 *    with its goal free (orca_bench maze: arrived agents jostled off their
 *    goals by those passing to deeper ones stayed off them);
 *  - making way (make_way): walking to a point a radius aside, where it
 *    rests.
 * A resting agent is looked at every refresh_interval updates, every update
 * while it is being pushed; one at its goal every NAV_DONE_VISIT. */
/* No other agent stands on the goal (they would overlap were it there). */
static bool goal_free(const orca_nav *nav, const nav_agent *a, const orca_agent_state *st)
{
	orca_agent_id near[16];
	uint32_t n = orca_query_radius(nav->world, a->goal, st->radius + nav->def.agent_radius, near, 16);
	n = n < 16 ? n : 16;
	for (uint32_t i = 0; i < n; ++i) {
		orca_agent_state os;
		if (near[i] != a->id && orca_agent_get(nav->world, near[i], &os) == ORCA_OK &&
		    dist(os.position, a->goal) < st->radius + os.radius)
			return false;
	}
	return true;
}

/* No walker near an arrived agent (within NAV_CLEAR radii of it or of its
 * goal): no agent that wants to move and has not arrived itself. Then the
 * way back to its goal is clear: it walks back instead of resting where a
 * passer-by pushed it (flow_run's crossing: 8 of 40 stood off their goals
 * for good, each within 2 radii of it). Reads the engine's state and the
 * last commit only (visits run in parallel). */
#define NAV_CLEAR 3.0f
static bool way_clear(const orca_nav *nav, const nav_agent *a, const orca_agent_state *st)
{
	const float r = nav->def.agent_radius;
	for (int k = 0; k < 2; ++k) {
		orca_agent_id near[16];
		uint32_t n = orca_query_radius(nav->world, k ? a->goal : st->position, NAV_CLEAR * r, near, 16);
		if (n > 16)
			return false;
		for (uint32_t i = 0; i < n; ++i) {
			if (near[i] == a->id)
				continue;
			orca_agent_state os;
			if (orca_agent_get(nav->world, near[i], &os) != ORCA_OK)
				continue;
			const nav_agent *o = find_agent(nav, near[i]);
			const bool idle = !(os.pref_velocity.x * os.pref_velocity.x + os.pref_velocity.y * os.pref_velocity.y >
			                    0.01f);
			if (!idle && !(o && o->done))
				return false;
			if (o && !o->done && o->was_waiting)
				return false; /* waiting to pass */
		}
	}
	return true;
}

/* Walking back to its goal, an arrived agent touches one ahead that it
 * would wait for (crowd_ahead, at any speed): two arrived agents standing on
 * each other's goals walked round each other for ever (flow_run's
 * crossing). It rests instead, and goes back when the way is clear. Not
 * looked at while it gets on toward its goal (over half its cruising speed). */
static bool home_blocked(const orca_nav *nav, const nav_agent *a, const orca_agent_state *st, float to_goal)
{
	if (!(to_goal > 0.0f) || orca_world_avoidance(nav->world) != ORCA_AVOIDANCE_QUALITY)
		return false;
	const float pref = st->pref_speed > 0.0f ? st->pref_speed : 1.0f;
	const float gx = a->goal.x - st->position.x, gy = a->goal.y - st->position.y;
	if (st->velocity.x * gx + st->velocity.y * gy > 0.5f * pref * to_goal)
		return false; /* well on its way: nothing to look at */
	bool oncoming, wait;
	crowd_ahead(nav, a, st, a->goal, (a->goal.x - st->position.x) / to_goal, (a->goal.y - st->position.y) / to_goal,
	            true, &oncoming, &wait);
	return wait;
}

static void visit_arrived(orca_nav *nav, nav_visit *v, nav_agent *a, const orca_agent_state *st, float dt,
                          uint64_t since)
{
	if (a->making_way) {
		const float to_aside = dist(st->position, a->steer);
		if (!st->arrived && to_aside < a->best_dist) {
			a->best_dist = to_aside;
			schedule(nav, a, st, dt);
			return;
		}
		a->making_way = false; /* there, or as far as it gets */
		rest(nav, v, a, st);
		return;
	}
	const float to_goal = dist(st->position, a->goal);
	if (to_goal > NAV_RETURN * nav->def.agent_radius + nav->def.arrival_distance) {
		/* Pushed far off its goal (by passers-by, or making way, round a
		 * block's corner): the straight line back may cross a block (flow_run's
		 * city: arrived agents 10 to 25 away pressed into blocks for good).
		 * It navigates back like a walker, and is not told ARRIVED again. */
		a->phase = ORCA_NAV_MOVING;
		note_phase(nav, a);
		a->making_way = false;
		a->returning = true;
		a->stall_time = 0.0f;
		a->replanned_for_stall = false;
		a->heading = a->progress_ref = a->prev_ref = a->goal;
		a->best_dist = a->prev_best = to_goal;
		request_path(v, a, ORCA_NAV_REPLAN_OFF_CORRIDOR);
		a->next_visit = nav->updates + 1;
		return;
	}
	if (same_point(a->steer, a->goal)) {
		if (st->arrived) {
			a->best_dist = to_goal;
			a->next_visit = nav->updates + NAV_DONE_VISIT;
		} else if (to_goal < a->best_dist && !home_blocked(nav, a, st, to_goal)) {
			a->best_dist = to_goal; /* closing in */
			schedule(nav, a, st, dt);
		} else {
			rest(nav, v, a, st);
		}
		return;
	}
	const uint32_t interval = nav->def.refresh_interval ? nav->def.refresh_interval : 1;
	const bool left_alone = same_point(st->position, a->steer) && since >= interval;
	const bool off_goal = to_goal > nav->def.arrival_distance + 0.5f * nav->def.agent_radius;
	if (to_goal > nav->def.arrival_distance + 2.0f * nav->def.agent_radius ||
	    ((left_alone || (off_goal && same_point(st->position, a->steer) && way_clear(nav, a, st))) &&
	     goal_free(nav, a, st))) {
		a->best_dist = to_goal; /* pushed too far, or left alone with its goal free: back to the goal */
		steer_to(nav, v, a, a->goal);
		schedule(nav, a, st, dt);
		return;
	}
	rest(nav, v, a, st);
}

/* A stalled agent asks the arrived agents it touches to make way: each
 * walks a radius straight away from it (if that point is on the mesh) and
 * rests there. ORCA moves agents by their velocities: an agent pinned at a
 * wall's corner does not move, so it cannot push an arrived agent at rest
 * that narrows the passage (nav_scale: a passage of 2.7 for an agent of
 * radius 1 beside a block, left by an arrived agent, held one for good).
 * Runs in the commit (it moves other agents), in agent order. */
/* Where `os` would step aside for the agent `st`: one radius straight away
 * from it, if the two touch (centres within their radii and a quarter of
 * agent_radius) and that point is walkable (on `worker`'s query: the same
 * answer on any). Reads only positions and the mesh. */
static bool way_aside(orca_nav *nav, int worker, const orca_agent_state *st, const orca_agent_state *os,
                      orca_vec2 *aside)
{
	const float r = nav->def.agent_radius;
	const float d = dist(os->position, st->position);
	if (d > st->radius + os->radius + 0.25f * r || !(d > 0.0f))
		return false;
	*aside = (orca_vec2){os->position.x + (os->position.x - st->position.x) / d * r,
	                     os->position.y + (os->position.y - st->position.y) / d * r};
	return walkable(nav, worker, *aside);
}

/* make_way's candidates: the agents near `st` (up to 16, in the radius
 * query's order) that may step aside, and where to. All (`all`: the
 * commit's own make_way) are checked here (way_aside). A visit (parallel)
 * checks only those that had arrived before this update (done_hint, which
 * no visit writes) and keeps the others unchecked, for the commit to check
 * if they have arrived by then: make_way moves only arrived agents, an
 * agent arrives in this update at most by its own visit, and in a crowd
 * nearly every agent a stalled one touches is still walking, so the visits
 * skip a state read and a mesh query per neighbour, and the commit checks
 * the few that arrived meanwhile. Whatever the hint says, the commit moves
 * the same agents to the same points. Returns how many. */
static uint32_t way_candidates(orca_nav *nav, int worker, orca_agent_id self, const orca_agent_state *st,
                               bool all, nav_way out[16])
{
	const float r = nav->def.agent_radius;
	orca_agent_id near[16];
	uint32_t n = orca_query_radius(nav->world, st->position, st->radius + r + 0.25f * r, near, 16);
	n = n < 16 ? n : 16;
	uint32_t count = 0;
	for (uint32_t i = 0; i < n; ++i) {
		if (near[i] == self)
			continue;
		const uint32_t s = slot_of(near[i]);
		if (!all && (s >= nav->hint_cap || !nav->done_hint[s])) {
			out[count++] = (nav_way){near[i], {0.0f, 0.0f}, false};
			continue;
		}
		orca_agent_state os;
		orca_vec2 aside;
		if (orca_agent_get(nav->world, near[i], &os) == ORCA_OK && way_aside(nav, worker, st, &os, &aside))
			out[count++] = (nav_way){near[i], aside, true};
	}
	return count;
}

/* All of make_way in the commit (when its visit could not keep the candidates). */
static void make_way(orca_nav *nav, const nav_agent *a, const orca_agent_state *st)
{
	nav_way way[16];
	make_way_found(nav, a, st, way, way_candidates(nav, 0, a->id, st, true, way));
}

/* make_way's part that reads only positions and the mesh, in a visit (on
 * `worker`; st: the agent's state): the candidates, kept in the worker's
 * list for the commit. Without room for them the commit does all of
 * make_way itself. */
static void find_way(orca_nav *nav, nav_visit *v, int worker, const nav_agent *a, const orca_agent_state *st)
{
	nav_way_list *list = &nav->way_lists[worker];
	if (!grow((void **)&list->items, &list->cap, list->count + 16, sizeof *list->items))
		return;
	v->way_begin = list->count;
	v->way_count = (uint8_t)way_candidates(nav, worker, a->id, st, false, list->items + list->count);
	list->count += v->way_count;
	v->way_worker = (uint16_t)worker;
	v->way_found = true;
}

/* The rest of make_way, in the commit: the candidates that are arrived and
 * not making way already (as this update's earlier commits left them), and,
 * for one the visit left unchecked, touching and with a walkable point
 * aside (way_aside, as the visit would have said: positions and the mesh
 * do not change in an update). st: a's state (NULL: read when needed). */
static void make_way_found(orca_nav *nav, const nav_agent *a, const orca_agent_state *st, const nav_way *way,
                           uint32_t count)
{
	const float r = nav->def.agent_radius;
	orca_agent_state self;
	for (uint32_t i = 0; i < count; ++i) {
		const uint32_t s = slot_of(way[i].id);
		if (s < nav->hint_cap && !nav->phase_hint[s])
			continue; /* not arrived (find_agent would say so: a nav_agent's read less) */
		nav_agent *o = find_agent(nav, way[i].id);
		if (!o || o == a || o->phase != ORCA_NAV_DONE || o->making_way)
			continue;
		orca_vec2 aside = way[i].aside;
		if (!way[i].checked) {
			orca_agent_state os;
			if (!st) {
				if (orca_agent_get(nav->world, a->id, &self) != ORCA_OK)
					return;
				st = &self;
			}
			if (orca_agent_get(nav->world, way[i].id, &os) != ORCA_OK || !way_aside(nav, 0, st, &os, &aside))
				continue;
		}
		o->making_way = true;
		o->best_dist = r;
		steer_to(nav, NULL, o, aside);
		o->next_visit = nav->updates + 1;
		sync_due(nav, o);
	}
}

/* Its goal is taken: an arrived agent stands on it (the two would overlap
 * were it there), and on its last leg it has made no progress for a quarter
 * of stuck_time and touches (centres within the two radii and a quarter of
 * agent_radius) an arrived agent that stands nearer its goal. Many agents
 * sent to one spot, or to spots closer together than they are wide, cannot
 * all stand there: the later ones arrive against the earlier, as RTS units
 * sent to one point do (nav_scale: targets clamped to the world's edge).
 * A free goal behind arrived agents is not taken: make_way opens the way. */
static bool goal_taken(const orca_nav *nav, const nav_agent *a, const orca_agent_state *st)
{
	const float stalled = nav->def.stuck_time > 0.0f ? 0.25f * nav->def.stuck_time : 0.0f;
	if (!(a->stall_time > stalled))
		return false;
	const float reach = st->radius + nav->def.agent_radius + 0.25f * nav->def.agent_radius;
	const float mine = dist(st->position, a->goal);
	orca_agent_id near[16];
	uint32_t n = orca_query_radius(nav->world, a->goal, st->radius + nav->def.agent_radius, near, 16);
	n = n < 16 ? n : 16;
	bool covered = false;
	for (uint32_t i = 0; i < n && !covered; ++i) {
		const nav_agent *o = find_agent(nav, near[i]);
		orca_agent_state os;
		covered = o && o != a && o->done && orca_agent_get(nav->world, near[i], &os) == ORCA_OK &&
		          dist(os.position, a->goal) < st->radius + os.radius;
	}
	if (!covered)
		return false;
	n = orca_query_radius(nav->world, st->position, reach, near, 16);
	n = n < 16 ? n : 16;
	for (uint32_t i = 0; i < n; ++i) {
		const nav_agent *o = find_agent(nav, near[i]);
		orca_agent_state os;
		/* arrived before this update (o->done: visits run in parallel) */
		if (!o || o == a || !o->done || orca_agent_get(nav->world, near[i], &os) != ORCA_OK)
			continue;
		if (dist(os.position, st->position) <= st->radius + os.radius + 0.25f * nav->def.agent_radius &&
		    dist(os.position, a->goal) < mine)
			return true;
	}
	return false;
}

/* A due agent (st: its state, read by visit_task): still ours? progress,
 * STUCK, arrival, corridor refresh. Returns false when the agent is to be
 * forgotten (taken over through orca.h: a velocity, or a target that is not
 * ours; visit_task forgets a removed one). */
static bool visit_agent(orca_nav *nav, nav_visit *v, int worker, nav_agent *a, float dt,
                        const orca_agent_state *st)
{
	if (st->steer_mode == ORCA_STEER_VELOCITY || !same_point(st->target, a->steer))
		return false;
	const uint64_t since = nav->updates - a->last_visit;
	const float elapsed = (float)since * dt;
	a->last_visit = nav->updates;
	if (a->phase == ORCA_NAV_DONE) {
		visit_arrived(nav, v, a, st, dt, since);
		return true;
	}

	/* Progress: a radius closer to the corner it heads for (or a new corner).
	 * Moving about without getting closer is no progress. STUCK is said
	 * once, and again only after the agent got 4 radii away from there. */
	const float r = nav->def.agent_radius;
	if (a->stuck_sent && dist(st->position, a->stuck_pos) >= 4.0f * r)
		a->stuck_sent = false;
	/* A corridor can swing: from one spot its first corner is one ahead,
	 * from a few steps on it is one behind (quality mode, 10,000 agents:
	 * an agent walking a tile border went to and fro between two corners
	 * for ever, each time "closer" to the one it headed for). So a corner
	 * headed for again right after another is measured against the best
	 * distance it had reached to it before: going back is no progress. */
	const float to_corner = dist(st->position, a->heading);
	bool progress = to_corner <= a->best_dist - r;
	if (!same_point(a->heading, a->progress_ref)) {
		const bool back = same_point(a->heading, a->prev_ref);
		const float before = a->prev_best;
		a->prev_ref = a->progress_ref;
		a->prev_best = a->best_dist;
		a->progress_ref = a->heading;
		a->best_dist = back && before < to_corner ? before : to_corner;
		progress = !back || to_corner <= before - r;
	} else if (progress) {
		a->best_dist = to_corner;
	}
	if (progress) {
		a->stall_time = 0.0f;
		a->replanned_for_stall = false;
	} else {
		a->stall_time += elapsed;
		if (nav->def.stuck_time > 0.0f) {
			if (a->stall_time >= 0.5f * nav->def.stuck_time && !a->replanned_for_stall) {
				a->replanned_for_stall = true;
				request_path(v, a, ORCA_NAV_REPLAN_NO_PROGRESS);
			}
			if (a->stall_time >= 0.25f * nav->def.stuck_time)
				v->make_way = true;
			if (a->stall_time >= nav->def.stuck_time && !a->stuck_sent) {
				a->stuck_sent = true;
				a->stuck_pos = st->position;
				note_event(v, ORCA_NAV_STUCK, st->position);
			}
		}
	}

	const float arrive = nav->def.arrival_distance;
	if (a->final_leg && !a->queued &&
	    (st->arrived || dist(st->position, a->goal) <= arrive || goal_taken(nav, a, st))) {
		if (a->far) {
			request_path(v, a, ORCA_NAV_REPLAN_NEXT_PART); /* the end of a part: the next part */
			return true;
		}
		a->phase = ORCA_NAV_DONE;
		note_phase(nav, a);
		if (!a->returning)
			note_event(v, ORCA_NAV_ARRIVED, st->position);
		a->returning = false;
		/* Arrived within arrival_distance, short of the goal and making no
		 * progress: stop where it is. Pressing on at the goal it would push
		 * for ever on whoever stands there, and in a narrow spot that pins
		 * the other for good (nav_scale: an agent held between a block and
		 * an arrived one pressing at its goal). An agent still closing in
		 * walks on to the goal itself, as a client expects, while it keeps
		 * closing in (visit_arrived). */
		a->best_dist = dist(st->position, a->goal);
		if (!st->arrived && a->stall_time > 0.0f)
			rest(nav, v, a, st);
		else
			schedule(nav, a, st, dt);
		return true;
	}
	if (a->queued) {
		a->next_visit = nav->updates + 1; /* its new path comes in this update or a later one */
		return true;
	}
	const uint32_t interval = nav->def.refresh_interval ? nav->def.refresh_interval : 1;
	refresh(nav, v, worker, a, st, dt, ((nav->updates / interval + a->id) & 3u) == 0, false); /* shortcut every 4th */
	schedule(nav, a, st, dt);
	return true;
}

/* The parallel part of an update: agents [begin, end) on worker `worker`,
 * due ones in batches: first every entry of a batch is fetched and every
 * agent's state read (in a large crowd the agents due in an update are far
 * apart: each entry and each state is a cache miss, and so they overlap),
 * then each is visited. Nothing a visit changes is read by another agent's
 * (visits run in parallel), so the order within a batch does not matter. */
static void visit_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	enum { VISIT_BATCH = 32 };
	orca_nav *nav = ctx;
	uint32_t batch[VISIT_BATCH];
	orca_agent_state states[VISIT_BATCH];
	bool read[VISIT_BATCH];
	for (uint32_t i = begin; i < end;) {
		uint32_t n = 0;
		for (; i < end && n < VISIT_BATCH; ++i) {
			nav_agent *a = &nav->agents[i];
			nav_visit *v = &nav->visits[i];
			nav->visited[i] = 0; /* visits[i] is written only for an agent looked at */
			if (nav->visit_mesh_changed && !a->queued && !navmesh_corridor_valid(nav->mesh, a->corridor)) {
				memset(v, 0, sizeof *v);
				nav->visited[i] = 1;
				request_path(v, a, ORCA_NAV_REPLAN_MESH_CHANGED); /* a rebuilt tile touched its corridor */
				if (a->phase == ORCA_NAV_DONE)
					a->phase = ORCA_NAV_MOVING;
				note_phase(nav, a);
				a->making_way = false;
				a->next_visit = nav->updates;
				sync_due(nav, a);
			}
			if (nav->updates < nav->due[i]) /* not due, or waiting for its first path */
				continue;
			__builtin_prefetch(a);
			__builtin_prefetch((const char *)a + 64);
			__builtin_prefetch(v, 1);
			batch[n++] = i;
		}
		for (uint32_t k = 0; k < n; ++k)
			read[k] = orca_agent_get(nav->world, nav->agents[batch[k]].id, &states[k]) == ORCA_OK;
		for (uint32_t k = 0; k < n; ++k) {
			const uint32_t j = batch[k];
			nav_agent *a = &nav->agents[j];
			nav_visit *v = &nav->visits[j];
			if (!nav->visited[j]) {
				memset(v, 0, sizeof *v);
				nav->visited[j] = 1;
			}
			v->drop = !read[k] || !visit_agent(nav, v, worker, a, nav->visit_dt, &states[k]);
			if (!v->drop && v->make_way)
				find_way(nav, v, worker, a, &states[k]);
			sync_due(nav, a);
		}
	}
}

static void find_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	orca_nav *nav = ctx;
	for (uint32_t i = begin; i < end; ++i) {
		nav_found *f = &nav->found[i];
		navmesh_plan_find(nav->mesh, worker, f->position, f->target, nav->found_paths + (size_t)i * nav->def.max_path,
		                  (int)nav->def.max_path, &f->answer);
	}
}

/* The path queries answer_paths is about to make, answered ahead in
 * parallel: `first` (just taken from the queue) and those after it in the
 * queue that answer_paths will plan as things stand, up to `left` (0: no
 * limit) and the batch's size. answer_paths still decides, serially and in
 * queue order, whom it plans; plan takes an answer only when it is the next
 * of the batch and for the same agent, position and target (the query is a
 * pure function of these and the mesh, which does not change meanwhile), and
 * else asks itself. So the result is the same as all-serial, for any worker
 * count. */
static void find_paths(orca_nav *nav, const nav_agent *first, uint32_t left)
{
	enum { NAV_FIND_BATCH = 1024 };
	uint32_t want = left == 0 || left > NAV_FIND_BATCH ? NAV_FIND_BATCH : left;
	if (want > nav->queue_len + 1u)
		want = nav->queue_len + 1u;
	nav->found_count = nav->found_next = 0;
	if (want > nav->found_cap) {
		nav_found *found = realloc(nav->found, (size_t)want * sizeof *found);
		if (found)
			nav->found = found;
		uint32_t *paths = found ? realloc(nav->found_paths, (size_t)want * nav->def.max_path * sizeof *paths) : NULL;
		if (paths)
			nav->found_paths = paths;
		if (!found || !paths)
			return; /* plan asks itself */
		nav->found_cap = want;
	}
	const uint64_t mark = nav->updates + 1u;
	for (uint32_t k = 0; nav->found_count < want && k <= nav->queue_len; ++k) {
		nav_agent *a = (nav_agent *)first;
		if (k > 0) {
			a = find_agent(nav, nav->queue[(nav->queue_head + k - 1u) % nav->queue_cap]);
			if (!a || !a->queued || a->found_in == mark)
				continue;
		}
		orca_agent_state st;
		if (orca_agent_get(nav->world, a->id, &st) != ORCA_OK)
			continue;
		a->found_in = mark;
		nav_found *f = &nav->found[nav->found_count++];
		f->id = a->id;
		f->position = st.position;
		f->target = a->target;
	}
	if (nav->found_count > 1)
		orca_world_parallel_for(nav->world, find_task, nav, nav->found_count, 1);
	else
		nav->found_count = 0; /* one query: plan asks itself */
}

static void answer_paths(orca_nav *nav, float dt)
{
	uint32_t done = 0;
	nav->found_count = nav->found_next = 0;
	while (nav->queue_len > 0 && (nav->def.path_budget == 0 || done < nav->def.path_budget)) {
		const orca_agent_id id = nav->queue[nav->queue_head];
		nav->queue_head = (nav->queue_head + 1) % nav->queue_cap;
		nav->queue_len--;
		nav_agent *a = find_agent(nav, id);
		if (!a || !a->queued)
			continue;
		a->queued = false;
		if (orca_agent_check(nav->world, id) != ORCA_OK) {
			drop_agent(nav, (uint32_t)(a - nav->agents));
			continue;
		}
		if (nav->found_next == nav->found_count && orca_world_worker_count(nav->world) > 1)
			find_paths(nav, a, nav->def.path_budget ? nav->def.path_budget - done : 0);
		plan(nav, a, dt);
		++done;
	}
	nav->found_count = nav->found_next = 0;
}

int orca_nav_update(orca_nav *nav, float dt)
{
	if (!nav || !(dt > 0.0f))
		return ORCA_ERR_INVALID_ARGUMENT;
	nav->event_count = 0;
	int rc = sync_obstacles(nav);
	const bool mesh_changed = rebuild_tiles(nav, nav->def.tile_budget);

	/* Only agents that are due are looked at: a corridor refresh every
	 * refresh_interval updates (staggered by id), sooner near a corner or the
	 * goal. Removed or taken-over agents are forgotten at their next visit.
	 * The visits run in parallel on the world's workers, each writing only
	 * its agent and its agent's nav_visit; what they decided for more than
	 * their agent (events, the path queue, counters, engine targets, agents
	 * asked to make way, agents forgotten) is then applied in agent order.
	 * So the result is the same for any worker count. */
	if (navmesh_set_workers(nav->mesh, orca_world_worker_count(nav->world)) != ORCA_OK || /* a query each */
	    !grow((void **)&nav->visits, &nav->visit_cap, nav->agent_count, sizeof *nav->visits) ||
	    !grow((void **)&nav->visited, &nav->visited_cap, nav->agent_count, sizeof *nav->visited))
		return ORCA_ERR_NO_MEMORY;
	const int workers = orca_world_worker_count(nav->world);
	if (nav->way_list_count < (uint32_t)workers) {
		nav_way_list *lists = realloc(nav->way_lists, (size_t)workers * sizeof *lists);
		if (!lists)
			return ORCA_ERR_NO_MEMORY;
		memset(lists + nav->way_list_count, 0, (size_t)(workers - (int)nav->way_list_count) * sizeof *lists);
		nav->way_lists = lists;
		nav->way_list_count = (uint32_t)workers;
	}
	for (uint32_t k = 0; k < nav->way_list_count; ++k)
		nav->way_lists[k].count = 0;
	nav->visit_dt = dt;
	nav->visit_mesh_changed = mesh_changed;
	orca_world_parallel_for(nav->world, visit_task, nav, nav->agent_count, 64);
	uint32_t drops = 0;
	for (uint32_t i = 0; i < nav->agent_count; ++i) {
		if (!nav->visited[i])
			continue;
		const nav_visit *v = &nav->visits[i];
		drops += v->drop;
		if (!v->drop)
			commit_visit(nav, &nav->agents[i], v);
	}
	/* from the last: a dropped entry's place is taken by the last one, kept */
	for (uint32_t i = nav->agent_count; drops > 0 && i-- > 0;)
		if (nav->visited[i] && nav->visits[i].drop) {
			drop_agent(nav, i);
			--drops;
		}
	answer_paths(nav, dt);
	nav->updates++;
	return rc;
}

/* ------------------------------------------------------------------ queries */

int orca_nav_get_path(orca_nav *nav, orca_agent_id id, orca_nav_path *out, orca_vec2 *corners,
                      uint32_t corner_capacity)
{
	memset(out, 0, sizeof *out);
	int rc = orca_agent_check(nav->world, id);
	if (rc != ORCA_OK)
		return rc;
	nav_agent *a = find_agent(nav, id);
	if (!a)
		return ORCA_OK;
	out->phase = a->phase;
	out->target = a->target;
	out->goal = a->goal;
	out->unreachable = a->unreachable;
	out->corridor_count = (uint32_t)navmesh_corridor_length(a->corridor);
	if (corner_capacity == 0 || a->phase == ORCA_NAV_WAITING)
		return ORCA_OK;
	orca_agent_state st;
	orca_agent_get(nav->world, id, &st);
	orca_vec2 c[8];
	bool end_is_last;
	float off;
	orca_vec2 on_mesh;
	/* on a copy: asking must not move the corridor (that would change what comes next) */
	const int n = navmesh_corridor_peek_corners(nav->mesh, a->corridor, st.position, c,
	                                            corner_capacity < 8 ? (int)corner_capacity : 8, &end_is_last, &off,
	                                            &on_mesh);
	for (int i = 0; i < n; ++i)
		corners[i] = c[i];
	out->corner_count = n > 0 ? (uint32_t)n : 0;
	return ORCA_OK;
}

uint32_t orca_nav_corridor_polygon(const orca_nav *nav, orca_agent_id id, uint32_t i, orca_vec2 vertices[6])
{
	const nav_agent *a = find_agent(nav, id);
	if (!a)
		return 0;
	return (uint32_t)navmesh_corridor_polygon(nav->mesh, a->corridor, (int)i, vertices, 6);
}

bool orca_nav_nearest_point(const orca_nav *nav, orca_vec2 p, orca_vec2 *out)
{
	return navmesh_nearest(nav->mesh, p, out);
}

void orca_nav_get_counts(const orca_nav *nav, orca_nav_stats *out)
{
	memset(out, 0, sizeof *out);
	out->tiles_x = (uint32_t)nav->tiles_x;
	out->tiles_y = (uint32_t)nav->tiles_y;
	out->tiles_pending = nav->tile_len;
	out->polygons = navmesh_poly_count(nav->mesh);
	out->agents = nav->agent_count;
	out->paths_pending = nav->queue_len;
	out->paths_planned = nav->paths_planned;
	out->tiles_built = nav->tiles_built;
	memcpy(out->replans, nav->replans, sizeof out->replans);
}

void orca_nav_get_stats(const orca_nav *nav, orca_nav_stats *out)
{
	orca_nav_get_counts(nav, out);
	size_t bytes = sizeof *nav + navmesh_memory(nav->mesh);
	bytes += (size_t)nav->agent_cap * sizeof *nav->agents + (size_t)nav->slot_cap * sizeof *nav->index_of_slot;
	bytes += (size_t)nav->due_cap * sizeof *nav->due + 2u * (size_t)nav->hint_cap;
	bytes += (size_t)nav->queue_cap * sizeof *nav->queue;
	for (uint32_t i = 0; i < nav->agent_count; ++i)
		bytes += navmesh_corridor_memory(nav->agents[i].corridor);
	for (uint32_t i = 0; i < nav->obstacle_count; ++i)
		bytes += sizeof(nav_obstacle) + nav->obstacles[i].count * sizeof(orca_vec2);
	out->memory_bytes = bytes;
}

/* ------------------------------------------------------------------ lifecycle */

int orca_nav_create(const orca_nav_def *def, orca_world *world, orca_nav **out)
{
	if (!def || !world || !out || !(def->agent_radius > 0.0f) || !(def->bounds_max.x > def->bounds_min.x) ||
	    !(def->bounds_max.y > def->bounds_min.y) || def->max_path < 2 || def->max_nodes > 65535)
		return ORCA_ERR_INVALID_ARGUMENT;
	orca_nav *nav = calloc(1, sizeof *nav);
	if (!nav)
		return ORCA_ERR_NO_MEMORY;
	nav->def = *def;
	nav->world = world;
	navmesh_params p = {def->bounds_min, def->bounds_max, def->agent_radius,
	                    def->cell_size > 0.0f ? def->cell_size : def->agent_radius / 3.0f, (int)def->tile_cells,
	                    def->max_nodes ? (int)def->max_nodes : 8192};
	int rc = navmesh_create(&p, &nav->mesh);
	if (rc != ORCA_OK) {
		free(nav);
		return rc;
	}
	rc = navmesh_set_workers(nav->mesh, orca_world_worker_count(world));
	if (rc != ORCA_OK) {
		navmesh_destroy(nav->mesh);
		free(nav);
		return rc;
	}
	navmesh_tile_grid(nav->mesh, &nav->tiles_x, &nav->tiles_y);
	const uint32_t total = (uint32_t)(nav->tiles_x * nav->tiles_y);
	nav->tile_queue = malloc(total * sizeof *nav->tile_queue);
	nav->tile_dirty = calloc(total, 1);
	if (!nav->tile_queue || !nav->tile_dirty) {
		orca_nav_destroy(nav);
		return ORCA_ERR_NO_MEMORY;
	}
	nav->obstacles_unseen = true; /* the first sync */
	rc = sync_obstacles(nav);
	if (rc != ORCA_OK) {
		orca_nav_destroy(nav);
		return rc;
	}
	/* the first build: every tile, in order */
	nav->tile_head = 0;
	nav->tile_len = total;
	for (uint32_t t = 0; t < total; ++t) {
		nav->tile_queue[t] = t;
		nav->tile_dirty[t] = 1;
	}
	rebuild_tiles(nav, 0);
	*out = nav;
	return ORCA_OK;
}

void orca_nav_destroy(orca_nav *nav)
{
	if (!nav)
		return;
	for (uint32_t i = 0; i < nav->agent_count; ++i)
		navmesh_corridor_destroy(nav->agents[i].corridor);
	for (uint32_t i = 0; i < nav->obstacle_count; ++i)
		free(nav->obstacles[i].vertices);
	navmesh_destroy(nav->mesh);
	free(nav->agents);
	free(nav->due);
	free(nav->index_of_slot);
	free(nav->done_hint);
	free(nav->phase_hint);
	free(nav->queue);
	free(nav->obstacles);
	free(nav->id_scratch);
	free(nav->build_scratch);
	free(nav->tile_queue);
	free(nav->tile_dirty);
	free(nav->events);
	free(nav->visits);
	free(nav->visited);
	for (uint32_t k = 0; k < nav->way_list_count; ++k)
		free(nav->way_lists[k].items);
	free(nav->way_lists);
	free(nav->found);
	free(nav->found_paths);
	free(nav);
}

/* ------------------------------------------------------------------ save / load */

/* "nav3": everything that decides navigation's future, so that a world and
 * its navigation loaded from a save step exactly as the ones saved would
 * have. Little-endian:
 *   u32 magic, tiles_x, tiles_y, max_path; u64 updates, paths_planned,
 *   tiles_built, replans[4];
 *   u32 obstacles; each: u32 id, u32 n, n x (f32 x, f32 y)   (navigation's view of them)
 *   u32 tiles; each, in the order they were last added: u32 position, u32 ref,
 *     u32 size, size bytes (0: the tile the world's obstacles build, i.e. not
 *     waiting for a rebuild)
 *   u32 dirty tiles; each u32 position, in rebuild order
 *   u32 agents; each, in navigation's order: u32 id, u8 phase (bit 7: making way, bit 6: waiting its turn, bit 5: returning), u8 flags,
 *     f32 x 18 (target, goal, steer, heading, progress_ref, best_dist,
 *     prev_ref, prev_best, stuck_pos, stall_time, plan_off), u64 next_visit, last_visit,
 *     corridor: f32 x 6 (position, target, 3-D), u32 n, n x u32 polygon refs
 *   u32 queued; each u32 agent id (the path queue in order, stale entries too) */
#define NAV_SAVE_MAGIC 0x3376616eu /* "nav3" */
#define NAV_SAVE_MAGIC_2 0x3276616eu /* "nav2": without prev_ref, prev_best (loaded as if just planned) */

enum {
	NAV_FLAG_QUEUED = 1,
	NAV_FLAG_FAR = 2,
	NAV_FLAG_UNREACHABLE = 4,
	NAV_FLAG_UNREACHABLE_SENT = 8,
	NAV_FLAG_STUCK_SENT = 16,
	NAV_FLAG_REPLANNED = 32,
	NAV_FLAG_FINAL_LEG = 64,
	NAV_FLAG_NAMED = 128, /* its slot's index names this entry (a removed agent's may linger) */
	NAV_PHASE_MAKING_WAY = 128, /* in the phase byte (nav3) */
	NAV_PHASE_WAITING = 64,     /* in the phase byte (nav3; 0 in saves made before the rule) */
	NAV_PHASE_RETURNING = 32,   /* likewise */
};

typedef struct nav_writer {
	uint8_t *p;
	size_t at, cap;
} nav_writer;

static void w_bytes(nav_writer *w, const void *src, size_t n)
{
	if (w->p && w->at + n <= w->cap)
		memcpy(w->p + w->at, src, n);
	w->at += n;
}

static void w_u8(nav_writer *w, uint8_t v)
{
	w_bytes(w, &v, 1);
}

static void w_u32(nav_writer *w, uint32_t v)
{
	const uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	w_bytes(w, b, 4);
}

static void w_u64(nav_writer *w, uint64_t v)
{
	w_u32(w, (uint32_t)v);
	w_u32(w, (uint32_t)(v >> 32));
}

static void w_f32(nav_writer *w, float f)
{
	uint32_t v;
	memcpy(&v, &f, 4);
	w_u32(w, v);
}

static void w_vec(nav_writer *w, orca_vec2 v)
{
	w_f32(w, v.x);
	w_f32(w, v.y);
}

size_t orca_nav_save(const orca_nav *nav, uint8_t *buf, size_t capacity)
{
	nav_writer w = {buf, 0, buf ? capacity : 0};
	w_u32(&w, NAV_SAVE_MAGIC);
	w_u32(&w, (uint32_t)nav->tiles_x);
	w_u32(&w, (uint32_t)nav->tiles_y);
	w_u32(&w, nav->def.max_path);
	w_u64(&w, nav->updates);
	w_u64(&w, nav->paths_planned);
	w_u64(&w, nav->tiles_built);
	for (int i = 0; i < ORCA_NAV_REPLAN_REASONS; ++i)
		w_u64(&w, nav->replans[i]);

	w_u32(&w, nav->obstacle_count);
	for (uint32_t i = 0; i < nav->obstacle_count; ++i) {
		const nav_obstacle *o = &nav->obstacles[i];
		w_u32(&w, o->id);
		w_u32(&w, o->count);
		for (uint32_t k = 0; k < o->count; ++k)
			w_vec(&w, o->vertices[k]);
	}

	/* A tile whose obstacles changed since it was built (it waits in the
	 * rebuild queue) is saved whole; any other is what the world's obstacles
	 * build, so a load builds it again. If the world's obstacles changed since
	 * the last update (not yet seen here), every tile is saved whole. */
	const bool all = nav->obstacles_unseen || nav->obstacle_version != orca_world_obstacle_version(nav->world);
	const uint32_t total = navmesh_tile_count(nav->mesh);
	uint32_t *order = malloc((size_t)(total ? total : 1) * sizeof *order);
	const uint32_t present = order ? navmesh_tiles_in_add_order(nav->mesh, order) : 0;
	w_u32(&w, order ? present : UINT32_MAX); /* out of memory: a count that no load accepts */
	for (uint32_t i = 0; i < present; ++i) {
		const uint8_t *data;
		uint32_t size;
		const uint32_t ref = navmesh_tile_ref(nav->mesh, order[i], &data, &size);
		const bool whole = all || nav->tile_dirty[order[i]];
		w_u32(&w, order[i]);
		w_u32(&w, ref);
		w_u32(&w, whole ? size : 0);
		if (whole)
			w_bytes(&w, data, size);
	}
	free(order);
	w_u32(&w, nav->tile_len);
	for (uint32_t i = 0; i < nav->tile_len; ++i)
		w_u32(&w, nav->tile_queue[(nav->tile_head + i) % total]);

	w_u32(&w, nav->agent_count);
	for (uint32_t i = 0; i < nav->agent_count; ++i) {
		const nav_agent *a = &nav->agents[i];
		w_u32(&w, a->id);
		w_u8(&w, (uint8_t)((uint8_t)a->phase | (a->making_way ? NAV_PHASE_MAKING_WAY : 0) |
		                   (a->waiting ? NAV_PHASE_WAITING : 0) | (a->returning ? NAV_PHASE_RETURNING : 0)));
		w_u8(&w, (uint8_t)((a->queued ? NAV_FLAG_QUEUED : 0) | (a->far ? NAV_FLAG_FAR : 0) |
		                   (a->unreachable ? NAV_FLAG_UNREACHABLE : 0) |
		                   (a->unreachable_sent ? NAV_FLAG_UNREACHABLE_SENT : 0) |
		                   (a->stuck_sent ? NAV_FLAG_STUCK_SENT : 0) |
		                   (a->replanned_for_stall ? NAV_FLAG_REPLANNED : 0) |
		                   (a->final_leg ? NAV_FLAG_FINAL_LEG : 0) |
		                   (nav->index_of_slot[slot_of(a->id)] == i ? NAV_FLAG_NAMED : 0)));
		w_vec(&w, a->target);
		w_vec(&w, a->goal);
		w_vec(&w, a->steer);
		w_vec(&w, a->heading);
		w_vec(&w, a->progress_ref);
		w_f32(&w, a->best_dist);
		w_vec(&w, a->prev_ref);
		w_f32(&w, a->prev_best);
		w_vec(&w, a->stuck_pos);
		w_f32(&w, a->stall_time);
		w_f32(&w, a->plan_off);
		w_u64(&w, a->next_visit);
		w_u64(&w, a->last_visit);
		float pos[3], target[3];
		const uint32_t *path;
		const int n = navmesh_corridor_state(a->corridor, pos, target, &path);
		for (int k = 0; k < 3; ++k)
			w_f32(&w, pos[k]);
		for (int k = 0; k < 3; ++k)
			w_f32(&w, target[k]);
		w_u32(&w, (uint32_t)n);
		for (int k = 0; k < n; ++k)
			w_u32(&w, path[k]);
	}
	w_u32(&w, nav->queue_len);
	for (uint32_t i = 0; i < nav->queue_len; ++i)
		w_u32(&w, nav->queue[(nav->queue_head + i) % nav->queue_cap]);
	return w.at;
}

typedef struct nav_reader {
	const uint8_t *p;
	size_t at, len;
	bool bad;
} nav_reader;

static const uint8_t *r_bytes(nav_reader *r, size_t n)
{
	if (r->bad || n > r->len - r->at) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *p = r->p + r->at;
	r->at += n;
	return p;
}

static uint8_t r_u8(nav_reader *r)
{
	const uint8_t *p = r_bytes(r, 1);
	return p ? p[0] : 0;
}

static uint32_t r_u32(nav_reader *r)
{
	const uint8_t *p = r_bytes(r, 4);
	return p ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24 : 0;
}

static uint64_t r_u64(nav_reader *r)
{
	const uint64_t lo = r_u32(r);
	return lo | (uint64_t)r_u32(r) << 32;
}

static float r_f32(nav_reader *r)
{
	const uint32_t v = r_u32(r);
	float f;
	memcpy(&f, &v, 4);
	return f;
}

static orca_vec2 r_vec(nav_reader *r)
{
	orca_vec2 v;
	v.x = r_f32(r);
	v.y = r_f32(r);
	return v;
}

/* A count of items of at least `min_size` bytes each that the rest can hold. */
static uint32_t r_count(nav_reader *r, size_t min_size)
{
	const uint32_t n = r_u32(r);
	if (!r->bad && (size_t)n > (r->len - r->at) / min_size)
		r->bad = true;
	return r->bad ? 0 : n;
}

/* What a load builds before it touches the nav (all or nothing). */
typedef struct nav_loaded {
	nav_obstacle *obstacles;
	uint32_t obstacle_count;
	navmesh_saved_tile *tiles;
	uint32_t tile_count;
	uint32_t *dirty;
	uint32_t dirty_count;
	nav_agent *agents;
	bool *named;
	uint32_t agent_count;
	orca_agent_id *queue;
	uint32_t queue_len;
} nav_loaded;

static void loaded_free(nav_loaded *l)
{
	for (uint32_t i = 0; i < l->obstacle_count; ++i)
		free(l->obstacles[i].vertices);
	for (uint32_t i = 0; i < l->agent_count; ++i)
		navmesh_corridor_destroy(l->agents[i].corridor);
	free(l->obstacles);
	free(l->tiles);
	free(l->dirty);
	free(l->agents);
	free(l->named);
	free(l->queue);
}

static bool finite2(orca_vec2 v)
{
	return v.x - v.x == 0.0f && v.y - v.y == 0.0f;
}

static int parse_save(const orca_nav *nav, nav_reader *r, nav_loaded *l, uint64_t counters[7])
{
	const uint32_t total = navmesh_tile_count(nav->mesh);
	const uint32_t magic = r_u32(r);
	const bool v2 = magic == NAV_SAVE_MAGIC_2;
	if ((magic != NAV_SAVE_MAGIC && !v2) || r_u32(r) != (uint32_t)nav->tiles_x || r_u32(r) != (uint32_t)nav->tiles_y ||
	    r_u32(r) != nav->def.max_path)
		return ORCA_ERR_INVALID_ARGUMENT;
	for (int i = 0; i < 7; ++i)
		counters[i] = r_u64(r);

	const uint32_t no = r_count(r, 8);
	l->obstacles = calloc(no ? no : 1, sizeof *l->obstacles);
	if (!l->obstacles)
		return ORCA_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < no && !r->bad; ++i) {
		nav_obstacle *o = &l->obstacles[i];
		o->id = r_u32(r);
		o->count = r_count(r, 8);
		if (r->bad || o->count == 0 || (i > 0 && o->id <= l->obstacles[i - 1].id))
			return ORCA_ERR_INVALID_ARGUMENT;
		o->vertices = malloc((size_t)o->count * sizeof *o->vertices);
		if (!o->vertices)
			return ORCA_ERR_NO_MEMORY;
		l->obstacle_count = i + 1;
		for (uint32_t k = 0; k < o->count; ++k) {
			const orca_vec2 v = r_vec(r);
			if (!finite2(v))
				return ORCA_ERR_INVALID_ARGUMENT;
			o->vertices[k] = v;
			if (k == 0)
				o->lo = o->hi = v;
			o->lo.x = v.x < o->lo.x ? v.x : o->lo.x;
			o->lo.y = v.y < o->lo.y ? v.y : o->lo.y;
			o->hi.x = v.x > o->hi.x ? v.x : o->hi.x;
			o->hi.y = v.y > o->hi.y ? v.y : o->hi.y;
		}
	}

	uint8_t *seen = calloc(total ? total : 1, 1);
	if (!seen)
		return ORCA_ERR_NO_MEMORY;
	int rc = ORCA_OK;
	l->tile_count = r_count(r, 12);
	l->tiles = calloc(l->tile_count ? l->tile_count : 1, sizeof *l->tiles);
	if (!l->tiles)
		rc = ORCA_ERR_NO_MEMORY;
	for (uint32_t i = 0; rc == ORCA_OK && i < l->tile_count && !r->bad; ++i) {
		navmesh_saved_tile *t = &l->tiles[i];
		t->position = r_u32(r);
		t->ref = r_u32(r);
		t->size = r_u32(r);
		t->data = t->size ? r_bytes(r, t->size) : NULL;
		if (r->bad || t->position >= total || seen[t->position] || t->ref == 0 ||
		    (t->size && !navmesh_tile_data_valid(nav->mesh, t->position, t->data, t->size)))
			rc = ORCA_ERR_INVALID_ARGUMENT;
		else
			seen[t->position] = 1;
	}
	memset(seen, 0, total ? total : 1);
	l->dirty_count = r_count(r, 4);
	if (rc == ORCA_OK && l->dirty_count > total)
		rc = ORCA_ERR_INVALID_ARGUMENT;
	l->dirty = rc == ORCA_OK ? malloc((size_t)(l->dirty_count ? l->dirty_count : 1) * sizeof *l->dirty) : NULL;
	if (rc == ORCA_OK && !l->dirty)
		rc = ORCA_ERR_NO_MEMORY;
	for (uint32_t i = 0; rc == ORCA_OK && i < l->dirty_count && !r->bad; ++i) {
		l->dirty[i] = r_u32(r);
		if (l->dirty[i] >= total || seen[l->dirty[i]])
			rc = ORCA_ERR_INVALID_ARGUMENT;
		else
			seen[l->dirty[i]] = 1;
	}
	free(seen);
	if (rc != ORCA_OK || r->bad)
		return rc != ORCA_OK ? rc : ORCA_ERR_INVALID_ARGUMENT;

	const uint32_t na = r_count(r, 4 + 2 + (v2 ? 15 : 18) * 4 + 16 + 28);
	l->agents = calloc(na ? na : 1, sizeof *l->agents);
	l->named = calloc(na ? na : 1, sizeof *l->named);
	if (!l->agents || !l->named)
		return ORCA_ERR_NO_MEMORY;
	uint32_t *path = malloc((size_t)nav->def.max_path * sizeof *path);
	if (!path)
		return ORCA_ERR_NO_MEMORY;
	for (uint32_t i = 0; rc == ORCA_OK && i < na && !r->bad; ++i) {
		nav_agent *a = &l->agents[i];
		if (!(a->corridor = navmesh_corridor_create((int)nav->def.max_path))) {
			rc = ORCA_ERR_NO_MEMORY;
			break;
		}
		l->agent_count = i + 1;
		a->id = r_u32(r);
		const uint8_t phase_byte = r_u8(r), flags = r_u8(r);
		const uint8_t phase =
		    v2 ? phase_byte
		       : (uint8_t)(phase_byte & ~(NAV_PHASE_MAKING_WAY | NAV_PHASE_WAITING | NAV_PHASE_RETURNING));
		a->returning = !v2 && (phase_byte & NAV_PHASE_RETURNING);
		a->making_way = !v2 && (phase_byte & NAV_PHASE_MAKING_WAY);
		a->waiting = a->was_waiting = !v2 && (phase_byte & NAV_PHASE_WAITING);
		a->phase = (orca_nav_agent_phase)phase;
		a->done = a->phase == ORCA_NAV_DONE;
		a->queued = flags & NAV_FLAG_QUEUED;
		a->far = flags & NAV_FLAG_FAR;
		a->unreachable = flags & NAV_FLAG_UNREACHABLE;
		a->unreachable_sent = flags & NAV_FLAG_UNREACHABLE_SENT;
		a->stuck_sent = flags & NAV_FLAG_STUCK_SENT;
		a->replanned_for_stall = flags & NAV_FLAG_REPLANNED;
		a->final_leg = flags & NAV_FLAG_FINAL_LEG;
		l->named[i] = flags & NAV_FLAG_NAMED;
		a->target = r_vec(r);
		a->goal = r_vec(r);
		a->steer = r_vec(r);
		a->heading = a->was_heading = r_vec(r);
		a->progress_ref = r_vec(r);
		a->best_dist = r_f32(r);
		a->prev_ref = v2 ? a->progress_ref : r_vec(r);
		a->prev_best = v2 ? a->best_dist : r_f32(r);
		a->stuck_pos = r_vec(r);
		a->stall_time = r_f32(r);
		a->plan_off = r_f32(r);
		a->next_visit = r_u64(r);
		a->last_visit = r_u64(r);
		float pos[3], target[3];
		for (int k = 0; k < 3; ++k)
			pos[k] = r_f32(r);
		for (int k = 0; k < 3; ++k)
			target[k] = r_f32(r);
		const uint32_t n = r_count(r, 4);
		if (r->bad || a->id == ORCA_NULL_ID || phase < ORCA_NAV_WAITING || phase > ORCA_NAV_DONE ||
		    n > nav->def.max_path) {
			rc = ORCA_ERR_INVALID_ARGUMENT;
			break;
		}
		for (uint32_t k = 0; k < n; ++k)
			path[k] = r_u32(r);
		if (!r->bad && navmesh_corridor_restore(a->corridor, pos, target, path, (int)n) != ORCA_OK)
			rc = ORCA_ERR_INVALID_ARGUMENT;
	}
	free(path);
	if (rc != ORCA_OK || r->bad)
		return rc != ORCA_OK ? rc : ORCA_ERR_INVALID_ARGUMENT;
	/* one named entry per slot */
	for (uint32_t i = 0; i < l->agent_count; ++i)
		for (uint32_t k = i + 1; l->named[i] && k < l->agent_count; ++k)
			if (l->named[k] && slot_of(l->agents[k].id) == slot_of(l->agents[i].id))
				return ORCA_ERR_INVALID_ARGUMENT;

	l->queue_len = r_count(r, 4);
	l->queue = malloc((size_t)(l->queue_len ? l->queue_len : 1) * sizeof *l->queue);
	if (!l->queue)
		return ORCA_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < l->queue_len; ++i)
		l->queue[i] = r_u32(r);
	if (r->bad || r->at != r->len)
		return ORCA_ERR_INVALID_ARGUMENT;
	return ORCA_OK;
}

int orca_nav_load(orca_nav *nav, const uint8_t *buf, size_t len)
{
	if (!nav || !buf || nav->agent_count != 0 || nav->updates != 0)
		return ORCA_ERR_INVALID_ARGUMENT;
	nav_reader r = {buf, 0, len, false};
	nav_loaded l;
	memset(&l, 0, sizeof l);
	uint64_t counters[7];
	int rc = parse_save(nav, &r, &l, counters);
	uint32_t slots = 0;
	for (uint32_t i = 0; rc == ORCA_OK && i < l.agent_count; ++i)
		slots = slot_of(l.agents[i].id) + 1 > slots ? slot_of(l.agents[i].id) + 1 : slots;
	if (rc == ORCA_OK) {
		const uint32_t old = nav->slot_cap;
		if (!grow((void **)&nav->index_of_slot, &nav->slot_cap, slots ? slots : 1, sizeof *nav->index_of_slot) ||
		    !grow_hints(nav, slots ? slots : 1))
			rc = ORCA_ERR_NO_MEMORY;
		for (uint32_t i = old; i < nav->slot_cap; ++i)
			nav->index_of_slot[i] = NAV_NO_INDEX;
	}
	if (rc == ORCA_OK && l.queue_len > 0) {
		free(nav->queue);
		nav->queue = l.queue;
		nav->queue_cap = l.queue_len;
		l.queue = NULL;
	}
	uint64_t *due = NULL;
	if (rc == ORCA_OK && !(due = malloc((size_t)(l.agent_count ? l.agent_count : 1) * sizeof *due)))
		rc = ORCA_ERR_NO_MEMORY;
	if (rc == ORCA_OK) /* the mesh: the saved tiles, in their order, at their refs */
		rc = navmesh_restore_tiles(nav->mesh, l.tiles, l.tile_count);
	if (rc != ORCA_OK) {
		free(due);
		loaded_free(&l);
		return rc;
	}
	for (uint32_t i = 0; i < nav->obstacle_count; ++i)
		free(nav->obstacles[i].vertices);
	free(nav->obstacles);
	nav->obstacles = l.obstacles;
	nav->obstacle_count = nav->obstacle_cap = l.obstacle_count;
	l.obstacles = NULL;
	l.obstacle_count = 0;
	/* compare with the world's obstacles at the next update (by id, whatever
	 * the version says: the loaded world counts its own): a change made after
	 * the saved update (not seen then) is seen now, as it would have been */
	nav->obstacles_unseen = true;
	const uint32_t total = navmesh_tile_count(nav->mesh);
	memset(nav->tile_dirty, 0, total);
	nav->tile_head = 0;
	nav->tile_len = l.dirty_count;
	for (uint32_t i = 0; i < l.dirty_count; ++i) {
		nav->tile_queue[i] = l.dirty[i];
		nav->tile_dirty[l.dirty[i]] = 1;
	}
	free(nav->due);
	nav->due = due;
	nav->due_cap = l.agent_count ? l.agent_count : 1;
	free(nav->agents);
	nav->agents = l.agents;
	nav->agent_count = nav->agent_cap = l.agent_count;
	for (uint32_t i = 0; i < l.agent_count; ++i) {
		sync_due(nav, &nav->agents[i]);
		set_done(nav, &nav->agents[i], nav->agents[i].done);
	}
	for (uint32_t i = 0; i < l.agent_count; ++i)
		if (l.named[i])
			nav->index_of_slot[slot_of(l.agents[i].id)] = i;
	for (uint32_t i = 0; i < l.agent_count; ++i)
		note_phase(nav, &nav->agents[i]);
	l.agents = NULL;
	l.agent_count = 0;
	nav->queue_head = 0;
	nav->queue_len = l.queue_len;
	nav->updates = counters[0];
	nav->paths_planned = counters[1];
	nav->tiles_built = counters[2];
	for (int i = 0; i < ORCA_NAV_REPLAN_REASONS; ++i)
		nav->replans[i] = counters[3 + i];
	nav->event_count = 0;
	loaded_free(&l);
	return ORCA_OK;
}
