/* obstacles.h — the obstacles' private types (processed vertices, RVO2's
 * kd-tree nodes, the edge grid's cells) and the two obstacle indexes: RVO2's
 * kd-tree (obstacle_tree.c) and the edge grid (obstacle_grid.c). The public
 * obstacle API is obstacles.c. The index in use is the world's obst_index
 * state; a world saved and loaded (world_io.c) rebuilds the same index at
 * its next step, so it steps exactly as the saved one would have. */
#ifndef ORCA_OBSTACLES_H
#define ORCA_OBSTACLES_H

#include <stdbool.h>
#include <stdint.h>

#include "neighbor_list.h"
#include "vec.h"

struct orca_world;

/* One processed obstacle vertex (RVO2's Obstacle): an edge point -> next. */
typedef struct obst_vertex {
	vec2 point, unit_dir;
	uint32_t next, prev;
	uint32_t convex;
	uint32_t owner;  /* obstacle slot */
	uint32_t corner; /* its index in the polygon as given: (owner, corner) names an edge for good */
} obst_vertex;

typedef struct obst_node {
	uint32_t vertex;
	uint32_t left, right; /* ORCA_NONE = empty */
} obst_node;

typedef struct obstacle_slot {
	vec2 *vertices;
	uint32_t count;
	uint32_t gen;
	uint32_t first_vert; /* grid index: its first vertex in verts (edges follow .next) */
	bool alive;
} obstacle_slot;

/* An edge as the grid stores it: its end points inline, so a query streams
 * through a cell without visiting the vertex table. */
typedef struct obst_grid_edge {
	vec2 a, b;
	uint32_t vertex; /* the edge is vertex -> its next */
	uint32_t owner, corner;
} obst_grid_edge;

/* One cell of the obstacle edge grid (obstacle_grid.c): the edges that pass
 * through it, in no particular order. */
typedef struct obst_cell {
	int32_t cx, cy;
	uint32_t used; /* 0: empty slot of the hash table */
	uint32_t count, cap;
	obst_grid_edge *edges;
} obst_cell;

/* The grid's cells read by a step's queries, packed (obstacle_grid.c): a
 * dense array over the box of the used cells, row by row, each cell's edges
 * one run of `edges`. Dropped by any change to the grid and built again by
 * the first step whose obstacles did not change (a world that changes them
 * every step never pays for it); a query reads it while it is valid, else the
 * hash table. In a city of blocks the query's hottest loads were those of the
 * table's cells and of each cell's own edge array. */
typedef struct obst_pack {
	int32_t x0, y0;     /* the box's first cell */
	uint32_t nx, ny;    /* cells across and down */
	uint32_t *start;    /* nx * ny + 1: cell (x0 + i, y0 + j)'s edges are [start[j * nx + i], start[... + 1]) */
	obst_grid_edge *edges;
	uint32_t start_cap, edge_cap;
	bool valid;
	bool stale; /* the grid changed since the last packing */
} obst_pack;

/* obstacle_tree.c */
int orca_obstacles_process(struct orca_world *w);
uint32_t orca_obstacle_tree_query(const struct orca_world *w, vec2 position, float range_sq, nb_entry *out);

/* obstacle_grid.c */
int orca_obstacle_grid_insert(struct orca_world *w, uint32_t slot, const vec2 *v, uint32_t n, uint32_t *first);
void orca_obstacle_grid_remove(struct orca_world *w, uint32_t first, uint32_t n);
int orca_obstacle_grid_rebuild(struct orca_world *w);
uint32_t orca_obstacle_grid_query(const struct orca_world *w, vec2 position, float range_sq, nb_entry *out);
void orca_obstacle_grid_free(struct orca_world *w);
void orca_obstacle_grid_pack(struct orca_world *w); /* a speed-up only: never fails the step */

#endif /* ORCA_OBSTACLES_H */
