/* test_nav_memory.c — navigation's memory follows the mesh it has, not the
 * world's history: obstacles added and removed, one at a time, at ever new
 * places leave orca_nav_get_stats' memory_bytes where it was once they are
 * gone (each tile rebuilt bare). Before the fix each tile's component labels
 * kept room for the most polygons that tile ever had. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nav_test_util.h"

/* Update until no tile waits for a rebuild. */
static void settle(orca_nav *nav)
{
	for (int i = 0; i < 10000; ++i) {
		assert_int_equal(orca_nav_update(nav, 0.1f), ORCA_OK);
		orca_nav_stats s;
		orca_nav_get_stats(nav, &s);
		if (s.tiles_pending == 0)
			return;
	}
	fail_msg("tiles still pending");
}

static size_t memory(const orca_nav *nav)
{
	orca_nav_stats s;
	orca_nav_get_stats(nav, &s);
	return s.memory_bytes;
}

/* A 24-sided polygon, counter-clockwise: many polygons in the tiles it cuts.
 * The directions are a table (no libm in the test's geometry). */
static const orca_vec2 ring_dirs[24] = {
	    {1.0000000f, 0.0000000f}, {0.9659258f, 0.2588190f}, {0.8660254f, 0.5000000f}, {0.7071068f, 0.7071068f},
	    {0.5000000f, 0.8660254f}, {0.2588190f, 0.9659258f}, {0.0000000f, 1.0000000f}, {-0.2588190f, 0.9659258f},
	    {-0.5000000f, 0.8660254f}, {-0.7071068f, 0.7071068f}, {-0.8660254f, 0.5000000f}, {-0.9659258f, 0.2588190f},
	    {-1.0000000f, 0.0000000f}, {-0.9659258f, -0.2588190f}, {-0.8660254f, -0.5000000f}, {-0.7071068f, -0.7071068f},
	    {-0.5000000f, -0.8660254f}, {-0.2588190f, -0.9659258f}, {0.0000000f, -1.0000000f}, {0.2588190f, -0.9659258f},
	    {0.5000000f, -0.8660254f}, {0.7071068f, -0.7071068f}, {0.8660254f, -0.5000000f}, {0.9659258f, -0.2588190f}};

static orca_obstacle_id add_ring(orca_world *w, float cx, float cy, float r)
{
	orca_vec2 v[24];
	for (int i = 0; i < 24; ++i)
		v[i] = (orca_vec2){cx + r * ring_dirs[i].x, cy + r * ring_dirs[i].y};
	orca_obstacle_id id = 0;
	assert_int_equal(orca_obstacle_add(w, v, 24, &id), ORCA_OK);
	return id;
}

static void obstacles_at_new_places_keep_memory_flat(void **state)
{
	(void)state;
	orca_world_def wd = orca_default_world_def();
	orca_world *w;
	assert_int_equal(orca_world_create(&wd, &w), ORCA_OK);
	orca_nav_def d = orca_nav_default_def();
	d.bounds_min = (orca_vec2){-300, -300};
	d.bounds_max = (orca_vec2){300, 300};
	orca_nav *nav;
	assert_int_equal(orca_nav_create(&d, w, &nav), ORCA_OK);
	settle(nav);
	const size_t before = memory(nav);

	/* one ring at a time on a grid of places, each added, built, removed, built */
	int placed = 0;
	for (float y = -270; y <= 270; y += 37)
		for (float x = -270; x <= 270; x += 41) {
			const orca_obstacle_id id = add_ring(w, x, y, 9.0f);
			settle(nav);
			assert_int_equal(orca_obstacle_remove(w, id), ORCA_OK);
			settle(nav);
			placed++;
		}
	const size_t after = memory(nav);
	printf("%d rings added and removed: nav memory %zu -> %zu bytes\n", placed, before, after);
	assert_true(placed > 100);
	/* the bare mesh again: the same bytes (within a kilobyte) */
	assert_true(after <= before + 1024);

	orca_nav_destroy(nav);
	orca_world_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(obstacles_at_new_places_keep_memory_flat),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
