/* session.c — a client connection above its transport (see session.h). */
#include "session.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "log.h"
#include "messages.h"
#include "validate.h"

#ifndef CROWD_VERSION
#error "CROWD_VERSION is a compile definition of the server's libraries"
#endif

/* ------------------------------------------------------------------ the host and its list */

void session_host_init(session_host *h, const session_host_ops *ops, void *user, uv_loop_t *loop,
                       const server_config *cfg, server_metrics *metrics, server_status *status) {
	memset(h, 0, sizeof *h);
	h->ops = ops;
	h->user = user;
	h->loop = loop;
	h->cfg = cfg;
	h->metrics = metrics;
	h->status = status;
	crowd_buf_init(&h->reply_buf);
}

void session_host_free(session_host *h) {
	free(h->sessions.items);
	h->sessions.items = NULL;
	h->sessions.count = h->sessions.cap = 0;
	crowd_buf_free(&h->reply_buf);
}

static uint32_t list_index(const session_list *l, uint32_t client_id) {
	uint32_t lo = 0, hi = l->count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (l->items[mid]->client_id < client_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

session *session_find(const session_host *host, uint32_t client_id) {
	const session_list *l = &host->sessions;
	uint32_t i = list_index(l, client_id);
	return (i < l->count && l->items[i]->client_id == client_id) ? l->items[i] : NULL;
}

static bool list_attach(session_list *l, session *s) {
	if (l->count == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 16;
		session **p = realloc(l->items, sizeof *p * cap);
		if (!p) return false;
		l->items = p;
		l->cap = cap;
	}
	/* client ids only grow, so appending keeps the array sorted */
	l->items[l->count++] = s;
	return true;
}

static void list_detach(session_list *l, session *s) {
	uint32_t i = list_index(l, s->client_id);
	if (i < l->count && l->items[i] == s) {
		memmove(&l->items[i], &l->items[i + 1], sizeof *l->items * (l->count - i - 1));
		l->count--;
	}
}

/* Give an attached session another client id (a resumed identity), keeping the order. */
static void list_rekey(session_list *l, session *s, uint32_t client_id) {
	list_detach(l, s);
	s->client_id = client_id;
	uint32_t i = list_index(l, client_id); /* detached: room for one more */
	memmove(&l->items[i + 1], &l->items[i], sizeof *l->items * (l->count - i));
	l->items[i] = s;
	l->count++;
}

/* ------------------------------------------------------------------ sending */

static void send_bytes(session_host *host, const transport_ops *ops, void *conn, const crowd_buf *buf) {
	if (ops->send(conn, buf->data, buf->len) == 0) {
		host->metrics->messages_out[ops->kind]++;
		host->metrics->bytes_out[ops->kind] += buf->len;
	}
}

/* An Error to a connection that has no session (refused at accept). */
static void refuse(session_host *host, const transport_ops *ops, void *conn, crowd_v1_ErrorCode code,
                   const char *text) {
	crowd_v1_ServerMessage msg = crowd_v1_ServerMessage_init_zero;
	msg.which_msg = crowd_v1_ServerMessage_error_tag;
	msg.msg.error.code = code;
	snprintf(msg.msg.error.message, sizeof msg.msg.error.message, "%s", text);
	host->reply_buf.len = 0;
	if (crowd_encode_server_message(&msg, ops->length_prefixed, &host->reply_buf))
		send_bytes(host, ops, conn, &host->reply_buf);
	host->metrics->errors[code]++;
	ops->close(conn, true);
}

/* "1.2.3.4:5678", "[::1]:5678" or "::1:5678" without its port. */
static void peer_ip_of(const char *peer, char *out, size_t cap) {
	const char *start = peer, *end = strrchr(peer, ':');
	if (peer[0] == '[') {
		start = peer + 1;
		end = strchr(start, ']');
	}
	size_t n = end ? (size_t)(end - start) : strlen(start);
	if (n >= cap) n = cap - 1;
	memcpy(out, start, n);
	out[n] = '\0';
}

session *session_open(session_host *host, const transport_ops *ops, void *conn, const char *peer) {
	host->metrics->connections_accepted[ops->kind]++;
	if (host->status->shutting_down) {
		host->metrics->disconnects[DISCONNECT_SHUTDOWN]++;
		refuse(host, ops, conn, crowd_v1_ErrorCode_ERROR_SHUTTING_DOWN, "the server is shutting down");
		return NULL;
	}
	char ip[sizeof ((session *)0)->peer_ip];
	peer_ip_of(peer ? peer : "?", ip, sizeof ip);
	/* Connections that never say Hello must not hold the slots players need: one
	 * address may hold only so many of them, and at the limit the oldest of them
	 * makes room for the newcomer. */
	uint32_t active = 0, pending_here = 0;
	session *oldest_pending = NULL;
	for (uint32_t i = 0; i < host->sessions.count; i++) {
		session *o = host->sessions.items[i];
		if (o->closing) continue;
		active++;
		if (o->hello_done) continue;
		if (strcmp(o->peer_ip, ip) == 0) pending_here++;
		if (!oldest_pending || o->opened_ns < oldest_pending->opened_ns) oldest_pending = o;
	}
	if (pending_here >= host->cfg->max_pending_per_peer) {
		host->metrics->disconnects[DISCONNECT_SERVER_FULL]++;
		log_warn("refused %s: %u connections from %s are waiting for Hello, the limit per address", peer,
		         pending_here, ip);
		refuse(host, ops, conn, crowd_v1_ErrorCode_ERROR_SERVER_FULL,
		       "too many connections from this address without Hello");
		return NULL;
	}
	if (active >= host->cfg->max_connections && oldest_pending) {
		log_info("client %u from %s: no Hello yet, closed to make room for %s", oldest_pending->client_id,
		         oldest_pending->peer, peer);
		session_send_error(oldest_pending, 0, crowd_v1_ErrorCode_ERROR_HELLO_TIMEOUT, 0,
		                   "no Hello yet and the server is full: closed to make room");
		session_close(oldest_pending, DISCONNECT_HELLO_TIMEOUT, true);
		active--;
	}
	if (active >= host->cfg->max_connections) {
		host->metrics->disconnects[DISCONNECT_SERVER_FULL]++;
		log_warn("refused %s: %u connections is the limit", peer, host->cfg->max_connections);
		refuse(host, ops, conn, crowd_v1_ErrorCode_ERROR_SERVER_FULL, "connection limit reached");
		return NULL;
	}
	session *s = calloc(1, sizeof *s);
	if (!s) {
		refuse(host, ops, conn, crowd_v1_ErrorCode_ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	s->host = host;
	s->ops = ops;
	s->conn = conn;
	s->client_id = host->ops->new_client_id(host->user);
	snprintf(s->peer, sizeof s->peer, "%s", peer ? peer : "?");
	snprintf(s->peer_ip, sizeof s->peer_ip, "%s", ip);
	s->opened_ns = uv_hrtime();
	s->role = crowd_v1_Role_ROLE_UNSPECIFIED;
	s->rate_tokens = host->cfg->request_burst;
	s->rate_updated_ns = s->opened_ns;
	crowd_view_init(&s->baseline);
	if (!list_attach(&host->sessions, s)) {
		crowd_view_free(&s->baseline);
		free(s);
		refuse(host, ops, conn, crowd_v1_ErrorCode_ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	host->metrics->connections[ops->kind][0]++;
	host->status->connections = host->sessions.count;
	log_info("client %u connected from %s over %s", s->client_id, s->peer, metrics_transport_name(ops->kind));
	return s;
}

size_t session_pending_output(const session *s) {
	return s->ops->pending_bytes(s->conn) + s->kernel_unsent;
}

void session_close(session *s, disconnect_reason reason, bool flush) {
	if (!s->close_reason_set) {
		s->close_reason = reason;
		s->close_reason_set = true;
	}
	if (s->closing && flush) return;
	s->closing = true;
	s->subscribed = false;
	s->ops->close(s->conn, flush);
}

/* A slow consumer is cut: what waits in its output queue is dropped, so the
 * Error saying why goes right after what the kernel already holds, then the
 * connection closes once that is written (or the flush time runs out). */
static void cut_slow_consumer(session *s, disconnect_reason reason, const char *text) {
	if (s->closing) return;
	if (s->ops->discard_pending) s->ops->discard_pending(s->conn);
	s->cutting = true; /* the Error goes out even though the queue was over the limit */
	session_send_error(s, 0, crowd_v1_ErrorCode_ERROR_SLOW_CONSUMER, 0, text);
	s->cutting = false;
	session_close(s, reason, true);
}

void session_send_encoded(session *s, const uint8_t *data, size_t len) {
	if (s->closing) return;
	session_host *host = s->host;
	if (s->ops->send(s->conn, data, len) != 0) return;
	host->metrics->messages_out[s->ops->kind]++;
	host->metrics->bytes_out[s->ops->kind] += len;
	size_t pending = session_pending_output(s);
	if (pending > host->cfg->output_hard_limit && !s->cutting) {
		log_warn("client %u: %zu bytes of output queued, over the hard limit %zu: closing", s->client_id,
		         pending, host->cfg->output_hard_limit);
		cut_slow_consumer(s, DISCONNECT_OUTPUT_HARD_LIMIT, "output over the hard limit");
	}
}

bool session_send(session *s, const crowd_v1_ServerMessage *msg) {
	if (s->closing) return false;
	crowd_buf *buf = &s->host->reply_buf;
	buf->len = 0;
	if (!crowd_encode_server_message(msg, s->ops->length_prefixed, buf)) {
		log_error("client %u: could not encode a message (case %u)", s->client_id, (unsigned)msg->which_msg);
		return false;
	}
	session_send_encoded(s, buf->data, buf->len);
	return true;
}

void session_send_error(session *s, uint32_t request_id, crowd_v1_ErrorCode code, uint32_t index, const char *message) {
	crowd_v1_ServerMessage msg = crowd_v1_ServerMessage_init_zero;
	msg.which_msg = crowd_v1_ServerMessage_error_tag;
	msg.msg.error.request_id = request_id;
	msg.msg.error.code = code;
	msg.msg.error.index = index;
	snprintf(msg.msg.error.message, sizeof msg.msg.error.message, "%s", message ? message : "");
	if ((int)code >= 0 && code < METRICS_ERROR_CODES) s->host->metrics->errors[code]++;
	log_debug("client %u: request %u: error %s: %s", s->client_id, request_id, metrics_error_code_name(code),
	          msg.msg.error.message);
	session_send(s, &msg);
}

void session_send_ack(session *s, uint32_t request_id, const uint32_t *ids, uint32_t count) {
	crowd_v1_ServerMessage msg = crowd_v1_ServerMessage_init_zero;
	msg.which_msg = crowd_v1_ServerMessage_ack_tag;
	msg.msg.ack.request_id = request_id;
	msg.msg.ack.ids = (uint32_t *)ids;
	msg.msg.ack.ids_count = (pb_size_t)count;
	s->host->metrics->acks++;
	session_send(s, &msg);
}

void session_on_transport_error(session *s, crowd_v1_ErrorCode code, disconnect_reason reason, const char *message) {
	if (s->closing) return;
	log_info("client %u: %s: closing", s->client_id, message);
	session_send_error(s, 0, code, 0, message);
	session_close(s, reason, true);
}

static void set_role(session *s, crowd_v1_Role role) {
	server_metrics *m = s->host->metrics;
	m->connections[s->ops->kind][s->role]--;
	s->role = role;
	m->connections[s->ops->kind][s->role]++;
}

/* The first `max` bytes of a string, cut back to a whole UTF-8 character. */
static size_t utf8_cut(const uint8_t *data, size_t len, size_t max) {
	if (len <= max) return len;
	size_t n = max;
	while (n > 0 && (data[n] & 0xc0) == 0x80) n--;
	return n;
}

/* A token or resume key must be given whole: never matched on a prefix. */
static bool credential_ok(session *s, uint32_t request_id, const char *what, const crowd_hello_string *str,
                          size_t max) {
	char text[96];
	if (str->has_nul)
		snprintf(text, sizeof text, "%s holds a NUL byte", what);
	else if (str->longest > max)
		snprintf(text, sizeof text, "%s of %u bytes; the limit is %zu", what, (unsigned)str->longest, max);
	else
		return true;
	log_info("client %u (%s) from %s: %s", s->client_id, s->name, s->peer, text);
	session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_BAD_TOKEN, 0, text);
	session_close(s, DISCONNECT_BAD_TOKEN, true);
	return false;
}

static void handle_hello(session *s, uint32_t request_id, const crowd_v1_Hello *hello,
                         const crowd_client_message_info *info) {
	session_host *host = s->host;
	const server_config *cfg = host->cfg;
	if (info->client_name.has_nul) {
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT, 0,
		                   "client_name holds a NUL byte");
		return;
	}
	/* The name is for logs only: a long one is cut, not refused. */
	size_t name_len = utf8_cut(info->client_name.data, info->client_name.len, CROWD_CLIENT_NAME_MAX);
	for (size_t i = 0; i < name_len; i++) { /* one log line per event: no control characters */
		uint8_t ch = info->client_name.data[i];
		s->name[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	s->name[name_len] = '\0';
	if (name_len < info->client_name.len)
		log_info("client %u from %s: client_name of %u bytes cut to %zu", s->client_id, s->peer,
		         (unsigned)info->client_name.len, name_len);
	if (hello->protocol_major != CROWD_PROTOCOL_MAJOR) {
		char text[96];
		snprintf(text, sizeof text, "protocol major %u is not supported; this server speaks %u",
		         hello->protocol_major, CROWD_PROTOCOL_MAJOR);
		log_info("client %u (%s): %s", s->client_id, s->name, text);
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_UNSUPPORTED_VERSION, 0, text);
		session_close(s, DISCONNECT_UNSUPPORTED_VERSION, true);
		return;
	}
	if (!credential_ok(s, request_id, "token", &info->token, sizeof hello->token - 1) ||
	    !credential_ok(s, request_id, "resume_key", &info->resume_key, sizeof hello->resume_key - 1))
		return;
	crowd_v1_Role role = config_role_for_token(cfg, hello->token);
	if (role == crowd_v1_Role_ROLE_UNSPECIFIED) {
		log_info("client %u (%s) from %s: unknown token", s->client_id, s->name, s->peer);
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_BAD_TOKEN, 0, "unknown token");
		session_close(s, DISCONNECT_BAD_TOKEN, true);
		return;
	}
	/* worlds (minor 2): the world named, or the default; a token may be limited to one */
	const char *world = hello->world && hello->world[0] ? hello->world : CROWD_DEFAULT_WORLD;
	crowd_v1_ErrorCode world_code = crowd_v1_ErrorCode_ERROR_NONE;
	char text[128];
	config_token_world(cfg, hello->token, s->token_world, sizeof s->token_world);
	if (!crowd_world_name_valid(world)) {
		world_code = crowd_v1_ErrorCode_ERROR_BAD_WORLD_NAME;
		snprintf(text, sizeof text, "a world name is 1 to %u bytes of A-Z a-z 0-9 _ . -", CROWD_WORLD_NAME_MAX);
	} else if (s->token_world[0] && strcmp(s->token_world, world) != 0) {
		world_code = crowd_v1_ErrorCode_ERROR_WORLD_FORBIDDEN;
		snprintf(text, sizeof text, "this token may not use the world '%s'", world);
	} else if ((world_code = host->ops->enter_world(host->user, s, world)) != crowd_v1_ErrorCode_ERROR_NONE) {
		snprintf(text, sizeof text, "no open world '%s'", world);
	}
	if (world_code != crowd_v1_ErrorCode_ERROR_NONE) {
		log_info("client %u (%s) from %s: %s", s->client_id, s->name, s->peer, text);
		session_send_error(s, request_id, world_code, 0, text);
		session_close(s, DISCONNECT_BAD_TOKEN, true);
		return;
	}
	const server_config *wcfg = host->ops->world_config(host->user, s);
	s->hello_done = true;
	s->keep_agents = hello->keep_agents_on_disconnect;
	/* navigation: a minor-1 client hears about its own agents without asking */
	s->protocol_minor = hello->protocol_minor;
	s->events = hello->protocol_minor >= 1 ? SESSION_EVENTS_OWN : SESSION_EVENTS_NONE;
	set_role(s, role);
	/* persistence: a resume key of an earlier Welcome gives that client id (and its agents) back */
	bool resumed = false;
	if (host->identities && hello->resume_key[0]) {
		uint32_t old_id, old_role;
		if (host->ops->find_identity(host->user, s, hello->resume_key, &old_id, &old_role) &&
		    old_id != s->client_id && !session_find(host, old_id)) {
			log_info("client %u resumes client %u", s->client_id, old_id);
			list_rekey(&host->sessions, s, old_id);
			s->owned_unknown = true; /* counted from the world at the next tick */
			resumed = true;
		} else {
			log_info("client %u: resume key unknown or in use: a new identity", s->client_id);
		}
	}
	crowd_v1_ServerMessage msg = crowd_v1_ServerMessage_init_zero;
	msg.which_msg = crowd_v1_ServerMessage_welcome_tag;
	crowd_v1_Welcome *w = &msg.msg.welcome;
	w->protocol_major = CROWD_PROTOCOL_MAJOR;
	w->protocol_minor = CROWD_PROTOCOL_MINOR;
	snprintf(w->server_version, sizeof w->server_version, "%s", CROWD_VERSION);
	w->client_id = s->client_id;
	w->role = role;
	w->tick_rate_hz = wcfg->tick_rate_hz;
	w->snapshot_divisor = cfg->snapshot_divisor;
	w->precision = cfg->precision;
	w->has_world_bounds = true;
	w->world_bounds.min_x = (float)wcfg->world_min_x;
	w->world_bounds.min_y = (float)wcfg->world_min_y;
	w->world_bounds.max_x = (float)wcfg->world_max_x;
	w->world_bounds.max_y = (float)wcfg->world_max_y;
	snprintf(w->world, sizeof w->world, "%s", s->world_name);
	w->tick = host->ops->tick(host->user, s);
	snprintf(w->history_id, sizeof w->history_id, "%s", host->ops->world_history(host->user, s));
	w->read_only = host->read_only;
	if (host->identities) { /* persistence: the key to present after a reconnect or a restart */
		if (resumed)
			snprintf(w->resume_key, sizeof w->resume_key, "%s", hello->resume_key);
		else if (!host->ops->new_identity(host->user, s, (uint32_t)role, w->resume_key))
			w->resume_key[0] = '\0';
		w->resumed = resumed;
	}
	log_info("client %u hello: name '%s', world %s, role %s, protocol %u.%u, %s agents on disconnect", s->client_id,
	         s->name, s->world_name, config_role_name(role), hello->protocol_major, hello->protocol_minor,
	         s->keep_agents ? "keeps" : "removes");
	session_send(s, &msg);
}

/* navigation: which AgentEvents this client receives (all_agents: admins only) */
static void handle_subscribe_events(session *s, uint32_t request_id, const crowd_v1_SubscribeEvents *m) {
	if (m->all_agents && !m->unsubscribe && s->role != crowd_v1_Role_ROLE_ADMIN) {
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED, 0,
		                   "only an admin may receive every agent's events");
		return;
	}
	s->events = m->unsubscribe ? SESSION_EVENTS_NONE : m->all_agents ? SESSION_EVENTS_ALL : SESSION_EVENTS_OWN;
	session_send_ack(s, request_id, NULL, 0);
}

static void handle_subscribe(session *s, uint32_t request_id, const crowd_v1_Subscribe *sub) {
	s->subscription_epoch++;
	crowd_view_clear(&s->baseline);
	s->baseline_is_table = false;
	if (sub->unsubscribe) {
		s->subscribed = false;
	} else {
		s->subscribed = true;
		s->has_area = sub->has_area;
		if (sub->has_area) {
			s->area_min = (orca_vec2){sub->area.min_x, sub->area.min_y};
			s->area_max = (orca_vec2){sub->area.max_x, sub->area.max_y};
		}
		s->divisor = sub->divisor ? sub->divisor : s->host->cfg->snapshot_divisor;
		s->subscribed_tick = s->host->ops->tick(s->host->user, s);
		s->need_keyframe = true;
		s->obstacles_sent = false;
	}
	session_send_ack(s, request_id, NULL, 0);
}

/* worlds (minor 2): move to another world once nothing of this client is in
 * the old one (agents stay with their world; simplest rule: refuse) */
static void handle_join_world(session *s, uint32_t request_id, const char *name) {
	session_host *host = s->host;
	char text[128];
	if (s->token_world[0] && strcmp(s->token_world, name) != 0) {
		snprintf(text, sizeof text, "this token may not use the world '%s'", name);
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_WORLD_FORBIDDEN, 0, text);
		return;
	}
	if (s->agents_owned || s->owned_unknown || s->agents_queued || s->queued_bytes) {
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT, 0,
		                   "this client owns agents or has requests waiting in its world: remove them first");
		return;
	}
	if (host->ops->enter_world(host->user, s, name) != crowd_v1_ErrorCode_ERROR_NONE) {
		snprintf(text, sizeof text, "no open world '%s'", name);
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_NO_SUCH_WORLD, 0, text);
		return;
	}
	/* a new world: nothing of the old one's snapshots or events carries over */
	s->subscription_epoch++;
	s->subscribed = false;
	crowd_view_clear(&s->baseline);
	s->baseline_is_table = false;
	s->obstacles_sent = false;
	s->events = s->protocol_minor >= 1 ? SESSION_EVENTS_OWN : SESSION_EVENTS_NONE;
	log_info("client %u (%s) joined the world %s", s->client_id, s->name, s->world_name);
	session_send_ack(s, request_id, NULL, 0);
}

static bool rate_allow(session *s) {
	const server_config *cfg = s->host->cfg;
	uint64_t now = uv_hrtime();
	double refill = (double)(now - s->rate_updated_ns) * 1e-9 * cfg->requests_per_second;
	s->rate_updated_ns = now;
	s->rate_tokens = fmin(s->rate_tokens + refill, (double)cfg->request_burst);
	if (s->rate_tokens < 1.0) return false;
	s->rate_tokens -= 1.0;
	return true;
}

/* The step's cost grows with agents x neighbours considered: one connection
 * gets a budget of it, so that one player cannot slow the tick for everyone.
 * Counted against the largest max_neighbors the connection ever asked for
 * (simple, and never under-counts), over its agents owned and being spawned. */
static bool within_neighbor_budget(session *s, const crowd_v1_SpawnAgents *m, uint32_t request_id) {
	const server_config *cfg = s->host->cfg;
	uint32_t neighbors = s->max_neighbors_asked;
	for (pb_size_t i = 0; i < m->agents_count; i++) {
		uint32_t k = m->agents[i].has_max_neighbors ? m->agents[i].max_neighbors : cfg->agent_max_neighbors;
		if (k > neighbors) neighbors = k;
	}
	uint64_t agents = (uint64_t)s->agents_owned + s->agents_queued + m->agents_count;
	uint64_t cost = agents * (neighbors ? neighbors : 1);
	if (cost > cfg->neighbor_budget) {
		char text[128];
		snprintf(text, sizeof text, "%llu agents x %u neighbours passes this connection's budget of %u",
		         (unsigned long long)agents, (unsigned)(neighbors ? neighbors : 1), (unsigned)cfg->neighbor_budget);
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_LIMIT_COST, 0, text);
		return false;
	}
	s->max_neighbors_asked = neighbors;
	s->agents_queued += m->agents_count;
	return true;
}

void session_command_done(session *s, const command *c) {
	s->queued_bytes = s->queued_bytes > c->cost ? s->queued_bytes - c->cost : 0;
	if (c->msg.which_msg == crowd_v1_ClientMessage_spawn_agents_tag) {
		uint32_t n = c->msg.msg.spawn_agents.agents_count;
		s->agents_queued = s->agents_queued > n ? s->agents_queued - n : 0;
	}
}

/* Refuse a frame with one Error and no decoding. */
static void refuse_frame(session *s, uint32_t request_id, crowd_v1_ErrorCode code, const char *text) {
	s->host->metrics->requests++;
	session_send_error(s, request_id, code, 0, text);
}

void session_on_message(session *s, const uint8_t *data, size_t len) {
	if (s->closing) return;
	session_host *host = s->host;
	const server_config *cfg = host->cfg;
	host->metrics->messages_in[s->ops->kind]++;
	host->metrics->bytes_in[s->ops->kind] += len;

	/* Every frame, whether it decodes or not, takes a token from the rate
	 * limit. Past it, a frame that does not decode closes the connection: a
	 * garbage sender gets no more answers than a polite flood. */
	crowd_client_message_info info;
	bool well_formed = crowd_client_message_inspect(data, len, &info);
	bool allowed = rate_allow(s);
	if (!allowed && well_formed && info.longest_list <= cfg->max_batch) {
		/* Over the limit, a frame must still decode to earn its RATE_LIMITED answer. */
		crowd_v1_ClientMessage probe;
		well_formed = crowd_decode_client_message_checked(data, len, &probe, &info);
		if (well_formed) crowd_client_message_release(&probe);
	}
	if (!allowed && !well_formed) {
		log_info("client %u from %s: undecodable frames over the rate limit: closing", s->client_id, s->peer);
		session_send_error(s, info.request_id, crowd_v1_ErrorCode_ERROR_RATE_LIMITED, 0,
		                   "undecodable frames over the requests-per-second limit");
		session_close(s, DISCONNECT_MALFORMED, true);
		return;
	}
	if (!well_formed) {
		session_send_error(s, 0, crowd_v1_ErrorCode_ERROR_MALFORMED, 0,
		                   "the message did not decode as a ClientMessage");
		return;
	}
	if (!allowed) {
		refuse_frame(s, info.request_id, crowd_v1_ErrorCode_ERROR_RATE_LIMITED,
		             "over the requests-per-second limit");
		return;
	}
	/* Order: Hello first, then the size of the batch, then the decode. */
	bool is_hello = info.which_msg == crowd_v1_ClientMessage_hello_tag;
	if (!s->hello_done && !is_hello) {
		refuse_frame(s, info.request_id, crowd_v1_ErrorCode_ERROR_HELLO_REQUIRED, "send Hello first");
		return;
	}
	if (s->hello_done && is_hello) {
		refuse_frame(s, info.request_id, crowd_v1_ErrorCode_ERROR_ALREADY_HELLO, "Hello was already received");
		return;
	}
	/* nanopb grows decoded lists an item at a time: refuse an oversized batch
	 * before decoding, with its request_id, instead of paying for it. */
	char text[96];
	if (info.which_msg == crowd_v1_ClientMessage_add_obstacle_tag && info.longest_list > cfg->max_obstacle_vertices) {
		snprintf(text, sizeof text, "%u vertices; an obstacle has 3 to %u", (unsigned)info.longest_list,
		         (unsigned)cfg->max_obstacle_vertices);
		refuse_frame(s, info.request_id, crowd_v1_ErrorCode_ERROR_BAD_POLYGON, text);
		return;
	}
	if (info.longest_list > cfg->max_batch) {
		snprintf(text, sizeof text, "a list of %u items, the limit is %u", (unsigned)info.longest_list,
		         (unsigned)cfg->max_batch);
		refuse_frame(s, info.request_id, crowd_v1_ErrorCode_ERROR_LIMIT_BATCH, text);
		return;
	}

	command *cmd = calloc(1, sizeof *cmd);
	if (!cmd) {
		session_send_error(s, info.request_id, crowd_v1_ErrorCode_ERROR_INTERNAL, 0, "out of memory");
		return;
	}
	if (!crowd_decode_client_message_checked(data, len, &cmd->msg, &info)) {
		free(cmd);
		session_send_error(s, info.request_id, crowd_v1_ErrorCode_ERROR_MALFORMED, 0,
		                   "the message did not decode as a ClientMessage");
		return;
	}
	host->metrics->requests++;
	const crowd_v1_ClientMessage *msg = &cmd->msg;
	uint32_t rid = msg->request_id;
	request_error err;

	if (msg->which_msg == crowd_v1_ClientMessage_hello_tag) {
		handle_hello(s, rid, &msg->msg.hello, &info);
		goto drop;
	}
	/* field checks against the settings of the client's world (its bounds, its limits) */
	if (!validate_rights(s->role, msg->which_msg, &err) ||
	    !validate_message(host->ops->world_config(host->user, s), msg, &err)) {
		session_send_error(s, rid, err.code, err.index, err.message);
		goto drop;
	}
	const message_kind *kind = message_kind_of(msg->which_msg); /* known: validate_rights passed */
	/* replication: a follower only shows the primary's world; what would change it (or wait for a tick it
	 * does not run) is refused */
	if (host->read_only &&
	    (kind->route == MESSAGE_AT_TICK || msg->which_msg == crowd_v1_ClientMessage_create_world_tag ||
	     msg->which_msg == crowd_v1_ClientMessage_close_world_tag)) {
		host->metrics->replication.read_only_refused++;
		session_send_error(s, rid, crowd_v1_ErrorCode_ERROR_READ_ONLY, 0,
		                   "this server follows a primary (read only): send commands to the primary");
		goto drop;
	}
	if (kind->normalize) kind->normalize(&cmd->msg);
	if (kind->route == MESSAGE_AT_ONCE) {
		/* the one switch on the message kind: those the session answers itself */
		switch (msg->which_msg) {
		case crowd_v1_ClientMessage_ping_tag: {
			crowd_v1_ServerMessage out = crowd_v1_ServerMessage_init_zero;
			out.which_msg = crowd_v1_ServerMessage_pong_tag;
			out.msg.pong.client_time_us = msg->msg.ping.client_time_us;
			out.msg.pong.server_tick = host->ops->tick(host->user, s);
			session_send(s, &out);
			break;
		}
		case crowd_v1_ClientMessage_subscribe_tag:
			handle_subscribe(s, rid, &msg->msg.subscribe);
			break;
		case crowd_v1_ClientMessage_subscribe_events_tag:
			handle_subscribe_events(s, rid, &msg->msg.subscribe_events);
			break;
		case crowd_v1_ClientMessage_join_world_tag:
			handle_join_world(s, rid, msg->msg.join_world.name);
			break;
		case crowd_v1_ClientMessage_create_world_tag:
			if (s->token_world[0]) { /* a token limited to one world makes no others */
				session_send_error(s, rid, crowd_v1_ErrorCode_ERROR_WORLD_FORBIDDEN, 0,
				                   "this token is limited to one world");
				break;
			}
			host->ops->create_world(host->user, s, rid, &msg->msg.create_world);
			break;
		case crowd_v1_ClientMessage_close_world_tag:
			if (s->token_world[0] && strcmp(s->token_world, msg->msg.close_world.name) != 0) {
				session_send_error(s, rid, crowd_v1_ErrorCode_ERROR_WORLD_FORBIDDEN, 0,
				                   "this token may not use that world");
				break;
			}
			host->ops->close_world(host->user, s, rid, &msg->msg.close_world);
			break;
		case crowd_v1_ClientMessage_list_worlds_tag:
			host->ops->list_worlds(host->user, s, rid);
			break;
		case crowd_v1_ClientMessage_follow_tag:
			host->ops->follow(host->user, s, rid, &msg->msg.follow);
			break;
		case crowd_v1_ClientMessage_follow_ack_tag:
			host->ops->follow_ack(host->user, s, &msg->msg.follow_ack);
			break;
		case crowd_v1_ClientMessage_promote_tag:
			host->ops->promote(host->user, s, rid);
			break;
		default:
			session_send_error(s, rid, crowd_v1_ErrorCode_ERROR_INTERNAL, 0, "no session handler");
			break;
		}
		goto drop;
	}
	/* World changes wait for the next tick, in arrival order. What waits is
	 * bounded per connection, by the memory the decoded requests hold. */
	cmd->cost = sizeof *cmd + len;
	if (msg->which_msg == crowd_v1_ClientMessage_spawn_agents_tag)
		cmd->cost += (size_t)msg->msg.spawn_agents.agents_count * sizeof(crowd_v1_AgentSpec);
	if (s->queued_bytes + cmd->cost > cfg->max_queued_bytes) {
		session_send_error(s, rid, crowd_v1_ErrorCode_ERROR_RATE_LIMITED, 0,
		                   "too many requests waiting for the next tick");
		goto drop;
	}
	if (msg->which_msg == crowd_v1_ClientMessage_spawn_agents_tag &&
	    !within_neighbor_budget(s, &msg->msg.spawn_agents, rid))
		goto drop;
	s->queued_bytes += cmd->cost;
	cmd->kind = COMMAND_CLIENT;
	cmd->client_id = s->client_id;
	cmd->role = s->role;
	host->ops->enqueue(host->user, s, cmd);
	return;
drop:
	command_free(cmd);
}

void session_on_peer_eof(session *s) {
	s->peer_done = true;
	if (!s->closing && s->queued_bytes == 0) session_close(s, DISCONNECT_PEER_CLOSED, true);
}

void session_check_timers(session *s, uint64_t now_ns) {
	if (s->closing) return;
	const server_config *cfg = s->host->cfg;
	if (s->peer_done && s->queued_bytes == 0) { /* its last requests were answered last tick */
		session_close(s, DISCONNECT_PEER_CLOSED, true);
		return;
	}
	/* Under pressure (more than half the slots taken) Hello must come sooner. */
	double hello_timeout = s->host->sessions.count * 2 > cfg->max_connections
	                           ? fmin(cfg->hello_timeout_s, cfg->hello_timeout_busy_s)
	                           : cfg->hello_timeout_s;
	if (!s->hello_done && (double)(now_ns - s->opened_ns) * 1e-9 > hello_timeout) {
		log_info("client %u from %s: no Hello within %g s: closing", s->client_id, s->peer, hello_timeout);
		session_send_error(s, 0, crowd_v1_ErrorCode_ERROR_HELLO_TIMEOUT, 0, "no Hello in time");
		session_close(s, DISCONNECT_HELLO_TIMEOUT, true);
		return;
	}
	/* What the kernel holds unsent counts: a client that stops reading would
	 * fill the socket's send buffer (autotuned up to several MiB) before anything
	 * waits in our queue, and the soft timer must start when it falls behind. */
	s->kernel_unsent = s->ops->kernel_unsent ? s->ops->kernel_unsent(s->conn) : 0;
	size_t pending = session_pending_output(s);
	uint64_t tick = s->host->ops->tick(s->host->user, s);
	char text[128];
	if (pending > cfg->output_hard_limit) {
		log_warn("client %u: %zu bytes of output queued, over the hard limit: closing", s->client_id, pending);
		snprintf(text, sizeof text, "output over the hard limit: cut at tick %llu", (unsigned long long)tick);
		cut_slow_consumer(s, DISCONNECT_OUTPUT_HARD_LIMIT, text);
	} else if (pending > cfg->output_soft_limit) {
		if (s->above_soft_since_ns == 0) {
			s->above_soft_since_ns = now_ns;
			s->above_soft_since_tick = tick;
		} else if ((double)(now_ns - s->above_soft_since_ns) * 1e-9 >= cfg->output_soft_seconds) {
			log_warn("client %u: output above the soft limit (%zu bytes queued) for %g s: slow consumer, "
			         "closing",
			         s->client_id, pending, cfg->output_soft_seconds);
			/* The ticks are the server's clock: a client (or a test) can check the cut came on time. */
			snprintf(
			    text, sizeof text,
			    "not reading fast enough: output above the soft limit since tick %llu, cut at tick %llu",
			    (unsigned long long)s->above_soft_since_tick, (unsigned long long)tick);
			cut_slow_consumer(s, DISCONNECT_SLOW_CONSUMER, text);
		}
	} else {
		s->above_soft_since_ns = 0;
	}
}

void session_on_closed(session *s, disconnect_reason reason) {
	session_host *host = s->host;
	if (s->close_reason_set) reason = s->close_reason;
	if ((int)reason < 0 || reason >= DISCONNECT_REASON_COUNT) reason = DISCONNECT_READ_ERROR;
	host->metrics->disconnects[reason]++;
	host->metrics->connections[s->ops->kind][s->role]--;
	list_detach(&host->sessions, s);
	host->status->connections = host->sessions.count;
	log_info("client %u (%s) from %s disconnected: %s", s->client_id, s->name, s->peer,
	         metrics_disconnect_reason_name(reason));
	/* Its queued commands still apply (they arrived first); then its agents go,
	 * unless it asked to keep them. */
	if (s->hello_done && !s->keep_agents &&
	    (s->role == crowd_v1_Role_ROLE_PLAYER || s->role == crowd_v1_Role_ROLE_ADMIN)) {
		command *c = calloc(1, sizeof *c);
		if (c) {
			c->kind = COMMAND_DROP_OWNER;
			c->client_id = s->client_id;
			host->ops->enqueue(host->user, s, c);
		}
	}
	host->ops->leave_world(host->user, s);
	crowd_view_free(&s->baseline);
	free(s);
}
