/* snapshot.c — the snapshot codec: per-subscriber delta coding of quantized
 * agent states against the last snapshot sent (format: crowd.proto, Snapshot),
 * plus the views and obstacle sets both ends keep. */
#include <pb_decode.h>
#include <pb_encode.h>
#include <stdlib.h>
#include <string.h>

#include "crowd/wire.h"

enum {
	FIELD_X = 1,
	FIELD_Y = 2,
	FIELD_VX = 4,
	FIELD_VY = 8,
	FIELD_NEW = 16,
	FIELD_ALL = 31,
	ENTRY_SHIFT = 5,
};

/* ------------------------------------------------------------------ views */

void crowd_view_init(crowd_view *v) {
	v->agents = NULL;
	v->count = 0;
	v->cap = 0;
}

void crowd_view_free(crowd_view *v) {
	free(v->agents);
	crowd_view_init(v);
}

void crowd_view_clear(crowd_view *v) {
	v->count = 0;
}

static bool view_reserve(crowd_view *v, uint32_t n) {
	if (n <= v->cap) return true;
	uint32_t cap = v->cap ? v->cap : 64;
	while (cap < n) cap = cap > UINT32_MAX / 2 ? n : cap * 2;
	crowd_agent_q *agents = realloc(v->agents, (size_t)cap * sizeof *agents);
	if (!agents) return false;
	v->agents = agents;
	v->cap = cap;
	return true;
}

bool crowd_view_assign(crowd_view *v, const crowd_agent_q *agents, uint32_t n) {
	if (!view_reserve(v, n)) return false;
	if (n) memcpy(v->agents, agents, (size_t)n * sizeof *agents);
	v->count = n;
	return true;
}

const crowd_agent_q *crowd_view_find(const crowd_view *v, uint32_t id) {
	uint32_t lo = 0, hi = v->count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (v->agents[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < v->count && v->agents[lo].id == id ? &v->agents[lo] : NULL;
}

/* ------------------------------------------------------------------ obstacles */

void crowd_obstacle_set_init(crowd_obstacle_set *s) {
	s->items = NULL;
	s->count = 0;
	s->cap = 0;
}

void crowd_obstacle_set_clear(crowd_obstacle_set *s) {
	for (uint32_t i = 0; i < s->count; i++) {
		free(s->items[i].x);
		free(s->items[i].y);
	}
	s->count = 0;
}

void crowd_obstacle_set_free(crowd_obstacle_set *s) {
	crowd_obstacle_set_clear(s);
	free(s->items);
	crowd_obstacle_set_init(s);
}

bool crowd_obstacle_set_add(crowd_obstacle_set *s, uint32_t id, const float *x, const float *y, uint32_t count) {
	if (s->count == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 8;
		crowd_obstacle *items = realloc(s->items, (size_t)cap * sizeof *items);
		if (!items) return false;
		s->items = items;
		s->cap = cap;
	}
	crowd_obstacle *o = &s->items[s->count];
	o->x = malloc((size_t)(count ? count : 1) * sizeof(float));
	o->y = malloc((size_t)(count ? count : 1) * sizeof(float));
	if (!o->x || !o->y) {
		free(o->x);
		free(o->y);
		return false;
	}
	if (count) {
		memcpy(o->x, x, (size_t)count * sizeof(float));
		memcpy(o->y, y, (size_t)count * sizeof(float));
	}
	o->id = id;
	o->count = count;
	s->count++;
	return true;
}

/* ------------------------------------------------------------------ encode */

/* Each packed array is encoded once into bytes; the nanopb callback (called
 * twice: sizing, then writing) copies them out. All arrays live in one
 * scratch allocation sized for the worst case up front, so the loop below
 * writes varints straight through a pointer: no size check or call per value. */
typedef struct packed_field {
	uint8_t *start, *end; /* written bytes: [start, end) */
} packed_field;

static inline uint8_t *put_varint(uint8_t *out, uint64_t v) {
	while (v >= 0x80) {
		*out++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*out++ = (uint8_t)v;
	return out;
}

static inline uint8_t *put_svarint(uint8_t *out, int32_t v) {
	uint32_t zigzag = ((uint32_t)v << 1) ^ (uint32_t)(v >> 31);
	return put_varint(out, zigzag);
}

static bool encode_packed(pb_ostream_t *stream, const pb_field_t *field, void *const *arg) {
	const packed_field *p = *arg;
	const size_t len = (size_t)(p->end - p->start);
	if (len == 0) return true;
	return pb_encode_tag(stream, PB_WT_STRING, field->tag) && pb_encode_string(stream, p->start, len);
}

static bool encode_obstacles(pb_ostream_t *stream, const pb_field_t *field, void *const *arg) {
	const crowd_obstacle_set *set = *arg;
	for (uint32_t i = 0; i < set->count; i++) {
		const crowd_obstacle *o = &set->items[i];
		if (o->count > 0xffff) return false;
		crowd_v1_Obstacle msg = crowd_v1_Obstacle_init_zero;
		msg.id = o->id;
		msg.x_count = (pb_size_t)o->count;
		msg.x = o->x;
		msg.y_count = (pb_size_t)o->count;
		msg.y = o->y;
		if (!pb_encode_tag_for_field(stream, field) ||
		    !pb_encode_submessage(stream, crowd_v1_Obstacle_fields, &msg))
			return false;
	}
	return true;
}

enum { P_ENTRIES, P_X, P_Y, P_VX, P_VY, P_RADIUS, P_OWNER, P_REMOVED, P_COUNT };

/* Worst-case bytes per element of each packed array: entries are 64-bit
 * varints, the rest 32-bit (zigzagged or not). */
static const size_t packed_max[P_COUNT] = {10, 5, 5, 5, 5, 5, 5, 5};

bool crowd_snapshot_encode(const crowd_snapshot_header *header, const crowd_agent_q *next, uint32_t n,
                           crowd_view *baseline, const crowd_obstacle_set *obstacles, bool delimited, crowd_buf *out) {
	packed_field p[P_COUNT];
	uint32_t base_count = header->keyframe ? 0 : baseline->count;
	crowd_buf scratch;
	crowd_buf_init(&scratch);
	size_t total = 0;
	for (int i = 0; i < P_COUNT; i++) total += packed_max[i] * (i == P_REMOVED ? (size_t)base_count : (size_t)n);
	if (!crowd_buf_reserve(&scratch, total + 1)) return false;
	uint8_t *region = scratch.data;
	for (int i = 0; i < P_COUNT; i++) {
		p[i].start = p[i].end = region;
		region += packed_max[i] * (i == P_REMOVED ? (size_t)base_count : (size_t)n);
	}
	bool ok = true;
	static const crowd_agent_q zero = {0};
	uint32_t b = 0;
	uint32_t previous_id = 0;
	uint8_t *e = p[P_ENTRIES].end, *px = p[P_X].end, *py = p[P_Y].end, *pvx = p[P_VX].end, *pvy = p[P_VY].end;
	uint8_t *prad = p[P_RADIUS].end, *pown = p[P_OWNER].end;
	for (uint32_t i = 0; i < n; i++) {
		const crowd_agent_q *a = &next[i];
		if (a->id <= previous_id) { /* ascending, and 0 is the null id */
			ok = false;
			break;
		}
		while (b < base_count && baseline->agents[b].id < a->id) b++; /* left the view */
		const crowd_agent_q *old = NULL;
		if (b < base_count && baseline->agents[b].id == a->id) old = &baseline->agents[b++];
		uint8_t bits;
		if (!old || old->radius != a->radius || old->owner != a->owner) {
			bits = FIELD_ALL;
			old = &zero;
		} else {
			bits = (uint8_t)((a->x != old->x ? FIELD_X : 0) | (a->y != old->y ? FIELD_Y : 0) |
			                 (a->vx != old->vx ? FIELD_VX : 0) | (a->vy != old->vy ? FIELD_VY : 0));
		}
		e = put_varint(e, ((uint64_t)(a->id - previous_id) << ENTRY_SHIFT) | bits);
		if (bits & FIELD_X) px = put_svarint(px, (int32_t)((int64_t)a->x - (int64_t)old->x));
		if (bits & FIELD_Y) py = put_svarint(py, (int32_t)((int64_t)a->y - (int64_t)old->y));
		if (bits & FIELD_VX) pvx = put_svarint(pvx, (int32_t)((int64_t)a->vx - (int64_t)old->vx));
		if (bits & FIELD_VY) pvy = put_svarint(pvy, (int32_t)((int64_t)a->vy - (int64_t)old->vy));
		if (bits & FIELD_NEW) {
			prad = put_varint(prad, a->radius);
			pown = put_varint(pown, a->owner);
		}
		previous_id = a->id;
	}
	p[P_ENTRIES].end = e, p[P_X].end = px, p[P_Y].end = py, p[P_VX].end = pvx, p[P_VY].end = pvy;
	p[P_RADIUS].end = prad, p[P_OWNER].end = pown;
	/* Removed ids: baseline agents absent from next, ascending, delta-coded. */
	if (ok) {
		uint32_t j = 0, prev_removed = 0;
		uint8_t *r = p[P_REMOVED].end;
		for (uint32_t k = 0; k < base_count; k++) {
			uint32_t id = baseline->agents[k].id;
			while (j < n && next[j].id < id) j++;
			if (j < n && next[j].id == id) continue;
			r = put_varint(r, id - prev_removed);
			prev_removed = id;
		}
		p[P_REMOVED].end = r;
	}
	if (ok) {
		crowd_v1_ServerMessage msg = crowd_v1_ServerMessage_init_zero;
		msg.which_msg = crowd_v1_ServerMessage_snapshot_tag;
		crowd_v1_Snapshot *s = &msg.msg.snapshot;
		s->tick = header->tick;
		s->state_hash = header->state_hash;
		s->keyframe = header->keyframe;
		s->world_agent_count = header->world_agent_count;
		pb_callback_t *cb[P_COUNT] = {&s->entries, &s->x,      &s->y,     &s->vx,
		                              &s->vy,      &s->radius, &s->owner, &s->removed_id_deltas};
		for (int i = 0; i < P_COUNT; i++) {
			cb[i]->funcs.encode = encode_packed;
			cb[i]->arg = &p[i];
		}
		if (obstacles) {
			s->obstacles_changed = true;
			s->obstacles.funcs.encode = encode_obstacles;
			s->obstacles.arg = (void *)obstacles;
		}
		size_t mark = out->len;
		ok = crowd_encode_server_message(&msg, delimited, out);
		if (ok && !crowd_view_assign(baseline, next, n)) {
			out->len = mark;
			ok = false;
		}
	}
	crowd_buf_free(&scratch);
	return ok;
}

/* ------------------------------------------------------------------ decode */

typedef struct u64_array {
	uint64_t *v;
	uint32_t n, cap;
	bool is_signed;
	uint32_t limit; /* refuse more elements than this */
} u64_array;

/* Room for `more` elements beyond those held (at most up to the limit: a
 * push past it fails). */
static bool u64_reserve(u64_array *a, size_t more) {
	size_t want = (size_t)a->n + more;
	if (want > a->limit) want = a->limit;
	if (want <= a->cap) return true;
	uint64_t *nv = realloc(a->v, want * sizeof *nv);
	if (!nv) return false;
	a->v = nv;
	a->cap = (uint32_t)want;
	return true;
}

/* A packed field's varints (zigzag ones for a signed array), read from its
 * bytes a block at a time rather than through the stream byte by byte: the
 * decoder runs on every snapshot a client receives (crowd-load: 200 of them
 * at 10 Hz, about 900 agents each). The same values as nanopb's
 * pb_decode_varint / pb_decode_svarint, and the same refusals: a varint cut
 * short by the field's end, or longer than 10 bytes, or (as newer nanopb
 * refuses too) whose 10th byte holds more than the 64th bit. */
static bool decode_packed(pb_istream_t *stream, const pb_field_t *field, void **arg) {
	(void)field;
	enum { BLOCK = 512, VARINT_MAX = 10 };
	u64_array *a = *arg;
	/* every element is one byte at least */
	if (!u64_reserve(a, stream->bytes_left)) return false;
	uint8_t buf[BLOCK + VARINT_MAX];
	size_t have = 0;
	while (stream->bytes_left || have) {
		size_t take = stream->bytes_left < BLOCK ? stream->bytes_left : BLOCK;
		if (take && !pb_read(stream, buf + have, take)) return false;
		have += take;
		const bool last = stream->bytes_left == 0;
		size_t at = 0;
		/* a whole varint is in buf whenever VARINT_MAX bytes are, or the field's last bytes */
		while (at < have && (last || have - at >= VARINT_MAX)) {
			uint64_t v = 0;
			unsigned shift = 0;
			uint8_t byte;
			do {
				if (at == have || shift > 63) return false;
				byte = buf[at++];
				if (shift == 63 && (byte & 0xFEu)) return false;
				v |= (uint64_t)(byte & 0x7Fu) << shift;
				shift += 7;
			} while (byte & 0x80u);
			if (a->is_signed) {
				const int64_t sv = (v & 1u) ? (int64_t)~(v >> 1) : (int64_t)(v >> 1);
				if (sv < INT32_MIN || sv > INT32_MAX) return false;
				v = (uint64_t)sv;
			}
			if (a->n >= a->cap) return false; /* the limit */
			a->v[a->n++] = v;
		}
		memmove(buf, buf + at, have - at);
		have -= at;
	}
	return true;
}

typedef struct obstacle_decode {
	crowd_obstacle_set *set;
	bool failed;
} obstacle_decode;

static bool decode_obstacle(pb_istream_t *stream, const pb_field_t *field, void **arg) {
	(void)field;
	obstacle_decode *od = *arg;
	crowd_v1_Obstacle o = crowd_v1_Obstacle_init_zero;
	if (!pb_decode(stream, crowd_v1_Obstacle_fields, &o)) return false;
	bool ok = o.x_count == o.y_count && crowd_obstacle_set_add(od->set, o.id, o.x, o.y, o.x_count);
	pb_release(crowd_v1_Obstacle_fields, &o);
	return ok;
}

static int32_t as_i32(uint64_t v) {
	return (int32_t)(int64_t)v;
}

/* Builds the receiver's next view from `old` and the decoded arrays. */
static bool apply_snapshot(bool keyframe, const u64_array *p, const crowd_view *old, crowd_view *next,
                           crowd_snapshot_stats *stats) {
	const u64_array *entries = &p[P_ENTRIES];
	if (!view_reserve(next, entries->n)) return false;
	uint32_t ix = 0, iy = 0, ivx = 0, ivy = 0, inew = 0;
	uint32_t io = 0; /* old's agents below this id are passed: both ascend */
	uint64_t id = 0;
	uint32_t entered = 0;
	for (uint32_t i = 0; i < entries->n; i++) {
		uint64_t delta = entries->v[i] >> ENTRY_SHIFT;
		uint8_t bits = (uint8_t)(entries->v[i] & FIELD_ALL);
		if (delta == 0) return false; /* ids strictly ascending, never 0 */
		id += delta;
		if (id > UINT32_MAX) return false;
		crowd_agent_q a = {0};
		a.id = (uint32_t)id;
		if (bits & FIELD_NEW) {
			if (inew >= p[P_RADIUS].n || inew >= p[P_OWNER].n) return false;
			a.radius = (uint32_t)p[P_RADIUS].v[inew];
			a.owner = (uint32_t)p[P_OWNER].v[inew];
			if (p[P_RADIUS].v[inew] > UINT32_MAX || p[P_OWNER].v[inew] > UINT32_MAX) return false;
			inew++;
			entered++;
		} else {
			if (keyframe) return false;
			while (io < old->count && old->agents[io].id < a.id) io++;
			if (io == old->count || old->agents[io].id != a.id) return false;
			a = old->agents[io];
		}
		if (bits & FIELD_X) {
			if (ix >= p[P_X].n) return false;
			a.x = (int32_t)((int64_t)a.x + as_i32(p[P_X].v[ix++]));
		}
		if (bits & FIELD_Y) {
			if (iy >= p[P_Y].n) return false;
			a.y = (int32_t)((int64_t)a.y + as_i32(p[P_Y].v[iy++]));
		}
		if (bits & FIELD_VX) {
			if (ivx >= p[P_VX].n) return false;
			a.vx = (int32_t)((int64_t)a.vx + as_i32(p[P_VX].v[ivx++]));
		}
		if (bits & FIELD_VY) {
			if (ivy >= p[P_VY].n) return false;
			a.vy = (int32_t)((int64_t)a.vy + as_i32(p[P_VY].v[ivy++]));
		}
		next->agents[i] = a;
	}
	if (ix != p[P_X].n || iy != p[P_Y].n || ivx != p[P_VX].n || ivy != p[P_VY].n || inew != p[P_RADIUS].n ||
	    inew != p[P_OWNER].n)
		return false;
	uint64_t removed_id = 0;
	for (uint32_t i = 0; i < p[P_REMOVED].n; i++) {
		uint64_t delta = p[P_REMOVED].v[i];
		if (delta == 0) return false;
		removed_id += delta;
		if (removed_id > UINT32_MAX) return false;
	}
	next->count = entries->n;
	if (stats) {
		stats->agents = entries->n;
		stats->entered = entered;
		stats->removed = p[P_REMOVED].n;
	}
	return true;
}

/* Finds a snapshot (field 4) among the top-level fields. */
static bool find_snapshot(const uint8_t *data, size_t len, bool *has_snapshot) {
	pb_istream_t stream = pb_istream_from_buffer(data, len);
	*has_snapshot = false;
	while (stream.bytes_left) {
		pb_wire_type_t wire_type;
		uint32_t tag;
		bool eof;
		if (!pb_decode_tag(&stream, &wire_type, &tag, &eof)) return eof;
		if (tag == crowd_v1_ServerMessage_snapshot_tag) *has_snapshot = true;
		if (!pb_skip_field(&stream, wire_type)) return false;
	}
	return true;
}

static bool decode_snapshot_message(const uint8_t *data, size_t len, crowd_v1_ServerMessage *msg, crowd_view *view,
                                    crowd_obstacle_set *obstacles, crowd_snapshot_stats *stats) {
	/* Every array holds at most one element per byte of the message. */
	uint32_t limit = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	u64_array p[P_COUNT];
	memset(p, 0, sizeof p);
	for (int i = 0; i < P_COUNT; i++) p[i].limit = limit;
	p[P_X].is_signed = p[P_Y].is_signed = p[P_VX].is_signed = p[P_VY].is_signed = true;
	crowd_obstacle_set new_obstacles;
	crowd_obstacle_set_init(&new_obstacles);
	obstacle_decode od = {&new_obstacles, false};

	*msg = (crowd_v1_ServerMessage)crowd_v1_ServerMessage_init_zero;
	crowd_v1_Snapshot *s = &msg->msg.snapshot;
	bool ok = true;
	pb_istream_t stream = pb_istream_from_buffer(data, len);
	while (ok && stream.bytes_left) {
		pb_wire_type_t wire_type;
		uint32_t tag;
		bool eof;
		if (!pb_decode_tag(&stream, &wire_type, &tag, &eof)) {
			ok = eof;
			break;
		}
		if (tag != crowd_v1_ServerMessage_snapshot_tag) {
			ok = pb_skip_field(&stream, wire_type);
			continue;
		}
		if (wire_type != PB_WT_STRING) {
			ok = false;
			break;
		}
		*s = (crowd_v1_Snapshot)crowd_v1_Snapshot_init_zero;
		pb_callback_t *cb[P_COUNT] = {&s->entries, &s->x,      &s->y,     &s->vx,
		                              &s->vy,      &s->radius, &s->owner, &s->removed_id_deltas};
		for (int i = 0; i < P_COUNT; i++) {
			p[i].n = 0;
			cb[i]->funcs.decode = decode_packed;
			cb[i]->arg = &p[i];
		}
		crowd_obstacle_set_clear(&new_obstacles);
		s->obstacles.funcs.decode = decode_obstacle;
		s->obstacles.arg = &od;
		pb_istream_t sub;
		ok = pb_make_string_substream(&stream, &sub) && pb_decode(&sub, crowd_v1_Snapshot_fields, s);
		ok = pb_close_string_substream(&stream, &sub) && ok;
	}
	crowd_view next;
	crowd_view_init(&next);
	ok = ok && apply_snapshot(s->keyframe, p, view, &next, stats);
	if (ok) {
		crowd_view_free(view);
		*view = next;
		if (s->obstacles_changed && obstacles) {
			crowd_obstacle_set_free(obstacles);
			*obstacles = new_obstacles;
			crowd_obstacle_set_init(&new_obstacles);
		}
		msg->which_msg = crowd_v1_ServerMessage_snapshot_tag;
	} else {
		crowd_view_free(&next);
	}
	/* The callbacks point at this frame's locals: never hand them out. */
	memset(&s->entries, 0, sizeof s->entries);
	memset(&s->x, 0, sizeof s->x);
	memset(&s->y, 0, sizeof s->y);
	memset(&s->vx, 0, sizeof s->vx);
	memset(&s->vy, 0, sizeof s->vy);
	memset(&s->radius, 0, sizeof s->radius);
	memset(&s->owner, 0, sizeof s->owner);
	memset(&s->removed_id_deltas, 0, sizeof s->removed_id_deltas);
	memset(&s->obstacles, 0, sizeof s->obstacles);
	crowd_obstacle_set_free(&new_obstacles);
	for (int i = 0; i < P_COUNT; i++) free(p[i].v);
	return ok;
}

bool crowd_decode_server_message(const uint8_t *data, size_t len, crowd_v1_ServerMessage *msg, crowd_view *view,
                                 crowd_obstacle_set *obstacles, crowd_snapshot_stats *stats) {
	bool has_snapshot;
	if (!find_snapshot(data, len, &has_snapshot)) return false;
	if (has_snapshot) {
		if (!view) return false;
		return decode_snapshot_message(data, len, msg, view, obstacles, stats);
	}
	*msg = (crowd_v1_ServerMessage)crowd_v1_ServerMessage_init_zero;
	pb_istream_t stream = pb_istream_from_buffer(data, len);
	return pb_decode(&stream, crowd_v1_ServerMessage_fields, msg);
}
