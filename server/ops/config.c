/* config.c — the option table of crowd-server, its setters, the INI reader
 * (libinih) and --help. Order of precedence: defaults < config file < flags. */
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

#include "log.h"
#include "orca/orca.h"

#include "crowd/wire.h"

#ifndef CROWD_VERSION
#define CROWD_VERSION "0.0.0"
#endif

/* ------------------------------------------------------------------ enums */

#define ENUM(values) {values, sizeof values / sizeof values[0]}

/* A boolean's words: true and false, and the usual synonyms. */
static const config_enum_value bool_values[] = {
    {"true", 1, "on"}, {"false", 0, "off"}, {"yes", 1, NULL}, {"no", 0, NULL},
    {"on", 1, NULL},   {"off", 0, NULL},    {"1", 1, NULL},   {"0", 0, NULL},
};
static const config_enum bool_enum = ENUM(bool_values);

/* The avoidance mode (issue 11): quality is the default, reference is RVO2. */
static const config_enum_value avoidance_values[] = {
    {"quality", ORCA_AVOIDANCE_QUALITY, "agents never freeze and never overlap deeply"},
    {"reference", ORCA_AVOIDANCE_REFERENCE, "RVO2's ORCA, bit for bit"},
};
const config_enum config_avoidance_enum = ENUM(avoidance_values);

static const config_enum_value fsync_values[] = {
    {"always", CONFIG_FSYNC_ALWAYS, "a command is acknowledged once it is on disk (one group commit per tick)"},
    {"everysec", CONFIG_FSYNC_EVERYSEC, "at most the last second of acknowledged commands can be lost"},
    {"no", CONFIG_FSYNC_NO, "the kernel decides when the journal reaches the disk"},
};
const config_enum config_fsync_enum = ENUM(fsync_values);

static const config_enum_value map_values[] = {
    {"auto", CONFIG_MAP_AUTO, "rooms with --demo, else empty"},
    {"empty", CONFIG_MAP_EMPTY, "no walls"},
    {"rooms", CONFIG_MAP_ROOMS, "rooms joined by doors and corridors, at most 35 --demo-agents a room"},
    {"city", CONFIG_MAP_CITY, "square blocks and streets over --world-bounds"},
};
const config_enum config_map_enum = ENUM(map_values);

static const config_enum_value overlap_values[] = {
    {"auto", CONFIG_OVERLAP_AUTO,
     "as `false` when every tick due next (this world's and any other's) leaves room for them (twice what they took "
     "when last sent at once, less 1/32 for each tick sent since on the pool, and a quarter period), else as `true`"},
    {"true", CONFIG_OVERLAP_ALWAYS, "encoded on the thread pool and sent while the next tick steps"},
    {"false", CONFIG_OVERLAP_NEVER, "encoded and sent at once by the loop thread and a helper; the next tick waits"},
    /* the words it took as a boolean */
    {"yes", CONFIG_OVERLAP_ALWAYS, NULL},
    {"on", CONFIG_OVERLAP_ALWAYS, NULL},
    {"1", CONFIG_OVERLAP_ALWAYS, NULL},
    {"no", CONFIG_OVERLAP_NEVER, NULL},
    {"off", CONFIG_OVERLAP_NEVER, NULL},
    {"0", CONFIG_OVERLAP_NEVER, NULL},
};
const config_enum config_overlap_enum = ENUM(overlap_values);

static const config_enum_value log_level_values[] = {
    {"debug", LOG_DEBUG, "also detail: refused requests, tick profiles, checkpoint timings"},
    {"info", LOG_INFO, "start, stop, connections and what each part of the server set up"},
    {"warn", LOG_WARN, "only warnings and errors"},
    {"warning", LOG_WARN, NULL},
    {"error", LOG_ERROR, "only errors"},
    {"off", LOG_OFF, "nothing"},
};
const config_enum config_log_level_enum = ENUM(log_level_values);

static const config_enum_value role_values[] = {
    {"viewer", crowd_v1_Role_ROLE_VIEWER, "subscribe and ping only"},
    {"player", crowd_v1_Role_ROLE_PLAYER, "may spawn agents and command the agents it spawned"},
    {"admin", crowd_v1_Role_ROLE_ADMIN, "everything, including other clients' agents and obstacles"},
};
const config_enum config_role_enum = ENUM(role_values);

/* config_set_enum stores the value as an int; a role field is a crowd_v1_Role. */
_Static_assert(sizeof(crowd_v1_Role) == sizeof(int), "crowd_v1_Role is stored through an int");

int config_enum_parse(const config_enum *e, const char *name)
{
	for (size_t i = 0; i < e->count; i++)
		if (strcasecmp(name, e->values[i].name) == 0)
			return e->values[i].value;
	return -1;
}

const char *config_enum_name(const config_enum *e, int value)
{
	for (size_t i = 0; i < e->count; i++)
		if (e->values[i].help && e->values[i].value == value)
			return e->values[i].name;
	return NULL;
}

/* "a, b or c": the listed names, for error messages and --help. */
static void enum_names(const config_enum *e, const char *last_sep, char *out, size_t outlen)
{
	size_t listed = 0, shown = 0, len = 0;
	out[0] = '\0';
	for (size_t i = 0; i < e->count; i++)
		listed += e->values[i].help != NULL;
	for (size_t i = 0; i < e->count && len < outlen; i++) {
		if (!e->values[i].help)
			continue;
		const char *sep = shown == 0 ? "" : shown + 1 == listed ? last_sep : ", ";
		int n = snprintf(out + len, outlen - len, "%s%s", sep, e->values[i].name);
		if (n < 0)
			break;
		len += (size_t)n;
		shown++;
	}
}

static int set_token(server_config *, const config_option *, const char *, char *, size_t);
static int set_bounds(server_config *, const config_option *, const char *, char *, size_t);
static int set_config_path(server_config *, const config_option *, const char *, char *, size_t);
static int set_path(server_config *, const config_option *, const char *, char *, size_t);
static int set_i64(server_config *, const config_option *, const char *, char *, size_t);
static int set_workers(server_config *, const config_option *, const char *, char *, size_t);

#define OFF(field) offsetof(server_config, field)
#define NOOFF 0

/* One line per option. Sections group --help and name the INI section. */
static const config_option option_table[] = {
    /* ---- general */
    {"config", "general", "FILE", NULL, "read options from an INI file first (flags override it)", set_config_path,
     NOOFF, 0, 0, NULL},
    {"log-level", "general", "LEVEL", "info", "how much the server logs (to stderr)", config_set_enum, OFF(log_level),
     0, 0, &config_log_level_enum},
    {"demo", "general", NULL, "false", "fill the world with a demo crowd walking between the places of --map, forever",
     config_set_bool, OFF(demo), 0, 0, NULL},
    {"demo-agents", "general", "N", "300", "agents in the demo crowd", config_set_u32, OFF(demo_agents), 0, 100000,
     NULL},
    {"map", "general", "MAP", "auto", "walls added to the world at start (the demo crowd walks between its places)",
     config_set_enum, OFF(map), 0, 0, &config_map_enum},
    {"city-block", "general", "S", "40", "--map city: side of a square block", config_set_double, OFF(city_block), 1,
     10000, NULL},
    {"city-street", "general", "W", "12", "--map city: width of the streets between blocks", config_set_double,
     OFF(city_street), 1, 10000, NULL},
    {"headless-ticks", "general", "N", "0",
     "no network: run N ticks as fast as possible, print the state hash, exit (0 = serve)", config_set_u64,
     OFF(headless_ticks), 0, 1e12, NULL},
    {"tick-trace", "general", "FILE", NULL,
     "write one line per tick to FILE: its number, wall time and parts in microseconds (the load bench's "
     "per-part percentiles)",
     set_path, OFF(tick_trace_path), 0, 0, NULL},

    /* ---- network */
    {"listen", "network", "HOST:PORT", "127.0.0.1:7777",
     "TCP address for clients (loopback unless you open it; port 0 = any free port)", config_set_hostport, OFF(listen),
     0, 0, NULL},
    {"http", "network", "HOST:PORT", "127.0.0.1:8080",
     "HTTP address: the viewer at /, /healthz, /metrics, WebSocket clients at /ws (port 0 = any free port)",
     config_set_hostport, OFF(http), 0, 0, NULL},

    /* ---- simulation */
    {"tick-rate", "simulation", "HZ", "30", "world steps per second", config_set_u32, OFF(tick_rate_hz), 1, 1000, NULL},
    {"snapshot-divisor", "simulation", "N", "1",
     "default snapshot rate = tick rate / N (a subscriber may choose its own)", config_set_u32,
     OFF(snapshot_divisor), 1, 10000, NULL},
    {"keyframe-interval", "simulation", "K", "30", "every K-th snapshot to a subscriber is a keyframe",
     config_set_u32, OFF(keyframe_interval), 1, 100000, NULL},
    {"snapshot-overlap", "simulation", "WHEN", "auto",
     "where a tick's snapshots are encoded and sent (clients get the same bytes either way)", config_set_enum,
     OFF(snapshot_overlap), 0, 0, &config_overlap_enum},
    {"workers", "simulation", "N", "cores",
     "threads that step the world: 1 to 256, or `cores` for as many as this process may use (results are identical for "
     "any N)",
     set_workers, OFF(workers), 1, 256, NULL},
    {"avoidance", "simulation", "MODE", "quality", "how agents avoid each other", config_set_enum, OFF(avoidance), 0, 0,
     &config_avoidance_enum},
    {"precision", "simulation", "N", "100", "fixed-point units per world unit in snapshots", config_set_u32,
     OFF(precision), 1, 1000000, NULL},
    {"world-bounds", "simulation", "X0,Y0,X1,Y1", "-1000,-1000,1000,1000",
     "positions and targets must lie inside this rectangle", set_bounds, NOOFF, -1e7, 1e7, NULL},

    /* ---- agent defaults */
    {"agent-radius", "agent", "R", "1.5", "default radius", config_set_double, OFF(agent_radius), 1e-6, 1e6, NULL},
    {"agent-max-speed", "agent", "V", "2", "default maximum speed", config_set_double, OFF(agent_max_speed), 0, 1e6,
     NULL},
    {"agent-pref-speed", "agent", "V", "1.5", "default cruising speed toward a target", config_set_double,
     OFF(agent_pref_speed), 0, 1e6, NULL},
    {"agent-neighbor-dist", "agent", "D", "15", "default neighbour search distance", config_set_double,
     OFF(agent_neighbor_dist), 0, 1e6, NULL},
    {"agent-max-neighbors", "agent", "N", "10", "default neighbours considered", config_set_u32,
     OFF(agent_max_neighbors), 0, 1000, NULL},
    {"agent-time-horizon", "agent", "T", "10", "default time horizon against agents (s)", config_set_double,
     OFF(agent_time_horizon), 1e-6, 1e6, NULL},
    {"agent-time-horizon-obst", "agent", "T", "10", "default time horizon against obstacles (s)", config_set_double,
     OFF(agent_time_horizon_obst), 1e-6, 1e6, NULL},
    {"agent-weight", "agent", "W", "0.5", "default share of avoidance an agent takes on (0..1)", config_set_double,
     OFF(agent_weight), 0, 1, NULL},

    /* ---- what a client may ask for (in [agent] beside the defaults) */
    {"max-agent-radius", "agent", "R", "50", "largest radius a client may give", config_set_double,
     OFF(max_agent_radius), 1e-6, 1e6, NULL},
    {"max-agent-speed", "agent", "V", "100", "largest speed or velocity a client may give", config_set_double,
     OFF(max_agent_speed), 0, 1e6, NULL},
    {"max-neighbor-dist", "agent", "D", "100", "largest neighbour distance a client may give", config_set_double,
     OFF(max_neighbor_dist), 0, 1e6, NULL},
    {"max-neighbors", "agent", "N", "64", "largest max_neighbors a client may give", config_set_u32, OFF(max_neighbors),
     0, 10000, NULL},
    {"max-time-horizon", "agent", "T", "60", "largest time horizon a client may give (s)", config_set_double,
     OFF(max_time_horizon), 1e-6, 1e6, NULL},
    {"min-time-horizon", "agent", "T", "0.1",
     "smallest time horizon (agents and obstacles) a client may give (s); shorter ones let agents overlap",
     config_set_double, OFF(min_time_horizon), 1e-6, 1e6, NULL},

    /* ---- access */
    {"token", "access", "TOKEN=ROLE", NULL,
     "grant ROLE to clients saying TOKEN; ROLE@WORLD limits it to that world; repeatable; INI: [tokens] TOKEN = "
     "ROLE",
     set_token, NOOFF, 0, 0, &config_role_enum},
    {"open-role", "access", "ROLE", "admin", "role of every client while no token is configured (open server)",
     config_set_enum, OFF(open_role), 0, 0, &config_role_enum},

    /* ---- limits (each hit is answered with an Error or a close, and counted) */
    {"max-frame", "limits", "BYTES", "1m", "largest message; a bigger length prefix closes the connection",
     config_set_size, OFF(max_frame_bytes), 64, 1ull << 30, NULL},
    {"max-connections", "limits", "N", "1000", "connections at once; more are told SERVER_FULL and closed",
     config_set_u32, OFF(max_connections), 1, 1000000, NULL},
    {"max-agents", "limits", "N", "100000", "agents in the world (LIMIT_AGENTS_WORLD)", config_set_u32, OFF(max_agents),
     1, 1048574, NULL},
    {"max-agents-per-connection", "limits", "N", "20000", "agents one connection may own (LIMIT_AGENTS_CONNECTION)",
     config_set_u32, OFF(max_agents_per_connection), 1, 1048574, NULL},
    {"max-batch", "limits", "N", "5000", "items in one request (LIMIT_BATCH)", config_set_u32, OFF(max_batch), 1, 65535,
     NULL},
    {"max-obstacles", "limits", "N", "1000", "obstacles clients may add to a world (the walls of --map come on top)",
     config_set_u32, OFF(max_obstacles), 0, 1048574, NULL},
    {"max-obstacle-vertices", "limits", "N", "256",
     "vertices in one obstacle (BAD_POLYGON); at most 1024, where the validity check stops being n log n",
     config_set_u32, OFF(max_obstacle_vertices), 2, 1024, NULL},
    {"requests-per-second", "limits", "N", "2000", "requests per connection per second (RATE_LIMITED)",
     config_set_double, OFF(requests_per_second), 0.001, 1e9, NULL},
    {"max-queued-bytes", "limits", "BYTES", "8m",
     "requests of one connection waiting for the next tick, by decoded size (RATE_LIMITED)", config_set_size,
     OFF(max_queued_bytes), 1024, 1ull << 40, NULL},
    {"request-burst", "limits", "N", "4000", "requests a connection may send at once before the rate applies",
     config_set_u32, OFF(request_burst), 1, 1000000000, NULL},
    {"output-soft-limit", "limits", "BYTES", "1m",
     "output queued for a client (the kernel's unsent bytes included) above which its snapshots are skipped "
     "(the next one sent is a keyframe); the kernel may hold about this much of it unsent (at least 64k)",
     config_set_size, OFF(output_soft_limit), 1024, 1ull << 40, NULL},
    {"output-soft-seconds", "limits", "S", "5",
     "a client above the soft limit this long is told SLOW_CONSUMER and closed", config_set_double,
     OFF(output_soft_seconds), 0, 3600, NULL},
    {"output-hard-limit", "limits", "BYTES", "16m", "queued output above which a client is closed at once",
     config_set_size, OFF(output_hard_limit), 1024, 1ull << 40, NULL},
    {"hello-timeout", "limits", "S", "5", "seconds a new connection has to send Hello", config_set_double,
     OFF(hello_timeout_s), 0.01, 3600, NULL},
    {"hello-timeout-busy", "limits", "S", "1",
     "seconds to send Hello while more than half the connection slots are taken", config_set_double,
     OFF(hello_timeout_busy_s), 0.01, 3600, NULL},
    {"max-pending-per-peer", "limits", "N", "64",
     "connections (TCP, WebSocket, HTTP requests) from one IP address not past Hello or their request yet; "
     "more are refused (over HTTP they may still ask /healthz and /metrics: --http-reserved-slots)",
     config_set_u32, OFF(max_pending_per_peer), 1, 1000000, NULL},
    {"http-reserved-slots", "limits", "N", "16",
     "HTTP connections over --max-pending-per-peer or the connection limit may still ask /healthz or /metrics "
     "in this many slots (anything else: 503); 0: refused at once",
     config_set_u32, OFF(http_reserved_slots), 0, 100000, NULL},
    {"neighbor-budget", "limits", "N", "200000",
     "agents x max_neighbors one connection may own (the step's cost); a spawn past it gets LIMIT_COST", config_set_u32,
     OFF(neighbor_budget), 1, 4000000000.0, NULL},
    {"flush-timeout", "limits", "S", "10",
     "seconds a closing connection gets to write its last messages (the Error saying why)", config_set_double,
     OFF(flush_timeout_s), 0, 600, NULL},
    {"shutdown-timeout", "limits", "S", "5", "seconds to flush clients on SIGINT/SIGTERM before exiting",
     config_set_double, OFF(shutdown_timeout_s), 0, 600, NULL},

    /* ---- worlds (one server holds many; protocol minor 2) */
    {"max-worlds", "worlds", "N", "64", "worlds open at once, the default world included (LIMIT_WORLDS)",
     config_set_u32, OFF(max_worlds), 1, 100000, NULL},
    {"world-idle-seconds", "worlds", "S", "300",
     "a world with no clients and no agents this long closes (its data stays; the default world never closes)",
     config_set_double, OFF(world_idle_seconds), 0.001, 1e9, NULL},
    {"heavy-world-nice", "worlds", "N", "10",
     "a world whose steps take over half its period of CPU time steps on one thread at this nice (1-19), so light "
     "worlds go first; 0: no such thread",
     config_set_u32, OFF(heavy_world_nice), 0, 19, NULL},

    /* ---- persistence (server/storage) */
    {"data-dir", "persistence", "DIR", NULL,
     "journal and checkpoints here; on start, recover the world found there (empty: nothing persisted)", set_path,
     OFF(data_dir), 0, 0, NULL},
    {"fsync", "persistence", "MODE", "always", "when the journal reaches the disk (Redis's appendfsync)",
     config_set_enum, OFF(fsync_mode), 0, 0, &config_fsync_enum},
    {"checkpoint-every", "persistence", "TICKS", "0",
     "ticks between checkpoints of the whole world, instead of --checkpoint-seconds (0: by time)", config_set_u32,
     OFF(checkpoint_every), 0, 1e9, NULL},
    {"checkpoint-seconds", "persistence", "S", "2",
     "seconds of running between checkpoints of the whole world: recovery replays at most about this long",
     config_set_double, OFF(checkpoint_seconds), 0.05, 86400, NULL},
    {"recovery-workers", "persistence", "N", "cores",
     "threads that replay the journal at start-up: 1 to 256, or `cores` (results are identical for any N)", set_workers,
     OFF(recovery_workers), 1, 256, NULL},
    {"keep-checkpoints", "persistence", "N", "2", "checkpoints kept (older ones and their journal are deleted)",
     config_set_u32, OFF(keep_checkpoints), 1, 1000, NULL},
    {"start-at-tick", "persistence", "T", "-1",
     "serve the recorded world as it was after tick T, without recording (for debugging); -1: the end", set_i64,
     OFF(start_at_tick), -1, 1e15, NULL},
    {"storage-fail-file", "persistence", "FILE", NULL,
     "tests only: while FILE exists every journal write fails as if the disk did", set_path, OFF(storage_fail_file), 0,
     0, NULL},
    {"world-alloc-fail-file", "persistence", "FILE", NULL,
     "tests only: while FILE exists every allocation of the engine's world fails (out of memory)", set_path,
     OFF(world_alloc_fail_file), 0, 0, NULL},

    /* ---- replication (server/storage/replication.c) */
    {"follow", "replication", "HOST:PORT", NULL,
     "be a hot standby of the primary at HOST:PORT: take its checkpoint and journal into --data-dir, apply and "
     "check every tick, serve viewers read-only until `crowdctl promote`",
     set_path, OFF(follow), 0, 0, NULL},
    {"follow-world", "replication", "NAME", NULL, "the primary's world to follow (empty: its default world)", set_path,
     OFF(follow_world), 0, 0, NULL},
    {"follow-token", "replication", "TOKEN", NULL, "the admin token the follower presents to the primary", set_path,
     OFF(follow_token), 0, 0, NULL},
    {"min-followers-ack", "replication", "N", "0",
     "acknowledge a world-changing command only once N followers hold its journal record (0: do not wait)",
     config_set_u32, OFF(min_followers_ack), 0, 64, NULL},

    /* ---- agones */
    {"agones", "agones", NULL, "false",
     "run under Agones: Ready/Health/Shutdown to the SDK sidecar (port from AGONES_SDK_HTTP_PORT, else 9358)",
     config_set_bool, OFF(agones), 0, 0, NULL},
    {"agones-health-ms", "agones", "MS", "2000", "milliseconds between health pings (inside Agones' 5 s window)",
     config_set_u32, OFF(agones_health_ms), 10, 60000, NULL},
    {"agones-timeout-ms", "agones", "MS", "1500", "a sidecar request unanswered this long counts as failed",
     config_set_u32, OFF(agones_timeout_ms), 10, 60000, NULL},
    /* ---- navigation (server/sim/navigation.c) */
    {"navigation", "navigation", NULL, "true",
     "targets given over the protocol are walked by path around obstacles (SteerMode STEER_NAVIGATE)", config_set_bool,
     OFF(nav_enabled), 0, 0, NULL},
    {"nav-agent-radius", "navigation", "R", "1.5",
     "the navigation mesh keeps this far from obstacles: the largest radius of agents that navigate", config_set_double,
     OFF(nav_agent_radius), 0.01, 1000, NULL},
    {"nav-cell-size", "navigation", "S", "0",
     "voxel size of the mesh build, rounded down to a power of two; 0: nav-agent-radius / 3", config_set_double,
     OFF(nav_cell_size), 0, 100, NULL},
    {"nav-tile-budget", "navigation", "N", "8",
     "tiles rebuilt per tick after an obstacle changes (the rest wait for later ticks)", config_set_u32,
     OFF(nav_tile_budget), 1, 100000, NULL},
    {"nav-path-budget", "navigation", "N", "256",
     "path queries answered per tick (the rest wait, in order; until then agents walk straight)", config_set_u32,
     OFF(nav_path_budget), 1, 1000000, NULL},
    {"nav-stuck-seconds", "navigation", "S", "10",
     "an agent without progress this long gets a STUCK event (half of it: a re-plan); 0: never", config_set_double,
     OFF(nav_stuck_seconds), 0, 86400, NULL},
    {"nav-arrival-distance", "navigation", "D", "0.5", "ARRIVED within this distance of the goal", config_set_double,
     OFF(nav_arrival_distance), 0, 1000, NULL},
    {"nav-max-path-ids", "navigation", "N", "64", "agents one GetPaths may name (more: ERROR_LIMIT_BATCH)",
     config_set_u32, OFF(nav_max_path_ids), 1, 4096, NULL},
};

const config_option *config_options(size_t *count)
{
	*count = sizeof option_table / sizeof option_table[0];
	return option_table;
}

static const config_option *find_option(const char *name)
{
	size_t n;
	const config_option *opts = config_options(&n);
	for (size_t i = 0; i < n; i++)
		if (strcmp(opts[i].name, name) == 0)
			return &opts[i];
	return NULL;
}

static void *field(server_config *cfg, const config_option *opt) { return (char *)cfg + opt->offset; }

/* ------------------------------------------------------------------ setters */

static int range_error(const config_option *opt, const char *value, char *err, size_t errlen)
{
	snprintf(err, errlen, "--%s: '%s' is not a number in [%g, %g]", opt->name, value, opt->min, opt->max);
	return -1;
}

int config_set_bool(server_config *cfg, const config_option *opt, const char *value, char *err, size_t errlen)
{
	int v = config_enum_parse(&bool_enum, value);
	if (v < 0) {
		snprintf(err, errlen, "--%s: '%s' is not true or false", opt->name, value);
		return -1;
	}
	*(bool *)field(cfg, opt) = v != 0;
	return 0;
}
static int parse_number(const config_option *opt, const char *value, double *out, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	double v = strtod(value, &end);
	if (value[0] == '\0' || *end != '\0' || errno != 0 || !isfinite(v) || v < opt->min || v > opt->max)
		return range_error(opt, value, err, errlen);
	*out = v;
	return 0;
}

int config_set_u32(server_config *cfg, const config_option *opt, const char *value, char *err, size_t errlen)
{
	double v;
	if (parse_number(opt, value, &v, err, errlen) != 0)
		return -1;
	if (v != floor(v) || v < 0 || v > UINT32_MAX)
		return range_error(opt, value, err, errlen);
	*(uint32_t *)field(cfg, opt) = (uint32_t)v;
	return 0;
}

int config_set_u64(server_config *cfg, const config_option *opt, const char *value, char *err, size_t errlen)
{
	double v;
	if (parse_number(opt, value, &v, err, errlen) != 0)
		return -1;
	if (v != floor(v) || v < 0)
		return range_error(opt, value, err, errlen);
	*(uint64_t *)field(cfg, opt) = (uint64_t)v;
	return 0;
}

int config_set_double(server_config *cfg, const config_option *opt, const char *value, char *err, size_t errlen)
{
	double v;
	if (parse_number(opt, value, &v, err, errlen) != 0)
		return -1;
	*(double *)field(cfg, opt) = v;
	return 0;
}

int config_set_size(server_config *cfg, const config_option *opt, const char *value, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	double v = strtod(value, &end);
	double mult = 1;
	if (*end == 'k' || *end == 'K')
		mult = 1024.0, end++;
	else if (*end == 'm' || *end == 'M')
		mult = 1024.0 * 1024.0, end++;
	else if (*end == 'g' || *end == 'G')
		mult = 1024.0 * 1024.0 * 1024.0, end++;
	if (*end == 'b' || *end == 'B')
		end++;
	v *= mult;
	if (value[0] == '\0' || *end != '\0' || errno != 0 || !isfinite(v) || v < opt->min || v > opt->max) {
		snprintf(err, errlen, "--%s: '%s' is not a size in [%g, %g] bytes (suffix k, m or g allowed)", opt->name,
		         value, opt->min, opt->max);
		return -1;
	}
	*(size_t *)field(cfg, opt) = (size_t)v;
	return 0;
}

int config_parse_hostport(const char *text, config_hostport *out)
{
	const char *colon;
	const char *host = text;
	size_t host_len;
	if (text[0] == '[') {
		const char *close = strchr(text, ']');
		if (!close || close[1] != ':')
			return -1;
		host = text + 1;
		host_len = (size_t)(close - host);
		colon = close + 1;
	} else {
		colon = strrchr(text, ':');
		if (!colon)
			return -1;
		host_len = (size_t)(colon - text);
	}
	if (host_len == 0 || host_len >= sizeof out->host)
		return -1;
	char *end;
	errno = 0;
	long port = strtol(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || errno != 0 || port < 0 || port > 65535)
		return -1;
	memcpy(out->host, host, host_len);
	out->host[host_len] = '\0';
	out->port = (uint16_t)port;
	return 0;
}

int config_set_hostport(server_config *cfg, const config_option *opt, const char *value, char *err, size_t errlen)
{
	config_hostport hp;
	if (config_parse_hostport(value, &hp) != 0) {
		snprintf(err, errlen, "--%s: '%s' is not HOST:PORT", opt->name, value);
		return -1;
	}
	*(config_hostport *)field(cfg, opt) = hp;
	return 0;
}

int config_role_parse(const char *name)
{
	return config_enum_parse(&config_role_enum, name);
}

const char *config_role_name(crowd_v1_Role role)
{
	const char *name = config_enum_name(&config_role_enum, (int)role);
	return name ? name : "none";
}

/* An enum-valued option: one of opt->choices' names, stored as an int. */
int config_set_enum(server_config *cfg, const config_option *opt, const char *value, char *err, size_t errlen)
{
	int v = config_enum_parse(opt->choices, value);
	if (v < 0) {
		char names[128];
		enum_names(opt->choices, " or ", names, sizeof names);
		snprintf(err, errlen, "--%s: '%s' is not %s", opt->name, value, names);
		return -1;
	}
	memcpy(field(cfg, opt), &v, sizeof v);
	return 0;
}

/* `what` names the source in errors: "--token" or "[tokens]". */
static int add_token(server_config *cfg, const char *what, const char *token, const char *role_name, char *err,
                     size_t errlen)
{
	/* ROLE@WORLD: a token limited to one world */
	char role_only[64];
	const char *at = strchr(role_name, '@');
	const char *world = at ? at + 1 : "";
	if (at) {
		size_t n = (size_t)(at - role_name);
		if (n >= sizeof role_only) n = sizeof role_only - 1;
		memcpy(role_only, role_name, n);
		role_only[n] = '\0';
		role_name = role_only;
		if (!crowd_world_name_valid(world)) {
			snprintf(err, errlen, "%s: world '%s' is not 1 to %u characters of A-Z a-z 0-9 _ . -", what, world,
			         CROWD_WORLD_NAME_MAX);
			return -1;
		}
	}
	int role = config_role_parse(role_name);
	size_t len = strlen(token);
	if (role < 0) {
		char names[128];
		enum_names(&config_role_enum, " or ", names, sizeof names);
		snprintf(err, errlen, "%s: role '%s' is not %s", what, role_name, names);
		return -1;
	}
	if (len == 0 || len >= sizeof cfg->tokens[0].token) {
		snprintf(err, errlen, "%s: a token must be 1 to %zu characters", what, sizeof cfg->tokens[0].token - 1);
		return -1;
	}
	for (size_t i = 0; i < cfg->token_count; i++) {
		if (strcmp(cfg->tokens[i].token, token) == 0) { /* a later definition wins */
			cfg->tokens[i].role = (crowd_v1_Role)role;
			snprintf(cfg->tokens[i].world, sizeof cfg->tokens[i].world, "%s", world);
			return 0;
		}
	}
	config_token *grown = realloc(cfg->tokens, (cfg->token_count + 1) * sizeof *grown);
	if (!grown) {
		snprintf(err, errlen, "%s: out of memory", what);
		return -1;
	}
	cfg->tokens = grown;
	memcpy(grown[cfg->token_count].token, token, len + 1);
	grown[cfg->token_count].role = (crowd_v1_Role)role;
	snprintf(grown[cfg->token_count].world, sizeof grown[cfg->token_count].world, "%s", world);
	cfg->token_count++;
	return 0;
}

static int set_token(server_config *cfg, const config_option *opt, const char *value, char *err, size_t errlen)
{
	const char *eq = strrchr(value, '=');
	if (!eq || eq == value) {
		snprintf(err, errlen, "--%s: '%s' is not TOKEN=ROLE", opt->name, value);
		return -1;
	}
	char token[128];
	size_t len = (size_t)(eq - value);
	if (len >= sizeof token) {
		snprintf(err, errlen, "--%s: token too long", opt->name);
		return -1;
	}
	memcpy(token, value, len);
	token[len] = '\0';
	return add_token(cfg, "--token", token, eq + 1, err, errlen);
}

static int set_bounds(server_config *cfg, const config_option *opt, const char *value, char *err, size_t errlen)
{
	double v[4];
	char *end;
	const char *p = value;
	for (int i = 0; i < 4; i++) {
		errno = 0;
		v[i] = strtod(p, &end);
		if (end == p || errno != 0 || !isfinite(v[i]) || v[i] < opt->min || v[i] > opt->max)
			goto bad;
		p = end;
		if (i < 3) {
			if (*p != ',')
				goto bad;
			p++;
		}
	}
	if (*p != '\0' || v[0] >= v[2] || v[1] >= v[3])
		goto bad;
	cfg->world_min_x = v[0];
	cfg->world_min_y = v[1];
	cfg->world_max_x = v[2];
	cfg->world_max_y = v[3];
	return 0;
bad:
	snprintf(err, errlen, "--%s: '%s' is not X0,Y0,X1,Y1 with X0<X1, Y0<Y1 within %g", opt->name, value, opt->max);
	return -1;
}

static int set_config_path(server_config *cfg, const config_option *opt, const char *value, char *err,
                           size_t errlen)
{
	(void)opt;
	if (strlen(value) >= sizeof cfg->config_path) {
		snprintf(err, errlen, "--config: path too long");
		return -1;
	}
	strcpy(cfg->config_path, value);
	return 0;
}

/* A path option: a char[1024] field. */
static int set_path(server_config *cfg, const config_option *opt, const char *value, char *err, size_t errlen)
{
	char *out = field(cfg, opt);
	if (strlen(value) >= 1024) {
		snprintf(err, errlen, "--%s: path too long", opt->name);
		return -1;
	}
	strcpy(out, value);
	return 0;
}

static int set_i64(server_config *cfg, const config_option *opt, const char *value, char *err, size_t errlen)
{
	double v;
	if (parse_number(opt, value, &v, err, errlen) != 0)
		return -1;
	if (v != floor(v))
		return range_error(opt, value, err, errlen);
	*(int64_t *)field(cfg, opt) = (int64_t)v;
	return 0;
}

/* `cores` asks libuv how many CPUs this process may run on (its affinity
 * mask), so a server pinned to 2 CPUs steps with 2 threads. */
static int set_workers(server_config *cfg, const config_option *opt, const char *value, char *err, size_t errlen)
{
	if (strcmp(value, "cores") == 0) {
		unsigned cores = uv_available_parallelism();
		*(uint32_t *)field(cfg, opt) =
		    cores < 1 ? 1 : cores > (unsigned)opt->max ? (uint32_t)opt->max : (uint32_t)cores;
		return 0;
	}
	return config_set_u32(cfg, opt, value, err, errlen);
}

/* ------------------------------------------------------------------ whole config */

void config_init(server_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	size_t n;
	const config_option *opts = config_options(&n);
	char err[256];
	for (size_t i = 0; i < n; i++) {
		if (opts[i].def && opts[i].set(cfg, &opts[i], opts[i].def, err, sizeof err) != 0) {
			/* A default that does not parse is a bug in the table: say so loudly. */
			fprintf(stderr, "crowd-server: bad default: %s\n", err);
			abort();
		}
	}
}

void config_free(server_config *cfg)
{
	free(cfg->tokens);
	cfg->tokens = NULL;
	cfg->token_count = 0;
}

int config_set(server_config *cfg, const char *name, const char *value, char *err, size_t errlen)
{
	const config_option *opt = find_option(name);
	if (!opt) {
		snprintf(err, errlen, "unknown option '%s' (see --help)", name);
		return -1;
	}
	return opt->set(cfg, opt, value, err, errlen);
}

typedef struct ini_context {
	server_config *cfg;
	char *err;
	size_t errlen;
	int failed;
} ini_context;

static int config_ini_entry(void *user, const char *section, const char *name, const char *value)
{
	ini_context *ctx = user;
	if (ctx->failed)
		return 0;
	int rc;
	char err[256];
	if (strcasecmp(section, "tokens") == 0) {
		rc = add_token(ctx->cfg, "[tokens]", name, value, err, sizeof err);
	} else {
		const config_option *opt = find_option(name);
		if (!opt || strcmp(name, "config") == 0) {
			snprintf(err, sizeof err, "unknown key '%s'", name);
			rc = -1;
		} else if (section[0] != '\0' && strcasecmp(section, opt->section) != 0) {
			snprintf(err, sizeof err, "key '%s' belongs in section [%s], not [%s]", name, opt->section, section);
			rc = -1;
		} else {
			rc = opt->set(ctx->cfg, opt, value, err, sizeof err);
		}
	}
	if (rc != 0) {
		snprintf(ctx->err, ctx->errlen, "%s", err);
		ctx->failed = 1;
		return 0;
	}
	return 1;
}

int config_load_file(server_config *cfg, const char *path, char *err, size_t errlen)
{
	ini_context ctx = {cfg, err, errlen, 0};
	char inner[256] = "";
	ctx.err = inner;
	ctx.errlen = sizeof inner;
	int rc = ini_parse(path, config_ini_entry, &ctx);
	if (rc == -1) {
		snprintf(err, errlen, "%s: cannot open", path);
		return -1;
	}
	if (rc == -2) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	if (rc != 0) {
		if (ctx.failed)
			snprintf(err, errlen, "%s:%d: %s", path, rc, inner);
		else
			snprintf(err, errlen, "%s:%d: syntax error", path, rc);
		return -1;
	}
	return 0;
}

/* Splits "--name=value" / "--name value"; returns the option or NULL.
 * "--no-NAME" names the boolean NAME with *negated set. */
static const config_option *flag_option(const char *arg, char *name, size_t namelen, const char **inline_value,
                                        bool *negated)
{
	*negated = false;
	if (strncmp(arg, "--", 2) != 0)
		return NULL;
	const char *body = arg + 2;
	const char *eq = strchr(body, '=');
	size_t len = eq ? (size_t)(eq - body) : strlen(body);
	if (len >= namelen)
		return NULL;
	memcpy(name, body, len);
	name[len] = '\0';
	*inline_value = eq ? eq + 1 : NULL;
	const config_option *opt = find_option(name);
	if (!opt && strncmp(name, "no-", 3) == 0) {
		opt = find_option(name + 3);
		if (opt && opt->metavar)
			return NULL; /* only booleans have a --no- form */
		*negated = opt != NULL;
	}
	return opt;
}

int config_parse_args(server_config *cfg, int argc, char **argv, char *err, size_t errlen)
{
	char name[64];
	const char *inline_value;
	bool negated;
	/* Pass 1: --help, --version and --config, so the file comes before every flag. */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			config_print_help(stdout, argv[0]);
			return 1;
		}
		if (!strcmp(argv[i], "--help-markdown")) {
			config_print_markdown(stdout);
			return 1;
		}
		if (!strcmp(argv[i], "--version")) {
			config_print_version(stdout);
			return 1;
		}
	}
	for (int i = 1; i < argc; i++) {
		const config_option *opt = flag_option(argv[i], name, sizeof name, &inline_value, &negated);
		if (opt && strcmp(opt->name, "config") == 0) {
			const char *value = inline_value ? inline_value : (i + 1 < argc ? argv[i + 1] : NULL);
			if (!value) {
				snprintf(err, errlen, "--config needs a FILE");
				return -1;
			}
			if (set_config_path(cfg, opt, value, err, errlen) != 0 || config_load_file(cfg, value, err, errlen) != 0)
				return -1;
		}
	}
	/* Pass 2: every flag, in order. */
	for (int i = 1; i < argc; i++) {
		const config_option *opt = flag_option(argv[i], name, sizeof name, &inline_value, &negated);
		if (!opt) {
			snprintf(err, errlen, "unknown argument '%s' (see --help)", argv[i]);
			return -1;
		}
		const char *value = inline_value;
		if (negated) {
			if (value) {
				snprintf(err, errlen, "--no-%s takes no value (write --%s=%s)", opt->name, opt->name, value);
				return -1;
			}
			value = "false";
		} else if (!value) {
			if (!opt->metavar) {
				/* a boolean: --NAME, or --NAME true|false as two words (there are no
				 * positional arguments, so a next word not starting with '-' is its value) */
				value = "true";
				if (i + 1 < argc && argv[i + 1][0] != '-')
					value = argv[++i];
			} else if (i + 1 < argc) {
				value = argv[++i];
			} else {
				snprintf(err, errlen, "--%s needs %s", opt->name, opt->metavar);
				return -1;
			}
		}
		if (strcmp(opt->name, "config") == 0)
			continue; /* read in pass 1 */
		if (opt->set(cfg, opt, value, err, errlen) != 0)
			return -1;
	}
	return config_validate(cfg, err, errlen);
}

int config_validate(const server_config *cfg, char *err, size_t errlen)
{
	if (cfg->output_soft_limit > cfg->output_hard_limit) {
		snprintf(err, errlen, "--output-soft-limit (%zu) must not exceed --output-hard-limit (%zu)",
		         cfg->output_soft_limit, cfg->output_hard_limit);
		return -1;
	}
	if (cfg->follow[0] && !cfg->data_dir[0]) {
		snprintf(err, errlen, "--follow %s needs --data-dir DIR: a follower keeps the primary's journal",
		         cfg->follow);
		return -1;
	}
	if (cfg->min_followers_ack && !cfg->data_dir[0]) {
		snprintf(err, errlen, "--min-followers-ack %u needs --data-dir DIR: followers take the journal",
		         cfg->min_followers_ack);
		return -1;
	}
	if (cfg->follow_world[0] && !crowd_world_name_valid(cfg->follow_world)) {
		snprintf(err, errlen, "--follow-world '%.40s': not a world name (1 to %u of A-Z a-z 0-9 _ . -)",
		         cfg->follow_world, CROWD_WORLD_NAME_MAX);
		return -1;
	}
	if ((cfg->follow[0] || cfg->min_followers_ack) && cfg->start_at_tick >= 0) {
		snprintf(err, errlen,
		         "--start-at-tick serves a recording without writing: no --follow or --min-followers-ack");
		return -1;
	}
	if (cfg->agent_radius > cfg->max_agent_radius || cfg->agent_max_speed > cfg->max_agent_speed ||
	    cfg->agent_pref_speed > cfg->max_agent_speed || cfg->agent_neighbor_dist > cfg->max_neighbor_dist ||
	    cfg->agent_max_neighbors > cfg->max_neighbors || cfg->agent_time_horizon > cfg->max_time_horizon ||
	    cfg->agent_time_horizon_obst > cfg->max_time_horizon) {
		snprintf(err, errlen, "an --agent-* default lies outside its --max-* limit");
		return -1;
	}
	if (cfg->agent_time_horizon < cfg->min_time_horizon || cfg->agent_time_horizon_obst < cfg->min_time_horizon ||
	    cfg->min_time_horizon > cfg->max_time_horizon) {
		snprintf(err, errlen, "--agent-time-horizon(-obst) and --max-time-horizon must be at least --min-time-horizon");
		return -1;
	}
	/* Snapshots carry round(value * precision) as sint32, saturating at 2^30 so
	 * that differences fit: every position (inside the bounds, which the world
	 * enforces), speed and radius must stay under that. */
	double extent = fmax(fmax(fabs(cfg->world_min_x), fabs(cfg->world_max_x)),
	                     fmax(fabs(cfg->world_min_y), fabs(cfg->world_max_y)));
	extent = fmax(extent, fmax(cfg->max_agent_speed, cfg->max_agent_radius));
	if (extent * (double)cfg->precision > (double)(1u << 30)) {
		snprintf(err, errlen,
		         "--precision %u overflows snapshots: %g world units (bounds, speed or radius) times the "
		         "precision pass 2^30; lower the precision to at most %.0f",
		         cfg->precision, extent, floor((double)(1u << 30) / extent));
		return -1;
	}
	return 0;
}

crowd_v1_Role config_role_for_token(const server_config *cfg, const char *token)
{
	if (cfg->token_count == 0)
		return cfg->open_role;
	/* Whole tokens only: the length first (the session refuses tokens holding a
	 * NUL, so strlen is the length the client sent), then every byte. */
	size_t len = strlen(token);
	for (size_t i = 0; i < cfg->token_count; i++)
		if (strlen(cfg->tokens[i].token) == len && memcmp(cfg->tokens[i].token, token, len) == 0)
			return cfg->tokens[i].role;
	return crowd_v1_Role_ROLE_UNSPECIFIED;
}

void config_token_world(const server_config *cfg, const char *token, char *out, size_t outlen)
{
	if (outlen) out[0] = '\0';
	size_t len = strlen(token);
	for (size_t i = 0; i < cfg->token_count; i++)
		if (strlen(cfg->tokens[i].token) == len && memcmp(cfg->tokens[i].token, token, len) == 0) {
			snprintf(out, outlen, "%s", cfg->tokens[i].world);
			return;
		}
}

void config_print_version(FILE *out)
{
	fprintf(out, "crowd-server %s (protocol crowd.v1 %u.%u)\n", CROWD_VERSION, (unsigned)CROWD_PROTOCOL_MAJOR,
	        (unsigned)CROWD_PROTOCOL_MINOR);
}

/* Whether the setter reads a number within [min, max]. */
static bool numeric(const config_option *opt)
{
	return opt->set == config_set_u32 || opt->set == config_set_u64 || opt->set == config_set_double ||
	       opt->set == config_set_size || opt->set == set_i64;
}

/* "--NAME METAVAR", or "--NAME[=true|false]" for a boolean. */
static void flag_form(const config_option *opt, char *out, size_t outlen)
{
	if (opt->metavar)
		snprintf(out, outlen, "--%s %s", opt->name, opt->metavar);
	else
		snprintf(out, outlen, "--%s[=true|false]", opt->name);
}

void config_print_help(FILE *out, const char *prog)
{
	fprintf(out,
	        "Usage: %s [OPTIONS]\n"
	        "\n"
	        "crowd-server %s: an authoritative crowd simulation (ORCA) served over TCP\n"
	        "with the crowd.v1 protobuf protocol. Every option may also be set in an INI\n"
	        "file (--config FILE): put KEY = VALUE under the [section] shown below, e.g.\n"
	        "  [network]\n  listen = 0.0.0.0:7777\n  [tokens]\n  s3cret = admin\n"
	        "Flags override the file. Sizes take k, m or g suffixes. A boolean is on with\n"
	        "--NAME and off with --NAME=false (also: --NAME false, --no-NAME; in the file\n"
	        "NAME = false).\n",
	        prog, CROWD_VERSION);
	size_t n;
	const config_option *opts = config_options(&n);
	const char *section = "";
	for (size_t i = 0; i < n; i++) {
		const config_option *opt = &opts[i];
		if (strcmp(opt->section, section) != 0) {
			section = opt->section;
			fprintf(out, "\n[%s]\n", section);
		}
		char left[64];
		flag_form(opt, left, sizeof left);
		fprintf(out, "  %-34s %s", left, opt->help);
		if (!opt->metavar && opt->def && strcmp(opt->def, "true") == 0)
			fprintf(out, "; off: --%s=false (default true)", opt->name);
		else if (!opt->metavar)
			fprintf(out, " (default false)");
		else if (opt->def)
			fprintf(out, " (default %s)", opt->def);
		fputc('\n', out);
		for (size_t k = 0; opt->choices && k < opt->choices->count; k++)
			if (opt->choices->values[k].help)
				fprintf(out, "  %-34s   %-10s %s\n", "", opt->choices->values[k].name, opt->choices->values[k].help);
	}
	fprintf(out, "\n  %-34s %s\n  %-34s %s\n  %-34s %s\n", "--help", "show this help and exit", "--help-markdown",
	        "print every option as a Markdown page (docs/configuration.md) and exit", "--version",
	        "print the version and exit");
}

/* Text inside a Markdown table cell: '|' escaped. */
static void md_cell(FILE *out, const char *text)
{
	for (; *text; text++) {
		if (*text == '|')
			fputc('\\', out);
		fputc(*text, out);
	}
}

void config_print_markdown(FILE *out)
{
	fprintf(out,
	        "<!-- Generated by `crowd-server --help-markdown > docs/configuration.md`; edit the option table in "
	        "server/ops/config.c, not this file. -->\n"
	        "# Configuration\n"
	        "\n"
	        "Every setting of `crowd-server`, from its option table. Each one is a command-line flag\n"
	        "and a key of the INI file given with `--config FILE`: put `KEY = VALUE` under the\n"
	        "`[section]` shown (a key before any section is accepted too). The file is read first;\n"
	        "flags override it. Client tokens go in a `[tokens]` section as `TOKEN = ROLE`.\n"
	        "\n"
	        "- A flag's value follows it as the next word or after `=`: `--tick-rate 60`, `--tick-rate=60`.\n"
	        "- A boolean is on with `--NAME` and off with `--NAME=false`; `--NAME false` (two words) and\n"
	        "  `--no-NAME` work too, and `yes`/`no`, `on`/`off`, `1`/`0` mean the same. In the file: `NAME = false`.\n"
	        "- Sizes (BYTES) take a `k`, `m` or `g` suffix (powers of 1024).\n"
	        "- Names (MODE, LEVEL, ROLE) are matched without regard to case.\n"
	        "- A value out of its range, a name not in its list or an unknown option stops the server\n"
	        "  with one line on stderr naming the option (exit status 2).\n"
	        "\n"
	        "Besides these: `--help` prints this table as text, `--help-markdown` prints this page,\n"
	        "`--version` prints the server's version and the protocol version (`crowd.v1` MAJOR.MINOR).\n");
	size_t n;
	const config_option *opts = config_options(&n);
	const char *section = "";
	for (size_t i = 0; i < n; i++) {
		const config_option *opt = &opts[i];
		if (strcmp(opt->section, section) != 0) {
			section = opt->section;
			fprintf(out, "\n## [%s]\n\n| Option | Key in [%s] | Default | Meaning |\n|---|---|---|---|\n", section,
			        section);
		}
		char form[64];
		flag_form(opt, form, sizeof form);
		fputs("| `", out);
		md_cell(out, form);
		fputs("` | ", out);
		if (strcmp(opt->name, "config") == 0)
			fputs("(flag only)", out);
		else
			fprintf(out, "`%s`", opt->name);
		fputs(" | ", out);
		const char *def = opt->def ? opt->def : opt->metavar ? NULL : "false";
		if (def)
			fprintf(out, "`%s`", def);
		else
			fputs("(none)", out);
		fputs(" | ", out);
		md_cell(out, opt->help);
		if (numeric(opt))
			fprintf(out, ". Range %.15g to %.15g", opt->min, opt->max);
		if (opt->choices) {
			fputs(". ", out);
			if (opt->set != config_set_enum)
				fputs("ROLE: ", out);
			const char *sep = "";
			for (size_t k = 0; k < opt->choices->count; k++) {
				const config_enum_value *v = &opt->choices->values[k];
				if (!v->help)
					continue;
				fprintf(out, "%s`%s`: ", sep, v->name);
				md_cell(out, v->help);
				sep = "; ";
			}
		}
		fputs(" |\n", out);
	}
}
