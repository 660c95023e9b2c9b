/* nav_test_util.h — helpers shared by the navigation tests: worlds with
 * rectangular walls, "is a centre inside an obstacle" over the whole world,
 * and stepping with navigation. */
#ifndef CROWD_NAV_TEST_UTIL_H
#define CROWD_NAV_TEST_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "orca/nav.h"
#include "orca/orca.h"

/* Even-odd test: p strictly inside polygon v[0..n) (segments have no inside). */
static inline bool point_in_polygon(orca_vec2 p, const orca_vec2 *v, uint32_t n)
{
	bool in = false;
	for (uint32_t i = 0, j = n - 1; i < n; j = i++) {
		if ((v[i].y > p.y) != (v[j].y > p.y) &&
		    p.x < (v[j].x - v[i].x) * (p.y - v[i].y) / (v[j].y - v[i].y) + v[i].x)
			in = !in;
	}
	return n >= 3 && in;
}

/* How many live agents have their centre inside some obstacle. */
static inline uint32_t centres_inside_obstacles(const orca_world *w)
{
	uint32_t no = orca_world_obstacle_count(w), na = orca_world_agent_count(w), bad = 0;
	orca_obstacle_id *oids = malloc((no + 1) * sizeof *oids);
	orca_agent_id *aids = malloc((na + 1) * sizeof *aids);
	orca_vec2 v[64];
	orca_world_obstacle_ids(w, oids, no);
	orca_world_agent_ids(w, aids, na);
	for (uint32_t a = 0; a < na; ++a) {
		orca_agent_state st;
		orca_agent_get(w, aids[a], &st);
		for (uint32_t o = 0; o < no; ++o) {
			uint32_t n = 0;
			orca_obstacle_get(w, oids[o], v, 64, &n);
			if (n <= 64 && point_in_polygon(st.position, v, n)) {
				++bad;
				break;
			}
		}
	}
	free(oids);
	free(aids);
	return bad;
}

/* A counter-clockwise rectangle as an obstacle. */
static inline orca_obstacle_id add_rect(orca_world *w, float x0, float y0, float x1, float y1)
{
	const orca_vec2 r[4] = {{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}};
	orca_obstacle_id id = 0;
	orca_obstacle_add(w, r, 4, &id);
	return id;
}

#endif /* CROWD_NAV_TEST_UTIL_H */
