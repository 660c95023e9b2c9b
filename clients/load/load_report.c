/* load_report.c — what crowd-load prints: a live progress line per second, a
 * final table, and the same figures as JSON for machines (--json). */
#include "load.h"

#include "crowd/wire.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The last slot counts codes this build does not know. */
const char *load_error_name(uint32_t code) {
	return code < LOAD_ERROR_CODES - 1 ? crowd_error_code_name(code) : "OTHER";
}

static double ms(uint64_t us) {
	return (double)us / 1000.0;
}

/* Sum every connection's counters (histograms are left untouched and unused). */
static void sum_counters(load_run *run, load_stats *sum) {
	memset(sum, 0, sizeof *sum);
	for (uint32_t i = 0; i < run->opt.connections; i++) load_stats_add_counters(sum, &run->conns[i].stats);
}

void load_report_progress(load_run *run, double elapsed_s, double since_s) {
	load_stats now;
	sum_counters(run, &now);
	const load_stats *prev = &run->last_sum;
	double dt = since_s > 1e-3 ? since_s : 1e-3;
	double snaps = (double)(now.snapshots - prev->snapshots);
	double agents = (double)(now.snapshot_agents - prev->snapshot_agents);
	double sbytes = (double)(now.snapshot_bytes - prev->snapshot_bytes);
	if (!run->opt.quiet) {
		fprintf(stderr,
		        "[%6.1fs] %s conns %u/%u | snap/s %.0f | in %.2f MB/s | agents/snap %.0f | B/agent %.2f | "
		        "ack p99 %.1f ms | vis p99 %.1f ms | skipped %llu | err %llu | disc %llu\n",
		        elapsed_s,
		        run->draining    ? "end "
		        : run->measuring ? "run "
		                         : "prep",
		        run->running, run->opt.connections, snaps / dt,
		        (double)(now.bytes_in - prev->bytes_in) / dt / 1e6, snaps > 0 ? agents / snaps : 0.0,
		        agents > 0 ? sbytes / agents : 0.0, ms(load_hist_percentile(&run->interval.ack_us, 99)),
		        ms(load_hist_percentile(&run->interval.visible_us, 99)),
		        (unsigned long long)(now.skipped - prev->skipped),
		        (unsigned long long)(now.error_total - prev->error_total),
		        (unsigned long long)(now.disconnects - prev->disconnects));
	}
	run->last_sum = now;
	load_stats_reset(&run->interval);
}

void load_report_sum(load_run *run, load_stats *total) {
	if (run->opt.trips)
		for (uint32_t i = 0; i < run->opt.connections; i++) load_conn_trips_open(&run->conns[i]);
	load_stats counters;
	sum_counters(run, &counters);
	load_stats_add_counters(total, &counters);
}

static void table_row(FILE *out, const char *name, const load_hist *h) {
	if (h->total == 0) {
		fprintf(out, "%-24s %10s %9s %9s %9s %9s %9s %9s\n", name, "0", "-", "-", "-", "-", "-", "-");
		return;
	}
	fprintf(out, "%-24s %10llu %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", name, (unsigned long long)h->total,
	        ms(load_hist_percentile(h, 50)), ms(load_hist_percentile(h, 90)), ms(load_hist_percentile(h, 99)),
	        ms(load_hist_percentile(h, 99.9)), ms(h->max), load_hist_mean(h) / 1000.0);
}

static void json_hist(FILE *f, const char *name, const load_hist *h, bool comma) {
	if (h->total == 0) {
		fprintf(f,
		        "    \"%s\": {\"count\": 0, \"p50\": null, \"p90\": null, \"p99\": null, \"p99_9\": null, "
		        "\"max\": null, \"mean\": null}%s\n",
		        name, comma ? "," : "");
		return;
	}
	fprintf(f,
	        "    \"%s\": {\"count\": %llu, \"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"p99_9\": %.3f, "
	        "\"max\": %.3f, \"mean\": %.3f}%s\n",
	        name, (unsigned long long)h->total, ms(load_hist_percentile(h, 50)), ms(load_hist_percentile(h, 90)),
	        ms(load_hist_percentile(h, 99)), ms(load_hist_percentile(h, 99.9)), ms(h->max),
	        load_hist_mean(h) / 1000.0, comma ? "," : "");
}

static void json_string(FILE *f, const char *s) {
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static double per_s(uint64_t v, double s) {
	return s > 0 ? (double)v / s : 0.0;
}

static int cmp_double(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* min / median / max over connections of one per-connection figure */
static void spread(const double *v, uint32_t n, double out[3]) {
	double *s = malloc((n ? n : 1) * sizeof *s);
	if (!s || n == 0) {
		out[0] = out[1] = out[2] = 0;
		free(s);
		return;
	}
	memcpy(s, v, n * sizeof *s);
	qsort(s, n, sizeof *s, cmp_double);
	out[0] = s[0];
	out[1] = s[n / 2];
	out[2] = s[n - 1];
	free(s);
}

static const char *area_text(const load_options *o, char *buf, size_t cap) {
	if (o->area == LOAD_AREA_WORLD) return "world";
	if (o->area == LOAD_AREA_NONE) return "none";
	snprintf(buf, cap, "%gx%g", o->window_w, o->window_h);
	return buf;
}

int load_report_final(load_run *run, const load_stats *t, double measured_s, FILE *out) {
	const load_options *o = &run->opt;
	uint32_t n = o->connections;
	char areabuf[64];
	double snap_hz = n ? per_s(t->snapshots, measured_s) / n : 0;
	/* the rate the server promised in Welcome (tick rate / divisor), for comparison */
	double nominal_hz = 0;
	for (uint32_t i = 0; i < n && nominal_hz == 0; i++)
		if (run->conns[i].divisor && run->conns[i].tick_rate_hz && o->area != LOAD_AREA_NONE)
			nominal_hz = (double)run->conns[i].tick_rate_hz / run->conns[i].divisor;
	double agents_per_snap = t->snapshots ? (double)t->snapshot_agents / (double)t->snapshots : 0;
	double bytes_per_agent = t->snapshot_agents ? (double)t->snapshot_bytes / (double)t->snapshot_agents : 0;

	double *hz = calloc(n ? n : 1, sizeof *hz), *ack99 = calloc(n ? n : 1, sizeof *ack99),
	       *vis99 = calloc(n ? n : 1, sizeof *vis99), *bps = calloc(n ? n : 1, sizeof *bps);
	if (!hz || !ack99 || !vis99 || !bps) {
		free(hz);
		free(ack99);
		free(vis99);
		free(bps);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		const load_stats *s = &run->conns[i].stats;
		hz[i] = per_s(s->snapshots, measured_s);
		ack99[i] = ms(load_hist_percentile(&s->ack_us, 99));
		vis99[i] = ms(load_hist_percentile(&s->visible_us, 99));
		bps[i] = per_s(s->bytes_in, measured_s);
	}
	double s_hz[3], s_ack[3], s_vis[3], s_bps[3];
	spread(hz, n, s_hz);
	spread(ack99, n, s_ack);
	spread(vis99, n, s_vis);
	spread(bps, n, s_bps);

	fprintf(out,
	        "\ncrowd-load: %s:%d, %u connections (%u running at the end), %llu agents spawned, area %s, "
	        "%.1f s measured\n",
	        o->host, o->port, n, run->running_at_stop, (unsigned long long)t->agents_spawned,
	        area_text(o, areabuf, sizeof areabuf), measured_s);
	fprintf(out, "%-24s %10s %9s %9s %9s %9s %9s %9s\n", "latency (ms)", "count", "p50", "p90", "p99", "p99.9",
	        "max", "mean");
	table_row(out, "request->ack", &t->ack_us);
	table_row(out, "command->next snapshot", &t->applied_us);
	table_row(out, "command->visible", &t->visible_us);
	table_row(out, "command->arrival", &t->arrival_us);
	table_row(out, "snapshot interval", &t->interval_us);
	table_row(out, "snapshot jitter", &t->jitter_us);
	fprintf(out,
	        "snapshots      %llu (%.1f/s, %.2f Hz per connection of %.2f nominal), keyframes %llu, skipped %llu\n",
	        (unsigned long long)t->snapshots, per_s(t->snapshots, measured_s), snap_hz, nominal_hz,
	        (unsigned long long)t->keyframes, (unsigned long long)t->skipped);
	fprintf(out, "snapshot size  %.1f agents, %.2f bytes per agent\n", agents_per_snap, bytes_per_agent);
	fprintf(out, "bytes          in %.3f MB/s, out %.3f MB/s\n", per_s(t->bytes_in, measured_s) / 1e6,
	        per_s(t->bytes_out, measured_s) / 1e6);
	fprintf(
	    out,
	    "commands       %llu requests, %llu answered, %llu SetTargets (%llu agents), visible %llu, unseen %llu\n",
	    (unsigned long long)t->requests, (unsigned long long)t->acks, (unsigned long long)t->retargets,
	    (unsigned long long)t->retarget_agents, (unsigned long long)t->visible_seen,
	    (unsigned long long)t->visible_unseen);
	fprintf(out,
	        "arrivals       %llu of %llu retargeted agents (%.1f%%, %.1f/s); retargeted again first %llu; "
	        "unreachable %llu, stuck %llu\n",
	        (unsigned long long)t->arrivals, (unsigned long long)t->retarget_agents,
	        t->retarget_agents ? 100.0 * (double)t->arrivals / (double)t->retarget_agents : 0.0,
	        per_s(t->arrivals, measured_s), (unsigned long long)t->superseded, (unsigned long long)t->unreachable,
	        (unsigned long long)t->stuck);
	if (o->trips) {
		const double done = (double)t->trips;
		fprintf(out,
		        "trips          %llu finished (%.1f/s), %.1f%% within 2x their free-walk time (mean %.1f s); "
		        "took p50 %.1f s, p99 %.1f s (simulated)\n",
		        (unsigned long long)t->trips, per_s(t->trips, measured_s),
		        done > 0 ? 100.0 * (double)t->trips_within_2x / done : 0.0,
		        done > 0 ? t->trip_free_s_sum / done : 0.0, ms(load_hist_percentile(&t->trip_us, 50)) / 1000.0,
		        ms(load_hist_percentile(&t->trip_us, 99)) / 1000.0);
		const double all = done + (double)t->trips_open;
		fprintf(out,
		        "trips late     over 60 s past free-walk: %llu finished + %llu still walking = %.2f%% of %llu; "
		        "unmeasured %llu, unreachable %llu, stuck events %llu\n",
		        (unsigned long long)t->trips_late_60, (unsigned long long)t->trips_open_late_60,
		        all > 0 ? 100.0 * (double)(t->trips_late_60 + t->trips_open_late_60) / all : 0.0,
		        (unsigned long long)(t->trips + t->trips_open), (unsigned long long)t->trips_unmeasured,
		        (unsigned long long)t->unreachable, (unsigned long long)t->stuck);
	}
	fprintf(out, "errors         %llu", (unsigned long long)t->error_total);
	for (uint32_t c = 1; c < LOAD_ERROR_CODES; c++)
		if (t->errors[c]) fprintf(out, " %s=%llu", load_error_name(c), (unsigned long long)t->errors[c]);
	fprintf(out, "; decode failures %llu, disconnects %llu, failed connects %llu\n",
	        (unsigned long long)t->decode_failures, (unsigned long long)t->disconnects,
	        (unsigned long long)t->connect_failures);
	load_worlds_report(run, out);
	fprintf(out,
	        "per connection min/median/max: snapshots %.2f/%.2f/%.2f Hz, ack p99 %.2f/%.2f/%.2f ms, "
	        "visible p99 %.2f/%.2f/%.2f ms, in %.0f/%.0f/%.0f B/s\n",
	        s_hz[0], s_hz[1], s_hz[2], s_ack[0], s_ack[1], s_ack[2], s_vis[0], s_vis[1], s_vis[2], s_bps[0],
	        s_bps[1], s_bps[2]);

	int rc = 0;
	if (o->json_path[0]) {
		FILE *f = fopen(o->json_path, "w");
		if (!f) {
			fprintf(stderr, "crowd-load: cannot write %s\n", o->json_path);
			rc = -1;
		} else {
			fprintf(f, "{\n  \"server\": ");
			char server[300];
			snprintf(server, sizeof server, "%s:%d", o->host, o->port);
			json_string(f, server);
			fprintf(
			    f, ",\n  \"config\": {\"connections\": %u, \"agents_per_connection\": %lld, \"setup\": ", n,
			    o->agents_per_conn == UINT32_MAX ? -1LL : (long long)o->agents_per_conn);
			json_string(f, o->setup_path);
			fprintf(f, ", \"area\": ");
			json_string(f, area_text(o, areabuf, sizeof areabuf));
			fprintf(f,
			        ", \"divisor\": %u, \"retarget_s\": %g, \"retarget_count\": %u, \"ping_s\": %g, "
			        "\"duration_s\": %g, \"ramp_up_s\": %g},\n",
			        o->divisor, o->retarget_s, o->retarget_count, o->ping_s, o->duration_s, o->ramp_up_s);
			fprintf(
			    f, "  \"measured_s\": %.3f,\n  \"connections_running\": %u,\n  \"agents_spawned\": %llu,\n",
			    measured_s, run->running_at_stop, (unsigned long long)t->agents_spawned);
			fprintf(f, "  \"latency_ms\": {\n");
			json_hist(f, "request_ack", &t->ack_us, true);
			json_hist(f, "command_snapshot", &t->applied_us, true);
			json_hist(f, "command_visible", &t->visible_us, true);
			json_hist(f, "command_arrival", &t->arrival_us, true);
			json_hist(f, "snapshot_interval", &t->interval_us, true);
			json_hist(f, "snapshot_jitter", &t->jitter_us, false);
			fprintf(f, "  },\n");
			fprintf(
			    f,
			    "  \"snapshots\": {\"received\": %llu, \"per_second\": %.3f, \"hz_per_connection\": %.3f, "
			    "\"nominal_hz\": %.3f, \"keyframes\": %llu, \"skipped\": %llu, \"bytes\": %llu, "
			    "\"agents_per_snapshot\": %.3f, "
			    "\"bytes_per_agent\": %.4f},\n",
			    (unsigned long long)t->snapshots, per_s(t->snapshots, measured_s), snap_hz, nominal_hz,
			    (unsigned long long)t->keyframes, (unsigned long long)t->skipped,
			    (unsigned long long)t->snapshot_bytes, agents_per_snap, bytes_per_agent);
			fprintf(
			    f,
			    "  \"bytes\": {\"in\": %llu, \"out\": %llu, \"in_per_second\": %.1f, \"out_per_second\": "
			    "%.1f},\n",
			    (unsigned long long)t->bytes_in, (unsigned long long)t->bytes_out,
			    per_s(t->bytes_in, measured_s), per_s(t->bytes_out, measured_s));
			fprintf(
			    f,
			    "  \"commands\": {\"requests\": %llu, \"answered\": %llu, \"set_targets\": %llu, "
			    "\"retargeted_agents\": %llu, \"visible_seen\": %llu, \"visible_unseen\": %llu, \"pongs\": "
			    "%llu},\n",
			    (unsigned long long)t->requests, (unsigned long long)t->acks,
			    (unsigned long long)t->retargets, (unsigned long long)t->retarget_agents,
			    (unsigned long long)t->visible_seen, (unsigned long long)t->visible_unseen,
			    (unsigned long long)t->pongs);
			fprintf(f,
			        "  \"navigation\": {\"arrivals\": %llu, \"arrivals_per_second\": %.3f, "
			        "\"arrival_rate\": %.4f, \"superseded\": %llu, \"unreachable\": %llu, \"stuck\": %llu},\n",
			        (unsigned long long)t->arrivals, per_s(t->arrivals, measured_s),
			        t->retarget_agents ? (double)t->arrivals / (double)t->retarget_agents : 0.0,
			        (unsigned long long)t->superseded, (unsigned long long)t->unreachable,
			        (unsigned long long)t->stuck);
			if (o->trips)
				fprintf(
				    f,
				    "  \"trips\": {\"finished\": %llu, \"within_2x\": %llu, \"late_60s\": %llu, "
				    "\"open\": %llu, "
				    "\"open_late_60s\": %llu, \"unmeasured\": %llu, \"free_walk_mean_s\": %.3f, "
				    "\"p50_s\": %.3f, "
				    "\"p99_s\": %.3f, \"reach\": %g, \"speed\": %g, \"each\": %u, \"all_done\": %s},\n",
				    (unsigned long long)t->trips, (unsigned long long)t->trips_within_2x,
				    (unsigned long long)t->trips_late_60, (unsigned long long)t->trips_open,
				    (unsigned long long)t->trips_open_late_60, (unsigned long long)t->trips_unmeasured,
				    t->trips ? t->trip_free_s_sum / (double)t->trips : 0.0,
				    (double)load_hist_percentile(&t->trip_us, 50) / 1e6,
				    (double)load_hist_percentile(&t->trip_us, 99) / 1e6, o->trip_reach, o->trip_speed,
				    o->trips_each, run->trips_all_done ? "true" : "false");
			fprintf(f, "  \"errors\": {\"total\": %llu, \"by_code\": {",
			        (unsigned long long)t->error_total);
			bool first = true;
			for (uint32_t c = 1; c < LOAD_ERROR_CODES; c++) {
				if (!t->errors[c]) continue;
				fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", load_error_name(c),
				        (unsigned long long)t->errors[c]);
				first = false;
			}
			fprintf(f,
			        "}},\n  \"decode_failures\": %llu,\n  \"disconnects\": %llu,\n  \"connect_failures\": "
			        "%llu,\n",
			        (unsigned long long)t->decode_failures, (unsigned long long)t->disconnects,
			        (unsigned long long)t->connect_failures);
			load_worlds_report_json(run, f);
			fprintf(f, "  \"per_connection\": [\n");
			for (uint32_t i = 0; i < n; i++) {
				const load_stats *s = &run->conns[i].stats;
				fprintf(f,
				        "    {\"index\": %u, \"snapshots\": %llu, \"skipped\": %llu, "
				        "\"agents_spawned\": %llu, "
				        "\"bytes_in\": %llu, \"ack_p99_ms\": %.3f, \"visible_p99_ms\": %.3f, "
				        "\"errors\": %llu, "
				        "\"disconnects\": %llu}%s\n",
				        i, (unsigned long long)s->snapshots, (unsigned long long)s->skipped,
				        (unsigned long long)s->agents_spawned, (unsigned long long)s->bytes_in,
				        ack99[i], vis99[i], (unsigned long long)s->error_total,
				        (unsigned long long)s->disconnects, i + 1 < n ? "," : "");
			}
			fprintf(
			    f,
			    "  ],\n  \"thresholds\": {\"max_p99_ms\": %g, \"max_errors\": %lld, \"passed\": %s}\n}\n",
			    o->max_p99_ms, o->max_errors, run->threshold_failures ? "false" : "true");
			if (fclose(f) != 0) rc = -1;
		}
	}
	free(hz);
	free(ack99);
	free(vis99);
	free(bps);
	return rc;
}
