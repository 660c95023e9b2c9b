/* agones_server.h — crowd-server's Agones extension: starts the SDK client when
 * --agones is on, says Ready once every listener accepts connections, and sends
 * /shutdown when the server drains. Also what /healthz shows about the GameServer. */
#ifndef CROWD_AGONES_SERVER_H
#define CROWD_AGONES_SERVER_H

#include <stddef.h>

#include "server.h"

/** Register the extension with the server (before server_start) when cfg->agones is
 * set; a no-op otherwise. Returns 0, or -1 when the server has no room for it. */
int agones_server_register(server *srv);

/** The "agones" member for /healthz: {"ready":..,"name":..,"labels":{..}}; writes
 * nothing and returns 0 when Agones is off. snprintf-style: returns the length needed. */
size_t agones_server_healthz_json(char *buf, size_t cap);

#endif
