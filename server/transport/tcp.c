/* tcp.c — the TCP transport (see tcp.h and transport.h): accepts connections,
 * frames with crowd_frame_splitter, writes with uv_try_write first and queues
 * the rest, and closes gracefully within a bounded time. */
#include "tcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/socket.h>
#include <uv.h>

#include "log.h"
#include "outq.h"
#include "session.h"

#define TCP_READ_BUFFER 65536
#define TCP_DRAIN_POLL_MS 20 /* a flushing close looks this often whether the kernel has sent everything */

struct tcp_listener {
	uv_tcp_t handle;
	session_host *host;
};

/* Reads are handled synchronously in on_read, so one buffer per loop thread
 * serves every connection. */
static _Thread_local char read_buffer[TCP_READ_BUFFER];

static void free_listener(uv_handle_t *h) {
	free(h->data);
}

typedef struct tcp_conn {
	uv_tcp_t handle;
	uv_timer_t flush_timer;
	uv_shutdown_t shutdown_req;
	session_host *host;
	tcp_listener *listener;
	session *session;
	crowd_frame_splitter splitter;
	outq out;
	disconnect_reason reason;
	bool closing;  /* uv_close called */
	bool flushing; /* shutdown requested, waiting for writes to drain */
	bool shut;     /* the shutdown is done: all of it is in the kernel, the FIN after it */
	uint64_t flush_deadline_ms; /* uv_now() past which a flushing close gives up */
	bool peer_done; /* the peer sent EOF: keep writing until the session closes */
	int open_handles;
} tcp_conn;

static void conn_handle_closed(uv_handle_t *h) {
	tcp_conn *c = h->data;
	if (--c->open_handles > 0) return;
	if (c->session) session_on_closed(c->session, c->reason);
	crowd_frame_splitter_free(&c->splitter);
	outq_free(&c->out);
	free(c);
}

static void conn_close_now(tcp_conn *c) {
	if (c->closing) return;
	c->closing = true;
	uv_read_stop((uv_stream_t *)&c->handle);
	uv_close((uv_handle_t *)&c->handle, conn_handle_closed);
	uv_close((uv_handle_t *)&c->flush_timer, conn_handle_closed);
}

/* A flushing close is done once the kernel has sent everything (the peer read
 * enough to open its window: the last message, the Error saying why, is on its
 * way). Past --flush-timeout it gives up with a reset, freeing what the kernel
 * still holds, instead of leaving it to an orphaned socket. */
static void on_flush_timer(uv_timer_t *t) {
	tcp_conn *c = t->data;
	if (c->closing) return;
	if (c->shut && outq_kernel_unsent(&c->out) == 0) {
		conn_close_now(c);
	} else if (uv_now(c->host->loop) >= c->flush_deadline_ms) {
		uv_os_fd_t fd;
		struct linger reset = {1, 0};
		if (uv_fileno((const uv_handle_t *)&c->handle, &fd) == 0)
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
		conn_close_now(c);
	}
}

static void on_shutdown(uv_shutdown_t *req, int status) {
	tcp_conn *c = req->data;
	if (c->closing) return;
	c->shut = true;
	if (status < 0 || outq_kernel_unsent(&c->out) == 0) conn_close_now(c);
}

/* ---- transport ops */

static void on_written(void *owner, int status, size_t len) {
	tcp_conn *c = owner;
	(void)len;
	if (status < 0 && !c->closing) {
		c->reason = DISCONNECT_WRITE_ERROR;
		conn_close_now(c);
	}
}

static int tcp_send(void *conn, const uint8_t *data, size_t len) {
	tcp_conn *c = conn;
	if (c->closing || c->flushing) return -1;
	if (outq_write(&c->out, data, len) != 0) {
		c->reason = DISCONNECT_WRITE_ERROR;
		conn_close_now(c);
		return -1;
	}
	return 0;
}

static size_t tcp_pending(void *conn) {
	tcp_conn *c = conn;
	if (c->closing) return 0;
	return outq_pending(&c->out);
}

static void tcp_discard(void *conn) {
	tcp_conn *c = conn;
	outq_discard(&c->out);
}

static size_t tcp_kernel_unsent(void *conn) {
	tcp_conn *c = conn;
	return c->closing ? 0 : outq_backlog(&c->out) - outq_pending(&c->out);
}

static void tcp_close(void *conn, bool flush) {
	tcp_conn *c = conn;
	if (c->closing) return;
	if (!flush) {
		conn_close_now(c);
		return;
	}
	if (c->flushing) return;
	c->flushing = true;
	/* Reading goes on (what arrives is dropped, on_read): closing with unread
	 * bytes would reset the connection under the peer's last messages. */
	c->shutdown_req.data = c;
	if (outq_submit_all(&c->out) != 0 || uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->handle, on_shutdown) != 0) {
		conn_close_now(c);
		return;
	}
	/* A flushing close gives up after --flush-timeout and drops what is still queued. */
	c->flush_deadline_ms = uv_now(c->host->loop) + (uint64_t)(c->host->cfg->flush_timeout_s * 1000.0);
	uv_timer_start(&c->flush_timer, on_flush_timer, TCP_DRAIN_POLL_MS, TCP_DRAIN_POLL_MS);
}

static const transport_ops tcp_ops = {
    .kind = TRANSPORT_TCP,
    .length_prefixed = true,
    .send = tcp_send,
    .pending_bytes = tcp_pending,
    .close = tcp_close,
    .discard_pending = tcp_discard,
    .kernel_unsent = tcp_kernel_unsent,
};

/* ---- reading */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
	(void)suggested;
	(void)h;
	buf->base = read_buffer;
	buf->len = sizeof read_buffer;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
	tcp_conn *c = stream->data;
	(void)buf;
	if (nread == 0 || c->closing) return;
	if (nread == UV_EOF && c->session && !c->flushing && !c->peer_done) {
		/* A half-close: the peer sent all it will, and still reads. What it asked
		 * is answered (some answers wait for the next tick), then we close. */
		c->peer_done = true;
		uv_read_stop(stream);
		c->reason = DISCONNECT_PEER_CLOSED;
		session_on_peer_eof(c->session);
		return;
	}
	if (nread == UV_EOF && c->flushing) { /* nothing more to drop; the flush goes on */
		uv_read_stop(stream);
		return;
	}
	if (nread < 0) {
		c->reason = nread == UV_EOF ? DISCONNECT_PEER_CLOSED : DISCONNECT_READ_ERROR;
		conn_close_now(c);
		return;
	}
	if (c->flushing || !c->session) return;
	if (!crowd_frame_splitter_push(&c->splitter, buf->base, (size_t)nread)) {
		session_on_transport_error(c->session, crowd_v1_ErrorCode_ERROR_INTERNAL, DISCONNECT_READ_ERROR,
		                           "out of memory buffering input");
		return;
	}
	for (;;) {
		const uint8_t *frame;
		size_t len;
		crowd_frame_result r = crowd_frame_splitter_next(&c->splitter, &frame, &len);
		if (r == CROWD_FRAME_NEED_MORE) break;
		if (r == CROWD_FRAME_READY) {
			session_on_message(c->session, frame, len);
			if (c->closing || c->flushing) break;
			continue;
		}
		if (r == CROWD_FRAME_TOO_LARGE)
			session_on_transport_error(c->session, crowd_v1_ErrorCode_ERROR_FRAME_TOO_LARGE,
			                           DISCONNECT_FRAME_TOO_LARGE, "length prefix over the frame limit");
		else
			session_on_transport_error(c->session, crowd_v1_ErrorCode_ERROR_MALFORMED, DISCONNECT_MALFORMED,
			                           "bad length prefix");
		uv_read_stop(stream);
		break;
	}
}

/* ---- accepting */

static void on_connection(uv_stream_t *server_stream, int status) {
	tcp_listener *l = server_stream->data;
	session_host *host = l->host;
	if (status < 0) {
		log_warn("tcp accept: %s", uv_strerror(status));
		return;
	}
	tcp_conn *c = calloc(1, sizeof *c);
	if (!c) return;
	c->host = host;
	c->listener = l;
	c->reason = DISCONNECT_PEER_CLOSED;
	crowd_frame_splitter_init(&c->splitter, host->cfg->max_frame_bytes);
	uv_tcp_init(host->loop, &c->handle);
	uv_timer_init(host->loop, &c->flush_timer);
	c->handle.data = c;
	c->flush_timer.data = c;
	outq_init(&c->out, (uv_stream_t *)&c->handle, on_written, c);
	c->open_handles = 2;
	if (uv_accept(server_stream, (uv_stream_t *)&c->handle) != 0) {
		conn_close_now(c);
		return;
	}
	uv_tcp_nodelay(&c->handle, 1);
	/* The kernel takes about the soft limit it cannot send yet; the rest waits
	 * in the queue, where it is counted (and dropped when the client is cut). */
	outq_set_unsent_limit(&c->out, host->cfg->output_soft_limit > OUTQ_IN_FLIGHT_MAX ? host->cfg->output_soft_limit
	                                                                                  : OUTQ_IN_FLIGHT_MAX);
	char peer[64] = "?";
	struct sockaddr_storage ss;
	int sslen = sizeof ss;
	if (uv_tcp_getpeername(&c->handle, (struct sockaddr *)&ss, &sslen) == 0) {
		char ip[48] = "";
		if (ss.ss_family == AF_INET6) {
			uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
			snprintf(peer, sizeof peer, "[%s]:%u", ip, ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
		} else {
			uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
			snprintf(peer, sizeof peer, "%s:%u", ip, ntohs(((struct sockaddr_in *)&ss)->sin_port));
		}
	}
	c->session = session_open(host, &tcp_ops, c, peer);
	if (c->session) uv_read_start((uv_stream_t *)&c->handle, on_alloc, on_read);
}

int tcp_listener_start(session_host *host, const config_hostport *addr, tcp_listener **out) {
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof ss);
	if (uv_ip4_addr(addr->host, addr->port, (struct sockaddr_in *)&ss) != 0 &&
	    uv_ip6_addr(addr->host, addr->port, (struct sockaddr_in6 *)&ss) != 0) {
		/* A name: resolve it once, synchronously, at start-up. */
		uv_getaddrinfo_t req;
		struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
		int rc = uv_getaddrinfo(host->loop, &req, NULL, addr->host, NULL, &hints);
		if (rc != 0) return rc;
		memcpy(&ss, req.addrinfo->ai_addr, req.addrinfo->ai_addrlen);
		uv_freeaddrinfo(req.addrinfo);
		if (ss.ss_family == AF_INET6)
			((struct sockaddr_in6 *)&ss)->sin6_port = htons(addr->port);
		else
			((struct sockaddr_in *)&ss)->sin_port = htons(addr->port);
	}
	tcp_listener *l = calloc(1, sizeof *l);
	if (!l) return UV_ENOMEM;
	l->host = host;
	uv_tcp_init(host->loop, &l->handle);
	l->handle.data = l;
	int rc = uv_tcp_bind(&l->handle, (struct sockaddr *)&ss, 0);
	if (rc == 0) rc = uv_listen((uv_stream_t *)&l->handle, 511, on_connection);
	if (rc != 0) {
		uv_close((uv_handle_t *)&l->handle, free_listener);
		return rc;
	}
	struct sockaddr_storage bound;
	int blen = sizeof bound;
	uv_tcp_getsockname(&l->handle, (struct sockaddr *)&bound, &blen);
	char ip[48] = "";
	unsigned port;
	if (bound.ss_family == AF_INET6) {
		uv_ip6_name((struct sockaddr_in6 *)&bound, ip, sizeof ip);
		port = ntohs(((struct sockaddr_in6 *)&bound)->sin6_port);
		printf("listening tcp [%s]:%u\n", ip, port);
	} else {
		uv_ip4_name((struct sockaddr_in *)&bound, ip, sizeof ip);
		port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
		printf("listening tcp %s:%u\n", ip, port);
	}
	fflush(stdout);
	log_info("listening for TCP clients on %s port %u", ip, port);
	*out = l;
	return 0;
}

void tcp_listener_stop(tcp_listener *l) {
	if (!l) return;
	uv_close((uv_handle_t *)&l->handle, free_listener);
}
