/* map.c — the built-in maps (see map.h). Every wall is an axis-aligned
 * rectangle; the walls are enumerated by one function (each_wall) that the
 * build, the wall queries and the tests share, so they cannot disagree. */
#include "map.h"

#include <math.h>
#include <string.h>

/* At most this many demo agents a room: a room is busy, never packed. */
#define AGENTS_PER_ROOM 35u

map_def map_default_def(void) {
	map_def d;
	memset(&d, 0, sizeof d);
	d.kind = MAP_ROOMS;
	d.rooms_x = d.rooms_y = 3;
	d.room_size = 36.0f;
	d.wall = 1.0f;
	d.door = 14.0f;
	d.corridor = 12.0f;
	d.min = (orca_vec2){-1000.0f, -1000.0f};
	d.max = (orca_vec2){1000.0f, 1000.0f};
	d.block = 40.0f;
	d.street = 12.0f;
	return d;
}

map_def map_def_of(const server_config *cfg) {
	map_def d = map_default_def();
	switch (cfg->map) {
	case CONFIG_MAP_AUTO:
		d.kind = cfg->demo ? MAP_ROOMS : MAP_EMPTY;
		break;
	case CONFIG_MAP_ROOMS:
		d.kind = MAP_ROOMS;
		break;
	case CONFIG_MAP_CITY:
		d.kind = MAP_CITY;
		break;
	default:
		d.kind = MAP_EMPTY;
		break;
	}
	uint32_t side = 2;
	while (side * side * AGENTS_PER_ROOM < cfg->demo_agents) side++;
	/* the grid is centred on the origin and stays inside --world-bounds (its
	 * rooms then hold more agents each) */
	const float span_x = 2.0f * fminf(-(float)cfg->world_min_x, (float)cfg->world_max_x);
	const float span_y = 2.0f * fminf(-(float)cfg->world_min_y, (float)cfg->world_max_y);
	const float fit_x = floorf((span_x + d.corridor) / (d.room_size + 2.0f * d.wall + d.corridor));
	const float fit_y = floorf(span_y / (d.room_size + 2.0f * d.wall));
	d.rooms_x = fit_x < (float)side ? (fit_x >= 1 ? (uint32_t)fit_x : 1) : side;
	d.rooms_y = fit_y < (float)side ? (fit_y >= 1 ? (uint32_t)fit_y : 1) : side;
	if (d.kind == MAP_EMPTY) d.room_size = 40.0f + 4.0f * sqrtf((float)cfg->demo_agents);
	d.min = (orca_vec2){(float)cfg->world_min_x, (float)cfg->world_min_y};
	d.max = (orca_vec2){(float)cfg->world_max_x, (float)cfg->world_max_y};
	d.block = (float)cfg->city_block;
	d.street = (float)cfg->city_street;
	return d;
}

/* ---- geometry */

typedef struct rooms_layout {
	float pitch_x, pitch_y;
	orca_vec2 origin; /* lower left corner of room (0, 0)'s outer wall */
} rooms_layout;

static rooms_layout rooms_of(const map_def *d) {
	rooms_layout r;
	r.pitch_x = d->room_size + 2.0f * d->wall + d->corridor;
	r.pitch_y = d->room_size + 2.0f * d->wall;
	float total_x = (float)d->rooms_x * r.pitch_x - d->corridor, total_y = (float)d->rooms_y * r.pitch_y;
	r.origin = (orca_vec2){-0.5f * total_x, -0.5f * total_y};
	return r;
}

/* Room (i, j)'s inside. */
static void room_inside(const map_def *d, const rooms_layout *r, uint32_t i, uint32_t j, orca_vec2 *lo, orca_vec2 *hi) {
	lo->x = r->origin.x + (float)i * r->pitch_x + d->wall;
	lo->y = r->origin.y + (float)j * r->pitch_y + d->wall;
	hi->x = lo->x + d->room_size;
	hi->y = lo->y + d->room_size;
}

typedef struct city_layout {
	uint32_t blocks_x, blocks_y;
	float pitch;
	orca_vec2 origin; /* lower left corner of block (0, 0) */
} city_layout;

static city_layout city_of(const map_def *d) {
	city_layout c;
	c.pitch = d->block + d->street;
	float w = d->max.x - d->min.x, h = d->max.y - d->min.y;
	float nx = floorf((w - d->street) / c.pitch), ny = floorf((h - d->street) / c.pitch);
	c.blocks_x = nx > 0 ? (uint32_t)nx : 0;
	c.blocks_y = ny > 0 ? (uint32_t)ny : 0;
	c.origin.x = d->min.x + 0.5f * (w - ((float)c.blocks_x * c.pitch + d->street)) + d->street;
	c.origin.y = d->min.y + 0.5f * (h - ((float)c.blocks_y * c.pitch + d->street)) + d->street;
	return c;
}

typedef void (*wall_fn)(void *ctx, orca_vec2 lo, orca_vec2 hi);

static uint32_t emit(wall_fn fn, void *ctx, float x0, float y0, float x1, float y1) {
	if (fn) fn(ctx, (orca_vec2){x0, y0}, (orca_vec2){x1, y1});
	return 1;
}

/* A wall along x from x0 to x1 (y0..y1 thick), with a door centred on cx. */
static uint32_t emit_x(wall_fn fn, void *ctx, const map_def *d, float x0, float x1, float y0, float y1, bool door,
                       float cx) {
	if (!door) return emit(fn, ctx, x0, y0, x1, y1);
	return emit(fn, ctx, x0, y0, cx - 0.5f * d->door, y1) + emit(fn, ctx, cx + 0.5f * d->door, y0, x1, y1);
}

static uint32_t emit_y(wall_fn fn, void *ctx, const map_def *d, float y0, float y1, float x0, float x1, bool door,
                       float cy) {
	if (!door) return emit(fn, ctx, x0, y0, x1, y1);
	return emit(fn, ctx, x0, y0, x1, cy - 0.5f * d->door) + emit(fn, ctx, x0, cy + 0.5f * d->door, x1, y1);
}

/* Every wall in one fixed order; returns the count. fn NULL: count only. */
static uint32_t each_wall(const map_def *d, wall_fn fn, void *ctx) {
	uint32_t n = 0;
	if (d->kind == MAP_ROOMS) {
		const rooms_layout r = rooms_of(d);
		const float t = d->wall;
		for (uint32_t j = 0; j < d->rooms_y; j++)
			for (uint32_t i = 0; i < d->rooms_x; i++) {
				orca_vec2 lo, hi;
				room_inside(d, &r, i, j, &lo, &hi);
				const float cx = 0.5f * (lo.x + hi.x), cy = 0.5f * (lo.y + hi.y);
				n += emit_x(fn, ctx, d, lo.x - t, hi.x + t, lo.y - t, lo.y, j > 0, cx); /* south */
				n += emit_x(fn, ctx, d, lo.x - t, hi.x + t, hi.y, hi.y + t, j + 1 < d->rooms_y,
				            cx);                                                             /* north */
				n += emit_y(fn, ctx, d, lo.y, hi.y, lo.x - t, lo.x, i > 0, cy);              /* west */
				n += emit_y(fn, ctx, d, lo.y, hi.y, hi.x, hi.x + t, i + 1 < d->rooms_x, cy); /* east */
				if (i + 1 < d->rooms_x && d->corridor > 0) { /* the corridor to the room east */
					const float x0 = hi.x + t, x1 = x0 + d->corridor, h = 0.5f * d->door;
					n += emit(fn, ctx, x0, cy - h - t, x1, cy - h);
					n += emit(fn, ctx, x0, cy + h, x1, cy + h + t);
				}
			}
	} else if (d->kind == MAP_CITY) {
		const city_layout c = city_of(d);
		for (uint32_t j = 0; j < c.blocks_y; j++)
			for (uint32_t i = 0; i < c.blocks_x; i++) {
				const float x = c.origin.x + (float)i * c.pitch, y = c.origin.y + (float)j * c.pitch;
				n += emit(fn, ctx, x, y, x + d->block, y + d->block);
			}
	}
	return n;
}

uint32_t map_wall_count(const map_def *d) {
	return each_wall(d, NULL, NULL);
}

typedef struct wall_pick {
	uint32_t want, seen;
	orca_vec2 lo, hi;
} wall_pick;

static void pick_wall(void *ctx, orca_vec2 lo, orca_vec2 hi) {
	wall_pick *p = ctx;
	if (p->seen++ == p->want) p->lo = lo, p->hi = hi;
}

void map_wall(const map_def *d, uint32_t i, orca_vec2 *lo, orca_vec2 *hi) {
	wall_pick p = {.want = i};
	each_wall(d, pick_wall, &p);
	*lo = p.lo;
	*hi = p.hi;
}

typedef struct wall_add {
	orca_world *world;
	int status;
} wall_add;

static void add_wall(void *ctx, orca_vec2 lo, orca_vec2 hi) {
	wall_add *a = ctx;
	const orca_vec2 v[4] = {{lo.x, lo.y}, {hi.x, lo.y}, {hi.x, hi.y}, {lo.x, hi.y}};
	orca_obstacle_id id;
	int rc = orca_obstacle_add(a->world, v, 4, &id);
	if (rc != ORCA_OK && a->status == ORCA_OK) a->status = rc;
}

int map_build(const map_def *d, orca_world *world) {
	wall_add a = {world, ORCA_OK};
	each_wall(d, add_wall, &a);
	return a.status;
}

typedef struct wall_hit {
	orca_vec2 p;
	float margin;
	bool hit;
} wall_hit;

static void hit_wall(void *ctx, orca_vec2 lo, orca_vec2 hi) {
	wall_hit *h = ctx;
	if (h->p.x > lo.x - h->margin && h->p.x < hi.x + h->margin && h->p.y > lo.y - h->margin &&
	    h->p.y < hi.y + h->margin)
		h->hit = true;
}

bool map_in_wall(const map_def *d, orca_vec2 p, float margin) {
	wall_hit h = {p, margin, false};
	each_wall(d, hit_wall, &h);
	return h.hit;
}

/* ---- places */

uint32_t map_place_count(const map_def *d) {
	if (d->kind == MAP_ROOMS) return d->rooms_x * d->rooms_y;
	if (d->kind == MAP_CITY) {
		const city_layout c = city_of(d);
		return c.blocks_x + 1 + c.blocks_y + 1;
	}
	return 1;
}

void map_place(const map_def *d, uint32_t i, float margin, orca_vec2 *lo, orca_vec2 *hi) {
	if (d->kind == MAP_ROOMS) {
		const rooms_layout r = rooms_of(d);
		room_inside(d, &r, i % d->rooms_x, i / d->rooms_x, lo, hi);
	} else if (d->kind == MAP_CITY) {
		const city_layout c = city_of(d);
		const float x_end = c.origin.x + (float)c.blocks_x * c.pitch,
		            y_end = c.origin.y + (float)c.blocks_y * c.pitch;
		if (i <= c.blocks_x) { /* a street running north-south, west of block column i */
			const float x = c.origin.x + (float)i * c.pitch;
			*lo = (orca_vec2){x - d->street, c.origin.y - d->street};
			*hi = (orca_vec2){x, y_end};
		} else { /* east-west, south of block row i - blocks_x - 1 */
			const float y = c.origin.y + (float)(i - c.blocks_x - 1) * c.pitch;
			*lo = (orca_vec2){c.origin.x - d->street, y - d->street};
			*hi = (orca_vec2){x_end, y};
		}
	} else {
		*lo = (orca_vec2){-0.5f * d->room_size, -0.5f * d->room_size};
		*hi = (orca_vec2){0.5f * d->room_size, 0.5f * d->room_size};
	}
	lo->x += margin, lo->y += margin, hi->x -= margin, hi->y -= margin;
}

uint32_t map_place_of(const map_def *d, orca_vec2 p) {
	const uint32_t n = map_place_count(d);
	for (uint32_t i = 0; i < n; i++) {
		orca_vec2 lo, hi;
		map_place(d, i, 0.0f, &lo, &hi);
		if (p.x >= lo.x && p.x <= hi.x && p.y >= lo.y && p.y <= hi.y) return i;
	}
	return UINT32_MAX;
}

/* ---- bytes */

static void put32(uint8_t **p, uint32_t v) {
	for (int i = 0; i < 4; i++) *(*p)++ = (uint8_t)(v >> (8 * i));
}

static void putf(uint8_t **p, float f) {
	uint32_t v;
	memcpy(&v, &f, 4);
	put32(p, v);
}

static uint32_t get32(const uint8_t **p) {
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) v |= (uint32_t) * (*p)++ << (8 * i);
	return v;
}

static float getf(const uint8_t **p) {
	uint32_t v = get32(p);
	float f;
	memcpy(&f, &v, 4);
	return f;
}

void map_save(const map_def *d, uint8_t out[MAP_BYTES]) {
	uint8_t *p = out;
	put32(&p, (uint32_t)d->kind);
	put32(&p, d->rooms_x);
	put32(&p, d->rooms_y);
	putf(&p, d->room_size);
	putf(&p, d->wall);
	putf(&p, d->door);
	putf(&p, d->corridor);
	putf(&p, d->min.x);
	putf(&p, d->min.y);
	putf(&p, d->max.x);
	putf(&p, d->max.y);
	putf(&p, d->block);
	putf(&p, d->street);
}

bool map_load(map_def *d, const uint8_t in[MAP_BYTES]) {
	const uint8_t *p = in;
	map_def m;
	uint32_t kind = get32(&p);
	m.kind = (map_kind)kind;
	m.rooms_x = get32(&p);
	m.rooms_y = get32(&p);
	m.room_size = getf(&p);
	m.wall = getf(&p);
	m.door = getf(&p);
	m.corridor = getf(&p);
	m.min.x = getf(&p);
	m.min.y = getf(&p);
	m.max.x = getf(&p);
	m.max.y = getf(&p);
	m.block = getf(&p);
	m.street = getf(&p);
	const float f[] = {m.room_size, m.wall,  m.door,  m.corridor, m.min.x,
	                   m.min.y,     m.max.x, m.max.y, m.block,    m.street};
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		if (!isfinite(f[i]) || f[i] < -1e7f || f[i] > 1e7f) return false;
	if (kind > MAP_CITY || m.rooms_x == 0 || m.rooms_y == 0 || m.rooms_x > 4096 || m.rooms_y > 4096 ||
	    m.room_size <= 0 || m.block <= 0 || m.street <= 0 || m.max.x <= m.min.x || m.max.y <= m.min.y)
		return false;
	*d = m;
	return true;
}
