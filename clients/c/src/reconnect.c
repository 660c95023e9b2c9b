/* reconnect.c — the C client's address list and what it does when an
 * established connection drops (options.reconnect): try the addresses in
 * turn, starting after the one lost, with a doubling, capped, jittered wait
 * before each pass over the list and none inside it; connect without
 * blocking, send the application's Hello again with the last resume key, and
 * once welcomed ask again for the subscriptions it had. Driven from
 * crowd_client_poll, so a caller's frame never blocks on it. */
#include "client_internal.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int crowd_client_set_addresses(client_address *out, uint32_t *count, const char *list) {
	*count = 0;
	const char *p = list;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		while (n && (*p == ' ' || *p == '\t')) p++, n--;
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
		if (*count == CROWD_CLIENT_MAX_ADDRESSES) return CROWD_CLIENT_ERR_ARGUMENT;
		client_address *a = &out[*count];
		if (n == 0 || n >= sizeof a->text) return CROWD_CLIENT_ERR_ARGUMENT;
		memcpy(a->text, p, n);
		a->text[n] = '\0';
		if (crowd_client_parse_address(a->text, a->host, sizeof a->host, &a->port) < 0)
			return CROWD_CLIENT_ERR_ARGUMENT;
		(*count)++;
		if (!end) return CROWD_CLIENT_OK;
		p = end + 1;
	}
}

int crowd_client_count_addresses(const char *addresses) {
	if (!addresses) return CROWD_CLIENT_ERR_ARGUMENT;
	client_address list[CROWD_CLIENT_MAX_ADDRESSES];
	uint32_t count = 0;
	int s = crowd_client_set_addresses(list, &count, addresses);
	return s < 0 ? s : (int)count;
}

void crowd_client_remember(crowd_client *c, const crowd_v1_ClientMessage *m, uint32_t id) {
	switch (m->which_msg) {
	case crowd_v1_ClientMessage_hello_tag:
		if (c->link != LINK_OPEN) break; /* our own Hello of a reconnect */
		c->hello_sent = true;
		memcpy(c->token, m->msg.hello.token, sizeof c->token);
		memcpy(c->client_name, m->msg.hello.client_name, sizeof c->client_name);
		memcpy(c->resume_key, m->msg.hello.resume_key, sizeof c->resume_key);
		c->keep_agents = m->msg.hello.keep_agents_on_disconnect;
		break;
	case crowd_v1_ClientMessage_subscribe_tag:
		c->have_subscription = !m->msg.subscribe.unsubscribe;
		c->subscription = m->msg.subscribe;
		break;
	case crowd_v1_ClientMessage_subscribe_events_tag:
		c->have_events_subscription = true;
		c->events_subscription = m->msg.subscribe_events;
		break;
	case crowd_v1_ClientMessage_join_world_tag:
		if (m->msg.join_world.name && strlen(m->msg.join_world.name) < sizeof c->join_world) {
			c->join_request = id;
			snprintf(c->join_world, sizeof c->join_world, "%s", m->msg.join_world.name);
		}
		break;
	default:
		break;
	}
}

bool crowd_client_own_ack(crowd_client *c, uint32_t request_id) {
	if (request_id == 0) return false;
	if (request_id == c->join_request) {
		/* a reconnect comes back to this world, with no subscription (the server dropped it) */
		memcpy(c->world, c->join_world, sizeof c->world);
		c->have_subscription = c->have_events_subscription = false;
		c->join_request = 0;
		return false;
	}
	if (request_id == c->resubscribe_request) {
		c->resubscribe_request = 0;
		return true;
	}
	if (request_id == c->resubscribe_events_request) {
		c->resubscribe_events_request = 0;
		return true;
	}
	return false;
}

static void report(crowd_client *c, crowd_client_reconnect_kind kind, int status, int delay_ms) {
	if (!c->options.callbacks.on_reconnect) return;
	crowd_client_reconnect_event e;
	memset(&e, 0, sizeof e);
	e.kind = kind;
	e.address = c->addresses[c->address_index].text;
	e.status = status;
	e.attempt = kind == CROWD_CLIENT_RECONNECTED ? c->attempts + 1 : c->attempts;
	e.next_delay_ms = delay_ms;
	if (kind == CROWD_CLIENT_RECONNECTED) {
		e.resumed = c->welcome.resumed;
		e.client_id = c->welcome.client_id;
	}
	c->options.callbacks.on_reconnect(c->options.user, &e);
}

/* The wait before the attempt after `done` failed ones: each pass over the
 * list starts with min_delay_ms doubled per pass before it (capped at
 * max_delay_ms), the other attempts of a pass start at once; times a jitter
 * factor in [0.75, 1) so clients cut off together do not return together. */
static int delay_after(crowd_client *c, uint32_t done) {
	if (done % c->address_count != 0) return 0;
	uint32_t passes = done / c->address_count;
	const crowd_client_reconnect_policy *r = &c->options.reconnect;
	double d = r->min_delay_ms;
	for (uint32_t i = 0; i < passes && d < r->max_delay_ms; i++) d *= 2;
	if (d > r->max_delay_ms) d = r->max_delay_ms;
	c->jitter_state ^= c->jitter_state << 13;
	c->jitter_state ^= c->jitter_state >> 7;
	c->jitter_state ^= c->jitter_state << 17;
	double jitter = 0.75 + 0.25 * (double)(c->jitter_state >> 11) / (double)(1ull << 53);
	return (int)(d * jitter);
}

static void forget_resolved(crowd_client *c) {
	if (c->resolved) freeaddrinfo(c->resolved);
	c->resolved = c->untried = NULL;
}

bool crowd_client_reconnect_begin(crowd_client *c, int status) {
	const crowd_client_reconnect_policy *r = &c->options.reconnect;
	if (!r->enabled || !c->hello_sent || !c->welcomed_once || c->address_count == 0) return false;
	crowd_client_reset_link(c);
	c->attempts = 0;
	c->link = LINK_WAITING;
	int delay = delay_after(c, 0);
	c->next_attempt_us = crowd_client_now_us() + (uint64_t)delay * 1000u;
	report(c, CROWD_CLIENT_CONNECTION_LOST, status, delay);
	c->address_index = (c->address_index + 1) % c->address_count;
	return true;
}

int crowd_client_reconnect_failed(crowd_client *c, int status) {
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	forget_resolved(c);
	crowd_client_reset_link(c);
	c->attempts++;
	if (c->options.reconnect.max_attempts && c->attempts >= c->options.reconnect.max_attempts) {
		report(c, CROWD_CLIENT_ATTEMPT_FAILED, status, -1);
		c->link = LINK_WAITING;
		return crowd_client_end(c, CROWD_CLIENT_ERR_UNREACHABLE);
	}
	int delay = delay_after(c, c->attempts);
	report(c, CROWD_CLIENT_ATTEMPT_FAILED, status, delay);
	c->link = LINK_WAITING;
	c->next_attempt_us = crowd_client_now_us() + (uint64_t)delay * 1000u;
	c->address_index = (c->address_index + 1) % c->address_count;
	return CROWD_CLIENT_ERR_DISCONNECTED;
}

/* Connected: say Hello as the application did, with the last resume key. */
static int send_hello(crowd_client *c) {
	c->link = LINK_HELLO;
	c->last_input_us = crowd_client_now_us();
	c->attempt_deadline_us =
	    crowd_client_now_us() +
	    (uint64_t)(c->options.connect_timeout_ms > 0 ? c->options.connect_timeout_ms : 0) * 1000u;
	crowd_v1_ClientMessage m;
	memset(&m, 0, sizeof m);
	m.which_msg = crowd_v1_ClientMessage_hello_tag;
	crowd_v1_Hello *h = &m.msg.hello;
	h->protocol_major = CROWD_PROTOCOL_MAJOR;
	h->protocol_minor = CROWD_PROTOCOL_MINOR;
	h->keep_agents_on_disconnect = c->keep_agents;
	h->world = c->world[0] ? c->world : NULL;
	memcpy(h->token, c->token, sizeof h->token);
	memcpy(h->client_name, c->client_name, sizeof h->client_name);
	memcpy(h->resume_key, c->resume_key, sizeof h->resume_key);
	int64_t id = crowd_client_enqueue_own(c, &m);
	if (id > 0) {
		c->hello_request = (uint32_t)id;
		return CROWD_CLIENT_OK;
	}
	/* a failed write already moved to the next attempt; an encode failure did not */
	if (c->link == LINK_HELLO) return crowd_client_reconnect_failed(c, (int)id);
	return c->state ? c->state : CROWD_CLIENT_ERR_DISCONNECTED;
}

/* Try the next resolved address of this attempt; false when none is left. */
static bool start_next(crowd_client *c, int *status) {
	while (c->untried) {
		const struct addrinfo *ai = c->untried;
		c->untried = ai->ai_next;
		int err = 0;
		int fd = crowd_client_socket_start(ai, &c->options, &err);
		if (fd < 0) {
			c->last_errno = err;
			*status = fd;
			continue;
		}
		c->fd = fd;
		return true;
	}
	return false;
}

static int start_attempt(crowd_client *c) {
	forget_resolved(c);
	if (crowd_client_resolve(&c->addresses[c->address_index], &c->resolved) != 0)
		return crowd_client_reconnect_failed(c, CROWD_CLIENT_ERR_RESOLVE);
	c->untried = c->resolved;
	c->link = LINK_CONNECTING;
	c->attempt_deadline_us = crowd_client_connect_deadline_us(&c->options);
	int status = CROWD_CLIENT_ERR_CONNECT;
	if (!start_next(c, &status)) return crowd_client_reconnect_failed(c, status);
	return CROWD_CLIENT_ERR_DISCONNECTED;
}

int crowd_client_reconnect_poll(crowd_client *c, int timeout_ms) {
	uint64_t until = crowd_client_now_us() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000u;
	for (;;) {
		if (c->state != 0) return c->state;
		if (c->link == LINK_HELLO || c->link == LINK_OPEN) return 0; /* the next poll reads its answer */
		uint64_t now = crowd_client_now_us();
		int left = timeout_ms < 0 ? -1 : (now >= until ? 0 : (int)((until - now + 999u) / 1000u));
		if (c->link == LINK_WAITING) {
			if (now >= c->next_attempt_us) {
				start_attempt(c);
				continue;
			}
			int wait = crowd_client_ms_until(c->next_attempt_us);
			if (left >= 0 && left < wait) wait = left;
			if (wait == 0) return 0;
			(void)poll(NULL, 0, wait);
			continue;
		}
		/* LINK_CONNECTING */
		int wait = crowd_client_ms_until(c->attempt_deadline_us);
		if (left >= 0 && left < wait) wait = left;
		struct pollfd p = {.fd = c->fd, .events = POLLOUT};
		int r = poll(&p, 1, wait);
		if (r < 0 && errno == EINTR) continue;
		if (r < 0) {
			c->last_errno = errno;
			crowd_client_reconnect_failed(c, CROWD_CLIENT_ERR_IO);
			continue;
		}
		if (r == 0) {
			if (crowd_client_now_us() >= c->attempt_deadline_us) {
				crowd_client_reconnect_failed(c, CROWD_CLIENT_ERR_TIMEOUT);
				continue;
			}
			return 0;
		}
		int err = 0;
		if (crowd_client_socket_finish(c->fd, &err) < 0) {
			c->last_errno = err;
			close(c->fd);
			c->fd = -1;
			int status = CROWD_CLIENT_ERR_CONNECT;
			if (!start_next(c, &status)) crowd_client_reconnect_failed(c, status);
			continue;
		}
		forget_resolved(c);
		send_hello(c);
	}
}

int crowd_client_reconnect_accepts(crowd_client *c, const crowd_v1_Welcome *w) {
	if (c->options.reconnect.require_resumed && c->resume_key[0] && !w->resumed) return CROWD_CLIENT_ERR_REFUSED;
	return CROWD_CLIENT_OK;
}

void crowd_client_reconnect_done(crowd_client *c) {
	c->link = LINK_OPEN;
	c->counters.reconnects++;
	/* what the application had asked for, asked again: the new server knows none of it */
	if (c->have_subscription) {
		crowd_v1_ClientMessage m;
		memset(&m, 0, sizeof m);
		m.which_msg = crowd_v1_ClientMessage_subscribe_tag;
		m.msg.subscribe = c->subscription;
		int64_t id = crowd_client_enqueue_own(c, &m);
		if (id > 0) c->resubscribe_request = (uint32_t)id;
	}
	if (c->have_events_subscription && c->link == LINK_OPEN) {
		crowd_v1_ClientMessage m;
		memset(&m, 0, sizeof m);
		m.which_msg = crowd_v1_ClientMessage_subscribe_events_tag;
		m.msg.subscribe_events = c->events_subscription;
		int64_t id = crowd_client_enqueue_own(c, &m);
		if (id > 0) c->resubscribe_events_request = (uint32_t)id;
	}
	report(c, CROWD_CLIENT_RECONNECTED, CROWD_CLIENT_OK, 0);
	c->attempts = 0;
}
