/* vec.h — float32 2-D vector helpers with RVO2's exact operation order, so the
 * engine rounds like RVO2 does (see tests/data/ref/RVO2-README.md): dot is
 * a.x*b.x + a.y*b.y, det is a.x*b.y - a.y*b.x, and v / s is v * (1 / s). */
#ifndef ORCA_VEC_H
#define ORCA_VEC_H

#include <math.h>
#include <stdint.h>

#include "orca/orca.h"

#define ORCA_EPSILON 0.00001f

typedef orca_vec2 vec2;

static inline vec2 v2(float x, float y)
{
	vec2 r = {x, y};
	return r;
}
static inline vec2 v2_add(vec2 a, vec2 b) { return v2(a.x + b.x, a.y + b.y); }
static inline vec2 v2_sub(vec2 a, vec2 b) { return v2(a.x - b.x, a.y - b.y); }
static inline vec2 v2_neg(vec2 a) { return v2(-a.x, -a.y); }
/* s * v and v * s round alike (one product per component). */
static inline vec2 v2_scale(vec2 a, float s) { return v2(a.x * s, a.y * s); }
/* RVO2 divides by multiplying with the reciprocal. */
static inline vec2 v2_div(vec2 a, float s)
{
	const float inv = 1.0f / s;
	return v2(a.x * inv, a.y * inv);
}
static inline float v2_dot(vec2 a, vec2 b) { return a.x * b.x + a.y * b.y; }
static inline float v2_det(vec2 a, vec2 b) { return a.x * b.y - a.y * b.x; }
static inline float v2_abs_sq(vec2 a) { return v2_dot(a, a); }
static inline float v2_abs(vec2 a) { return sqrtf(v2_dot(a, a)); }
static inline vec2 v2_normalize(vec2 a) { return v2_div(a, v2_abs(a)); }
static inline float sqrf(float a) { return a * a; }
/* std::max / std::min as RVO2 uses them (no NaN reaches here). */
static inline float maxf(float a, float b) { return (a < b) ? b : a; }
static inline float minf(float a, float b) { return (b < a) ? b : a; }
/* Positive when c lies left of the line a->b. */
static inline float left_of(vec2 a, vec2 b, vec2 c) { return v2_det(v2_sub(a, c), v2_sub(b, a)); }

static inline float dist_sq_point_segment(vec2 a, vec2 b, vec2 c)
{
	const float r = v2_dot(v2_sub(c, a), v2_sub(b, a)) / v2_abs_sq(v2_sub(b, a));
	if (r < 0.0f)
		return v2_abs_sq(v2_sub(c, a));
	if (r > 1.0f)
		return v2_abs_sq(v2_sub(c, b));
	return v2_abs_sq(v2_sub(c, v2_add(a, v2_scale(v2_sub(b, a), r))));
}

/* The cell of coordinate v on a grid starting at origin with 1/cell inv,
 * clamped to [0, last]. Truncation is monotone, so a point never lands left
 * of a bound that is left of it: a box's cell range always covers the box. */
static inline uint32_t orca_cell_of(float v, float origin, float inv, float last)
{
	const float c = (v - origin) * inv;
	if (!(c > 0.0f))
		return 0;
	if (c >= last)
		return (uint32_t)last;
	return (uint32_t)c;
}

#endif /* ORCA_VEC_H */
