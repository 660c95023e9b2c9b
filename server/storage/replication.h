/* replication.h — a hot standby, with Redis replication as the model. A
 * follower (crowd-server --follow HOST:PORT) connects to the primary's TCP
 * port as an admin and sends Follow; the primary answers with a full sync (the
 * world's checkpoint at a tick boundary, in chunks) and then every journal
 * batch as storage hands it to its writer (ReplicationFrame). The payload is
 * the journal's own framed records (proto/storage.proto): there is no second
 * format. The follower acknowledges a batch (FollowAck.seq) only once its own
 * journal holds it durably (as its --fsync says), which is what
 * --min-followers-ack waits for; FollowAck.tick is the tick it applied.
 *
 * repl_primary: one per world that is followed; who follows and what each
 * holds. repl_follower: the follower's connection, the checkpoint's chunks put
 * together, and the records split into ticks; what they do to the world and
 * the data dir is the caller's (room.c), through repl_follower_hooks.
 *
 * Threading: the loop thread. */
#ifndef CROWD_STORAGE_REPLICATION_H
#define CROWD_STORAGE_REPLICATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <crowd/wire.h>
#include <uv.h>

#include "config.h"

/* ------------------------------------------------------------------ primary */

typedef struct repl_primary repl_primary;

/** Send a message to the follower session `client_id`; false when it is gone. */
typedef bool (*repl_send_fn)(void *user, uint32_t client_id, const crowd_v1_ServerMessage *msg);

repl_primary *repl_primary_new(const char *history, uint32_t min_acks, repl_send_fn send, void *user);
void repl_primary_free(repl_primary *p);

/** A follower asked to follow: it gets a checkpoint at the next tick boundary. */
bool repl_primary_add(repl_primary *p, uint32_t client_id);
/** Some follower waits for its checkpoint. */
bool repl_primary_wants_checkpoint(const repl_primary *p);
/** At a tick boundary: the checkpoint of `tick` (one framed Record) to every
 * follower waiting for one; from here on they get every batch. */
void repl_primary_send_checkpoint(repl_primary *p, const uint8_t *checkpoint, size_t len, uint64_t tick);
/** A journal batch (storage's hook), sent to every follower past its checkpoint. */
void repl_primary_batch(repl_primary *p, const uint8_t *records, size_t len, uint64_t seq, uint64_t tick);
/** A follower holds the batches up to seq and applied `tick`. Returns the
 * newest seq that min_acks followers hold (0: none yet). */
uint64_t repl_primary_ack(repl_primary *p, uint32_t client_id, uint64_t seq, uint64_t tick);

/** For /metrics: followers connected, and each one's id and newest applied tick. */
uint32_t repl_primary_count(const repl_primary *p);
bool repl_primary_follower(const repl_primary *p, uint32_t i, uint32_t *client_id, uint64_t *acked_tick);

/* ------------------------------------------------------------------ follower */

typedef struct repl_follower repl_follower;

typedef struct repl_follower_hooks {
	/** The primary refused, or is not a crowd server: `why` says so; nothing was written. */
	void (*refused)(void *user, const char *why);
	/** A full sync: the checkpoint of `tick` (one framed Record) and the
	 * primary's history. 0, or -1: the follower stops (the caller said why). */
	int (*checkpoint)(void *user, const uint8_t *checkpoint, size_t len, uint64_t tick, const char *history);
	/** A record to keep (its message bytes), in the primary's order: a
	 * Command or DropOwners of the next tick, its TickEnd, or a ClientIdentity. */
	void (*record)(void *user, const uint8_t *msg, size_t len);
	/** The primary's TickEnd of the next tick (handed to `record` just
	 * before): apply `records` (framed: that tick's commands), step, compare
	 * state_hash -- in turn: the ticks may queue while an earlier one steps.
	 * 0, or -1 (stop). */
	int (*tick)(void *user, uint64_t tick, uint64_t state_hash, const uint8_t *records, size_t len);
	/** Every record of a frame was handed over: commit the journal batch;
	 * returns the follower's own batch number (storage_committed_seq) that
	 * holds them. The frame is acknowledged once repl_follower_durable says
	 * that batch is durable. */
	uint64_t (*batch_done)(void *user);
	/** The ticks the follower completed. */
	uint64_t (*applied_tick)(void *user);
	void *user;
} repl_follower_hooks;

/** Start following cfg->follow (world cfg->follow_world, token
 * cfg->follow_token), saying `history` ("" when the data dir holds none).
 * Connection failures are retried; refusals end in hooks.refused. */
int repl_follower_start(uv_loop_t *loop, const server_config *cfg, const char *history,
                        const repl_follower_hooks *hooks, repl_follower **out);
/** Take in every frame the primary's connection holds now (a promotion
 * applies all it received): their ticks are handed over (hooks.tick). */
void repl_follower_drain(repl_follower *f);
/** Stop following (promotion, shutdown); frees it. The records of the
 * unfinished tick (received, not applied: framed) are handed back (malloc'd; NULL when none). */
void repl_follower_stop(repl_follower *f, uint8_t **pending, size_t *pending_len);

/** The follower's own journal is durable up to its batch `upto` (storage's
 * hooks.durable): the primary's batches it holds are acknowledged. */
void repl_follower_durable(repl_follower *f, uint64_t upto);

typedef struct repl_follower_stats {
	bool connected;     /* streaming from the primary */
	uint64_t lag_ticks; /* the primary's tick it last said minus the tick applied */
	uint64_t syncs;     /* full syncs (checkpoints) taken */
} repl_follower_stats;
void repl_follower_get_stats(const repl_follower *f, repl_follower_stats *out);

#endif
