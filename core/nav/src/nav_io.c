/* nav_io.c — navigation as bytes and back (orca_nav_save / _load), for
 * checkpoints: navigation loaded from a save, beside its world loaded from
 * the same moment, steps exactly as the saved one would have. The bytes go
 * through core's little-endian writer and reader (bytes.h, shared with
 * world_io.c); every byte read is checked. */
#include "bytes.h"
#include "nav_internal.h"

/* "nav4": everything that decides navigation's future, so that a world and
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
 *   the path queue's rings, new targets' then re-plans', each in order, stale
 *   entries too: u32 queued; each u32 agent id */
#define NAV_SAVE_MAGIC 0x3476616eu /* "nav4" */
#define NAV_SAVE_MAGIC_3 0x3376616eu /* "nav3": one path queue (its live entries go to their rings) */
#define NAV_SAVE_MAGIC_2 0x3276616eu /* "nav2": nav3 without prev_ref, prev_best (loaded as if just planned) */

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

static void w_vec(bytes_out *w, orca_vec2 v)
{
	bytes_put_f32(w, v.x);
	bytes_put_f32(w, v.y);
}

size_t orca_nav_save(const orca_nav *nav, uint8_t *buf, size_t capacity)
{
	bytes_out w = {buf, 0, buf ? capacity : 0};
	bytes_put_u32(&w, NAV_SAVE_MAGIC);
	bytes_put_u32(&w, (uint32_t)nav->tiles_x);
	bytes_put_u32(&w, (uint32_t)nav->tiles_y);
	bytes_put_u32(&w, nav->def.max_path);
	bytes_put_u64(&w, nav->updates);
	bytes_put_u64(&w, nav->paths_planned);
	bytes_put_u64(&w, nav->tiles_built);
	for (int i = 0; i < ORCA_NAV_REPLAN_REASONS; ++i)
		bytes_put_u64(&w, nav->replans[i]);

	bytes_put_u32(&w, nav->obstacle_count);
	for (uint32_t i = 0; i < nav->obstacle_count; ++i) {
		const nav_obstacle *o = &nav->obstacles[i];
		bytes_put_u32(&w, o->id);
		bytes_put_u32(&w, o->count);
		for (uint32_t k = 0; k < o->count; ++k)
			w_vec(&w, o->vertices[k]);
	}

	/* A tile whose obstacles changed since it was built (it waits in the
	 * rebuild queue) is saved whole; any other is what the world's obstacles
	 * build, so a load builds it again. If the world's obstacles changed since
	 * the last update (not yet seen here), every tile is saved whole. */
	const bool all = nav->obstacles_unseen || nav->obstacle_version != orca_world_obstacle_version(nav->world);
	const uint32_t total = navmesh_tile_count(nav->mesh);
	const size_t order_bytes = (size_t)(total ? total : 1) * sizeof(uint32_t);
	uint32_t *order = nav_alloc(nav, order_bytes);
	const uint32_t present = order ? navmesh_tiles_in_add_order(nav->mesh, order) : 0;
	bytes_put_u32(&w, order ? present : UINT32_MAX); /* out of memory: a count that no load accepts */
	for (uint32_t i = 0; i < present; ++i) {
		const uint8_t *data;
		uint32_t size;
		const uint32_t ref = navmesh_tile_ref(nav->mesh, order[i], &data, &size);
		const bool whole = all || nav->tile_dirty[order[i]];
		bytes_put_u32(&w, order[i]);
		bytes_put_u32(&w, ref);
		bytes_put_u32(&w, whole ? size : 0);
		if (whole)
			bytes_put(&w, data, size);
	}
	nav_free(nav, order, order_bytes);
	bytes_put_u32(&w, nav->tile_len);
	for (uint32_t i = 0; i < nav->tile_len; ++i)
		bytes_put_u32(&w, nav->tile_queue[(nav->tile_head + i) % total]);

	bytes_put_u32(&w, nav->agent_count);
	for (uint32_t i = 0; i < nav->agent_count; ++i) {
		const nav_agent *a = &nav->agents[i];
		bytes_put_u32(&w, a->id);
		bytes_put_u8(&w, (uint8_t)((uint8_t)a->phase | (a->making_way ? NAV_PHASE_MAKING_WAY : 0) |
		                   (a->waiting ? NAV_PHASE_WAITING : 0) | (a->returning ? NAV_PHASE_RETURNING : 0)));
		bytes_put_u8(&w, (uint8_t)((a->queued ? NAV_FLAG_QUEUED : 0) | (a->far ? NAV_FLAG_FAR : 0) |
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
		bytes_put_f32(&w, a->best_dist);
		w_vec(&w, a->prev_ref);
		bytes_put_f32(&w, a->prev_best);
		w_vec(&w, a->stuck_pos);
		bytes_put_f32(&w, a->stall_time);
		bytes_put_f32(&w, a->plan_off);
		bytes_put_u64(&w, a->next_visit);
		bytes_put_u64(&w, a->last_visit);
		float pos[3], target[3];
		const uint32_t *path;
		const int n = navmesh_corridor_state(a->corridor, pos, target, &path);
		for (int k = 0; k < 3; ++k)
			bytes_put_f32(&w, pos[k]);
		for (int k = 0; k < 3; ++k)
			bytes_put_f32(&w, target[k]);
		bytes_put_u32(&w, (uint32_t)n);
		for (int k = 0; k < n; ++k)
			bytes_put_u32(&w, path[k]);
	}
	for (int q = 0; q < NAV_RINGS; ++q) {
		const nav_ring *ring = &nav->queue[q];
		bytes_put_u32(&w, ring->len);
		for (uint32_t i = 0; i < ring->len; ++i)
			bytes_put_u32(&w, ring->ids[(ring->head + i) % ring->cap]);
	}
	return w.at;
}

static orca_vec2 r_vec(bytes_in *r)
{
	orca_vec2 v;
	v.x = bytes_get_f32(r);
	v.y = bytes_get_f32(r);
	return v;
}

/* A count of items of at least `min_size` bytes each that the rest can hold. */
static uint32_t r_count(bytes_in *r, size_t min_size)
{
	const uint32_t n = bytes_get_u32(r);
	if (!r->bad && (size_t)n > r->left / min_size)
		r->bad = true;
	return r->bad ? 0 : n;
}

/* What a load builds before it touches the nav (all or nothing). */
typedef struct nav_loaded {
	nav_obstacle *obstacles;
	uint32_t obstacle_count, obstacle_cap;
	navmesh_saved_tile *tiles;
	uint32_t tile_count, tile_cap;
	uint32_t *dirty;
	uint32_t dirty_count, dirty_cap;
	nav_agent *agents;
	bool *named;
	uint32_t agent_count, agent_cap;
	nav_ring queue[NAV_RINGS];
	bool one_queue; /* an older save's one queue, in queue[NAV_RING_REPLANS] */
} nav_loaded;

static void loaded_free(orca_nav *nav, nav_loaded *l)
{
	for (uint32_t i = 0; i < l->agent_count; ++i)
		navmesh_corridor_destroy(l->agents[i].corridor);
	nav_free_obstacles(nav, l->obstacles, l->obstacle_count, l->obstacle_cap);
	nav_free(nav, l->tiles, (size_t)l->tile_cap * sizeof *l->tiles);
	nav_free(nav, l->dirty, (size_t)l->dirty_cap * sizeof *l->dirty);
	nav_free(nav, l->agents, (size_t)l->agent_cap * sizeof *l->agents);
	nav_free(nav, l->named, (size_t)l->agent_cap * sizeof *l->named);
	for (int q = 0; q < NAV_RINGS; ++q)
		nav_free(nav, l->queue[q].ids, (size_t)l->queue[q].cap * sizeof *l->queue[q].ids);
}

static bool finite2(orca_vec2 v)
{
	return v.x - v.x == 0.0f && v.y - v.y == 0.0f;
}

static int parse_save(orca_nav *nav, bytes_in *r, nav_loaded *l, uint64_t counters[7])
{
	const uint32_t total = navmesh_tile_count(nav->mesh);
	const uint32_t magic = bytes_get_u32(r);
	const bool v2 = magic == NAV_SAVE_MAGIC_2;
	l->one_queue = v2 || magic == NAV_SAVE_MAGIC_3;
	if ((magic != NAV_SAVE_MAGIC && !l->one_queue) || bytes_get_u32(r) != (uint32_t)nav->tiles_x || bytes_get_u32(r) != (uint32_t)nav->tiles_y ||
	    bytes_get_u32(r) != nav->def.max_path)
		return ORCA_ERR_INVALID_ARGUMENT;
	for (int i = 0; i < 7; ++i)
		counters[i] = bytes_get_u64(r);

	const uint32_t no = r_count(r, 8);
	l->obstacle_cap = no ? no : 1;
	l->obstacles = nav_calloc(nav, l->obstacle_cap, sizeof *l->obstacles);
	if (!l->obstacles)
		return ORCA_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < no && !r->bad; ++i) {
		nav_obstacle *o = &l->obstacles[i];
		o->id = bytes_get_u32(r);
		o->count = r_count(r, 8);
		if (r->bad || o->count == 0 || (i > 0 && o->id <= l->obstacles[i - 1].id))
			return ORCA_ERR_INVALID_ARGUMENT;
		o->vertices = nav_alloc(nav, (size_t)o->count * sizeof *o->vertices);
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

	uint8_t *seen = nav_calloc(nav, total ? total : 1, 1);
	if (!seen)
		return ORCA_ERR_NO_MEMORY;
	int rc = ORCA_OK;
	l->tile_count = r_count(r, 12);
	l->tiles = nav_calloc(nav, l->tile_count ? l->tile_count : 1, sizeof *l->tiles);
	l->tile_cap = l->tiles ? (l->tile_count ? l->tile_count : 1) : 0;
	if (!l->tiles)
		rc = ORCA_ERR_NO_MEMORY;
	for (uint32_t i = 0; rc == ORCA_OK && i < l->tile_count && !r->bad; ++i) {
		navmesh_saved_tile *t = &l->tiles[i];
		t->position = bytes_get_u32(r);
		t->ref = bytes_get_u32(r);
		t->size = bytes_get_u32(r);
		t->data = t->size ? bytes_take(r, t->size) : NULL;
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
	l->dirty = rc == ORCA_OK ? nav_alloc(nav, (size_t)(l->dirty_count ? l->dirty_count : 1) * sizeof *l->dirty) : NULL;
	l->dirty_cap = l->dirty ? (l->dirty_count ? l->dirty_count : 1) : 0;
	if (rc == ORCA_OK && !l->dirty)
		rc = ORCA_ERR_NO_MEMORY;
	for (uint32_t i = 0; rc == ORCA_OK && i < l->dirty_count && !r->bad; ++i) {
		l->dirty[i] = bytes_get_u32(r);
		if (l->dirty[i] >= total || seen[l->dirty[i]])
			rc = ORCA_ERR_INVALID_ARGUMENT;
		else
			seen[l->dirty[i]] = 1;
	}
	nav_free(nav, seen, total ? total : 1);
	if (rc != ORCA_OK || r->bad)
		return rc != ORCA_OK ? rc : ORCA_ERR_INVALID_ARGUMENT;

	const uint32_t na = r_count(r, 4 + 2 + (v2 ? 15 : 18) * 4 + 16 + 28);
	l->agents = nav_calloc(nav, na ? na : 1, sizeof *l->agents);
	l->named = l->agents ? nav_calloc(nav, na ? na : 1, sizeof *l->named) : NULL;
	if (!l->named) {
		nav_free(nav, l->agents, (size_t)(na ? na : 1) * sizeof *l->agents);
		l->agents = NULL;
		return ORCA_ERR_NO_MEMORY;
	}
	l->agent_cap = na ? na : 1;
	uint32_t *path = nav_alloc(nav, (size_t)nav->def.max_path * sizeof *path);
	if (!path)
		return ORCA_ERR_NO_MEMORY;
	for (uint32_t i = 0; rc == ORCA_OK && i < na && !r->bad; ++i) {
		nav_agent *a = &l->agents[i];
		if (!(a->corridor = navmesh_corridor_create((int)nav->def.max_path))) {
			rc = ORCA_ERR_NO_MEMORY;
			break;
		}
		l->agent_count = i + 1;
		a->id = bytes_get_u32(r);
		const uint8_t phase_byte = bytes_get_u8(r), flags = bytes_get_u8(r);
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
		a->best_dist = bytes_get_f32(r);
		a->prev_ref = v2 ? a->progress_ref : r_vec(r);
		a->prev_best = v2 ? a->best_dist : bytes_get_f32(r);
		a->stuck_pos = r_vec(r);
		a->stall_time = bytes_get_f32(r);
		a->plan_off = bytes_get_f32(r);
		a->next_visit = bytes_get_u64(r);
		a->last_visit = bytes_get_u64(r);
		float pos[3], target[3];
		for (int k = 0; k < 3; ++k)
			pos[k] = bytes_get_f32(r);
		for (int k = 0; k < 3; ++k)
			target[k] = bytes_get_f32(r);
		const uint32_t n = r_count(r, 4);
		if (r->bad || a->id == ORCA_NULL_ID || phase < ORCA_NAV_WAITING || phase > ORCA_NAV_DONE ||
		    n > nav->def.max_path) {
			rc = ORCA_ERR_INVALID_ARGUMENT;
			break;
		}
		for (uint32_t k = 0; k < n; ++k)
			path[k] = bytes_get_u32(r);
		if (!r->bad && navmesh_corridor_restore(a->corridor, pos, target, path, (int)n) != ORCA_OK)
			rc = ORCA_ERR_INVALID_ARGUMENT;
	}
	nav_free(nav, path, (size_t)nav->def.max_path * sizeof *path);
	if (rc != ORCA_OK || r->bad)
		return rc != ORCA_OK ? rc : ORCA_ERR_INVALID_ARGUMENT;
	/* one named entry per slot */
	for (uint32_t i = 0; i < l->agent_count; ++i)
		for (uint32_t k = i + 1; l->named[i] && k < l->agent_count; ++k)
			if (l->named[k] && slot_of(l->agents[k].id) == slot_of(l->agents[i].id))
				return ORCA_ERR_INVALID_ARGUMENT;

	for (int q = l->one_queue ? NAV_RING_REPLANS : 0; q < NAV_RINGS; ++q) {
		nav_ring *ring = &l->queue[q];
		ring->len = r_count(r, 4);
		ring->ids = nav_alloc(nav, (size_t)(ring->len ? ring->len : 1) * sizeof *ring->ids);
		if (!ring->ids)
			return ORCA_ERR_NO_MEMORY;
		ring->cap = ring->len ? ring->len : 1;
		for (uint32_t i = 0; i < ring->len; ++i)
			ring->ids[i] = bytes_get_u32(r);
	}
	if (r->bad || r->left != 0)
		return ORCA_ERR_INVALID_ARGUMENT;
	return ORCA_OK;
}

int orca_nav_load(orca_nav *nav, const uint8_t *buf, size_t len)
{
	if (!nav || !buf || nav->agent_count != 0 || nav->updates != 0)
		return ORCA_ERR_INVALID_ARGUMENT;
	bytes_in r = {buf, len, false};
	nav_loaded l;
	memset(&l, 0, sizeof l);
	uint64_t counters[7];
	int rc = parse_save(nav, &r, &l, counters);
	uint32_t slots = 0;
	for (uint32_t i = 0; rc == ORCA_OK && i < l.agent_count; ++i)
		slots = slot_of(l.agents[i].id) + 1 > slots ? slot_of(l.agents[i].id) + 1 : slots;
	if (rc == ORCA_OK) {
		const uint32_t old = nav->slot_cap;
		if (!nav_grow(nav, (void **)&nav->index_of_slot, &nav->slot_cap, slots ? slots : 1, sizeof *nav->index_of_slot) ||
		    !nav_grow_hints(nav, slots ? slots : 1))
			rc = ORCA_ERR_NO_MEMORY;
		for (uint32_t i = old; i < nav->slot_cap; ++i)
			nav->index_of_slot[i] = NAV_NO_INDEX;
	}
	for (int q = 0; rc == ORCA_OK && !l.one_queue && q < NAV_RINGS; ++q) {
		nav_free(nav, nav->queue[q].ids, (size_t)nav->queue[q].cap * sizeof *nav->queue[q].ids);
		nav->queue[q] = l.queue[q];
		memset(&l.queue[q], 0, sizeof l.queue[q]);
	}
	uint64_t *due = NULL;
	const uint32_t due_cap = l.agent_count ? l.agent_count : 1;
	if (rc == ORCA_OK && !(due = nav_alloc(nav, (size_t)due_cap * sizeof *due)))
		rc = ORCA_ERR_NO_MEMORY;
	if (rc == ORCA_OK) /* the mesh: the saved tiles, in their order, at their refs */
		rc = navmesh_restore_tiles(nav->mesh, l.tiles, l.tile_count);
	if (rc != ORCA_OK) {
		nav_free(nav, due, (size_t)due_cap * sizeof *due);
		loaded_free(nav, &l);
		return rc;
	}
	nav_free_obstacles(nav, nav->obstacles, nav->obstacle_count, nav->obstacle_cap);
	nav->obstacles = l.obstacles;
	nav->obstacle_count = l.obstacle_count;
	nav->obstacle_cap = l.obstacle_cap;
	l.obstacles = NULL;
	l.obstacle_count = l.obstacle_cap = 0;
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
	nav_free(nav, nav->due, (size_t)nav->due_cap * sizeof *nav->due);
	nav->due = due;
	nav->due_cap = due_cap;
	nav_free(nav, nav->agents, (size_t)nav->agent_cap * sizeof *nav->agents);
	nav->agents = l.agents;
	nav->agent_count = l.agent_count;
	nav->agent_cap = l.agent_cap;
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
	nav_free(nav, l.named, (size_t)l.agent_cap * sizeof *l.named);
	l.named = NULL;
	l.agent_cap = 0;
	/* an older save's one queue: each live entry to its agent's ring, in order */
	const nav_ring *old = &l.queue[NAV_RING_REPLANS];
	for (uint32_t i = 0; l.one_queue && i < old->len; ++i) {
		nav_agent *a = find_agent(nav, old->ids[i]);
		if (a && a->queued && !nav_queue_push(nav, queue_ring(a), a->id))
			a->queued = false; /* out of memory: asked again at a later visit */
	}
	nav->updates = counters[0];
	nav->paths_planned = counters[1];
	nav->tiles_built = counters[2];
	for (int i = 0; i < ORCA_NAV_REPLAN_REASONS; ++i)
		nav->replans[i] = counters[3 + i];
	nav->event_count = 0;
	loaded_free(nav, &l);
	return ORCA_OK;
}
