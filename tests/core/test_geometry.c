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
	    cmocka_unit_test(test_engine_refuses_what_the_check_refuses),
	    cmocka_unit_test(test_world_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
