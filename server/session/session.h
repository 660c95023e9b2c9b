/* session.h — one client connection above its transport: Hello and the role,
 * request validation, rights, rate limit, answering, the subscription and its
 * snapshot baseline, and the output-buffer limits (slow consumers). */
#ifndef CROWD_SERVER_SESSION_H
#define CROWD_SERVER_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include <crowd/wire.h>
#include <orca/orca.h>

#include <uv.h>

#include "config.h"
#include "metrics.h"
#include "transport.h"

typedef struct session session;
struct command;

/* Hello.client_name is for logs: a longer one is cut to this many bytes. */
#define CROWD_CLIENT_NAME_MAX 32

/** AgentEvents a session receives: none, its own agents' (the default from
 * protocol minor 1), or every agent's (admins, by SubscribeEvents{all_agents}). */
typedef enum session_events {
	SESSION_EVENTS_NONE = 0,
	SESSION_EVENTS_OWN = 1,
	SESSION_EVENTS_ALL = 2,
} session_events;

/** The open sessions, ascending client_id (ids only grow, so appending keeps
 * the order; a resumed identity is put back in its place). */
typedef struct session_list {
	session **items;
	uint32_t count, cap;
} session_list;

/** What a session asks of the server that holds it. Every call is on the loop
 * thread. Calls that name a session answer for the world that session is in
 * (session->world). */
typedef struct session_host_ops {
	/** A client id for a new connection (the owner number of its agents; never reused). */
	uint32_t (*new_client_id)(void *user);
	/** Queue a command of s for its world's next tick (takes ownership). */
	void (*enqueue)(void *user, session *s, struct command *c);
	/** The ticks completed by s's world (Pong, Welcome, subscriptions, texts). */
	uint64_t (*tick)(void *user, const session *s);
	/** persistence (only when host->identities): the client id and role a resume key names. */
	bool (*find_identity)(void *user, const session *s, const char *key, uint32_t *client_id, uint32_t *role);
	/** persistence (only when host->identities): a fresh resume key for s, journaled; false when none was made. */
	bool (*new_identity)(void *user, const session *s, uint32_t role, char key_out[33]);
	/* worlds (protocol minor 2): the server holds them, the session only routes */
	/** Put s in the open world `name` (at Hello, and JoinWorld once s owns no
	 * agents and has nothing queued): s->world is set. ERROR_NONE, or
	 * ERROR_NO_SUCH_WORLD with nothing changed. */
	crowd_v1_ErrorCode (*enter_world)(void *user, session *s, const char *name);
	/** s is gone (closed): it leaves its world. */
	void (*leave_world)(void *user, session *s);
	/** The settings s's world runs by (Welcome: tick rate, bounds). */
	const server_config *(*world_config)(void *user, const session *s);
	/** CreateWorld, CloseWorld, ListWorlds (fields checked already): answer s. */
	void (*create_world)(void *user, session *s, uint32_t request_id, const crowd_v1_CreateWorld *m);
	void (*close_world)(void *user, session *s, uint32_t request_id, const crowd_v1_CloseWorld *m);
	void (*list_worlds)(void *user, session *s, uint32_t request_id);
	/* replication (protocol minor 3; admins, rights checked already) */
	/** The history id of s's world's data dir ("" without one): Welcome. */
	const char *(*world_history)(void *user, const session *s);
	/** Follow: s becomes a follower of a world (checkpoint, then the journal), or is answered an Error. */
	void (*follow)(void *user, session *s, uint32_t request_id, const crowd_v1_Follow *m);
	/** FollowAck: the follower s holds the stream up to m->seq. */
	void (*follow_ack)(void *user, session *s, const crowd_v1_FollowAck *m);
	/** Promote: this server, a follower, becomes the primary. */
	void (*promote)(void *user, session *s, uint32_t request_id);
} session_host_ops;

/** The server as its sessions and transports see it. */
typedef struct session_host {
	const session_host_ops *ops;
	void *user;               /* the ops' first argument */
	uv_loop_t *loop;          /* transports' handles live on it */
	const server_config *cfg; /* read only */
	server_metrics *metrics;  /* counted on the loop thread */
	server_status *status;    /* read; sessions keep `connections` */
	bool identities;          /* persistence: Welcome gives resume keys */
	bool read_only;           /* replication: this server follows a primary; commands get ERROR_READ_ONLY */
	session_list sessions;
	crowd_buf reply_buf; /* session_send encodes here */
} session_host;

/** Set up a host (an empty session list). The pointers must outlive it. */
void session_host_init(session_host *h, const session_host_ops *ops, void *user, uv_loop_t *loop,
                       const server_config *cfg, server_metrics *metrics, server_status *status);
/** Free the list and the buffer (the sessions are gone already). */
void session_host_free(session_host *h);

struct session {
	session_host *host;
	const transport_ops *ops;
	void *conn;
	uint32_t client_id; /* owner number of its agents; never reused */
	char peer[64];
	char peer_ip[48]; /* the address without its port: per-peer limits */
	char name[CROWD_CLIENT_NAME_MAX + 1]; /* Hello.client_name, cut to a whole UTF-8 character */
	uint64_t opened_ns;

	bool hello_done;
	uint32_t protocol_minor; /* from Hello: minor >= 1 may receive minor-1 messages */
	void *world; /* the server's world this session is in (NULL before Hello); ops->enter_world sets it */
	char world_name[CROWD_WORLD_NAME_MAX + 1];
	char token_world[CROWD_WORLD_NAME_MAX + 1]; /* the one world its token may use; empty: any */
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
	uint32_t subscription_epoch; /* +1 at Subscribe, JoinWorld: an older one's snapshot is dropped */
	bool obstacles_sent;
	uint32_t obstacle_version_sent;

	/* output limits */
	uint64_t above_soft_since_ns;   /* 0: at or below the soft limit */
	uint64_t above_soft_since_tick; /* the tick it went above (for the Error's text) */
	size_t kernel_unsent;           /* ops->kernel_unsent, asked at the start of each tick */
};

/** A transport accepted a connection. Returns the session, or NULL when refused
 * (server full or shutting down): an Error was queued and ops->close(conn, true)
 * was called already. `peer` is for logs. */
session *session_open(session_host *host, const transport_ops *ops, void *conn, const char *peer);

/** An open session by client id; NULL if gone. */
session *session_find(const session_host *host, uint32_t client_id);

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

/** One of its queued commands was applied (answered): release what it held. */
void session_command_done(session *s, const struct command *c);

/** Housekeeping each tick: Hello timeout and output limits. */
void session_check_timers(session *s, uint64_t now_ns);

/** Bytes queued in the transport, and in the kernel unsent (as of this tick's start). */
size_t session_pending_output(const session *s);

#endif
