/* load.h — crowd-load's shared state: the scenario (options), one connection's
 * state and measurements, and the run as a whole. The modules: options
 * (flags), setup (agents from a *_setup.csv, split into compact tiles), conn
 * (one crowd.v1 TCP connection and what it measures), report (progress line,
 * final table, JSON), main (the loop, ramp-up, duration, thresholds), worlds
 * (--worlds: which world each connection loads, and what ListWorlds said). */
#ifndef CROWD_LOAD_H
#define CROWD_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#include "crowd/wire.h"
#include "hist.h"
#include "load_trips.h"
#include "load_ws.h"

#define LOAD_ERROR_CODES 36 /* crowd_v1_ErrorCode values 0..34, and one for "other" */

typedef enum load_area_kind {
	LOAD_AREA_WORLD = 0, /* subscribe to the whole world */
	LOAD_AREA_WINDOW,    /* a window of window_w x window_h, random or around the tile */
	LOAD_AREA_NONE       /* no subscription */
} load_area_kind;

typedef struct load_options {
	char host[256];
	int port;
	/* --server with several comma-separated addresses: at start the first that accepts a
	 * connection becomes host:port (a primary and its standbys) */
	char server_list[1024];
	uint32_t connections;
	uint32_t agents_per_conn;
	uint32_t spawn_batch;
	double retarget_s;        /* 0: never */
	uint32_t retarget_count;  /* agents per SetTargets */
	double retarget_distance; /* how far away a new target is placed */
	load_area_kind area;
	double window_w, window_h;
	uint32_t divisor;  /* 0: server default */
	double duration_s; /* measured time, after ramp-up and set-up */
	double ramp_up_s;
	double ping_s;            /* 0: no pings */
	double visible_timeout_s; /* a retarget not seen by then counts as unseen */
	char token[65];
	char name[33];
	char setup_path[1024];
	char json_path[1024];
	bool local_targets; /* agents walk to points in their own region, not the set-up goals */
	bool websocket;     /* WebSocket (GET ws_path on the HTTP port, subprotocol crowd.v1) instead of TCP */
	char ws_path[256];
	bool keep_agents;
	bool quiet;
	uint32_t worlds;       /* --worlds N: spread connections over N worlds it creates; 0: the default world */
	char world_prefix[24]; /* their names: PREFIX0 .. PREFIX(N-1) */
	double max_p99_ms;     /* <0: no threshold */
	long long max_errors; /* <0: no threshold */
	uint64_t seed;
	/* --trips: random trips through the server's --map city */
	bool trips;
	double city_block, city_street;
	double trip_reach; /* a trip ends at most this far away along each axis */
	double trip_speed; /* the agents' cruising speed: free-walk time = length / speed */
	double time_horizon, time_horizon_obst; /* >0: every spawned agent's (else the server's defaults) */
	uint32_t trips_each;      /* >0: the measured time ends once every agent has finished this many trips */
	long long max_late_trips; /* <0: no threshold; else exit 1 (and stop at once) past this many trips 60 s late */
} load_options;

/** Parse argv into opt. Returns 0 to run, 1 when --help was printed, -1 on error (message printed). */
int load_options_parse(load_options *opt, int argc, char **argv);

/* ------------------------------------------------------------------ set-up */

typedef struct load_agent_spec {
	float x, y, goal_x, goal_y;
} load_agent_spec;

/** Agents to spawn for every connection (from a *_setup.csv or random). */
typedef struct load_plan {
	load_agent_spec *agents; /* all agents, grouped by connection */
	uint32_t *first;         /* connection i spawns agents[first[i] .. first[i+1]) */
	float *window;           /* 4 per connection: min_x, min_y, max_x, max_y, or NULL */
	uint32_t connections;
	bool from_file;
} load_plan;

/** Read a set-up CSV (agent_id,x,y,goal_x,goal_y) and split its agents into
 * `connections` compact tiles of (nearly) equal count; each tile's window is
 * w x h centred on the tile (w, h <= 0: the tile's own bounds). -1 on error. */
int load_plan_from_csv(load_plan *plan, const char *path, uint32_t connections, uint32_t max_per_conn, double w,
                       double h);
void load_plan_free(load_plan *plan);

/* ------------------------------------------------------------------ measurements */

/** What one connection (and, merged, the run) measured. Latencies in µs. */
typedef struct load_stats {
	load_hist ack_us;      /* request sent → Ack/Error received */
	load_hist visible_us;  /* SetTargets sent → first snapshot showing the agent turned */
	load_hist applied_us;  /* SetTargets sent → first snapshot after its Ack (stepped with it applied) */
	load_hist interval_us; /* between consecutive snapshots */
	load_hist jitter_us;   /* |interval - expected interval| */
	load_hist arrival_us;  /* SetTargets sent → the agent's ARRIVED event (navigation, minor 1) */
	uint64_t bytes_in, bytes_out;
	uint64_t snapshots, keyframes, snapshot_bytes, snapshot_agents;
	uint64_t skipped; /* snapshots missing from the tick sequence */
	uint64_t errors[LOAD_ERROR_CODES];
	uint64_t error_total;
	uint64_t decode_failures;
	uint64_t disconnects; /* closed by the server or the network while running */
	uint64_t connect_failures;
	uint64_t requests, acks;
	uint64_t retargets, retarget_agents;
	uint64_t visible_seen, visible_unseen;
	uint64_t agents_spawned;
	uint64_t pongs;
	/* navigation events (minor 1) for retargeted agents */
	uint64_t arrivals;          /* ARRIVED after a retarget, in time */
	uint64_t superseded;        /* retargeted again before arriving */
	uint64_t unreachable, stuck;
	/* --trips: trips that ended with ARRIVED in the measured time (simulated time, from the events' ticks) */
	load_hist trip_us;               /* a trip's duration, simulated µs */
	uint64_t trips, trips_within_2x; /* finished; of those, within twice their free-walk time */
	uint64_t trips_late_60;          /* finished more than 60 s after their free-walk time */
	uint64_t trips_open,
	    trips_open_late_60;    /* at the end: still walking; of those, 60 s past their free-walk time */
	uint64_t trips_unmeasured; /* ended after an UNREACHABLE, or whose start was not known */
	double trip_free_s_sum;
} load_stats;

bool load_stats_init(load_stats *s, uint32_t sub_bits);
void load_stats_free(load_stats *s);
void load_stats_reset(load_stats *s);
/** Add src's counters (not its histograms) into dst. */
void load_stats_add_counters(load_stats *dst, const load_stats *src);

/* ------------------------------------------------------------------ connections */

typedef enum load_conn_state {
	LOAD_CONN_IDLE = 0, /* not opened yet */
	LOAD_CONN_CONNECTING,
	LOAD_CONN_HELLO,    /* Hello sent, waiting for Welcome */
	LOAD_CONN_SPAWNING, /* SpawnAgents sent, waiting for every Ack */
	LOAD_CONN_RUNNING,
	LOAD_CONN_CLOSING,
	LOAD_CONN_CLOSED
} load_conn_state;

typedef struct load_pending_request {
	uint32_t request_id;
	uint8_t kind; /* ClientMessage oneof tag */
	uint64_t sent_ns;
} load_pending_request;

typedef struct load_pending_visible {
	uint32_t agent_index; /* into own_ids */
	float target_x, target_y;
	float vx0, vy0; /* its velocity in the snapshot the command was based on */
	uint32_t request_id;
	bool acked; /* only snapshots after the Ack (sent when the command is applied) count */
	uint64_t sent_ns;
} load_pending_visible;

struct load_run;

typedef struct load_conn {
	struct load_run *run;
	uint32_t index;
	load_conn_state state;
	uv_tcp_t tcp;
	uv_connect_t connect_req;
	uv_timer_t timer; /* retarget and ping pacing */
	bool timer_open, tcp_open;
	crowd_frame_splitter splitter;
	crowd_view view;
	crowd_obstacle_set obstacles;
	load_ws ws; /* with --ws */
	uint64_t rng;

	/* from Welcome */
	uint32_t client_id;
	float precision;
	uint32_t tick_rate_hz, divisor;
	float world[4];

	float region[4]; /* where this connection's agents live and its window, if any */
	uint32_t *own_ids;
	uint32_t *own_pending; /* per own agent: its slot in `visible`, or UINT32_MAX */
	uint64_t *own_target_ns; /* per own agent: when its last SetTargets was sent (0: none awaiting ARRIVED) */
	/* --trips, per own agent: the tick its trip started (0: unknown), its free-walk time, UNREACHABLE seen */
	uint64_t *trip_start_tick;
	float *trip_free_s;
	uint8_t *trip_unreachable;
	uint64_t event_tick; /* the last AgentEvents' tick */
	/* --trips, first trips (from the spawn): each spawned agent's free-walk
	 * time in the order sent, and the spawn batches answered so far; the
	 * trip starts at the tick reckoned from Welcome's tick and the time since */
	float *first_free_s;
	uint16_t *trips_done; /* per own agent: trips finished in the measured time (up to trips_each) */
	uint8_t *trip_late;   /* per own agent: its trip was counted in late_now */
	uint32_t agents_done; /* own agents with trips_each trips finished */
	uint32_t late_now;    /* trips now 60 s past their free-walk time: finished so, or still walking */
	uint32_t first_free_count, spawn_batch, spawn_answered;
	uint64_t welcome_tick, welcome_ns;
	load_city city;
	uint32_t own_count, own_cap, spawn_pending;
	uint32_t retarget_cursor;

	uint32_t next_request_id;
	load_pending_request *requests; /* ring of requests awaiting an answer */
	uint32_t req_head, req_count, req_cap;
	load_pending_visible *visible;
	uint32_t visible_count, visible_cap;
	uint64_t *await_snapshot; /* send times of acked SetTargets waiting for the next snapshot */
	uint32_t await_count, await_cap;

	uint64_t last_tick;
	uint64_t last_snapshot_ns;
	uint64_t next_retarget_ns, next_ping_ns;

	load_stats stats;
	bool in_world; /* --worlds: a leader has created and joined its world */
} load_conn;

/* One world as ListWorlds reported it at the end of the measured time. */
typedef struct load_world_info {
	char name[33];
	uint32_t agents, clients, tick_rate;
	float lateness_p99_ms;
	uint64_t tick;
} load_world_info;

typedef struct load_run {
	uv_loop_t *loop;
	load_options opt;
	load_plan plan;
	struct sockaddr_storage addr;
	load_conn *conns;
	uint32_t opened, running, closed;
	uint32_t running_at_stop; /* connections still running when measuring ended */
	bool measuring;           /* false during ramp-up and spawning: stats are reset when it starts */
	bool trips_all_done;      /* --trips-each: every agent finished its trips (what ended the measured time) */
	bool draining;            /* measured time over: waiting for answers to requests in flight */
	bool stopping;            /* closing every connection */
	uint64_t start_ns, measure_start_ns, measure_end_ns;
	load_stats total;    /* histograms of every connection, fine-grained; counters summed at the end */
	load_stats interval; /* histograms since the last progress line */
	load_stats last_sum; /* counters summed at the last progress line (no histograms) */
	int threshold_failures;
	char failure[320];      /* the first reason a connection did not get to run, e.g. "connect
	                           127.0.0.1:7999: connection refused"; empty: none */
	uint32_t failed;        /* connections that never got to run */
	/* --worlds */
	uint32_t worlds_ready, worlds_failed; /* leaders that joined their world, or gave up */
	bool world_list_asked;
	load_world_info *world_infos;
	uint32_t world_info_count, max_worlds;
} load_run;

/** Count a connection that did not get to run, and keep the first reason
 * (printf-style; printed when no connection ran, or beside the table). */
void load_run_failed(load_run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Prepare connection i (no I/O yet). */
bool load_conn_init(load_conn *c, load_run *run, uint32_t index);
/** Start connecting. */
void load_conn_open(load_conn *c);
/** Close politely (idempotent); frees when libuv is done with the handles. */
void load_conn_close(load_conn *c);
void load_conn_free(load_conn *c);
/** Send ListWorlds (its WorldList goes to load_worlds_record_list). False if it could not be sent. */
bool load_conn_list_worlds(load_conn *c);

/* ------------------------------------------------------------------ worlds (--worlds) */

bool load_worlds_enabled(const load_run *run);
/** The world connection `conn` loads, and whether it creates it (the first of each world). */
uint32_t load_world_of(const load_run *run, uint32_t conn);
bool load_world_leader(const load_run *run, uint32_t conn);
void load_world_name(const load_run *run, uint32_t world, char *out, size_t cap);
/** Connections that create a world: min(--worlds, --connections). */
uint32_t load_worlds_leaders(const load_run *run);
/** A connection naming its world at Hello waits until every world is created. */
bool load_worlds_may_open(const load_run *run, uint32_t conn);
/** At the end of the measured time: one running connection asks ListWorlds. */
void load_worlds_ask_list(load_run *run);
void load_worlds_record_list(load_run *run, const crowd_v1_WorldList *list);
/** The worlds' lines of the final table, and the "worlds" member of the JSON. */
void load_worlds_report(const load_run *run, FILE *out);
void load_worlds_report_json(const load_run *run, FILE *f);
/** --trips, at the end: count the trips still walking, and those 60 s past their free-walk time. */
void load_conn_trips_open(load_conn *c);

/** --trips-each: every agent of every connection has finished its trips.
 * --max-late-trips: more trips than that are 60 s late (finished or still walking). */
bool load_run_trips_done(const load_run *run);
bool load_run_trips_too_late(const load_run *run);

/* ------------------------------------------------------------------ report */

/** One progress line to stderr, for the time since the last one. */
void load_report_progress(load_run *run, double elapsed_s, double since_s);
/** The final table to `out`, and JSON to opt.json_path if set. `total` holds
 * the merged stats. Returns 0 or -1 if the JSON could not be written. */
int load_report_final(load_run *run, const load_stats *total, double measured_s, FILE *out);
const char *load_error_name(uint32_t code);
/** Add every connection's counters into total (its histograms are fed live). */
void load_report_sum(load_run *run, load_stats *total);

#endif /* CROWD_LOAD_H */
