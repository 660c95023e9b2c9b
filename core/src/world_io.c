/* world_io.c — the whole world as bytes and back (orca_world_save / _load),
 * for checkpoints: a world loaded from a save steps bit-identically to the one
 * saved. Everything a later step or a later id depends on is written: slots
 * with generations, liveness and both free lists in their exact order (they
 * decide which id the next agent gets), positions, velocities, preferred
 * velocities, every parameter, the persistent agent order (RVO2's neighbour
 * tie order) and the obstacles with their slots and add order. What a step
 * rebuilds (kd-trees, tree-order copies, neighbour hints) is not written: the
 * hints only prune the neighbour search, they never change its result.
 *
 * Format (little-endian, no padding): "ORCW", format version, total bytes (u64), then sections
 * {u32 tag, u32 length, payload}. Each engine module owns one tag; a module
 * that adds state adds a section (see the tags below). A loader refuses an
 * unknown tag rather than step a world it cannot restore exactly. Every byte
 * read is checked: a bad save gives ORCA_ERR_INVALID_ARGUMENT, never a crash. */
#include <string.h>

#include "bytes.h"
#include "obstacles.h"
#include "world_internal.h"

#define IO_MAGIC 0x5743524Fu /* "ORCW" */
#define IO_VERSION 2u

enum io_section {
	IO_SECTION_AGENTS = 1,    /* slots, parameters, free lists, order */
	IO_SECTION_OBSTACLES = 2, /* obstacle slots, vertices, add order */
	IO_SECTION_SETTINGS = 3,  /* what the definition set and a step reads: bounds, avoidance, obstacle index */
	IO_SECTION_QUALITY = 4,   /* quality avoidance (quality.c): per slot, time stuck and how blocked */
	IO_SECTION_OBST_INDEX = 5, /* which obstacle index is built; the edge grid's vertex numbering */
	IO_SECTION_FOLLOW = 6,    /* quality's follow rule on or off; a save without it ran without the rule */
};

/* Which obstacle index a world has (IO_SECTION_OBST_INDEX). */
enum io_obst_index { IO_INDEX_STALE = 0, IO_INDEX_RVO2 = 1, IO_INDEX_GRID = 2 };

#define AGENT_HEADER_BYTES (8 + 4 * 7 + 1)
#define AGENT_SLOT_BYTES (4 + 1 + 4 + 6 * 4 + 10 * 4 + 4 * 4 + 2)
#define OBST_HEADER_BYTES (4 * 4)

/* ------------------------------------------------------------ writing */

static size_t agents_bytes(const struct orca_world *w)
{
	return AGENT_HEADER_BYTES + (size_t)w->slot_count * AGENT_SLOT_BYTES + (size_t)w->order_count * 4;
}

static size_t obstacles_bytes(const struct orca_world *w)
{
	size_t n = OBST_HEADER_BYTES + (size_t)w->obst_live * 4;
	for (uint32_t s = 0; s < w->obst_slot_count; ++s)
		n += 4 + 1 + 4 + 4 + (w->obst[s].alive ? (size_t)w->obst[s].count * 8 : 0);
	return n;
}

static void write_agents(const struct orca_world *w, bytes_out *o)
{
	bytes_put_u64(o, w->steps);
	bytes_put_u32(o, w->max_neighbors_max);
	bytes_put_u32(o, w->slot_count);
	bytes_put_u32(o, w->live_count);
	bytes_put_u32(o, w->free_head);
	bytes_put_u32(o, w->pending_head);
	bytes_put_u32(o, w->order_count);
	bytes_put_u32(o, 0); /* reserved */
	bytes_put_u8(o, w->order_dirty ? 1 : 0);
	for (uint32_t s = 0; s < w->slot_count; ++s) {
		const agent_params *p = &w->params[s];
		bytes_put_u32(o, w->gen[s]);
		bytes_put_u8(o, w->alive[s]);
		bytes_put_u32(o, w->free_next[s]);
		bytes_put_f32(o, w->px[s]);
		bytes_put_f32(o, w->py[s]);
		bytes_put_f32(o, w->vx[s]);
		bytes_put_f32(o, w->vy[s]);
		bytes_put_f32(o, w->pvx[s]);
		bytes_put_f32(o, w->pvy[s]);
		bytes_put_f32(o, p->radius);
		bytes_put_f32(o, p->max_speed);
		bytes_put_f32(o, p->neighbor_dist);
		bytes_put_f32(o, p->time_horizon);
		bytes_put_f32(o, p->time_horizon_obst);
		bytes_put_f32(o, p->weight);
		bytes_put_f32(o, p->pref_speed);
		bytes_put_f32(o, p->arrival_distance);
		bytes_put_f32(o, p->target.x);
		bytes_put_f32(o, p->target.y);
		bytes_put_u32(o, p->max_neighbors);
		bytes_put_u32(o, p->layer);
		bytes_put_u32(o, p->mask);
		bytes_put_u32(o, p->user_data);
		bytes_put_u8(o, p->steer_mode);
		bytes_put_u8(o, p->arrived);
	}
	for (uint32_t i = 0; i < w->order_count; ++i)
		bytes_put_u32(o, w->order[i]);
}

#define SETTINGS_BYTES (1 + 4 * 4 + 4 + 4)

static void write_settings(const struct orca_world *w, bytes_out *o)
{
	bytes_put_u8(o, w->has_bounds ? 1 : 0);
	bytes_put_f32(o, w->bounds_min_x);
	bytes_put_f32(o, w->bounds_min_y);
	bytes_put_f32(o, w->bounds_max_x);
	bytes_put_f32(o, w->bounds_max_y);
	bytes_put_u32(o, (uint32_t)w->avoidance);
	bytes_put_u32(o, (uint32_t)w->obst_index);
}

static size_t quality_bytes(const struct orca_world *w) { return 4 + (size_t)w->slot_count * 8; }

static void write_quality(const struct orca_world *w, bytes_out *o)
{
	bytes_put_u32(o, w->slot_count);
	for (uint32_t s = 0; s < w->slot_count; ++s) {
		bytes_put_f32(o, w->q_stuck[s]);
		bytes_put_f32(o, w->q_blocked[s]);
	}
}

static uint32_t obst_index_kind(const struct orca_world *w)
{
	if (w->obst_grid)
		return IO_INDEX_GRID;
	return w->obst_built_version == w->obst_version ? IO_INDEX_RVO2 : IO_INDEX_STALE;
}

/* The grid numbers vertices as its free list hands them out; ties between
 * edges at equal distance go by that number, so it is saved as it is. */
static size_t obst_index_bytes(const struct orca_world *w)
{
	size_t n = 1;
	if (obst_index_kind(w) != IO_INDEX_GRID)
		return n;
	n += 4 + 4; /* vert_count, free list length */
	for (uint32_t k = 0; k < w->obst_live; ++k)
		n += (size_t)w->obst[w->obst_order[k]].count * 4;
	for (uint32_t v = w->obst_vert_free; v != ORCA_NONE; v = w->verts[v].next)
		n += 4;
	return n;
}

static void write_obst_index(const struct orca_world *w, bytes_out *o)
{
	const uint32_t kind = obst_index_kind(w);
	bytes_put_u8(o, (uint8_t)kind);
	if (kind != IO_INDEX_GRID)
		return;
	uint32_t free_count = 0;
	for (uint32_t v = w->obst_vert_free; v != ORCA_NONE; v = w->verts[v].next)
		free_count++;
	bytes_put_u32(o, w->vert_count);
	bytes_put_u32(o, free_count);
	for (uint32_t k = 0; k < w->obst_live; ++k) {
		const obstacle_slot *ob = &w->obst[w->obst_order[k]];
		uint32_t v = ob->first_vert;
		for (uint32_t i = 0; i < ob->count; ++i, v = w->verts[v].next)
			bytes_put_u32(o, v);
	}
	for (uint32_t v = w->obst_vert_free; v != ORCA_NONE; v = w->verts[v].next)
		bytes_put_u32(o, v);
}

static void write_obstacles(const struct orca_world *w, bytes_out *o)
{
	bytes_put_u32(o, w->obst_slot_count);
	bytes_put_u32(o, w->obst_live);
	bytes_put_u32(o, w->obst_free_head);
	bytes_put_u32(o, w->obst_version);
	for (uint32_t s = 0; s < w->obst_slot_count; ++s) {
		const obstacle_slot *ob = &w->obst[s];
		bytes_put_u32(o, ob->gen);
		bytes_put_u8(o, ob->alive ? 1 : 0);
		bytes_put_u32(o, w->obst_free_next[s]);
		bytes_put_u32(o, ob->alive ? ob->count : 0);
		if (ob->alive)
			for (uint32_t i = 0; i < ob->count; ++i) {
				bytes_put_f32(o, ob->vertices[i].x);
				bytes_put_f32(o, ob->vertices[i].y);
			}
	}
	for (uint32_t i = 0; i < w->obst_live; ++i)
		bytes_put_u32(o, w->obst_order[i]);
}

int orca_world_save(const orca_world *w, void *buf, size_t capacity, size_t *size)
{
	if (!w || !size || (!buf && capacity > 0))
		return ORCA_ERR_INVALID_ARGUMENT;
	const size_t a = agents_bytes(w), ob = obstacles_bytes(w), q = quality_bytes(w), oi = obst_index_bytes(w);
	if (a > UINT32_MAX || ob > UINT32_MAX || q > UINT32_MAX || oi > UINT32_MAX)
		return ORCA_ERR_CAPACITY;
	const size_t total = 16 + 8 + a + 8 + ob + 8 + SETTINGS_BYTES + 8 + q + 8 + oi + 8 + 1;
	*size = total;
	if (capacity < total)
		return ORCA_ERR_CAPACITY;
	bytes_out o = {buf, 0, capacity};
	bytes_put_u32(&o, IO_MAGIC);
	bytes_put_u32(&o, IO_VERSION);
	bytes_put_u64(&o, total); /* a cut at a section boundary is still a cut */
	bytes_put_u32(&o, IO_SECTION_AGENTS);
	bytes_put_u32(&o, (uint32_t)a);
	write_agents(w, &o);
	bytes_put_u32(&o, IO_SECTION_OBSTACLES);
	bytes_put_u32(&o, (uint32_t)ob);
	write_obstacles(w, &o);
	bytes_put_u32(&o, IO_SECTION_SETTINGS);
	bytes_put_u32(&o, SETTINGS_BYTES);
	write_settings(w, &o);
	bytes_put_u32(&o, IO_SECTION_QUALITY);
	bytes_put_u32(&o, (uint32_t)q);
	write_quality(w, &o);
	bytes_put_u32(&o, IO_SECTION_OBST_INDEX);
	bytes_put_u32(&o, (uint32_t)oi);
	write_obst_index(w, &o);
	bytes_put_u32(&o, IO_SECTION_FOLLOW);
	bytes_put_u32(&o, 1);
	bytes_put_u8(&o, w->q_follow_rule ? 1 : 0);
	return ORCA_OK;
}

/* ------------------------------------------------------------ reading */

#define IO_LIMIT 1e9f /* the engine's own bound on any coordinate or parameter */
static bool fin(float v) { return isfinite(v) && fabsf(v) <= IO_LIMIT; }
static bool nonneg(float v) { return fin(v) && v >= 0.0f; }

/* Back to an empty world (after a load that failed part-way). */
static void reset_world(struct orca_world *w)
{
	for (uint32_t s = 0; s < w->obst_slot_count; ++s)
		if (w->obst[s].alive) {
			orca_mem_free(w, w->obst[s].vertices, w->obst[s].count * sizeof(vec2));
			w->obst[s].vertices = NULL;
			w->obst[s].alive = false;
		}
	w->steps = 0;
	w->slot_count = w->live_count = 0;
	w->free_head = w->pending_head = ORCA_NONE;
	w->order_count = 0;
	w->order_dirty = false;
	w->max_neighbors_max = 0;
	w->obst_slot_count = w->obst_live = 0;
	w->obst_free_head = ORCA_NONE;
	if (w->obst_grid)
		orca_obstacle_grid_rebuild(w); /* no obstacle left: only empties the grid */
	w->vert_count = 0;
	w->obst_edges = 0;
	w->obst_vert_free = ORCA_NONE;
	w->obst_version++;
	w->query_tree_valid = false;
	w->qgrid.valid = false;
}

/* Walk one free list: every link in range, dead, reusable, and seen once. */
static bool check_free_list(const struct orca_world *w, uint32_t head, uint8_t *seen, uint8_t mark)
{
	uint32_t s = head, steps = 0;
	while (s != ORCA_NONE) {
		if (s >= w->slot_count || w->alive[s] || w->gen[s] >= ORCA_GEN_LIMIT || seen[s] || ++steps > w->slot_count)
			return false;
		seen[s] = mark;
		s = w->free_next[s];
	}
	return true;
}

static int read_agents(struct orca_world *w, bytes_in *in)
{
	w->steps = bytes_get_u64(in);
	const uint32_t max_nb = bytes_get_u32(in);
	const uint32_t slot_count = bytes_get_u32(in);
	const uint32_t live = bytes_get_u32(in);
	const uint32_t free_head = bytes_get_u32(in);
	const uint32_t pending_head = bytes_get_u32(in);
	const uint32_t order_count = bytes_get_u32(in);
	(void)bytes_get_u32(in);
	const uint8_t dirty = bytes_get_u8(in);
	if (in->bad || slot_count > ORCA_MAX_AGENTS + 1u || order_count > slot_count || live > order_count ||
	    live > w->max_agents || dirty > 1)
		return ORCA_ERR_INVALID_ARGUMENT;
	/* the section must hold what the header promises before anything is allocated */
	if (in->left != (size_t)slot_count * AGENT_SLOT_BYTES + (size_t)order_count * 4)
		return ORCA_ERR_INVALID_ARGUMENT;
	const uint32_t need = slot_count > order_count + 1 ? slot_count : order_count + 1;
	if (!orca_world_reserve_agents(w, need))
		return ORCA_ERR_NO_MEMORY;
	w->slot_count = slot_count;
	w->max_neighbors_max = max_nb;
	uint32_t alive_count = 0;
	for (uint32_t s = 0; s < slot_count; ++s) {
		agent_params *p = &w->params[s];
		memset(p, 0, sizeof *p);
		w->gen[s] = bytes_get_u32(in);
		w->alive[s] = bytes_get_u8(in);
		w->free_next[s] = bytes_get_u32(in);
		w->px[s] = bytes_get_f32(in);
		w->py[s] = bytes_get_f32(in);
		w->vx[s] = bytes_get_f32(in);
		w->vy[s] = bytes_get_f32(in);
		w->pvx[s] = bytes_get_f32(in);
		w->pvy[s] = bytes_get_f32(in);
		p->radius = bytes_get_f32(in);
		p->max_speed = bytes_get_f32(in);
		p->neighbor_dist = bytes_get_f32(in);
		p->time_horizon = bytes_get_f32(in);
		p->time_horizon_obst = bytes_get_f32(in);
		p->weight = bytes_get_f32(in);
		p->pref_speed = bytes_get_f32(in);
		p->arrival_distance = bytes_get_f32(in);
		p->target.x = bytes_get_f32(in);
		p->target.y = bytes_get_f32(in);
		p->max_neighbors = bytes_get_u32(in);
		p->layer = bytes_get_u32(in);
		p->mask = bytes_get_u32(in);
		p->user_data = bytes_get_u32(in);
		p->steer_mode = bytes_get_u8(in);
		p->arrived = bytes_get_u8(in);
		w->hint_count[s] = 0;
		w->nb_guess[s] = 0.0f; /* like the hints: only where the search starts */
		w->q_stuck[s] = 0.0f;  /* the quality section, if any, sets these */
		w->q_blocked[s] = 0.0f;
		if (w->alive[s] > 1 || w->gen[s] > ORCA_GEN_LIMIT)
			return ORCA_ERR_INVALID_ARGUMENT;
		if (!w->alive[s])
			continue;
		alive_count++;
		if (w->gen[s] >= ORCA_GEN_LIMIT || !fin(w->px[s]) || !fin(w->py[s]) || !fin(w->vx[s]) ||
		    !fin(w->vy[s]) || !fin(w->pvx[s]) || !fin(w->pvy[s]) || !nonneg(p->radius) ||
		    !nonneg(p->max_speed) || !nonneg(p->neighbor_dist) || !(fin(p->time_horizon) && p->time_horizon > 0) ||
		    !(fin(p->time_horizon_obst) && p->time_horizon_obst > 0) || !nonneg(p->weight) ||
		    !nonneg(p->pref_speed) || !nonneg(p->arrival_distance) || !fin(p->target.x) || !fin(p->target.y) ||
		    p->steer_mode > ORCA_STEER_TARGET_RVO2 || p->arrived > 1)
			return ORCA_ERR_INVALID_ARGUMENT;
		if (p->max_neighbors > w->max_neighbors_max)
			w->max_neighbors_max = p->max_neighbors;
	}
	for (uint32_t i = 0; i < order_count; ++i)
		w->order[i] = bytes_get_u32(in);
	if (in->bad || alive_count != live)
		return ORCA_ERR_INVALID_ARGUMENT;
	w->live_count = live;
	w->order_count = order_count;
	w->order_dirty = dirty != 0;
	w->free_head = free_head;
	w->pending_head = pending_head;

	/* Structure: each live slot exactly once in the order; dead entries only
	 * while the order is dirty; free lists well formed and disjoint. */
	uint8_t *seen = orca_mem_alloc(w, slot_count ? slot_count : 1);
	if (!seen)
		return ORCA_ERR_NO_MEMORY;
	memset(seen, 0, slot_count ? slot_count : 1);
	int rc = ORCA_OK;
	uint32_t live_in_order = 0;
	for (uint32_t i = 0; i < order_count && rc == ORCA_OK; ++i) {
		const uint32_t s = w->order[i];
		if (s >= slot_count)
			rc = ORCA_ERR_INVALID_ARGUMENT;
		else if (w->alive[s]) {
			if (seen[s])
				rc = ORCA_ERR_INVALID_ARGUMENT;
			seen[s] = 1;
			live_in_order++;
		} else if (!w->order_dirty) {
			rc = ORCA_ERR_INVALID_ARGUMENT;
		}
	}
	if (rc == ORCA_OK && live_in_order != live)
		rc = ORCA_ERR_INVALID_ARGUMENT;
	if (rc == ORCA_OK) {
		memset(seen, 0, slot_count ? slot_count : 1);
		if (!check_free_list(w, free_head, seen, 1) || !check_free_list(w, pending_head, seen, 2))
			rc = ORCA_ERR_INVALID_ARGUMENT;
	}
	orca_mem_free(w, seen, slot_count ? slot_count : 1);
	return rc;
}

static int read_obstacles(struct orca_world *w, bytes_in *in)
{
	const uint32_t slot_count = bytes_get_u32(in);
	const uint32_t live = bytes_get_u32(in);
	const uint32_t free_head = bytes_get_u32(in);
	const uint32_t version = bytes_get_u32(in);
	/* every slot takes at least 13 bytes: bound the count by what is there */
	if (in->bad || slot_count > ORCA_MAX_AGENTS + 1u || live > slot_count || (size_t)slot_count * 13 > in->left)
		return ORCA_ERR_INVALID_ARGUMENT;
	if (slot_count > 0) {
		uint32_t c1 = w->obst_slot_cap, c2 = w->obst_slot_cap;
		if (!orca_mem_reserve(w, (void **)&w->obst, &c1, slot_count, sizeof(obstacle_slot)) ||
		    !orca_mem_reserve(w, (void **)&w->obst_free_next, &c2, c1, sizeof(uint32_t)))
			return ORCA_ERR_NO_MEMORY;
		w->obst_slot_cap = c1;
	}
	if (!orca_mem_reserve(w, (void **)&w->obst_order, &w->obst_order_cap, live + 1, sizeof(uint32_t)))
		return ORCA_ERR_NO_MEMORY;
	uint32_t alive_count = 0;
	for (uint32_t s = 0; s < slot_count; ++s) {
		obstacle_slot *ob = &w->obst[s];
		ob->vertices = NULL;
		ob->count = 0;
		ob->alive = false;
		ob->first_vert = ORCA_NONE;
		ob->gen = bytes_get_u32(in);
		const uint8_t alive = bytes_get_u8(in);
		w->obst_free_next[s] = bytes_get_u32(in);
		const uint32_t count = bytes_get_u32(in);
		w->obst_slot_count = s + 1; /* reset_world frees what this loop allocated */
		if (in->bad || alive > 1 || ob->gen > ORCA_GEN_LIMIT || (alive && ob->gen >= ORCA_GEN_LIMIT) ||
		    (!alive && count != 0) || (alive && (count < 2 || count > (1u << 24))) ||
		    (size_t)count * 8 > in->left)
			return ORCA_ERR_INVALID_ARGUMENT;
		if (!alive)
			continue;
		vec2 *v = orca_mem_alloc(w, sizeof(vec2) * count);
		if (!v)
			return ORCA_ERR_NO_MEMORY;
		for (uint32_t i = 0; i < count; ++i) {
			v[i].x = bytes_get_f32(in);
			v[i].y = bytes_get_f32(in);
		}
		ob->vertices = v;
		ob->count = count;
		ob->alive = true;
		alive_count++;
		for (uint32_t i = 0; i < count; ++i) {
			const vec2 a = v[i], b = v[(i + 1) % count];
			if (!fin(a.x) || !fin(a.y) || (a.x == b.x && a.y == b.y))
				return ORCA_ERR_INVALID_ARGUMENT;
		}
	}
	if (alive_count != live || in->left != (size_t)live * 4)
		return ORCA_ERR_INVALID_ARGUMENT;
	uint8_t *seen = orca_mem_alloc(w, slot_count ? slot_count : 1);
	if (!seen)
		return ORCA_ERR_NO_MEMORY;
	memset(seen, 0, slot_count ? slot_count : 1);
	int rc = ORCA_OK;
	for (uint32_t i = 0; i < live && rc == ORCA_OK; ++i) {
		const uint32_t s = bytes_get_u32(in);
		if (s >= slot_count || !w->obst[s].alive || seen[s])
			rc = ORCA_ERR_INVALID_ARGUMENT;
		else
			seen[s] = 1;
		w->obst_order[i] = s;
	}
	for (uint32_t s = free_head, steps = 0; s != ORCA_NONE && rc == ORCA_OK;) {
		if (s >= slot_count || w->obst[s].alive || w->obst[s].gen >= ORCA_GEN_LIMIT || seen[s] ||
		    ++steps > slot_count) {
			rc = ORCA_ERR_INVALID_ARGUMENT;
			break;
		}
		seen[s] = 2;
		s = w->obst_free_next[s];
	}
	orca_mem_free(w, seen, slot_count ? slot_count : 1);
	if (rc != ORCA_OK)
		return rc;
	w->obst_live = live;
	w->obst_free_head = free_head;
	w->obst_version = version;
	w->obst_built_version = version - 1u; /* the next step builds the obstacle tree */
	return ORCA_OK;
}

static int read_settings(struct orca_world *w, bytes_in *in)
{
	const uint8_t has_bounds = bytes_get_u8(in);
	const float x0 = bytes_get_f32(in), y0 = bytes_get_f32(in), x1 = bytes_get_f32(in), y1 = bytes_get_f32(in);
	const uint32_t avoidance = bytes_get_u32(in), index = bytes_get_u32(in);
	if (in->bad || has_bounds > 1 || (avoidance != ORCA_AVOIDANCE_REFERENCE && avoidance != ORCA_AVOIDANCE_QUALITY) ||
	    index > ORCA_OBSTACLE_INDEX_RVO2)
		return ORCA_ERR_INVALID_ARGUMENT;
	if (has_bounds && !(isfinite(x0) && isfinite(y0) && isfinite(x1) && isfinite(y1) && x0 <= x1 && y0 <= y1))
		return ORCA_ERR_INVALID_ARGUMENT;
	w->has_bounds = has_bounds != 0;
	w->bounds_min_x = x0;
	w->bounds_min_y = y0;
	w->bounds_max_x = x1;
	w->bounds_max_y = y1;
	w->avoidance = (orca_avoidance)avoidance;
	w->obst_index = (int)index;
	w->obst_grid = index == ORCA_OBSTACLE_INDEX_GRID;
	return ORCA_OK;
}

static int read_quality(struct orca_world *w, bytes_in *in)
{
	if (bytes_get_u32(in) != w->slot_count || in->left != (size_t)w->slot_count * 8)
		return ORCA_ERR_INVALID_ARGUMENT;
	for (uint32_t s = 0; s < w->slot_count; ++s) {
		const float stuck = bytes_get_f32(in); /* seconds blocked, or below 0 the right of way left */
		const float blocked = bytes_get_f32(in); /* how far avoidance kept it from its aim, 0..1 */
		if (!isfinite(stuck) || !(blocked >= 0.0f && blocked <= 1.0f))
			return ORCA_ERR_INVALID_ARGUMENT;
		w->q_stuck[s] = stuck; /* as saved, dead slots too (a reused slot resets them) */
		w->q_blocked[s] = blocked;
	}
	return ORCA_OK;
}

/* After the obstacles: build the index the saved world had, numbered as it was. */
static int read_obst_index(struct orca_world *w, bytes_in *in)
{
	const uint8_t kind = bytes_get_u8(in);
	if (in->bad || kind > IO_INDEX_GRID)
		return ORCA_ERR_INVALID_ARGUMENT;
	if (kind == IO_INDEX_STALE) {
		w->obst_grid = false; /* the next step decides, as it would have */
		w->obst_built_version = w->obst_version - 1u;
		return in->left == 0 ? ORCA_OK : ORCA_ERR_INVALID_ARGUMENT;
	}
	if (kind == IO_INDEX_RVO2) {
		/* RVO2's tree, built when the world had stepped 0 times or the index is RVO2's by definition */
		if (in->left != 0 || w->obst_index == ORCA_OBSTACLE_INDEX_GRID)
			return ORCA_ERR_INVALID_ARGUMENT;
		w->obst_grid = false;
		const uint64_t steps = w->steps;
		w->steps = 0;
		const int rc = orca_obstacles_process(w);
		w->steps = steps;
		if (rc != ORCA_OK || w->obst_grid)
			return rc != ORCA_OK ? rc : ORCA_ERR_INVALID_ARGUMENT;
		w->obst_built_version = w->obst_version;
		return ORCA_OK;
	}
	const uint32_t vert_count = bytes_get_u32(in), free_count = bytes_get_u32(in);
	uint64_t used = 0;
	for (uint32_t k = 0; k < w->obst_live; ++k)
		used += w->obst[w->obst_order[k]].count;
	if (in->bad || vert_count > (1u << 26) || (uint64_t)free_count + used != vert_count ||
	    in->left != (size_t)vert_count * 4)
		return ORCA_ERR_INVALID_ARGUMENT;
	if (!orca_mem_reserve(w, (void **)&w->verts, &w->vert_cap, vert_count + 1, sizeof(obst_vertex)))
		return ORCA_ERR_NO_MEMORY;
	uint8_t *seen = orca_mem_alloc(w, vert_count + 1);
	if (!seen)
		return ORCA_ERR_NO_MEMORY;
	memset(seen, 0, vert_count + 1);
	/* an empty grid, then each obstacle in add order takes exactly its saved
	 * vertex numbers: they are handed to the insert as its free list */
	const uint32_t live = w->obst_live;
	w->obst_live = 0; /* the rebuild then only empties the grid */
	int rc = orca_obstacle_grid_rebuild(w);
	w->obst_live = live;
	w->vert_count = vert_count;
	for (uint32_t k = 0; k < w->obst_live && rc == ORCA_OK; ++k) {
		obstacle_slot *ob = &w->obst[w->obst_order[k]];
		uint32_t prev = ORCA_NONE;
		w->obst_vert_free = ORCA_NONE;
		for (uint32_t i = 0; i < ob->count; ++i) {
			const uint32_t v = bytes_get_u32(in);
			if (v >= vert_count || seen[v]) {
				rc = ORCA_ERR_INVALID_ARGUMENT;
				break;
			}
			seen[v] = 1;
			w->verts[v].next = ORCA_NONE;
			if (prev == ORCA_NONE)
				w->obst_vert_free = v;
			else
				w->verts[prev].next = v;
			prev = v;
		}
		if (rc == ORCA_OK)
			rc = orca_obstacle_grid_insert(w, w->obst_order[k], ob->vertices, ob->count, &ob->first_vert);
	}
	uint32_t prev = ORCA_NONE;
	w->obst_vert_free = ORCA_NONE;
	for (uint32_t i = 0; i < free_count && rc == ORCA_OK; ++i) {
		const uint32_t v = bytes_get_u32(in);
		if (v >= vert_count || seen[v]) {
			rc = ORCA_ERR_INVALID_ARGUMENT;
			break;
		}
		seen[v] = 1;
		w->verts[v].owner = ORCA_NONE;
		w->verts[v].next = ORCA_NONE;
		if (prev == ORCA_NONE)
			w->obst_vert_free = v;
		else
			w->verts[prev].next = v;
		prev = v;
	}
	orca_mem_free(w, seen, vert_count + 1);
	if (rc != ORCA_OK)
		return rc;
	w->obst_built_version = w->obst_version - 1u; /* the step sets the root, as after any change */
	return in->bad ? ORCA_ERR_INVALID_ARGUMENT : ORCA_OK;
}

int orca_world_load(orca_world *w, const void *buf, size_t size)
{
	if (!w || (!buf && size > 0))
		return ORCA_ERR_INVALID_ARGUMENT;
	if (w->slot_count != 0 || w->obst_slot_count != 0 || w->steps != 0)
		return ORCA_ERR_INVALID_ARGUMENT; /* only into a fresh world */
	bytes_in in = {buf, size, false};
	if (bytes_get_u32(&in) != IO_MAGIC || bytes_get_u32(&in) != IO_VERSION || bytes_get_u64(&in) != size)
		return ORCA_ERR_INVALID_ARGUMENT;
	/* what the definition set, for a load that fails */
	const bool def_bounds = w->has_bounds, def_grid = w->obst_grid;
	const float def_b[4] = {w->bounds_min_x, w->bounds_min_y, w->bounds_max_x, w->bounds_max_y};
	const orca_avoidance def_avoidance = w->avoidance;
	const int def_index = w->obst_index;
	const bool def_follow = w->q_follow_rule;
	w->q_follow_rule = false; /* a save without the section ran without the rule */
	bool got_agents = false, got_obstacles = false, got_settings = false, got_quality = false, got_index = false,
	     got_follow = false;
	int rc = ORCA_OK;
	while (rc == ORCA_OK && in.left > 0) {
		const uint32_t tag = bytes_get_u32(&in), len = bytes_get_u32(&in);
		if (in.bad || len > in.left) {
			rc = ORCA_ERR_INVALID_ARGUMENT;
			break;
		}
		bytes_in sec = {in.p, len, false};
		in.p += len;
		in.left -= len;
		if (tag == IO_SECTION_AGENTS && !got_agents) {
			got_agents = true;
			rc = read_agents(w, &sec);
		} else if (tag == IO_SECTION_OBSTACLES && !got_obstacles) {
			got_obstacles = true;
			rc = read_obstacles(w, &sec);
		} else if (tag == IO_SECTION_SETTINGS && !got_settings && !got_index) {
			got_settings = true;
			rc = read_settings(w, &sec);
		} else if (tag == IO_SECTION_QUALITY && got_agents && !got_quality) {
			got_quality = true;
			rc = read_quality(w, &sec);
		} else if (tag == IO_SECTION_OBST_INDEX && got_obstacles && !got_index) {
			got_index = true;
			rc = read_obst_index(w, &sec);
		} else if (tag == IO_SECTION_FOLLOW && !got_follow) {
			got_follow = true;
			const uint8_t on = bytes_get_u8(&sec);
			rc = on > 1 ? ORCA_ERR_INVALID_ARGUMENT : ORCA_OK;
			w->q_follow_rule = on == 1;
		} else {
			rc = ORCA_ERR_INVALID_ARGUMENT; /* unknown or repeated: cannot restore it exactly */
		}
		if (rc == ORCA_OK && (sec.bad || sec.left != 0))
			rc = ORCA_ERR_INVALID_ARGUMENT;
	}
	if (rc == ORCA_OK && (!got_agents || !got_obstacles))
		rc = ORCA_ERR_INVALID_ARGUMENT;
	if (rc == ORCA_OK && !got_index && w->obst_grid)
		rc = orca_obstacle_grid_rebuild(w); /* a save without the index section: numbered afresh */
	if (rc != ORCA_OK) {
		reset_world(w);
		w->has_bounds = def_bounds;
		w->bounds_min_x = def_b[0], w->bounds_min_y = def_b[1], w->bounds_max_x = def_b[2], w->bounds_max_y = def_b[3];
		w->avoidance = def_avoidance;
		w->q_follow_rule = def_follow;
		w->obst_index = def_index;
		w->obst_grid = def_grid;
		if (!def_grid)
			w->obst_root = ORCA_NONE;
		return rc;
	}
	w->query_tree_valid = false;
	w->qgrid.valid = false;
	return ORCA_OK;
}
