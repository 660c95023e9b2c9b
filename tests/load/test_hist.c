/* test_hist.c — the load generator's latency histogram: bucket layout has no
 * gaps, and percentiles match a sorted array of the same random data to within
 * one bucket (relative precision 2^-sub_bits). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "hist.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng_next(void) {
	/* xorshift64*: deterministic, so a failure reproduces */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static int cmp_u64(const void *a, const void *b) {
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static void test_layout_is_contiguous(void **state) {
	(void)state;
	const uint32_t shapes[][2] = {{1, 8}, {3, 20}, {5, 32}, {7, 40}, {7, 64}, {16, 64}};
	for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
		load_hist h;
		assert_true(load_hist_init(&h, shapes[k][0], shapes[k][1]));
		assert_int_equal(load_hist_bucket_low(&h, 0), 0);
		for (uint32_t i = 0; i < h.bucket_count; i++) {
			uint64_t lo = load_hist_bucket_low(&h, i), hi = load_hist_bucket_high(&h, i);
			assert_true(lo <= hi);
			assert_int_equal(load_hist_index(&h, lo), i);
			assert_int_equal(load_hist_index(&h, hi), i);
			/* a bucket is never wider than its low value times the precision */
			assert_true(hi - lo <= (lo >> shapes[k][0]));
			if (i + 1 < h.bucket_count) assert_int_equal(load_hist_bucket_low(&h, i + 1), hi + 1);
		}
		uint64_t top = shapes[k][1] >= 64 ? UINT64_MAX : ((uint64_t)1 << shapes[k][1]) - 1;
		assert_int_equal(load_hist_bucket_high(&h, h.bucket_count - 1), top);
		load_hist_free(&h);
	}
}

static void test_rejects_bad_shapes(void **state) {
	(void)state;
	load_hist h;
	assert_false(load_hist_init(&h, 0, 32));
	assert_false(load_hist_init(&h, 17, 40));
	assert_false(load_hist_init(&h, 8, 8));
	assert_false(load_hist_init(&h, 8, 65));
}

/* Percentiles of n random values drawn by `draw` against the sorted truth. */
static void check_against_sorted(uint32_t sub_bits, uint32_t max_bits, size_t n, uint64_t (*draw)(void)) {
	load_hist h;
	assert_true(load_hist_init(&h, sub_bits, max_bits));
	uint64_t *values = malloc(n * sizeof *values);
	assert_non_null(values);
	for (size_t i = 0; i < n; i++) {
		values[i] = draw();
		load_hist_record(&h, values[i]);
	}
	qsort(values, n, sizeof *values, cmp_u64);
	assert_int_equal(h.total, n);
	assert_int_equal(h.min, values[0]);
	assert_int_equal(h.max, values[n - 1]);
	assert_int_equal(load_hist_percentile(&h, 100), values[n - 1]);
	assert_int_equal(load_hist_percentile(&h, 0), values[0]);
	const double ps[] = {0.1, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100};
	for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
		uint64_t rank = (uint64_t)ceil(ps[k] / 100.0 * (double)n);
		if (rank < 1) rank = 1;
		uint64_t truth = values[rank - 1];
		uint64_t got = load_hist_percentile(&h, ps[k]);
		/* same bucket as the true value, so within the bucket precision */
		assert_int_equal(load_hist_index(&h, got), load_hist_index(&h, truth));
		uint64_t err = got > truth ? got - truth : truth - got;
		assert_true(err <= (truth >> sub_bits));
	}
	free(values);
	load_hist_free(&h);
}

static uint64_t draw_uniform_ms(void) {
	return rng_next() % 200000u;
} /* 0..200 ms in µs */
static uint64_t draw_log_uniform(void) {
	/* spread over 1 µs .. ~17 min: every power of two gets values */
	uint32_t bits = (uint32_t)(rng_next() % 30u);
	return ((uint64_t)1 << bits) + rng_next() % ((uint64_t)1 << bits);
}
static uint64_t draw_few_distinct(void) {
	return 1000u * (rng_next() % 7u);
} /* many ties */
static uint64_t draw_small(void) {
	return rng_next() % 40u;
} /* the exact region */

static void test_percentiles_uniform(void **state) {
	(void)state;
	check_against_sorted(7, 40, 100000, draw_uniform_ms);
	check_against_sorted(4, 32, 100000, draw_uniform_ms);
}

static void test_percentiles_log_uniform(void **state) {
	(void)state;
	check_against_sorted(7, 40, 100000, draw_log_uniform);
	check_against_sorted(3, 40, 50000, draw_log_uniform);
}

static void test_percentiles_ties_and_small(void **state) {
	(void)state;
	check_against_sorted(5, 32, 20000, draw_few_distinct);
	check_against_sorted(5, 32, 20000, draw_small);
	check_against_sorted(7, 40, 1, draw_uniform_ms);
	check_against_sorted(7, 40, 3, draw_uniform_ms);
}

static void test_clamp_merge_reset(void **state) {
	(void)state;
	load_hist a, b, c;
	assert_true(load_hist_init(&a, 5, 20));
	assert_true(load_hist_init(&b, 5, 20));
	assert_true(load_hist_init(&c, 6, 20));
	assert_int_equal(load_hist_percentile(&a, 50), 0);
	load_hist_record(&a, 5000000); /* over 2^20: clamped, max still exact */
	assert_int_equal(a.clamped, 1);
	assert_int_equal(a.max, 5000000);
	assert_int_equal(load_hist_percentile(&a, 100), 5000000);
	load_hist_record_n(&b, 10, 3);
	assert_true(load_hist_merge(&a, &b));
	assert_false(load_hist_merge(&a, &c));
	assert_int_equal(a.total, 4);
	assert_int_equal(a.min, 10);
	assert_int_equal(load_hist_percentile(&a, 75), 10);
	assert_true(load_hist_mean(&a) > 1000000.0);
	load_hist_reset(&a);
	assert_int_equal(a.total, 0);
	assert_int_equal(load_hist_percentile(&a, 99), 0);
	load_hist_free(&a);
	load_hist_free(&b);
	load_hist_free(&c);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layout_is_contiguous),       cmocka_unit_test(test_rejects_bad_shapes),
	    cmocka_unit_test(test_percentiles_uniform),        cmocka_unit_test(test_percentiles_log_uniform),
	    cmocka_unit_test(test_percentiles_ties_and_small), cmocka_unit_test(test_clamp_merge_reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
