/* transport.h — how the session layer talks to a connection, whatever its
 * framing. TCP (tcp.c) frames messages with a varint length prefix; WebSocket
 * sends each message as one binary message. Both hand whole messages to
 * session_on_message() and take whole encoded messages through these ops.
 *
 * For a new transport (TCP: tcp.c; WebSocket: ws_session.c), given the
 * server's session_host (session.h: its loop, configuration, the sessions):
 *   - on accept:   s = session_open(host, &my_ops, my_conn, "1.2.3.4:5678");
 *                  NULL means refused: the session layer already queued an Error
 *                  and called my_ops.close(my_conn, true); do not call it again.
 *   - per message: session_on_message(s, data, len) (data is a bare protobuf message)
 *   - framing errors the transport detects itself:
 *                  session_on_transport_error(s, code, reason, "text")
 *                  (queues Error{code} and asks to close)
 *   - when the connection is really gone (in the handle's close callback, never
 *     inside an ops call): session_on_closed(s, reason). After that the session
 *     is freed and calls no op again. */
#ifndef CROWD_SERVER_TRANSPORT_H
#define CROWD_SERVER_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** How a connection frames messages. */
typedef enum transport_kind { TRANSPORT_TCP = 0, TRANSPORT_WS = 1, TRANSPORT_COUNT } transport_kind;

/** Why a connection ended. */
typedef enum disconnect_reason {
	DISCONNECT_PEER_CLOSED = 0, /* the client closed it */
	DISCONNECT_READ_ERROR,      /* reset, or another socket error */
	DISCONNECT_WRITE_ERROR,
	DISCONNECT_HELLO_TIMEOUT,
	DISCONNECT_BAD_TOKEN,
	DISCONNECT_UNSUPPORTED_VERSION,
	DISCONNECT_FRAME_TOO_LARGE,
	DISCONNECT_MALFORMED,         /* bytes that cannot be framed */
	DISCONNECT_SLOW_CONSUMER,     /* above the soft output limit too long */
	DISCONNECT_OUTPUT_HARD_LIMIT, /* above the hard output limit */
	DISCONNECT_SERVER_FULL,
	DISCONNECT_SHUTDOWN,
	DISCONNECT_PROTOCOL, /* transport-level protocol violation (e.g. WebSocket) */
	DISCONNECT_REASON_COUNT
} disconnect_reason;

typedef struct transport_ops {
	transport_kind kind;
	/** true: send() receives each message already preceded by its varint length
	 * (the TCP stream format); false: bare messages (WebSocket). */
	bool length_prefixed;
	/** Queue one whole encoded message (copy it; the buffer is reused). Returns 0,
	 * or -1 if the connection is already broken (the transport closes it). */
	int (*send)(void *conn, const uint8_t *data, size_t len);
	/** Bytes accepted by send() and not yet handed to the kernel: with
	 * kernel_unsent, the output buffer the soft and hard limits apply to. */
	size_t (*pending_bytes)(void *conn);
	/** Close. flush: write what is queued first, giving up after a bounded time;
	 * !flush: drop it and close now. May be called again with !flush to cut a
	 * flushing close short. Eventually leads to session_on_closed(). */
	void (*close)(void *conn, bool flush);
	/** Drop the whole messages queued and not yet handed to the kernel (a cut
	 * slow consumer's Error then goes out right after what is in flight). */
	void (*discard_pending)(void *conn);
	/** Bytes the kernel holds for this connection and has not sent yet (a peer
	 * that stopped reading closed its window), as far as the limits need them:
	 * the kernel takes only about the soft limit unsent (TCP_NOTSENT_LOWAT), so
	 * while nothing waits in the queue this is 0 without asking the kernel.
	 * Asked once a tick; added to pending_bytes for the output limits. May be NULL (0). */
	size_t (*kernel_unsent)(void *conn);
} transport_ops;

#endif
