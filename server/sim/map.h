/* map.h — the built-in maps (--map): rooms joined by doors and corridors, or
 * a city of square blocks and streets. A map is pure geometry computed from a
 * map_def: its walls are rectangles added to the world as obstacles at start,
 * and its places (rooms, streets) are where the demo crowd spawns and walks
 * to. The same def gives the same map on every machine. */
#ifndef CROWD_SERVER_MAP_H
#define CROWD_SERVER_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <orca/orca.h>

#include "config.h"

typedef enum map_kind {
	MAP_EMPTY = 0, /* no walls; one place: a square around the origin */
	MAP_ROOMS = 1, /* rooms_x x rooms_y rooms: corridors join them east-west, doors north-south */
	MAP_CITY = 2,  /* square blocks, streets between them and around them */
} map_kind;

/** What a map is. Get one from map_def_of (the settings) or map_default_def. */
typedef struct map_def {
	map_kind kind;
	/* rooms: the grid is centred on the origin */
	uint32_t rooms_x, rooms_y;
	float room_size; /* inside of a room, walls excluded */
	float wall;      /* wall thickness */
	float door;      /* door and corridor width */
	float corridor;  /* corridor length between two rooms side by side */
	/* city: the blocks fill [min, max] */
	orca_vec2 min, max;
	float block, street;
} map_def;

/** Rooms for a 3 x 3 grid of 36 m rooms, 14 m doors, 12 m corridors, 1 m walls. */
map_def map_default_def(void);

/** The map the settings ask for: --map (auto: rooms with --demo, else empty);
 * rooms enough for --demo-agents (at most 35 a room, unless more do not fit
 * inside --world-bounds); the city over --world-bounds
 * with --city-block and --city-street. */
map_def map_def_of(const server_config *cfg);

/** Its walls: the count, and wall i as a rectangle (lo, hi). */
uint32_t map_wall_count(const map_def *def);
void map_wall(const map_def *def, uint32_t i, orca_vec2 *lo, orca_vec2 *hi);

/** Add every wall to the world (counter-clockwise rectangles). ORCA_OK or the
 * first failing orca status. */
int map_build(const map_def *def, orca_world *world);

/** True when p is inside a wall, or within `margin` of one. */
bool map_in_wall(const map_def *def, orca_vec2 p, float margin);

/** Its places (rooms; the city's streets): the count, and place i's free
 * rectangle shrunk by `margin` (an agent's radius keeps it off the walls). */
uint32_t map_place_count(const map_def *def);
void map_place(const map_def *def, uint32_t i, float margin, orca_vec2 *lo, orca_vec2 *hi);

/** The place p is in (rooms: the room; others: the nearest place), or
 * UINT32_MAX when p is in none (a corridor, a door). */
uint32_t map_place_of(const map_def *def, orca_vec2 p);

/** The def as little-endian bytes (MAP_BYTES), and back: false when malformed. */
#define MAP_BYTES 52
void map_save(const map_def *def, uint8_t out[MAP_BYTES]);
bool map_load(map_def *def, const uint8_t in[MAP_BYTES]);

#endif
