/* nav_tiles.c — navigation's view of the world's obstacles (a cache, diffed
 * against the world's at each update) and the dirty-tile queue: the tiles an
 * added or removed obstacle touches are rebuilt, a budget of them per update
 * (the mesh itself is navmesh.cpp's, over Recast/Detour). */
#include <stdlib.h>

#include "nav_internal.h"

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

/* The bytes of an obstacle's vertices (at least one vertex's). */
static size_t obstacle_bytes(const nav_obstacle *o)
{
	return (size_t)(o->count ? o->count : 1) * sizeof *o->vertices;
}

void nav_free_obstacles(const orca_nav *nav, nav_obstacle *obstacles, uint32_t count, uint32_t cap)
{
	for (uint32_t i = 0; i < count; ++i)
		nav_free(nav, obstacles[i].vertices, obstacle_bytes(&obstacles[i]));
	nav_free(nav, obstacles, (size_t)cap * sizeof *obstacles);
}

static int cache_obstacle(orca_nav *nav, orca_obstacle_id id, nav_obstacle *o)
{
	uint32_t n = 0;
	int rc = orca_obstacle_get(nav->world, id, NULL, 0, &n);
	if (rc != ORCA_OK)
		return rc;
	o->id = id;
	o->count = n;
	o->vertices = nav_alloc(nav, (size_t)(n ? n : 1) * sizeof *o->vertices);
	if (!o->vertices)
		return ORCA_ERR_NO_MEMORY;
	rc = orca_obstacle_get(nav->world, id, o->vertices, n, &n);
	if (rc != ORCA_OK) {
		nav_free(nav, o->vertices, obstacle_bytes(o));
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
int nav_sync_obstacles(orca_nav *nav)
{
	const uint32_t version = orca_world_obstacle_version(nav->world);
	if (version == nav->obstacle_version && !nav->obstacles_unseen)
		return ORCA_OK;
	const uint32_t n = orca_world_obstacle_ids(nav->world, NULL, 0);
	if (!nav_grow(nav, (void **)&nav->id_scratch, &nav->id_scratch_cap, n + 1, sizeof *nav->id_scratch))
		return ORCA_ERR_NO_MEMORY;
	orca_world_obstacle_ids(nav->world, nav->id_scratch, n);
	qsort(nav->id_scratch, n, sizeof *nav->id_scratch, cmp_id);
	nav_obstacle *merged = nav_alloc(nav, (size_t)(n ? n : 1) * sizeof *merged);
	if (!merged)
		return ORCA_ERR_NO_MEMORY;
	uint32_t i = 0, k = 0, m = 0;
	int rc = ORCA_OK;
	while (i < n || k < nav->obstacle_count) {
		if (k < nav->obstacle_count && (i == n || nav->obstacles[k].id < nav->id_scratch[i])) {
			mark_tiles(nav, nav->obstacles[k].lo, nav->obstacles[k].hi); /* removed */
			nav_free(nav, nav->obstacles[k].vertices, obstacle_bytes(&nav->obstacles[k]));
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
	nav_free(nav, nav->obstacles, (size_t)nav->obstacle_cap * sizeof *nav->obstacles);
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
bool nav_rebuild_tiles(orca_nav *nav, uint32_t budget)
{
	const uint32_t total = (uint32_t)(nav->tiles_x * nav->tiles_y);
	if (nav->tile_len == 0)
		return false;
	if (!nav_grow(nav, (void **)&nav->build_scratch, &nav->build_scratch_cap, nav->obstacle_count,
	              sizeof *nav->build_scratch))
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
