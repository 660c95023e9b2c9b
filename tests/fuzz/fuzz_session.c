/* fuzz_session.c — a TCP client's byte stream through the session layer over a
 * fake transport: frames, the pre-decode batch check, Hello and tokens,
 * rights, rate limit, validation, and the commands applied at the tick. Every
 * answer the server queues must itself decode. Input: byte 0 = chunk seed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "navigation.h"
#include "server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fake_conn {
	session *s;
	bool closed;
	crowd_frame_splitter out; /* what the server sent, framed */
} fake_conn;

static int fake_send(void *c_, const uint8_t *data, size_t len)
{
	fake_conn *c = c_;
	crowd_frame_splitter_push(&c->out, data, len);
	return 0;
}
static size_t fake_pending(void *c) { return crowd_frame_splitter_pending(&((fake_conn *)c)->out); }
static void fake_close(void *c_, bool flush)
{
	(void)flush;
	((fake_conn *)c_)->closed = true;
}
static void fake_discard(void *c_)
{
	fake_conn *c = c_;
	crowd_frame_splitter_free(&c->out); /* what was queued is dropped, unsent */
	crowd_frame_splitter_init(&c->out, 64u << 20);
}
static const transport_ops fake_ops = {
    .kind = TRANSPORT_TCP,
    .length_prefixed = true,
    .send = fake_send,
    .pending_bytes = fake_pending,
    .close = fake_close,
    .discard_pending = fake_discard,
};

static server_config cfg;
static server srv;

static void setup_once(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	log_set_level(LOG_OFF);
	config_init(&cfg);
	char err[128];
	config_set(&cfg, "token", "v=viewer", err, sizeof err);
	config_set(&cfg, "token", "p=player", err, sizeof err);
	config_set(&cfg, "token", "a=admin", err, sizeof err);
	cfg.request_burst = 64;
	if (server_init(&srv, uv_default_loop(), &cfg) != 0)
		abort();
}

/* Everything the server sent must decode as a ServerMessage. */
static void check_output(fake_conn *c)
{
	crowd_view view;
	crowd_obstacle_set obst;
	crowd_view_init(&view);
	crowd_obstacle_set_init(&obst);
	const uint8_t *frame;
	size_t len;
	while (crowd_frame_splitter_next(&c->out, &frame, &len) == CROWD_FRAME_READY) {
		crowd_v1_ServerMessage m;
		memset(&m, 0, sizeof m);
		if (!crowd_decode_server_message(frame, len, &m, &view, &obst, NULL))
			__builtin_trap();
		crowd_server_message_release(&m);
	}
	crowd_view_free(&view);
	crowd_obstacle_set_free(&obst);
}

/* What an input leaves in the world (obstacles, agents kept on disconnect)
 * goes, so every input meets the same empty world: kept, thousands of
 * inputs' obstacles made each add slower and the run 8x slower, and the
 * navigation state of removed agents filled 2 GB by 4 million inputs. */
static void empty_world(void)
{
	static orca_agent_id agents[4096];
	static orca_obstacle_id obstacles[4096];
	uint32_t n;
	while ((n = orca_world_agent_ids(srv.world->sim->world, agents, 4096)) > 0)
		for (uint32_t i = 0; i < n && i < 4096; ++i)
			orca_agent_remove(srv.world->sim->world, agents[i]);
	while ((n = orca_world_obstacle_ids(srv.world->sim->world, obstacles, 4096)) > 0)
		for (uint32_t i = 0; i < n && i < 4096; ++i)
			orca_obstacle_remove(srv.world->sim->world, obstacles[i]);
	/* navigation forgets removed agents and applies obstacle changes at a
	 * tick, which nothing else here runs (recreating it builds every tile:
	 * seconds under ASan) */
	if (srv.world->sim->nav)
		navigation_before_step(srv.world->sim->nav, 1.0f / 30.0f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setup_once();
	if (size < 1)
		return 0;
	const size_t chunk = 1 + data[0] % 128u;
	data++;
	size--;
	fake_conn c;
	memset(&c, 0, sizeof c);
	crowd_frame_splitter_init(&c.out, 64u << 20);
	c.s = session_open(&srv.host, &fake_ops, &c, "fuzz");
	crowd_frame_splitter in;
	crowd_frame_splitter_init(&in, cfg.max_frame_bytes);
	for (size_t off = 0; c.s && !c.closed && off < size; off += chunk) {
		const size_t n = size - off < chunk ? size - off : chunk;
		crowd_frame_splitter_push(&in, data + off, n);
		const uint8_t *frame;
		size_t len;
		crowd_frame_result r;
		while (!c.closed && (r = crowd_frame_splitter_next(&in, &frame, &len)) == CROWD_FRAME_READY)
			session_on_message(c.s, frame, len);
		if (!c.closed && r != CROWD_FRAME_NEED_MORE)
			session_on_transport_error(c.s, crowd_v1_ErrorCode_ERROR_FRAME_TOO_LARGE, DISCONNECT_FRAME_TOO_LARGE,
			                           "length prefix over the frame limit");
		server_apply_commands(&srv);
	}
	crowd_frame_splitter_free(&in);
	if (c.s)
		session_on_closed(c.s, DISCONNECT_PEER_CLOSED);
	server_apply_commands(&srv); /* removes what it spawned */
	empty_world();
	check_output(&c);
	crowd_frame_splitter_free(&c.out);
	return 0;
}
