/* load_conn.c — one crowd.v1 TCP connection of crowd-load: Hello, spawn,
 * subscribe, then retargets and pings on its own timer, and everything it
 * measures — request→Ack latency, command→visible latency, snapshot interval,
 * jitter, skipped ticks, bytes, errors by code. */
#include "load.h"
#include "load_ws.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <pb_decode.h>

#define READ_CHUNK 65536u
#define MAX_FRAME (64u << 20)
#define MAX_PENDING_REQUESTS 4096u
#define NO_SLOT UINT32_MAX
#define TRIP_MARGIN 2.0f     /* trip ends keep an agent's radius (1.5) and a little off the blocks */
#define PROBE_MIN_SPEED 0.3f /* units/s: an agent this fast is "moving" and makes a good latency probe */

/* ------------------------------------------------------------------ stats */

bool load_stats_init(load_stats *s, uint32_t sub_bits) {
	memset(s, 0, sizeof *s);
	/* microseconds up to 2^36 (19 h): any latency a run can see */
	return load_hist_init(&s->ack_us, sub_bits, 36) && load_hist_init(&s->visible_us, sub_bits, 36) &&
	       load_hist_init(&s->applied_us, sub_bits, 36) && load_hist_init(&s->interval_us, sub_bits, 36) &&
	       load_hist_init(&s->jitter_us, sub_bits, 36) && load_hist_init(&s->arrival_us, sub_bits, 36) &&
	       load_hist_init(&s->trip_us, sub_bits, 36);
}

void load_stats_free(load_stats *s) {
	load_hist_free(&s->ack_us);
	load_hist_free(&s->visible_us);
	load_hist_free(&s->applied_us);
	load_hist_free(&s->interval_us);
	load_hist_free(&s->jitter_us);
	load_hist_free(&s->arrival_us);
	load_hist_free(&s->trip_us);
}

void load_stats_reset(load_stats *s) {
	/* Errors, disconnects and failures count for the whole run; the rest
	 * measures only the steady phase. */
	load_hist_reset(&s->ack_us);
	load_hist_reset(&s->visible_us);
	load_hist_reset(&s->applied_us);
	load_hist_reset(&s->interval_us);
	load_hist_reset(&s->jitter_us);
	load_hist_reset(&s->arrival_us);
	load_hist_reset(&s->trip_us);
	s->trips = s->trips_within_2x = s->trips_late_60 = s->trips_open = s->trips_open_late_60 = 0;
	s->trips_unmeasured = 0;
	s->trip_free_s_sum = 0;
	s->arrivals = s->superseded = s->unreachable = s->stuck = 0;
	s->bytes_in = s->bytes_out = 0;
	s->snapshots = s->keyframes = s->snapshot_bytes = s->snapshot_agents = 0;
	s->skipped = 0;
	s->requests = s->acks = 0;
	s->retargets = s->retarget_agents = 0;
	s->visible_seen = s->visible_unseen = 0;
	s->pongs = 0;
}

void load_stats_add_counters(load_stats *dst, const load_stats *src) {
	dst->bytes_in += src->bytes_in;
	dst->bytes_out += src->bytes_out;
	dst->snapshots += src->snapshots;
	dst->keyframes += src->keyframes;
	dst->snapshot_bytes += src->snapshot_bytes;
	dst->snapshot_agents += src->snapshot_agents;
	dst->skipped += src->skipped;
	for (int i = 0; i < LOAD_ERROR_CODES; i++) dst->errors[i] += src->errors[i];
	dst->error_total += src->error_total;
	dst->decode_failures += src->decode_failures;
	dst->disconnects += src->disconnects;
	dst->connect_failures += src->connect_failures;
	dst->requests += src->requests;
	dst->acks += src->acks;
	dst->retargets += src->retargets;
	dst->retarget_agents += src->retarget_agents;
	dst->visible_seen += src->visible_seen;
	dst->visible_unseen += src->visible_unseen;
	dst->agents_spawned += src->agents_spawned;
	dst->pongs += src->pongs;
	dst->arrivals += src->arrivals;
	dst->superseded += src->superseded;
	dst->unreachable += src->unreachable;
	dst->stuck += src->stuck;
	dst->trips += src->trips;
	dst->trips_within_2x += src->trips_within_2x;
	dst->trips_late_60 += src->trips_late_60;
	dst->trips_open += src->trips_open;
	dst->trips_open_late_60 += src->trips_open_late_60;
	dst->trips_unmeasured += src->trips_unmeasured;
	dst->trip_free_s_sum += src->trip_free_s_sum;
}

/* ------------------------------------------------------------------ helpers */

static uint64_t rng_next(uint64_t *s) {
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static double rng_unit(uint64_t *s) {
	return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static float rng_range(uint64_t *s, float lo, float hi) {
	return lo + (float)rng_unit(s) * (hi - lo);
}

/* Record into this connection's, the run's and the progress interval's histogram. */
static void record_hist(load_conn *c, size_t offset, uint64_t us) {
	load_hist_record((load_hist *)((char *)&c->stats + offset), us);
	load_hist_record((load_hist *)((char *)&c->run->total + offset), us);
	load_hist_record((load_hist *)((char *)&c->run->interval + offset), us);
}

/* Only what was sent while measuring counts (stats are reset when measuring
 * starts; an answer to an earlier request must not land in the new figures). */
static bool in_window(const load_conn *c, uint64_t sent_ns) {
	return c->run->measuring && sent_ns >= c->run->measure_start_ns;
}

static void record_ack(load_conn *c, uint64_t sent_ns) {
	if (!in_window(c, sent_ns)) return;
	record_hist(c, offsetof(load_stats, ack_us), (uv_hrtime() - sent_ns) / 1000u);
	c->stats.acks++;
}

static void record_visible(load_conn *c, uint64_t us) {
	record_hist(c, offsetof(load_stats, visible_us), us);
	c->stats.visible_seen++;
}

/* ------------------------------------------------------------------ sending */

typedef struct write_req {
	uv_write_t req;
	crowd_buf buf;
} write_req;

static void on_write(uv_write_t *req, int status) {
	write_req *w = (write_req *)req;
	crowd_buf_free(&w->buf);
	free(w);
	(void)status; /* a failed write shows up as a read error or EOF */
}

static void remember_request(load_conn *c, uint32_t id, uint8_t kind) {
	if (c->req_count == c->req_cap) {
		if (c->req_cap >= MAX_PENDING_REQUESTS) {
			/* never answered: drop the oldest */
			c->req_head = (c->req_head + 1) % c->req_cap;
			c->req_count--;
		} else {
			uint32_t cap = c->req_cap ? c->req_cap * 2 : 16;
			load_pending_request *r = malloc(cap * sizeof *r);
			if (!r) return;
			for (uint32_t i = 0; i < c->req_count; i++) r[i] = c->requests[(c->req_head + i) % c->req_cap];
			free(c->requests);
			c->requests = r;
			c->req_cap = cap;
			c->req_head = 0;
		}
	}
	load_pending_request *p = &c->requests[(c->req_head + c->req_count) % c->req_cap];
	p->request_id = id;
	p->kind = kind;
	p->sent_ns = uv_hrtime();
	c->req_count++;
}

/* Find and retire the request `id` (or the oldest of `kind` when id is 0).
 * Returns its kind, 0 if not pending; *sent_ns gets its send time. */
static uint8_t take_request(load_conn *c, uint32_t id, uint8_t kind, uint64_t *sent_ns) {
	for (uint32_t i = 0; i < c->req_count; i++) {
		load_pending_request *p = &c->requests[(c->req_head + i) % c->req_cap];
		if (p->kind == 0 || (id ? p->request_id != id : p->kind != kind)) continue;
		uint8_t k = p->kind;
		*sent_ns = p->sent_ns;
		p->kind = 0;
		while (c->req_count && c->requests[c->req_head].kind == 0) {
			c->req_head = (c->req_head + 1) % c->req_cap;
			c->req_count--;
		}
		return k;
	}
	return 0;
}

void load_run_failed(load_run *run, const char *fmt, ...) {
	run->failed++;
	if (run->failure[0]) return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(run->failure, sizeof run->failure, fmt, ap);
	va_end(ap);
}

/* "HOST:PORT" ("[V6]:PORT") of the server, for messages. */
static const char *server_text(const load_run *run) {
	static char text[300];
	const bool v6 = strchr(run->opt.host, ':') != NULL;
	snprintf(text, sizeof text, "%s%s%s:%d", v6 ? "[" : "", run->opt.host, v6 ? "]" : "", run->opt.port);
	return text;
}

/* What to check when the peer does not speak crowd.v1 the way we asked. */
static const char *port_hint(const load_run *run) {
	return run->opt.websocket ? "; is this a crowd server's HTTP port? (its TCP port is used without --ws)"
	                          : "; is this a crowd server's TCP port? (its HTTP port needs --ws)";
}

/* A connection that has not reached RUNNING ends: say why (once per connection). */
static void setup_failed(load_conn *c, const char *why) {
	if (c->state == LOAD_CONN_RUNNING || c->state == LOAD_CONN_CLOSING || c->state == LOAD_CONN_CLOSED) return;
	load_run_failed(c->run, "%s: %s", server_text(c->run), why);
}

/* Encode and send one request; returns its request_id (0 on failure). */
/* Queue bytes on the socket; takes the buffer. */
static bool write_buf(load_conn *c, crowd_buf *buf) {
	write_req *w = calloc(1, sizeof *w);
	if (!w) {
		crowd_buf_free(buf);
		return false;
	}
	w->buf = *buf;
	crowd_buf_init(buf);
	uv_buf_t b = uv_buf_init((char *)w->buf.data, (unsigned)w->buf.len);
	if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
		crowd_buf_free(&w->buf);
		free(w);
		return false;
	}
	c->stats.bytes_out += w->buf.len;
	return true;
}

/* Encode and send one request (a varint-prefixed frame over TCP, one binary
 * message over WebSocket); returns its request_id (0 on failure). */
static uint32_t send_message(load_conn *c, crowd_v1_ClientMessage *msg) {
	if (!c->tcp_open || c->state == LOAD_CONN_CLOSING || c->state == LOAD_CONN_CLOSED) return 0;
	msg->request_id = c->next_request_id++;
	bool ws = c->run->opt.websocket;
	crowd_buf body, out;
	crowd_buf_init(&body);
	crowd_buf_init(&out);
	bool ok = crowd_encode_client_message(msg, !ws, ws ? &body : &out);
	if (ok && ws) ok = load_ws_frame(&c->ws, 0x2, body.data, body.len, &out);
	crowd_buf_free(&body);
	if (!ok) {
		crowd_buf_free(&out);
		return 0;
	}
	if (!write_buf(c, &out)) return 0;
	c->stats.requests++;
	remember_request(c, msg->request_id, (uint8_t)msg->which_msg);
	return msg->request_id;
}

static void send_hello(load_conn *c) {
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_hello_tag;
	m.msg.hello.protocol_major = CROWD_PROTOCOL_MAJOR;
	m.msg.hello.protocol_minor = CROWD_PROTOCOL_MINOR;
	memcpy(m.msg.hello.token, c->run->opt.token, sizeof m.msg.hello.token);
	snprintf(m.msg.hello.client_name, sizeof m.msg.hello.client_name, "%.20s-%u", c->run->opt.name, c->index);
	m.msg.hello.keep_agents_on_disconnect = c->run->opt.keep_agents;
	char world[48];
	if (load_worlds_enabled(c->run) && !load_world_leader(c->run, c->index)) {
		load_world_name(c->run, load_world_of(c->run, c->index), world, sizeof world);
		m.msg.hello.world = world;
	}
	send_message(c, &m);
}

/* --worlds, a world's first connection: CreateWorld, then JoinWorld (world_step). */
static void send_world_request(load_conn *c, pb_size_t tag) {
	char name[48];
	load_world_name(c->run, load_world_of(c->run, c->index), name, sizeof name);
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = tag;
	if (tag == crowd_v1_ClientMessage_create_world_tag) {
		m.msg.create_world.name = name;
		m.msg.create_world.has_settings = true; /* all 0: the server's own settings */
	} else {
		m.msg.join_world.name = name;
	}
	if (!send_message(c, &m)) load_conn_close(c);
}

bool load_conn_list_worlds(load_conn *c) {
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_list_worlds_tag;
	return send_message(c, &m) != 0;
}

/* The agents this connection spawns: from the plan's file, or random in its region. */
static void send_spawns(load_conn *c) {
	const load_options *o = &c->run->opt;
	const load_plan *plan = &c->run->plan;
	uint32_t first = 0, count = o->agents_per_conn;
	if (plan->from_file) {
		first = plan->first[c->index];
		count = plan->first[c->index + 1] - first;
	}
	uint32_t batch = o->spawn_batch ? o->spawn_batch : 1000;
	if (batch > 65535) batch = 65535;
	crowd_v1_AgentSpec *specs = calloc(batch, sizeof *specs);
	if (!specs) return;
	c->spawn_batch = batch;
	if (o->trips) {
		free(c->first_free_s);
		c->first_free_s = calloc(count ? count : 1, sizeof *c->first_free_s);
		c->first_free_count = c->first_free_s ? count : 0;
	}
	for (uint32_t done = 0; done < count;) {
		uint32_t n = count - done < batch ? count - done : batch;
		for (uint32_t i = 0; i < n; i++) {
			crowd_v1_AgentSpec *s = &specs[i];
			*s = (crowd_v1_AgentSpec)crowd_v1_AgentSpec_init_zero;
			s->has_position = s->has_target = true;
			s->has_time_horizon = o->time_horizon > 0;
			s->time_horizon = (float)o->time_horizon;
			s->has_time_horizon_obst = o->time_horizon_obst > 0;
			s->time_horizon_obst = (float)o->time_horizon_obst;
			if (plan->from_file) {
				const load_agent_spec *a = &plan->agents[first + done + i];
				s->position.x = a->x;
				s->position.y = a->y;
				s->target.x = a->goal_x;
				s->target.y = a->goal_y;
			} else if (o->trips) {
				load_city_random_point(&c->city, &c->rng, &s->position.x, &s->position.y);
				const float len = load_city_trip(&c->city, &c->rng, s->position.x, s->position.y,
				                                 (float)o->trip_reach, &s->target.x, &s->target.y);
				if (c->first_free_s) c->first_free_s[done + i] = len / (float)o->trip_speed;
				continue;
			} else {
				s->position.x = rng_range(&c->rng, c->region[0], c->region[2]);
				s->position.y = rng_range(&c->rng, c->region[1], c->region[3]);
			}
			if (!plan->from_file || o->local_targets) {
				s->target.x = rng_range(&c->rng, c->region[0], c->region[2]);
				s->target.y = rng_range(&c->rng, c->region[1], c->region[3]);
			}
		}
		crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
		m.which_msg = crowd_v1_ClientMessage_spawn_agents_tag;
		m.msg.spawn_agents.agents_count = (pb_size_t)n;
		m.msg.spawn_agents.agents = specs;
		if (send_message(c, &m)) c->spawn_pending++;
		done += n;
	}
	free(specs);
}

static void send_subscribe(load_conn *c) {
	const load_options *o = &c->run->opt;
	if (o->area == LOAD_AREA_NONE) return;
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_subscribe_tag;
	m.msg.subscribe.divisor = o->divisor;
	if (o->area == LOAD_AREA_WINDOW) {
		m.msg.subscribe.has_area = true;
		m.msg.subscribe.area.min_x = c->region[0];
		m.msg.subscribe.area.min_y = c->region[1];
		m.msg.subscribe.area.max_x = c->region[2];
		m.msg.subscribe.area.max_y = c->region[3];
	}
	send_message(c, &m);
}

static void send_ping(load_conn *c) {
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_ping_tag;
	m.msg.ping.client_time_us = uv_hrtime() / 1000u;
	send_message(c, &m);
}

/* ------------------------------------------------------------------ retargets */

static void clamp_to_region(const load_conn *c, float *x, float *y) {
	if (*x < c->region[0]) *x = c->region[0];
	if (*x > c->region[2]) *x = c->region[2];
	if (*y < c->region[1]) *y = c->region[1];
	if (*y > c->region[3]) *y = c->region[3];
}

/* A new target for an agent seen at (px, py) moving at (vx, vy): about
 * `distance` away, turned well away from where it is heading (so that the
 * turn is unmistakable in a snapshot), inside the region. */
static void pick_target(load_conn *c, float px, float py, float vx, float vy, float *tx, float *ty) {
	float distance = (float)c->run->opt.retarget_distance;
	float speed = sqrtf(vx * vx + vy * vy);
	float best_x = px, best_y = py, best_score = -1e30f;
	for (int attempt = 0; attempt < 12; attempt++) {
		float angle = (float)(rng_unit(&c->rng) * 2.0 * M_PI);
		float dx = cosf(angle), dy = sinf(angle);
		if (attempt == 0 && speed > 1e-3f) {
			dx = -vx / speed; /* straight back first */
			dy = -vy / speed;
		}
		float x = px + dx * distance, y = py + dy * distance;
		clamp_to_region(c, &x, &y);
		float ex = x - px, ey = y - py;
		float len = sqrtf(ex * ex + ey * ey);
		if (len < 1e-3f) continue;
		float turn = speed > 1e-3f ? -(ex * vx + ey * vy) / (len * speed) : 1.0f; /* 1 = reversed */
		float score = turn + (len >= 0.5f * distance ? 1.0f : len / distance);
		if (score > best_score) {
			best_score = score;
			best_x = x;
			best_y = y;
		}
		if (turn > 0.5f && len >= 0.5f * distance) break;
	}
	*tx = best_x;
	*ty = best_y;
}

static void drop_visible(load_conn *c, uint32_t slot) {
	c->own_pending[c->visible[slot].agent_index] = NO_SLOT;
	c->visible_count--;
	if (slot != c->visible_count) {
		c->visible[slot] = c->visible[c->visible_count];
		c->own_pending[c->visible[slot].agent_index] = slot;
	}
}

static void track_visible(load_conn *c, uint32_t agent_index, uint32_t request_id, float tx, float ty, float vx,
                          float vy, uint64_t now) {
	uint32_t slot = c->own_pending[agent_index];
	if (slot != NO_SLOT) {
		c->stats.visible_unseen++; /* retargeted again before the last one showed */
	} else {
		if (c->visible_count == c->visible_cap) {
			uint32_t cap = c->visible_cap ? c->visible_cap * 2 : 16;
			load_pending_visible *v = realloc(c->visible, cap * sizeof *v);
			if (!v) return;
			c->visible = v;
			c->visible_cap = cap;
		}
		slot = c->visible_count++;
		c->own_pending[agent_index] = slot;
	}
	c->visible[slot].agent_index = agent_index;
	c->visible[slot].target_x = tx;
	c->visible[slot].target_y = ty;
	c->visible[slot].vx0 = vx;
	c->visible[slot].vy0 = vy;
	c->visible[slot].request_id = request_id;
	c->visible[slot].acked = false;
	c->visible[slot].sent_ns = now;
}

static void send_retarget(load_conn *c) {
	const load_options *o = &c->run->opt;
	if (c->own_count == 0) return;
	uint32_t n = o->retarget_count < c->own_count ? o->retarget_count : c->own_count;
	if (n == 0) return;
	uint32_t *ids = malloc(n * sizeof *ids);
	uint32_t *idx = malloc(n * sizeof *idx);
	float *xs = malloc(n * sizeof *xs), *ys = malloc(n * sizeof *ys);
	float *vxs = malloc(n * sizeof *vxs), *vys = malloc(n * sizeof *vys);
	bool *tracked = calloc(n, sizeof *tracked);
	if (!ids || !idx || !xs || !ys || !vxs || !vys || !tracked) goto out;
	/* Prefer agents this connection sees moving (their turn can be timed; an
	 * agent stuck in a jam shows no turn whatever it is told), then agents it
	 * sees, then the rest, each in round-robin order. */
	uint32_t chosen = 0;
	float moving = PROBE_MIN_SPEED * c->precision;
	for (int pass = 0; pass < 3 && chosen < n; pass++) {
		for (uint32_t k = 0; k < c->own_count && chosen < n; k++) {
			uint32_t i = (c->retarget_cursor + k) % c->own_count;
			const crowd_agent_q *a = crowd_view_find(&c->view, c->own_ids[i]);
			if ((pass == 2) != (a == NULL)) continue;
			if (pass == 0 && (float)a->vx * (float)a->vx + (float)a->vy * (float)a->vy < moving * moving)
				continue;
			bool dup = false;
			for (uint32_t j = 0; j < chosen && !dup; j++) dup = idx[j] == i;
			if (dup) continue;
			idx[chosen] = i;
			ids[chosen] = c->own_ids[i];
			if (a) {
				float p = c->precision;
				vxs[chosen] = (float)a->vx / p;
				vys[chosen] = (float)a->vy / p;
				pick_target(c, (float)a->x / p, (float)a->y / p, vxs[chosen], vys[chosen], &xs[chosen],
				            &ys[chosen]);
				tracked[chosen] = true;
			} else {
				xs[chosen] = rng_range(&c->rng, c->region[0], c->region[2]);
				ys[chosen] = rng_range(&c->rng, c->region[1], c->region[3]);
			}
			chosen++;
		}
	}
	c->retarget_cursor = (c->retarget_cursor + chosen) % c->own_count;
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_set_targets_tag;
	m.msg.set_targets.ids_count = m.msg.set_targets.x_count = m.msg.set_targets.y_count = (pb_size_t)chosen;
	m.msg.set_targets.ids = ids;
	m.msg.set_targets.x = xs;
	m.msg.set_targets.y = ys;
	uint32_t request_id = send_message(c, &m);
	if (request_id) {
		uint64_t now = uv_hrtime();
		c->stats.retargets++;
		c->stats.retarget_agents += chosen;
		for (uint32_t j = 0; j < chosen; j++)
			if (tracked[j]) track_visible(c, idx[j], request_id, xs[j], ys[j], vxs[j], vys[j], now);
		/* navigation: command→arrival is timed from here to the agent's ARRIVED */
		for (uint32_t j = 0; j < chosen; j++) {
			if (c->own_target_ns[idx[j]]) c->stats.superseded++;
			c->own_target_ns[idx[j]] = now;
		}
	}
out:
	free(ids);
	free(idx);
	free(xs);
	free(ys);
	free(vxs);
	free(vys);
	free(tracked);
}

/* A pending retarget shows when the agent stands at its new target, moves
 * toward it (within 60°), or its velocity has swung toward it by at least
 * TURN_SHOWN (units/s) since the command was sent: in a dense crowd avoidance
 * may keep the heading off the target for a while, but the swing shows the
 * new preferred velocity took effect. */
#define TURN_SHOWN 0.2f

static void check_visible(load_conn *c, uint64_t now) {
	float p = c->precision;
	uint64_t timeout_ns = (uint64_t)(c->run->opt.visible_timeout_s * 1e9);
	for (uint32_t slot = 0; slot < c->visible_count;) {
		load_pending_visible *v = &c->visible[slot];
		const crowd_agent_q *a = crowd_view_find(&c->view, c->own_ids[v->agent_index]);
		bool seen = false;
		if (a && v->acked) {
			float dx = v->target_x - (float)a->x / p, dy = v->target_y - (float)a->y / p;
			float vx = (float)a->vx / p, vy = (float)a->vy / p;
			float dist = sqrtf(dx * dx + dy * dy), speed = sqrtf(vx * vx + vy * vy);
			if (dist < 0.5f)
				seen = true;
			else if (speed > 0.02f && (dx * vx + dy * vy) >= 0.5f * dist * speed)
				seen = true;
			else if (((vx - v->vx0) * dx + (vy - v->vy0) * dy) >= TURN_SHOWN * dist)
				seen = true;
		}
		if (seen) {
			if (in_window(c, v->sent_ns)) record_visible(c, (now - v->sent_ns) / 1000u);
			drop_visible(c, slot);
		} else if (now - v->sent_ns > timeout_ns) {
			if (in_window(c, v->sent_ns)) c->stats.visible_unseen++;
			drop_visible(c, slot);
		} else {
			slot++;
		}
	}
}

/* ------------------------------------------------------------------ timer */

static void schedule(load_conn *c);

static void on_timer(uv_timer_t *t) {
	load_conn *c = t->data;
	if (c->state != LOAD_CONN_RUNNING || c->run->draining) return;
	uint64_t now = uv_hrtime();
	const load_options *o = &c->run->opt;
	if (o->retarget_s > 0 && now >= c->next_retarget_ns) {
		send_retarget(c);
		/* from the deadline, not from now: no drift */
		c->next_retarget_ns += (uint64_t)(o->retarget_s * 1e9);
		if (c->next_retarget_ns < now) c->next_retarget_ns = now + (uint64_t)(o->retarget_s * 1e9);
	}
	if (o->ping_s > 0 && now >= c->next_ping_ns) {
		send_ping(c);
		c->next_ping_ns += (uint64_t)(o->ping_s * 1e9);
		if (c->next_ping_ns < now) c->next_ping_ns = now + (uint64_t)(o->ping_s * 1e9);
	}
	schedule(c);
}

static void schedule(load_conn *c) {
	const load_options *o = &c->run->opt;
	uint64_t next = UINT64_MAX;
	if (o->retarget_s > 0) next = c->next_retarget_ns;
	if (o->ping_s > 0 && c->next_ping_ns < next) next = c->next_ping_ns;
	if (next == UINT64_MAX || !c->timer_open) return;
	uint64_t now = uv_hrtime();
	uint64_t ms = next > now ? (next - now + 999999u) / 1000000u : 0;
	uv_timer_start(&c->timer, on_timer, ms, 0);
}

static void start_running(load_conn *c) {
	if (c->state == LOAD_CONN_RUNNING) return;
	c->state = LOAD_CONN_RUNNING;
	c->run->running++;
	uint64_t now = uv_hrtime();
	const load_options *o = &c->run->opt;
	/* a random phase per connection, so retargets spread over the interval */
	if (o->retarget_s > 0) c->next_retarget_ns = now + (uint64_t)(rng_unit(&c->rng) * o->retarget_s * 1e9);
	if (o->ping_s > 0) c->next_ping_ns = now + (uint64_t)(rng_unit(&c->rng) * o->ping_s * 1e9);
	schedule(c);
}

/* ------------------------------------------------------------------ receiving */

static void count_error(load_conn *c, uint32_t code) {
	uint32_t slot = code < LOAD_ERROR_CODES - 1 ? code : LOAD_ERROR_CODES - 1;
	c->stats.errors[slot]++;
	c->stats.error_total++;
}

/* In its world: subscribe and spawn. */
static void begin_work(load_conn *c) {
	send_subscribe(c);
	send_spawns(c);
	if (c->spawn_pending)
		c->state = LOAD_CONN_SPAWNING;
	else
		start_running(c);
}

/* --worlds: the answer to a leader's CreateWorld (a world already open will do) or JoinWorld. */
static void world_step(load_conn *c, uint8_t kind, uint32_t error_code) {
	load_run *run = c->run;
	if (kind == crowd_v1_ClientMessage_create_world_tag &&
	    (!error_code || error_code == crowd_v1_ErrorCode_ERROR_WORLD_EXISTS)) {
		send_world_request(c, crowd_v1_ClientMessage_join_world_tag);
		return;
	}
	if (!error_code) {
		c->in_world = true;
		run->worlds_ready++;
		begin_work(c);
		return;
	}
	char name[48], why[160];
	load_world_name(run, load_world_of(run, c->index), name, sizeof name);
	snprintf(why, sizeof why, "%s %s refused: %s",
	         kind == crowd_v1_ClientMessage_create_world_tag ? "CreateWorld" : "JoinWorld", name,
	         load_error_name(error_code));
	setup_failed(c, why);
	run->worlds_failed++;
	load_conn_close(c);
}

static void on_welcome(load_conn *c, const crowd_v1_Welcome *w) {
	uint64_t sent;
	if (take_request(c, 0, crowd_v1_ClientMessage_hello_tag, &sent)) record_ack(c, sent);
	c->client_id = w->client_id;
	c->precision = w->precision ? (float)w->precision : 100.0f;
	c->tick_rate_hz = w->tick_rate_hz ? w->tick_rate_hz : 30;
	c->welcome_tick = w->tick;
	c->welcome_ns = uv_hrtime();
	c->divisor = c->run->opt.divisor ? c->run->opt.divisor : (w->snapshot_divisor ? w->snapshot_divisor : 1);
	if (w->has_world_bounds && w->world_bounds.max_x > w->world_bounds.min_x &&
	    w->world_bounds.max_y > w->world_bounds.min_y) {
		c->world[0] = w->world_bounds.min_x;
		c->world[1] = w->world_bounds.min_y;
		c->world[2] = w->world_bounds.max_x;
		c->world[3] = w->world_bounds.max_y;
	} else {
		c->world[0] = c->world[1] = -100;
		c->world[2] = c->world[3] = 100;
	}
	const load_options *o = &c->run->opt;
	const load_plan *plan = &c->run->plan;
	memcpy(c->region, c->world, sizeof c->region);
	if (plan->window && (o->area == LOAD_AREA_WINDOW || o->local_targets)) {
		memcpy(c->region, &plan->window[4 * c->index], sizeof c->region);
	} else if (o->area == LOAD_AREA_WINDOW) {
		float w0 = (float)o->window_w, h0 = (float)o->window_h;
		float span_x = c->world[2] - c->world[0], span_y = c->world[3] - c->world[1];
		if (w0 > span_x) w0 = span_x;
		if (h0 > span_y) h0 = span_y;
		c->region[0] = rng_range(&c->rng, c->world[0], c->world[2] - w0);
		c->region[1] = rng_range(&c->rng, c->world[1], c->world[3] - h0);
		c->region[2] = c->region[0] + w0;
		c->region[3] = c->region[1] + h0;
	}
	if (o->trips) load_city_init(&c->city, c->world, (float)o->city_block, (float)o->city_street, TRIP_MARGIN);
	if (load_world_leader(c->run, c->index) && !c->in_world) {
		c->state = LOAD_CONN_SPAWNING; /* past Hello: an Error now answers a world request */
		send_world_request(c, crowd_v1_ClientMessage_create_world_tag);
		return;
	}
	begin_work(c);
}

static bool grow_own(load_conn *c, uint32_t extra) {
	if (c->own_count + extra <= c->own_cap) return true;
	uint32_t cap = c->own_cap ? c->own_cap : 64;
	while (cap < c->own_count + extra) cap *= 2;
	uint32_t *ids = realloc(c->own_ids, cap * sizeof *ids);
	if (!ids) return false;
	c->own_ids = ids;
	uint64_t *tns = realloc(c->own_target_ns, cap * sizeof *tns);
	if (!tns) return false;
	c->own_target_ns = tns;
	for (uint32_t i = c->own_cap; i < cap; i++) c->own_target_ns[i] = 0;
	uint32_t *pend = realloc(c->own_pending, cap * sizeof *pend);
	if (!pend) return false;
	c->own_pending = pend;
	for (uint32_t i = c->own_cap; i < cap; i++) c->own_pending[i] = NO_SLOT;
	uint64_t *start = realloc(c->trip_start_tick, cap * sizeof *start);
	if (!start) return false;
	c->trip_start_tick = start;
	float *free_s = realloc(c->trip_free_s, cap * sizeof *free_s);
	if (!free_s) return false;
	c->trip_free_s = free_s;
	uint8_t *unreachable = realloc(c->trip_unreachable, cap);
	if (!unreachable) return false;
	c->trip_unreachable = unreachable;
	uint16_t *done = realloc(c->trips_done, cap * sizeof *done);
	if (!done) return false;
	c->trips_done = done;
	uint8_t *late = realloc(c->trip_late, cap);
	if (!late) return false;
	c->trip_late = late;
	for (uint32_t i = c->own_cap; i < cap; i++) {
		c->trip_start_tick[i] = 0, c->trip_free_s[i] = 0, c->trip_unreachable[i] = 0;
		c->trips_done[i] = 0, c->trip_late[i] = 0;
	}
	c->own_cap = cap;
	return true;
}

/* A SetTargets was answered: its agents' turns may show from the next
 * snapshot on (the server acks when it applies commands, before the step). */
static void after_set_targets(load_conn *c, uint32_t request_id, uint64_t sent_ns, bool refused) {
	for (uint32_t slot = 0; slot < c->visible_count;) {
		load_pending_visible *v = &c->visible[slot];
		if (v->request_id == request_id) {
			if (refused) {
				drop_visible(c, slot);
				continue;
			}
			v->acked = true;
		}
		slot++;
	}
	if (refused) return;
	if (c->await_count == c->await_cap) {
		uint32_t cap = c->await_cap ? c->await_cap * 2 : 8;
		uint64_t *a = realloc(c->await_snapshot, cap * sizeof *a);
		if (!a) return;
		c->await_snapshot = a;
		c->await_cap = cap;
	}
	c->await_snapshot[c->await_count++] = sent_ns;
}

/* --trips: the first trips of agents just spawned (their Ack is sent when
 * the spawn is applied, before that tick's step) start at the tick reckoned
 * from Welcome's tick and the time since at the nominal rate, plus one. A
 * server slower than its rate makes that tick too late, never too early: a
 * first trip is never timed longer than it took. */
static void start_first_trips(load_conn *c, uint32_t first_spec, uint32_t count) {
	const double rate = c->tick_rate_hz ? (double)c->tick_rate_hz : 30.0;
	const uint64_t tick = c->welcome_tick + 1 + (uint64_t)((double)(uv_hrtime() - c->welcome_ns) * 1e-9 * rate);
	for (uint32_t k = 0; k < count; k++) {
		const uint32_t i = c->own_count + k;
		if (first_spec + k >= c->first_free_count) break; /* more ids than were asked for: not timed */
		c->trip_start_tick[i] = tick;
		c->trip_free_s[i] = c->first_free_s[first_spec + k];
		c->trip_unreachable[i] = 0;
	}
}

static void on_answer(load_conn *c, uint32_t request_id, const crowd_v1_Ack *ack, uint32_t error_code) {
	uint64_t sent = 0;
	uint8_t kind = request_id ? take_request(c, request_id, 0, &sent) : 0;
	bool world_exists = kind == crowd_v1_ClientMessage_create_world_tag &&
	                    error_code == crowd_v1_ErrorCode_ERROR_WORLD_EXISTS; /* expected: another run made it */
	if (error_code && !world_exists) count_error(c, error_code);
	if (!kind) return; /* unasked (request_id 0) or unknown */
	record_ack(c, sent);
	if (kind == crowd_v1_ClientMessage_create_world_tag || kind == crowd_v1_ClientMessage_join_world_tag) {
		world_step(c, kind, error_code);
		return;
	}
	if (kind == crowd_v1_ClientMessage_spawn_agents_tag) {
		const uint32_t first_spec = c->spawn_answered++ * c->spawn_batch; /* batches are answered in order */
		if (ack && ack->ids_count && grow_own(c, ack->ids_count)) {
			memcpy(c->own_ids + c->own_count, ack->ids, ack->ids_count * sizeof *ack->ids);
			if (c->first_free_s) start_first_trips(c, first_spec, ack->ids_count);
			c->own_count += ack->ids_count;
			c->stats.agents_spawned += ack->ids_count;
		}
		if (c->spawn_pending && --c->spawn_pending == 0 && c->state == LOAD_CONN_SPAWNING) start_running(c);
	} else if (kind == crowd_v1_ClientMessage_set_targets_tag) {
		after_set_targets(c, request_id, sent, error_code != 0);
	} else if (kind == crowd_v1_ClientMessage_hello_tag && error_code) {
		load_conn_close(c); /* refused: nothing more to do here */
	}
}

static void on_snapshot(load_conn *c, const crowd_v1_Snapshot *s, size_t frame_len, const crowd_snapshot_stats *st) {
	if (c->run->draining) return; /* after the measured time: the view goes stale, nothing is counted */
	uint64_t now = uv_hrtime();
	load_stats *a = &c->stats;
	a->snapshots++;
	a->snapshot_bytes += frame_len;
	a->snapshot_agents += st->agents;
	if (s->keyframe) a->keyframes++;
	uint64_t expected_ns = (uint64_t)c->divisor * 1000000000ull / (c->tick_rate_hz ? c->tick_rate_hz : 1);
	if (c->last_tick && s->tick > c->last_tick) {
		uint64_t gap = s->tick - c->last_tick;
		uint64_t steps = (gap + c->divisor / 2) / c->divisor;
		if (steps > 1) {
			a->skipped += steps - 1;
		} else {
			uint64_t interval = now - c->last_snapshot_ns;
			uint64_t jitter = interval > expected_ns ? interval - expected_ns : expected_ns - interval;
			record_hist(c, offsetof(load_stats, interval_us), interval / 1000u);
			record_hist(c, offsetof(load_stats, jitter_us), jitter / 1000u);
		}
	}
	c->last_tick = s->tick;
	c->last_snapshot_ns = now;
	for (uint32_t i = 0; i < c->await_count; i++)
		if (in_window(c, c->await_snapshot[i]))
			record_hist(c, offsetof(load_stats, applied_us), (now - c->await_snapshot[i]) / 1000u);
	c->await_count = 0;
	if (c->visible_count) check_visible(c, now);
}

static uint32_t own_index(const load_conn *c, uint32_t agent_id) {
	for (uint32_t i = 0; i < c->own_count; i++)
		if (c->own_ids[i] == agent_id) return i;
	return UINT32_MAX;
}

/* --trips: an agent arrived (or its goal was unreachable). A finished trip is
 * timed in simulated time: from the tick after the event that ended the one
 * before (its new target is applied then: the answer goes out at once) to the
 * tick of its ARRIVED. Every ARRIVED starts the next trip; the new targets of
 * one AgentEvents go out in one SetTargets. */
static void on_trip_events(load_conn *c, const crowd_v1_AgentEvents *ev) {
	const load_options *o = &c->run->opt;
	const double rate = c->tick_rate_hz ? (double)c->tick_rate_hz : 30.0;
	const bool counting = c->run->measuring && !c->run->draining;
	if (ev->tick > c->event_tick) c->event_tick = ev->tick;
	uint32_t n = 0;
	uint32_t *ids = malloc(ev->events_count * sizeof *ids);
	float *xs = malloc(ev->events_count * sizeof *xs), *ys = malloc(ev->events_count * sizeof *ys);
	if (!ids || !xs || !ys) goto out;
	for (pb_size_t k = 0; k < ev->events_count; k++) {
		const crowd_v1_AgentEvent *e = &ev->events[k];
		if (e->kind == crowd_v1_AgentEventKind_AGENT_EVENT_STUCK) c->stats.stuck++;
		if (e->kind != crowd_v1_AgentEventKind_AGENT_EVENT_ARRIVED &&
		    e->kind != crowd_v1_AgentEventKind_AGENT_EVENT_UNREACHABLE)
			continue;
		const uint32_t i = own_index(c, e->agent_id);
		if (i == UINT32_MAX) continue;
		if (e->kind == crowd_v1_AgentEventKind_AGENT_EVENT_UNREACHABLE) {
			c->stats.unreachable++;
			c->trip_unreachable[i] = 1; /* it walks to the nearest point: that trip is not timed */
			continue;
		}
		if (counting) {
			if (c->trip_start_tick[i] == 0 || c->trip_unreachable[i] || ev->tick < c->trip_start_tick[i]) {
				c->stats.trips_unmeasured++;
			} else {
				const double took = (double)(ev->tick - c->trip_start_tick[i]) / rate,
				             free_s = c->trip_free_s[i];
				c->stats.trips++;
				c->stats.trip_free_s_sum += free_s;
				if (took <= 2.0 * free_s) c->stats.trips_within_2x++;
				if (took > free_s + 60.0) {
					c->stats.trips_late_60++;
					if (!c->trip_late[i]) c->late_now++;
				}
				record_hist(c, offsetof(load_stats, trip_us), (uint64_t)(took * 1e6));
			}
			if (o->trips_each && c->trips_done[i] < o->trips_each && ++c->trips_done[i] == o->trips_each)
				c->agents_done++;
		}
		const float px = e->has_point ? e->point.x : e->target.x, py = e->has_point ? e->point.y : e->target.y;
		const float len = load_city_trip(&c->city, &c->rng, px, py, (float)o->trip_reach, &xs[n], &ys[n]);
		ids[n++] = e->agent_id;
		c->trip_start_tick[i] = ev->tick + 1;
		c->trip_free_s[i] = len / (float)o->trip_speed;
		c->trip_unreachable[i] = 0;
		c->trip_late[i] = 0;
	}
	if (o->max_late_trips >= 0 && counting) { /* trips still walking that are late by now */
		for (uint32_t i = 0; i < c->own_count; i++) {
			if (c->trip_late[i] || c->trip_start_tick[i] == 0 || c->trip_unreachable[i] ||
			    c->event_tick < c->trip_start_tick[i])
				continue;
			if ((double)(c->event_tick - c->trip_start_tick[i]) / rate > c->trip_free_s[i] + 60.0) {
				c->trip_late[i] = 1;
				c->late_now++;
			}
		}
	}
	if (n > 0 && !c->run->stopping) {
		crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
		m.which_msg = crowd_v1_ClientMessage_set_targets_tag;
		m.msg.set_targets.ids_count = m.msg.set_targets.x_count = m.msg.set_targets.y_count = (pb_size_t)n;
		m.msg.set_targets.ids = ids;
		m.msg.set_targets.x = xs;
		m.msg.set_targets.y = ys;
		if (send_message(c, &m)) {
			c->stats.retargets++;
			c->stats.retarget_agents += n;
		}
	}
out:
	free(ids);
	free(xs);
	free(ys);
}

bool load_run_trips_done(const load_run *run) {
	if (!run->opt.trips || !run->opt.trips_each) return false;
	uint32_t own = 0, done = 0;
	for (uint32_t i = 0; i < run->opt.connections; i++) {
		const load_conn *c = &run->conns[i];
		if (c->state != LOAD_CONN_RUNNING) continue;
		own += c->own_count;
		done += c->agents_done;
	}
	return own > 0 && done >= own;
}

bool load_run_trips_too_late(const load_run *run) {
	if (!run->opt.trips || run->opt.max_late_trips < 0) return false;
	long long late = 0;
	for (uint32_t i = 0; i < run->opt.connections; i++) late += run->conns[i].late_now;
	return late > run->opt.max_late_trips;
}

void load_conn_trips_open(load_conn *c) {
	const double rate = c->tick_rate_hz ? (double)c->tick_rate_hz : 30.0;
	for (uint32_t i = 0; i < c->own_count; i++) {
		if (c->trip_start_tick[i] == 0 || c->trip_unreachable[i] || c->event_tick < c->trip_start_tick[i])
			continue;
		c->stats.trips_open++;
		if ((double)(c->event_tick - c->trip_start_tick[i]) / rate > c->trip_free_s[i] + 60.0)
			c->stats.trips_open_late_60++;
	}
}

/* Navigation events for this connection's agents (minor 1: sent without asking). */
static void on_agent_events(load_conn *c, const crowd_v1_AgentEvents *ev) {
	if (c->run->opt.trips) {
		on_trip_events(c, ev);
		return;
	}
	const uint64_t now = uv_hrtime();
	for (pb_size_t k = 0; k < ev->events_count; k++) {
		const crowd_v1_AgentEvent *e = &ev->events[k];
		if (e->kind == crowd_v1_AgentEventKind_AGENT_EVENT_UNREACHABLE) c->stats.unreachable++;
		if (e->kind == crowd_v1_AgentEventKind_AGENT_EVENT_STUCK) c->stats.stuck++;
		if (e->kind != crowd_v1_AgentEventKind_AGENT_EVENT_ARRIVED) continue;
		for (uint32_t i = 0; i < c->own_count; i++) {
			if (c->own_ids[i] != e->agent_id) continue;
			const uint64_t sent = c->own_target_ns[i];
			c->own_target_ns[i] = 0;
			if (sent && in_window(c, sent)) {
				c->stats.arrivals++;
				record_hist(c, offsetof(load_stats, arrival_us), (now - sent) / 1000u);
			}
			break;
		}
	}
}

static void handle_frame(load_conn *c, const uint8_t *frame, size_t len) {
	crowd_v1_ServerMessage msg;
	crowd_snapshot_stats st = {0};
	if (!crowd_decode_server_message(frame, len, &msg, &c->view, &c->obstacles, &st)) {
		c->stats.decode_failures++;
		if (c->state == LOAD_CONN_HELLO) {
			char why[200];
			snprintf(why, sizeof why, "the answer to Hello is not a crowd.v1 message%s", port_hint(c->run));
			setup_failed(c, why);
			load_conn_close(c);
			return;
		}
		/* the baseline is lost: wait for the next keyframe */
		crowd_view_clear(&c->view);
		return;
	}
	switch (msg.which_msg) {
	case crowd_v1_ServerMessage_welcome_tag:
		if (c->state == LOAD_CONN_HELLO) on_welcome(c, &msg.msg.welcome);
		break;
	case crowd_v1_ServerMessage_ack_tag:
		on_answer(c, msg.msg.ack.request_id, &msg.msg.ack, 0);
		break;
	case crowd_v1_ServerMessage_error_tag:
		if (c->state == LOAD_CONN_HELLO) {
			char why[200];
			snprintf(why, sizeof why, "Hello refused: %s: %s",
			         load_error_name((uint32_t)msg.msg.error.code), msg.msg.error.message);
			setup_failed(c, why);
		}
		on_answer(c, msg.msg.error.request_id, NULL, (uint32_t)msg.msg.error.code);
		break;
	case crowd_v1_ServerMessage_snapshot_tag:
		on_snapshot(c, &msg.msg.snapshot, len, &st);
		break;
	case crowd_v1_ServerMessage_agent_events_tag:
		on_agent_events(c, &msg.msg.agent_events);
		break;
	case crowd_v1_ServerMessage_world_list_tag: {
		uint64_t sent;
		if (take_request(c, msg.msg.world_list.request_id, 0, &sent)) record_ack(c, sent);
		load_worlds_record_list(c->run, &msg.msg.world_list);
		break;
	}
	case crowd_v1_ServerMessage_pong_tag: {
		uint64_t sent;
		c->stats.pongs++;
		/* a Pong answers the oldest Ping, unless an Ack did already */
		if (take_request(c, 0, crowd_v1_ClientMessage_ping_tag, &sent)) record_ack(c, sent);
		break;
	}
	default:
		break;
	}
	if (msg.which_msg != crowd_v1_ServerMessage_snapshot_tag) pb_release(crowd_v1_ServerMessage_fields, &msg);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
	(void)h;
	(void)suggested;
	static char chunk[READ_CHUNK]; /* one loop thread: the data is consumed before the next read */
	*buf = uv_buf_init(chunk, sizeof chunk);
}

/* WebSocket: the 101 answer first, then messages; pings and close answered. */
static void on_read_ws(load_conn *c, const char *data, size_t n) {
	if (!load_ws_push(&c->ws, data, n)) {
		load_conn_close(c);
		return;
	}
	if (!c->ws.open) {
		char err[160];
		int rc = load_ws_handshake(&c->ws, err, sizeof err);
		if (rc == 0) return;
		if (rc < 0) {
			c->stats.connect_failures++;
			setup_failed(c, err);
			load_conn_close(c);
			return;
		}
		c->state = LOAD_CONN_HELLO;
		send_hello(c);
	}
	crowd_buf reply;
	crowd_buf_init(&reply);
	for (;;) {
		const uint8_t *msg;
		size_t len;
		load_ws_result r = load_ws_next(&c->ws, &msg, &len, &reply);
		if (r == LOAD_WS_NEED_MORE) break;
		if (r == LOAD_WS_MESSAGE) {
			handle_frame(c, msg, len);
			if (c->state == LOAD_CONN_CLOSING || c->state == LOAD_CONN_CLOSED) break;
			continue;
		}
		if (r == LOAD_WS_CLOSED) {
			if (!c->run->stopping) c->stats.disconnects++;
		} else {
			c->stats.decode_failures++;
		}
		if (reply.len) write_buf(c, &reply);
		load_conn_close(c);
		crowd_buf_free(&reply);
		return;
	}
	if (reply.len && c->state != LOAD_CONN_CLOSING && c->state != LOAD_CONN_CLOSED) write_buf(c, &reply);
	crowd_buf_free(&reply);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
	load_conn *c = stream->data;
	if (nread < 0) {
		if (!c->run->stopping && c->state != LOAD_CONN_CLOSING) {
			c->stats.disconnects++;
			char why[200];
			const char *when = c->state == LOAD_CONN_SPAWNING ? "while spawning"
			                   : c->state == LOAD_CONN_CONNECTING
			                       ? "before the WebSocket upgrade was answered"
			                       : "before Welcome";
			const char *hint = c->state == LOAD_CONN_SPAWNING ? "" : port_hint(c->run);
			snprintf(why, sizeof why, "the connection closed %s (%s)%s", when, uv_strerror((int)nread),
			         hint);
			setup_failed(c, why);
		}
		load_conn_close(c);
		return;
	}
	if (nread == 0) return;
	c->stats.bytes_in += (uint64_t)nread;
	if (c->run->opt.websocket) {
		on_read_ws(c, buf->base, (size_t)nread);
		return;
	}
	if (!crowd_frame_splitter_push(&c->splitter, buf->base, (size_t)nread)) {
		load_conn_close(c);
		return;
	}
	for (;;) {
		const uint8_t *frame;
		size_t len;
		crowd_frame_result r = crowd_frame_splitter_next(&c->splitter, &frame, &len);
		if (r == CROWD_FRAME_NEED_MORE) break;
		if (r != CROWD_FRAME_READY) {
			c->stats.decode_failures++;
			load_conn_close(c);
			return;
		}
		handle_frame(c, frame, len);
		if (c->state == LOAD_CONN_CLOSING || c->state == LOAD_CONN_CLOSED) return;
	}
}

static void on_connect(uv_connect_t *req, int status) {
	load_conn *c = req->data;
	if (status < 0) {
		c->stats.connect_failures++;
		load_run_failed(c->run, "connect %s: %s", server_text(c->run), uv_strerror(status));
		load_conn_close(c);
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	int rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	if (rc != 0) {
		c->stats.connect_failures++;
		load_run_failed(c->run, "read %s: %s", server_text(c->run), uv_strerror(rc));
		load_conn_close(c);
		return;
	}
	if (c->run->opt.websocket) {
		crowd_buf req;
		crowd_buf_init(&req);
		if (!load_ws_request(&c->ws, c->run->opt.host, c->run->opt.port, c->run->opt.ws_path, &req) ||
		    !write_buf(c, &req)) {
			crowd_buf_free(&req);
			c->stats.connect_failures++;
			setup_failed(c, "cannot send the WebSocket upgrade request");
			load_conn_close(c);
		}
		return; /* Hello once the upgrade is accepted */
	}
	c->state = LOAD_CONN_HELLO;
	send_hello(c);
}

/* ------------------------------------------------------------------ lifecycle */

bool load_conn_init(load_conn *c, load_run *run, uint32_t index) {
	memset(c, 0, sizeof *c);
	c->run = run;
	c->index = index;
	c->next_request_id = 1;
	c->rng = run->opt.seed * 0x9E3779B97F4A7C15ull + index * 0xBF58476D1CE4E5B9ull + 1;
	for (int i = 0; i < 4; i++) rng_next(&c->rng);
	crowd_frame_splitter_init(&c->splitter, MAX_FRAME);
	crowd_view_init(&c->view);
	crowd_obstacle_set_init(&c->obstacles);
	load_ws_init(&c->ws, c->rng ^ 0xA5A5A5A5A5A5A5A5ull);
	return load_stats_init(&c->stats, 4);
}

void load_conn_open(load_conn *c) {
	load_run *run = c->run;
	run->opened++;
	c->state = LOAD_CONN_CONNECTING;
	int rc = uv_tcp_init(run->loop, &c->tcp);
	if (rc != 0) {
		c->stats.connect_failures++;
		load_run_failed(run, "socket: %s", uv_strerror(rc));
		c->state = LOAD_CONN_CLOSED;
		run->closed++;
		return;
	}
	c->tcp_open = true;
	c->tcp.data = c;
	uv_timer_init(run->loop, &c->timer);
	c->timer.data = c;
	c->timer_open = true;
	c->connect_req.data = c;
	rc = uv_tcp_connect(&c->connect_req, &c->tcp, (const struct sockaddr *)&run->addr, on_connect);
	if (rc != 0) {
		c->stats.connect_failures++;
		load_run_failed(run, "connect %s: %s", server_text(run), uv_strerror(rc));
		load_conn_close(c);
	}
}

static void on_closed(uv_handle_t *h) {
	load_conn *c = h->data;
	if (h == (uv_handle_t *)&c->tcp)
		c->tcp_open = false;
	else
		c->timer_open = false;
	if (!c->tcp_open && !c->timer_open && c->state == LOAD_CONN_CLOSING) {
		c->state = LOAD_CONN_CLOSED;
		c->run->closed++;
	}
}

void load_conn_close(load_conn *c) {
	if (c->state == LOAD_CONN_CLOSING || c->state == LOAD_CONN_CLOSED || c->state == LOAD_CONN_IDLE) return;
	if (c->state == LOAD_CONN_RUNNING) c->run->running--;
	c->state = LOAD_CONN_CLOSING;
	bool any = false;
	if (c->timer_open && !uv_is_closing((uv_handle_t *)&c->timer)) {
		uv_timer_stop(&c->timer);
		uv_close((uv_handle_t *)&c->timer, on_closed);
		any = true;
	}
	if (c->tcp_open && !uv_is_closing((uv_handle_t *)&c->tcp)) {
		uv_close((uv_handle_t *)&c->tcp, on_closed);
		any = true;
	}
	if (!any) {
		c->state = LOAD_CONN_CLOSED;
		c->run->closed++;
	}
}

void load_conn_free(load_conn *c) {
	crowd_frame_splitter_free(&c->splitter);
	crowd_view_free(&c->view);
	crowd_obstacle_set_free(&c->obstacles);
	load_ws_free(&c->ws);
	free(c->requests);
	free(c->visible);
	free(c->await_snapshot);
	free(c->own_ids);
	free(c->own_pending);
	free(c->own_target_ns);
	free(c->trip_start_tick);
	free(c->trip_free_s);
	free(c->trip_unreachable);
	free(c->first_free_s);
	free(c->trips_done);
	free(c->trip_late);
	load_stats_free(&c->stats);
}
