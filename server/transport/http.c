/* http.c — HTTP/1.1 listener on the server's libuv loop (http-parser), one
 * request per connection: static viewer files, /crowd.proto, /healthz, /metrics,
 * and the /ws upgrade that turns the connection into a WebSocket (ws.c). */
#include "http.h"

#include <errno.h>
#include <fcntl.h>
#include <http_parser.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outq.h"
#include "ws.h"

#define HTTP_URL_MAX 2048
#define HTTP_HEADER_VALUE_MAX 256
#define HTTP_FIELD_MAX 32
#define HTTP_LINGER_MS 1000 /* after a response: drain the client's leftovers, then close */
#define HTTP_FILE_MAX (16u << 20)
#define HTTP_DRAIN_POLL_MS 20 /* a closing WebSocket looks this often whether the kernel has sent everything */

const int crowd_http_statuses[CROWD_HTTP_NSTATUS] = {101, 200, 400, 404, 405, 408, 413, 426, 431, 500, 503};

enum captured_header { H_UPGRADE, H_CONNECTION, H_WS_KEY, H_WS_VERSION, H_WS_PROTOCOL, H_COUNT };
static const char *const captured_names[H_COUNT] = {
    "upgrade", "connection", "sec-websocket-key", "sec-websocket-version", "sec-websocket-protocol",
};

enum conn_mode { MODE_HTTP, MODE_WS, MODE_LINGER, MODE_CLOSED };

struct crowd_http_ws {
	uv_tcp_t tcp;
	uv_timer_t timer; /* header timeout, then linger, then deferred close */
	crowd_http *server;
	struct crowd_http_ws *prev, *next;
	enum conn_mode mode;
	int handles_open;
	http_parser parser;
	size_t header_bytes;
	int status; /* response decided by a parser callback (0: none yet) */
	bool message_complete;
	char url[HTTP_URL_MAX + 1];
	size_t url_len;
	char field[HTTP_FIELD_MAX + 1];
	size_t field_len;
	bool field_overflow;
	bool last_was_value;
	int current; /* captured header being read, or -1 */
	char value[H_COUNT][HTTP_HEADER_VALUE_MAX + 1];
	size_t value_len[H_COUNT];
	bool value_overflow[H_COUNT];
	crowd_ws *ws;
	void *session;
	bool session_told; /* ws_closed was called */
	bool reason_set;
	crowd_http_close_reason reason;
	bool write_failed;
	outq out; /* what is written and not yet in the kernel */
	char peer[64];
	char ip[48];                    /* peer without the port: per-peer limits */
	bool reserved;                  /* over a limit, in a reserved slot: only /healthz and /metrics are served */
	bool draining;                  /* WebSocket closing: the drain timer runs */
	uint64_t drain_deadline_ms;     /* uv_now() past which a closing WebSocket is reset (0: not set) */
	crowd_http_refused_reason over; /* which limit, when reserved */
};

struct crowd_http {
	uv_loop_t *loop;
	uv_tcp_t listener;
	crowd_http_config cfg;
	char host[64];
	char web_root[1024];
	char proto_path[1024];
	crowd_http_hooks hooks;
	crowd_http_ws *conns;
	uint32_t conn_count;     /* open connections (for the limit) */
	uint32_t reserved_count; /* of them, in reserved slots */
	uint32_t conn_allocated; /* connections whose handles are not closed yet */
	bool stopping;
	bool listener_closed;
	void (*done)(void *);
	void *done_arg;
	int port;
	crowd_http_stats stats;
};

static void conn_close(crowd_http_ws *c);
static void conn_unreserve(crowd_http_ws *c);
static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static void conn_close_soon(crowd_http_ws *c);
static void ws_close_when_sent(crowd_http_ws *c);
static void conn_set_reason(crowd_http_ws *c, crowd_http_close_reason reason);
static void http_maybe_done(crowd_http *h);

void crowd_http_default_config(crowd_http_config *cfg) {
	memset(cfg, 0, sizeof *cfg);
	cfg->host = "127.0.0.1";
	cfg->port = 8080;
	cfg->max_header_bytes = 8192;
	cfg->max_body_bytes = 1024;
	cfg->header_timeout_ms = 10000;
	cfg->max_connections = 1024;
	cfg->ws_max_message = 1u << 20;
	cfg->flush_timeout_ms = 10000;
	cfg->max_pending_per_peer = 64;
	cfg->header_timeout_busy_ms = 1000;
	cfg->reserved_slots = 16;
}

/* ------------------------------------------------------------------ writing */

static void count_status(crowd_http *h, int status) {
	for (int i = 0; i < CROWD_HTTP_NSTATUS; i++)
		if (crowd_http_statuses[i] == status) h->stats.responses[i]++;
}

static void on_written(void *owner, int status, size_t len) {
	crowd_http_ws *c = owner;
	(void)len;
	if (status < 0) {
		c->write_failed = true;
		conn_set_reason(c, CROWD_HTTP_CLOSE_WRITE_ERROR);
		conn_close(c);
		return;
	}
	if (c->mode == MODE_WS && c->ws && crowd_ws_finished(c->ws) && outq_pending(&c->out) == 0)
		ws_close_when_sent(c);
}

/* Queue bytes on the socket; on failure the connection is closed soon. */
static bool conn_write(crowd_http_ws *c, const void *data, size_t len) {
	if (c->mode == MODE_CLOSED || c->write_failed) return false;
	if (outq_write(&c->out, data, len) != 0) {
		c->write_failed = true;
		conn_set_reason(c, CROWD_HTTP_CLOSE_WRITE_ERROR);
		conn_close_soon(c);
		return false;
	}
	c->server->stats.bytes_out += len;
	return true;
}

static void on_linger_timeout(uv_timer_t *t) {
	conn_close(t->data);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
	(void)status;
	free(req);
}

/* The response is queued: send FIN after it and read (discarding) for a moment,
 * so the client sees the response instead of a reset. */
static void conn_linger(crowd_http_ws *c) {
	c->mode = MODE_LINGER;
	/* Keep reading: closing with unread bytes would send a reset that can
	 * destroy the response before the client reads it. */
	int r = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	if (r != 0 && r != UV_EALREADY) {
		conn_close(c);
		return;
	}
	uv_shutdown_t *req = malloc(sizeof *req);
	if (!req || outq_submit_all(&c->out) != 0 || uv_shutdown(req, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
		free(req);
		conn_close(c);
		return;
	}
	uv_timer_start(&c->timer, on_linger_timeout, HTTP_LINGER_MS, 0);
}

static const char *reason_phrase(int status) {
	switch (status) {
	case 101:
		return "Switching Protocols";
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 413:
		return "Content Too Large";
	case 426:
		return "Upgrade Required";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 503:
		return "Service Unavailable";
	default:
		return "Error";
	}
}

static void respond(crowd_http_ws *c, int status, const char *type, const char *extra_headers, const void *body,
                    size_t body_len, bool head_only) {
	char head[512];
	int n = snprintf(head, sizeof head,
	                 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	                 "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n%sConnection: close\r\n\r\n",
	                 status, reason_phrase(status), type, body_len, extra_headers ? extra_headers : "");
	count_status(c->server, status);
	uv_timer_stop(&c->timer);
	conn_unreserve(c);     /* answered: its slot is free for the next probe */
	c->mode = MODE_LINGER; /* anything more the client sends is read and dropped */
	if (n < 0 || (size_t)n >= sizeof head || !conn_write(c, head, (size_t)n)) {
		conn_close_soon(c);
		return;
	}
	if (!head_only && body_len && !conn_write(c, body, body_len)) return;
	conn_linger(c);
}

/* An error response; `why` (may be NULL) is added to the body for people and tools. */
static void respond_error_why(crowd_http_ws *c, int status, const char *why) {
	char body[192];
	int n =
	    snprintf(body, sizeof body, "%d %s%s%s\n", status, reason_phrase(status), why ? ": " : "", why ? why : "");
	if (n < 0 || (size_t)n >= sizeof body) n = (int)strlen(body);
	const char *extra = status == 405   ? "Allow: GET, HEAD\r\n"
	                    : status == 426 ? "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
	                                    : NULL;
	respond(c, status, "text/plain; charset=utf-8", extra, body, (size_t)n, false);
}

static void respond_error(crowd_http_ws *c, int status) {
	respond_error_why(c, status, NULL);
}

/* ------------------------------------------------------------------ routes */

static const char *content_type(const char *path) {
	const char *dot = strrchr(path, '.');
	if (!dot) return "application/octet-stream";
	static const char *const types[][2] = {
	    {".html", "text/html; charset=utf-8"},
	    {".js", "text/javascript; charset=utf-8"},
	    {".css", "text/css; charset=utf-8"},
	    {".proto", "text/plain; charset=utf-8"},
	    {".json", "application/json"},
	    {".map", "application/json"},
	    {".png", "image/png"},
	    {".svg", "image/svg+xml"},
	    {".ico", "image/x-icon"},
	    {".txt", "text/plain; charset=utf-8"},
	};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (strcmp(dot, types[i][0]) == 0) return types[i][1];
	return "application/octet-stream";
}

/* A static path is safe if it has only [A-Za-z0-9._-/], no "..", no hidden files. */
static bool static_path_safe(const char *path) {
	if (path[0] != '/' || strstr(path, "..") || strstr(path, "/.") || strstr(path, "//")) return false;
	for (const char *p = path; *p; p++) {
		char ch = *p;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
		      ch == '_' || ch == '-' || ch == '/'))
			return false;
	}
	return true;
}

/* Read a whole regular file; NULL if absent, not regular or too big. */
static char *read_file(const char *path, size_t *len) {
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return NULL;
	struct stat st;
	char *data = NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= HTTP_FILE_MAX) {
		data = malloc((size_t)st.st_size + 1);
		size_t got = 0;
		while (data && got < (size_t)st.st_size) {
			ssize_t r = read(fd, data + got, (size_t)st.st_size - got);
			if (r <= 0) break;
			got += (size_t)r;
		}
		if (data && got == (size_t)st.st_size) {
			*len = got;
		} else {
			free(data);
			data = NULL;
		}
	}
	close(fd);
	return data;
}

static void serve_file(crowd_http_ws *c, const char *file, bool head_only) {
	size_t len = 0;
	char *data = file ? read_file(file, &len) : NULL;
	if (!data) {
		respond_error(c, 404);
		return;
	}
	respond(c, 200, content_type(file), NULL, data, len, head_only);
	free(data);
}

static void serve_health(crowd_http_ws *c, bool head_only) {
	crowd_http_health hh = {0};
	if (c->server->hooks.health) c->server->hooks.health(c->server->hooks.user, &hh);
	const char *extra = hh.extra_members ? hh.extra_members : "";
	size_t cap = 192 + strlen(extra);
	char *body = malloc(cap);
	if (!body) {
		respond_error(c, 500);
		return;
	}
	int n =
	    snprintf(body, cap,
	             "{\"status\":\"%s\",\"tick\":%" PRIu64 ",\"agents\":%" PRIu64 ",\"connections\":%" PRIu64 "%s}\n",
	             hh.shutting_down ? "shutting_down" : "ok", hh.tick, hh.agents, hh.connections, extra);
	respond(c, hh.shutting_down ? 503 : 200, "application/json", NULL, body, (size_t)n, head_only);
	free(body);
}

static void serve_metrics(crowd_http_ws *c, bool head_only) {
	crowd_http *h = c->server;
	if (!h->hooks.metrics) {
		respond_error(c, 404);
		return;
	}
	size_t len = 0;
	char *text = h->hooks.metrics(h->hooks.user, &len);
	if (!text) {
		respond_error(c, 500);
		return;
	}
	respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", NULL, text, len, head_only);
	free(text);
}

static bool header_has_token(const char *value, size_t len, const char *token) {
	return crowd_ws_offers_protocol(value, len, token); /* same comma-separated token rule */
}

static bool ws_write(void *user, const uint8_t *data, size_t len) {
	return conn_write(user, data, len);
}

static void ws_message(void *user, const uint8_t *data, size_t len) {
	crowd_http_ws *c = user;
	if (c->session && !c->session_told && c->server->hooks.ws_message)
		c->server->hooks.ws_message(c->session, data, len);
}

static void serve_upgrade(crowd_http_ws *c, const char *leftover, size_t leftover_len) {
	crowd_http *h = c->server;
	if (!c->parser.upgrade || c->value_overflow[H_UPGRADE] || strcasecmp(c->value[H_UPGRADE], "websocket") != 0 ||
	    !header_has_token(c->value[H_CONNECTION], c->value_len[H_CONNECTION], "upgrade")) {
		respond_error(c, 426);
		return;
	}
	if (strcmp(c->value[H_WS_VERSION], "13") != 0) {
		respond_error(c, 426);
		return;
	}
	if (!crowd_ws_key_valid(c->value[H_WS_KEY], c->value_len[H_WS_KEY])) {
		respond_error(c, 400);
		return;
	}
	/* The subprotocol is required: a client that does not name crowd.v1 does
	 * not speak it (and a future crowd.v2 can be told apart at the handshake). */
	if (c->value_overflow[H_WS_PROTOCOL] ||
	    !crowd_ws_offers_protocol(c->value[H_WS_PROTOCOL], c->value_len[H_WS_PROTOCOL], CROWD_WS_SUBPROTOCOL)) {
		h->stats.refused[CROWD_HTTP_REFUSED_SUBPROTOCOL]++;
		respond_error_why(c, 400, "Sec-WebSocket-Protocol must offer " CROWD_WS_SUBPROTOCOL);
		return;
	}
	char accept[CROWD_WS_ACCEPT_LEN + 1];
	crowd_ws_callbacks cb = {.user = c, .write = ws_write, .message = ws_message};
	if (!crowd_ws_accept_key(c->value[H_WS_KEY], c->value_len[H_WS_KEY], accept) ||
	    !(c->ws = crowd_ws_new(&cb, h->cfg.ws_max_message))) {
		respond_error(c, 500);
		return;
	}
	char head[320];
	int n = snprintf(head, sizeof head,
	                 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	                 "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: " CROWD_WS_SUBPROTOCOL "\r\n\r\n",
	                 accept);
	uv_timer_stop(&c->timer);
	count_status(h, 101);
	c->mode = MODE_WS;
	if (h->cfg.ws_unsent_limit) outq_set_unsent_limit(&c->out, h->cfg.ws_unsent_limit);
	if (!conn_write(c, head, (size_t)n)) return;
	c->session = h->hooks.ws_open ? h->hooks.ws_open(h->hooks.user, c, c->peer) : NULL;
	if (!c->session) {
		crowd_ws_close(c->ws, CROWD_WS_CLOSE_TRY_AGAIN_LATER, "server full");
		return;
	}
	if (leftover_len && !crowd_ws_feed(c->ws, (const uint8_t *)leftover, leftover_len)) {
		conn_set_reason(c, CROWD_HTTP_CLOSE_PROTOCOL);
		conn_close_soon(c);
	} else if (crowd_ws_finished(c->ws) && outq_pending(&c->out) == 0)
		conn_close_soon(c);
}

static void route(crowd_http_ws *c, const char *leftover, size_t leftover_len) {
	crowd_http *h = c->server;
	bool head_only = c->parser.method == HTTP_HEAD;
	char path[HTTP_URL_MAX + 1];
	size_t plen = strcspn(c->url, "?#");
	memcpy(path, c->url, plen);
	path[plen] = '\0';
	bool probe = strcmp(path, "/healthz") == 0 || strcmp(path, "/metrics") == 0;
	if (c->reserved && !probe) {
		h->stats.refused[c->over]++;
		respond_error_why(c, 503,
		                  c->over == CROWD_HTTP_REFUSED_PER_PEER
		                      ? "too many connections from this address; only /healthz and /metrics are served"
		                      : "connection limit reached; only /healthz and /metrics are served");
		return;
	}
	if (strcmp(path, "/ws") == 0) {
		serve_upgrade(c, leftover, leftover_len);
	} else if (strcmp(path, "/healthz") == 0) {
		serve_health(c, head_only);
	} else if (strcmp(path, "/metrics") == 0) {
		serve_metrics(c, head_only);
	} else if (strcmp(path, "/crowd.proto") == 0) {
		serve_file(c, h->proto_path[0] ? h->proto_path : NULL, head_only);
	} else if (h->web_root[0] && static_path_safe(path)) {
		char file[sizeof h->web_root + sizeof path + 16];
		snprintf(file, sizeof file, "%s%s%s", h->web_root, path, strcmp(path, "/") == 0 ? "index.html" : "");
		serve_file(c, file, head_only);
	} else {
		respond_error(c, 404);
	}
}

/* ------------------------------------------------------------------ parsing */

static crowd_http_ws *conn_of(http_parser *p) {
	return p->data;
}

/* Counts request-line and header bytes; past the limit the request is refused with 431.
 * http-parser hands over names and values only, so each header line's ": " and CRLF
 * are added when its value starts (thousands of tiny headers count in full). */
#define HTTP_HEADER_LINE_OVERHEAD 4
static int count_header_bytes(crowd_http_ws *c, size_t len) {
	c->header_bytes += len;
	if (c->header_bytes > c->server->cfg.max_header_bytes) {
		c->status = 431;
		return -1;
	}
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t len) {
	crowd_http_ws *c = conn_of(p);
	if (count_header_bytes(c, len)) return -1;
	if (c->url_len + len > HTTP_URL_MAX) {
		c->status = 431;
		return -1;
	}
	memcpy(c->url + c->url_len, at, len);
	c->url_len += len;
	c->url[c->url_len] = '\0';
	return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len) {
	crowd_http_ws *c = conn_of(p);
	if (count_header_bytes(c, len)) return -1;
	if (c->last_was_value) {
		c->field_len = 0;
		c->field_overflow = false;
		c->last_was_value = false;
	}
	if (c->field_len + len > HTTP_FIELD_MAX) {
		c->field_overflow = true;
		return 0;
	}
	memcpy(c->field + c->field_len, at, len);
	c->field_len += len;
	c->field[c->field_len] = '\0';
	return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len) {
	crowd_http_ws *c = conn_of(p);
	if (count_header_bytes(c, len + (c->last_was_value ? 0 : HTTP_HEADER_LINE_OVERHEAD))) return -1;
	if (!c->last_was_value) {
		c->last_was_value = true;
		c->current = -1;
		for (int i = 0; i < H_COUNT && !c->field_overflow; i++)
			if (strcasecmp(c->field, captured_names[i]) == 0) c->current = i;
		if (c->current >= 0 && c->value_len[c->current]) {
			/* A repeated header: join as a list, as RFC 9110 §5.3 allows. */
			if (c->value_len[c->current] + 2 > HTTP_HEADER_VALUE_MAX)
				c->value_overflow[c->current] = true;
			else {
				memcpy(c->value[c->current] + c->value_len[c->current], ", ", 2);
				c->value_len[c->current] += 2;
			}
		}
	}
	int i = c->current;
	if (i < 0) return 0;
	if (c->value_len[i] + len > HTTP_HEADER_VALUE_MAX) {
		c->value_overflow[i] = true;
		return 0;
	}
	memcpy(c->value[i] + c->value_len[i], at, len);
	c->value_len[i] += len;
	c->value[i][c->value_len[i]] = '\0';
	return 0;
}

static int on_headers_complete(http_parser *p) {
	crowd_http_ws *c = conn_of(p);
	if (p->method != HTTP_GET && p->method != HTTP_HEAD) {
		c->status = 405;
		return -1;
	}
	/* A GET has no use for a body; refuse big ones before reading them. */
	if ((p->flags & F_CHUNKED) ||
	    (p->content_length != ULLONG_MAX && p->content_length > c->server->cfg.max_body_bytes)) {
		c->status = 413;
		return -1;
	}
	return 0;
}

static int on_message_complete(http_parser *p) {
	crowd_http_ws *c = conn_of(p);
	/* The request timer runs until the whole request is in: a small body that never
	 * arrives must not hold the connection open either. */
	uv_timer_stop(&c->timer);
	c->message_complete = true;
	http_parser_pause(p, 1); /* one request per connection: leave the rest unread */
	return 0;
}

static const http_parser_settings parser_settings = {
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

static void handle_http_bytes(crowd_http_ws *c, const char *data, size_t len) {
	size_t n = http_parser_execute(&c->parser, &parser_settings, data, len);
	if (c->status) {
		respond_error(c, c->status);
		return;
	}
	enum http_errno err = HTTP_PARSER_ERRNO(&c->parser);
	if (c->message_complete) {
		size_t used = n < len ? n : len;
		route(c, data + used, len - used);
		return;
	}
	if (err == HPE_HEADER_OVERFLOW) {
		respond_error(c, 431);
		return;
	}
	if (err != HPE_OK) {
		respond_error(c, 400);
		return;
	}
}

/* ------------------------------------------------------------------ connections */

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
	(void)handle;
	buf->base = malloc(suggested);
	buf->len = buf->base ? suggested : 0;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
	crowd_http_ws *c = stream->data;
	if (nread > 0) c->server->stats.bytes_in += (uint64_t)nread;
	if (nread < 0) {
		/* EOF or error: nothing more to answer. A close frame already counted wins. */
		if (!(c->ws && (crowd_ws_close_code_received(c->ws) || crowd_ws_close_code_sent(c->ws))))
			conn_set_reason(c, nread == UV_EOF ? CROWD_HTTP_CLOSE_PEER : CROWD_HTTP_CLOSE_READ_ERROR);
		conn_close(c);
	} else if (nread > 0) {
		switch (c->mode) {
		case MODE_HTTP:
			handle_http_bytes(c, buf->base, (size_t)nread);
			break;
		case MODE_WS:
			if (!crowd_ws_feed(c->ws, (const uint8_t *)buf->base, (size_t)nread)) {
				conn_set_reason(c, c->write_failed ? CROWD_HTTP_CLOSE_WRITE_ERROR
				                                   : CROWD_HTTP_CLOSE_PROTOCOL);
				conn_close(c);
			} else if (crowd_ws_finished(c->ws) && outq_pending(&c->out) == 0)
				ws_close_when_sent(c);
			break;
		default: /* lingering: discard */
			break;
		}
	}
	free(buf->base);
}

static void on_header_timeout(uv_timer_t *t) {
	crowd_http_ws *c = t->data;
	if (c->mode == MODE_HTTP) respond_error(c, 408);
}

static void on_handle_closed(uv_handle_t *handle) {
	crowd_http_ws *c = handle->data;
	if (--c->handles_open > 0) return;
	crowd_http *h = c->server;
	if (c->session && !c->session_told) {
		c->session_told = true;
		if (h->hooks.ws_closed) h->hooks.ws_closed(c->session, c->reason);
	}
	crowd_ws_free(c->ws);
	outq_free(&c->out);
	free(c);
	h->conn_allocated--;
	http_maybe_done(h);
}

static void count_ws_close(crowd_http_ws *c) {
	crowd_http_stats *s = &c->server->stats;
	s->ws_closed++;
	switch (crowd_ws_close_code_sent(c->ws)) {
	case 0:
		break;
	case CROWD_WS_CLOSE_PROTOCOL_ERROR:
		s->ws_close_sent[1]++;
		break;
	case CROWD_WS_CLOSE_UNSUPPORTED_DATA:
		s->ws_close_sent[2]++;
		break;
	case CROWD_WS_CLOSE_MESSAGE_TOO_BIG:
		s->ws_close_sent[3]++;
		break;
	default:
		s->ws_close_sent[0]++;
		break;
	}
}

static void conn_set_reason(crowd_http_ws *c, crowd_http_close_reason reason) {
	if (!c->reason_set && c->mode != MODE_CLOSED) {
		c->reason_set = true;
		c->reason = reason;
	}
}

static void conn_close(crowd_http_ws *c) {
	if (c->mode == MODE_CLOSED) return;
	crowd_http *h = c->server;
	if (c->ws) count_ws_close(c);
	c->mode = MODE_CLOSED;
	if (!c->reason_set && c->ws) {
		uint16_t sent = crowd_ws_close_code_sent(c->ws);
		c->reason =
		    crowd_ws_close_code_received(c->ws)      ? CROWD_HTTP_CLOSE_PEER
		    : sent == CROWD_WS_CLOSE_MESSAGE_TOO_BIG ? CROWD_HTTP_CLOSE_TOO_BIG
		    : sent == CROWD_WS_CLOSE_PROTOCOL_ERROR || sent == CROWD_WS_CLOSE_UNSUPPORTED_DATA || sent == 1007
		        ? CROWD_HTTP_CLOSE_PROTOCOL
		    : sent ? CROWD_HTTP_CLOSE_LOCAL
		           : CROWD_HTTP_CLOSE_PEER;
	}
	conn_unreserve(c);
	if (c->prev)
		c->prev->next = c->next;
	else
		h->conns = c->next;
	if (c->next) c->next->prev = c->prev;
	h->conn_count--;
	uv_close((uv_handle_t *)&c->timer, on_handle_closed);
	uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
}

static void on_close_soon(uv_timer_t *t) {
	conn_close(t->data);
}

/* A closing WebSocket is done once its queue and the kernel have sent
 * everything (the close frame last). Past its deadline it is reset, which
 * frees what the kernel still holds instead of leaving an orphaned socket. */
static void on_ws_drain(uv_timer_t *t) {
	crowd_http_ws *c = t->data;
	if (c->mode == MODE_CLOSED) return;
	bool sent = c->ws && crowd_ws_finished(c->ws) && outq_pending(&c->out) == 0 && outq_kernel_unsent(&c->out) == 0;
	if (sent || c->write_failed) {
		conn_close(c);
	} else if (uv_now(c->server->loop) >= c->drain_deadline_ms) {
		uv_os_fd_t fd;
		struct linger reset = {1, 0};
		if (uv_fileno((const uv_handle_t *)&c->tcp, &fd) == 0)
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
		conn_close(c);
	}
}

static void ws_close_when_sent(crowd_http_ws *c) {
	if (outq_kernel_unsent(&c->out) == 0) {
		conn_close(c);
		return;
	}
	if (c->draining) return; /* the drain timer is on it */
	c->draining = true;
	if (!c->drain_deadline_ms) c->drain_deadline_ms = uv_now(c->server->loop) + c->server->cfg.flush_timeout_ms;
	uv_timer_start(&c->timer, on_ws_drain, HTTP_DRAIN_POLL_MS, HTTP_DRAIN_POLL_MS);
}

/* Close from the loop rather than inside a caller that may still use the connection. */
static void conn_close_soon(crowd_http_ws *c) {
	if (c->mode == MODE_CLOSED) return;
	uv_read_stop((uv_stream_t *)&c->tcp);
	uv_timer_start(&c->timer, on_close_soon, 0, 0);
}

/* Bytes received and not read yet: a request on its way to the parser. */
static bool conn_has_input(crowd_http_ws *c) {
	uv_os_fd_t fd;
	int n = 0;
	return uv_fileno((const uv_handle_t *)&c->tcp, &fd) == 0 && ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

/* Give c a reserved slot. When they are all taken, the oldest reserved
 * connection that is still waiting for its request and has nothing unread
 * makes room: a probe whose request has arrived keeps its slot, however many
 * idle connections follow it in the same accept burst. */
static bool conn_reserve(crowd_http_ws *c, crowd_http_refused_reason over) {
	crowd_http *h = c->server;
	if (h->cfg.reserved_slots == 0) return false;
	if (h->reserved_count >= h->cfg.reserved_slots) {
		crowd_http_ws *victim = NULL;
		for (crowd_http_ws *o = h->conns; o; o = o->next)
			if (o != c && o->reserved && o->mode == MODE_HTTP && !o->message_complete && !conn_has_input(o))
				victim = o; /* the list is newest first: the last one found is the oldest */
		if (!victim) return false;
		h->stats.evicted++;
		conn_set_reason(victim, CROWD_HTTP_CLOSE_LOCAL);
		conn_close(victim);
	}
	c->reserved = true;
	c->over = over;
	h->reserved_count++;
	return true;
}

static void conn_unreserve(crowd_http_ws *c) {
	if (!c->reserved) return;
	c->reserved = false;
	c->server->reserved_count--;
}

static void on_connection(uv_stream_t *listener, int status) {
	crowd_http *h = listener->data;
	if (status < 0) return;
	crowd_http_ws *c = calloc(1, sizeof *c);
	if (!c) return;
	c->server = h;
	c->current = -1;
	h->conn_allocated++;
	uv_tcp_init(h->loop, &c->tcp);
	uv_timer_init(h->loop, &c->timer);
	c->tcp.data = c;
	c->timer.data = c;
	c->handles_open = 2;
	outq_init(&c->out, (uv_stream_t *)&c->tcp, on_written, c);
	c->next = h->conns;
	if (h->conns) h->conns->prev = c;
	h->conns = c;
	h->conn_count++;
	if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
		conn_close(c);
		return;
	}
	struct sockaddr_storage ss;
	int sl = sizeof ss;
	char addr[48] = "?";
	if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET6)
			uv_ip6_name((struct sockaddr_in6 *)&ss, addr, sizeof addr);
		else
			uv_ip4_name((struct sockaddr_in *)&ss, addr, sizeof addr);
		snprintf(c->peer, sizeof c->peer, "%s:%d", addr,
		         ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
		                                        : ((struct sockaddr_in *)&ss)->sin_port));
	}
	snprintf(c->ip, sizeof c->ip, "%s", addr);
	uv_tcp_nodelay(&c->tcp, 1);
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
	/* Idle sockets (request not complete) are what exhausts a server: one
	 * address may hold only max_pending_per_peer of them, and at
	 * max_connections the oldest idle one goes. A connection over either limit
	 * is not refused outright: it takes one of the reserved slots, where only
	 * /healthz and /metrics are served (anything else: 503), so no flood of
	 * idle connections, from one address or many, can fail a health probe. */
	uint32_t pending_here = 0, general = 1;
	crowd_http_ws *oldest = NULL;
	for (crowd_http_ws *o = h->conns; o; o = o->next) {
		if (o == c || o->reserved) continue;
		general++;
		if (o->mode != MODE_HTTP || o->message_complete) continue;
		if (strcmp(o->ip, c->ip) == 0) pending_here++;
		oldest = o; /* the list is newest first */
	}
	int over = -1;
	if (pending_here >= h->cfg.max_pending_per_peer) {
		over = CROWD_HTTP_REFUSED_PER_PEER;
	} else {
		if (general > h->cfg.max_connections && oldest) {
			h->stats.evicted++;
			conn_set_reason(oldest, CROWD_HTTP_CLOSE_LOCAL);
			conn_close(oldest);
			general--;
		}
		if (general > h->cfg.max_connections) over = CROWD_HTTP_REFUSED_FULL;
	}
	if (over >= 0) {
		h->stats.over_limit[over]++;
		if (!conn_reserve(c, (crowd_http_refused_reason)over)) {
			h->stats.refused[over]++;
			respond_error_why(c, 503, "connection limit reached");
			return;
		}
	}
	bool busy = c->reserved || h->conn_count * 2 > h->cfg.max_connections;
	uv_timer_start(&c->timer, on_header_timeout, busy && h->cfg.header_timeout_busy_ms < h->cfg.header_timeout_ms
	                                                 ? h->cfg.header_timeout_busy_ms
	                                                 : h->cfg.header_timeout_ms,
	               0);
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void free_listener_owner(uv_handle_t *handle) {
	free(handle->data);
}

int crowd_http_start(crowd_http **out, uv_loop_t *loop, const crowd_http_config *cfg, const crowd_http_hooks *hooks) {
	crowd_http *h = calloc(1, sizeof *h);
	if (!h) return UV_ENOMEM;
	h->loop = loop;
	h->cfg = *cfg;
	h->hooks = *hooks;
	snprintf(h->host, sizeof h->host, "%s", cfg->host ? cfg->host : "127.0.0.1");
	if (cfg->web_root) snprintf(h->web_root, sizeof h->web_root, "%s", cfg->web_root);
	if (cfg->proto_path) snprintf(h->proto_path, sizeof h->proto_path, "%s", cfg->proto_path);
	/* Trailing slashes would make "//" in paths. */
	for (size_t n = strlen(h->web_root); n > 1 && h->web_root[n - 1] == '/'; n--) h->web_root[n - 1] = '\0';
	struct sockaddr_storage addr;
	int r = uv_ip4_addr(h->host, cfg->port, (struct sockaddr_in *)&addr);
	if (r != 0) r = uv_ip6_addr(h->host, cfg->port, (struct sockaddr_in6 *)&addr);
	if (r != 0) {
		free(h);
		return r;
	}
	uv_tcp_init(loop, &h->listener);
	h->listener.data = h;
	r = uv_tcp_bind(&h->listener, (struct sockaddr *)&addr, 0);
	if (r == 0) r = uv_listen((uv_stream_t *)&h->listener, 128, on_connection);
	if (r != 0) {
		/* The listener handle must close before the struct goes. */
		uv_close((uv_handle_t *)&h->listener, free_listener_owner);
		return r;
	}
	struct sockaddr_storage bound;
	int len = sizeof bound;
	uv_tcp_getsockname(&h->listener, (struct sockaddr *)&bound, &len);
	h->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
	                                            : ((struct sockaddr_in *)&bound)->sin_port);
	*out = h;
	return 0;
}

int crowd_http_port(const crowd_http *h) {
	return h->port;
}

const crowd_http_stats *crowd_http_get_stats(const crowd_http *h) {
	return &h->stats;
}

static void http_maybe_done(crowd_http *h) {
	if (!h->stopping || !h->listener_closed || h->conns || h->conn_allocated)
		return; /* wait for the last connection's handles too */
	void (*done)(void *) = h->done;
	void *arg = h->done_arg;
	free(h);
	if (done) done(arg);
}

static void on_listener_closed(uv_handle_t *handle) {
	crowd_http *h = handle->data;
	h->listener_closed = true;
	http_maybe_done(h);
}

void crowd_http_stop(crowd_http *h, void (*done)(void *arg), void *arg) {
	h->stopping = true;
	h->done = done;
	h->done_arg = arg;
	for (crowd_http_ws *c = h->conns, *next; c; c = next) {
		next = c->next;
		conn_set_reason(c, CROWD_HTTP_CLOSE_SHUTDOWN);
		if (c->mode == MODE_WS && c->ws && !crowd_ws_finished(c->ws)) {
			/* Tell the client, let the close frame drain, but never wait long. */
			crowd_ws_close(c->ws, CROWD_WS_CLOSE_GOING_AWAY, "server shutting down");
			c->drain_deadline_ms = uv_now(h->loop) + HTTP_LINGER_MS;
			if (crowd_ws_finished(c->ws) && outq_pending(&c->out) == 0)
				conn_close(c);
			else
				uv_timer_start(&c->timer, on_linger_timeout, HTTP_LINGER_MS, 0);
		} else {
			conn_close(c);
		}
	}
	uv_close((uv_handle_t *)&h->listener, on_listener_closed);
}

bool crowd_http_ws_send(crowd_http_ws *c, const uint8_t *data, size_t len) {
	if (c->mode != MODE_WS || !c->ws) return false;
	bool ok = crowd_ws_send(c->ws, data, len);
	if (!ok || c->write_failed) conn_close_soon(c);
	return ok;
}

void crowd_http_ws_close(crowd_http_ws *c, uint16_t code, const char *reason) {
	if (c->mode != MODE_WS || !c->ws) return;
	conn_set_reason(c, CROWD_HTTP_CLOSE_LOCAL);
	crowd_ws_close(c->ws, code, reason);
	/* What is queued, the close frame last, gets --flush-timeout to reach the
	 * peer (a client that does not read); the drain timer closes once it has. */
	if (!c->drain_deadline_ms) c->drain_deadline_ms = uv_now(c->server->loop) + c->server->cfg.flush_timeout_ms;
	c->draining = true;
	/* The first look from the loop, not inside the caller. */
	uv_timer_start(&c->timer, on_ws_drain, 0, HTTP_DRAIN_POLL_MS);
}

void crowd_http_ws_abort(crowd_http_ws *c) {
	conn_set_reason(c, CROWD_HTTP_CLOSE_LOCAL);
	conn_close_soon(c);
}

void *crowd_http_ws_session(const crowd_http_ws *c) {
	return c->session;
}

size_t crowd_http_ws_pending(const crowd_http_ws *c) {
	return outq_pending(&c->out);
}

void crowd_http_ws_discard_pending(crowd_http_ws *c) {
	outq_discard(&c->out);
}

size_t crowd_http_ws_kernel_unsent(const crowd_http_ws *c) {
	return c->mode == MODE_CLOSED ? 0 : outq_backlog(&c->out) - outq_pending(&c->out);
}
