/* polygon_check.c — what a valid obstacle is (see orca_polygon_check in orca.h).
 * Shared by the engine (orca_obstacle_add) and the server's request validation,
 * so both refuse the same polygons with the same reason. Allocates nothing. Computed in double:
 * the inputs are floats, so the products below are exact or nearly, and the
 * verdict is the same on every platform. No libm call. */
#include <math.h>
#include <stdlib.h>

#include "orca/orca.h"

typedef struct dvec {
	double x, y;
} dvec;

static dvec at(const orca_vec2 *v, uint32_t count, uint32_t i) {
	const orca_vec2 p = v[i % count];
	return (dvec){p.x, p.y};
}

static double cross(dvec o, dvec a, dvec b) {
	return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}

static double dist_sq(dvec a, dvec b) {
	return (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y);
}

/* Squared distance from p to the segment a-b. */
static double seg_dist_sq(dvec p, dvec a, dvec b) {
	const double dx = b.x - a.x, dy = b.y - a.y;
	const double len_sq = dx * dx + dy * dy;
	double t = len_sq > 0.0 ? ((p.x - a.x) * dx + (p.y - a.y) * dy) / len_sq : 0.0;
	t = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
	const dvec q = {a.x + t * dx, a.y + t * dy};
	return dist_sq(p, q);
}

static int sign(double v) {
	return (v > 0.0) - (v < 0.0);
}

/* Do the closed segments a-b and c-d share a point? */
static bool segments_meet(dvec a, dvec b, dvec c, dvec d) {
	const int d1 = sign(cross(a, b, c)), d2 = sign(cross(a, b, d));
	const int d3 = sign(cross(c, d, a)), d4 = sign(cross(c, d, b));
	if (d1 * d2 < 0 && d3 * d4 < 0) return true;
	/* Touching or collinear overlap: an endpoint on the other segment. */
	if (d1 == 0 && seg_dist_sq(c, a, b) == 0.0) return true;
	if (d2 == 0 && seg_dist_sq(d, a, b) == 0.0) return true;
	if (d3 == 0 && seg_dist_sq(a, c, d) == 0.0) return true;
	if (d4 == 0 && seg_dist_sq(b, c, d) == 0.0) return true;
	return false;
}

static int fail(orca_polygon_issue *issue, uint32_t index, const char *reason) {
	if (issue) {
		issue->reason = reason;
		issue->index = index;
	}
	return ORCA_ERR_BAD_POLYGON;
}

#define MIN_FEATURE ((double)ORCA_POLYGON_MIN_FEATURE)

/* Edges i and j (j > i) that are not neighbours must not meet. */
static int check_cross(const orca_vec2 *v, uint32_t n, uint32_t i, uint32_t j, orca_polygon_issue *issue) {
	if (j == i + 1 || (i == 0 && j == n - 1)) return ORCA_OK;
	if (segments_meet(at(v, n, i), at(v, n, i + 1), at(v, n, j), at(v, n, j + 1)))
		return fail(issue, i, "two edges cross or touch (the polygon is not simple)");
	return ORCA_OK;
}

/* Each end of edge i that edge j does not share keeps `min` from edge j, and the other way round. */
static int check_sliver(const orca_vec2 *v, uint32_t n, uint32_t i, uint32_t j, orca_polygon_issue *issue) {
	const uint32_t ends[2][2] = {{i, (i + 1) % n}, {j, (j + 1) % n}};
	for (int e = 0; e < 2; ++e) {
		const uint32_t *mine = ends[e], *other = ends[1 - e];
		for (int k = 0; k < 2; ++k) {
			const uint32_t p = mine[k];
			if (p == other[0] || p == other[1]) continue;
			if (seg_dist_sq(at(v, n, p), at(v, n, other[0]), at(v, n, other[1])) < MIN_FEATURE * MIN_FEATURE)
				return fail(issue, p, "a vertex closer than 0.01 to an edge (a sliver)");
		}
	}
	return ORCA_OK;
}

typedef int (*pair_check)(const orca_vec2 *v, uint32_t n, uint32_t i, uint32_t j, orca_polygon_issue *issue);

typedef struct edge_box {
	double x0, x1, y0, y1; /* the edge's box grown by MIN_FEATURE */
	uint32_t edge;
} edge_box;

static int by_left_side(const void *a_, const void *b_) {
	const edge_box *a = a_, *b = b_;
	if (a->x0 != b->x0) return a->x0 < b->x0 ? -1 : 1;
	return a->edge < b->edge ? -1 : a->edge > b->edge; /* a total order: the same on every platform */
}

static double lesser(double a, double b) {
	return a < b ? a : b;
}

static double greater(double a, double b) {
	return a > b ? a : b;
}

static double magnitude(double a) {
	return a < 0.0 ? -a : a;
}

static edge_box make_box(const orca_vec2 *v, uint32_t n, uint32_t e) {
	const dvec a = at(v, n, e), b = at(v, n, e + 1);
	return (edge_box){lesser(a.x, b.x) - MIN_FEATURE, greater(a.x, b.x) + MIN_FEATURE,
	                  lesser(a.y, b.y) - MIN_FEATURE, greater(a.y, b.y) + MIN_FEATURE, e};
}

static bool boxes_overlap(const edge_box *a, const edge_box *b) {
	return a->x0 <= b->x1 && b->x0 <= a->x1 && a->y0 <= b->y1 && b->y0 <= a->y1;
}

/* Every pair of edges whose grown boxes overlap must pass check_cross, then
 * every such pair check_sliver (lower edge first). Up to SWEEP_MAX edges the
 * boxes are sorted by their left side on the stack and swept; beyond that
 * (never within the server's limits) every pair is tried, box test first. */
#define SWEEP_MAX 1024u
static int check_pairs(const orca_vec2 *v, uint32_t n, orca_polygon_issue *issue) {
	static const pair_check checks[2] = {check_cross, check_sliver};
	if (n > SWEEP_MAX) {
		for (int c = 0; c < 2; ++c)
			for (uint32_t i = 0; i < n; ++i) {
				const edge_box a = make_box(v, n, i);
				for (uint32_t j = i + 1; j < n; ++j) {
					const edge_box b = make_box(v, n, j);
					if (!boxes_overlap(&a, &b)) continue;
					int rc = checks[c](v, n, i, j, issue);
					if (rc != ORCA_OK) return rc;
				}
			}
		return ORCA_OK;
	}
	edge_box boxes[SWEEP_MAX];
	for (uint32_t e = 0; e < n; ++e) boxes[e] = make_box(v, n, e);
	qsort(boxes, n, sizeof boxes[0], by_left_side);
	for (int c = 0; c < 2; ++c)
		for (uint32_t a = 0; a < n; ++a)
			for (uint32_t b = a + 1; b < n && boxes[b].x0 <= boxes[a].x1; ++b) {
				if (!boxes_overlap(&boxes[a], &boxes[b])) continue;
				const uint32_t i = boxes[a].edge < boxes[b].edge ? boxes[a].edge : boxes[b].edge;
				const uint32_t j = boxes[a].edge < boxes[b].edge ? boxes[b].edge : boxes[a].edge;
				int rc = checks[c](v, n, i, j, issue);
				if (rc != ORCA_OK) return rc;
			}
	return ORCA_OK;
}

int orca_polygon_check(const orca_vec2 *v, uint32_t n, orca_polygon_issue *issue) {
	const double min = ORCA_POLYGON_MIN_FEATURE, min_sq = min * min;
	if (issue) *issue = (orca_polygon_issue){NULL, 0, false};
	if (!v || n < 2) return fail(issue, 0, "fewer than 2 vertices");
	for (uint32_t i = 0; i < n; ++i)
		if (!isfinite(v[i].x) || !isfinite(v[i].y) || magnitude(v[i].x) > 1e9 || magnitude(v[i].y) > 1e9)
			return fail(issue, i, "a coordinate is not finite or beyond 1e9");
	const uint32_t edges = n == 2 ? 1 : n;
	for (uint32_t i = 0; i < edges; ++i)
		if (dist_sq(at(v, n, i), at(v, n, i + 1)) < min_sq)
			return fail(issue, i, "an edge shorter than 0.01 (a duplicate vertex?)");
	if (n == 2) return ORCA_OK;

	/* A vertex in line with its neighbours: a collinear point, or the tip of a
	 * spike that goes out and comes back the same way. */
	for (uint32_t i = 0; i < n; ++i) {
		const dvec a = at(v, n, i + n - 1), b = at(v, n, i), c = at(v, n, i + 1);
		/* |sin| of the turn at b below 1e-4 (0.006 degrees): straight on or straight back. */
		const double turn = cross(a, b, c);
		if (turn * turn <= 1e-8 * dist_sq(a, b) * dist_sq(b, c))
			return fail(issue, i, "three vertices on one line (collinear or back-and-forth)");
	}
	/* Simple (edges meet only when neighbours, at their shared vertex), then no
	 * sliver (no vertex within `min` of an edge it is not on). Only pairs of edges
	 * whose boxes, grown by `min`, overlap can fail either test: a sweep over the
	 * boxes sorted by their left side finds those pairs, about n log n work for
	 * the polygons games use instead of n^2 (75 polygons of 256 vertices must
	 * not stall a tick). Crossing is reported before slivers. */
	int rc = check_pairs(v, n, issue);
	if (rc != ORCA_OK) return rc;
	double area2 = 0.0;
	for (uint32_t i = 0; i < n; ++i) {
		const dvec a = at(v, n, i), b = at(v, n, i + 1);
		area2 += a.x * b.y - b.x * a.y;
	}
	if (magnitude(area2) * 0.5 < min) return fail(issue, 0, "area smaller than 0.01");
	if (issue) issue->clockwise = area2 < 0.0;
	return ORCA_OK;
}
