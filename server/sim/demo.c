/* demo.c — the demo crowd (see demo.h): four blocks in the middle, eight
 * waypoints on a circle around them; groups spawn at the waypoints and walk
 * across, so they meet and avoid each other and the blocks. */
#include "demo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define DEMO_WAYPOINTS 8
/* Close enough: crowds cannot all stand on their exact points, so an agent
 * this near its target picks the next one. */
#define DEMO_NEAR 4.0f
/* An agent slower than this for DEMO_STUCK_TICKS (pressed against a block or
 * in a jam) picks another waypoint, so the demo never freezes. */
#define DEMO_STUCK_SPEED 0.15f
#define DEMO_STUCK_TICKS 45

struct demo_crowd {
	orca_agent_id *ids;
	uint16_t *slow_ticks;
	uint32_t count;
	orca_vec2 waypoints[DEMO_WAYPOINTS];
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

static orca_vec2 pick_target(demo_crowd *d, uint32_t avoid_waypoint, uint32_t *chosen) {
	uint32_t w = next_random(d) % (DEMO_WAYPOINTS - 1);
	if (w >= avoid_waypoint) w++;
	*chosen = w;
	float jx = (random_unit(d) - 0.5f) * 16.0f, jy = (random_unit(d) - 0.5f) * 16.0f;
	return (orca_vec2){d->waypoints[w].x + jx, d->waypoints[w].y + jy};
}

demo_crowd *demo_create(orca_world *world, const server_config *cfg) {
	demo_crowd *d = calloc(1, sizeof *d);
	if (!d) return NULL;
	d->rng = 0x9E3779B97F4A7C15ull;
	d->ids = calloc(cfg->demo_agents ? cfg->demo_agents : 1, sizeof *d->ids);
	d->slow_ticks = calloc(cfg->demo_agents ? cfg->demo_agents : 1, sizeof *d->slow_ticks);
	if (!d->ids || !d->slow_ticks) {
		free(d->ids);
		free(d->slow_ticks);
		free(d);
		return NULL;
	}
	/* Scale the scene with the crowd so it is neither empty nor jammed. */
	float ring = 40.0f + 2.0f * sqrtf((float)cfg->demo_agents);
	for (int i = 0; i < DEMO_WAYPOINTS; i++) {
		float a = (float)i * 6.2831853f / DEMO_WAYPOINTS;
		d->waypoints[i] = (orca_vec2){ring * cosf(a), ring * sinf(a)};
	}
	/* Four square blocks around the centre, counter-clockwise vertices. */
	const float half = ring * 0.12f, off = ring * 0.3f;
	const float centres[4][2] = {{off, off}, {-off, off}, {-off, -off}, {off, -off}};
	for (int b = 0; b < 4; b++) {
		float cx = centres[b][0], cy = centres[b][1];
		orca_vec2 v[4] = {
		    {cx - half, cy - half}, {cx + half, cy - half}, {cx + half, cy + half}, {cx - half, cy + half}};
		orca_obstacle_id oid;
		int rc = orca_obstacle_add(world, v, 4, &oid);
		if (rc != ORCA_OK) log_warn("demo: obstacle %d: %s", b, orca_strerror(rc));
	}
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
	for (uint32_t i = 0; i < cfg->demo_agents; i++) {
		uint32_t home = i % DEMO_WAYPOINTS, chosen;
		/* Spread each group on a small grid around its waypoint. */
		uint32_t k = i / DEMO_WAYPOINTS;
		float spacing = def.radius * 2.5f;
		int side = 1 + (int)sqrtf((float)(cfg->demo_agents / DEMO_WAYPOINTS + 1));
		float gx = ((float)(k % (uint32_t)side) - (float)side * 0.5f) * spacing;
		float gy = ((float)(k / (uint32_t)side) - (float)side * 0.5f) * spacing;
		orca_vec2 base = d->waypoints[home];
		float scale = 1.0f + (float)side * spacing / ring; /* push groups outward so they do not overlap */
		def.position = (orca_vec2){base.x * scale + gx, base.y * scale + gy};
		def.target = pick_target(d, home, &chosen);
		if (orca_agent_add(world, &def, &d->ids[d->count]) == ORCA_OK) d->count++;
	}
	log_info("demo: %u agents, 4 obstacles, %d waypoints on a circle of radius %.0f", d->count, DEMO_WAYPOINTS,
	         (double)ring);
	return d;
}

void demo_update(demo_crowd *d, orca_world *world) {
	for (uint32_t i = 0; i < d->count; i++) {
		orca_agent_state st;
		if (d->ids[i] == ORCA_NULL_ID) continue;
		if (orca_agent_get(world, d->ids[i], &st) != ORCA_OK) {
			d->ids[i] = ORCA_NULL_ID; /* an admin removed it */
			continue;
		}
		if (st.steer_mode != ORCA_STEER_TARGET) continue;
		float tx = st.target.x - st.position.x, ty = st.target.y - st.position.y;
		bool near = st.arrived || tx * tx + ty * ty < DEMO_NEAR * DEMO_NEAR;
		float speed2 = st.velocity.x * st.velocity.x + st.velocity.y * st.velocity.y;
		if (!near) {
			if (speed2 >= DEMO_STUCK_SPEED * DEMO_STUCK_SPEED) {
				d->slow_ticks[i] = 0;
				continue;
			}
			if (++d->slow_ticks[i] < DEMO_STUCK_TICKS) continue;
		}
		d->slow_ticks[i] = 0;
		uint32_t nearest = 0;
		float best = INFINITY;
		for (uint32_t w = 0; w < DEMO_WAYPOINTS; w++) {
			float dx = d->waypoints[w].x - st.position.x, dy = d->waypoints[w].y - st.position.y;
			float dist = dx * dx + dy * dy;
			if (dist < best) best = dist, nearest = w;
		}
		uint32_t chosen;
		orca_agent_set_target(world, d->ids[i], pick_target(d, nearest, &chosen));
	}
}

void demo_destroy(demo_crowd *d) {
	if (!d) return;
	free(d->ids);
	free(d->slow_ticks);
	free(d);
}

/* ---- checkpoints (server/storage): "DEMO", count, rng, waypoints, then per agent id and stuck ticks */

#define DEMO_MAGIC 0x4F4D4544u
#define DEMO_HEADER_BYTES (4 + 4 + 8 + DEMO_WAYPOINTS * 8)

static void put32(uint8_t **p, uint32_t v) {
	for (int i = 0; i < 4; i++) *(*p)++ = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t **p) {
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) v |= (uint32_t)*(*p)++ << (8 * i);
	return v;
}

uint8_t *demo_save(const demo_crowd *d, size_t *len) {
	*len = DEMO_HEADER_BYTES + (size_t)d->count * 6;
	uint8_t *buf = malloc(*len), *p = buf;
	if (!buf) return NULL;
	put32(&p, DEMO_MAGIC);
	put32(&p, d->count);
	put32(&p, (uint32_t)d->rng);
	put32(&p, (uint32_t)(d->rng >> 32));
	for (int i = 0; i < DEMO_WAYPOINTS; i++) {
		uint32_t x, y;
		memcpy(&x, &d->waypoints[i].x, 4);
		memcpy(&y, &d->waypoints[i].y, 4);
		put32(&p, x);
		put32(&p, y);
	}
	for (uint32_t i = 0; i < d->count; i++) {
		put32(&p, d->ids[i]);
		*p++ = (uint8_t)d->slow_ticks[i];
		*p++ = (uint8_t)(d->slow_ticks[i] >> 8);
	}
	return buf;
}

demo_crowd *demo_load(const uint8_t *data, size_t len) {
	if (len < DEMO_HEADER_BYTES) return NULL;
	const uint8_t *p = data;
	if (get32(&p) != DEMO_MAGIC) return NULL;
	uint32_t count = get32(&p);
	if ((len - DEMO_HEADER_BYTES) / 6 != count || (len - DEMO_HEADER_BYTES) % 6 != 0) return NULL;
	demo_crowd *d = calloc(1, sizeof *d);
	if (!d) return NULL;
	d->ids = calloc(count ? count : 1, sizeof *d->ids);
	d->slow_ticks = calloc(count ? count : 1, sizeof *d->slow_ticks);
	if (!d->ids || !d->slow_ticks) {
		demo_destroy(d);
		return NULL;
	}
	d->count = count;
	d->rng = get32(&p);
	d->rng |= (uint64_t)get32(&p) << 32;
	for (int i = 0; i < DEMO_WAYPOINTS; i++) {
		uint32_t x = get32(&p), y = get32(&p);
		memcpy(&d->waypoints[i].x, &x, 4);
		memcpy(&d->waypoints[i].y, &y, 4);
		if (!isfinite(d->waypoints[i].x) || !isfinite(d->waypoints[i].y)) {
			demo_destroy(d);
			return NULL;
		}
	}
	for (uint32_t i = 0; i < count; i++) {
		d->ids[i] = get32(&p);
		d->slow_ticks[i] = (uint16_t)(p[0] | p[1] << 8);
		p += 2;
	}
	return d;
}
