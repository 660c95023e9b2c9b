/* agones.h — the Agones SDK sidecar client: Ready, Health, Shutdown, GameServer and
 * the rooms Counter and worlds List over the sidecar's REST gateway on localhost, all
 * asynchronous on the server's libuv loop, so a missing, failing or hanging sidecar
 * never delays a tick. */
#ifndef CROWD_AGONES_H
#define CROWD_AGONES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define CROWD_AGONES_DEFAULT_PORT 9358
#define CROWD_AGONES_DEFAULT_HEALTH_MS 2000u
#define CROWD_AGONES_MAX_LABELS 32
#define CROWD_AGONES_NAME_MAX 254 /* Kubernetes object names are at most 253 bytes */
#define CROWD_AGONES_KEY_MAX 320  /* label keys: optional 253-byte prefix + '/' + 63 */
#define CROWD_AGONES_VALUE_MAX 64 /* label values are at most 63 bytes */
#define CROWD_AGONES_LIST_MAX 1000 /* Agones caps a List's capacity at 1000 values */
#define CROWD_AGONES_COUNTER_ROOMS "rooms"
#define CROWD_AGONES_LIST_WORLDS "worlds"

/* The SDK calls this client makes; indexes the counters below. */
typedef enum crowd_agones_call {
	CROWD_AGONES_GAMESERVER = 0,
	CROWD_AGONES_READY,
	CROWD_AGONES_HEALTH,
	CROWD_AGONES_SHUTDOWN,
	CROWD_AGONES_COUNTER, /* PATCH /v1beta1/counters/rooms (Counters and Lists, beta) */
	CROWD_AGONES_LIST,    /* PATCH /v1beta1/lists/worlds */
	CROWD_AGONES_CALL_COUNT
} crowd_agones_call;

/* Counters for /metrics. The caller owns the struct (usually inside the server's
 * metrics) and hands a pointer to crowd_agones_start; only the loop thread writes. */
typedef struct crowd_agones_counters {
	uint64_t ok[CROWD_AGONES_CALL_COUNT];       /* answered 2xx */
	uint64_t failed[CROWD_AGONES_CALL_COUNT];   /* refused, timed out, non-2xx or bad reply */
	uint64_t timeouts[CROWD_AGONES_CALL_COUNT]; /* subset of failed: no answer in time */
	uint64_t health_skipped;                    /* a health ping was due while the last one was still open */
	uint64_t health_withheld;                   /* a health ping was due but healthy() said the world is stuck */
	uint64_t ready;                             /* 1 once the sidecar accepted /ready (a gauge) */
} crowd_agones_counters;

typedef enum crowd_agones_log_level {
	CROWD_AGONES_LOG_DEBUG = 0,
	CROWD_AGONES_LOG_INFO,
	CROWD_AGONES_LOG_WARN,
	CROWD_AGONES_LOG_ERROR
} crowd_agones_log_level;

/* One formatted log line (no trailing newline). */
typedef void (*crowd_agones_log_fn)(void *ctx, crowd_agones_log_level level, const char *line);

typedef struct crowd_agones_config {
	char host[64];               /* IPv4 address of the sidecar; Agones binds it on localhost */
	uint16_t port;               /* AGONES_SDK_HTTP_PORT, else 9358 */
	uint32_t health_period_ms;   /* between /health pings; Agones' default window is 5 s */
	uint32_t request_timeout_ms; /* a request not answered by then counts as failed */
	uint32_t retry_min_ms;       /* first back-off while the sidecar is not up yet */
	uint32_t retry_max_ms;       /* back-off doubles up to this */
	/* Asked before each health ping; false withholds it, so Agones marks a server whose
	 * simulation is wedged Unhealthy even though its loop still runs. NULL: always true. */
	bool (*healthy)(void *ctx);
	void *healthy_ctx;
	crowd_agones_log_fn log; /* NULL: lines go to stderr */
	void *log_ctx;
} crowd_agones_config;

typedef struct crowd_agones_label {
	char key[CROWD_AGONES_KEY_MAX + 1];
	char value[CROWD_AGONES_VALUE_MAX + 1];
} crowd_agones_label;

/* What GET /gameserver told us about ourselves. */
typedef struct crowd_agones_gameserver {
	char name[CROWD_AGONES_NAME_MAX + 1];
	char state[32]; /* status.state at start-up, e.g. "Scheduled" */
	size_t label_count;
	size_t labels_dropped; /* labels past CROWD_AGONES_MAX_LABELS or oversized */
	crowd_agones_label labels[CROWD_AGONES_MAX_LABELS];
} crowd_agones_gameserver;

typedef struct crowd_agones crowd_agones;

/* Defaults: 127.0.0.1, port from AGONES_SDK_HTTP_PORT (else 9358), health every 2 s,
 * 1.5 s request timeout, back-off 100 ms doubling to 5 s. */
void crowd_agones_default_config(crowd_agones_config *cfg);

/* Parses a port number as AGONES_SDK_HTTP_PORT holds it; 0 when absent or invalid. */
uint16_t crowd_agones_parse_port(const char *text);

/* Starts the client: GET /gameserver (retried with back-off until it answers) and the
 * /health timer. Returns 0 or a negative libuv error code. */
int crowd_agones_start(crowd_agones **out, uv_loop_t *loop, const crowd_agones_config *cfg,
                       crowd_agones_counters *counters);

/* Call once every listener accepts connections: POST /ready, retried with back-off
 * until the sidecar accepts it. */
void crowd_agones_ready(crowd_agones *agones);

/* Draining: stops health pings and retries, POSTs /shutdown once and calls done(arg, ok)
 * when it is answered or has failed (after at most request_timeout_ms). */
void crowd_agones_shutdown(crowd_agones *agones, void (*done)(void *arg, bool ok), void *arg);

/* Closes every handle and frees the client; closed(arg) runs once the last handle is
 * closed (the loop must run until then). A /shutdown still in flight is let finish
 * (at most request_timeout_ms) so the sidecar hears it; anything else is aborted. */
void crowd_agones_close(crowd_agones *agones, void (*closed)(void *arg), void *arg);

/* The worlds this server holds, for the GameServer's Counter "rooms" (count = worlds
 * open, capacity = the most it may hold) and List "worlds" (their names; capacity
 * min(capacity, CROWD_AGONES_LIST_MAX), names past it are left out). Each call replaces
 * what the sidecar should hold: the latest state is sent once nothing of the same kind
 * is in flight, retried with back-off until the sidecar accepts it. Names are copied.
 * Returns 0, or UV_ENOMEM (the previous state stays queued). */
int crowd_agones_set_rooms(crowd_agones *agones, uint32_t capacity, const char *const *names, uint32_t count);

/* True once the sidecar accepted the latest state given to crowd_agones_set_rooms. */
bool crowd_agones_rooms_synced(const crowd_agones *agones);

/* NULL until GET /gameserver has answered. */
const crowd_agones_gameserver *crowd_agones_gameserver_info(const crowd_agones *agones);

/* True once the sidecar accepted /ready. */
bool crowd_agones_is_ready(const crowd_agones *agones);

/* Writes a JSON object for /healthz: {"ready":bool,"name":"..","labels":{..}} ("name" and
 * "labels" only once known). Returns the length it needed (snprintf-style, without NUL). */
size_t crowd_agones_healthz_json(const crowd_agones *agones, char *buf, size_t cap);

/* Name of a call for logs and metric labels: "gameserver", "ready", "health", "shutdown",
 * "counter", "list". */
const char *crowd_agones_call_name(crowd_agones_call call);

/* Parses a GET /gameserver JSON body (grpc-gateway: object_meta or objectMeta). Returns 0,
 * or -1 for malformed JSON. Bytes are untrusted: depth, lengths and counts are bounded. */
int crowd_agones_parse_gameserver(const char *json, size_t len, crowd_agones_gameserver *out);

#endif
