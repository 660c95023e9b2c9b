/* bench_clock.h — the clocks and the median that the C benchmarks under
 * tests/bench report with, so every figure is read the same way. */
#ifndef CROWD_BENCH_CLOCK_H
#define CROWD_BENCH_CLOCK_H

#include <stdlib.h>
#include <time.h>

static inline double bench_clock_ms(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/** Wall-clock time. */
static inline double wall_ms(void) { return bench_clock_ms(CLOCK_MONOTONIC); }

/** CPU time of the whole process: on a shared machine it shows what the work
 * costs when the cores are not taken away by other programs. */
static inline double cpu_ms(void) { return bench_clock_ms(CLOCK_PROCESS_CPUTIME_ID); }

/** CPU time of the calling thread. */
static inline double thread_cpu_ms(void) { return bench_clock_ms(CLOCK_THREAD_CPUTIME_ID); }

static inline int bench_cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/** The median of v[0..n) (sorts v). */
static inline double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
