/* client.h — the C client library of crowd.v1 for game engines and tools.
 * Plain POSIX sockets: connect, send commands (each returns its request_id),
 * and call crowd_client_poll() once per frame from your own loop; it never
 * owns the loop. The latest snapshot is kept decoded as plain float arrays. */
#ifndef CROWD_CLIENT_H
#define CROWD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crowd.pb.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Library status codes: 0 is success, errors are negative. Protocol errors the
 * server sends are not statuses: they arrive as crowd_v1_Error in on_error. */
typedef enum crowd_client_status {
	CROWD_CLIENT_OK = 0,
	CROWD_CLIENT_ERR_ARGUMENT = -1,        /* NULL pointer, bad address, string too long */
	CROWD_CLIENT_ERR_RESOLVE = -2,         /* getaddrinfo failed */
	CROWD_CLIENT_ERR_CONNECT = -3,         /* connection refused or unreachable */
	CROWD_CLIENT_ERR_TIMEOUT = -4,         /* connect or flush did not finish in time */
	CROWD_CLIENT_ERR_IO = -5,              /* a socket call failed (errno in crowd_client_errno) */
	CROWD_CLIENT_ERR_CLOSED = -6,          /* the server closed the connection */
	CROWD_CLIENT_ERR_PROTOCOL = -7,        /* the server sent bytes that do not decode */
	CROWD_CLIENT_ERR_FRAME_TOO_LARGE = -8, /* a frame over options.max_frame */
	CROWD_CLIENT_ERR_NO_MEMORY = -9,
	CROWD_CLIENT_ERR_TOO_MANY = -10,     /* more items than one message can carry (65535) */
	CROWD_CLIENT_ERR_BUFFER_FULL = -11,  /* unsent output over options.max_output */
	CROWD_CLIENT_ERR_ENCODE = -12,       /* nanopb refused to encode the message */
	CROWD_CLIENT_ERR_UNREACHABLE = -13,  /* reconnecting gave up: no Welcome in reconnect.max_attempts */
	CROWD_CLIENT_ERR_DISCONNECTED = -14, /* reconnecting now: nothing is sent until the next Welcome */
	CROWD_CLIENT_ERR_REFUSED = -15,      /* a reconnect's Hello was refused (an Error, in on_error) or, with
	                                        reconnect.require_resumed, answered with a new identity */
} crowd_client_status;

/** A human-readable text for a crowd_client_status. Never NULL. */
const char *crowd_client_strerror(int status);

/** The name of a wire ErrorCode ("ERROR_NOT_OWNER"), or "ERROR_UNKNOWN_CODE". */
const char *crowd_client_error_name(int code);

/** The latest snapshot, decoded: parallel arrays of `count` agents in ascending
 * id order, positions and velocities in world units (fixed point / precision). */
typedef struct crowd_client_snapshot {
	uint64_t tick;
	uint64_t state_hash;
	bool keyframe;
	uint32_t world_agent_count; /* agents in the whole world, not only in view */
	uint32_t count;             /* agents in view */
	const uint32_t *id;
	const float *x, *y, *vx, *vy, *radius;
	const uint32_t *owner;     /* client_id of the spawner, 0 = server or nobody */
	uint32_t entered, removed; /* agents new to this view / removed from it */
	size_t frame_bytes;        /* bytes of this snapshot on the wire, prefix included */
} crowd_client_snapshot;

/** What on_reconnect reports. */
typedef enum crowd_client_reconnect_kind {
	CROWD_CLIENT_CONNECTION_LOST = 1, /* the connection to `address` ended with `status`; reconnecting */
	CROWD_CLIENT_ATTEMPT_FAILED = 2,  /* attempt `attempt` at `address` failed with `status` */
	CROWD_CLIENT_RECONNECTED = 3,     /* `address` welcomed us; `resumed`: the same client_id and agents */
} crowd_client_reconnect_kind;

typedef struct crowd_client_reconnect_event {
	crowd_client_reconnect_kind kind;
	const char *address; /* "HOST:PORT" as given; valid during the call */
	int status;          /* LOST, ATTEMPT_FAILED: why (a crowd_client_status) */
	uint32_t attempt;    /* attempts since the connection was lost, this one included */
	int next_delay_ms;   /* LOST, ATTEMPT_FAILED: wait before the next attempt (-1: none, given up) */
	bool resumed;        /* RECONNECTED: Welcome.resumed */
	uint32_t client_id;  /* RECONNECTED: Welcome.client_id */
} crowd_client_reconnect_event;

/** Callbacks, all optional. They run inside crowd_client_poll(); they may send
 * commands but must not close the client. Pointers are valid only during the call. */
typedef struct crowd_client_callbacks {
	void (*on_welcome)(void *user, const crowd_v1_Welcome *welcome);
	void (*on_ack)(void *user, uint32_t request_id, const uint32_t *ids, size_t count);
	void (*on_error)(void *user, const crowd_v1_Error *error);
	void (*on_snapshot)(void *user, const crowd_client_snapshot *snapshot);
	void (*on_pong)(void *user, uint64_t client_time_us, uint64_t server_tick);
	/** The connection is gone: status CROWD_CLIENT_ERR_CLOSED for an orderly close
	 * by the server, another negative status otherwise. Called once. With
	 * options.reconnect.enabled, a connection lost after a Welcome is not the
	 * end: on_closed comes only when reconnecting gives up
	 * (CROWD_CLIENT_ERR_UNREACHABLE). */
	void (*on_closed)(void *user, int status);
	/** Minor 1: what happened to agents in one tick (ARRIVED, UNREACHABLE with
	 * the point chosen, STUCK): your own agents' unless you asked for all. */
	void (*on_agent_events)(void *user, const crowd_v1_AgentEvents *events);
	/** Minor 1: the answer to crowd_client_get_paths (Paths.request_id). */
	void (*on_paths)(void *user, const crowd_v1_Paths *paths);
	/** Minor 2: the answer to crowd_client_list_worlds (WorldList.request_id). */
	void (*on_world_list)(void *user, const crowd_v1_WorldList *list);
	/** With options.reconnect.enabled: the connection was lost, an attempt
	 * failed, or a reconnect got its Welcome (after on_welcome). Requests sent
	 * before the loss and not yet answered get no answer: the new server may or
	 * may not hold them (check with a snapshot); requests made while
	 * reconnecting return CROWD_CLIENT_ERR_DISCONNECTED. */
	void (*on_reconnect)(void *user, const crowd_client_reconnect_event *event);
	/** Minor 3: a primary's checkpoint chunk or journal records, to a follower (crowd-server --follow). */
	void (*on_replication)(void *user, const crowd_v1_ReplicationFrame *frame);
} crowd_client_callbacks;

/** What the client does when an established connection (one that got a
 * Welcome) drops. Attempts go through the address list, starting after the
 * address that was lost and wrapping round; each pass over the list starts
 * after a wait of min_delay_ms, doubled for every pass before it up to
 * max_delay_ms (times a jitter factor in [0.75, 1)), and inside a pass the
 * next address is tried at once. An attempt is a TCP connect bounded by
 * connect_timeout_ms, then the Hello the application sent (same token, name,
 * keep flag and world) with the last Welcome's resume_key, and its Welcome
 * within connect_timeout_ms. Once welcomed, the last Subscribe and
 * SubscribeEvents are sent again (their Acks are not passed to on_ack). */
typedef struct crowd_client_reconnect_policy {
	bool enabled;          /* default false: a lost connection ends the client (on_closed) */
	uint32_t max_attempts; /* default 0: no limit; else on_closed(CROWD_CLIENT_ERR_UNREACHABLE) after so many */
	int min_delay_ms;      /* default 250 */
	int max_delay_ms;      /* default 5000 */
	/* default false. true: a Welcome with resumed = false, when a resume key
	 * was presented, counts as a failed attempt (CROWD_CLIENT_ERR_REFUSED):
	 * for lists holding a standby that must be promoted before it is used. */
	bool require_resumed;
} crowd_client_reconnect_policy;

/** Most addresses crowd_client_connect_list takes. */
#define CROWD_CLIENT_MAX_ADDRESSES 16

typedef struct crowd_client_options {
	int connect_timeout_ms;   /* default 5000 */
	size_t max_frame;         /* largest server frame accepted; default 64 MiB */
	size_t max_output;        /* unsent bytes buffered before sends fail; default 16 MiB */
	size_t max_read_per_poll; /* bytes read per crowd_client_poll call; default 4 MiB */
	int recv_buffer_bytes;    /* SO_RCVBUF if > 0 (tests use a tiny one); default 0 */
	/* > 0: no bytes from the server for this long and the connection counts as lost
	 * (CROWD_CLIENT_ERR_TIMEOUT; with reconnect, a reconnect starts): a server whose
	 * machine vanished sends no FIN. Keep it above the quietest gap (snapshots come every
	 * divisor ticks to a subscriber; others should ping). Default 0: off */
	int idle_timeout_ms;
	/* minor 2: the world crowd_client_hello joins (copied at connect); NULL or "": the default world */
	const char *world;
	crowd_client_reconnect_policy reconnect;
	crowd_client_callbacks callbacks;
	void *user;
} crowd_client_options;

/** Defaults for every option; change what differs. */
crowd_client_options crowd_client_default_options(void);

typedef struct crowd_client crowd_client;

/** Connect to host:port (blocking, bounded by connect_timeout_ms); the socket is
 * non-blocking afterwards. *out is set on success. options may be NULL. */
int crowd_client_connect(const char *host, uint16_t port, const crowd_client_options *options, crowd_client **out);

/** Connect to the first address of a comma-separated list ("HOST:PORT,HOST:PORT",
 * at most CROWD_CLIENT_MAX_ADDRESSES) that accepts the connection, in order:
 * one that refuses, does not resolve or times out is skipped. The list is kept
 * for options.reconnect. Fails with the last address's status, or
 * CROWD_CLIENT_ERR_ARGUMENT for a list that does not parse (nothing tried). */
int crowd_client_connect_list(const char *addresses, const crowd_client_options *options, crowd_client **out);

/** The number of addresses in a comma-separated list, or CROWD_CLIENT_ERR_ARGUMENT
 * if one of them is not HOST:PORT or there are more than CROWD_CLIENT_MAX_ADDRESSES. */
int crowd_client_count_addresses(const char *addresses);

/** The address the client is connected to (or is trying), as given: "HOST:PORT". */
const char *crowd_client_address(const crowd_client *client);

/** Split "HOST:PORT" (or "[v6]:PORT"); host gets at most host_size-1 chars. */
int crowd_client_parse_address(const char *address, char *host, size_t host_size, uint16_t *port);

/** Close cleanly and free everything: write what is queued, send FIN, and
 * discard input until the server's FIN, all within flush_timeout_ms (negative:
 * 5 s); 0 closes at once. NULL is fine. Must not be called from a callback. */
void crowd_client_close(crowd_client *client, int flush_timeout_ms);

/** Wait at most timeout_ms (0: don't wait, -1: forever) for the socket, write
 * what is queued, read what is available, decode it and run the callbacks.
 * Returns the number of messages dispatched (>= 0) or a negative status; once
 * the connection is gone it returns that status every time. */
int crowd_client_poll(crowd_client *client, int timeout_ms);

/** Write queued output, waiting at most timeout_ms. CROWD_CLIENT_ERR_TIMEOUT if
 * some is still queued. Incoming data is not read. */
int crowd_client_flush(crowd_client *client, int timeout_ms);

/** The socket, for callers that multiplex it in their own poll/epoll; it
 * changes with a reconnect, and is -1 between attempts. */
int crowd_client_fd(const crowd_client *client);
/** Bytes queued but not yet written. */
size_t crowd_client_pending_output(const crowd_client *client);
/** 0 while connected (or reconnecting), else the status that ended the client. */
int crowd_client_state(const crowd_client *client);
/** errno of the last failed socket call. */
int crowd_client_errno(const crowd_client *client);

/** The Welcome, or NULL before it arrived. */
const crowd_v1_Welcome *crowd_client_welcome(const crowd_client *client);
/** The latest snapshot, or NULL before the first. Valid until the next poll. */
const crowd_client_snapshot *crowd_client_latest_snapshot(const crowd_client *client);
/** Obstacles as last sent by the server; obstacle i has `*count` vertices. */
uint32_t crowd_client_obstacle_count(const crowd_client *client);
bool crowd_client_obstacle(const crowd_client *client, uint32_t i, uint32_t *id, const float **x, const float **y,
                           uint32_t *count);

/** Counters since connect. */
typedef struct crowd_client_counters {
	uint64_t bytes_sent, bytes_received;
	uint64_t messages_received, snapshots_received;
	uint64_t acks_received, errors_received;
	uint64_t events_received; /* AgentEvent items (minor 1) */
	uint64_t reconnects;      /* connections lost and won back (options.reconnect) */
} crowd_client_counters;
crowd_client_counters crowd_client_get_counters(const crowd_client *client);

/* ---------------------------------------------------------------- commands
 * Each queues one ClientMessage, tries to write it at once, and returns the
 * request_id it used (> 0) or a negative crowd_client_status. */

/** Hello: must be first. token and name may be NULL (at most 64 and 32 chars). */
int64_t crowd_client_hello(crowd_client *client, const char *token, const char *client_name,
                           bool keep_agents_on_disconnect);
/** Hello that takes an earlier identity back: resume_key is the one an
 * earlier Welcome gave (crowd_client_welcome(old)->resume_key, up to 64
 * chars; the server gives one when it runs with --data-dir). The Welcome says
 * resumed = true and carries the old client_id; the agents that client
 * spawned are its own again. To reconnect after the connection or the server
 * went away: keep the key, crowd_client_connect again, and send this. Agents
 * survive a disconnect only with keep_agents_on_disconnect (a server crash
 * never removes them). */
int64_t crowd_client_hello_resume(crowd_client *client, const char *token, const char *client_name,
                                  bool keep_agents_on_disconnect, const char *resume_key);
/* Worlds (minor 2). A name is 1 to 32 bytes of A-Z a-z 0-9 _ . - (not "." or
 * ".."): anything else is CROWD_CLIENT_ERR_ARGUMENT, unsent. */

/** Admin: open a world; settings NULL (or zero fields): the server's own. Ack, or an Error. */
int64_t crowd_client_create_world(crowd_client *client, const char *name, const crowd_v1_WorldSettings *settings);
/** Admin: close a world; its clients are closed; delete_data also removes what the server persisted of it. */
int64_t crowd_client_close_world(crowd_client *client, const char *name, bool delete_data);
/** Every open world: answered by on_world_list. */
int64_t crowd_client_list_worlds(crowd_client *client);
/** Move this connection to another world (refused while it owns agents). Ack, or an Error. */
int64_t crowd_client_join_world(crowd_client *client, const char *name);
/** Spawn `count` agents (the Ack lists their ids in order). Start each spec
 * from crowd_v1_AgentSpec_init_zero and set has_* for what you give. */
int64_t crowd_client_spawn(crowd_client *client, const crowd_v1_AgentSpec *agents, size_t count);
/** Targets for `count` ids; x/y hold `xy_count` values: count, or 1 for all. */
int64_t crowd_client_set_targets(crowd_client *client, const uint32_t *ids, size_t count, const float *x,
                                 const float *y, size_t xy_count);
/** Minor 1: as crowd_client_set_targets, with how the targets are walked to:
 * crowd_v1_SteerMode_STEER_NAVIGATE (by path around obstacles; what
 * STEER_DEFAULT means) or STEER_DIRECT (a straight line). */
int64_t crowd_client_set_targets_steer(crowd_client *client, const uint32_t *ids, size_t count, const float *x,
                                       const float *y, size_t xy_count, crowd_v1_SteerMode steer);
/** Minor 1: which AgentEvents to receive: your own agents' (the default),
 * every agent's (all_agents, admins only), or none (unsubscribe). */
int64_t crowd_client_subscribe_events(crowd_client *client, bool all_agents, bool unsubscribe);
/** Minor 1: the current paths of these agents (own, or any for an admin);
 * answered by on_paths. */
int64_t crowd_client_get_paths(crowd_client *client, const uint32_t *ids, size_t count);
/** Preferred velocities; vx/vy hold count values, or 1 for all. Clears targets. */
int64_t crowd_client_set_velocities(crowd_client *client, const uint32_t *ids, size_t count, const float *vx,
                                    const float *vy, size_t v_count);
int64_t crowd_client_remove_agents(crowd_client *client, const uint32_t *ids, size_t count);
/** A polygon of 3 or more vertices, counter-clockwise (a clockwise one is stored reversed). Admin only. */
int64_t crowd_client_add_obstacle(crowd_client *client, const float *x, const float *y, size_t count);
int64_t crowd_client_remove_obstacle(crowd_client *client, uint32_t obstacle_id);
/** Subscribe to the whole world (area NULL) or a rectangle; divisor 0 = the
 * server's default. */
int64_t crowd_client_subscribe(crowd_client *client, const crowd_v1_Rect *area, uint32_t divisor);
int64_t crowd_client_unsubscribe(crowd_client *client);
/** Ping; client_time_us 0 sends the monotonic clock in microseconds. */
int64_t crowd_client_ping(crowd_client *client, uint64_t client_time_us);
/** Any ClientMessage; its request_id is overwritten with the one used. */
int64_t crowd_client_send_message(crowd_client *client, crowd_v1_ClientMessage *message);
/** Queue raw bytes as they are (tests, fuzzing); returns 0 or a negative status. */
int crowd_client_send_raw(crowd_client *client, const void *data, size_t size);

/** Microseconds of CLOCK_MONOTONIC. */
uint64_t crowd_client_now_us(void);

#ifdef __cplusplus
}
#endif

#endif /* CROWD_CLIENT_H */
