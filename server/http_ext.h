/* http_ext.h — crowd-server's HTTP side as a server extension: the HTTP
 * listener (http.h) on the server's loop, serving the viewer, /healthz and
 * /metrics, and WebSocket clients as sessions through transport_ops. */
#ifndef CROWD_SERVER_HTTP_EXT_H
#define CROWD_SERVER_HTTP_EXT_H

#include "server.h"

/** Register the HTTP extension (listening on srv->cfg->http) before server_start.
 * web_root: directory of the viewer files (NULL: the build's, CROWD_WEB_ROOT).
 * Returns 0 or -1. */
int http_ext_register(server *srv, const char *web_root);

#endif
