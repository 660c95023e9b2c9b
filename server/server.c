/* server.c — the server's life: its worlds (room.c) by name, what sessions
 * ask of it (session_host_ops), listeners up, graceful shutdown, and the
 * headless run. */
#include "server.h"

#include <dirent.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "messages.h"
#include "navigation.h"
#include "replication.h"
#include "storage.h"
#include "tcp.h"

#define SHUTDOWN_POLL_MS 50
/* A follower's own viewers get client ids from here: never one the primary gives (it counts up from 1);
 * once promoted it goes on from there. */
#define FOLLOWER_CLIENT_IDS 0x40000000u

uint64_t server_now_ns(void) {
	return uv_hrtime();
}

/* ------------------------------------------------------------------ worlds */

/* The open worlds, ascending name: index of `name`, or where it would go. */
static uint32_t world_index(const server *srv, const char *name, bool *found) {
	uint32_t lo = 0, hi = srv->room_count;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		int c = strcmp(srv->rooms[mid]->name, name);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

room *server_find_world(const server *srv, const char *name) {
	bool found;
	uint32_t i = world_index(srv, name, &found);
	return found ? srv->rooms[i] : NULL;
}

static int add_world(server *srv, room *r) {
	bool found;
	uint32_t i = world_index(srv, r->name, &found);
	if (found) return -1;
	if (srv->room_count == srv->room_cap) {
		uint32_t cap = srv->room_cap ? srv->room_cap * 2 : 8;
		room **p = realloc(srv->rooms, sizeof *p * cap);
		if (!p) return -1;
		srv->rooms = p;
		srv->room_cap = cap;
	}
	memmove(srv->rooms + i + 1, srv->rooms + i, sizeof *srv->rooms * (srv->room_count - i));
	srv->rooms[i] = r;
	srv->room_count++;
	return 0;
}

uint32_t server_world_count(const server *srv) {
	return srv->room_count;
}

uint32_t server_world_capacity(const server *srv) {
	return srv->cfg->max_worlds;
}

const char *server_world_name(const server *srv, uint32_t i) {
	return i < srv->room_count ? srv->rooms[i]->name : NULL;
}

void server_worlds_changed(server *srv) {
	for (int i = 0; i < srv->extension_count; i++)
		if (srv->extensions[i].on_worlds_changed != NULL)
			srv->extensions[i].on_worlds_changed(srv, srv->extensions[i].state);
}

static room *open_room(server *srv, const char *name, const crowd_v1_WorldSettings *settings, char *err,
                       size_t errlen) {
	room *r;
	if (room_create(srv, name, settings, &r, err, errlen) != 0) return NULL;
	if (add_world(srv, r) != 0) {
		snprintf(err, errlen, "out of memory");
		room_destroy(r);
		return NULL;
	}
	return r;
}

static void remove_world(server *srv, room *r) {
	bool found;
	uint32_t i = world_index(srv, r->name, &found);
	if (!found || srv->rooms[i] != r) return;
	memmove(srv->rooms + i, srv->rooms + i + 1, sizeof *srv->rooms * (srv->room_count - i - 1));
	srv->room_count--;
}

int server_open_world(server *srv, const char *name, const crowd_v1_WorldSettings *settings, room **out, char *err,
                      size_t errlen) {
	room *r = open_room(srv, name, settings, err, errlen);
	if (!r) return -1;
	if (room_start_navigation(r) != 0) {
		snprintf(err, errlen, "navigation did not start (see the log)");
		remove_world(srv, r);
		room_destroy(r);
		return -1;
	}
	/* client ids are the server's, never reused: past every id a world has seen */
	if (r->sim->next_client_id > srv->next_client_id) srv->next_client_id = r->sim->next_client_id;
	if (srv->started) {
		room_start(r);
		server_worlds_changed(srv);
	}
	log_info("world %s open: %u Hz, %u agents%s", r->name, r->cfg.tick_rate_hz, r->status->agents,
	         r->persisted ? ", persisted" : "");
	if (out) *out = r;
	return 0;
}

void server_close_world(server *srv, room *r, bool delete_data) {
	bool found;
	world_index(srv, r->name, &found);
	if (!found || r->is_default) return;
	remove_world(srv, r);
	/* its clients are told and closed; nothing of theirs reaches the room from here on */
	for (uint32_t k = r->members.count; k-- > 0;) {
		session *s = r->members.items[k];
		s->world = NULL;
		session_send_error(s, 0, crowd_v1_ErrorCode_ERROR_WORLD_CLOSED, 0, "this world was closed");
		session_close(s, DISCONNECT_SHUTDOWN, true);
	}
	room_close(r, delete_data);
	server_worlds_changed(srv);
}

/* Every world kept in DIR/worlds/ re-opens with its settings and agents. */
static int open_persisted_worlds(server *srv) {
	char dir[1100];
	snprintf(dir, sizeof dir, "%s/worlds", srv->cfg->data_dir);
	DIR *d = opendir(dir);
	if (!d) return 0;
	struct dirent *e;
	int rc = 0;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (!crowd_world_name_valid(e->d_name) || strcmp(e->d_name, CROWD_DEFAULT_WORLD) == 0) continue;
		char path[1400];
		if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
		crowd_v1_WorldSettings settings;
		if (room_settings_load(path, &settings) != 0) {
			log_warn("%s: no world.settings that reads: not a world, left alone", path);
			continue;
		}
		if (srv->room_count >= srv->cfg->max_worlds) {
			log_error("%s: more persisted worlds than --max-worlds %u", path, srv->cfg->max_worlds);
			rc = -1;
			break;
		}
		char err[256];
		if (server_open_world(srv, e->d_name, &settings, NULL, err, sizeof err) != 0) {
			log_error("world %s: %s", e->d_name, err);
			rc = -1;
		}
	}
	closedir(d);
	return rc;
}

static void storage_ext_stop(server *srv, void *state) {
	(void)state;
	for (uint32_t i = 0; i < srv->room_count; i++)
		if (srv->rooms[i]->storage) storage_stop(srv->rooms[i]->storage);
}

/* ---- what sessions ask of the server (session_host_ops) */

static uint32_t host_new_client_id(void *user) {
	server *srv = user;
	uint32_t id = srv->next_client_id++;
	if (srv->host.read_only) return id; /* a follower's viewers: ids of their own (FOLLOWER_CLIENT_IDS) */
	/* the default world's sim keeps the counter across restarts (its checkpoints) */
	if (srv->world->sim->next_client_id < srv->next_client_id)
		srv->world->sim->next_client_id = srv->next_client_id;
	return id;
}

static void host_enqueue(void *user, session *s, command *c) {
	(void)user;
	room *r = s->world;
	if (!r) { /* its world closed: nothing to apply */
		command_free(c);
		return;
	}
	command_queue_push(&r->queue, c);
}

static uint64_t host_tick(void *user, const session *s) {
	const room *r = s->world ? s->world : ((const server *)user)->world;
	return r->status->tick;
}

static bool host_find_identity(void *user, const session *s, const char *key, uint32_t *client_id, uint32_t *role) {
	(void)user;
	const room *r = s->world;
	return r && r->storage && storage_find_identity(r->storage, key, client_id, role);
}

static bool host_new_identity(void *user, const session *s, uint32_t role, char key_out[33]) {
	const server *srv = user;
	if (srv->host.read_only) return false; /* a follower's viewers own nothing to resume */
	const room *r = s->world;
	return r && r->storage && storage_new_identity(r->storage, s->client_id, role, key_out);
}

static void host_leave_world(void *user, session *s) {
	(void)user;
	room *r = s->world;
	if (r) room_remove_member(r, s);
}

static crowd_v1_ErrorCode host_enter_world(void *user, session *s, const char *name) {
	server *srv = user;
	room *r = server_find_world(srv, name);
	if (!r || r->opening) return crowd_v1_ErrorCode_ERROR_NO_SUCH_WORLD;
	if (!room_add_member(r, s)) return crowd_v1_ErrorCode_ERROR_NO_SUCH_WORLD; /* out of memory */
	host_leave_world(user, s);
	s->world = r;
	snprintf(s->world_name, sizeof s->world_name, "%s", r->name);
	/* its sim records owner ids past every client id it may see (checkpoints); a follower's viewers own nothing */
	if (!srv->host.read_only && r->sim->next_client_id < srv->next_client_id)
		r->sim->next_client_id = srv->next_client_id;
	return crowd_v1_ErrorCode_ERROR_NONE;
}

static const server_config *host_world_config(void *user, const session *s) {
	const room *r = s->world;
	return r ? &r->cfg : ((const server *)user)->cfg;
}

static void world_open_work(uv_work_t *req) {
	room *r = req->data;
	r->open_status = room_start_navigation(r);
}

static void world_open_done(uv_work_t *req, int status) {
	room *r = req->data;
	server *srv = r->srv;
	r->step_running = false;
	r->opening = false;
	session *s = session_find(&srv->host, r->creator_id);
	if (s && s->closing) s = NULL;
	if (r->closing) { /* closed while it opened */
		if (s) session_send_ack(s, r->creator_request, NULL, 0);
		room_close(r, r->delete_data);
		return;
	}
	if (status != 0 || r->open_status != 0 || srv->stopping) {
		log_warn("world %s did not open: %s", r->name,
		         srv->stopping ? "the server is stopping" : "navigation did not start");
		if (s)
			session_send_error(s, r->creator_request, crowd_v1_ErrorCode_ERROR_INTERNAL, 0,
			                   srv->stopping ? "the server is stopping"
			                                 : "the world's navigation did not start");
		remove_world(srv, r);
		room_close(r, true); /* it never ran: nothing of it is kept */
		return;
	}
	if (r->sim->next_client_id > srv->next_client_id) srv->next_client_id = r->sim->next_client_id;
	room_start(r);
	log_info("world %s open: %u Hz, persisted %s", r->name, r->cfg.tick_rate_hz, r->persisted ? "yes" : "no");
	server_worlds_changed(srv);
	if (s) session_send_ack(s, r->creator_request, NULL, 0);
}

static void host_create_world(void *user, session *s, uint32_t request_id, const crowd_v1_CreateWorld *m) {
	server *srv = user;
	char text[256];
	if (server_find_world(srv, m->name)) {
		snprintf(text, sizeof text, "a world '%s' is open already", m->name);
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_WORLD_EXISTS, 0, text);
		return;
	}
	if (srv->room_count >= srv->cfg->max_worlds) {
		snprintf(text, sizeof text, "%u worlds are open: the server's limit (--max-worlds)", srv->room_count);
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_LIMIT_WORLDS, 0, text);
		return;
	}
	const crowd_v1_WorldSettings none = crowd_v1_WorldSettings_init_zero;
	room *r = open_room(srv, m->name, m->has_settings ? &m->settings : &none, text, sizeof text);
	if (!r) {
		log_warn("client %u: CreateWorld %s: %s", s->client_id, m->name, text);
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_INTERNAL, 0, text);
		return;
	}
	/* its mesh is built on the pool: the loop, and every other world's tick, go on meanwhile */
	r->opening = true;
	r->creator_id = s->client_id;
	r->creator_request = request_id;
	r->step_running = true;
	r->step_work.data = r;
	int rc = uv_queue_work(srv->loop, &r->step_work, world_open_work, world_open_done);
	if (rc != 0) {
		world_open_work(&r->step_work);
		world_open_done(&r->step_work, 0);
	}
}

static void host_close_world(void *user, session *s, uint32_t request_id, const crowd_v1_CloseWorld *m) {
	server *srv = user;
	room *r = server_find_world(srv, m->name);
	if (r && r->is_default) {
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_WORLD_FORBIDDEN, 0,
		                   "the default world never closes");
		return;
	}
	if (!r) {
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_NO_SUCH_WORLD, 0,
		                   "no open world of that name");
		return;
	}
	log_info("client %u closes the world %s%s", s->client_id, m->name, m->delete_data ? " and its data" : "");
	/* answered first: the client may be in that world, and is closed with it */
	session_send_ack(s, request_id, NULL, 0);
	server_close_world(srv, r, m->delete_data);
}

static void host_list_worlds(void *user, session *s, uint32_t request_id) {
	server *srv = user;
	crowd_v1_WorldInfo *infos = calloc(srv->room_count ? srv->room_count : 1, sizeof *infos);
	if (!infos) {
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_INTERNAL, 0, "out of memory");
		return;
	}
	pb_size_t n = 0;
	for (uint32_t i = 0; i < srv->room_count; i++) {
		const room *r = srv->rooms[i];
		if (r->opening) continue; /* listed once it is open */
		crowd_v1_WorldInfo *w = &infos[n++];
		snprintf(w->name, sizeof w->name, "%s", r->name);
		w->agents = r->status->agents;
		w->clients = r->clients;
		w->tick_rate = r->cfg.tick_rate_hz;
		w->lateness_p99_ms = room_lateness_p99_ms(r);
		w->tick = r->status->tick;
		w->persisted = r->persisted;
	}
	crowd_v1_ServerMessage msg = crowd_v1_ServerMessage_init_zero;
	msg.which_msg = crowd_v1_ServerMessage_world_list_tag;
	msg.msg.world_list.request_id = request_id;
	msg.msg.world_list.worlds = infos;
	msg.msg.world_list.worlds_count = n;
	msg.msg.world_list.max_worlds = srv->cfg->max_worlds;
	if (!session_send(s, &msg))
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_INTERNAL, 0, "the list did not encode");
	free(infos);
}

/* ---- replication: a primary's side */

static const char *host_world_history(void *user, const session *s) {
	(void)user;
	const room *r = s->world;
	return r && r->storage ? storage_history_id(r->storage) : "";
}

static void host_follow(void *user, session *s, uint32_t request_id, const crowd_v1_Follow *m) {
	server *srv = user;
	room *r = s->world;
	char text[200];
	if (m->world[0] && strcmp(m->world, s->world_name) != 0) {
		snprintf(text, sizeof text, "Follow names the world '%s', the Hello '%s': name it in the Hello",
		         m->world, s->world_name);
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_NO_SUCH_WORLD, 0, text);
		return;
	}
	if (srv->host.read_only || !r || !r->storage) {
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_NOT_PRIMARY, 0,
		                   srv->host.read_only
		                       ? "this server follows another: follow its primary"
		                       : "this server keeps no journal (no --data-dir): nothing to follow");
		return;
	}
	const char *history = storage_history_id(r->storage);
	if (m->history_id[0] && strcmp(m->history_id, history) != 0) {
		snprintf(text, sizeof text,
		         "the follower's data dir holds history %s, the world '%s' here is history %s: move it away to "
		         "start over",
		         m->history_id, r->name, history);
		log_warn("client %u: Follow refused: %s", s->client_id, text);
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_HISTORY_MISMATCH, 0, text);
		return;
	}
	if (!room_add_follower(r, s->client_id)) {
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_INTERNAL, 0, "out of memory");
		return;
	}
	log_info("client %u (%s) follows the world %s from tick %" PRIu64 ": a checkpoint at the next tick",
	         s->client_id, s->peer, r->name, m->from_tick);
	session_send_ack(s, request_id, NULL, 0);
}

static void host_follow_ack(void *user, session *s, const crowd_v1_FollowAck *m) {
	(void)user;
	if (s->world) room_follower_ack(s->world, s->client_id, m->seq, m->tick);
}

static void host_promote(void *user, session *s, uint32_t request_id) {
	server *srv = user;
	room *r = srv->world;
	if (r->promote.pending) {
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT, 0,
		                   "a promotion is under way: its Ack comes once the received ticks are applied");
		return;
	}
	if (!srv->follower || !r->following ||
	    (!r->storage && !r->follow_sync.pending && !r->follow_sync.installing)) {
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT, 0,
		                   srv->follower ? "nothing received from the primary yet: nothing to promote"
		                                 : "this server follows no primary: it is one");
		return;
	}
	/* everything the primary's connection holds now, then every complete tick received is stepped
	 * before this server takes commands; world changes get READ_ONLY until then */
	repl_follower_drain(srv->follower);
	repl_follower_stop(srv->follower, &r->promote.records, &r->promote.len);
	srv->follower = NULL;
	srv->metrics.replication.connected = false;
	r->promote.client_id = s->client_id;
	r->promote.request_id = request_id;
	log_info("promotion asked by client %u: %u received tick(s) to apply first", s->client_id,
	         room_follow_backlog(r));
	room_promote_when_drained(r);
}

void server_promote_done(server *srv) {
	room *r = srv->world;
	room_promote(r, r->promote.records, r->promote.len);
	free(r->promote.records);
	r->promote.records = NULL;
	r->promote.len = 0;
	srv->host.read_only = false;
	srv->metrics.replication.following = false;
	srv->metrics.replication.connected = false;
	srv->metrics.replication.lag_ticks = 0;
	/* new ids go on above the viewers' (the session list is kept in id order), so past every primary's id */
	if (srv->next_client_id < r->sim->next_client_id) srv->next_client_id = r->sim->next_client_id;
	log_info("promoted by client %u: the primary of the world %s from tick %" PRIu64, r->promote.client_id,
	         r->name, r->status->tick);
	session *s = session_find(&srv->host, r->promote.client_id);
	if (s && !s->closing) session_send_ack(s, r->promote.request_id, NULL, 0);
}

/* ---- replication: a follower's side (repl_follower_hooks on the default world) */

static void follower_refused(void *user, const char *why) {
	(void)user;
	log_error("replication: %s", why);
	fflush(NULL);
	_exit(1); /* loudly, and nothing written */
}

static int follower_checkpoint(void *user, const uint8_t *checkpoint, size_t len, uint64_t tick, const char *history) {
	server *srv = user;
	if (room_follow_checkpoint(srv->world, checkpoint, len, tick, history) != 0) {
		log_error("replication: the follower stops");
		fflush(NULL);
		_exit(1);
	}
	srv->metrics.replication.syncs++;
	srv->metrics.replication.connected = false; /* once the checkpoint is installed (on the pool) */
	log_info("replication: in sync with the primary at tick %" PRIu64 " (history %s)", tick, history);
	return 0;
}

static void follower_record(void *user, const uint8_t *msg, size_t len) {
	server *srv = user;
	room_follow_record(srv->world, msg, len);
}

static int follower_tick(void *user, uint64_t tick, uint64_t state_hash, const uint8_t *records, size_t len) {
	server *srv = user;
	return room_follow_tick(srv->world, tick, state_hash, records, len);
}

static uint64_t follower_batch_done(void *user) {
	server *srv = user;
	const uint64_t seq = room_follow_commit(srv->world);
	repl_follower_stats st;
	repl_follower_get_stats(srv->follower, &st);
	const room *r = srv->world;
	srv->metrics.replication.connected = st.connected && !r->follow_sync.pending && !r->follow_sync.installing;
	srv->metrics.replication.lag_ticks = st.lag_ticks;
	return seq;
}

static uint64_t follower_applied_tick(void *user) {
	const server *srv = user;
	return srv->world->status->tick;
}

static const session_host_ops host_ops = {
    .new_client_id = host_new_client_id,
    .enqueue = host_enqueue,
    .tick = host_tick,
    .find_identity = host_find_identity,
    .new_identity = host_new_identity,
    .enter_world = host_enter_world,
    .leave_world = host_leave_world,
    .world_config = host_world_config,
    .create_world = host_create_world,
    .close_world = host_close_world,
    .list_worlds = host_list_worlds,
    .world_history = host_world_history,
    .follow = host_follow,
    .follow_ack = host_follow_ack,
    .promote = host_promote,
};

int server_init(server *srv, uv_loop_t *loop, const server_config *cfg) {
	memset(srv, 0, sizeof *srv);
	srv->loop = loop;
	srv->cfg = cfg;
	srv->next_client_id = 1;
	session_host_init(&srv->host, &host_ops, srv, loop, cfg, &srv->metrics, &srv->status);
	char err[256];
	if (server_open_world(srv, CROWD_DEFAULT_WORLD, NULL, &srv->world, err, sizeof err) != 0) {
		log_error("the default world: %s", err);
		return -1;
	}
	if (cfg->data_dir[0]) {              /* persistence: the default world in DIR, the others in DIR/worlds/NAME */
		srv->host.identities = true; /* resume keys */
		const server_extension ext = {.name = "storage", .state = NULL, .stop = storage_ext_stop};
		if (server_add_extension(srv, &ext) != 0 || (!cfg->follow[0] && open_persisted_worlds(srv) != 0))
			return -1;
	}
	if (cfg->follow[0]) { /* replication: the default world shows the primary's, read only, until promoted */
		srv->host.read_only = true;
		srv->world->following = true;
		srv->next_client_id = FOLLOWER_CLIENT_IDS;
		srv->metrics.replication.following = true;
	}
	return 0;
}

int server_add_extension(server *srv, const server_extension *ext) {
	if (srv->extension_count >= SERVER_MAX_EXTENSIONS) return -1;
	srv->extensions[srv->extension_count++] = *ext;
	return 0;
}

void server_apply_commands(server *srv) {
	room_apply_commands(srv->world);
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
	uv_timer_init(srv->loop, &srv->shutdown_timer);
	srv->sigint.data = srv->sigterm.data = srv->shutdown_timer.data = srv;
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
	log_info("tick %u Hz, snapshots every %u tick(s), %u worker(s), precision %u, %u agents, %u obstacles, "
	         "%u world(s) of at most %u",
	         cfg->tick_rate_hz, cfg->snapshot_divisor, cfg->workers, cfg->precision, srv->status.agents,
	         srv->status.obstacles, srv->room_count, cfg->max_worlds);
	srv->status.ready = true;
	if (cfg->heavy_world_nice && step_lane_start(srv->loop, (int)cfg->heavy_world_nice, &srv->lane) != 0)
		log_warn("no step lane: heavy worlds step on the shared pool at the same priority as the others");
	if (cfg->follow[0]) {
		char history[33] = "";
		storage_read_history(cfg->data_dir, history); /* read only: a refusal leaves the dir as it was */
		const repl_follower_hooks hooks = {follower_refused,
		                                   follower_checkpoint,
		                                   follower_record,
		                                   follower_tick,
		                                   follower_batch_done,
		                                   follower_applied_tick,
		                                   srv};
		if (repl_follower_start(srv->loop, cfg, history, &hooks, &srv->follower) != 0) return -1;
	}
	for (uint32_t i = 0; i < srv->room_count; i++)
		if (!srv->rooms[i]->following) room_start(srv->rooms[i]);
	return 0;
}

static void finish_shutdown(server *srv) {
	if (srv->stopping) return;
	srv->stopping = true;
	if (srv->follower) {
		uint8_t *pending;
		size_t len;
		repl_follower_stop(srv->follower, &pending, &len);
		free(pending);
		srv->follower = NULL;
	}
	for (uint32_t i = srv->host.sessions.count; i-- > 0;)
		session_close(srv->host.sessions.items[i], DISCONNECT_SHUTDOWN, false);
	rooms_stop_ticks(srv);
	uv_close((uv_handle_t *)&srv->shutdown_timer, NULL);
	uv_close((uv_handle_t *)&srv->sigint, NULL);
	uv_close((uv_handle_t *)&srv->sigterm, NULL);
	step_lane_shutdown(srv->lane);
	for (int i = 0; i < srv->extension_count; i++)
		if (srv->extensions[i].stop) srv->extensions[i].stop(srv, srv->extensions[i].state);
	log_info("stopped after %" PRIu64 " ticks of the default world", srv->status.tick);
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
	session_host_free(&srv->host);
	for (uint32_t i = 0; i < srv->room_count; i++) room_destroy(srv->rooms[i]);
	free(srv->rooms);
	tick_queue_free(&srv->ticks);
	step_lane_free(srv->lane);
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
