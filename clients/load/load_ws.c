/* load_ws.c — WebSocket client framing for crowd-load (see load_ws.h). */
#include "load_ws.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define MAX_HEADER 8192u

static uint64_t next_random(uint64_t *s) {
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

void load_ws_init(load_ws *ws, uint64_t seed) {
	memset(ws, 0, sizeof *ws);
	crowd_buf_init(&ws->in);
	crowd_buf_init(&ws->message);
	ws->mask_state = seed ? seed : 0x2545F4914F6CDD1Dull;
}

void load_ws_free(load_ws *ws) {
	crowd_buf_free(&ws->in);
	crowd_buf_free(&ws->message);
}

void load_ws_accept_for(const char *key, char out[29]) {
	char text[64 + sizeof WS_GUID];
	snprintf(text, sizeof text, "%s%s", key, WS_GUID);
	unsigned char digest[SHA_DIGEST_LENGTH];
	SHA1((const unsigned char *)text, strlen(text), digest);
	EVP_EncodeBlock((unsigned char *)out, digest, SHA_DIGEST_LENGTH);
}

bool load_ws_request(load_ws *ws, const char *host, int port, const char *path, crowd_buf *out) {
	unsigned char nonce[16];
	for (int i = 0; i < 16; i += 8) {
		uint64_t r = next_random(&ws->mask_state);
		memcpy(nonce + i, &r, 8);
	}
	EVP_EncodeBlock((unsigned char *)ws->key, nonce, sizeof nonce);
	char req[1024];
	bool v6 = strchr(host, ':') != NULL;
	int n = snprintf(req, sizeof req,
	                 "GET %s HTTP/1.1\r\nHost: %s%s%s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	                 "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: crowd.v1\r\n"
	                 "User-Agent: crowd-load\r\n\r\n",
	                 path, v6 ? "[" : "", host, v6 ? "]" : "", port, ws->key);
	return n > 0 && (size_t)n < sizeof req && crowd_buf_append(out, req, (size_t)n);
}

bool load_ws_push(load_ws *ws, const void *data, size_t n) {
	if (ws->pos > 0 && ws->pos == ws->in.len) {
		ws->in.len = 0; /* everything parsed: start over */
		ws->pos = 0;
	} else if (ws->pos > 65536 && ws->pos * 2 > ws->in.len) {
		crowd_buf_consume(&ws->in, ws->pos);
		ws->pos = 0;
	}
	return crowd_buf_append(&ws->in, data, n);
}

/* The value of header `name` in the block [start, end), trimmed; false if absent. */
static bool header_value(const char *start, const char *end, const char *name, char *out, size_t cap) {
	size_t nl = strlen(name);
	for (const char *line = start; line < end;) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol) eol = end;
		if ((size_t)(eol - line) > nl && strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
			const char *v = line + nl + 1;
			while (v < eol && (*v == ' ' || *v == '\t')) v++;
			const char *ve = eol;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t')) ve--;
			size_t len = (size_t)(ve - v) < cap - 1 ? (size_t)(ve - v) : cap - 1;
			memcpy(out, v, len);
			out[len] = 0;
			return true;
		}
		line = eol + 1;
	}
	return false;
}

int load_ws_handshake(load_ws *ws, char *err, size_t errlen) {
	const char *text = (const char *)ws->in.data;
	size_t len = ws->in.len;
	const char *end = NULL;
	for (size_t i = 3; i < len; i++)
		if (memcmp(text + i - 3, "\r\n\r\n", 4) == 0) {
			end = text + i + 1;
			break;
		}
	if (!end) {
		if (len > MAX_HEADER) {
			snprintf(err, errlen, "no end of the HTTP answer in %u bytes", MAX_HEADER);
			return -1;
		}
		return 0;
	}
	if (len < 12 || memcmp(text, "HTTP/1.1 101", 12) != 0) {
		const char *eol = memchr(text, '\r', (size_t)(end - text));
		snprintf(err, errlen, "upgrade refused: %.*s", (int)(eol ? eol - text : 40), text);
		return -1;
	}
	char value[128], expect[29];
	load_ws_accept_for(ws->key, expect);
	if (!header_value(text, end, "Sec-WebSocket-Accept", value, sizeof value) || strcmp(value, expect) != 0) {
		snprintf(err, errlen, "wrong or missing Sec-WebSocket-Accept");
		return -1;
	}
	if (!header_value(text, end, "Sec-WebSocket-Protocol", value, sizeof value) || strcmp(value, "crowd.v1") != 0) {
		snprintf(err, errlen, "the server did not agree to subprotocol crowd.v1");
		return -1;
	}
	ws->pos = (size_t)(end - text);
	ws->open = true;
	return 1;
}

bool load_ws_frame(load_ws *ws, uint8_t opcode, const uint8_t *payload, size_t n, crowd_buf *out) {
	uint8_t head[14];
	size_t h = 0;
	head[h++] = (uint8_t)(0x80u | (opcode & 0x0Fu)); /* FIN: crowd-load never fragments */
	if (n < 126) {
		head[h++] = (uint8_t)(0x80u | n);
	} else if (n <= 0xFFFF) {
		head[h++] = 0x80u | 126u;
		head[h++] = (uint8_t)(n >> 8);
		head[h++] = (uint8_t)n;
	} else {
		head[h++] = 0x80u | 127u;
		for (int i = 7; i >= 0; i--) head[h++] = (uint8_t)((uint64_t)n >> (8 * i));
	}
	uint32_t mask = (uint32_t)next_random(&ws->mask_state);
	uint8_t key[4] = {(uint8_t)(mask >> 24), (uint8_t)(mask >> 16), (uint8_t)(mask >> 8), (uint8_t)mask};
	memcpy(head + h, key, 4);
	h += 4;
	if (!crowd_buf_reserve(out, h + n)) return false;
	memcpy(out->data + out->len, head, h);
	uint8_t *dst = out->data + out->len + h;
	for (size_t i = 0; i < n; i++) dst[i] = payload[i] ^ key[i & 3];
	out->len += h + n;
	return true;
}

load_ws_result load_ws_next(load_ws *ws, const uint8_t **data, size_t *len, crowd_buf *out) {
	for (;;) {
		const uint8_t *p = ws->in.data + ws->pos;
		size_t avail = ws->in.len - ws->pos;
		if (avail < 2) return LOAD_WS_NEED_MORE;
		bool fin = p[0] & 0x80u;
		uint8_t opcode = p[0] & 0x0Fu;
		if (p[0] & 0x70u) return LOAD_WS_ERROR; /* no extension was negotiated */
		if (p[1] & 0x80u) return LOAD_WS_ERROR; /* a server must not mask */
		uint64_t n = p[1] & 0x7Fu;
		size_t h = 2;
		if (n == 126) {
			if (avail < 4) return LOAD_WS_NEED_MORE;
			n = ((uint64_t)p[2] << 8) | p[3];
			h = 4;
		} else if (n == 127) {
			if (avail < 10) return LOAD_WS_NEED_MORE;
			n = 0;
			for (int i = 0; i < 8; i++) n = (n << 8) | p[2 + i];
			h = 10;
		}
		if (n > LOAD_WS_MAX_MESSAGE) return LOAD_WS_ERROR;
		if (avail < h + n) return LOAD_WS_NEED_MORE;
		const uint8_t *payload = p + h;
		ws->pos += h + (size_t)n;
		if (opcode >= 0x8) { /* control frames: never fragmented, at most 125 bytes */
			if (!fin || n > 125) return LOAD_WS_ERROR;
			if (opcode == 0x9) {
				if (!load_ws_frame(ws, 0xA, payload, (size_t)n, out)) return LOAD_WS_ERROR;
				continue;
			}
			if (opcode == 0xA) continue;
			if (opcode == 0x8) {
				load_ws_frame(ws, 0x8, payload, n >= 2 ? 2 : 0, out);
				return LOAD_WS_CLOSED;
			}
			return LOAD_WS_ERROR;
		}
		if (opcode == 0x0) {
			if (!ws->in_fragmented) return LOAD_WS_ERROR;
		} else if (opcode == 0x2) {
			if (ws->in_fragmented) return LOAD_WS_ERROR;
			ws->message.len = 0;
			if (fin) { /* the common case: hand out the frame in place */
				*data = payload;
				*len = (size_t)n;
				return LOAD_WS_MESSAGE;
			}
			ws->in_fragmented = true;
		} else {
			return LOAD_WS_ERROR; /* text or reserved: crowd.v1 is binary */
		}
		if (ws->message.len + n > LOAD_WS_MAX_MESSAGE || !crowd_buf_append(&ws->message, payload, (size_t)n))
			return LOAD_WS_ERROR;
		if (fin) {
			ws->in_fragmented = false;
			*data = ws->message.data;
			*len = ws->message.len;
			return LOAD_WS_MESSAGE;
		}
	}
}
