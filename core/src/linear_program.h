/* linear_program.h — ORCA's linear programs (linear_program.c) and the
 * lines they read. A leaf: it knows nothing of the world. */
#ifndef ORCA_LINEAR_PROGRAM_H
#define ORCA_LINEAR_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vec.h"

typedef struct orca_line {
	vec2 point, direction;
} orca_line;

/* A scratch buffer of `cap` orca_lines seen as four arrays of `cap` floats
 * (point x, point y, direction x, direction y): the linear programs read
 * four lines with four loads. Writers leave room for 4 lines past the last. */
typedef struct orca_lines {
	float *px, *py, *dx, *dy;
} orca_lines;

static inline orca_lines orca_lines_of(orca_line *buf, uint32_t cap)
{
	float *f = &buf->point.x;
	const orca_lines l = {f, f + cap, f + 2 * (size_t)cap, f + 3 * (size_t)cap};
	return l;
}

/* avx: the programs' AVX build (the same bits; only where the CPU has AVX). */
uint32_t orca_linear_program2(const orca_lines *lines, uint32_t count, float radius, vec2 opt_velocity,
                              bool direction_opt, vec2 *result, bool avx);
void orca_linear_program3(const orca_lines *lines, uint32_t count, uint32_t obst_lines, uint32_t begin_line,
                          float radius, vec2 *result, orca_lines *proj, bool avx);

#endif /* ORCA_LINEAR_PROGRAM_H */
