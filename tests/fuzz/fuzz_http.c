/* fuzz_http.c — what a client sends to crowd-server's HTTP port: the request
 * line and headers through http-parser and this server's callbacks (URL,
 * header capture, limits), the routes (/healthz, /metrics, /crowd.proto, static
 * files, /ws), the WebSocket upgrade checks, and after a 101 the WebSocket
 * frames to a session that echoes. http.c is compiled into this target so
 * the bytes can be handed to its read callback directly, on a connection the
 * server accepted itself.
 * Input: byte 0 = chunk seed, the rest = the client's bytes. */
#include "../../server/transport/http.c"

#include <signal.h>
#include <netinet/in.h>
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

/* A real loopback connection, accepted by the server's own on_connection
 * (so the harness follows whatever it sets up); the bytes are then handed to
 * on_read directly, as libuv would after a read. Returns the new connection,
 * the newest in the server's list. */
static crowd_http_ws *open_conn(int *client)
{
	crowd_http *h = srv;
	const uint32_t before = h->conn_allocated;
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)crowd_http_port(h));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*client = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (*client < 0 || (connect(*client, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS))
		abort();
	while (h->conn_allocated == before) /* the accept is the event */
		uv_run(&loop, UV_RUN_ONCE);
	return h->conns;
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
	int client;
	crowd_http_ws *c = open_conn(&client);
	for (size_t off = 0; off < size; off += chunk) {
		if (srv->conn_allocated == 0 || c->mode == MODE_CLOSED)
			break;
		const size_t n = size - off < chunk ? size - off : chunk;
		feed(c, data + off, n);
		uv_run(&loop, UV_RUN_NOWAIT);
		drain(client);
	}
	if (srv->conn_allocated != 0 && c->mode != MODE_CLOSED) {
		uv_buf_t none = uv_buf_init(NULL, 0);
		on_read((uv_stream_t *)&c->tcp, UV_EOF, &none);
	}
	while (srv->conn_allocated != 0) {
		uv_run(&loop, UV_RUN_NOWAIT);
		drain(client);
	}
	close(client);
	return 0;
}
