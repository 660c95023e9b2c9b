/* navmesh.h — the private C face of the Recast/Detour shim (navmesh.cpp): a
 * tiled navigation mesh of the walkable world (bounds minus obstacles,
 * inflated by one agent radius), nearest-point and path queries, and path
 * corridors (Detour's dtPathCorridor). Only navigation (nav_internal.h) includes this. All 2-D:
 * world (x, y) is Detour's (x, 0, y). */
#ifndef CROWD_NAVMESH_H
#define CROWD_NAVMESH_H

#include <stdbool.h>
#include <stdint.h>

#include "orca/orca.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct navmesh navmesh;
typedef struct navmesh_corridor navmesh_corridor;

typedef struct navmesh_params {
	orca_vec2 bounds_min, bounds_max;
	float radius;        /* obstacles and bounds are inflated by this */
	float cell_size;     /* voxel size */
	int tile_cells;      /* tile edge in cells (raised so the world fits 4,096 tiles) */
	int max_nodes;       /* A* node pool of the path query */
} navmesh_params;

/* An obstacle as the tile builder sees it. */
typedef struct navmesh_obstacle {
	const orca_vec2 *vertices;
	uint32_t count;
} navmesh_obstacle;

int navmesh_create(const navmesh_params *p, navmesh **out);
void navmesh_destroy(navmesh *m);

/* Tiles per axis and the world rectangle of one tile (without its border). */
void navmesh_tile_grid(const navmesh *m, int *tiles_x, int *tiles_y);
/* Tiles whose build reads the rectangle [lo, hi] (tile plus border); clamped. */
void navmesh_tiles_touching(const navmesh *m, orca_vec2 lo, orca_vec2 hi, int *x0, int *y0, int *x1, int *y1);
/* The rectangle a tile's build reads (tile plus border). */
void navmesh_tile_read_rect(const navmesh *m, int tx, int ty, orca_vec2 *lo, orca_vec2 *hi);
/* Rebuild one tile from these obstacles (those overlapping its read rect). */
int navmesh_build_tile(navmesh *m, int tx, int ty, const navmesh_obstacle *obstacles, uint32_t count);
/* Label connected components after tiles changed (for unreachable answers);
 * every change of tiles is followed by this (navmesh_poly_count's count too). */
void navmesh_update_components(navmesh *m);
/* Polygons in the mesh as of the last navmesh_update_components, and bytes
 * held by the mesh and query. */
uint32_t navmesh_poly_count(const navmesh *m);
size_t navmesh_memory(const navmesh *m);

/* Nearest walkable point to p within the mesh (searching wider and wider);
 * false if the mesh is empty. */
bool navmesh_nearest(const navmesh *m, orca_vec2 p, orca_vec2 *out);

/* Queries for workers 0 .. workers - 1 of a parallel update (Detour's query
 * is not thread-safe: one each). Functions that take `worker` use its query
 * and scratch; any other function is worker 0's and runs alone. */
int navmesh_set_workers(navmesh *m, int workers);
/* navmesh_nearest on a worker's query. */
bool navmesh_nearest_on(const navmesh *m, int worker, orca_vec2 p, orca_vec2 *out);
/* p lies in (or on the edge of) a polygon of the mesh; the same answer on
 * every CPU (no Detour arithmetic that arm64 fuses). */
bool navmesh_on_mesh(const navmesh *m, int worker, orca_vec2 p);

typedef enum navmesh_plan_result {
	NAVMESH_PLAN_FAILED = 0,      /* no polygon near the start: the mesh is empty there */
	NAVMESH_PLAN_COMPLETE = 1,    /* the corridor ends at the target's polygon */
	NAVMESH_PLAN_FAR = 2,         /* partial because a limit was hit: walk it and plan again */
	NAVMESH_PLAN_UNREACHABLE = 3, /* the target's polygon is in another component */
} navmesh_plan_result;

navmesh_corridor *navmesh_corridor_create(int max_path);
void navmesh_corridor_destroy(navmesh_corridor *c);
/* Plan from pos to target into c; *goal gets where the corridor ends (the
 * target itself, its nearest walkable point, or the nearest reachable point). */
navmesh_plan_result navmesh_plan(navmesh *m, navmesh_corridor *c, orca_vec2 pos, orca_vec2 target, bool crowded,
                                 orca_vec2 *goal);
/* navmesh_plan in two halves, so that many agents' queries can run on the
 * workers of a parallel update and be applied in agent order afterwards.
 * find: the queries on `worker`'s query, into path (max_path polygons) and
 * *a (which keeps pointing at path); the same answer on any worker and
 * after any earlier query. apply: a's corridor into c (c's capacity is
 * max_path). */
typedef struct navmesh_plan_answer {
	navmesh_plan_result result;
	uint32_t start;       /* the start polygon (0: none near pos) */
	float start_pt[3];    /* pos on it, as Detour keeps it */
	float end_pt[3];      /* where the corridor ends (count > 0) */
	const uint32_t *path; /* the corridor's polygons, count of them (0: just the start) */
	int count;
	orca_vec2 goal;       /* navmesh_plan's *goal (not for FAILED) */
} navmesh_plan_answer;
navmesh_plan_result navmesh_plan_find(const navmesh *m, int worker, orca_vec2 pos, orca_vec2 target, bool crowded,
                                      uint32_t *path, int max_path, navmesh_plan_answer *a);
void navmesh_plan_apply(navmesh_corridor *c, const navmesh_plan_answer *a);
/* Move the corridor's start to pos and string-pull up to max corners;
 * with mend_loop, first cut short a corridor that runs back on itself
 * (navmesh.cpp, skip_loop). *off gets how far pos is from the corridor (0 when on it) and *on_mesh the
 * corridor's own position (pos moved onto the mesh); *end_is_last is
 * true when the last corner returned is the corridor's end. Returns the corner
 * count, or -1 when the corridor is empty. */
int navmesh_corridor_corners(navmesh *m, int worker, navmesh_corridor *c, orca_vec2 pos, bool optimize, bool mend_loop,
                             orca_vec2 *corners, int max, bool *end_is_last, float *off, orca_vec2 *on_mesh);
/* False when a polygon of the corridor was removed (its tile was rebuilt). */
bool navmesh_corridor_valid(const navmesh *m, const navmesh_corridor *c);
int navmesh_corridor_length(const navmesh_corridor *c);
/* Vertices of corridor polygon i (up to max); returns the vertex count. */
int navmesh_corridor_polygon(const navmesh *m, const navmesh_corridor *c, int i, orca_vec2 *vertices, int max);
size_t navmesh_corridor_memory(const navmesh_corridor *c);
/* As navmesh_corridor_corners (no shortcut) on a copy: the corridor itself
 * does not move (a query must not change what comes next). Up to max
 * corners, any number (steering's own corners are at most 7). */
int navmesh_corridor_peek_corners(navmesh *m, const navmesh_corridor *c, orca_vec2 pos, orca_vec2 *corners, int max,
                                  bool *end_is_last, float *off, orca_vec2 *on_mesh);

/* The polygon the corridor starts in (0: none). */
uint32_t navmesh_corridor_first(const navmesh_corridor *c);
/* `marks` more crowded marks on a polygon: until navmesh_crowd_clear, path
 * queries with `crowded` set cost its length times 1 (1 mark), 2 (2), 4 (3
 * or 4) or 8 (more); others do not see marks.
 * Marks change the mesh that queries read: made and cleared alone. */
void navmesh_crowd_mark(navmesh *m, uint32_t ref, uint32_t marks);
void navmesh_crowd_clear(navmesh *m);

/* Save and restore (nav_io.c's orca_nav_save/orca_nav_load). */
uint32_t navmesh_tile_count(const navmesh *m);
/* Positions (y * tiles_x + x) of the tiles present, in the order they were
 * last added (that order decides the order of every polygon's links, and so
 * ties in path search); returns how many. positions holds tile_count. */
uint32_t navmesh_tiles_in_add_order(const navmesh *m, uint32_t *positions);
/* The tile at a position: its ref (0: none) and its bytes. */
uint32_t navmesh_tile_ref(const navmesh *m, uint32_t position, const uint8_t **data, uint32_t *size);
/* Saved tile bytes that Detour can take for this position (sizes and indices checked). */
bool navmesh_tile_data_valid(const navmesh *m, uint32_t position, const uint8_t *data, uint32_t size);
typedef struct navmesh_saved_tile {
	uint32_t position, ref;
	const uint8_t *data; /* NULL: the tile this mesh built for the position */
	uint32_t size;
} navmesh_saved_tile;
/* Replace every tile by these, added in this order at these refs. */
int navmesh_restore_tiles(navmesh *m, const navmesh_saved_tile *tiles, uint32_t count);
/* A corridor's position, target (3-D, as Detour keeps them) and polygons. */
int navmesh_corridor_state(const navmesh_corridor *c, float pos[3], float target[3], const uint32_t **path);
/* Into a corridor that was never planned. */
int navmesh_corridor_restore(navmesh_corridor *c, const float pos[3], const float target[3], const uint32_t *path,
                             int n);

#ifdef __cplusplus
}
#endif

#endif /* CROWD_NAVMESH_H */
