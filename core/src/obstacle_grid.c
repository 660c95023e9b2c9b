/* obstacle_grid.c — the obstacle index for worlds whose obstacles change at
 * run time: a uniform grid (hashed cells) over the obstacle edges, updated in
 * place by each add and remove in time proportional to the polygon, so a
 * change never stalls a step. No edge is split; the query returns the edges an
 * agent sees (it is on their right) within range, in (distance, edge) order,
 * which makes the result a function of the operations alone — not of thread
 * timing, worker count or memory addresses.
 *
 * Vertices keep RVO2's layout (obst_vertex: point, unit direction, convexity,
 * prev/next), so velocity.c builds the same ORCA lines from them. Freed vertex
 * slots are reused through a free list linked by .next. */
#include <string.h>

#include "obstacles.h"
#include "world_internal.h"

#define CELL_SIZE 16.0f            /* world units, a power of two; a default agent's range (21.5) spans 3-4 cells */
#define CELL_INV (1.0f / CELL_SIZE) /* exact */
#define CELL_LIMIT (1 << 30)      /* cell coordinates are clamped to +-this */
#define BIG_EDGE_CELLS 512        /* edges crossing more cells go to the list every query reads */
#define MIN_TABLE 256u

/* floor(v / CELL_SIZE), clamped; exact, and monotonic in v. */
static int32_t cell_index(double v)
{
	double q = v * (double)CELL_INV;
	if (!(q > -(double)CELL_LIMIT)) /* also NaN */
		return -CELL_LIMIT;
	if (q > (double)CELL_LIMIT)
		return CELL_LIMIT;
	int32_t i = (int32_t)q;
	return ((double)i > q) ? i - 1 : i;
}

static uint32_t cell_hash(int32_t cx, int32_t cy, uint32_t cap)
{
	const uint64_t k = ((uint64_t)(uint32_t)cx << 32) | (uint32_t)cy;
	return (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1u);
}

static const obst_cell *find_cell(const struct orca_world *w, int32_t cx, int32_t cy)
{
	if (!w->ocell_cap)
		return NULL;
	for (uint32_t h = cell_hash(cx, cy, w->ocell_cap);; h = (h + 1u) & (w->ocell_cap - 1u)) {
		const obst_cell *c = &w->ocells[h];
		if (!c->used)
			return NULL;
		if (c->cx == cx && c->cy == cy)
			return c;
	}
}

static bool grow_table(struct orca_world *w)
{
	const uint32_t old_cap = w->ocell_cap, cap = old_cap ? old_cap * 2u : MIN_TABLE;
	obst_cell *cells = orca_mem_alloc(w, sizeof(obst_cell) * cap);
	if (!cells)
		return false;
	memset(cells, 0, sizeof(obst_cell) * cap);
	for (uint32_t i = 0; i < old_cap; ++i) {
		const obst_cell *c = &w->ocells[i];
		if (!c->used)
			continue;
		uint32_t h = cell_hash(c->cx, c->cy, cap);
		while (cells[h].used)
			h = (h + 1u) & (cap - 1u);
		cells[h] = *c;
	}
	orca_mem_free(w, w->ocells, sizeof(obst_cell) * old_cap);
	w->ocells = cells;
	w->ocell_cap = cap;
	return true;
}

static obst_cell *get_cell(struct orca_world *w, int32_t cx, int32_t cy)
{
	if ((w->ocell_used + 1u) * 2u > w->ocell_cap && !grow_table(w))
		return NULL;
	uint32_t h = cell_hash(cx, cy, w->ocell_cap);
	for (;; h = (h + 1u) & (w->ocell_cap - 1u)) {
		obst_cell *c = &w->ocells[h];
		if (!c->used) {
			c->used = 1;
			c->cx = cx;
			c->cy = cy;
			w->ocell_used++;
			return c;
		}
		if (c->cx == cx && c->cy == cy)
			return c;
	}
}

/* Take an emptied cell out of the table (backward-shift deletion, so every
 * probe chain stays unbroken) and free its list: cells live only while they
 * hold an edge, so obstacles that come and go over a wide world leave no
 * trace — neither memory nor table entries every wide query would read. */
static void drop_cell(struct orca_world *w, obst_cell *c)
{
	const uint32_t mask = w->ocell_cap - 1u;
	uint32_t hole = (uint32_t)(c - w->ocells);
	orca_mem_free(w, c->edges, sizeof(obst_grid_edge) * c->cap);
	for (uint32_t j = (hole + 1u) & mask; w->ocells[j].used; j = (j + 1u) & mask) {
		const uint32_t home = cell_hash(w->ocells[j].cx, w->ocells[j].cy, w->ocell_cap);
		/* the entry at j may move back to the hole unless its home lies cyclically in (hole, j] */
		const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
		if (stays)
			continue;
		w->ocells[hole] = w->ocells[j];
		hole = j;
	}
	memset(&w->ocells[hole], 0, sizeof(obst_cell));
	w->ocell_used--;
}

static bool list_add(orca_heap *heap, obst_grid_edge **items, uint32_t *count, uint32_t *cap,
                     const obst_grid_edge *e)
{
	if (!orca_heap_reserve(heap, (void **)items, cap, *count + 1u, sizeof(obst_grid_edge)))
		return false;
	(*items)[(*count)++] = *e;
	return true;
}

/* Order inside a list does not matter (queries sort), so removal swaps. */
static void list_remove(obst_grid_edge *items, uint32_t *count, uint32_t vi)
{
	for (uint32_t i = 0; i < *count; ++i) {
		if (items[i].vertex == vi) {
			items[i] = items[--*count];
			return;
		}
	}
}

/* Visit every cell that the edge vi -> next passes through (a superset: each
 * column's y range is padded) and add it there or take it out. Insertion can
 * fail for memory only; the caller then removes what went in. */
static bool edge_cells(struct orca_world *w, uint32_t vi, bool insert)
{
	const vec2 a = w->verts[vi].point, b = w->verts[w->verts[vi].next].point;
	const obst_grid_edge e = {a, b, vi, w->verts[vi].owner, w->verts[vi].corner};
	const double ax = a.x, ay = a.y, bx = b.x, by = b.y;
	const double x0 = ax < bx ? ax : bx, x1 = ax < bx ? bx : ax;
	const double y0 = ay < by ? ay : by, y1 = ay < by ? by : ay;
	const int32_t cx0 = cell_index(x0), cx1 = cell_index(x1);
	const int32_t cy0 = cell_index(y0), cy1 = cell_index(y1);
	if ((int64_t)cx1 - cx0 + (int64_t)cy1 - cy0 > BIG_EDGE_CELLS) {
		if (insert)
			return list_add(&w->heap, &w->obig, &w->obig_count, &w->obig_cap, &e);
		list_remove(w->obig, &w->obig_count, vi);
		return true;
	}
	const double pad = 1e-6 * (1.0 + (y1 > -y0 ? y1 : -y0));
	for (int32_t cx = cx0; cx <= cx1; ++cx) {
		/* y range of the edge inside this column */
		double lo = y0, hi = y1;
		if (cx0 != cx1 && bx != ax) {
			const double xa = cx == cx0 ? x0 : (double)cx * CELL_SIZE;
			const double xb = cx == cx1 ? x1 : (double)(cx + 1) * CELL_SIZE;
			const double ya = ay + (by - ay) * ((xa - ax) / (bx - ax));
			const double yb = ay + (by - ay) * ((xb - ax) / (bx - ax));
			lo = (ya < yb ? ya : yb) - pad;
			hi = (ya < yb ? yb : ya) + pad;
		}
		int32_t ry0 = cell_index(lo), ry1 = cell_index(hi);
		ry0 = ry0 < cy0 ? cy0 : ry0;
		ry1 = ry1 > cy1 ? cy1 : ry1;
		for (int32_t cy = ry0; cy <= ry1; ++cy) {
			if (insert) {
				obst_cell *c = get_cell(w, cx, cy);
				if (!c || !list_add(&w->heap, &c->edges, &c->count, &c->cap, &e))
					return false;
			} else {
				obst_cell *c = (obst_cell *)find_cell(w, cx, cy);
				if (c) {
					list_remove(c->edges, &c->count, vi);
					if (c->count == 0)
						drop_cell(w, c);
				}
			}
		}
	}
	return true;
}

static void free_vertex(struct orca_world *w, uint32_t vi)
{
	w->verts[vi].owner = ORCA_NONE;
	w->verts[vi].next = w->obst_vert_free;
	w->obst_vert_free = vi;
}

int orca_obstacle_grid_insert(struct orca_world *w, uint32_t slot, const vec2 *v, uint32_t n, uint32_t *first)
{
	w->opack.valid = false;
	w->opack.stale = true; /* packed again once the obstacles stay as they are for a step */
	if (!orca_mem_reserve(w, (void **)&w->verts, &w->vert_cap, w->vert_count + n, sizeof(obst_vertex)) ||
	    !orca_mem_reserve(w, (void **)&w->obst_scratch, &w->obst_scratch_cap, n, sizeof(uint32_t)))
		return ORCA_ERR_NO_MEMORY;
	uint32_t *idx = w->obst_scratch; /* no kd-tree is built once the grid is in use */
	for (uint32_t i = 0; i < n; ++i) {
		if (w->obst_vert_free != ORCA_NONE) {
			idx[i] = w->obst_vert_free;
			w->obst_vert_free = w->verts[idx[i]].next;
		} else {
			idx[i] = w->vert_count++;
		}
	}
	/* RVO2's addObstacle: edge directions and convexity */
	for (uint32_t i = 0; i < n; ++i) {
		obst_vertex *o = &w->verts[idx[i]];
		const uint32_t inext = (i == n - 1) ? 0 : i + 1;
		const uint32_t iprev = (i == 0) ? n - 1 : i - 1;
		o->point = v[i];
		o->next = idx[inext];
		o->prev = idx[iprev];
		o->unit_dir = v2_normalize(v2_sub(v[inext], v[i]));
		o->convex = (n == 2) ? 1u : (left_of(v[iprev], v[i], v[inext]) >= 0.0f);
		o->owner = slot;
		o->corner = i;
	}
	for (uint32_t i = 0; i < n; ++i) {
		if (!edge_cells(w, idx[i], true)) {
			for (uint32_t j = 0; j <= i; ++j)
				edge_cells(w, idx[j], false);
			for (uint32_t j = 0; j < n; ++j)
				free_vertex(w, idx[j]);
			return ORCA_ERR_NO_MEMORY;
		}
	}
	w->obst_edges += n;
	*first = idx[0];
	return ORCA_OK;
}

void orca_obstacle_grid_remove(struct orca_world *w, uint32_t first, uint32_t n)
{
	w->opack.valid = false;
	w->opack.stale = true;
	uint32_t vi = first;
	for (uint32_t k = 0; k < n; ++k) {
		const uint32_t next = w->verts[vi].next;
		edge_cells(w, vi, false);
		vi = next;
	}
	vi = first;
	for (uint32_t k = 0; k < n; ++k) {
		const uint32_t next = w->verts[vi].next;
		free_vertex(w, vi);
		vi = next;
	}
	w->obst_edges -= n;
}

int orca_obstacle_grid_rebuild(struct orca_world *w)
{
	w->opack.valid = false;
	w->opack.stale = true;
	w->obst_grid = true;
	w->vert_count = 0;
	w->onode_count = 0;
	w->obst_vert_free = ORCA_NONE;
	w->obst_edges = 0;
	w->obig_count = 0;
	for (uint32_t i = 0; i < w->ocell_cap; ++i) /* the table's room stays, its cells go */
		if (w->ocells[i].used)
			orca_mem_free(w, w->ocells[i].edges, sizeof(obst_grid_edge) * w->ocells[i].cap);
	if (w->ocell_cap)
		memset(w->ocells, 0, sizeof(obst_cell) * w->ocell_cap);
	w->ocell_used = 0;
	for (uint32_t k = 0; k < w->obst_live; ++k) {
		const uint32_t s = w->obst_order[k];
		const int rc = orca_obstacle_grid_insert(w, s, w->obst[s].vertices, w->obst[s].count, &w->obst[s].first_vert);
		if (rc != ORCA_OK)
			return rc;
	}
	return ORCA_OK;
}

typedef struct grid_query {
	const struct orca_world *w;
	vec2 position;
	float range_sq;
	nb_entry *out;
	uint32_t count;
} grid_query;

/* (owner slot, corner) names an edge whatever the history of the vertex
 * table, and survives a save and load: ties in distance go by it. */
static bool key_less(uint32_t owner_a, uint32_t corner_a, uint32_t owner_b, uint32_t corner_b)
{
	return owner_a < owner_b || (owner_a == owner_b && corner_a < corner_b);
}

/* As RVO2's query: an edge counts when the agent is on its right (it can see
 * it) and the segment is within range. Sorted by (distance, edge); an edge
 * met again in another cell lands on its own entry and is dropped. */
static void consider(grid_query *q, const obst_grid_edge *e)
{
	const vec2 p1 = e->a, p2 = e->b;
	/* the distance to the edge's box bounds the distance to the edge: most
	 * edges of a cell are out of range, and this needs no division */
	const float bx = maxf(maxf(minf(p1.x, p2.x) - q->position.x, q->position.x - maxf(p1.x, p2.x)), 0.0f);
	const float by = maxf(maxf(minf(p1.y, p2.y) - q->position.y, q->position.y - maxf(p1.y, p2.y)), 0.0f);
	if (!(bx * bx + by * by < q->range_sq * 1.0001f + 1e-6f))
		return;
	if (!(left_of(p1, p2, q->position) < 0.0f))
		return;
	const float d = dist_sq_point_segment(p1, p2, q->position);
	if (!(d < q->range_sq))
		return;
	const obst_vertex *verts = q->w->verts;
	uint32_t i = q->count;
	while (i > 0 && q->out[i - 1].dist_sq >= d) {
		const nb_entry *prev = &q->out[i - 1];
		if (prev->dist_sq == d) {
			if (prev->index == e->vertex)
				return; /* met before, in another cell */
			if (key_less(verts[prev->index].owner, verts[prev->index].corner, e->owner, e->corner))
				break;
		}
		--i;
	}
	memmove(&q->out[i + 1], &q->out[i], sizeof(nb_entry) * (q->count - i));
	q->out[i].dist_sq = d;
	q->out[i].index = e->vertex;
	q->count++;
}

static void consider_cell(grid_query *q, const obst_cell *c)
{
	for (uint32_t k = 0; k < c->count; ++k)
		consider(q, &c->edges[k]);
}

/* Packing pays while the box of used cells is not much larger than the
 * cells themselves (a city: about twice); past that, or past this many
 * cells, queries read the hash table. */
#define PACK_MAX_CELLS (1u << 22)
#define PACK_SPARSENESS 8u

void orca_obstacle_grid_pack(struct orca_world *w)
{
	obst_pack *p = &w->opack;
	p->valid = false;
	p->stale = false;
	if (!w->obst_grid || w->ocell_used == 0) { /* no obstacles: no memory kept for them */
		orca_mem_free(w, p->start, sizeof(uint32_t) * p->start_cap);
		orca_mem_free(w, p->edges, sizeof(obst_grid_edge) * p->edge_cap);
		p->start = NULL;
		p->edges = NULL;
		p->start_cap = p->edge_cap = 0;
		return;
	}
	int32_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
	bool first = true;
	uint64_t edges = 0;
	for (uint32_t i = 0; i < w->ocell_cap; ++i) {
		const obst_cell *c = &w->ocells[i];
		if (!c->used)
			continue;
		if (first || c->cx < x0)
			x0 = c->cx;
		if (first || c->cx > x1)
			x1 = c->cx;
		if (first || c->cy < y0)
			y0 = c->cy;
		if (first || c->cy > y1)
			y1 = c->cy;
		first = false;
		edges += c->count;
	}
	const uint64_t nx = (uint64_t)((int64_t)x1 - x0 + 1), ny = (uint64_t)((int64_t)y1 - y0 + 1);
	if (nx * ny > PACK_MAX_CELLS || nx * ny > (uint64_t)PACK_SPARSENESS * w->ocell_used + 4096u || edges >= UINT32_MAX)
		return;
	const uint32_t cells = (uint32_t)(nx * ny);
	if (cells + 1u > p->start_cap) {
		uint32_t *start = orca_mem_alloc(w, sizeof(uint32_t) * (cells + 1u));
		if (!start)
			return; /* out of memory: the queries read the table */
		orca_mem_free(w, p->start, sizeof(uint32_t) * p->start_cap);
		p->start = start;
		p->start_cap = cells + 1u;
	}
	if (edges > p->edge_cap) {
		obst_grid_edge *e = orca_mem_alloc(w, sizeof(obst_grid_edge) * edges);
		if (!e)
			return;
		orca_mem_free(w, p->edges, sizeof(obst_grid_edge) * p->edge_cap);
		p->edges = e;
		p->edge_cap = (uint32_t)edges;
	}
	/* counts, then running sums, then each cell's edges in its run */
	memset(p->start, 0, sizeof(uint32_t) * (cells + 1u));
	for (uint32_t i = 0; i < w->ocell_cap; ++i) {
		const obst_cell *c = &w->ocells[i];
		if (c->used)
			p->start[(uint32_t)(c->cy - y0) * nx + (uint32_t)(c->cx - x0) + 1u] = c->count;
	}
	for (uint32_t k = 0; k < cells; ++k)
		p->start[k + 1u] += p->start[k];
	for (uint32_t i = 0; i < w->ocell_cap; ++i) {
		const obst_cell *c = &w->ocells[i];
		if (c->used && c->count)
			memcpy(&p->edges[p->start[(uint32_t)(c->cy - y0) * nx + (uint32_t)(c->cx - x0)]], c->edges,
			       sizeof(obst_grid_edge) * c->count);
	}
	p->x0 = x0;
	p->y0 = y0;
	p->nx = (uint32_t)nx;
	p->ny = (uint32_t)ny;
	p->valid = true;
}

/* The query's cells from the pack: those of the box [cx0, cx1] x [cy0, cy1]
 * within h of the agent, as the table's loop takes them. */
static void query_pack(grid_query *q, const obst_pack *p, int32_t cx0, int32_t cx1, int32_t cy0, int32_t cy1,
                       float h)
{
	const int64_t px0 = p->x0, py0 = p->y0, px1 = px0 + p->nx - 1, py1 = py0 + p->ny - 1;
	const int64_t bx0 = cx0 > px0 ? cx0 : px0, bx1 = cx1 < px1 ? cx1 : px1;
	const int64_t by0 = cy0 > py0 ? cy0 : py0, by1 = cy1 < py1 ? cy1 : py1;
	const double px = q->position.x, py = q->position.y, hh = (double)h * h;
	for (int64_t cy = by0; cy <= by1; ++cy) {
		const double y0 = (double)cy * CELL_SIZE, y1 = y0 + CELL_SIZE;
		const double dy = py < y0 ? y0 - py : (py > y1 ? py - y1 : 0.0);
		const uint32_t *row = p->start + (uint64_t)(cy - py0) * p->nx;
		for (int64_t cx = bx0; cx <= bx1; ++cx) {
			const double x0 = (double)cx * CELL_SIZE, x1 = x0 + CELL_SIZE;
			const double dx = px < x0 ? x0 - px : (px > x1 ? px - x1 : 0.0);
			if (dx * dx + dy * dy > hh)
				continue;
			const uint32_t k = (uint32_t)(cx - px0);
			for (uint32_t e = row[k]; e < row[k + 1u]; ++e)
				consider(q, &p->edges[e]);
		}
	}
}

uint32_t orca_obstacle_grid_query(const struct orca_world *w, vec2 position, float range_sq, nb_entry *out)
{
	grid_query q = {w, position, range_sq, out, 0};
	/* The box of cells holding every point within range, padded well past
	 * the rounding of the float distance test. */
	const float r = sqrtf(range_sq);
	const float ax = position.x < 0.0f ? -position.x : position.x;
	const float ay = position.y < 0.0f ? -position.y : position.y;
	const float h = r + r * 1e-4f + (ax + ay) * 1e-5f + 1e-3f;
	const int32_t cx0 = cell_index((double)position.x - h), cx1 = cell_index((double)position.x + h);
	const int32_t cy0 = cell_index((double)position.y - h), cy1 = cell_index((double)position.y + h);
	const uint64_t box = (uint64_t)((int64_t)cx1 - cx0 + 1) * (uint64_t)((int64_t)cy1 - cy0 + 1);
	if (w->opack.valid && box <= w->ocell_used) {
		query_pack(&q, &w->opack, cx0, cx1, cy0, cy1, h);
	} else if (box > w->ocell_used) {
		/* a range wider than the occupied cells: read the table instead */
		for (uint32_t i = 0; i < w->ocell_cap; ++i) {
			const obst_cell *c = &w->ocells[i];
			if (c->used && c->cx >= cx0 && c->cx <= cx1 && c->cy >= cy0 && c->cy <= cy1)
				consider_cell(&q, c);
		}
	} else {
		/* only cells that come within h of the agent */
		const double px = position.x, py = position.y, hh = (double)h * h;
		for (int32_t cy = cy0; cy <= cy1; ++cy) {
			const double y0 = (double)cy * CELL_SIZE, y1 = y0 + CELL_SIZE;
			const double dy = py < y0 ? y0 - py : (py > y1 ? py - y1 : 0.0);
			for (int32_t cx = cx0; cx <= cx1; ++cx) {
				const double x0 = (double)cx * CELL_SIZE, x1 = x0 + CELL_SIZE;
				const double dx = px < x0 ? x0 - px : (px > x1 ? px - x1 : 0.0);
				if (dx * dx + dy * dy > hh)
					continue;
				const obst_cell *c = find_cell(w, cx, cy);
				if (c)
					consider_cell(&q, c);
			}
		}
	}
	for (uint32_t k = 0; k < w->obig_count; ++k)
		consider(&q, &w->obig[k]);
	return q.count;
}

void orca_obstacle_grid_free(struct orca_world *w)
{
	for (uint32_t i = 0; i < w->ocell_cap; ++i)
		if (w->ocells[i].used)
			orca_mem_free(w, w->ocells[i].edges, sizeof(obst_grid_edge) * w->ocells[i].cap);
	orca_mem_free(w, w->ocells, sizeof(obst_cell) * w->ocell_cap);
	orca_mem_free(w, w->obig, sizeof(obst_grid_edge) * w->obig_cap);
	orca_mem_free(w, w->opack.start, sizeof(uint32_t) * w->opack.start_cap);
	orca_mem_free(w, w->opack.edges, sizeof(obst_grid_edge) * w->opack.edge_cap);
	memset(&w->opack, 0, sizeof w->opack);
	w->ocells = NULL;
	w->obig = NULL;
	w->ocell_cap = w->ocell_used = w->obig_count = w->obig_cap = 0;
}
