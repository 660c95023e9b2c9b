/* test_geometry.c — what a valid obstacle is (orca_polygon_check, shared by
 * the engine and the server) and the world bounds every agent stays inside. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "orca/orca.h"

static int check(const orca_vec2 *v, uint32_t n, orca_polygon_issue *issue) {
	return orca_polygon_check(v, n, issue);
}

/* n points counter-clockwise on a circle of radius r (cos and sin by their Taylor series) */
static void ngon(orca_vec2 *v, uint32_t n, double r) {
	for (uint32_t i = 0; i < n; i++) {
		double x = 2.0 * 3.14159265358979323846 * i / n - 3.14159265358979323846; /* in [-pi, pi) */
		double term = 1.0, c = 0, s = 0;
		for (int k = 0; k < 40; k++) {
			if (k > 0) term *= x / k;
			switch (k % 4) {
			case 0: c += term; break;
			case 1: s += term; break;
			case 2: c -= term; break;
			default: s -= term; break;
			}
		}
		v[i] = (orca_vec2){(float)(r * c), (float)(r * s)};
	}
}

/* Past 1,024 vertices the check takes every pair (no stack room to sort): same verdicts. */
static void test_large_polygons(void **state) {
	(void)state;
	static orca_vec2 v[2000];
	orca_polygon_issue issue;
	ngon(v, 2000, 500);
	assert_int_equal(orca_polygon_check(v, 2000, &issue), ORCA_OK);
	orca_vec2 t = v[10];
	v[10] = v[1010], v[1010] = t; /* two vertices swapped across the circle: edges cross */
	assert_int_equal(orca_polygon_check(v, 2000, &issue), ORCA_ERR_BAD_POLYGON);
	assert_non_null(strstr(issue.reason, "cross"));
	ngon(v, 1000, 500);
	assert_int_equal(orca_polygon_check(v, 1000, &issue), ORCA_OK);
	t = v[10];
	v[10] = v[510], v[510] = t;
	assert_int_equal(orca_polygon_check(v, 1000, &issue), ORCA_ERR_BAD_POLYGON);
	assert_non_null(strstr(issue.reason, "cross"));
}

static void test_valid_polygons(void **state) {
	(void)state;
	orca_polygon_issue issue;
	const orca_vec2 square[] = {{0, 0}, {10, 0}, {10, 10}, {0, 10}};
	assert_int_equal(check(square, 4, &issue), ORCA_OK);
	assert_false(issue.clockwise);
	const orca_vec2 cw[] = {{0, 0}, {0, 10}, {10, 10}, {10, 0}};
	assert_int_equal(check(cw, 4, &issue), ORCA_OK);
	assert_true(issue.clockwise);
	const orca_vec2 seg[] = {{0, 0}, {5, 0}};
	assert_int_equal(check(seg, 2, &issue), ORCA_OK);
	/* a concave L and a 256-gon of radius 10 (a small circle is not "collinear") */
	const orca_vec2 ell[] = {{0, 0}, {10, 0}, {10, 2}, {2, 2}, {2, 10}, {0, 10}};
	assert_int_equal(check(ell, 6, &issue), ORCA_OK);
	orca_vec2 circle[256];
	for (int i = 0; i < 256; i++) {
		/* cos and sin by their Taylor series */
		double x = 2.0 * 3.14159265358979323846 * i / 256.0;
		double term = 1.0, c = 0, s = 0;
		for (int k = 0; k < 30; k++) {
			if (k > 0) term *= x / k;
			switch (k % 4) {
			case 0: c += term; break;
			case 1: s += term; break;
			case 2: c -= term; break;
			default: s -= term; break;
			}
		}
		circle[i] = (orca_vec2){(float)(10.0 * c), (float)(10.0 * s)};
	}
	assert_int_equal(check(circle, 256, &issue), ORCA_OK);
	assert_false(issue.clockwise);
}

static void expect_bad(const orca_vec2 *v, uint32_t n, const char *word) {
	orca_polygon_issue issue;
	assert_int_equal(check(v, n, &issue), ORCA_ERR_BAD_POLYGON);
	assert_non_null(issue.reason);
	if (!strstr(issue.reason, word)) fail_msg("reason '%s' lacks '%s'", issue.reason, word);
}

static void test_invalid_polygons(void **state) {
	(void)state;
	const orca_vec2 one[] = {{0, 0}};
	expect_bad(one, 1, "fewer");
	const orca_vec2 bowtie[] = {{0, 0}, {10, 10}, {10, 0}, {0, 10}};
	expect_bad(bowtie, 4, "cross");
	const orca_vec2 collinear[] = {{0, 0}, {5, 0}, {10, 0}, {10, 10}, {0, 10}};
	expect_bad(collinear, 5, "line");
	const orca_vec2 back_and_forth[] = {{0, 0}, {10, 0}, {5, 0}};
	expect_bad(back_and_forth, 3, "line");
	const orca_vec2 spike[] = {{0, 0}, {10, 0}, {10, 10}, {5, 10}, {5, 20}, {5, 10.005f}, {0, 10}};
	expect_bad(spike, 7, "line"); /* out and straight back */
	const orca_vec2 dup[] = {{0, 0}, {10, 0}, {10, 0}, {10, 10}};
	expect_bad(dup, 4, "shorter");
	const orca_vec2 sliver[] = {{0, 0}, {10, 0}, {10, 0.001f}, {0, 0.001f}};
	expect_bad(sliver, 4, "shorter");
	const orca_vec2 thin[] = {{0, 0}, {10, 0}, {10, 0.02f}, {5, 0.005f}, {0, 0.02f}};
	expect_bad(thin, 5, "sliver");
	const orca_vec2 touching[] = {{0, 0}, {10, 0}, {10, 10}, {5, 0}, {0, 10}};
	expect_bad(touching, 5, "cross");
	const orca_vec2 nan[] = {{0, 0}, {__builtin_nanf(""), 0}, {1, 1}};
	expect_bad(nan, 3, "finite");
	const orca_vec2 zero_seg[] = {{1, 1}, {1, 1}};
	expect_bad(zero_seg, 2, "shorter");
}

/* ---- a plain O(n^2) reference for the simple and sliver rules, to hold the
 * sweep in polygon_check.c to (it must find every pair the reference finds) */
typedef struct dv {
	double x, y;
} dv;
static dv P(const orca_vec2 *v, uint32_t n, uint32_t i) {
	return (dv){v[i % n].x, v[i % n].y};
}
static double crs(dv o, dv a, dv b) {
	return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}
static double seg_d2(dv p, dv a, dv b) {
	double dx = b.x - a.x, dy = b.y - a.y, l = dx * dx + dy * dy;
	double t = l > 0 ? ((p.x - a.x) * dx + (p.y - a.y) * dy) / l : 0;
	t = t < 0 ? 0 : t > 1 ? 1 : t;
	double ex = a.x + t * dx - p.x, ey = a.y + t * dy - p.y;
	return ex * ex + ey * ey;
}
static int sgn(double x) {
	return (x > 0) - (x < 0);
}
static bool meet(dv a, dv b, dv c, dv d) {
	int d1 = sgn(crs(a, b, c)), d2 = sgn(crs(a, b, d)), d3 = sgn(crs(c, d, a)), d4 = sgn(crs(c, d, b));
	if (d1 * d2 < 0 && d3 * d4 < 0) return true;
	return (d1 == 0 && seg_d2(c, a, b) == 0) || (d2 == 0 && seg_d2(d, a, b) == 0) ||
	       (d3 == 0 && seg_d2(a, c, d) == 0) || (d4 == 0 && seg_d2(b, c, d) == 0);
}
/* 1: crosses, 2: sliver, 0: neither */
static int reference_simple_and_thick(const orca_vec2 *v, uint32_t n) {
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = i + 2; j < n; j++)
			if (!(i == 0 && j == n - 1) && meet(P(v, n, i), P(v, n, i + 1), P(v, n, j), P(v, n, j + 1))) return 1;
	const double m = ORCA_POLYGON_MIN_FEATURE;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < n; j++)
			if (j != i && (j + 1) % n != i && seg_d2(P(v, n, i), P(v, n, j), P(v, n, j + 1)) < m * m) return 2;
	return 0;
}

static void test_sweep_agrees_with_reference(void **state) {
	(void)state;
	uint32_t seed = 99;
	int disagree = 0, cross = 0, sliver = 0, valid = 0;
	for (int round = 0; round < 20000; round++) {
		orca_vec2 v[12];
		uint32_t n = 3 + (uint32_t)(round % 10);
		for (uint32_t i = 0; i < n; i++) {
			/* a star: random radius at evenly spread angles, sometimes wild */
			seed = seed * 1103515245u + 12345u;
			float r = 0.005f + (float)((seed >> 8) % 1000) / 100.0f;
			seed = seed * 1103515245u + 12345u;
			float jitter = round % 3 == 0 ? (float)((seed >> 8) % 1000) / 150.0f : 0.0f;
			/* angles from a small table (no libm): 12 directions */
			static const float cs[12][2] = {{1, 0},     {0.866f, 0.5f},   {0.5f, 0.866f},   {0, 1},
			                                {-0.5f, 0.866f}, {-0.866f, 0.5f}, {-1, 0},     {-0.866f, -0.5f},
			                                {-0.5f, -0.866f}, {0, -1},     {0.5f, -0.866f}, {0.866f, -0.5f}};
			uint32_t k = (i * 12 / n + (uint32_t)jitter) % 12;
			v[i] = (orca_vec2){r * cs[k][0], r * cs[k][1]};
		}
		orca_polygon_issue issue;
		int rc = orca_polygon_check(v, n, &issue);
		int ref = reference_simple_and_thick(v, n);
		if (rc == ORCA_OK) {
			valid++;
			if (ref != 0) disagree++;
		} else if (strstr(issue.reason, "cross")) {
			cross++;
			if (ref != 1) disagree++;
		} else if (strstr(issue.reason, "sliver")) {
			sliver++;
			if (ref != 2) disagree++;
		}
	}
	print_message("random stars: %d valid, %d crossing, %d slivers, %d disagreements\n", valid, cross, sliver,
	              disagree);
	assert_int_equal(disagree, 0);
	assert_true(valid > 100 && cross > 100 && sliver > 10);
}

static void test_engine_refuses_what_the_check_refuses(void **state) {
	(void)state;
	orca_world *w = NULL;
	orca_world_def d = orca_default_world_def();
	assert_int_equal(orca_world_create(&d, &w), ORCA_OK);
	const orca_vec2 cw[] = {{0, 0}, {0, 10}, {10, 10}, {10, 0}};
	const orca_vec2 bowtie[] = {{0, 0}, {10, 10}, {10, 0}, {0, 10}};
	const orca_vec2 ccw[] = {{0, 0}, {10, 0}, {10, 10}, {0, 10}};
	orca_obstacle_id id;
	assert_int_equal(orca_obstacle_add(w, cw, 4, &id), ORCA_ERR_BAD_POLYGON);
	assert_int_equal(orca_obstacle_add(w, bowtie, 4, &id), ORCA_ERR_BAD_POLYGON);
	assert_int_equal(orca_obstacle_add(w, ccw, 4, &id), ORCA_OK);
	orca_world_destroy(w);
}

/* A velocity-steered agent heading out of the world stops at the bounds, on
 * that axis only; with no bounds it keeps going. */
static void test_world_bounds(void **state) {
	(void)state;
	for (int bounded = 0; bounded < 2; bounded++) {
		orca_world *w = NULL;
		orca_world_def d = orca_default_world_def();
		d.has_bounds = bounded;
		d.bounds_min = (orca_vec2){-1000, -1000};
		d.bounds_max = (orca_vec2){1000, 1000};
		assert_int_equal(orca_world_create(&d, &w), ORCA_OK);
		orca_agent_def a = orca_default_agent_def();
		a.position = (orca_vec2){990, 0};
		a.max_speed = 100;
		a.pref_velocity = (orca_vec2){100, 10};
		orca_agent_id id;
		assert_int_equal(orca_agent_add(w, &a, &id), ORCA_OK);
		for (int i = 0; i < 60; i++) assert_int_equal(orca_world_step(w, 1.0f / 30.0f), ORCA_OK);
		orca_agent_state st;
		assert_int_equal(orca_agent_get(w, id, &st), ORCA_OK);
		if (bounded) {
			assert_true(st.position.x == 1000.0f);
			assert_true(st.velocity.x == 0.0f);
			assert_true(st.position.y > 10.0f); /* still moving along the wall */
		} else {
			assert_true(st.position.x > 1150.0f);
		}
		orca_world_destroy(w);
	}
	/* bounds must be a finite, non-empty rectangle */
	orca_world *w = NULL;
	orca_world_def d = orca_default_world_def();
	d.has_bounds = true;
	d.bounds_min = (orca_vec2){10, 0};
	d.bounds_max = (orca_vec2){0, 10};
	assert_int_equal(orca_world_create(&d, &w), ORCA_ERR_INVALID_ARGUMENT);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid_polygons),
	    cmocka_unit_test(test_invalid_polygons),
	    cmocka_unit_test(test_sweep_agrees_with_reference),
	    cmocka_unit_test(test_large_polygons),
	    cmocka_unit_test(test_engine_refuses_what_the_check_refuses),
	    cmocka_unit_test(test_world_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
