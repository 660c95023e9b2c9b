/* load_options.c — crowd-load's flags: the scenario (connections, agents,
 * retargets, subscription area, divisor, timing), output and thresholds. */
#include "load.h"

#include "crowd/client.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out, const char *prog) {
	fprintf(
	    out,
	    "Usage: %s [options]\n"
	    "Opens many crowd.v1 connections to a crowd-server from one process and measures\n"
	    "request->Ack and command->visible latency, snapshot rate, jitter, bytes and errors.\n"
	    "\n"
	    "Scenario:\n"
	    "  --server HOST:PORT       server to load (default 127.0.0.1:7777; with --ws its HTTP port); several,\n"
	    "                           comma-separated: the first that accepts a connection at start\n"
	    "  --ws                     connect over WebSocket (subprotocol crowd.v1) instead of TCP\n"
	    "  --ws-path PATH           WebSocket path (default /ws)\n"
	    "  --connections N          connections to open (default 10)\n"
	    "  --agents N               agents each connection spawns (default 10)\n"
	    "  --setup FILE             spawn the agents of a *_setup.csv instead (agent_id,x,y,goal_x,goal_y),\n"
	    "                           split into one compact tile per connection (--agents caps a tile)\n"
	    "  --local-targets          with --setup: walk to random points of the own window, not the file's goals\n"
	    "  --spawn-batch N          agents per SpawnAgents request (default 1000)\n"
	    "  --retarget SECONDS       each connection sends SetTargets this often (default 1; 0 = never)\n"
	    "  --retarget-count N       agents per SetTargets (default 10)\n"
	    "  --retarget-distance D    how far away a new target is placed (default 20)\n"
	    "  --area world|none|WxH    subscription: whole world, none, or a W x H window (random,\n"
	    "                           or centred on the connection's tile with --setup) (default world)\n"
	    "  --divisor N              snapshot every N ticks (default 0 = server's default)\n"
	    "  --ping SECONDS           also send a Ping this often (default 0 = never)\n"
	    "  --duration SECONDS       measured time, after ramp-up and spawning (default 10)\n"
	    "  --ramp-up SECONDS        open the connections evenly over this time (default 1)\n"
	    "  --visible-timeout S      a retarget not visible by then counts as unseen (default 5)\n"
	    "  --token TOKEN            Hello token\n"
	    "  --name NAME              client name prefix (default crowd-load)\n"
	    "  --keep-agents            agents stay in the world after disconnect\n"
	    "  --worlds N               spread the connections (and their agents) over N worlds, created\n"
	    "                           by the run (needs a token that may create worlds: admin)\n"
	    "  --world-prefix PREFIX    the worlds' names: PREFIX0 .. PREFIX(N-1) (default load-)\n"
	    "  --seed N                 random seed (default 1)\n"
	    "  --time-horizon T         every spawned agent's time horizon against agents (s; default: the\n"
	    "                           server's)\n"
	    "  --time-horizon-obst T    every spawned agent's time horizon against obstacles (s; default: the\n"
	    "                           server's)\n"
	    "  --trips BLOCK,STREET     random trips through the server's --map city (same --city-block,\n"
	    "                           --city-street): agents spawn on streets; each ARRIVED starts a new trip\n"
	    "                           along its street or onto a crossing one; reports trips within 2x their\n"
	    "                           free-walk time, trip time p50/p99 and trips 60 s late (simulated time)\n"
	    "  --trip-reach D           a trip ends at most D away along each axis (default 50)\n"
	    "  --trip-speed V           the agents' cruising speed, for free-walk times (default 1.5)\n"
	    "  --trips-each K           the measured time ends once every agent has finished K trips (or\n"
	    "                           at --duration, whichever comes first)\n"
	    "\n"
	    "Output and gates:\n"
	    "  --json FILE              write every figure as JSON\n"
	    "  --quiet                  no progress line\n"
	    "  --max-p99-ms MS          exit 1 if request->Ack or command->visible p99 is above MS\n"
	    "  --max-errors N           exit 1 if errors + disconnects + failed connects exceed N\n"
	    "  --max-late-trips N       --trips: exit 1 if more than N trips are 60 s past their free-walk\n"
	    "                           time (finished so, or still walking); the run stops when it happens\n"
	    "  -h, --help               this text\n"
	    "\n"
	    "Exit status: 0 ok, 1 a threshold was passed, 2 bad usage (one line naming the option) or no\n"
	    "connection could run (one line saying why, e.g. connection refused; no table).\n",
	    prog);
}

static int parse_double(const char *name, const char *text, double min, double max, double *out) {
	char *end;
	double v = strtod(text, &end);
	if (end == text || *end || !isfinite(v) || v < min || v > max) {
		fprintf(stderr, "crowd-load: --%s: '%s' is not a number in [%g, %g]\n", name, text, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_u32(const char *name, const char *text, uint32_t min, uint32_t max, uint32_t *out) {
	double v;
	if (parse_double(name, text, min, max, &v) < 0) return -1;
	if (v != floor(v)) {
		fprintf(stderr, "crowd-load: --%s: '%s' is not a whole number\n", name, text);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

static int parse_server(const char *text, load_options *o) {
	o->server_list[0] = 0;
	if (strchr(text, ',')) {
		if (crowd_client_count_addresses(text) < 0 || strlen(text) >= sizeof o->server_list) {
			fprintf(stderr,
			        "crowd-load: --server: expected HOST:PORT or several, comma-separated, got '%s'\n",
			        text);
			return -1;
		}
		snprintf(o->server_list, sizeof o->server_list, "%s", text);
		return 0;
	}
	const char *colon = strrchr(text, ':');
	if (!colon || colon == text || (size_t)(colon - text) >= sizeof o->host) {
		fprintf(stderr, "crowd-load: --server: expected HOST:PORT, got '%s'\n", text);
		return -1;
	}
	size_t n = (size_t)(colon - text);
	if (text[0] == '[' && n >= 2 && text[n - 1] == ']') { /* [v6]:port */
		memcpy(o->host, text + 1, n - 2);
		o->host[n - 2] = 0;
	} else {
		memcpy(o->host, text, n);
		o->host[n] = 0;
	}
	uint32_t port;
	if (parse_u32("server", colon + 1, 1, 65535, &port) < 0) return -1;
	o->port = (int)port;
	return 0;
}

static int parse_area(const char *text, load_options *o) {
	if (strcmp(text, "world") == 0) {
		o->area = LOAD_AREA_WORLD;
		return 0;
	}
	if (strcmp(text, "none") == 0) {
		o->area = LOAD_AREA_NONE;
		return 0;
	}
	char *end;
	double w = strtod(text, &end);
	if (end != text && (*end == 'x' || *end == 'X')) {
		const char *rest = end + 1;
		double h = strtod(rest, &end);
		if (end != rest && !*end && isfinite(w) && isfinite(h) && w > 0 && h > 0) {
			o->area = LOAD_AREA_WINDOW;
			o->window_w = w;
			o->window_h = h;
			return 0;
		}
	}
	fprintf(stderr, "crowd-load: --area: expected world, none or WxH (e.g. 120x120), got '%s'\n", text);
	return -1;
}

static int copy_text(const char *name, const char *text, char *dst, size_t cap) {
	if (strlen(text) >= cap) {
		fprintf(stderr, "crowd-load: --%s: longer than %zu characters\n", name, cap - 1);
		return -1;
	}
	strcpy(dst, text);
	return 0;
}

int load_options_parse(load_options *o, int argc, char **argv) {
	memset(o, 0, sizeof *o);
	strcpy(o->host, "127.0.0.1");
	o->port = 7777;
	o->connections = 10;
	o->agents_per_conn = 10;
	o->spawn_batch = 1000;
	o->retarget_s = 1;
	o->retarget_count = 10;
	o->retarget_distance = 20;
	o->area = LOAD_AREA_WORLD;
	o->duration_s = 10;
	o->ramp_up_s = 1;
	o->visible_timeout_s = 5;
	strcpy(o->name, "crowd-load");
	strcpy(o->ws_path, "/ws");
	strcpy(o->world_prefix, "load-");
	o->max_p99_ms = -1;
	o->max_errors = -1;
	o->max_late_trips = -1;
	o->seed = 1;
	o->trip_reach = 50;
	o->trip_speed = 1.5;
	bool agents_given = false;

	enum {
		O_SERVER = 256,
		O_CONNECTIONS,
		O_AGENTS,
		O_SETUP,
		O_LOCAL_TARGETS,
		O_SPAWN_BATCH,
		O_RETARGET,
		O_RETARGET_COUNT,
		O_RETARGET_DISTANCE,
		O_AREA,
		O_DIVISOR,
		O_PING,
		O_DURATION,
		O_RAMP_UP,
		O_VISIBLE_TIMEOUT,
		O_TOKEN,
		O_NAME,
		O_KEEP_AGENTS,
		O_SEED,
		O_JSON,
		O_QUIET,
		O_MAX_P99,
		O_MAX_ERRORS,
		O_WS,
		O_WS_PATH,
		O_WORLDS,
		O_WORLD_PREFIX,
		O_TRIPS,
		O_TRIP_REACH,
		O_TRIP_SPEED,
		O_TRIPS_EACH,
		O_TIME_HORIZON,
		O_TIME_HORIZON_OBST,
		O_MAX_LATE_TRIPS
	};
	static const struct option longopts[] = {
	    {"server", required_argument, 0, O_SERVER},
	    {"connections", required_argument, 0, O_CONNECTIONS},
	    {"agents", required_argument, 0, O_AGENTS},
	    {"setup", required_argument, 0, O_SETUP},
	    {"local-targets", no_argument, 0, O_LOCAL_TARGETS},
	    {"spawn-batch", required_argument, 0, O_SPAWN_BATCH},
	    {"retarget", required_argument, 0, O_RETARGET},
	    {"retarget-count", required_argument, 0, O_RETARGET_COUNT},
	    {"retarget-distance", required_argument, 0, O_RETARGET_DISTANCE},
	    {"area", required_argument, 0, O_AREA},
	    {"divisor", required_argument, 0, O_DIVISOR},
	    {"ping", required_argument, 0, O_PING},
	    {"duration", required_argument, 0, O_DURATION},
	    {"ramp-up", required_argument, 0, O_RAMP_UP},
	    {"visible-timeout", required_argument, 0, O_VISIBLE_TIMEOUT},
	    {"token", required_argument, 0, O_TOKEN},
	    {"name", required_argument, 0, O_NAME},
	    {"keep-agents", no_argument, 0, O_KEEP_AGENTS},
	    {"seed", required_argument, 0, O_SEED},
	    {"json", required_argument, 0, O_JSON},
	    {"quiet", no_argument, 0, O_QUIET},
	    {"max-p99-ms", required_argument, 0, O_MAX_P99},
	    {"trips", required_argument, 0, O_TRIPS},
	    {"trip-reach", required_argument, 0, O_TRIP_REACH},
	    {"trip-speed", required_argument, 0, O_TRIP_SPEED},
	    {"trips-each", required_argument, 0, O_TRIPS_EACH},
	    {"time-horizon", required_argument, 0, O_TIME_HORIZON},
	    {"time-horizon-obst", required_argument, 0, O_TIME_HORIZON_OBST},
	    {"max-late-trips", required_argument, 0, O_MAX_LATE_TRIPS},
	    {"max-errors", required_argument, 0, O_MAX_ERRORS},
	    {"ws", no_argument, 0, O_WS},
	    {"ws-path", required_argument, 0, O_WS_PATH},
	    {"worlds", required_argument, 0, O_WORLDS},
	    {"world-prefix", required_argument, 0, O_WORLD_PREFIX},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	int ch;
	double d = 0;
	uint32_t u = 0;
	opterr = 0; /* errors are reported below, one line each */
	while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		int rc = 0;
		switch (ch) {
		case O_SERVER:
			rc = parse_server(optarg, o);
			break;
		case O_CONNECTIONS:
			rc = parse_u32("connections", optarg, 1, 100000, &o->connections);
			break;
		case O_AGENTS:
			rc = parse_u32("agents", optarg, 0, 1000000, &o->agents_per_conn);
			agents_given = true;
			break;
		case O_SETUP:
			rc = copy_text("setup", optarg, o->setup_path, sizeof o->setup_path);
			break;
		case O_LOCAL_TARGETS:
			o->local_targets = true;
			break;
		case O_SPAWN_BATCH:
			rc = parse_u32("spawn-batch", optarg, 1, 65535, &o->spawn_batch);
			break;
		case O_RETARGET:
			rc = parse_double("retarget", optarg, 0, 86400, &o->retarget_s);
			break;
		case O_RETARGET_COUNT:
			rc = parse_u32("retarget-count", optarg, 1, 65535, &o->retarget_count);
			break;
		case O_RETARGET_DISTANCE:
			rc = parse_double("retarget-distance", optarg, 0.1, 1e6, &o->retarget_distance);
			break;
		case O_AREA:
			rc = parse_area(optarg, o);
			break;
		case O_DIVISOR:
			rc = parse_u32("divisor", optarg, 0, 100000, &o->divisor);
			break;
		case O_PING:
			rc = parse_double("ping", optarg, 0, 86400, &o->ping_s);
			break;
		case O_DURATION:
			rc = parse_double("duration", optarg, 0.1, 86400, &o->duration_s);
			break;
		case O_RAMP_UP:
			rc = parse_double("ramp-up", optarg, 0, 3600, &o->ramp_up_s);
			break;
		case O_VISIBLE_TIMEOUT:
			rc = parse_double("visible-timeout", optarg, 0.01, 3600, &o->visible_timeout_s);
			break;
		case O_TOKEN:
			rc = copy_text("token", optarg, o->token, sizeof o->token);
			break;
		case O_NAME:
			rc = copy_text("name", optarg, o->name, sizeof o->name);
			break;
		case O_KEEP_AGENTS:
			o->keep_agents = true;
			break;
		case O_SEED:
			rc = parse_double("seed", optarg, 0, 4294967295.0, &d);
			o->seed = (uint64_t)d;
			break;
		case O_JSON:
			rc = copy_text("json", optarg, o->json_path, sizeof o->json_path);
			break;
		case O_TRIPS: {
			char *end;
			o->city_block = strtod(optarg, &end);
			o->city_street = *end == ',' ? strtod(end + 1, &end) : -1;
			if (*end || !(o->city_block >= 1 && o->city_block <= 10000) ||
			    !(o->city_street >= 1 && o->city_street <= 10000)) {
				fprintf(stderr, "crowd-load: --trips: expected BLOCK,STREET (e.g. 40,12), got '%s'\n",
				        optarg);
				rc = -1;
			}
			o->trips = true;
			break;
		}
		case O_TRIP_REACH:
			rc = parse_double("trip-reach", optarg, 1, 1e6, &o->trip_reach);
			break;
		case O_TRIP_SPEED:
			rc = parse_double("trip-speed", optarg, 0.01, 1e6, &o->trip_speed);
			break;
		case O_TIME_HORIZON:
			rc = parse_double("time-horizon", optarg, 0.001, 1e6, &o->time_horizon);
			break;
		case O_TIME_HORIZON_OBST:
			rc = parse_double("time-horizon-obst", optarg, 0.001, 1e6, &o->time_horizon_obst);
			break;
		case O_TRIPS_EACH:
			rc = parse_u32("trips-each", optarg, 1, 65535, &o->trips_each);
			break;
		case O_MAX_LATE_TRIPS:
			rc = parse_u32("max-late-trips", optarg, 0, 4000000000u, &u);
			o->max_late_trips = u;
			break;
		case O_QUIET:
			o->quiet = true;
			break;
		case O_MAX_P99:
			rc = parse_double("max-p99-ms", optarg, 0, 1e9, &o->max_p99_ms);
			break;
		case O_MAX_ERRORS:
			rc = parse_u32("max-errors", optarg, 0, 4000000000u, &u);
			o->max_errors = u;
			break;
		case O_WS:
			o->websocket = true;
			break;
		case O_WS_PATH:
			rc = copy_text("ws-path", optarg, o->ws_path, sizeof o->ws_path);
			if (rc == 0 && o->ws_path[0] != '/') {
				fprintf(stderr, "crowd-load: --ws-path must start with /\n");
				rc = -1;
			}
			break;
		case O_WORLDS:
			rc = parse_u32("worlds", optarg, 0, 100000, &o->worlds);
			break;
		case O_WORLD_PREFIX:
			rc = copy_text("world-prefix", optarg, o->world_prefix, sizeof o->world_prefix);
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 1;
		case ':':
			fprintf(stderr, "crowd-load: %s: needs a value\n", argv[optind - 1]);
			return -1;
		default: /* one line, not the whole help */
			if (optopt && optopt < 128)
				fprintf(stderr, "crowd-load: unknown option '-%c' (see --help)\n", optopt);
			else
				fprintf(stderr, "crowd-load: unknown option '%s' (see --help)\n", argv[optind - 1]);
			return -1;
		}
		if (rc < 0) return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "crowd-load: unexpected argument '%s' (see --help)\n", argv[optind]);
		return -1;
	}
	if (o->setup_path[0] && !agents_given) o->agents_per_conn = UINT32_MAX; /* the whole file */
	if (o->worlds) {
		char last[48];
		snprintf(last, sizeof last, "%s%u", o->world_prefix, o->worlds - 1);
		if (!crowd_world_name_valid(last)) {
			fprintf(
			    stderr,
			    "crowd-load: --world-prefix: '%s' is no world name (1 to %u bytes of A-Z a-z 0-9 _ . -)\n",
			    last, CROWD_WORLD_NAME_MAX);
			return -1;
		}
	}
	return 0;
}
