/* load_ws.h — the client side of WebSocket (RFC 6455) as crowd-load needs it,
 * by hand: the HTTP Upgrade request and its 101 answer (subprotocol crowd.v1),
 * masked binary frames out, unmasked frames in (fragments joined, ping
 * answered, close reported). No I/O: bytes in, bytes out. */
#ifndef CROWD_LOAD_WS_H
#define CROWD_LOAD_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crowd/wire.h"

#define LOAD_WS_MAX_MESSAGE (64u << 20)

typedef enum load_ws_result {
	LOAD_WS_NEED_MORE = 0, /* no whole message yet */
	LOAD_WS_MESSAGE = 1,   /* a binary message: *data, *len (valid until the next call) */
	LOAD_WS_CLOSED = 2,    /* the server sent Close (a Close reply was queued in out) */
	LOAD_WS_ERROR = -1     /* protocol violation or oversize: drop the connection */
} load_ws_result;

typedef struct load_ws {
	bool open;           /* the 101 answer was accepted */
	char key[25];        /* Sec-WebSocket-Key sent (base64 of 16 random bytes) */
	crowd_buf in;        /* received, not yet parsed */
	size_t pos;          /* parse position in `in` */
	crowd_buf message;   /* fragments of the message being assembled */
	bool in_fragmented;  /* a fragmented message is under way */
	uint64_t mask_state; /* random source for masking keys */
} load_ws;

void load_ws_init(load_ws *ws, uint64_t seed);
void load_ws_free(load_ws *ws);

/** Append the Upgrade request for ws://host:port/path to out. */
bool load_ws_request(load_ws *ws, const char *host, int port, const char *path, crowd_buf *out);

/** The Sec-WebSocket-Accept value for a key (28 characters + NUL). */
void load_ws_accept_for(const char *key, char out[29]);

/** Append received bytes. */
bool load_ws_push(load_ws *ws, const void *data, size_t n);

/** Before `open`: check the buffered answer. 0: need more, 1: accepted (ws->open
 * is set; bytes after the header stay buffered as frames), -1: refused (a
 * message in err). */
int load_ws_handshake(load_ws *ws, char *err, size_t errlen);

/** Append one masked frame with the given opcode (2 = binary) to out. */
bool load_ws_frame(load_ws *ws, uint8_t opcode, const uint8_t *payload, size_t n, crowd_buf *out);

/** The next complete message. Pings are answered into `out` (to be sent). */
load_ws_result load_ws_next(load_ws *ws, const uint8_t **data, size_t *len, crowd_buf *out);

#endif /* CROWD_LOAD_WS_H */
