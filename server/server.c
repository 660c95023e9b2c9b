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

#include "log.h"
#include "messages.h"
#include "storage.h"
#include "navigation.h"
#include "tcp.h"

#define SHUTDOWN_POLL_MS 50

uint64_t server_now_ns(void) {
	return uv_hrtime();
}

/* ------------------------------------------------------------------ world */

/* ---- persistence hooks: how storage reaches sessions and the tick */

static void storage_reply_to_client(void *user, const storage_reply *r) {
	server *srv = user;
	session *s = session_find(&srv->host, r->client_id);
	if (!s || s->closing) return;
	if (r->ok)
		session_send_ack(s, r->request_id, r->ids, r->id_count);
	else
		session_send_error(s, r->request_id, (crowd_v1_ErrorCode)r->code, r->index, r->message);
}

static void step_finish(server *srv);

static void storage_resume_tick(void *user) {
	step_finish(user);
}

static void storage_ext_stop(server *srv, void *state) {
	(void)srv;
	storage_stop(state);
}

/* ---- what sessions ask of the server (session_host_ops) */

static uint32_t host_new_client_id(void *user) {
	server *srv = user;
	return srv->sim->next_client_id++;
}

static void host_enqueue(void *user, session *s, command *c) {
	(void)s; /* one world: one queue */
	command_queue_push(&((server *)user)->queue, c);
}

static uint64_t host_tick(void *user, const session *s) {
	(void)s;
	return ((const server *)user)->status.tick;
}

static bool host_find_identity(void *user, const session *s, const char *key, uint32_t *client_id, uint32_t *role) {
	(void)s;
	return storage_find_identity(((server *)user)->storage, key, client_id, role);
}

static bool host_new_identity(void *user, const session *s, uint32_t role, char key_out[33]) {
	return storage_new_identity(((server *)user)->storage, s->client_id, role, key_out);
}

static crowd_v1_ErrorCode host_enter_world(void *user, session *s, const char *name) {
	if (strcmp(name, CROWD_DEFAULT_WORLD) != 0) return crowd_v1_ErrorCode_ERROR_NO_SUCH_WORLD;
	s->world = user;
	snprintf(s->world_name, sizeof s->world_name, "%s", name);
	return crowd_v1_ErrorCode_ERROR_NONE;
}

static const server_config *host_world_config(void *user, const session *s) {
	(void)s;
	return ((const server *)user)->cfg;
}

static void host_create_world(void *user, session *s, uint32_t request_id, const crowd_v1_CreateWorld *m) {
	(void)user;
	if (strcmp(m->name, CROWD_DEFAULT_WORLD) == 0)
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_WORLD_EXISTS, 0, "the world is open already");
	else
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_LIMIT_WORLDS, 0, "this server holds one world");
}

static void host_close_world(void *user, session *s, uint32_t request_id, const crowd_v1_CloseWorld *m) {
	(void)user;
	if (strcmp(m->name, CROWD_DEFAULT_WORLD) == 0)
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_WORLD_FORBIDDEN, 0,
		                   "the default world never closes");
	else
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_NO_SUCH_WORLD, 0, "no open world of that name");
}

static void host_list_worlds(void *user, session *s, uint32_t request_id) {
	server *srv = user;
	crowd_v1_WorldInfo info = crowd_v1_WorldInfo_init_zero;
	snprintf(info.name, sizeof info.name, "%s", CROWD_DEFAULT_WORLD);
	info.agents = srv->status.agents;
	info.clients = srv->host.sessions.count;
	info.tick_rate = srv->cfg->tick_rate_hz;
	info.tick = srv->status.tick;
	info.persisted = srv->storage != NULL;
	crowd_v1_ServerMessage msg = crowd_v1_ServerMessage_init_zero;
	msg.which_msg = crowd_v1_ServerMessage_world_list_tag;
	msg.msg.world_list.request_id = request_id;
	msg.msg.world_list.worlds = &info;
	msg.msg.world_list.worlds_count = 1;
	msg.msg.world_list.max_worlds = srv->cfg->max_worlds;
	session_send(s, &msg);
}

static const session_host_ops host_ops = {
    .new_client_id = host_new_client_id,
    .enqueue = host_enqueue,
    .tick = host_tick,
    .find_identity = host_find_identity,
    .new_identity = host_new_identity,
    .enter_world = host_enter_world,
    .world_config = host_world_config,
    .create_world = host_create_world,
    .close_world = host_close_world,
    .list_worlds = host_list_worlds,
};

int server_init(server *srv, uv_loop_t *loop, const server_config *cfg) {
	memset(srv, 0, sizeof *srv);
	srv->loop = loop;
	srv->cfg = cfg;
	session_host_init(&srv->host, &host_ops, srv, loop, cfg, &srv->metrics, &srv->status);
	crowd_buf_init(&srv->snapshot_buf);
	crowd_obstacle_set_init(&srv->obstacle_set);
	if (sim_create(cfg, &srv->sim) != 0) return -1;
	srv->status.agents = orca_world_agent_count(srv->sim->world);
	srv->status.obstacles = orca_world_obstacle_count(srv->sim->world);
	srv->status.state_hash = orca_world_state_hash(srv->sim->world);
	if (cfg->data_dir[0]) { /* persistence hook: recovery of --data-dir hands back a new sim */
		storage_recovery rec;
		const storage_hooks hooks = {storage_reply_to_client, storage_resume_tick, srv};
		int rc = storage_open(cfg, loop, srv->sim, &hooks, &srv->storage, &rec);
		if (rec.sim) {
			sim_destroy(srv->sim);
			srv->sim = rec.sim;
			srv->status.tick = orca_world_step_count(srv->sim->world);
			srv->status.state_hash = rec.state_hash;
			srv->status.agents = orca_world_agent_count(srv->sim->world);
			srv->status.obstacles = orca_world_obstacle_count(srv->sim->world);
		}
		if (rc != 0) return -1;
		srv->host.identities = true; /* persistence: resume keys */
		const server_extension ext = {.name = "storage", .state = srv->storage, .stop = storage_ext_stop};
		if (server_add_extension(srv, &ext) != 0) return -1;
	}
	/* navigation: the mesh over the world as it is now (demo obstacles included);
	 * a recovered sim has it already, with its recorded state */
	if (sim_start_navigation(srv->sim) != 0) return -1;
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

/* One world, "default", until the server holds many. */
uint32_t server_world_count(const server *srv) {
	(void)srv;
	return 1;
}

uint32_t server_world_capacity(const server *srv) {
	return srv->cfg->max_worlds;
}

const char *server_world_name(const server *srv, uint32_t i) {
	(void)srv;
	return i == 0 ? "default" : NULL;
}

void server_worlds_changed(server *srv) {
	for (int i = 0; i < srv->extension_count; i++)
		if (srv->extensions[i].on_worlds_changed != NULL)
			srv->extensions[i].on_worlds_changed(srv, srv->extensions[i].state);
}

/* ------------------------------------------------------------------ commands */

static uint32_t owners_owned(void *user, uint32_t client_id) {
	server *srv = user;
	session *s = session_find(&srv->host, client_id);
	if (s && s->owned_unknown) { /* resumed: its agents are in the world already (the world is idle here) */
		orca_world *world = srv->sim->world;
		uint32_t n = orca_world_agent_count(world), owned = 0;
		orca_agent_id *ids = malloc(sizeof *ids * (n ? n : 1));
		if (ids) {
			n = orca_world_agent_ids(world, ids, n);
			for (uint32_t i = 0; i < n; i++) {
				orca_agent_state st;
				if (orca_agent_get(world, ids[i], &st) == ORCA_OK && st.user_data == client_id) owned++;
			}
			free(ids);
			s->agents_owned = owned;
			s->owned_unknown = false;
		}
	}
	return s ? s->agents_owned : 0;
}

static void owners_changed(void *user, uint32_t client_id, int64_t delta) {
	session *s = session_find(&((server *)user)->host, client_id);
	if (!s || s->owned_unknown) return; /* unknown: counted from the world, which has the change */
	int64_t n = (int64_t)s->agents_owned + delta;
	s->agents_owned = n < 0 ? 0 : (uint32_t)n;
}

/* navigation: GetPaths answered from the paths navigation builds */
static void answer_paths(server *srv, session *s, const command *c) {
	navigation_paths_reply reply;
	request_error err;
	if (!navigation_paths(srv->sim->nav, srv->sim->world, c, &reply, &err)) {
		session_send_error(s, c->msg.request_id, err.code, err.index, err.message);
		return;
	}
	if (!session_send(s, &reply.msg))
		session_send_error(s, c->msg.request_id, crowd_v1_ErrorCode_ERROR_INTERNAL, 0, "the paths did not encode");
	navigation_paths_free(&reply);
}

#define EVENTS_PER_MESSAGE 4096u /* a message's repeated count is 16-bit in nanopb */

static void send_events(session *s, uint64_t tick, crowd_v1_AgentEvent *events, uint32_t count) {
	for (uint32_t at = 0; at < count; at += EVENTS_PER_MESSAGE) {
		crowd_v1_ServerMessage msg = crowd_v1_ServerMessage_init_zero;
		msg.which_msg = crowd_v1_ServerMessage_agent_events_tag;
		msg.msg.agent_events.tick = tick;
		msg.msg.agent_events.events = events + at;
		msg.msg.agent_events.events_count =
		    (pb_size_t)(count - at < EVENTS_PER_MESSAGE ? count - at : EVENTS_PER_MESSAGE);
		session_send(s, &msg);
	}
}

/* navigation: after the tick's snapshots, AgentEvents to owners (protocol
 * minor >= 1) and to admins who asked for every agent's */
static void send_agent_events(server *srv) {
	uint32_t count;
	const crowd_v1_AgentEvent *events = navigation_events(srv->sim->nav, &count);
	if (count == 0) return;
	if (srv->events_scratch_cap < count) {
		crowd_v1_AgentEvent *p = realloc(srv->events_scratch, sizeof *p * count);
		if (!p) return;
		srv->events_scratch = p;
		srv->events_scratch_cap = count;
	}
	for (uint32_t i = 0; i < srv->host.sessions.count; i++) {
		session *s = srv->host.sessions.items[i];
		/* a minor-0 client never gets a message case it does not know */
		if (!s->hello_done || s->closing || s->protocol_minor < 1 || s->events == SESSION_EVENTS_NONE) continue;
		if (s->events == SESSION_EVENTS_ALL) {
			send_events(s, srv->status.tick, (crowd_v1_AgentEvent *)events, count);
			continue;
		}
		uint32_t own = 0;
		for (uint32_t k = 0; k < count; k++)
			if (events[k].owner == s->client_id) srv->events_scratch[own++] = events[k];
		if (own) send_events(s, srv->status.tick, srv->events_scratch, own);
	}
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
			sim_drop_owners(srv->sim, ids, n, &owners);
			if (srv->storage) storage_journal_drop_owners(srv->storage, ids, n); /* persistence hook */
			srv->metrics.commands_applied += n;
			continue;
		}
		command_result r;
		/* a request that does not change the world (GetPaths) is answered from the sim, not applied */
		const message_kind *kind = c->kind == COMMAND_CLIENT ? message_kind_of(c->msg.which_msg) : NULL;
		const bool get_paths = kind && !kind->changes_world;
		memset(&r, 0, sizeof r);
		/* persistence hook: while the journal cannot be written, world changes are refused */
		if (srv->storage && c->kind == COMMAND_CLIENT && !get_paths && !storage_available(srv->storage)) {
			request_fail(&r.error, crowd_v1_ErrorCode_ERROR_STORAGE_UNAVAILABLE, 0,
			             "the journal cannot be written; try again later");
			storage_count_refused(srv->storage);
		} else if (!get_paths) {
			sim_apply(srv->sim, c, &owners, &r);
			srv->metrics.commands_applied++;
			if (srv->storage && r.error.code == crowd_v1_ErrorCode_ERROR_NONE)
				storage_journal_command(srv->storage, c); /* persistence hook */
		}
		if (c->kind == COMMAND_CLIENT) {
			session *s = session_find(&srv->host, c->client_id);
			if (s) session_command_done(s, c);
			if (get_paths) {
				if (s && !s->closing) answer_paths(srv, s, c);
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
	          srv->host.sessions.count, m->snapshots_sent - last.snapshots_sent,
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
	sim_step_times t;
	srv->step_status = sim_step(srv->sim, &t); /* demo, navigation, the step */
	const uint64_t t0 = t.start_ns, t_nav = t.before_step_ns, t1 = t.end_ns;
	srv->step_seconds = (double)(t1 - t0) * 1e-9;
	srv->table_ok = false;
	if (srv->build_table)
		srv->table_ok = snapshots_build_table(srv, &srv->step_hash); /* table_seconds: with the hash */
	else
		srv->step_hash = orca_world_state_hash(srv->sim->world);
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
	srv->status.tick = orca_world_step_count(srv->sim->world);
	srv->status.state_hash = srv->step_hash;
	srv->status.agents = orca_world_agent_count(srv->sim->world);
	srv->status.obstacles = orca_world_obstacle_count(srv->sim->world);
	srv->metrics.ticks++;
	srv->metrics.step_seconds_sum += srv->step_seconds;
	srv->metrics.agents = srv->status.agents;
	srv->metrics.obstacles = srv->status.obstacles;
	if (srv->sim->nav) { /* navigation's counters, read while no step runs */
		navigation_counters nc;
		navigation_get_counters(srv->sim->nav, &nc);
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
		storage_tick_end(srv->storage, srv->sim, srv->status.tick, srv->status.state_hash, srv->status.agents);
		if (!srv->stopping && storage_hold_tick(srv->storage)) return;
	}
	step_finish(srv);
}

/* The rest of a tick: snapshots out, the next tick scheduled. */
static void step_finish(server *srv) {
	uint64_t t0 = uv_hrtime();
	srv->tick_part[TICK_HANDOFF] = (double)(t0 - srv->tick_worked_ns) * 1e-9; /* with the journal's durable wait */
	if (srv->table_ok && !srv->stopping) snapshots_send(srv);
	uint64_t t_snap = uv_hrtime();
	if (!srv->stopping) send_agent_events(srv); /* navigation: after the tick's snapshots */
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
	for (uint32_t i = srv->host.sessions.count; i-- > 0;) session_check_timers(srv->host.sessions.items[i], now);
	if (!(srv->storage && storage_quiet_tick(srv->storage))) server_apply_commands(srv); /* persistence hook */
	if (srv->storage) storage_commit(srv->storage); /* persistence hook: group commit while the step runs */
	srv->build_table = false;
	for (uint32_t i = 0; i < srv->host.sessions.count; i++)
		if (srv->host.sessions.items[i]->subscribed) {
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
	int rc = tcp_listener_start(&srv->host, &cfg->listen, &srv->tcp);
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
	for (uint32_t i = srv->host.sessions.count; i-- > 0;)
		session_close(srv->host.sessions.items[i], DISCONNECT_SHUTDOWN, false);
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
	if (srv->host.sessions.count == 0 || uv_now(srv->loop) >= srv->shutdown_deadline_ms) finish_shutdown(srv);
}

void server_shutdown(server *srv) {
	if (!srv->started) return;
	if (srv->status.shutting_down) {
		log_warn("second stop request: closing every connection now");
		finish_shutdown(srv);
		return;
	}
	srv->status.shutting_down = true;
	log_info("shutting down: telling %u client(s), flushing for at most %g s", srv->host.sessions.count,
	         srv->cfg->shutdown_timeout_s);
	tcp_listener_stop(srv->tcp);
	srv->tcp = NULL;
	for (int i = 0; i < srv->extension_count; i++)
		if (srv->extensions[i].drain) srv->extensions[i].drain(srv, srv->extensions[i].state);
	for (uint32_t i = srv->host.sessions.count; i-- > 0;) {
		session *s = srv->host.sessions.items[i];
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
	session_host_free(&srv->host);
	sim_destroy(srv->sim);
	world_table_free(&srv->table);
	snapshots_free(srv);
	crowd_obstacle_set_free(&srv->obstacle_set);
	free(srv->events_scratch);
	crowd_buf_free(&srv->snapshot_buf);
	memset(srv, 0, sizeof *srv);
}

/* ------------------------------------------------------------------ headless */

int server_run_headless(const server_config *cfg) {
	/* the sim as the server runs it: navigation's mesh over the world as it
	 * is after the demo's set-up, the tick's order of sim_step */
	sim *sm;
	if (sim_create(cfg, &sm) != 0) return 1;
	if (sim_start_navigation(sm) != 0) {
		sim_destroy(sm);
		return 1;
	}
	int rc = ORCA_OK;
	uint64_t t0 = uv_hrtime();
	for (uint64_t i = 0; i < cfg->headless_ticks; i++) {
		rc = sim_step(sm, NULL);
		if (rc != ORCA_OK) {
			log_error("tick %" PRIu64 ": step failed: %s", i, orca_strerror(rc));
			break;
		}
	}
	double seconds = (double)(uv_hrtime() - t0) * 1e-9;
	navigation_counters nc;
	navigation_get_counters(sm->nav, &nc); /* all zero without navigation */
	printf("ticks %" PRIu64 " agents %u workers %u state_hash 0x%016" PRIx64 " navigation %s polygons %u\n",
	       orca_world_step_count(sm->world), orca_world_agent_count(sm->world), cfg->workers,
	       orca_world_state_hash(sm->world), sm->nav ? "on" : "off", nc.polygons);
	fflush(stdout);
	log_info("headless: %" PRIu64 " ticks in %.3f s", cfg->headless_ticks, seconds);
	sim_destroy(sm);
	return rc == ORCA_OK ? 0 : 1;
}
