/* ws.c — server-side WebSocket protocol over wslay's event API: frames in from
 * feed(), whole binary messages out to a callback, frames out through a write
 * callback. crowd.v1 is binary only, so a text message closes with 1003. */
#include "ws.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <wslay/wslay.h>

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

struct crowd_ws {
	wslay_event_context_ptr ctx;
	crowd_ws_callbacks cb;
	const uint8_t *in; /* bytes of the current feed() not yet given to wslay */
	size_t in_len;
	bool in_feed; /* inside wslay_event_recv: flush after it returns */
	bool write_failed;
	uint16_t close_sent; /* code of our close frame once written */
	uint16_t close_received;
	/* A close the owner asks for waits until the messages queued before it are
	 * written: wslay itself would send the control frame ahead of them. */
	bool close_requested, close_queued;
	bool read_failed; /* wslay failed on input; our own 1002 was written, wslay is done with */
	bool bad_close;   /* the peer's close frame was malformed: answer 1002, not wslay's echo */
	/* Frames wslay produced in one flush, handed to the owner as one write. */
	uint8_t *out;
	size_t out_len, out_cap;
	uint16_t close_code;
	char close_reason[123];
	size_t close_reason_len;
};

bool crowd_ws_key_valid(const char *key, size_t len) {
	/* 16 bytes in base64: 22 characters and "==". */
	if (len != 24 || key[22] != '=' || key[23] != '=') return false;
	uint8_t raw[18];
	int n = EVP_DecodeBlock(raw, (const unsigned char *)key, 24);
	return n == 18; /* EVP_DecodeBlock counts the padding as zero bytes */
}

bool crowd_ws_accept_key(const char *key, size_t len, char out[CROWD_WS_ACCEPT_LEN + 1]) {
	if (len > 64) return false;
	char joined[64 + sizeof ws_guid];
	memcpy(joined, key, len);
	memcpy(joined + len, ws_guid, sizeof ws_guid - 1);
	uint8_t digest[SHA_DIGEST_LENGTH];
	if (!SHA1((const unsigned char *)joined, len + sizeof ws_guid - 1, digest)) return false;
	return EVP_EncodeBlock((unsigned char *)out, digest, SHA_DIGEST_LENGTH) == (int)CROWD_WS_ACCEPT_LEN;
}

bool crowd_ws_offers_protocol(const char *header, size_t len, const char *proto) {
	size_t plen = strlen(proto);
	size_t i = 0;
	while (i < len) {
		while (i < len && (header[i] == ' ' || header[i] == '\t' || header[i] == ',')) i++;
		size_t start = i;
		while (i < len && header[i] != ',' && header[i] != ' ' && header[i] != '\t') i++;
		if (i - start == plen && strncasecmp(header + start, proto, plen) == 0) return true;
	}
	return false;
}

static ssize_t ws_recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user) {
	(void)flags;
	crowd_ws *ws = user;
	if (ws->in_len == 0) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	size_t n = len < ws->in_len ? len : ws->in_len;
	memcpy(buf, ws->in, n);
	ws->in += n;
	ws->in_len -= n;
	return (ssize_t)n;
}

static ssize_t ws_send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags, void *user) {
	(void)flags;
	crowd_ws *ws = user;
	if (ws->out_len + len > ws->out_cap) {
		size_t cap = ws->out_cap ? ws->out_cap : 4096;
		while (cap < ws->out_len + len) cap *= 2;
		uint8_t *p = realloc(ws->out, cap);
		if (!p) {
			ws->write_failed = true;
			wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
			return -1;
		}
		ws->out = p;
		ws->out_cap = cap;
	}
	memcpy(ws->out + ws->out_len, data, len);
	ws->out_len += len;
	return (ssize_t)len;
}

/* Hand what wslay produced to the owner in one write. */
static void ws_write_out(crowd_ws *ws) {
	if (ws->out_len && !ws->write_failed && !ws->cb.write(ws->cb.user, ws->out, ws->out_len))
		ws->write_failed = true;
	ws->out_len = 0;
}

/* RFC 6455 7.4: codes a peer may put in a close frame. */
static bool close_code_valid(uint16_t code) {
	return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

static void ws_msg_cb(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg, void *user) {
	crowd_ws *ws = user;
	switch (arg->opcode) {
	case WSLAY_BINARY_FRAME:
		if (!ws->close_requested && !wslay_event_get_close_sent(ctx))
			ws->cb.message(ws->cb.user, arg->msg, arg->msg_length);
		break;
	case WSLAY_TEXT_FRAME:
		crowd_ws_close(ws, CROWD_WS_CLOSE_UNSUPPORTED_DATA, "crowd.v1 is binary only");
		break;
	case WSLAY_CONNECTION_CLOSE:
		/* wslay queues the echoing close frame itself; a malformed close (a
		 * 1-byte payload, a code no endpoint may send) is answered 1002 instead,
		 * in crowd_ws_feed. */
		ws->close_received = arg->status_code ? arg->status_code : 1005u;
		if (arg->msg_length == 1 || (arg->msg_length >= 2 && !close_code_valid(arg->status_code)))
			ws->bad_close = true;
		break;
	default: /* ping is answered by wslay; pong needs nothing */
		break;
	}
}

static bool ws_flush(crowd_ws *ws) {
	/* The send callback takes everything, so one call empties wslay's queues. */
	int r = wslay_event_want_write(ws->ctx) ? wslay_event_send(ws->ctx) : 0;
	if (r == 0 && ws->close_requested && !ws->close_queued) {
		ws->close_queued = true;
		if (wslay_event_queue_close(ws->ctx, ws->close_code, (const uint8_t *)ws->close_reason,
		                            ws->close_reason_len) == 0)
			wslay_event_shutdown_read(ws->ctx);
		r = wslay_event_want_write(ws->ctx) ? wslay_event_send(ws->ctx) : 0;
	}
	ws_write_out(ws);
	if (r != 0) return false;
	if (!ws->close_sent && wslay_event_get_close_sent(ws->ctx)) {
		uint16_t code = wslay_event_get_status_code_sent(ws->ctx);
		ws->close_sent = code ? code : 1005u;
	}
	return !ws->write_failed;
}

crowd_ws *crowd_ws_new(const crowd_ws_callbacks *cb, size_t max_message) {
	static const struct wslay_event_callbacks callbacks = {
	    .recv_callback = ws_recv_cb,
	    .send_callback = ws_send_cb,
	    .on_msg_recv_callback = ws_msg_cb,
	};
	crowd_ws *ws = calloc(1, sizeof *ws);
	if (!ws) return NULL;
	ws->cb = *cb;
	if (wslay_event_context_server_init(&ws->ctx, &callbacks, ws) != 0) {
		free(ws);
		return NULL;
	}
	wslay_event_config_set_max_recv_msg_length(ws->ctx, max_message);
	return ws;
}

void crowd_ws_free(crowd_ws *ws) {
	if (!ws) return;
	wslay_event_context_free(ws->ctx);
	free(ws->out);
	free(ws);
}

bool crowd_ws_feed(crowd_ws *ws, const uint8_t *data, size_t len) {
	if (ws->read_failed) return true; /* closing: discard */
	ws->in = data;
	ws->in_len = len;
	ws->in_feed = true;
	int r = wslay_event_get_read_enabled(ws->ctx) ? wslay_event_recv(ws->ctx) : 0;
	ws->in_feed = false;
	ws->in = NULL;
	ws->in_len = 0;
	if (r != 0 || ws->bad_close) {
		/* wslay fails some malformed frames (a control frame over 125 bytes) with
		 * no close frame, or an empty one, queued: write our own 1002 directly and
		 * report the connection as finishing, so the owner closes it once the frame
		 * is out (what wslay left queued is dropped with the connection). */
		if (ws->close_requested || wslay_event_get_close_sent(ws->ctx) || ws->write_failed) return false;
		static const uint8_t close_1002[] = {0x88, 0x02, CROWD_WS_CLOSE_PROTOCOL_ERROR >> 8,
		                                     CROWD_WS_CLOSE_PROTOCOL_ERROR & 0xff};
		if (!ws->cb.write(ws->cb.user, close_1002, sizeof close_1002)) {
			ws->write_failed = true;
			return false;
		}
		ws->close_sent = CROWD_WS_CLOSE_PROTOCOL_ERROR;
		ws->close_requested = ws->read_failed = true; /* no more frames through wslay */
		return true;
	}
	return ws_flush(ws);
}

bool crowd_ws_send(crowd_ws *ws, const uint8_t *data, size_t len) {
	if (ws->close_requested || ws->close_sent || !wslay_event_get_write_enabled(ws->ctx)) return false;
	struct wslay_event_msg msg = {.opcode = WSLAY_BINARY_FRAME, .msg = data, .msg_length = len};
	if (wslay_event_queue_msg(ws->ctx, &msg) != 0) return false;
	return ws->in_feed ? true : ws_flush(ws);
}

void crowd_ws_close(crowd_ws *ws, uint16_t code, const char *reason) {
	if (ws->close_requested) return;
	ws->close_requested = true;
	ws->close_code = code;
	size_t rlen = reason ? strlen(reason) : 0;
	if (rlen > sizeof ws->close_reason) rlen = sizeof ws->close_reason;
	if (rlen) memcpy(ws->close_reason, reason, rlen);
	ws->close_reason_len = rlen;
	if (!ws->in_feed) ws_flush(ws);
}

bool crowd_ws_finished(const crowd_ws *ws) {
	return ws->close_sent != 0 || ws->write_failed;
}

uint16_t crowd_ws_close_code_sent(const crowd_ws *ws) {
	return ws->close_sent;
}

uint16_t crowd_ws_close_code_received(const crowd_ws *ws) {
	return ws->close_received;
}
