/* test_overlap_auto.c — --snapshot-overlap=auto's choice: at once while the
 * ticks due next leave room (twice the expected send and a quarter period),
 * on the pool when they do not, however small the expectation; and one slow
 * send at once does not keep the snapshots on the pool for good: the
 * expectation shrinks with each tick on the pool until a send at once is
 * tried again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "overlap_auto.h"

#define MS 1000000ull
#define PERIOD (50 * MS) /* 20 Hz */

/* A tick that started at 0 and whose snapshots are ready at `ready`; this
 * world's next tick is due at PERIOD. */
static bool pool_at(const overlap_auto *a, uint64_t ready) {
	return overlap_auto_pool(a, ready, PERIOD, PERIOD);
}

static void at_once_while_there_is_room(void **state) {
	(void)state;
	overlap_auto a = {0};
	assert_false(pool_at(&a, 24 * MS)); /* nothing known yet: 24 + 12.5 < 50 */
	overlap_auto_sent_at_once(&a, 3 * MS);
	assert_false(pool_at(&a, 24 * MS)); /* 24 + 6 + 12.5 < 50 */
	assert_true(pool_at(&a, 32 * MS));  /* 32 + 6 + 12.5 >= 50 */
	/* another world's tick due sooner counts as much as this world's */
	assert_true(overlap_auto_pool(&a, 24 * MS, 40 * MS, PERIOD));
}

static void no_room_means_the_pool_however_small(void **state) {
	(void)state;
	overlap_auto a = {0};
	assert_true(pool_at(&a, 40 * MS)); /* 40 + 12.5 >= 50 */
	overlap_auto_sent_at_once(&a, 1 * MS);
	for (int i = 0; i < 1000; i++) overlap_auto_sent_on_pool(&a);
	assert_true(a.at_once_ns < 1000); /* under a microsecond */
	assert_true(pool_at(&a, 40 * MS));
}

static void one_slow_send_is_forgotten(void **state) {
	(void)state;
	overlap_auto a = {0};
	overlap_auto_sent_at_once(&a, 3 * MS);
	overlap_auto_sent_at_once(&a, 30 * MS); /* the machine paused the process once */
	int pool_ticks = 0;
	while (pool_at(&a, 24 * MS)) {
		overlap_auto_sent_on_pool(&a);
		pool_ticks++;
		assert_true(pool_ticks < 1000);
	}
	/* 30 ms shrinks by 1/32 a tick below (50 - 24 - 12.5) / 2 = 6.75 ms:
	 * 30 * (31/32)^47 = 6.73 */
	assert_int_equal(pool_ticks, 47);
	assert_true(a.at_once_ns < 6750000ull);
	/* sent at once again, it is measured anew: a normal send keeps it at once */
	overlap_auto_sent_at_once(&a, 3 * MS);
	assert_false(pool_at(&a, 24 * MS));
	/* a world whose sends at once really are slow goes back to the pool at
	 * once and stays there for the next 46 ticks */
	overlap_auto_sent_at_once(&a, 30 * MS);
	for (int i = 0; i < 46; i++) {
		assert_true(pool_at(&a, 24 * MS));
		overlap_auto_sent_on_pool(&a);
	}
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(at_once_while_there_is_room),
	    cmocka_unit_test(no_room_means_the_pool_however_small),
	    cmocka_unit_test(one_slow_send_is_forgotten),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
