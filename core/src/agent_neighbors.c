/* agent_neighbors.c — an agent's neighbour list, exactly RVO2's: the
 * max_neighbors nearest agents closer than neighbor_dist, sorted by squared
 * distance, equal distances in the order RVO2's kd-tree discovers them.
 *
 * Fast path: a uniform grid over the tree-order positions, scanned over the
 * square around the agent that holds a disc of a guessed radius (last step's
 * k-th distance plus how far the agents can have moved). Found k within the
 * disc, they are the k nearest of all agents; found fewer, the disc grows to
 * neighbor_dist. The only thing the grid cannot reproduce is the order of
 * exactly equal distances (RVO2's follows its tree's history), so a list with
 * two equal distances among its k + 1 nearest is thrown away and the agent is
 * searched in RVO2's kd-tree instead (agent_tree.c) — as is every agent when
 * masks are in play or the crowd is too sparse or clustered for a grid. */
#include <string.h>

#include "agent_grid_scan.h"
#include "agents.h"
#include "neighbor_list.h"
#include "world_internal.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define GRID_AVX2 1 /* an AVX2 scan, taken where the CPU has it (the build stays baseline x86-64) */
#endif

/* Beside the kd-tree (any mode) the grid only answers the queries, with the
 * same lists: it pays from a few dozen agents on. Quality mode's grid order
 * replaces the tree's processing order, which changes results, so it keeps
 * its own threshold (and the results pinned for crowds below it). */
#define GRID_MIN_AGENTS 64u
#define GRID_ORDER_MIN_AGENTS 256u
#define GUESS_MARGIN 0.5f      /* the guessed disc: last k-th distance + this * max_speed * dt */
#define GUESS_MARGIN_WIDE 2.0f /* its second try, before the whole neighbor_dist */
#define GRID_MAX_SCAN_CELLS 144u /* a bigger square goes to the kd-tree */
#define TRIM_MIN_ROWS 7u /* a scan of fewer rows takes the whole square: trimming costs more */
#define GRID_PAD 8u /* grid_x/grid_y/grid_index spare entries: the AVX2 scan reads eight at a time */


/* Turns per-cell counts in start[1..cells] into each cell's first index
 * (a prefix sum) and says how many cells are occupied: both grid builds
 * refuse a crowd that fills too few cells. */
static uint32_t cell_starts_from_counts(uint32_t *start, uint32_t cells)
{
	uint32_t occupied = 0;
	for (uint32_t c = 1; c <= cells; ++c) {
		occupied += start[c] != 0;
		start[c] += start[c - 1];
	}
	return occupied;
}

bool orca_agent_grid_reserve(struct orca_world *w)
{
	w->grid_on = false;
	if (w->order_count < GRID_MIN_AGENTS)
		return false;
	/* sized by capacity so that steps allocate nothing once it is reached */
	const uint32_t agent_need = w->tree_cap + GRID_PAD, cell_need = 2 * w->tree_cap + 16;
	return orca_mem_reserve(w, (void **)&w->grid_x, &w->grid_x_cap, agent_need, sizeof(float)) &&
	       orca_mem_reserve(w, (void **)&w->grid_y, &w->grid_y_cap, agent_need, sizeof(float)) &&
	       orca_mem_reserve(w, (void **)&w->grid_index, &w->grid_index_cap, agent_need, sizeof(uint32_t)) &&
	       orca_mem_reserve(w, (void **)&w->grid_cell, &w->grid_cell_cap, agent_need, sizeof(uint32_t)) &&
	       orca_mem_reserve(w, (void **)&w->grid_start, &w->grid_start_cap, cell_need + 1, sizeof(uint32_t));
}

/* The grid's cells over the box [min, max] for n agents (about one a cell,
 * at most 2n + 16 cells); false if the box gives no usable cell size. */
static bool grid_layout(struct orca_world *w, float min_x, float min_y, float max_x, float max_y, uint32_t n)
{
	const float bw = max_x - min_x, bh = max_y - min_y;
	float cell = sqrtf((bw > 1.0f ? bw : 1.0f) * (bh > 1.0f ? bh : 1.0f) / (float)n); /* ~1 agent a cell */
	if (!(cell > 0.0f) || !isfinite(cell))
		return false;
	uint64_t gw, gh;
	for (;;) {
		gw = (uint64_t)(bw / cell) + 1, gh = (uint64_t)(bh / cell) + 1;
		if (gw * gh <= 2u * (uint64_t)n + 16u)
			break;
		cell *= 1.25f;
	}
	w->grid_w = (uint32_t)gw;
	w->grid_h = (uint32_t)gh;
	w->grid_ox = min_x;
	w->grid_oy = min_y;
	w->grid_inv = 1.0f / cell;
	w->grid_last_x = (float)(w->grid_w - 1);
	w->grid_last_y = (float)(w->grid_h - 1);
	return true;
}

void orca_agent_grid_build(struct orca_world *w)
{
	w->grid_on = false;
	const uint32_t n = w->order_count;

	/* the root box is the crowd's bounding box */
	const agent_node *root = &w->nodes[0];
	if (!grid_layout(w, root->min_x, root->min_y, root->max_x, root->max_y, n))
		return;
	const uint32_t cells = w->grid_w * w->grid_h;
	const float inv = w->grid_inv, ox = w->grid_ox, oy = w->grid_oy;

	uint32_t *start = w->grid_start, *cell_ix = w->grid_cell;
	memset(start, 0, (cells + 1) * sizeof *start);
	const float *tx = w->tpx, *ty = w->tpy;
	for (uint32_t i = 0; i < n; ++i) {
		const uint32_t c = orca_cell_of(ty[i], oy, inv, w->grid_last_y) * w->grid_w + orca_cell_of(tx[i], ox, inv, w->grid_last_x);
		cell_ix[i] = c;
		start[c + 1]++;
	}
	const uint32_t occupied = cell_starts_from_counts(start, cells);
	if (occupied * 3u < n)
		return; /* clustered far more than the box suggests: cells too full */
	/* scatter in tree order (start[c] walks to the next cell's start), then
	 * shift the starts back */
	for (uint32_t i = 0; i < n; ++i) {
		const uint32_t k = start[cell_ix[i]]++;
		w->grid_x[k] = tx[i];
		w->grid_y[k] = ty[i];
		w->grid_index[k] = i;
	}
	memmove(start + 1, start, cells * sizeof *start);
	start[0] = 0;
	for (uint32_t k = n; k < n + GRID_PAD; ++k) {
		w->grid_x[k] = w->grid_y[k] = 0.0f;
		w->grid_index[k] = ORCA_NONE; /* read four or eight at a time, never a candidate */
	}
	w->grid_on = true;
}

/* Grid order, pass 1 (tree-order chunks): last step's order's positions into
 * tnx/tny (free until the velocity stage), and the box around them. */
static void order_positions_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	const uint32_t *order = w->order;
	const float *px = w->px, *py = w->py;
	float *tx = w->tnx, *ty = w->tny;
	worker_scratch *sc = &w->scratch[worker];
	float min_x = sc->bb_min_x, max_x = sc->bb_max_x, min_y = sc->bb_min_y, max_y = sc->bb_max_y;
	for (uint32_t k = begin; k < end; ++k) {
		const uint32_t s = order[k];
		const float x = px[s], y = py[s];
		tx[k] = x;
		ty[k] = y;
		min_x = minf(min_x, x);
		max_x = maxf(max_x, x);
		min_y = minf(min_y, y);
		max_y = maxf(max_y, y);
	}
	sc->bb_min_x = min_x, sc->bb_max_x = max_x, sc->bb_min_y = min_y, sc->bb_max_y = max_y;
}

/* Pass 2 (tree-order chunks): each agent's cell. */
static void order_cells_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	(void)worker;
	const float inv = w->grid_inv, ox = w->grid_ox, oy = w->grid_oy, last_x = w->grid_last_x, last_y = w->grid_last_y;
	const uint32_t gw = w->grid_w;
	const float *tx = w->tnx, *ty = w->tny;
	uint32_t *cell_ix = w->grid_cell;
	for (uint32_t k = begin; k < end; ++k)
		cell_ix[k] = orca_cell_of(ty[k], oy, inv, last_y) * gw + orca_cell_of(tx[k], ox, inv, last_x);
}

/* The counting sort's passes 3 and 4 run by cell range: part r of
 * worker_count owns cells [first, end) of the grid, their entries of
 * grid_start and their run of the sorted arrays, and looks through every
 * agent's cell for its own. A stable counting sort has one result, however
 * the cells are shared out. */
static void cell_range(const struct orca_world *w, uint32_t part, uint32_t *first, uint32_t *end)
{
	const uint64_t cells = (uint64_t)w->grid_w * w->grid_h, parts = (uint64_t)w->worker_count;
	*first = (uint32_t)(cells * part / parts);
	*end = (uint32_t)(cells * (part + 1) / parts);
}

/* Pass 3: the part's cells' counts, turned into first indices counted from
 * the part's first agent (grid_start[c]); the part's total in its scratch. */
static void order_count_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	(void)worker;
	const uint32_t n = w->order_count, *cell_ix = w->grid_cell;
	uint32_t *start = w->grid_start;
	for (uint32_t part = begin; part < end; ++part) {
		uint32_t c0, c1;
		cell_range(w, part, &c0, &c1);
		memset(start + c0, 0, (c1 - c0) * sizeof *start);
		for (uint32_t k = 0; k < n; ++k) {
			const uint32_t c = cell_ix[k];
			if (c - c0 < c1 - c0)
				start[c]++;
		}
		uint32_t run = 0, occupied = 0;
		for (uint32_t c = c0; c < c1; ++c) {
			const uint32_t count = start[c];
			start[c] = run;
			run += count;
			occupied += count != 0;
		}
		w->scratch[part].part_count = run;
		w->scratch[part].part_occupied = occupied;
	}
}

/* Pass 4: the part's agents to their places (ascending k within a cell: last
 * step's order), the new order in grid_index for now. */
static void order_scatter_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	(void)worker;
	const uint32_t n = w->order_count, *cell_ix = w->grid_cell, *order = w->order;
	const float *tx = w->tnx, *ty = w->tny;
	uint32_t *start = w->grid_start, *sorted = w->grid_index;
	float *gx = w->grid_x, *gy = w->grid_y, *tpx = w->tpx, *tpy = w->tpy;
	for (uint32_t part = begin; part < end; ++part) {
		uint32_t c0, c1;
		cell_range(w, part, &c0, &c1);
		if (c0 == c1)
			continue;
		const uint32_t offset = w->scratch[part].part_count; /* now: agents in the parts before */
		for (uint32_t c = c0; c < c1; ++c)
			start[c] += offset;
		for (uint32_t k = 0; k < n; ++k) {
			const uint32_t c = cell_ix[k];
			if (c - c0 >= c1 - c0)
				continue;
			const uint32_t i = start[c]++;
			sorted[i] = order[k];
			gx[i] = tpx[i] = tx[k];
			gy[i] = tpy[i] = ty[k];
		}
		/* each cursor stopped at the next cell's first index */
		memmove(start + c0 + 1, start + c0, (c1 - c0 - 1) * sizeof *start);
		start[c0] = offset;
	}
}

/* Pass 5: the new order, and tree_index by slot range (part r of
 * worker_count owns those slots: each worker writes its own run). */
static void order_index_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	(void)worker;
	const uint32_t n = w->order_count, *sorted = w->grid_index, parts = (uint32_t)w->worker_count;
	uint32_t *tree_index = w->tree_index, *order = w->order;
	for (uint32_t part = begin; part < end; ++part) {
		const uint32_t i0 = (uint32_t)((uint64_t)n * part / parts), i1 = (uint32_t)((uint64_t)n * (part + 1) / parts);
		memcpy(order + i0, sorted + i0, (i1 - i0) * sizeof *order);
		const uint32_t s0 = (uint32_t)((uint64_t)w->slot_count * part / parts);
		const uint32_t s1 = (uint32_t)((uint64_t)w->slot_count * (part + 1) / parts);
		for (uint32_t i = 0; i < n; ++i) {
			const uint32_t s = sorted[i];
			if (s - s0 < s1 - s0)
				tree_index[s] = i;
		}
	}
}

/* Quality mode without the kd-tree: the persistent order itself sorted by
 * grid cell (stably: within a cell, last step's order), so the tree order IS
 * the grid order and a scan of cells walks ascending indices. A counting sort
 * in passes over the pool: every write lands in its worker's own run. */
bool orca_agent_grid_order(struct orca_world *w)
{
	w->grid_on = false;
	const uint32_t n = w->order_count;
	if (n < GRID_ORDER_MIN_AGENTS || !orca_agent_grid_reserve(w))
		return false;
	const uint32_t parts = (uint32_t)w->worker_count;
	for (uint32_t k = 0; k < parts; ++k) {
		worker_scratch *sc = &w->scratch[k];
		sc->bb_min_x = sc->bb_min_y = INFINITY;
		sc->bb_max_x = sc->bb_max_y = -INFINITY;
	}
	orca_pool_run(w->pool, order_positions_task, w, n, 4096);
	float min_x = INFINITY, max_x = -INFINITY, min_y = INFINITY, max_y = -INFINITY;
	for (uint32_t k = 0; k < parts; ++k) {
		const worker_scratch *sc = &w->scratch[k];
		min_x = minf(min_x, sc->bb_min_x);
		max_x = maxf(max_x, sc->bb_max_x);
		min_y = minf(min_y, sc->bb_min_y);
		max_y = maxf(max_y, sc->bb_max_y);
	}
	/* which of 0 and -0 a tie keeps depends on who saw which: + 0 makes
	 * both 0 (no cell of the grid depends on it) */
	min_x += 0.0f, max_x += 0.0f, min_y += 0.0f, max_y += 0.0f;
	if (!grid_layout(w, min_x, min_y, max_x, max_y, n))
		return false;
	const uint32_t cells = w->grid_w * w->grid_h;
	orca_pool_run(w->pool, order_cells_task, w, n, 4096);
	orca_pool_run(w->pool, order_count_task, w, parts, 1);
	uint32_t occupied = 0, offset = 0;
	for (uint32_t k = 0; k < parts; ++k) {
		worker_scratch *sc = &w->scratch[k];
		occupied += sc->part_occupied;
		const uint32_t count = sc->part_count;
		sc->part_count = offset; /* the scatter's offset */
		offset += count;
	}
	if (occupied * 3u < n)
		return false; /* clustered: the kd-tree copes better (the order is untouched) */
	orca_pool_run(w->pool, order_scatter_task, w, parts, 1);
	w->grid_start[cells] = n;
	orca_pool_run(w->pool, order_index_task, w, parts, 1);
	uint32_t *gi = w->grid_index;
	for (uint32_t i = 0; i < n; ++i)
		gi[i] = i;
	for (uint32_t k = n; k < n + ORCA_TREE_PAD; ++k)
		w->tpx[k] = w->tpy[k] = 0.0f;
	for (uint32_t k = n; k < n + GRID_PAD; ++k) {
		w->grid_x[k] = w->grid_y[k] = 0.0f;
		gi[k] = ORCA_NONE; /* read four or eight at a time, never a candidate */
	}
	w->grid_on = true;

	/* the tree-order copies, every agent (a moved cell shifts the indices
	 * after it: last step's copies rarely hold) */
	w->gather_reuse = false;
	for (int i = 0; i < w->worker_count; ++i)
		w->scratch[i].not_plain = w->scratch[i].not_uniform = 0;
	orca_pool_run(w->pool, orca_agent_gather_task, w, n, 4096);
	bool plain = true, uniform = true;
	for (int i = 0; i < w->worker_count; ++i) {
		plain = plain && !w->scratch[i].not_plain;
		uniform = uniform && !w->scratch[i].not_uniform;
	}
	w->plain_masks = plain;
	w->uniform_share = plain && uniform;
	return true;
}

#define SCAN_BUFFER 32u /* candidates held before ranking; more go to the kd-tree */

/* The disc of radius r is narrower than its square away from its centre row:
 * the cells of row cy that its widest point in the row reaches (the gap less a
 * little: the band's float edges may sit off the cells'). Worth its cost on
 * big squares only: on a 5-row square it costs more than the cells it saves. */
static inline void trim_row(const struct orca_world *w, uint32_t cy, float x, float y, float r, uint32_t *ax0,
                            uint32_t *ax1)
{
	const float inv = w->grid_inv, ox = w->grid_ox, oy = w->grid_oy;
	const float cell = 1.0f / inv, slack = cell * 1e-3f + 1e-6f * (fabsf(y) + fabsf(oy));
	const float row_lo = oy + (float)cy * cell, row_hi = row_lo + cell;
	const float gap = (y < row_lo ? row_lo - y : (y > row_hi ? y - row_hi : 0.0f)) - slack;
	if (gap > 0.0f && cy != 0 && cy != w->grid_h - 1) {
		const float half = sqrtf(maxf(r * r - gap * gap, 0.0f)) * 1.0001f + 1e-6f * fabsf(x) + 1e-6f;
		*ax0 = orca_cell_of(x - half, ox, inv, w->grid_last_x);
		*ax1 = orca_cell_of(x + half, ox, inv, w->grid_last_x);
	}
}

/* The square of cells a scan of the disc around (x, y) covers: its radius r
 * (the disc's with slack), its rows and columns, whether rows are trimmed. */
typedef struct scan_box {
	float r;
	uint32_t cx0, cx1, cy0, cy1;
	bool trim;
} scan_box;

/* The square must hold every point whose rounded distance is below the range
 * (radius squared, rounded): a little slack for the rounding of the distance,
 * the range and the bound. False when it is too big for the grid. */
static inline __attribute__((always_inline)) bool scan_square_box(const struct orca_world *w, float x, float y,
                                                                  float radius, scan_box *b)
{
	const float r = radius * 1.0001f + 1e-6f * (fabsf(x) + fabsf(y)) + 1e-6f;
	const float inv = w->grid_inv, ox = w->grid_ox, oy = w->grid_oy;
	b->r = r;
	b->cx0 = orca_cell_of(x - r, ox, inv, w->grid_last_x), b->cx1 = orca_cell_of(x + r, ox, inv, w->grid_last_x);
	b->cy0 = orca_cell_of(y - r, oy, inv, w->grid_last_y), b->cy1 = orca_cell_of(y + r, oy, inv, w->grid_last_y);
	b->trim = b->cy1 - b->cy0 >= TRIM_MIN_ROWS - 1;
	return (b->cx1 - b->cx0 + 1) * (b->cy1 - b->cy0 + 1) <= GRID_MAX_SCAN_CELLS;
}

#ifdef __SSE2__
/* The candidates closer than sqrt(range_sq) of the square's rows (trimmed to
 * the disc when `trim`), self left out, appended to bd/bi; their count, or
 * ORCA_NONE past SCAN_BUFFER. Inlined twice, trimming or not: a scan with a
 * branch or a call per row keeps fewer of its vectors in registers. */
static inline __attribute__((always_inline)) uint32_t scan_square(const struct orca_world *w, uint32_t self, float x,
                                                                  float y, float range_sq, const scan_box *b,
                                                                  bool trim, float *bd, uint32_t *bi)
{
	const float *gx = w->grid_x, *gy = w->grid_y;
	const uint32_t *gi = w->grid_index, *start = w->grid_start;
	const __m128 px = _mm_set1_ps(x), py = _mm_set1_ps(y), range = _mm_set1_ps(range_sq);
	const __m128i me = _mm_set1_epi32((int)self);
	uint32_t n = 0;
	for (uint32_t cy = b->cy0; cy <= b->cy1; ++cy) {
		uint32_t ax0 = b->cx0, ax1 = b->cx1;
		if (trim)
			trim_row(w, cy, x, y, b->r, &ax0, &ax1);
		const uint32_t row = cy * w->grid_w;
		const uint32_t begin = start[row + ax0], end = start[row + ax1 + 1];
		for (uint32_t j0 = begin; j0 < end; j0 += 4) {
			const __m128 dx = _mm_sub_ps(px, _mm_loadu_ps(gx + j0));
			const __m128 dy = _mm_sub_ps(py, _mm_loadu_ps(gy + j0));
			const __m128 d = _mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy));
			const __m128i is_self = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(gi + j0)), me);
			unsigned bits = (unsigned)_mm_movemask_ps(_mm_andnot_ps(_mm_castsi128_ps(is_self), _mm_cmplt_ps(d, range)));
			if (end - j0 < 4)
				bits &= (1u << (end - j0)) - 1u;
			/* all four lanes written, the count advanced past the ones
			 * in range: no branch on how many there are (a branch per
			 * candidate was mispredicted about twice a scan) */
			float dist[4];
			_mm_storeu_ps(dist, d);
			for (unsigned l = 0; l < 4; ++l) {
				bd[n] = dist[l];
				bi[n] = gi[j0 + l];
				n += (bits >> l) & 1u;
			}
			if (n > SCAN_BUFFER)
				return ORCA_NONE;
		}
	}
	return n;
}
#endif

/* The cap nearest closer than sqrt(range_sq) (range_sq = radius * radius) by
 * scanning the grid; returns how many, sorted by distance, or ORCA_NONE when
 * the grid cannot answer (the square is too big, there are too many
 * candidates, or two of the cap nearest are at equal distances: their order
 * would not be RVO2's). */
static inline __attribute__((always_inline)) uint32_t grid_scan(const struct orca_world *w, uint32_t self, float x,
                                                                 float y, float radius, float range_sq, uint32_t cap,
                                                                 nb_entry *out)
{
	scan_box b;
	if (!scan_square_box(w, x, y, radius, &b))
		return ORCA_NONE;
#ifdef __SSE2__
	float bd[SCAN_BUFFER + 4]; /* a scan writes four past its count */
	uint32_t bi[SCAN_BUFFER + 4];
	const uint32_t n = b.trim ? scan_square(w, self, x, y, range_sq, &b, true, bd, bi)
	                          : scan_square(w, self, x, y, range_sq, &b, false, bd, bi);
	if (n == ORCA_NONE)
		return ORCA_NONE;
	/* Rank each candidate by how many are nearer, a block of four against
	 * four at a time (the block and its three rotations) without a branch on
	 * the data, and place the first cap by rank. Equal distances get one rank:
	 * with none among the first cap those ranks are 0..placed-1 once each, so
	 * their count is placed and their sum placed(placed-1)/2; a tie either
	 * lowers the sum (the tied ranks repeat) or raises the count (a tie across
	 * the cap's edge), and the grid gives up (RVO2's tie order is the tree's). */
	for (uint32_t k = n; k < n + 4; ++k) {
		bd[k] = INFINITY; /* never nearer than a candidate: ranks stay the candidates' */
		bi[k] = ORCA_NONE;
	}
	const uint32_t placed = n < cap ? n : cap;
	const __m128i limit = _mm_set1_epi32((int)placed);
	__m128i counted = _mm_setzero_si128(), rank_sum = _mm_setzero_si128();
	for (uint32_t i0 = 0; i0 < n; i0 += 4) {
		const __m128 di = _mm_loadu_ps(bd + i0);
		__m128i rank = _mm_setzero_si128();
		for (uint32_t j0 = 0; j0 < n; j0 += 4) {
			const __m128 d0 = _mm_loadu_ps(bd + j0);
			const __m128 d1 = _mm_shuffle_ps(d0, d0, _MM_SHUFFLE(0, 3, 2, 1));
			const __m128 d2 = _mm_shuffle_ps(d0, d0, _MM_SHUFFLE(1, 0, 3, 2));
			const __m128 d3 = _mm_shuffle_ps(d0, d0, _MM_SHUFFLE(2, 1, 0, 3));
			const __m128i c01 = _mm_add_epi32(_mm_castps_si128(_mm_cmplt_ps(d0, di)), _mm_castps_si128(_mm_cmplt_ps(d1, di)));
			const __m128i c23 = _mm_add_epi32(_mm_castps_si128(_mm_cmplt_ps(d2, di)), _mm_castps_si128(_mm_cmplt_ps(d3, di)));
			rank = _mm_sub_epi32(rank, _mm_add_epi32(c01, c23));
		}
		const __m128i in = _mm_cmplt_epi32(rank, limit); /* padding lanes rank n: never in */
		counted = _mm_sub_epi32(counted, in);
		rank_sum = _mm_add_epi32(rank_sum, _mm_and_si128(rank, in));
		uint32_t rk[4];
		_mm_storeu_si128((__m128i *)rk, rank);
		for (uint32_t l = 0; l < 4; ++l) {
			/* past placed: out[placed], a spare entry (see reserve_scratch) */
			const uint32_t at = rk[l] < placed ? rk[l] : placed;
			out[at].dist_sq = bd[i0 + l];
			out[at].index = bi[i0 + l];
		}
	}
	uint32_t cnt[4], sum[4];
	_mm_storeu_si128((__m128i *)cnt, counted);
	_mm_storeu_si128((__m128i *)sum, rank_sum);
	if (cnt[0] + cnt[1] + cnt[2] + cnt[3] != placed ||
	    sum[0] + sum[1] + sum[2] + sum[3] != placed * (placed - 1) / 2)
		return ORCA_NONE;
	return placed;
#else
	const float *gx = w->grid_x, *gy = w->grid_y;
	const uint32_t *gi = w->grid_index, *start = w->grid_start;
	uint32_t count = 0;
	for (uint32_t cy = b.cy0; cy <= b.cy1; ++cy) {
		uint32_t ax0 = b.cx0, ax1 = b.cx1;
		if (b.trim)
			trim_row(w, cy, x, y, b.r, &ax0, &ax1);
		const uint32_t row = cy * w->grid_w;
		for (uint32_t k = start[row + ax0], end = start[row + ax1 + 1]; k < end; ++k) {
			const float dx = x - gx[k], dy = y - gy[k];
			const float dist_sq = dx * dx + dy * dy;
			if (dist_sq < range_sq && gi[k] != self)
				nb_offer(out, &count, cap, &range_sq, dist_sq, gi[k]);
		}
	}
	if (count < cap)
		nb_sort(out, count);
	/* with no equal distances among the cap nearest the order is the
	 * distance order (and the k-th is not tied with the next one) */
	for (uint32_t i = 1; i < count; ++i)
		if (!(out[i].dist_sq > out[i - 1].dist_sq))
			return ORCA_NONE;
	return count;
#endif
}

#ifdef GRID_AVX2
/* pack_lanes[m]: the lanes set in the 8-bit mask m, in ascending order, one
 * byte each from the low byte up (the rest 0): the permutation that packs an
 * AVX2 block's kept lanes to its front. Built by the preprocessor. */
#define PACK_POP8(v)                                                                                                   \
	(((v) & 1u) + ((v) >> 1 & 1u) + ((v) >> 2 & 1u) + ((v) >> 3 & 1u) + ((v) >> 4 & 1u) + ((v) >> 5 & 1u) +       \
	 ((v) >> 6 & 1u) + ((v) >> 7 & 1u))
#define PACK_LANE(m, i) ((((m) >> (i)) & 1u) ? (uint64_t)(i) << (8u * PACK_POP8((m) & ((1u << (i)) - 1u))) : 0u)
#define PACK_ENTRY(m)                                                                                                  \
	(PACK_LANE(m, 0) | PACK_LANE(m, 1) | PACK_LANE(m, 2) | PACK_LANE(m, 3) | PACK_LANE(m, 4) | PACK_LANE(m, 5) |    \
	 PACK_LANE(m, 6) | PACK_LANE(m, 7))
#define PACK_4(m) PACK_ENTRY(m), PACK_ENTRY((m) + 1u), PACK_ENTRY((m) + 2u), PACK_ENTRY((m) + 3u)
#define PACK_16(m) PACK_4(m), PACK_4((m) + 4u), PACK_4((m) + 8u), PACK_4((m) + 12u)
#define PACK_64(m) PACK_16(m), PACK_16((m) + 16u), PACK_16((m) + 32u), PACK_16((m) + 48u)
static const uint64_t pack_lanes[256] = {PACK_64(0u), PACK_64(64u), PACK_64(128u), PACK_64(192u)};

/* scan_square eight candidates a block (a row's ~5 in one block where the
 * SSE2 scan takes two), the kept lanes packed to the front by pack_lanes and
 * stored at once: the same candidates, the same distances (the same
 * subtractions, products and sum, lane by lane; no FMA). */
__attribute__((target("avx2,popcnt"), always_inline)) static inline uint32_t
scan_square8(const struct orca_world *w, uint32_t self, float x, float y, float range_sq, const scan_box *b, bool trim,
             float *bd, uint32_t *bi)
{
	const float *gx = w->grid_x, *gy = w->grid_y;
	const uint32_t *gi = w->grid_index, *start = w->grid_start;
	const __m256 px = _mm256_set1_ps(x), py = _mm256_set1_ps(y), range = _mm256_set1_ps(range_sq);
	const __m256i me = _mm256_set1_epi32((int)self), lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	uint32_t n = 0;
	for (uint32_t cy = b->cy0; cy <= b->cy1; ++cy) {
		uint32_t ax0 = b->cx0, ax1 = b->cx1;
		if (trim)
			trim_row(w, cy, x, y, b->r, &ax0, &ax1);
		const uint32_t row = cy * w->grid_w;
		const uint32_t begin = start[row + ax0], end = start[row + ax1 + 1];
		for (uint32_t j0 = begin; j0 < end; j0 += 8) {
			const __m256 dx = _mm256_sub_ps(px, _mm256_loadu_ps(gx + j0));
			const __m256 dy = _mm256_sub_ps(py, _mm256_loadu_ps(gy + j0));
			const __m256 d = _mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy));
			const __m256i g = _mm256_loadu_si256((const __m256i *)(gi + j0));
			/* lanes before the row's end (the rest: the next row or GRID_PAD), not self */
			const __m256i keep = _mm256_andnot_si256(_mm256_cmpeq_epi32(g, me),
			                                         _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(end - j0)), lane));
			const unsigned bits = (unsigned)_mm256_movemask_ps(
			    _mm256_and_ps(_mm256_castsi256_ps(keep), _mm256_cmp_ps(d, range, _CMP_LT_OS)));
			const __m256i to = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)&pack_lanes[bits]));
			_mm256_storeu_ps(bd + n, _mm256_permutevar8x32_ps(d, to));
			_mm256_storeu_si256((__m256i *)(bi + n), _mm256_permutevar8x32_epi32(g, to));
			n += (uint32_t)__builtin_popcount(bits);
			if (n > SCAN_BUFFER)
				return ORCA_NONE;
		}
	}
	return n;
}

/* grid_scan with AVX2: the same answer and the same refusals (the rank and
 * tie rule are grid_scan's; the candidates' order in the buffer, which may
 * differ, decides nothing: the ranks are distinct or the grid gives up).
 * Ranks: sixteen candidates at a time against the candidates broadcast, two
 * a turn; each ranked one placed by one 8-byte copy of its entry. */
__attribute__((target("avx2,popcnt"), always_inline)) static inline uint32_t
grid_scan_avx2(const struct orca_world *w, uint32_t self, float x, float y, float radius, float range_sq, uint32_t cap,
               nb_entry *out)
{
	scan_box b;
	if (!scan_square_box(w, x, y, radius, &b))
		return ORCA_NONE;
	/* The candidates: a scan writes eight past its count, the ranks read
	 * sixteen. Per thread, off the stack frame: on the frame, one placement
	 * of them that gcc chose (after -fno-math-errno changed the function's
	 * frame) made the velocity stage ~5 % slower at random 50,000 (13.6
	 * against 12.9 ms, whatever the environment's size; the cause was not
	 * found, three other placements were all fast). */
	static _Thread_local struct {
		_Alignas(64) float d[SCAN_BUFFER + 16];
		_Alignas(64) uint32_t i[SCAN_BUFFER + 16];
	} cand;
	float *const bd = cand.d;
	uint32_t *const bi = cand.i;
	const uint32_t n = b.trim ? scan_square8(w, self, x, y, range_sq, &b, true, bd, bi)
	                          : scan_square8(w, self, x, y, range_sq, &b, false, bd, bi);
	if (n == ORCA_NONE)
		return ORCA_NONE;
	/* never nearer than a candidate: padding lanes rank n (never placed;
	 * their indices only keep the entries' loads defined) */
	_mm256_storeu_ps(bd + n, _mm256_set1_ps(INFINITY));
	_mm256_storeu_ps(bd + n + 8, _mm256_set1_ps(INFINITY));
	_mm256_storeu_si256((__m256i *)(bi + n), _mm256_set1_epi32((int)ORCA_NONE));
	_mm256_storeu_si256((__m256i *)(bi + n + 8), _mm256_set1_epi32((int)ORCA_NONE));
	const uint32_t placed = n < cap ? n : cap;
	const __m256i limit = _mm256_set1_epi32((int)placed);
	__m256i counted = _mm256_setzero_si256(), rank_sum = _mm256_setzero_si256();
	for (uint32_t i0 = 0; i0 < n; i0 += 16) {
		const __m256 d0 = _mm256_loadu_ps(bd + i0), d1 = _mm256_loadu_ps(bd + i0 + 8);
		__m256i r0 = _mm256_setzero_si256(), r1 = _mm256_setzero_si256();
		for (uint32_t j = 0; j < n; j += 2) { /* two a turn: bd[n] is padding, never nearer */
			const __m256 dj = _mm256_broadcast_ss(bd + j), dk = _mm256_broadcast_ss(bd + j + 1);
			r0 = _mm256_sub_epi32(r0, _mm256_castps_si256(_mm256_cmp_ps(dj, d0, _CMP_LT_OS)));
			r1 = _mm256_sub_epi32(r1, _mm256_castps_si256(_mm256_cmp_ps(dj, d1, _CMP_LT_OS)));
			r0 = _mm256_sub_epi32(r0, _mm256_castps_si256(_mm256_cmp_ps(dk, d0, _CMP_LT_OS)));
			r1 = _mm256_sub_epi32(r1, _mm256_castps_si256(_mm256_cmp_ps(dk, d1, _CMP_LT_OS)));
		}
		const __m256i in0 = _mm256_cmpgt_epi32(limit, r0), in1 = _mm256_cmpgt_epi32(limit, r1);
		counted = _mm256_sub_epi32(_mm256_sub_epi32(counted, in0), in1);
		rank_sum = _mm256_add_epi32(rank_sum, _mm256_add_epi32(_mm256_and_si256(r0, in0), _mm256_and_si256(r1, in1)));
		uint32_t rk[16];
		_mm256_storeu_si256((__m256i *)rk, r0);
		_mm256_storeu_si256((__m256i *)(rk + 8), r1);
		/* the (distance, index) entries in lane order: one 8-byte copy a candidate */
		nb_entry entry[16];
		const __m256 g0 = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)(bi + i0)));
		const __m256 g1 = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)(bi + i0 + 8)));
		const __m256 lo0 = _mm256_unpacklo_ps(d0, g0), hi0 = _mm256_unpackhi_ps(d0, g0);
		const __m256 lo1 = _mm256_unpacklo_ps(d1, g1), hi1 = _mm256_unpackhi_ps(d1, g1);
		_mm256_storeu_ps((float *)entry, _mm256_permute2f128_ps(lo0, hi0, 0x20));
		_mm256_storeu_ps((float *)entry + 8, _mm256_permute2f128_ps(lo0, hi0, 0x31));
		_mm256_storeu_ps((float *)entry + 16, _mm256_permute2f128_ps(lo1, hi1, 0x20));
		_mm256_storeu_ps((float *)entry + 24, _mm256_permute2f128_ps(lo1, hi1, 0x31));
		const uint32_t m = n - i0 < 16 ? n - i0 : 16;
		for (uint32_t l = 0; l < m; ++l) {
			/* past placed: out[placed], a spare entry (see reserve_scratch) */
			const uint32_t at = rk[l] < placed ? rk[l] : placed;
			out[at] = entry[l];
		}
	}
	/* the lanes' totals: counts in the low half, sums in the high half */
	__m256i both = _mm256_permute2x128_si256(counted, rank_sum, 0x20); /* counted.lo, rank_sum.lo */
	both = _mm256_add_epi32(both, _mm256_permute2x128_si256(counted, rank_sum, 0x31));
	both = _mm256_add_epi32(both, _mm256_shuffle_epi32(both, _MM_SHUFFLE(1, 0, 3, 2)));
	both = _mm256_add_epi32(both, _mm256_shuffle_epi32(both, _MM_SHUFFLE(2, 3, 0, 1)));
	const uint32_t cnt_all = (uint32_t)_mm256_extract_epi32(both, 0), sum_all = (uint32_t)_mm256_extract_epi32(both, 4);
	if (cnt_all != placed || sum_all != placed * (placed - 1) / 2)
		return ORCA_NONE;
	return placed;
}
#endif

static inline bool cpu_has_avx2(void)
{
#ifdef GRID_AVX2
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
#else
	return false;
#endif
}

bool orca_agent_grid_scan_has_avx2(void)
{
	return cpu_has_avx2();
}

/* The AVX2 scan where the CPU has it (tests may ask for SSE2 alone). */
static inline bool grid_avx2(const struct orca_world *w)
{
	return !w->simd_sse2_only && cpu_has_avx2();
}

/* grid_neighbors' disc: first last step's k-th distance plus how far the agents
 * can have moved (the k old neighbours moved at most max_speed * dt each, and
 * so did this agent: a guess for the others' speed, a miss only costs a
 * second scan), then wider, then neighbor_dist. */
typedef struct scan_disc {
	float radius, range_sq, margin;
} scan_disc;

static inline __attribute__((always_inline)) scan_disc first_disc(const struct orca_world *w, uint32_t self,
                                                                  const self_params *p, float full)
{
	scan_disc d = {p->neighbor_dist, full, GUESS_MARGIN};
	const float guess = w->t_guess[self];
	if (guess > 0.0f) {
		const float r = guess + GUESS_MARGIN * p->max_speed * w->dt;
		if (r * r < full) {
			d.radius = r;
			d.range_sq = r * r;
		}
	}
	return d;
}

/* Fewer than k in the disc: the k-th is farther out (and the full range is
 * often too many candidates for the scan). */
static inline __attribute__((always_inline)) void widen_disc(const struct orca_world *w, uint32_t self,
                                                             const self_params *p, float full, scan_disc *d)
{
	d->margin = d->margin < GUESS_MARGIN_WIDE ? GUESS_MARGIN_WIDE : INFINITY;
	const float r = w->t_guess[self] + d->margin * p->max_speed * w->dt;
	if (r * r < full) {
		d->radius = r;
		d->range_sq = r * r;
	} else {
		d->radius = p->neighbor_dist;
		d->range_sq = full;
	}
}

/* A scan's count ends the search (*answer: the k nearest's count, or
 * ORCA_NONE), or the disc must grow. The scan refused equal distances among
 * the k + 1 nearest: the order is the distance order and the k-th is not tied
 * with the next one. */
static inline __attribute__((always_inline)) bool disc_done(uint32_t count, uint32_t k, float range_sq, float full,
                                                            uint32_t *answer)
{
	*answer = count == ORCA_NONE ? ORCA_NONE : (count < k ? count : k);
	return count == ORCA_NONE || count >= k || range_sq >= full;
}

/* The grid's answer, or ORCA_NONE when only the kd-tree can give RVO2's. */
static uint32_t grid_neighbors(const struct orca_world *w, uint32_t self, const self_params *p, uint32_t k,
                               vec2 position, nb_entry *out)
{
	const float full = sqrf(p->neighbor_dist);
	for (scan_disc d = first_disc(w, self, p, full);; widen_disc(w, self, p, full, &d)) {
		uint32_t answer;
		const uint32_t count = grid_scan(w, self, position.x, position.y, d.radius, d.range_sq, k + 1, out);
		if (disc_done(count, k, d.range_sq, full, &answer))
			return answer;
	}
}

#ifdef GRID_AVX2
/* grid_neighbors with the AVX2 scan (inlined: one AVX2 function a query) */
__attribute__((target("avx2,popcnt"))) static uint32_t grid_neighbors_avx2(const struct orca_world *w, uint32_t self,
                                                                             const self_params *p, uint32_t k,
                                                                             vec2 position, nb_entry *out)
{
	const float full = sqrf(p->neighbor_dist);
	for (scan_disc d = first_disc(w, self, p, full);; widen_disc(w, self, p, full, &d)) {
		uint32_t answer;
		const uint32_t count = grid_scan_avx2(w, self, position.x, position.y, d.radius, d.range_sq, k + 1, out);
		if (disc_done(count, k, d.range_sq, full, &answer))
			return answer;
	}
}

__attribute__((target("avx2,popcnt"))) static uint32_t grid_scan_avx2_call(const struct orca_world *w, uint32_t self,
                                                                             float x, float y, float radius,
                                                                             float range_sq, uint32_t cap,
                                                                             nb_entry *out)
{
	return grid_scan_avx2(w, self, x, y, radius, range_sq, cap, out);
}
#endif

/* grid_neighbors in the build the caller chose (avx2: only where the CPU has it) */
static inline uint32_t grid_neighbors_in(const struct orca_world *w, uint32_t self, const self_params *p, uint32_t k,
                                         vec2 position, nb_entry *out, bool avx2)
{
#ifdef GRID_AVX2
	if (avx2)
		return grid_neighbors_avx2(w, self, p, k, position, out);
#endif
	(void)avx2;
	return grid_neighbors(w, self, p, k, position, out);
}

uint32_t orca_agent_grid_scan(const struct orca_world *w, uint32_t self, vec2 position, float radius, uint32_t cap,
                              nb_entry *out, bool avx2)
{
	const float range_sq = radius * radius;
#ifdef GRID_AVX2
	if (avx2 && cpu_has_avx2())
		return grid_scan_avx2_call(w, self, position.x, position.y, radius, range_sq, cap, out);
#endif
	(void)avx2;
	return grid_scan(w, self, position.x, position.y, radius, range_sq, cap, out);
}

uint32_t orca_agent_grid_neighbors(const struct orca_world *w, uint32_t self, uint32_t k, vec2 position, nb_entry *out,
                                   bool avx2)
{
	return grid_neighbors_in(w, self, &w->tself[self], k, position, out, avx2 && cpu_has_avx2());
}

/* Quality mode on the grid order: the max_nb nearest closer than
 * sqrt(range_sq), by (distance, tree index), over every cell the disc
 * touches (no cap on cells or candidates); masks checked. A scan visits
 * ascending indices, so nb_offer's stable order is (distance, index). */
static uint32_t grid_exact_scan(const struct orca_world *w, uint32_t self, const self_params *p, uint32_t max_nb,
                                vec2 position, float range_sq, nb_entry *out)
{
	const float x = position.x, y = position.y;
	scan_box b; /* every cell, however many: no refusal here */
	(void)scan_square_box(w, x, y, sqrtf(range_sq), &b);
	const uint32_t cx0 = b.cx0, cx1 = b.cx1, cy0 = b.cy0, cy1 = b.cy1;
	const bool check_mask = !(w->plain_masks && p->mask == UINT32_MAX);
	const float *tx = w->tpx, *ty = w->tpy;
	uint32_t count = 0;
	for (uint32_t cy = cy0; cy <= cy1; ++cy) {
		const uint32_t row = cy * w->grid_w;
		const uint32_t begin = w->grid_start[row + cx0], end = w->grid_start[row + cx1 + 1];
		for (uint32_t j = begin; j < end; ++j) {
			const float dx = x - tx[j], dy = y - ty[j];
			const float dist_sq = dx * dx + dy * dy;
			if (dist_sq < range_sq && j != self && !(check_mask && !(p->mask & w->tagent[j].layer)))
				nb_offer(out, &count, max_nb, &range_sq, dist_sq, j);
		}
	}
	if (count < max_nb)
		nb_sort(out, count);
	return count;
}

static uint32_t quality_grid_neighbors(struct orca_world *w, uint32_t self, const self_params *p,
                                       uint32_t max_nb, vec2 position, nb_entry *out)
{
	uint32_t count = ORCA_NONE;
	if (w->plain_masks && p->mask == UINT32_MAX) {
		/* the fast scan's answer holds when it has no equal distances
		 * among the k + 1 nearest: then the (distance, index) order is
		 * the distance order */
		count = grid_neighbors_in(w, self, p, max_nb, position, out, grid_avx2(w));
	}
	if (count == ORCA_NONE) {
		/* the same guessed disc, then the whole range, exactly */
		const float full = sqrf(p->neighbor_dist), range_sq = first_disc(w, self, p, full).range_sq;
		count = grid_exact_scan(w, self, p, max_nb, position, range_sq, out);
		if (count < max_nb && range_sq < full)
			count = grid_exact_scan(w, self, p, max_nb, position, full, out);
	}
	w->t_guess[self] = count == max_nb ? sqrtf(out[count - 1].dist_sq) : 0.0f;
	return count;
}

/* The range the kd-tree search starts with. RVO2 starts at neighbor_dist^2
 * and shrinks it to the k-th distance once k candidates are in. Any k valid
 * candidates bound the k-th distance from above, and last step's neighbours
 * are usually almost the nearest: start at the largest of their distances
 * (the next float up, so that a candidate at exactly that distance still gets
 * in). The search visits candidates in the same order and keeps the same k
 * smallest (distance, discovery) keys, so the result is identical; it only
 * prunes earlier. */
static float start_range(const struct orca_world *w, uint32_t slot, const self_params *p, uint32_t max_nb,
                         vec2 position)
{
	const float full = sqrf(p->neighbor_dist);
	const uint32_t hc = w->hint_count[slot];
	if (hc != max_nb || hc == 0)
		return full;
	const uint32_t *h = &w->hint[(size_t)slot * ORCA_HINT_MAX];
	const bool check_mask = !(w->plain_masks && p->mask == UINT32_MAX);
	float bound = 0.0f;
	for (uint32_t k = 0; k < hc; ++k) {
		const uint32_t s = h[k];
		/* px/py by slot are the positions the tree was built from */
		if (s == slot || !w->alive[s] || (check_mask && !(p->mask & w->params[s].layer)))
			return full;
		const float dx = position.x - w->px[s], dy = position.y - w->py[s];
		const float d = dx * dx + dy * dy;
		bound = d > bound ? d : bound;
	}
	return bound < full ? nextafterf(bound, INFINITY) : full;
}

uint32_t orca_agent_neighbors(struct orca_world *w, worker_scratch *sc, uint32_t self, uint32_t slot,
                              const self_params *p, uint32_t max_nb, vec2 position)
{
	nb_entry *out = sc->agent_nb;
	if (w->grid_order)
		return quality_grid_neighbors(w, self, p, max_nb, position, out);
	uint32_t count = ORCA_NONE;
	if (w->grid_on && w->plain_masks && p->mask == UINT32_MAX)
		count = grid_neighbors_in(w, self, p, max_nb, position, out, grid_avx2(w));
	if (count == ORCA_NONE) {
		const float range_sq = start_range(w, slot, p, max_nb, position);
		count = orca_agent_tree_query_neighbors(w, self, range_sq, max_nb, p->mask, out, sc->stack);
		/* remember them for the next step (a stale list is still a valid
		 * bound: any k live agents are) */
		if (count <= ORCA_HINT_MAX) {
			uint32_t *h = &w->hint[(size_t)slot * ORCA_HINT_MAX];
			for (uint32_t k = 0; k < count; ++k)
				h[k] = w->order[out[k].index];
		}
		w->hint_count[slot] = (uint8_t)(count <= ORCA_HINT_MAX ? count : 0);
	}
	/* by tree index: this worker's own run (a write by slot would share
	 * cache lines with the other workers'); back to the slot with the move */
	w->t_guess[self] = count == max_nb ? sqrtf(out[count - 1].dist_sq) : 0.0f;
	return count;
}
