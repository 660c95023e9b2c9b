/* server.c — the server's life: world and listeners up, the fixed-rate tick
 * (deadlines from uv_hrtime; the step on the thread pool while the loop keeps
 * reading), command application, graceful shutdown, and the headless run. */
#include "server.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demo.h"
#include "log.h"
#include "storage.h"
#include "navigation.h"
#include "tcp.h"

#define SHUTDOWN_POLL_MS 50

uint64_t server_now_ns(void) {
	return uv_hrtime();
}

/* ------------------------------------------------------------------ world */

/* --world-alloc-fail-file (tests): the engine is out of memory while the file exists. */
static void *alloc_unless_file(size_t size, void *user) {
	return access((const char *)user, F_OK) == 0 ? NULL : malloc(size);
}

static void free_alloc_unless_file(void *p, size_t size, void *user) {
	(void)size, (void)user;
	free(p);
}

int server_create_world(const server_config *cfg, orca_world **out) {
	orca_world_def def = orca_default_world_def();
	def.worker_count = (int)cfg->workers;
	def.avoidance = (orca_avoidance)cfg->avoidance;
	def.max_agents = cfg->max_agents;
	def.agent_capacity = cfg->max_agents < 1024 ? cfg->max_agents : 1024;
	if (cfg->demo && cfg->demo_agents > def.agent_capacity) def.agent_capacity = cfg->demo_agents;
	def.has_bounds = true; /* --world-bounds holds for every agent, however it is steered */
	def.bounds_min = (orca_vec2){(float)cfg->world_min_x, (float)cfg->world_min_y};
	def.bounds_max = (orca_vec2){(float)cfg->world_max_x, (float)cfg->world_max_y};
	if (cfg->world_alloc_fail_file[0])
		def.allocator = (orca_allocator){alloc_unless_file, free_alloc_unless_file, (void *)cfg->world_alloc_fail_file};
	return orca_world_create(&def, out);
}

int server_init(server *srv, uv_loop_t *loop, const server_config *cfg) {
	memset(srv, 0, sizeof *srv);
	srv->loop = loop;
	srv->cfg = cfg;
	srv->next_client_id = 1;
	crowd_buf_init(&srv->reply_buf);
	crowd_buf_init(&srv->snapshot_buf);
	crowd_obstacle_set_init(&srv->obstacle_set);
	srv->ids_scratch = malloc(sizeof *srv->ids_scratch * (cfg->max_batch + 1));
	if (!srv->ids_scratch) return -1;
	int rc = server_create_world(cfg, &srv->world);
	if (rc != ORCA_OK) {
		log_error("cannot create the world: %s", orca_strerror(rc));
		return -1;
	}
	if (cfg->demo) {
		srv->demo = demo_create(srv->world, cfg);
		if (!srv->demo) return -1;
	}
	srv->status.agents = orca_world_agent_count(srv->world);
	srv->status.obstacles = orca_world_obstacle_count(srv->world);
	srv->status.state_hash = orca_world_state_hash(srv->world);
	/* persistence hook: recover the world of --data-dir (replaces world and demo; with
	 * navigation it makes srv->nav over the recovered world, with its recorded state) */
	if (cfg->data_dir[0] && storage_open(srv, &srv->storage) != 0) return -1;
	/* navigation: the mesh over the world as it is now (demo obstacles included) */
	if (cfg->nav_enabled && !srv->nav && !(srv->nav = navigation_create(srv->world, cfg))) return -1;
	if (cfg->tick_trace_path[0]) {
		srv->tick_trace = fopen(cfg->tick_trace_path, "w");
		if (!srv->tick_trace) {
			log_error("--tick-trace %s: cannot open it", cfg->tick_trace_path);
			return -1;
		}
		fputs("tick total_us apply_us wait_us navigation_us step_us table_us handoff_us snapshots_us events_us "
		      "commands snapshots snapshot_bytes paths_planned replans\n",
		      srv->tick_trace);
	}
	return 0;
}

int server_add_extension(server *srv, const server_extension *ext) {
	if (srv->extension_count >= SERVER_MAX_EXTENSIONS) return -1;
	srv->extensions[srv->extension_count++] = *ext;
	return 0;
}

/* ------------------------------------------------------------------ sessions */

static uint32_t session_index(const server *srv, uint32_t client_id) {
	uint32_t lo = 0, hi = srv->session_count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (srv->sessions[mid]->client_id < client_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

session *server_find_session(server *srv, uint32_t client_id) {
	uint32_t i = session_index(srv, client_id);
	return (i < srv->session_count && srv->sessions[i]->client_id == client_id) ? srv->sessions[i] : NULL;
}

bool server_attach_session(server *srv, session *s) {
	if (srv->session_count == srv->session_cap) {
		uint32_t cap = srv->session_cap ? srv->session_cap * 2 : 16;
		session **p = realloc(srv->sessions, sizeof *p * cap);
		if (!p) return false;
		srv->sessions = p;
		srv->session_cap = cap;
	}
	/* client ids only grow, so appending keeps the array sorted */
	srv->sessions[srv->session_count++] = s;
	return true;
}

void server_rekey_session(server *srv, session *s, uint32_t client_id) {
	server_detach_session(srv, s);
	s->client_id = client_id;
	uint32_t i = session_index(srv, client_id); /* detached: room for one more */
	memmove(&srv->sessions[i + 1], &srv->sessions[i], sizeof *srv->sessions * (srv->session_count - i));
	srv->sessions[i] = s;
	srv->session_count++;
}

void server_detach_session(server *srv, session *s) {
	uint32_t i = session_index(srv, s->client_id);
	if (i < srv->session_count && srv->sessions[i] == s) {
		memmove(&srv->sessions[i], &srv->sessions[i + 1], sizeof *srv->sessions * (srv->session_count - i - 1));
		srv->session_count--;
	}
}

void server_enqueue(server *srv, command *c) {
	command_queue_push(&srv->queue, c);
}

/* ------------------------------------------------------------------ commands */

static uint32_t owners_owned(void *user, uint32_t client_id) {
	server *srv = user;
	session *s = server_find_session(srv, client_id);
	if (s && s->owned_unknown) { /* resumed: its agents are in the world already (the world is idle here) */
		uint32_t n = orca_world_agent_count(srv->world), owned = 0;
		orca_agent_id *ids = malloc(sizeof *ids * (n ? n : 1));
		if (ids) {
			n = orca_world_agent_ids(srv->world, ids, n);
			for (uint32_t i = 0; i < n; i++) {
				orca_agent_state st;
				if (orca_agent_get(srv->world, ids[i], &st) == ORCA_OK && st.user_data == client_id) owned++;
			}
			free(ids);
			s->agents_owned = owned;
			s->owned_unknown = false;
		}
	}
	return s ? s->agents_owned : 0;
}

static void owners_changed(void *user, uint32_t client_id, int64_t delta) {
	session *s = server_find_session(user, client_id);
	if (!s || s->owned_unknown) return; /* unknown: counted from the world, which has the change */
	int64_t n = (int64_t)s->agents_owned + delta;
	s->agents_owned = n < 0 ? 0 : (uint32_t)n;
}

void server_apply_commands(server *srv) {
	command_owners owners = {owners_owned, owners_changed, srv};
	command *c = command_queue_take(&srv->queue);
	while (c) {
		command *next = c->next;
		if (c->kind == COMMAND_DROP_OWNER) {
			/* Clients that left one after another: drop all their agents in one pass. */
			uint32_t ids[256];
			uint32_t n = 0;
			while (c && c->kind == COMMAND_DROP_OWNER && n < 256) {
				next = c->next;
				ids[n++] = c->client_id;
				command_free(c);
				c = next;
			}
			command_drop_owners(srv->world, ids, n, &owners);
			if (srv->storage) storage_journal_drop_owners(srv->storage, ids, n); /* persistence hook */
			srv->metrics.commands_applied += n;
			continue;
		}
		command_result r;
		/* navigation: GetPaths is answered from the paths, not applied to the world */
		const bool get_paths = c->kind == COMMAND_CLIENT && c->msg.which_msg == crowd_v1_ClientMessage_get_paths_tag;
		memset(&r, 0, sizeof r);
		/* persistence hook: while the journal cannot be written, world changes are refused */
		if (srv->storage && c->kind == COMMAND_CLIENT && !get_paths && !storage_available(srv->storage)) {
			request_fail(&r.error, crowd_v1_ErrorCode_ERROR_STORAGE_UNAVAILABLE, 0,
			             "the journal cannot be written; try again later");
			storage_count_refused(srv->storage);
		} else if (!get_paths) {
			command_apply(srv->world, srv->cfg, c, &owners, srv->ids_scratch, &r);
			navigation_after_command(srv->nav, c, &r);
			srv->metrics.commands_applied++;
			if (srv->storage && r.error.code == crowd_v1_ErrorCode_ERROR_NONE)
				storage_journal_command(srv->storage, c); /* persistence hook */
		}
		if (c->kind == COMMAND_CLIENT) {
			session *s = server_find_session(srv, c->client_id);
			if (s) session_command_done(s, c);
			if (get_paths) {
				if (s && !s->closing) navigation_answer_paths(srv, s, c);
			} else if (srv->storage && storage_defers_replies(srv->storage) &&
			           r.error.code != crowd_v1_ErrorCode_ERROR_STORAGE_UNAVAILABLE) {
				/* persistence hook (--fsync always): answered once this tick's records are durable */
				if (r.error.code == crowd_v1_ErrorCode_ERROR_NONE)
					storage_defer_ack(srv->storage, c->client_id, c->msg.request_id, r.ids, r.id_count);
				else
					storage_defer_error(srv->storage, c->client_id, c->msg.request_id, r.error.code,
					                    r.error.index, r.error.message);
			} else if (s && !s->closing) {
				if (r.error.code == crowd_v1_ErrorCode_ERROR_NONE)
					session_send_ack(s, c->msg.request_id, r.ids, r.id_count);
				else
					session_send_error(s, c->msg.request_id, r.error.code, r.error.index,
					                   r.error.message);
			}
		}
		command_free(c);
		c = next;
	}
}

/* ------------------------------------------------------------------ tick */

static void schedule_next_tick(server *srv);

/* Every 10 s, at debug level: where the tick time went. */
static void log_tick_profile(server *srv) {
	static server_metrics last;
	static uint64_t last_ns;
	uint64_t now = uv_hrtime();
	if (log_get_level() > LOG_DEBUG || now - last_ns < 10000000000ull) return;
	last_ns = now;
	const server_metrics *m = &srv->metrics;
	double n = (double)(m->ticks - last.ticks);
	if (n <= 0) return;
	double total = m->tick_duration_sum_seconds - last.tick_duration_sum_seconds;
	log_debug("tick profile: %.2f ms per tick (step %.2f, table %.2f, snapshots %.2f), %u agents, %u clients, "
	          "%" PRIu64 " snapshots sent, %" PRIu64 " skipped, %" PRIu64 " overruns",
	          total / n * 1e3, (m->step_seconds_sum - last.step_seconds_sum) / n * 1e3,
	          (m->table_seconds_sum - last.table_seconds_sum) / n * 1e3,
	          (m->snapshot_seconds_sum - last.snapshot_seconds_sum) / n * 1e3, srv->status.agents,
	          srv->session_count, m->snapshots_sent - last.snapshots_sent,
	          m->snapshots_skipped - last.snapshots_skipped, m->ticks_overrun - last.ticks_overrun);
	last = *m;
}

/* --tick-trace: this tick's wall time and parts (microseconds), and what it
 * did (commands applied, snapshots sent and their bytes, paths planned,
 * replans), so a slow tick can be told from a busy one. stdio's buffer: one
 * write() every few dozen ticks. */
static void write_tick_trace(server *srv, uint64_t tick_ns) {
	const server_metrics *m = &srv->metrics;
	uint64_t replans = 0;
	for (size_t k = 0; k < sizeof m->navigation.replans / sizeof m->navigation.replans[0]; k++)
		replans += m->navigation.replans[k];
	const uint64_t now[5] = {m->commands_applied, m->snapshots_sent, m->snapshot_bytes, m->navigation.paths_planned,
	                         replans};
	fprintf(srv->tick_trace, "%" PRIu64 " %.0f", srv->status.tick, (double)tick_ns * 1e-3);
	for (int k = 0; k < TICK_PARTS; k++) fprintf(srv->tick_trace, " %.0f", srv->tick_part[k] * 1e6);
	for (int k = 0; k < 5; k++) fprintf(srv->tick_trace, " %" PRIu64, now[k] - srv->tick_trace_last[k]);
	fputc('\n', srv->tick_trace);
	memcpy(srv->tick_trace_last, now, sizeof now);
}

static void step_work(uv_work_t *req) {
	server *srv = req->data;
	uint64_t t0 = uv_hrtime();
	if (srv->nav) navigation_before_step(srv->nav, 1.0f / (float)srv->cfg->tick_rate_hz); /* navigation */
	uint64_t t_nav = uv_hrtime();
	srv->step_status = orca_world_step(srv->world, 1.0f / (float)srv->cfg->tick_rate_hz);
	uint64_t t1 = uv_hrtime();
	srv->step_seconds = (double)(t1 - t0) * 1e-9;
	srv->table_ok = false;
	if (srv->build_table)
		srv->table_ok = snapshots_build_table(srv, &srv->step_hash); /* table_seconds: with the hash */
	else
		srv->step_hash = orca_world_state_hash(srv->world);
	srv->tick_worked_ns = uv_hrtime();
	srv->table_seconds = (double)(srv->tick_worked_ns - t1) * 1e-9;
	srv->tick_part[TICK_WAIT] = (double)(t0 - srv->tick_queued_ns) * 1e-9;
	srv->tick_part[TICK_NAVIGATION] = (double)(t_nav - t0) * 1e-9;
	srv->tick_part[TICK_STEP] = (double)(t1 - t_nav) * 1e-9;
	srv->tick_part[TICK_TABLE] = srv->table_seconds;
}

static void step_finish(server *srv);

static void step_done(uv_work_t *req, int status) {
	server *srv = req->data;
	srv->step_running = false;
	if (status != 0 || srv->step_status != ORCA_OK)
		log_error("tick %" PRIu64 ": step failed: %s", srv->status.tick,
		          status != 0 ? uv_strerror(status) : orca_strerror(srv->step_status));
	srv->status.tick = orca_world_step_count(srv->world);
	srv->status.state_hash = srv->step_hash;
	srv->status.agents = orca_world_agent_count(srv->world);
	srv->status.obstacles = orca_world_obstacle_count(srv->world);
	srv->metrics.ticks++;
	srv->metrics.step_seconds_sum += srv->step_seconds;
	srv->metrics.agents = srv->status.agents;
	srv->metrics.obstacles = srv->status.obstacles;
	if (srv->nav) { /* navigation's counters, read while no step runs */
		navigation_counters nc;
		navigation_get_counters(srv->nav, &nc);
		metrics_navigation *mn = &srv->metrics.navigation;
		mn->enabled = 1;
		mn->agents = nc.agents;
		mn->polygons = nc.polygons;
		mn->paths_pending = nc.paths_pending;
		mn->tiles_pending = nc.tiles_pending;
		mn->paths_planned = nc.paths_planned;
		mn->tiles_built = nc.tiles_built;
		memcpy(mn->replans, nc.replans, sizeof mn->replans);
		memcpy(mn->events, nc.events, sizeof mn->events);
	}
	srv->metrics.table_seconds_sum += srv->table_seconds;
	if (srv->storage) { /* persistence hook: journal the hash; snapshots wait until the tick is durable */
		storage_tick_end(srv->storage);
		if (!srv->stopping && storage_hold_tick(srv->storage, step_finish)) return;
	}
	step_finish(srv);
}

/* The rest of a tick: snapshots out, the next tick scheduled. */
static void step_finish(server *srv) {
	uint64_t t0 = uv_hrtime();
	srv->tick_part[TICK_HANDOFF] = (double)(t0 - srv->tick_worked_ns) * 1e-9; /* with the journal's durable wait */
	if (srv->table_ok && !srv->stopping) snapshots_send(srv);
	uint64_t t_snap = uv_hrtime();
	if (!srv->stopping) navigation_send_events(srv); /* navigation: after the tick's snapshots */
	uint64_t t1 = uv_hrtime();
	srv->metrics.snapshot_seconds_sum += (double)(t1 - t0) * 1e-9;
	srv->tick_part[TICK_SNAPSHOTS] = (double)(t_snap - t0) * 1e-9;
	srv->tick_part[TICK_EVENTS] = (double)(t1 - t_snap) * 1e-9;
	for (int k = 0; k < TICK_PARTS; k++) srv->metrics.tick_part_seconds_sum[k] += srv->tick_part[k];
	metrics_observe_tick(&srv->metrics, (double)(t1 - srv->tick_started_ns) * 1e-9);
	if (srv->tick_trace) write_tick_trace(srv, t1 - srv->tick_started_ns);
	log_tick_profile(srv);
	if (!srv->stopping) schedule_next_tick(srv);
}

static void on_tick(uv_timer_t *timer) {
	server *srv = timer->data;
	if (srv->step_running || srv->stopping) return;
	uint64_t now = uv_hrtime();
	srv->tick_started_ns = now;
	/* Iterate backwards: a check may close a session (it is freed later, in a close callback). */
	for (uint32_t i = srv->session_count; i-- > 0;) session_check_timers(srv->sessions[i], now);
	if (!(srv->storage && storage_quiet_tick(srv->storage))) server_apply_commands(srv); /* persistence hook */
	if (srv->storage) storage_commit(srv->storage); /* persistence hook: group commit while the step runs */
	if (srv->demo) demo_update(srv->demo, srv->world);
	srv->build_table = false;
	for (uint32_t i = 0; i < srv->session_count; i++)
		if (srv->sessions[i]->subscribed) {
			srv->build_table = true;
			break;
		}
	srv->step_running = true;
	srv->step_work.data = srv;
	srv->tick_queued_ns = uv_hrtime();
	srv->tick_part[TICK_APPLY] = (double)(srv->tick_queued_ns - now) * 1e-9;
	int rc = uv_queue_work(srv->loop, &srv->step_work, step_work, step_done);
	if (rc != 0) {
		/* Should not happen; step on the loop thread rather than stop the world. */
		log_error("uv_queue_work: %s; stepping on the loop thread", uv_strerror(rc));
		step_work(&srv->step_work);
		step_done(&srv->step_work, 0);
	}
}

static void schedule_next_tick(server *srv) {
	srv->next_deadline_ns += srv->period_ns;
	uint64_t now = uv_hrtime();
	if (now > srv->next_deadline_ns) {
		/* Late: count it and skip to the next period still ahead, never catch up in a burst. */
		uint64_t missed = (now - srv->next_deadline_ns) / srv->period_ns + 1;
		srv->metrics.ticks_overrun++;
		srv->metrics.tick_periods_skipped += missed - 1;
		srv->next_deadline_ns += missed * srv->period_ns;
		if (srv->metrics.ticks_overrun == 1 || srv->metrics.ticks_overrun % 100 == 0)
			log_warn("tick %" PRIu64 " overran its period (%" PRIu64 " overruns so far)", srv->status.tick,
			         srv->metrics.ticks_overrun);
	}
	uint64_t wait_ns = srv->next_deadline_ns - now;
	uv_update_time(srv->loop);
	uv_timer_start(&srv->tick_timer, on_tick, (wait_ns + 999999) / 1000000, 0);
}

/* ------------------------------------------------------------------ start / stop */

static void on_signal(uv_signal_t *h, int signum) {
	server *srv = h->data;
	log_info("signal %d (%s)", signum, signum == SIGINT ? "SIGINT" : signum == SIGTERM ? "SIGTERM" : "?");
	server_shutdown(srv);
}

int server_start(server *srv) {
	const server_config *cfg = srv->cfg;
	int rc = tcp_listener_start(srv, &cfg->listen, &srv->tcp);
	if (rc != 0) {
		log_error("cannot listen on %s:%u: %s", cfg->listen.host, cfg->listen.port, uv_strerror(rc));
		return rc;
	}
	uv_signal_init(srv->loop, &srv->sigint);
	uv_signal_init(srv->loop, &srv->sigterm);
	uv_timer_init(srv->loop, &srv->tick_timer);
	uv_timer_init(srv->loop, &srv->shutdown_timer);
	srv->sigint.data = srv->sigterm.data = srv->tick_timer.data = srv->shutdown_timer.data = srv;
	srv->started = true;
	for (int i = 0; i < srv->extension_count; i++) {
		server_extension *e = &srv->extensions[i];
		if (e->start && e->start(srv, e->state) != 0) {
			log_error("extension %s failed to start", e->name);
			return -1;
		}
	}
	uv_signal_start(&srv->sigint, on_signal, SIGINT);
	uv_signal_start(&srv->sigterm, on_signal, SIGTERM);
	if (cfg->token_count == 0)
		log_warn("running open: no tokens configured, every client gets role %s",
		         config_role_name(cfg->open_role));
	else
		log_info("%zu token(s) configured; unknown tokens are refused", cfg->token_count);
	log_info("tick %u Hz, snapshots every %u tick(s), %u worker(s), precision %u, %u agents, %u obstacles",
	         cfg->tick_rate_hz, cfg->snapshot_divisor, cfg->workers, cfg->precision, srv->status.agents,
	         srv->status.obstacles);
	srv->status.ready = true;
	srv->period_ns = 1000000000ull / cfg->tick_rate_hz;
	srv->next_deadline_ns = uv_hrtime();
	schedule_next_tick(srv);
	return 0;
}

static void finish_shutdown(server *srv) {
	if (srv->stopping) return;
	srv->stopping = true;
	for (uint32_t i = srv->session_count; i-- > 0;) session_close(srv->sessions[i], DISCONNECT_SHUTDOWN, false);
	uv_timer_stop(&srv->tick_timer);
	uv_close((uv_handle_t *)&srv->tick_timer, NULL);
	uv_close((uv_handle_t *)&srv->shutdown_timer, NULL);
	uv_close((uv_handle_t *)&srv->sigint, NULL);
	uv_close((uv_handle_t *)&srv->sigterm, NULL);
	for (int i = 0; i < srv->extension_count; i++)
		if (srv->extensions[i].stop) srv->extensions[i].stop(srv, srv->extensions[i].state);
	log_info("stopped after %" PRIu64 " ticks", srv->status.tick);
}

static void on_shutdown_poll(uv_timer_t *t) {
	server *srv = t->data;
	if (srv->session_count == 0 || uv_now(srv->loop) >= srv->shutdown_deadline_ms) finish_shutdown(srv);
}

void server_shutdown(server *srv) {
	if (!srv->started) return;
	if (srv->status.shutting_down) {
		log_warn("second stop request: closing every connection now");
		finish_shutdown(srv);
		return;
	}
	srv->status.shutting_down = true;
	log_info("shutting down: telling %u client(s), flushing for at most %g s", srv->session_count,
	         srv->cfg->shutdown_timeout_s);
	tcp_listener_stop(srv->tcp);
	srv->tcp = NULL;
	for (int i = 0; i < srv->extension_count; i++)
		if (srv->extensions[i].drain) srv->extensions[i].drain(srv, srv->extensions[i].state);
	for (uint32_t i = srv->session_count; i-- > 0;) {
		session *s = srv->sessions[i];
		session_send_error(s, 0, crowd_v1_ErrorCode_ERROR_SHUTTING_DOWN, 0, "the server is shutting down");
		session_close(s, DISCONNECT_SHUTDOWN, true);
	}
	srv->shutdown_deadline_ms = uv_now(srv->loop) + (uint64_t)(srv->cfg->shutdown_timeout_s * 1000.0);
	uv_timer_start(&srv->shutdown_timer, on_shutdown_poll, 0, SHUTDOWN_POLL_MS);
}

void server_destroy(server *srv) {
	if (srv->tick_trace) fclose(srv->tick_trace);
	storage_close(srv->storage);
	command_queue_clear(&srv->queue);
	free(srv->sessions);
	free(srv->ids_scratch);
	demo_destroy(srv->demo);
	navigation_destroy(srv->nav);
	orca_world_destroy(srv->world);
	world_table_free(&srv->table);
	snapshots_free(srv);
	crowd_obstacle_set_free(&srv->obstacle_set);
	crowd_buf_free(&srv->reply_buf);
	crowd_buf_free(&srv->snapshot_buf);
	memset(srv, 0, sizeof *srv);
}

/* ------------------------------------------------------------------ headless */

int server_run_headless(const server_config *cfg) {
	orca_world *world;
	int rc = server_create_world(cfg, &world);
	if (rc != ORCA_OK) {
		log_error("cannot create the world: %s", orca_strerror(rc));
		return 1;
	}
	demo_crowd *demo = cfg->demo ? demo_create(world, cfg) : NULL;
	/* navigation as the server runs it: the mesh over the world as it is
	 * now (demo obstacles included), its update just before each step */
	server_navigation *nav = cfg->nav_enabled ? navigation_create(world, cfg) : NULL;
	if (cfg->nav_enabled && !nav) {
		demo_destroy(demo);
		orca_world_destroy(world);
		return 1;
	}
	float dt = 1.0f / (float)cfg->tick_rate_hz;
	uint64_t t0 = uv_hrtime();
	for (uint64_t i = 0; i < cfg->headless_ticks; i++) {
		if (demo) demo_update(demo, world);
		if (nav) navigation_before_step(nav, dt);
		rc = orca_world_step(world, dt);
		if (rc != ORCA_OK) {
			log_error("tick %" PRIu64 ": step failed: %s", i, orca_strerror(rc));
			break;
		}
	}
	double seconds = (double)(uv_hrtime() - t0) * 1e-9;
	navigation_counters nc;
	navigation_get_counters(nav, &nc); /* all zero without navigation */
	printf("ticks %" PRIu64 " agents %u workers %u state_hash 0x%016" PRIx64 " navigation %s polygons %u\n",
	       orca_world_step_count(world), orca_world_agent_count(world), cfg->workers, orca_world_state_hash(world),
	       nav ? "on" : "off", nc.polygons);
	fflush(stdout);
	log_info("headless: %" PRIu64 " ticks in %.3f s", cfg->headless_ticks, seconds);
	navigation_destroy(nav);
	demo_destroy(demo);
	orca_world_destroy(world);
	return rc == ORCA_OK ? 0 : 1;
}
