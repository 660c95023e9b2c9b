/* linear_program_impl.h — the linear programs' bodies, included by
 * linear_program.c once per instruction set: LP_FN(name) names this copy's
 * functions, LP_AVX (0 or 1) says whether it is compiled for AVX (then the
 * scans take eight lines at a time). Not a header to include elsewhere. */

#ifdef __SSE2__
/* The same answer, four lines at a time. The scalar loop's two exits both
 * answer false, and t_left only grows and t_right only shrinks, so "empty at
 * some line" is "empty at the end": the exits can wait. minf(acc, t) is
 * (t < acc ? t : acc), which is _mm_min_ps(t, acc) (a NaN t is ignored
 * alike), so each lane folds its lines as the scalar loop does, and the
 * lanes' minimum has the scalar minimum's value; only which of +0 and -0 it
 * is could differ, so a zero (or NaN) result is recomputed by the scalar
 * loop. The arrays have room for 3 lines past `line_no` (masked out). */
static inline __attribute__((always_inline)) bool LP_FN(clip_to_lines)(const orca_lines *L, uint32_t line_no, vec2 p, vec2 d, float *t_left_io,
                          float *t_right_io)
{
	if (line_no < 3)
		return clip_to_lines_scalar(L, line_no, p, d, t_left_io, t_right_io);
#if LP_AVX
	/* eight lines at a time, then the eight lanes folded to four (min and
	 * max are exact: any order gives the value) */
	__m128 acc_left, acc_right;
	{
		const __m256 ldx = _mm256_set1_ps(d.x), ldy = _mm256_set1_ps(d.y);
		const __m256 lpx = _mm256_set1_ps(p.x), lpy = _mm256_set1_ps(p.y);
		const __m256 zero = _mm256_setzero_ps(), eps = _mm256_set1_ps(ORCA_EPSILON);
		const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
		const __m256 lane = _mm256_set_ps(7.0f, 6.0f, 5.0f, 4.0f, 3.0f, 2.0f, 1.0f, 0.0f);
		__m256 acc_l = _mm256_set1_ps(*t_left_io), acc_r = _mm256_set1_ps(*t_right_io);
		for (uint32_t i0 = 0; i0 < line_no; i0 += 8) {
			const __m256 px = _mm256_loadu_ps(L->px + i0), py = _mm256_loadu_ps(L->py + i0);
			const __m256 dx = _mm256_loadu_ps(L->dx + i0), dy = _mm256_loadu_ps(L->dy + i0);
			const __m256 valid = _mm256_cmp_ps(lane, _mm256_set1_ps((float)(line_no - i0)), _CMP_LT_OQ);
			const __m256 denominator = _mm256_sub_ps(_mm256_mul_ps(ldx, dy), _mm256_mul_ps(ldy, dx));
			const __m256 numerator = _mm256_sub_ps(_mm256_mul_ps(dx, _mm256_sub_ps(lpy, py)),
			                                       _mm256_mul_ps(dy, _mm256_sub_ps(lpx, px)));
			const __m256 parallel =
			    _mm256_and_ps(valid, _mm256_cmp_ps(_mm256_and_ps(denominator, abs_mask), eps, _CMP_LE_OQ));
			if (_mm256_movemask_ps(_mm256_and_ps(parallel, _mm256_cmp_ps(numerator, zero, _CMP_LT_OQ))))
				return false;
			const __m256 t = _mm256_div_ps(numerator, denominator);
			const __m256 bounds = _mm256_andnot_ps(parallel, valid);
			const __m256 right = _mm256_and_ps(bounds, _mm256_cmp_ps(denominator, zero, _CMP_GE_OQ));
			const __m256 left = _mm256_andnot_ps(right, bounds);
			acc_r = _mm256_or_ps(_mm256_and_ps(right, _mm256_min_ps(t, acc_r)), _mm256_andnot_ps(right, acc_r));
			acc_l = _mm256_or_ps(_mm256_and_ps(left, _mm256_max_ps(t, acc_l)), _mm256_andnot_ps(left, acc_l));
		}
		acc_right = _mm_min_ps(_mm256_castps256_ps128(acc_r), _mm256_extractf128_ps(acc_r, 1));
		acc_left = _mm_max_ps(_mm256_castps256_ps128(acc_l), _mm256_extractf128_ps(acc_l, 1));
	}
#else
	const __m128 ldx = _mm_set1_ps(d.x), ldy = _mm_set1_ps(d.y);
	const __m128 lpx = _mm_set1_ps(p.x), lpy = _mm_set1_ps(p.y);
	const __m128 zero = _mm_setzero_ps(), eps = _mm_set1_ps(ORCA_EPSILON);
	const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
	const __m128i lane = _mm_set_epi32(3, 2, 1, 0);
	__m128 acc_left = _mm_set1_ps(*t_left_io), acc_right = _mm_set1_ps(*t_right_io);
	for (uint32_t i0 = 0; i0 < line_no; i0 += 4) {
		const __m128 px = _mm_loadu_ps(L->px + i0), py = _mm_loadu_ps(L->py + i0);
		const __m128 dx = _mm_loadu_ps(L->dx + i0), dy = _mm_loadu_ps(L->dy + i0);
		const __m128 valid = _mm_castsi128_ps(_mm_cmplt_epi32(lane, _mm_set1_epi32((int)(line_no - i0))));
		const __m128 denominator = _mm_sub_ps(_mm_mul_ps(ldx, dy), _mm_mul_ps(ldy, dx));
		const __m128 numerator =
		    _mm_sub_ps(_mm_mul_ps(dx, _mm_sub_ps(lpy, py)), _mm_mul_ps(dy, _mm_sub_ps(lpx, px)));
		const __m128 parallel = _mm_and_ps(valid, _mm_cmple_ps(_mm_and_ps(denominator, abs_mask), eps));
		if (_mm_movemask_ps(_mm_and_ps(parallel, _mm_cmplt_ps(numerator, zero))))
			return false;
		const __m128 t = _mm_div_ps(numerator, denominator);
		const __m128 bounds = _mm_andnot_ps(parallel, valid);
		const __m128 right = _mm_and_ps(bounds, _mm_cmpge_ps(denominator, zero));
		const __m128 left = _mm_andnot_ps(right, bounds);
		acc_right = _mm_or_ps(_mm_and_ps(right, _mm_min_ps(t, acc_right)), _mm_andnot_ps(right, acc_right));
		acc_left = _mm_or_ps(_mm_and_ps(left, _mm_max_ps(t, acc_left)), _mm_andnot_ps(left, acc_left));
	}
#endif
	acc_right = _mm_min_ps(acc_right, _mm_shuffle_ps(acc_right, acc_right, _MM_SHUFFLE(1, 0, 3, 2)));
	acc_right = _mm_min_ps(acc_right, _mm_shuffle_ps(acc_right, acc_right, _MM_SHUFFLE(2, 3, 0, 1)));
	acc_left = _mm_max_ps(acc_left, _mm_shuffle_ps(acc_left, acc_left, _MM_SHUFFLE(1, 0, 3, 2)));
	acc_left = _mm_max_ps(acc_left, _mm_shuffle_ps(acc_left, acc_left, _MM_SHUFFLE(2, 3, 0, 1)));
	const float t_left = _mm_cvtss_f32(acc_left), t_right = _mm_cvtss_f32(acc_right);
	if (t_left == 0.0f || t_right == 0.0f || t_left != t_left || t_right != t_right) {
		/* through copies: the out-of-line call would otherwise take the
		 * caller's t_left and t_right out of registers */
		float t_l = *t_left_io, t_r = *t_right_io;
		const bool ok = clip_to_lines_recompute(L, line_no, p, d, &t_l, &t_r);
		*t_left_io = t_l;
		*t_right_io = t_r;
		return ok;
	}
	if (t_left > t_right)
		return false;
	*t_left_io = t_left;
	*t_right_io = t_right;
	return true;
}
#else
#define clip_to_lines_base clip_to_lines_scalar
#endif

/* LP1: optimise on line `line_no` subject to the lines before it and the disc. */
static inline __attribute__((always_inline)) bool LP_FN(linear_program1)(const orca_lines *L, uint32_t line_no, float radius, vec2 opt_velocity,
                            bool direction_opt, vec2 *result)
{
	const vec2 point = v2(L->px[line_no], L->py[line_no]), direction = v2(L->dx[line_no], L->dy[line_no]);
	const float dot_product = v2_dot(point, direction);
	const float discriminant = sqrf(dot_product) + sqrf(radius) - v2_abs_sq(point);

	if (discriminant < 0.0f)
		return false; /* the max-speed disc lies wholly outside this line */

	const float sqrt_discriminant = sqrtf(discriminant);
	float t_left = -dot_product - sqrt_discriminant;
	float t_right = -dot_product + sqrt_discriminant;

	if (!LP_FN(clip_to_lines)(L, line_no, point, direction, &t_left, &t_right))
		return false;

	if (direction_opt) {
		if (v2_dot(opt_velocity, direction) > 0.0f)
			*result = v2_add(point, v2_scale(direction, t_right));
		else
			*result = v2_add(point, v2_scale(direction, t_left));
	} else {
		const float t = v2_dot(direction, v2_sub(opt_velocity, point));
		if (t < t_left)
			*result = v2_add(point, v2_scale(direction, t_left));
		else if (t > t_right)
			*result = v2_add(point, v2_scale(direction, t_right));
		else
			*result = v2_add(point, v2_scale(direction, t));
	}
	return true;
}

/* The first line from `begin` on whose violation exceeds `limit`, or `count`. */
static inline __attribute__((always_inline)) uint32_t LP_FN(first_violated)(const orca_lines *L, uint32_t begin, uint32_t count, vec2 result, float limit)
{
#if LP_AVX
	/* eight lines a test, each lane the scalar operations; the arrays have
	 * room for 7 lines past `count` (masked out) */
	const __m256 rx = _mm256_set1_ps(result.x), ry = _mm256_set1_ps(result.y), lim = _mm256_set1_ps(limit);
	for (uint32_t i0 = begin; i0 < count; i0 += 8) {
		const __m256 px = _mm256_loadu_ps(L->px + i0), py = _mm256_loadu_ps(L->py + i0);
		const __m256 dx = _mm256_loadu_ps(L->dx + i0), dy = _mm256_loadu_ps(L->dy + i0);
		const __m256 det = _mm256_sub_ps(_mm256_mul_ps(dx, _mm256_sub_ps(py, ry)),
		                                 _mm256_mul_ps(dy, _mm256_sub_ps(px, rx)));
		unsigned bits = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(det, lim, _CMP_GT_OQ));
		if (count - i0 < 8)
			bits &= (1u << (count - i0)) - 1u;
		if (bits)
			return i0 + (uint32_t)__builtin_ctz(bits);
	}
	return count;
#elif defined(__SSE2__)
	/* four lines a test, each lane the scalar operations; the arrays have
	 * room for 3 lines past `count` (masked out) */
	const __m128 rx = _mm_set1_ps(result.x), ry = _mm_set1_ps(result.y), lim = _mm_set1_ps(limit);
	for (uint32_t i0 = begin; i0 < count; i0 += 4) {
		const __m128 px = _mm_loadu_ps(L->px + i0), py = _mm_loadu_ps(L->py + i0);
		const __m128 dx = _mm_loadu_ps(L->dx + i0), dy = _mm_loadu_ps(L->dy + i0);
		const __m128 det = _mm_sub_ps(_mm_mul_ps(dx, _mm_sub_ps(py, ry)), _mm_mul_ps(dy, _mm_sub_ps(px, rx)));
		unsigned bits = (unsigned)_mm_movemask_ps(_mm_cmpgt_ps(det, lim));
		if (count - i0 < 4)
			bits &= (1u << (count - i0)) - 1u;
		if (bits)
			return i0 + (uint32_t)__builtin_ctz(bits);
	}
	return count;
#else
	for (uint32_t i = begin; i < count; ++i)
		if (violation(L, i, result) > limit)
			return i;
	return count;
#endif
}

/* LP2 with the result in a local (LP1 writes it only when it succeeds, so a
 * failure leaves the last one), compiled once per direction_opt below. */
static inline __attribute__((always_inline)) uint32_t LP_FN(linear_program2_body)(const orca_lines *L, uint32_t count,
                                                                                  float radius, vec2 opt_velocity,
                                                                                  bool direction_opt, vec2 *result)
{
	vec2 r;
	if (direction_opt) {
		/* opt_velocity is a unit direction here */
		r = v2_scale(opt_velocity, radius);
	} else if (v2_abs_sq(opt_velocity) > sqrf(radius)) {
		r = v2_scale(v2_normalize(opt_velocity), radius);
	} else {
		r = opt_velocity;
	}

	for (uint32_t i = LP_FN(first_violated)(L, 0, count, r, 0.0f); i < count;
	     i = LP_FN(first_violated)(L, i + 1, count, r, 0.0f)) {
		/* r violates line i: optimise on it */
		if (!LP_FN(linear_program1)(L, i, radius, opt_velocity, direction_opt, &r)) {
			*result = r;
			return i;
		}
	}
	*result = r;
	return count;
}

/* LP2 towards a preferred velocity (the agents' program). Not inlined into
 * the dispatcher, whose AVX call would pay for this copy's prologue. */
static __attribute__((noinline)) uint32_t LP_FN(linear_program2_velocity)(const orca_lines *L, uint32_t count, float radius, vec2 opt_velocity,
                                                vec2 *result)
{
	return LP_FN(linear_program2_body)(L, count, radius, opt_velocity, false, result);
}

/* LP2 as far as possible in a direction (LP3's inner program) */
static __attribute__((noinline)) uint32_t LP_FN(linear_program2_direction)(const orca_lines *L, uint32_t count, float radius, vec2 direction,
                                                 vec2 *result)
{
	return LP_FN(linear_program2_body)(L, count, radius, direction, true, result);
}

/* LP3's projected lines for line i: the obstacle lines as they are, then,
 * for each agent line j before i, the line where the violations of i and j
 * are equal (RVO2's loop, in its order). Returns how many. */
static inline __attribute__((always_inline)) uint32_t LP_FN(project_lines)(const orca_lines *L, uint32_t obst_lines, uint32_t i, orca_lines *proj)
{
	for (uint32_t k = 0; k < obst_lines; ++k) {
		proj->px[k] = L->px[k];
		proj->py[k] = L->py[k];
		proj->dx[k] = L->dx[k];
		proj->dy[k] = L->dy[k];
	}
	uint32_t n = obst_lines;
	const vec2 pi = v2(L->px[i], L->py[i]), di = v2(L->dx[i], L->dy[i]);
	uint32_t j = obst_lines;
#ifdef __SSE2__
	/* four j at a time: both branches in every lane, the right one kept;
	 * a lane that RVO2 skips (parallel, same direction) sends the block to
	 * the scalar loop, which stores lane by lane */
	const __m128 pix = _mm_set1_ps(pi.x), piy = _mm_set1_ps(pi.y), dix = _mm_set1_ps(di.x), diy = _mm_set1_ps(di.y);
	const __m128 zero = _mm_setzero_ps(), half = _mm_set1_ps(0.5f), one = _mm_set1_ps(1.0f),
	             eps = _mm_set1_ps(ORCA_EPSILON), abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
	for (; j < i; j += 4) {
		/* a short last block: the lanes past i are computed from whatever
		 * the arrays hold there (they have room), written past the last
		 * projected line and never counted */
		const uint32_t lanes = i - j < 4 ? i - j : 4;
		const __m128 pjx = _mm_loadu_ps(L->px + j), pjy = _mm_loadu_ps(L->py + j);
		const __m128 djx = _mm_loadu_ps(L->dx + j), djy = _mm_loadu_ps(L->dy + j);
		const __m128 determinant = _mm_sub_ps(_mm_mul_ps(dix, djy), _mm_mul_ps(diy, djx));
		const __m128 parallel = _mm_cmple_ps(_mm_and_ps(determinant, abs_mask), eps);
		const unsigned counted = (1u << lanes) - 1u;
		if ((_mm_movemask_ps(parallel) & counted) &&
		    (_mm_movemask_ps(_mm_and_ps(parallel, _mm_cmpgt_ps(_mm_add_ps(_mm_mul_ps(dix, djx),
		                                                                  _mm_mul_ps(diy, djy)),
		                                                       zero))) &
		     counted))
			break; /* a line to skip: the rest goes scalar */
		/* parallel, opposite: the midpoint */
		const __m128 mx = _mm_mul_ps(_mm_add_ps(pix, pjx), half), my = _mm_mul_ps(_mm_add_ps(piy, pjy), half);
		/* otherwise the intersection */
		const __m128 s = _mm_div_ps(
		    _mm_sub_ps(_mm_mul_ps(djx, _mm_sub_ps(piy, pjy)), _mm_mul_ps(djy, _mm_sub_ps(pix, pjx))), determinant);
		const __m128 ix = _mm_add_ps(pix, _mm_mul_ps(dix, s)), iy = _mm_add_ps(piy, _mm_mul_ps(diy, s));
		const __m128 px = _mm_or_ps(_mm_and_ps(parallel, mx), _mm_andnot_ps(parallel, ix));
		const __m128 py = _mm_or_ps(_mm_and_ps(parallel, my), _mm_andnot_ps(parallel, iy));
		/* v2_normalize: v * (1 / sqrt(v . v)) */
		const __m128 ux = _mm_sub_ps(djx, dix), uy = _mm_sub_ps(djy, diy);
		const __m128 inv = _mm_div_ps(one, _mm_sqrt_ps(_mm_add_ps(_mm_mul_ps(ux, ux), _mm_mul_ps(uy, uy))));
		_mm_storeu_ps(proj->px + n, px);
		_mm_storeu_ps(proj->py + n, py);
		_mm_storeu_ps(proj->dx + n, _mm_mul_ps(ux, inv));
		_mm_storeu_ps(proj->dy + n, _mm_mul_ps(uy, inv));
		n += lanes;
	}
#endif
	for (; j < i; ++j) {
		const vec2 pj = v2(L->px[j], L->py[j]), dj = v2(L->dx[j], L->dy[j]);
		vec2 point;
		const float determinant = v2_det(di, dj);

		if (fabsf(determinant) <= ORCA_EPSILON) {
			/* parallel */
			if (v2_dot(di, dj) > 0.0f)
				continue; /* same direction */
			point = v2_scale(v2_add(pi, pj), 0.5f);
		} else {
			const float s = v2_det(dj, v2_sub(pi, pj)) / determinant;
			point = v2_add(pi, v2_scale(di, s));
		}
		const vec2 direction = v2_normalize(v2_sub(dj, di));
		proj->px[n] = point.x;
		proj->py[n] = point.y;
		proj->dx[n] = direction.x;
		proj->dy[n] = direction.y;
		++n;
	}
	return n;
}

static __attribute__((noinline)) void LP_FN(linear_program3)(const orca_lines *L, uint32_t count, uint32_t obst_lines, uint32_t begin_line,
                          float radius, vec2 *result, orca_lines *proj)
{
	float distance = 0.0f;

	for (uint32_t i = LP_FN(first_violated)(L, begin_line, count, *result, distance); i < count;
	     i = LP_FN(first_violated)(L, i + 1, count, *result, distance)) {
		/* result does not satisfy line i */
		const uint32_t proj_count = LP_FN(project_lines)(L, obst_lines, i, proj);
		const vec2 temp = *result;
		if (LP_FN(linear_program2_direction)(proj, proj_count, radius, v2(-L->dy[i], L->dx[i]), result) <
		    proj_count) {
			/* In principle impossible: the result is feasible by
			 * construction; a failure is float error, keep the old one. */
			*result = temp;
		}
		distance = violation(L, i, *result);
	}
}
