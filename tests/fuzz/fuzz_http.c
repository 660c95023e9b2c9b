/* fuzz_http.c — what a client sends to crowd-server's HTTP port: the request
 * line and headers through http-parser and this server's callbacks (URL,
 * header capture, limits), the routes (/healthz, /metrics, /crowd.proto, static
 * files, /ws), the WebSocket upgrade checks, and after a 101 the WebSocket
 * frames to a session that echoes. http.c is compiled into this target so a
 * connection can be made over a socketpair and fed without the network.
 * Input: byte 0 = chunk seed, the rest = the client's bytes. */
#include "../../server/transport/http.c"

#include <signal.h>
#include <sys/socket.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uv_loop_t loop;
static crowd_http *srv;

static void fuzz_health(void *user, crowd_http_health *out)
{
	(void)user;
	out->tick = 42;
	out->agents = 7;
	out->extra_members = ",\"fuzz\":true";
}

static char *fuzz_metrics(void *user, size_t *len)
{
	(void)user;
	char *s = strdup("crowd_fuzz 1\n");
	*len = s ? strlen(s) : 0;
	return s;
}

static void *fuzz_ws_open(void *user, crowd_http_ws *conn, const char *peer)
{
	(void)user;
	(void)peer;
	return conn; /* the "session" is the connection: messages are echoed on it */
}

static void fuzz_ws_message(void *session, const uint8_t *data, size_t len)
{
	crowd_http_ws *c = session;
	if (len > 0 && data[0] == 0xFF)
		crowd_http_ws_close(c, CROWD_WS_CLOSE_NORMAL, "asked");
	else
		crowd_http_ws_send(c, data, len);
}

static void fuzz_ws_closed(void *session, crowd_http_close_reason reason)
{
	(void)session;
	(void)reason;
}

static void setup_once(void)
{
	if (srv)
		return;
	signal(SIGPIPE, SIG_IGN);
	uv_loop_init(&loop);
	crowd_http_config cfg;
	crowd_http_default_config(&cfg);
	cfg.port = 0;
	cfg.web_root = CROWD_FUZZ_WEB_ROOT;
	cfg.proto_path = CROWD_FUZZ_PROTO;
	cfg.ws_max_message = 64u << 10;
	static const crowd_http_hooks hooks = {
	    .health = fuzz_health,
	    .metrics = fuzz_metrics,
	    .ws_open = fuzz_ws_open,
	    .ws_message = fuzz_ws_message,
	    .ws_closed = fuzz_ws_closed,
	};
	if (crowd_http_start(&srv, &loop, &cfg, &hooks) != 0)
		abort();
}

static void drain(int fd)
{
	char buf[65536];
	while (read(fd, buf, sizeof buf) > 0) {
	}
}

/* As on_connection does for an accepted socket, over one end of a socketpair. */
static crowd_http_ws *open_conn(int fd)
{
	crowd_http *h = srv;
	crowd_http_ws *c = calloc(1, sizeof *c);
	if (!c)
		abort();
	c->server = h;
	c->current = -1;
	h->conn_allocated++;
	uv_tcp_init(h->loop, &c->tcp);
	uv_timer_init(h->loop, &c->timer);
	c->tcp.data = c;
	c->timer.data = c;
	c->handles_open = 2;
	c->next = h->conns;
	if (h->conns)
		h->conns->prev = c;
	h->conns = c;
	h->conn_count++;
	if (uv_tcp_open(&c->tcp, fd) != 0)
		abort();
	snprintf(c->peer, sizeof c->peer, "fuzz:1");
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
	uv_timer_start(&c->timer, on_header_timeout, h->cfg.header_timeout_ms, 0);
	return c;
}

static void feed(crowd_http_ws *c, const uint8_t *data, size_t n)
{
	uv_buf_t buf = uv_buf_init(malloc(n ? n : 1), (unsigned)n);
	memcpy(buf.base, data, n);
	on_read((uv_stream_t *)&c->tcp, (ssize_t)n, &buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setup_once();
	if (size < 1)
		return 0;
	const size_t chunk = 1 + data[0] % 128u;
	data++;
	size--;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
		abort();
	crowd_http_ws *c = open_conn(sv[0]);
	for (size_t off = 0; off < size; off += chunk) {
		if (srv->conn_allocated == 0 || c->mode == MODE_CLOSED)
			break;
		const size_t n = size - off < chunk ? size - off : chunk;
		feed(c, data + off, n);
		uv_run(&loop, UV_RUN_NOWAIT);
		drain(sv[1]);
	}
	if (srv->conn_allocated != 0 && c->mode != MODE_CLOSED) {
		uv_buf_t none = uv_buf_init(NULL, 0);
		on_read((uv_stream_t *)&c->tcp, UV_EOF, &none);
	}
	while (srv->conn_allocated != 0) {
		uv_run(&loop, UV_RUN_NOWAIT);
		drain(sv[1]);
	}
	close(sv[1]);
	return 0;
}
