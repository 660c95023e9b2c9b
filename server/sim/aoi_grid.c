/* aoi_grid.c — the snapshots' area-of-interest grid: built once per tick by a
 * stable counting sort of the points by cell, so a box query visits one
 * contiguous run of items per grid row and then emits the matches in ascending
 * index order through a bitmap (no per-query sort). */
#include "aoi_grid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define POINTS_PER_CELL 8 /* about this many points per cell on average */
#define MAX_DIM 4096      /* cells per axis */

static bool grow_u32(uint32_t **p, size_t n) {
	uint32_t *q = realloc(*p, (n ? n : 1) * sizeof *q);
	if (!q) return false;
	*p = q;
	return true;
}

static bool grow_f32(float **p, size_t n) {
	float *q = realloc(*p, (n ? n : 1) * sizeof *q);
	if (!q) return false;
	*p = q;
	return true;
}

/* Monotone in v (so a point inside a box is in a cell between the box's corner
 * cells); NaN goes to cell 0, where no box test matches it. */
static uint32_t cell_coord(double v, double origin, double inv_cell, uint32_t dim) {
	double c = (v - origin) * inv_cell;
	if (!(c >= 1.0)) return 0;
	if (c >= (double)dim) return dim - 1;
	uint32_t i = (uint32_t)c;
	return i < dim ? i : dim - 1;
}

static void set_empty(aoi_grid *g) {
	g->count = 0;
	g->cols = g->rows = 1;
	g->min_x = g->min_y = 0;
	g->inv_cell = 1;
	if (g->cell_start) g->cell_start[0] = g->cell_start[1] = 0;
}

/* Origin and cell size from the finite points' bounding box. */
static void choose_cells(aoi_grid *g, const aoi_bounds *b, uint32_t n) {
	double lo_x = b->lo_x, lo_y = b->lo_y, hi_x = b->hi_x, hi_y = b->hi_y;
	if (!(lo_x <= hi_x)) lo_x = hi_x = 0;
	if (!(lo_y <= hi_y)) lo_y = hi_y = 0;
	double w = hi_x - lo_x, h = hi_y - lo_y;
	double cells = n / POINTS_PER_CELL > 1 ? (double)(n / POINTS_PER_CELL) : 1.0;
	double side;
	if (w > 0 && h > 0)
		side = sqrt(w * h / cells);
	else if (w > 0 || h > 0)
		side = (w > h ? w : h) / cells;
	else
		side = 1.0;
	/* at most MAX_DIM cells per axis, and a side that is a normal number */
	if (side < w / (MAX_DIM - 1)) side = w / (MAX_DIM - 1);
	if (side < h / (MAX_DIM - 1)) side = h / (MAX_DIM - 1);
	if (!(side > 1e-30)) side = 1.0;
	g->min_x = lo_x;
	g->min_y = lo_y;
	g->inv_cell = 1.0 / side;
	double cols = floor(w * g->inv_cell) + 1, rows = floor(h * g->inv_cell) + 1;
	g->cols = cols < MAX_DIM ? (uint32_t)cols : MAX_DIM;
	g->rows = rows < MAX_DIM ? (uint32_t)rows : MAX_DIM;
}

bool aoi_grid_build(aoi_grid *g, const float *x, const float *y, uint32_t n) {
	aoi_bounds b = aoi_bounds_empty();
	for (uint32_t i = 0; i < n; i++) aoi_bounds_add(&b, x[i], y[i]);
	return aoi_grid_build_in(g, x, y, n, &b);
}

bool aoi_grid_build_in(aoi_grid *g, const float *x, const float *y, uint32_t n, const aoi_bounds *b) {
	if (n > g->items_cap) {
		if (!grow_u32(&g->items, n) || !grow_u32(&g->cell_of, n) || !grow_f32(&g->item_x, n) ||
		    !grow_f32(&g->item_y, n)) {
			set_empty(g);
			return false;
		}
		g->items_cap = n;
	}
	choose_cells(g, b, n);
	uint32_t cells = g->cols * g->rows;
	if (cells + 1 > g->cell_start_cap) {
		if (!grow_u32(&g->cell_start, (size_t)cells + 1)) {
			g->cell_start_cap = 0;
			free(g->cell_start);
			g->cell_start = NULL;
			set_empty(g);
			return false;
		}
		g->cell_start_cap = cells + 1;
	}
	uint32_t *start = g->cell_start;
	memset(start, 0, ((size_t)cells + 1) * sizeof *start);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t c = cell_coord(y[i], g->min_y, g->inv_cell, g->rows) * g->cols +
		             cell_coord(x[i], g->min_x, g->inv_cell, g->cols);
		g->cell_of[i] = c;
		start[c + 1]++;
	}
	for (uint32_t c = 0; c < cells; c++) start[c + 1] += start[c];
	/* start[c] is cell c's first slot; placing in ascending i keeps each cell
	 * ascending and leaves start[c] at cell c's end, i.e. cell c+1's start. */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t slot = start[g->cell_of[i]]++;
		g->items[slot] = i;
		g->item_x[slot] = x[i];
		g->item_y[slot] = y[i];
	}
	memmove(start + 1, start, (size_t)cells * sizeof *start);
	start[0] = 0;
	g->count = n;
	return true;
}

uint32_t aoi_grid_mark_words(const aoi_grid *g) {
	return g->count / 64 + 1;
}

uint32_t aoi_grid_query(const aoi_grid *g, float min_x, float min_y, float max_x, float max_y, uint64_t *marks,
                        uint32_t *out) {
	if (g->count == 0 || !(min_x <= max_x) || !(min_y <= max_y)) return 0;
	uint32_t c0 = cell_coord(min_x, g->min_x, g->inv_cell, g->cols);
	uint32_t c1 = cell_coord(max_x, g->min_x, g->inv_cell, g->cols);
	uint32_t r0 = cell_coord(min_y, g->min_y, g->inv_cell, g->rows);
	uint32_t r1 = cell_coord(max_y, g->min_y, g->inv_cell, g->rows);
	uint32_t lo_word = UINT32_MAX, hi_word = 0;
	bool any = false;
	for (uint32_t r = r0; r <= r1; r++) {
		/* cells c0..c1 of row r are one contiguous run of items */
		uint32_t begin = g->cell_start[r * g->cols + c0], end = g->cell_start[r * g->cols + c1 + 1];
		for (uint32_t k = begin; k < end; k++) {
			float px = g->item_x[k], py = g->item_y[k];
			if (px >= min_x && px <= max_x && py >= min_y && py <= max_y) {
				uint32_t i = g->items[k], w = i >> 6;
				marks[w] |= (uint64_t)1 << (i & 63);
				if (w < lo_word) lo_word = w;
				if (w > hi_word) hi_word = w;
				any = true;
			}
		}
	}
	if (!any) return 0;
	uint32_t n = 0;
	for (uint32_t w = lo_word; w <= hi_word; w++) {
		uint64_t bits = marks[w];
		marks[w] = 0;
		while (bits) {
			out[n++] = (w << 6) | (uint32_t)__builtin_ctzll(bits);
			bits &= bits - 1;
		}
	}
	return n;
}

void aoi_grid_free(aoi_grid *g) {
	free(g->cell_start);
	free(g->items);
	free(g->item_x);
	free(g->item_y);
	free(g->cell_of);
	memset(g, 0, sizeof *g);
}
