/* room.h — one world the server holds: its sim (world, navigation, demo),
 * the settings it runs by, its command queue, its fixed-rate tick, its
 * snapshot state, its journal and checkpoints, its status and metrics. The
 * server holds many, by name (server.c); the world "default" is created at
 * start and never closes. Nothing crosses rooms: a session is in one room
 * (session->world), its commands go to that room's queue, and the room's
 * snapshots and events go to its sessions only.
 *
 * Scheduling: every room has its own deadlines, at a phase of its period
 * placed in the widest gap between the other rooms' of that period (so rooms
 * opened together do not tick together), all in the server's tick queue
 * (tick_queue.h): one timer starts every due tick earliest-deadline-first, and
 * a room whose step is done starts the ticks that fell due meanwhile before
 * it sends its snapshots, so one room's fan-out does not delay another's
 * step. Its step runs as one job on libuv's thread pool, shared by all rooms
 * (a room other than the default steps its engine with one worker, so many
 * rooms do not make many engine pools). A step that overruns delays only its
 * own room's next tick: the other rooms' ticks start on the loop, which the
 * step never blocks, and their steps take the pool's other threads. With --heavy-world-nice, a
 * world (other than the default) whose step takes more than half its period
 * of CPU time (its thread's, not the wall time a preempted step inflates)
 * steps on the server's step lane instead (step_lane.h): one thread at a lower
 * CPU priority, so that when the cores are short the kernel serves the light
 * worlds' steps first, and the heavy world slows itself; below a quarter of
 * its period it returns to the pool.
 *
 * Threading: the loop thread, except step_work on a pool thread (then the
 * room's sim is the step's until step_done). */
#ifndef CROWD_SERVER_ROOM_H
#define CROWD_SERVER_ROOM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#include <crowd/wire.h>

#include "commands.h"
#include "config.h"
#include "metrics.h"
#include "overlap_auto.h"
#include "session.h"
#include "sim.h"
#include "snapshots.h"
#include "step_lane.h"
#include "tick_queue.h"

typedef struct server server;

/* Tick lateness (how late a tick started after its deadline) is kept for
 * this many recent ticks: ListWorlds and /metrics give their 99th percentile. */
#define ROOM_LATENESS_SAMPLES 1024u

typedef struct room {
	server *srv;
	char name[CROWD_WORLD_NAME_MAX + 1];
	bool is_default;
	/* the server's settings with this world's own: tick rate, bounds,
	 * avoidance, navigation, agent limit, engine workers, data dir */
	server_config cfg;
	crowd_v1_WorldSettings settings; /* as asked at CreateWorld (kept beside its data) */
	bool persisted;                  /* its data dir holds it: re-opens on restart */

	sim *sim;
	server_metrics *metrics; /* the default world's are the server's; the others' are own_metrics */
	server_metrics own_metrics;
	server_status *status; /* likewise */
	server_status own_status;
	session_list members;   /* the sessions in it (any order): its snapshots, events and timers go to these */
	uint32_t clients;       /* members.count */
	uint64_t idle_since_ns; /* no clients and no agents since (0: in use) */

	command_queue queue;

	/* tick */
	tick_entry tick_at; /* its next deadline in the server's tick queue (queued: ticking) */
	bool timer_open;    /* it ticks: queued, or its tick is running */
	uv_work_t step_work;
	step_lane_job lane_job; /* the step, when it runs on the server's low-priority lane */
	bool heavy;             /* its steps take most of its period: they run on the lane */
	bool step_running;
	int step_status;
	uint64_t period_ns;
	uint64_t next_deadline_ns;
	uint64_t tick_started_ns;
	double step_seconds;
	double table_seconds;
	double step_cpu_seconds; /* the step and table on their thread: what judges a world heavy */
	uint64_t tick_queued_ns;
	uint64_t tick_worked_ns;
	double tick_part[TICK_PARTS];
	FILE *tick_trace;
	uint64_t tick_trace_last[5];
	uint64_t step_hash;
	bool table_ok;
	bool build_table;
	float lateness_ms[ROOM_LATENESS_SAMPLES]; /* a ring of the recent ticks' lateness */
	uint32_t lateness_count, lateness_at;

	/* snapshots */
	world_table table;
	struct snapshot_workers *snapshot_workers;
	crowd_obstacle_set obstacle_set;
	uint32_t obstacle_set_version;
	bool obstacle_set_valid;
	crowd_v1_AgentEvent *events_scratch;
	uint32_t events_scratch_cap;
	/* the tick whose snapshots and events are going out (with --snapshot-overlap,
	 * while the next tick steps): what it recorded when its step was done */
	struct room_sending {
		uint64_t tick, started_ns, snapshots_ns;
		double part[TICK_PARTS];
		crowd_v1_AgentEvent *events;
		uint32_t event_count, events_cap;
	} sending;
	bool finish_waiting; /* a step is done and waits for the last tick's snapshots to be out */
	overlap_auto overlap_auto; /* --snapshot-overlap=auto's expectation of a send at once */

	struct storage *storage; /* --data-dir: its journal and checkpoints; NULL without */

	/* replication (storage/replication.h) */
	struct repl_primary *repl; /* its followers, once one asked (NULL: none ever) */
	bool following;            /* a follower's world: it steps on the primary's TickEnds, not by its timer */
	uint64_t follow_hash;      /* the primary's state hash of the tick being stepped */
	/* a follower steps the primary's ticks on the pool, one at a time in order; the loop only queues them */
	struct follow_tick *follow_head, *follow_tail; /* received, not stepped yet */
	uint32_t follow_queued;
	crowd_buf follow_held;     /* records received while the journal may not take them (framed) */
	bool follow_holding;       /* ... because of a checkpoint due at follow_ckpt_tick, or a full sync waiting */
	uint64_t follow_ckpt_tick; /* the journal ends at this tick's TickEnd until the world is copied there */
	uint32_t follow_max_client; /* the newest client id the primary's identities named */
	struct room_follow_sync {
		bool pending;    /* a full sync came: installed on the pool once no step runs */
		bool installing; /* on the pool now (step_running meanwhile) */
		uint8_t *data;   /* the pending one's checkpoint */
		size_t len;
		uint64_t tick;
		char history[33];
		/* the one being installed (moved from the above) */
		uint8_t *idata;
		size_t ilen;
		uint64_t itick;
		char ihistory[33];
		uv_work_t work;
		server_config cfg; /* r->cfg with the checkpoint's settings (the pool's copy) */
		int rc;
		struct storage *st;
		sim *sim;
		uint64_t state_hash;
	} follow_sync;
	struct {
		bool pending; /* Promote came: it finishes once every received tick is stepped */
		uint8_t *records; /* the unfinished tick's (framed) */
		size_t len;
		uint32_t client_id, request_id; /* who asked: answered then */
	} promote;

	bool opening;        /* CreateWorld: its mesh is being built on the pool (step_running meanwhile) */
	int open_status;     /* what that build returned */
	uint32_t creator_id; /* who asked, answered when it is open */
	uint32_t creator_request;
	bool closing;     /* closed: freed once its step and timer are done */
	bool delete_data; /* and its data dir removed */
} room;

/** A room named `name` run by the server's settings and `settings` (0 / unset
 * fields: the server's), recovered from its data dir when the server has one
 * (the default world: DIR itself; another: DIR/worlds/NAME, its settings
 * written there). Not ticking yet (room_start). 0, or -1 with err. */
int room_create(server *srv, const char *name, const crowd_v1_WorldSettings *settings, room **out, char *err,
                size_t errlen);

/** Build its navigation mesh (when navigation is on): seconds for a large
 * world, so a world opened while the server runs builds it on the pool
 * (the room `opening` meanwhile). 0, or -1 (logged). */
int room_start_navigation(room *r);

/** Start its tick: its first deadline at its phase (tick_phase_place among
 * the rooms ticking at its period), within one period. */
void room_start(room *r);

/** Start every room's tick that is due, earliest deadline first, and set the
 * server's tick timer for the next (the timer's callback; also called before
 * a room's snapshots go out). */
void rooms_run_due_ticks(server *srv);

/** The server stops: no room ticks again (their deadlines leave the queue). */
void rooms_stop_ticks(server *srv);

/** Close it: stop its tick, and free it once no step runs (its storage
 * written and closed; delete_data: its data dir removed). Sessions must have
 * left already. */
void room_close(room *r, bool delete_data);

/** Free at once (after uv_run returned, or when room_start never ran). */
void room_destroy(room *r);

/** Apply every queued command and answer each (the tick does this first; tests call it). */
void room_apply_commands(room *r);

/** A session enters or leaves it (session_host_ops.enter_world / leave_world). */
bool room_add_member(room *r, session *s);
void room_remove_member(room *r, session *s);

/* ---- replication: a primary's world */

/** The session client_id follows this world: a checkpoint at the next tick
 * boundary, then every journal batch. False when out of memory. */
bool room_add_follower(room *r, uint32_t client_id);
/** A follower holds the batches up to seq and applied `tick`. */
void room_follower_ack(room *r, uint32_t client_id, uint64_t seq, uint64_t tick);

/* ---- replication: a follower's world (the server's follower hooks) */

/** A full sync: the data dir takes the primary's checkpoint (and history),
 * the world is recovered from it. 0, or -1 (logged). */
int room_follow_checkpoint(room *r, const uint8_t *checkpoint, size_t len, uint64_t tick, const char *history);
/** A record received: journaled (an identity is kept for resume). */
void room_follow_record(room *r, const uint8_t *msg, size_t len);
/** The records of a frame are all in: commit them to the journal. Returns
 * the journal's batch that holds them (storage_committed_seq; 0 without storage). */
uint64_t room_follow_commit(room *r);
/** The primary's tick: apply its records, step, compare the state hash (a
 * mismatch stops the process: a log line and exit status 3). 0, or -1. */
int room_follow_tick(room *r, uint64_t tick, uint64_t state_hash, const uint8_t *records, size_t len);
/** Promotion: apply the unfinished tick's records (framed), tick by its own timer from here. */
void room_promote(room *r, const uint8_t *pending, size_t len);
/** Promote once every received tick is stepped (r->promote filled in):
 * server_promote_done is called then (at once when nothing is queued). */
void room_promote_when_drained(room *r);
/** Received ticks not stepped yet (queued or stepping). */
uint32_t room_follow_backlog(const room *r);

/** The 99th percentile of its recent ticks' lateness, in milliseconds. */
float room_lateness_p99_ms(const room *r);

/** The world's settings as a data dir keeps them (DIR/worlds/NAME/world.settings). */
int room_settings_save(const char *dir, const crowd_v1_WorldSettings *s);
int room_settings_load(const char *dir, crowd_v1_WorldSettings *s);

#endif
