/* ws.h — one server-side WebSocket connection (RFC 6455) over wslay's event
 * API, with no socket of its own: the owner feeds received bytes in and gets the
 * bytes to write through a callback, so the same code runs over libuv and in tests.
 * Also the opening handshake's Sec-WebSocket-Accept digest (SHA-1 + base64). */
#ifndef CROWD_WS_H
#define CROWD_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CROWD_WS_SUBPROTOCOL "crowd.v1"
#define CROWD_WS_ACCEPT_LEN 28u /* base64 of a 20-byte SHA-1 */

/* Close codes we send (RFC 6455 §7.4.1). */
#define CROWD_WS_CLOSE_NORMAL 1000u
#define CROWD_WS_CLOSE_GOING_AWAY 1001u
#define CROWD_WS_CLOSE_PROTOCOL_ERROR 1002u
#define CROWD_WS_CLOSE_UNSUPPORTED_DATA 1003u /* a text frame: crowd.v1 is binary only */
#define CROWD_WS_CLOSE_POLICY_VIOLATION 1008u
#define CROWD_WS_CLOSE_MESSAGE_TOO_BIG 1009u
#define CROWD_WS_CLOSE_INTERNAL_ERROR 1011u
#define CROWD_WS_CLOSE_TRY_AGAIN_LATER 1013u

/** True if `key` is a valid Sec-WebSocket-Key: base64 of exactly 16 bytes. */
bool crowd_ws_key_valid(const char *key, size_t len);

/** Sec-WebSocket-Accept for a client key: base64(SHA-1(key + GUID)), NUL-terminated. */
bool crowd_ws_accept_key(const char *key, size_t len, char out[CROWD_WS_ACCEPT_LEN + 1]);

/** True if a Sec-WebSocket-Protocol header value (comma-separated tokens) offers `proto`. */
bool crowd_ws_offers_protocol(const char *header, size_t len, const char *proto);

typedef struct crowd_ws crowd_ws;

typedef struct crowd_ws_callbacks {
	void *user;
	/** Bytes to put on the wire, in order. Return false if they cannot be queued
	 * (the connection is then treated as failed). */
	bool (*write)(void *user, const uint8_t *data, size_t len);
	/** One whole binary message (fragments already joined). May call crowd_ws_send/close. */
	void (*message)(void *user, const uint8_t *data, size_t len);
} crowd_ws_callbacks;

/** A connection that has completed the HTTP handshake. max_message bounds a
 * received message (bigger: close 1009). NULL on allocation failure. */
crowd_ws *crowd_ws_new(const crowd_ws_callbacks *cb, size_t max_message);
void crowd_ws_free(crowd_ws *ws);

/** Process received bytes (any split). Returns false when the connection is
 * broken beyond a close handshake and the socket should be closed now. */
bool crowd_ws_feed(crowd_ws *ws, const uint8_t *data, size_t len);

/** Queue one binary message. False once closing or on allocation failure. */
bool crowd_ws_send(crowd_ws *ws, const uint8_t *data, size_t len);

/** Start the closing handshake with `code` (reason may be NULL). Idempotent. */
void crowd_ws_close(crowd_ws *ws, uint16_t code, const char *reason);

/** True once our close frame has been written: nothing more will be sent, so the
 * owner closes the socket when its write queue drains. */
bool crowd_ws_finished(const crowd_ws *ws);

/** The close code we sent (0 if none yet) and the one the peer sent (0 if none). */
uint16_t crowd_ws_close_code_sent(const crowd_ws *ws);
uint16_t crowd_ws_close_code_received(const crowd_ws *ws);

#endif /* CROWD_WS_H */
