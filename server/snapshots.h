/* snapshots.h — what the server sends after each tick: the world table (the
 * agents quantized once per tick, with an area-of-interest grid over their
 * positions) and every due subscriber's snapshot, delta-coded against what it
 * was sent last. Part of the server (it reaches the sessions), not of the sim:
 * it only reads the sim's world. */
#ifndef CROWD_SERVER_SNAPSHOTS_H
#define CROWD_SERVER_SNAPSHOTS_H

#include <stdbool.h>
#include <stdint.h>

#include <crowd/wire.h>
#include <orca/orca.h>

#include "aoi_grid.h"

typedef struct room room;

/** The agents of the world after a step, quantized, ascending id (for snapshots). */
typedef struct world_table {
	crowd_agent_q *agents;
	uint32_t count, cap;
	float *x, *y; /* the agents' exact positions (areas select on these), same order */
	uint32_t x_cap, y_cap;
	aoi_grid grid;      /* over x, y: which table entries lie in an area */
	orca_agent_id *ids; /* scratch */
	uint32_t ids_cap;
	struct world_table_entry *sort_scratch;
	uint32_t sort_scratch_cap;
	struct world_table_chunk *chunks; /* what each chunk of rows found, as it was filled */
	uint32_t chunks_cap;
} world_table;

bool world_table_build(world_table *t, const orca_world *world, float precision);
void world_table_free(world_table *t);
/** Send every due snapshot after a tick, now (the loop thread encodes them
 * with the snapshot helper thread). */
void snapshots_send(room *r);
/** Send them overlapped: encoded on libuv's thread pool in `workers` lanes
 * while the loop goes on and the next tick steps (the table's rows are set
 * aside, so the next step fills others), each lane's piece sent by the loop
 * when it is done; then `done(r)` on the loop. Clients get the same bytes as from snapshots_send.
 * False when there is nothing to wait for (nothing was due, or it was sent
 * already); never while snapshots_busy. */
bool snapshots_start(room *r, void (*done)(room *r));
/** A tick's overlapped snapshots are still being encoded or sent. */
bool snapshots_busy(const room *r);
/** After a step, on the step's thread: build r->table and compute the state
 * hash (on the snapshot helper thread meanwhile, when workers >= 2). */
bool snapshots_build_table(room *r, uint64_t *state_hash);
/** Stop the snapshot helper thread and free the encoders (server_destroy). */
void snapshots_free(room *r);

#endif
