/* agones_server.c — glue between crowd-server and the Agones SDK client: the
 * extension's start/drain/stop hooks, Ready deferred to the loop's first turn
 * (after every extension's listener is up), the worlds the server holds as the
 * GameServer's Counter "rooms" and List "worlds", and the client's log on the server's. */
#include "agones_server.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agones.h"
#include "log.h"

/* One server per process: the extension state is a single static object. */
static struct {
	crowd_agones *client;
	uv_timer_t ready_timer;
	bool ready_timer_open;
	uint64_t last_tick; /* at the last health check; UINT64_MAX before the first */
} agones_ext;

/* Healthy = the world stepped since the last ping (every period is many ticks), or
 * this is the first ping. A step wedged on the thread pool stops the pings. */
static bool world_advances(void *ctx) {
	const server *srv = ctx;
	bool advanced = agones_ext.last_tick == UINT64_MAX || srv->status.tick != agones_ext.last_tick;
	agones_ext.last_tick = srv->status.tick;
	return advanced;
}

static void on_client_log(void *ctx, crowd_agones_log_level level, const char *line) {
	(void)ctx;
	static const log_level levels[] = {LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR};
	log_write(levels[level], "agones: %s", line);
}

/* Counter "rooms": count = worlds open, capacity = --max-worlds; List "worlds": their
 * names. Sent whole at start and on every change, so a lost or refused update heals
 * at the next one (and is retried until the sidecar takes it). */
static void push_rooms(server *srv) {
	uint32_t count = server_world_count(srv);
	const char **names = count > 0 ? malloc(count * sizeof *names) : NULL;
	if (count > 0 && names == NULL) {
		log_error("agones: no memory for the worlds list");
		return;
	}
	uint32_t named = 0;
	for (uint32_t i = 0; i < count; i++) {
		const char *name = server_world_name(srv, i);
		if (name != NULL) names[named++] = name;
	}
	if (crowd_agones_set_rooms(agones_ext.client, server_world_capacity(srv), names, named) != 0)
		log_error("agones: no memory for the rooms counter and worlds list");
	free(names);
}

static void ext_worlds_changed(server *srv, void *state) {
	(void)state;
	if (agones_ext.client != NULL && !srv->status.shutting_down) push_rooms(srv);
}

/* Runs on the loop's first turn: server_start has returned, so the TCP listener and
 * every other extension's listener (HTTP) accept connections. */
static void on_ready_timer(uv_timer_t *t) {
	server *srv = t->data;
	if (!srv->status.ready || srv->status.shutting_down) return;
	crowd_agones_ready(agones_ext.client);
}

static int ext_start(server *srv, void *state) {
	(void)state;
	const server_config *cfg = srv->cfg;
	crowd_agones_config acfg;
	crowd_agones_default_config(&acfg);
	acfg.health_period_ms = cfg->agones_health_ms;
	acfg.request_timeout_ms = cfg->agones_timeout_ms;
	acfg.log = on_client_log;
	acfg.healthy = world_advances;
	acfg.healthy_ctx = srv;
	agones_ext.last_tick = UINT64_MAX;
	int rc = crowd_agones_start(&agones_ext.client, srv->loop, &acfg, &srv->metrics.agones);
	if (rc != 0) {
		log_error("agones: cannot start the SDK client: %s", uv_strerror(rc));
		return -1;
	}
	uv_timer_init(srv->loop, &agones_ext.ready_timer);
	agones_ext.ready_timer.data = srv;
	agones_ext.ready_timer_open = true;
	uv_timer_start(&agones_ext.ready_timer, on_ready_timer, 0, 0);
	push_rooms(srv);
	return 0;
}

static void ext_drain(server *srv, void *state) {
	(void)srv;
	(void)state;
	if (agones_ext.ready_timer_open) uv_timer_stop(&agones_ext.ready_timer);
	crowd_agones_shutdown(agones_ext.client, NULL, NULL);
}

static void on_client_closed(void *arg) {
	(void)arg;
	agones_ext.client = NULL;
}

static void ext_stop(server *srv, void *state) {
	(void)srv;
	(void)state;
	if (agones_ext.ready_timer_open) {
		agones_ext.ready_timer_open = false;
		uv_close((uv_handle_t *)&agones_ext.ready_timer, NULL);
	}
	/* A /shutdown in flight is let finish (bounded by --agones-timeout-ms). */
	crowd_agones_close(agones_ext.client, on_client_closed, NULL);
}

int agones_server_register(server *srv) {
	if (!srv->cfg->agones) return 0;
	server_extension ext = {.name = "agones",
	                        .start = ext_start,
	                        .drain = ext_drain,
	                        .stop = ext_stop,
	                        .on_worlds_changed = ext_worlds_changed};
	return server_add_extension(srv, &ext);
}

size_t agones_server_healthz_json(char *buf, size_t cap) {
	if (agones_ext.client == NULL) {
		if (cap > 0) buf[0] = '\0';
		return 0;
	}
	return crowd_agones_healthz_json(agones_ext.client, buf, cap);
}
