/* test_nav_maze.c — the four walled set-ups of tests/nav/data (a wall with a
 * gap, a U open away from the goal, a serpentine of five walls, a room with a
 * door): straight-line steering gets no agent home in 4,000 steps;
 * navigation gets every agent home, and no agent centre is ever inside a wall. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(wall_gap),
	    cmocka_unit_test(u_trap),
	    cmocka_unit_test(serpentine),
	    cmocka_unit_test(room_door),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
