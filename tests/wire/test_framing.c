/* test_framing.c — the varint frame splitter under every split and coalescing
 * of a byte stream, hostile prefixes, and ClientMessage round trips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crowd/wire.h"

/* Three frames of lengths 0, 1 and 300 (a two-byte prefix). */
static void build_stream(crowd_buf *stream, size_t *lengths) {
	size_t sizes[3] = {0, 1, 300};
	for (int f = 0; f < 3; f++) {
		uint8_t prefix[CROWD_VARINT_MAX];
		size_t n = crowd_varint_put(prefix, sizes[f]);
		crowd_buf_append(stream, prefix, n);
		for (size_t i = 0; i < sizes[f]; i++) {
			uint8_t byte = (uint8_t)(f * 31 + i);
			crowd_buf_append(stream, &byte, 1);
		}
		lengths[f] = sizes[f];
	}
}

static void check_frame(const uint8_t *frame, size_t len, int f, const size_t *lengths) {
	assert_int_equal(len, lengths[f]);
	for (size_t i = 0; i < len; i++) assert_int_equal(frame[i], (uint8_t)(f * 31 + i));
}

static void test_every_two_way_split(void **state) {
	(void)state;
	crowd_buf stream = {0};
	size_t lengths[3];
	build_stream(&stream, lengths);
	for (size_t cut = 0; cut <= stream.len; cut++) {
		crowd_frame_splitter s;
		crowd_frame_splitter_init(&s, 1024);
		int got = 0;
		const uint8_t *frame;
		size_t len;
		assert_true(crowd_frame_splitter_push(&s, stream.data, cut));
		while (crowd_frame_splitter_next(&s, &frame, &len) == CROWD_FRAME_READY)
			check_frame(frame, len, got++, lengths);
		assert_true(crowd_frame_splitter_push(&s, stream.data + cut, stream.len - cut));
		crowd_frame_result r;
		while ((r = crowd_frame_splitter_next(&s, &frame, &len)) == CROWD_FRAME_READY)
			check_frame(frame, len, got++, lengths);
		assert_int_equal(r, CROWD_FRAME_NEED_MORE);
		assert_int_equal(got, 3);
		assert_int_equal(crowd_frame_splitter_pending(&s), 0);
		crowd_frame_splitter_free(&s);
	}
	crowd_buf_free(&stream);
}

static void test_byte_at_a_time(void **state) {
	(void)state;
	crowd_buf stream = {0};
	size_t lengths[3];
	build_stream(&stream, lengths);
	crowd_frame_splitter s;
	crowd_frame_splitter_init(&s, 1024);
	int got = 0;
	for (size_t i = 0; i < stream.len; i++) {
		assert_true(crowd_frame_splitter_push(&s, stream.data + i, 1));
		const uint8_t *frame;
		size_t len;
		while (crowd_frame_splitter_next(&s, &frame, &len) == CROWD_FRAME_READY)
			check_frame(frame, len, got++, lengths);
	}
	assert_int_equal(got, 3);
	crowd_frame_splitter_free(&s);
	crowd_buf_free(&stream);
}

static void test_too_large_and_bad_prefix(void **state) {
	(void)state;
	crowd_frame_splitter s;
	const uint8_t *frame;
	size_t len;
	uint8_t prefix[CROWD_VARINT_MAX];

	crowd_frame_splitter_init(&s, 100);
	size_t n = crowd_varint_put(prefix, 101);
	crowd_frame_splitter_push(&s, prefix, n);
	assert_int_equal(crowd_frame_splitter_next(&s, &frame, &len), CROWD_FRAME_TOO_LARGE);
	assert_int_equal(crowd_frame_splitter_next(&s, &frame, &len), CROWD_FRAME_TOO_LARGE);
	crowd_frame_splitter_free(&s);

	/* A length of 2^64-1: the prefix is valid, the frame absurd. */
	crowd_frame_splitter_init(&s, 100);
	n = crowd_varint_put(prefix, UINT64_MAX);
	assert_int_equal(n, 10);
	crowd_frame_splitter_push(&s, prefix, n);
	assert_int_equal(crowd_frame_splitter_next(&s, &frame, &len), CROWD_FRAME_TOO_LARGE);
	crowd_frame_splitter_free(&s);

	/* Eleven continuation bytes: not a varint at all. */
	crowd_frame_splitter_init(&s, 100);
	uint8_t garbage[11];
	memset(garbage, 0xff, sizeof garbage);
	crowd_frame_splitter_push(&s, garbage, sizeof garbage);
	assert_int_equal(crowd_frame_splitter_next(&s, &frame, &len), CROWD_FRAME_BAD_PREFIX);
	crowd_frame_splitter_free(&s);

	/* A truncated frame is simply not ready. */
	crowd_frame_splitter_init(&s, 100);
	uint8_t partial[] = {10, 1, 2, 3};
	crowd_frame_splitter_push(&s, partial, sizeof partial);
	assert_int_equal(crowd_frame_splitter_next(&s, &frame, &len), CROWD_FRAME_NEED_MORE);
	crowd_frame_splitter_free(&s);
}

static void test_client_message_round_trip(void **state) {
	(void)state;
	uint32_t ids[3] = {1, 2, 1048577};
	float xs[1] = {5.5f}, ys[1] = {-3.25f};
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.request_id = 77;
	m.which_msg = crowd_v1_ClientMessage_set_targets_tag;
	m.msg.set_targets.ids_count = 3;
	m.msg.set_targets.ids = ids;
	m.msg.set_targets.x_count = 1;
	m.msg.set_targets.x = xs;
	m.msg.set_targets.y_count = 1;
	m.msg.set_targets.y = ys;
	crowd_buf out = {0};
	assert_true(crowd_encode_client_message(&m, true, &out));

	crowd_frame_splitter s;
	crowd_frame_splitter_init(&s, 1 << 20);
	crowd_frame_splitter_push(&s, out.data, out.len);
	const uint8_t *frame;
	size_t len;
	assert_int_equal(crowd_frame_splitter_next(&s, &frame, &len), CROWD_FRAME_READY);
	crowd_v1_ClientMessage d;
	assert_true(crowd_decode_client_message(frame, len, &d));
	assert_int_equal(d.request_id, 77);
	assert_int_equal(d.which_msg, crowd_v1_ClientMessage_set_targets_tag);
	assert_int_equal(d.msg.set_targets.ids_count, 3);
	assert_int_equal(d.msg.set_targets.ids[2], 1048577);
	assert_true(d.msg.set_targets.x[0] == 5.5f && d.msg.set_targets.y[0] == -3.25f);
	crowd_client_message_release(&d);

	/* Every truncation of the body fails cleanly (ASan checks the cleanup). */
	for (size_t cut = 1; cut < len; cut++) {
		crowd_v1_ClientMessage t;
		if (crowd_decode_client_message(frame, cut, &t)) crowd_client_message_release(&t);
	}
	crowd_frame_splitter_free(&s);
	crowd_buf_free(&out);
}

/* The peek counts list items by field type: packed floats 4 bytes each,
 * packed varints by their last bytes, submessages one each. */
static void test_peek_counts_lists_without_decoding(void **state) {
	(void)state;
	enum { TARGETS = 2000, SPAWNS = 70000 };
	static uint32_t ids[TARGETS];
	static float xs[TARGETS], ys[TARGETS];
	for (uint32_t i = 0; i < TARGETS; i++) ids[i] = 1000000 + i, xs[i] = (float)i, ys[i] = -(float)i;
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.request_id = 4242;
	m.which_msg = crowd_v1_ClientMessage_set_targets_tag;
	m.msg.set_targets.ids_count = TARGETS;
	m.msg.set_targets.ids = ids;
	m.msg.set_targets.x_count = TARGETS;
	m.msg.set_targets.x = xs;
	m.msg.set_targets.y_count = TARGETS;
	m.msg.set_targets.y = ys;
	crowd_buf out = {0};
	assert_true(crowd_encode_client_message(&m, false, &out));
	uint32_t rid, longest;
	assert_true(crowd_client_message_peek(out.data, out.len, &rid, &longest));
	assert_int_equal(rid, 4242);
	assert_int_equal(longest, TARGETS);

	/* 70,000 empty AgentSpecs: more than a 16-bit nanopb count can decode. */
	out.len = 0;
	uint8_t head[] = {0x08, 0x07}; /* request_id 7 */
	crowd_buf_append(&out, head, sizeof head);
	crowd_buf body = {0};
	for (uint32_t i = 0; i < SPAWNS; i++) {
		uint8_t spec[] = {0x0a, 0x00}; /* SpawnAgents.agents, empty */
		crowd_buf_append(&body, spec, sizeof spec);
	}
	uint8_t tag = 0x1a, prefix[CROWD_VARINT_MAX]; /* ClientMessage.spawn_agents */
	crowd_buf_append(&out, &tag, 1);
	crowd_buf_append(&out, prefix, crowd_varint_put(prefix, body.len));
	crowd_buf_append(&out, body.data, body.len);
	assert_true(crowd_client_message_peek(out.data, out.len, &rid, &longest));
	assert_int_equal(rid, 7);
	assert_int_equal(longest, SPAWNS);
	assert_false(crowd_client_message_peek(out.data, out.len - 1, &rid, &longest)); /* truncated */
	crowd_buf_free(&body);
	crowd_buf_free(&out);
}

/* A Hello with a 40-byte name, a 70-byte token and a NUL in its resume key:
 * the inspection reports each, and the checked decode sets the long ones aside
 * instead of failing (nanopb's fixed-size strings would refuse the frame). */
static void test_hello_strings_inspected(void **state) {
	(void)state;
	uint8_t inner[256], msg[300];
	size_t n = 0, m = 0;
	inner[n++] = 0x08, inner[n++] = 1; /* protocol_major */
	inner[n++] = 0x1a, inner[n++] = 70; /* token */
	memset(inner + n, 't', 70), n += 70;
	inner[n++] = 0x22, inner[n++] = 40; /* client_name */
	memset(inner + n, 'n', 40), n += 40;
	inner[n++] = 0x32, inner[n++] = 3; /* resume_key "a\0b" */
	memcpy(inner + n, "a\0b", 3), n += 3;
	msg[m++] = 0x08, msg[m++] = 9;
	msg[m++] = 0x12, msg[m++] = (uint8_t)n;
	memcpy(msg + m, inner, n), m += n;
	crowd_client_message_info info;
	assert_true(crowd_client_message_inspect(msg, m, &info));
	assert_int_equal(info.request_id, 9);
	assert_int_equal(info.which_msg, crowd_v1_ClientMessage_hello_tag);
	assert_int_equal(info.token.longest, 70);
	assert_int_equal(info.client_name.len, 40);
	assert_memory_equal(info.client_name.data, inner + 76, 40);
	assert_true(info.resume_key.has_nul);
	assert_false(info.token.has_nul);
	crowd_v1_ClientMessage d;
	assert_false(crowd_decode_client_message(msg, m, &d)); /* plain nanopb: string overflow */
	assert_true(crowd_decode_client_message_checked(msg, m, &d, &info));
	assert_int_equal(d.which_msg, crowd_v1_ClientMessage_hello_tag);
	assert_int_equal(d.msg.hello.protocol_major, 1);
	assert_string_equal(d.msg.hello.token, "");       /* set aside */
	assert_string_equal(d.msg.hello.client_name, ""); /* set aside */
	crowd_client_message_release(&d);
}

/* Only repeated fields are lists: a Ping whose scalar comes 6,000 times is not one. */
static void test_peek_ignores_repeated_scalars(void **state) {
	(void)state;
	crowd_buf out = {0}, body = {0};
	for (int i = 0; i < 6000; i++) {
		uint8_t f[] = {0x08, (uint8_t)(i & 0x7f)};
		crowd_buf_append(&body, f, sizeof f);
	}
	uint8_t head[] = {0x08, 0x03, 0x52}, prefix[CROWD_VARINT_MAX];
	crowd_buf_append(&out, head, sizeof head);
	crowd_buf_append(&out, prefix, crowd_varint_put(prefix, body.len));
	crowd_buf_append(&out, body.data, body.len);
	crowd_client_message_info info;
	assert_true(crowd_client_message_inspect(out.data, out.len, &info));
	assert_int_equal(info.which_msg, crowd_v1_ClientMessage_ping_tag);
	assert_int_equal(info.longest_list, 0);
	crowd_buf_free(&body);
	crowd_buf_free(&out);
}

static void test_random_garbage_never_crashes(void **state) {
	(void)state;
	srand(7);
	uint8_t bytes[64];
	int decoded = 0;
	for (int round = 0; round < 20000; round++) {
		size_t n = (size_t)(rand() % (int)sizeof bytes);
		for (size_t i = 0; i < n; i++) bytes[i] = (uint8_t)rand();
		crowd_v1_ClientMessage m;
		uint32_t rid, longest;
		(void)crowd_client_message_peek(bytes, n, &rid, &longest);
		if (crowd_decode_client_message(bytes, n, &m)) {
			decoded++;
			crowd_client_message_release(&m);
		}
		crowd_client_message_info info;
		if (crowd_client_message_inspect(bytes, n, &info) && crowd_decode_client_message_checked(bytes, n, &m, &info))
			crowd_client_message_release(&m);
		crowd_v1_ServerMessage sm;
		crowd_view view;
		crowd_view_init(&view);
		crowd_obstacle_set obstacles;
		crowd_obstacle_set_init(&obstacles);
		if (crowd_decode_server_message(bytes, n, &sm, &view, &obstacles, NULL))
			crowd_server_message_release(&sm);
		crowd_view_free(&view);
		crowd_obstacle_set_free(&obstacles);
	}
	assert_true(decoded > 0); /* the empty message at least decodes */
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_two_way_split),
	    cmocka_unit_test(test_byte_at_a_time),
	    cmocka_unit_test(test_too_large_and_bad_prefix),
	    cmocka_unit_test(test_client_message_round_trip),
	    cmocka_unit_test(test_peek_counts_lists_without_decoding),
	    cmocka_unit_test(test_hello_strings_inspected),
	    cmocka_unit_test(test_peek_ignores_repeated_scalars),
	    cmocka_unit_test(test_random_garbage_never_crashes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
