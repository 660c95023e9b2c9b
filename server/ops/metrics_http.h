/* metrics_http.h — server_metrics and the HTTP side's counters as Prometheus
 * text exposition format 0.0.4 (what GET /metrics returns). */
#ifndef CROWD_SERVER_METRICS_HTTP_H
#define CROWD_SERVER_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "metrics.h"

/** One world's series (label world="NAME"): the server holds many. */
typedef struct metrics_world {
	const char *name;
	uint32_t agents, clients, tick_rate_hz;
	uint64_t tick;
	uint64_t ticks, ticks_overrun, tick_periods_skipped;
	double tick_seconds_sum;     /* whole ticks' wall time */
	double lateness_p99_seconds; /* how late its recent ticks started after their deadline */
} metrics_world;

/** Gauges that live outside server_metrics. */
typedef struct metrics_extra {
	uint64_t tick; /* ticks completed (the world's tick number) */
	double uptime_seconds;
	uint32_t tick_rate_hz;
	const storage_stats *storage; /* --data-dir (server/storage); NULL without */
	const metrics_world *worlds;  /* every open world, the default too */
	uint32_t world_count, max_worlds;
} metrics_extra;

/** Render everything; returns a malloc'd NUL-terminated string (its length in
 * *len), or NULL on allocation failure. `http` may be NULL. */
char *metrics_render_prometheus(const server_metrics *m, const crowd_http_stats *http, const metrics_extra *extra,
                                size_t *len);

#endif
