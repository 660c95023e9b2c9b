/* query_grid.c — box and radius queries (orca_query_rect/_radius) when there
 * is no kd-tree to ask: in quality mode a step orders agents by its own grid
 * and builds no tree, and any add or removal outdates the tree until the next
 * step. Navigation asks a radius query for many agents every tick, so a scan
 * of every slot per query made its update quadratic in the crowd.
 *
 * A uniform grid of the live agents at their current positions, about two
 * agents per cell, built by a counting sort (in parallel on the world's pool:
 * navigation's update builds it every tick) on the first query after a change
 * and kept until the next one. A query visits the cells its box touches and
 * tests each agent exactly as the scan does, so it finds the same agents; the
 * callers sort what they find by id, so the visiting order does not matter. */
#include <math.h>
#include <string.h>

#include "query_grid.h"

#define QGRID_MAX_SIDE 2048u
#define QGRID_MAX_PARTS 8u   /* each part reads every part's counts (below) */
#define QGRID_MIN_PART 4096u /* slots per part at least: fewer are not worth a pool job */

/* A build in parts, three pool jobs (bounds, counts, placing): part k holds
 * the slots [k * slot_count / parts, (k + 1) * slot_count / parts). Each part
 * counts its slots per cell in a row of its own; then each part runs over
 * every part's counts, cell by cell, to find its own cursors (a cell's
 * entries: the parts before it first) and places its slots in ascending
 * order; so every cell holds its slots in ascending order, exactly as one
 * counting sort over all slots places them, for any number of parts. */
typedef struct grid_job {
	orca_query_grid *g;
	const uint8_t *alive;
	const float *px, *py;
	uint32_t slot_count, parts, cells;
	uint32_t *cursors; /* parts * cells, after the counts */
	float lo_x[QGRID_MAX_PARTS], lo_y[QGRID_MAX_PARTS], hi_x[QGRID_MAX_PARTS], hi_y[QGRID_MAX_PARTS];
} grid_job;

static uint32_t part_begin(const grid_job *j, uint32_t k)
{
	return (uint32_t)((uint64_t)j->slot_count * k / j->parts);
}

static uint32_t cell_of_slot(const orca_query_grid *g, const float *px, const float *py, uint32_t s)
{
	return orca_cell_of(py[s], g->oy, g->inv, g->last_y) * g->w + orca_cell_of(px[s], g->ox, g->inv, g->last_x);
}

/* Each part's bounds, with the comparisons of one pass over all slots: a tie
 * keeps the first (-0 and 0 compare equal), and the parts are merged in
 * order, so the merged bounds are that pass's bits. */
static void bounds_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	(void)worker;
	grid_job *j = ctx;
	for (uint32_t k = begin; k < end; ++k) {
		float min_x = INFINITY, min_y = INFINITY, max_x = -INFINITY, max_y = -INFINITY;
		for (uint32_t s = part_begin(j, k), e = part_begin(j, k + 1u); s < e; ++s) {
			if (!j->alive[s])
				continue;
			const float x = j->px[s], y = j->py[s];
			if (x < min_x) min_x = x;
			if (x > max_x) max_x = x;
			if (y < min_y) min_y = y;
			if (y > max_y) max_y = y;
		}
		j->lo_x[k] = min_x;
		j->lo_y[k] = min_y;
		j->hi_x[k] = max_x;
		j->hi_y[k] = max_y;
	}
}

static void count_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	(void)worker;
	grid_job *j = ctx;
	for (uint32_t k = begin; k < end; ++k) {
		uint32_t *row = j->g->counts + (size_t)k * j->cells;
		memset(row, 0, (size_t)j->cells * sizeof *row);
		for (uint32_t s = part_begin(j, k), e = part_begin(j, k + 1u); s < e; ++s)
			if (j->alive[s])
				row[cell_of_slot(j->g, j->px, j->py, s)]++;
	}
}

static void place_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	(void)worker;
	grid_job *j = ctx;
	const uint32_t *counts = j->g->counts;
	for (uint32_t k = begin; k < end; ++k) {
		uint32_t *cursor = j->cursors + (size_t)k * j->cells;
		uint32_t run = 0;
		for (uint32_t c = 0; c < j->cells; ++c) {
			if (k == 0)
				j->g->start[c] = run;
			uint32_t before = 0, all = 0;
			for (uint32_t q = 0; q < j->parts; ++q) {
				const uint32_t n = counts[(size_t)q * j->cells + c];
				before += q < k ? n : 0;
				all += n;
			}
			cursor[c] = run + before;
			run += all;
		}
		if (k == 0)
			j->g->start[j->cells] = run;
		for (uint32_t s = part_begin(j, k), e = part_begin(j, k + 1u); s < e; ++s)
			if (j->alive[s])
				j->g->slots[cursor[cell_of_slot(j->g, j->px, j->py, s)]++] = s;
	}
}

/* One part: count, sum and place in one pass each, in start itself (the
 * parts' way needs a row of counts and one of cursors per part). */
static void build_whole(grid_job *j)
{
	orca_query_grid *g = j->g;
	uint32_t *start = g->start;
	memset(start, 0, ((size_t)j->cells + 1u) * sizeof(uint32_t));
	for (uint32_t s = 0; s < j->slot_count; ++s)
		if (j->alive[s])
			start[cell_of_slot(g, j->px, j->py, s) + 1u]++;
	for (uint32_t c = 0; c < j->cells; ++c)
		start[c + 1u] += start[c];
	/* place with start[c] as cell c's cursor; it ends at cell c + 1's start */
	for (uint32_t s = 0; s < j->slot_count; ++s)
		if (j->alive[s])
			g->slots[start[cell_of_slot(g, j->px, j->py, s)]++] = s;
	for (uint32_t c = j->cells; c > 0; --c)
		start[c] = start[c - 1u];
	start[0] = 0;
}

static void run(orca_pool *pool, uint32_t parts, orca_task_fn fn, grid_job *j, uint32_t count)
{
	if (pool && parts > 1u)
		orca_pool_run(pool, fn, j, count, 1);
	else
		fn(j, 0, count, 0);
}

bool orca_query_grid_build(orca_query_grid *g, orca_heap *heap, orca_pool *pool, uint32_t parts, const uint8_t *alive,
                           const float *px, const float *py, uint32_t slot_count, uint32_t live_count)
{
	if (g->valid)
		return true;
	grid_job j = {.g = g, .alive = alive, .px = px, .py = py, .slot_count = slot_count};
	if (!pool || parts < 1u)
		parts = 1u;
	if (parts > QGRID_MAX_PARTS)
		parts = QGRID_MAX_PARTS;
	if (parts > slot_count / QGRID_MIN_PART)
		parts = slot_count / QGRID_MIN_PART > 1u ? slot_count / QGRID_MIN_PART : 1u;
	j.parts = parts;
	run(pool, parts, bounds_task, &j, parts);
	float min_x = INFINITY, min_y = INFINITY, max_x = -INFINITY, max_y = -INFINITY;
	for (uint32_t k = 0; k < parts; ++k) {
		if (j.lo_x[k] < min_x) min_x = j.lo_x[k];
		if (j.hi_x[k] > max_x) max_x = j.hi_x[k];
		if (j.lo_y[k] < min_y) min_y = j.lo_y[k];
		if (j.hi_y[k] > max_y) max_y = j.hi_y[k];
	}
	if (!(min_x <= max_x) || !(min_y <= max_y)) /* no agent with a finite position */
		min_x = max_x = min_y = max_y = 0.0f;
	/* side cells across the larger extent: about live/2 cells in a square */
	uint32_t side = (uint32_t)sqrtf((float)(live_count / 2u + 1u)) + 1u;
	if (side > QGRID_MAX_SIDE)
		side = QGRID_MAX_SIDE;
	const float extent = maxf(max_x - min_x, max_y - min_y);
	const float cell = extent > 0.0f && extent < INFINITY ? extent / (float)side : 1.0f;
	const float inv = 1.0f / cell;
	uint32_t gw = (uint32_t)minf((max_x - min_x) * inv, (float)side) + 1u;
	uint32_t gh = (uint32_t)minf((max_y - min_y) * inv, (float)side) + 1u;
	const uint32_t cells = gw * gh;
	j.cells = cells;
	if (!orca_heap_reserve(heap, (void **)&g->start, &g->start_cap, cells + 1u, sizeof(uint32_t)) ||
	    !orca_heap_reserve(heap, (void **)&g->slots, &g->slots_cap, live_count + 1u, sizeof(uint32_t)) ||
	    (parts > 1u &&
	     !orca_heap_reserve(heap, (void **)&g->counts, &g->counts_cap, 2u * parts * cells, sizeof(uint32_t))))
		return false;
	g->w = gw;
	g->h = gh;
	g->ox = min_x;
	g->oy = min_y;
	g->inv = inv;
	g->last_x = (float)(gw - 1u);
	g->last_y = (float)(gh - 1u);
	if (parts == 1u) {
		build_whole(&j);
		g->valid = true;
		return true;
	}
	j.cursors = g->counts + (size_t)parts * cells;
	run(pool, parts, count_task, &j, parts);
	run(pool, parts, place_task, &j, parts);
	g->valid = true;
	return true;
}

void orca_query_grid_visit(const orca_query_grid *g, const float *px, const float *py, vec2 lo, vec2 hi,
                           orca_visit_fn fn, void *ctx)
{
	const float inv = g->inv;
	const uint32_t cx0 = orca_cell_of(lo.x, g->ox, inv, g->last_x);
	const uint32_t cx1 = orca_cell_of(hi.x, g->ox, inv, g->last_x);
	const uint32_t cy0 = orca_cell_of(lo.y, g->oy, inv, g->last_y);
	const uint32_t cy1 = orca_cell_of(hi.y, g->oy, inv, g->last_y);
	if (cx0 > cx1 || cy0 > cy1)
		return;
	for (uint32_t cy = cy0; cy <= cy1; ++cy) {
		/* a row's cells are adjacent: one run of entries */
		const uint32_t row = cy * g->w;
		const uint32_t end = g->start[row + cx1 + 1u];
		for (uint32_t k = g->start[row + cx0]; k < end; ++k) {
			const uint32_t s = g->slots[k];
			const float x = px[s], y = py[s];
			if (x >= lo.x && x <= hi.x && y >= lo.y && y <= hi.y)
				fn(ctx, s);
		}
	}
}

void orca_query_grid_free(orca_query_grid *g, orca_heap *heap)
{
	orca_heap_free(heap, g->start, g->start_cap * sizeof(uint32_t));
	orca_heap_free(heap, g->slots, g->slots_cap * sizeof(uint32_t));
	orca_heap_free(heap, g->counts, g->counts_cap * sizeof(uint32_t));
	g->start = g->slots = g->counts = NULL;
	g->start_cap = g->slots_cap = g->counts_cap = 0;
	g->valid = false;
}
