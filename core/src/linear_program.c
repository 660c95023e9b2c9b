/* linear_program.c — the three linear programs of ORCA (the article's sections
 * 2.3.4.1-2.3.4.3, RVO2's linearProgram1/2/3): the best velocity inside every
 * half-plane and the max-speed disc, and the 3-D fallback that minimises the
 * largest violation when the half-planes have no common point. */
#include "internal.h"

/* LP1: optimise on line `line_no` subject to the lines before it and the disc. */
static bool linear_program1(const orca_line *lines, uint32_t line_no, float radius, vec2 opt_velocity,
                            bool direction_opt, vec2 *result)
{
	const orca_line ln = lines[line_no];
	const float dot_product = v2_dot(ln.point, ln.direction);
	const float discriminant = sqrf(dot_product) + sqrf(radius) - v2_abs_sq(ln.point);

	if (discriminant < 0.0f)
		return false; /* the max-speed disc lies wholly outside this line */

	const float sqrt_discriminant = sqrtf(discriminant);
	float t_left = -dot_product - sqrt_discriminant;
	float t_right = -dot_product + sqrt_discriminant;

	for (uint32_t i = 0; i < line_no; ++i) {
		const float denominator = v2_det(ln.direction, lines[i].direction);
		const float numerator = v2_det(lines[i].direction, v2_sub(ln.point, lines[i].point));

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

	if (direction_opt) {
		if (v2_dot(opt_velocity, ln.direction) > 0.0f)
			*result = v2_add(ln.point, v2_scale(ln.direction, t_right));
		else
			*result = v2_add(ln.point, v2_scale(ln.direction, t_left));
	} else {
		const float t = v2_dot(ln.direction, v2_sub(opt_velocity, ln.point));
		if (t < t_left)
			*result = v2_add(ln.point, v2_scale(ln.direction, t_left));
		else if (t > t_right)
			*result = v2_add(ln.point, v2_scale(ln.direction, t_right));
		else
			*result = v2_add(ln.point, v2_scale(ln.direction, t));
	}
	return true;
}

uint32_t orca_linear_program2(const orca_line *lines, uint32_t count, float radius, vec2 opt_velocity,
                              bool direction_opt, vec2 *result)
{
	if (direction_opt) {
		/* opt_velocity is a unit direction here */
		*result = v2_scale(opt_velocity, radius);
	} else if (v2_abs_sq(opt_velocity) > sqrf(radius)) {
		*result = v2_scale(v2_normalize(opt_velocity), radius);
	} else {
		*result = opt_velocity;
	}

	for (uint32_t i = 0; i < count; ++i) {
		if (v2_det(lines[i].direction, v2_sub(lines[i].point, *result)) > 0.0f) {
			/* result violates line i: optimise on it */
			const vec2 temp = *result;
			if (!linear_program1(lines, i, radius, opt_velocity, direction_opt, result)) {
				*result = temp;
				return i;
			}
		}
	}
	return count;
}

void orca_linear_program3(const orca_line *lines, uint32_t count, uint32_t obst_lines, uint32_t begin_line,
                          float radius, vec2 *result, orca_line *proj)
{
	float distance = 0.0f;

	for (uint32_t i = begin_line; i < count; ++i) {
		if (v2_det(lines[i].direction, v2_sub(lines[i].point, *result)) > distance) {
			/* result does not satisfy line i */
			uint32_t proj_count = obst_lines;
			for (uint32_t k = 0; k < obst_lines; ++k)
				proj[k] = lines[k];

			for (uint32_t j = obst_lines; j < i; ++j) {
				orca_line line;
				const float determinant = v2_det(lines[i].direction, lines[j].direction);

				if (fabsf(determinant) <= ORCA_EPSILON) {
					/* parallel */
					if (v2_dot(lines[i].direction, lines[j].direction) > 0.0f)
						continue; /* same direction */
					line.point = v2_scale(v2_add(lines[i].point, lines[j].point), 0.5f);
				} else {
					const float s = v2_det(lines[j].direction, v2_sub(lines[i].point, lines[j].point)) /
					                determinant;
					line.point = v2_add(lines[i].point, v2_scale(lines[i].direction, s));
				}
				line.direction = v2_normalize(v2_sub(lines[j].direction, lines[i].direction));
				proj[proj_count++] = line;
			}

			const vec2 temp = *result;
			if (orca_linear_program2(proj, proj_count, radius, v2(-lines[i].direction.y, lines[i].direction.x),
			                         true, result) < proj_count) {
				/* In principle impossible: the result is feasible by
				 * construction; a failure is float error, keep the old one. */
				*result = temp;
			}
			distance = v2_det(lines[i].direction, v2_sub(lines[i].point, *result));
		}
	}
}
