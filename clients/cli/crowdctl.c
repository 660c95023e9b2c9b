/* crowdctl — the command-line client of crowd-server, built on the C client
 * library: ping, spawn, target, velocity, remove, obstacle add|remove, paths,
 * and a live `watch` of snapshots or agent events, with --json output (one
 * object per line) for scripts. */
#include "crowd/client.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_OK = 0, EXIT_SERVER_ERROR = 1, EXIT_USAGE = 2, EXIT_CONNECTION = 3 };

#define DEFAULT_SERVER "127.0.0.1:7777"
#define MAX_BATCH 1000

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

static int open_session(ctl *c, const char *token, const char *name, bool keep_agents) {
	char host[256];
	uint16_t port;
	if (crowd_client_parse_address(c->server, host, sizeof host, &port) < 0) {
		fprintf(stderr, "crowdctl: --server wants HOST:PORT, got '%s'\n", c->server);
		return EXIT_USAGE;
	}
	crowd_client_options o = crowd_client_default_options();
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
	int s = crowd_client_connect(host, port, &o, &c->client);
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

/* The remaining arguments as agent ids. */
static bool parse_ids(int argc, char **argv, uint32_t **ids, size_t *n) {
	*n = 0;
	*ids = calloc(argc > 0 ? (size_t)argc : 1, sizeof **ids);
	if (!*ids) return false;
	for (int i = 0; i < argc; i++) {
		if (!parse_u32(argv[i], &(*ids)[i])) {
			fprintf(stderr, "crowdctl: not an id: '%s'\n", argv[i]);
			return false;
		}
	}
	*n = (size_t)argc;
	return argc > 0;
}

/* ------------------------------------------------------------------ commands */

static int cmd_ping(ctl *c, int argc, char **argv) {
	uint32_t count = 1;
	static const struct option opts[] = {{"count", required_argument, 0, 'n'}, {0, 0, 0, 0}};
	optind = 1;
	for (int o; (o = getopt_long(argc, argv, "n:", opts, NULL)) != -1;) {
		if (o != 'n' || !parse_u32(optarg, &count) || count == 0) return EXIT_USAGE;
	}
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
			printf("pong from %s: tick %" PRIu64 " rtt %.3f ms\n", c->server, c->pong_tick,
			       (double)rtt / 1000.0);
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

typedef struct spawn_layout {
	bool has_at, has_area;
	float at[2], area[4], spacing;
} spawn_layout;

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

static int cmd_spawn(ctl *c, int argc, char **argv) {
	uint32_t count = 1, batch = MAX_BATCH;
	spawn_layout layout = {.spacing = 1.0f};
	crowd_v1_AgentSpec spec = crowd_v1_AgentSpec_init_zero;
	static const struct option opts[] = {
	    {"count", required_argument, 0, 'n'},      {"at", required_argument, 0, 'a'},
	    {"area", required_argument, 0, 'A'},       {"target", required_argument, 0, 't'},
	    {"radius", required_argument, 0, 'r'},     {"max-speed", required_argument, 0, 'm'},
	    {"pref-speed", required_argument, 0, 'p'}, {"spacing", required_argument, 0, 's'},
	    {"batch", required_argument, 0, 'b'},      {0, 0, 0, 0}};
	optind = 1;
	for (int o; (o = getopt_long(argc, argv, "n:a:A:t:r:m:p:s:b:", opts, NULL)) != -1;) {
		bool ok = false;
		float t[2];
		switch (o) {
		case 'n':
			ok = parse_u32(optarg, &count) && count > 0;
			break;
		case 'a':
			ok = layout.has_at = parse_floats(optarg, layout.at, 2);
			break;
		case 'A':
			ok = layout.has_area = parse_floats(optarg, layout.area, 4);
			ok = ok && layout.area[2] >= layout.area[0] && layout.area[3] >= layout.area[1];
			break;
		case 't':
			ok = spec.has_target = parse_floats(optarg, t, 2);
			spec.target.x = t[0];
			spec.target.y = t[1];
			break;
		case 'r':
			ok = spec.has_radius = parse_float(optarg, &spec.radius);
			break;
		case 'm':
			ok = spec.has_max_speed = parse_float(optarg, &spec.max_speed);
			break;
		case 'p':
			ok = spec.has_pref_speed = parse_float(optarg, &spec.pref_speed);
			break;
		case 's':
			ok = parse_float(optarg, &layout.spacing);
			break;
		case 'b':
			ok = parse_u32(optarg, &batch) && batch > 0 && batch <= 65535;
			break;
		default:
			break;
		}
		if (!ok) {
			fprintf(stderr, "crowdctl spawn: bad option value\n");
			return EXIT_USAGE;
		}
	}
	if (optind != argc || (layout.has_at && layout.has_area)) {
		fprintf(stderr, "crowdctl spawn: give --at X,Y or --area X0,Y0,X1,Y1, not both\n");
		return EXIT_USAGE;
	}
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

/* target --to X,Y [--direct] ID...   and   velocity --to VX,VY ID... */
static int cmd_steer(ctl *c, int argc, char **argv, bool velocity) {
	float v[2];
	bool have = false, direct = false;
	static const struct option opts[] = {
	    {"to", required_argument, 0, 't'}, {"direct", no_argument, 0, 'D'}, {0, 0, 0, 0}};
	optind = 1;
	for (int o; (o = getopt_long(argc, argv, "t:", opts, NULL)) != -1;) {
		if (o == 'D' && !velocity) {
			direct = true;
			continue;
		}
		if (o != 't' || !(have = parse_floats(optarg, v, 2))) return EXIT_USAGE;
	}
	uint32_t *ids;
	size_t n;
	if (!have || !parse_ids(argc - optind, argv + optind, &ids, &n)) {
		fprintf(stderr, "crowdctl: usage: %s --to X,Y ID...\n", velocity ? "velocity" : "target");
		return EXIT_USAGE;
	}
	/* a target is walked by path around obstacles (the server's default) unless --direct */
	int64_t id = velocity ? crowd_client_set_velocities(c->client, ids, n, &v[0], &v[1], 1)
	             : direct ? crowd_client_set_targets_steer(c->client, ids, n, &v[0], &v[1], 1,
	                                                       crowd_v1_SteerMode_STEER_DIRECT)
	                      : crowd_client_set_targets(c->client, ids, n, &v[0], &v[1], 1);
	free(ids);
	int r = wait_answer(c, id);
	return r == EXIT_OK ? print_ok(c, velocity ? "velocity set" : "target set") : r;
}

static int cmd_remove(ctl *c, int argc, char **argv) {
	uint32_t *ids;
	size_t n;
	if (!parse_ids(argc - 1, argv + 1, &ids, &n)) {
		fprintf(stderr, "crowdctl: usage: remove ID...\n");
		free(ids);
		return EXIT_USAGE;
	}
	int r = wait_answer(c, crowd_client_remove_agents(c->client, ids, n));
	free(ids);
	return r == EXIT_OK ? print_ok(c, "removed") : r;
}

static int cmd_obstacle(ctl *c, int argc, char **argv) {
	if (argc >= 3 && strcmp(argv[1], "remove") == 0) {
		uint32_t id;
		if (argc != 3 || !parse_u32(argv[2], &id)) return EXIT_USAGE;
		int r = wait_answer(c, crowd_client_remove_obstacle(c->client, id));
		return r == EXIT_OK ? print_ok(c, "obstacle removed") : r;
	}
	if (argc >= 4 && strcmp(argv[1], "add") == 0) {
		size_t n = (size_t)argc - 2;
		float *x = calloc(n, sizeof *x), *y = calloc(n, sizeof *y);
		bool ok = x && y;
		for (size_t i = 0; ok && i < n; i++) {
			float p[2];
			ok = parse_floats(argv[2 + i], p, 2);
			if (ok) {
				x[i] = p[0];
				y[i] = p[1];
			}
		}
		int r = ok ? wait_answer(c, crowd_client_add_obstacle(c->client, x, y, n)) : EXIT_USAGE;
		free(x);
		free(y);
		if (r == EXIT_USAGE) fprintf(stderr, "crowdctl: usage: obstacle add X,Y X,Y [X,Y...]\n");
		return r == EXIT_OK ? print_ok(c, "obstacle added:") : r;
	}
	fprintf(stderr, "crowdctl: usage: obstacle add X,Y X,Y [X,Y...] | obstacle remove ID\n");
	return EXIT_USAGE;
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

static int cmd_paths(ctl *c, int argc, char **argv) {
	uint32_t *ids;
	size_t n;
	if (!parse_ids(argc - 1, argv + 1, &ids, &n)) {
		fprintf(stderr, "crowdctl: usage: paths ID...\n");
		free(ids);
		return EXIT_USAGE;
	}
	the_paths_ctl = c;
	paths_answered = false;
	int64_t id = crowd_client_get_paths(c->client, ids, n);
	free(ids);
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
			printf("tick %" PRIu64 "  agent %" PRIu32 "  %-11s at (%.2f, %.2f)  target (%.2f, %.2f)  owner %" PRIu32
			       "\n",
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

static int cmd_watch(ctl *c, int argc, char **argv) {
	crowd_v1_Rect area;
	bool has_area = false;
	uint32_t divisor = 0;
	bool events = false, all_agents = false;
	watch_state w = {.c = c};
	static const struct option opts[] = {{"area", required_argument, 0, 'A'},
	                                     {"divisor", required_argument, 0, 'd'},
	                                     {"count", required_argument, 0, 'n'},
	                                     {"events", no_argument, 0, 'E'},
	                                     {"all", no_argument, 0, 'L'},
	                                     {0, 0, 0, 0}};
	optind = 1;
	for (int o; (o = getopt_long(argc, argv, "A:d:n:", opts, NULL)) != -1;) {
		float a[4];
		uint32_t n;
		bool ok = false;
		switch (o) {
		case 'A':
			ok = has_area = parse_floats(optarg, a, 4);
			area = (crowd_v1_Rect){a[0], a[1], a[2], a[3]};
			break;
		case 'd':
			ok = parse_u32(optarg, &divisor);
			break;
		case 'n':
			ok = parse_u32(optarg, &n);
			w.limit = n;
			break;
		case 'E':
			ok = events = true;
			break;
		case 'L':
			ok = all_agents = true;
			break;
		default:
			break;
		}
		if (!ok) return EXIT_USAGE;
	}
	if (events || all_agents) {
		/* events instead of snapshots: this session's agents', or every agent's (--all, admin) */
		the_events_ctl = c;
		int r = wait_answer(c, crowd_client_subscribe_events(c->client, all_agents, false));
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
	int r = wait_answer(c, crowd_client_subscribe(c->client, has_area ? &area : NULL, divisor));
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

static void usage(FILE *f) {
	fprintf(f, "usage: crowdctl [OPTIONS] COMMAND [ARGS]\n"
	           "\n"
	           "Talks to a crowd-server over TCP (protocol crowd.v1).\n"
	           "\n"
	           "options:\n"
	           "  --server HOST:PORT   server address (default " DEFAULT_SERVER ", or $CROWDCTL_SERVER)\n"
	           "  --token TOKEN        token sent in Hello; the server maps it to a role (or $CROWD_TOKEN)\n"
	           "  --name NAME          client name for the server's log (default crowdctl)\n"
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
	           "  obstacle add X,Y X,Y [X,Y...]            add a polygon (counter-clockwise), prints its id\n"
	           "  obstacle remove ID                       remove an obstacle\n"
	           "  paths ID...                              each agent's path: corners, goal, corridor size\n"
	           "  watch [--area X0,Y0,X1,Y1] [--divisor N] [--count N]\n"
	           "                                           one line per snapshot: tick, agents, bytes, rate\n"
	           "  watch --events [--all] [--count N]       one line per agent event (arrived, unreachable\n"
	           "                                           with the point chosen, stuck): this session's\n"
	           "                                           agents, or every agent's (--all, admin)\n"
	           "\n"
	           "exit status: 0 ok, 1 the server answered with an Error, 2 usage, 3 connection failure\n");
}

/* Global options may follow the command too (`crowdctl watch --json`): move
 * them, with their values, in front of it. Command options never share their names. */
static char **hoist_global_options(int argc, char **argv) {
	static const char *const with_value[] = {"--server", "--token", "--name", "--timeout"};
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

int main(int argc, char **argv) {
	static char **hoisted; /* static: reachable until exit, whichever return is taken */
	hoisted = hoist_global_options(argc, argv);
	if (!hoisted) return EXIT_CONNECTION;
	argv = hoisted;
	ctl c = {.timeout_ms = 5000, .server = getenv("CROWDCTL_SERVER")};
	if (!c.server) c.server = DEFAULT_SERVER;
	const char *token = getenv("CROWD_TOKEN"), *name = "crowdctl";
	bool keep = true;
	static const struct option opts[] = {
	    {"server", required_argument, 0, 's'}, {"token", required_argument, 0, 't'},
	    {"name", required_argument, 0, 'N'},   {"timeout", required_argument, 0, 'T'},
	    {"json", no_argument, 0, 'j'},         {"no-keep", no_argument, 0, 'k'},
	    {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
	for (int o; (o = getopt_long(argc, argv, "+s:t:N:T:jkh", opts, NULL)) != -1;) {
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
			if (!parse_u32(optarg, &ms) || ms == 0 || ms > 3600000) {
				usage(stderr);
				return EXIT_USAGE;
			}
			c.timeout_ms = (int)ms;
			break;
		case 'j':
			c.json = true;
			break;
		case 'k':
			keep = false;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	int cargc = argc - optind;
	char **cargv = argv + optind;
	const char *cmd = cargv[0];
	static const char *const known[] = {"ping",     "spawn", "target", "velocity", "remove",
	                                    "obstacle", "watch", "paths"};
	bool is_known = false;
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) is_known |= strcmp(cmd, known[i]) == 0;
	if (!is_known) {
		fprintf(stderr, "crowdctl: unknown command '%s'\n", cmd);
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(cmd, "watch") == 0) {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
	}

	int r = open_session(&c, token, name, keep);
	if (r == EXIT_OK) {
		if (strcmp(cmd, "ping") == 0)
			r = cmd_ping(&c, cargc, cargv);
		else if (strcmp(cmd, "spawn") == 0)
			r = cmd_spawn(&c, cargc, cargv);
		else if (strcmp(cmd, "target") == 0)
			r = cmd_steer(&c, cargc, cargv, false);
		else if (strcmp(cmd, "velocity") == 0)
			r = cmd_steer(&c, cargc, cargv, true);
		else if (strcmp(cmd, "remove") == 0)
			r = cmd_remove(&c, cargc, cargv);
		else if (strcmp(cmd, "obstacle") == 0)
			r = cmd_obstacle(&c, cargc, cargv);
		else if (strcmp(cmd, "paths") == 0)
			r = cmd_paths(&c, cargc, cargv);
		else
			r = cmd_watch(&c, cargc, cargv);
		if (r == EXIT_USAGE) usage(stderr);
	}
	crowd_client_close(c.client, c.timeout_ms);
	free(c.ids);
	return r;
}
