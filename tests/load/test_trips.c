/* test_trips.c — crowd-load's view of the city (clients/load/load_trips.c)
 * against the server's (server/sim/map.c): for several world sizes, blocks and
 * streets, every spawn point and every trip end crowd-load picks lies on a
 * street, clear of the server's blocks by the margin; a trip's free-walk
 * length is at least the straight line and at most the walk along the two
 * streets (the L through the crossing's far corner). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>

#include "load_trips.h"
#include "map.h"

#define MARGIN 2.0f

static void check_city(float half, float block, float street, float reach) {
	const float world[4] = {-half, -half, half, half};
	load_city city;
	load_city_init(&city, world, block, street, MARGIN);
	map_def def = map_default_def();
	def.kind = MAP_CITY;
	def.min = (orca_vec2){-half, -half};
	def.max = (orca_vec2){half, half};
	def.block = block;
	def.street = street;
	assert_int_equal(map_wall_count(&def), city.blocks_x * city.blocks_y); /* the same layout */
	uint64_t rng = 12345;
	for (int i = 0; i < 2000; i++) {
		float px, py, qx, qy;
		load_city_random_point(&city, &rng, &px, &py);
		assert_false(map_in_wall(&def, (orca_vec2){px, py}, MARGIN - 0.01f));
		assert_true(px > -half && px < half && py > -half && py < half);
		for (int k = 0; k < 5; k++) {
			const float len = load_city_trip(&city, &rng, px, py, reach, &qx, &qy);
			assert_false(map_in_wall(&def, (orca_vec2){qx, qy}, MARGIN - 0.01f));
			const float straight = hypotf(qx - px, qy - py);
			assert_true(len >= straight - 1e-3f);
			assert_true(len <= fabsf(qx - px) + fabsf(qy - py) + 1e-3f); /* never more than the L */
			assert_true(fabsf(qx - px) <= reach + street && fabsf(qy - py) <= reach + street);
			px = qx, py = qy; /* the next trip starts where this one ended */
		}
	}
}

static void test_trips_stay_on_the_servers_streets(void **state) {
	(void)state;
	check_city(150, 40, 12, 25);
	check_city(1000, 40, 12, 30);
	check_city(317, 25, 8, 50);
	check_city(500, 60, 20, 100);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_trips_stay_on_the_servers_streets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
