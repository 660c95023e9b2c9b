/* http.h — the server's HTTP side on its libuv loop: the viewer's static files,
 * /crowd.proto, /healthz, /metrics, and the WebSocket upgrade at /ws, after
 * which the connection carries crowd.v1 messages for a session (see ws.h).
 * One request per connection; every response closes it. */
#ifndef CROWD_HTTP_H
#define CROWD_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

typedef struct crowd_http crowd_http;
/** A WebSocket connection handed to the session layer. Valid until ws_closed. */
typedef struct crowd_http_ws crowd_http_ws;

typedef struct crowd_http_config {
	const char *host;           /* listen address, default "127.0.0.1" */
	int port;                   /* default 8080; 0 picks a free port */
	const char *web_root;       /* directory holding index.html and its files */
	const char *proto_path;     /* served as /crowd.proto */
	size_t max_header_bytes;    /* request line + headers; over it: 431 (default 8192) */
	size_t max_body_bytes;      /* Content-Length over it: 413 (default 1024) */
	uint32_t header_timeout_ms; /* request (header, or its small body) unfinished: 408 and close (default 10000) */
	uint32_t max_connections;   /* open HTTP + WebSocket connections; over it: 503 (default 1024) */
	size_t ws_max_message;      /* bigger WebSocket message: close 1009 (default 1 MiB) */
	uint32_t flush_timeout_ms;  /* a closing WebSocket gets this long to drain its output (default 10000) */
	size_t ws_unsent_limit;     /* a WebSocket's kernel takes about this much it cannot send yet (0: no limit) */
	/* Connection exhaustion: requests not complete yet (idle sockets) are what an
	 * attacker holds. One IP address may hold max_pending_per_peer of them; while
	 * more than half of max_connections are open they get header_timeout_busy_ms;
	 * at max_connections the oldest of them is closed to make room. A connection
	 * past the per-address cap, or past max_connections with no idle one to
	 * close, takes one of reserved_slots instead: there only /healthz and
	 * /metrics are served (anything else: 503), with header_timeout_busy_ms, and
	 * when they are all taken the oldest one still waiting for its request
	 * makes room. So probes always get in. */
	uint32_t max_pending_per_peer;   /* default 64 */
	uint32_t header_timeout_busy_ms; /* default 1000 */
	uint32_t reserved_slots;         /* default 16; 0: over a limit is 503 at once */
} crowd_http_config;

/** Fill a config with the defaults above (web_root and proto_path NULL). */
void crowd_http_default_config(crowd_http_config *cfg);

/** What /healthz reports (503 instead of 200 while shutting down). */
typedef struct crowd_http_health {
	uint64_t tick;
	uint64_t agents;
	uint64_t connections;
	bool shutting_down;
	const char *extra_members; /* more JSON members, each preceded by ',' (e.g. Agones); NULL: none */
} crowd_http_health;

/** Why a WebSocket connection ended (for the session layer's disconnect counts). */
typedef enum crowd_http_close_reason {
	CROWD_HTTP_CLOSE_PEER = 0, /* the client closed (close frame or EOF) */
	CROWD_HTTP_CLOSE_READ_ERROR,
	CROWD_HTTP_CLOSE_WRITE_ERROR,
	CROWD_HTTP_CLOSE_PROTOCOL, /* bad framing, unmasked or text frame: closed with 1002/1003/1007 */
	CROWD_HTTP_CLOSE_TOO_BIG,  /* message over ws_max_message: closed with 1009 */
	CROWD_HTTP_CLOSE_LOCAL,    /* the session asked (crowd_http_ws_close/abort) */
	CROWD_HTTP_CLOSE_SHUTDOWN, /* crowd_http_stop */
} crowd_http_close_reason;

typedef struct crowd_http_hooks {
	void *user;
	/** Fill /healthz. May be NULL (zeros). */
	void (*health)(void *user, crowd_http_health *out);
	/** Append the Prometheus text to a malloc'd string; return it (NULL: 500). May be NULL (404). */
	char *(*metrics)(void *user, size_t *len);
	/** A WebSocket client finished its handshake: return its session, or NULL
	 * to refuse (close 1013). `peer` is "address:port". */
	void *(*ws_open)(void *user, crowd_http_ws *conn, const char *peer);
	/** One whole binary message from the client of `session`. */
	void (*ws_message)(void *session, const uint8_t *data, size_t len);
	/** The connection is gone (closed by either side): forget `conn`. Called
	 * once, from the socket's close callback, never inside a crowd_http_ws_* call. */
	void (*ws_closed)(void *session, crowd_http_close_reason reason);
} crowd_http_hooks;

/** The statuses counted one by one in crowd_http_stats.responses, in this order. */
#define CROWD_HTTP_NSTATUS 11
extern const int crowd_http_statuses[CROWD_HTTP_NSTATUS];

/** Why a connection was refused (crowd_http_stats.refused). */
typedef enum crowd_http_refused_reason {
	CROWD_HTTP_REFUSED_PER_PEER =
	    0,                          /* over max_pending_per_peer from its address: only /healthz, /metrics served */
	CROWD_HTTP_REFUSED_FULL,        /* max_connections open: only /healthz, /metrics served */
	CROWD_HTTP_REFUSED_SUBPROTOCOL, /* a WebSocket upgrade without crowd.v1 in Sec-WebSocket-Protocol (400) */
	CROWD_HTTP_REFUSED_COUNT
} crowd_http_refused_reason;

/** Counters kept by the HTTP side, for /metrics. */
typedef struct crowd_http_stats {
	uint64_t responses[CROWD_HTTP_NSTATUS]; /* responses sent, by status (101 = WebSocket upgrades) */
	uint64_t ws_closed;                     /* WebSocket connections closed, any reason */
	uint64_t ws_close_sent[4];              /* our close code: [0] any other, [1] 1002, [2] 1003, [3] 1009 */
	uint64_t bytes_in, bytes_out;           /* every byte read and written on HTTP/WebSocket sockets */
	uint64_t evicted;                       /* idle connections closed to make room at the limit */
	uint64_t over_limit[2];                 /* connections accepted over the per-peer cap / the connection limit */
	uint64_t refused[CROWD_HTTP_REFUSED_COUNT]; /* requests answered 503 (over a limit) or 400 (no subprotocol) */
} crowd_http_stats;

/** Bind and listen. On error returns a negative uv error code. */
int crowd_http_start(crowd_http **out, uv_loop_t *loop, const crowd_http_config *cfg, const crowd_http_hooks *hooks);
/** The port actually bound (useful with port 0). */
int crowd_http_port(const crowd_http *h);
const crowd_http_stats *crowd_http_get_stats(const crowd_http *h);
/** Stop listening, close every connection (WebSockets with 1001), free once all
 * handles are closed; `done` (may be NULL) is called then. */
void crowd_http_stop(crowd_http *h, void (*done)(void *arg), void *arg);

/** Queue one binary message to a WebSocket client. False if it is closing. */
bool crowd_http_ws_send(crowd_http_ws *conn, const uint8_t *data, size_t len);
/** Close with a WebSocket close code (see ws.h) after what is queued has been
 * written (at most about two seconds); ws_closed follows. */
void crowd_http_ws_close(crowd_http_ws *conn, uint16_t code, const char *reason);
/** Drop what is queued and close now; ws_closed follows (from the loop). */
void crowd_http_ws_abort(crowd_http_ws *conn);
/** The session ws_open returned for this connection (NULL inside ws_open). */
void *crowd_http_ws_session(const crowd_http_ws *conn);
/** Bytes written but not yet taken by the kernel (for output-buffer limits). */
size_t crowd_http_ws_pending(const crowd_http_ws *conn);
/** Drop the whole messages queued for a WebSocket and not yet handed to the kernel. */
void crowd_http_ws_discard_pending(crowd_http_ws *c);
/** Bytes the kernel holds for this connection and has not sent yet, as far as
 * the output limits need them (0 while nothing waits in its queue). */
size_t crowd_http_ws_kernel_unsent(const crowd_http_ws *c);

#endif /* CROWD_HTTP_H */
