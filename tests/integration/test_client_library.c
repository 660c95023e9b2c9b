/* test_client_library.c — the C client library against a scripted fake server
 * in this process (a loopback listener): frames arriving one byte at a time,
 * snapshots turned into world units, an Error followed by a close, a frame cut
 * short, an oversized prefix, and the requests the library encodes. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "crowd/client.h"
#include "crowd/wire.h"

typedef struct seen {
	int welcomes, acks, errors, snapshots, pongs, closes;
	int closed_status;
	int error_code;
	uint32_t ack_request, ack_ids[4];
	size_t ack_count;
	uint64_t pong_tick;
} seen;

static void on_welcome(void *u, const crowd_v1_Welcome *w) {
	(void)w;
	((seen *)u)->welcomes++;
}
static void on_ack(void *u, uint32_t rid, const uint32_t *ids, size_t n) {
	seen *s = u;
	s->acks++;
	s->ack_request = rid;
	s->ack_count = n;
	for (size_t i = 0; i < n && i < 4; i++) s->ack_ids[i] = ids[i];
}
static void on_error(void *u, const crowd_v1_Error *e) {
	seen *s = u;
	s->errors++;
	s->error_code = (int)e->code;
}
static void on_snapshot(void *u, const crowd_client_snapshot *snap) {
	(void)snap;
	((seen *)u)->snapshots++;
}
static void on_pong(void *u, uint64_t t, uint64_t tick) {
	(void)t;
	seen *s = u;
	s->pongs++;
	s->pong_tick = tick;
}
static void on_closed(void *u, int status) {
	seen *s = u;
	s->closes++;
	s->closed_status = status;
}

typedef struct fixture {
	int listener, server_fd;
	crowd_client *client;
	seen seen;
} fixture;

static int setup(void **state) {
	fixture *f = calloc(1, sizeof *f);
	f->listener = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof a;
	if (bind(f->listener, (struct sockaddr *)&a, sizeof a) < 0 || listen(f->listener, 1) < 0 ||
	    getsockname(f->listener, (struct sockaddr *)&a, &len) < 0)
		return -1;
	crowd_client_options o = crowd_client_default_options();
	o.max_frame = 1u << 16;
	o.user = &f->seen;
	o.callbacks = (crowd_client_callbacks){.on_welcome = on_welcome, .on_ack = on_ack, .on_error = on_error, .on_snapshot = on_snapshot, .on_pong = on_pong, .on_closed = on_closed};
	if (crowd_client_connect("127.0.0.1", ntohs(a.sin_port), &o, &f->client) != CROWD_CLIENT_OK) return -1;
	f->server_fd = accept(f->listener, NULL, NULL);
	*state = f;
	return f->server_fd >= 0 ? 0 : -1;
}

static int teardown(void **state) {
	fixture *f = *state;
	crowd_client_close(f->client, 0);
	if (f->server_fd >= 0) close(f->server_fd);
	close(f->listener);
	free(f);
	return 0;
}

static void server_write(fixture *f, const void *data, size_t len) {
	assert_int_equal(send(f->server_fd, data, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Poll until the client has nothing more to read right now. */
static void drain(fixture *f) {
	for (int i = 0; i < 100; i++) {
		int r = crowd_client_poll(f->client, 20);
		if (r <= 0) return;
	}
}

static void encode_welcome(crowd_buf *out, uint32_t precision) {
	crowd_v1_ServerMessage m = crowd_v1_ServerMessage_init_zero;
	m.which_msg = crowd_v1_ServerMessage_welcome_tag;
	m.msg.welcome.protocol_major = 1;
	m.msg.welcome.precision = precision;
	m.msg.welcome.client_id = 7;
	assert_true(crowd_encode_server_message(&m, true, out));
}

static void test_frames_one_byte_at_a_time(void **state) {
	fixture *f = *state;
	crowd_buf out;
	crowd_buf_init(&out);
	encode_welcome(&out, 100);
	crowd_agent_q agents[3] = {
	    {.id = 2, .x = 150, .y = -250, .vx = 10, .vy = 0, .radius = 50, .owner = 7},
	    {.id = 5, .x = 0, .y = 100, .vx = 0, .vy = -20, .radius = 75, .owner = 0},
	    {.id = 9, .x = -12345, .y = 1, .vx = 1, .vy = 1, .radius = 100, .owner = 3},
	};
	crowd_view baseline;
	crowd_view_init(&baseline);
	crowd_snapshot_header h = {.tick = 42, .state_hash = 0xabcdef, .world_agent_count = 3, .keyframe = true};
	assert_true(crowd_snapshot_encode(&h, agents, 3, &baseline, NULL, true, &out));
	crowd_v1_ServerMessage pong = crowd_v1_ServerMessage_init_zero;
	pong.which_msg = crowd_v1_ServerMessage_pong_tag;
	pong.msg.pong.server_tick = 43;
	assert_true(crowd_encode_server_message(&pong, true, &out));

	for (size_t i = 0; i < out.len; i++) {
		server_write(f, out.data + i, 1);
		drain(f);
	}
	assert_int_equal(f->seen.welcomes, 1);
	assert_int_equal(f->seen.snapshots, 1);
	assert_int_equal(f->seen.pongs, 1);
	assert_int_equal(f->seen.pong_tick, 43);
	assert_int_equal(f->seen.closes, 0);

	const crowd_client_snapshot *s = crowd_client_latest_snapshot(f->client);
	assert_non_null(s);
	assert_int_equal(s->tick, 42);
	assert_int_equal(s->state_hash, 0xabcdef);
	assert_int_equal(s->count, 3);
	assert_int_equal(s->id[0], 2);
	assert_int_equal(s->id[2], 9);
	assert_float_equal(s->x[0], 1.5f, 1e-6f);
	assert_float_equal(s->y[0], -2.5f, 1e-6f);
	assert_float_equal(s->vy[1], -0.2f, 1e-6f);
	assert_float_equal(s->x[2], -123.45f, 1e-4f);
	assert_float_equal(s->radius[1], 0.75f, 1e-6f);
	assert_int_equal(s->owner[2], 3);
	assert_true(s->frame_bytes > 0);
	assert_int_equal(crowd_client_get_counters(f->client).bytes_received, out.len);

	/* A delta: agent 5 leaves, agent 2 moves. */
	agents[0].x = 250;
	crowd_agent_q next[2] = {agents[0], agents[2]};
	h.tick = 43;
	h.keyframe = false;
	out.len = 0;
	assert_true(crowd_snapshot_encode(&h, next, 2, &baseline, NULL, true, &out));
	server_write(f, out.data, out.len);
	drain(f);
	s = crowd_client_latest_snapshot(f->client);
	assert_int_equal(s->count, 2);
	assert_float_equal(s->x[0], 2.5f, 1e-6f);
	assert_int_equal(s->removed, 1);
	crowd_view_free(&baseline);
	crowd_buf_free(&out);
}

static void test_error_then_close_is_read_before_closed(void **state) {
	fixture *f = *state;
	crowd_buf out;
	crowd_buf_init(&out);
	crowd_v1_ServerMessage m = crowd_v1_ServerMessage_init_zero;
	m.which_msg = crowd_v1_ServerMessage_error_tag;
	m.msg.error.code = crowd_v1_ErrorCode_ERROR_SHUTTING_DOWN;
	assert_true(crowd_encode_server_message(&m, true, &out));
	server_write(f, out.data, out.len);
	close(f->server_fd);
	f->server_fd = -1;
	drain(f);
	assert_int_equal(f->seen.errors, 1);
	assert_int_equal(f->seen.error_code, crowd_v1_ErrorCode_ERROR_SHUTTING_DOWN);
	assert_int_equal(f->seen.closes, 1);
	assert_int_equal(f->seen.closed_status, CROWD_CLIENT_ERR_CLOSED);
	assert_int_equal(crowd_client_poll(f->client, 0), CROWD_CLIENT_ERR_CLOSED);
	assert_int_equal(crowd_client_ping(f->client, 0), CROWD_CLIENT_ERR_CLOSED);
	assert_int_equal(f->seen.closes, 1); /* told once */
	crowd_buf_free(&out);
}

static void test_frame_cut_short_is_a_protocol_error(void **state) {
	fixture *f = *state;
	const uint8_t partial[] = {0x10, 0x0a, 0x02};
	server_write(f, partial, sizeof partial);
	close(f->server_fd);
	f->server_fd = -1;
	drain(f);
	assert_int_equal(f->seen.closes, 1);
	assert_int_equal(f->seen.closed_status, CROWD_CLIENT_ERR_PROTOCOL);
}

static void test_oversized_frame_from_server(void **state) {
	fixture *f = *state;
	uint8_t prefix[CROWD_VARINT_MAX];
	size_t n = crowd_varint_put(prefix, (1u << 16) + 1);
	server_write(f, prefix, n);
	drain(f);
	assert_int_equal(f->seen.closes, 1);
	assert_int_equal(f->seen.closed_status, CROWD_CLIENT_ERR_FRAME_TOO_LARGE);
}

static void test_garbage_from_server(void **state) {
	fixture *f = *state;
	const uint8_t junk[] = {0x04, 0xff, 0xff, 0xff, 0xff};
	server_write(f, junk, sizeof junk);
	drain(f);
	assert_int_equal(f->seen.closes, 1);
	assert_int_equal(f->seen.closed_status, CROWD_CLIENT_ERR_PROTOCOL);
}

/* Read whole client frames on the fake server side. */
static bool read_request(fixture *f, crowd_frame_splitter *sp, crowd_v1_ClientMessage *msg) {
	for (int tries = 0; tries < 200; tries++) {
		const uint8_t *frame;
		size_t len;
		if (crowd_frame_splitter_next(sp, &frame, &len) == CROWD_FRAME_READY)
			return crowd_decode_client_message(frame, len, msg);
		struct pollfd p = {.fd = f->server_fd, .events = POLLIN};
		if (poll(&p, 1, 50) <= 0) continue;
		uint8_t buf[4096];
		ssize_t n = recv(f->server_fd, buf, sizeof buf, 0);
		if (n <= 0) return false;
		crowd_frame_splitter_push(sp, buf, (size_t)n);
	}
	return false;
}

static void test_requests_as_encoded(void **state) {
	fixture *f = *state;
	crowd_frame_splitter sp;
	crowd_frame_splitter_init(&sp, 1u << 20);
	crowd_v1_ClientMessage m;

	assert_int_equal(crowd_client_hello(f->client, "tok", "me", true), 1);
	assert_true(read_request(f, &sp, &m));
	assert_int_equal(m.request_id, 1);
	assert_int_equal(m.which_msg, crowd_v1_ClientMessage_hello_tag);
	assert_int_equal(m.msg.hello.protocol_major, CROWD_PROTOCOL_MAJOR);
	assert_string_equal(m.msg.hello.token, "tok");
	assert_true(m.msg.hello.keep_agents_on_disconnect);
	crowd_client_message_release(&m);

	crowd_v1_AgentSpec specs[2] = {crowd_v1_AgentSpec_init_zero, crowd_v1_AgentSpec_init_zero};
	specs[1].has_radius = true;
	specs[1].radius = 0.5f;
	assert_int_equal(crowd_client_spawn(f->client, specs, 2), 2);
	assert_true(read_request(f, &sp, &m));
	assert_int_equal(m.request_id, 2);
	assert_int_equal(m.msg.spawn_agents.agents_count, 2);
	assert_true(m.msg.spawn_agents.agents[1].has_radius);
	assert_false(m.msg.spawn_agents.agents[0].has_radius);
	crowd_client_message_release(&m);

	uint32_t ids[3] = {4, 5, 6};
	float x = 1.0f, y = 2.0f;
	assert_int_equal(crowd_client_set_targets(f->client, ids, 3, &x, &y, 1), 3);
	assert_true(read_request(f, &sp, &m));
	assert_int_equal(m.msg.set_targets.ids_count, 3);
	assert_int_equal(m.msg.set_targets.x_count, 1);
	crowd_client_message_release(&m);

	crowd_v1_Rect area = {0, 0, 10, 10};
	assert_int_equal(crowd_client_subscribe(f->client, &area, 2), 4);
	assert_true(read_request(f, &sp, &m));
	assert_true(m.msg.subscribe.has_area);
	assert_int_equal(m.msg.subscribe.divisor, 2);
	crowd_client_message_release(&m);

	assert_int_equal(crowd_client_spawn(f->client, NULL, 70000), CROWD_CLIENT_ERR_ARGUMENT);
	assert_int_equal(crowd_client_spawn(f->client, specs, 70000), CROWD_CLIENT_ERR_TOO_MANY);
	char long_token[100];
	memset(long_token, 'a', sizeof long_token - 1);
	long_token[sizeof long_token - 1] = '\0';
	assert_int_equal(crowd_client_hello(f->client, long_token, NULL, false), CROWD_CLIENT_ERR_ARGUMENT);

	/* The Ack that answers request 2 reaches on_ack with its ids. */
	crowd_v1_ServerMessage ack = crowd_v1_ServerMessage_init_zero;
	uint32_t new_ids[2] = {11, 12};
	ack.which_msg = crowd_v1_ServerMessage_ack_tag;
	ack.msg.ack.request_id = 2;
	ack.msg.ack.ids_count = 2;
	ack.msg.ack.ids = new_ids;
	crowd_buf out;
	crowd_buf_init(&out);
	assert_true(crowd_encode_server_message(&ack, true, &out));
	server_write(f, out.data, out.len);
	drain(f);
	assert_int_equal(f->seen.acks, 1);
	assert_int_equal(f->seen.ack_request, 2);
	assert_int_equal(f->seen.ack_count, 2);
	assert_int_equal(f->seen.ack_ids[1], 12);
	crowd_buf_free(&out);
	crowd_frame_splitter_free(&sp);
}

static void test_close_is_orderly_even_with_unread_input(void **state) {
	fixture *f = *state;
	crowd_v1_ServerMessage pong = crowd_v1_ServerMessage_init_zero;
	pong.which_msg = crowd_v1_ServerMessage_pong_tag;
	crowd_buf out;
	crowd_buf_init(&out);
	assert_true(crowd_encode_server_message(&pong, true, &out));
	server_write(f, out.data, out.len); /* never polled: unread at close */
	crowd_buf_free(&out);
	assert_true(crowd_client_ping(f->client, 0) > 0);
	crowd_client_close(f->client, 200);
	f->client = NULL;
	/* The fake server gets the ping, then an end of stream, not a reset. */
	crowd_frame_splitter sp;
	crowd_frame_splitter_init(&sp, 1024);
	crowd_v1_ClientMessage m;
	assert_true(read_request(f, &sp, &m));
	assert_int_equal(m.which_msg, crowd_v1_ClientMessage_ping_tag);
	crowd_client_message_release(&m);
	uint8_t byte;
	assert_int_equal(recv(f->server_fd, &byte, 1, 0), 0);
	crowd_frame_splitter_free(&sp);
	assert_int_equal(f->seen.closes, 0); /* closing it ourselves is not news */
}

static void test_parse_address(void **state) {
	(void)state;
	char host[64];
	uint16_t port;
	assert_int_equal(crowd_client_parse_address("127.0.0.1:7777", host, sizeof host, &port), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 7777);
	assert_int_equal(crowd_client_parse_address("[::1]:80", host, sizeof host, &port), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 80);
	assert_true(crowd_client_parse_address("localhost", host, sizeof host, &port) < 0);
	assert_true(crowd_client_parse_address("host:0", host, sizeof host, &port) < 0);
	assert_true(crowd_client_parse_address("host:65536", host, sizeof host, &port) < 0);
	assert_true(crowd_client_parse_address(":80", host, sizeof host, &port) < 0);
	assert_true(crowd_client_parse_address("host:8x", host, sizeof host, &port) < 0);
	assert_string_equal(crowd_client_error_name(crowd_v1_ErrorCode_ERROR_NOT_OWNER), "ERROR_NOT_OWNER");
	assert_string_equal(crowd_client_error_name(999), "ERROR_UNKNOWN_CODE");
	assert_string_equal(crowd_client_strerror(CROWD_CLIENT_ERR_CLOSED), "the server closed the connection");
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_frames_one_byte_at_a_time, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_error_then_close_is_read_before_closed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_frame_cut_short_is_a_protocol_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_oversized_frame_from_server, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_garbage_from_server, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_requests_as_encoded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_close_is_orderly_even_with_unread_input, setup, teardown),
	    cmocka_unit_test(test_parse_address),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
