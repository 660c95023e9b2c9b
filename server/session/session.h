/* session.h — one client connection above its transport: Hello and the role,
 * request validation, rights, rate limit, answering, the subscription and its
 * snapshot baseline, and the output-buffer limits (slow consumers). */
#ifndef CROWD_SERVER_SESSION_H
#define CROWD_SERVER_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include <crowd/wire.h>
#include <orca/orca.h>

#include "metrics.h"
#include "transport.h"

typedef struct server server;

/* Hello.client_name is for logs: a longer one is cut to this many bytes. */
#define CROWD_CLIENT_NAME_MAX 32

/** AgentEvents a session receives: none, its own agents' (the default from
 * protocol minor 1), or every agent's (admins, by SubscribeEvents{all_agents}). */
typedef enum session_events {
	SESSION_EVENTS_NONE = 0,
	SESSION_EVENTS_OWN = 1,
	SESSION_EVENTS_ALL = 2,
} session_events;

typedef struct session {
	server *srv;
	const transport_ops *ops;
	void *conn;
	uint32_t client_id; /* owner number of its agents; never reused */
	char peer[64];
	char peer_ip[48]; /* the address without its port: per-peer limits */
	char name[CROWD_CLIENT_NAME_MAX + 1]; /* Hello.client_name, cut to a whole UTF-8 character */
	uint64_t opened_ns;

	bool hello_done;
	uint32_t protocol_minor; /* from Hello: minor >= 1 may receive minor-1 messages */
	session_events events;   /* which AgentEvents it receives (navigation.c sends them) */
	bool closing; /* close requested: ignore input, send nothing more */
	bool keep_agents;
	bool peer_done; /* the peer half-closed: close once its requests are answered */
	bool cutting;   /* sending the Error that cuts a slow consumer */
	crowd_v1_Role role; /* ROLE_UNSPECIFIED until Hello */
	uint32_t agents_owned;
	bool owned_unknown; /* resumed (persistence): agents_owned is counted from the world at the next tick */
	size_t queued_bytes; /* cost of its requests waiting for the next tick */
	uint32_t agents_queued;       /* agents in its spawns waiting for the next tick */
	uint32_t max_neighbors_asked; /* the largest max_neighbors of its spawns so far (cost budget) */
	disconnect_reason close_reason;
	bool close_reason_set;

	/* rate limit: token bucket */
	double rate_tokens;
	uint64_t rate_updated_ns;

	/* subscription */
	bool subscribed;
	bool has_area;
	orca_vec2 area_min, area_max;
	uint32_t divisor;
	uint64_t subscribed_tick; /* snapshots go out when (tick - subscribed_tick) % divisor == 0 */
	bool need_keyframe;
	uint32_t snapshots_since_keyframe;
	crowd_view baseline;    /* what this client was last sent */
	bool baseline_is_table; /* baseline = the whole world table of tick baseline_tick */
	uint64_t baseline_tick;
	bool obstacles_sent;
	uint32_t obstacle_version_sent;

	/* output limits */
	uint64_t above_soft_since_ns;   /* 0: at or below the soft limit */
	uint64_t above_soft_since_tick; /* the tick it went above (for the Error's text) */
	size_t kernel_unsent;           /* ops->kernel_unsent, asked at the start of each tick */
} session;

/** A transport accepted a connection. Returns the session, or NULL when refused
 * (server full or shutting down): an Error was queued and ops->close(conn, true)
 * was called already. `peer` is for logs. */
session *session_open(server *srv, const transport_ops *ops, void *conn, const char *peer);

/** One whole message (bare protobuf) arrived. */
void session_on_message(session *s, const uint8_t *data, size_t len);

/** The transport found bytes it cannot frame: queue Error{code, message}, count
 * `reason`, and close after flushing. */
void session_on_transport_error(session *s, crowd_v1_ErrorCode code, disconnect_reason reason, const char *message);

/** The connection is gone: count `reason` (unless the session chose one when it
 * asked to close), queue the removal of its agents unless it keeps them, free it. */
void session_on_closed(session *s, disconnect_reason reason);

/** Ask the transport to close, recording why (counted once, in session_on_closed). */
void session_close(session *s, disconnect_reason reason, bool flush);

/** Send an Error (request_id 0 = unasked). Counted by code. */
void session_send_error(session *s, uint32_t request_id, crowd_v1_ErrorCode code, uint32_t index, const char *message);
/** Send an Ack with the ids created. */
void session_send_ack(session *s, uint32_t request_id, const uint32_t *ids, uint32_t count);
/** Encode and send any ServerMessage; false if it could not be encoded. */
bool session_send(session *s, const crowd_v1_ServerMessage *msg);
/** Send bytes already encoded in the transport's framing (snapshots). */
void session_send_encoded(session *s, const uint8_t *data, size_t len);

/** The peer half-closed its side (EOF) and may still read: its requests
 * still queued are answered (next tick), then the connection closes. */
void session_on_peer_eof(session *s);

struct command;
/** One of its queued commands was applied (answered): release what it held. */
void session_command_done(session *s, const struct command *c);

/** Housekeeping each tick: Hello timeout and output limits. */
void session_check_timers(session *s, uint64_t now_ns);

/** Bytes queued in the transport, and in the kernel unsent (as of this tick's start). */
size_t session_pending_output(const session *s);

#endif
