/* config.h — every setting of crowd-server: one table entry per option, read
 * from an optional INI file (--config FILE, libinih) and then from flags.
 *
 * To add an option: add a field to server_config and one entry to the table in
 * config.c (name, INI section, metavar, default, help, setter, offset, range,
 * choices). The default text goes through the same setter as a flag, so it is
 * checked too; --help, --help-markdown (docs/configuration.md) and the INI
 * reader all read the same table. An option whose value is one of a few names
 * (--avoidance, --fsync, --log-level, --open-role) points at a config_enum: its
 * names, values and meanings, used for parsing, --help and the docs alike.
 *
 * Booleans (metavar NULL): `--NAME` is true; `--NAME=false` (or =true) sets
 * the value; `--NAME false` as the next word and `--no-NAME` are accepted too.
 * true/false may also be written yes/no, on/off or 1/0; in the INI file
 * `NAME = false`.
 *
 * Error convention of this layer: a function that can fail returns 0 on
 * success and -1 on failure, and writes one line (no newline) into the
 * caller's err buffer (errlen bytes, always NUL-terminated): the option as
 * `--NAME` (or FILE:LINE for the INI file), the value given, and what was
 * expected, e.g. "--tick-rate: '0' is not a number in [1, 1000]". Nothing
 * here prints an error or exits; the caller prints err and exits 2.
 * Exceptions: config_parse_args returns 1 after printing --help, --version or
 * --help-markdown (the caller exits 0), and config_init aborts on a default
 * that does not parse (a bug in the table, not a user error). */
#ifndef CROWD_SERVER_CONFIG_H
#define CROWD_SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "crowd.pb.h"

/** A listen address: host (IPv4/IPv6 literal or name) and port (0 = any free port). */
typedef struct config_hostport {
	char host[256];
	uint16_t port;
} config_hostport;

/** A token a client presents in Hello, and the role it grants. */
typedef struct config_token {
	char token[65];
	crowd_v1_Role role;
	char world[33]; /* TOKEN=ROLE@WORLD: the one world it may use; empty: every world */
} config_token;

/** --fsync: when the journal reaches the disk (Redis's appendfsync). */
typedef enum config_fsync_mode {
	CONFIG_FSYNC_ALWAYS = 0,   /* every tick's records before their Acks (group commit) */
	CONFIG_FSYNC_EVERYSEC = 1, /* at most a second of acknowledged commands can be lost */
	CONFIG_FSYNC_NO = 2,       /* the kernel decides */
} config_fsync_mode;

/** --map: the walls added to the world at start (server/sim/map.h). */
typedef enum config_map {
	CONFIG_MAP_AUTO = 0,  /* rooms with --demo, else empty */
	CONFIG_MAP_EMPTY = 1, /* no walls */
	CONFIG_MAP_ROOMS = 2, /* rooms joined by doors and corridors */
	CONFIG_MAP_CITY = 3,  /* square blocks and streets over --world-bounds */
} config_map;

/** --snapshot-overlap: where a tick's snapshots are encoded and sent. */
typedef enum config_overlap {
	CONFIG_OVERLAP_AUTO = 0,   /* at once when the ticks due next leave room (room.c), else on the pool */
	CONFIG_OVERLAP_ALWAYS = 1, /* on the pool while the next tick steps */
	CONFIG_OVERLAP_NEVER = 2,  /* at once: the next tick waits for them */
} config_overlap;

typedef struct server_config {
	/* network */
	config_hostport listen;
	config_hostport http; /* HTTP: viewer, /healthz, /metrics, WebSocket clients at /ws */

	/* simulation */
	uint32_t tick_rate_hz;
	uint32_t snapshot_divisor;
	uint32_t keyframe_interval;
	int snapshot_overlap; /* config_overlap */
	uint32_t workers;
	int avoidance; /* orca_avoidance: ORCA_AVOIDANCE_QUALITY (default) or _REFERENCE */
	uint32_t precision;
	double world_min_x, world_min_y, world_max_x, world_max_y;

	/* agent defaults (AgentSpec fields a client leaves out) */
	double agent_radius;
	double agent_max_speed;
	double agent_pref_speed;
	double agent_neighbor_dist;
	uint32_t agent_max_neighbors;
	double agent_time_horizon;
	double agent_time_horizon_obst;
	double agent_weight;

	/* ranges a client's agent parameters must stay within */
	double max_agent_radius;
	double max_agent_speed;
	double max_neighbor_dist;
	uint32_t max_neighbors;
	double max_time_horizon;
	double min_time_horizon;

	/* access */
	config_token *tokens;
	size_t token_count;
	crowd_v1_Role open_role;

	/* limits */
	size_t max_frame_bytes;
	uint32_t max_connections;
	uint32_t max_agents;
	uint32_t max_agents_per_connection;
	uint32_t max_batch;
	uint32_t max_obstacles;
	uint32_t max_obstacle_vertices;
	double requests_per_second;
	size_t max_queued_bytes;
	uint32_t request_burst;
	size_t output_soft_limit;
	size_t output_hard_limit;
	double output_soft_seconds;
	double hello_timeout_s;
	double hello_timeout_busy_s; /* while more than half the connection slots are taken */
	uint32_t max_pending_per_peer; /* connections of one IP not past Hello (or their HTTP request) */
	uint32_t http_reserved_slots;  /* HTTP slots over the limits where only /healthz and /metrics are served */
	uint32_t neighbor_budget;      /* agents x max_neighbors per connection */
	double flush_timeout_s;        /* a closing connection's last writes */
	double shutdown_timeout_s;

	/* operation */
	int log_level;
	bool demo;
	uint32_t demo_agents;
	int map;            /* config_map */
	double city_block;  /* --map city: side of a block */
	double city_street; /* --map city: width of a street */
	uint64_t headless_ticks;
	char tick_trace_path[1024]; /* empty: no trace */

	/* worlds (server/room.c): one server holds many */
	uint32_t max_worlds;        /* open at once, the default world included */
	double world_idle_seconds;  /* a world with no clients and no agents this long closes */
	uint32_t heavy_world_nice;  /* the nice of the thread stepping heavy worlds; 0: none, they stay on the pool */

	/* persistence (server/storage): journal, checkpoints, recovery */
	char data_dir[1024];         /* empty: nothing is persisted */
	int fsync_mode;              /* config_fsync_mode */
	uint32_t checkpoint_every;   /* ticks; 0: every checkpoint_seconds */
	double checkpoint_seconds;   /* wall time between checkpoints (with checkpoint_every 0) */
	uint32_t recovery_workers;   /* threads of the replay at start-up */
	uint32_t keep_checkpoints;
	int64_t start_at_tick;       /* -1: serve from the end of the journal */
	char storage_fail_file[1024]; /* tests: while this file exists, journal writes fail (EIO) */
	char world_alloc_fail_file[1024]; /* tests: while this file exists, the world's allocations fail */

	/* replication (server/storage/replication.c): a hot standby */
	char follow[1024];          /* HOST:PORT of the primary to follow; empty: this server is a primary */
	char follow_world[1024];    /* the primary's world to follow; empty: its default world */
	char follow_token[1024];    /* the admin token the follower says at Hello */
	uint32_t min_followers_ack; /* a command is acknowledged once this many followers hold it */

	/* Agones (agones_server.c): the SDK sidecar's REST API on localhost */
	bool agones;
	uint32_t agones_health_ms;
	uint32_t agones_timeout_ms;

	/* navigation (server/sim/navigation.c): paths around obstacles */
	bool nav_enabled;
	double nav_agent_radius;      /* the navmesh is inflated by this */
	double nav_cell_size;         /* 0: radius / 3 */
	uint32_t nav_tile_budget;     /* tiles rebuilt per tick after obstacles change */
	uint32_t nav_path_budget;     /* path queries answered per tick */
	double nav_stuck_seconds;     /* no progress this long: a STUCK event */
	double nav_arrival_distance;  /* ARRIVED within this of the goal */
	uint32_t nav_max_path_ids;    /* agents one GetPaths may name */
	/* set by config_parse_args; not options themselves */
	char config_path[1024];
} server_config;

/** One name of an enum-valued option and the value it stands for. */
typedef struct config_enum_value {
	const char *name;
	int value;
	const char *help; /* what it means; NULL: an alias, accepted but not listed (the first
	                     listed name of a value is the one printed back) */
} config_enum_value;

/** The names an enum-valued option takes; matched without regard to case. */
typedef struct config_enum {
	const config_enum_value *values;
	size_t count;
} config_enum;

/** The value named `name` (any case), or -1. */
int config_enum_parse(const config_enum *e, const char *name);
/** The listed name of `value`, or NULL. */
const char *config_enum_name(const config_enum *e, int value);

/* The enums of the table: --avoidance, --fsync, --log-level, roles (--open-role, --token). */
extern const config_enum config_avoidance_enum, config_fsync_enum, config_log_level_enum, config_role_enum;
extern const config_enum config_map_enum, config_overlap_enum;

struct config_option;
/** Parse `value` into the field at cfg + opt->offset. Returns 0, or -1 with err filled. */
typedef int (*config_setter)(server_config *cfg, const struct config_option *opt, const char *value, char *err,
                             size_t errlen);

typedef struct config_option {
	const char *name;    /* flag without "--"; also the INI key */
	const char *section; /* INI section, and the heading in --help */
	const char *metavar; /* NULL: a switch (--demo), which also takes =true/=false */
	const char *def;     /* default, as text; NULL: none */
	const char *help;    /* one line */
	config_setter set;
	size_t offset;
	double min, max; /* numeric range, inclusive (setters that take numbers) */
	const config_enum *choices; /* the names the value (--token: its ROLE) takes, listed in --help;
	                               config_set_enum stores one as an int; else NULL */
} config_option;

/* Setters the table uses; extensions may use them too. */
int config_set_bool(server_config *, const config_option *, const char *, char *, size_t);
int config_set_u32(server_config *, const config_option *, const char *, char *, size_t);
int config_set_u64(server_config *, const config_option *, const char *, char *, size_t);
int config_set_double(server_config *, const config_option *, const char *, char *, size_t);
int config_set_size(server_config *, const config_option *, const char *, char *, size_t);
int config_set_hostport(server_config *, const config_option *, const char *, char *, size_t);
int config_set_enum(server_config *, const config_option *, const char *, char *, size_t);

/** Split "HOST:PORT" or "[V6]:PORT"; returns 0 or -1. */
int config_parse_hostport(const char *text, config_hostport *out);

/** Parse "viewer", "player" or "admin" (config_role_enum); returns -1 if unknown. */
int config_role_parse(const char *name);
const char *config_role_name(crowd_v1_Role role);

/** The option table and its length. */
const config_option *config_options(size_t *count);

/** Fill cfg with every default. */
void config_init(server_config *cfg);
void config_free(server_config *cfg);

/** Set one option by name (no leading dashes). Returns 0 or -1 with err. */
int config_set(server_config *cfg, const char *name, const char *value, char *err, size_t errlen);

/** Read an INI file: [section] key = value, keys named as the flags; section
 * [tokens] maps TOKEN = ROLE. Returns 0 or -1 with err. */
int config_load_file(server_config *cfg, const char *path, char *err, size_t errlen);

/** Apply argv: --config FILE is read first, then every flag overrides it.
 * Returns 0 to run, 1 when --help, --help-markdown or --version was printed
 * (exit 0), -1 on error (err filled). */
int config_parse_args(server_config *cfg, int argc, char **argv, char *err, size_t errlen);

/** Cross-field checks (soft <= hard limit, bounds non-empty, ...). 0 or -1 with err. */
int config_validate(const server_config *cfg, char *err, size_t errlen);

/** Role for a Hello token: the mapped role, open_role when no tokens are
 * configured, or ROLE_UNSPECIFIED when the token is unknown. */
crowd_v1_Role config_role_for_token(const server_config *cfg, const char *token);
/** The one world a Hello token may use (TOKEN=ROLE@WORLD) into out, or "" for every world. */
void config_token_world(const server_config *cfg, const char *token, char *out, size_t outlen);

void config_print_help(FILE *out, const char *prog);
/** The whole option table as Markdown: docs/configuration.md is this output. */
void config_print_markdown(FILE *out);
/** "crowd-server VERSION (protocol crowd.v1 MAJOR.MINOR)": the product version
 * from CMake's project(), the protocol from wire.h. */
void config_print_version(FILE *out);

#endif
