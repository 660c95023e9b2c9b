/* tcp.h — the TCP transport: a listener, and connections that split the byte
 * stream into varint-length-prefixed messages for their sessions. */
#ifndef CROWD_SERVER_TCP_H
#define CROWD_SERVER_TCP_H

#include "config.h"
#include "session.h"

typedef struct tcp_listener tcp_listener;

/** Bind and listen on addr, on host->loop; each connection becomes a session
 * of host. Prints "listening tcp HOST:PORT" (the bound port) on stdout and
 * flushes it. Returns 0 or a negative libuv error. */
int tcp_listener_start(session_host *host, const config_hostport *addr, tcp_listener **out);

/** Stop accepting and close the listening socket (freed in its close callback). */
void tcp_listener_stop(tcp_listener *l);

#endif
