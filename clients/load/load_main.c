/* load_main.c — crowd-load's entry point: opens the connections over the
 * ramp-up, waits until each has spawned its agents, measures for --duration,
 * then prints the table (and JSON) and applies the --max-* thresholds. */
#include "load.h"

#include "crowd/client.h"

#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define SETUP_GRACE_S 60.0 /* after ramp-up, how long spawning may take before measuring starts anyway */
#define DRAIN_S 2.0        /* after the measured time, how long to wait for answers to requests in flight */

static load_run run;
static uv_timer_t ramp_timer, progress_timer, phase_timer;
static uv_signal_t sigint_handle, sigterm_handle;
static uint64_t last_progress_ns, next_progress_ns;
static uint32_t next_to_open;

static double seconds_since(uint64_t t0) {
	return (double)(uv_hrtime() - t0) / 1e9;
}

static uint64_t drain_deadline_ns;

/* The measured time is over: send nothing more, count no more snapshots, but
 * wait (at most DRAIN_S) for the answers to requests already sent. */
static void begin_drain(void) {
	if (run.draining || run.stopping) return;
	run.draining = true;
	run.running_at_stop = run.running;
	run.measure_end_ns = uv_hrtime();
	if (!run.measuring) run.measure_start_ns = run.measure_end_ns;
	drain_deadline_ns = run.measure_end_ns + (uint64_t)(DRAIN_S * 1e9);
	load_worlds_ask_list(&run); /* answered within the drain */
}

static bool all_answered(void) {
	for (uint32_t i = 0; i < run.opt.connections; i++) {
		const load_conn *c = &run.conns[i];
		if (c->state == LOAD_CONN_RUNNING && c->req_count > 0) return false;
	}
	return true;
}

static void stop_run(void) {
	if (run.stopping) return;
	begin_drain();
	run.stopping = true;
	uv_timer_stop(&ramp_timer);
	uv_timer_stop(&phase_timer);
	uv_timer_stop(&progress_timer);
	uv_close((uv_handle_t *)&ramp_timer, NULL);
	uv_close((uv_handle_t *)&phase_timer, NULL);
	uv_close((uv_handle_t *)&progress_timer, NULL);
	uv_close((uv_handle_t *)&sigint_handle, NULL);
	uv_close((uv_handle_t *)&sigterm_handle, NULL);
	for (uint32_t i = 0; i < run.opt.connections; i++) load_conn_close(&run.conns[i]);
}

static void start_measuring(void) {
	run.measuring = true;
	run.measure_start_ns = uv_hrtime();
	for (uint32_t i = 0; i < run.opt.connections; i++) load_stats_reset(&run.conns[i].stats);
	load_stats_reset(&run.total);
	load_stats_reset(&run.interval);
	memset(&run.last_sum, 0, sizeof run.last_sum);
	/* errors and disconnects stay cumulative: keep them out of the first interval */
	for (uint32_t i = 0; i < run.opt.connections; i++) {
		const load_stats *s = &run.conns[i].stats;
		run.last_sum.error_total += s->error_total;
		run.last_sum.disconnects += s->disconnects;
	}
}

static void on_phase(uv_timer_t *t) {
	(void)t;
	if (run.stopping) return;
	if (run.draining) {
		if (all_answered() || uv_hrtime() >= drain_deadline_ns) stop_run();
		return;
	}
	double elapsed = seconds_since(run.start_ns);
	if (!run.measuring) {
		bool all_opened = next_to_open >= run.opt.connections;
		bool all_ready = all_opened && run.running + run.closed >= run.opt.connections;
		if (all_ready || (all_opened && elapsed > run.opt.ramp_up_s + SETUP_GRACE_S)) {
			if (!all_ready)
				fprintf(stderr, "crowd-load: set-up still incomplete after %.0f s; measuring anyway\n",
				        elapsed);
			if (run.running == 0) {
				stop_run(); /* main says why */
				return;
			}
			start_measuring();
		}
	} else if (load_run_trips_done(&run)) {
		run.trips_all_done = true;
		begin_drain();
	} else if (seconds_since(run.measure_start_ns) >= run.opt.duration_s || load_run_trips_too_late(&run)) {
		begin_drain();
	}
}

static void on_ramp(uv_timer_t *t) {
	(void)t;
	double elapsed = seconds_since(run.start_ns);
	uint32_t n = run.opt.connections;
	uint32_t due = run.opt.ramp_up_s > 0 ? (uint32_t)((elapsed / run.opt.ramp_up_s) * n) + 1 : n;
	if (due > n) due = n;
	while (next_to_open < due && load_worlds_may_open(&run, next_to_open))
		load_conn_open(&run.conns[next_to_open++]);
	if (next_to_open >= n) uv_timer_stop(&ramp_timer);
}

static void on_progress(uv_timer_t *t) {
	uint64_t now = uv_hrtime();
	load_report_progress(&run, seconds_since(run.start_ns), (double)(now - last_progress_ns) / 1e9);
	last_progress_ns = now;
	next_progress_ns += 1000000000ull; /* deadlines, so the lines do not drift */
	uint64_t wait = next_progress_ns > now ? (next_progress_ns - now) / 1000000u : 0;
	uv_timer_start(t, on_progress, wait, 0);
}

static void on_signal(uv_signal_t *s, int signum) {
	(void)s;
	fprintf(stderr, "crowd-load: signal %d, stopping\n", signum);
	if (run.draining)
		stop_run(); /* a second signal: at once */
	else
		begin_drain();
}

static int resolve(const char *host, int port, struct sockaddr_storage *out) {
	struct addrinfo hints = {0}, *res = NULL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	char portbuf[16];
	snprintf(portbuf, sizeof portbuf, "%d", port);
	int rc = getaddrinfo(host, portbuf, &hints, &res);
	if (rc != 0 || !res) {
		fprintf(stderr, "crowd-load: cannot resolve %s: %s\n", host, gai_strerror(rc));
		return -1;
	}
	memcpy(out, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

/* --server A,B,…: the first address that accepts a connection (a probe, closed at once) is the one loaded. */
static int pick_server(load_options *o) {
	if (!o->server_list[0]) return 0;
	crowd_client_options co = crowd_client_default_options();
	co.connect_timeout_ms = 2000;
	crowd_client *probe = NULL;
	int s = crowd_client_connect_list(o->server_list, &co, &probe);
	if (s < 0) {
		fprintf(stderr, "crowd-load: --server: no address of '%s' accepts a connection (%s)\n", o->server_list,
		        crowd_client_strerror(s));
		return -1;
	}
	uint16_t port = 0;
	fprintf(stderr, "crowd-load: loading %s, the first address of --server that accepts\n",
	        crowd_client_address(probe));
	s = crowd_client_parse_address(crowd_client_address(probe), o->host, sizeof o->host, &port);
	crowd_client_close(probe, 0);
	if (s < 0) return -1;
	o->port = port;
	return 0;
}

int main(int argc, char **argv) {
	int prc = load_options_parse(&run.opt, argc, argv);
	if (prc != 0) return prc > 0 ? 0 : 2;
	signal(SIGPIPE, SIG_IGN);
	/* one descriptor per connection: lift the soft limit as far as allowed */
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < (rlim_t)run.opt.connections + 16)
		fprintf(stderr, "crowd-load: warning: %u connections but only %llu file descriptors\n",
		        run.opt.connections, (unsigned long long)nofile.rlim_cur);
	if (pick_server(&run.opt) < 0 || resolve(run.opt.host, run.opt.port, &run.addr) < 0) return 2;
	if (run.opt.setup_path[0]) {
		bool win = run.opt.area == LOAD_AREA_WINDOW;
		if (load_plan_from_csv(&run.plan, run.opt.setup_path, run.opt.connections, run.opt.agents_per_conn,
		                       win ? run.opt.window_w : 0, win ? run.opt.window_h : 0) < 0)
			return 2;
	}
	run.loop = uv_default_loop();
	run.conns = calloc(run.opt.connections, sizeof *run.conns);
	if (!run.conns || !load_stats_init(&run.total, 7) || !load_stats_init(&run.interval, 7)) {
		fprintf(stderr, "crowd-load: out of memory\n");
		return 2;
	}
	for (uint32_t i = 0; i < run.opt.connections; i++)
		if (!load_conn_init(&run.conns[i], &run, i)) {
			fprintf(stderr, "crowd-load: out of memory\n");
			return 2;
		}

	run.start_ns = last_progress_ns = uv_hrtime();
	next_progress_ns = run.start_ns + 1000000000ull;
	uv_timer_init(run.loop, &ramp_timer);
	uv_timer_init(run.loop, &progress_timer);
	uv_timer_init(run.loop, &phase_timer);
	uv_signal_init(run.loop, &sigint_handle);
	uv_signal_init(run.loop, &sigterm_handle);
	uv_signal_start(&sigint_handle, on_signal, SIGINT);
	uv_signal_start(&sigterm_handle, on_signal, SIGTERM);
	uv_timer_start(&ramp_timer, on_ramp, 0, 5);
	uv_timer_start(&progress_timer, on_progress, 1000, 0);
	uv_timer_start(&phase_timer, on_phase, 20, 20);

	uv_run(run.loop, UV_RUN_DEFAULT);

	if (!run.measuring) {
		/* No connection got to run: a table of zeros would hide why. */
		if (run.failure[0])
			fprintf(stderr, "crowd-load: no connection ran: %s\n", run.failure);
		else
			fprintf(stderr, "crowd-load: stopped before any connection was running\n");
		for (uint32_t i = 0; i < run.opt.connections; i++) load_conn_free(&run.conns[i]);
		free(run.conns);
		load_stats_free(&run.total);
		load_stats_free(&run.interval);
		load_plan_free(&run.plan);
		uv_loop_close(run.loop);
		return 2;
	}
	double measured = (double)(run.measure_end_ns - run.measure_start_ns) / 1e9;
	load_report_sum(&run, &run.total);
	const load_stats *t = &run.total;
	/* thresholds, before the report so the JSON carries the verdict */
	if (run.opt.max_p99_ms >= 0) {
		double ack99 = (double)load_hist_percentile(&t->ack_us, 99) / 1000.0;
		double vis99 = (double)load_hist_percentile(&t->visible_us, 99) / 1000.0;
		if (ack99 > run.opt.max_p99_ms) {
			fprintf(stderr, "crowd-load: FAIL request->ack p99 %.2f ms > %.2f ms\n", ack99,
			        run.opt.max_p99_ms);
			run.threshold_failures++;
		}
		if (vis99 > run.opt.max_p99_ms) {
			fprintf(stderr, "crowd-load: FAIL command->visible p99 %.2f ms > %.2f ms\n", vis99,
			        run.opt.max_p99_ms);
			run.threshold_failures++;
		}
	}
	if (run.opt.trips && run.opt.max_late_trips >= 0) {
		const unsigned long long late = t->trips_late_60 + t->trips_open_late_60;
		if (late > (unsigned long long)run.opt.max_late_trips) {
			fprintf(stderr, "crowd-load: FAIL %llu trips more than 60 s past their free-walk time > %lld\n",
			        late, run.opt.max_late_trips);
			run.threshold_failures++;
		}
	}
	if (run.opt.trips && run.opt.trips_each && !run.trips_all_done)
		fprintf(stderr, "crowd-load: not every agent finished %u trips in the measured time\n",
		        run.opt.trips_each);
	if (run.opt.max_errors >= 0) {
		unsigned long long errs = t->error_total + t->disconnects + t->connect_failures + t->decode_failures;
		if (errs > (unsigned long long)run.opt.max_errors) {
			fprintf(stderr, "crowd-load: FAIL %llu errors/disconnects/failed connects > %lld\n", errs,
			        run.opt.max_errors);
			run.threshold_failures++;
		}
	}
	int rc = load_report_final(&run, t, measured, stdout);
	if (run.failed)
		fprintf(stderr, "crowd-load: %u of %u connections did not get to run; the first: %s\n", run.failed,
		        run.opt.connections, run.failure);
	bool ran = run.measuring && t->acks + t->snapshots > 0;

	for (uint32_t i = 0; i < run.opt.connections; i++) load_conn_free(&run.conns[i]);
	free(run.conns);
	load_stats_free(&run.total);
	load_stats_free(&run.interval);
	load_plan_free(&run.plan);
	free(run.world_infos);
	uv_loop_close(run.loop);
	if (!ran) {
		fprintf(stderr, "crowd-load: nothing was measured\n");
		return 2;
	}
	if (rc < 0) return 2;
	return run.threshold_failures ? 1 : 0;
}
