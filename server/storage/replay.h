/* replay.h — re-simulating a data dir: load a checkpoint into a world of its
 * own, then apply a journal segment's records tick by tick (the commands of
 * tick t, the demo's update, the step) and compare each recorded state hash.
 * Recovery (storage.c) and crowd-replay (replay_main.c) both use it. It never
 * touches the network; only the recorded settings (SimConfig) decide what a
 * command does. */
#ifndef CROWD_STORAGE_REPLAY_H
#define CROWD_STORAGE_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <orca/orca.h>

#include "config.h"
#include "record.h"
#include "sim.h"

/** The format this server writes (SegmentHeader.format, Checkpoint.format).
 * 2: state hashes by orca_world_state_hash; 1 (still read): by
 * orca_world_state_hash_v1. */
#define STORAGE_FORMAT 2u

/** Whether this server reads files of `format`. */
static inline bool storage_format_known(uint32_t format) { return format == 1u || format == STORAGE_FORMAT; }

/** A world's state hash as files of `format` record it. */
static inline uint64_t storage_state_hash(uint32_t format, const orca_world *w) {
	return format == 1u ? orca_world_state_hash_v1(w) : orca_world_state_hash(w);
}

/** A client that may take its id back with its resume key. */
typedef struct replay_identity {
	uint32_t client_id;
	uint32_t role;
	char key[33];
} replay_identity;

/* Not to be moved once loaded: its sim reads cfg where it is. */
typedef struct replay_world {
	server_config cfg; /* defaults, with the checkpoint's SimConfig over them */
	sim *sim;          /* run by cfg: world, demo, navigation (SimConfig.navigation), ids */
	uint64_t tick;       /* ticks completed */
	uint64_t state_hash; /* after that tick, as its file records it (storage_state_hash) */
	replay_identity *clients;
	uint32_t client_count, client_cap;
	uint64_t commands_applied;
	uint32_t format;                      /* the checkpoint's (STORAGE_FORMAT or older) */
	crowd_storage_v1_SimConfig sim_config; /* as the checkpoint recorded it */
} replay_world;

/** Load a checkpoint file's bytes into rw (which must be zeroed). workers: the
 * world's threads. 0, or -1 with err filled (rw then holds nothing). */
int replay_load_checkpoint(replay_world *rw, const uint8_t *file, size_t len, int workers, char *err, size_t errlen);
void replay_world_free(replay_world *rw);

/** Whether a checkpoint file's recorded settings (SimConfig) differ from
 * those rw was loaded with: a server restarted with other settings wrote it,
 * and the journal after it was recorded by them. */
bool replay_settings_differ(const replay_world *rw, const uint8_t *file, size_t len);

/** Set the identity of a client (a later record for the same id replaces it). */
bool replay_set_identity(replay_world *rw, const replay_identity *id);

typedef struct replay_options {
	uint64_t to_tick; /* stop once this tick is completed (UINT64_MAX: to the end) */
	bool verify;      /* stop at the first tick whose hash differs from the recorded one */
	bool keep_going;  /* with verify: count differences, do not stop */
	/** After every completed tick (may be NULL). */
	void (*on_tick)(void *user, const replay_world *rw, uint64_t recorded_hash);
	void *user;
} replay_options;

typedef struct replay_result {
	record_status tail;     /* RECORD_END, or TORN / CORRUPT: bytes from tail_offset on were dropped */
	size_t tail_offset;
	bool bad_record;        /* a whole record that does not decode or does not follow (then stopped) */
	bool reached_to_tick;
	uint64_t mismatch_tick; /* 0: every compared hash matched */
	uint64_t recorded_hash, computed_hash;
	uint64_t ticks;         /* ticks replayed */
	/* the records of the unfinished tick after the last TickEnd: [pending_begin, pending_end) */
	size_t pending_begin, pending_end;
	uint32_t pending_records;
} replay_result;

/** Replay one segment file's bytes. It must continue rw (its header's
 * start_tick == rw->tick). Returns 0, or -1 when the segment does not belong
 * here (bad header), with err filled. */
int replay_segment(replay_world *rw, const uint8_t *file, size_t len, const replay_options *opt,
                   replay_result *res, char *err, size_t errlen);

/** Apply the command records of data[begin, end) (a segment's unfinished
 * tick) to `target` (recovery: the server's new sim, which may be rw's own
 * sim handed over) without stepping, by rw's recorded settings (rw->cfg).
 * Returns how many were applied. */
uint32_t replay_apply_pending(const replay_world *rw, sim *target, const uint8_t *file, size_t begin, size_t end);

/** A follower's tick (replication.h): apply the Command and DropOwners
 * records of tick `tick` (framed, as in a segment; ClientIdentity records are
 * skipped) to target, without stepping, by target's settings. Returns how many
 * were applied, or -1 for a record that does not decode, belongs to another
 * tick, or is refused (a recorded command was accepted: it must apply again). */
int replay_apply_records(sim *target, const uint8_t *records, size_t len, uint64_t tick);

/** The recorded settings (SimConfig) of a checkpoint file's bytes over cfg,
 * and its tick. 0, or -1 when it is not a checkpoint this version reads. */
int replay_checkpoint_settings(const uint8_t *file, size_t len, server_config *cfg, uint64_t *tick);

#endif
