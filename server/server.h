/* server.h — the crowd server: one libuv loop that owns the worlds (room.h:
 * each with its sim, command queue, tick and snapshots) and the sessions.
 * Sessions and transports see the server only as its session_host
 * (session.h), whose ops server.c implements; extensions (HTTP: http_ext.c,
 * Agones: agones_server.c, storage) hook into start-up and shutdown through
 * server_extension.
 *
 * Threading: everything here belongs to the loop thread. While a world's
 * step runs on the thread pool (room->step_running) that world must not be
 * touched; read its `status` instead, which the loop thread updates after
 * every tick.
 * A tick's snapshots are encoded from jobs that hold what they need (the
 * area, the session's baseline, lent): snapshots_send with a helper thread
 * while the loop waits, snapshots_start on the thread pool while the loop goes
 * on; the loop alone sends and gives the baselines back. */
#ifndef CROWD_SERVER_SERVER_H
#define CROWD_SERVER_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#include <crowd/wire.h>
#include <orca/orca.h>

#include "aoi_grid.h"
#include "commands.h"
#include "config.h"
#include "metrics.h"
#include "room.h"
#include "session.h"
#include "sim.h"
#include "snapshots.h"

#ifndef CROWD_VERSION
#define CROWD_VERSION "0.0.0"
#endif

/** A piece of the server living on the same loop (HTTP/metrics, Agones...).
 * Register with server_add_extension before server_start. */
typedef struct server_extension {
	const char *name;
	void *state;
	/** Called by server_start once the TCP listener is bound. Return 0, or -1 to abort start-up. */
	int (*start)(server *srv, void *state);
	/** Shutdown began: stop accepting; clients are being told. May be NULL. */
	void (*drain)(server *srv, void *state);
	/** The server is closing its last handles: close yours (free in their close callbacks). May be NULL. */
	void (*stop)(server *srv, void *state);
	/** A world opened or closed (server_world_count and the names changed). May be NULL. */
	void (*on_worlds_changed)(server *srv, void *state);
} server_extension;

#define SERVER_MAX_EXTENSIONS 8

struct tcp_listener;

struct server {
	uv_loop_t *loop;
	const server_config *cfg;
	server_metrics metrics; /* the server's counters, and the default world's tick series */
	server_status status;   /* the default world's tick, agents and hash; the server's connections */

	/* the sessions, and what they see of the server (server.c implements its ops) */
	session_host host;

	/* the worlds (room.h), ascending name; the default world is one of them */
	room **rooms;
	uint32_t room_count, room_cap;
	room *world;             /* the default world */
	uint32_t next_client_id; /* client ids are the server's: never reused in any world */
	struct step_lane *lane;  /* heavy worlds' steps, at low priority (step_lane.h); NULL: none */
	struct repl_follower *follower; /* --follow: the stream from the primary, until promoted */
	tick_queue ticks;        /* every ticking world's next deadline (room.c schedules) */
	uv_timer_t tick_timer;   /* fires at the earliest of them */
	bool tick_timer_open;
	bool ticks_running; /* rooms_run_due_ticks is on the stack */

	/* start / stop */
	struct tcp_listener *tcp;
	uv_signal_t sigint, sigterm;
	uv_timer_t shutdown_timer;
	uint64_t shutdown_deadline_ms; /* uv_now() time */
	bool started;
	bool stopping; /* handles are being closed */
	server_extension extensions[SERVER_MAX_EXTENSIONS];
	int extension_count;
};

/** Open the default world (world, demo crowd, navigation), or recover it
 * from --data-dir, and every world persisted in DIR/worlds/. cfg must outlive
 * the server. */
int server_init(server *srv, uv_loop_t *loop, const server_config *cfg);

/** Register an extension (before server_start). Returns 0 or -1 when full. */
int server_add_extension(server *srv, const server_extension *ext);

/** Bind the TCP listener (prints "listening tcp HOST:PORT" on stdout), start
 * extensions, signals and the tick. Returns 0 or a negative libuv error. */
int server_start(server *srv);

/** Begin a graceful shutdown (what SIGINT/SIGTERM do): stop accepting, send
 * Error{SHUTTING_DOWN} to every client, flush for at most shutdown-timeout,
 * then close every handle so uv_run returns. */
void server_shutdown(server *srv);

/** Free everything (after uv_run returned). */
void server_destroy(server *srv);

/** No network: run cfg->headless_ticks ticks back to back (demo crowd if
 * configured) and print "ticks N agents A state_hash 0x..." on stdout. */
int server_run_headless(const server_config *cfg);

/** Apply every command queued for the default world and answer each (its tick does this first; tests call it). */
void server_apply_commands(server *srv);

/** Worlds open now (the default world counts), the most the server may hold
 * (--max-worlds), and the name of open world i < server_world_count (NULL past it). */
uint32_t server_world_count(const server *srv);
uint32_t server_world_capacity(const server *srv);
const char *server_world_name(const server *srv, uint32_t i);
/** Tell every extension's on_worlds_changed hook that a world opened or closed. */
void server_worlds_changed(server *srv);

/** The open world `name`, or NULL. */
room *server_find_world(const server *srv, const char *name);
/** Open a world (its settings: 0 fields take the server's; NULL: all the
 * server's), recovered from its data dir when there is one; ticking at once
 * when the server has started. The caller checked the name, the limit and
 * that none of that name is open. 0, or -1 with err. */
int server_open_world(server *srv, const char *name, const crowd_v1_WorldSettings *settings, room **out, char *err,
                      size_t errlen);
/** Close a world other than the default: its clients get Error{WORLD_CLOSED}
 * and are closed, its data is written (and removed with delete_data). */
void server_close_world(server *srv, room *r, bool delete_data);

/** A follower's promotion (room_promote_when_drained): every received tick is
 * stepped; become the primary and answer who asked. */
void server_promote_done(server *srv);
/** uv_hrtime(): monotonic nanoseconds. */
uint64_t server_now_ns(void);

#endif
