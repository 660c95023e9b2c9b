/* room.c — one world the server holds: its settings, its tick (deadlines from
 * uv_hrtime; the step on the shared thread pool while the loop keeps
 * reading), command application, snapshots and events to its sessions, its
 * storage. See room.h. */
#include "room.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pb_decode.h>
#include <pb_encode.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "messages.h"
#include "navigation.h"
#include "record.h"
#include "replay.h"
#include "replication.h"
#include "server.h"
#include "storage.h"

/* ------------------------------------------------------------------ settings */

#define ROOM_SETTINGS_FILE "world.settings"

int room_settings_save(const char *dir, const crowd_v1_WorldSettings *s) {
	uint8_t buf[crowd_v1_WorldSettings_size];
	pb_ostream_t os = pb_ostream_from_buffer(buf, sizeof buf);
	if (!pb_encode(&os, crowd_v1_WorldSettings_fields, s)) return -1;
	char path[1200], tmp[1210];
	snprintf(path, sizeof path, "%s/%s", dir, ROOM_SETTINGS_FILE);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) return -1;
	/* written whole, synced, then renamed: a crash leaves the old file or the new one */
	bool ok = write(fd, buf, os.bytes_written) == (ssize_t)os.bytes_written && fsync(fd) == 0;
	close(fd);
	if (!ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

int room_settings_load(const char *dir, crowd_v1_WorldSettings *s) {
	char path[1200];
	snprintf(path, sizeof path, "%s/%s", dir, ROOM_SETTINGS_FILE);
	uint8_t buf[crowd_v1_WorldSettings_size + 1];
	int fd = open(path, O_RDONLY);
	if (fd < 0) return -1;
	ssize_t n = read(fd, buf, sizeof buf);
	close(fd);
	if (n < 0 || (size_t)n > crowd_v1_WorldSettings_size) return -1;
	*s = (crowd_v1_WorldSettings)crowd_v1_WorldSettings_init_zero;
	pb_istream_t is = pb_istream_from_buffer(buf, (size_t)n);
	return pb_decode(&is, crowd_v1_WorldSettings_fields, s) ? 0 : -1;
}

/* The server's settings with the world's own. Only the default world runs
 * the demo crowd, the tick trace and --start-at-tick, and steps its engine
 * with --workers threads; the others with one (the shared pool runs them). */
static void room_config(room *r, const server_config *base, const crowd_v1_WorldSettings *s) {
	r->cfg = *base;
	if (r->is_default) return;
	r->cfg.workers = 1;
	r->cfg.demo = false;
	r->cfg.tick_trace_path[0] = '\0';
	r->cfg.start_at_tick = -1;
	if (s->tick_rate) r->cfg.tick_rate_hz = s->tick_rate;
	if (s->bounds_min_x != 0.0f || s->bounds_min_y != 0.0f || s->bounds_max_x != 0.0f || s->bounds_max_y != 0.0f) {
		r->cfg.world_min_x = s->bounds_min_x;
		r->cfg.world_min_y = s->bounds_min_y;
		r->cfg.world_max_x = s->bounds_max_x;
		r->cfg.world_max_y = s->bounds_max_y;
	}
	if (s->avoidance == crowd_v1_Avoidance_AVOIDANCE_QUALITY) r->cfg.avoidance = ORCA_AVOIDANCE_QUALITY;
	if (s->avoidance == crowd_v1_Avoidance_AVOIDANCE_REFERENCE) r->cfg.avoidance = ORCA_AVOIDANCE_REFERENCE;
	if (s->navigation) r->cfg.nav_enabled = true;
	if (s->max_agents) r->cfg.max_agents = s->max_agents;
	if (base->data_dir[0] && snprintf(r->cfg.data_dir, sizeof r->cfg.data_dir, "%s/worlds/%s", base->data_dir,
	                                  r->name) >= (int)sizeof r->cfg.data_dir)
		r->cfg.data_dir[0] = '\0'; /* too long a path: room_create refuses it */
}

/* ------------------------------------------------------------------ follower's queue */

/* A tick received from the primary, waiting for its step. */
typedef struct follow_tick {
	struct follow_tick *next;
	uint64_t tick, state_hash;
	size_t len;
	uint8_t records[]; /* framed: its commands */
} follow_tick;

static void follow_flush_held(room *r);
static void follow_kick(room *r);

static void follow_queue_clear(room *r) {
	while (r->follow_head) {
		follow_tick *t = r->follow_head;
		r->follow_head = t->next;
		free(t);
	}
	r->follow_tail = NULL;
	r->follow_queued = 0;
}

/* ------------------------------------------------------------------ storage hooks */

static void storage_reply_to_client(void *user, const storage_reply *rp) {
	room *r = user;
	session *s = session_find(&r->srv->host, rp->client_id);
	if (!s || s->closing || s->world != r) return;
	if (rp->ok)
		session_send_ack(s, rp->request_id, rp->ids, rp->id_count);
	else
		session_send_error(s, rp->request_id, (crowd_v1_ErrorCode)rp->code, rp->index, rp->message);
}

static void step_finish(room *r);

static void storage_resume_tick(void *user) {
	step_finish(user);
}

/* replication: every journal batch to the followers past their checkpoint */
static void storage_batch_to_followers(void *user, const uint8_t *records, size_t len, uint64_t seq) {
	room *r = user;
	if (r->repl) repl_primary_batch(r->repl, records, len, seq, r->status->tick);
}

/* replication: a follower's journal is durable up to `upto`: FollowAck what it holds */
static void storage_durable_to_primary(void *user, uint64_t upto) {
	room *r = user;
	if (r->following && r->is_default && r->srv->follower && !r->follow_sync.pending &&
	    !r->follow_sync.installing && r->storage)
		repl_follower_durable(r->srv->follower, upto);
}

/* ------------------------------------------------------------------ create / close */

int room_create(server *srv, const char *name, const crowd_v1_WorldSettings *settings, room **out, char *err,
                size_t errlen) {
	*out = NULL;
	room *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	r->srv = srv;
	tick_entry_init(&r->tick_at);
	snprintf(r->name, sizeof r->name, "%s", name);
	r->is_default = strcmp(name, CROWD_DEFAULT_WORLD) == 0;
	if (settings) r->settings = *settings;
	room_config(r, srv->cfg, &r->settings);
	/* a world closed with its data kept re-opens as it was recorded, settings included */
	if (!r->is_default && r->cfg.data_dir[0] && room_settings_load(r->cfg.data_dir, &r->settings) == 0)
		room_config(r, srv->cfg, &r->settings);
	if (srv->cfg->data_dir[0] && !r->cfg.data_dir[0]) {
		snprintf(err, errlen, "the data dir's path is too long for a world's");
		room_destroy(r);
		return -1;
	}
	r->metrics = r->is_default ? &srv->metrics : &r->own_metrics;
	r->status = r->is_default ? &srv->status : &r->own_status;
	crowd_obstacle_set_init(&r->obstacle_set);
	if (sim_create(&r->cfg, &r->sim) != 0) {
		snprintf(err, errlen, "the world could not be made (out of memory?)");
		room_destroy(r);
		return -1;
	}
	r->status->agents = orca_world_agent_count(r->sim->world);
	r->status->obstacles = orca_world_obstacle_count(r->sim->world);
	r->status->state_hash = orca_world_state_hash(r->sim->world);
	if (r->cfg.data_dir[0]) { /* persistence: its own journal and checkpoints; recovery hands back a new sim */
		if (!r->is_default) {
			char worlds[1100];
			snprintf(worlds, sizeof worlds, "%s/worlds", srv->cfg->data_dir);
			if ((mkdir(worlds, 0700) != 0 && errno != EEXIST) ||
			    (mkdir(r->cfg.data_dir, 0700) != 0 && errno != EEXIST) ||
			    room_settings_save(r->cfg.data_dir, &r->settings) != 0) {
				snprintf(err, errlen, "cannot write %s: %s", r->cfg.data_dir, strerror(errno));
				room_destroy(r);
				return -1;
			}
		}
		storage_recovery rec;
		const storage_hooks hooks = {storage_reply_to_client, storage_resume_tick, r,
		                             storage_batch_to_followers, storage_durable_to_primary};
		/* a follower opens its data dir once the primary's checkpoint is in (room_follow_checkpoint) */
		int rc = r->cfg.follow[0] ? 0 : storage_open(&r->cfg, srv->loop, r->sim, &hooks, &r->storage, &rec);
		if (r->cfg.follow[0]) memset(&rec, 0, sizeof rec);
		if (rec.sim) {
			sim_destroy(r->sim);
			r->sim = rec.sim;
			r->status->tick = orca_world_step_count(r->sim->world);
			r->status->state_hash = rec.state_hash;
			r->status->agents = orca_world_agent_count(r->sim->world);
			r->status->obstacles = orca_world_obstacle_count(r->sim->world);
		}
		if (rc != 0) {
			snprintf(err, errlen, "its data dir %s did not open (see the log)", r->cfg.data_dir);
			room_destroy(r);
			return -1;
		}
		r->persisted = true;
	}
	if (r->cfg.tick_trace_path[0]) {
		r->tick_trace = fopen(r->cfg.tick_trace_path, "w");
		if (!r->tick_trace) {
			snprintf(err, errlen, "--tick-trace %s: cannot open it", r->cfg.tick_trace_path);
			room_destroy(r);
			return -1;
		}
		fputs("tick total_us apply_us wait_us navigation_us step_us table_us handoff_us snapshots_us events_us "
		      "commands snapshots snapshot_bytes paths_planned replans\n",
		      r->tick_trace);
	}
	*out = r;
	return 0;
}

int room_start_navigation(room *r) {
	/* the mesh over the world as it is now (demo obstacles included); a
	 * recovered sim has it already, with its recorded state */
	return sim_start_navigation(r->sim);
}

static void remove_tree(const char *path) {
	DIR *d = opendir(path);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
			char sub[1400];
			snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
			struct stat st;
			if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
				remove_tree(sub);
			else
				unlink(sub);
		}
		closedir(d);
	}
	rmdir(path);
}

void room_destroy(room *r) {
	if (!r) return;
	if (r->tick_trace) fclose(r->tick_trace);
	if (r->storage) storage_close(r->storage);
	repl_primary_free(r->repl);
	follow_queue_clear(r);
	crowd_buf_free(&r->follow_held);
	free(r->follow_sync.data);
	free(r->follow_sync.idata);
	if (r->follow_sync.sim) sim_destroy(r->follow_sync.sim);
	free(r->promote.records);
	command_queue_clear(&r->queue);
	sim_destroy(r->sim);
	world_table_free(&r->table);
	snapshots_free(r);
	crowd_obstacle_set_free(&r->obstacle_set);
	free(r->events_scratch);
	free(r->sending.events);
	free(r->members.items);
	free(r);
}

/* Closed, its timer closed and no step running: write its journal's last
 * records, free it, and remove its data if asked. */
static void room_finish_close(room *r) {
	if (r->timer_open || r->step_running || snapshots_busy(r)) return;
	char dir[sizeof r->cfg.data_dir];
	snprintf(dir, sizeof dir, "%s", r->cfg.data_dir);
	const bool remove = r->delete_data && dir[0] && !r->is_default;
	if (r->storage) storage_commit(r->storage);
	log_info("world %s closed%s", r->name, remove ? ", its data removed" : "");
	room_destroy(r);
	if (remove) remove_tree(dir);
}

void room_close(room *r, bool delete_data) {
	if (r->closing) { /* closed before: what it waited for may be done now */
		room_finish_close(r);
		return;
	}
	r->closing = true;
	r->delete_data = delete_data;
	tick_queue_remove(&r->srv->ticks, &r->tick_at);
	r->timer_open = false;
	room_finish_close(r);
}

/* ------------------------------------------------------------------ commands */

static session *room_session(room *r, uint32_t client_id) {
	session *s = session_find(&r->srv->host, client_id);
	return s && s->world == r ? s : NULL;
}

static uint32_t owners_owned(void *user, uint32_t client_id) {
	room *r = user;
	session *s = room_session(r, client_id);
	if (s && s->owned_unknown) { /* resumed: its agents are in the world already (the world is idle here) */
		orca_world *world = r->sim->world;
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
	session *s = room_session(user, client_id);
	if (!s || s->owned_unknown) return; /* unknown: counted from the world, which has the change */
	int64_t n = (int64_t)s->agents_owned + delta;
	s->agents_owned = n < 0 ? 0 : (uint32_t)n;
}

/* navigation: GetPaths answered from the paths navigation builds */
static void answer_paths(room *r, session *s, const command *c) {
	navigation_paths_reply reply;
	request_error err;
	if (!navigation_paths(r->sim->nav, r->sim->world, c, &reply, &err)) {
		session_send_error(s, c->msg.request_id, err.code, err.index, err.message);
		return;
	}
	if (!session_send(s, &reply.msg))
		session_send_error(s, c->msg.request_id, crowd_v1_ErrorCode_ERROR_INTERNAL, 0,
		                   "the paths did not encode");
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

/* navigation: the tick's AgentEvents, kept until its snapshots are out (the
 * next step makes new ones) */
static void keep_agent_events(room *r) {
	uint32_t count;
	const crowd_v1_AgentEvent *events = navigation_events(r->sim->nav, &count);
	r->sending.event_count = 0;
	if (count == 0) return;
	if (r->sending.events_cap < count) {
		crowd_v1_AgentEvent *p = realloc(r->sending.events, sizeof *p * count);
		if (!p) {
			log_error("world %s tick %" PRIu64 ": out of memory keeping its %u events", r->name,
			          r->status->tick, count);
			return;
		}
		r->sending.events = p;
		r->sending.events_cap = count;
	}
	memcpy(r->sending.events, events, sizeof *events * count);
	r->sending.event_count = count;
}

/* navigation: after the tick's snapshots, AgentEvents to the room's owners
 * (protocol minor >= 1) and to its admins who asked for every agent's */
static void send_agent_events(room *r) {
	const uint32_t count = r->sending.event_count;
	const crowd_v1_AgentEvent *events = r->sending.events;
	const uint64_t tick = r->sending.tick;
	if (count == 0) return;
	if (r->events_scratch_cap < count) {
		crowd_v1_AgentEvent *p = realloc(r->events_scratch, sizeof *p * count);
		if (!p) return;
		r->events_scratch = p;
		r->events_scratch_cap = count;
	}
	for (uint32_t i = 0; i < r->members.count; i++) {
		session *s = r->members.items[i];
		/* a minor-0 client never gets a message case it does not know */
		if (!s->hello_done || s->closing || s->protocol_minor < 1 || s->events == SESSION_EVENTS_NONE) continue;
		if (s->events == SESSION_EVENTS_ALL) {
			send_events(s, tick, (crowd_v1_AgentEvent *)events, count);
			continue;
		}
		uint32_t own = 0;
		for (uint32_t k = 0; k < count; k++)
			if (events[k].owner == s->client_id) r->events_scratch[own++] = events[k];
		if (own) send_events(s, tick, r->events_scratch, own);
	}
}

void room_apply_commands(room *r) {
	command_owners owners = {owners_owned, owners_changed, r};
	command *c = command_queue_take(&r->queue);
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
			sim_drop_owners(r->sim, ids, n, &owners);
			if (r->storage) storage_journal_drop_owners(r->storage, ids, n); /* persistence hook */
			r->metrics->commands_applied += n;
			continue;
		}
		command_result res;
		/* a request that does not change the world (GetPaths) is answered from the sim, not applied */
		const message_kind *kind = c->kind == COMMAND_CLIENT ? message_kind_of(c->msg.which_msg) : NULL;
		const bool get_paths = kind && !kind->changes_world;
		memset(&res, 0, sizeof res);
		/* persistence hook: while the journal cannot be written, world changes are refused */
		if (r->storage && c->kind == COMMAND_CLIENT && !get_paths && !storage_available(r->storage)) {
			request_fail(&res.error, crowd_v1_ErrorCode_ERROR_STORAGE_UNAVAILABLE, 0,
			             "the journal cannot be written; try again later");
			storage_count_refused(r->storage);
		} else if (!get_paths) {
			sim_apply(r->sim, c, &owners, &res);
			r->metrics->commands_applied++;
			if (r->storage && res.error.code == crowd_v1_ErrorCode_ERROR_NONE)
				storage_journal_command(r->storage, c); /* persistence hook */
		}
		if (c->kind == COMMAND_CLIENT) {
			session *s = session_find(&r->srv->host, c->client_id);
			if (s) session_command_done(s, c);
			if (s && s->world != r) s = NULL; /* answered in its world only */
			if (get_paths) {
				if (s && !s->closing) answer_paths(r, s, c);
			} else if (r->storage && storage_defers_replies(r->storage) &&
			           res.error.code != crowd_v1_ErrorCode_ERROR_STORAGE_UNAVAILABLE) {
				/* persistence hook (--fsync always): answered once this tick's records are durable */
				if (res.error.code == crowd_v1_ErrorCode_ERROR_NONE)
					storage_defer_ack(r->storage, c->client_id, c->msg.request_id, res.ids,
					                  res.id_count);
				else
					storage_defer_error(r->storage, c->client_id, c->msg.request_id, res.error.code,
					                    res.error.index, res.error.message);
			} else if (s && !s->closing) {
				if (res.error.code == crowd_v1_ErrorCode_ERROR_NONE)
					session_send_ack(s, c->msg.request_id, res.ids, res.id_count);
				else
					session_send_error(s, c->msg.request_id, res.error.code, res.error.index,
					                   res.error.message);
			}
		}
		command_free(c);
		c = next;
	}
}

/* ------------------------------------------------------------------ tick */

static void schedule_next_tick(room *r);

/* Every 10 s, at debug level: where the default world's tick time went. */
static void log_tick_profile(room *r) {
	static server_metrics last;
	static uint64_t last_ns;
	uint64_t now = uv_hrtime();
	if (!r->is_default || log_get_level() > LOG_DEBUG || now - last_ns < 10000000000ull) return;
	last_ns = now;
	const server_metrics *m = r->metrics;
	double n = (double)(m->ticks - last.ticks);
	if (n <= 0) return;
	double total = m->tick_duration_sum_seconds - last.tick_duration_sum_seconds;
	log_debug("tick profile: %.2f ms per tick (step %.2f, table %.2f, snapshots %.2f), %u agents, %u clients, "
	          "%" PRIu64 " snapshots sent, %" PRIu64 " skipped, %" PRIu64 " overruns",
	          total / n * 1e3, (m->step_seconds_sum - last.step_seconds_sum) / n * 1e3,
	          (m->table_seconds_sum - last.table_seconds_sum) / n * 1e3,
	          (m->snapshot_seconds_sum - last.snapshot_seconds_sum) / n * 1e3, r->status->agents, r->clients,
	          m->snapshots_sent - last.snapshots_sent, m->snapshots_skipped - last.snapshots_skipped,
	          m->ticks_overrun - last.ticks_overrun);
	last = *m;
}

/* --tick-trace: this tick's wall time and parts (microseconds), and what it
 * did (commands applied, snapshots sent and their bytes, paths planned,
 * replans), so a slow tick can be told from a busy one. stdio's buffer: one
 * write() every few dozen ticks. */
static void write_tick_trace(room *r, uint64_t tick, uint64_t tick_ns, const double *part) {
	const server_metrics *m = r->metrics;
	uint64_t replans = 0;
	for (size_t k = 0; k < sizeof m->navigation.replans / sizeof m->navigation.replans[0]; k++)
		replans += m->navigation.replans[k];
	const uint64_t now[5] = {m->commands_applied, m->snapshots_sent, m->snapshot_bytes, m->navigation.paths_planned,
	                         replans};
	fprintf(r->tick_trace, "%" PRIu64 " %.0f", tick, (double)tick_ns * 1e-3);
	for (int k = 0; k < TICK_PARTS; k++) fprintf(r->tick_trace, " %.0f", part[k] * 1e6);
	for (int k = 0; k < 5; k++) fprintf(r->tick_trace, " %" PRIu64, now[k] - r->tick_trace_last[k]);
	fputc('\n', r->tick_trace);
	memcpy(r->tick_trace_last, now, sizeof now);
}

/* CPU time of the calling thread: what a step costs, which a step preempted on
 * a busy machine does not inflate as it does its wall time. */
static double thread_cpu_seconds(void) {
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0.0;
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void step_work(uv_work_t *req) {
	room *r = req->data;
	const double cpu0 = thread_cpu_seconds();
	sim_step_times t;
	r->step_status = sim_step(r->sim, &t); /* demo, navigation, the step */
	const uint64_t t0 = t.start_ns, t_nav = t.before_step_ns, t1 = t.end_ns;
	r->step_seconds = (double)(t1 - t0) * 1e-9;
	r->table_ok = false;
	if (r->build_table)
		r->table_ok = snapshots_build_table(r, &r->step_hash); /* table_seconds: with the hash */
	else
		r->step_hash = orca_world_state_hash(r->sim->world);
	r->tick_worked_ns = uv_hrtime();
	r->table_seconds = (double)(r->tick_worked_ns - t1) * 1e-9;
	r->tick_part[TICK_WAIT] = (double)(t0 - r->tick_queued_ns) * 1e-9;
	r->tick_part[TICK_NAVIGATION] = (double)(t_nav - t0) * 1e-9;
	r->tick_part[TICK_STEP] = (double)(t1 - t_nav) * 1e-9;
	r->tick_part[TICK_TABLE] = r->table_seconds;
	r->step_cpu_seconds = thread_cpu_seconds() - cpu0;
}

static bool server_stopping(const room *r) {
	return r->srv->stopping || r->closing;
}

static void step_done(uv_work_t *req, int status) {
	room *r = req->data;
	r->step_running = false;
	if (status != 0 || r->step_status != ORCA_OK)
		log_error("world %s tick %" PRIu64 ": step failed: %s", r->name, r->status->tick,
		          status != 0 ? uv_strerror(status) : orca_strerror(r->step_status));
	server_status *st = r->status;
	server_metrics *m = r->metrics;
	st->tick = orca_world_step_count(r->sim->world);
	st->state_hash = r->step_hash;
	st->agents = orca_world_agent_count(r->sim->world);
	st->obstacles = orca_world_obstacle_count(r->sim->world);
	m->ticks++;
	m->step_seconds_sum += r->step_seconds;
	m->agents = st->agents;
	m->obstacles = st->obstacles;
	if (r->sim->nav) { /* navigation's counters, read while no step runs */
		navigation_counters nc;
		navigation_get_counters(r->sim->nav, &nc);
		metrics_navigation *mn = &m->navigation;
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
	m->table_seconds_sum += r->table_seconds;
	/* A world whose step takes most of its period steps at low priority
	 * (room.h). Judged by the step's CPU time: a light world's step preempted
	 * on a busy machine can take half a period of wall time, and on the lane
	 * it would wait behind a heavy world's step and miss its next ticks. */
	const double used = r->step_cpu_seconds, period = (double)r->period_ns * 1e-9;
	if (!r->is_default && !r->heavy && used > 0.5 * period) {
		r->heavy = true;
		log_info("world %s: a step takes %.1f ms of CPU of its %.1f ms period: it steps at low priority", r->name,
		         used * 1e3, period * 1e3);
	} else if (r->heavy && used < 0.25 * period) {
		r->heavy = false;
		log_info("world %s: its steps fit its period again: back on the shared pool", r->name);
	}
	if (r->closing) {
		room_finish_close(r);
		return;
	}
	if (r->following && st->state_hash != r->follow_hash) {
		/* the replay of the primary's records does not give its world: nothing more is written */
		log_error("replication: tick %" PRIu64 " steps to state hash 0x%016" PRIx64
		          ", the primary's is 0x%016" PRIx64 ": the follower stops",
		          st->tick, st->state_hash, r->follow_hash);
		fflush(NULL);
		_exit(3);
	}
	if (r->storage && r->following) { /* its TickEnd is journaled as received; a checkpoint due here */
		const bool ckpt = r->follow_ckpt_tick == st->tick;
		storage_follow_tick_done(r->storage, r->sim, st->tick, st->state_hash, ckpt);
		if (ckpt) {
			r->follow_ckpt_tick = 0;
			follow_flush_held(r);
		}
	} else if (r->storage) { /* persistence hook: journal the hash; snapshots wait until the tick is durable */
		storage_tick_end(r->storage, r->sim, st->tick, st->state_hash, st->agents);
		if (r->repl && repl_primary_wants_checkpoint(r->repl)) { /* replication: a full sync at this boundary */
			crowd_buf ckpt;
			crowd_buf_init(&ckpt);
			if (storage_encode_checkpoint(r->storage, r->sim, st->state_hash, &ckpt))
				repl_primary_send_checkpoint(r->repl, ckpt.data, ckpt.len, st->tick);
			else
				log_error("replication: the checkpoint for a follower did not encode (out of memory)");
			crowd_buf_free(&ckpt);
		}
		if (r->is_default) { /* /metrics: the default world's followers */
			metrics_replication *mr = &m->replication;
			mr->followers = repl_primary_count(r->repl);
			for (uint32_t i = 0; i < mr->followers && i < METRICS_FOLLOWERS_LISTED; i++)
				repl_primary_follower(r->repl, i, &mr->follower_ids[i], &mr->follower_acked_ticks[i]);
		}
		if (!r->following && !server_stopping(r) && storage_hold_tick(r->storage)) return;
	}
	step_finish(r);
}

/* The end of a tick once its snapshots are out: its events, its times. */
static void tick_end(room *r) {
	struct room_sending *o = &r->sending;
	uint64_t t_snap = uv_hrtime();
	if (!server_stopping(r)) send_agent_events(r); /* navigation: after the tick's snapshots */
	uint64_t t1 = uv_hrtime();
	r->metrics->snapshot_seconds_sum += (double)(t1 - o->snapshots_ns) * 1e-9;
	o->part[TICK_SNAPSHOTS] = (double)(t_snap - o->snapshots_ns) * 1e-9;
	o->part[TICK_EVENTS] = (double)(t1 - t_snap) * 1e-9;
	for (int k = 0; k < TICK_PARTS; k++) r->metrics->tick_part_seconds_sum[k] += o->part[k];
	metrics_observe_tick(r->metrics, (double)(t1 - o->started_ns) * 1e-9);
	if (r->tick_trace) write_tick_trace(r, o->tick, t1 - o->started_ns, o->part);
	log_tick_profile(r);
}

/* --snapshot-overlap: the last tick's snapshots are out. */
static void snapshots_done(room *r) {
	tick_end(r);
	if (r->closing) {
		room_finish_close(r);
		return;
	}
	if (r->finish_waiting) { /* the next step was done before them */
		r->finish_waiting = false;
		step_finish(r);
	}
}

/* --snapshot-overlap: on the pool while the next tick steps, or at once
 * (auto: overlap_auto.h; the ticks due next are this world's next and the
 * earliest of any other world's). */
static bool snapshots_overlap(const room *r, uint64_t now) {
	switch (r->cfg.snapshot_overlap) {
	case CONFIG_OVERLAP_ALWAYS: return true;
	case CONFIG_OVERLAP_NEVER: return false;
	default: break;
	}
	uint64_t next = r->next_deadline_ns + r->period_ns; /* this world's next tick */
	const tick_entry *e = tick_queue_peek(&r->srv->ticks);
	if (e && e->deadline_ns < next) next = e->deadline_ns;
	return overlap_auto_pool(&r->overlap_auto, now, next, r->period_ns);
}

/* The rest of a tick: snapshots out, the next tick scheduled. With
 * --snapshot-overlap the snapshots may be encoded on the pool and sent while
 * the next tick steps (snapshots_overlap); a step done before the last tick's
 * snapshots are out waits for them (snapshots_done), so a client's snapshots
 * and events keep their order. */
static void step_finish(room *r) {
	/* the ticks that fell due while this step ran start first: their steps
	 * then run beside this fan-out, not after it */
	rooms_run_due_ticks(r->srv);
	uint64_t t0 = uv_hrtime();
	r->tick_part[TICK_HANDOFF] = (double)(t0 - r->tick_worked_ns) * 1e-9; /* with the journal's durable wait */
	if (snapshots_busy(r)) {
		r->finish_waiting = true;
		return;
	}
	struct room_sending *o = &r->sending;
	o->tick = r->status->tick;
	o->started_ns = r->tick_started_ns;
	o->snapshots_ns = t0;
	memcpy(o->part, r->tick_part, sizeof o->part);
	keep_agent_events(r);
	if (r->table_ok && !server_stopping(r)) {
		/* a follower's next tick is the primary's next frame, applied on the loop: no overlap */
		const bool overlap = !r->following && snapshots_overlap(r, t0);
		if (overlap && snapshots_start(r, snapshots_done)) {
			r->metrics->snapshot_ticks_pool++;
			overlap_auto_sent_on_pool(&r->overlap_auto);
			if (!server_stopping(r)) schedule_next_tick(r);
			return;
		}
		if (!overlap) {
			snapshots_send(r);
			overlap_auto_sent_at_once(&r->overlap_auto, uv_hrtime() - t0);
			r->metrics->snapshot_ticks_at_once++;
		}
	}
	tick_end(r);
	if (!server_stopping(r) && !r->following) schedule_next_tick(r);
	if (r->following) follow_kick(r); /* the next received tick, if any */
}

static room *room_of_lane_job(step_lane_job *job) {
	return (room *)((char *)job - offsetof(room, lane_job));
}

static void lane_step_work(step_lane_job *job) {
	step_work(&room_of_lane_job(job)->step_work);
}

static void lane_step_done(step_lane_job *job) {
	step_done(&room_of_lane_job(job)->step_work, 0);
}

/* A world other than the default with no clients and no agents for
 * --world-idle-seconds closes (its data stays on disk). */
static bool idle_too_long(room *r, uint64_t now) {
	if (r->is_default || r->clients || r->status->agents || orca_world_agent_count(r->sim->world)) {
		r->idle_since_ns = 0;
		return false;
	}
	if (r->idle_since_ns == 0) r->idle_since_ns = now;
	return (double)(now - r->idle_since_ns) * 1e-9 >= r->cfg.world_idle_seconds;
}

static void start_step(room *r, uint64_t now);

/* Backwards: a check may close a session (it is freed later, in a close
 * callback). Sessions not past Hello belong to no world: the default's tick checks them. */
static void check_session_timers(room *r, uint64_t now) {
	for (uint32_t i = r->members.count; i-- > 0;) session_check_timers(r->members.items[i], now);
	if (r->is_default) {
		const session_list *all = &r->srv->host.sessions;
		for (uint32_t i = all->count; i-- > 0;)
			if (!all->items[i]->world) session_check_timers(all->items[i], now);
	}
}

/* Some member wants snapshots: the step fills the table. */
static bool any_subscribed(const room *r) {
	for (uint32_t i = 0; i < r->members.count; i++)
		if (r->members.items[i]->subscribed) return true;
	return false;
}

static void room_tick(room *r) {
	if (r->step_running || server_stopping(r)) return;
	uint64_t now = uv_hrtime();
	r->tick_started_ns = now;
	const float late_ms = now > r->next_deadline_ns ? (float)((double)(now - r->next_deadline_ns) * 1e-6) : 0.0f;
	r->lateness_ms[r->lateness_at] = late_ms;
	r->lateness_at = (r->lateness_at + 1) % ROOM_LATENESS_SAMPLES;
	if (r->lateness_count < ROOM_LATENESS_SAMPLES) r->lateness_count++;
	if (idle_too_long(r, now)) {
		log_info("world %s: no clients and no agents for %g s: closing", r->name, r->cfg.world_idle_seconds);
		server_close_world(r->srv, r, false);
		return;
	}
	check_session_timers(r, now);
	if (!(r->storage && storage_quiet_tick(r->storage))) room_apply_commands(r); /* persistence hook */
	if (r->storage) storage_commit(r->storage); /* persistence hook: group commit while the step runs */
	r->build_table = any_subscribed(r);
	start_step(r, now);
}

/* The step of the tick (its commands applied since `now`) on the pool, or on the lane for a heavy world. */
static void start_step(room *r, uint64_t now) {
	r->step_running = true;
	r->step_work.data = r;
	r->tick_queued_ns = uv_hrtime();
	r->tick_part[TICK_APPLY] = (double)(r->tick_queued_ns - now) * 1e-9;
	if (r->heavy && r->srv->lane) {
		r->lane_job.work = lane_step_work;
		r->lane_job.done = lane_step_done;
		step_lane_queue(r->srv->lane, &r->lane_job);
		return;
	}
	int rc = uv_queue_work(r->srv->loop, &r->step_work, step_work, step_done);
	if (rc != 0) {
		/* Should not happen; step on the loop thread rather than stop the world. */
		log_error("uv_queue_work: %s; stepping on the loop thread", uv_strerror(rc));
		step_work(&r->step_work);
		step_done(&r->step_work, 0);
	}
}

static void arm_tick_timer(server *srv);

/* Its tick at r->next_deadline_ns, in the server's queue. */
static void queue_tick(room *r) {
	tick_queue_remove(&r->srv->ticks, &r->tick_at); /* never twice */
	if (!tick_queue_push(&r->srv->ticks, &r->tick_at, r->next_deadline_ns)) {
		log_error("world %s: out of memory queueing its next tick: it stops ticking", r->name);
		return;
	}
	arm_tick_timer(r->srv);
}

static void schedule_next_tick(room *r) {
	r->next_deadline_ns += r->period_ns;
	uint64_t now = uv_hrtime();
	if (now > r->next_deadline_ns) {
		/* Late: count it and skip to the next period still ahead, never catch up in a burst. */
		uint64_t missed = (now - r->next_deadline_ns) / r->period_ns + 1;
		r->metrics->ticks_overrun++;
		r->metrics->tick_periods_skipped += missed - 1;
		r->next_deadline_ns += missed * r->period_ns;
		if (r->metrics->ticks_overrun == 1 || r->metrics->ticks_overrun % 100 == 0)
			log_warn("world %s tick %" PRIu64 " overran its period (%" PRIu64 " overruns so far)", r->name,
			         r->status->tick, r->metrics->ticks_overrun);
	}
	queue_tick(r);
}

static room *room_of_tick(tick_entry *e) {
	return (room *)((char *)e - offsetof(room, tick_at));
}

static void on_tick_timer(uv_timer_t *timer) {
	rooms_run_due_ticks(timer->data);
}

/* The server's one tick timer, at the earliest deadline (whole milliseconds,
 * rounded up: a tick never starts before its deadline). */
static void arm_tick_timer(server *srv) {
	if (srv->ticks_running || srv->stopping) return; /* rooms_run_due_ticks arms it when it is done */
	if (!srv->tick_timer_open) {
		uv_timer_init(srv->loop, &srv->tick_timer);
		srv->tick_timer.data = srv;
		srv->tick_timer_open = true;
	}
	const tick_entry *e = tick_queue_peek(&srv->ticks);
	if (!e) {
		uv_timer_stop(&srv->tick_timer);
		return;
	}
	uint64_t now = uv_hrtime();
	uint64_t wait_ns = e->deadline_ns > now ? e->deadline_ns - now : 0;
	uv_update_time(srv->loop);
	uv_timer_start(&srv->tick_timer, on_tick_timer, (wait_ns + 999999) / 1000000, 0);
}

void rooms_run_due_ticks(server *srv) {
	if (srv->ticks_running) return; /* a tick's step done at once (no pool) comes back here */
	srv->ticks_running = true;
	tick_entry *e;
	while (!srv->stopping && (e = tick_queue_pop_due(&srv->ticks, uv_hrtime())) != NULL) room_tick(room_of_tick(e));
	srv->ticks_running = false;
	arm_tick_timer(srv);
}

void rooms_stop_ticks(server *srv) {
	for (uint32_t i = 0; i < srv->room_count; i++) {
		tick_queue_remove(&srv->ticks, &srv->rooms[i]->tick_at);
		srv->rooms[i]->timer_open = false;
	}
	if (srv->tick_timer_open) {
		uv_timer_stop(&srv->tick_timer);
		uv_close((uv_handle_t *)&srv->tick_timer, NULL);
		srv->tick_timer_open = false;
	}
}

void room_start(room *r) {
	server *srv = r->srv;
	r->timer_open = true;
	r->period_ns = 1000000000ull / r->cfg.tick_rate_hz;
	/* its phase: the widest gap between those of the rooms ticking at its period */
	uint64_t *phases = malloc(sizeof *phases * (srv->room_count + 1));
	uint32_t n = 0;
	for (uint32_t i = 0; phases && i < srv->room_count; i++) {
		const room *o = srv->rooms[i];
		if (o != r && o->timer_open && !o->closing && o->period_ns == r->period_ns)
			phases[n++] = o->next_deadline_ns % o->period_ns;
	}
	const uint64_t phase = phases ? tick_phase_place(r->period_ns, phases, n) : 0;
	free(phases);
	r->next_deadline_ns = tick_phase_first_deadline(uv_hrtime(), r->period_ns, phase);
	queue_tick(r);
}

bool room_add_member(room *r, session *s) {
	if (r->members.count == r->members.cap) {
		uint32_t cap = r->members.cap ? r->members.cap * 2 : 16;
		session **p = realloc(r->members.items, sizeof *p * cap);
		if (!p) return false;
		r->members.items = p;
		r->members.cap = cap;
	}
	r->members.items[r->members.count++] = s;
	r->clients = r->members.count;
	return true;
}

void room_remove_member(room *r, session *s) {
	for (uint32_t i = r->members.count; i-- > 0;)
		if (r->members.items[i] == s) {
			r->members.items[i] = r->members.items[--r->members.count];
			break;
		}
	r->clients = r->members.count;
}

/* ------------------------------------------------------------------ replication */

static bool send_to_follower(void *user, uint32_t client_id, const crowd_v1_ServerMessage *msg) {
	room *r = user;
	session *s = session_find(&r->srv->host, client_id);
	if (!s || s->closing) return false;
	return session_send(s, msg);
}

bool room_add_follower(room *r, uint32_t client_id) {
	if (!r->repl)
		r->repl =
		    repl_primary_new(storage_history_id(r->storage), r->cfg.min_followers_ack, send_to_follower, r);
	return r->repl && repl_primary_add(r->repl, client_id);
}

void room_follower_ack(room *r, uint32_t client_id, uint64_t seq, uint64_t tick) {
	if (!r->repl) return;
	uint64_t held = repl_primary_ack(r->repl, client_id, seq, tick);
	if (held && r->storage) storage_set_replicated(r->storage, held);
}

/* A full sync, on the pool: the data dir takes the checkpoint, a new sim is
 * recovered from it (decode, navigation). Reads only its own copies and the
 * idle world (no step runs: step_running is held meanwhile). */
static void follow_install_work(uv_work_t *req) {
	room *r = req->data;
	struct room_follow_sync *fs = &r->follow_sync;
	fs->st = NULL;
	fs->sim = NULL;
	uint64_t ckpt_tick = 0;
	if (replay_checkpoint_settings(fs->idata, fs->ilen, &fs->cfg, &ckpt_tick) != 0 || ckpt_tick != fs->itick) {
		log_error("replication: the primary's checkpoint does not read");
		fs->rc = -1;
		return;
	}
	int rc = storage_install_checkpoint(fs->cfg.data_dir, fs->ihistory, fs->idata, fs->ilen, fs->itick);
	if (rc != 0) {
		log_error("replication: cannot write the checkpoint into %s: %s", fs->cfg.data_dir, strerror(-rc));
		fs->rc = -1;
		return;
	}
	storage_recovery rec;
	const storage_hooks hooks = {storage_reply_to_client, storage_resume_tick, r, storage_batch_to_followers,
	                             storage_durable_to_primary};
	rc = storage_open(&fs->cfg, NULL, r->sim, &hooks, &fs->st, &rec); /* the writer starts on the loop */
	fs->sim = rec.sim;
	fs->state_hash = rec.state_hash;
	if (rc != 0 || !rec.sim) {
		log_error("replication: the checkpoint of tick %" PRIu64 " did not open in %s", fs->itick, fs->cfg.data_dir);
		fs->rc = -1;
		return;
	}
	fs->rc = 0;
}

static void follow_install_done(uv_work_t *req, int status) {
	room *r = req->data;
	struct room_follow_sync *fs = &r->follow_sync;
	r->step_running = false;
	fs->installing = false;
	free(fs->idata);
	fs->idata = NULL;
	storage *st = fs->st;
	fs->st = NULL;
	if (status != 0 || fs->rc != 0 || r->closing || server_stopping(r)) {
		if (fs->sim) sim_destroy(fs->sim);
		fs->sim = NULL;
		storage_close(st);
		if (r->closing) {
			room_finish_close(r);
			return;
		}
		if (server_stopping(r)) return;
		log_error("replication: the follower stops");
		fflush(NULL);
		_exit(1);
	}
	r->cfg = fs->cfg; /* the checkpoint's settings */
	storage_use_config(st, &r->cfg);
	if (storage_attach(st, r->srv->loop) != 0) {
		log_error("replication: the journal's writer did not start: the follower stops");
		fflush(NULL);
		_exit(1);
	}
	r->storage = st;
	sim_destroy(r->sim);
	r->sim = fs->sim;
	fs->sim = NULL;
	r->following = true;
	r->period_ns = 1000000000ull / r->cfg.tick_rate_hz;
	r->status->tick = orca_world_step_count(r->sim->world);
	r->status->state_hash = fs->state_hash;
	r->status->agents = orca_world_agent_count(r->sim->world);
	r->status->obstacles = orca_world_obstacle_count(r->sim->world);
	for (uint32_t i = 0; i < r->members.count; i++) r->members.items[i]->need_keyframe = true;
	r->obstacle_set_valid = false;
	log_info("replication: the checkpoint of tick %" PRIu64 " is installed", r->status->tick);
	if (r->is_default && !fs->pending && r->srv->follower) r->metrics->replication.connected = true;
	if (!fs->pending) follow_flush_held(r); /* else a newer sync came meanwhile: its records wait for it */
	follow_kick(r);
}

/* The pending full sync onto the pool (no step runs). The old journal is
 * closed first: its last durable point is nothing to acknowledge any more. */
static void follow_install_start(room *r) {
	struct room_follow_sync *fs = &r->follow_sync;
	fs->pending = false;
	fs->idata = fs->data;
	fs->ilen = fs->len;
	fs->itick = fs->tick;
	memcpy(fs->ihistory, fs->history, sizeof fs->ihistory);
	fs->data = NULL;
	if (r->storage) {
		storage *old = r->storage;
		r->storage = NULL;
		storage_close(old);
	}
	fs->cfg = r->cfg;
	fs->installing = true;
	r->step_running = true; /* no step, no close, until it is in */
	fs->work.data = r;
	int rc = uv_queue_work(r->srv->loop, &fs->work, follow_install_work, follow_install_done);
	if (rc != 0) {
		log_error("uv_queue_work: %s; installing the checkpoint on the loop thread", uv_strerror(rc));
		follow_install_work(&fs->work);
		follow_install_done(&fs->work, 0);
	}
}

int room_follow_checkpoint(room *r, const uint8_t *checkpoint, size_t len, uint64_t tick, const char *history) {
	/* the ticks queued and the records held belong to the stream this one replaces */
	follow_queue_clear(r);
	r->follow_held.len = 0;
	r->follow_ckpt_tick = 0;
	struct room_follow_sync *fs = &r->follow_sync;
	free(fs->data); /* a sync not installed yet: this one replaces it */
	fs->data = malloc(len ? len : 1);
	if (!fs->data) {
		log_error("replication: out of memory keeping the primary's checkpoint");
		return -1;
	}
	memcpy(fs->data, checkpoint, len);
	fs->len = len;
	fs->tick = tick;
	snprintf(fs->history, sizeof fs->history, "%s", history);
	fs->pending = true;
	r->follow_holding = true; /* what comes next goes into the new journal, once it is open */
	follow_kick(r);
	return 0;
}

static void follow_journal(room *r, const uint8_t *msg, size_t len) {
	uint32_t id = storage_journal_replicated(r->storage, msg, len);
	if (id > r->follow_max_client) r->follow_max_client = id;
}

void room_follow_record(room *r, const uint8_t *msg, size_t len) {
	if (r->follow_holding) { /* into the journal once it may take it, in this order */
		if (!record_append_message(&r->follow_held, msg, len))
			log_error("replication: out of memory holding a record for the journal");
		return;
	}
	if (r->storage) follow_journal(r, msg, len);
}

/* The records held back go into the journal, in their order, as one batch. */
static void follow_flush_held(room *r) {
	r->follow_holding = false;
	if (!r->storage || r->follow_held.len == 0) return;
	size_t pos = 0;
	const uint8_t *msg;
	size_t len;
	while (record_next(r->follow_held.data, r->follow_held.len, &pos, &msg, &len) == RECORD_OK)
		follow_journal(r, msg, len);
	r->follow_held.len = 0;
	storage_commit(r->storage);
}

uint64_t room_follow_commit(room *r) {
	if (r->follow_holding) /* held: they go in the next batch, committed as one when the hold ends */
		return (r->storage && !r->follow_sync.pending && !r->follow_sync.installing
		            ? storage_committed_seq(r->storage)
		            : 0) +
		       1;
	if (!r->storage) return 0;
	storage_commit(r->storage);
	return storage_committed_seq(r->storage);
}

int room_follow_tick(room *r, uint64_t tick, uint64_t state_hash, const uint8_t *records, size_t len) {
	if (!r->following) return -1;
	follow_tick *t = malloc(sizeof *t + (len ? len : 1));
	if (!t) {
		log_error("replication: out of memory queueing tick %" PRIu64, tick);
		return -1;
	}
	t->next = NULL;
	t->tick = tick;
	t->state_hash = state_hash;
	t->len = len;
	if (len) memcpy(t->records, records, len);
	if (r->follow_tail)
		r->follow_tail->next = t;
	else
		r->follow_head = t;
	r->follow_tail = t;
	r->follow_queued++;
	/* its TickEnd is the last record journaled: a checkpoint due here ends the segment there, and the
	 * records after it wait until the world is copied at this tick */
	if (!r->follow_holding && r->follow_ckpt_tick == 0 && r->storage &&
	    storage_follow_checkpoint_due(r->storage, tick)) {
		r->follow_ckpt_tick = tick;
		r->follow_holding = true;
	}
	follow_kick(r);
	return 0;
}

/* The next received tick onto the pool, when no step runs: its commands applied
 * by the recovery's replay code, then the live step; step_done compares the hash. */
static void follow_kick(room *r) {
	if (!r->following || r->step_running || server_stopping(r)) return;
	if (r->follow_sync.pending) { /* a full sync first: installed on the pool, then the ticks after it */
		follow_install_start(r);
		return;
	}
	follow_tick *t = r->follow_head;
	if (!t) {
		if (r->promote.pending) server_promote_done(r->srv);
		return;
	}
	r->follow_head = t->next;
	if (!r->follow_head) r->follow_tail = NULL;
	r->follow_queued--;
	if (t->tick != r->status->tick + 1) {
		log_error("replication: tick %" PRIu64 " queued after tick %" PRIu64 ": the follower stops", t->tick,
		          r->status->tick);
		fflush(NULL);
		_exit(3);
	}
	uint64_t now = uv_hrtime();
	r->tick_started_ns = now;
	check_session_timers(r, now); /* the follower's world is the default */
	if (r->follow_max_client >= r->sim->next_client_id) r->sim->next_client_id = r->follow_max_client + 1;
	/* the recovery's replay code: the recorded commands by the recorded settings, then the live step */
	if (replay_apply_records(r->sim, t->records, t->len, t->tick) < 0) {
		log_error("replication: a record of tick %" PRIu64 " does not apply: the follower stops", t->tick);
		fflush(NULL);
		_exit(3);
	}
	r->follow_hash = t->state_hash;
	free(t);
	r->build_table = any_subscribed(r);
	start_step(r, now); /* on the pool: the loop goes on answering viewers and /metrics */
}

uint32_t room_follow_backlog(const room *r) {
	return r->follow_queued + (r->following && r->step_running ? 1u : 0u);
}

void room_promote_when_drained(room *r) {
	r->promote.pending = true;
	follow_kick(r); /* at once when nothing is queued and no step runs */
}

void room_promote(room *r, const uint8_t *pending, size_t len) {
	const uint64_t tick = r->status->tick;
	if (r->follow_max_client >= r->sim->next_client_id) r->sim->next_client_id = r->follow_max_client + 1;
	if (pending && len) {
		int n = replay_apply_records(r->sim, pending, len, tick + 1);
		log_info("replication: %d command(s) of the unfinished tick %" PRIu64 " applied", n, tick + 1);
	}
	r->following = false;
	r->promote.pending = false;
	/* the next tick is the one the old primary may have run and shown: exactly these commands */
	storage_quiet_next_tick(r->storage);
	room_start(r);
}

_Static_assert(ROOM_LATENESS_SAMPLES <= TICK_LATENESS_SAMPLES_MAX, "tick_lateness_p99 takes the whole ring");

float room_lateness_p99_ms(const room *r) {
	return tick_lateness_p99(r->lateness_ms, r->lateness_count);
}
