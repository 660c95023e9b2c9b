/* test_heap.c — heap_usage_now counts what the allocator hands out: live bytes
 * rise by what is allocated and fall back when it is freed (under ASan too,
 * where a freed chunk waits in the quarantine but is no longer live), and the
 * allocator holds at least what is live. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "heap.h"

enum { BLOCKS = 64, BLOCK = 16 * 1024, TOTAL = BLOCKS * BLOCK }; /* small chunks (arena / primary) */
enum { LARGE = 8 << 20 };                                       /* one chunk mmapped on its own */

static void test_allocator_is_known(void **state) {
	(void)state;
	heap_usage u = heap_usage_now();
	/* this project builds on glibc, with or without ASan */
	assert_true(strcmp(u.allocator, "asan") == 0 || strcmp(u.allocator, "glibc") == 0);
	assert_true(u.live_bytes > 0);
	assert_true(u.held_bytes >= u.live_bytes);
}

static void test_live_bytes_follow_malloc_and_free(void **state) {
	(void)state;
	heap_usage before = heap_usage_now();
	char *blocks[BLOCKS];
	for (int i = 0; i < BLOCKS; i++) {
		blocks[i] = malloc(BLOCK);
		assert_non_null(blocks[i]);
		memset(blocks[i], i, BLOCK);
	}
	char *large = malloc(LARGE);
	assert_non_null(large);
	memset(large, 1, LARGE);
	heap_usage during = heap_usage_now();
	assert_true(during.live_bytes >= before.live_bytes + TOTAL + LARGE);
	assert_true(during.held_bytes >= during.live_bytes);

	for (int i = 0; i < BLOCKS; i++) free(blocks[i]);
	free(large);
	heap_usage after = heap_usage_now();
	/* back to where it was, give or take the allocator's own bookkeeping */
	assert_true(after.live_bytes + TOTAL + LARGE <= during.live_bytes + 64 * 1024);
	assert_true(after.live_bytes <= before.live_bytes + 64 * 1024);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_allocator_is_known),
	    cmocka_unit_test(test_live_bytes_follow_malloc_and_free),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
