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

/** The bounding box of a set of points' finite coordinates (each axis on its
 * own), gathered while the points are written (the world table's rows, in
 * chunks on two threads) so that the build does not read them once more. */
typedef struct aoi_bounds {
	float lo_x, lo_y, hi_x, hi_y; /* lo > hi: no finite coordinate on that axis */
} aoi_bounds;

static inline aoi_bounds aoi_bounds_empty(void) {
	return (aoi_bounds){__builtin_inff(), __builtin_inff(), -__builtin_inff(), -__builtin_inff()};
}

/* Only finite coordinates count, as in aoi_grid_build (tested only for a
 * value that would move a bound: most do not). */
static inline void aoi_bounds_add(aoi_bounds *b, float x, float y) {
	if (x < b->lo_x && __builtin_isfinite(x)) b->lo_x = x;
	if (x > b->hi_x && __builtin_isfinite(x)) b->hi_x = x;
	if (y < b->lo_y && __builtin_isfinite(y)) b->lo_y = y;
	if (y > b->hi_y && __builtin_isfinite(y)) b->hi_y = y;
}

static inline void aoi_bounds_merge(aoi_bounds *b, const aoi_bounds *other) {
	if (other->lo_x < b->lo_x) b->lo_x = other->lo_x;
	if (other->hi_x > b->hi_x) b->hi_x = other->hi_x;
	if (other->lo_y < b->lo_y) b->lo_y = other->lo_y;
	if (other->hi_y > b->hi_y) b->hi_y = other->hi_y;
}

/** aoi_grid_build with the points' bounds already known (`b`: exactly what
 * aoi_bounds_add over every point gives); the same grid. */
bool aoi_grid_build_in(aoi_grid *g, const float *x, const float *y, uint32_t n, const aoi_bounds *b);

/** Words of the `marks` scratch aoi_grid_query needs (one bit per point). */
uint32_t aoi_grid_mark_words(const aoi_grid *g);

/** Write to `out` (room for g->count) the indices of the points with
 * min_x <= x <= max_x and min_y <= y <= max_y, ascending; return how many.
 * `marks` must hold aoi_grid_mark_words(g) zero words, and is left zeroed. */
uint32_t aoi_grid_query(const aoi_grid *g, float min_x, float min_y, float max_x, float max_y, uint64_t *marks,
                        uint32_t *out);

void aoi_grid_free(aoi_grid *g);

#endif
