/* crowdctl — the command-line client of crowd-server, built on the C client
 * library: ping, spawn, target, velocity, remove, obstacle add|remove, paths,
 * and a live `watch` of snapshots or agent events, with --json output (one
 * object per line) for scripts. Every argument is parsed and checked into a
 * `command` before connecting; a usage error is one line on stderr naming the
 * command, the option and the reason, and exit status 2. */
#include "crowd/client.h"
#include "crowd/wire.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_OK = 0, EXIT_SERVER_ERROR = 1, EXIT_USAGE = 2, EXIT_CONNECTION = 3 };

#define DEFAULT_SERVER "127.0.0.1:7777"
#define MAX_BATCH 1000
#define MAX_SPAWN 1048574u /* the most agents a world holds (crowd-server --max-agents' upper bound) */

typedef struct ctl {
	crowd_client *client;
	bool json;
	int timeout_ms;
	const char *server;

	/* the answer awaited by wait_answer */
	uint32_t awaited;
	bool answered, answer_ok;
	crowd_v1_Error error;
	uint32_t *ids;
	size_t ids_count;

	bool welcomed;
	bool pong;
	uint64_t pong_time_us, pong_tick;
	int closed_status;
	bool closed;

	/* an Error sent unasked (request_id 0), e.g. shutting down */
	bool unasked_error;
	crowd_v1_Error unasked;
} ctl;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
	(void)sig;
	stop_requested = 1;
}

/* ------------------------------------------------------------------ output */

static void json_string(const char *s) {
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void print_ids_json(const uint32_t *ids, size_t n) {
	putchar('[');
	for (size_t i = 0; i < n; i++) printf("%s%" PRIu32, i ? "," : "", ids[i]);
	putchar(']');
}

/* Print a server Error (or a library failure when error is NULL) and return the exit code. */
static int report_failure(const ctl *c, const crowd_v1_Error *error, int status) {
	if (error) {
		if (c->json) {
			printf("{\"ok\":false,\"code\":\"%s\",\"code_num\":%d,\"request_id\":%" PRIu32
			       ",\"index\":%" PRIu32 ",\"message\":",
			       crowd_client_error_name(error->code), (int)error->code, error->request_id, error->index);
			json_string(error->message);
			printf("}\n");
		} else {
			fprintf(stderr, "crowdctl: %s (%d): %s\n", crowd_client_error_name(error->code),
			        (int)error->code, error->message);
		}
		return EXIT_SERVER_ERROR;
	}
	if (c->json) {
		printf("{\"ok\":false,\"status\":%d,\"message\":", status);
		json_string(crowd_client_strerror(status));
		printf(",\"server\":");
		json_string(c->server);
		printf("}\n");
	} else {
		fprintf(stderr, "crowdctl: %s: %s\n", c->server, crowd_client_strerror(status));
	}
	return EXIT_CONNECTION;
}

/* ------------------------------------------------------------------ callbacks */

static void on_welcome(void *user, const crowd_v1_Welcome *w) {
	(void)w;
	((ctl *)user)->welcomed = true;
}

static void on_ack(void *user, uint32_t request_id, const uint32_t *ids, size_t count) {
	ctl *c = user;
	if (request_id != c->awaited) return;
	c->answered = true;
	c->answer_ok = true;
	free(c->ids);
	c->ids = NULL;
	c->ids_count = 0;
	if (count) {
		c->ids = malloc(count * sizeof *ids);
		if (c->ids) {
			memcpy(c->ids, ids, count * sizeof *ids);
			c->ids_count = count;
		}
	}
}

static void on_error(void *user, const crowd_v1_Error *e) {
	ctl *c = user;
	if (e->request_id != 0 && e->request_id == c->awaited) {
		c->answered = true;
		c->answer_ok = false;
		c->error = *e;
	} else {
		c->unasked_error = true;
		c->unasked = *e;
	}
}

static void on_pong(void *user, uint64_t client_time_us, uint64_t server_tick) {
	ctl *c = user;
	c->pong = true;
	c->pong_time_us = client_time_us;
	c->pong_tick = server_tick;
}

static void on_closed(void *user, int status) {
	ctl *c = user;
	c->closed = true;
	c->closed_status = status;
}

/* ------------------------------------------------------------------ session */

/* Poll until *flag is set, the connection ends or the timeout passes. An Error
 * answering the awaited request while waiting for something else (a Hello
 * refused with BAD_TOKEN before the close) is reported as that Error. */
static int poll_until(ctl *c, const bool *flag) {
	uint64_t deadline = crowd_client_now_us() + (uint64_t)c->timeout_ms * 1000u;
	while (!*flag) {
		if (c->unasked_error) return report_failure(c, &c->unasked, 0);
		uint64_t now = crowd_client_now_us();
		if (now >= deadline) return report_failure(c, NULL, CROWD_CLIENT_ERR_TIMEOUT);
		int r = crowd_client_poll(c->client, (int)((deadline - now) / 1000u) + 1);
		if (*flag) break;
		if (c->unasked_error) return report_failure(c, &c->unasked, 0);
		if (flag != &c->answered && c->answered && !c->answer_ok) return report_failure(c, &c->error, 0);
		if (r < 0) return report_failure(c, NULL, r);
	}
	return EXIT_OK;
}

/* Send was queued as request `id` (or failed): wait for its Ack or Error. */
static int wait_answer(ctl *c, int64_t id) {
	if (id < 0) return report_failure(c, NULL, (int)id);
	c->awaited = (uint32_t)id;
	c->answered = false;
	int r = poll_until(c, &c->answered);
	if (r != EXIT_OK) return r;
	return c->answer_ok ? EXIT_OK : report_failure(c, &c->error, 0);
}

static void on_watch_snapshot(void *user, const crowd_client_snapshot *s);
static void on_watch_events(void *user, const crowd_v1_AgentEvents *events);
static void on_paths(void *user, const crowd_v1_Paths *paths);

/* The address was checked with the other arguments (main). */
static void on_world_list(void *user, const crowd_v1_WorldList *l);

static int open_session(ctl *c, const char *token, const char *name, bool keep_agents, const char *world) {
	crowd_client_options o = crowd_client_default_options();
	o.world = world;
	o.callbacks.on_world_list = on_world_list;
	o.connect_timeout_ms = c->timeout_ms;
	o.user = c;
	o.callbacks.on_welcome = on_welcome;
	o.callbacks.on_ack = on_ack;
	o.callbacks.on_error = on_error;
	o.callbacks.on_pong = on_pong;
	o.callbacks.on_closed = on_closed;
	o.callbacks.on_snapshot = on_watch_snapshot;
	o.callbacks.on_agent_events = on_watch_events;
	o.callbacks.on_paths = on_paths;
	/* several addresses: the first that accepts (a primary and its standbys) */
	int s = crowd_client_connect_list(c->server, &o, &c->client);
	if (s < 0) return report_failure(c, NULL, s);
	int64_t id = crowd_client_hello(c->client, token, name, keep_agents);
	if (id < 0) return report_failure(c, NULL, (int)id);
	c->awaited = (uint32_t)id;
	c->answered = false;
	return poll_until(c, &c->welcomed);
}

/* ------------------------------------------------------------------ parsing */

static bool parse_float(const char *s, float *out) {
	char *end = NULL;
	errno = 0;
	float v = strtof(s, &end);
	if (errno || end == s || *end || !isfinite(v)) return false;
	*out = v;
	return true;
}

/* "a,b[,c,d]": exactly n comma-separated finite floats. */
static bool parse_floats(const char *s, float *out, int n) {
	char buf[256];
	if (strlen(s) >= sizeof buf) return false;
	strcpy(buf, s);
	char *save = NULL, *tok = strtok_r(buf, ",", &save);
	for (int i = 0; i < n; i++) {
		if (!tok || !parse_float(tok, &out[i])) return false;
		tok = strtok_r(NULL, ",", &save);
	}
	return tok == NULL;
}

static bool parse_u32(const char *s, uint32_t *out) {
	char *end = NULL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v > UINT32_MAX || s[0] == '-') return false;
	*out = (uint32_t)v;
	return true;
}

/* A usage error: one line naming the command, the option and the reason;
 * returns EXIT_USAGE. Every argument is checked before connecting. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	fputs("crowdctl: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return EXIT_USAGE;
}

/* getopt_long returned '?' or ':' (opterr is off, optstrings start with ':'). */
static int option_error(const char *cmd, int o, char **argv) {
	const char *arg = argv[optind - 1];
	if (o == ':') return usage_error("%s %s: needs a value", cmd, arg);
	if (optopt && optopt < 128) return usage_error("%s: unknown option '-%c' (see crowdctl --help)", cmd, optopt);
	return usage_error("%s: unknown option '%s' (see crowdctl --help)", cmd, arg);
}

static bool want_u32(const char *where, const char *text, uint32_t min, uint32_t max, uint32_t *out) {
	uint32_t v;
	if (!parse_u32(text, &v) || v < min || v > max) {
		usage_error("%s: must be a whole number %" PRIu32 "..%" PRIu32 ", got '%s'", where, min, max, text);
		return false;
	}
	*out = v;
	return true;
}

static bool want_float(const char *where, const char *text, float *out) {
	if (!parse_float(text, out)) {
		usage_error("%s: must be a finite number, got '%s'", where, text);
		return false;
	}
	return true;
}

/* `form` names the n numbers, e.g. "X,Y". */
static bool want_floats(const char *where, const char *text, float *out, int n, const char *form) {
	if (!parse_floats(text, out, n)) {
		usage_error("%s: wants %s (%d finite numbers), got '%s'", where, form, n, text);
		return false;
	}
	return true;
}

/* The remaining arguments as ids (of agents or obstacles); at least one. */
static bool want_ids(const char *cmd, const char *usage, int argc, char **argv, uint32_t **ids, size_t *n) {
	*n = 0;
	*ids = NULL;
	if (argc <= 0) {
		usage_error("%s: no agent ids given (usage: %s)", cmd, usage);
		return false;
	}
	*ids = calloc((size_t)argc, sizeof **ids);
	if (!*ids) {
		usage_error("%s: out of memory", cmd);
		return false;
	}
	for (int i = 0; i < argc; i++) {
		if (!parse_u32(argv[i], &(*ids)[i])) {
			usage_error("%s: '%s' is not an agent id (a whole number)", cmd, argv[i]);
			free(*ids);
			*ids = NULL;
			return false;
		}
	}
	*n = (size_t)argc;
	return true;
}

/* ------------------------------------------------------------------ commands */

typedef struct spawn_layout {
	bool has_at, has_area;
	float at[2], area[4], spacing;
} spawn_layout;

/* A command with every argument parsed and checked, before any connection. */
typedef enum cmd_kind {
	CMD_PING,
	CMD_SPAWN,
	CMD_TARGET,
	CMD_VELOCITY,
	CMD_REMOVE,
	CMD_OBSTACLE_ADD,
	CMD_OBSTACLE_REMOVE,
	CMD_PATHS,
	CMD_WATCH,
	CMD_WORLD_CREATE,
	CMD_WORLD_LIST,
	CMD_WORLD_CLOSE,
	CMD_PROMOTE
} cmd_kind;

typedef struct command {
	cmd_kind kind;
	uint32_t count; /* ping --count, spawn --count */
	/* spawn */
	uint32_t batch;
	spawn_layout layout;
	crowd_v1_AgentSpec spec;
	/* target, velocity */
	float to[2];
	bool direct;
	/* target, velocity, remove, paths: agent ids; obstacle remove: its id */
	uint32_t *ids;
	size_t ids_count;
	uint32_t obstacle_id;
	/* obstacle add */
	float *x, *y;
	size_t vertices;
	/* watch */
	crowd_v1_Rect area;
	bool has_area, events, all_agents;
	uint32_t divisor, limit;
	/* world create / close */
	const char *world_name;
	crowd_v1_WorldSettings settings;
	bool delete_data;
} command;

static void command_free(command *cmd) {
	free(cmd->ids);
	free(cmd->x);
	free(cmd->y);
}

/* Arguments left after the options: a usage error. */
static int no_more_args(const char *cmd, int argc, char **argv) {
	if (optind < argc) return usage_error("%s: unexpected argument '%s'", cmd, argv[optind]);
	return EXIT_OK;
}

static int parse_ping(command *cmd, int argc, char **argv) {
	cmd->count = 1;
	static const struct option opts[] = {{"count", required_argument, 0, 'n'}, {0, 0, 0, 0}};
	optind = 1;
	for (int o; (o = getopt_long(argc, argv, ":n:", opts, NULL)) != -1;) {
		if (o != 'n') return option_error("ping", o, argv);
		if (!want_u32("ping --count", optarg, 1, 1000000, &cmd->count)) return EXIT_USAGE;
	}
	return no_more_args("ping", argc, argv);
}

static int run_ping(ctl *c, const command *cmd) {
	uint32_t count = cmd->count;
	uint64_t min = UINT64_MAX, max = 0, sum = 0;
	for (uint32_t i = 0; i < count; i++) {
		c->pong = false;
		uint64_t sent = crowd_client_now_us();
		int64_t id = crowd_client_ping(c->client, sent);
		if (id < 0) return report_failure(c, NULL, (int)id);
		int r = poll_until(c, &c->pong);
		if (r != EXIT_OK) return r;
		uint64_t rtt = crowd_client_now_us() - c->pong_time_us;
		if (rtt < min) min = rtt;
		if (rtt > max) max = rtt;
		sum += rtt;
		if (!c->json)
			printf("pong from %s: tick %" PRIu64 " rtt %.3f ms\n", crowd_client_address(c->client),
			       c->pong_tick, (double)rtt / 1000.0);
	}
	const crowd_v1_Welcome *w = crowd_client_welcome(c->client);
	if (c->json) {
		printf("{\"ok\":true,\"server_version\":");
		json_string(w->server_version);
		printf(",\"protocol\":\"%" PRIu32 ".%" PRIu32 "\",\"client_id\":%" PRIu32
		       ",\"role\":%d,\"tick_rate_hz\":%" PRIu32 ",\"server_tick\":%" PRIu64 ",\"pings\":%" PRIu32
		       ",\"rtt_us_min\":%" PRIu64 ",\"rtt_us_avg\":%" PRIu64 ",\"rtt_us_max\":%" PRIu64 "}\n",
		       w->protocol_major, w->protocol_minor, w->client_id, (int)w->role, w->tick_rate_hz, c->pong_tick,
		       count, min, sum / count, max);
	} else {
		printf("server %s protocol %" PRIu32 ".%" PRIu32 ", %" PRIu32
		       " Hz; rtt min/avg/max %.3f/%.3f/%.3f ms\n",
		       w->server_version, w->protocol_major, w->protocol_minor, w->tick_rate_hz, (double)min / 1000.0,
		       (double)sum / count / 1000.0, (double)max / 1000.0);
	}
	return EXIT_OK;
}

/* Agent i of n: a square grid around --at, or spread evenly over --area. */
static void layout_position(const spawn_layout *l, uint32_t i, uint32_t n, float *x, float *y) {
	if (l->has_area) {
		float w = l->area[2] - l->area[0], h = l->area[3] - l->area[1];
		uint32_t cols = (uint32_t)ceil(sqrt((double)n * (w > 0 ? w : 1) / (h > 0 ? h : 1)));
		if (cols == 0) cols = 1;
		uint32_t rows = (n + cols - 1) / cols;
		*x = l->area[0] + w * ((float)(i % cols) + 0.5f) / (float)cols;
		*y = l->area[1] + h * ((float)(i / cols) + 0.5f) / (float)(rows ? rows : 1);
		return;
	}
	uint32_t cols = (uint32_t)ceil(sqrt((double)n));
	float half = (float)(cols - 1) * l->spacing / 2.0f;
	*x = l->at[0] - half + (float)(i % cols) * l->spacing;
	*y = l->at[1] - half + (float)(i / cols) * l->spacing;
}

static int parse_spawn(command *cmd, int argc, char **argv) {
	cmd->count = 1;
	cmd->batch = MAX_BATCH;
	cmd->layout = (spawn_layout){.spacing = 1.0f};
	crowd_v1_AgentSpec *spec = &cmd->spec;
	*spec = (crowd_v1_AgentSpec)crowd_v1_AgentSpec_init_zero;
	static const struct option opts[] = {
	    {"count", required_argument, 0, 'n'},      {"at", required_argument, 0, 'a'},
	    {"area", required_argument, 0, 'A'},       {"target", required_argument, 0, 't'},
	    {"radius", required_argument, 0, 'r'},     {"max-speed", required_argument, 0, 'm'},
	    {"pref-speed", required_argument, 0, 'p'}, {"spacing", required_argument, 0, 's'},
	    {"batch", required_argument, 0, 'b'},      {0, 0, 0, 0}};
	optind = 1;
	for (int o; (o = getopt_long(argc, argv, ":n:a:A:t:r:m:p:s:b:", opts, NULL)) != -1;) {
		bool ok;
		float t[2];
		float *a = cmd->layout.area;
		switch (o) {
		case 'n':
			ok = want_u32("spawn --count", optarg, 1, MAX_SPAWN, &cmd->count);
			break;
		case 'a':
			ok = cmd->layout.has_at = want_floats("spawn --at", optarg, cmd->layout.at, 2, "X,Y");
			break;
		case 'A':
			ok = cmd->layout.has_area = want_floats("spawn --area", optarg, a, 4, "X0,Y0,X1,Y1");
			if (ok && (a[2] < a[0] || a[3] < a[1]))
				ok = !usage_error("spawn --area: wants X0 <= X1 and Y0 <= Y1, got '%s'", optarg);
			break;
		case 't':
			ok = spec->has_target = want_floats("spawn --target", optarg, t, 2, "X,Y");
			spec->target.x = t[0];
			spec->target.y = t[1];
			break;
		case 'r':
			ok = spec->has_radius = want_float("spawn --radius", optarg, &spec->radius);
			break;
		case 'm':
			ok = spec->has_max_speed = want_float("spawn --max-speed", optarg, &spec->max_speed);
			break;
		case 'p':
			ok = spec->has_pref_speed = want_float("spawn --pref-speed", optarg, &spec->pref_speed);
			break;
		case 's':
			ok = want_float("spawn --spacing", optarg, &cmd->layout.spacing);
			break;
		case 'b':
			ok = want_u32("spawn --batch", optarg, 1, 65535, &cmd->batch);
			break;
		default:
			return option_error("spawn", o, argv);
		}
		if (!ok) return EXIT_USAGE;
	}
	if (cmd->layout.has_at && cmd->layout.has_area)
		return usage_error("spawn: give --at X,Y or --area X0,Y0,X1,Y1, not both");
	return no_more_args("spawn", argc, argv);
}

static int run_spawn(ctl *c, const command *cmd) {
	const uint32_t count = cmd->count, batch = cmd->batch;
	const spawn_layout layout = cmd->layout;
	const crowd_v1_AgentSpec spec = cmd->spec;
	crowd_v1_AgentSpec *specs = calloc(batch < count ? batch : count, sizeof *specs);
	uint32_t *all = calloc(count, sizeof *all);
	if (!specs || !all) {
		free(specs);
		free(all);
		return report_failure(c, NULL, CROWD_CLIENT_ERR_NO_MEMORY);
	}
	size_t got = 0;
	int r = EXIT_OK;
	for (uint32_t first = 0; first < count && r == EXIT_OK; first += batch) {
		uint32_t n = count - first < batch ? count - first : batch;
		for (uint32_t i = 0; i < n; i++) {
			specs[i] = spec;
			if (layout.has_at || layout.has_area) {
				specs[i].has_position = true;
				layout_position(&layout, first + i, count, &specs[i].position.x, &specs[i].position.y);
			}
		}
		r = wait_answer(c, crowd_client_spawn(c->client, specs, n));
		for (size_t i = 0; r == EXIT_OK && i < c->ids_count && got < count; i++) all[got++] = c->ids[i];
	}
	if (r == EXIT_OK) {
		if (c->json) {
			printf("{\"ok\":true,\"count\":%zu,\"ids\":", got);
			print_ids_json(all, got);
			printf("}\n");
		} else {
			printf("spawned %zu agents:", got);
			for (size_t i = 0; i < got; i++) printf(" %" PRIu32, all[i]);
			printf("\n");
		}
	}
	free(specs);
	free(all);
	return r;
}

static int print_ok(const ctl *c, const char *what) {
	if (c->json) {
		printf("{\"ok\":true");
		if (c->ids_count) {
			printf(",\"ids\":");
			print_ids_json(c->ids, c->ids_count);
		}
		printf("}\n");
	} else {
		printf("%s", what);
		for (size_t i = 0; i < c->ids_count; i++) printf(" %" PRIu32, c->ids[i]);
		printf("\n");
	}
	return EXIT_OK;
}

static int parse_steer(command *cmd, int argc, char **argv, bool velocity) {
	const char *name = velocity ? "velocity" : "target";
	const char *usage = velocity ? "velocity --to VX,VY ID..." : "target --to X,Y [--direct] ID...";
	bool have = false;
	static const struct option target_opts[] = {
	    {"to", required_argument, 0, 't'}, {"direct", no_argument, 0, 'D'}, {0, 0, 0, 0}};
	static const struct option velocity_opts[] = {{"to", required_argument, 0, 't'}, {0, 0, 0, 0}};
	optind = 1;
	for (int o; (o = getopt_long(argc, argv, ":t:", velocity ? velocity_opts : target_opts, NULL)) != -1;) {
		if (o == 'D') {
			cmd->direct = true;
		} else if (o == 't') {
			char where[32];
			snprintf(where, sizeof where, "%s --to", name);
			if (!want_floats(where, optarg, cmd->to, 2, velocity ? "VX,VY" : "X,Y")) return EXIT_USAGE;
			have = true;
		} else {
			return option_error(name, o, argv);
		}
	}
	if (!have) return usage_error("%s: --to is required (usage: %s)", name, usage);
	return want_ids(name, usage, argc - optind, argv + optind, &cmd->ids, &cmd->ids_count) ? EXIT_OK : EXIT_USAGE;
}

/* target --to X,Y [--direct] ID...   and   velocity --to VX,VY ID... */
static int run_steer(ctl *c, const command *cmd) {
	const bool velocity = cmd->kind == CMD_VELOCITY;
	const float *v = cmd->to;
	/* a target is walked by path around obstacles (the server's default) unless --direct */
	int64_t id = velocity      ? crowd_client_set_velocities(c->client, cmd->ids, cmd->ids_count, &v[0], &v[1], 1)
	             : cmd->direct ? crowd_client_set_targets_steer(c->client, cmd->ids, cmd->ids_count, &v[0], &v[1],
	                                                            1, crowd_v1_SteerMode_STEER_DIRECT)
	                           : crowd_client_set_targets(c->client, cmd->ids, cmd->ids_count, &v[0], &v[1], 1);
	int r = wait_answer(c, id);
	return r == EXIT_OK ? print_ok(c, velocity ? "velocity set" : "target set") : r;
}

static int run_remove(ctl *c, const command *cmd) {
	int r = wait_answer(c, crowd_client_remove_agents(c->client, cmd->ids, cmd->ids_count));
	return r == EXIT_OK ? print_ok(c, "removed") : r;
}

/* promote: a follower (crowd-server --follow) becomes the primary (admin) */
static int run_promote(ctl *c) {
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_promote_tag;
	int r = wait_answer(c, crowd_client_send_message(c->client, &m));
	return r == EXIT_OK ? print_ok(c, "promoted") : r;
}

/* obstacle add X,Y X,Y X,Y [X,Y...] | obstacle remove ID: no options, so negative
 * coordinates need no "--". */
static int parse_obstacle(command *cmd, int argc, char **argv) {
	const char *usage = "obstacle add X,Y X,Y X,Y [X,Y...] | obstacle remove ID";
	if (argc >= 2 && strcmp(argv[1], "remove") == 0) {
		cmd->kind = CMD_OBSTACLE_REMOVE;
		if (argc != 3) return usage_error("obstacle remove: wants one obstacle id, got %d arguments", argc - 2);
		if (!parse_u32(argv[2], &cmd->obstacle_id))
			return usage_error("obstacle remove: '%s' is not an obstacle id (a whole number)", argv[2]);
		return EXIT_OK;
	}
	if (argc >= 2 && strcmp(argv[1], "add") == 0) {
		cmd->kind = CMD_OBSTACLE_ADD;
		size_t n = (size_t)argc - 2;
		if (n < 3) return usage_error("obstacle add: wants at least 3 vertices X,Y, got %zu", n);
		cmd->x = calloc(n, sizeof *cmd->x);
		cmd->y = calloc(n, sizeof *cmd->y);
		if (!cmd->x || !cmd->y) return usage_error("obstacle add: out of memory");
		for (size_t i = 0; i < n; i++) {
			float p[2];
			if (!parse_floats(argv[2 + i], p, 2))
				return usage_error("obstacle add: vertex %zu wants X,Y (2 finite numbers), got '%s'",
				                   i + 1, argv[2 + i]);
			cmd->x[i] = p[0];
			cmd->y[i] = p[1];
		}
		cmd->vertices = n;
		return EXIT_OK;
	}
	if (argc < 2) return usage_error("obstacle: wants add or remove (usage: %s)", usage);
	return usage_error("obstacle: '%s' is not add or remove (usage: %s)", argv[1], usage);
}

static int run_obstacle(ctl *c, const command *cmd) {
	if (cmd->kind == CMD_OBSTACLE_REMOVE) {
		int r = wait_answer(c, crowd_client_remove_obstacle(c->client, cmd->obstacle_id));
		return r == EXIT_OK ? print_ok(c, "obstacle removed") : r;
	}
	int r = wait_answer(c, crowd_client_add_obstacle(c->client, cmd->x, cmd->y, cmd->vertices));
	return r == EXIT_OK ? print_ok(c, "obstacle added:") : r;
}

/* paths ID...: each agent's corners to its goal (GetPaths, minor 1) */
static const ctl *the_paths_ctl;
static bool paths_answered;

static void on_paths(void *user, const crowd_v1_Paths *p) {
	const ctl *c = user;
	if (!the_paths_ctl || p->request_id != c->awaited) return;
	paths_answered = true;
	for (pb_size_t i = 0; i < p->paths_count; i++) {
		const crowd_v1_AgentPath *a = &p->paths[i];
		const uint32_t id = a->agent_id ? *a->agent_id : 0;
		const bool unreachable = a->unreachable && *a->unreachable;
		if (c->json) {
			printf("{\"agent\":%" PRIu32 ",\"corners\":[", id);
			for (pb_size_t k = 0; k < a->x_count && k < a->y_count; k++)
				printf("%s[%.3f,%.3f]", k ? "," : "", (double)a->x[k], (double)a->y[k]);
			printf("],\"corridor_polygons\":%u", (unsigned)a->corridor_count);
			if (a->goal) printf(",\"goal\":[%.3f,%.3f]", (double)a->goal->x, (double)a->goal->y);
			printf(",\"unreachable\":%s}\n", unreachable ? "true" : "false");
		} else {
			printf("agent %" PRIu32 ":", id);
			if (!a->goal) {
				printf(" not navigating\n");
				continue;
			}
			for (pb_size_t k = 0; k < a->x_count && k < a->y_count; k++)
				printf(" (%.2f, %.2f)", (double)a->x[k], (double)a->y[k]);
			printf("  goal (%.2f, %.2f)%s, %u corridor polygons\n", (double)a->goal->x, (double)a->goal->y,
			       unreachable ? " (target unreachable)" : "", (unsigned)a->corridor_count);
		}
	}
}

static int run_paths(ctl *c, const command *cmd) {
	the_paths_ctl = c;
	paths_answered = false;
	int64_t id = crowd_client_get_paths(c->client, cmd->ids, cmd->ids_count);
	if (id < 0) return report_failure(c, NULL, (int)id);
	c->awaited = (uint32_t)id;
	c->answered = false;
	/* Paths is not an Ack: wait for it (or an Error, which sets answered) */
	uint64_t deadline = crowd_client_now_us() + (uint64_t)c->timeout_ms * 1000u;
	while (!paths_answered && !c->answered && !c->closed && crowd_client_now_us() < deadline) {
		int p = crowd_client_poll(c->client, 100);
		if (p < 0) return report_failure(c, NULL, p);
	}
	if (paths_answered) return EXIT_OK;
	if (c->answered && !c->answer_ok) return report_failure(c, &c->error, 0);
	return report_failure(c, NULL, CROWD_CLIENT_ERR_TIMEOUT);
}

/* watch --events: one line per agent event (ARRIVED, UNREACHABLE, STUCK) */
static const ctl *the_events_ctl;
static uint64_t events_seen;

static void on_watch_events(void *user, const crowd_v1_AgentEvents *ev) {
	(void)user;
	const ctl *c = the_events_ctl;
	if (!c) return;
	static const char *const kinds[] = {"unspecified", "arrived", "unreachable", "stuck"};
	for (pb_size_t i = 0; i < ev->events_count; i++) {
		const crowd_v1_AgentEvent *e = &ev->events[i];
		const char *kind = (unsigned)e->kind < 4 ? kinds[e->kind] : "unknown";
		if (c->json)
			printf("{\"tick\":%" PRIu64 ",\"agent\":%" PRIu32 ",\"event\":\"%s\",\"point\":[%.3f,%.3f]"
			       ",\"target\":[%.3f,%.3f],\"owner\":%" PRIu32 "}\n",
			       ev->tick, e->agent_id, kind, (double)e->point.x, (double)e->point.y, (double)e->target.x,
			       (double)e->target.y, e->owner);
		else
			printf("tick %" PRIu64 "  agent %" PRIu32
			       "  %-11s at (%.2f, %.2f)  target (%.2f, %.2f)  owner %" PRIu32 "\n",
			       ev->tick, e->agent_id, kind, (double)e->point.x, (double)e->point.y, (double)e->target.x,
			       (double)e->target.y, e->owner);
		events_seen++;
	}
	fflush(stdout);
}

/* watch: one line per snapshot; rate over the last RATE_WINDOW snapshots. */
#define RATE_WINDOW 16

typedef struct watch_state {
	ctl *c;
	uint64_t limit, seen;
	uint64_t times[RATE_WINDOW];
	size_t bytes[RATE_WINDOW];
} watch_state;

static watch_state *the_watch;

static void on_watch_snapshot(void *user, const crowd_client_snapshot *s) {
	(void)user;
	watch_state *w = the_watch;
	if (!w) return;
	uint64_t now = crowd_client_now_us();
	size_t slot = (size_t)(w->seen % RATE_WINDOW);
	w->times[slot] = now;
	w->bytes[slot] = s->frame_bytes;
	w->seen++;
	double rate = 0, bytes_rate = 0;
	uint64_t n = w->seen < RATE_WINDOW ? w->seen : RATE_WINDOW;
	if (n >= 2) {
		uint64_t oldest = w->times[(size_t)((w->seen - n) % RATE_WINDOW)];
		size_t total = 0;
		for (uint64_t i = 1; i < n; i++) total += w->bytes[(size_t)((w->seen - i) % RATE_WINDOW)];
		double span = (double)(now - oldest) / 1e6;
		if (span > 0) {
			rate = (double)(n - 1) / span;
			bytes_rate = (double)total / span;
		}
	}
	if (w->c->json) {
		printf("{\"tick\":%" PRIu64 ",\"agents\":%" PRIu32 ",\"world_agents\":%" PRIu32
		       ",\"bytes\":%zu,\"keyframe\":%s"
		       ",\"snapshots_per_s\":%.2f,\"bytes_per_s\":%.0f,\"state_hash\":\"%016" PRIx64 "\"}\n",
		       s->tick, s->count, s->world_agent_count, s->frame_bytes, s->keyframe ? "true" : "false", rate,
		       bytes_rate, s->state_hash);
	} else {
		printf("tick %" PRIu64 "  agents %" PRIu32 "/%" PRIu32
		       "  bytes %zu%s  rate %.1f/s %.1f KiB/s  hash %016" PRIx64 "\n",
		       s->tick, s->count, s->world_agent_count, s->frame_bytes, s->keyframe ? " (key)" : "", rate,
		       bytes_rate / 1024.0, s->state_hash);
	}
	fflush(stdout);
}

static int parse_watch(command *cmd, int argc, char **argv) {
	static const struct option opts[] = {
	    {"area", required_argument, 0, 'A'},  {"divisor", required_argument, 0, 'd'},
	    {"count", required_argument, 0, 'n'}, {"events", no_argument, 0, 'E'},
	    {"all", no_argument, 0, 'L'},         {0, 0, 0, 0}};
	optind = 1;
	for (int o; (o = getopt_long(argc, argv, ":A:d:n:", opts, NULL)) != -1;) {
		float a[4];
		bool ok = true;
		switch (o) {
		case 'A':
			ok = cmd->has_area = want_floats("watch --area", optarg, a, 4, "X0,Y0,X1,Y1");
			if (ok) cmd->area = (crowd_v1_Rect){a[0], a[1], a[2], a[3]};
			break;
		case 'd':
			ok = want_u32("watch --divisor", optarg, 0, UINT32_MAX, &cmd->divisor);
			break;
		case 'n':
			ok = want_u32("watch --count", optarg, 0, UINT32_MAX, &cmd->limit);
			break;
		case 'E':
			cmd->events = true;
			break;
		case 'L':
			cmd->all_agents = true;
			break;
		default:
			return option_error("watch", o, argv);
		}
		if (!ok) return EXIT_USAGE;
	}
	return no_more_args("watch", argc, argv);
}

static int run_watch(ctl *c, const command *cmd) {
	watch_state w = {.c = c, .limit = cmd->limit};
	if (cmd->events || cmd->all_agents) {
		/* events instead of snapshots: this session's agents', or every agent's (--all, admin) */
		the_events_ctl = c;
		int r = wait_answer(c, crowd_client_subscribe_events(c->client, cmd->all_agents, false));
		if (r != EXIT_OK) return r;
		while (!stop_requested && (w.limit == 0 || events_seen < w.limit)) {
			if (c->unasked_error) return report_failure(c, &c->unasked, 0);
			int p = crowd_client_poll(c->client, 200);
			if (c->unasked_error) return report_failure(c, &c->unasked, 0);
			if (p < 0) return report_failure(c, NULL, p);
		}
		return EXIT_OK;
	}
	the_watch = &w;
	int r = wait_answer(c, crowd_client_subscribe(c->client, cmd->has_area ? &cmd->area : NULL, cmd->divisor));
	if (r != EXIT_OK) return r;
	while (!stop_requested && (w.limit == 0 || w.seen < w.limit)) {
		if (c->unasked_error) return report_failure(c, &c->unasked, 0);
		int p = crowd_client_poll(c->client, 200);
		if (c->unasked_error) return report_failure(c, &c->unasked, 0);
		if (p < 0) return report_failure(c, NULL, p);
	}
	return EXIT_OK;
}

/* ------------------------------------------------------------------ main */

/* world create NAME [settings] | world list | world close NAME [--delete-data] (minor 2) */
static int parse_world(command *cmd, int argc, char **argv) {
	const char *usage = "world create NAME [--tick-rate HZ] [--bounds X0,Y0,X1,Y1] [--avoidance quality|reference] "
	                    "[--navigation] [--max-agents N] | world list | world close NAME [--delete-data]";
	if (argc < 2) return usage_error("world: wants create, list or close (usage: %s)", usage);
	const char *sub = argv[1];
	if (strcmp(sub, "list") == 0) {
		cmd->kind = CMD_WORLD_LIST;
		if (argc > 2) return usage_error("world list: unexpected argument '%s'", argv[2]);
		return EXIT_OK;
	}
	if (strcmp(sub, "create") != 0 && strcmp(sub, "close") != 0)
		return usage_error("world: '%s' is not create, list or close (usage: %s)", sub, usage);
	const bool create = strcmp(sub, "create") == 0;
	cmd->kind = create ? CMD_WORLD_CREATE : CMD_WORLD_CLOSE;
	static const struct option create_opts[] = {
	    {"tick-rate", required_argument, 0, 'r'},  {"bounds", required_argument, 0, 'b'},
	    {"avoidance", required_argument, 0, 'a'},  {"navigation", no_argument, 0, 'n'},
	    {"max-agents", required_argument, 0, 'm'}, {0, 0, 0, 0}};
	static const struct option close_opts[] = {{"delete-data", no_argument, 0, 'd'}, {0, 0, 0, 0}};
	/* options before or after NAME: from "create"/"close" on, in permuting mode (optind 0
	 * makes glibc start afresh, with this optstring's ordering), so NAME ends up last */
	argc--;
	argv++;
	optind = 0;
	for (int o; (o = getopt_long(argc, argv, ":", create ? create_opts : close_opts, NULL)) != -1;) {
		float b[4];
		switch (o) {
		case 'r':
			if (!want_u32("world create --tick-rate", optarg, 1, 1000, &cmd->settings.tick_rate))
				return EXIT_USAGE;
			break;
		case 'b':
			if (!want_floats("world create --bounds", optarg, b, 4, "X0,Y0,X1,Y1")) return EXIT_USAGE;
			if (!(b[0] < b[2] && b[1] < b[3]))
				return usage_error("world create --bounds: wants X0 < X1 and Y0 < Y1, got '%s'",
				                   optarg);
			cmd->settings.bounds_min_x = b[0];
			cmd->settings.bounds_min_y = b[1];
			cmd->settings.bounds_max_x = b[2];
			cmd->settings.bounds_max_y = b[3];
			break;
		case 'a':
			if (strcmp(optarg, "quality") == 0)
				cmd->settings.avoidance = crowd_v1_Avoidance_AVOIDANCE_QUALITY;
			else if (strcmp(optarg, "reference") == 0)
				cmd->settings.avoidance = crowd_v1_Avoidance_AVOIDANCE_REFERENCE;
			else
				return usage_error("world create --avoidance: wants quality or reference, got '%s'",
				                   optarg);
			break;
		case 'n':
			cmd->settings.navigation = true;
			break;
		case 'm':
			if (!want_u32("world create --max-agents", optarg, 1, MAX_SPAWN, &cmd->settings.max_agents))
				return EXIT_USAGE;
			break;
		case 'd':
			cmd->delete_data = true;
			break;
		default:
			return option_error(create ? "world create" : "world close", o, argv);
		}
	}
	if (optind >= argc) return usage_error("world %s: wants a world NAME (usage: %s)", sub, usage);
	cmd->world_name = argv[optind++];
	if (!crowd_world_name_valid(cmd->world_name))
		return usage_error("world %s: '%s' is not a world name (1 to %u of A-Z a-z 0-9 _ . -)", sub,
		                   cmd->world_name, CROWD_WORLD_NAME_MAX);
	return no_more_args(create ? "world create" : "world close", argc, argv);
}

static bool worlds_answered;

static void on_world_list(void *user, const crowd_v1_WorldList *l) {
	ctl *c = user;
	if (l->request_id != c->awaited) return;
	worlds_answered = true;
	if (c->json) {
		printf("{\"ok\":true,\"max_worlds\":%" PRIu32 ",\"worlds\":[", l->max_worlds);
		for (pb_size_t i = 0; i < l->worlds_count; i++) {
			const crowd_v1_WorldInfo *w = &l->worlds[i];
			printf("%s{\"name\":", i ? "," : "");
			json_string(w->name);
			printf(",\"agents\":%" PRIu32 ",\"clients\":%" PRIu32 ",\"tick_rate\":%" PRIu32
			       ",\"tick\":%" PRIu64 ",\"lateness_p99_ms\":%.3f,\"persisted\":%s}",
			       w->agents, w->clients, w->tick_rate, w->tick, (double)w->lateness_p99_ms,
			       w->persisted ? "true" : "false");
		}
		printf("]}\n");
		return;
	}
	printf("%-32s %8s %7s %5s %12s %9s %s\n", "WORLD", "AGENTS", "CLIENTS", "HZ", "TICK", "LATE_P99", "PERSISTED");
	for (pb_size_t i = 0; i < l->worlds_count; i++) {
		const crowd_v1_WorldInfo *w = &l->worlds[i];
		printf("%-32s %8" PRIu32 " %7" PRIu32 " %5" PRIu32 " %12" PRIu64 " %7.2fms %s\n", w->name, w->agents,
		       w->clients, w->tick_rate, w->tick, (double)w->lateness_p99_ms, w->persisted ? "yes" : "no");
	}
	printf("%u of at most %" PRIu32 " worlds open\n", (unsigned)l->worlds_count, l->max_worlds);
}

static int run_world(ctl *c, const command *cmd) {
	if (cmd->kind == CMD_WORLD_LIST) {
		int64_t id = crowd_client_list_worlds(c->client);
		if (id < 0) return report_failure(c, NULL, (int)id);
		c->awaited = (uint32_t)id;
		c->answered = false;
		worlds_answered = false;
		int r = poll_until(c, &worlds_answered);
		if (r == EXIT_OK && c->answered && !c->answer_ok) return report_failure(c, &c->error, 0);
		return r;
	}
	if (cmd->kind == CMD_WORLD_CREATE) {
		int r = wait_answer(c, crowd_client_create_world(c->client, cmd->world_name, &cmd->settings));
		return r == EXIT_OK ? print_ok(c, "world created") : r;
	}
	int r = wait_answer(c, crowd_client_close_world(c->client, cmd->world_name, cmd->delete_data));
	return r == EXIT_OK ? print_ok(c, "world closed") : r;
}

static void usage(FILE *f) {
	fprintf(f, "usage: crowdctl [OPTIONS] COMMAND [ARGS]\n"
	           "\n"
	           "Talks to a crowd-server over TCP (protocol crowd.v1).\n"
	           "\n"
	           "options:\n"
	           "  --server HOST:PORT   server address (default " DEFAULT_SERVER ", or $CROWDCTL_SERVER); several,\n"
	           "                       comma-separated: the first that accepts the connection\n"
	           "  --token TOKEN        token sent in Hello; the server maps it to a role (or $CROWD_TOKEN)\n"
	           "  --name NAME          client name for the server's log (default crowdctl)\n"
	           "  --world NAME         the world to act in (default: the server's default world)\n"
	           "  --no-keep            remove this session's agents when it ends (default: they stay,\n"
	           "                       owned by nobody, so only an admin can command them later)\n"
	           "  --timeout MS         connect and answer timeout (default 5000)\n"
	           "  --json               print one JSON object per result line, for scripts\n"
	           "  --help               this text\n"
	           "\n"
	           "commands:\n"
	           "  ping [--count N]                         round trip time and server version\n"
	           "  spawn [--count N] [--at X,Y | --area X0,Y0,X1,Y1] [--spacing D]\n"
	           "        [--target X,Y] [--radius R] [--max-speed S] [--pref-speed S] [--batch N]\n"
	           "                                           spawn agents (a grid around --at, or spread\n"
	           "                                           over --area); prints their ids\n"
	           "  target --to X,Y [--direct] ID...         walk these agents to X,Y: by path around\n"
	           "                                           obstacles, or in a straight line (--direct)\n"
	           "  velocity --to VX,VY ID...                drive these agents with a preferred velocity\n"
	           "  remove ID...                             remove agents\n"
	           "  obstacle add X,Y X,Y X,Y [X,Y...]        add a polygon (counter-clockwise), prints its id\n"
	           "  obstacle remove ID                       remove an obstacle\n"
	           "  paths ID...                              each agent's path: corners, goal, corridor size\n"
	           "  watch [--area X0,Y0,X1,Y1] [--divisor N] [--count N]\n"
	           "                                           one line per snapshot: tick, agents, bytes, rate\n"
	           "  watch --events [--all] [--count N]       one line per agent event (arrived, unreachable\n"
	           "                                           with the point chosen, stuck): this session's\n"
	           "                                           agents, or every agent's (--all, admin)\n"
	           "  world create NAME [--tick-rate HZ] [--bounds X0,Y0,X1,Y1] [--avoidance quality|reference]\n"
	           "        [--navigation] [--max-agents N]    open a world (admin); unset: the server's settings\n"
	           "  world list                               the open worlds: agents, clients, tick rate,\n"
	           "                                           tick, lateness p99, persisted\n"
	           "  world close NAME [--delete-data]         close a world (admin); its clients are closed\n"
	           "  promote                                  make a follower (crowd-server --follow) the primary (admin)\n"
	           "\n"
	           "exit status: 0 ok, 1 the server answered with an Error, 2 usage error (one line on stderr\n"
	           "naming the option; every argument is checked before connecting), 3 connection failure\n");
}

/* Global options may follow the command too (`crowdctl watch --json`): move
 * them, with their values, in front of it. Command options never share their names. */
static char **hoist_global_options(int argc, char **argv) {
	static const char *const with_value[] = {"--server", "--token", "--name", "--timeout", "--world"};
	static const char *const flags[] = {"--json", "--no-keep", "--help"};
	char **out = calloc((size_t)argc + 1, sizeof *out);
	char **rest = calloc((size_t)argc + 1, sizeof *rest);
	if (!out || !rest) {
		free(out);
		free(rest);
		return NULL;
	}
	int n = 0, r = 0;
	out[n++] = argv[0];
	bool done = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool global = false, takes_value = false;
		if (!done && strcmp(a, "--") == 0) done = true;
		for (size_t k = 0; !done && k < sizeof with_value / sizeof with_value[0]; k++) {
			size_t len = strlen(with_value[k]);
			if (strncmp(a, with_value[k], len) == 0 && (a[len] == '\0' || a[len] == '=')) {
				global = true;
				takes_value = a[len] == '\0';
			}
		}
		for (size_t k = 0; !done && k < sizeof flags / sizeof flags[0]; k++) global |= strcmp(a, flags[k]) == 0;
		if (!global) {
			rest[r++] = argv[i];
			continue;
		}
		out[n++] = argv[i];
		if (takes_value && i + 1 < argc) out[n++] = argv[++i];
	}
	for (int i = 0; i < r; i++) out[n++] = rest[i];
	out[n] = NULL;
	free(rest);
	return out;
}

/* The command's arguments into cmd: EXIT_OK, or EXIT_USAGE with one line said. */
static int parse_command(command *cmd, int argc, char **argv) {
	const char *name = argv[0];
	static const struct {
		const char *name;
		cmd_kind kind;
	} commands[] = {{"ping", CMD_PING},         {"spawn", CMD_SPAWN},   {"target", CMD_TARGET},
	                {"velocity", CMD_VELOCITY}, {"remove", CMD_REMOVE}, {"obstacle", CMD_OBSTACLE_ADD},
	                {"paths", CMD_PATHS},       {"watch", CMD_WATCH},   {"world", CMD_WORLD_LIST},
	                {"promote", CMD_PROMOTE}};
	size_t k = 0;
	while (k < sizeof commands / sizeof commands[0] && strcmp(name, commands[k].name) != 0) k++;
	if (k == sizeof commands / sizeof commands[0])
		return usage_error("unknown command '%s' (commands: ping, spawn, target, velocity, remove, obstacle, "
		                   "paths, watch, world, promote; see crowdctl --help)",
		                   name);
	cmd->kind = commands[k].kind;
	opterr = 0; /* getopt's own messages are replaced by option_error's one line */
	switch (cmd->kind) {
	case CMD_PING:
		return parse_ping(cmd, argc, argv);
	case CMD_SPAWN:
		return parse_spawn(cmd, argc, argv);
	case CMD_TARGET:
	case CMD_VELOCITY:
		return parse_steer(cmd, argc, argv, cmd->kind == CMD_VELOCITY);
	case CMD_REMOVE:
	case CMD_PATHS:
		if (argc >= 2 && argv[1][0] == '-' && argv[1][1] != '\0' && (argv[1][1] < '0' || argv[1][1] > '9'))
			return usage_error("%s: unknown option '%s' (see crowdctl --help)", name, argv[1]);
		return want_ids(name, cmd->kind == CMD_REMOVE ? "remove ID..." : "paths ID...", argc - 1, argv + 1,
		                &cmd->ids, &cmd->ids_count)
		           ? EXIT_OK
		           : EXIT_USAGE;
	case CMD_OBSTACLE_ADD:
	case CMD_OBSTACLE_REMOVE:
		return parse_obstacle(cmd, argc, argv);
	case CMD_WATCH:
		return parse_watch(cmd, argc, argv);
	case CMD_WORLD_CREATE:
	case CMD_WORLD_LIST:
	case CMD_WORLD_CLOSE:
		return parse_world(cmd, argc, argv);
	case CMD_PROMOTE:
		return argc > 1 ? usage_error("promote: unexpected argument '%s'", argv[1]) : EXIT_OK;
	}
	return EXIT_USAGE;
}

static int run_command(ctl *c, const command *cmd) {
	switch (cmd->kind) {
	case CMD_PING:
		return run_ping(c, cmd);
	case CMD_SPAWN:
		return run_spawn(c, cmd);
	case CMD_TARGET:
	case CMD_VELOCITY:
		return run_steer(c, cmd);
	case CMD_REMOVE:
		return run_remove(c, cmd);
	case CMD_OBSTACLE_ADD:
	case CMD_OBSTACLE_REMOVE:
		return run_obstacle(c, cmd);
	case CMD_PATHS:
		return run_paths(c, cmd);
	case CMD_WATCH:
		return run_watch(c, cmd);
	case CMD_WORLD_CREATE:
	case CMD_WORLD_LIST:
	case CMD_WORLD_CLOSE:
		return run_world(c, cmd);
	case CMD_PROMOTE:
		return run_promote(c);
	}
	return EXIT_USAGE;
}

int main(int argc, char **argv) {
	static char **hoisted; /* static: reachable until exit, whichever return is taken */
	hoisted = hoist_global_options(argc, argv);
	if (!hoisted) return EXIT_CONNECTION;
	argv = hoisted;
	ctl c = {.timeout_ms = 5000, .server = getenv("CROWDCTL_SERVER")};
	if (!c.server) c.server = DEFAULT_SERVER;
	const char *token = getenv("CROWD_TOKEN"), *name = "crowdctl", *world = NULL;
	bool keep = true;
	static const struct option opts[] = {{"server", required_argument, 0, 's'},
	                                     {"token", required_argument, 0, 't'},
	                                     {"name", required_argument, 0, 'N'},
	                                     {"timeout", required_argument, 0, 'T'},
	                                     {"json", no_argument, 0, 'j'},
	                                     {"no-keep", no_argument, 0, 'k'},
	                                     {"help", no_argument, 0, 'h'},
	                                     {"world", required_argument, 0, 'w'},
	                                     {0, 0, 0, 0}};
	opterr = 0;
	for (int o; (o = getopt_long(argc, argv, "+:s:t:N:T:jkhw:", opts, NULL)) != -1;) {
		uint32_t ms;
		switch (o) {
		case 's':
			c.server = optarg;
			break;
		case 't':
			token = optarg;
			break;
		case 'N':
			name = optarg;
			break;
		case 'T':
			if (!want_u32("--timeout", optarg, 1, 3600000, &ms)) return EXIT_USAGE;
			c.timeout_ms = (int)ms;
			break;
		case 'j':
			c.json = true;
			break;
		case 'w':
			if (!crowd_world_name_valid(optarg))
				return usage_error("--world: '%s' is not a world name (1 to %u of A-Z a-z 0-9 _ . -)",
				                   optarg, CROWD_WORLD_NAME_MAX);
			world = optarg;
			break;
		case 'k':
			keep = false;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case ':':
			return usage_error("%s: needs a value", argv[optind - 1]);
		default:
			if (optopt && optopt < 128)
				return usage_error("unknown option '-%c' (see crowdctl --help)", optopt);
			return usage_error("unknown option '%s' (see crowdctl --help)", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage_error("no command given (ping, spawn, target, velocity, remove, obstacle, paths, watch, "
		                   "world; see crowdctl --help)");
	int cargc = argc - optind;
	char **cargv = argv + optind;

	/* Every argument is checked before connecting: a usage error is exit 2 whether or not a server runs. */
	command cmd = {0};
	int r = parse_command(&cmd, cargc, cargv);
	if (r == EXIT_OK && crowd_client_count_addresses(c.server) < 0)
		r = usage_error("--server%s: wants HOST:PORT (or several, comma-separated), got '%s'",
		                getenv("CROWDCTL_SERVER") == c.server ? " ($CROWDCTL_SERVER)" : "", c.server);
	if (r != EXIT_OK) {
		command_free(&cmd);
		return r;
	}
	if (cmd.kind == CMD_WATCH) {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
	}
	r = open_session(&c, token, name, keep, world);
	if (r == EXIT_OK) r = run_command(&c, &cmd);
	crowd_client_close(c.client, c.timeout_ms);
	command_free(&cmd);
	free(c.ids);
	return r;
}
