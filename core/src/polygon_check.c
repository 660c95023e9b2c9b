/* polygon_check.c — what a valid obstacle is (see orca_polygon_check in orca.h).
 * Shared by the engine (orca_obstacle_add) and the server's request validation,
 * so both refuse the same polygons with the same reason. Computed in double:
 * the inputs are floats, so the products below are exact or nearly, and the
 * verdict is the same on every platform. */
#include <math.h>

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

int orca_polygon_check(const orca_vec2 *v, uint32_t n, orca_polygon_issue *issue) {
	const double min = ORCA_POLYGON_MIN_FEATURE, min_sq = min * min;
	if (issue) *issue = (orca_polygon_issue){NULL, 0, false};
	if (!v || n < 2) return fail(issue, 0, "fewer than 2 vertices");
	for (uint32_t i = 0; i < n; ++i)
		if (!isfinite(v[i].x) || !isfinite(v[i].y) || fabsf(v[i].x) > 1e9f || fabsf(v[i].y) > 1e9f)
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
		if (fabs(turn) <= 1e-4 * sqrt(dist_sq(a, b) * dist_sq(b, c)))
			return fail(issue, i, "three vertices on one line (collinear or back-and-forth)");
	}
	/* Simple: edges i and j meet only when they are neighbours. */
	for (uint32_t i = 0; i < n; ++i) {
		const dvec a = at(v, n, i), b = at(v, n, i + 1);
		for (uint32_t j = i + 2; j < n; ++j) {
			if (i == 0 && j == n - 1) continue; /* the closing edge neighbours the first */
			if (segments_meet(a, b, at(v, n, j), at(v, n, j + 1)))
				return fail(issue, i, "two edges cross or touch (the polygon is not simple)");
		}
	}
	/* No sliver: every vertex keeps its distance from the edges it is not on. */
	for (uint32_t i = 0; i < n; ++i) {
		const dvec p = at(v, n, i);
		for (uint32_t j = 0; j < n; ++j) {
			if (j == i || (j + 1) % n == i) continue; /* the edges at p */
			if (seg_dist_sq(p, at(v, n, j), at(v, n, j + 1)) < min_sq)
				return fail(issue, i, "a vertex closer than 0.01 to an edge (a sliver)");
		}
	}
	double area2 = 0.0;
	for (uint32_t i = 0; i < n; ++i) {
		const dvec a = at(v, n, i), b = at(v, n, i + 1);
		area2 += a.x * b.y - b.x * a.y;
	}
	if (fabs(area2) * 0.5 < min) return fail(issue, 0, "area smaller than 0.01");
	if (issue) issue->clockwise = area2 < 0.0;
	return ORCA_OK;
}
