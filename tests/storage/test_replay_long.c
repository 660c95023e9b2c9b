/* test_replay_long.c — replay equals the live run for 10,000 ticks.
 *
 * crowd-server runs the demo crowd (100 agents) at 1,000 ticks a second with
 * --fsync no (durability is not the point here), while a client spawns,
 * retargets, sets velocities, removes agents and adds and removes obstacles
 * at random; a second client connects and leaves now and then, its agents
 * removed with it (DropOwners). Once the live world passed tick 10,000 the
 * server is stopped and crowd-replay re-simulates the recording from tick 0
 * with every recorded hash verified; every snapshot hash the client saw
 * equals the replayed hash of its tick. */
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

#define TICKS 10000u
#define MAX_TICKS 200000u

static uint64_t *seen_hash; /* by tick, as the client saw it (0: not seen) */
static uint64_t last_tick;
static uint32_t agents[256], agent_count;
static uint32_t obstacles[64], obstacle_count;
static int outstanding;
static int spawn_rid = -1, obstacle_rid = -1;

static uint32_t rng = 0xBADC0DEu;
static uint32_t rnd(void) {
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}
static float rndf(float lo, float hi) { return lo + (hi - lo) * (float)(rnd() >> 8) / (float)(1u << 24); }

static void on_ack(void *user, uint32_t rid, const uint32_t *ids, size_t count) {
	(void)user;
	if (rid <= 2) return; /* hello, subscribe */
	outstanding--;
	if ((int)rid == spawn_rid)
		for (size_t i = 0; i < count && agent_count < 256; i++) agents[agent_count++] = ids[i];
	if ((int)rid == obstacle_rid && count && obstacle_count < 64) obstacles[obstacle_count++] = ids[0];
}

static void on_error(void *user, const crowd_v1_Error *e) {
	(void)user;
	if (e->request_id > 2) outstanding--;
}

static void on_snapshot(void *user, const crowd_client_snapshot *s) {
	(void)user;
	if (s->tick < MAX_TICKS) seen_hash[s->tick] = s->state_hash;
	if (s->tick > last_tick) last_tick = s->tick;
}

static void random_command(crowd_client *c) {
	uint32_t r = rnd() % 100;
	if (r < 25 || agent_count < 4) {
		crowd_v1_AgentSpec spec[2];
		for (int i = 0; i < 2; i++) {
			spec[i] = (crowd_v1_AgentSpec)crowd_v1_AgentSpec_init_zero;
			spec[i].has_position = spec[i].has_target = true;
			spec[i].position = (crowd_v1_Vec2){rndf(-60, 60), rndf(-60, 60)};
			spec[i].target = (crowd_v1_Vec2){rndf(-60, 60), rndf(-60, 60)};
		}
		spawn_rid = (int)crowd_client_spawn(c, spec, agent_count < 120 ? 2 : 0);
	} else if (r < 55) {
		uint32_t id = agents[rnd() % agent_count];
		float x = rndf(-60, 60), y = rndf(-60, 60);
		crowd_client_set_targets(c, &id, 1, &x, &y, 1);
	} else if (r < 70) {
		uint32_t id = agents[rnd() % agent_count];
		float vx = rndf(-1, 1), vy = rndf(-1, 1);
		crowd_client_set_velocities(c, &id, 1, &vx, &vy, 1);
	} else if (r < 80) {
		uint32_t k = rnd() % agent_count, id = agents[k];
		agents[k] = agents[--agent_count];
		crowd_client_remove_agents(c, &id, 1);
	} else if ((r < 92 && obstacle_count < 16) || obstacle_count == 0) {
		float x0 = rndf(-80, 80), y0 = rndf(-80, 80);
		float x[3] = {x0, x0 + 4, x0 + 2}, y[3] = {y0, y0, y0 + 3};
		obstacle_rid = (int)crowd_client_add_obstacle(c, x, y, 3);
	} else {
		uint32_t k = rnd() % obstacle_count, id = obstacles[k];
		obstacles[k] = obstacles[--obstacle_count];
		crowd_client_remove_obstacle(c, id);
	}
	outstanding++;
}

static void test_replay_equals_live(void **state) {
	(void)state;
	seen_hash = calloc(MAX_TICKS, sizeof *seen_hash);
	char dir[] = "/tmp/crowd-replay-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char data[128];
	snprintf(data, sizeof data, "%s/data", dir);
	const char *args[] = {"--data-dir", data, "--fsync", "no", "--checkpoint-every", "2500", "--keep-checkpoints",
	                      "100", "--demo", "--demo-agents", "100", "--tick-rate", "1000", "--log-level", "warn",
	                      NULL}; /* navigation on, the default: replay must equal the live run all the same */
	server_proc srv;
	assert_true(server_start(&srv, args));
	crowd_client_options o = crowd_client_default_options();
	o.callbacks.on_ack = on_ack;
	o.callbacks.on_error = on_error;
	o.callbacks.on_snapshot = on_snapshot;
	crowd_client *c;
	assert_int_equal(crowd_client_connect("127.0.0.1", srv.port, &o, &c), 0);
	assert_true(crowd_client_hello(c, NULL, "replayer", true) > 0);
	assert_true(crowd_client_subscribe(c, NULL, 7) > 0);
	crowd_client *guest = NULL;
	uint64_t guest_until = 0;
	uint64_t guard = crowd_client_now_us() + 20ull * HARNESS_GUARD_MS * 1000u;
	while (last_tick < TICKS && crowd_client_now_us() < guard) {
		if (outstanding < 1) random_command(c);
		crowd_client_poll(c, 1);
		/* a guest that spawns and leaves: its agents go with it */
		if (!guest && rnd() % 500 == 0) {
			crowd_client_options g = crowd_client_default_options();
			if (crowd_client_connect("127.0.0.1", srv.port, &g, &guest) == 0) {
				crowd_client_hello(guest, NULL, "guest", false);
				crowd_v1_AgentSpec spec = crowd_v1_AgentSpec_init_zero;
				spec.has_position = true;
				spec.position = (crowd_v1_Vec2){rndf(-30, 30), rndf(-30, 30)};
				crowd_client_spawn(guest, &spec, 1);
				guest_until = last_tick + 50;
			}
		}
		if (guest) {
			crowd_client_poll(guest, 0);
			if (last_tick >= guest_until) {
				crowd_client_close(guest, 100);
				guest = NULL;
			}
		}
	}
	if (guest) crowd_client_close(guest, 0);
	crowd_client_close(c, 0);
	assert_true(last_tick >= TICKS);
	assert_true(server_signal_and_wait(&srv, SIGTERM) >= 0);
	server_stop(&srv);

	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s --verify --hashes", data);
	const replay_hashes r = harness_replay_hashes(CROWD_REPLAY_PATH, cmd, MAX_TICKS);
	assert_int_equal(r.status, 0);
	const uint64_t replayed = r.last < MAX_TICKS ? r.last : MAX_TICKS - 1u;
	uint64_t compared = 0;
	for (uint64_t t = 0; t <= replayed; t++)
		if (seen_hash[t] && r.hashes[t]) {
			if (seen_hash[t] != r.hashes[t])
				fprintf(stderr, "tick %" PRIu64 ": live 0x%016" PRIx64 ", replay 0x%016" PRIx64 "\n", t,
				        seen_hash[t], r.hashes[t]);
			assert_int_equal(seen_hash[t], r.hashes[t]);
			compared++;
		}
	free(r.hashes);
	fprintf(stderr, "replayed %" PRIu64 " ticks; %" PRIu64 " live snapshot hashes compared\n", replayed, compared);
	assert_true(replayed >= TICKS);
	assert_true(compared > TICKS / 7 / 2);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	free(seen_hash);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_replay_equals_live),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
