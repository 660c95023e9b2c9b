/* test_demo.c — the demo crowd on its map of rooms (server/sim/demo.c,
 * map.c), run through the sim as the server runs it (navigation on): agents
 * go from room to room through every door and corridor, both ways, and no
 * agent's centre is ever inside a wall; a checkpoint of the demo steps on
 * exactly as the sim it was taken from; a checkpoint of the first demo format
 * is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "map.h"
#include "sim.h"

#define AGENTS 120 /* four rooms (2 x 2): two corridors, two doors */
#define TICKS 3600 /* two minutes at 30 Hz */

static void demo_config(server_config *cfg) {
	config_init(cfg);
	cfg->demo = true;
	cfg->demo_agents = AGENTS;
	cfg->workers = 2;
	cfg->log_level = LOG_WARN;
}

static sim *demo_sim(const server_config *cfg) {
	sim *s = NULL;
	assert_int_equal(sim_create(cfg, &s), 0);
	assert_int_equal(sim_start_navigation(s), 0);
	assert_non_null(s->nav);
	return s;
}

static void test_crowd_crosses_every_door_both_ways(void **state) {
	(void)state;
	server_config cfg;
	demo_config(&cfg);
	const map_def map = map_def_of(&cfg);
	assert_int_equal(map.kind, MAP_ROOMS);
	assert_int_equal(map.rooms_x, 2);
	assert_int_equal(map.rooms_y, 2);
	const uint32_t rooms = map_place_count(&map);
	sim *s = demo_sim(&cfg);
	assert_int_equal(orca_world_obstacle_count(s->world), map_wall_count(&map));

	orca_agent_id ids[AGENTS];
	assert_int_equal(orca_world_agent_ids(s->world, ids, AGENTS), AGENTS);
	uint32_t last_room[AGENTS];
	for (uint32_t i = 0; i < AGENTS; i++) {
		orca_agent_state st;
		assert_int_equal(orca_agent_get(s->world, ids[i], &st), ORCA_OK);
		last_room[i] = map_place_of(&map, st.position);
		assert_true(last_room[i] < rooms); /* every agent starts in a room */
	}
	uint32_t crossings[4][4] = {{0}};
	uint32_t inside_wall = 0;
	for (uint32_t t = 0; t < TICKS; t++) {
		assert_int_equal(sim_step(s, NULL), ORCA_OK);
		for (uint32_t i = 0; i < AGENTS; i++) {
			orca_agent_state st;
			assert_int_equal(orca_agent_get(s->world, ids[i], &st), ORCA_OK);
			if (map_in_wall(&map, st.position, 0.0f)) inside_wall++;
			const uint32_t room = map_place_of(&map, st.position);
			if (room >= rooms || room == last_room[i]) continue; /* in a door or corridor, or still there */
			crossings[last_room[i]][room]++;
			last_room[i] = room;
		}
	}
	for (uint32_t a = 0; a < rooms; a++)
		print_message("from room %u: %u %u %u %u\n", a, crossings[a][0], crossings[a][1], crossings[a][2],
		              crossings[a][3]);
	assert_int_equal(inside_wall, 0);
	/* rooms 0 1 (south) and 2 3 (north): corridors 0-1 and 2-3, doors 0-2 and 1-3 */
	const uint32_t pairs[4][2] = {{0, 1}, {2, 3}, {0, 2}, {1, 3}};
	uint32_t total = 0;
	for (int p = 0; p < 4; p++) {
		const uint32_t a = pairs[p][0], b = pairs[p][1];
		print_message("rooms %u -> %u: %u, %u -> %u: %u\n", a, b, crossings[a][b], b, a, crossings[b][a]);
		assert_true(crossings[a][b] >= 5);
		assert_true(crossings[b][a] >= 5);
		total += crossings[a][b] + crossings[b][a];
	}
	/* rooms are reached only through a neighbour: no crossing skips a wall */
	assert_int_equal(crossings[0][3] + crossings[3][0] + crossings[1][2] + crossings[2][1], 0);
	print_message("%u crossings in %u ticks\n", total, TICKS);
	sim_destroy(s);
}

static void test_checkpoint_steps_on_exactly(void **state) {
	(void)state;
	server_config cfg;
	demo_config(&cfg);
	sim *s = demo_sim(&cfg);
	for (int t = 0; t < 600; t++) assert_int_equal(sim_step(s, NULL), ORCA_OK);
	sim_image img;
	assert_int_equal(sim_save(s, &img), 0);
	assert_true(img.has_demo);
	char err[256];
	sim *copy = NULL;
	if (sim_load(&cfg, &img, NULL, &copy, err, sizeof err) != 0) fail_msg("sim_load: %s", err);
	assert_non_null(copy->demo);
	for (int t = 0; t < 600; t++) {
		assert_int_equal(sim_step(s, NULL), ORCA_OK);
		assert_int_equal(sim_step(copy, NULL), ORCA_OK);
	}
	assert_int_equal(orca_world_state_hash(copy->world), orca_world_state_hash(s->world));

	/* the first format ("DEMO": waypoints on a circle) is refused, not misread */
	memcpy(img.demo, "DEMO", 4);
	sim *old = NULL;
	assert_int_equal(sim_load(&cfg, &img, NULL, &old, err, sizeof err), -1);
	assert_null(old);
	assert_non_null(strstr(err, "demo"));
	/* nor is a cut one */
	memcpy(img.demo, "DEM2", 4);
	img.demo_len -= 3;
	assert_int_equal(sim_load(&cfg, &img, NULL, &old, err, sizeof err), -1);
	sim_image_free(&img);
	sim_destroy(copy);
	sim_destroy(s);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crowd_crosses_every_door_both_ways),
	    cmocka_unit_test(test_checkpoint_steps_on_exactly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
