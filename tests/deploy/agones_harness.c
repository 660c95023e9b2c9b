/* agones_harness.c — a stand-in game server for the Agones client tests: a TCP
 * listener, a deadline-scheduled tick that counts overruns, and the Agones client on
 * one libuv loop, with the same Ready-after-listen and SIGTERM drain as crowd-server.
 * Any connection to the listener gets one line of counters and is closed. */
#include "agones.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

typedef struct harness {
	uv_loop_t *loop;
	uv_tcp_t listener;
	uv_timer_t tick;
	uv_signal_t sigterm;
	uint64_t period_ns;
	uint64_t next_deadline_ns;
	uint64_t ticks;
	uint64_t overruns;
	crowd_agones *agones;
	crowd_agones_counters counters;
	bool shutdown_ok;
	uv_timer_t stall; /* --stall-after-ms: the tick stops, the loop goes on */
	uint64_t last_health_tick;
} harness;

static harness h;

static void on_tick(uv_timer_t *t) {
	(void)t;
	uint64_t now = uv_hrtime();
	h.ticks++;
	h.next_deadline_ns += h.period_ns;
	if (h.next_deadline_ns + h.period_ns <= now) { /* a whole period late: count, skip ahead */
		h.overruns++;
		h.next_deadline_ns = now + h.period_ns;
	}
	uint64_t wait_ns = h.next_deadline_ns > now ? h.next_deadline_ns - now : 0;
	uv_timer_start(&h.tick, on_tick, wait_ns / 1000000u, 0);
}

/* Like crowd-server: healthy while the tick advances (first ping always). */
static bool ticks_advance(void *ctx) {
	(void)ctx;
	bool advanced = h.last_health_tick == UINT64_MAX || h.ticks != h.last_health_tick;
	h.last_health_tick = h.ticks;
	return advanced;
}

static void on_stall(uv_timer_t *t) {
	(void)t;
	uv_timer_stop(&h.tick);
}

static int format_stats(char *buf, size_t cap) {
	return snprintf(
	    buf, cap,
	    "ticks %llu overruns %llu ready %llu health_ok %llu health_failed %llu "
	    "health_skipped %llu ready_failed %llu gameserver_ok %llu health_withheld %llu",
	    (unsigned long long)h.ticks, (unsigned long long)h.overruns, (unsigned long long)h.counters.ready,
	    (unsigned long long)h.counters.ok[CROWD_AGONES_HEALTH],
	    (unsigned long long)h.counters.failed[CROWD_AGONES_HEALTH], (unsigned long long)h.counters.health_skipped,
	    (unsigned long long)h.counters.failed[CROWD_AGONES_READY],
	    (unsigned long long)h.counters.ok[CROWD_AGONES_GAMESERVER], (unsigned long long)h.counters.health_withheld);
}

typedef struct stats_conn {
	uv_tcp_t tcp;
	uv_write_t write;
	char line[256];
} stats_conn;

static void on_conn_closed(uv_handle_t *handle) {
	free(handle->data);
}

static void on_stats_written(uv_write_t *w, int status) {
	(void)status;
	stats_conn *c = w->data;
	uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void on_connection(uv_stream_t *server, int status) {
	if (status < 0) return;
	stats_conn *c = calloc(1, sizeof *c);
	if (c == NULL) return;
	c->tcp.data = c;
	c->write.data = c;
	uv_tcp_init(h.loop, &c->tcp);
	if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
		uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
		return;
	}
	int n = format_stats(c->line, sizeof c->line - 1);
	c->line[n++] = '\n';
	uv_buf_t buf = uv_buf_init(c->line, (unsigned)n);
	if (uv_write(&c->write, (uv_stream_t *)&c->tcp, &buf, 1, on_stats_written) != 0)
		uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void on_agones_closed(void *arg) {
	(void)arg;
	uv_close((uv_handle_t *)&h.listener, NULL);
	uv_close((uv_handle_t *)&h.tick, NULL);
	uv_close((uv_handle_t *)&h.sigterm, NULL);
	uv_close((uv_handle_t *)&h.stall, NULL);
}

static void on_shutdown_done(void *arg, bool ok) {
	(void)arg;
	h.shutdown_ok = ok;
	crowd_agones_close(h.agones, on_agones_closed, NULL);
	h.agones = NULL;
}

static void on_sigterm(uv_signal_t *s, int signum) {
	(void)signum;
	uv_signal_stop(s);
	/* Stop accepting first, as crowd-server does, then tell the sidecar. */
	uv_read_stop((uv_stream_t *)&h.listener);
	crowd_agones_shutdown(h.agones, on_shutdown_done, NULL);
}

int main(int argc, char **argv) {
	unsigned tick_hz = 100, health_ms = CROWD_AGONES_DEFAULT_HEALTH_MS, timeout_ms = 0, stall_ms = 0;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--tick-hz") == 0)
			tick_hz = (unsigned)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--health-ms") == 0)
			health_ms = (unsigned)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--timeout-ms") == 0)
			timeout_ms = (unsigned)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--stall-after-ms") == 0)
			stall_ms = (unsigned)atoi(argv[i + 1]);
	}
	if (tick_hz == 0 || health_ms == 0) {
		fprintf(stderr,
		        "usage: agones_harness [--tick-hz N] [--health-ms N] [--timeout-ms N] [--stall-after-ms N]\n");
		return 2;
	}
	h.loop = uv_default_loop();
	h.period_ns = 1000000000ull / tick_hz;

	struct sockaddr_in addr;
	uv_ip4_addr("127.0.0.1", 0, &addr);
	uv_tcp_init(h.loop, &h.listener);
	int rc = uv_tcp_bind(&h.listener, (const struct sockaddr *)&addr, 0);
	if (rc == 0) rc = uv_listen((uv_stream_t *)&h.listener, 64, on_connection);
	if (rc != 0) {
		fprintf(stderr, "listen: %s\n", uv_strerror(rc));
		return 1;
	}
	struct sockaddr_storage bound;
	int len = sizeof bound;
	uv_tcp_getsockname(&h.listener, (struct sockaddr *)&bound, &len);
	printf("listening %u\n", (unsigned)ntohs(((struct sockaddr_in *)&bound)->sin_port));
	fflush(stdout);

	crowd_agones_config cfg;
	crowd_agones_default_config(&cfg);
	cfg.health_period_ms = health_ms;
	if (timeout_ms > 0) cfg.request_timeout_ms = timeout_ms;
	cfg.healthy = ticks_advance;
	h.last_health_tick = UINT64_MAX;
	rc = crowd_agones_start(&h.agones, h.loop, &cfg, &h.counters);
	if (rc != 0) {
		fprintf(stderr, "agones: %s\n", uv_strerror(rc));
		return 1;
	}
	crowd_agones_ready(h.agones); /* the listener accepts connections from here on */

	uv_signal_init(h.loop, &h.sigterm);
	uv_signal_start(&h.sigterm, on_sigterm, SIGTERM);
	uv_timer_init(h.loop, &h.tick);
	h.next_deadline_ns = uv_hrtime() + h.period_ns;
	uv_timer_start(&h.tick, on_tick, h.period_ns / 1000000u, 0);

	uv_timer_init(h.loop, &h.stall);
	if (stall_ms > 0) uv_timer_start(&h.stall, on_stall, stall_ms, 0);

	uv_run(h.loop, UV_RUN_DEFAULT);
	char line[256];
	format_stats(line, sizeof line);
	printf("final %s shutdown_ok %d\n", line, h.shutdown_ok ? 1 : 0);
	uv_loop_close(h.loop);
	return 0;
}
