/* query_grid.c — box and radius queries (orca_query_rect/_radius) when there
 * is no kd-tree to ask: in quality mode a step orders agents by its own grid
 * and builds no tree, and any add or removal outdates the tree until the next
 * step. Navigation asks a radius query for many agents every tick, so a scan
 * of every slot per query made its update quadratic in the crowd.
 *
 * A uniform grid of the live agents at their current positions, about two
 * agents per cell, built by a counting sort on the first query after a change
 * and kept until the next one. A query visits the cells its box touches and
 * tests each agent exactly as the scan does, so it finds the same agents; the
 * callers sort what they find by id, so the visiting order does not matter. */
#include <math.h>
#include <string.h>

#include "query_grid.h"

#define QGRID_MAX_SIDE 2048u

bool orca_query_grid_build(orca_query_grid *g, orca_heap *heap, const uint8_t *alive, const float *px,
                           const float *py, uint32_t slot_count, uint32_t live_count)
{
	if (g->valid)
		return true;
	float min_x = INFINITY, min_y = INFINITY, max_x = -INFINITY, max_y = -INFINITY;
	for (uint32_t s = 0; s < slot_count; ++s) {
		if (!alive[s])
			continue;
		const float x = px[s], y = py[s];
		if (x < min_x) min_x = x;
		if (x > max_x) max_x = x;
		if (y < min_y) min_y = y;
		if (y > max_y) max_y = y;
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
	if (!orca_heap_reserve(heap, (void **)&g->start, &g->start_cap, cells + 1u, sizeof(uint32_t)) ||
	    !orca_heap_reserve(heap, (void **)&g->slots, &g->slots_cap, live_count + 1u, sizeof(uint32_t)))
		return false;
	g->w = gw;
	g->h = gh;
	g->ox = min_x;
	g->oy = min_y;
	g->inv = inv;
	g->last_x = (float)(gw - 1u);
	g->last_y = (float)(gh - 1u);
	uint32_t *start = g->start;
	memset(start, 0, (cells + 1u) * sizeof(uint32_t));
	for (uint32_t s = 0; s < slot_count; ++s)
		if (alive[s])
			start[orca_cell_of(py[s], min_y, inv, g->last_y) * gw + orca_cell_of(px[s], min_x, inv, g->last_x) +
			      1u]++;
	for (uint32_t c = 0; c < cells; ++c)
		start[c + 1u] += start[c];
	/* place with start[c] as cell c's cursor; it ends at cell c + 1's start */
	for (uint32_t s = 0; s < slot_count; ++s)
		if (alive[s])
			g->slots[start[orca_cell_of(py[s], min_y, inv, g->last_y) * gw +
			               orca_cell_of(px[s], min_x, inv, g->last_x)]++] = s;
	for (uint32_t c = cells; c > 0; --c)
		start[c] = start[c - 1u];
	start[0] = 0;
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
	g->start = g->slots = NULL;
	g->start_cap = g->slots_cap = 0;
	g->valid = false;
}
