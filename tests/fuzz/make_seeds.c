/* make_seeds.c — writes the seed corpora under tests/fuzz/corpus/<target>/
 * from real encoders (so seeds follow the proto): `fuzz_make_seeds DIR`.
 * Each fuzz input starts with one byte that chooses how the stream is cut
 * into reads (chunk size), except fuzz_config, fuzz_agones_json, fuzz_client. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <crowd/wire.h>

#include "load_ws.h"

static const char *root;

static void put(const char *target, const char *name, uint8_t chunk_seed, bool with_seed, const void *data,
                size_t len)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", root, target);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/%s/%s", root, target, name);
	FILE *f = fopen(path, "wb");
	if (!f) {
		perror(path);
		exit(1);
	}
	if (with_seed)
		fputc(chunk_seed, f);
	fwrite(data, 1, len, f);
	fclose(f);
}

static void client_msg(crowd_buf *out, crowd_v1_ClientMessage *m, bool delimited)
{
	if (!crowd_encode_client_message(m, delimited, out))
		abort();
}

/* A session's worth of TCP client bytes: Hello, spawn, targets, obstacle, ... */
static void client_stream(crowd_buf *b, const char *token, bool delimited)
{
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.request_id = 1;
	m.which_msg = crowd_v1_ClientMessage_hello_tag;
	m.msg.hello.protocol_major = 1;
	m.msg.hello.protocol_minor = 1;
	strcpy(m.msg.hello.token, token);
	strcpy(m.msg.hello.client_name, "seed");
	client_msg(b, &m, delimited);

	crowd_v1_AgentSpec specs[2] = {crowd_v1_AgentSpec_init_zero, crowd_v1_AgentSpec_init_zero};
	specs[0].has_position = true;
	specs[0].position.x = 1;
	specs[0].position.y = 2;
	specs[0].has_target = true;
	specs[0].target.x = 10;
	specs[1].has_position = true;
	specs[1].position.x = -3;
	specs[1].has_radius = true;
	specs[1].radius = 0.5f;
	specs[1].has_max_neighbors = true;
	specs[1].max_neighbors = 4;
	memset(&m, 0, sizeof m);
	m.request_id = 2;
	m.which_msg = crowd_v1_ClientMessage_spawn_agents_tag;
	m.msg.spawn_agents.agents_count = 2;
	m.msg.spawn_agents.agents = specs;
	client_msg(b, &m, delimited);

	uint32_t ids[2] = {1, 2};
	float xs[2] = {5, 6}, ys[2] = {7, 8};
	memset(&m, 0, sizeof m);
	m.request_id = 3;
	m.which_msg = crowd_v1_ClientMessage_set_targets_tag;
	m.msg.set_targets.ids_count = 2;
	m.msg.set_targets.ids = ids;
	m.msg.set_targets.x_count = 2;
	m.msg.set_targets.x = xs;
	m.msg.set_targets.y_count = 2;
	m.msg.set_targets.y = ys;
	client_msg(b, &m, delimited);

	memset(&m, 0, sizeof m);
	m.request_id = 4;
	m.which_msg = crowd_v1_ClientMessage_set_velocities_tag;
	m.msg.set_velocities.ids_count = 1;
	m.msg.set_velocities.ids = ids;
	m.msg.set_velocities.vx_count = 1;
	m.msg.set_velocities.vx = xs;
	m.msg.set_velocities.vy_count = 1;
	m.msg.set_velocities.vy = ys;
	client_msg(b, &m, delimited);

	float ox[4] = {0, 4, 4, 0}, oy[4] = {0, 0, 4, 4};
	memset(&m, 0, sizeof m);
	m.request_id = 5;
	m.which_msg = crowd_v1_ClientMessage_add_obstacle_tag;
	m.msg.add_obstacle.x_count = 4;
	m.msg.add_obstacle.x = ox;
	m.msg.add_obstacle.y_count = 4;
	m.msg.add_obstacle.y = oy;
	client_msg(b, &m, delimited);

	memset(&m, 0, sizeof m);
	m.request_id = 6;
	m.which_msg = crowd_v1_ClientMessage_remove_obstacle_tag;
	m.msg.remove_obstacle.id = 1;
	client_msg(b, &m, delimited);

	memset(&m, 0, sizeof m);
	m.request_id = 7;
	m.which_msg = crowd_v1_ClientMessage_subscribe_tag;
	m.msg.subscribe.has_area = true;
	m.msg.subscribe.area.min_x = -10;
	m.msg.subscribe.area.min_y = -10;
	m.msg.subscribe.area.max_x = 10;
	m.msg.subscribe.area.max_y = 10;
	m.msg.subscribe.divisor = 2;
	client_msg(b, &m, delimited);

	memset(&m, 0, sizeof m);
	m.request_id = 8;
	m.which_msg = crowd_v1_ClientMessage_ping_tag;
	m.msg.ping.client_time_us = 123456789;
	client_msg(b, &m, delimited);

	memset(&m, 0, sizeof m);
	m.request_id = 9;
	m.which_msg = crowd_v1_ClientMessage_subscribe_events_tag;
	client_msg(b, &m, delimited);

	memset(&m, 0, sizeof m);
	m.request_id = 10;
	m.which_msg = crowd_v1_ClientMessage_get_paths_tag;
	m.msg.get_paths.ids_count = 2;
	m.msg.get_paths.ids = ids;
	client_msg(b, &m, delimited);

	memset(&m, 0, sizeof m);
	m.request_id = 11;
	m.which_msg = crowd_v1_ClientMessage_remove_agents_tag;
	m.msg.remove_agents.ids_count = 2;
	m.msg.remove_agents.ids = ids;
	client_msg(b, &m, delimited);
}

/* A server's TCP stream: Welcome, Ack, Error, a keyframe, a delta with an
 * obstacle set, a removal, Pong. */
static void server_stream(crowd_buf *b, bool delimited)
{
	crowd_v1_ServerMessage m = crowd_v1_ServerMessage_init_zero;
	m.which_msg = crowd_v1_ServerMessage_welcome_tag;
	m.msg.welcome.protocol_major = 1;
	m.msg.welcome.protocol_minor = 1;
	m.msg.welcome.client_id = 3;
	m.msg.welcome.precision = 100;
	m.msg.welcome.tick_rate_hz = 30;
	strcpy(m.msg.welcome.server_version, "0.1.0");
	crowd_encode_server_message(&m, delimited, b);

	uint32_t ids[2] = {1, 2};
	memset(&m, 0, sizeof m);
	m.which_msg = crowd_v1_ServerMessage_ack_tag;
	m.msg.ack.request_id = 2;
	m.msg.ack.ids_count = 2;
	m.msg.ack.ids = ids;
	crowd_encode_server_message(&m, delimited, b);

	memset(&m, 0, sizeof m);
	m.which_msg = crowd_v1_ServerMessage_error_tag;
	m.msg.error.request_id = 4;
	m.msg.error.code = crowd_v1_ErrorCode_ERROR_NOT_OWNER;
	strcpy(m.msg.error.message, "not yours");
	crowd_encode_server_message(&m, delimited, b);

	crowd_view baseline;
	crowd_view_init(&baseline);
	crowd_agent_q a[3] = {{1, 100, 200, 5, -5, 50, 3}, {2, -100, 0, 0, 0, 50, 3}, {7, 0, 0, 1, 1, 25, 4}};
	crowd_snapshot_header h = {10, 0xabcdef, 3, true};
	crowd_obstacle_set obst;
	crowd_obstacle_set_init(&obst);
	float ox[4] = {0, 4, 4, 0}, oy[4] = {0, 0, 4, 4};
	crowd_obstacle_set_add(&obst, 1, ox, oy, 4);
	crowd_snapshot_encode(&h, a, 3, &baseline, &obst, delimited, b);
	a[0].x += 7;
	a[2].vy -= 3;
	h.tick = 11;
	h.keyframe = false;
	crowd_snapshot_encode(&h, a, 3, &baseline, NULL, delimited, b);
	h.tick = 12;
	crowd_snapshot_encode(&h, a, 2, &baseline, NULL, delimited, b); /* agent 7 removed */
	crowd_view_free(&baseline);
	crowd_obstacle_set_free(&obst);

	memset(&m, 0, sizeof m);
	m.which_msg = crowd_v1_ServerMessage_pong_tag;
	m.msg.pong.client_time_us = 5;
	m.msg.pong.server_tick = 12;
	crowd_encode_server_message(&m, delimited, b);
}

/* One client-to-server WebSocket frame, masked. */
static void ws_client_frame(crowd_buf *b, uint8_t opcode, bool fin, const uint8_t *p, size_t n)
{
	uint8_t head[14];
	size_t h = 0;
	head[h++] = (uint8_t)((fin ? 0x80 : 0) | opcode);
	if (n < 126) {
		head[h++] = (uint8_t)(0x80 | n);
	} else {
		head[h++] = 0x80 | 126;
		head[h++] = (uint8_t)(n >> 8);
		head[h++] = (uint8_t)n;
	}
	const uint8_t mask[4] = {0x12, 0x34, 0x56, 0x78};
	memcpy(head + h, mask, 4);
	h += 4;
	crowd_buf_append(b, head, h);
	for (size_t i = 0; i < n; i++) {
		uint8_t c = p[i] ^ mask[i % 4];
		crowd_buf_append(b, &c, 1);
	}
}

/* Each bare message of a delimited stream as one masked binary frame. */
static void ws_client_messages(crowd_buf *ws, const crowd_buf *delimited)
{
	crowd_frame_splitter sp;
	crowd_frame_splitter_init(&sp, 1u << 20);
	crowd_frame_splitter_push(&sp, delimited->data, delimited->len);
	const uint8_t *f;
	size_t len;
	bool split = true;
	while (crowd_frame_splitter_next(&sp, &f, &len) == CROWD_FRAME_READY) {
		if (split && len > 4) { /* one fragmented message with a ping in between */
			ws_client_frame(ws, 2, false, f, 3);
			ws_client_frame(ws, 9, true, (const uint8_t *)"hi", 2);
			ws_client_frame(ws, 0, true, f + 3, len - 3);
			split = false;
		} else {
			ws_client_frame(ws, 2, true, f, len);
		}
	}
	crowd_frame_splitter_free(&sp);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	root = argv[1];
	mkdir(root, 0755);
	crowd_buf b, w;

	/* frames + session: delimited client streams */
	const char *tokens[] = {"a", "p", "v", "wrong"};
	for (int i = 0; i < 4; i++) {
		crowd_buf_init(&b);
		client_stream(&b, tokens[i], true);
		char name[32];
		snprintf(name, sizeof name, "stream_%s", tokens[i]);
		put("fuzz_frames", name, (uint8_t)(i * 17), true, b.data, b.len);
		put("fuzz_session", name, (uint8_t)(i * 37 + 127), true, b.data, b.len);
		crowd_buf_free(&b);
	}
	const uint8_t huge_prefix[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
	put("fuzz_frames", "huge_prefix", 0, true, huge_prefix, sizeof huge_prefix);
	put("fuzz_session", "huge_prefix", 0, true, huge_prefix, sizeof huge_prefix);

	/* ws: a session's messages as masked frames, then a close */
	crowd_buf_init(&b);
	client_stream(&b, "a", true);
	crowd_buf_init(&w);
	ws_client_messages(&w, &b);
	const uint8_t close_payload[] = {0x03, 0xe8, 'o', 'k'};
	ws_client_frame(&w, 8, true, close_payload, sizeof close_payload);
	put("fuzz_ws", "session", 15, true, w.data, w.len);
	put("fuzz_ws", "session_close_midway", 0x80 | 7, true, w.data, w.len);

	/* http: requests, and an upgrade followed by the frames */
	const char *reqs[][2] = {
	    {"get_health", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"},
	    {"head_metrics", "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n"},
	    {"get_proto", "GET /crowd.proto HTTP/1.0\r\n\r\n"},
	    {"get_index", "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
	    {"get_dotdot", "GET /../etc/passwd HTTP/1.1\r\n\r\n"},
	    {"post_body", "POST /healthz HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"},
	    {"chunked", "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"},
	    {"bad_upgrade", "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	                    "Sec-WebSocket-Version: 12\r\n\r\n"},
	};
	for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++)
		put("fuzz_http", reqs[i][0], (uint8_t)(i * 29 + 127), true, reqs[i][1], strlen(reqs[i][1]));
	const char *upgrade = "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
	                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
	                      "Sec-WebSocket-Protocol: crowd.v1\r\n\r\n";
	crowd_buf up;
	crowd_buf_init(&up);
	crowd_buf_append(&up, upgrade, strlen(upgrade));
	crowd_buf_append(&up, w.data, w.len);
	put("fuzz_http", "upgrade_session", 127, true, up.data, up.len);
	put("fuzz_http", "upgrade_session_small_reads", 9, true, up.data, up.len);
	crowd_buf_free(&up);
	crowd_buf_free(&w);
	crowd_buf_free(&b);

	/* config */
	const char *ini[][2] = {
	    {"full", "[server]\nlisten = 127.0.0.1:7000\nhttp = 127.0.0.1:0\ntick_rate = 30\n"
	             "[world]\nworkers = 2\nmin_x = -100\nmax_x = 100\n[tokens]\nsecret = admin\npub = viewer\n"},
	    {"bad_section", "[nope]\ntick_rate = 30\n"},
	    {"bad_value", "tick_rate = -1\nmax_frame_bytes = 1k\n"},
	    {"comments", "; comment\n# other\n[tokens]\n t = player \n"},
	};
	for (size_t i = 0; i < sizeof ini / sizeof ini[0]; i++)
		put("fuzz_config", ini[i][0], 0, false, ini[i][1], strlen(ini[i][1]));

	/* agones */
	const char *js[][2] = {
	    {"object_meta", "{\"object_meta\":{\"name\":\"gs-1\",\"labels\":{\"a\":\"b\",\"c\":\"d\"}},"
	                    "\"status\":{\"state\":\"Scheduled\",\"address\":\"1.2.3.4\",\"ports\":[{\"name\":\"p\","
	                    "\"port\":7654}]}}"},
	    {"objectMeta", "{\"objectMeta\":{\"name\":\"gs-\\u00e9\\\"x\",\"labels\":{}},\"status\":{\"state\":\"Ready\"},"
	                   "\"x\":[1,2.5e3,true,false,null,{\"y\":[]}]}"},
	    {"deep", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"},
	};
	for (size_t i = 0; i < sizeof js / sizeof js[0]; i++)
		put("fuzz_agones_json", js[i][0], 0, false, js[i][1], strlen(js[i][1]));

	/* client: a server's TCP stream */
	crowd_buf_init(&b);
	server_stream(&b, true);
	put("fuzz_client", "server_stream", 0, false, b.data, b.len);
	crowd_buf_free(&b);

	/* load: the 101 answer for seed 1's key, then server frames (unmasked) */
	load_ws ws;
	load_ws_init(&ws, 1);
	crowd_buf req;
	crowd_buf_init(&req);
	load_ws_request(&ws, "127.0.0.1", 80, "/ws", &req);
	char accept[29];
	load_ws_accept_for(ws.key, accept);
	crowd_buf_init(&w);
	char head[256];
	int n = snprintf(head, sizeof head,
	                 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	                 "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: crowd.v1\r\n\r\n",
	                 accept);
	crowd_buf_append(&w, head, (size_t)n);
	crowd_buf_init(&b);
	server_stream(&b, true);
	crowd_frame_splitter sp;
	crowd_frame_splitter_init(&sp, 1u << 20);
	crowd_frame_splitter_push(&sp, b.data, b.len);
	const uint8_t *f;
	size_t len;
	while (crowd_frame_splitter_next(&sp, &f, &len) == CROWD_FRAME_READY) {
		uint8_t fh[4] = {0x82, 0, 0, 0};
		size_t hl = 2;
		if (len < 126) {
			fh[1] = (uint8_t)len;
		} else {
			fh[1] = 126;
			fh[2] = (uint8_t)(len >> 8);
			fh[3] = (uint8_t)len;
			hl = 4;
		}
		crowd_buf_append(&w, fh, hl);
		crowd_buf_append(&w, f, len);
	}
	const uint8_t ping[] = {0x89, 0x02, 'h', 'i'}, close_frame[] = {0x88, 0x02, 0x03, 0xe8};
	crowd_buf_append(&w, ping, sizeof ping);
	crowd_buf_append(&w, close_frame, sizeof close_frame);
	put("fuzz_load", "server_ws", 63, true, w.data, w.len);
	put("fuzz_load", "server_ws_small_reads", 4, true, w.data, w.len);
	crowd_frame_splitter_free(&sp);
	crowd_buf_free(&b);
	crowd_buf_free(&w);
	crowd_buf_free(&req);
	load_ws_free(&ws);
	return 0;
}
