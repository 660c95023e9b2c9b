/* test_snapshot.c — the snapshot codec against a reference world: a stream of
 * 1,000 random changes (spawn, move, rest, remove, leave view, skip) decoded
 * at the far end must equal the world's true quantized state every time. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crowd/wire.h"

#define PRECISION 100.0f
#define MAX_AGENTS 400

typedef struct true_agent {
	bool alive;
	uint32_t id;
	float x, y, vx, vy, radius;
	uint32_t owner;
} true_agent;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}
static float rndf(float lo, float hi) {
	return lo + (hi - lo) * (float)(rnd() % 1000001) / 1000000.0f;
}

typedef struct world {
	true_agent agents[MAX_AGENTS];
	uint32_t next_id;
} world;

static void spawn(world *w) {
	for (int i = 0; i < MAX_AGENTS; i++) {
		if (w->agents[i].alive) continue;
		true_agent *a = &w->agents[i];
		w->next_id += 1 + rnd() % 40; /* ids with gaps, some needing two-byte deltas */
		a->alive = true;
		a->id = w->next_id;
		a->x = rndf(-120, 120);
		a->y = rndf(-120, 120);
		a->vx = rndf(-2, 2);
		a->vy = rndf(-2, 2);
		a->radius = rndf(0.3f, 3);
		a->owner = rnd() % 5;
		return;
	}
}

static int cmp_q(const void *a, const void *b) {
	uint32_t x = ((const crowd_agent_q *)a)->id, y = ((const crowd_agent_q *)b)->id;
	return x < y ? -1 : x > y;
}

/* Agents inside the subscriber's area, quantized, ascending id. */
static uint32_t visible(const world *w, float half, crowd_agent_q *out) {
	uint32_t n = 0;
	for (int i = 0; i < MAX_AGENTS; i++) {
		const true_agent *a = &w->agents[i];
		if (!a->alive || fabsf(a->x) > half || fabsf(a->y) > half) continue;
		out[n++] = (crowd_agent_q){a->id,
		                           crowd_quantize(a->x, PRECISION),
		                           crowd_quantize(a->y, PRECISION),
		                           crowd_quantize(a->vx, PRECISION),
		                           crowd_quantize(a->vy, PRECISION),
		                           (uint32_t)crowd_quantize(a->radius, PRECISION),
		                           a->owner};
	}
	qsort(out, n, sizeof *out, cmp_q);
	return n;
}

static const true_agent *find_true(const world *w, uint32_t id) {
	for (int i = 0; i < MAX_AGENTS; i++)
		if (w->agents[i].alive && w->agents[i].id == id) return &w->agents[i];
	return NULL;
}

static void test_random_change_stream(void **state) {
	(void)state;
	static world w;
	memset(&w, 0, sizeof w);
	for (int i = 0; i < 150; i++) spawn(&w);

	crowd_view baseline, client;
	crowd_view_init(&baseline);
	crowd_view_init(&client);
	crowd_obstacle_set obstacles, client_obstacles;
	crowd_obstacle_set_init(&obstacles);
	crowd_obstacle_set_init(&client_obstacles);
	crowd_buf wire = {0};
	crowd_frame_splitter splitter;
	crowd_frame_splitter_init(&splitter, 1 << 24);
	static crowd_agent_q view[MAX_AGENTS];

	bool need_keyframe = true;
	int since_keyframe = 0, snapshots = 0, keyframes = 0, skips = 0;
	size_t delta_bytes = 0, delta_agents = 0;
	for (int change = 0; change < 1000; change++) {
		uint32_t op = rnd() % 100;
		if (op < 10) {
			spawn(&w);
		} else if (op < 18) {
			int i = (int)(rnd() % MAX_AGENTS);
			w.agents[i].alive = false;
		} else if (op < 20) {
			need_keyframe = true; /* a skipped snapshot: the baseline is no longer the client's */
			skips++;
			continue;
		} else if (op < 22) {
			int i = (int)(rnd() % MAX_AGENTS);
			if (w.agents[i].alive) w.agents[i].radius = rndf(0.3f, 3); /* must be re-sent whole */
		} else if (op < 24) {
			crowd_obstacle_set_clear(&obstacles);
			uint32_t count = 2 + rnd() % 5;
			float x[8], y[8];
			for (uint32_t k = 0; k < count; k++) x[k] = rndf(-50, 50), y[k] = rndf(-50, 50);
			assert_true(crowd_obstacle_set_add(&obstacles, change, x, y, count));
		}
		/* Motion: most agents move a little, some rest, a few jump across the
		 * view's edge; velocities change rarely. */
		for (int i = 0; i < MAX_AGENTS; i++) {
			true_agent *a = &w.agents[i];
			if (!a->alive || i % 4 == 0) continue;
			a->x += a->vx / 30.0f;
			a->y += a->vy / 30.0f;
			if (rnd() % 20 == 0) a->vx = rndf(-2, 2);
			if (rnd() % 200 == 0) a->x = rndf(-130, 130);
		}

		bool keyframe = need_keyframe || since_keyframe >= 20;
		crowd_snapshot_header h = {(uint64_t)change, 0x1234567890abcdefull ^ (uint64_t)change, 0, keyframe};
		uint32_t n = visible(&w, 100.0f, view);
		h.world_agent_count = n;
		bool send_obstacles = op >= 22 && op < 24;
		size_t before = wire.len;
		assert_true(crowd_snapshot_encode(&h, view, n, &baseline,
		                                  send_obstacles || keyframe ? &obstacles : NULL, true, &wire));
		if (!keyframe) {
			delta_bytes += wire.len - before;
			delta_agents += n;
		}
		need_keyframe = false;
		since_keyframe = keyframe ? 0 : since_keyframe + 1;
		keyframes += keyframe;
		snapshots++;

		/* The client end: frames through the splitter, then decode. */
		assert_true(crowd_frame_splitter_push(&splitter, wire.data, wire.len));
		wire.len = 0;
		const uint8_t *frame;
		size_t len;
		assert_int_equal(crowd_frame_splitter_next(&splitter, &frame, &len), CROWD_FRAME_READY);
		crowd_v1_ServerMessage msg;
		crowd_snapshot_stats stats;
		assert_true(crowd_decode_server_message(frame, len, &msg, &client, &client_obstacles, &stats));
		assert_int_equal(msg.which_msg, crowd_v1_ServerMessage_snapshot_tag);
		assert_int_equal(msg.msg.snapshot.tick, (uint64_t)change);
		assert_int_equal(msg.msg.snapshot.keyframe, keyframe);
		crowd_server_message_release(&msg);

		assert_int_equal(client.count, n);
		assert_int_equal(stats.agents, n);
		for (uint32_t i = 0; i < n; i++) {
			assert_memory_equal(&client.agents[i], &view[i], sizeof view[i]);
			const true_agent *t = find_true(&w, client.agents[i].id);
			assert_non_null(t);
			float step = 0.5f / PRECISION + 1e-4f;
			assert_true(fabsf(client.agents[i].x / PRECISION - t->x) <= step);
			assert_true(fabsf(client.agents[i].y / PRECISION - t->y) <= step);
			assert_true(fabsf(client.agents[i].vx / PRECISION - t->vx) <= step);
			assert_true(fabsf(client.agents[i].vy / PRECISION - t->vy) <= step);
		}
		assert_int_equal(client_obstacles.count, obstacles.count);
		for (uint32_t i = 0; i < obstacles.count; i++) {
			assert_int_equal(client_obstacles.items[i].count, obstacles.items[i].count);
			assert_memory_equal(client_obstacles.items[i].x, obstacles.items[i].x,
			                    obstacles.items[i].count * sizeof(float));
		}
	}
	assert_true(skips > 0 && keyframes > skips);
	/* A quarter of the agents rest and velocities seldom change: deltas must be
	 * far smaller than 20 bytes of raw floats per agent. */
	assert_true(delta_agents > 0);
	assert_true((double)delta_bytes / (double)delta_agents < 6.0);
	print_message("%d snapshots, %d keyframes, %d skips, %.2f bytes/agent in delta snapshots\n", snapshots,
	              keyframes, skips, (double)delta_bytes / (double)delta_agents);

	crowd_view_free(&baseline);
	crowd_view_free(&client);
	crowd_obstacle_set_free(&obstacles);
	crowd_obstacle_set_free(&client_obstacles);
	crowd_frame_splitter_free(&splitter);
	crowd_buf_free(&wire);
}

/* A delta against a view the client does not hold is refused, and a refused
 * snapshot leaves the client's view exactly as it was. */
static void test_inconsistent_input_leaves_view_unchanged(void **state) {
	(void)state;
	crowd_agent_q a[3] = {{1, 100, 200, 5, 6, 150, 0}, {2, -100, 0, 0, 0, 150, 1}, {9, 7, 7, 7, 7, 150, 2}};
	crowd_view server, client;
	crowd_view_init(&server);
	crowd_view_init(&client);
	crowd_buf out = {0};
	crowd_snapshot_header key = {1, 0, 3, true};
	assert_true(crowd_snapshot_encode(&key, a, 3, &server, NULL, false, &out));
	crowd_v1_ServerMessage msg;
	assert_true(crowd_decode_server_message(out.data, out.len, &msg, &client, NULL, NULL));
	assert_int_equal(client.count, 3);

	/* A delta snapshot taken against agents 1,2,9 sent to a client that holds nothing. */
	a[0].x += 3;
	out.len = 0;
	crowd_snapshot_header delta = {2, 0, 3, false};
	assert_true(crowd_snapshot_encode(&delta, a, 3, &server, NULL, false, &out));
	crowd_view empty;
	crowd_view_init(&empty);
	assert_false(crowd_decode_server_message(out.data, out.len, &msg, &empty, NULL, NULL));
	assert_int_equal(empty.count, 0);

	/* Every truncation and every single-byte corruption: no crash, and a failure changes nothing. */
	crowd_view copy;
	crowd_view_init(&copy);
	for (size_t cut = 0; cut < out.len; cut++) {
		for (int flip = -1; flip < 8; flip++) {
			uint8_t bytes[256];
			memcpy(bytes, out.data, out.len);
			if (flip >= 0) bytes[cut] ^= (uint8_t)(1u << flip);
			size_t len = flip >= 0 ? out.len : cut;
			crowd_view_free(&copy);
			crowd_view_init(&copy);
			copy.agents = malloc(client.count * sizeof *copy.agents);
			memcpy(copy.agents, client.agents, client.count * sizeof *copy.agents);
			copy.count = copy.cap = client.count;
			if (!crowd_decode_server_message(bytes, len, &msg, &copy, NULL, NULL)) {
				assert_int_equal(copy.count, client.count);
				assert_memory_equal(copy.agents, client.agents, client.count * sizeof *copy.agents);
			} else {
				crowd_server_message_release(&msg);
			}
		}
	}
	/* Unsorted input is refused by the encoder. */
	crowd_agent_q unsorted[2] = {{5, 0, 0, 0, 0, 0, 0}, {4, 0, 0, 0, 0, 0, 0}};
	assert_false(crowd_snapshot_encode(&key, unsorted, 2, &server, NULL, false, &out));
	crowd_view_free(&copy);
	crowd_view_free(&server);
	crowd_view_free(&client);
	crowd_view_free(&empty);
	crowd_buf_free(&out);
}

/* ---- packed arrays as a peer may send them: hand-made bytes */

typedef struct bytes {
	uint8_t b[8192];
	size_t n;
} bytes;

static void put(bytes *o, uint8_t v) {
	assert_true(o->n < sizeof o->b);
	o->b[o->n++] = v;
}

static void put_varint(bytes *o, uint64_t v) {
	do {
		put(o, (uint8_t)((v & 0x7fu) | (v > 0x7fu ? 0x80u : 0u)));
		v >>= 7;
	} while (v);
}

static void put_field(bytes *o, uint32_t tag, const bytes *body) {
	put_varint(o, (uint64_t)tag << 3 | 2u); /* length-delimited */
	put_varint(o, body->n);
	for (size_t i = 0; i < body->n; i++) put(o, body->b[i]);
}

static uint64_t zigzag(int32_t v) {
	return v < 0 ? ((uint64_t)(~(uint32_t)v) << 1) | 1u : (uint64_t)(uint32_t)v << 1;
}

/* A keyframe of `n` new agents, ids 1..n, x = 3 * id, y = -id, radius 150,
 * owner 2, with `x_bytes` as its x array (NULL: each x minimally coded, in
 * one field); decoded into a fresh view. */
static bool decode_keyframe(uint32_t n, const bytes *x_bytes, crowd_view *view) {
	static bytes body, field, msg;
	body.n = msg.n = 0;
	put(&body, 0x18); /* keyframe = true */
	put(&body, 0x01);
	field.n = 0;
	for (uint32_t i = 0; i < n; i++) put_varint(&field, 1u << 5 | 16u | 1u | 2u); /* +1, new, x, y */
	put_field(&body, 5, &field);
	if (x_bytes) {
		for (size_t i = 0; i < x_bytes->n; i++) put(&body, x_bytes->b[i]);
	} else {
		field.n = 0;
		for (uint32_t i = 0; i < n; i++) put_varint(&field, zigzag((int32_t)(3 * (i + 1))));
		put_field(&body, 6, &field);
	}
	field.n = 0;
	for (uint32_t i = 0; i < n; i++) put_varint(&field, zigzag(-(int32_t)(i + 1)));
	put_field(&body, 7, &field);
	field.n = 0;
	for (uint32_t i = 0; i < n; i++) put_varint(&field, 150);
	put_field(&body, 10, &field);
	field.n = 0;
	for (uint32_t i = 0; i < n; i++) put_varint(&field, 2);
	put_field(&body, 11, &field);
	put_field(&msg, 4, &body);
	crowd_view_init(view);
	crowd_v1_ServerMessage m;
	return crowd_decode_server_message(msg.b, msg.n, &m, view, NULL, NULL);
}

static void assert_keyframe_view(const crowd_view *v, uint32_t n) {
	assert_int_equal(v->count, n);
	for (uint32_t i = 0; i < n; i++) {
		const crowd_agent_q want = {i + 1, (int32_t)(3 * (i + 1)), -(int32_t)(i + 1), 0, 0, 150, 2};
		assert_memory_equal(&v->agents[i], &want, sizeof want);
	}
}

/* The packed decoder reads a field's bytes a block at a time: values that
 * straddle blocks, non-minimal codings, an array split over several
 * occurrences of its field (protobuf concatenates them) all decode as nanopb
 * decodes them; a varint cut short, over 10 bytes, past 64 bits, or a sint32
 * out of range is refused. */
static void test_packed_arrays_from_a_peer(void **state) {
	(void)state;
	crowd_view v;
	assert_true(decode_keyframe(3, NULL, &v));
	assert_keyframe_view(&v, 3);
	crowd_view_free(&v);

	/* 700 x values, each coded in 3 bytes (2,100 bytes: varints cross every block's end) */
	static bytes x, field;
	x.n = field.n = 0;
	for (uint32_t i = 0; i < 700; i++) {
		const uint64_t z = zigzag((int32_t)(3 * (i + 1)));
		put(&field, (uint8_t)((z & 0x7fu) | 0x80u));
		put(&field, (uint8_t)(((z >> 7) & 0x7fu) | 0x80u));
		put(&field, (uint8_t)(z >> 14));
	}
	put_field(&x, 6, &field);
	assert_true(decode_keyframe(700, &x, &v));
	assert_keyframe_view(&v, 700);
	crowd_view_free(&v);

	/* the same array in two occurrences of its field */
	x.n = 0;
	for (int part = 0; part < 2; part++) {
		field.n = 0;
		for (uint32_t i = part ? 250 : 0; i < (part ? 700u : 250u); i++) put_varint(&field, zigzag((int32_t)(3 * (i + 1))));
		put_field(&x, 6, &field);
	}
	assert_true(decode_keyframe(700, &x, &v));
	assert_keyframe_view(&v, 700);
	crowd_view_free(&v);

	/* refusals: a view given is left as it was (here: empty) */
	const uint8_t bad[][12] = {
	    {0x86},                                                       /* cut short by the field's end */
	    {0x86, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, /* 11 bytes */
	    {0x86, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02},       /* a 65th bit */
	    {0x80, 0x80, 0x80, 0x80, 0x10},                               /* zigzag 2^32: 2^31, past int32 */
	};
	const size_t bad_len[] = {1, 11, 10, 5};
	for (size_t k = 0; k < sizeof bad_len / sizeof bad_len[0]; k++) {
		x.n = field.n = 0;
		for (size_t i = 0; i < bad_len[k]; i++) put(&field, bad[k][i]);
		put_field(&x, 6, &field);
		assert_false(decode_keyframe(1, &x, &v));
		assert_int_equal(v.count, 0);
		crowd_view_free(&v);
	}
	/* the largest sint32 and the smallest are not refused */
	const int32_t edge[2] = {INT32_MAX, INT32_MIN};
	for (int k = 0; k < 2; k++) {
		x.n = field.n = 0;
		put_varint(&field, zigzag(edge[k]));
		put_field(&x, 6, &field);
		assert_true(decode_keyframe(1, &x, &v));
		assert_int_equal(v.count, 1);
		assert_int_equal(v.agents[0].x, edge[k]);
		crowd_view_free(&v);
	}
}

static void test_quantize(void **state) {
	(void)state;
	assert_int_equal(crowd_quantize(1.234f, 100), 123);
	assert_int_equal(crowd_quantize(-1.236f, 100), -124);
	assert_int_equal(crowd_quantize(NAN, 100), 0);
	assert_int_equal(crowd_quantize(INFINITY, 100), 1 << 30);
	assert_int_equal(crowd_quantize(-1e30f, 100), -(1 << 30));
}

/* crowd_quantize is inline and rounds without libm: the same integers as
 * lrint of the double product (the codec's rule before), ties and all. */
static void test_quantize_rounds_as_lrint(void **state) {
	(void)state;
	const float precisions[] = {1.0f, 2.0f, 16.0f, 100.0f, 1000.0f};
	uint32_t rng = 12345u, checked = 0;
	for (size_t p = 0; p < sizeof precisions / sizeof *precisions; p++) {
		const float prec = precisions[p];
		for (int k = -4096; k <= 4096; k++) { /* halves and quarters: ties at every precision */
			const float v = (float)k * 0.25f;
			assert_int_equal(crowd_quantize(v, prec), (int32_t)lrint((double)v * (double)prec));
			checked++;
		}
		for (int i = 0; i < 200000; i++) {
			rng = rng * 1664525u + 1013904223u;
			uint32_t bits = rng;
			float v;
			memcpy(&v, &bits, sizeof v);
			const double scaled = (double)v * (double)prec;
			if (!(scaled > -1073741824.0 && scaled < 1073741824.0)) continue; /* saturates: test_quantize */
			assert_int_equal(crowd_quantize(v, prec), (int32_t)lrint(scaled));
			checked++;
		}
	}
	assert_int_equal(crowd_quantize(0.5f, 1.0f), 0);
	assert_int_equal(crowd_quantize(1.5f, 1.0f), 2);
	assert_int_equal(crowd_quantize(2.5f, 1.0f), 2);
	assert_int_equal(crowd_quantize(-2.5f, 1.0f), -2);
	assert_int_equal(crowd_quantize(-0.25f, 1.0f), 0);
	assert_true(checked > 100000);
}

static void test_error_code_names(void **state) {
	(void)state;
	assert_string_equal(crowd_error_code_name(crowd_v1_ErrorCode_ERROR_NOT_OWNER), "NOT_OWNER");
	assert_string_equal(crowd_error_code_name(crowd_v1_ErrorCode_ERROR_INTERNAL), "INTERNAL");
	assert_string_equal(crowd_error_code_name(9999), "UNKNOWN");
}

static void test_ack_round_trip(void **state) {
	(void)state;
	uint32_t ids[2] = {3, 4};
	crowd_v1_ServerMessage m = crowd_v1_ServerMessage_init_zero;
	m.which_msg = crowd_v1_ServerMessage_ack_tag;
	m.msg.ack.request_id = 9;
	m.msg.ack.ids_count = 2;
	m.msg.ack.ids = ids;
	crowd_buf out = {0};
	assert_true(crowd_encode_server_message(&m, false, &out));
	crowd_v1_ServerMessage d;
	assert_true(crowd_decode_server_message(out.data, out.len, &d, NULL, NULL, NULL));
	assert_int_equal(d.which_msg, crowd_v1_ServerMessage_ack_tag);
	assert_int_equal(d.msg.ack.request_id, 9);
	assert_int_equal(d.msg.ack.ids_count, 2);
	assert_int_equal(d.msg.ack.ids[1], 4);
	crowd_server_message_release(&d);
	crowd_buf_free(&out);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_change_stream),
	    cmocka_unit_test(test_inconsistent_input_leaves_view_unchanged),
	    cmocka_unit_test(test_packed_arrays_from_a_peer),
	    cmocka_unit_test(test_quantize),
	    cmocka_unit_test(test_quantize_rounds_as_lrint),
	    cmocka_unit_test(test_error_code_names),
	    cmocka_unit_test(test_ack_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
