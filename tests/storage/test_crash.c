/* test_crash.c — no acknowledged command is ever lost (--fsync always).
 *
 * 20 times on one data dir: start crowd-server (a small demo crowd, so every
 * tick changes the world), let three clients spawn agents, retarget them and
 * add obstacles, then SIGKILL the server at a random moment with requests in
 * flight. Every Ack that reached a client before the kill is an acknowledged
 * change. After each restart:
 *   - the server printed `recovered tick T agents A state_hash H`, with T at
 *     least the last tick any client saw, less one (that tick's commands are
 *     durable before its snapshot goes out, its hash record one tick later);
 *   - every acknowledged agent and obstacle is in the first snapshot;
 * and at the end crowd-replay re-simulates the whole history with every
 * recorded hash verified, and every snapshot hash any client ever saw, and
 * every recovered hash, equals the replayed hash of that tick.
 * Navigation is on (the default: spawned agents and new targets navigate, and
 * obstacles rebuild the navigation mesh), so the checkpoints carry its state
 * and recovery and replay must restore it exactly; then the same 10 times
 * with --navigation=false.
 * Waits are for events (acks, snapshots, exit); the guards only stop a hang. */
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#define RUNS 20
#define PLAYERS 3
#define MAX_IDS 4096

typedef struct seen_hash {
	uint64_t tick, hash;
} seen_hash;

static seen_hash *seen;
static size_t seen_count, seen_cap;

static void see(uint64_t tick, uint64_t hash) {
	if (seen_count == seen_cap) {
		seen_cap = seen_cap ? seen_cap * 2 : 4096;
		seen = realloc(seen, sizeof *seen * seen_cap);
		assert_non_null(seen);
	}
	seen[seen_count++] = (seen_hash){tick, hash};
}

typedef enum req_kind { REQ_NONE, REQ_SPAWN, REQ_TARGETS, REQ_OBSTACLE } req_kind;

typedef struct player {
	crowd_client *c;
	bool closed, welcomed;
	uint64_t snapshots, max_tick;
	int outstanding;
	req_kind kinds[65536]; /* by request id (ids stay small here) */
} player;

/* What was acknowledged, over every run. */
static uint32_t acked_agents[MAX_IDS], acked_agent_count;
static uint32_t acked_obstacles[MAX_IDS], acked_obstacle_count;
static uint64_t acks_this_run;

static uint32_t rng = 0x1234567u;
static uint32_t rnd(void) {
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}
static float rndf(float lo, float hi) { return lo + (hi - lo) * (float)(rnd() >> 8) / (float)(1u << 24); }

static void on_welcome(void *user, const crowd_v1_Welcome *w) {
	(void)w;
	((player *)user)->welcomed = true;
}

static void on_ack(void *user, uint32_t request_id, const uint32_t *ids, size_t count) {
	player *p = user;
	req_kind k = request_id < 65536 ? p->kinds[request_id] : REQ_NONE;
	if (k == REQ_NONE) return; /* hello, subscribe */
	p->outstanding--;
	acks_this_run++;
	for (size_t i = 0; i < count; i++) {
		if (k == REQ_SPAWN && acked_agent_count < MAX_IDS) acked_agents[acked_agent_count++] = ids[i];
		if (k == REQ_OBSTACLE && acked_obstacle_count < MAX_IDS) acked_obstacles[acked_obstacle_count++] = ids[i];
	}
}

static void on_error(void *user, const crowd_v1_Error *e) {
	player *p = user;
	if (e->request_id && e->request_id < 65536 && p->kinds[e->request_id] != REQ_NONE) p->outstanding--;
}

static void on_snapshot(void *user, const crowd_client_snapshot *s) {
	player *p = user;
	p->snapshots++;
	if (s->tick > p->max_tick) p->max_tick = s->tick;
	see(s->tick, s->state_hash);
}

static void on_closed(void *user, int status) {
	(void)status;
	((player *)user)->closed = true;
}

static player *player_open(uint16_t port, int n) {
	player *p = calloc(1, sizeof *p);
	assert_non_null(p);
	crowd_client_options o = crowd_client_default_options();
	o.callbacks.on_welcome = on_welcome;
	o.callbacks.on_ack = on_ack;
	o.callbacks.on_error = on_error;
	o.callbacks.on_snapshot = on_snapshot;
	o.callbacks.on_closed = on_closed;
	o.user = p;
	assert_int_equal(crowd_client_connect("127.0.0.1", port, &o, &p->c), 0);
	char name[16];
	snprintf(name, sizeof name, "crash%d", n);
	assert_true(crowd_client_hello(p->c, NULL, name, true) > 0);
	assert_true(crowd_client_subscribe(p->c, NULL, 1) > 0);
	return p;
}

static void pump(player **ps, int n, int timeout_ms) {
	for (int i = 0; i < n; i++)
		if (!ps[i]->closed) crowd_client_poll(ps[i]->c, timeout_ms);
}

/* One random world change from this player. */
static void send_random(player *p) {
	const uint32_t r = rnd() % 100;
	int64_t rid;
	req_kind k;
	if (r < 40 || acked_agent_count == 0) {
		crowd_v1_AgentSpec specs[3];
		uint32_t n = 1 + rnd() % 3;
		for (uint32_t i = 0; i < n; i++) {
			specs[i] = (crowd_v1_AgentSpec)crowd_v1_AgentSpec_init_zero;
			specs[i].has_position = true;
			specs[i].position = (crowd_v1_Vec2){rndf(-90, 90), rndf(-90, 90)};
			specs[i].has_target = true;
			specs[i].target = (crowd_v1_Vec2){rndf(-90, 90), rndf(-90, 90)};
			specs[i].has_radius = true;
			specs[i].radius = 0.5f;
		}
		rid = crowd_client_spawn(p->c, specs, n);
		k = REQ_SPAWN;
	} else if (r < 85) {
		uint32_t ids[5];
		float x[5], y[5];
		uint32_t n = 1 + rnd() % 5;
		for (uint32_t i = 0; i < n; i++) {
			ids[i] = acked_agents[rnd() % acked_agent_count];
			x[i] = rndf(-90, 90);
			y[i] = rndf(-90, 90);
		}
		rid = crowd_client_set_targets(p->c, ids, n, x, y, n);
		k = REQ_TARGETS;
	} else {
		float x0 = rndf(-150, 150), y0 = rndf(-150, 150);
		float x[2] = {x0, x0 + rndf(1, 5)}, y[2] = {y0, y0 + rndf(1, 5)};
		rid = crowd_client_add_obstacle(p->c, x, y, 2);
		k = REQ_OBSTACLE;
	}
	if (rid > 0 && rid < 65536) {
		p->kinds[rid] = k;
		p->outstanding++;
	}
}

/* The `recovered tick T agents A state_hash H` line of a start, if any. */
static bool recovered_line(const server_proc *s, uint64_t *tick, uint32_t *agents, uint64_t *hash) {
	FILE *f = fopen(s->out_path, "r");
	if (!f) return false;
	char line[256];
	bool found = false;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "recovered tick %" SCNu64 " agents %u state_hash 0x%" SCNx64, tick, agents, hash) == 3) {
			found = true;
			break;
		}
	fclose(f);
	return found;
}

static bool snapshot_has(const crowd_client_snapshot *s, uint32_t id) {
	uint32_t lo = 0, hi = s->count; /* ascending ids */
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (s->id[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->count && s->id[lo] == id;
}

static bool has_obstacle(const crowd_client *c, uint32_t id) {
	for (uint32_t i = 0; i < crowd_client_obstacle_count(c); i++) {
		uint32_t oid, n;
		const float *x, *y;
		if (crowd_client_obstacle(c, i, &oid, &x, &y, &n) && oid == id) return true;
	}
	return false;
}

typedef struct recovery {
	uint64_t tick, hash;
} recovery;

static void run_crash_test(bool navigation, int runs) {
	acked_agent_count = acked_obstacle_count = 0;
	seen_count = 0;
	rng = 0x1234567u;
	char dir[] = "/tmp/crowd-crash-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char data[128];
	snprintf(data, sizeof data, "%s/data", dir);
	const char *args[] = {"--data-dir", data, "--fsync", "always", "--checkpoint-every", "25", "--keep-checkpoints",
	                      "1000", "--demo", "--demo-agents", "40", "--tick-rate", "60", "--log-level", "warn",
	                      navigation ? NULL : "--navigation=false", NULL};
	recovery recovered[RUNS + 1];
	uint64_t last_seen_tick = 0;
	fprintf(stderr, "crash test: data dir %s, seed 0x%x\n", data, rng);
	for (int run = 0; run <= runs; run++) {
		server_proc srv;
		assert_true(server_start(&srv, args));
		uint64_t rt = 0, rh = 0;
		uint32_t ra = 0;
		if (run > 0) {
			if (!recovered_line(&srv, &rt, &ra, &rh)) server_dump_output(&srv);
			assert_true(recovered_line(&srv, &rt, &ra, &rh));
			/* every tick a client saw is durable, but for its hash record */
			if (rt + 1 < last_seen_tick) {
				fprintf(stderr, "run %d: recovered tick %" PRIu64 ", clients saw tick %" PRIu64 "\n", run, rt,
				        last_seen_tick);
				server_dump_output(&srv);
			}
			assert_true(rt + 1 >= last_seen_tick);
			recovered[run] = (recovery){rt, rh};
		}
		player *ps[PLAYERS];
		for (int i = 0; i < PLAYERS; i++) ps[i] = player_open(srv.port, i);
		/* the first snapshot of every player: everything acknowledged is there */
		uint64_t guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u;
		for (int i = 0; i < PLAYERS; i++) {
			while (ps[i]->snapshots == 0 && !ps[i]->closed && crowd_client_now_us() < guard)
				crowd_client_poll(ps[i]->c, 20);
			const crowd_client_snapshot *s = crowd_client_latest_snapshot(ps[i]->c);
			assert_non_null(s);
			for (uint32_t k = 0; k < acked_agent_count; k++) {
				if (!snapshot_has(s, acked_agents[k]))
					fprintf(stderr, "run %d: acknowledged agent %u missing at tick %" PRIu64 "\n", run,
					        acked_agents[k], s->tick);
				assert_true(snapshot_has(s, acked_agents[k]));
			}
			for (uint32_t k = 0; k < acked_obstacle_count; k++) assert_true(has_obstacle(ps[i]->c, acked_obstacles[k]));
		}
		if (run == runs) { /* the last start only checks */
			for (int i = 0; i < PLAYERS; i++) {
				crowd_client_close(ps[i]->c, 0);
				free(ps[i]);
			}
			assert_int_equal(server_signal_and_wait(&srv, SIGTERM) >= 0, 1);
			server_stop(&srv);
			break;
		}
		/* commands until a random number of them were acknowledged */
		acks_this_run = 0;
		const uint64_t kill_after = 5 + rnd() % 150;
		guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u;
		while (acks_this_run < kill_after && crowd_client_now_us() < guard) {
			for (int i = 0; i < PLAYERS; i++)
				if (ps[i]->outstanding < 4) send_random(ps[i]);
			pump(ps, PLAYERS, 2);
		}
		assert_true(acks_this_run >= kill_after);
		/* more in flight, then the kill */
		for (int i = 0; i < PLAYERS; i++)
			for (int k = 0; k < 3; k++) send_random(ps[i]);
		pump(ps, PLAYERS, 0);
		assert_true(server_signal_and_wait(&srv, SIGKILL) >= 0);
		/* what the server sent before it died still counts */
		guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u;
		for (int i = 0; i < PLAYERS; i++)
			while (!ps[i]->closed && crowd_client_now_us() < guard) crowd_client_poll(ps[i]->c, 20);
		last_seen_tick = 0;
		for (int i = 0; i < PLAYERS; i++) {
			if (ps[i]->max_tick > last_seen_tick) last_seen_tick = ps[i]->max_tick;
			crowd_client_close(ps[i]->c, 0);
			free(ps[i]);
		}
		server_stop(&srv);
		fprintf(stderr, "run %d: %" PRIu64 " acks, last tick seen %" PRIu64 ", %u agents and %u obstacles acknowledged\n",
		        run, acks_this_run, last_seen_tick, acked_agent_count, acked_obstacle_count);
	}

	/* the whole history, re-simulated with every recorded hash verified */
	char replay_args[512];
	snprintf(replay_args, sizeof replay_args, "%s --verify --hashes", data);
	const replay_hashes replayed = harness_replay_hashes(CROWD_REPLAY_PATH, replay_args, 1u << 20);
	assert_int_equal(replayed.status, 0); /* --verify: exit 0 only when every recorded hash matched */
	uint64_t *hist = replayed.hashes;
	const uint64_t max_tick = replayed.last < (1u << 20) ? replayed.last : (1u << 20) - 1u;
	size_t compared = 0;
	for (size_t i = 0; i < seen_count; i++) {
		if (seen[i].tick > max_tick || seen[i].tick == 0 || !hist[seen[i].tick]) continue;
		if (hist[seen[i].tick] != seen[i].hash)
			fprintf(stderr, "tick %" PRIu64 ": a client saw 0x%016" PRIx64 ", the history says 0x%016" PRIx64 "\n",
			        seen[i].tick, seen[i].hash, hist[seen[i].tick]);
		assert_int_equal(hist[seen[i].tick], seen[i].hash);
		compared++;
	}
	for (int run = 1; run <= runs; run++)
		if (recovered[run].tick > 0 && recovered[run].tick <= max_tick)
			assert_int_equal(hist[recovered[run].tick], recovered[run].hash);
	fprintf(stderr, "crash test: %zu snapshot hashes compared with the replayed history (ticks 1..%" PRIu64 ")\n",
	        compared, max_tick);
	assert_true(compared > 0);
	free(hist);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_sigkill_loses_no_acknowledged_change(void **state) {
	(void)state;
	run_crash_test(true, RUNS);
}

static void test_sigkill_without_navigation(void **state) {
	(void)state;
	run_crash_test(false, 10);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sigkill_loses_no_acknowledged_change),
	    cmocka_unit_test(test_sigkill_without_navigation),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	free(seen);
	return failed;
}
