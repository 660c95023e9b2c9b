/* test_nav_maze.c — the four walled set-ups of tests/nav/data (a wall with a
 * gap, a U open away from the goal, a serpentine of five walls, a room with a
 * door): straight-line steering gets no agent home in 4,000 steps;
 * navigation gets every agent home, and no agent centre is ever inside a wall.
 * orca_nav_get_path answers as many corners as it is given room for (a
 * comb of walls). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "nav_test_util.h"
#include "scenario_nav.h"

#define CAP 4000

static uint32_t agents_home(const scenario *sc, const orca_world *w, const orca_agent_id *ids)
{
	uint32_t home = 0;
	for (uint32_t i = 0; i < sc->agent_count; ++i) {
		orca_agent_state st;
		orca_agent_get(w, ids[i], &st);
		const float dx = st.position.x - sc->goal[i].x, dy = st.position.y - sc->goal[i].y;
		home += dx * dx + dy * dy <= st.radius * st.radius;
	}
	return home;
}

static void run(const char *name, bool navigate, uint32_t *home, uint32_t *steps, uint32_t *inside)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s_setup.txt", CROWD_NAV_DATA_DIR, name);
	scenario sc;
	char err[256];
	assert_int_equal(scenario_load(path, &sc, err, sizeof err), 0);
	orca_agent_id *ids = calloc(sc.agent_count, sizeof *ids);
	orca_world *w;
	assert_int_equal(scenario_make_world(&sc, 1, &w, ids), ORCA_OK);
	orca_nav *nav = NULL;
	if (navigate)
		assert_int_equal(scenario_navigate(&sc, w, ids, &nav), ORCA_OK);
	*inside = 0;
	uint32_t step = 0;
	while (step < CAP && !scenario_done(&sc, w, ids)) {
		if (nav)
			assert_int_equal(orca_nav_update(nav, sc.time_step), ORCA_OK);
		assert_int_equal(orca_world_step(w, sc.time_step), ORCA_OK);
		++step;
		*inside += centres_inside_obstacles(w);
	}
	*home = agents_home(&sc, w, ids);
	*steps = step;
	orca_nav_destroy(nav);
	orca_world_destroy(w);
	free(ids);
	printf("%-12s %-9s home %u/%u after %u steps, centres inside walls %u\n", name,
	       navigate ? "navigate" : "straight", *home, sc.agent_count, step, *inside);
	scenario_free(&sc);
}

static void check(const char *name, uint32_t agents)
{
	uint32_t home, steps, inside;
	run(name, false, &home, &steps, &inside);
	assert_int_equal(home, 0);
	assert_int_equal(steps, CAP);
	run(name, true, &home, &steps, &inside);
	assert_int_equal(home, agents);
	assert_true(steps < CAP);
	assert_int_equal(inside, 0);
}

static void wall_gap(void **state)
{
	(void)state;
	check("wall_gap", 10);
}

static void u_trap(void **state)
{
	(void)state;
	check("u_trap", 15);
}

static void serpentine(void **state)
{
	(void)state;
	check("serpentine", 7);
}

static void room_door(void **state)
{
	(void)state;
	check("room_door", 9);
}

/* A path through a comb of twelve walls, open at alternate ends: the whole
 * of it with room for it (far more corners than steering looks ahead at,
 * ending at the goal), and with room for k corners exactly its first k
 * (Detour's corner query drops the agent's own position, which once left
 * room for only k - 1). */
static void path_corners(void **state)
{
	(void)state;
	orca_world_def wd = orca_default_world_def();
	wd.agent_capacity = 4;
	orca_world *w;
	assert_int_equal(orca_world_create(&wd, &w), ORCA_OK);
	enum { WALLS = 12 };
	for (int k = 0; k < WALLS; ++k) {
		const float x = -55.0f + 10.0f * (float)k, y0 = k % 2 ? -30.0f : -40.0f, y1 = k % 2 ? 40.0f : 30.0f;
		const orca_vec2 wall[4] = {{x - 1.0f, y0}, {x + 1.0f, y0}, {x + 1.0f, y1}, {x - 1.0f, y1}};
		assert_int_equal(orca_obstacle_add(w, wall, 4, NULL), ORCA_OK);
	}
	orca_nav_def nd = orca_nav_default_def();
	nd.bounds_min = (orca_vec2){-70.0f, -40.0f};
	nd.bounds_max = (orca_vec2){70.0f, 40.0f};
	nd.agent_radius = 1.0f;
	orca_nav *nav;
	assert_int_equal(orca_nav_create(&nd, w, &nav), ORCA_OK);
	orca_agent_def ad = orca_default_agent_def();
	ad.radius = 1.0f;
	ad.position = (orca_vec2){-65.0f, 0.0f};
	ad.target = ad.position;
	ad.steer_mode = ORCA_STEER_TARGET;
	orca_agent_id id;
	assert_int_equal(orca_agent_add(w, &ad, &id), ORCA_OK);
	const orca_vec2 goal = {65.0f, 0.0f};
	assert_int_equal(orca_nav_set_target(nav, id, goal), ORCA_OK);
	assert_int_equal(orca_nav_update(nav, 0.1f), ORCA_OK);

	enum { ROOM = 64 };
	orca_vec2 all[ROOM], some[ROOM];
	orca_nav_path p;
	assert_int_equal(orca_nav_get_path(nav, id, &p, all, ROOM), ORCA_OK);
	assert_int_equal(p.phase, ORCA_NAV_MOVING);
	const uint32_t n = p.corner_count;
	printf("a comb of %d walls: %u corners\n", WALLS, n);
	assert_true(n >= 2 * WALLS && n < ROOM); /* round each wall's end: two corners each */
	assert_true(fabsf(all[n - 1].x - goal.x) < 1e-3f && fabsf(all[n - 1].y - goal.y) < 1e-3f);
	for (uint32_t k = 1; k <= n + 1; ++k) {
		assert_int_equal(orca_nav_get_path(nav, id, &p, some, k), ORCA_OK);
		assert_int_equal(p.corner_count, k < n ? k : n);
		for (uint32_t i = 0; i < p.corner_count; ++i)
			assert_true(some[i].x == all[i].x && some[i].y == all[i].y);
	}
	orca_nav_destroy(nav);
	orca_world_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(wall_gap),
	    cmocka_unit_test(u_trap),
	    cmocka_unit_test(serpentine),
	    cmocka_unit_test(room_door),
	    cmocka_unit_test(path_corners),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
