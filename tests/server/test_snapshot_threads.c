/* test_snapshot_threads.c — snapshots of area subscribers over many ticks of a
 * moving world with spawns and removals: each client's decoded view equals the
 * table's agents in its area at every tick, and the bytes every client receives
 * are the same whether one thread encodes (workers 1) or the loop thread and the
 * helper do (workers 2, which also hashes on the helper), and whether the
 * table's rows are filled by two threads or also by the world's pool (workers 4). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server.h"

enum { CLIENTS = 12, TICKS = 30, AGENTS = 9000 }; /* the table in 3 chunks of rows */

typedef struct recording_conn {
	crowd_buf bytes; /* everything sent to it */
	crowd_view view;
	crowd_obstacle_set obstacles;
	int snapshots;
	session *s;
	float area[4];
} recording_conn;

static int recording_send(void *c_, const uint8_t *data, size_t len) {
	recording_conn *c = c_;
	crowd_v1_ServerMessage m;
	assert_true(crowd_decode_server_message(data, len, &m, &c->view, &c->obstacles, NULL));
	if (m.which_msg == crowd_v1_ServerMessage_snapshot_tag) c->snapshots++;
	if (m.which_msg == crowd_v1_ServerMessage_ack_tag) free(m.msg.ack.ids);
	assert_true(crowd_buf_append(&c->bytes, data, len));
	return 0;
}
static size_t recording_pending(void *c) {
	(void)c;
	return 0;
}
static void recording_close(void *c, bool flush) {
	(void)c;
	(void)flush;
}
static const transport_ops recording_ops = {.kind = TRANSPORT_WS, .send = recording_send,
                                            .pending_bytes = recording_pending, .close = recording_close};

static uint64_t rng_state;
static float uniform(float lo, float hi) {
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return lo + (hi - lo) * (float)((rng_state >> 20) % 100001) / 100000.0f;
}

static void deliver(recording_conn *c, const crowd_v1_ClientMessage *m) {
	crowd_buf b;
	crowd_buf_init(&b);
	assert_true(crowd_encode_client_message(m, false, &b));
	session_on_message(c->s, b.data, b.len);
	crowd_buf_free(&b);
}

/* Runs the scenario with `workers`; fills conns (caller frees). */
static void run(uint32_t workers, recording_conn *conns) {
	rng_state = 0x2545f4914f6cdd1dull;
	server_config cfg;
	server srv;
	log_set_level(LOG_WARN);
	config_init(&cfg);
	cfg.workers = workers;
	cfg.max_connections = CLIENTS + 1;
	cfg.request_burst = 1000;
	cfg.keyframe_interval = 7;
	assert_int_equal(server_init(&srv, uv_default_loop(), &cfg), 0);

	orca_agent_def def = orca_default_agent_def();
	def.steer_mode = ORCA_STEER_TARGET;
	orca_agent_id ids[AGENTS];
	for (int i = 0; i < AGENTS; i++) {
		def.position = (orca_vec2){uniform(-150, 150), uniform(-150, 150)};
		def.target = (orca_vec2){uniform(-150, 150), uniform(-150, 150)};
		def.user_data = (uint32_t)i % 5;
		assert_int_equal(orca_agent_add(srv.world->sim->world, &def, &ids[i]), ORCA_OK);
	}
	for (int i = 0; i < CLIENTS; i++) {
		recording_conn *c = &conns[i];
		memset(c, 0, sizeof *c);
		crowd_buf_init(&c->bytes);
		crowd_view_init(&c->view);
		crowd_obstacle_set_init(&c->obstacles);
		c->s = session_open(&srv.host, &recording_ops, c, "test");
		assert_non_null(c->s);
		crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
		m.request_id = 1;
		m.which_msg = crowd_v1_ClientMessage_hello_tag;
		m.msg.hello.protocol_major = 1;
		strcpy(m.msg.hello.client_name, "unit");
		deliver(c, &m);
		float x = uniform(-160, 100), y = uniform(-160, 100), w = uniform(0, 60), h = uniform(0, 60);
		c->area[0] = x, c->area[1] = y, c->area[2] = x + w, c->area[3] = y + h;
		m = (crowd_v1_ClientMessage)crowd_v1_ClientMessage_init_zero;
		m.request_id = 2;
		m.which_msg = crowd_v1_ClientMessage_subscribe_tag;
		m.msg.subscribe.has_area = true;
		m.msg.subscribe.area = (crowd_v1_Rect){c->area[0], c->area[1], c->area[2], c->area[3]};
		m.msg.subscribe.divisor = (uint32_t)(i % 3) + 1;
		deliver(c, &m);
	}
	for (int tick = 1; tick <= TICKS; tick++) {
		/* some leave, some arrive (reusing slots: ids stop ascending with slots) */
		for (int k = 0; k < 20; k++) {
			int i = (tick * 37 + k * 101) % AGENTS;
			assert_int_equal(orca_agent_remove(srv.world->sim->world, ids[i]), ORCA_OK);
			def.position = (orca_vec2){uniform(-150, 150), uniform(-150, 150)};
			assert_int_equal(orca_agent_add(srv.world->sim->world, &def, &ids[i]), ORCA_OK);
		}
		assert_int_equal(orca_world_step(srv.world->sim->world, 0.25f), ORCA_OK);
		srv.status.tick = (uint64_t)tick;
		srv.status.agents = orca_world_agent_count(srv.world->sim->world);
		uint64_t hash = 0;
		assert_true(snapshots_build_table(srv.world, &hash));
		assert_true(hash == orca_world_state_hash(srv.world->sim->world));
		srv.status.state_hash = hash;
		snapshots_send(srv.world);
		/* every due client now sees exactly the table's agents in its area */
		for (int i = 0; i < CLIENTS; i++) {
			recording_conn *c = &conns[i];
			if ((uint64_t)tick % c->s->divisor != 0) continue;
			uint32_t n = 0;
			for (uint32_t a = 0; a < srv.world->table.count; a++) {
				float x = srv.world->table.x[a], y = srv.world->table.y[a];
				if (!(x >= c->area[0] && x <= c->area[2] && y >= c->area[1] && y <= c->area[3])) continue;
				assert_true(n < c->view.count);
				assert_memory_equal(&c->view.agents[n], &srv.world->table.agents[a], sizeof(crowd_agent_q));
				n++;
			}
			assert_int_equal(n, c->view.count);
		}
	}
	for (int i = 0; i < CLIENTS; i++) {
		assert_true(conns[i].snapshots >= TICKS / 3);
		session_on_closed(conns[i].s, DISCONNECT_PEER_CLOSED);
	}
	server_destroy(&srv);
	config_free(&cfg);
}

static void free_conns(recording_conn *conns) {
	for (int i = 0; i < CLIENTS; i++) {
		crowd_buf_free(&conns[i].bytes);
		crowd_view_free(&conns[i].view);
		crowd_obstacle_set_free(&conns[i].obstacles);
	}
}

static void test_worker_counts_agree(void **state) {
	(void)state;
	static recording_conn one[CLIENTS], two[CLIENTS], four[CLIENTS];
	run(1, one);
	run(2, two);
	run(4, four); /* the rows filled on the world's pool too */
	for (int i = 0; i < CLIENTS; i++) {
		assert_true(one[i].bytes.len > 0);
		assert_int_equal(one[i].bytes.len, two[i].bytes.len);
		assert_memory_equal(one[i].bytes.data, two[i].bytes.data, one[i].bytes.len);
		assert_int_equal(one[i].bytes.len, four[i].bytes.len);
		assert_memory_equal(one[i].bytes.data, four[i].bytes.data, one[i].bytes.len);
	}
	free_conns(one);
	free_conns(two);
	free_conns(four);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_worker_counts_agree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
