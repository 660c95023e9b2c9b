/* load_trips.c — random trips through the city of --map city (see
 * load_trips.h). Streets run between and around the blocks: north-south
 * street k spans x in [origin_x + k * pitch - street, origin_x + k * pitch],
 * east-west street k the same in y. */
#include "load_trips.h"

#include <math.h>
#include <stdbool.h>

static uint64_t next(uint64_t *s) {
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static float unit(uint64_t *s) {
	return (float)((double)(next(s) >> 11) * (1.0 / 9007199254740992.0));
}

static float range(uint64_t *s, float lo, float hi) {
	return lo + unit(s) * (hi - lo);
}

static float clampf(float v, float lo, float hi) {
	return v < lo ? lo : v > hi ? hi : v;
}

void load_city_init(load_city *c, const float world[4], float block, float street, float margin) {
	/* the same float arithmetic as server/sim/map.c city_of */
	c->block = block;
	c->street = street;
	c->pitch = block + street;
	c->margin = margin;
	float w = world[2] - world[0], h = world[3] - world[1];
	float nx = floorf((w - street) / c->pitch), ny = floorf((h - street) / c->pitch);
	c->blocks_x = nx > 0 ? (uint32_t)nx : 0;
	c->blocks_y = ny > 0 ? (uint32_t)ny : 0;
	c->origin_x = world[0] + 0.5f * (w - ((float)c->blocks_x * c->pitch + street)) + street;
	c->origin_y = world[1] + 0.5f * (h - ((float)c->blocks_y * c->pitch + street)) + street;
}

/* One axis of the city: streets 0..blocks along it. */
typedef struct axis {
	float origin, pitch, street, margin;
	uint32_t blocks;
} axis;

static axis axis_x(const load_city *c) {
	return (axis){c->origin_x, c->pitch, c->street, c->margin, c->blocks_x};
}
static axis axis_y(const load_city *c) {
	return (axis){c->origin_y, c->pitch, c->street, c->margin, c->blocks_y};
}

/* Street k's free span across this axis (shrunk by the margin). */
static void street_span(const axis *a, uint32_t k, float *lo, float *hi) {
	const float edge = a->origin + (float)k * a->pitch;
	*lo = edge - a->street + a->margin;
	*hi = edge - a->margin;
}

/* The whole length of a street along this axis (from the first street's edge to the last's). */
static void street_length(const axis *a, float *lo, float *hi) {
	*lo = a->origin - a->street + a->margin;
	*hi = a->origin + (float)a->blocks * a->pitch - a->margin;
}

/* The street whose free span (shrunk by the margin) holds this coordinate, or -1. */
static int street_of(const axis *a, float v) {
	const float k = floorf((v - a->origin + a->street) / a->pitch);
	if (k < 0 || k > (float)a->blocks) return -1;
	float lo, hi;
	street_span(a, (uint32_t)k, &lo, &hi);
	return v >= lo && v <= hi ? (int)k : -1;
}

/* The street nearest to v. */
static uint32_t nearest_street(const axis *a, float v) {
	const float k = floorf((v - a->origin + 0.5f * a->street) / a->pitch + 0.5f);
	return (uint32_t)clampf(k, 0, (float)a->blocks);
}

void load_city_random_point(const load_city *c, uint64_t *rng, float *x, float *y) {
	const uint32_t nx = c->blocks_x + 1, ny = c->blocks_y + 1;
	const uint32_t k = (uint32_t)(next(rng) % (nx + ny));
	const axis ax = axis_x(c), ay = axis_y(c);
	float lo, hi, along_lo, along_hi;
	if (k < nx) { /* a north-south street */
		street_span(&ax, k, &lo, &hi);
		street_length(&ay, &along_lo, &along_hi);
		*x = range(rng, lo, hi);
		*y = range(rng, along_lo, along_hi);
	} else {
		street_span(&ay, k - nx, &lo, &hi);
		street_length(&ax, &along_lo, &along_hi);
		*y = range(rng, lo, hi);
		*x = range(rng, along_lo, along_hi);
	}
}

static float dist(float ax, float ay, float bx, float by) {
	return sqrtf((ax - bx) * (ax - bx) + (ay - by) * (ay - by));
}

static float trip_from(const axis *across, const axis *along, uint64_t *rng, float a0, float a1, float len_lo,
                       float len_hi, float pu, float pv, float reach, float *qu, float *qv);

/* A trip in "street space": u across the street p stands on (axis `across`),
 * v along it (axis `along`). Swapping the roles of x and y gives the other
 * direction. */
static float trip_on(const axis *across, const axis *along, uint64_t *rng, float pu, float pv, float reach, float *qu,
                     float *qv) {
	const int k = street_of(across, pu) >= 0 ? street_of(across, pu) : (int)nearest_street(across, pu);
	float a0, a1, len_lo, len_hi;
	street_span(across, (uint32_t)k, &a0, &a1);
	street_length(along, &len_lo, &len_hi);
	/* a start off the street's free span (an agent that stopped near its
	 * edge) counts from the nearest point of it */
	const float off = fabsf(pu - clampf(pu, a0, a1));
	pu = clampf(pu, a0, a1);
	return off + trip_from(across, along, rng, a0, a1, len_lo, len_hi, pu, pv, reach, qu, qv);
}

/* From (pu, pv) inside street [a0, a1] (whose length is [len_lo, len_hi]). */
static float trip_from(const axis *across, const axis *along, uint64_t *rng, float a0, float a1, float len_lo,
                       float len_hi, float pu, float pv, float reach, float *qu, float *qv) {
	if (next(rng) % 3 == 0) { /* along the same street */
		*qu = range(rng, a0, a1);
		*qv = range(rng, fmaxf(len_lo, pv - reach), fminf(len_hi, pv + reach));
		return dist(pu, pv, *qu, *qv);
	}
	/* onto a crossing street within reach */
	uint32_t j = nearest_street(along, pv);
	const float first = ceilf((pv - reach - along->origin + 0.5f * along->street) / along->pitch);
	const float last = floorf((pv + reach - along->origin + 0.5f * along->street) / along->pitch);
	const float j0 = fmaxf(first, 0.0f), j1 = fminf(last, (float)along->blocks);
	if (j0 <= j1) j = (uint32_t)j0 + (uint32_t)(next(rng) % ((uint32_t)(j1 - j0) + 1)); /* centres within reach */
	float b0, b1, cross_lo, cross_hi;
	street_span(along, j, &b0, &b1);
	street_length(across, &cross_lo, &cross_hi);
	*qv = range(rng, b0, b1);
	*qu = range(rng, fmaxf(cross_lo, pu - reach), fminf(cross_hi, pu + reach));
	/* p is in street k (u in [a0, a1]), q in street j (v in [b0, b1]): the
	 * straight line, unless it cuts the block corner at the crossing */
	if ((pv >= b0 && pv <= b1) || (*qu >= a0 && *qu <= a1)) return dist(pu, pv, *qu, *qv);
	const float cu = *qu > a1 ? a1 : a0, cv = pv > b1 ? b1 : b0;
	const float v_at = pv + (*qv - pv) * (cu - pu) / (*qu - pu);
	const bool cut = pv > b1 ? v_at > cv : v_at < cv;
	return cut ? dist(pu, pv, cu, cv) + dist(cu, cv, *qu, *qv) : dist(pu, pv, *qu, *qv);
}

float load_city_trip(const load_city *c, uint64_t *rng, float px, float py, float reach, float *qx, float *qy) {
	const axis ax = axis_x(c), ay = axis_y(c);
	const bool on_x = street_of(&ax, px) >= 0, on_y = street_of(&ay, py) >= 0;
	/* on a north-south street (or on both, half the time): u = x across, v = y along */
	if (on_x && (!on_y || next(rng) % 2 == 0)) return trip_on(&ax, &ay, rng, px, py, reach, qx, qy);
	if (on_y) return trip_on(&ay, &ax, rng, py, px, reach, qy, qx);
	return trip_on(&ax, &ay, rng, px, py, reach, qx, qy); /* off every street (pushed out): from the nearest */
}
