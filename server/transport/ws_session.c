/* ws_session.c — a WebSocket connection as a session (see ws_session.h):
 * transport TRANSPORT_WS, bare messages. */
#include "ws_session.h"

#include "ws.h"

static int ws_op_send(void *conn, const uint8_t *data, size_t len) {
	return crowd_http_ws_send(conn, data, len) ? 0 : -1;
}

static size_t ws_op_pending(void *conn) {
	return crowd_http_ws_pending(conn);
}

/* The close code tells a browser why, next to the Error message sent before it. */
static uint16_t close_code_for(const session *s) {
	if (!s) /* refused inside session_open: full or shutting down */
		return CROWD_WS_CLOSE_TRY_AGAIN_LATER;
	if (!s->close_reason_set) return CROWD_WS_CLOSE_NORMAL;
	switch (s->close_reason) {
	case DISCONNECT_SHUTDOWN:
		return CROWD_WS_CLOSE_GOING_AWAY;
	case DISCONNECT_SERVER_FULL:
		return CROWD_WS_CLOSE_TRY_AGAIN_LATER;
	case DISCONNECT_FRAME_TOO_LARGE:
		return CROWD_WS_CLOSE_MESSAGE_TOO_BIG;
	case DISCONNECT_MALFORMED:
	case DISCONNECT_PROTOCOL:
		return CROWD_WS_CLOSE_PROTOCOL_ERROR;
	case DISCONNECT_HELLO_TIMEOUT:
	case DISCONNECT_BAD_TOKEN:
	case DISCONNECT_UNSUPPORTED_VERSION:
	case DISCONNECT_SLOW_CONSUMER:
	case DISCONNECT_OUTPUT_HARD_LIMIT:
		return CROWD_WS_CLOSE_POLICY_VIOLATION;
	default:
		return CROWD_WS_CLOSE_NORMAL;
	}
}

static void ws_op_close(void *conn, bool flush) {
	if (!flush) {
		crowd_http_ws_abort(conn);
		return;
	}
	const session *s = crowd_http_ws_session(conn);
	uint16_t code = close_code_for(s);
	crowd_http_ws_close(conn, code,
	                    s && s->close_reason_set ? metrics_disconnect_reason_name(s->close_reason) : NULL);
}

static void ws_op_discard(void *conn) {
	crowd_http_ws_discard_pending(conn);
}

static size_t ws_op_kernel_unsent(void *conn) {
	return crowd_http_ws_kernel_unsent(conn);
}

static const transport_ops ws_ops = {
    .kind = TRANSPORT_WS,
    .length_prefixed = false,
    .send = ws_op_send,
    .pending_bytes = ws_op_pending,
    .close = ws_op_close,
    .discard_pending = ws_op_discard,
    .kernel_unsent = ws_op_kernel_unsent,
};

void *ws_session_open(session_host *host, crowd_http_ws *conn, const char *peer) {
	return session_open(host, &ws_ops, conn, peer);
}

void ws_session_message(void *sess, const uint8_t *data, size_t len) {
	session_on_message(sess, data, len);
}

void ws_session_closed(void *sess, crowd_http_close_reason reason) {
	static const disconnect_reason map[] = {
	    [CROWD_HTTP_CLOSE_PEER] = DISCONNECT_PEER_CLOSED,
	    [CROWD_HTTP_CLOSE_READ_ERROR] = DISCONNECT_READ_ERROR,
	    [CROWD_HTTP_CLOSE_WRITE_ERROR] = DISCONNECT_WRITE_ERROR,
	    [CROWD_HTTP_CLOSE_PROTOCOL] = DISCONNECT_PROTOCOL,
	    [CROWD_HTTP_CLOSE_TOO_BIG] = DISCONNECT_FRAME_TOO_LARGE,
	    [CROWD_HTTP_CLOSE_LOCAL] = DISCONNECT_PEER_CLOSED, /* the session recorded its own reason */
	    [CROWD_HTTP_CLOSE_SHUTDOWN] = DISCONNECT_SHUTDOWN,
	};
	session_on_closed(sess, map[reason]);
}

