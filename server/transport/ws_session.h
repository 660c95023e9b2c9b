/* ws_session.h — a WebSocket connection (http.h, ws.h) as a session: its
 * transport_ops (bare messages, the close code telling a browser why), and
 * the three hooks the HTTP listener calls for it. */
#ifndef CROWD_SERVER_WS_SESSION_H
#define CROWD_SERVER_WS_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "session.h"

/** crowd_http_hooks.ws_open: a session of host for conn (NULL: refused, and closed). */
void *ws_session_open(session_host *host, crowd_http_ws *conn, const char *peer);
/** crowd_http_hooks.ws_message: one whole message for the session. */
void ws_session_message(void *session, const uint8_t *data, size_t len);
/** crowd_http_hooks.ws_closed: the connection is gone. */
void ws_session_closed(void *session, crowd_http_close_reason reason);

#endif
