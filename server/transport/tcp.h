/* tcp.h — the TCP transport: a listener, and connections that split the byte
 * stream into varint-length-prefixed messages for their sessions. */
#ifndef CROWD_SERVER_TCP_H
#define CROWD_SERVER_TCP_H

#include "config.h"

typedef struct server server;
typedef struct tcp_listener tcp_listener;

/** Bind and listen on addr; prints "listening tcp HOST:PORT" (the bound port)
 * on stdout and flushes it. Returns 0 or a negative libuv error. */
int tcp_listener_start(server *srv, const config_hostport *addr, tcp_listener **out);

/** Stop accepting and close the listening socket (freed in its close callback). */
void tcp_listener_stop(tcp_listener *l);

#endif
