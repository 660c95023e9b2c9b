/* test_nav_checkpoint.c — a world and its navigation saved at random ticks
 * (orca_world_save + orca_nav_save) and loaded into a fresh world and a fresh
 * navigation continue exactly as the run that never stopped: the state hash
 * after every step and every event are the same. The run has what makes
 * navigation's state rich: tiles waiting for a rebuild (one per update),
 * obstacles added and removed (one just before a save, not yet seen by
 * navigation), a path queue longer than its budget, corridors walked in
 * parts (16 polygons), re-plans for no progress, STUCK and UNREACHABLE,
 * agents removed while navigating and their slots reused, agents stopped.
 * The uninterrupted run also asks for paths every step (as GetPaths does);
 * the loaded ones do not: asking must not change anything. A damaged save
 * (truncated, bytes flipped) loads with an error or not at all, never crashes.
 * A save of the format before ("nav3", one path queue) loads too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "nav_test_util.h"

#define STEPS 900
#define AGENTS 240
#if defined(__SANITIZE_ADDRESS__)
#define SAVES 3
#else
#define SAVES 6
#endif
#define HALF 100.0f
#define DT 0.2f

typedef struct run_state {
	orca_agent_id ids[AGENTS]; /* what the "client" knows: its agents' ids */
	orca_obstacle_id walls[8];
} run_state;

static uint32_t mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	return x ^ (x >> 16);
}

/* a point in [-HALF+3, HALF-3] from a seed */
static orca_vec2 point_of(uint32_t seed)
{
	const uint32_t a = mix(seed), b = mix(seed ^ 0x9e3779b9u);
	return (orca_vec2){-HALF + 3.0f + (2.0f * HALF - 6.0f) * (float)(a >> 8) / 16777216.0f,
	                   -HALF + 3.0f + (2.0f * HALF - 6.0f) * (float)(b >> 8) / 16777216.0f};
}

static orca_nav_def nav_def(void)
{
	orca_nav_def d = orca_nav_default_def();
	d.bounds_min = (orca_vec2){-HALF, -HALF};
	d.bounds_max = (orca_vec2){HALF, HALF};
	d.agent_radius = 1.0f;
	d.tile_budget = 1;
	d.path_budget = 7;
	d.max_path = 12;
	d.stuck_time = 3.0f;
	d.arrival_distance = 1.0f;
	return d;
}

static orca_world *new_world(void)
{
	orca_world_def wd = orca_default_world_def();
	wd.agent_capacity = AGENTS * 2;
	wd.worker_count = 2;
	orca_world *w;
	assert_int_equal(orca_world_create(&wd, &w), ORCA_OK);
	return w;
}

static orca_agent_id add_agent(orca_world *w, orca_vec2 p)
{
	orca_agent_def a = orca_default_agent_def();
	a.position = p;
	a.radius = 1.0f;
	a.neighbor_dist = 8.0f;
	a.time_horizon = 4.0f;
	a.time_horizon_obst = 2.0f;
	orca_agent_id id = 0;
	assert_int_equal(orca_agent_add(w, &a, &id), ORCA_OK);
	return id;
}

/* The world at tick 0 (agents only where the mesh is: the nearest point on
 * it within a tenth, since nav puts points on its cell/8 grid): blocks on a grid with jitter, a closed box (its
 * inside is unreachable), agents between them. */
static void setup(orca_world *w, orca_nav **nav, run_state *rs)
{
	for (int gx = -4; gx < 4; ++gx)
		for (int gy = -4; gy < 4; ++gy) {
			const uint32_t s = (uint32_t)((gx + 8) * 31 + gy + 8);
			if (mix(s) % 3 == 0)
				continue;
			const float x = (float)gx * 24.0f + 4.0f + (float)(mix(s + 7) % 8);
			const float y = (float)gy * 24.0f + 4.0f + (float)(mix(s + 11) % 8);
			add_rect(w, x, y, x + 6.0f + (float)(mix(s + 13) % 8), y + 5.0f + (float)(mix(s + 17) % 9));
		}
	/* a closed box at the centre-right */
	add_rect(w, 60, -10, 62, 10);
	add_rect(w, 78, -10, 80, 10);
	add_rect(w, 60, -12, 80, -10);
	add_rect(w, 60, 10, 80, 12);
	orca_nav_def d = nav_def();
	assert_int_equal(orca_nav_create(&d, w, nav), ORCA_OK);
	memset(rs, 0, sizeof *rs);
	for (uint32_t i = 0, seed = 1; i < AGENTS; ++seed) {
		const orca_vec2 p = point_of(seed);
		orca_vec2 q;
		if (!orca_nav_nearest_point(*nav, p, &q) || fabsf(q.x - p.x) > 0.1f || fabsf(q.y - p.y) > 0.1f || (p.x > 58 && p.x < 82 && p.y > -14 && p.y < 14))
			continue;
		rs->ids[i] = add_agent(w, p);
		assert_int_equal(orca_nav_set_target(*nav, rs->ids[i], point_of(seed * 977u)), ORCA_OK);
		++i;
	}
}

/* What the "clients" do before the update of step s: a function of s and of
 * the run state only, so a loaded run can do the same. */
static void commands(orca_world *w, orca_nav *nav, run_state *rs, int s)
{
	if (s % 97 == 5) /* retarget a few, one into the closed box (unreachable) */
		for (uint32_t i = (uint32_t)s % 7; i < AGENTS; i += 9) {
			const orca_vec2 t = (i % 4 == 0) ? (orca_vec2){70, 0} : point_of((uint32_t)s * 131u + i);
			if (orca_agent_check(w, rs->ids[i]) == ORCA_OK)
				assert_int_equal(orca_nav_set_target(nav, rs->ids[i], t), ORCA_OK);
		}
	if (s % 60 == 20) { /* a wall across somewhere; the oldest of eight goes */
		const uint32_t k = (uint32_t)(s / 60) % 8;
		if (rs->walls[k])
			assert_int_equal(orca_obstacle_remove(w, rs->walls[k]), ORCA_OK);
		const orca_vec2 p = point_of((uint32_t)s * 7919u);
		rs->walls[k] = (s / 60) % 2 ? add_rect(w, p.x - 12, p.y - 0.5f, p.x + 12, p.y + 0.5f)
		                            : add_rect(w, p.x - 0.5f, p.y - 12, p.x + 0.5f, p.y + 12);
	}
	if (s % 45 == 30) { /* one agent leaves while navigating, another comes (its slot reused) */
		const uint32_t i = mix((uint32_t)s) % AGENTS;
		orca_agent_state st;
		if (orca_agent_get(w, rs->ids[i], &st) == ORCA_OK) {
			assert_int_equal(orca_agent_remove(w, rs->ids[i]), ORCA_OK);
			rs->ids[i] = add_agent(w, st.position);
			assert_int_equal(orca_nav_set_target(nav, rs->ids[i], point_of((uint32_t)s)), ORCA_OK);
		}
	}
	if (s % 50 == 40) /* stop one, and one stopped and navigating again in the same tick */
		for (uint32_t i = (uint32_t)s % 11; i < AGENTS; i += 80) {
			orca_nav_stop(nav, rs->ids[i]);
			if (i % 2)
				assert_int_equal(orca_nav_set_target(nav, rs->ids[i], point_of((uint32_t)s + i)), ORCA_OK);
		}
}

static int unseen_wall_tick = -1;

static uint64_t step(orca_world *w, orca_nav *nav, run_state *rs, int s, bool ask_paths, uint64_t *events)
{
	commands(w, nav, rs, s);
	assert_int_equal(orca_nav_update(nav, DT), ORCA_OK);
	uint32_t n;
	const orca_nav_event *ev = orca_nav_events(nav, &n);
	uint64_t h = n;
	for (uint32_t k = 0; k < n; ++k) {
		uint32_t px, py;
		memcpy(&px, &ev[k].point.x, 4);
		memcpy(&py, &ev[k].point.y, 4);
		h = h * 1000003u + ev[k].agent * 4u + (uint64_t)ev[k].kind;
		h = h * 1000003u + px * 31u + py;
	}
	*events = h;
	assert_int_equal(orca_world_step(w, DT), ORCA_OK);
	if (s == unseen_wall_tick) /* after the step: navigation sees it at the next update (a save now holds every tile) */
		rs->walls[7] = add_rect(w, -30, 40, -10, 41);
	if (ask_paths) /* GetPaths: a query, it must change nothing */
		for (uint32_t i = (uint32_t)s % 5; i < AGENTS; i += 5) {
			orca_nav_path p;
			orca_vec2 corners[8];
			orca_nav_get_path(nav, rs->ids[i], &p, corners, 8);
		}
	return orca_world_state_hash(w);
}

typedef struct saved {
	int tick;
	uint8_t *world, *nav;
	size_t world_len, nav_len;
	run_state rs;
} saved;

static void save_now(orca_world *w, orca_nav *nav, const run_state *rs, int tick, saved *out)
{
	out->tick = tick;
	out->rs = *rs;
	assert_int_equal(orca_world_save(w, NULL, 0, &out->world_len), ORCA_ERR_CAPACITY);
	out->world = malloc(out->world_len);
	assert_int_equal(orca_world_save(w, out->world, out->world_len, &out->world_len), ORCA_OK);
	out->nav_len = orca_nav_save(nav, NULL, 0);
	out->nav = malloc(out->nav_len);
	assert_int_equal(orca_nav_save(nav, out->nav, out->nav_len), out->nav_len);
}

static int load(const saved *sv, const uint8_t *nav_blob, size_t nav_len, orca_world **w, orca_nav **nav)
{
	*w = new_world();
	assert_int_equal(orca_world_load(*w, sv->world, sv->world_len), ORCA_OK);
	orca_nav_def d = nav_def();
	assert_int_equal(orca_nav_create(&d, *w, nav), ORCA_OK);
	return orca_nav_load(*nav, nav_blob, nav_len);
}

static void loaded_runs_continue_exactly(void **state)
{
	(void)state;
	static uint64_t hashes[STEPS], events[STEPS];
	saved saves[SAVES];
	int ticks[SAVES];
	uint32_t r = 2026u;
	for (int i = 0; i < SAVES; ++i) { /* random ticks, ascending; the first just before a wall comes (step 140) */
		r = mix(r + (uint32_t)i);
		ticks[i] = i == 0 ? 139 : ticks[i - 1] + 1 + (int)(r % (uint32_t)((STEPS - 100 - ticks[i - 1]) / (SAVES - i)));
	}
	unseen_wall_tick = ticks[1];
	orca_world *w = new_world();
	orca_nav *nav;
	run_state rs;
	setup(w, &nav, &rs);
	uint64_t kinds[4] = {0};
	int next = 0;
	for (int s = 0; s < STEPS; ++s) {
		hashes[s] = step(w, nav, &rs, s, true, &events[s]);
		uint32_t n;
		const orca_nav_event *ev = orca_nav_events(nav, &n);
		for (uint32_t k = 0; k < n; ++k)
			kinds[ev[k].kind]++;
		if (next < SAVES && s == ticks[next]) {
			save_now(w, nav, &rs, s, &saves[next++]);
		}
	}
	orca_nav_stats st;
	orca_nav_get_stats(nav, &st);
	printf("events: %llu arrived, %llu unreachable, %llu stuck; replans %llu %llu %llu %llu; %llu tiles built\n",
	       (unsigned long long)kinds[1], (unsigned long long)kinds[2], (unsigned long long)kinds[3],
	       (unsigned long long)st.replans[0], (unsigned long long)st.replans[1], (unsigned long long)st.replans[2],
	       (unsigned long long)st.replans[3], (unsigned long long)st.tiles_built);
	assert_true(kinds[1] > 0 && kinds[2] > 0 && kinds[3] > 0);
	assert_true(st.replans[0] > 0 && st.replans[2] > 0 && st.replans[3] > 0);
	orca_nav_destroy(nav);
	orca_world_destroy(w);

	for (int i = 0; i < SAVES; ++i) {
		saved *sv = &saves[i];
		orca_world *w2;
		orca_nav *nav2;
		assert_int_equal(load(sv, sv->nav, sv->nav_len, &w2, &nav2), ORCA_OK);
		orca_nav_stats s2;
		orca_nav_get_stats(nav2, &s2);
		printf("save at tick %d: %zu bytes of navigation (%u agents, %u paths and %u tiles waiting)\n", sv->tick,
		       sv->nav_len, s2.agents, s2.paths_pending, s2.tiles_pending);
		run_state rs2 = sv->rs;
		for (int s = sv->tick + 1; s < STEPS; ++s) {
			uint64_t ev;
			const uint64_t h = step(w2, nav2, &rs2, s, false, &ev);
			if (h != hashes[s] || ev != events[s])
				printf("loaded at tick %d: differs at step %d\n", sv->tick, s);
			assert_int_equal(h, hashes[s]);
			assert_int_equal(ev, events[s]);
		}
		orca_nav_destroy(nav2);
		orca_world_destroy(w2);
	}

	/* damaged saves: an error or a load, never a crash (ASan watches) */
	const saved *sv = &saves[SAVES - 1];
	uint8_t *bad = malloc(sv->nav_len);
	uint32_t refused = 0;
	for (uint32_t k = 0; k < 60; ++k) {
		orca_world *w2;
		orca_nav *nav2;
		memcpy(bad, sv->nav, sv->nav_len);
		size_t len = sv->nav_len;
		if (k < 20) {
			len = (size_t)mix(k) % sv->nav_len; /* truncated */
		} else {
			for (uint32_t f = 0; f < 1 + k % 4; ++f) /* bytes flipped */
				bad[mix(k * 13u + f) % sv->nav_len] ^= (uint8_t)(1u << (mix(k + f) % 8));
		}
		const int rc = load(sv, bad, len, &w2, &nav2);
		refused += rc != ORCA_OK;
		if (rc == ORCA_OK)
			for (int s = 0; s < 20; ++s) /* and it steps */
				orca_nav_update(nav2, DT), orca_world_step(w2, DT);
		orca_nav_destroy(nav2);
		orca_world_destroy(w2);
	}
	assert_true(refused >= 20);
	free(bad);
	for (int i = 0; i < SAVES; ++i) {
		free(saves[i].world);
		free(saves[i].nav);
	}
}

/* A save of the format before the path queue had two rings ("nav3": one
 * queue, targets and re-plans in one order) loads: each live entry goes to
 * its agent's ring, and every agent waiting for its path gets one. The old
 * save is made from a new one: the same bytes with the rings as one list. */
static void older_save_loads(void **state)
{
	(void)state;
	orca_world *w = new_world();
	orca_nav *nav;
	run_state rs;
	setup(w, &nav, &rs);
	uint64_t ev;
	for (int s = 0; s <= 297; ++s) /* retargets at 296: new targets and re-plans queued */
		step(w, nav, &rs, s, false, &ev);
	saved sv;
	save_now(w, nav, &rs, 297, &sv);
	orca_nav_stats st;
	orca_nav_get_stats(nav, &st);
	const uint32_t pending = st.paths_pending;
	assert_true(pending > 0);
	orca_nav_destroy(nav);
	orca_world_destroy(w);

	/* the rings are the save's last 8 + 4 * pending bytes: u32 n, n ids, u32 m, m ids */
	const size_t rings = 8u + 4u * pending, head = sv.nav_len - rings;
	uint32_t n;
	memcpy(&n, sv.nav + head, 4);
	assert_true(n <= pending);
	printf("older save: %u new targets and %u re-plans queued\n", n, pending - n);
	const size_t old_len = head + 4u + 4u * pending;
	uint8_t *old = malloc(old_len);
	memcpy(old, sv.nav, head);
	const uint8_t magic3[4] = {'n', 'a', 'v', '3'};
	memcpy(old, magic3, 4);
	memcpy(old + head, &pending, 4);
	memcpy(old + head + 4, sv.nav + head + 4, 4u * n);
	memcpy(old + head + 4 + 4u * n, sv.nav + head + 8 + 4u * n, 4u * (pending - n));

	orca_world *w2;
	orca_nav *nav2;
	assert_int_equal(load(&sv, old, old_len, &w2, &nav2), ORCA_OK);
	orca_nav_get_stats(nav2, &st);
	assert_true(st.paths_pending > 0 && st.paths_pending <= pending);
	for (int s = 0; s < 200; ++s) {
		assert_int_equal(orca_nav_update(nav2, DT), ORCA_OK);
		assert_int_equal(orca_world_step(w2, DT), ORCA_OK);
	}
	uint32_t navigating = 0;
	for (uint32_t i = 0; i < AGENTS; ++i) {
		orca_nav_path p;
		if (orca_nav_get_path(nav2, sv.rs.ids[i], &p, NULL, 0) != ORCA_OK)
			continue;
		navigating++;
		assert_int_not_equal(p.phase, ORCA_NAV_WAITING);
	}
	assert_true(navigating > AGENTS / 2);
	orca_nav_destroy(nav2);
	orca_world_destroy(w2);
	free(old);
	free(sv.world);
	free(sv.nav);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(loaded_runs_continue_exactly),
	    cmocka_unit_test(older_save_loads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
