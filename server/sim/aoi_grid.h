/* aoi_grid.h — area-of-interest index for snapshots: a uniform grid over the
 * points of one tick (counting sort by cell, stable), answering "which points
 * lie in [min, max]" as ascending point indices without scanning every point. */
#ifndef CROWD_SERVER_AOI_GRID_H
#define CROWD_SERVER_AOI_GRID_H

#include <stdbool.h>
#include <stdint.h>

/** Zero-initialise; rebuild with aoi_grid_build, free with aoi_grid_free. */
typedef struct aoi_grid {
	double min_x, min_y;      /* grid origin: the smallest finite coordinates */
	double inv_cell;          /* cells per unit */
	uint32_t cols, rows;
	uint32_t count;           /* points indexed */
	uint32_t *cell_start;     /* cols * rows + 1 offsets into items */
	uint32_t cell_start_cap;
	uint32_t *items;          /* point indices, by cell, ascending within a cell */
	float *item_x, *item_y;   /* the points' coordinates, in items order */
	uint32_t *cell_of;        /* scratch: each point's cell */
	uint32_t items_cap;
} aoi_grid;

/** Index n points (x[i], y[i]); point i is reported as index i. Returns false
 * when out of memory (the grid is then empty). Non-finite coordinates are
 * allowed: such a point is only found by a box whose bounds contain it. */
bool aoi_grid_build(aoi_grid *g, const float *x, const float *y, uint32_t n);

/** Words of the `marks` scratch aoi_grid_query needs (one bit per point). */
uint32_t aoi_grid_mark_words(const aoi_grid *g);

/** Write to `out` (room for g->count) the indices of the points with
 * min_x <= x <= max_x and min_y <= y <= max_y, ascending; return how many.
 * `marks` must hold aoi_grid_mark_words(g) zero words, and is left zeroed. */
uint32_t aoi_grid_query(const aoi_grid *g, float min_x, float min_y, float max_x, float max_y, uint64_t *marks,
                        uint32_t *out);

void aoi_grid_free(aoi_grid *g);

#endif
