/* metrics_http.h — server_metrics and the HTTP side's counters as Prometheus
 * text exposition format 0.0.4 (what GET /metrics returns). */
#ifndef CROWD_SERVER_METRICS_HTTP_H
#define CROWD_SERVER_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "metrics.h"

/** Gauges that live outside server_metrics. */
typedef struct metrics_extra {
	uint64_t tick; /* ticks completed (the world's tick number) */
	double uptime_seconds;
	uint32_t tick_rate_hz;
	const storage_stats *storage; /* --data-dir (server/storage); NULL without */
} metrics_extra;

/** Render everything; returns a malloc'd NUL-terminated string (its length in
 * *len), or NULL on allocation failure. `http` may be NULL. */
char *metrics_render_prometheus(const server_metrics *m, const crowd_http_stats *http, const metrics_extra *extra,
                                size_t *len);

#endif
