/* metrics_http.c — Prometheus text format 0.0.4 for GET /metrics: every metric
 * named crowd_*, each family with HELP and TYPE, counters ending in _total, the
 * tick duration as a cumulative histogram in seconds. */
#include "metrics_http.h"
#include "heap.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct text {
	char *data;
	size_t len, cap;
	bool failed;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
	if (t->failed) return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(t->data + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = true;
			return;
		}
		if ((size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap * 2 + (size_t)n + 1;
		char *p = realloc(t->data, cap);
		if (!p) {
			t->failed = true;
			return;
		}
		t->data = p;
		t->cap = cap;
	}
}

static void family(text *t, const char *name, const char *type, const char *help) {
	put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void scalar_u(text *t, const char *name, const char *type, const char *help, uint64_t v) {
	family(t, name, type, help);
	put(t, "%s %" PRIu64 "\n", name, v);
}

static void scalar_d(text *t, const char *name, const char *type, const char *help, double v) {
	family(t, name, type, help);
	put(t, "%s %.9g\n", name, v);
}

/* One counter family labelled by transport. */
static void by_transport(text *t, const char *name, const char *help, const uint64_t v[TRANSPORT_COUNT]) {
	family(t, name, "counter", help);
	for (int k = 0; k < TRANSPORT_COUNT; k++)
		put(t, "%s{transport=\"%s\"} %" PRIu64 "\n", name, metrics_transport_name((transport_kind)k), v[k]);
}

static void tick_histogram(text *t, const server_metrics *m) {
	const char *name = "crowd_tick_duration_seconds";
	family(t, name, "histogram", "Wall time of a whole tick: apply commands, step, send snapshots.");
	uint64_t cumulative = 0;
	for (int i = 0; i < METRICS_TICK_BUCKETS; i++) {
		cumulative += m->tick_duration_buckets[i];
		put(t, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name, metrics_tick_bucket_bounds[i], cumulative);
	}
	cumulative += m->tick_duration_buckets[METRICS_TICK_BUCKETS];
	put(t, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, cumulative);
	put(t, "%s_sum %.9g\n", name, m->tick_duration_sum_seconds);
	put(t, "%s_count %" PRIu64 "\n", name, cumulative);
}

char *metrics_render_prometheus(const server_metrics *m, const crowd_http_stats *http, const metrics_extra *extra,
                                size_t *len) {
	text t = {.cap = 16384};
	t.data = malloc(t.cap);
	if (!t.data) return NULL;
	t.data[0] = '\0';

	/* tick */
	tick_histogram(&t, m);
	scalar_u(&t, "crowd_ticks_total", "counter", "World steps completed.", m->ticks);
	scalar_u(&t, "crowd_ticks_overrun_total", "counter", "Ticks that ended after the next one was due.",
	         m->ticks_overrun);
	scalar_u(&t, "crowd_tick_periods_skipped_total", "counter",
	         "Tick periods dropped from the schedule after overruns (the schedule skips ahead).",
	         m->tick_periods_skipped);
	scalar_d(&t, "crowd_step_seconds_total", "counter", "Time spent in the ORCA step.", m->step_seconds_sum);
	scalar_d(&t, "crowd_table_seconds_total", "counter", "Time spent quantizing the world for snapshots.",
	         m->table_seconds_sum);
	scalar_d(&t, "crowd_snapshot_seconds_total", "counter",
	         "Time spent selecting, encoding and queueing snapshots on the loop thread.", m->snapshot_seconds_sum);
	family(&t, "crowd_snapshot_ticks_total", "counter",
	       "Ticks whose snapshots went out at once (loop thread and helper) or on the pool (--snapshot-overlap).");
	put(&t, "crowd_snapshot_ticks_total{way=\"at_once\"} %" PRIu64 "\n", m->snapshot_ticks_at_once);
	put(&t, "crowd_snapshot_ticks_total{way=\"pool\"} %" PRIu64 "\n", m->snapshot_ticks_pool);
	{
		static const char *const parts[TICK_PARTS] = {"apply", "wait", "navigation", "step",
		                                     "table", "handoff", "snapshots", "events"};
		family(&t, "crowd_tick_part_seconds_total", "counter",
		       "Wall time of each part of a tick, in the order they run (step: orca_world_step alone).");
		for (int k = 0; k < TICK_PARTS; k++)
			put(&t, "crowd_tick_part_seconds_total{part=\"%s\"} %.9g\n", parts[k], m->tick_part_seconds_sum[k]);
	}
	if (extra) {
		scalar_u(&t, "crowd_tick", "gauge", "The world's current tick number.", extra->tick);
		scalar_u(&t, "crowd_tick_rate_hz", "gauge", "Configured ticks per second.", extra->tick_rate_hz);
		scalar_d(&t, "crowd_uptime_seconds", "gauge", "Seconds since the server started.",
		         extra->uptime_seconds);
	}

	/* worlds: one series per world */
	if (extra && extra->worlds) {
		scalar_u(&t, "crowd_worlds", "gauge", "Worlds open (the default world counts).", extra->world_count);
		scalar_u(&t, "crowd_worlds_max", "gauge", "The most worlds the server holds (--max-worlds).",
		         extra->max_worlds);
		static const struct {
			const char *name, *type, *help;
		} series[] = {
		    {"crowd_world_agents", "gauge", "Agents in the world."},
		    {"crowd_world_clients", "gauge", "Connections in the world."},
		    {"crowd_world_tick", "gauge", "The world's current tick number."},
		    {"crowd_world_tick_rate_hz", "gauge", "The world's ticks per second."},
		    {"crowd_world_ticks_total", "counter", "The world's steps."},
		    {"crowd_world_ticks_overrun_total", "counter",
		     "The world's ticks that ended after its next was due."},
		    {"crowd_world_tick_periods_skipped_total", "counter", "Periods the world dropped after overruns."},
		    {"crowd_world_tick_seconds_total", "counter", "Wall time of the world's ticks."},
		    {"crowd_world_tick_lateness_p99_seconds", "gauge",
		     "99th percentile of how late the world's recent ticks started after their deadline."},
		};
		for (size_t k = 0; k < sizeof series / sizeof series[0]; k++) {
			family(&t, series[k].name, series[k].type, series[k].help);
			for (uint32_t i = 0; i < extra->world_count; i++) {
				const metrics_world *w = &extra->worlds[i];
				put(&t, "%s{world=\"%s\"} ", series[k].name, w->name);
				switch (k) {
				case 0:
					put(&t, "%u\n", w->agents);
					break;
				case 1:
					put(&t, "%u\n", w->clients);
					break;
				case 2:
					put(&t, "%llu\n", (unsigned long long)w->tick);
					break;
				case 3:
					put(&t, "%u\n", w->tick_rate_hz);
					break;
				case 4:
					put(&t, "%llu\n", (unsigned long long)w->ticks);
					break;
				case 5:
					put(&t, "%llu\n", (unsigned long long)w->ticks_overrun);
					break;
				case 6:
					put(&t, "%llu\n", (unsigned long long)w->tick_periods_skipped);
					break;
				case 7:
					put(&t, "%.9g\n", w->tick_seconds_sum);
					break;
				default:
					put(&t, "%.9g\n", w->lateness_p99_seconds);
					break;
				}
			}
		}
	}

	/* replication: a follower's lag, a primary's followers */
	const metrics_replication *rp = &m->replication;
	if (rp->following) {
		scalar_u(&t, "crowd_follower_connected", "gauge", "1 while this follower streams from its primary.",
		         rp->connected);
		scalar_u(&t, "crowd_follower_lag_ticks", "gauge",
		         "Ticks the primary completed that this follower has not applied yet.", rp->lag_ticks);
		scalar_u(&t, "crowd_follower_syncs_total", "counter",
		         "Checkpoints (full syncs) taken from the primary.", rp->syncs);
		scalar_u(&t, "crowd_follower_read_only_refused_total", "counter",
		         "Commands refused with READ_ONLY by this follower.", rp->read_only_refused);
	}
	scalar_u(&t, "crowd_followers", "gauge", "Followers streaming the default world's journal.", rp->followers);
	if (rp->followers) {
		family(&t, "crowd_follower_acked_tick", "gauge",
		       "The newest tick each follower applied (by client id).");
		for (uint32_t i = 0; i < rp->followers && i < METRICS_FOLLOWERS_LISTED; i++)
			put(&t, "crowd_follower_acked_tick{client=\"%u\"} %llu\n", rp->follower_ids[i],
			    (unsigned long long)rp->follower_acked_ticks[i]);
	}

	/* persistence (--data-dir) */
	if (extra && extra->storage) {
		const storage_stats *st = extra->storage;
		scalar_u(&t, "crowd_storage_available", "gauge",
		         "1 while the journal can be written; 0: world changes get STORAGE_UNAVAILABLE.", st->available);
		scalar_u(&t, "crowd_storage_journal_bytes_total", "counter", "Bytes written to journal segments.",
		         st->journal_bytes);
		scalar_u(&t, "crowd_storage_journal_batches_total", "counter", "Journal batches (one a tick) written.",
		         st->journal_records);
		scalar_u(&t, "crowd_storage_fsyncs_total", "counter", "fsync calls on the journal.", st->fsyncs);
		scalar_u(&t, "crowd_storage_write_errors_total", "counter", "Journal or checkpoint writes that failed.",
		         st->write_errors);
		scalar_u(&t, "crowd_storage_refused_total", "counter",
		         "World changes refused with STORAGE_UNAVAILABLE.", st->refused);
		scalar_u(&t, "crowd_storage_checkpoints_total", "counter", "Checkpoints written.", st->checkpoints);
		scalar_u(&t, "crowd_storage_checkpoint_bytes", "gauge", "Size of the last checkpoint.",
		         st->checkpoint_bytes);
		scalar_d(&t, "crowd_storage_checkpoint_seconds", "gauge",
		         "Encoding and writing the last checkpoint (writer thread).", st->checkpoint_seconds);
		scalar_d(&t, "crowd_storage_checkpoint_copy_seconds", "gauge",
		         "Copying the world for the last checkpoint (loop thread, at a tick boundary).",
		         st->checkpoint_copy_seconds);
	}

	/* process heap, as the allocator counts it (heap.h): live bytes are what
	 * tells memory kept from memory the allocator caches (RSS cannot) */
	{
		heap_usage h = heap_usage_now();
		family(&t, "crowd_heap_live_bytes", "gauge",
		       "Heap bytes allocated and not freed, by the allocator's own count (asan: its quarantine counts as freed).");
		put(&t, "crowd_heap_live_bytes{allocator=\"%s\"} %" PRIu64 "\n", h.allocator, h.live_bytes);
		family(&t, "crowd_heap_held_bytes", "gauge",
		       "Heap bytes the allocator holds from the system: live, cached free chunks and (asan) quarantine.");
		put(&t, "crowd_heap_held_bytes{allocator=\"%s\"} %" PRIu64 "\n", h.allocator, h.held_bytes);
	}

	/* world */
	scalar_u(&t, "crowd_agents", "gauge", "Agents in the world.", m->agents);
	scalar_u(&t, "crowd_obstacles", "gauge", "Obstacles in the world.", m->obstacles);

	/* navigation (zero with --navigation=false) */
	{
		const metrics_navigation *nv = &m->navigation;
		scalar_u(&t, "crowd_navigation_enabled", "gauge", "1 when targets navigate (--navigation).", nv->enabled);
		scalar_u(&t, "crowd_navigation_agents", "gauge", "Agents navigating now (any phase but none).", nv->agents);
		scalar_u(&t, "crowd_navigation_polygons", "gauge", "Polygons in the navigation mesh.", nv->polygons);
		scalar_u(&t, "crowd_navigation_paths_pending", "gauge", "Path queries waiting for the per-tick budget.",
		         nv->paths_pending);
		scalar_u(&t, "crowd_navigation_tiles_pending", "gauge", "Mesh tiles waiting for a rebuild.",
		         nv->tiles_pending);
		scalar_u(&t, "crowd_navigation_paths_planned_total", "counter", "Path queries answered.", nv->paths_planned);
		scalar_u(&t, "crowd_navigation_tiles_built_total", "counter", "Mesh tiles built since start (the first build included).",
		         nv->tiles_built);
		static const char *const reasons[4] = {"mesh_changed", "off_corridor", "no_progress", "next_part"};
		family(&t, "crowd_navigation_replans_total", "counter", "Paths planned again, by reason.");
		for (int k = 0; k < 4; k++)
			put(&t, "crowd_navigation_replans_total{reason=\"%s\"} %" PRIu64 "\n", reasons[k], nv->replans[k]);
		static const char *const kinds[4] = {NULL, "arrived", "unreachable", "stuck"};
		family(&t, "crowd_navigation_events_total", "counter", "Agent events (AgentEventKind) told, by kind.");
		for (int k = 1; k < 4; k++)
			put(&t, "crowd_navigation_events_total{kind=\"%s\"} %" PRIu64 "\n", kinds[k], nv->events[k]);
	}

	/* connections */
	family(&t, "crowd_connections", "gauge",
	       "Open client connections by transport and role (none = before Hello).");
	for (int k = 0; k < TRANSPORT_COUNT; k++)
		for (int r = 0; r < METRICS_ROLE_COUNT; r++)
			put(&t, "crowd_connections{transport=\"%s\",role=\"%s\"} %" PRIu64 "\n",
			    metrics_transport_name((transport_kind)k), metrics_role_name(r), m->connections[k][r]);
	by_transport(&t, "crowd_connections_accepted_total", "Client connections accepted.", m->connections_accepted);
	family(&t, "crowd_disconnects_total", "counter", "Client connections ended, by reason.");
	for (int r = 0; r < DISCONNECT_REASON_COUNT; r++)
		put(&t, "crowd_disconnects_total{reason=\"%s\"} %" PRIu64 "\n",
		    metrics_disconnect_reason_name((disconnect_reason)r), m->disconnects[r]);

	/* traffic */
	by_transport(&t, "crowd_messages_in_total", "Protocol messages received.", m->messages_in);
	by_transport(&t, "crowd_messages_out_total", "Protocol messages sent.", m->messages_out);
	by_transport(&t, "crowd_bytes_in_total", "Protocol message bytes received (without framing).", m->bytes_in);
	by_transport(&t, "crowd_bytes_out_total", "Protocol message bytes sent (without framing).", m->bytes_out);

	/* snapshots */
	scalar_u(&t, "crowd_snapshots_sent_total", "counter", "Snapshots sent to subscribers.", m->snapshots_sent);
	scalar_u(&t, "crowd_snapshots_skipped_total", "counter",
	         "Snapshots skipped because a client's output was above the soft limit.", m->snapshots_skipped);
	scalar_u(&t, "crowd_snapshot_bytes_total", "counter", "Bytes of snapshots sent.", m->snapshot_bytes);
	scalar_u(&t, "crowd_snapshots_shared_total", "counter",
	         "Snapshots sent as bytes already encoded for another subscriber with the same view.",
	         m->snapshots_shared);
	scalar_u(&t, "crowd_keyframes_sent_total", "counter", "Keyframe snapshots sent.", m->keyframes_sent);

	/* requests */
	scalar_u(&t, "crowd_requests_total", "counter", "Client messages decoded.", m->requests);
	scalar_u(&t, "crowd_commands_applied_total", "counter", "Queued commands applied at a tick.",
	         m->commands_applied);
	scalar_u(&t, "crowd_acks_total", "counter", "Ack messages sent.", m->acks);
	family(&t, "crowd_errors_total", "counter", "Error messages sent, by code.");
	for (int c = 1; c < METRICS_ERROR_CODES; c++)
		if (strcmp(metrics_error_code_name(c), "UNKNOWN") != 0) /* numbers reserved, not assigned yet */
			put(&t, "crowd_errors_total{code=\"%s\"} %" PRIu64 "\n", metrics_error_code_name(c),
			    m->errors[c]);

	/* HTTP side */
	if (http) {
		family(&t, "crowd_http_responses_total", "counter",
		       "HTTP responses by status (101 = WebSocket upgrades).");
		for (int i = 0; i < CROWD_HTTP_NSTATUS; i++)
			put(&t, "crowd_http_responses_total{code=\"%d\"} %" PRIu64 "\n", crowd_http_statuses[i],
			    http->responses[i]);
		scalar_u(&t, "crowd_http_idle_evicted_total", "counter",
		         "Idle HTTP connections (request incomplete) closed to make room at the connection limit.",
		         http->evicted);
		/* hostile clients: the HTTP limits (see crowd_http_config) */
		static const char *const limits[CROWD_HTTP_REFUSED_COUNT] = {"per_peer", "connections",
		                                                             "no_subprotocol"};
		family(
		    &t, "crowd_http_over_limit_total", "counter",
		    "HTTP connections accepted over a limit (per_peer: its address holds --max-pending-per-peer idle "
		    "ones; connections: the connection limit) into a reserved slot, where only /healthz and /metrics "
		    "are served.");
		for (int i = 0; i < 2; i++)
			put(&t, "crowd_http_over_limit_total{limit=\"%s\"} %" PRIu64 "\n", limits[i],
			    http->over_limit[i]);
		family(&t, "crowd_http_refused_total", "counter",
		       "HTTP requests refused by a limit: 503 for anything but /healthz and /metrics over per_peer or "
		       "connections, 400 for a WebSocket upgrade without the crowd.v1 subprotocol.");
		for (int i = 0; i < CROWD_HTTP_REFUSED_COUNT; i++)
			put(&t, "crowd_http_refused_total{reason=\"%s\"} %" PRIu64 "\n", limits[i], http->refused[i]);
		scalar_u(&t, "crowd_http_bytes_in_total", "counter",
		         "Bytes read on HTTP and WebSocket sockets (with framing).", http->bytes_in);
		scalar_u(&t, "crowd_http_bytes_out_total", "counter",
		         "Bytes written on HTTP and WebSocket sockets (with framing).", http->bytes_out);
		family(&t, "crowd_websocket_closes_total", "counter",
		       "WebSocket connections closed, by the close code the server sent (none: it sent none).");
		static const char *const codes[4] = {"other", "1002", "1003", "1009"};
		uint64_t with_code = 0;
		for (int i = 0; i < 4; i++) {
			put(&t, "crowd_websocket_closes_total{code=\"%s\"} %" PRIu64 "\n", codes[i],
			    http->ws_close_sent[i]);
			with_code += http->ws_close_sent[i];
		}
		put(&t, "crowd_websocket_closes_total{code=\"none\"} %" PRIu64 "\n",
		    http->ws_closed > with_code ? http->ws_closed - with_code : 0);
	}

	/* Agones SDK sidecar (all zero unless --agones) */
	family(&t, "crowd_agones_requests_total", "counter",
	       "Calls to the Agones SDK sidecar by call and result (error: refused, timed out, non-2xx, bad reply).");
	for (int c = 0; c < CROWD_AGONES_CALL_COUNT; c++) {
		put(&t, "crowd_agones_requests_total{call=\"%s\",result=\"ok\"} %" PRIu64 "\n",
		    crowd_agones_call_name((crowd_agones_call)c), m->agones.ok[c]);
		put(&t, "crowd_agones_requests_total{call=\"%s\",result=\"error\"} %" PRIu64 "\n",
		    crowd_agones_call_name((crowd_agones_call)c), m->agones.failed[c]);
	}
	family(&t, "crowd_agones_timeouts_total", "counter", "Agones sidecar calls that got no answer in time.");
	for (int c = 0; c < CROWD_AGONES_CALL_COUNT; c++)
		put(&t, "crowd_agones_timeouts_total{call=\"%s\"} %" PRIu64 "\n",
		    crowd_agones_call_name((crowd_agones_call)c), m->agones.timeouts[c]);
	scalar_u(&t, "crowd_agones_health_skipped_total", "counter",
	         "Health pings not sent because the previous one was still unanswered.", m->agones.health_skipped);
	scalar_u(&t, "crowd_agones_health_withheld_total", "counter",
	         "Health pings withheld because the world had not stepped since the last one.",
	         m->agones.health_withheld);
	scalar_u(&t, "crowd_agones_ready", "gauge", "1 once the Agones sidecar accepted Ready.", m->agones.ready);

	if (t.failed) {
		free(t.data);
		return NULL;
	}
	*len = t.len;
	return t.data;
}
