/* replication.c — the primary's followers and the follower's stream (see replication.h). */
#include "replication.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <crowd/client.h>

#include "log.h"
#include "record.h"

/* A bytes field is at most 65535 bytes with Debian's nanopb (16-bit sizes):
 * checkpoints and batches go in chunks, and the follower reads the journal
 * as one stream of bytes, whole records out of it. */
#define CHUNK_BYTES 60000u

static pb_bytes_array_t *bytes_of(const uint8_t *data, size_t len) {
	pb_bytes_array_t *b = malloc(PB_BYTES_ARRAY_T_ALLOCSIZE(len));
	if (!b) return NULL;
	b->size = (pb_size_t)len;
	if (len) memcpy(b->bytes, data, len);
	return b;
}

/* ------------------------------------------------------------------ primary */

typedef struct follower_entry {
	uint32_t client_id;
	bool streaming; /* its checkpoint was sent: it gets every batch */
	uint64_t acked_seq, acked_tick;
} follower_entry;

struct repl_primary {
	char history[33];
	uint32_t min_acks;
	repl_send_fn send;
	void *user;
	follower_entry *items;
	uint32_t count, cap;
};

repl_primary *repl_primary_new(const char *history, uint32_t min_acks, repl_send_fn send, void *user) {
	repl_primary *p = calloc(1, sizeof *p);
	if (!p) return NULL;
	snprintf(p->history, sizeof p->history, "%s", history);
	p->min_acks = min_acks;
	p->send = send;
	p->user = user;
	return p;
}

void repl_primary_free(repl_primary *p) {
	if (!p) return;
	free(p->items);
	free(p);
}

bool repl_primary_add(repl_primary *p, uint32_t client_id) {
	for (uint32_t i = 0; i < p->count; i++)
		if (p->items[i].client_id == client_id) {
			p->items[i] = (follower_entry){.client_id = client_id};
			return true;
		}
	if (p->count == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 4;
		follower_entry *n = realloc(p->items, sizeof *n * cap);
		if (!n) return false;
		p->items = n;
		p->cap = cap;
	}
	p->items[p->count++] = (follower_entry){.client_id = client_id};
	return true;
}

bool repl_primary_wants_checkpoint(const repl_primary *p) {
	for (uint32_t i = 0; i < p->count; i++)
		if (!p->items[i].streaming) return true;
	return false;
}

static void drop_follower(repl_primary *p, uint32_t i) {
	log_info("replication: follower %u is gone", p->items[i].client_id);
	p->items[i] = p->items[--p->count];
}

/* Send data in chunks to follower i; false (and dropped) when it is gone. */
static bool send_chunks(repl_primary *p, uint32_t i, bool checkpoint, const uint8_t *data, size_t len, uint64_t seq,
                        uint64_t tick) {
	size_t off = 0;
	do {
		const size_t n = len - off < CHUNK_BYTES ? len - off : CHUNK_BYTES;
		crowd_v1_ServerMessage msg = crowd_v1_ServerMessage_init_zero;
		msg.which_msg = crowd_v1_ServerMessage_replication_tag;
		crowd_v1_ReplicationFrame *f = &msg.msg.replication;
		snprintf(f->history_id, sizeof f->history_id, "%s", p->history);
		f->tick = tick;
		pb_bytes_array_t *b = bytes_of(data + off, n);
		if (!b) return false;
		if (checkpoint) {
			f->checkpoint = b;
			f->checkpoint_size = len;
		} else {
			f->journal = b;
			f->seq = off + n == len ? seq : 0; /* acknowledged once whole */
		}
		bool ok = p->send(p->user, p->items[i].client_id, &msg);
		free(b);
		if (!ok) {
			drop_follower(p, i);
			return false;
		}
		off += n;
	} while (off < len);
	return true;
}

void repl_primary_send_checkpoint(repl_primary *p, const uint8_t *checkpoint, size_t len, uint64_t tick) {
	for (uint32_t i = p->count; i-- > 0;) {
		if (p->items[i].streaming) continue;
		if (!send_chunks(p, i, true, checkpoint, len, 0, tick)) continue;
		p->items[i].streaming = true;
		p->items[i].acked_tick = tick;
		log_info("replication: follower %u gets the checkpoint of tick %" PRIu64
		         " (%zu bytes), then the journal",
		         p->items[i].client_id, tick, len);
	}
}

void repl_primary_batch(repl_primary *p, const uint8_t *records, size_t len, uint64_t seq, uint64_t tick) {
	for (uint32_t i = p->count; i-- > 0;)
		if (p->items[i].streaming) send_chunks(p, i, false, records, len, seq, tick);
}

static int compare_desc(const void *a, const void *b) {
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x < y) - (x > y);
}

uint64_t repl_primary_ack(repl_primary *p, uint32_t client_id, uint64_t seq, uint64_t tick) {
	for (uint32_t i = 0; i < p->count; i++)
		if (p->items[i].client_id == client_id) {
			if (seq > p->items[i].acked_seq) p->items[i].acked_seq = seq;
			if (tick > p->items[i].acked_tick) p->items[i].acked_tick = tick;
		}
	if (p->min_acks == 0 || p->count < p->min_acks) return 0;
	uint64_t *seqs = malloc(sizeof *seqs * p->count);
	if (!seqs) return 0;
	uint32_t n = 0;
	for (uint32_t i = 0; i < p->count; i++)
		if (p->items[i].streaming) seqs[n++] = p->items[i].acked_seq;
	uint64_t out = 0;
	if (n >= p->min_acks) {
		qsort(seqs, n, sizeof *seqs, compare_desc);
		out = seqs[p->min_acks - 1];
	}
	free(seqs);
	return out;
}

uint32_t repl_primary_count(const repl_primary *p) {
	return p ? p->count : 0;
}

bool repl_primary_follower(const repl_primary *p, uint32_t i, uint32_t *client_id, uint64_t *acked_tick) {
	if (!p || i >= p->count) return false;
	*client_id = p->items[i].client_id;
	*acked_tick = p->items[i].acked_tick;
	return true;
}

/* ------------------------------------------------------------------ follower */

#define RETRY_MS 250u
#define WELCOME_TIMEOUT_MS 5000u

struct repl_follower {
	uv_loop_t *loop;
	const server_config *cfg;
	repl_follower_hooks hooks;
	char host[256];
	uint16_t port;
	char history[33];

	crowd_client *client;
	uv_poll_t *poll;  /* malloc'd: freed in its close callback */
	uv_timer_t timer; /* reconnect, and the Welcome's deadline */
	bool welcomed;
	bool synced; /* the checkpoint was taken: journal frames apply */
	bool broken; /* the stream cannot go on: reconnect (a full sync) */
	bool stopping;
	int64_t follow_request;
	uint32_t attempts;
	uint32_t silent_closes; /* connections closed before a Welcome, in a row */

	crowd_buf checkpoint; /* chunks so far */
	uint64_t checkpoint_tick;
	crowd_buf stream;  /* journal bytes not yet a whole record */
	crowd_buf pending; /* framed records of the next tick, not applied yet */
	uint64_t primary_tick;
	uint64_t received_tick; /* the newest tick whose TickEnd was handed over (stepped or queued) */
	repl_follower_stats stats;

	/* FollowAck only for what the follower's own journal holds durably: the
	 * primary's batches waiting for the follower's batch that holds them */
	struct ack_wait {
		uint64_t local; /* the follower's batch (storage_committed_seq) */
		uint64_t seq;   /* the primary's */
	} *acks;
	uint32_t ack_count, ack_cap;
	uint64_t durable_local; /* the follower's batches durable so far (this storage) */
	uint64_t acked_seq;     /* the primary's newest batch acknowledged on this connection */
	uint64_t told_tick;     /* the applied tick the last FollowAck said */
};

static void schedule_connect(repl_follower *f, uint64_t ms);

/* FollowAck: the primary's batches held durably, and the tick applied (its lag). */
static void send_ack(repl_follower *f) {
	if (!f->client || !f->synced) return;
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_follow_ack_tag;
	m.msg.follow_ack.seq = f->acked_seq;
	m.msg.follow_ack.tick = f->hooks.applied_tick(f->hooks.user);
	f->told_tick = m.msg.follow_ack.tick;
	crowd_client_send_message(f->client, &m);
}

static void acks_clear(repl_follower *f) {
	f->ack_count = 0;
	f->acked_seq = 0;
	f->told_tick = 0;
}

/* The primary's batch `seq` is in the follower's batch `local`: acknowledged
 * now if that is durable already, else once it is. False: out of memory. */
static bool ack_when_durable(repl_follower *f, uint64_t local, uint64_t seq) {
	if (local <= f->durable_local && f->ack_count == 0) {
		if (seq > f->acked_seq) f->acked_seq = seq;
		return true;
	}
	if (f->ack_count == f->ack_cap) {
		uint32_t cap = f->ack_cap ? f->ack_cap * 2 : 64;
		struct ack_wait *p = realloc(f->acks, sizeof *p * cap);
		if (!p) return false;
		f->acks = p;
		f->ack_cap = cap;
	}
	f->acks[f->ack_count++] = (struct ack_wait){local, seq};
	return true;
}

void repl_follower_durable(repl_follower *f, uint64_t upto) {
	if (!f) return;
	if (upto > f->durable_local) f->durable_local = upto;
	uint32_t k = 0;
	const uint64_t before = f->acked_seq;
	while (k < f->ack_count && f->acks[k].local <= f->durable_local) {
		if (f->acks[k].seq > f->acked_seq) f->acked_seq = f->acks[k].seq;
		k++;
	}
	if (k == 0) return;
	memmove(f->acks, f->acks + k, sizeof *f->acks * (f->ack_count - k));
	f->ack_count -= k;
	if (f->acked_seq != before) send_ack(f);
}

static void refuse(repl_follower *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(repl_follower *f, const char *fmt, ...) {
	char why[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	f->hooks.refused(f->hooks.user, why);
}

static void on_welcome(void *user, const crowd_v1_Welcome *w) {
	repl_follower *f = user;
	f->welcomed = true;
	f->silent_closes = 0;
	uv_timer_stop(&f->timer);
	if (w->protocol_minor < 4) { /* minor 3 has replication, but its state hashes are the older definition */
		refuse(f, "%s:%u speaks crowd.v1 minor %u: it cannot be followed (minor 4 or later)", f->host,
		       (unsigned)f->port, (unsigned)w->protocol_minor);
		return;
	}
	if (w->role != crowd_v1_Role_ROLE_ADMIN) {
		refuse(f, "%s:%u gave this follower the role %d, not admin: give --follow-token an admin token",
		       f->host, (unsigned)f->port, (int)w->role);
		return;
	}
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_follow_tag;
	snprintf(m.msg.follow.world, sizeof m.msg.follow.world, "%.32s", f->cfg->follow_world);
	m.msg.follow.from_tick = f->hooks.applied_tick(f->hooks.user);
	snprintf(m.msg.follow.history_id, sizeof m.msg.follow.history_id, "%s", f->history);
	f->follow_request = crowd_client_send_message(f->client, &m);
	log_info("replication: following %s:%u, world '%s', from tick %" PRIu64 " (history %s)", f->host,
	         (unsigned)f->port, f->cfg->follow_world[0] ? f->cfg->follow_world : CROWD_DEFAULT_WORLD,
	         m.msg.follow.from_tick, f->history[0] ? f->history : "none yet");
}

static void on_error(void *user, const crowd_v1_Error *e) {
	repl_follower *f = user;
	const char *code = crowd_client_error_name((int)e->code);
	if (!f->welcomed || (int64_t)e->request_id == f->follow_request) {
		refuse(f, "%s:%u refused to be followed: %s: %s", f->host, (unsigned)f->port, code, e->message);
		return;
	}
	log_warn("replication: the primary says %s: %s", code, e->message);
}

/* Whole records out of the stream: commands kept for their tick, a TickEnd applies it. */
static void take_records(repl_follower *f) {
	size_t pos = 0;
	const uint8_t *msg;
	size_t len;
	for (;;) {
		size_t at = pos;
		record_status st = record_next(f->stream.data, f->stream.len, &pos, &msg, &len);
		if (st == RECORD_END || st == RECORD_TORN) { /* the rest comes with the next frame */
			pos = at;
			break;
		}
		if (st != RECORD_OK) {
			log_error("replication: a corrupt record from the primary: a full sync follows");
			f->broken = true;
			return;
		}
		crowd_storage_v1_Record rec = crowd_storage_v1_Record_init_zero;
		if (!record_decode(msg, len, &rec)) {
			log_error("replication: a record from the primary does not decode: a full sync follows");
			f->broken = true;
			return;
		}
		const uint64_t received = f->received_tick;
		if (rec.has_tick_end) {
			if (rec.tick_end.tick <= received) continue; /* in the checkpoint already */
			if (rec.tick_end.tick != received + 1) {
				log_error("replication: tick %" PRIu64 " follows tick %" PRIu64 ": a full sync follows",
				          rec.tick_end.tick, received);
				f->broken = true;
				return;
			}
			f->hooks.record(f->hooks.user, msg, len); /* journaled as it came, then stepped in turn */
			if (f->hooks.tick(f->hooks.user, rec.tick_end.tick, rec.tick_end.state_hash, f->pending.data,
			                  f->pending.len) != 0) {
				f->broken = true;
				return;
			}
			f->received_tick = rec.tick_end.tick;
			f->pending.len = 0;
			continue;
		}
		if (rec.has_command || rec.has_drop_owners) {
			const uint64_t t = rec.has_command ? rec.command.tick : rec.drop_owners.tick;
			if (t <= received) continue;
			if (t != received + 1 || !record_append_message(&f->pending, msg, len)) {
				f->broken = true;
				return;
			}
		}
		f->hooks.record(f->hooks.user, msg, len);
	}
	crowd_buf_consume(&f->stream, pos);
}

static void on_replication(void *user, const crowd_v1_ReplicationFrame *fr) {
	repl_follower *f = user;
	if (f->broken) return;
	f->primary_tick = fr->tick;
	if (fr->checkpoint) {
		if (f->checkpoint.len == 0) f->checkpoint_tick = fr->tick;
		if (!crowd_buf_append(&f->checkpoint, fr->checkpoint->bytes, fr->checkpoint->size)) {
			f->broken = true;
			return;
		}
		if (f->checkpoint.len < fr->checkpoint_size) return;
		if (f->checkpoint.len != fr->checkpoint_size) {
			log_error("replication: a checkpoint of %zu bytes, said to be %" PRIu64, f->checkpoint.len,
			          fr->checkpoint_size);
			f->broken = true;
			return;
		}
		acks_clear(f); /* the old journal goes: what it held durably is no longer said */
		if (f->hooks.checkpoint(f->hooks.user, f->checkpoint.data, f->checkpoint.len, f->checkpoint_tick,
		                        fr->history_id) != 0) {
			f->broken = true;
			return;
		}
		f->durable_local = 0; /* a new journal: its batches count from 1 */
		f->received_tick = f->checkpoint_tick;
		snprintf(f->history, sizeof f->history, "%s", fr->history_id);
		crowd_buf_free(&f->checkpoint);
		crowd_buf_init(&f->checkpoint);
		f->stream.len = 0;
		f->pending.len = 0;
		f->synced = true;
		f->stats.connected = true;
		f->stats.syncs++;
		return;
	}
	if (!fr->journal || !f->synced) return;
	if (!crowd_buf_append(&f->stream, fr->journal->bytes, fr->journal->size)) {
		f->broken = true;
		return;
	}
	take_records(f);
	if (f->broken) return;
	const uint64_t local = f->hooks.batch_done(f->hooks.user);
	const uint64_t before = f->acked_seq;
	if (fr->seq && !ack_when_durable(f, local, fr->seq)) {
		log_error("replication: out of memory keeping a FollowAck: a full sync follows");
		f->broken = true;
		return;
	}
	const uint64_t applied = f->hooks.applied_tick(f->hooks.user);
	f->stats.lag_ticks = f->primary_tick > applied ? f->primary_tick - applied : 0;
	/* the tick applied goes to the primary at once (its view of the lag); the seq only once durable */
	if (f->acked_seq != before || applied != f->told_tick) send_ack(f);
}

static void on_poll_closed(uv_handle_t *h) {
	free(h);
}

/* The connection is over (or must be): close it, and try again unless stopping. */
static void disconnect(repl_follower *f, const char *why) {
	if (f->poll) {
		uv_poll_stop(f->poll);
		uv_close((uv_handle_t *)f->poll, on_poll_closed);
		f->poll = NULL;
	}
	if (f->client) {
		crowd_client_close(f->client, 0);
		f->client = NULL;
	}
	if (f->stats.connected || f->welcomed)
		log_warn("replication: disconnected from %s:%u: %s", f->host, (unsigned)f->port, why);
	f->stats.connected = false;
	f->welcomed = false;
	f->synced = false;
	f->broken = false;
	f->checkpoint.len = 0;
	acks_clear(f); /* a new connection acknowledges from its own checkpoint on */
	f->stream.len = 0; /* a partial record: sent again, or replaced by the next full sync */
	/* f->pending stays: those records are journaled here; a promotion applies them, a full sync drops them */
	if (!f->stopping) schedule_connect(f, RETRY_MS);
}

static void on_poll(uv_poll_t *h, int status, int events) {
	(void)events;
	repl_follower *f = h->data;
	if (!f->client) return;
	int r;
	if (status < 0) {
		/* an error on the socket (a primary killed may reset the connection): what it still holds was
		 * sent before, and a promotion applies it, so it is read first */
		while ((r = crowd_client_poll(f->client, 0)) > 0 && !f->broken) {
		}
		if (r >= 0) r = CROWD_CLIENT_ERR_IO;
	} else {
		r = crowd_client_poll(f->client, 0);
	}
	if (r < 0) {
		/* a crowd server says why before it closes (an Error): bytes that do not frame, or a close
		 * without a word three times over, come from something else */
		if (!f->welcomed && (r == CROWD_CLIENT_ERR_PROTOCOL || r == CROWD_CLIENT_ERR_FRAME_TOO_LARGE ||
		                     ++f->silent_closes >= 3)) {
			refuse(f, "%s:%u is not a crowd server (%s before any Welcome)", f->host, (unsigned)f->port,
			       crowd_client_strerror(r));
			return;
		}
		disconnect(f, crowd_client_strerror(r));
		return;
	}
	if (f->broken) {
		disconnect(f, "the stream did not follow on");
		return;
	}
	uv_poll_start(f->poll, UV_READABLE | (crowd_client_pending_output(f->client) ? UV_WRITABLE : 0), on_poll);
}

static void on_welcome_timeout(uv_timer_t *t) {
	repl_follower *f = t->data;
	if (!f->welcomed)
		refuse(f, "%s:%u sent no Welcome within %u s: not a crowd server?", f->host, (unsigned)f->port,
		       WELCOME_TIMEOUT_MS / 1000);
}

static void try_connect(uv_timer_t *t) {
	repl_follower *f = t->data;
	crowd_client_options o = crowd_client_default_options();
	o.connect_timeout_ms = 2000;
	o.world = f->cfg->follow_world[0] ? f->cfg->follow_world : NULL;
	o.callbacks.on_welcome = on_welcome;
	o.callbacks.on_error = on_error;
	o.callbacks.on_replication = on_replication;
	o.user = f;
	int rc = crowd_client_connect(f->host, f->port, &o, &f->client);
	if (rc != CROWD_CLIENT_OK) {
		if (f->attempts++ % 40 == 0)
			log_warn("replication: cannot connect to %s:%u: %s; trying again", f->host, (unsigned)f->port,
			         crowd_client_strerror(rc));
		f->client = NULL;
		schedule_connect(f, RETRY_MS);
		return;
	}
	f->attempts = 0;
	f->follow_request = -1;
	crowd_client_hello(f->client, f->cfg->follow_token[0] ? f->cfg->follow_token : NULL, "follower", true);
	f->poll = malloc(sizeof *f->poll);
	if (!f->poll || uv_poll_init(f->loop, f->poll, crowd_client_fd(f->client)) != 0) {
		free(f->poll);
		f->poll = NULL;
		crowd_client_close(f->client, 0);
		f->client = NULL;
		schedule_connect(f, RETRY_MS);
		return;
	}
	f->poll->data = f;
	uv_poll_start(f->poll, UV_READABLE | UV_WRITABLE, on_poll);
	uv_timer_start(&f->timer, on_welcome_timeout, WELCOME_TIMEOUT_MS, 0);
}

static void schedule_connect(repl_follower *f, uint64_t ms) {
	uv_timer_start(&f->timer, try_connect, ms, 0);
}

int repl_follower_start(uv_loop_t *loop, const server_config *cfg, const char *history,
                        const repl_follower_hooks *hooks, repl_follower **out) {
	*out = NULL;
	repl_follower *f = calloc(1, sizeof *f);
	if (!f) return -1;
	if (crowd_client_parse_address(cfg->follow, f->host, sizeof f->host, &f->port) < 0) {
		log_error("--follow %s: wants HOST:PORT", cfg->follow);
		free(f);
		return -1;
	}
	f->loop = loop;
	f->cfg = cfg;
	f->hooks = *hooks;
	snprintf(f->history, sizeof f->history, "%s", history ? history : "");
	crowd_buf_init(&f->checkpoint);
	crowd_buf_init(&f->stream);
	crowd_buf_init(&f->pending);
	uv_timer_init(loop, &f->timer);
	f->timer.data = f;
	schedule_connect(f, 0);
	*out = f;
	return 0;
}

static void on_timer_closed(uv_handle_t *h) {
	repl_follower *f = h->data;
	crowd_buf_free(&f->checkpoint);
	crowd_buf_free(&f->stream);
	crowd_buf_free(&f->pending);
	free(f->acks);
	free(f);
}

void repl_follower_stop(repl_follower *f, uint8_t **pending, size_t *pending_len) {
	*pending = NULL;
	*pending_len = 0;
	if (!f) return;
	if (f->pending.len) {
		*pending = malloc(f->pending.len);
		if (*pending) {
			memcpy(*pending, f->pending.data, f->pending.len);
			*pending_len = f->pending.len;
		}
	}
	f->stopping = true;
	disconnect(f, "stopped following");
	uv_timer_stop(&f->timer);
	uv_close((uv_handle_t *)&f->timer, on_timer_closed);
}

void repl_follower_drain(repl_follower *f) {
	if (!f) return;
	while (f->client && !f->broken && crowd_client_poll(f->client, 0) > 0) {
	}
}

void repl_follower_get_stats(const repl_follower *f, repl_follower_stats *out) {
	memset(out, 0, sizeof *out);
	if (f) *out = f->stats;
}
