/* agones.c — the Agones SDK REST client on the server's libuv loop: one short-lived
 * HTTP/1.1 connection per call (the sidecar is on localhost), a timeout on every
 * request, back-off while the sidecar is not up yet, counters for every failure.
 *
 * Paths and bodies are the sidecar's grpc-gateway mapping of the SDK protos
 * (googleforgames/agones proto/sdk/sdk.proto and proto/sdk/beta/beta.proto; the REST
 * guide site/content/en/docs/Guides/Client SDKs/rest.md): POST /ready, /health and
 * /shutdown with "{}", GET /gameserver, and for Counters and Lists (beta)
 * PATCH /v1beta1/counters/{name} with {"count":"N","capacity":"C"} (UpdateCounter;
 * int64 as JSON strings) and PATCH /v1beta1/lists/{name} with
 * {"capacity":"C","values":[..]} (UpdateList; the gateway derives the update mask
 * from the body's fields, so both are set and the values are replaced whole). */
#include "agones.h"

#include <http_parser.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQUEST_HEAD_MAX 512 /* the request line and headers, without the body */
#define RESPONSE_BODY_MAX (64 * 1024)
#define READ_CHUNK 4096

typedef struct agones_request agones_request;

struct crowd_agones {
	uv_loop_t *loop;
	crowd_agones_config cfg;
	crowd_agones_counters *counters;
	crowd_agones_counters own_counters; /* used when the caller passes none */

	uv_timer_t health_timer;
	uint64_t health_deadline_ms; /* next ping, on uv_now's clock: no drift */
	uv_timer_t retry_timer[CROWD_AGONES_CALL_COUNT];
	uint32_t backoff_ms[CROWD_AGONES_CALL_COUNT];
	agones_request *in_flight[CROWD_AGONES_CALL_COUNT]; /* at most one per call */
	int open_handles;

	bool have_gameserver;
	crowd_agones_gameserver gameserver;
	bool want_ready;
	bool ready;
	bool draining;
	bool closing;
	bool withholding;                      /* healthy() said no at the last ping */
	bool close_pending;                    /* close asked while /shutdown was in flight: close once it ends */
	bool failing[CROWD_AGONES_CALL_COUNT]; /* log the first failure and the recovery, not each */

	void (*shutdown_done)(void *arg, bool ok);
	void *shutdown_arg;
	void (*closed)(void *arg);
	void *closed_arg;

	/* Counter and List: the body the sidecar should hold next (owned), its generation,
	 * and the generation it accepted last. Only the latest state is ever sent. */
	char *sync_body[CROWD_AGONES_CALL_COUNT];
	uint64_t sync_gen[CROWD_AGONES_CALL_COUNT];
	uint64_t synced_gen[CROWD_AGONES_CALL_COUNT];
};

struct agones_request {
	crowd_agones *owner;
	crowd_agones_call call;
	uv_tcp_t tcp;
	uv_timer_t timeout;
	uv_connect_t connect;
	uv_write_t write;
	http_parser parser;
	char *head; /* request line, headers and body */
	size_t head_len;
	uint64_t gen; /* the sync generation this request carries (Counter, List) */
	char read_buf[READ_CHUNK];
	char *body;
	size_t body_len;
	unsigned status;
	bool complete; /* the whole response was parsed */
	bool finished; /* the outcome was recorded; handles are closing */
	int open_handles;
};

static const char *const call_names[CROWD_AGONES_CALL_COUNT] = {"gameserver", "ready",   "health",
                                                                "shutdown",   "counter", "list"};

/* Method and path of each call, and its body unless it is a synced state. */
static const struct {
	const char *method;
	const char *path;
	const char *body;
} call_requests[CROWD_AGONES_CALL_COUNT] = {
    [CROWD_AGONES_GAMESERVER] = {"GET", "/gameserver", ""},
    [CROWD_AGONES_READY] = {"POST", "/ready", "{}"},
    [CROWD_AGONES_HEALTH] = {"POST", "/health", "{}"},
    [CROWD_AGONES_SHUTDOWN] = {"POST", "/shutdown", "{}"},
    [CROWD_AGONES_COUNTER] = {"PATCH", "/v1beta1/counters/" CROWD_AGONES_COUNTER_ROOMS, NULL},
    [CROWD_AGONES_LIST] = {"PATCH", "/v1beta1/lists/" CROWD_AGONES_LIST_WORLDS, NULL},
};

const char *crowd_agones_call_name(crowd_agones_call call) {
	return (unsigned)call < CROWD_AGONES_CALL_COUNT ? call_names[call] : "unknown";
}

static void agones_log(crowd_agones *a, crowd_agones_log_level level, const char *fmt, ...) {
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (a->cfg.log != NULL) {
		a->cfg.log(a->cfg.log_ctx, level, line);
	} else {
		static const char *const names[] = {"debug", "info", "warn", "error"};
		fprintf(stderr, "%s agones: %s\n", names[level], line);
	}
}

uint16_t crowd_agones_parse_port(const char *text) {
	if (text == NULL || *text == '\0') return 0;
	unsigned long v = 0;
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9') return 0;
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > 65535) return 0;
	}
	return (uint16_t)v;
}

void crowd_agones_default_config(crowd_agones_config *cfg) {
	memset(cfg, 0, sizeof *cfg);
	snprintf(cfg->host, sizeof cfg->host, "127.0.0.1");
	uint16_t port = crowd_agones_parse_port(getenv("AGONES_SDK_HTTP_PORT"));
	cfg->port = port != 0 ? port : CROWD_AGONES_DEFAULT_PORT;
	cfg->health_period_ms = CROWD_AGONES_DEFAULT_HEALTH_MS;
	cfg->request_timeout_ms = 1500;
	cfg->retry_min_ms = 100;
	cfg->retry_max_ms = 5000;
}

/* ---- handle bookkeeping: the client is freed once its last handle has closed ---- */

static void maybe_free_client(crowd_agones *a) {
	if (!a->closing || a->open_handles > 0) return;
	void (*closed)(void *) = a->closed;
	void *arg = a->closed_arg;
	for (int call = 0; call < CROWD_AGONES_CALL_COUNT; call++) free(a->sync_body[call]);
	free(a);
	if (closed != NULL) closed(arg);
}

static void on_client_handle_closed(uv_handle_t *h) {
	crowd_agones *a = h->data;
	a->open_handles--;
	maybe_free_client(a);
}

static void on_request_handle_closed(uv_handle_t *h) {
	agones_request *r = h->data;
	if (--r->open_handles > 0) return;
	crowd_agones *a = r->owner;
	free(r->head);
	free(r->body);
	free(r);
	a->open_handles--;
	maybe_free_client(a);
}

/* ---- the calls ---- */

static void start_call(crowd_agones *a, crowd_agones_call call);

static void on_retry_timer(uv_timer_t *t) {
	crowd_agones *a = t->data;
	for (int call = 0; call < CROWD_AGONES_CALL_COUNT; call++) {
		if (t == &a->retry_timer[call]) start_call(a, (crowd_agones_call)call);
	}
}

static void schedule_retry(crowd_agones *a, crowd_agones_call call) {
	if (a->closing || a->draining) return;
	uint32_t delay = a->backoff_ms[call];
	if (delay < a->cfg.retry_min_ms) delay = a->cfg.retry_min_ms;
	uint32_t next = delay >= a->cfg.retry_max_ms / 2 ? a->cfg.retry_max_ms : delay * 2;
	a->backoff_ms[call] = next;
	uv_timer_start(&a->retry_timer[call], on_retry_timer, delay, 0);
}

static void close_now(crowd_agones *a);

static void finish_shutdown(crowd_agones *a, bool ok) {
	void (*done)(void *, bool) = a->shutdown_done;
	a->shutdown_done = NULL;
	if (done != NULL) done(a->shutdown_arg, ok);
	if (a->close_pending) close_now(a);
}

/* Records the outcome once and closes the request's handles. reason is NULL on success. */
static void finish_request(agones_request *r, const char *reason, bool timed_out) {
	if (r->finished) return;
	r->finished = true;
	crowd_agones *a = r->owner;
	crowd_agones_call call = r->call;
	a->in_flight[call] = NULL;
	uv_timer_stop(&r->timeout);
	uv_close((uv_handle_t *)&r->timeout, on_request_handle_closed);
	uv_close((uv_handle_t *)&r->tcp, on_request_handle_closed);

	if (reason != NULL) {
		a->counters->failed[call]++;
		if (timed_out) a->counters->timeouts[call]++;
		if (a->closing) return;
		if (!a->failing[call]) {
			agones_log(a, CROWD_AGONES_LOG_WARN, "%s via %s:%u failed: %s%s", call_names[call], a->cfg.host,
			           (unsigned)a->cfg.port, reason,
			           call != CROWD_AGONES_HEALTH && call != CROWD_AGONES_SHUTDOWN
			               ? " (retrying with back-off, logged once)"
			               : "");
			a->failing[call] = true;
		}
		if (call == CROWD_AGONES_SHUTDOWN) {
			finish_shutdown(a, false);
		} else if (call != CROWD_AGONES_HEALTH) {
			schedule_retry(a, call);
		}
		return;
	}

	a->counters->ok[call]++;
	a->backoff_ms[call] = 0;
	if (a->failing[call] && !a->closing) {
		agones_log(a, CROWD_AGONES_LOG_INFO, "%s via %s:%u works again", call_names[call], a->cfg.host,
		           (unsigned)a->cfg.port);
	}
	a->failing[call] = false;
	if (a->closing) return;
	switch (call) {
	case CROWD_AGONES_GAMESERVER: {
		const crowd_agones_gameserver *gs = &a->gameserver; /* parsed in complete_from_parser */
		a->have_gameserver = true;
		char labels[1024];
		size_t used = 0;
		labels[0] = '\0';
		for (size_t i = 0; i < gs->label_count && used < sizeof labels; i++) {
			int n = snprintf(labels + used, sizeof labels - used, "%s%s=%s", i ? "," : "",
			                 gs->labels[i].key, gs->labels[i].value);
			if (n < 0) break;
			used += (size_t)n;
		}
		agones_log(a, CROWD_AGONES_LOG_INFO, "gameserver name=%s state=%s labels={%s}",
		           gs->name[0] ? gs->name : "?", gs->state[0] ? gs->state : "?", labels);
		break;
	}
	case CROWD_AGONES_READY:
		a->ready = true;
		a->counters->ready = 1;
		agones_log(a, CROWD_AGONES_LOG_INFO, "ready: the sidecar accepted /ready");
		break;
	case CROWD_AGONES_SHUTDOWN:
		agones_log(a, CROWD_AGONES_LOG_INFO, "shutdown: the sidecar accepted /shutdown");
		finish_shutdown(a, true);
		break;
	case CROWD_AGONES_COUNTER:
	case CROWD_AGONES_LIST:
		if (r->gen > a->synced_gen[call]) a->synced_gen[call] = r->gen;
		if (a->sync_gen[call] > a->synced_gen[call] && !a->draining)
			start_call(a, call); /* changed meanwhile */
		break;
	default:
		break;
	}
}

static int on_body(http_parser *p, const char *at, size_t len) {
	agones_request *r = p->data;
	if (r->call != CROWD_AGONES_GAMESERVER) return 0; /* other replies are "{}": ignore */
	if (len > RESPONSE_BODY_MAX - r->body_len) return -1;
	char *grown = realloc(r->body, r->body_len + len + 1);
	if (grown == NULL) return -1;
	memcpy(grown + r->body_len, at, len);
	r->body = grown;
	r->body_len += len;
	r->body[r->body_len] = '\0';
	return 0;
}

static int on_message_complete(http_parser *p) {
	agones_request *r = p->data;
	r->status = p->status_code;
	r->complete = true;
	return 0;
}

static const http_parser_settings response_settings = {
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

static void complete_from_parser(agones_request *r) {
	crowd_agones *a = r->owner;
	if (r->status >= 200 && r->status < 300) {
		if (r->call == CROWD_AGONES_GAMESERVER &&
		    crowd_agones_parse_gameserver(r->body ? r->body : "", r->body_len, &a->gameserver) != 0) {
			finish_request(r, "unreadable JSON in the reply", false);
			return;
		}
		finish_request(r, NULL, false);
	} else {
		char reason[48];
		snprintf(reason, sizeof reason, "HTTP status %u", r->status);
		finish_request(r, reason, false);
	}
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
	(void)suggested;
	agones_request *r = h->data;
	*buf = uv_buf_init(r->read_buf, sizeof r->read_buf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
	agones_request *r = s->data;
	if (r->finished) return;
	if (nread == 0) return;
	if (nread < 0) {
		if (nread == UV_EOF) {
			/* EOF ends a response without Content-Length; tell the parser. */
			http_parser_execute(&r->parser, &response_settings, NULL, 0);
			if (r->complete) {
				complete_from_parser(r);
				return;
			}
			finish_request(r, "connection closed before a full response", false);
			return;
		}
		finish_request(r, uv_strerror((int)nread), false);
		return;
	}
	size_t used = http_parser_execute(&r->parser, &response_settings, buf->base, (size_t)nread);
	if (HTTP_PARSER_ERRNO(&r->parser) != HPE_OK || used != (size_t)nread) {
		if (r->complete) { /* bytes after a complete response: we already have our answer */
			complete_from_parser(r);
			return;
		}
		char reason[96];
		snprintf(reason, sizeof reason, "bad HTTP response: %s",
		         http_errno_name(HTTP_PARSER_ERRNO(&r->parser)));
		finish_request(r, reason, false);
		return;
	}
	if (r->complete) complete_from_parser(r);
}

static void on_write(uv_write_t *w, int status) {
	agones_request *r = w->data;
	if (status < 0 && !r->finished) finish_request(r, uv_strerror(status), false);
}

static void on_connect(uv_connect_t *c, int status) {
	agones_request *r = c->data;
	if (r->finished) return;
	if (status < 0) {
		finish_request(r, status == UV_ECONNREFUSED ? "connection refused" : uv_strerror(status), false);
		return;
	}
	uv_buf_t buf = uv_buf_init(r->head, (unsigned)r->head_len);
	int rc = uv_write(&r->write, (uv_stream_t *)&r->tcp, &buf, 1, on_write);
	if (rc == 0) rc = uv_read_start((uv_stream_t *)&r->tcp, on_alloc, on_read);
	if (rc < 0) finish_request(r, uv_strerror(rc), false);
}

static void on_request_timeout(uv_timer_t *t) {
	agones_request *r = t->data;
	finish_request(r, "timed out", true);
}

static void start_call(crowd_agones *a, crowd_agones_call call) {
	if (a->closing || a->in_flight[call] != NULL) return;
	const char *body = call_requests[call].body;
	if (body == NULL) body = a->sync_body[call];
	if (body == NULL) return; /* nothing to sync yet */
	size_t body_len = strlen(body);
	agones_request *r = calloc(1, sizeof *r);
	char *head = r != NULL ? malloc(REQUEST_HEAD_MAX + body_len) : NULL;
	if (head == NULL) {
		free(r);
		a->counters->failed[call]++;
		if (call != CROWD_AGONES_HEALTH && call != CROWD_AGONES_SHUTDOWN) schedule_retry(a, call);
		if (call == CROWD_AGONES_SHUTDOWN) finish_shutdown(a, false);
		return;
	}
	r->owner = a;
	r->call = call;
	r->head = head;
	r->gen = a->sync_gen[call];
	r->tcp.data = r;
	r->timeout.data = r;
	r->connect.data = r;
	r->write.data = r;
	r->parser.data = r;
	http_parser_init(&r->parser, HTTP_RESPONSE);
	r->parser.data = r;
	int n = snprintf(r->head, REQUEST_HEAD_MAX,
	                 "%s %s HTTP/1.1\r\nHost: %s:%u\r\nUser-Agent: crowd-server\r\n"
	                 "Accept: application/json\r\nContent-Type: application/json\r\n"
	                 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
	                 call_requests[call].method, call_requests[call].path, a->cfg.host, (unsigned)a->cfg.port,
	                 body_len);
	memcpy(r->head + n, body, body_len);
	r->head_len = (size_t)n + body_len;

	uv_tcp_init(a->loop, &r->tcp);
	uv_timer_init(a->loop, &r->timeout);
	r->open_handles = 2;
	a->open_handles++;
	a->in_flight[call] = r;
	uv_timer_start(&r->timeout, on_request_timeout, a->cfg.request_timeout_ms, 0);

	struct sockaddr_in addr;
	int rc = uv_ip4_addr(a->cfg.host, a->cfg.port, &addr);
	if (rc == 0) rc = uv_tcp_connect(&r->connect, &r->tcp, (const struct sockaddr *)&addr, on_connect);
	if (rc < 0) finish_request(r, rc == UV_ECONNREFUSED ? "connection refused" : uv_strerror(rc), false);
}

static void on_health_timer(uv_timer_t *t);

static void arm_health(crowd_agones *a) {
	uint64_t now = uv_now(a->loop);
	a->health_deadline_ms += a->cfg.health_period_ms;
	if (a->health_deadline_ms <= now) { /* the loop was late: skip ahead, do not burst */
		a->health_deadline_ms = now + a->cfg.health_period_ms;
	}
	uv_timer_start(&a->health_timer, on_health_timer, a->health_deadline_ms - now, 0);
}

static void on_health_timer(uv_timer_t *t) {
	crowd_agones *a = t->data;
	if (a->closing || a->draining) return;
	if (a->in_flight[CROWD_AGONES_HEALTH] != NULL) {
		a->counters->health_skipped++;
	} else if (a->cfg.healthy != NULL && !a->cfg.healthy(a->cfg.healthy_ctx)) {
		a->counters->health_withheld++;
		if (!a->withholding)
			agones_log(a, CROWD_AGONES_LOG_WARN, "health: the world is not advancing; withholding pings");
		a->withholding = true;
	} else {
		if (a->withholding) agones_log(a, CROWD_AGONES_LOG_INFO, "health: the world advances again; pinging");
		a->withholding = false;
		start_call(a, CROWD_AGONES_HEALTH);
	}
	arm_health(a);
}

int crowd_agones_start(crowd_agones **out, uv_loop_t *loop, const crowd_agones_config *cfg,
                       crowd_agones_counters *counters) {
	*out = NULL;
	struct sockaddr_in probe;
	int rc = uv_ip4_addr(cfg->host, cfg->port, &probe);
	if (rc < 0) return rc;
	if (cfg->health_period_ms == 0 || cfg->request_timeout_ms == 0) return UV_EINVAL;
	crowd_agones *a = calloc(1, sizeof *a);
	if (a == NULL) return UV_ENOMEM;
	a->loop = loop;
	a->cfg = *cfg;
	if (a->cfg.retry_min_ms == 0) a->cfg.retry_min_ms = 1;
	if (a->cfg.retry_max_ms < a->cfg.retry_min_ms) a->cfg.retry_max_ms = a->cfg.retry_min_ms;
	a->counters = counters != NULL ? counters : &a->own_counters;

	uv_timer_init(loop, &a->health_timer);
	a->health_timer.data = a;
	a->open_handles++;
	for (int call = 0; call < CROWD_AGONES_CALL_COUNT; call++) {
		uv_timer_init(loop, &a->retry_timer[call]);
		a->retry_timer[call].data = a;
		a->open_handles++;
	}
	agones_log(a, CROWD_AGONES_LOG_INFO, "using the SDK sidecar at http://%s:%u, health every %u ms", a->cfg.host,
	           (unsigned)a->cfg.port, a->cfg.health_period_ms);
	start_call(a, CROWD_AGONES_GAMESERVER);
	/* Health pings start now: Agones counts missed pings from the container's start. */
	a->health_deadline_ms = uv_now(loop);
	start_call(a, CROWD_AGONES_HEALTH);
	arm_health(a);
	*out = a;
	return 0;
}

void crowd_agones_ready(crowd_agones *a) {
	if (a == NULL || a->closing || a->draining || a->want_ready) return;
	a->want_ready = true;
	start_call(a, CROWD_AGONES_READY);
}

void crowd_agones_shutdown(crowd_agones *a, void (*done)(void *arg, bool ok), void *arg) {
	if (a == NULL || a->closing || a->draining) {
		if (done != NULL) done(arg, false);
		return;
	}
	a->draining = true;
	uv_timer_stop(&a->health_timer);
	for (int call = 0; call < CROWD_AGONES_CALL_COUNT; call++) uv_timer_stop(&a->retry_timer[call]);
	a->shutdown_done = done;
	a->shutdown_arg = arg;
	agones_log(a, CROWD_AGONES_LOG_INFO, "draining: POST /shutdown");
	start_call(a, CROWD_AGONES_SHUTDOWN);
}

static void close_now(crowd_agones *a) {
	a->close_pending = false;
	a->closing = true;
	finish_shutdown(a, false); /* a caller still waiting hears "not confirmed" */
	for (int call = 0; call < CROWD_AGONES_CALL_COUNT; call++) {
		if (a->in_flight[call] != NULL) finish_request(a->in_flight[call], "aborted at close", false);
		uv_timer_stop(&a->retry_timer[call]);
		uv_close((uv_handle_t *)&a->retry_timer[call], on_client_handle_closed);
	}
	uv_timer_stop(&a->health_timer);
	uv_close((uv_handle_t *)&a->health_timer, on_client_handle_closed);
}

void crowd_agones_close(crowd_agones *a, void (*closed)(void *arg), void *arg) {
	if (a == NULL) {
		if (closed != NULL) closed(arg);
		return;
	}
	if (a->closing || a->close_pending) return;
	a->closed = closed;
	a->closed_arg = arg;
	if (a->in_flight[CROWD_AGONES_SHUTDOWN] != NULL) {
		/* Let the sidecar hear /shutdown (bounded by the request timeout); stop the rest. */
		a->close_pending = true;
		uv_timer_stop(&a->health_timer);
		for (int call = 0; call < CROWD_AGONES_CALL_COUNT; call++) uv_timer_stop(&a->retry_timer[call]);
		return;
	}
	close_now(a);
}

const crowd_agones_gameserver *crowd_agones_gameserver_info(const crowd_agones *a) {
	return a != NULL && a->have_gameserver ? &a->gameserver : NULL;
}

bool crowd_agones_is_ready(const crowd_agones *a) {
	return a != NULL && a->ready;
}

/* Appends a JSON string literal; returns the bytes it needed. */
static size_t json_quote(char *buf, size_t cap, size_t at, const char *s) {
	size_t need = 0;
#define PUT(ch)                                                                                                        \
	do {                                                                                                           \
		if (at + need + 1 < cap) buf[at + need] = (ch);                                                        \
		need++;                                                                                                \
	} while (0)
	PUT('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\') {
			PUT('\\');
			PUT((char)*p);
		} else if (*p < 0x20) {
			static const char hex[] = "0123456789abcdef";
			PUT('\\');
			PUT('u');
			PUT('0');
			PUT('0');
			PUT(hex[*p >> 4]);
			PUT(hex[*p & 15]);
		} else {
			PUT((char)*p);
		}
	}
	PUT('"');
#undef PUT
	if (cap > 0) buf[at + need < cap ? at + need : cap - 1] = '\0';
	return need;
}

static size_t json_raw(char *buf, size_t cap, size_t at, const char *s) {
	size_t n = strlen(s);
	if (at < cap) {
		size_t room = cap - at - 1;
		memcpy(buf + at, s, n < room ? n : room);
		buf[at + (n < room ? n : room)] = '\0';
	}
	return n;
}

size_t crowd_agones_healthz_json(const crowd_agones *a, char *buf, size_t cap) {
	size_t len = 0;
	if (cap > 0) buf[0] = '\0';
	len += json_raw(buf, cap, len, crowd_agones_is_ready(a) ? "{\"ready\":true" : "{\"ready\":false");
	const crowd_agones_gameserver *gs = crowd_agones_gameserver_info(a);
	if (gs != NULL) {
		len += json_raw(buf, cap, len, ",\"name\":");
		len += json_quote(buf, cap, len, gs->name);
		len += json_raw(buf, cap, len, ",\"labels\":{");
		for (size_t i = 0; i < gs->label_count; i++) {
			if (i > 0) len += json_raw(buf, cap, len, ",");
			len += json_quote(buf, cap, len, gs->labels[i].key);
			len += json_raw(buf, cap, len, ":");
			len += json_quote(buf, cap, len, gs->labels[i].value);
		}
		len += json_raw(buf, cap, len, "}");
	}
	len += json_raw(buf, cap, len, "}");
	return len;
}

/* Replaces the synced body of a call and sends it unless a request of that call is in
 * flight (its completion sends the newer one) or waiting out a back-off. */
static void sync_replace(crowd_agones *a, crowd_agones_call call, char *body) {
	free(a->sync_body[call]);
	a->sync_body[call] = body;
	a->sync_gen[call]++;
	if (a->closing || a->draining || a->in_flight[call] != NULL) return;
	if (uv_is_active((uv_handle_t *)&a->retry_timer[call])) return;
	start_call(a, call);
}

int crowd_agones_set_rooms(crowd_agones *a, uint32_t capacity, const char *const *names, uint32_t count) {
	if (a == NULL) return 0;
	if (capacity < count) capacity = count; /* the sidecar refuses a count above capacity */
	uint32_t list_capacity = capacity < CROWD_AGONES_LIST_MAX ? capacity : CROWD_AGONES_LIST_MAX;
	uint32_t listed = count < list_capacity ? count : list_capacity;
	char counter[96];
	snprintf(counter, sizeof counter, "{\"count\":\"%" PRIu32 "\",\"capacity\":\"%" PRIu32 "\"}", count, capacity);
	char head[64];
	snprintf(head, sizeof head, "{\"capacity\":\"%" PRIu32 "\",\"values\":[", list_capacity);
	size_t need = strlen(head) + 3; /* "]}" and the NUL */
	for (uint32_t i = 0; i < listed; i++) need += json_quote(NULL, 0, 0, names[i]) + 1;
	char *list = malloc(need);
	size_t counter_len = strlen(counter) + 1;
	char *counter_body = malloc(counter_len);
	if (list == NULL || counter_body == NULL) {
		free(list);
		free(counter_body);
		return UV_ENOMEM;
	}
	memcpy(counter_body, counter, counter_len);
	size_t len = json_raw(list, need, 0, head);
	for (uint32_t i = 0; i < listed; i++) {
		if (i > 0) len += json_raw(list, need, len, ",");
		len += json_quote(list, need, len, names[i]);
	}
	json_raw(list, need, len, "]}");
	sync_replace(a, CROWD_AGONES_COUNTER, counter_body);
	sync_replace(a, CROWD_AGONES_LIST, list);
	return 0;
}

bool crowd_agones_rooms_synced(const crowd_agones *a) {
	return a != NULL && a->synced_gen[CROWD_AGONES_COUNTER] == a->sync_gen[CROWD_AGONES_COUNTER] &&
	       a->synced_gen[CROWD_AGONES_LIST] == a->sync_gen[CROWD_AGONES_LIST];
}
