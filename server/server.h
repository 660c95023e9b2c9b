/* server.h — the crowd server: one libuv loop that owns the world, the
 * sessions, the command queue, the tick and the snapshots. Sessions and
 * transports see the server only as its session_host (session.h), whose ops
 * server.c implements; extensions (HTTP: http_ext.c, Agones: agones_server.c,
 * storage) hook into start-up and shutdown through server_extension.
 *
 * Threading: everything here belongs to the loop thread. While a step runs on
 * the thread pool (srv->step_running) the world must not be touched; read the
 * `status` fields instead, which the loop thread updates after every tick.
 * snapshots_send lends area subscribers' encoding (their baselines) to a helper
 * thread and waits for it before sending. */
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
	sim *sim; /* the world, its navigation and demo, the owner ids (sim/sim.h) */
	server_metrics metrics;
	server_status status;

	/* the sessions, and what they see of the server (server.c implements its ops) */
	session_host host;

	command_queue queue;

	/* tick */
	uv_timer_t tick_timer;
	uv_work_t step_work;
	bool step_running;
	int step_status;
	uint64_t period_ns;
	uint64_t next_deadline_ns;
	uint64_t tick_started_ns;
	double step_seconds;  /* navigation + step, as crowd_step_seconds_total always counted */
	double table_seconds;
	uint64_t tick_queued_ns;   /* the step handed to the pool */
	uint64_t tick_worked_ns;   /* the pool thread's work done */
	double tick_part[TICK_PARTS]; /* this tick's parts (seconds), added to the metrics at its end */
	FILE *tick_trace; /* --tick-trace: one line per tick (NULL: off) */
	uint64_t tick_trace_last[5]; /* the counters it shows per tick, at the last line */
	uint64_t step_hash; /* computed on the worker after the step */
	bool table_ok;
	bool build_table; /* the step also builds `table` (someone subscribed) */

	/* snapshots */
	world_table table;
	struct snapshot_workers *snapshot_workers; /* area snapshots' encoders and helper thread */
	crowd_obstacle_set obstacle_set;
	uint32_t obstacle_set_version;
	bool obstacle_set_valid;
	crowd_v1_AgentEvent *events_scratch; /* one session's share of the tick's AgentEvents */
	uint32_t events_scratch_cap;
	crowd_buf snapshot_buf; /* snapshots_send encodes here */

	/* start / stop */
	struct tcp_listener *tcp;
	uv_signal_t sigint, sigterm;
	uv_timer_t shutdown_timer;
	uint64_t shutdown_deadline_ms; /* uv_now() time */
	bool started;
	bool stopping; /* handles are being closed */
	server_extension extensions[SERVER_MAX_EXTENSIONS];
	int extension_count;

	struct storage *storage; /* --data-dir: journal and checkpoints (server/storage); NULL without */
};

/** Create the sim (world, demo crowd, navigation), or recover it from
 * --data-dir. cfg must outlive the server. */
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

/** Apply every queued command and answer each (the tick does this first; tests call it). */
void server_apply_commands(server *srv);
/** uv_hrtime(): monotonic nanoseconds. */
uint64_t server_now_ns(void);

/** Worlds open now (the default world counts), the most the server may hold
 * (--max-worlds), and the name of open world i < server_world_count (NULL past it). */
uint32_t server_world_count(const server *srv);
uint32_t server_world_capacity(const server *srv);
const char *server_world_name(const server *srv, uint32_t i);
/** Tell every extension's on_worlds_changed hook that a world opened or closed. */
void server_worlds_changed(server *srv);

#endif
