/* tick_parts_bench — the server's own parts of a tick after the step, without
 * sockets or a second process: the world table with the state hash
 * (snapshots_build_table, on the step's thread and the snapshot helper) and
 * the area snapshots (snapshots_send, on the loop thread and the helper), for
 * a crowd like server_load.py's (N agents on a jittered grid, spacing 4,
 * walking to random targets; C subscribers, each a window of about 1,000
 * agents, snapshot every 2nd tick). Prints the shortest and the median wall
 * time of each part over the ticks (the shortest is the one other work on a
 * shared machine disturbed least), and a hash of every byte sent and of the
 * state hashes, which must not change with the code's speed. A benchmark,
 * never a pass/fail test. With `overlap` the snapshots go as the server's
 * --snapshot-overlap=true sends them (snapshots_start: encoded on libuv's
 * thread pool, sent by the loop), timed from the start to the last one sent;
 * without it as =false and, when the next ticks leave room, =auto (the
 * default) sends them: encoded by the loop thread and the helper.
 *
 *   tick_parts_bench [agents 50000] [clients 200] [ticks 40] [workers 2] [overlap] */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server.h"

typedef struct sink_conn {
	uint64_t hash; /* FNV-1a of every byte sent to it */
	uint64_t bytes;
	session *s;
} sink_conn;

static int sink_send(void *c_, const uint8_t *data, size_t len) {
	sink_conn *c = c_;
	uint64_t h = c->hash;
	for (size_t i = 0; i < len; i++) h = (h ^ data[i]) * 1099511628211ull;
	c->hash = h;
	c->bytes += len;
	return 0;
}
static size_t sink_pending(void *c) {
	(void)c;
	return 0;
}
static void sink_close(void *c, bool flush) {
	(void)c;
	(void)flush;
}
static const transport_ops sink_ops = {
    .kind = TRANSPORT_TCP, .send = sink_send, .pending_bytes = sink_pending, .close = sink_close};

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static float uniform(float lo, float hi) {
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return lo + (hi - lo) * (float)((rng_state >> 20) % 100001) / 100000.0f;
}

static void deliver(sink_conn *c, const crowd_v1_ClientMessage *m) {
	crowd_buf b;
	crowd_buf_init(&b);
	if (!crowd_encode_client_message(m, false, &b)) abort();
	session_on_message(c->s, b.data, b.len);
	crowd_buf_free(&b);
}

static bool snapshots_out; /* overlap: the tick's last snapshot was sent */
static void on_snapshots_done(room *r) {
	(void)r;
	snapshots_out = true;
}

static int compare_double(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	const uint32_t agents = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 50000;
	const int clients = argc > 2 ? atoi(argv[2]) : 200;
	const int ticks = argc > 3 ? atoi(argv[3]) : 40;
	const uint32_t workers = argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 10) : 2;
	const bool overlap = argc > 5 && strcmp(argv[5], "overlap") == 0;
	if (agents == 0 || clients < 1 || ticks < 1 || workers < 1) return 2;
	const uint32_t side_n = (uint32_t)ceil(sqrt((double)agents));
	const float half = 2.0f * (float)side_n; /* spacing 4 */

	server_config cfg;
	server srv;
	log_set_level(LOG_WARN);
	config_init(&cfg);
	cfg.workers = workers;
	cfg.max_connections = (uint32_t)clients + 1;
	cfg.max_agents = agents + 1000;
	cfg.nav_enabled = false;
	cfg.world_min_x = cfg.world_min_y = -half - 100;
	cfg.world_max_x = cfg.world_max_y = half + 100;
	if (server_init(&srv, uv_default_loop(), &cfg) != 0) return 1;

	orca_agent_def def = orca_default_agent_def();
	def.steer_mode = ORCA_STEER_TARGET;
	for (uint32_t i = 0; i < agents; i++) {
		float x = -half + 4.0f * (float)(i % side_n), y = -half + 4.0f * (float)(i / side_n);
		def.position = (orca_vec2){x + uniform(-1, 1), y + uniform(-1, 1)};
		def.target = (orca_vec2){uniform(-half, half), uniform(-half, half)};
		def.user_data = 1 + i % (uint32_t)clients;
		orca_agent_id id;
		if (orca_agent_add(srv.world->sim->world, &def, &id) != ORCA_OK) return 1;
	}
	sink_conn *conns = calloc((size_t)clients, sizeof *conns);
	const float window = sqrtf(1000.0f * 16.0f);
	for (int i = 0; i < clients; i++) {
		sink_conn *c = &conns[i];
		c->hash = 14695981039346656037ull;
		c->s = session_open(&srv.host, &sink_ops, c, "bench");
		if (!c->s) return 1;
		crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
		m.request_id = 1;
		m.which_msg = crowd_v1_ClientMessage_hello_tag;
		m.msg.hello.protocol_major = 1;
		strcpy(m.msg.hello.client_name, "bench");
		deliver(c, &m);
		float x = uniform(-half, half - window), y = uniform(-half, half - window);
		m = (crowd_v1_ClientMessage)crowd_v1_ClientMessage_init_zero;
		m.request_id = 2;
		m.which_msg = crowd_v1_ClientMessage_subscribe_tag;
		m.msg.subscribe.has_area = true;
		m.msg.subscribe.area = (crowd_v1_Rect){x, y, x + window, y + window};
		m.msg.subscribe.divisor = 2;
		deliver(c, &m);
		srv.status.tick++; /* subscriptions spread over both phases of the divisor */
	}

	double *table_ms = calloc((size_t)ticks, sizeof *table_ms), *snap_ms = calloc((size_t)ticks, sizeof *snap_ms);
	uint64_t hashes = 14695981039346656037ull;
	for (int t = 0; t < ticks; t++) {
		if (orca_world_step(srv.world->sim->world, 0.05f) != ORCA_OK) return 1;
		srv.status.tick = orca_world_step_count(srv.world->sim->world) + (uint64_t)clients;
		srv.status.agents = orca_world_agent_count(srv.world->sim->world);
		uint64_t t0 = uv_hrtime(), hash = 0;
		if (!snapshots_build_table(srv.world, &hash)) return 1;
		uint64_t t1 = uv_hrtime();
		srv.status.state_hash = hash;
		hashes = (hashes ^ hash) * 1099511628211ull;
		if (overlap) {
			snapshots_out = false;
			if (snapshots_start(srv.world, on_snapshots_done))
				while (!snapshots_out) uv_run(uv_default_loop(), UV_RUN_ONCE);
		} else
			snapshots_send(srv.world);
		uint64_t t2 = uv_hrtime();
		table_ms[t] = (double)(t1 - t0) * 1e-6;
		snap_ms[t] = (double)(t2 - t1) * 1e-6;
	}
	uint64_t bytes_hash = 14695981039346656037ull, bytes = 0;
	for (int i = 0; i < clients; i++) {
		bytes_hash = (bytes_hash ^ conns[i].hash) * 1099511628211ull;
		bytes += conns[i].bytes;
	}
	qsort(table_ms, (size_t)ticks, sizeof *table_ms, compare_double);
	qsort(snap_ms, (size_t)ticks, sizeof *snap_ms, compare_double);
	printf("agents %u clients %d ticks %d workers %u%s: table+hash min %.3f median %.3f ms; snapshots min %.3f "
	       "median %.3f ms; %" PRIu64 " bytes sent, bytes hash %016" PRIx64 ", state hashes %016" PRIx64 "\n",
	       agents, clients, ticks, workers, overlap ? " overlap" : "", table_ms[0], table_ms[ticks / 2], snap_ms[0],
	       snap_ms[ticks / 2], bytes, bytes_hash, hashes);
	for (int i = 0; i < clients; i++) session_on_closed(conns[i].s, DISCONNECT_PEER_CLOSED);
	free(conns);
	free(table_ms);
	free(snap_ms);
	server_destroy(&srv);
	config_free(&cfg);
	return 0;
}
