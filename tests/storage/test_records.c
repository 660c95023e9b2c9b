/* test_records.c — the record layer of the data dir: CRC-32C against its
 * published check value, framing round trips, and a reader that stops at a
 * torn or corrupt tail without reading past the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crc32c.h"
#include "record.h"

static void test_crc32c_check_value(void **state) {
	(void)state;
	assert_int_equal(crc32c(0, "123456789", 9), 0xE3069283u); /* the catalogue's check value */
	assert_int_equal(crc32c(0, "", 0), 0);
	/* continuing a CRC equals one pass over the whole */
	const char *text = "the quick brown fox jumps over the lazy dog, twice over";
	size_t n = strlen(text);
	for (size_t k = 0; k <= n; k++) assert_int_equal(crc32c(crc32c(0, text, k), text + k, n - k), crc32c(0, text, n));
	uint8_t zeros[32] = {0};
	assert_int_equal(crc32c(0, zeros, 32), 0x8A9136AAu); /* RFC 3720 B.4: 32 bytes of zeros */
}

static void append_tick(crowd_buf *b, uint64_t tick) {
	crowd_storage_v1_Record rec = crowd_storage_v1_Record_init_zero;
	rec.has_tick_end = true;
	rec.tick_end.tick = tick;
	rec.tick_end.state_hash = tick * 0x9E3779B97F4A7C15ull;
	assert_true(record_append(b, &rec));
}

static void test_round_trip_and_torn_tail(void **state) {
	(void)state;
	crowd_buf b;
	crowd_buf_init(&b);
	for (uint64_t t = 1; t <= 50; t++) append_tick(&b, t);
	size_t pos = 0, n;
	const uint8_t *msg;
	uint64_t t = 0;
	while (record_next(b.data, b.len, &pos, &msg, &n) == RECORD_OK) {
		crowd_storage_v1_Record rec = crowd_storage_v1_Record_init_zero;
		assert_true(record_decode(msg, n, &rec));
		assert_true(rec.has_tick_end);
		assert_int_equal(rec.tick_end.tick, ++t);
		assert_int_equal(rec.tick_end.state_hash, t * 0x9E3779B97F4A7C15ull);
	}
	assert_int_equal(t, 50);
	/* every truncation: whole records before the cut, then TORN (or END on a boundary) */
	for (size_t cut = 0; cut < b.len; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		memcpy(copy, b.data, cut);
		size_t p = 0, whole = 0;
		record_status st;
		while ((st = record_next(copy, cut, &p, &msg, &n)) == RECORD_OK) whole++;
		assert_true(st == RECORD_END || st == RECORD_TORN);
		assert_true(p <= cut);
		free(copy);
	}
	/* every flipped bit: the reader stops at or before the damaged record */
	for (size_t bit = 0; bit < b.len * 8; bit += 7) {
		b.data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		size_t p = 0;
		record_status st;
		while ((st = record_next(b.data, b.len, &p, &msg, &n)) == RECORD_OK) {
		}
		assert_true(st != RECORD_OK);
		assert_true(p <= bit / 8 + 1);
		b.data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	crowd_buf_free(&b);
}

static void test_garbage(void **state) {
	(void)state;
	uint8_t buf[4096];
	uint32_t x = 99;
	for (int k = 0; k < 2000; k++) {
		for (size_t i = 0; i < sizeof buf; i++) {
			x = x * 1664525u + 1013904223u;
			buf[i] = (uint8_t)(x >> 24);
		}
		size_t len = 1 + (x % sizeof buf), p = 0, n;
		const uint8_t *msg;
		record_status st;
		while ((st = record_next(buf, len, &p, &msg, &n)) == RECORD_OK) {
			crowd_storage_v1_Record rec = crowd_storage_v1_Record_init_zero;
			record_decode(msg, n, &rec); /* may fail; must not crash */
		}
		assert_true(p <= len);
	}
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crc32c_check_value),
	    cmocka_unit_test(test_round_trip_and_torn_tail),
	    cmocka_unit_test(test_garbage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
