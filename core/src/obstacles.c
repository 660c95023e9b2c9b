/* obstacles.c — polygon obstacles through the public API: validated vertex
 * lists kept as given, slot + generation ids, and a version that tells the
 * next step that obstacles changed. Once the world uses the edge grid, each
 * add and remove updates it here, in proportion to the polygon. */
#include <string.h>

#include "obstacles.h"
#include "world_internal.h"

static int lookup(const struct orca_world *w, orca_obstacle_id id, uint32_t *slot)
{
	if (!w)
		return ORCA_ERR_INVALID_ARGUMENT;
	const uint32_t index = id & ((1u << ORCA_ID_INDEX_BITS) - 1u);
	const uint32_t g = id >> ORCA_ID_INDEX_BITS;
	if (index == 0 || index - 1 >= w->obst_slot_count)
		return ORCA_ERR_UNKNOWN_ID;
	const uint32_t s = index - 1;
	if (g < w->obst[s].gen)
		return ORCA_ERR_STALE_ID;
	if (g == w->obst[s].gen && w->obst[s].alive) {
		*slot = s;
		return ORCA_OK;
	}
	return ORCA_ERR_UNKNOWN_ID;
}

int orca_obstacle_add(orca_world *w, const orca_vec2 *vertices, uint32_t count, orca_obstacle_id *out)
{
	if (!w || (!vertices && count > 0))
		return ORCA_ERR_INVALID_ARGUMENT;
	orca_polygon_issue issue;
	if (count > (1u << 24) || orca_polygon_check(vertices, count, &issue) != ORCA_OK || issue.clockwise)
		return ORCA_ERR_BAD_POLYGON;
	uint32_t s;
	if (w->obst_free_head != ORCA_NONE) {
		s = w->obst_free_head;
	} else {
		if (w->obst_slot_count >= ORCA_MAX_AGENTS + 1u)
			return ORCA_ERR_CAPACITY;
		s = w->obst_slot_count;
		if (s + 1 > w->obst_slot_cap) {
			const uint32_t oc = w->obst_slot_cap;
			uint32_t c1 = oc, c2 = oc;
			if (!orca_mem_reserve(w, (void **)&w->obst, &c1, s + 1, sizeof(obstacle_slot)) ||
			    !orca_mem_reserve(w, (void **)&w->obst_free_next, &c2, c1, sizeof(uint32_t)))
				return ORCA_ERR_NO_MEMORY;
			w->obst_slot_cap = c1;
		}
	}
	if (!orca_mem_reserve(w, (void **)&w->obst_order, &w->obst_order_cap, w->obst_live + 1, sizeof(uint32_t)))
		return ORCA_ERR_NO_MEMORY;
	vec2 *copy = orca_mem_alloc(w, sizeof(vec2) * count);
	if (!copy)
		return ORCA_ERR_NO_MEMORY;
	memcpy(copy, vertices, sizeof(vec2) * count);
	uint32_t first = ORCA_NONE;
	if (w->obst_grid) {
		const int rc = orca_obstacle_grid_insert(w, s, copy, count, &first);
		if (rc != ORCA_OK) {
			orca_mem_free(w, copy, sizeof(vec2) * count);
			return rc;
		}
	}
	if (s == w->obst_free_head) {
		w->obst_free_head = w->obst_free_next[s];
	} else {
		w->obst[s].gen = 0;
		w->obst_slot_count++;
	}
	w->obst[s].vertices = copy;
	w->obst[s].count = count;
	w->obst[s].first_vert = first;
	w->obst[s].alive = true;
	w->obst_order[w->obst_live++] = s; /* RVO2 keeps obstacles in the order added */
	w->obst_version++;
	if (out)
		*out = (s + 1u) | (w->obst[s].gen << ORCA_ID_INDEX_BITS);
	return ORCA_OK;
}

int orca_obstacle_remove(orca_world *w, orca_obstacle_id id)
{
	uint32_t s;
	const int rc = lookup(w, id, &s);
	if (rc != ORCA_OK)
		return rc;
	obstacle_slot *o = &w->obst[s];
	if (w->obst_grid)
		orca_obstacle_grid_remove(w, o->first_vert, o->count);
	orca_mem_free(w, o->vertices, sizeof(vec2) * o->count);
	o->vertices = NULL;
	o->count = 0;
	o->alive = false;
	o->gen++;
	uint32_t k = 0;
	for (uint32_t i = 0; i < w->obst_live; ++i)
		if (w->obst_order[i] != s)
			w->obst_order[k++] = w->obst_order[i];
	w->obst_live = k;
	if (o->gen < ORCA_GEN_LIMIT) {
		w->obst_free_next[s] = w->obst_free_head;
		w->obst_free_head = s;
	}
	w->obst_version++;
	return ORCA_OK;
}

uint32_t orca_world_obstacle_count(const orca_world *w) { return w ? w->obst_live : 0; }

uint32_t orca_world_obstacle_ids(const orca_world *w, orca_obstacle_id *ids, uint32_t capacity)
{
	if (!w)
		return 0;
	uint32_t k = 0;
	for (uint32_t s = 0; s < w->obst_slot_count; ++s) {
		if (!w->obst[s].alive)
			continue;
		if (ids && k < capacity)
			ids[k] = (s + 1u) | (w->obst[s].gen << ORCA_ID_INDEX_BITS);
		++k;
	}
	return k;
}

int orca_obstacle_get(const orca_world *w, orca_obstacle_id id, orca_vec2 *vertices, uint32_t capacity,
                      uint32_t *count)
{
	uint32_t s;
	const int rc = lookup(w, id, &s);
	if (rc != ORCA_OK)
		return rc;
	const obstacle_slot *o = &w->obst[s];
	if (vertices) {
		const uint32_t n = o->count < capacity ? o->count : capacity;
		memcpy(vertices, o->vertices, sizeof(vec2) * n);
	}
	if (count)
		*count = o->count;
	return ORCA_OK;
}

uint32_t orca_world_obstacle_version(const orca_world *w) { return w ? w->obst_version : 0; }
