/* test_nav_events.c — what navigation tells and decides, one case each:
 * an enclosed target is UNREACHABLE and the agent stops at the point chosen;
 * a target inside a solid block likewise; a wall added at run time closes the
 * near door and agents re-plan through the other (tiles rebuilt one per
 * update); the path queue answers at most `path_budget` queries per update,
 * new targets before re-plans;
 * an agent held back by one that never yields is STUCK; save/load; taking an
 * agent over through orca.h ends its navigation; a path longer than the
 * corridor holds is walked in parts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nav_test_util.h"

static orca_world *make_world(void)
{
	orca_world_def wd = orca_default_world_def();
	orca_world *w;
	assert_int_equal(orca_world_create(&wd, &w), ORCA_OK);
	return w;
}

static orca_agent_id add_agent(orca_world *w, float x, float y)
{
	orca_agent_def d = orca_default_agent_def();
	d.position = (orca_vec2){x, y};
	d.time_horizon = 5.0f;
	d.time_horizon_obst = 5.0f;
	orca_agent_id id;
	assert_int_equal(orca_agent_add(w, &d, &id), ORCA_OK);
	return id;
}

static orca_nav_def small_def(float half)
{
	orca_nav_def d = orca_nav_default_def();
	d.bounds_min = (orca_vec2){-half, -half};
	d.bounds_max = (orca_vec2){half, half};
	return d;
}

/* Steps until `kind` is seen for `id` (or cap); returns its event or kind 0. */
static orca_nav_event run_until(orca_nav *nav, orca_world *w, orca_agent_id id, orca_nav_event_kind kind, int cap)
{
	for (int s = 0; s < cap; ++s) {
		assert_int_equal(orca_nav_update(nav, 0.25f), ORCA_OK);
		uint32_t n;
		const orca_nav_event *ev = orca_nav_events(nav, &n);
		for (uint32_t k = 0; k < n; ++k)
			if (ev[k].agent == id && ev[k].kind == kind)
				return ev[k];
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
		assert_int_equal(centres_inside_obstacles(w), 0);
	}
	return (orca_nav_event){0};
}

static void enclosed_target_is_unreachable(void **state)
{
	(void)state;
	orca_world *w = make_world();
	add_rect(w, 40, -20, 60, -18);
	add_rect(w, 40, 18, 60, 20);
	add_rect(w, 40, -18, 42, 18);
	add_rect(w, 58, -18, 60, 18);
	const orca_agent_id id = add_agent(w, -50, 0);
	orca_nav_def d = small_def(100);
	orca_nav *nav;
	assert_int_equal(orca_nav_create(&d, w, &nav), ORCA_OK);
	assert_int_equal(orca_nav_set_target(nav, id, (orca_vec2){50, 0}), ORCA_OK);
	const orca_nav_event u = run_until(nav, w, id, ORCA_NAV_UNREACHABLE, 10);
	assert_int_equal(u.kind, ORCA_NAV_UNREACHABLE);
	printf("unreachable (50, 0): point (%.2f, %.2f)\n", (double)u.point.x, (double)u.point.y);
	/* the nearest reachable point: just left of the box's left wall */
	assert_true(u.point.x < 40.0f - 1.5f + 0.01f && u.point.x > 40.0f - 1.5f - 1.0f);
	assert_true(u.point.y > -2.0f && u.point.y < 2.0f);
	assert_true(u.target.x == 50.0f && u.target.y == 0.0f);
	const orca_nav_event a = run_until(nav, w, id, ORCA_NAV_ARRIVED, 1000);
	assert_int_equal(a.kind, ORCA_NAV_ARRIVED);
	orca_agent_state st;
	orca_agent_get(w, id, &st);
	const float dx = st.position.x - u.point.x, dy = st.position.y - u.point.y;
	assert_true(dx * dx + dy * dy < 0.25f);
	orca_nav_path p;
	assert_int_equal(orca_nav_get_path(nav, id, &p, NULL, 0), ORCA_OK);
	assert_int_equal(p.phase, ORCA_NAV_DONE);
	assert_true(p.unreachable);
	orca_nav_destroy(nav);
	orca_world_destroy(w);
}

static void target_inside_block(void **state)
{
	(void)state;
	orca_world *w = make_world();
	add_rect(w, 20, -20, 60, 20);
	const orca_agent_id id = add_agent(w, -50, 0);
	orca_nav_def d = small_def(100);
	orca_nav *nav;
	assert_int_equal(orca_nav_create(&d, w, &nav), ORCA_OK);
	assert_int_equal(orca_nav_set_target(nav, id, (orca_vec2){25, 0}), ORCA_OK);
	const orca_nav_event u = run_until(nav, w, id, ORCA_NAV_UNREACHABLE, 10);
	assert_int_equal(u.kind, ORCA_NAV_UNREACHABLE);
	printf("unreachable (25, 0) in a block: point (%.2f, %.2f)\n", (double)u.point.x, (double)u.point.y);
	assert_true(u.point.x < 20.0f - 1.4f && u.point.x > 20.0f - 2.5f);
	assert_int_equal(run_until(nav, w, id, ORCA_NAV_ARRIVED, 1000).kind, ORCA_NAV_ARRIVED);
	orca_nav_destroy(nav);
	orca_world_destroy(w);
}

/* A wall at x = 0 with door A (|y| < 5) and door B (35 < y < 45). Agents head
 * for door A; after 20 steps a block closes it. Each must cross x = 0 at door B. */
static void wall_added_replans_through_other_door(void **state)
{
	(void)state;
	orca_world *w = make_world();
	add_rect(w, -1, -60, 1, -5);
	add_rect(w, -1, 5, 1, 35);
	add_rect(w, -1, 45, 1, 60);
	enum { N = 5 };
	orca_agent_id ids[N];
	float crossed_y[N];
	orca_vec2 last[N];
	orca_nav_def d = small_def(60);
	d.tile_budget = 1; /* the rebuild is spread over updates */
	orca_nav *nav;
	assert_int_equal(orca_nav_create(&d, w, &nav), ORCA_OK);
	for (int i = 0; i < N; ++i) {
		ids[i] = add_agent(w, -30, -8 + 4 * (float)i);
		crossed_y[i] = 1e9f;
		last[i] = (orca_vec2){-30, -8 + 4 * (float)i};
		assert_int_equal(orca_nav_set_target(nav, ids[i], (orca_vec2){30, -8 + 4 * (float)i}), ORCA_OK);
	}
	int arrived = 0, pending_seen = 0;
	for (int s = 0; s < 3000 && arrived < N; ++s) {
		if (s == 20)
			add_rect(w, -1, -5, 1, 5);
		assert_int_equal(orca_nav_update(nav, 0.25f), ORCA_OK);
		orca_nav_stats stats;
		orca_nav_get_stats(nav, &stats);
		pending_seen += stats.tiles_pending > 0;
		uint32_t n;
		const orca_nav_event *ev = orca_nav_events(nav, &n);
		for (uint32_t k = 0; k < n; ++k)
			arrived += ev[k].kind == ORCA_NAV_ARRIVED;
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
		assert_int_equal(centres_inside_obstacles(w), 0);
		for (int i = 0; i < N; ++i) {
			orca_agent_state st;
			orca_agent_get(w, ids[i], &st);
			if (last[i].x < 0.0f && st.position.x >= 0.0f && crossed_y[i] > 1e8f)
				crossed_y[i] = st.position.y;
			last[i] = st.position;
		}
	}
	assert_int_equal(arrived, N);
	assert_true(pending_seen > 0); /* the rebuild took more than one update */
	for (int i = 0; i < N; ++i)
		assert_true(crossed_y[i] > 35.0f && crossed_y[i] < 45.0f);
	orca_nav_destroy(nav);
	orca_world_destroy(w);
}

static void path_queue_has_a_budget(void **state)
{
	(void)state;
	orca_world *w = make_world();
	add_rect(w, -5, -5, 5, 5);
	orca_nav_def d = small_def(100);
	d.path_budget = 50;
	orca_nav *nav;
	assert_int_equal(orca_nav_create(&d, w, &nav), ORCA_OK);
	for (int i = 0; i < 300; ++i) {
		const orca_agent_id id = add_agent(w, -80 + (float)(i % 20) * 4, -80 + (float)(i / 20) * 4);
		assert_int_equal(orca_nav_set_target(nav, id, (orca_vec2){60, 60}), ORCA_OK);
	}
	orca_nav_stats s;
	for (int u = 1; u <= 6; ++u) {
		assert_int_equal(orca_nav_update(nav, 0.25f), ORCA_OK);
		orca_nav_get_stats(nav, &s);
		assert_int_equal(s.paths_planned, (uint64_t)(50 * u));
		assert_int_equal(s.paths_pending, (uint32_t)(300 - 50 * u));
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
	}
	orca_nav_destroy(nav);
	orca_world_destroy(w);
}

/* A new target is answered before the re-plans waiting in the queue: a wall
 * across 300 corridors floods the queue with re-plans (budget 50 a update);
 * a new agent's target and an old agent's new one are both answered at the
 * next update, while re-plans still wait. */
static void new_target_goes_before_replans(void **state)
{
	(void)state;
	orca_world *w = make_world();
	orca_nav_def d = small_def(100);
	d.path_budget = 50;
	orca_nav *nav;
	assert_int_equal(orca_nav_create(&d, w, &nav), ORCA_OK);
	orca_agent_id ids[300];
	for (int i = 0; i < 300; ++i) {
		ids[i] = add_agent(w, -80 + (float)(i % 20) * 4, -80 + (float)(i / 20) * 4);
		assert_int_equal(orca_nav_set_target(nav, ids[i], (orca_vec2){60, 60}), ORCA_OK);
	}
	for (int u = 0; u < 6; ++u) {
		assert_int_equal(orca_nav_update(nav, 0.25f), ORCA_OK);
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
	}
	orca_nav_stats s;
	orca_nav_get_stats(nav, &s);
	assert_int_equal(s.paths_pending, 0);
	add_rect(w, -95, 20, 40, 22); /* across every corridor, open on the right */
	for (int u = 0; u < 40 && s.paths_pending < 120; ++u) {
		assert_int_equal(orca_nav_update(nav, 0.25f), ORCA_OK);
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
		orca_nav_get_stats(nav, &s);
	}
	assert_true(s.paths_pending >= 120);
	assert_true(s.replans[ORCA_NAV_REPLAN_MESH_CHANGED] >= 120);
	const orca_agent_id fresh = add_agent(w, 0, -60);
	assert_int_equal(orca_nav_set_target(nav, fresh, (orca_vec2){80, -60}), ORCA_OK);
	assert_int_equal(orca_nav_set_target(nav, ids[299], (orca_vec2){-80, 60}), ORCA_OK);
	assert_int_equal(orca_nav_update(nav, 0.25f), ORCA_OK);
	orca_nav_path p;
	assert_int_equal(orca_nav_get_path(nav, fresh, &p, NULL, 0), ORCA_OK);
	assert_int_equal(p.phase, ORCA_NAV_MOVING);
	assert_int_equal(orca_nav_get_path(nav, ids[299], &p, NULL, 0), ORCA_OK);
	assert_int_equal(p.phase, ORCA_NAV_MOVING);
	assert_true(p.target.x == -80 && p.target.y == 60);
	orca_nav_get_stats(nav, &s);
	assert_true(s.paths_pending >= 120 - 50);
	orca_nav_destroy(nav);
	orca_world_destroy(w);
}

/* A corridor 5 wide; halfway along it an agent that never yields and stands. */
static void blocked_agent_is_stuck(void **state)
{
	(void)state;
	orca_world *w = make_world();
	add_rect(w, -40, 2.5f, 40, 4.5f);
	add_rect(w, -40, -4.5f, 40, -2.5f);
	add_rect(w, -42, -4.5f, -40, 4.5f);
	orca_agent_def blocker = orca_default_agent_def();
	blocker.position = (orca_vec2){0, 0};
	blocker.weight = 0.0f;
	orca_agent_id bid;
	assert_int_equal(orca_agent_add(w, &blocker, &bid), ORCA_OK);
	const orca_agent_id id = add_agent(w, -30, 0);
	orca_nav_def d = small_def(60);
	d.stuck_time = 3.0f;
	orca_nav *nav;
	assert_int_equal(orca_nav_create(&d, w, &nav), ORCA_OK);
	assert_int_equal(orca_nav_set_target(nav, id, (orca_vec2){30, 0}), ORCA_OK);
	const orca_nav_event e = run_until(nav, w, id, ORCA_NAV_STUCK, 400);
	assert_int_equal(e.kind, ORCA_NAV_STUCK);
	assert_true(e.point.x < -2.0f && e.point.x > -6.0f);
	orca_nav_destroy(nav);
	orca_world_destroy(w);
}

static void save_load_and_takeover(void **state)
{
	(void)state;
	orca_world *w = make_world();
	add_rect(w, -5, -20, 5, 20);
	orca_nav_def d = small_def(60);
	orca_nav *nav;
	assert_int_equal(orca_nav_create(&d, w, &nav), ORCA_OK);
	orca_agent_id ids[4];
	for (int i = 0; i < 4; ++i) {
		ids[i] = add_agent(w, -30, (float)i * 5);
		assert_int_equal(orca_nav_set_target(nav, ids[i], (orca_vec2){30, (float)i * 5}), ORCA_OK);
	}
	for (int s = 0; s < 10; ++s) {
		orca_nav_update(nav, 0.25f);
		orca_world_step(w, 0.25f);
	}
	/* taken over through orca.h: a velocity, a direct target, a removal */
	assert_int_equal(orca_agent_set_pref_velocity(w, ids[0], (orca_vec2){1, 0}), ORCA_OK);
	assert_int_equal(orca_agent_set_target(w, ids[1], (orca_vec2){-50, 0}), ORCA_OK);
	assert_int_equal(orca_agent_remove(w, ids[2]), ORCA_OK);
	for (uint32_t u = 0; u <= d.refresh_interval; ++u) /* noticed at each agent's next visit */
		assert_int_equal(orca_nav_update(nav, 0.25f), ORCA_OK);
	orca_nav_stats s;
	orca_nav_get_stats(nav, &s);
	assert_int_equal(s.agents, 1);

	/* what is saved comes back in a fresh nav (the old one goes first: two
	 * navs steering one agent would fight) */
	const size_t need = orca_nav_save(nav, NULL, 0);
	uint8_t *blob = malloc(need);
	assert_int_equal(orca_nav_save(nav, blob, need), need);
	orca_nav_destroy(nav);
	assert_int_equal(orca_nav_create(&d, w, &nav), ORCA_OK);
	assert_int_equal(orca_nav_load(nav, blob, need - 1), ORCA_ERR_INVALID_ARGUMENT);
	assert_int_equal(orca_nav_load(nav, blob, need), ORCA_OK);
	orca_nav_get_stats(nav, &s);
	assert_int_equal(s.agents, 1);
	orca_nav_path p;
	assert_int_equal(orca_nav_get_path(nav, ids[3], &p, NULL, 0), ORCA_OK);
	assert_true(p.target.x == 30.0f && p.target.y == 15.0f);
	blob[0] ^= 0xff;
	assert_int_equal(orca_nav_load(nav, blob, need), ORCA_ERR_INVALID_ARGUMENT);
	free(blob);
	assert_int_equal(orca_nav_stop(nav, ids[3]), ORCA_OK);
	orca_nav_get_stats(nav, &s);
	assert_int_equal(s.agents, 0);
	orca_nav_destroy(nav);
	orca_world_destroy(w);
}

/* A path longer than the corridor holds is walked in parts. */
static void long_path_in_parts(void **state)
{
	(void)state;
	orca_world *w = make_world();
	add_rect(w, -50, -150, -40, 150);
	add_rect(w, 40, -150, 50, 150);
	orca_nav_def d = small_def(200);
	d.max_path = 4;
	orca_nav *nav;
	assert_int_equal(orca_nav_create(&d, w, &nav), ORCA_OK);
	const orca_agent_id id = add_agent(w, -180, -180);
	assert_int_equal(orca_nav_set_target(nav, id, (orca_vec2){180, 180}), ORCA_OK);
	const orca_nav_event e = run_until(nav, w, id, ORCA_NAV_ARRIVED, 6000);
	assert_int_equal(e.kind, ORCA_NAV_ARRIVED);
	orca_nav_stats s;
	orca_nav_get_stats(nav, &s);
	assert_true(s.replans[ORCA_NAV_REPLAN_NEXT_PART] > 0);
	orca_nav_destroy(nav);
	orca_world_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(enclosed_target_is_unreachable),
	    cmocka_unit_test(target_inside_block),
	    cmocka_unit_test(wall_added_replans_through_other_door),
	    cmocka_unit_test(path_queue_has_a_budget),
	    cmocka_unit_test(new_target_goes_before_replans),
	    cmocka_unit_test(blocked_agent_is_stuck),
	    cmocka_unit_test(save_load_and_takeover),
	    cmocka_unit_test(long_path_in_parts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
