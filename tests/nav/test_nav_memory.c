/* test_nav_memory.c — navigation's memory follows the mesh it has, not the
 * world's history: obstacles added and removed, one at a time, at ever new
 * places leave orca_nav_get_stats' memory_bytes where it was once they are
 * gone (each tile rebuilt bare). Before the fix each tile's component labels
 * kept room for the most polygons that tile ever had.
 * And navigation's own memory comes from the world's allocator: every block
 * freed with the size it was allocated with, none left when it is destroyed
 * (after updates with 2 workers, a save, a load, and damaged loads).
 * A corridor's buffer holds what its path needs, not max_path polygons: a
 * crowd with short paths takes less than max_path's buffer an agent in all,
 * and a path longer than a new corridor's room is followed home whole. */
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

static orca_world *default_world(void)
{
	orca_world_def wd = orca_default_world_def();
	orca_world *w;
	assert_int_equal(orca_world_create(&wd, &w), ORCA_OK);
	return w;
}

static void obstacles_at_new_places_keep_memory_flat(void **state)
{
	(void)state;
	orca_world *w = default_world();
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

/* An allocator that counts: live blocks and bytes, and frees whose size is
 * not the one allocated (kept in a header before each block). */
typedef struct counting {
	int64_t blocks, bytes;
	uint64_t calls, wrong_size;
} counting;

static void *count_alloc(size_t size, void *user)
{
	counting *c = user;
	uint8_t *p = malloc(size + 16);
	if (!p)
		return NULL;
	memcpy(p, &size, sizeof size);
	c->blocks++;
	c->bytes += (int64_t)size;
	c->calls++;
	return p + 16;
}

static void count_free(void *ptr, size_t size, void *user)
{
	counting *c = user;
	uint8_t *p = (uint8_t *)ptr - 16;
	size_t was;
	memcpy(&was, p, sizeof was);
	c->wrong_size += was != size;
	c->blocks--;
	c->bytes -= (int64_t)was;
	c->calls++;
	free(p);
}

static orca_world *counted_world(counting *c)
{
	orca_world_def wd = orca_default_world_def();
	wd.worker_count = 2; /* parallel visits */
	wd.avoidance = ORCA_AVOIDANCE_QUALITY;
	wd.allocator = (orca_allocator){count_alloc, count_free, c};
	orca_world *w;
	assert_int_equal(orca_world_create(&wd, &w), ORCA_OK);
	return w;
}

static orca_nav *counted_nav(orca_world *w)
{
	orca_nav_def d = orca_nav_default_def();
	d.bounds_min = (orca_vec2){-60, -60};
	d.bounds_max = (orca_vec2){60, 60};
	d.agent_radius = 1.0f;
	orca_nav *nav;
	assert_int_equal(orca_nav_create(&d, w, &nav), ORCA_OK);
	return nav;
}

static void allocations_go_through_the_world(void **state)
{
	(void)state;
	counting c = {0};
	orca_world *w = counted_world(&c);
	/* a wall with a door: two crowds through it both ways (waiting, lanes, making way) */
	add_rect(w, -50, -1, -3, 1);
	add_rect(w, 3, -1, 50, 1);
	const int64_t world_blocks = c.blocks;
	orca_nav *nav = counted_nav(w);
	assert_true(c.blocks > world_blocks); /* the nav itself, its tile queue, its obstacle cache */
	for (int i = 0; i < 60; ++i) {
		orca_agent_def ad = orca_default_agent_def();
		ad.radius = 1.0f;
		const float side = i < 30 ? -1.0f : 1.0f;
		ad.position = (orca_vec2){-18.0f + (float)(i % 10) * 4.0f, side * (8.0f + (float)(i % 30 / 10) * 4.0f)};
		orca_agent_id id;
		assert_int_equal(orca_agent_add(w, &ad, &id), ORCA_OK);
		assert_int_equal(orca_nav_set_target(nav, id, (orca_vec2){ad.position.x, -ad.position.y}), ORCA_OK);
	}
	for (int s = 0; s < 400; ++s) {
		assert_int_equal(orca_nav_update(nav, 0.1f), ORCA_OK);
		assert_int_equal(orca_world_step(w, 0.1f), ORCA_OK);
	}
	const size_t nav_len = orca_nav_save(nav, NULL, 0);
	uint8_t *nav_bytes = malloc(nav_len);
	assert_int_equal(orca_nav_save(nav, nav_bytes, nav_len), nav_len);
	size_t world_len = 0;
	assert_int_equal(orca_world_save(w, NULL, 0, &world_len), ORCA_ERR_CAPACITY);
	uint8_t *world_bytes = malloc(world_len);
	assert_int_equal(orca_world_save(w, world_bytes, world_len, &world_len), ORCA_OK);
	const int64_t live_blocks = c.blocks;
	orca_nav_destroy(nav);
	printf("world and navigation of 60 agents: %lld blocks live; %lld after the navigation is destroyed\n",
	       (long long)live_blocks, (long long)c.blocks);
	assert_int_equal(c.wrong_size, 0); /* each block freed with its size */
	assert_true(c.blocks < live_blocks);

	/* a load into a fresh navigation, a few updates, destroy: all back */
	counting c2 = {0};
	for (int k = 0; k < 8; ++k) {
		orca_world *w2 = counted_world(&c2);
		assert_int_equal(orca_world_load(w2, world_bytes, world_len), ORCA_OK);
		const int64_t before_blocks = c2.blocks;
		orca_nav *nav2 = counted_nav(w2);
		/* k 0: the whole save; else cut short (refused, everything it built freed) */
		const size_t len = k == 0 ? nav_len : nav_len * (size_t)k / 9;
		const int rc = orca_nav_load(nav2, nav_bytes, len);
		assert_true(k == 0 ? rc == ORCA_OK : rc != ORCA_OK);
		for (int s = 0; s < 20; ++s) {
			assert_int_equal(orca_nav_update(nav2, 0.1f), ORCA_OK);
			assert_int_equal(orca_world_step(w2, 0.1f), ORCA_OK);
		}
		const int64_t steps_blocks = c2.blocks;
		orca_nav_destroy(nav2);
		assert_int_equal(c2.wrong_size, 0);
		assert_true(steps_blocks > before_blocks);
		orca_world_destroy(w2);
		assert_int_equal(c2.blocks, 0);
		assert_int_equal(c2.bytes, 0);
	}
	orca_world_destroy(w); /* navigation left nothing behind */
	assert_int_equal(c.blocks, 0);
	assert_int_equal(c.bytes, 0);
	assert_int_equal(c.wrong_size, 0);
	free(nav_bytes);
	free(world_bytes);
}

static orca_nav *small_tiles_nav(orca_world *w)
{
	orca_nav_def d = orca_nav_default_def();
	d.bounds_min = (orca_vec2){-100, -100};
	d.bounds_max = (orca_vec2){100, 100};
	d.agent_radius = 1.0f;
	d.tile_cells = 16; /* a tile 5.3 across: a polygon every 5.3 of an open path */
	orca_nav *nav;
	assert_int_equal(orca_nav_create(&d, w, &nav), ORCA_OK);
	settle(nav);
	return nav;
}

static orca_agent_id add_agent(orca_world *w, orca_vec2 p)
{
	orca_agent_def ad = orca_default_agent_def();
	ad.radius = 1.0f;
	ad.position = p;
	orca_agent_id id;
	assert_int_equal(orca_agent_add(w, &ad, &id), ORCA_OK);
	return id;
}

static void corridors_take_what_their_paths_need(void **state)
{
	(void)state;
	orca_world *w = default_world();
	orca_nav *nav = small_tiles_nav(w);
	const size_t bare = memory(nav);

	/* 1,024 agents, each sent 4 across: paths of a polygon or two */
	enum { N = 1024 };
	for (int i = 0; i < N; ++i) {
		const orca_vec2 p = {-93.0f + (float)(i % 32) * 6.0f, -93.0f + (float)(i / 32) * 6.0f};
		assert_int_equal(orca_nav_set_target(nav, add_agent(w, p), (orca_vec2){p.x + 4.0f, p.y}), ORCA_OK);
	}
	for (int s = 0; s < 20; ++s) {
		assert_int_equal(orca_nav_update(nav, 0.1f), ORCA_OK);
		assert_int_equal(orca_world_step(w, 0.1f), ORCA_OK);
	}
	const orca_nav_def d = orca_nav_default_def();
	const size_t per_agent = (memory(nav) - bare) / N;
	printf("%d agents on short paths: %zu bytes of navigation an agent (max_path %u: %zu bytes of polygons)\n", N,
	       per_agent, d.max_path, (size_t)d.max_path * sizeof(uint32_t));
	assert_true(per_agent < (size_t)d.max_path * sizeof(uint32_t));

	/* one agent corner to corner: a corridor of more polygons than a new one has room for */
	const orca_agent_id far = add_agent(w, (orca_vec2){-96.0f, 96.0f});
	const orca_vec2 goal = {96.0f, -96.0f};
	assert_int_equal(orca_nav_set_target(nav, far, goal), ORCA_OK);
	uint32_t longest = 0;
	bool arrived = false;
	for (int s = 0; s < 3000 && !arrived; ++s) {
		assert_int_equal(orca_nav_update(nav, 0.1f), ORCA_OK);
		assert_int_equal(orca_world_step(w, 0.1f), ORCA_OK);
		orca_nav_path path;
		assert_int_equal(orca_nav_get_path(nav, far, &path, NULL, 0), ORCA_OK);
		if (path.corridor_count > longest)
			longest = path.corridor_count;
		uint32_t count;
		const orca_nav_event *ev = orca_nav_events(nav, &count);
		for (uint32_t k = 0; k < count; ++k)
			arrived |= ev[k].agent == far && ev[k].kind == ORCA_NAV_ARRIVED;
	}
	printf("corner to corner: a corridor of up to %u polygons, arrived %s\n", longest, arrived ? "yes" : "no");
	assert_true(longest > 48);
	assert_true(arrived);

	orca_nav_destroy(nav);
	orca_world_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(obstacles_at_new_places_keep_memory_flat),
	    cmocka_unit_test(allocations_go_through_the_world),
	    cmocka_unit_test(corridors_take_what_their_paths_need),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
