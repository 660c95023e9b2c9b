/* http_ext.c — glue between the HTTP listener (transport/http.c, ws.c) and the
 * server: /healthz from server_status, /metrics from server_metrics, and each
 * WebSocket connection as a session of the server's host (ws_session.h). */
#include "http_ext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agones_server.h"
#include "http.h"
#include "log.h"
#include "metrics_http.h"
#include "storage.h"
#include "ws_session.h"

#ifndef CROWD_WEB_ROOT
#define CROWD_WEB_ROOT "web"
#endif

typedef struct http_ext {
	server *srv;
	crowd_http *http;
	char web_root[1024];
	char proto_path[1100];
	uint64_t started_ns;
} http_ext;

/* ------------------------------------------------------------------ WebSocket clients */

static void *hook_ws_open(void *user, crowd_http_ws *conn, const char *peer) {
	http_ext *x = user;
	return ws_session_open(&x->srv->host, conn, peer);
}

/* ------------------------------------------------------------------ /healthz, /metrics */

static void hook_health(void *user, crowd_http_health *out) {
	http_ext *x = user;
	const server_status *st = &x->srv->status;
	out->tick = st->tick;
	out->agents = st->agents;
	out->connections = st->connections;
	out->shutting_down = st->shutting_down;
	/* Under Agones: the GameServer's name and labels, and whether the sidecar took Ready. */
	static char extra[16384];
	char member[16000];
	size_t n = agones_server_healthz_json(member, sizeof member);
	if (n > 0 && n < sizeof member) {
		snprintf(extra, sizeof extra, ",\"agones\":%s", member);
		out->extra_members = extra;
	}
}

static char *hook_metrics(void *user, size_t *len) {
	http_ext *x = user;
	const server *srv = x->srv;
	metrics_extra extra = {
	    .tick = srv->status.tick,
	    .uptime_seconds = (double)(server_now_ns() - x->started_ns) / 1e9,
	    .tick_rate_hz = srv->cfg->tick_rate_hz,
	};
	storage_stats storage;
	if (srv->world->storage) { /* persistence: the default world's */
		storage_get_stats(srv->world->storage, &storage);
		extra.storage = &storage;
	}
	metrics_world *worlds = calloc(srv->room_count ? srv->room_count : 1, sizeof *worlds);
	if (worlds) { /* one series per world (the default world's also fill the unlabelled tick series) */
		for (uint32_t i = 0; i < srv->room_count; i++) {
			const room *r = srv->rooms[i];
			worlds[i] = (metrics_world){
			    .name = r->name,
			    .agents = r->status->agents,
			    .clients = r->clients,
			    .tick_rate_hz = r->cfg.tick_rate_hz,
			    .tick = r->status->tick,
			    .ticks = r->metrics->ticks,
			    .ticks_overrun = r->metrics->ticks_overrun,
			    .tick_periods_skipped = r->metrics->tick_periods_skipped,
			    .tick_seconds_sum = r->metrics->tick_duration_sum_seconds,
			    .lateness_p99_seconds = room_lateness_p99_ms(r) * 1e-3,
			};
		}
		extra.worlds = worlds;
		extra.world_count = srv->room_count;
		extra.max_worlds = srv->cfg->max_worlds;
	}
	char *text =
	    metrics_render_prometheus(&srv->metrics, x->http ? crowd_http_get_stats(x->http) : NULL, &extra, len);
	free(worlds);
	return text;
}

/* ------------------------------------------------------------------ extension */

static int ext_start(server *srv, void *state) {
	http_ext *x = state;
	crowd_http_config cfg;
	crowd_http_default_config(&cfg);
	cfg.host = srv->cfg->http.host;
	cfg.port = srv->cfg->http.port;
	cfg.web_root = x->web_root;
	cfg.proto_path = x->proto_path;
	cfg.ws_max_message = srv->cfg->max_frame_bytes;
	cfg.max_connections = srv->cfg->max_connections + 64; /* room for scrapes and refusals */
	cfg.flush_timeout_ms = (uint32_t)(srv->cfg->flush_timeout_s * 1000.0);
	cfg.max_pending_per_peer = srv->cfg->max_pending_per_peer;
	cfg.reserved_slots = srv->cfg->http_reserved_slots;
	cfg.ws_unsent_limit = srv->cfg->output_soft_limit > 65536 ? srv->cfg->output_soft_limit : 65536;
	cfg.header_timeout_busy_ms = (uint32_t)(srv->cfg->hello_timeout_busy_s * 1000.0);
	crowd_http_hooks hooks = {
	    .user = x,
	    .health = hook_health,
	    .metrics = hook_metrics,
	    .ws_open = hook_ws_open,
	    .ws_message = ws_session_message,
	    .ws_closed = ws_session_closed,
	};
	x->started_ns = server_now_ns();
	int rc = crowd_http_start(&x->http, srv->loop, &cfg, &hooks);
	if (rc != 0) {
		log_error("cannot listen for HTTP on %s:%u: %s", cfg.host, (unsigned)cfg.port, uv_strerror(rc));
		x->http = NULL;
		return -1;
	}
	int port = crowd_http_port(x->http);
	const char *host = cfg.host;
	bool v6 = strchr(host, ':') != NULL;
	printf("listening http %s%s%s:%d\n", v6 ? "[" : "", host, v6 ? "]" : "", port);
	/* A wildcard address is no place to point a browser at: show loopback. */
	const char *browse = strcmp(host, "0.0.0.0") == 0 ? "127.0.0.1" : strcmp(host, "::") == 0 ? "::1" : host;
	bool browse_v6 = strchr(browse, ':') != NULL;
	printf("viewer: http://%s%s%s:%d/  (metrics: /metrics, health: /healthz, WebSocket: /ws)\n",
	       browse_v6 ? "[" : "", browse, browse_v6 ? "]" : "", port);
	fflush(stdout);
	log_info("HTTP on %s:%d serving %s", host, port, x->web_root);
	return 0;
}

static void on_http_stopped(void *arg) {
	free(arg);
}

static void ext_stop(server *srv, void *state) {
	(void)srv;
	http_ext *x = state;
	if (x->http)
		crowd_http_stop(x->http, on_http_stopped, x);
	else
		free(x);
}

int http_ext_register(server *srv, const char *web_root) {
	http_ext *x = calloc(1, sizeof *x);
	if (!x) return -1;
	x->srv = srv;
	snprintf(x->web_root, sizeof x->web_root, "%s", web_root && *web_root ? web_root : CROWD_WEB_ROOT);
	snprintf(x->proto_path, sizeof x->proto_path, "%s/crowd.proto", x->web_root);
	server_extension ext = {.name = "http", .state = x, .start = ext_start, .stop = ext_stop};
	if (server_add_extension(srv, &ext) != 0) {
		free(x);
		return -1;
	}
	return 0;
}
