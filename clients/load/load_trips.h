/* load_trips.h — --trips: the server's --map city as crowd-load sees it (the
 * same layout as server/sim/map.c, computed from the world bounds of Welcome
 * and --city BLOCK,STREET), random street points, and random trips along one
 * street or onto a crossing street with their free-walk length. */
#ifndef CROWD_LOAD_TRIPS_H
#define CROWD_LOAD_TRIPS_H

#include <stdint.h>

typedef struct load_city {
	float block, street, pitch;
	float origin_x, origin_y; /* lower left corner of block (0, 0) */
	uint32_t blocks_x, blocks_y;
	float margin; /* trip ends keep this far from the blocks (an agent's radius and a little) */
} load_city;

/** The city over world = {min_x, min_y, max_x, max_y}. */
void load_city_init(load_city *city, const float world[4], float block, float street, float margin);

/** A random point on a street (streets chosen by their area). */
void load_city_random_point(const load_city *city, uint64_t *rng, float *x, float *y);

/** A trip from (px, py), which stands on a street: a random point on the same
 * street or on a crossing one, at most `reach` away along each axis. Returns
 * its free-walk length: the shortest path within the one or two streets (a
 * straight line, or bent once round the corner of the crossing). */
float load_city_trip(const load_city *city, uint64_t *rng, float px, float py, float reach, float *qx, float *qy);

#endif
