/* test_http_ws.c — the HTTP listener and WebSocket framing over real loopback
 * sockets: status codes (200/400/404/405/408/413/426/431), the handshake digest
 * and subprotocol, masked/unmasked, fragmented, ping/pong, text, oversize, close. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first. */
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "http.h"
#include "ws.h"

/* ------------------------------------------------------------------ server under test */

static uv_loop_t loop;
static uv_async_t stop_async;
static crowd_http *server;
static pthread_t loop_thread;
static int port;
static char web_root[256];
static char proto_file[300];
static int sessions_open; /* touched on the loop thread only; read after stop */

static void *echo_open(void *user, crowd_http_ws *conn, const char *peer) {
	(void)user;
	(void)peer;
	sessions_open++;
	return conn;
}

/* The test's session echoes each message; the message "close" asks for close 1000. */
static void echo_message(void *session, const uint8_t *data, size_t len) {
	if (len == 5 && memcmp(data, "close", 5) == 0) {
		/* Like an Error before a close: the message must arrive before the close frame. */
		crowd_http_ws_send(session, (const uint8_t *)"last words", 10);
		crowd_http_ws_close(session, CROWD_WS_CLOSE_NORMAL, "bye");
	} else
		crowd_http_ws_send(session, data, len);
}

static void echo_closed(void *session, crowd_http_close_reason reason) {
	(void)session;
	(void)reason;
	sessions_open--;
}

static void fill_health(void *user, crowd_http_health *out) {
	(void)user;
	out->tick = 42;
	out->agents = 7;
	out->connections = 3;
}

static char *fill_metrics(void *user, size_t *len) {
	(void)user;
	const char text[] = "# HELP crowd_test test\n# TYPE crowd_test gauge\ncrowd_test 1\n";
	char *s = malloc(sizeof text);
	memcpy(s, text, sizeof text);
	*len = sizeof text - 1;
	return s;
}

static void on_stop(uv_async_t *a) {
	crowd_http_stop(server, NULL, NULL);
	uv_close((uv_handle_t *)a, NULL);
}

static void *run_loop(void *arg) {
	(void)arg;
	uv_run(&loop, UV_RUN_DEFAULT);
	return NULL;
}

static int setup(void **state) {
	(void)state;
	snprintf(web_root, sizeof web_root, "/tmp/crowd-web-test-%d", (int)getpid());
	mkdir(web_root, 0700);
	char path[300];
	snprintf(path, sizeof path, "%s/index.html", web_root);
	FILE *f = fopen(path, "w");
	fputs("<!doctype html><title>crowd</title>", f);
	fclose(f);
	snprintf(proto_file, sizeof proto_file, "%s/crowd.proto", web_root);
	f = fopen(proto_file, "w");
	fputs("syntax = \"proto3\";\n", f);
	fclose(f);

	uv_loop_init(&loop);
	uv_async_init(&loop, &stop_async, on_stop);
	crowd_http_config cfg;
	crowd_http_default_config(&cfg);
	cfg.port = 0;
	cfg.web_root = web_root;
	cfg.proto_path = proto_file;
	cfg.header_timeout_ms = 300;
	cfg.ws_max_message = 1024;
	cfg.max_header_bytes = 4096;
	crowd_http_hooks hooks = {.health = fill_health,
	                          .metrics = fill_metrics,
	                          .ws_open = echo_open,
	                          .ws_message = echo_message,
	                          .ws_closed = echo_closed};
	int r = crowd_http_start(&server, &loop, &cfg, &hooks);
	if (r != 0) return -1;
	port = crowd_http_port(server);
	pthread_create(&loop_thread, NULL, run_loop, NULL);
	return 0;
}

static int teardown(void **state) {
	(void)state;
	uv_async_send(&stop_async);
	pthread_join(loop_thread, NULL);
	uv_loop_close(&loop);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", web_root);
	return system(cmd) == 0 ? 0 : -1;
}

/* ------------------------------------------------------------------ client helpers */

static int connect_server(void) {
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

static void send_all(int fd, const void *data, size_t len) {
	const char *p = data;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		assert_true(n > 0);
		p += n;
		len -= (size_t)n;
	}
}

/* Everything until the server closes; returns its length (the buffer ends with NUL). */
static size_t recv_until_eof(int fd, char *buf, size_t cap) {
	size_t got = 0;
	for (;;) {
		ssize_t n = recv(fd, buf + got, cap - 1 - got, 0);
		if (n <= 0) break;
		got += (size_t)n;
		if (got == cap - 1) break;
	}
	buf[got] = '\0';
	return got;
}

static int status_of(const char *response) {
	int status = 0;
	if (sscanf(response, "HTTP/1.1 %d", &status) != 1) return -1;
	return status;
}

/* Send a raw request, return the status line's code; the server must then close. */
static int request_status(const char *raw, size_t len, char *response, size_t cap) {
	int fd = connect_server();
	send_all(fd, raw, len);
	size_t got = recv_until_eof(fd, response, cap);
	close(fd);
	assert_true(got > 0);
	return status_of(response);
}

static int simple_status(const char *raw) {
	char response[8192];
	return request_status(raw, strlen(raw), response, sizeof response);
}

/* One client frame: fin bit, opcode, masked or not. */
static size_t make_frame(uint8_t *out, bool fin, uint8_t opcode, bool masked, const uint8_t *payload, size_t len) {
	size_t n = 0;
	out[n++] = (uint8_t)((fin ? 0x80 : 0) | opcode);
	uint8_t mbit = masked ? 0x80 : 0;
	if (len < 126) {
		out[n++] = (uint8_t)(mbit | len);
	} else if (len < 65536) {
		out[n++] = mbit | 126;
		out[n++] = (uint8_t)(len >> 8);
		out[n++] = (uint8_t)len;
	} else {
		out[n++] = mbit | 127;
		for (int i = 7; i >= 0; i--) out[n++] = (uint8_t)((uint64_t)len >> (8 * i));
	}
	static const uint8_t key[4] = {0x37, 0xfa, 0x21, 0x3d};
	if (masked) {
		memcpy(out + n, key, 4);
		n += 4;
	}
	for (size_t i = 0; i < len; i++) out[n + i] = masked ? (uint8_t)(payload[i] ^ key[i % 4]) : payload[i];
	return n + len;
}

typedef struct server_frame {
	uint8_t opcode;
	bool fin;
	uint8_t payload[4096];
	size_t len;
} server_frame;

static bool recv_exact(int fd, uint8_t *buf, size_t len) {
	size_t got = 0;
	while (got < len) {
		ssize_t n = recv(fd, buf + got, len - got, 0);
		if (n <= 0) return false;
		got += (size_t)n;
	}
	return true;
}

/* Read one frame from the server; server frames must be unmasked. */
static bool recv_frame(int fd, server_frame *f) {
	uint8_t h[2];
	if (!recv_exact(fd, h, 2)) return false;
	f->fin = h[0] & 0x80;
	f->opcode = h[0] & 0x0f;
	assert_int_equal(h[1] & 0x80, 0);
	uint64_t len = h[1] & 0x7f;
	if (len == 126) {
		uint8_t e[2];
		assert_true(recv_exact(fd, e, 2));
		len = (uint64_t)e[0] << 8 | e[1];
	} else if (len == 127) {
		uint8_t e[8];
		assert_true(recv_exact(fd, e, 8));
		len = 0;
		for (int i = 0; i < 8; i++) len = len << 8 | e[i];
	}
	assert_true(len <= sizeof f->payload);
	f->len = (size_t)len;
	return recv_exact(fd, f->payload, f->len);
}

static uint16_t close_code(const server_frame *f) {
	assert_int_equal(f->opcode, 0x8);
	assert_true(f->len >= 2);
	return (uint16_t)(f->payload[0] << 8 | f->payload[1]);
}

/* Open a WebSocket with subprotocol crowd.v1 and check the 101 response. */
static int ws_connect(void) {
	int fd = connect_server();
	const char req[] =
	    "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
	    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
	    "Sec-WebSocket-Protocol: chat, crowd.v1\r\n\r\n";
	send_all(fd, req, sizeof req - 1);
	char head[1024];
	size_t got = 0;
	while (got < 4 || memcmp(head + got - 4, "\r\n\r\n", 4) != 0) {
		assert_true(got < sizeof head - 1);
		assert_int_equal(recv(fd, head + got, 1, 0), 1);
		got++;
	}
	head[got] = '\0';
	assert_int_equal(status_of(head), 101);
	assert_non_null(strstr(head, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
	assert_non_null(strstr(head, "Sec-WebSocket-Protocol: crowd.v1\r\n"));
	return fd;
}

/* After a close frame from the server, the server closes the TCP connection. */
static void expect_eof(int fd) {
	uint8_t b;
	assert_true(recv(fd, &b, 1, 0) <= 0);
}

/* ------------------------------------------------------------------ tests: handshake pieces */

static void test_accept_key_rfc_example(void **state) {
	(void)state;
	char out[CROWD_WS_ACCEPT_LEN + 1];
	const char key[] = "dGhlIHNhbXBsZSBub25jZQ==";
	assert_true(crowd_ws_accept_key(key, strlen(key), out));
	assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	assert_true(crowd_ws_key_valid(key, strlen(key)));
	assert_false(crowd_ws_key_valid("short==", 7));
	assert_false(crowd_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ!!", 24));
	assert_true(crowd_ws_offers_protocol("a, crowd.v1 ,b", 14, "crowd.v1"));
	assert_false(crowd_ws_offers_protocol("crowd.v10", 9, "crowd.v1"));
}

/* ------------------------------------------------------------------ tests: HTTP */

static void test_http_ok_routes(void **state) {
	(void)state;
	char r[8192];
	const char index_req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	assert_int_equal(request_status(index_req, sizeof index_req - 1, r, sizeof r), 200);
	assert_non_null(strstr(r, "Content-Type: text/html"));
	assert_non_null(strstr(r, "<title>crowd</title>"));
	assert_non_null(strstr(r, "Connection: close"));

	const char proto_req[] = "GET /crowd.proto HTTP/1.1\r\n\r\n";
	assert_int_equal(request_status(proto_req, sizeof proto_req - 1, r, sizeof r), 200);
	assert_non_null(strstr(r, "syntax = \"proto3\";"));

	const char health_req[] = "GET /healthz HTTP/1.1\r\n\r\n";
	assert_int_equal(request_status(health_req, sizeof health_req - 1, r, sizeof r), 200);
	assert_non_null(strstr(r, "application/json"));
	assert_non_null(strstr(r, "\"tick\":42,\"agents\":7,\"connections\":3"));

	const char metrics_req[] = "GET /metrics HTTP/1.1\r\n\r\n";
	assert_int_equal(request_status(metrics_req, sizeof metrics_req - 1, r, sizeof r), 200);
	assert_non_null(strstr(r, "text/plain; version=0.0.4"));
	assert_non_null(strstr(r, "\ncrowd_test 1\n"));

	const char head_req[] = "HEAD /healthz HTTP/1.1\r\n\r\n";
	assert_int_equal(request_status(head_req, sizeof head_req - 1, r, sizeof r), 200);
	assert_null(strstr(r, "\"tick\""));
}

static void test_http_error_statuses(void **state) {
	(void)state;
	assert_int_equal(simple_status("GET /nothing-here.js HTTP/1.1\r\n\r\n"), 404);
	assert_int_equal(simple_status("GET /../../etc/passwd HTTP/1.1\r\n\r\n"), 404);
	assert_int_equal(simple_status("GET /.hidden HTTP/1.1\r\n\r\n"), 404);
	assert_int_equal(simple_status("POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n"), 405);
	assert_int_equal(simple_status("DELETE /healthz HTTP/1.1\r\n\r\n"), 405);
	assert_int_equal(simple_status("GET / HTTP/1.1\r\nContent-Length: 100000\r\n\r\n"), 413);
	assert_int_equal(simple_status("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), 413);
	assert_int_equal(simple_status("\x01\x02 garbage\r\n\r\n"), 400);
	assert_int_equal(simple_status("GET / HTTP/1.1\r\nBad Header Line\r\n\r\n"), 400);
	assert_int_equal(simple_status("GET /ws HTTP/1.1\r\n\r\n"), 426);
	assert_int_equal(simple_status("GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	                               "Sec-WebSocket-Key: bad\r\nSec-WebSocket-Version: 13\r\n\r\n"),
	                 400);
	assert_int_equal(simple_status("GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	                               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
	                               "Sec-WebSocket-Protocol: other.v2\r\n\r\n"),
	                 400);

	/* Headers over max_header_bytes (4096 here). */
	char big[8192];
	int n = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nX-Filler: ");
	memset(big + n, 'a', 6000);
	n += 6000;
	n += snprintf(big + n, sizeof big - (size_t)n, "\r\n\r\n");
	char r[8192];
	assert_int_equal(request_status(big, (size_t)n, r, sizeof r), 431);

	/* Many tiny headers: 1,000 lines of "X: y" are 6,000 bytes on the wire (2,000 of
	 * names and values), over the limit too. */
	n = snprintf(big, sizeof big, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < 1000; i++) n += snprintf(big + n, sizeof big - (size_t)n, "X: y\r\n");
	n += snprintf(big + n, sizeof big - (size_t)n, "\r\n");
	assert_int_equal(request_status(big, (size_t)n, r, sizeof r), 431);
}

static void test_http_413_while_the_body_keeps_coming(void **state) {
	(void)state;
	/* The server answers at the headers and drains the body it refuses, so the
	 * client reads a 413 rather than a connection reset. */
	int fd = connect_server();
	const char head[] = "GET / HTTP/1.1\r\nContent-Length: 4000000\r\n\r\n";
	send_all(fd, head, sizeof head - 1);
	static char body[1 << 16];
	memset(body, 'x', sizeof body);
	for (int i = 0; i < 16; i++) send_all(fd, body, sizeof body);
	char r[1024];
	assert_true(recv_until_eof(fd, r, sizeof r) > 0);
	close(fd);
	assert_int_equal(status_of(r), 413);
}

static void test_http_header_timeout(void **state) {
	(void)state;
	int fd = connect_server();
	const char partial[] = "GET / HTTP/1.1\r\nHost: x\r\n";
	send_all(fd, partial, sizeof partial - 1);
	char r[1024];
	assert_true(recv_until_eof(fd, r, sizeof r) > 0); /* the server answers, then closes */
	close(fd);
	assert_int_equal(status_of(r), 408);

	/* Headers complete, but the small body they announce never comes. */
	fd = connect_server();
	const char no_body[] = "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n";
	send_all(fd, no_body, sizeof no_body - 1);
	assert_true(recv_until_eof(fd, r, sizeof r) > 0);
	close(fd);
	assert_int_equal(status_of(r), 408);
}

/* ------------------------------------------------------------------ tests: WebSocket */

static void test_ws_masked_binary_echo(void **state) {
	(void)state;
	int fd = ws_connect();
	uint8_t payload[300];
	for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)i;
	uint8_t frame[400];
	size_t n = make_frame(frame, true, 0x2, true, payload, sizeof payload);
	send_all(fd, frame, n);
	server_frame f;
	assert_true(recv_frame(fd, &f));
	assert_int_equal(f.opcode, 0x2);
	assert_true(f.fin);
	assert_int_equal(f.len, sizeof payload);
	assert_memory_equal(f.payload, payload, sizeof payload);
	close(fd);
}

static void test_ws_fragmented_with_ping(void **state) {
	(void)state;
	int fd = ws_connect();
	uint8_t buf[256];
	size_t n = 0;
	n += make_frame(buf + n, false, 0x2, true, (const uint8_t *)"hel", 3);
	n += make_frame(buf + n, true, 0x9, true, (const uint8_t *)"p1", 2); /* ping between fragments */
	n += make_frame(buf + n, false, 0x0, true, (const uint8_t *)"lo ", 3);
	n += make_frame(buf + n, true, 0x0, true, (const uint8_t *)"world", 5);
	/* Dribble it byte by byte: framing must not depend on read boundaries. */
	for (size_t i = 0; i < n; i++) send_all(fd, buf + i, 1);
	server_frame f;
	assert_true(recv_frame(fd, &f));
	assert_int_equal(f.opcode, 0xA); /* pong, same payload */
	assert_int_equal(f.len, 2);
	assert_memory_equal(f.payload, "p1", 2);
	assert_true(recv_frame(fd, &f));
	assert_int_equal(f.opcode, 0x2);
	assert_int_equal(f.len, 11);
	assert_memory_equal(f.payload, "hello world", 11);
	close(fd);
}

static void test_ws_unmasked_client_frame_closes_1002(void **state) {
	(void)state;
	int fd = ws_connect();
	uint8_t frame[64];
	size_t n = make_frame(frame, true, 0x2, false, (const uint8_t *)"abc", 3);
	send_all(fd, frame, n);
	server_frame f;
	assert_true(recv_frame(fd, &f));
	assert_int_equal(close_code(&f), CROWD_WS_CLOSE_PROTOCOL_ERROR);
	expect_eof(fd);
	close(fd);
}

static void test_ws_oversized_control_frame_closes_1002(void **state) {
	(void)state;
	int fd = ws_connect();
	uint8_t payload[200], frame[256];
	memset(payload, 'p', sizeof payload);
	size_t n = make_frame(frame, true, 0x9, true, payload, sizeof payload); /* ping: at most 125 bytes */
	send_all(fd, frame, n);
	server_frame f;
	assert_true(recv_frame(fd, &f));
	assert_int_equal(close_code(&f), CROWD_WS_CLOSE_PROTOCOL_ERROR);
	expect_eof(fd);
	close(fd);
}

static void test_ws_text_frame_closes_1003(void **state) {
	(void)state;
	int fd = ws_connect();
	uint8_t frame[64];
	size_t n = make_frame(frame, true, 0x1, true, (const uint8_t *)"hello", 5);
	send_all(fd, frame, n);
	server_frame f;
	assert_true(recv_frame(fd, &f));
	assert_int_equal(close_code(&f), CROWD_WS_CLOSE_UNSUPPORTED_DATA);
	expect_eof(fd);
	close(fd);
}

static void test_ws_oversize_closes_1009(void **state) {
	(void)state;
	int fd = ws_connect();
	static uint8_t payload[2000], frame[2100];
	size_t n = make_frame(frame, true, 0x2, true, payload, sizeof payload); /* limit is 1024 */
	send_all(fd, frame, n);
	server_frame f;
	assert_true(recv_frame(fd, &f));
	assert_int_equal(close_code(&f), CROWD_WS_CLOSE_MESSAGE_TOO_BIG);
	expect_eof(fd);
	close(fd);
}

static void test_ws_oversize_by_fragments_closes_1009(void **state) {
	(void)state;
	int fd = ws_connect();
	static uint8_t payload[600], frame[2000];
	size_t n = make_frame(frame, false, 0x2, true, payload, sizeof payload);
	n += make_frame(frame + n, true, 0x0, true, payload, sizeof payload); /* 1200 > 1024 in all */
	send_all(fd, frame, n);
	server_frame f;
	assert_true(recv_frame(fd, &f));
	assert_int_equal(close_code(&f), CROWD_WS_CLOSE_MESSAGE_TOO_BIG);
	close(fd);
}

static void test_ws_client_close_is_echoed(void **state) {
	(void)state;
	int fd = ws_connect();
	uint8_t frame[64];
	const uint8_t code[2] = {0x03, 0xE8}; /* 1000 */
	size_t n = make_frame(frame, true, 0x8, true, code, 2);
	send_all(fd, frame, n);
	server_frame f;
	assert_true(recv_frame(fd, &f));
	assert_int_equal(close_code(&f), 1000);
	expect_eof(fd);
	close(fd);
}

/* RFC 6455 5.5.1: a close payload is empty or holds a 2-byte code; 1 byte is a protocol error. */
static void test_ws_one_byte_close_payload_closes_1002(void **state) {
	(void)state;
	int fd = ws_connect();
	uint8_t frame[64];
	const uint8_t half[1] = {0x03};
	size_t n = make_frame(frame, true, 0x8, true, half, 1);
	send_all(fd, frame, n);
	server_frame f;
	assert_true(recv_frame(fd, &f));
	assert_int_equal(close_code(&f), CROWD_WS_CLOSE_PROTOCOL_ERROR);
	expect_eof(fd);
	close(fd);
	/* 1005 ("no status") may never be sent in a close frame */
	fd = ws_connect();
	const uint8_t no_status[2] = {0x03, 0xED};
	n = make_frame(frame, true, 0x8, true, no_status, 2);
	send_all(fd, frame, n);
	assert_true(recv_frame(fd, &f));
	assert_int_equal(close_code(&f), CROWD_WS_CLOSE_PROTOCOL_ERROR);
	expect_eof(fd);
	close(fd);
}

/* The subprotocol is required: an upgrade that names none is refused 400 with
 * the reason in the body (and counted); so is one that names others but not
 * crowd.v1 (test_http_error_statuses). The JS client (and so the viewer) and
 * crowd-load send it; the Unity client speaks TCP only. */
static void test_ws_upgrade_without_subprotocol_is_refused(void **state) {
	(void)state;
	uint64_t before = crowd_http_get_stats(server)->refused[CROWD_HTTP_REFUSED_SUBPROTOCOL];
	char response[1024];
	const char req[] = "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
	assert_int_equal(request_status(req, sizeof req - 1, response, sizeof response), 400);
	assert_non_null(strstr(response, "Sec-WebSocket-Protocol must offer crowd.v1"));
	assert_null(strstr(response, "Sec-WebSocket-Accept"));
	/* An empty header names none either. */
	const char empty[] = "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
	                     "Sec-WebSocket-Protocol: \r\n\r\n";
	assert_int_equal(request_status(empty, sizeof empty - 1, response, sizeof response), 400);
	/* Read on the loop thread; the responses above were complete, so the counts are in. */
	assert_int_equal(crowd_http_get_stats(server)->refused[CROWD_HTTP_REFUSED_SUBPROTOCOL], before + 2);
}

static void test_ws_server_initiated_close(void **state) {
	(void)state;
	int fd = ws_connect();
	uint8_t frame[64];
	size_t n = make_frame(frame, true, 0x2, true, (const uint8_t *)"close", 5);
	send_all(fd, frame, n);
	server_frame f;
	assert_true(recv_frame(fd, &f));
	assert_int_equal(f.opcode, 0x2);
	assert_int_equal(f.len, 10);
	assert_memory_equal(f.payload, "last words", 10);
	assert_true(recv_frame(fd, &f));
	assert_int_equal(close_code(&f), CROWD_WS_CLOSE_NORMAL);
	assert_memory_equal(f.payload + 2, "bye", 3);
	expect_eof(fd);
	close(fd);
}

static void test_ws_leftover_after_handshake(void **state) {
	(void)state;
	/* A frame in the same packet as the upgrade request is not lost. */
	int fd = connect_server();
	char req[512];
	int n = snprintf(req, sizeof req,
	                 "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
	                 "Sec-WebSocket-Protocol: crowd.v1\r\n\r\n");
	n += (int)make_frame((uint8_t *)req + n, true, 0x2, true, (const uint8_t *)"early", 5);
	send_all(fd, req, (size_t)n);
	char c;
	int crlf = 0;
	while (crlf < 4) { /* skip the 101 response */
		assert_int_equal(recv(fd, &c, 1, 0), 1);
		crlf = (c == "\r\n\r\n"[crlf]) ? crlf + 1 : (c == '\r');
	}
	server_frame f;
	assert_true(recv_frame(fd, &f));
	assert_int_equal(f.opcode, 0x2);
	assert_memory_equal(f.payload, "early", 5);
	close(fd);
}

/* Hostile bytes: random requests and random frames after a handshake. Each
 * connection gets an answer or a close; the server still serves afterwards. */
static void test_random_bytes_do_no_harm(void **state) {
	(void)state;
	uint32_t seed = 20261202;
	uint8_t buf[600];
	for (int round = 0; round < 150; round++) {
		bool websocket = round % 3 == 0;
		int fd = websocket ? ws_connect() : connect_server();
		size_t n = 1 + (seed = seed * 1664525u + 1013904223u) % sizeof buf;
		for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)((seed = seed * 1664525u + 1013904223u) >> 24);
		if (!websocket && round % 2) memcpy(buf, "GET /", 5); /* get past the method sometimes */
		send(fd, buf, n, MSG_NOSIGNAL);
		shutdown(fd, SHUT_WR);
		char sink[4096];
		recv_until_eof(fd, sink, sizeof sink);
		close(fd);
	}
	char r[4096];
	const char health_req[] = "GET /healthz HTTP/1.1\r\n\r\n";
	assert_int_equal(request_status(health_req, sizeof health_req - 1, r, sizeof r), 200);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_accept_key_rfc_example),
	    cmocka_unit_test(test_http_ok_routes),
	    cmocka_unit_test(test_http_error_statuses),
	    cmocka_unit_test(test_http_413_while_the_body_keeps_coming),
	    cmocka_unit_test(test_http_header_timeout),
	    cmocka_unit_test(test_ws_masked_binary_echo),
	    cmocka_unit_test(test_ws_fragmented_with_ping),
	    cmocka_unit_test(test_ws_unmasked_client_frame_closes_1002),
	    cmocka_unit_test(test_ws_oversized_control_frame_closes_1002),
	    cmocka_unit_test(test_ws_text_frame_closes_1003),
	    cmocka_unit_test(test_ws_oversize_closes_1009),
	    cmocka_unit_test(test_ws_oversize_by_fragments_closes_1009),
	    cmocka_unit_test(test_ws_client_close_is_echoed),
	    cmocka_unit_test(test_ws_one_byte_close_payload_closes_1002),
	    cmocka_unit_test(test_ws_upgrade_without_subprotocol_is_refused),
	    cmocka_unit_test(test_ws_server_initiated_close),
	    cmocka_unit_test(test_ws_leftover_after_handshake),
	    cmocka_unit_test(test_random_bytes_do_no_harm),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
