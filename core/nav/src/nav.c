/* nav.c — navigation's lifecycle, memory, events, queries and stats. The
 * rest lives along DetourCrowd's seams (nav_internal.h says which file holds
 * what). Every allocation goes through the world's allocator (the world
 * outlives its navigation). */
#include "world_internal.h" /* the world's allocator: orca_mem_alloc, orca_mem_free, orca_mem_reserve */
#include "nav_internal.h"

/* ------------------------------------------------------------------ memory */

void *nav_alloc(const orca_nav *nav, size_t size)
{
	return orca_mem_alloc(nav->world, size);
}

void *nav_calloc(const orca_nav *nav, size_t count, size_t size)
{
	void *p = orca_mem_alloc(nav->world, count * size);
	if (p)
		memset(p, 0, count * size);
	return p;
}

void nav_free(const orca_nav *nav, void *p, size_t size)
{
	orca_mem_free(nav->world, p, size);
}

bool nav_grow(const orca_nav *nav, void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	return orca_mem_reserve(nav->world, p, cap, need, elem);
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

void nav_emit(orca_nav *nav, const nav_agent *a, orca_nav_event_kind kind, orca_vec2 point)
{
	if (!nav_grow(nav, (void **)&nav->events, &nav->event_cap, nav->event_count + 1, sizeof *nav->events))
		return; /* out of memory: the event is lost, navigation goes on */
	nav->events[nav->event_count++] = (orca_nav_event){a->id, kind, point, a->target};
}

const orca_nav_event *orca_nav_events(const orca_nav *nav, uint32_t *count)
{
	*count = nav->event_count;
	return nav->events;
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
	bool end_is_last;
	float off;
	orca_vec2 on_mesh;
	/* on a copy: asking must not move the corridor (that would change what comes next) */
	const int n = navmesh_corridor_peek_corners(nav->mesh, a->corridor, st.position, corners,
	                                            corner_capacity < INT32_MAX - 1 ? (int)corner_capacity : INT32_MAX - 1,
	                                            &end_is_last, &off, &on_mesh);
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
	out->paths_pending = queue_length(nav);
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
	bytes += (size_t)nav->crowd_cap * sizeof *nav->crowd_poly;
	for (int q = 0; q < NAV_RINGS; ++q)
		bytes += (size_t)nav->queue[q].cap * sizeof *nav->queue[q].ids;
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
	orca_nav init;
	memset(&init, 0, sizeof init);
	init.world = world;
	orca_nav *nav = nav_alloc(&init, sizeof *nav);
	if (!nav)
		return ORCA_ERR_NO_MEMORY;
	*nav = init;
	nav->def = *def;
	navmesh_params p = {def->bounds_min, def->bounds_max, def->agent_radius,
	                    def->cell_size > 0.0f ? def->cell_size : def->agent_radius / 3.0f, (int)def->tile_cells,
	                    def->max_nodes ? (int)def->max_nodes : 8192};
	int rc = navmesh_create(&p, &nav->mesh);
	if (rc != ORCA_OK) {
		nav_free(nav, nav, sizeof *nav);
		return rc;
	}
	rc = navmesh_set_workers(nav->mesh, orca_world_worker_count(world));
	if (rc != ORCA_OK) {
		navmesh_destroy(nav->mesh);
		nav_free(nav, nav, sizeof *nav);
		return rc;
	}
	navmesh_tile_grid(nav->mesh, &nav->tiles_x, &nav->tiles_y);
	const uint32_t total = (uint32_t)(nav->tiles_x * nav->tiles_y);
	nav->tile_queue = nav_alloc(nav, total * sizeof *nav->tile_queue);
	nav->tile_dirty = nav_calloc(nav, total, 1);
	if (!nav->tile_queue || !nav->tile_dirty) {
		orca_nav_destroy(nav);
		return ORCA_ERR_NO_MEMORY;
	}
	nav->obstacles_unseen = true; /* the first sync */
	rc = nav_sync_obstacles(nav);
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
	nav_rebuild_tiles(nav, 0);
	*out = nav;
	return ORCA_OK;
}

void orca_nav_destroy(orca_nav *nav)
{
	if (!nav)
		return;
	for (uint32_t i = 0; i < nav->agent_count; ++i)
		navmesh_corridor_destroy(nav->agents[i].corridor);
	const uint32_t total = (uint32_t)(nav->tiles_x * nav->tiles_y);
	navmesh_destroy(nav->mesh);
	nav_free_obstacles(nav, nav->obstacles, nav->obstacle_count, nav->obstacle_cap);
	nav_free(nav, nav->agents, (size_t)nav->agent_cap * sizeof *nav->agents);
	nav_free(nav, nav->due, (size_t)nav->due_cap * sizeof *nav->due);
	nav_free(nav, nav->crowd_poly, (size_t)nav->crowd_cap * sizeof *nav->crowd_poly);
	nav_free(nav, nav->index_of_slot, (size_t)nav->slot_cap * sizeof *nav->index_of_slot);
	nav_free(nav, nav->done_hint, nav->hint_cap);
	nav_free(nav, nav->phase_hint, nav->hint_cap);
	for (int q = 0; q < NAV_RINGS; ++q)
		nav_free(nav, nav->queue[q].ids, (size_t)nav->queue[q].cap * sizeof *nav->queue[q].ids);
	nav_free(nav, nav->id_scratch, (size_t)nav->id_scratch_cap * sizeof *nav->id_scratch);
	nav_free(nav, nav->build_scratch, (size_t)nav->build_scratch_cap * sizeof *nav->build_scratch);
	nav_free(nav, nav->tile_queue, total * sizeof *nav->tile_queue);
	nav_free(nav, nav->tile_dirty, total);
	nav_free(nav, nav->events, (size_t)nav->event_cap * sizeof *nav->events);
	nav_free(nav, nav->visits, (size_t)nav->visit_cap * sizeof *nav->visits);
	nav_free(nav, nav->visited, nav->visited_cap);
	for (uint32_t k = 0; k < nav->way_list_count; ++k)
		nav_free(nav, nav->way_lists[k].items, (size_t)nav->way_lists[k].cap * sizeof *nav->way_lists[k].items);
	nav_free(nav, nav->way_lists, (size_t)nav->way_list_count * sizeof *nav->way_lists);
	nav_free(nav, nav->found, (size_t)nav->found_cap * sizeof *nav->found);
	nav_free(nav, nav->found_paths, (size_t)nav->found_cap * nav->def.max_path * sizeof *nav->found_paths);
	nav_free(nav, nav, sizeof *nav);
}
