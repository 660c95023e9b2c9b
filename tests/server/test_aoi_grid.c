/* test_aoi_grid.c — the snapshots' area-of-interest grid returns exactly the
 * points a brute-force filter finds, ascending, on random data (boundaries,
 * duplicates, clusters, non-finite values, rebuilds), and over a world table
 * the same agents as the engine's orca_query_rect. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aoi_grid.h"
#include "server.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void) {
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

static float uniform(float lo, float hi) {
	return lo + (hi - lo) * (float)(rnd() % 1000001) / 1000000.0f;
}

static uint32_t brute(const float *x, const float *y, uint32_t n, float x0, float y0, float x1, float y1,
                      uint32_t *out) {
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		if (x[i] >= x0 && x[i] <= x1 && y[i] >= y0 && y[i] <= y1) out[k++] = i;
	return k;
}

typedef struct fixture {
	aoi_grid grid;
	uint64_t *marks;
	uint32_t *got, *want;
} fixture;

/* Query and compare with the brute force; the marks must come back zeroed. */
static void check_box(fixture *f, const float *x, const float *y, uint32_t n, float x0, float y0, float x1,
                      float y1) {
	uint32_t want = brute(x, y, n, x0, y0, x1, y1, f->want);
	uint32_t got = aoi_grid_query(&f->grid, x0, y0, x1, y1, f->marks, f->got);
	assert_int_equal(got, want);
	if (want) assert_memory_equal(f->got, f->want, want * sizeof *f->want);
	for (uint32_t w = 0; w < aoi_grid_mark_words(&f->grid); w++) assert_true(f->marks[w] == 0);
}

static void fixture_reserve(fixture *f, uint32_t n) {
	free(f->marks);
	free(f->got);
	free(f->want);
	f->marks = calloc(n / 64 + 1, sizeof *f->marks);
	f->got = malloc((n + 1) * sizeof *f->got);
	f->want = malloc((n + 1) * sizeof *f->want);
	assert_non_null(f->marks);
	assert_non_null(f->got);
	assert_non_null(f->want);
}

static void fixture_free(fixture *f) {
	aoi_grid_free(&f->grid);
	free(f->marks);
	free(f->got);
	free(f->want);
}

/* A random box: often around existing points (so edges land exactly on
 * coordinates), sometimes degenerate, inverted, huge or outside the data. */
static void random_box(const float *x, const float *y, uint32_t n, float *b) {
	uint32_t kind = rnd() % 8;
	if (n > 0 && kind < 4) {
		uint32_t i = rnd() % n, j = rnd() % n;
		b[0] = fminf(x[i], x[j]);
		b[1] = fminf(y[i], y[j]);
		b[2] = fmaxf(x[i], x[j]);
		b[3] = fmaxf(y[i], y[j]);
		if (kind == 3) b[2] = b[0], b[3] = b[1]; /* a single point */
		if (!isfinite(b[0]) || !isfinite(b[1]) || !isfinite(b[2]) || !isfinite(b[3]))
			b[0] = b[1] = -100, b[2] = b[3] = 100;
		return;
	}
	float cx = uniform(-700, 700), cy = uniform(-700, 700), w = uniform(0, 300), h = uniform(0, 300);
	b[0] = cx - w, b[1] = cy - h, b[2] = cx + w, b[3] = cy + h;
	if (kind == 5) { /* inverted: nothing */
		float t = b[0];
		b[0] = b[2], b[2] = t;
	}
	if (kind == 6) b[0] = b[1] = -1e30f, b[2] = b[3] = 1e30f;
}

static void test_random_worlds(void **state) {
	(void)state;
	fixture f = {0};
	const uint32_t sizes[] = {0, 1, 2, 7, 100, 1000, 20000, 3000};
	for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
		uint32_t n = sizes[s];
		float *x = malloc((n + 1) * sizeof *x), *y = malloc((n + 1) * sizeof *y);
		assert_non_null(x);
		assert_non_null(y);
		for (uint32_t i = 0; i < n; i++) {
			uint32_t kind = rnd() % 10;
			if (kind < 6) { /* spread */
				x[i] = uniform(-500, 500);
				y[i] = uniform(-400, 400);
			} else if (kind < 8) { /* a tight cluster, on a coarse lattice (duplicates) */
				x[i] = 100.0f + (float)(rnd() % 8) * 0.5f;
				y[i] = -50.0f + (float)(rnd() % 8) * 0.5f;
			} else if (kind == 8 && i > 0) { /* a copy of an earlier point */
				uint32_t j = rnd() % i;
				x[i] = x[j];
				y[i] = y[j];
			} else { /* integers, so box edges hit them exactly */
				x[i] = (float)((int)(rnd() % 200) - 100);
				y[i] = (float)((int)(rnd() % 200) - 100);
			}
		}
		fixture_reserve(&f, n);
		assert_true(aoi_grid_build(&f.grid, x, y, n));
		assert_int_equal(f.grid.count, n);
		for (int q = 0; q < 400; q++) {
			float b[4];
			random_box(x, y, n, b);
			check_box(&f, x, y, n, b[0], b[1], b[2], b[3]);
		}
		check_box(&f, x, y, n, -INFINITY, -INFINITY, INFINITY, INFINITY);
		check_box(&f, x, y, n, 100.0f, -50.0f, 101.5f, -48.5f); /* edges on the cluster's lattice */
		free(x);
		free(y);
	}
	fixture_free(&f);
}

static void test_degenerate_and_non_finite(void **state) {
	(void)state;
	fixture f = {0};
	enum { N = 300 };
	float x[N], y[N];
	/* every point at the same place */
	for (int i = 0; i < N; i++) x[i] = y[i] = 3.25f;
	fixture_reserve(&f, N);
	assert_true(aoi_grid_build(&f.grid, x, y, N));
	check_box(&f, x, y, N, 3.25f, 3.25f, 3.25f, 3.25f);
	check_box(&f, x, y, N, 3.0f, 3.0f, 3.2f, 3.3f);
	check_box(&f, x, y, N, 0, 0, 10, 10);
	/* a line (zero height), huge and tiny magnitudes, NaN and infinities */
	for (int i = 0; i < N; i++) {
		x[i] = uniform(-10, 10);
		y[i] = 7.0f;
	}
	x[5] = NAN, y[6] = NAN, x[7] = INFINITY, y[8] = -INFINITY, x[9] = 3e38f, y[10] = -3e38f, x[11] = 1e-40f;
	assert_true(aoi_grid_build(&f.grid, x, y, N));
	for (int q = 0; q < 300; q++) {
		float b[4];
		random_box(x, y, N, b);
		check_box(&f, x, y, N, b[0], b[1], b[2], b[3]);
	}
	check_box(&f, x, y, N, -INFINITY, -INFINITY, INFINITY, INFINITY);
	check_box(&f, x, y, N, 0, -INFINITY, INFINITY, 7.0f);
	check_box(&f, x, y, N, -1, 6, 1, 8);
	check_box(&f, x, y, N, NAN, 0, 10, 10); /* NaN bounds select nothing */
	check_box(&f, x, y, N, 0, 0, 10, NAN);
	check_box(&f, x, y, N, 1e38f, -INFINITY, INFINITY, INFINITY);
	/* rebuilt smaller: indices beyond the new count never come back */
	assert_true(aoi_grid_build(&f.grid, x, y, 20));
	check_box(&f, x, y, 20, -INFINITY, -INFINITY, INFINITY, INFINITY);
	check_box(&f, x, y, 20, -5, 0, 5, 10);
	fixture_free(&f);
}

/* Bounds gathered in pieces (as the table's chunks do) build the same grid. */
static void test_bounds_in_pieces(void **state) {
	(void)state;
	enum { N = 1000 };
	static float x[N], y[N];
	for (int i = 0; i < N; i++) {
		x[i] = uniform(-50, 70);
		y[i] = uniform(-20, 30);
	}
	x[3] = NAN, y[4] = INFINITY, x[500] = -INFINITY, y[999] = NAN;
	aoi_grid whole = {0}, pieces = {0};
	assert_true(aoi_grid_build(&whole, x, y, N));
	aoi_bounds b = aoi_bounds_empty();
	for (int start = 0; start < N; start += 300) {
		aoi_bounds piece = aoi_bounds_empty();
		for (int i = start; i < N && i < start + 300; i++) aoi_bounds_add(&piece, x[i], y[i]);
		aoi_bounds_merge(&b, &piece);
	}
	assert_true(aoi_grid_build_in(&pieces, x, y, N, &b));
	assert_true(whole.min_x == pieces.min_x && whole.min_y == pieces.min_y && whole.inv_cell == pieces.inv_cell);
	assert_int_equal(whole.cols, pieces.cols);
	assert_int_equal(whole.rows, pieces.rows);
	assert_memory_equal(whole.cell_start, pieces.cell_start, (whole.cols * whole.rows + 1) * sizeof *whole.cell_start);
	assert_memory_equal(whole.items, pieces.items, N * sizeof *whole.items);
	/* no finite coordinate on an axis: the same empty bounds either way */
	for (int i = 0; i < N; i++) x[i] = NAN;
	assert_true(aoi_grid_build(&whole, x, y, N));
	b = aoi_bounds_empty();
	for (int i = 0; i < N; i++) aoi_bounds_add(&b, x[i], y[i]);
	assert_true(aoi_grid_build_in(&pieces, x, y, N, &b));
	assert_true(whole.min_x == pieces.min_x && whole.inv_cell == pieces.inv_cell);
	assert_int_equal(whole.cols, pieces.cols);
	aoi_grid_free(&whole);
	aoi_grid_free(&pieces);
}

static void check_table_against_engine(orca_world *world, world_table *t);

/* The world table's grid selects the same agents as the engine's own query:
 * over one chunk of rows and several, with ids ascending with the slots (the
 * usual tick, where the table skips its compaction pass) and not (reused
 * slots: the table re-sorts). */
static void test_world_table_matches_engine(void **state) {
	(void)state;
	const int sizes[] = {3000, 10000};
	for (int k = 0; k < 2; k++) {
		const int n = sizes[k];
		orca_world *world;
		orca_world_def wdef = orca_default_world_def();
		wdef.max_agents = 20000;
		assert_int_equal(orca_world_create(&wdef, &world), ORCA_OK);
		orca_agent_def def = orca_default_agent_def();
		def.steer_mode = ORCA_STEER_TARGET;
		static orca_agent_id ids[10000];
		for (int i = 0; i < n; i++) {
			def.position = (orca_vec2){uniform(-300, 300), uniform(-300, 300)};
			def.target = (orca_vec2){uniform(-300, 300), uniform(-300, 300)};
			assert_int_equal(orca_agent_add(world, &def, &ids[i]), ORCA_OK);
		}
		world_table t = {0};
		assert_int_equal(orca_world_step(world, 0.1f), ORCA_OK);
		check_table_against_engine(world, &t);
		/* reused slots: ids no longer ascend with slots, so the table re-sorts */
		for (int i = 0; i < n; i += 7) assert_int_equal(orca_agent_remove(world, ids[i]), ORCA_OK);
		for (int i = 0; i < 200; i++) {
			def.position = (orca_vec2){uniform(-300, 300), uniform(-300, 300)};
			assert_int_equal(orca_agent_add(world, &def, &ids[i]), ORCA_OK);
		}
		for (int step = 0; step < 3; step++) assert_int_equal(orca_world_step(world, 0.1f), ORCA_OK);
		check_table_against_engine(world, &t);
		world_table_free(&t);
		orca_world_destroy(world);
	}
}

static void check_table_against_engine(orca_world *world, world_table *t) {
	assert_true(world_table_build(t, world, 100.0f));
	assert_int_equal(t->count, orca_world_agent_count(world));
	for (uint32_t i = 1; i < t->count; i++) assert_true(t->agents[i - 1].id < t->agents[i].id);
	uint64_t *marks = calloc(aoi_grid_mark_words(&t->grid), sizeof *marks);
	uint32_t *hits = malloc(t->count * sizeof *hits);
	orca_agent_id *want = malloc(t->count * sizeof *want);
	assert_non_null(marks);
	assert_non_null(hits);
	assert_non_null(want);
	for (int q = 0; q < 200; q++) {
		float b[4];
		random_box(t->x, t->y, t->count, b);
		for (int k = 0; k < 4; k++) b[k] = fmaxf(-1e9f, fminf(1e9f, b[k])); /* the engine's coordinate limit */
		orca_vec2 lo = {b[0], b[1]}, hi = {b[2], b[3]};
		uint32_t n_want = orca_query_rect(world, lo, hi, want, t->count);
		uint32_t n = aoi_grid_query(&t->grid, b[0], b[1], b[2], b[3], marks, hits);
		assert_int_equal(n, n_want);
		for (uint32_t i = 0; i < n; i++) assert_int_equal(t->agents[hits[i]].id, want[i]);
	}
	free(marks);
	free(hits);
	free(want);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_worlds),
	    cmocka_unit_test(test_degenerate_and_non_finite),
	    cmocka_unit_test(test_bounds_in_pieces),
	    cmocka_unit_test(test_world_table_matches_engine),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
