/* test_tick_queue.c — the worlds' tick queue gives due deadlines earliest
 * first (ties in the order queued), never one not yet due, and survives
 * removals from anywhere (checked against a brute-force minimum on random
 * operations); phase placement spreads worlds opened one after another evenly
 * over their period and puts each first deadline at its phase. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "tick_queue.h"

#define PERIOD 50000000ull /* 20 Hz */

static void due_in_deadline_order(void **state) {
	(void)state;
	tick_queue q = {0};
	tick_entry e[6];
	const uint64_t deadlines[6] = {300, 100, 200, 100, 500, 50};
	for (int i = 0; i < 6; i++) {
		tick_entry_init(&e[i]);
		assert_true(tick_queue_push(&q, &e[i], deadlines[i]));
		assert_true(tick_entry_queued(&e[i]));
	}
	assert_ptr_equal(tick_queue_peek(&q), &e[5]);
	assert_null(tick_queue_pop_due(&q, 49)); /* nothing due yet */
	assert_ptr_equal(tick_queue_pop_due(&q, 250), &e[5]);
	assert_ptr_equal(tick_queue_pop_due(&q, 250), &e[1]); /* the two at 100: the first queued first */
	assert_ptr_equal(tick_queue_pop_due(&q, 250), &e[3]);
	assert_ptr_equal(tick_queue_pop_due(&q, 250), &e[2]);
	assert_null(tick_queue_pop_due(&q, 250)); /* 300 is not due at 250 */
	assert_false(tick_entry_queued(&e[5]));
	tick_queue_remove(&q, &e[5]); /* not queued: nothing happens */
	assert_int_equal(q.count, 2);
	tick_queue_remove(&q, &e[0]);
	assert_ptr_equal(tick_queue_pop_due(&q, 1000), &e[4]);
	assert_null(tick_queue_peek(&q));
	tick_queue_free(&q);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void) {
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* random pushes, removals and pops against the brute-force earliest */
static void matches_brute_force(void **state) {
	(void)state;
	enum { N = 64 };
	tick_queue q = {0};
	tick_entry e[N];
	uint64_t order[N]; /* the queued order of each queued entry, as the queue keeps it */
	uint64_t seq = 0;
	for (int i = 0; i < N; i++) tick_entry_init(&e[i]);
	for (int step = 0; step < 20000; step++) {
		int i = (int)(rnd() % N);
		uint64_t op = rnd() % 3;
		if (op == 0 && !tick_entry_queued(&e[i])) {
			assert_true(tick_queue_push(&q, &e[i], rnd() % 16)); /* few values: many ties */
			order[i] = seq++;
		} else if (op == 1) {
			tick_queue_remove(&q, &e[i]);
		} else {
			uint64_t now = rnd() % 16;
			int best = -1;
			for (int k = 0; k < N; k++)
				if (tick_entry_queued(&e[k]) && e[k].deadline_ns <= now &&
				    (best < 0 || e[k].deadline_ns < e[best].deadline_ns ||
				     (e[k].deadline_ns == e[best].deadline_ns && order[k] < order[best])))
					best = k;
			tick_entry *got = tick_queue_pop_due(&q, now);
			if (best < 0)
				assert_null(got);
			else
				assert_ptr_equal(got, &e[best]);
		}
		uint32_t queued = 0;
		for (int k = 0; k < N; k++) queued += tick_entry_queued(&e[k]);
		assert_int_equal(q.count, queued);
	}
	tick_queue_free(&q);
}

/* the largest gap between neighbouring phases (the wrap-around one included) */
static uint64_t largest_gap(const uint64_t *placed, uint32_t n) {
	uint64_t *p = malloc(sizeof *p * n);
	memcpy(p, placed, sizeof *p * n);
	for (uint32_t i = 1; i < n; i++) /* insertion sort: n is small */
		for (uint32_t k = i; k > 0 && p[k - 1] > p[k]; k--) {
			uint64_t t = p[k];
			p[k] = p[k - 1];
			p[k - 1] = t;
		}
	uint64_t gap = PERIOD - p[n - 1] + p[0];
	for (uint32_t i = 0; i + 1 < n; i++)
		if (p[i + 1] - p[i] > gap) gap = p[i + 1] - p[i];
	free(p);
	return gap;
}

static void phases_spread_evenly(void **state) {
	(void)state;
	uint64_t placed[256], scratch[256];
	assert_int_equal(tick_phase_place(PERIOD, scratch, 0), 0);
	placed[0] = 0;
	for (uint32_t n = 1; n < 256; n++) {
		memcpy(scratch, placed, sizeof placed[0] * n);
		uint64_t phase = tick_phase_place(PERIOD, scratch, n);
		assert_true(phase < PERIOD);
		for (uint32_t k = 0; k < n; k++) assert_int_not_equal(phase, placed[k]);
		placed[n] = phase;
		/* halving the widest gap each time: never a gap over twice the even share */
		uint64_t gap = largest_gap(placed, n + 1);
		assert_true(gap <= 2 * (PERIOD / (n + 1)) + 2);
	}
	/* the first four: a quarter period apart */
	assert_int_equal(placed[1], PERIOD / 2);
	assert_int_equal(placed[2], PERIOD / 4);
	assert_int_equal(placed[3], 3 * PERIOD / 4);
}

static void phase_fills_the_gap_a_closed_world_left(void **state) {
	(void)state;
	/* worlds at 0, 10, 20, 30, 40 ms; the one at 20 closed */
	uint64_t phases[4] = {40000000, 0, 30000000, 10000000};
	assert_int_equal(tick_phase_place(PERIOD, phases, 4), 20000000);
	/* one world: the opposite side of the period */
	uint64_t one[1] = {45000000};
	assert_int_equal(tick_phase_place(PERIOD, one, 1), (45000000 + PERIOD / 2) % PERIOD);
}

static void first_deadline_at_the_phase(void **state) {
	(void)state;
	const uint64_t now = 1234567890123ull;
	for (uint64_t phase = 0; phase < PERIOD; phase += PERIOD / 7) {
		uint64_t d = tick_phase_first_deadline(now, PERIOD, phase);
		assert_true(d >= now);
		assert_true(d - now < PERIOD);
		assert_int_equal(d % PERIOD, phase);
	}
	assert_int_equal(tick_phase_first_deadline(PERIOD * 3, PERIOD, 0), PERIOD * 3); /* exactly now */
}

static int compare_float(const void *a, const void *b) {
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* The selection gives what a sort gives at floor(0.99 n), for every n up to
 * a ring's size, with ties (values drawn from a few) and without. */
static void lateness_p99_is_the_sorted_value(void **state) {
	(void)state;
	static float v[TICK_LATENESS_SAMPLES_MAX], sorted[TICK_LATENESS_SAMPLES_MAX];
	assert_true(tick_lateness_p99(v, 0) == 0.0f);
	for (uint32_t n = 1; n <= TICK_LATENESS_SAMPLES_MAX; n += n < 300 ? 1 : 97) {
		for (int ties = 0; ties < 2; ties++) {
			for (uint32_t i = 0; i < n; i++) {
				rng ^= rng << 13;
				rng ^= rng >> 7;
				rng ^= rng << 17;
				v[i] = ties ? (float)(rng % 5) : (float)(rng % 100000) * 0.001f;
				sorted[i] = v[i];
			}
			qsort(sorted, n, sizeof sorted[0], compare_float);
			uint32_t k = (uint32_t)((double)n * 0.99);
			assert_true(tick_lateness_p99(v, n) == sorted[k < n ? k : n - 1]);
		}
	}
	float one_late[1024] = {0};
	for (int i = 0; i < 11; i++) one_late[100 * i] = 60.0f; /* 11 of 1,024 late: the p99 is one of them */
	assert_true(tick_lateness_p99(one_late, 1024) == 60.0f);
	one_late[0] = 0.0f; /* 10 of 1,024 */
	assert_true(tick_lateness_p99(one_late, 1024) == 0.0f);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(due_in_deadline_order),       cmocka_unit_test(matches_brute_force),
	    cmocka_unit_test(phases_spread_evenly),        cmocka_unit_test(phase_fills_the_gap_a_closed_world_left),
	    cmocka_unit_test(first_deadline_at_the_phase),  cmocka_unit_test(lateness_p99_is_the_sorted_value),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
