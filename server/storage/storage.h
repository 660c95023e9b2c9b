/* storage.h — persistence (--data-dir): the journal of every world-changing
 * command in the order the tick applied it, the state hash after every tick,
 * checkpoints of the whole world every --checkpoint-seconds of running (or
 * --checkpoint-every ticks), recovery at start-up, and the identities clients
 * may resume.
 *
 * Threading: every function here is for the loop thread. Records are encoded
 * on the loop thread into a batch (small: commands and one TickEnd a tick);
 * storage_commit hands the batch to the writer thread, which writes it and,
 * with --fsync always, fsyncs it (one group commit per tick). Checkpoints are
 * copied at a tick boundary (orca_world_save) and encoded and written by the
 * writer thread, so the tick never waits for the disk.
 *
 * With --fsync always the server answers a world-changing request only once
 * its record is durable (storage_defer_*), and sends a tick's snapshots only
 * once that tick's commands are durable (storage_hold_tick), so no client ever
 * sees a state that a crash could take back. While the journal cannot be
 * written, world-changing requests get ERROR_STORAGE_UNAVAILABLE; what was
 * already accepted stays in memory and is written when the disk comes back. */
#ifndef CROWD_STORAGE_STORAGE_H
#define CROWD_STORAGE_STORAGE_H

#include <stdbool.h>
#include <stdint.h>

#include <crowd/wire.h>

#include "commands.h"
#include "metrics.h"
#include "sim.h"

#include <uv.h>

typedef struct storage storage;

/** A reply that waited for its tick's group commit (--fsync always). */
typedef struct storage_reply {
	uint32_t client_id, request_id;
	bool ok; /* Ack with ids; else Error{code, index, message} */
	int code;
	uint32_t index;
	const char *message;
	const uint32_t *ids;
	uint32_t id_count;
} storage_reply;

/** How storage reaches the rest of the server (it knows no sessions). */
typedef struct storage_hooks {
	/** Answer a client, if it is still there. */
	void (*reply)(void *user, const storage_reply *r);
	/** A tick held by storage_hold_tick may go on (send its snapshots). */
	void (*resume)(void *user);
	void *user;
	/** Replication (may be NULL): a batch of framed records, as it goes to the
	 * writer (storage_commit), numbered from 1 in this process. */
	void (*batch)(void *user, const uint8_t *records, size_t len, uint64_t seq);
	/** (may be NULL) The batches up to `upto` (storage_committed_seq) are
	 * durable as --fsync says: written, and fsynced with always. Called on
	 * the loop thread when that point moves (a follower's FollowAck). */
	void (*durable)(void *user, uint64_t upto);
} storage_hooks;

/** What recovery hands back: a new sim, run by the server's settings, at the
 * recovered tick (with the unfinished tick's acknowledged commands applied
 * again), and the state hash of that tick. sim is NULL when nothing was recovered. */
typedef struct storage_recovery {
	sim *sim;
	uint64_t state_hash;
} storage_recovery;

/** Open cfg->data_dir: recover the newest valid checkpoint and the journal
 * after it into a new sim (printing "recovered tick T agents A state_hash
 * 0x... from checkpoint C" on stdout), or, for an empty dir, write the
 * checkpoint of `current` (tick 0). A checkpoint or segment still named *.tmp
 * was being written when the server stopped: logged as incomplete and
 * removed. Then start the writer thread. 0, or -1 (logged; a recovered sim
 * is still handed back, for the caller to free). */
int storage_open(const server_config *cfg, uv_loop_t *loop, const sim *current, const storage_hooks *hooks,
                 storage **out, storage_recovery *recovered);

/** storage_open with a NULL loop does the work that needs no loop (any
 * thread: the data dir, recovery); this, on the loop thread, starts the
 * writer. 0, or -1 (logged). */
int storage_attach(storage *st, uv_loop_t *loop);
/** The settings it reads from now on (a copy's, moved to where it stays). */
void storage_use_config(storage *st, const server_config *cfg);

/** The server is closing its handles: commit the last tick's records, let
 * the writer write and fsync them, answer what became durable, stop. */
void storage_stop(storage *st);

/** Write what is pending, fsync, stop the writer thread, free. NULL allowed. */
void storage_close(storage *st);

/** The journal can be written: world-changing requests are accepted. */
bool storage_available(const storage *st);

/** Journal a command the tick just applied with success (tick = ticks completed + 1). */
void storage_journal_command(storage *st, const command *c);
/** Journal the removal of every agent of these clients (one pass, as applied). */
void storage_journal_drop_owners(storage *st, const uint32_t *client_ids, uint32_t count);
/** True for the first tick after a recovery: it applies only the recorded
 * commands of the tick that never finished (already applied by recovery),
 * none that arrived since, so that it is the tick clients may have seen. */
bool storage_quiet_tick(storage *st);
/** Hand the batch to the writer (the tick calls this after applying commands). */
void storage_commit(storage *st);
/** The number of the last batch storage_commit handed over (0: none yet):
 * hooks.durable says when it is durable. */
uint64_t storage_committed_seq(const storage *st);
/** After a step of sim to `tick`: journal its hash; start a checkpoint of
 * sim when one is due. */
void storage_tick_end(storage *st, const sim *sm, uint64_t tick, uint64_t state_hash, uint32_t agents);

/** With --fsync always: replies of this tick wait for its group commit. */
bool storage_defers_replies(const storage *st);
void storage_defer_ack(storage *st, uint32_t client_id, uint32_t request_id, const uint32_t *ids, uint32_t count);
void storage_defer_error(storage *st, uint32_t client_id, uint32_t request_id, int code, uint32_t index,
                         const char *message);

/** With --fsync always: true when the tick's commands are not durable yet;
 * hooks.resume is called once they are (then send the snapshots). */
bool storage_hold_tick(storage *st);

/** A client was welcomed: give it a fresh resume key (32 hex digits and a
 * NUL) and journal the identity. False when no key could be made. */
bool storage_new_identity(storage *st, uint32_t client_id, uint32_t role, char key_out[33]);
/** The client id and role a resume key names; false when unknown. */
bool storage_find_identity(const storage *st, const char *key, uint32_t *client_id, uint32_t *role);

/* ---- replication (replication.h): a follower keeps the primary's history */

/** The data dir's history id (32 hex digits): made with its first
 * checkpoint, kept by every recovery, taken by a follower from its primary. */
const char *storage_history_id(const storage *st);
/** The history id of the data dir `dir` without opening it; false when it holds none. */
bool storage_read_history(const char *dir, char out[33]);
/** A follower's full sync: empty `dir` of checkpoints and journal segments,
 * then write `history` and the checkpoint bytes (one framed Record) as the
 * checkpoint of `tick`. storage_open then recovers exactly it. 0, or -errno. */
int storage_install_checkpoint(const char *dir, const char *history, const uint8_t *checkpoint, size_t len,
                               uint64_t tick);
/** The checkpoint of sm as it is now (a tick boundary): one framed Record. */
bool storage_encode_checkpoint(const storage *st, const sim *sm, uint64_t state_hash, crowd_buf *out);
/** A follower journaled the primary's TickEnd of `tick` (the records it
 * receives are journaled as they come, TickEnds included): true when a
 * checkpoint is due at that tick. The journal is then committed up to it, and
 * nothing more may be journaled until storage_follow_tick_done(.., true)
 * copied the world at that tick. */
bool storage_follow_checkpoint_due(storage *st, uint64_t tick);
/** A follower's world stepped to `tick` (its TickEnd is in the journal
 * already); checkpoint: the one storage_follow_checkpoint_due asked for. */
void storage_follow_tick_done(storage *st, const sim *sm, uint64_t tick, uint64_t state_hash, bool checkpoint);
/** A follower journals a record it received (its message bytes): a command
 * or DropOwners of the next tick, or a ClientIdentity (kept for resume).
 * Returns the client id of an identity (0 for other records). */
uint32_t storage_journal_replicated(storage *st, const uint8_t *msg, size_t len);
/** With --min-followers-ack: batches up to seq are held by enough followers. */
void storage_set_replicated(storage *st, uint64_t seq);
/** The next tick applies only what the sim already holds (a promoted follower's unfinished tick). */
void storage_quiet_next_tick(storage *st);

/** Metrics for /metrics (loop thread): storage_stats is in metrics.h. */
void storage_get_stats(const storage *st, storage_stats *out);
/** Count a request refused with ERROR_STORAGE_UNAVAILABLE. */
void storage_count_refused(storage *st);

#endif
