/* test_nav_scale.c — 10,000 agents, each with a random target up to 80 away,
 * among 500 random blocks in a 1,000 x 1,000 world, in the reference and in
 * the quality avoidance mode: every agent arrives, or is reported unreachable
 * (it then walks to the point chosen) — none is left over, not even one
 * reported STUCK — and no centre
 * is ever inside a block (checked every 20 steps). Paths are answered 1,000
 * per update, so the first retarget spreads over ten updates. Nav arrival is
 * two radii: targets closer than that cannot all be reached exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "nav_test_util.h"

/* Under ASan+UBSan (10-20x slower) a fifth of the crowd, same world. */
#if defined(__SANITIZE_ADDRESS__)
#define AGENTS 2000
#else
#define AGENTS 10000
#endif
#define BLOCKS 500
#define HALF 500.0f

static uint32_t rng = 12345u;

static float frand(float lo, float hi)
{
	rng = rng * 1664525u + 1013904223u;
	return lo + (hi - lo) * (float)(rng >> 8) / 16777216.0f;
}

typedef struct box {
	float x0, y0, x1, y1;
} box;

static bool near_box(const box *b, uint32_t n, float x, float y, float margin)
{
	for (uint32_t i = 0; i < n; ++i)
		if (x > b[i].x0 - margin && x < b[i].x1 + margin && y > b[i].y0 - margin && y < b[i].y1 + margin)
			return true;
	return false;
}

static uint32_t centres_inside(const orca_world *w, const orca_agent_id *ids, const box *b)
{
	uint32_t bad = 0;
	for (uint32_t i = 0; i < AGENTS; ++i) {
		orca_agent_state st;
		orca_agent_get(w, ids[i], &st);
		bad += near_box(b, BLOCKS, st.position.x, st.position.y, 0.0f);
	}
	return bad;
}

static void all_arrive_or_are_unreachable(orca_avoidance avoidance)
{
	rng = 12345u; /* the same world for either mode */
	box *blocks = malloc(BLOCKS * sizeof *blocks);
	orca_world_def wd = orca_default_world_def();
	wd.agent_capacity = AGENTS;
	wd.worker_count = 2;
	wd.avoidance = avoidance;
	orca_world *w;
	assert_int_equal(orca_world_create(&wd, &w), ORCA_OK);
	/* blocks at least 6 apart (three agents abreast): a one-lane gap with
	 * traffic both ways jams ORCA for good, and that is reported STUCK, not
	 * what this test is about */
	for (uint32_t i = 0; i < BLOCKS;) {
		const float x = frand(-HALF + 20, HALF - 40), y = frand(-HALF + 20, HALF - 40);
		const box b = {x, y, x + frand(4, 25), y + frand(4, 25)};
		bool clear = true;
		for (uint32_t k = 0; k < i && clear; ++k)
			clear = b.x1 + 6 < blocks[k].x0 || b.x0 > blocks[k].x1 + 6 || b.y1 + 6 < blocks[k].y0 ||
			        b.y0 > blocks[k].y1 + 6;
		if (!clear)
			continue;
		blocks[i++] = b;
		add_rect(w, b.x0, b.y0, b.x1, b.y1);
	}
	orca_nav_def d = orca_nav_default_def();
	d.bounds_min = (orca_vec2){-HALF, -HALF};
	d.bounds_max = (orca_vec2){HALF, HALF};
	d.agent_radius = 1.0f;
	d.path_budget = 1000;
	d.arrival_distance = 2.0f; /* two radii: targets a radius apart cannot both be reached exactly */
	orca_nav *nav;
	assert_int_equal(orca_nav_create(&d, w, &nav), ORCA_OK);
	orca_agent_id *ids = malloc(AGENTS * sizeof *ids);
	uint8_t *done = calloc(AGENTS + 1, 1), *unreachable = calloc(AGENTS + 1, 1), *stuck = calloc(AGENTS + 1, 1);
	orca_vec2 *stuck_at = calloc(AGENTS + 1, sizeof *stuck_at); /* where STUCK was last said */
	for (uint32_t i = 0; i < AGENTS;) {
		const float x = frand(-HALF + 5, HALF - 5), y = frand(-HALF + 5, HALF - 5);
		if (near_box(blocks, BLOCKS, x, y, 2.0f))
			continue;
		orca_agent_def a = orca_default_agent_def();
		a.position = (orca_vec2){x, y};
		a.radius = 1.0f;
		a.neighbor_dist = 8.0f;
		a.time_horizon = 4.0f;
		a.time_horizon_obst = 2.0f;
		assert_int_equal(orca_agent_add(w, &a, &ids[i]), ORCA_OK);
		float tx = x + frand(-80, 80), ty = y + frand(-80, 80);
		tx = tx < -HALF + 2 ? -HALF + 2 : tx > HALF - 2 ? HALF - 2 : tx;
		ty = ty < -HALF + 2 ? -HALF + 2 : ty > HALF - 2 ? HALF - 2 : ty;
		assert_int_equal(orca_nav_set_target(nav, ids[i], (orca_vec2){tx, ty}), ORCA_OK);
		++i;
	}
	uint32_t arrived = 0, unreachable_count = 0, inside = 0, steps = 0, settled = 0;
	for (; steps < 5000 && settled < AGENTS; ++steps) {
		assert_int_equal(orca_nav_update(nav, 0.25f), ORCA_OK);
		uint32_t n;
		const orca_nav_event *ev = orca_nav_events(nav, &n);
		for (uint32_t k = 0; k < n; ++k) {
			const uint32_t slot = (ev[k].agent & 0xfffffu) - 1u;
			if (ev[k].kind == ORCA_NAV_ARRIVED && !done[slot]) {
				done[slot] = 1;
				++arrived;
				settled += !unreachable[slot];
			}
			if (ev[k].kind == ORCA_NAV_STUCK) {
				stuck[slot] = 1;
				stuck_at[slot] = ev[k].point;
			}
			if (ev[k].kind == ORCA_NAV_UNREACHABLE && !unreachable[slot]) {
				unreachable[slot] = 1;
				++unreachable_count;
				settled += !done[slot];
			}
		}
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
		if (steps % 20 == 0)
			inside += centres_inside(w, ids, blocks);
	}
	orca_nav_stats s;
	orca_nav_get_stats(nav, &s);
	printf("%u steps: %u of %u arrived or were reported unreachable; %u arrived, %u unreachable; centres inside blocks %u; "
	       "%u polygons, %llu paths planned, %.1f MB\n",
	       steps, settled, AGENTS, arrived, unreachable_count, inside, s.polygons, (unsigned long long)s.paths_planned,
	       (double)s.memory_bytes / 1e6);
	printf("re-plans: mesh %llu, off corridor %llu, no progress %llu, next part %llu\n",
	       (unsigned long long)s.replans[0], (unsigned long long)s.replans[1], (unsigned long long)s.replans[2],
	       (unsigned long long)s.replans[3]);
	for (uint32_t i = 0, shown = 0; i < AGENTS && shown < 12; ++i) {
		const uint32_t slot = (ids[i] & 0xfffffu) - 1u;
		if (done[slot] || unreachable[slot])
			continue;
		orca_agent_state st;
		orca_agent_get(w, ids[i], &st);
		orca_nav_path p;
		orca_nav_get_path(nav, ids[i], &p, NULL, 0);
		printf("not arrived: agent %u at (%.2f, %.2f) phase %d goal (%.2f, %.2f) target (%.2f, %.2f) unreachable %d "
		       "steering at (%.2f, %.2f) v (%.2f, %.2f) pref (%.2f, %.2f)\n",
		       ids[i], (double)st.position.x, (double)st.position.y, p.phase, (double)p.goal.x, (double)p.goal.y,
		       (double)p.target.x, (double)p.target.y, p.unreachable, (double)st.target.x, (double)st.target.y, (double)st.velocity.x, (double)st.velocity.y,
		       (double)st.pref_velocity.x, (double)st.pref_velocity.y);
		for (uint32_t b = 0; b < BLOCKS; ++b)
			if (near_box(&blocks[b], 1, st.position.x, st.position.y, 6.0f))
				printf("   block (%.2f,%.2f)-(%.2f,%.2f)\n", (double)blocks[b].x0, (double)blocks[b].y0, (double)blocks[b].x1, (double)blocks[b].y1);
		orca_agent_id near[8];
		const uint32_t nn = orca_query_radius(w, st.position, 3.0f, near, 8);
		for (uint32_t k = 0; k < nn && k < 8; ++k) {
			orca_agent_state o;
			orca_agent_get(w, near[k], &o);
			printf("   neighbour %u at (%.2f, %.2f) v (%.2f, %.2f) target (%.2f, %.2f) arrived %d\n", near[k],
			       (double)o.position.x, (double)o.position.y, (double)o.velocity.x, (double)o.velocity.y,
			       (double)o.target.x, (double)o.target.y, o.arrived);
		}
		++shown;
	}
	/* Every agent arrives or is reported unreachable (issue 10's bar). What
	 * used to leave 1-3 of 10,000 over, and the rule in nav_flow.c that settles it
	 * (docs/navigation.md, "Arrival, stuck, unreachable"):
	 * - an arrived agent pressing on toward its goal, or back to where it was
	 *   pushed from, walled a block's corner for one still walking: arrived
	 *   agents walk on only while they get closer, then rest, and a resting
	 *   agent stays where it is pushed (visit_arrived);
	 * - an agent pinned at a block's corner does not move, so it cannot push
	 *   an arrived agent at rest out of a passage too narrow by a third of a
	 *   radius: a stalled agent asks the arrived agents it touches to step
	 *   a radius aside (make_way);
	 * - the side step of a stalled agent went into the block it was pinned
	 *   at: it takes the side that is on the mesh (refresh);
	 * - a corridor that swings (first corner ahead from one spot, behind from
	 *   the next) walked an agent to and fro for ever, "progress" toward each
	 *   corner in turn, never told STUCK: going back to the corner headed for
	 *   before is no progress, so it is re-planned (visit_agent);
	 * - agents sent to the world's edge (targets clamped there) line it when
	 *   they arrive: a later one, pushed outside the mesh, kept stepping back
	 *   onto it into them; and one whose goal an arrived agent covers cannot
	 *   reach it: an agent stalled on its last leg against an arrived agent
	 *   nearer its goal has arrived (goal_taken). */
	uint32_t left = 0, left_stuck = 0;
	for (uint32_t i = 0; i < AGENTS; ++i) {
		const uint32_t slot = (ids[i] & 0xfffffu) - 1u;
		if (done[slot] || unreachable[slot])
			continue;
		orca_agent_state st;
		orca_agent_get(w, ids[i], &st);
		++left;
		left_stuck += stuck[slot] && (st.position.x - stuck_at[slot].x) * (st.position.x - stuck_at[slot].x) +
		                                     (st.position.y - stuck_at[slot].y) * (st.position.y - stuck_at[slot].y) <=
		                                 16.0f * 1.0f; /* within 4 radii of where STUCK was said */
	}
	printf("not arrived nor unreachable: %u (%u of them reported STUCK where they stand)\n", left, left_stuck);
	assert_int_equal(settled + left, AGENTS);
	assert_int_equal(left - left_stuck, 0); /* none unaccounted ... */
	assert_int_equal(left, 0);              /* ... and none STUCK either */
	assert_true(unreachable_count > 0); /* some targets fell inside blocks */
	assert_int_equal(inside, 0);
	orca_nav_destroy(nav);
	orca_world_destroy(w);
	free(ids);
	free(done);
	free(unreachable);
	free(stuck);
	free(stuck_at);
	free(blocks);
}

static void reference_mode(void **state)
{
	(void)state;
	all_arrive_or_are_unreachable(ORCA_AVOIDANCE_REFERENCE);
}

static void quality_mode(void **state)
{
	(void)state;
	all_arrive_or_are_unreachable(ORCA_AVOIDANCE_QUALITY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(reference_mode),
	    cmocka_unit_test(quality_mode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
