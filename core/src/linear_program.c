/* linear_program.c — the three linear programs of ORCA (the article's sections
 * 2.3.4.1-2.3.4.3, RVO2's linearProgram1/2/3): the best velocity inside every
 * half-plane and the max-speed disc, and the 3-D fallback that minimises the
 * largest violation when the half-planes have no common point.
 *
 * Every float operation is RVO2's, in RVO2's order. The lines are held as
 * four arrays (point x, point y, direction x, direction y) so that the SIMD
 * paths read four (SSE2) or eight (AVX) lines with four loads: each lane
 * computes exactly the scalar expression (SSE and AVX arithmetic, division
 * and square root round like their scalar forms); only tests, and the order
 * in which results of exact operations (min, max) are combined, are grouped
 * — see each function in linear_program_impl.h, which is compiled here
 * twice on x86-64: for baseline SSE2 and, for CPUs that have it, for AVX. */
#include "linear_program.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#define ORCA_LP_HAVE_AVX 1
#endif

/* RVO2's loop of LP1 over the lines before `line_no`: narrows [t_left,
 * t_right] on line (p, d); false when they leave it empty or a parallel line
 * excludes it. Inlined: most LP1 calls clip against 0, 1 or 2 lines, where a
 * call would cost more than the loop. */
static inline __attribute__((always_inline)) bool clip_to_lines_scalar(const orca_lines *L, uint32_t line_no, vec2 p, vec2 d, float *t_left_io,
                                 float *t_right_io)
{
	float t_left = *t_left_io, t_right = *t_right_io;
	for (uint32_t i = 0; i < line_no; ++i) {
		const vec2 di = v2(L->dx[i], L->dy[i]), pi = v2(L->px[i], L->py[i]);
		const float denominator = v2_det(d, di);
		const float numerator = v2_det(di, v2_sub(p, pi));

		if (fabsf(denominator) <= ORCA_EPSILON) {
			/* (almost) parallel */
			if (numerator < 0.0f)
				return false;
			continue;
		}

		const float t = numerator / denominator;
		if (denominator >= 0.0f)
			t_right = minf(t_right, t); /* line i bounds on the right */
		else
			t_left = maxf(t_left, t); /* line i bounds on the left */

		if (t_left > t_right)
			return false;
	}
	*t_left_io = t_left;
	*t_right_io = t_right;
	return true;
}

#ifdef __SSE2__
/* The scalar loop out of line, for the SIMD loop's rare recomputation. */
static __attribute__((noinline)) bool clip_to_lines_recompute(const orca_lines *L, uint32_t line_no, vec2 p, vec2 d,
                                                              float *t_left_io, float *t_right_io)
{
	return clip_to_lines_scalar(L, line_no, p, d, t_left_io, t_right_io);
}

#endif

/* How far `result` is on the wrong side of line i (RVO2's
 * det(direction, point - result)). */
static inline float violation(const orca_lines *L, uint32_t i, vec2 result)
{
	return v2_det(v2(L->dx[i], L->dy[i]), v2_sub(v2(L->px[i], L->py[i]), result));
}

/* The programs for baseline x86-64 (SSE2) or any other target (scalar). */
#define LP_FN(name) name##_base
#define LP_AVX 0
#include "linear_program_impl.h"
#undef LP_FN
#undef LP_AVX

#ifdef ORCA_LP_HAVE_AVX
/* The same programs with AVX: the same operations, VEX-encoded (three
 * operands, no register copies), and the line scans eight lines wide. */
#include <immintrin.h>
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx")
#endif
#define LP_FN(name) name##_avx
#define LP_AVX 1
#include "linear_program_impl.h"
#undef LP_FN
#undef LP_AVX
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

uint32_t orca_linear_program2(const orca_lines *L, uint32_t count, float radius, vec2 opt_velocity,
                              bool direction_opt, vec2 *result, bool avx)
{
#ifdef ORCA_LP_HAVE_AVX
	if (avx)
		return direction_opt ? linear_program2_direction_avx(L, count, radius, opt_velocity, result)
		                     : linear_program2_velocity_avx(L, count, radius, opt_velocity, result);
#endif
	(void)avx;
	return direction_opt ? linear_program2_direction_base(L, count, radius, opt_velocity, result)
	                     : linear_program2_velocity_base(L, count, radius, opt_velocity, result);
}

void orca_linear_program3(const orca_lines *L, uint32_t count, uint32_t obst_lines, uint32_t begin_line,
                          float radius, vec2 *result, orca_lines *proj, bool avx)
{
#ifdef ORCA_LP_HAVE_AVX
	if (avx) {
		linear_program3_avx(L, count, obst_lines, begin_line, radius, result, proj);
		return;
	}
#endif
	(void)avx;
	linear_program3_base(L, count, obst_lines, begin_line, radius, result, proj);
}
