/* test_ws.c — crowd-load's WebSocket client framing: the RFC 6455 accept
 * value, the 101 answer checks, masked frames out, and server frames in at
 * every length class, split anywhere, fragmented, with pings and close. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "load_ws.h"

static void test_accept_value(void **state) {
	(void)state;
	char out[29];
	load_ws_accept_for("dGhlIHNhbXBsZSBub25jZQ==", out); /* the RFC's own example */
	assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

static int answer(load_ws *ws, const char *status, const char *accept, const char *protocol) {
	char text[512], err[160];
	snprintf(text, sizeof text, "%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n%s%s%s%s%s%s\r\n", status,
	         accept ? "Sec-WebSocket-Accept: " : "", accept ? accept : "", accept ? "\r\n" : "",
	         protocol ? "Sec-WebSocket-Protocol: " : "", protocol ? protocol : "", protocol ? "\r\n" : "");
	size_t n = strlen(text);
	/* byte by byte: only the last byte completes it */
	for (size_t i = 0; i + 1 < n; i++) {
		assert_true(load_ws_push(ws, text + i, 1));
		assert_int_equal(load_ws_handshake(ws, err, sizeof err), 0);
	}
	assert_true(load_ws_push(ws, text + n - 1, 1));
	return load_ws_handshake(ws, err, sizeof err);
}

static void test_handshake(void **state) {
	(void)state;
	struct {
		const char *status;
		bool good_accept;
		const char *protocol;
		int expect;
	} cases[] = {
	    {"HTTP/1.1 101 Switching Protocols", true, "crowd.v1", 1},
	    {"HTTP/1.1 101 Switching Protocols", false, "crowd.v1", -1},
	    {"HTTP/1.1 101 Switching Protocols", true, NULL, -1},
	    {"HTTP/1.1 101 Switching Protocols", true, "chat", -1},
	    {"HTTP/1.1 404 Not Found", true, "crowd.v1", -1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		load_ws ws;
		crowd_buf req;
		load_ws_init(&ws, 42 + i);
		crowd_buf_init(&req);
		assert_true(load_ws_request(&ws, "127.0.0.1", 8080, "/ws", &req));
		assert_non_null(memmem(req.data, req.len, "Sec-WebSocket-Protocol: crowd.v1\r\n", 34));
		assert_non_null(memmem(req.data, req.len, "GET /ws HTTP/1.1\r\n", 18));
		char accept[29];
		load_ws_accept_for(ws.key, accept);
		int rc = answer(&ws, cases[i].status,
		                cases[i].good_accept ? accept : "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", cases[i].protocol);
		assert_int_equal(rc, cases[i].expect);
		assert_int_equal(ws.open, rc == 1);
		crowd_buf_free(&req);
		load_ws_free(&ws);
	}
}

/* An unmasked server frame. */
static size_t server_frame(uint8_t *out, bool fin, uint8_t opcode, const uint8_t *payload, size_t n) {
	size_t h = 0;
	out[h++] = (uint8_t)((fin ? 0x80 : 0) | opcode);
	if (n < 126) {
		out[h++] = (uint8_t)n;
	} else if (n <= 0xFFFF) {
		out[h++] = 126;
		out[h++] = (uint8_t)(n >> 8);
		out[h++] = (uint8_t)n;
	} else {
		out[h++] = 127;
		for (int i = 7; i >= 0; i--) out[h++] = (uint8_t)((uint64_t)n >> (8 * i));
	}
	memcpy(out + h, payload, n);
	return h + n;
}

static load_ws open_ws(void) {
	load_ws ws;
	load_ws_init(&ws, 7);
	ws.open = true;
	return ws;
}

static void test_messages_any_split(void **state) {
	(void)state;
	static uint8_t payload[70000], stream[300000];
	for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)(i * 31 + 7);
	const size_t sizes[] = {0, 1, 125, 126, 65535, 65536, 69999};
	size_t len = 0;
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
		len += server_frame(stream + len, true, 0x2, payload, sizes[k]);
	uint8_t ping[3] = {1, 2, 3};
	len += server_frame(stream + len, true, 0x9, ping, 3);
	/* one message in three fragments, a ping between them */
	len += server_frame(stream + len, false, 0x2, payload, 100);
	len += server_frame(stream + len, true, 0x9, ping, 3);
	len += server_frame(stream + len, false, 0x0, payload + 100, 50);
	len += server_frame(stream + len, true, 0x0, payload + 150, 25);
	len += server_frame(stream + len, true, 0x8, (const uint8_t *)"\x03\xe8", 2);

	const size_t chunks[] = {1, 7, 4096, sizeof stream};
	for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
		load_ws ws = open_ws();
		crowd_buf out;
		crowd_buf_init(&out);
		size_t got = 0, fed = 0;
		bool closed = false;
		while (!closed) {
			assert_true(fed < len);
			size_t n = len - fed < chunks[c] ? len - fed : chunks[c];
			assert_true(load_ws_push(&ws, stream + fed, n));
			fed += n;
			for (;;) {
				const uint8_t *msg;
				size_t mlen;
				load_ws_result r = load_ws_next(&ws, &msg, &mlen, &out);
				if (r == LOAD_WS_NEED_MORE) break;
				if (r == LOAD_WS_CLOSED) {
					closed = true;
					break;
				}
				assert_int_equal(r, LOAD_WS_MESSAGE);
				size_t want = got < 7 ? sizes[got] : 175;
				assert_int_equal(mlen, want);
				assert_memory_equal(msg, payload, want);
				got++;
			}
		}
		assert_int_equal(got, 8);
		assert_int_equal(fed, len);
		/* two pongs and a close went out, each masked: 2+4+3, 2+4+3, 2+4+2 */
		assert_int_equal(out.len, 9 + 9 + 8);
		assert_int_equal(out.data[0], 0x8A);
		assert_int_equal(out.data[1], 0x80 | 3);
		for (int i = 0; i < 3; i++) assert_int_equal(out.data[6 + i] ^ out.data[2 + (i & 3)], ping[i]);
		assert_int_equal(out.data[18], 0x88);
		crowd_buf_free(&out);
		load_ws_free(&ws);
	}
}

static void test_protocol_errors(void **state) {
	(void)state;
	uint8_t frames[][16] = {
	    {0x82, 0x81, 1, 2, 3, 4, 0},            /* masked by the server */
	    {0x81, 0x01, 'x'},                      /* text */
	    {0x80, 0x01, 'x'},                      /* continuation without a start */
	    {0x09, 0x01, 'x'},                      /* fragmented ping */
	    {0xC2, 0x01, 'x'},                      /* RSV bit without an extension */
	    {0x82, 127, 0, 0, 0, 0, 0x10, 0, 0, 0}, /* 256 MB: over the limit */
	};
	const size_t lens[] = {7, 3, 3, 3, 3, 10};
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		load_ws ws = open_ws();
		crowd_buf out;
		crowd_buf_init(&out);
		const uint8_t *msg;
		size_t mlen;
		assert_true(load_ws_push(&ws, frames[i], lens[i]));
		assert_int_equal(load_ws_next(&ws, &msg, &mlen, &out), LOAD_WS_ERROR);
		crowd_buf_free(&out);
		load_ws_free(&ws);
	}
}

static void test_client_frames_are_masked(void **state) {
	(void)state;
	load_ws ws = open_ws();
	static uint8_t payload[300];
	for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)i;
	const size_t sizes[] = {0, 5, 125, 126, 300};
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		crowd_buf out;
		crowd_buf_init(&out);
		assert_true(load_ws_frame(&ws, 0x2, payload, sizes[k], &out));
		assert_int_equal(out.data[0], 0x82);
		assert_true(out.data[1] & 0x80);
		size_t n = out.data[1] & 0x7F, h = 2;
		if (n == 126) {
			n = ((size_t)out.data[2] << 8) | out.data[3];
			h = 4;
		}
		assert_int_equal(n, sizes[k]);
		const uint8_t *key = out.data + h;
		assert_int_equal(out.len, h + 4 + n);
		for (size_t i = 0; i < n; i++) assert_int_equal(out.data[h + 4 + i] ^ key[i & 3], payload[i]);
		crowd_buf_free(&out);
	}
	load_ws_free(&ws);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_accept_value),
	    cmocka_unit_test(test_handshake),
	    cmocka_unit_test(test_messages_any_split),
	    cmocka_unit_test(test_protocol_errors),
	    cmocka_unit_test(test_client_frames_are_masked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
