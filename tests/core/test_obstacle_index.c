/* test_obstacle_index.c — obstacles that change while the world runs (the
 * edge grid of obstacle_grid.c): the grid query equals a brute-force scan
 * through adds and removes (long edges, far coordinates, wide ranges
 * included), from its hash table and from its packed copy; a crowd crossing a field where polygons appear and disappear
 * every few steps never has an agent centre inside a live polygon; the same
 * run hashes identically for 1, 2, 3 and 4 workers; AUTO keeps RVO2's tree
 * for obstacles present at the first step, then changes to the grid; and a
 * saved and loaded world rebuilds the same index and steps identically; and
 * obstacles that come and go all over the world leave no memory behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../core/src/internal.h"

static uint64_t rng_state = 88172645463325252ull;
static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 11);
}
static float frand(float lo, float hi) { return lo + (hi - lo) * (float)(rnd() % 1000000u) / 1000000.0f; }

/* A counter-clockwise regular k-gon. */
static void ngon(orca_vec2 *v, uint32_t k, float cx, float cy, float r, float phase)
{
	for (uint32_t i = 0; i < k; ++i) {
		const float a = phase + 6.2831853f * (float)i / (float)k;
		v[i].x = cx + r * cosf(a);
		v[i].y = cy + r * sinf(a);
	}
}

static const struct orca_world *sort_world;

/* (distance, owner slot, corner): the grid's order */
static int cmp_nb(const void *a_, const void *b_)
{
	const nb_entry *a = a_, *b = b_;
	if (a->dist_sq != b->dist_sq)
		return a->dist_sq < b->dist_sq ? -1 : 1;
	const obst_vertex *va = &sort_world->verts[a->index], *vb = &sort_world->verts[b->index];
	if (va->owner != vb->owner)
		return va->owner < vb->owner ? -1 : 1;
	return va->corner < vb->corner ? -1 : va->corner > vb->corner;
}

/* Every live edge the agent sees within range, as the grid must return them. */
static uint32_t brute(const struct orca_world *w, vec2 pos, float range_sq, nb_entry *out)
{
	uint32_t n = 0;
	for (uint32_t k = 0; k < w->obst_live; ++k) {
		const obstacle_slot *o = &w->obst[w->obst_order[k]];
		uint32_t vi = o->first_vert;
		for (uint32_t e = 0; e < o->count; ++e, vi = w->verts[vi].next) {
			const vec2 p1 = w->verts[vi].point, p2 = w->verts[w->verts[vi].next].point;
			if (!(left_of(p1, p2, pos) < 0.0f))
				continue;
			const float d = dist_sq_point_segment(p1, p2, pos);
			if (d < range_sq) {
				out[n].dist_sq = d;
				out[n].index = vi;
				n++;
			}
		}
	}
	sort_world = w;
	qsort(out, n, sizeof *out, cmp_nb);
	return n;
}

static uint32_t packed_checks; /* check_queries passes that read the packed grid */

/* Queries against the brute force: from the hash table, then from the
 * packed grid (what a step's queries read once the obstacles stay put). */
static void check_queries(orca_world *w, float spread, int queries)
{
	nb_entry *a = calloc(w->vert_count + 1, sizeof *a), *b = calloc(w->vert_count + 1, sizeof *b);
	assert_non_null(a);
	assert_non_null(b);
	assert_false(w->opack.valid);
	for (int q = 0; q < 2 * queries; ++q) {
		if (q == queries) {
			orca_obstacle_grid_pack(w);
			packed_checks += w->opack.valid;
		}
		const vec2 pos = v2(frand(-spread, spread), frand(-spread, spread));
		const float range = (q % 10 == 0) ? frand(100.0f, 3000.0f) : frand(0.5f, 40.0f);
		const uint32_t na = orca_obstacle_grid_query(w, pos, range * range, a);
		const uint32_t nb = brute(w, pos, range * range, b);
		assert_int_equal(na, nb);
		for (uint32_t i = 0; i < na; ++i) {
			assert_int_equal(a[i].index, b[i].index);
			assert_true(a[i].dist_sq == b[i].dist_sq);
		}
	}
	free(a);
	free(b);
}

static void test_grid_query_matches_brute_force(void **state)
{
	(void)state;
	orca_world_def def = orca_default_world_def();
	def.obstacle_index = ORCA_OBSTACLE_INDEX_GRID;
	orca_world *w;
	assert_int_equal(orca_world_create(&def, &w), ORCA_OK);
	orca_obstacle_id ids[400];
	uint32_t live = 0;
	orca_vec2 v[64];
	for (int round = 0; round < 12; ++round) {
		for (int i = 0; i < 30 && live < 400; ++i) {
			const uint32_t kind = rnd() % 8;
			if (kind == 0) { /* a long wall: crosses many cells, or goes to the big list */
				const float len = (rnd() % 2) ? 300.0f : 20000.0f;
				v[0] = (orca_vec2){frand(-200, 200), frand(-200, 200)};
				v[1] = (orca_vec2){v[0].x + len * frand(-1, 1), v[0].y + len * frand(-1, 1)};
				assert_int_equal(orca_obstacle_add(w, v, 2, &ids[live++]), ORCA_OK);
			} else if (kind == 1) { /* on cell boundaries exactly */
				const float x = 16.0f * (float)(int)frand(-10, 10), y = 16.0f * (float)(int)frand(-10, 10);
				const orca_vec2 sq[4] = {{x, y}, {x + 16, y}, {x + 16, y + 16}, {x, y + 16}};
				assert_int_equal(orca_obstacle_add(w, sq, 4, &ids[live++]), ORCA_OK);
			} else {
				const uint32_t k = 3 + rnd() % 60;
				ngon(v, k, frand(-250, 250), frand(-250, 250), frand(0.5f, 30.0f), frand(0, 1));
				assert_int_equal(orca_obstacle_add(w, v, k, &ids[live++]), ORCA_OK);
			}
		}
		check_queries(w, 300.0f, 400);
		for (int i = 0; i < 12 && live > 0; ++i) { /* remove some, from anywhere in the list */
			const uint32_t j = rnd() % live;
			assert_int_equal(orca_obstacle_remove(w, ids[j]), ORCA_OK);
			ids[j] = ids[--live];
		}
		check_queries(w, 300.0f, 400);
	}
	assert_true(packed_checks >= 12); /* the packed grid was read, not only the table */
	/* far from the origin, where a float's spacing is coarse */
	ngon(v, 40, 3.0e6f, -2.0e6f, 50.0f, 0.3f);
	assert_int_equal(orca_obstacle_add(w, v, 40, NULL), ORCA_OK);
	nb_entry *a = calloc(w->vert_count + 1, sizeof *a), *b = calloc(w->vert_count + 1, sizeof *b);
	for (int q = 0; q < 200; ++q) {
		const vec2 pos = v2(3.0e6f + frand(-80, 80), -2.0e6f + frand(-80, 80));
		const uint32_t na = orca_obstacle_grid_query(w, pos, 900.0f, a);
		assert_int_equal(na, brute(w, pos, 900.0f, b));
		for (uint32_t i = 0; i < na; ++i)
			assert_int_equal(a[i].index, b[i].index);
	}
	free(a);
	free(b);
	orca_world_destroy(w);
}

/* Is p strictly inside the polygon (crossing number)? */
static bool inside(const orca_vec2 *v, uint32_t n, orca_vec2 p)
{
	bool in = false;
	for (uint32_t i = 0, j = n - 1; i < n; j = i++) {
		if ((v[i].y > p.y) != (v[j].y > p.y) &&
		    p.x < (v[j].x - v[i].x) * (p.y - v[i].y) / (v[j].y - v[i].y) + v[i].x)
			in = !in;
	}
	return in;
}

#define FIELD 60.0f
#define AGENTS 240
#define STEPS 900
#define MAX_OBST 40

typedef struct live_obstacle {
	orca_obstacle_id id;
	uint32_t n;
	orca_vec2 v[48];
	float cx, cy, r;
} live_obstacle;

/* Agents cross a square field both ways while polygons appear (never on an
 * agent) and disappear. Returns the hash after every step; checks no agent
 * centre is ever inside a live polygon. */
static void run_field(int workers, orca_obstacle_index index, uint64_t *hashes, uint32_t *lines_seen)
{
	rng_state = 0x2545F4914F6CDD1Dull;
	orca_world_def def = orca_default_world_def();
	def.worker_count = workers;
	def.obstacle_index = index;
	orca_world *w;
	assert_int_equal(orca_world_create(&def, &w), ORCA_OK);
	orca_agent_id ids[AGENTS];
	for (int i = 0; i < AGENTS; ++i) {
		orca_agent_def a = orca_default_agent_def();
		a.radius = 0.5f;
		a.max_speed = 2.0f;
		a.neighbor_dist = 5.0f;
		a.time_horizon = 2.0f;
		a.time_horizon_obst = 2.0f;
		const float y = -FIELD + 2.0f * FIELD * (float)(i / 2) / (AGENTS / 2);
		const float side = (i % 2) ? 1.0f : -1.0f;
		a.position = (orca_vec2){side * (FIELD + 5.0f), y};
		a.steer_mode = ORCA_STEER_TARGET;
		a.target = (orca_vec2){-side * (FIELD + 5.0f), -y};
		a.pref_speed = 1.5f;
		assert_int_equal(orca_agent_add(w, &a, &ids[i]), ORCA_OK);
	}
	live_obstacle *obs = calloc(MAX_OBST, sizeof *obs);
	uint32_t live = 0;
	*lines_seen = 0;
	for (int step = 0; step < STEPS; ++step) {
		if (step % 5 == 0 && live < MAX_OBST) {
			live_obstacle *o = &obs[live];
			o->n = 3 + rnd() % 45;
			o->cx = frand(-FIELD, FIELD);
			o->cy = frand(-FIELD, FIELD);
			o->r = frand(1.0f, 6.0f);
			bool clear = true;
			for (int i = 0; i < AGENTS && clear; ++i) {
				orca_agent_state s;
				assert_int_equal(orca_agent_get(w, ids[i], &s), ORCA_OK);
				const float dx = s.position.x - o->cx, dy = s.position.y - o->cy;
				clear = dx * dx + dy * dy > (o->r + 2.0f) * (o->r + 2.0f);
			}
			if (clear) {
				ngon(o->v, o->n, o->cx, o->cy, o->r, frand(0, 1));
				assert_int_equal(orca_obstacle_add(w, o->v, o->n, &o->id), ORCA_OK);
				live++;
			}
		}
		if (step % 7 == 3 && live > 0) {
			const uint32_t j = rnd() % live;
			assert_int_equal(orca_obstacle_remove(w, obs[j].id), ORCA_OK);
			obs[j] = obs[--live];
		}
		assert_int_equal(orca_world_step(w, 0.1f), ORCA_OK);
		orca_step_profile prof;
		orca_world_profile(w, &prof);
		*lines_seen += (uint32_t)prof.obstacle_line_count;
		hashes[step] = orca_world_state_hash(w);
		for (int i = 0; i < AGENTS; ++i) {
			orca_agent_state s;
			assert_int_equal(orca_agent_get(w, ids[i], &s), ORCA_OK);
			for (uint32_t k = 0; k < live; ++k) {
				if (inside(obs[k].v, obs[k].n, s.position)) {
					fail_msg("step %d: agent %d at (%g, %g) inside obstacle %u", step, i, (double)s.position.x,
					         (double)s.position.y, obs[k].id);
				}
			}
		}
	}
	free(obs);
	orca_world_destroy(w);
}

static void test_field_agents_never_enter_and_workers_agree(void **state)
{
	(void)state;
	uint64_t *ref = calloc(STEPS, sizeof *ref), *h = calloc(STEPS, sizeof *h);
	uint32_t lines_ref, lines;
	run_field(1, ORCA_OBSTACLE_INDEX_GRID, ref, &lines_ref);
	assert_true(lines_ref > 1000); /* the obstacles were in the way */
	for (int workers = 2; workers <= 4; ++workers) {
		run_field(workers, ORCA_OBSTACLE_INDEX_GRID, h, &lines);
		for (int s = 0; s < STEPS; ++s)
			if (h[s] != ref[s])
				fail_msg("workers %d: step %d hash differs", workers, s);
		assert_int_equal(lines, lines_ref);
	}
	/* AUTO: no obstacle at the first step, so it takes the grid at the first
	 * add — the same run as GRID */
	run_field(1, ORCA_OBSTACLE_INDEX_AUTO, h, &lines);
	assert_memory_equal(h, ref, STEPS * sizeof *h);
	free(ref);
	free(h);
}

static void test_auto_keeps_rvo2_tree_until_a_change(void **state)
{
	(void)state;
	orca_world_def def = orca_default_world_def();
	orca_world *w;
	assert_int_equal(orca_world_create(&def, &w), ORCA_OK);
	orca_vec2 v[32], first[32];
	ngon(first, 32, 0, 0, 5, 0);
	orca_obstacle_id a, b;
	assert_int_equal(orca_obstacle_add(w, first, 32, &a), ORCA_OK);
	ngon(v, 32, 20, 0, 5, 0);
	assert_int_equal(orca_obstacle_add(w, v, 32, &b), ORCA_OK);
	orca_agent_def ad = orca_default_agent_def();
	ad.position = (orca_vec2){-12, 0.1f};
	ad.steer_mode = ORCA_STEER_TARGET;
	ad.target = (orca_vec2){40, 0};
	orca_agent_id ag;
	assert_int_equal(orca_agent_add(w, &ad, &ag), ORCA_OK);
	assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
	assert_false(w->obst_grid); /* RVO2's tree, with its split vertices */
	assert_true(w->onode_count > 0);
	assert_int_equal(orca_obstacle_remove(w, b), ORCA_OK);
	assert_false(w->obst_grid); /* decided at the step, not at the call */
	assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
	assert_true(w->obst_grid);
	assert_int_equal(w->obst_edges, 32);
	for (int s = 0; s < 400; ++s) {
		assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
		orca_agent_state st;
		assert_int_equal(orca_agent_get(w, ag, &st), ORCA_OK);
		assert_false(inside(first, 32, st.position));
	}
	orca_agent_state st;
	assert_int_equal(orca_agent_get(w, ag, &st), ORCA_OK);
	assert_true(st.position.x > 30.0f); /* it went round */
	/* everything removed: no obstacle line at all */
	assert_int_equal(orca_obstacle_remove(w, a), ORCA_OK);
	assert_int_equal(orca_world_step(w, 0.25f), ORCA_OK);
	assert_int_equal(w->obst_root, ORCA_NONE);
	orca_world_destroy(w);
}

/* A crowd around polygons; `churn` adds and removes polygons (the grid's
 * vertex slots then come from its free list in a history-made order). */
static orca_world *obstacle_world(orca_obstacle_index index, bool churn, orca_obstacle_id *keep)
{
	rng_state = 0x9E3779B97F4A7C15ull;
	orca_world_def def = orca_default_world_def();
	def.obstacle_index = index;
	orca_world *w;
	assert_int_equal(orca_world_create(&def, &w), ORCA_OK);
	orca_vec2 v[48];
	for (int k = 0; k < 6; ++k) {
		ngon(v, 4 + 4 * (uint32_t)k, -25.0f + 10.0f * (float)k, (k % 2) ? 6.0f : -6.0f, 3.0f, 0.1f * (float)k);
		assert_int_equal(orca_obstacle_add(w, v, 4 + 4 * (uint32_t)k, &keep[k]), ORCA_OK);
	}
	for (int i = 0; i < 120; ++i) {
		orca_agent_def a = orca_default_agent_def();
		a.radius = 0.4f;
		a.position = (orca_vec2){frand(-40, -32), frand(-20, 20)};
		a.steer_mode = ORCA_STEER_TARGET;
		a.target = (orca_vec2){frand(32, 40), frand(-20, 20)};
		assert_int_equal(orca_agent_add(w, &a, NULL), ORCA_OK);
	}
	for (int s = 0; s < 20; ++s) {
		assert_int_equal(orca_world_step(w, 0.1f), ORCA_OK);
		if (churn && s % 3 == 1) {
			orca_obstacle_id t;
			ngon(v, 3 + (uint32_t)s, frand(-20, 20), frand(-30, -24), 1.5f, 0.0f);
			assert_int_equal(orca_obstacle_add(w, v, 3 + (uint32_t)s, &t), ORCA_OK);
			if (s % 2)
				assert_int_equal(orca_obstacle_remove(w, t), ORCA_OK);
		}
		if (churn && s == 10) { /* re-add one of the first ones: its vertices reuse freed slots */
			assert_int_equal(orca_obstacle_remove(w, keep[2]), ORCA_OK);
			ngon(v, 12, -5.0f, 6.0f, 3.0f, 0.2f);
			assert_int_equal(orca_obstacle_add(w, v, 12, &keep[2]), ORCA_OK);
		}
	}
	return w;
}

static void save_load_steps_identically(orca_obstacle_index index, bool churn, bool expect_grid)
{
	orca_obstacle_id keep[6];
	orca_world *a = obstacle_world(index, churn, keep);
	assert_true(a->obst_grid == expect_grid);
	size_t size = 0;
	assert_int_equal(orca_world_save(a, NULL, 0, &size), ORCA_ERR_CAPACITY);
	uint8_t *buf = malloc(size);
	assert_int_equal(orca_world_save(a, buf, size, &size), ORCA_OK);
	orca_world_def def = orca_default_world_def();
	def.obstacle_index = index;
	orca_world *b;
	assert_int_equal(orca_world_create(&def, &b), ORCA_OK);
	assert_int_equal(orca_world_load(b, buf, size), ORCA_OK);
	free(buf);
	uint64_t lines_a = 0;
	for (int s = 0; s < 300; ++s) {
		if (s == 150) { /* a change after the load: both move on alike */
			const orca_vec2 wall[2] = {{0, -40}, {0, -30}};
			assert_int_equal(orca_obstacle_add(a, wall, 2, NULL), ORCA_OK);
			assert_int_equal(orca_obstacle_add(b, wall, 2, NULL), ORCA_OK);
			assert_int_equal(orca_obstacle_remove(a, keep[0]), ORCA_OK);
			assert_int_equal(orca_obstacle_remove(b, keep[0]), ORCA_OK);
		}
		assert_int_equal(orca_world_step(a, 0.1f), ORCA_OK);
		assert_int_equal(orca_world_step(b, 0.1f), ORCA_OK);
		if (s == 0)
			assert_true(b->obst_grid == expect_grid); /* the same index was rebuilt */
		if (orca_world_state_hash(a) != orca_world_state_hash(b))
			fail_msg("index %d churn %d: step %d after the load differs", (int)index, (int)churn, s);
		orca_step_profile p;
		orca_world_profile(a, &p);
		lines_a += p.obstacle_line_count;
	}
	assert_true(lines_a > 1000); /* the crowd met the obstacles */
	orca_world_destroy(a);
	orca_world_destroy(b);
}

static void test_save_load_keeps_the_index(void **state)
{
	(void)state;
	save_load_steps_identically(ORCA_OBSTACLE_INDEX_AUTO, false, false); /* RVO2's tree, then the grid */
	save_load_steps_identically(ORCA_OBSTACLE_INDEX_AUTO, true, true);   /* the grid after changes */
	save_load_steps_identically(ORCA_OBSTACLE_INDEX_GRID, true, true);
	save_load_steps_identically(ORCA_OBSTACLE_INDEX_RVO2, true, false);
}

/* An allocator that counts the bytes the world holds. */
static void *counted_alloc(size_t size, void *user)
{
	*(size_t *)user += size;
	return malloc(size);
}
static void counted_free(void *p, size_t size, void *user)
{
	*(size_t *)user -= size;
	free(p);
}

/* Obstacles that come and go all over a wide world (buildings placed and
 * razed, vehicles parked) leave nothing behind: the grid keeps a cell only
 * while an edge is in it, so the world's memory after thousands of
 * add/remove pairs at new places is what it was after the first hundred,
 * and an empty world has no cell. Queries stay equal to the brute force
 * through the cells' removals. */
static void test_obstacles_coming_and_going_keep_memory_bounded(void **state)
{
	(void)state;
	size_t held = 0;
	orca_world_def def = orca_default_world_def();
	def.obstacle_index = ORCA_OBSTACLE_INDEX_GRID;
	def.allocator = (orca_allocator){counted_alloc, counted_free, &held};
	orca_world *w;
	assert_int_equal(orca_world_create(&def, &w), ORCA_OK);
	enum { LIVE = 40, WARM = 200, TOTAL = 6000 };
	orca_obstacle_id ids[LIVE];
	uint32_t live = 0;
	size_t after_warm = 0;
	orca_vec2 v[64];
	for (int op = 0; op < TOTAL; ++op) {
		if (live == LIVE) { /* the oldest goes */
			assert_int_equal(orca_obstacle_remove(w, ids[0]), ORCA_OK);
			memmove(ids, ids + 1, sizeof ids[0] * --live);
		}
		const uint32_t k = 4 + rnd() % 60;
		ngon(v, k, frand(-4000, 4000), frand(-4000, 4000), frand(1.0f, 15.0f), frand(0, 1));
		assert_int_equal(orca_obstacle_add(w, v, k, &ids[live++]), ORCA_OK);
		if (op == WARM)
			after_warm = held;
		if (op % 1000 == 999)
			check_queries(w, 4000.0f, 100);
	}
	/* 40 live polygons of up to 63 vertices on ~4 cells each: the lists
	 * and the table may differ in size from the warm-up's, not by the
	 * thousands of cells the 6,000 polygons visited */
	assert_true(w->ocell_used <= LIVE * 16u);
	assert_true(held <= after_warm + 64u * 1024u);
	while (live > 0)
		assert_int_equal(orca_obstacle_remove(w, ids[--live]), ORCA_OK);
	assert_int_equal(w->ocell_used, 0);
	for (uint32_t i = 0; i < w->ocell_cap; ++i)
		assert_int_equal(w->ocells[i].used, 0);
	orca_world_destroy(w);
	assert_int_equal(held, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_grid_query_matches_brute_force),
	    cmocka_unit_test(test_field_agents_never_enter_and_workers_agree),
	    cmocka_unit_test(test_auto_keeps_rvo2_tree_until_a_change),
	    cmocka_unit_test(test_save_load_keeps_the_index),
	    cmocka_unit_test(test_obstacles_coming_and_going_keep_memory_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
