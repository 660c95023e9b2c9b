/* session.c — a client connection above its transport (see session.h). */
#include "session.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server.h"
#include "validate.h"

static void send_bytes(server *srv, const transport_ops *ops, void *conn, const crowd_buf *buf) {
	if (ops->send(conn, buf->data, buf->len) == 0) {
		srv->metrics.messages_out[ops->kind]++;
		srv->metrics.bytes_out[ops->kind] += buf->len;
	}
}

/* An Error to a connection that has no session (refused at accept). */
static void refuse(server *srv, const transport_ops *ops, void *conn, crowd_v1_ErrorCode code, const char *text) {
	crowd_v1_ServerMessage msg = crowd_v1_ServerMessage_init_zero;
	msg.which_msg = crowd_v1_ServerMessage_error_tag;
	msg.msg.error.code = code;
	snprintf(msg.msg.error.message, sizeof msg.msg.error.message, "%s", text);
	srv->reply_buf.len = 0;
	if (crowd_encode_server_message(&msg, ops->length_prefixed, &srv->reply_buf))
		send_bytes(srv, ops, conn, &srv->reply_buf);
	srv->metrics.errors[code]++;
	ops->close(conn, true);
}

session *session_open(server *srv, const transport_ops *ops, void *conn, const char *peer) {
	srv->metrics.connections_accepted[ops->kind]++;
	if (srv->status.shutting_down) {
		srv->metrics.disconnects[DISCONNECT_SHUTDOWN]++;
		refuse(srv, ops, conn, crowd_v1_ErrorCode_ERROR_SHUTTING_DOWN, "the server is shutting down");
		return NULL;
	}
	if (srv->session_count >= srv->cfg->max_connections) {
		srv->metrics.disconnects[DISCONNECT_SERVER_FULL]++;
		log_warn("refused %s: %u connections is the limit", peer, srv->cfg->max_connections);
		refuse(srv, ops, conn, crowd_v1_ErrorCode_ERROR_SERVER_FULL, "connection limit reached");
		return NULL;
	}
	session *s = calloc(1, sizeof *s);
	if (!s) {
		refuse(srv, ops, conn, crowd_v1_ErrorCode_ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	s->srv = srv;
	s->ops = ops;
	s->conn = conn;
	s->client_id = srv->next_client_id++;
	snprintf(s->peer, sizeof s->peer, "%s", peer ? peer : "?");
	s->opened_ns = server_now_ns();
	s->role = crowd_v1_Role_ROLE_UNSPECIFIED;
	s->rate_tokens = srv->cfg->request_burst;
	s->rate_updated_ns = s->opened_ns;
	crowd_view_init(&s->baseline);
	if (!server_attach_session(srv, s)) {
		crowd_view_free(&s->baseline);
		free(s);
		refuse(srv, ops, conn, crowd_v1_ErrorCode_ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	srv->metrics.connections[ops->kind][0]++;
	srv->status.connections = srv->session_count;
	log_info("client %u connected from %s over %s", s->client_id, s->peer, metrics_transport_name(ops->kind));
	return s;
}

size_t session_pending_output(const session *s) {
	return s->ops->pending_bytes(s->conn);
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

void session_send_encoded(session *s, const uint8_t *data, size_t len) {
	if (s->closing) return;
	server *srv = s->srv;
	if (s->ops->send(s->conn, data, len) != 0) return;
	srv->metrics.messages_out[s->ops->kind]++;
	srv->metrics.bytes_out[s->ops->kind] += len;
	size_t pending = s->ops->pending_bytes(s->conn);
	if (pending > srv->cfg->output_hard_limit) {
		log_warn("client %u: %zu bytes of output queued, over the hard limit %zu: closing", s->client_id,
		         pending, srv->cfg->output_hard_limit);
		session_close(s, DISCONNECT_OUTPUT_HARD_LIMIT, false);
	}
}

bool session_send(session *s, const crowd_v1_ServerMessage *msg) {
	if (s->closing) return false;
	crowd_buf *buf = &s->srv->reply_buf;
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
	if ((int)code >= 0 && code < METRICS_ERROR_CODES) s->srv->metrics.errors[code]++;
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
	s->srv->metrics.acks++;
	session_send(s, &msg);
}

void session_on_transport_error(session *s, crowd_v1_ErrorCode code, disconnect_reason reason, const char *message) {
	if (s->closing) return;
	log_info("client %u: %s: closing", s->client_id, message);
	session_send_error(s, 0, code, 0, message);
	session_close(s, reason, true);
}

static void set_role(session *s, crowd_v1_Role role) {
	server_metrics *m = &s->srv->metrics;
	m->connections[s->ops->kind][s->role]--;
	s->role = role;
	m->connections[s->ops->kind][s->role]++;
}

static void handle_hello(session *s, uint32_t request_id, const crowd_v1_Hello *hello) {
	server *srv = s->srv;
	const server_config *cfg = srv->cfg;
	snprintf(s->name, sizeof s->name, "%s", hello->client_name);
	if (hello->protocol_major != CROWD_PROTOCOL_MAJOR) {
		char text[96];
		snprintf(text, sizeof text, "protocol major %u is not supported; this server speaks %u",
		         hello->protocol_major, CROWD_PROTOCOL_MAJOR);
		log_info("client %u (%s): %s", s->client_id, s->name, text);
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_UNSUPPORTED_VERSION, 0, text);
		session_close(s, DISCONNECT_UNSUPPORTED_VERSION, true);
		return;
	}
	crowd_v1_Role role = config_role_for_token(cfg, hello->token);
	if (role == crowd_v1_Role_ROLE_UNSPECIFIED) {
		log_info("client %u (%s) from %s: unknown token", s->client_id, s->name, s->peer);
		session_send_error(s, request_id, crowd_v1_ErrorCode_ERROR_BAD_TOKEN, 0, "unknown token");
		session_close(s, DISCONNECT_BAD_TOKEN, true);
		return;
	}
	s->hello_done = true;
	s->keep_agents = hello->keep_agents_on_disconnect;
	/* navigation: a minor-1 client hears about its own agents without asking */
	s->protocol_minor = hello->protocol_minor;
	s->events = hello->protocol_minor >= 1 ? SESSION_EVENTS_OWN : SESSION_EVENTS_NONE;
	set_role(s, role);
	crowd_v1_ServerMessage msg = crowd_v1_ServerMessage_init_zero;
	msg.which_msg = crowd_v1_ServerMessage_welcome_tag;
	crowd_v1_Welcome *w = &msg.msg.welcome;
	w->protocol_major = CROWD_PROTOCOL_MAJOR;
	w->protocol_minor = CROWD_PROTOCOL_MINOR;
	snprintf(w->server_version, sizeof w->server_version, "%s", CROWD_VERSION);
	w->client_id = s->client_id;
	w->role = role;
	w->tick_rate_hz = cfg->tick_rate_hz;
	w->snapshot_divisor = cfg->snapshot_divisor;
	w->precision = cfg->precision;
	w->has_world_bounds = true;
	w->world_bounds.min_x = (float)cfg->world_min_x;
	w->world_bounds.min_y = (float)cfg->world_min_y;
	w->world_bounds.max_x = (float)cfg->world_max_x;
	w->world_bounds.max_y = (float)cfg->world_max_y;
	w->tick = srv->status.tick;
	log_info("client %u hello: name '%s', role %s, protocol %u.%u, %s agents on disconnect", s->client_id, s->name,
	         config_role_name(role), hello->protocol_major, hello->protocol_minor,
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
		s->divisor = sub->divisor ? sub->divisor : s->srv->cfg->snapshot_divisor;
		s->subscribed_tick = s->srv->status.tick;
		s->need_keyframe = true;
		s->obstacles_sent = false;
	}
	session_send_ack(s, request_id, NULL, 0);
}

static bool rate_allow(session *s) {
	const server_config *cfg = s->srv->cfg;
	uint64_t now = server_now_ns();
	double refill = (double)(now - s->rate_updated_ns) * 1e-9 * cfg->requests_per_second;
	s->rate_updated_ns = now;
	s->rate_tokens = fmin(s->rate_tokens + refill, (double)cfg->request_burst);
	if (s->rate_tokens < 1.0) return false;
	s->rate_tokens -= 1.0;
	return true;
}

void session_on_message(session *s, const uint8_t *data, size_t len) {
	if (s->closing) return;
	server *srv = s->srv;
	srv->metrics.messages_in[s->ops->kind]++;
	srv->metrics.bytes_in[s->ops->kind] += len;

	/* nanopb grows decoded lists an item at a time: refuse an oversized batch
	 * before decoding, with its request_id, instead of paying for it. Every
	 * item takes at least a byte, so only frames longer than the limit can. */
	uint32_t peek_rid, longest_list;
	if (len > srv->cfg->max_batch && crowd_client_message_peek(data, len, &peek_rid, &longest_list) &&
	    longest_list > srv->cfg->max_batch) {
		char text[96];
		snprintf(text, sizeof text, "a list of %u items, the limit is %u", (unsigned)longest_list,
		         (unsigned)srv->cfg->max_batch);
		srv->metrics.requests++;
		session_send_error(s, peek_rid, crowd_v1_ErrorCode_ERROR_LIMIT_BATCH, 0, text);
		return;
	}

	command *cmd = calloc(1, sizeof *cmd);
	if (!cmd) {
		session_send_error(s, 0, crowd_v1_ErrorCode_ERROR_INTERNAL, 0, "out of memory");
		return;
	}
	if (!crowd_decode_client_message(data, len, &cmd->msg)) {
		free(cmd);
		session_send_error(s, 0, crowd_v1_ErrorCode_ERROR_MALFORMED, 0,
		                   "the message did not decode as a ClientMessage");
		return;
	}
	srv->metrics.requests++;
	const crowd_v1_ClientMessage *msg = &cmd->msg;
	uint32_t rid = msg->request_id;
	request_error err;

	if (!rate_allow(s)) {
		session_send_error(s, rid, crowd_v1_ErrorCode_ERROR_RATE_LIMITED, 0,
		                   "over the requests-per-second limit");
		goto drop;
	}
	if (!s->hello_done) {
		if (msg->which_msg == crowd_v1_ClientMessage_hello_tag)
			handle_hello(s, rid, &msg->msg.hello);
		else
			session_send_error(s, rid, crowd_v1_ErrorCode_ERROR_HELLO_REQUIRED, 0, "send Hello first");
		goto drop;
	}
	if (msg->which_msg == crowd_v1_ClientMessage_hello_tag) {
		session_send_error(s, rid, crowd_v1_ErrorCode_ERROR_ALREADY_HELLO, 0, "Hello was already received");
		goto drop;
	}
	if (!validate_rights(s->role, msg->which_msg, &err) || !validate_message(srv->cfg, msg, &err)) {
		session_send_error(s, rid, err.code, err.index, err.message);
		goto drop;
	}
	switch (msg->which_msg) {
	case crowd_v1_ClientMessage_ping_tag: {
		crowd_v1_ServerMessage out = crowd_v1_ServerMessage_init_zero;
		out.which_msg = crowd_v1_ServerMessage_pong_tag;
		out.msg.pong.client_time_us = msg->msg.ping.client_time_us;
		out.msg.pong.server_tick = srv->status.tick;
		session_send(s, &out);
		goto drop;
	}
	case crowd_v1_ClientMessage_subscribe_tag:
		handle_subscribe(s, rid, &msg->msg.subscribe);
		goto drop;
	case crowd_v1_ClientMessage_subscribe_events_tag:
		handle_subscribe_events(s, rid, &msg->msg.subscribe_events);
		goto drop;
	default:
		/* World changes wait for the next tick, in arrival order. What waits is
		 * bounded per connection, by the memory the decoded requests hold. */
		cmd->cost = sizeof *cmd + len;
		if (msg->which_msg == crowd_v1_ClientMessage_spawn_agents_tag)
			cmd->cost += (size_t)msg->msg.spawn_agents.agents_count * sizeof(crowd_v1_AgentSpec);
		if (s->queued_bytes + cmd->cost > srv->cfg->max_queued_bytes) {
			session_send_error(s, rid, crowd_v1_ErrorCode_ERROR_RATE_LIMITED, 0,
			                   "too many requests waiting for the next tick");
			goto drop;
		}
		s->queued_bytes += cmd->cost;
		cmd->kind = COMMAND_CLIENT;
		cmd->client_id = s->client_id;
		cmd->role = s->role;
		server_enqueue(srv, cmd);
		return;
	}
drop:
	command_free(cmd);
}

void session_check_timers(session *s, uint64_t now_ns) {
	if (s->closing) return;
	const server_config *cfg = s->srv->cfg;
	if (!s->hello_done && (double)(now_ns - s->opened_ns) * 1e-9 > cfg->hello_timeout_s) {
		log_info("client %u from %s: no Hello within %g s: closing", s->client_id, s->peer,
		         cfg->hello_timeout_s);
		session_send_error(s, 0, crowd_v1_ErrorCode_ERROR_HELLO_TIMEOUT, 0, "no Hello in time");
		session_close(s, DISCONNECT_HELLO_TIMEOUT, true);
		return;
	}
	size_t pending = s->ops->pending_bytes(s->conn);
	if (pending > cfg->output_hard_limit) {
		log_warn("client %u: %zu bytes of output queued, over the hard limit: closing", s->client_id, pending);
		session_close(s, DISCONNECT_OUTPUT_HARD_LIMIT, false);
	} else if (pending > cfg->output_soft_limit) {
		if (s->above_soft_since_ns == 0) {
			s->above_soft_since_ns = now_ns;
		} else if ((double)(now_ns - s->above_soft_since_ns) * 1e-9 > cfg->output_soft_seconds) {
			log_warn("client %u: output above the soft limit (%zu bytes queued) for %g s: slow consumer, "
			         "closing",
			         s->client_id, pending, cfg->output_soft_seconds);
			session_send_error(s, 0, crowd_v1_ErrorCode_ERROR_SLOW_CONSUMER, 0, "not reading fast enough");
			session_close(s, DISCONNECT_SLOW_CONSUMER, false);
		}
	} else {
		s->above_soft_since_ns = 0;
	}
}

void session_on_closed(session *s, disconnect_reason reason) {
	server *srv = s->srv;
	if (s->close_reason_set) reason = s->close_reason;
	if ((int)reason < 0 || reason >= DISCONNECT_REASON_COUNT) reason = DISCONNECT_READ_ERROR;
	srv->metrics.disconnects[reason]++;
	srv->metrics.connections[s->ops->kind][s->role]--;
	server_detach_session(srv, s);
	srv->status.connections = srv->session_count;
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
			server_enqueue(srv, c);
		}
	}
	crowd_view_free(&s->baseline);
	free(s);
}
