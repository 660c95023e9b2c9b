/* steerbench_test.c — the SteerSuite set-up reader and the measurements of
 * steerbench_case.c: a set-up's fields as written (further goals included),
 * malformed set-ups refused, and on hand-made positions the counts the table
 * reports: a collision is one contiguous overlap of a pair (or of an agent
 * with an obstacle) deeper than 0.001, deep overlaps are (pair, step)s deeper
 * than 0.01, wall steps are agents reaching more than 0.01 into an obstacle,
 * and the composite score is 50 x collisions per agent + time per agent +
 * sum of |v|^2 / 2 per agent. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "steerbench_case.h"

static const char *write_tmp(const char *text) {
	static char path[64];
	snprintf(path, sizeof path, "/tmp/steerbench_test_%d.txt", (int)getpid());
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static const char *kCase = "# a test case\n"
                           "time_step 0.05\n"
                           "agent_defaults 15 10 10 10 0.5 1.3 0 0\n"
                           "world_bounds -20 -10 20 10\n"
                           "time_limit 100\n"
                           "num_obstacles 1\n"
                           "obstacle 0 4\n"
                           "10 0\n12 0\n12 2\n10 2\n"
                           "num_agents 3\n"
                           "0 0 0 5 0 1.3 0.5 0 0\n"
                           "1 0.95 0 -5 0 1.2 0.5 0.1 0 -5 5 0 5\n"
                           "2 -10 0 -10 5 1.3 0.5 0 0\n";

static void reads_a_case(void **state) {
	(void)state;
	sb_case c;
	char err[256];
	const char *path = write_tmp(kCase);
	assert_int_equal(sb_case_load(path, &c, err, sizeof err), 0);
	unlink(path);
	assert_int_equal(c.agent_count, 3);
	assert_int_equal(c.obstacle_count, 1);
	assert_int_equal(c.obstacle_sizes[0], 4);
	assert_true(c.obstacles[0][2].x == 12.0f && c.obstacles[0][2].y == 2.0f);
	assert_true(c.bounds_min.x == -20.0f && c.bounds_max.y == 10.0f);
	assert_true(c.time_limit == 100.0f);
	assert_int_equal(c.agents[0].goal_count, 1);
	assert_int_equal(c.agents[1].goal_count, 3);
	assert_true(c.agents[1].goals[2].x == 0.0f && c.agents[1].goals[2].y == 5.0f);
	assert_true(c.agents[1].speed == 1.2f && c.agents[1].velocity.x == 0.1f);
	assert_true(c.max_radius == 0.5f);
	sb_case_free(&c);
}

static void refuses_malformed_cases(void **state) {
	(void)state;
	static const char *bad[] = {
	    /* a vertex missing */
	    "num_obstacles 1\nobstacle 0 4\n0 0\n1 0\n1 1\nnum_agents 1\n0 0 0 1 1 1 0.5 0 0\n",
	    /* fewer agent rows than said */
	    "num_agents 2\n0 0 0 1 1 1 0.5 0 0\n",
	    /* an agent row short of its nine columns */
	    "num_agents 1\n0 0 0 1 1 1 0.5\n",
	    /* a further goal without its y */
	    "num_agents 1\n0 0 0 1 1 1 0.5 0 0 7\n",
	    /* a speed of zero, a radius that is not a number */
	    "num_agents 1\n0 0 0 1 1 0 0.5 0 0\n",
	    "num_agents 1\n0 0 0 1 1 1 nan 0 0\n",
	    /* empty bounds; an obstacle index out of range */
	    "world_bounds 1 0 1 5\nnum_agents 1\n0 0 0 1 1 1 0.5 0 0\n",
	    "num_obstacles 1\nobstacle 3 2\n0 0\n1 0\nnum_agents 1\n0 0 0 1 1 1 0.5 0 0\n",
	    /* no agents */
	    "time_step 0.05\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
		sb_case c;
		char err[256] = "";
		const char *path = write_tmp(bad[i]);
		assert_int_equal(sb_case_load(path, &c, err, sizeof err), -1);
		assert_true(strlen(err) > 0);
		assert_int_equal(c.agent_count, 0);
		unlink(path);
	}
}

static void counts_collisions_deep_overlaps_and_walls(void **state) {
	(void)state;
	sb_case c;
	char err[256];
	const char *path = write_tmp(kCase);
	assert_int_equal(sb_case_load(path, &c, err, sizeof err), 0);
	unlink(path);
	const float shortest[3] = {5.0f, 20.0f, 5.0f};
	sb_metrics *m = sb_metrics_create(&c, shortest);
	assert_non_null(m);
	const float dt = 0.05f;
	bool active[3] = {true, true, true};
	/* steps 1, 2: agents 0 and 1 overlap by 0.05 (one collision, two deep steps) */
	orca_vec2 p[4][3] = {
	    {{0, 0}, {0.95f, 0}, {-10, 0}},
	    {{0, 0}, {0.95f, 0}, {-10, 0}},
	    /* step 3: apart; step 4: they touch again by 0.005 (a second collision,
	     * not deep) and agent 2 stands inside the obstacle (a collision and a
	     * wall step) */
	    {{0, 0}, {2.0f, 0}, {-10, 0}},
	    {{0, 0}, {0.995f, 0}, {11, 1}},
	};
	double energy[3] = {0, 0, 0};
	orca_vec2 prev[3] = {c.agents[0].start, c.agents[1].start, c.agents[2].start};
	for (int s = 0; s < 4; ++s) {
		sb_metrics_step(m, dt, p[s], active);
		for (int i = 0; i < 3; ++i) {
			const double d = hypot((double)p[s][i].x - prev[i].x, (double)p[s][i].y - prev[i].y);
			energy[i] += 0.5 * (d / dt) * (d / dt);
			prev[i] = p[s][i];
		}
	}
	sb_metrics_arrived(m, 0, 0.2);
	sb_metrics_unreachable(m, 2);
	sb_summary s;
	sb_metrics_summary(m, &s);
	assert_int_equal(s.agents, 3);
	assert_int_equal(s.arrived, 1);
	assert_int_equal(s.unreachable, 1);
	assert_true(fabs(s.last_arrival - 0.2) < 1e-9);
	assert_int_equal(s.collisions, 3);
	assert_int_equal(s.deep, 2);
	assert_int_equal(s.wall, 1);
	assert_int_equal(s.steps, 4);
	/* agent 0 walked nothing: path ratio 0; its free walk is (5 - 0.5) / 1.3 */
	assert_true(fabs(s.time_ratio - 0.2 / (4.5 / 1.3)) < 1e-6);
	/* collisions per agent: (2 + 2 + 1) / 3; time: 4 steps each */
	const double want = 50.0 * 5.0 / 3.0 + 4.0 * dt + (energy[0] + energy[1] + energy[2]) / 3.0;
	assert_true(fabs(s.score - want) < 1e-3 * want);
	sb_metrics_destroy(m);
	sb_case_free(&c);
}

static void expected_lines_are_found_by_case_and_mode(void **state) {
	(void)state;
	const char *path = write_tmp("# case mode min_arrived max_deep [time_limit]\n"
	                             "a quality 3 0\n"
	                             "a reference 2 7 60\n");
	sb_expect e;
	assert_int_equal(sb_expect_load(path, "a", "reference", &e), 0);
	assert_true(e.found);
	assert_int_equal(e.min_arrived, 2);
	assert_int_equal(e.max_deep, 7);
	assert_true(e.time_limit == 60.0f);
	assert_int_equal(sb_expect_load(path, "a", "quality", &e), 0);
	assert_true(e.found && e.min_arrived == 3 && e.time_limit == 0.0f);
	assert_int_equal(sb_expect_load(path, "b", "quality", &e), 0);
	assert_false(e.found);
	unlink(path);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(reads_a_case),
	    cmocka_unit_test(refuses_malformed_cases),
	    cmocka_unit_test(counts_collisions_deep_overlaps_and_walls),
	    cmocka_unit_test(expected_lines_are_found_by_case_and_mode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
