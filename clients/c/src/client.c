/* client.c — the connection half of the C client: connect with a timeout,
 * queue and write output without blocking, read and split frames, decode them
 * (snapshots into the fixed-point view, then into float arrays) and dispatch
 * them to the caller's callbacks. Commands live in commands.c. */
#include "client_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

crowd_client_options crowd_client_default_options(void) {
	crowd_client_options o;
	memset(&o, 0, sizeof o);
	o.connect_timeout_ms = 5000;
	o.max_frame = 64u << 20;
	o.max_output = 16u << 20;
	o.max_read_per_poll = 4u << 20;
	o.reconnect.min_delay_ms = 250;
	o.reconnect.max_delay_ms = 5000;
	return o;
}

uint64_t crowd_client_now_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Milliseconds left until deadline_us; -1 stays "forever". */
static int remaining_ms(int timeout_ms, uint64_t deadline_us) {
	if (timeout_ms < 0) return -1;
	uint64_t now = crowd_client_now_us();
	if (now >= deadline_us) return 0;
	return (int)((deadline_us - now + 999u) / 1000u);
}

int crowd_client_parse_address(const char *address, char *host, size_t host_size, uint16_t *port) {
	if (!address || !host || host_size == 0 || !port) return CROWD_CLIENT_ERR_ARGUMENT;
	const char *host_start = address, *host_end, *port_str;
	if (address[0] == '[') {
		host_start = address + 1;
		host_end = strchr(host_start, ']');
		if (!host_end || host_end[1] != ':') return CROWD_CLIENT_ERR_ARGUMENT;
		port_str = host_end + 2;
	} else {
		host_end = strrchr(address, ':');
		if (!host_end) return CROWD_CLIENT_ERR_ARGUMENT;
		port_str = host_end + 1;
	}
	size_t host_len = (size_t)(host_end - host_start);
	if (host_len == 0 || host_len >= host_size) return CROWD_CLIENT_ERR_ARGUMENT;
	char *end = NULL;
	errno = 0;
	unsigned long p = strtoul(port_str, &end, 10);
	if (errno || end == port_str || *end != '\0' || p == 0 || p > 65535) return CROWD_CLIENT_ERR_ARGUMENT;
	memcpy(host, host_start, host_len);
	host[host_len] = '\0';
	*port = (uint16_t)p;
	return CROWD_CLIENT_OK;
}

int crowd_client_ms_until(uint64_t deadline_us) {
	return remaining_ms(0, deadline_us);
}

int crowd_client_socket_start(const struct addrinfo *ai, const crowd_client_options *o, int *err) {
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
	if (fd < 0) {
		*err = errno;
		return CROWD_CLIENT_ERR_IO;
	}
	if (o->recv_buffer_bytes > 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &o->recv_buffer_bytes, sizeof o->recv_buffer_bytes);
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS) return fd;
	*err = errno;
	close(fd);
	return CROWD_CLIENT_ERR_CONNECT;
}

int crowd_client_socket_finish(int fd, int *err) {
	int so_error = 0;
	socklen_t len = sizeof so_error;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) < 0 || so_error != 0) {
		*err = so_error ? so_error : errno;
		return CROWD_CLIENT_ERR_CONNECT;
	}
	return CROWD_CLIENT_OK;
}

/* One connect bounded by the deadline; returns the fd or a negative status (errno in *err). */
static int connect_one(const struct addrinfo *ai, const crowd_client_options *o, uint64_t deadline_us, int *err) {
	int fd = crowd_client_socket_start(ai, o, err);
	if (fd < 0) return fd;
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		int r = poll(&p, 1, remaining_ms(o->connect_timeout_ms, deadline_us));
		if (r < 0 && errno == EINTR) continue;
		if (r < 0) {
			*err = errno;
			close(fd);
			return CROWD_CLIENT_ERR_IO;
		}
		if (r == 0) {
			*err = ETIMEDOUT;
			close(fd);
			return CROWD_CLIENT_ERR_TIMEOUT;
		}
		break;
	}
	int s = crowd_client_socket_finish(fd, err);
	if (s < 0) {
		close(fd);
		return s;
	}
	return fd;
}

int crowd_client_resolve(const client_address *a, struct addrinfo **out) {
	char port_str[8];
	snprintf(port_str, sizeof port_str, "%u", (unsigned)a->port);
	struct addrinfo hints;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	*out = NULL;
	if (getaddrinfo(a->host, port_str, &hints, out) != 0 || !*out) {
		*out = NULL;
		return CROWD_CLIENT_ERR_RESOLVE;
	}
	return 0;
}

uint64_t crowd_client_connect_deadline_us(const crowd_client_options *o) {
	return crowd_client_now_us() + (uint64_t)(o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 0) * 1000u;
}

/* A blocking connect to one address, each of its resolved addresses in turn. */
static int connect_address(const client_address *a, const crowd_client_options *o, int *err) {
	struct addrinfo *list = NULL;
	if (crowd_client_resolve(a, &list) != 0) return CROWD_CLIENT_ERR_RESOLVE;
	uint64_t deadline = crowd_client_connect_deadline_us(o);
	int fd = CROWD_CLIENT_ERR_CONNECT;
	for (const struct addrinfo *ai = list; ai; ai = ai->ai_next) {
		fd = connect_one(ai, o, deadline, err);
		if (fd >= 0 || fd == CROWD_CLIENT_ERR_TIMEOUT) break;
	}
	freeaddrinfo(list);
	return fd;
}

/* Connect to the first address of the list that accepts, and make the client. */
static int connect_addresses(const client_address *addresses, uint32_t count, const crowd_client_options *options,
                             crowd_client **out) {
	if (!out || count == 0) return CROWD_CLIENT_ERR_ARGUMENT;
	*out = NULL;
	crowd_client_options o = options ? *options : crowd_client_default_options();
	crowd_client_options d = crowd_client_default_options();
	if (o.max_frame == 0) o.max_frame = d.max_frame;
	if (o.max_output == 0) o.max_output = d.max_output;
	if (o.max_read_per_poll == 0) o.max_read_per_poll = d.max_read_per_poll;
	if (o.reconnect.min_delay_ms <= 0) o.reconnect.min_delay_ms = d.reconnect.min_delay_ms;
	if (o.reconnect.max_delay_ms < o.reconnect.min_delay_ms) o.reconnect.max_delay_ms = o.reconnect.min_delay_ms;
	if (o.world && o.world[0] && !crowd_world_name_valid(o.world)) return CROWD_CLIENT_ERR_ARGUMENT;

	int fd = CROWD_CLIENT_ERR_CONNECT, err = 0;
	uint32_t index = 0;
	for (; index < count; index++) {
		fd = connect_address(&addresses[index], &o, &err);
		if (fd >= 0) break;
	}
	if (fd < 0) {
		errno = err;
		return fd;
	}

	crowd_client *c = calloc(1, sizeof *c);
	if (!c) {
		close(fd);
		return CROWD_CLIENT_ERR_NO_MEMORY;
	}
	c->fd = fd;
	c->options = o;
	if (o.world) snprintf(c->world, sizeof c->world, "%s", o.world);
	c->options.world = NULL; /* the caller's string need not outlive the call */
	memcpy(c->addresses, addresses, count * sizeof *addresses);
	c->address_count = count;
	c->address_index = index;
	c->link = LINK_OPEN;
	c->last_input_us = crowd_client_now_us();
	c->jitter_state = crowd_client_now_us() ^ ((uint64_t)(uintptr_t)c << 16) ^ 0x9e3779b97f4a7c15u;
	c->next_request_id = 1;
	c->precision = 1.0f;
	crowd_buf_init(&c->out);
	crowd_frame_splitter_init(&c->in, o.max_frame);
	crowd_view_init(&c->view);
	crowd_obstacle_set_init(&c->obstacles);
	*out = c;
	return CROWD_CLIENT_OK;
}

int crowd_client_connect(const char *host, uint16_t port, const crowd_client_options *options, crowd_client **out) {
	if (!host || !out || port == 0) return CROWD_CLIENT_ERR_ARGUMENT;
	client_address a;
	size_t n = strlen(host);
	if (n >= sizeof a.host) return CROWD_CLIENT_ERR_ARGUMENT;
	memcpy(a.host, host, n + 1);
	a.port = port;
	snprintf(a.text, sizeof a.text, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, (unsigned)port);
	return connect_addresses(&a, 1, options, out);
}

int crowd_client_connect_list(const char *addresses, const crowd_client_options *options, crowd_client **out) {
	if (!addresses || !out) return CROWD_CLIENT_ERR_ARGUMENT;
	*out = NULL;
	client_address list[CROWD_CLIENT_MAX_ADDRESSES];
	uint32_t count = 0;
	int s = crowd_client_set_addresses(list, &count, addresses);
	if (s < 0) return s;
	return connect_addresses(list, count, options, out);
}

const char *crowd_client_address(const crowd_client *c) {
	return c && c->address_count ? c->addresses[c->address_index].text : "";
}

static void free_arrays(crowd_client *c) {
	free(c->ids);
	free(c->owners);
	free(c->xs);
	free(c->ys);
	free(c->vxs);
	free(c->vys);
	free(c->radii);
	c->ids = c->owners = NULL;
	c->xs = c->ys = c->vxs = c->vys = c->radii = NULL;
	c->arrays_cap = 0;
}

int crowd_client_end(crowd_client *c, int status) {
	if (c->state == 0) c->state = status;
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	if (!c->closed_reported) {
		c->closed_reported = true;
		if (c->options.callbacks.on_closed) c->options.callbacks.on_closed(c->options.user, c->state);
	}
	return c->state;
}

/* The connection is over: close the socket; reconnect if the policy says so,
 * else remember why and tell the caller once. Returns the final status, or
 * CROWD_CLIENT_ERR_DISCONNECTED while reconnecting. */
static int fail(crowd_client *c, int status) {
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	if (c->state == 0 && c->link == LINK_HELLO) return crowd_client_reconnect_failed(c, status);
	if (c->state == 0 && c->link == LINK_OPEN && crowd_client_reconnect_begin(c, status))
		return CROWD_CLIENT_ERR_DISCONNECTED;
	return crowd_client_end(c, status);
}

void crowd_client_reset_link(crowd_client *c) {
	c->out.len = 0;
	c->write_closed = false;
	crowd_frame_splitter_free(&c->in);
	crowd_frame_splitter_init(&c->in, c->options.max_frame);
	crowd_view_free(&c->view);
	crowd_view_init(&c->view);
	crowd_obstacle_set_free(&c->obstacles);
	crowd_obstacle_set_init(&c->obstacles);
	c->have_snapshot = false;
}

/* Write as much queued output as the socket takes now. When the server has
 * closed its side, writing stops but the connection stays readable: the Error
 * that explains the close may still be waiting to be read. */
static int write_some(crowd_client *c) {
	if (c->write_closed) {
		c->out.len = 0;
		return CROWD_CLIENT_ERR_CLOSED;
	}
	while (c->out.len > 0) {
		ssize_t n = send(c->fd, c->out.data, c->out.len, MSG_NOSIGNAL);
		if (n > 0) {
			crowd_buf_consume(&c->out, (size_t)n);
			c->counters.bytes_sent += (uint64_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR) continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return CROWD_CLIENT_OK;
		c->last_errno = errno;
		if (errno == EPIPE || errno == ECONNRESET) {
			c->write_closed = true;
			c->out.len = 0;
			return CROWD_CLIENT_ERR_CLOSED;
		}
		return fail(c, CROWD_CLIENT_ERR_IO);
	}
	return CROWD_CLIENT_OK;
}

int64_t crowd_client_enqueue(crowd_client *c, crowd_v1_ClientMessage *msg) {
	if (!c || !msg) return CROWD_CLIENT_ERR_ARGUMENT;
	if (c->state != 0) return c->state;
	if (c->link != LINK_OPEN) return CROWD_CLIENT_ERR_DISCONNECTED;
	return crowd_client_enqueue_own(c, msg);
}

int64_t crowd_client_enqueue_own(crowd_client *c, crowd_v1_ClientMessage *msg) {
	if (c->state != 0) return c->state;
	if (c->write_closed) return CROWD_CLIENT_ERR_CLOSED;
	if (c->out.len > c->options.max_output) return CROWD_CLIENT_ERR_BUFFER_FULL;
	uint32_t id = c->next_request_id++;
	if (c->next_request_id == 0) c->next_request_id = 1;
	msg->request_id = id;
	size_t before = c->out.len;
	if (!crowd_encode_client_message(msg, true, &c->out)) {
		c->out.len = before;
		return CROWD_CLIENT_ERR_ENCODE;
	}
	crowd_client_remember(c, msg, id);
	int r = write_some(c);
	return r < 0 ? r : (int64_t)id;
}

int crowd_client_send_raw(crowd_client *c, const void *data, size_t size) {
	if (!c || (!data && size)) return CROWD_CLIENT_ERR_ARGUMENT;
	if (c->state != 0) return c->state;
	if (c->link != LINK_OPEN) return CROWD_CLIENT_ERR_DISCONNECTED;
	if (c->write_closed) return CROWD_CLIENT_ERR_CLOSED;
	if (c->out.len > c->options.max_output) return CROWD_CLIENT_ERR_BUFFER_FULL;
	if (!crowd_buf_append(&c->out, data, size)) return CROWD_CLIENT_ERR_NO_MEMORY;
	return write_some(c);
}

static bool grow_arrays(crowd_client *c, uint32_t n) {
	if (n <= c->arrays_cap) return true;
	uint32_t cap = c->arrays_cap ? c->arrays_cap : 64;
	while (cap < n) cap = cap > UINT32_MAX / 2 ? n : cap * 2;
	uint32_t *ids = realloc(c->ids, cap * sizeof *ids);
	if (ids) c->ids = ids;
	uint32_t *owners = realloc(c->owners, cap * sizeof *owners);
	if (owners) c->owners = owners;
	float **floats[] = {&c->xs, &c->ys, &c->vxs, &c->vys, &c->radii};
	bool ok = ids && owners;
	for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
		float *p = realloc(*floats[i], cap * sizeof *p);
		if (p)
			*floats[i] = p;
		else
			ok = false;
	}
	if (ok) c->arrays_cap = cap;
	return ok;
}

/* Convert the fixed-point view into the public float arrays. */
static bool publish_snapshot(crowd_client *c, const crowd_v1_Snapshot *s, const crowd_snapshot_stats *stats,
                             size_t frame_bytes) {
	uint32_t n = c->view.count;
	if (!grow_arrays(c, n)) return false;
	double inv = 1.0 / (double)c->precision;
	for (uint32_t i = 0; i < n; i++) {
		const crowd_agent_q *a = &c->view.agents[i];
		c->ids[i] = a->id;
		c->owners[i] = a->owner;
		c->xs[i] = (float)(a->x * inv);
		c->ys[i] = (float)(a->y * inv);
		c->vxs[i] = (float)(a->vx * inv);
		c->vys[i] = (float)(a->vy * inv);
		c->radii[i] = (float)(a->radius * inv);
	}
	crowd_client_snapshot *p = &c->snapshot;
	p->tick = s->tick;
	p->state_hash = s->state_hash;
	p->keyframe = s->keyframe;
	p->world_agent_count = s->world_agent_count;
	p->count = n;
	p->id = c->ids;
	p->owner = c->owners;
	p->x = c->xs;
	p->y = c->ys;
	p->vx = c->vxs;
	p->vy = c->vys;
	p->radius = c->radii;
	p->entered = stats->entered;
	p->removed = stats->removed;
	p->frame_bytes = frame_bytes;
	c->have_snapshot = true;
	return true;
}

/* Decode one frame and run its callback; a negative status ends the connection. */
static int dispatch_frame(crowd_client *c, const uint8_t *frame, size_t len) {
	crowd_v1_ServerMessage msg;
	memset(&msg, 0, sizeof msg);
	crowd_snapshot_stats stats;
	memset(&stats, 0, sizeof stats);
	if (!crowd_decode_server_message(frame, len, &msg, &c->view, &c->obstacles, &stats))
		return CROWD_CLIENT_ERR_PROTOCOL;
	c->counters.messages_received++;
	const crowd_client_callbacks *cb = &c->options.callbacks;
	void *user = c->options.user;
	int status = CROWD_CLIENT_OK;
	uint8_t prefix[CROWD_VARINT_MAX];
	switch (msg.which_msg) {
	case crowd_v1_ServerMessage_welcome_tag:
		if (c->link == LINK_HELLO) {
			/* a reconnect's Welcome: counted only if it is one we take */
			status = crowd_client_reconnect_accepts(c, &msg.msg.welcome);
			if (status < 0) break;
		}
		c->welcome = msg.msg.welcome;
		c->have_welcome = true;
		c->welcomed_once = true;
		c->welcome.resume_key[sizeof c->welcome.resume_key - 1] = '\0';
		if (c->welcome.resume_key[0]) memcpy(c->resume_key, c->welcome.resume_key, sizeof c->resume_key);
		c->precision = msg.msg.welcome.precision > 0 ? (float)msg.msg.welcome.precision : 1.0f;
		if (cb->on_welcome) cb->on_welcome(user, &c->welcome);
		if (c->link == LINK_HELLO) crowd_client_reconnect_done(c);
		break;
	case crowd_v1_ServerMessage_ack_tag:
		c->counters.acks_received++;
		if (crowd_client_own_ack(c, msg.msg.ack.request_id)) break;
		if (cb->on_ack) cb->on_ack(user, msg.msg.ack.request_id, msg.msg.ack.ids, msg.msg.ack.ids_count);
		break;
	case crowd_v1_ServerMessage_error_tag:
		c->counters.errors_received++;
		msg.msg.error.message[sizeof msg.msg.error.message - 1] = '\0';
		if (cb->on_error) cb->on_error(user, &msg.msg.error);
		/* a reconnect's Hello refused (SERVER_FULL, a standby…): the next address */
		if (c->link == LINK_HELLO && msg.msg.error.request_id == c->hello_request)
			status = CROWD_CLIENT_ERR_REFUSED;
		break;
	case crowd_v1_ServerMessage_snapshot_tag:
		c->counters.snapshots_received++;
		if (!publish_snapshot(c, &msg.msg.snapshot, &stats, len + crowd_varint_put(prefix, len))) {
			status = CROWD_CLIENT_ERR_NO_MEMORY;
			break;
		}
		if (cb->on_snapshot) cb->on_snapshot(user, &c->snapshot);
		break;
	case crowd_v1_ServerMessage_pong_tag:
		if (cb->on_pong) cb->on_pong(user, msg.msg.pong.client_time_us, msg.msg.pong.server_tick);
		break;
	case crowd_v1_ServerMessage_agent_events_tag:
		c->counters.events_received += msg.msg.agent_events.events_count;
		if (cb->on_agent_events) cb->on_agent_events(user, &msg.msg.agent_events);
		break;
	case crowd_v1_ServerMessage_paths_tag:
		if (cb->on_paths) cb->on_paths(user, &msg.msg.paths);
		break;
	case crowd_v1_ServerMessage_world_list_tag:
		if (cb->on_world_list) cb->on_world_list(user, &msg.msg.world_list);
		break;
	case crowd_v1_ServerMessage_replication_tag:
		if (cb->on_replication) cb->on_replication(user, &msg.msg.replication);
		break;
	default:
		/* A message from a newer minor version: ignore it, as protobuf would. */
		break;
	}
	crowd_server_message_release(&msg);
	return status;
}

/* Take every whole frame out of the splitter and dispatch it. */
static int drain_frames(crowd_client *c, int *dispatched) {
	for (;;) {
		const uint8_t *frame = NULL;
		size_t len = 0;
		crowd_frame_result r = crowd_frame_splitter_next(&c->in, &frame, &len);
		if (r == CROWD_FRAME_NEED_MORE) return CROWD_CLIENT_OK;
		if (r == CROWD_FRAME_TOO_LARGE) return CROWD_CLIENT_ERR_FRAME_TOO_LARGE;
		if (r != CROWD_FRAME_READY) return CROWD_CLIENT_ERR_PROTOCOL;
		crowd_client_link link = c->link;
		int s = dispatch_frame(c, frame, len);
		if (s < 0) return s;
		(*dispatched)++;
		if (c->state != 0) return c->state;
		if (c->link != link) return CROWD_CLIENT_OK; /* a reconnect finished: later frames next poll */
	}
}

/* Read what the socket has now (bounded per call), dispatching as we go.
 * Returns 1 if the peer closed, 0 otherwise, or a negative status. */
static int read_some(crowd_client *c, int *dispatched) {
	uint8_t chunk[65536];
	size_t total = 0;
	while (total < c->options.max_read_per_poll) {
		ssize_t n = recv(c->fd, chunk, sizeof chunk, 0);
		if (n > 0) {
			total += (size_t)n;
			c->counters.bytes_received += (uint64_t)n;
			c->last_input_us = crowd_client_now_us();
			if (!crowd_frame_splitter_push(&c->in, chunk, (size_t)n)) return CROWD_CLIENT_ERR_NO_MEMORY;
			int s = drain_frames(c, dispatched);
			if (s < 0) return s;
			continue;
		}
		if (n == 0) return 1;
		if (errno == EINTR) continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
		c->last_errno = errno;
		return errno == ECONNRESET ? CROWD_CLIENT_ERR_CLOSED : CROWD_CLIENT_ERR_IO;
	}
	return 0;
}

int crowd_client_poll(crowd_client *c, int timeout_ms) {
	if (!c) return CROWD_CLIENT_ERR_ARGUMENT;
	if (c->state != 0) return c->state;
	if (c->link == LINK_WAITING || c->link == LINK_CONNECTING) return crowd_client_reconnect_poll(c, timeout_ms);
	int s = write_some(c);
	if (c->state != 0) return c->state;
	if (c->fd < 0) return 0; /* lost while writing: reconnecting */
	struct pollfd p = {.fd = c->fd, .events = (short)(POLLIN | (c->out.len ? POLLOUT : 0))};
	uint64_t deadline = crowd_client_now_us() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000u;
	bool hello = c->link == LINK_HELLO;
	if (hello && (timeout_ms < 0 || deadline > c->attempt_deadline_us)) {
		timeout_ms = crowd_client_ms_until(c->attempt_deadline_us);
		deadline = c->attempt_deadline_us;
	}
	/* a server whose machine vanished sends no FIN: silence this long counts as a loss */
	uint64_t idle_deadline = c->last_input_us + (uint64_t)c->options.idle_timeout_ms * 1000u;
	bool idle = !hello && c->options.idle_timeout_ms > 0;
	if (idle && (timeout_ms < 0 || deadline > idle_deadline)) {
		timeout_ms = crowd_client_ms_until(idle_deadline);
		deadline = idle_deadline;
	}
	int r;
	do {
		r = poll(&p, 1, remaining_ms(timeout_ms, deadline));
	} while (r < 0 && errno == EINTR);
	if (r < 0) {
		c->last_errno = errno;
		fail(c, CROWD_CLIENT_ERR_IO);
		return c->state;
	}
	if (r == 0) {
		/* no Welcome in time: this attempt failed */
		if (hello && crowd_client_now_us() >= c->attempt_deadline_us) fail(c, CROWD_CLIENT_ERR_TIMEOUT);
		if (idle && crowd_client_now_us() >= idle_deadline) fail(c, CROWD_CLIENT_ERR_TIMEOUT);
		return c->state;
	}
	if (p.revents & POLLOUT) {
		s = write_some(c);
		if (c->state != 0) return c->state;
		if (c->fd < 0) return 0;
	}
	int dispatched = 0;
	if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
		s = read_some(c, &dispatched);
		if (c->state != 0) return c->state;
		if (s < 0) {
			fail(c, s);
			return c->state ? c->state : dispatched;
		}
		if (s == 1) {
			/* Orderly close: a partial frame left over means it was cut short. */
			fail(c, crowd_frame_splitter_pending(&c->in) ? CROWD_CLIENT_ERR_PROTOCOL
			                                             : CROWD_CLIENT_ERR_CLOSED);
			return c->state ? c->state : dispatched;
		}
	}
	return dispatched;
}

int crowd_client_flush(crowd_client *c, int timeout_ms) {
	if (!c) return CROWD_CLIENT_ERR_ARGUMENT;
	uint64_t deadline = crowd_client_now_us() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000u;
	for (;;) {
		if (c->state != 0) return c->state;
		if (c->link != LINK_OPEN) return CROWD_CLIENT_ERR_DISCONNECTED;
		int s = write_some(c);
		if (s < 0) return s;
		if (c->out.len == 0) return CROWD_CLIENT_OK;
		int wait = remaining_ms(timeout_ms, deadline);
		if (wait == 0) return CROWD_CLIENT_ERR_TIMEOUT;
		struct pollfd p = {.fd = c->fd, .events = POLLOUT};
		if (poll(&p, 1, wait) < 0 && errno != EINTR) {
			c->last_errno = errno;
			return fail(c, CROWD_CLIENT_ERR_IO);
		}
	}
}

/* An orderly close: send FIN after what is queued, then discard what the
 * server still sends until its FIN (closing with unread input would send a
 * reset instead), all within the deadline. */
static void close_gracefully(crowd_client *c, int timeout_ms) {
	if (timeout_ms < 0) timeout_ms = 5000; /* never wait forever for a goodbye */
	uint64_t deadline = crowd_client_now_us() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000u;
	if (c->state == 0 && c->out.len) (void)crowd_client_flush(c, timeout_ms);
	if (c->fd < 0) return;
	if (timeout_ms != 0 && c->state == 0 && shutdown(c->fd, SHUT_WR) == 0) {
		uint8_t scratch[16384];
		for (;;) {
			int wait = remaining_ms(timeout_ms, deadline);
			if (wait == 0) break;
			struct pollfd p = {.fd = c->fd, .events = POLLIN};
			int r = poll(&p, 1, wait);
			if (r < 0 && errno == EINTR) continue;
			if (r <= 0) break;
			ssize_t n = recv(c->fd, scratch, sizeof scratch, 0);
			if (n < 0 && errno == EINTR) continue;
			if (n <= 0) break;
		}
	}
	close(c->fd);
	c->fd = -1;
}

void crowd_client_close(crowd_client *c, int flush_timeout_ms) {
	if (!c) return;
	if (c->fd >= 0 && c->link == LINK_OPEN) close_gracefully(c, flush_timeout_ms);
	if (c->fd >= 0) close(c->fd);
	if (c->resolved) freeaddrinfo(c->resolved);
	crowd_buf_free(&c->out);
	crowd_frame_splitter_free(&c->in);
	crowd_view_free(&c->view);
	crowd_obstacle_set_free(&c->obstacles);
	free_arrays(c);
	free(c);
}

int crowd_client_fd(const crowd_client *c) {
	return c ? c->fd : -1;
}

size_t crowd_client_pending_output(const crowd_client *c) {
	return c ? c->out.len : 0;
}

int crowd_client_state(const crowd_client *c) {
	return c ? c->state : CROWD_CLIENT_ERR_ARGUMENT;
}

int crowd_client_errno(const crowd_client *c) {
	return c ? c->last_errno : 0;
}

const crowd_v1_Welcome *crowd_client_welcome(const crowd_client *c) {
	return c && c->have_welcome ? &c->welcome : NULL;
}

const crowd_client_snapshot *crowd_client_latest_snapshot(const crowd_client *c) {
	return c && c->have_snapshot ? &c->snapshot : NULL;
}

uint32_t crowd_client_obstacle_count(const crowd_client *c) {
	return c ? c->obstacles.count : 0;
}

bool crowd_client_obstacle(const crowd_client *c, uint32_t i, uint32_t *id, const float **x, const float **y,
                           uint32_t *count) {
	if (!c || i >= c->obstacles.count) return false;
	const crowd_obstacle *o = &c->obstacles.items[i];
	if (id) *id = o->id;
	if (x) *x = o->x;
	if (y) *y = o->y;
	if (count) *count = o->count;
	return true;
}

crowd_client_counters crowd_client_get_counters(const crowd_client *c) {
	crowd_client_counters zero;
	memset(&zero, 0, sizeof zero);
	return c ? c->counters : zero;
}
