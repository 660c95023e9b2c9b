/* query_grid.h — box queries' grid of the live agents (query_grid.c), for
 * orca_query_rect/_radius when the kd-tree does not hold the agents as they
 * stand. It reads the slots' positions it is given and knows nothing else of
 * the world. */
#ifndef ORCA_QUERY_GRID_H
#define ORCA_QUERY_GRID_H

#include <stdbool.h>
#include <stdint.h>

#include "memory.h"
#include "pool.h"
#include "vec.h"

/* A box query's answer, one agent slot at a time. */
typedef void (*orca_visit_fn)(void *ctx, uint32_t slot);

typedef struct orca_query_grid {
	bool valid;       /* built since the last move, add or removal */
	uint32_t *start;  /* per cell its first entry; cells + 1 */
	uint32_t *slots;  /* live slots by cell, ascending within a cell */
	uint32_t start_cap, slots_cap, w, h;
	float ox, oy, inv, last_x, last_y;
	uint32_t *counts; /* the parallel build's per part and cell counts, then cursors: 2 * parts * cells */
	uint32_t counts_cap;
} orca_query_grid;

/* Build from the slots [0, slot_count) that are alive, at (px, py), unless
 * valid; false: no memory (then the caller scans). In `parts` runs of slots
 * on the pool (NULL or parts <= 1: on the caller alone); the grid is the
 * same for any parts. Never from inside a pool job. */
bool orca_query_grid_build(orca_query_grid *g, orca_heap *heap, orca_pool *pool, uint32_t parts, const uint8_t *alive,
                           const float *px, const float *py, uint32_t slot_count, uint32_t live_count);
/* Every slot with lo <= (px, py) <= hi, in no particular order. */
void orca_query_grid_visit(const orca_query_grid *g, const float *px, const float *py, vec2 lo, vec2 hi,
                           orca_visit_fn fn, void *ctx);
void orca_query_grid_free(orca_query_grid *g, orca_heap *heap);

#endif /* ORCA_QUERY_GRID_H */
