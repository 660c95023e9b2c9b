/* demo.c — the demo crowd (see demo.h): groups spawn in every place of the
 * map and walk through navigation to random spots in other places, so the
 * doors and corridors carry crowds both ways. */
#include "demo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* Without navigation: close enough, as crowds cannot all stand on their exact
 * points, and an agent this slow for DEMO_STUCK_TICKS (pressed against a wall)
 * picks another spot, so the demo never freezes. */
#define DEMO_NEAR 4.0f
#define DEMO_STUCK_SPEED 0.15f
#define DEMO_STUCK_TICKS 45
/* With navigation, queueing at a door is progress too: only an agent this slow
 * for this long (ten seconds at 30 Hz) is sent elsewhere. */
#define DEMO_REROUTE_TICKS 300

struct demo_crowd {
	map_def map;
	float margin; /* spots keep this far from the walls */
	orca_agent_id *ids;
	uint32_t *place; /* the place each agent walks to */
	uint16_t *slow_ticks;
	uint32_t count;
	uint64_t rng;
};

/* xorshift64*: small, fast, and the same on every platform. */
static uint32_t next_random(demo_crowd *d) {
	d->rng ^= d->rng >> 12;
	d->rng ^= d->rng << 25;
	d->rng ^= d->rng >> 27;
	return (uint32_t)((d->rng * 2685821657736338717ull) >> 32);
}

static float random_unit(demo_crowd *d) {
	return (float)(next_random(d) >> 8) / (float)(1u << 24);
}

/* A random spot in a place other than `avoid` (any place when there is one). */
static orca_vec2 pick_spot(demo_crowd *d, uint32_t avoid, uint32_t *chosen) {
	const uint32_t places = map_place_count(&d->map);
	uint32_t p = 0;
	if (places > 1) {
		p = next_random(d) % (places - 1);
		if (avoid < places && p >= avoid) p++;
	}
	*chosen = p;
	orca_vec2 lo, hi;
	map_place(&d->map, p, d->margin, &lo, &hi);
	const float u = random_unit(d), v = random_unit(d);
	return (orca_vec2){lo.x + u * (hi.x - lo.x), lo.y + v * (hi.y - lo.y)};
}

static demo_crowd *demo_alloc(uint32_t count) {
	demo_crowd *d = calloc(1, sizeof *d);
	if (!d) return NULL;
	d->ids = calloc(count ? count : 1, sizeof *d->ids);
	d->place = calloc(count ? count : 1, sizeof *d->place);
	d->slow_ticks = calloc(count ? count : 1, sizeof *d->slow_ticks);
	if (!d->ids || !d->place || !d->slow_ticks) {
		demo_destroy(d);
		return NULL;
	}
	return d;
}

demo_crowd *demo_create(orca_world *world, const server_config *cfg, const map_def *map) {
	demo_crowd *d = demo_alloc(cfg->demo_agents);
	if (!d) return NULL;
	d->rng = 0x9E3779B97F4A7C15ull;
	d->map = *map;
	d->margin = (float)cfg->agent_radius + 0.5f;
	orca_agent_def def = orca_default_agent_def();
	def.radius = (float)cfg->agent_radius;
	def.max_speed = (float)cfg->agent_max_speed;
	def.pref_speed = (float)cfg->agent_pref_speed;
	def.neighbor_dist = (float)cfg->agent_neighbor_dist;
	def.max_neighbors = cfg->agent_max_neighbors;
	def.time_horizon = (float)cfg->agent_time_horizon;
	def.time_horizon_obst = (float)cfg->agent_time_horizon_obst;
	def.weight = (float)cfg->agent_weight;
	def.user_data = 0;
	def.steer_mode = ORCA_STEER_TARGET;
	const uint32_t places = map_place_count(map);
	const float spacing = def.radius * 2.5f;
	for (uint32_t i = 0; i < cfg->demo_agents; i++) {
		/* Agent i lives in place i % places, on a grid there; a grid that is
		 * full starts again half a spacing over (the crowd spreads itself). */
		const uint32_t home = i % places, k = i / places;
		orca_vec2 lo, hi;
		map_place(map, home, d->margin, &lo, &hi);
		const uint32_t cols = 1 + (uint32_t)fmaxf(0.0f, (hi.x - lo.x) / spacing);
		const uint32_t rows = 1 + (uint32_t)fmaxf(0.0f, (hi.y - lo.y) / spacing);
		const uint32_t layer = k / (cols * rows), slot = k % (cols * rows);
		const float shift = (float)(layer % 2) * 0.5f * spacing;
		def.position = (orca_vec2){fminf(hi.x, lo.x + (float)(slot % cols) * spacing + shift),
		                           fminf(hi.y, lo.y + (float)(slot / cols) * spacing + shift)};
		def.target = def.position; /* at its spot: the first update sends it on */
		d->place[d->count] = home;
		if (orca_agent_add(world, &def, &d->ids[d->count]) == ORCA_OK) d->count++;
	}
	log_info("demo: %u agents in %u %s", d->count, places,
	         map->kind == MAP_ROOMS  ? "rooms"
	         : map->kind == MAP_CITY ? "streets"
	                                 : "place");
	return d;
}

static bool near_target(const orca_agent_state *st) {
	const float tx = st->target.x - st->position.x, ty = st->target.y - st->position.y;
	return st->arrived || tx * tx + ty * ty < DEMO_NEAR * DEMO_NEAR;
}

/* Whether agent i needs a new spot; counts its slow ticks. */
static bool wants_new_spot(demo_crowd *d, uint32_t i, const orca_agent_state *st, server_navigation *nav) {
	const float speed2 = st->velocity.x * st->velocity.x + st->velocity.y * st->velocity.y;
	const bool slow = speed2 < DEMO_STUCK_SPEED * DEMO_STUCK_SPEED;
	if (!nav) {
		if (near_target(st)) return true;
		d->slow_ticks[i] = slow ? (uint16_t)(d->slow_ticks[i] + 1) : 0;
		return d->slow_ticks[i] >= DEMO_STUCK_TICKS;
	}
	switch (navigation_agent_phase(nav, d->ids[i])) {
	case NAVIGATION_NONE: /* just spawned (at its spot), or sent straight by a client: back once there */
		d->slow_ticks[i] = 0;
		return near_target(st);
	case NAVIGATION_DONE:
		return true;
	case NAVIGATION_WAITING:
		return false; /* its path is queued: not its fault */
	case NAVIGATION_MOVING:
		break;
	}
	d->slow_ticks[i] = slow ? (uint16_t)(d->slow_ticks[i] + 1) : 0;
	return d->slow_ticks[i] >= DEMO_REROUTE_TICKS;
}

void demo_update(demo_crowd *d, orca_world *world, server_navigation *nav) {
	for (uint32_t i = 0; i < d->count; i++) {
		orca_agent_state st;
		if (d->ids[i] == ORCA_NULL_ID) continue;
		if (orca_agent_get(world, d->ids[i], &st) != ORCA_OK) {
			d->ids[i] = ORCA_NULL_ID; /* an admin removed it */
			continue;
		}
		if (st.steer_mode != ORCA_STEER_TARGET) continue; /* a client steers it by velocity */
		if (!wants_new_spot(d, i, &st, nav)) continue;
		d->slow_ticks[i] = 0;
		const orca_vec2 spot = pick_spot(d, d->place[i], &d->place[i]);
		if (nav)
			navigation_set_target(nav, d->ids[i], spot);
		else
			orca_agent_set_target(world, d->ids[i], spot);
	}
}

void demo_destroy(demo_crowd *d) {
	if (!d) return;
	free(d->ids);
	free(d->place);
	free(d->slow_ticks);
	free(d);
}

/* ---- checkpoints (server/storage): "DEM2", count, rng, margin, the map, then
 * per agent its id, place and stuck ticks. The first format ("DEMO", eight
 * waypoints on a circle) is refused: its crowd walked another scene. */

#define DEMO_MAGIC 0x324D4544u
#define DEMO_HEADER_BYTES (4 + 4 + 8 + 4 + MAP_BYTES)
#define DEMO_AGENT_BYTES 10

static void put32(uint8_t **p, uint32_t v) {
	for (int i = 0; i < 4; i++) *(*p)++ = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t **p) {
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) v |= (uint32_t) * (*p)++ << (8 * i);
	return v;
}

uint8_t *demo_save(const demo_crowd *d, size_t *len) {
	*len = DEMO_HEADER_BYTES + (size_t)d->count * DEMO_AGENT_BYTES;
	uint8_t *buf = malloc(*len), *p = buf;
	if (!buf) return NULL;
	put32(&p, DEMO_MAGIC);
	put32(&p, d->count);
	put32(&p, (uint32_t)d->rng);
	put32(&p, (uint32_t)(d->rng >> 32));
	uint32_t margin;
	memcpy(&margin, &d->margin, 4);
	put32(&p, margin);
	map_save(&d->map, p);
	p += MAP_BYTES;
	for (uint32_t i = 0; i < d->count; i++) {
		put32(&p, d->ids[i]);
		put32(&p, d->place[i]);
		*p++ = (uint8_t)d->slow_ticks[i];
		*p++ = (uint8_t)(d->slow_ticks[i] >> 8);
	}
	return buf;
}

demo_crowd *demo_load(const uint8_t *data, size_t len) {
	if (len < DEMO_HEADER_BYTES) return NULL;
	const uint8_t *p = data;
	if (get32(&p) != DEMO_MAGIC) return NULL;
	const uint32_t count = get32(&p);
	if ((len - DEMO_HEADER_BYTES) % DEMO_AGENT_BYTES != 0 || (len - DEMO_HEADER_BYTES) / DEMO_AGENT_BYTES != count)
		return NULL;
	demo_crowd *d = demo_alloc(count);
	if (!d) return NULL;
	d->count = count;
	d->rng = get32(&p);
	d->rng |= (uint64_t)get32(&p) << 32;
	const uint32_t margin = get32(&p);
	memcpy(&d->margin, &margin, 4);
	if (!isfinite(d->margin) || d->margin < 0 || d->margin > 1e6f || !map_load(&d->map, p)) {
		demo_destroy(d);
		return NULL;
	}
	p += MAP_BYTES;
	for (uint32_t i = 0; i < count; i++) {
		d->ids[i] = get32(&p);
		d->place[i] = get32(&p);
		d->slow_ticks[i] = (uint16_t)(p[0] | p[1] << 8);
		p += 2;
	}
	return d;
}
