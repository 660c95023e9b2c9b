/* metrics.h — every counter the server keeps, in one plain struct that the
 * loop thread updates (no atomics: only the loop thread reads or writes it).
 * The HTTP side renders it as Prometheus text; names for every label value
 * are here so renderers need no switch statements of their own. */
#ifndef CROWD_SERVER_METRICS_H
#define CROWD_SERVER_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "agones.h"
#include "crowd.pb.h"
#include "transport.h" /* transport_kind, disconnect_reason: counted by these */

/** Role index for metrics: 0 = no Hello yet, then crowd_v1_Role values 1..3. */
#define METRICS_ROLE_COUNT 4

/** Upper bounds (seconds) of the tick duration histogram buckets; +Inf is implied after the last. */
#define METRICS_TICK_BUCKETS 19
extern const double metrics_tick_bucket_bounds[METRICS_TICK_BUCKETS];

#define METRICS_ERROR_CODES (_crowd_v1_ErrorCode_MAX + 1)

/** Navigation's counters (server/sim/navigation.c), copied at the end of
 * every tick on the loop thread (the update runs on the step's thread, so
 * /metrics never reads navigation itself). All zero with --navigation=false. */
typedef struct metrics_navigation {
	uint64_t enabled;       /* 1 with navigation on */
	uint64_t agents;        /* navigating now (gauges up to tiles_pending) */
	uint64_t polygons;
	uint64_t paths_pending;
	uint64_t tiles_pending;
	uint64_t paths_planned; /* counters from here on */
	uint64_t tiles_built;
	uint64_t replans[4];    /* mesh_changed, off_corridor, no_progress, next_part */
	uint64_t events[4];     /* by AgentEventKind: [1] arrived, [2] unreachable, [3] stuck */
} metrics_navigation;

/** The parts of a tick, in the order they run (see tick_part_seconds_sum). */
typedef enum tick_part {
	TICK_APPLY, TICK_WAIT, TICK_NAVIGATION, TICK_STEP, TICK_TABLE, TICK_HANDOFF, TICK_SNAPSHOTS, TICK_EVENTS, TICK_PARTS
} tick_part;

/** Replication (server/storage/replication.c): a follower's stream, a primary's followers. */
#define METRICS_FOLLOWERS_LISTED 8u
typedef struct metrics_replication {
	bool following;             /* this server is a follower (until promoted) */
	bool connected;             /* a follower: streaming from its primary */
	uint64_t lag_ticks;         /* a follower: the primary's tick minus the tick applied */
	uint64_t syncs;             /* a follower: checkpoints taken (full syncs) */
	uint64_t read_only_refused; /* a follower: commands refused with READ_ONLY */
	uint32_t followers;         /* a primary: followers of the default world */
	uint32_t follower_ids[METRICS_FOLLOWERS_LISTED];
	uint64_t follower_acked_ticks[METRICS_FOLLOWERS_LISTED];
} metrics_replication;

typedef struct server_metrics {
	/* tick: whole tick (apply commands + step + snapshots), histogram in seconds;
	 * bucket i counts ticks <= bounds[i] and > bounds[i-1] (NOT cumulative);
	 * index METRICS_TICK_BUCKETS counts the rest (+Inf). */
	uint64_t tick_duration_buckets[METRICS_TICK_BUCKETS + 1];
	double tick_duration_sum_seconds;
	uint64_t ticks;                /* world steps */
	uint64_t ticks_overrun;        /* ticks that ended after the next one was due */
	uint64_t tick_periods_skipped; /* periods dropped from the schedule after overruns */
	double step_seconds_sum;       /* time in orca_world_step */
	double table_seconds_sum;      /* quantizing the world for snapshots (on the worker) */
	double snapshot_seconds_sum;   /* selecting, encoding and queueing snapshots (loop thread) */
	uint64_t snapshot_ticks_at_once; /* ticks whose snapshots the loop thread and its helper sent at once */
	uint64_t snapshot_ticks_pool;    /* and those encoded on the pool (--snapshot-overlap) */
	/* where a tick's wall time goes, in order (seconds summed over ticks):
	 * apply (timers, commands, journal commit, demo; loop thread), wait (the
	 * step queued for a pool thread), navigation (its update before the step),
	 * step (orca_world_step alone), table (quantize + hash), handoff (back to
	 * the loop thread, and the journal's durable wait with --fsync always),
	 * snapshots, events (navigation's AgentEvents). */
	double tick_part_seconds_sum[TICK_PARTS];

	/* world (gauges) */
	uint64_t agents;
	uint64_t obstacles;

	/* connections */
	uint64_t connections[TRANSPORT_COUNT][METRICS_ROLE_COUNT]; /* gauge */
	uint64_t connections_accepted[TRANSPORT_COUNT];
	uint64_t disconnects[DISCONNECT_REASON_COUNT];

	/* traffic (whole messages; bytes are message bodies without framing) */
	uint64_t messages_in[TRANSPORT_COUNT];
	uint64_t messages_out[TRANSPORT_COUNT];
	uint64_t bytes_in[TRANSPORT_COUNT];
	uint64_t bytes_out[TRANSPORT_COUNT];

	/* snapshots */
	uint64_t snapshots_sent;
	uint64_t snapshots_skipped; /* output above the soft limit */
	uint64_t snapshot_bytes;
	uint64_t keyframes_sent;
	uint64_t snapshots_shared; /* sent as bytes already encoded for another subscriber */

	/* requests */
	uint64_t requests;                    /* ClientMessages decoded */
	uint64_t commands_applied;            /* requests applied at a tick */
	uint64_t errors[METRICS_ERROR_CODES]; /* Error messages sent, by code */
	uint64_t acks;

	/* navigation */
	metrics_navigation navigation;

	/* replication */
	metrics_replication replication;

	/* Agones SDK sidecar calls (agones.h; all zero unless --agones) */
	crowd_agones_counters agones;
} server_metrics;

/** Storage's counters (server/storage: storage_get_stats), read for /metrics on the loop thread. */
typedef struct storage_stats {
	uint64_t journal_bytes;     /* written to journal segments */
	uint64_t journal_records;
	uint64_t fsyncs;
	uint64_t checkpoints;       /* written */
	uint64_t checkpoint_bytes;  /* size of the last one */
	double checkpoint_seconds;  /* encode + write of the last one (writer thread) */
	double checkpoint_copy_seconds; /* orca_world_save of the last one (loop thread) */
	uint64_t write_errors;
	bool available;
	uint64_t refused;           /* requests answered ERROR_STORAGE_UNAVAILABLE */
} storage_stats;

/** What anyone on the loop thread may read at any time (healthz, logs,
 * sessions): the server keeps it after every tick, sessions keep `connections`. */
typedef struct server_status {
	uint64_t tick;       /* ticks completed */
	uint64_t state_hash; /* after the last tick */
	uint32_t agents;
	uint32_t obstacles;
	uint32_t connections; /* open sessions, any transport */
	bool ready;           /* listeners are up */
	bool shutting_down;
} server_status;

const char *metrics_transport_name(transport_kind kind);              /* "tcp", "ws" */
const char *metrics_role_name(int role_index);                        /* "none", "viewer", "player", "admin" */
const char *metrics_disconnect_reason_name(disconnect_reason reason); /* "peer_closed", ... */
const char *metrics_error_code_name(int code);                        /* "MALFORMED", ... ("ERROR_" dropped) */

/** Record one tick's duration. */
void metrics_observe_tick(server_metrics *m, double seconds);

#endif
