/* client_internal.h — what the client library's own files share: the client
 * struct and the function that encodes and queues one ClientMessage. Not
 * installed, not part of the public face (see include/crowd/client.h). */
#ifndef CROWD_CLIENT_INTERNAL_H
#define CROWD_CLIENT_INTERNAL_H

#include "crowd/client.h"
#include "crowd/wire.h"

struct addrinfo;

/** One entry of the address list: "HOST:PORT" as given, and split. */
typedef struct client_address {
	char text[280];
	char host[256];
	uint16_t port;
} client_address;

/** Where the connection is: open (Welcome or the application's Hello), or
 * one of a reconnect's steps. */
typedef enum crowd_client_link {
	LINK_OPEN,       /* the application's connection */
	LINK_WAITING,    /* no socket: the next attempt starts at next_attempt_us */
	LINK_CONNECTING, /* a non-blocking connect in progress */
	LINK_HELLO,      /* connected, our Hello sent, its Welcome awaited */
} crowd_client_link;

struct crowd_client {
	int fd;
	int state; /* 0 while connected, else the status that ended it */
	int last_errno;
	uint64_t last_input_us; /* when the server last sent bytes (options.idle_timeout_ms) */
	bool write_closed;      /* the server stopped reading (EPIPE/ECONNRESET on send) */
	bool closed_reported;
	uint32_t next_request_id;
	crowd_client_options options;
	char world[CROWD_WORLD_NAME_MAX + 1]; /* options.world, copied: Hello's world */

	crowd_buf out; /* encoded, not yet written */
	crowd_frame_splitter in;

	bool have_welcome;
	crowd_v1_Welcome welcome;
	float precision; /* fixed-point units per world unit (Welcome), 1 until then */

	crowd_view view; /* fixed-point agents as decoded */
	crowd_obstacle_set obstacles;
	bool have_snapshot;
	crowd_client_snapshot snapshot;
	uint32_t arrays_cap;
	uint32_t *ids, *owners;
	float *xs, *ys, *vxs, *vys, *radii;

	crowd_client_counters counters;

	/* the address list (reconnect.c) and where a reconnect stands */
	client_address addresses[CROWD_CLIENT_MAX_ADDRESSES];
	uint32_t address_count, address_index;
	crowd_client_link link;
	uint32_t attempts;                   /* since the connection was lost */
	uint64_t next_attempt_us;            /* LINK_WAITING */
	uint64_t attempt_deadline_us;        /* LINK_CONNECTING, LINK_HELLO */
	struct addrinfo *resolved, *untried; /* LINK_CONNECTING: this address's results */
	uint64_t jitter_state;

	/* what the application asked for, asked again after a reconnect */
	bool hello_sent, welcomed_once;
	char token[65], client_name[33], resume_key[65];
	bool keep_agents;
	bool have_subscription, have_events_subscription;
	crowd_v1_Subscribe subscription;
	crowd_v1_SubscribeEvents events_subscription;
	uint32_t hello_request, join_request, resubscribe_request, resubscribe_events_request;
	char join_world[CROWD_WORLD_NAME_MAX + 1];
};

/** Encode msg (request_id set here unless it is a raw send) and queue it, then
 * try a non-blocking write. Returns the request_id or a negative status. */
int64_t crowd_client_enqueue(crowd_client *client, crowd_v1_ClientMessage *msg);
/** crowd_client_enqueue for the library's own requests: sent in LINK_HELLO too. */
int64_t crowd_client_enqueue_own(crowd_client *client, crowd_v1_ClientMessage *msg);

/* client.c: the socket */
/** A non-blocking socket with a connect to ai started; the fd or a negative status (errno in *err). */
/** Resolve one address (any family, TCP) into *out (freeaddrinfo it); 0 or CROWD_CLIENT_ERR_RESOLVE. */
int crowd_client_resolve(const client_address *a, struct addrinfo **out);
/** The deadline connect_timeout_ms from now (none: now). */
uint64_t crowd_client_connect_deadline_us(const crowd_client_options *o);
int crowd_client_socket_start(const struct addrinfo *ai, const crowd_client_options *o, int *err);
/** Whether the started connect succeeded (SO_ERROR): 0 or CROWD_CLIENT_ERR_CONNECT (errno in *err). */
int crowd_client_socket_finish(int fd, int *err);
/** Forget what belonged to the last connection: queued output, partial input,
 * the snapshot baseline and obstacles. */
void crowd_client_reset_link(crowd_client *client);
/** The client is over: state = status, on_closed once. Returns status. */
int crowd_client_end(crowd_client *client, int status);
/** Milliseconds left until deadline_us (0 when past). */
int crowd_client_ms_until(uint64_t deadline_us);

/* reconnect.c */
/** Split a comma-separated address list into c->addresses; 0 or a negative status. */
int crowd_client_set_addresses(client_address *out, uint32_t *count, const char *list);
/** The connection (fd already closed) was lost with status: start reconnecting
 * if the policy says so (true), else false. */
bool crowd_client_reconnect_begin(crowd_client *client, int status);
/** LINK_WAITING and LINK_CONNECTING: advance, waiting at most timeout_ms. 0 or the final status. */
int crowd_client_reconnect_poll(crowd_client *client, int timeout_ms);
/** This attempt failed with status (fd already closed): the next, or give up.
 * Returns CROWD_CLIENT_ERR_DISCONNECTED or the final status. */
int crowd_client_reconnect_failed(crowd_client *client, int status);
/** A Welcome in LINK_HELLO: 0 if it counts, CROWD_CLIENT_ERR_REFUSED if it does not (require_resumed). */
int crowd_client_reconnect_accepts(crowd_client *client, const crowd_v1_Welcome *welcome);
/** After on_welcome of a reconnect: open again, subscriptions asked again, on_reconnect(RECONNECTED). */
void crowd_client_reconnect_done(crowd_client *client);
/** Remember what msg asks for that a reconnect asks again (Hello, Subscribe, JoinWorld…), sent as request id. */
void crowd_client_remember(crowd_client *client, const crowd_v1_ClientMessage *msg, uint32_t id);
/** An Ack: true if it answers the library's own request (not the application's). */
bool crowd_client_own_ack(crowd_client *client, uint32_t request_id);

#endif /* CROWD_CLIENT_INTERNAL_H */
