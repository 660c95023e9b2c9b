/* test_damaged_files.c — recovery from damaged data dirs never crashes and
 * lands on the last valid point.
 *
 * A recording is made once (a small demo crowd and a client's commands, a
 * checkpoint every 20 ticks, stopped with SIGTERM) and its history of state
 * hashes taken with crowd-replay. Then, each on a fresh copy: the newest
 * journal truncated at random points, with random bits flipped, with garbage
 * appended; the newest checkpoint bit-flipped or cut in half (recovery falls
 * back to the older checkpoint and replays both segments to the very end);
 * every checkpoint garbage (the server refuses to start, exit status 1, and
 * says why). Every start that recovers prints `recovered tick T ... state_hash
 * H` with H the recorded history's hash of tick T. */
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#define MAX_TICKS 100000

static char root[64];
static char pristine[128];
static uint64_t history[MAX_TICKS];
static uint64_t last_tick;
static uint64_t newest_checkpoint, older_checkpoint;

static uint32_t rng = 0xC0FFEEu;
static uint32_t rnd(void) {
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...) {
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

static bool recovered_line(const char *out, uint64_t *tick, uint64_t *hash) {
	const char *p = out ? strstr(out, "recovered tick ") : NULL;
	uint32_t agents;
	return p && sscanf(p, "recovered tick %" SCNu64 " agents %u state_hash 0x%" SCNx64, tick, &agents, hash) == 3;
}

/* Start on dir; expect recovery to a tick in [lo, hi] with the history's hash there. */
static uint64_t recover_in(const char *dir, uint64_t lo, uint64_t hi) {
	const char *args[] = {"--data-dir", dir, "--log-level", "warn", "--navigation=false", NULL};
	server_proc srv;
	assert_true(server_start(&srv, args));
	char *out = harness_read_file(srv.out_path);
	uint64_t tick = 0, hash = 0;
	bool ok = recovered_line(out, &tick, &hash);
	if (!ok || tick < lo || tick > hi || history[tick] != hash) {
		fprintf(stderr, "recovered tick %" PRIu64 " (want %" PRIu64 "..%" PRIu64 ") hash 0x%016" PRIx64
		                " (history 0x%016" PRIx64 ")\n",
		        tick, lo, hi, hash, tick < MAX_TICKS ? history[tick] : 0);
		server_dump_output(&srv);
	}
	assert_true(ok);
	assert_in_range(tick, lo, hi);
	assert_int_equal(history[tick], hash);
	free(out);
	assert_true(server_signal_and_wait(&srv, SIGTERM) >= 0);
	server_stop(&srv);
	return tick;
}

static void copy_fresh(char *dir, size_t n, const char *name) {
	snprintf(dir, n, "%s/%s", root, name);
	sh("rm -rf %s && cp -r %s %s", dir, pristine, dir);
}

static void journal_path(char *out, size_t n, const char *dir, uint64_t tick) {
	snprintf(out, n, "%s/journal-%020" PRIu64 ".log", dir, tick);
}

static void checkpoint_path(char *out, size_t n, const char *dir, uint64_t tick) {
	snprintf(out, n, "%s/checkpoint-%020" PRIu64 ".ckpt", dir, tick);
}

static off_t file_size(const char *path) {
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

static void flip_bit(const char *path, off_t at, int bit) {
	FILE *f = fopen(path, "r+b");
	assert_non_null(f);
	fseeko(f, at, SEEK_SET);
	int c = fgetc(f);
	fseeko(f, at, SEEK_SET);
	fputc(c ^ (1 << bit), f);
	fclose(f);
}

/* ------------------------------------------------------------------ the recording */

static void on_ack_ids(void *user, uint32_t request_id, const uint32_t *ids, size_t count) {
	(void)request_id;
	uint32_t *last = user;
	if (count) *last = ids[0];
}

static void on_snapshot_tick(void *user, const crowd_client_snapshot *s) {
	(void)user;
	last_tick = s->tick;
}

static int setup(void **state) {
	(void)state;
	snprintf(root, sizeof root, "/tmp/crowd-damage-XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(pristine, sizeof pristine, "%s/pristine", root);
	const char *args[] = {"--data-dir", pristine, "--checkpoint-every", "20", "--keep-checkpoints", "1000",
	                      "--demo", "--demo-agents", "30", "--tick-rate", "60", "--log-level", "warn", "--navigation=false", NULL};
	server_proc srv;
	assert_true(server_start(&srv, args));
	crowd_client_options o = crowd_client_default_options();
	uint32_t last_id = 0;
	o.callbacks.on_ack = on_ack_ids;
	o.callbacks.on_snapshot = on_snapshot_tick;
	o.user = &last_id;
	crowd_client *c;
	assert_int_equal(crowd_client_connect("127.0.0.1", srv.port, &o, &c), 0);
	assert_true(crowd_client_hello(c, NULL, "damage", true) > 0);
	assert_true(crowd_client_subscribe(c, NULL, 1) > 0);
	/* commands every few ticks until tick 90 */
	uint64_t guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u, sent_at = 0;
	while (last_tick < 90 && crowd_client_now_us() < guard) {
		crowd_client_poll(c, 10);
		if (last_tick >= sent_at + 3) {
			sent_at = last_tick;
			crowd_v1_AgentSpec spec = crowd_v1_AgentSpec_init_zero;
			spec.has_position = spec.has_target = true;
			spec.position = (crowd_v1_Vec2){(float)(rnd() % 100) - 50.0f, (float)(rnd() % 100) - 50.0f};
			spec.target = (crowd_v1_Vec2){(float)(rnd() % 100) - 50.0f, (float)(rnd() % 100) - 50.0f};
			crowd_client_spawn(c, &spec, 1);
			if (last_id) {
				float x = (float)(rnd() % 100) - 50.0f, y = 10.0f;
				crowd_client_set_targets(c, &last_id, 1, &x, &y, 1);
			}
			if (sent_at % 12 == 0) {
				float x[3] = {(float)sent_at, (float)sent_at + 3.0f, (float)sent_at},
				      y[3] = {120.0f, 121.0f, 122.0f};
				crowd_client_add_obstacle(c, x, y, 3);
			}
		}
	}
	assert_true(last_tick >= 90);
	crowd_client_close(c, 0);
	assert_true(server_signal_and_wait(&srv, SIGTERM) >= 0);
	server_stop(&srv);

	char replay_args[512];
	snprintf(replay_args, sizeof replay_args, "%s --verify --hashes", pristine);
	replay_hashes r = harness_replay_hashes(CROWD_REPLAY_PATH, replay_args, MAX_TICKS);
	assert_int_equal(r.status, 0);
	memcpy(history, r.hashes, sizeof history);
	last_tick = r.last < MAX_TICKS ? r.last : MAX_TICKS - 1u;
	free(r.hashes);
	/* tick 0's hash: the first checkpoint's, as recovery to tick 0 would print */
	snprintf(replay_args, sizeof replay_args, "%s --to-tick 0", pristine);
	r = harness_replay_hashes(CROWD_REPLAY_PATH, replay_args, 1);
	if (r.hashes[0]) history[0] = r.hashes[0];
	free(r.hashes);
	newest_checkpoint = (last_tick / 20) * 20;
	older_checkpoint = newest_checkpoint - 20;
	char p[256];
	checkpoint_path(p, sizeof p, pristine, newest_checkpoint);
	assert_int_equal(access(p, F_OK), 0);
	fprintf(stderr, "recording: %" PRIu64 " ticks, newest checkpoint %" PRIu64 "\n", last_tick, newest_checkpoint);
	return 0;
}

static int teardown(void **state) {
	(void)state;
	sh("rm -rf %s", root);
	return 0;
}

/* ------------------------------------------------------------------ cases */

static void test_intact(void **state) {
	(void)state;
	char dir[256];
	copy_fresh(dir, sizeof dir, "intact");
	assert_int_equal(recover_in(dir, last_tick, last_tick), last_tick);
}

static void test_truncated_journal(void **state) {
	(void)state;
	for (int k = 0; k < 8; k++) {
		char dir[256], j[300];
		copy_fresh(dir, sizeof dir, "truncated");
		journal_path(j, sizeof j, dir, newest_checkpoint);
		off_t size = file_size(j), cut = (off_t)(rnd() % (uint32_t)size);
		assert_int_equal(truncate(j, cut), 0);
		/* the header gone: the segment is ignored and recovery stops at its checkpoint */
		recover_in(dir, newest_checkpoint, last_tick);
	}
}

static void test_flipped_journal(void **state) {
	(void)state;
	for (int k = 0; k < 8; k++) {
		char dir[256], j[300];
		copy_fresh(dir, sizeof dir, "flipped");
		journal_path(j, sizeof j, dir, rnd() % 2 ? newest_checkpoint : older_checkpoint);
		flip_bit(j, (off_t)(rnd() % (uint32_t)file_size(j)), (int)(rnd() % 8));
		recover_in(dir, older_checkpoint, last_tick);
	}
}

static void test_garbage_appended(void **state) {
	(void)state;
	for (int k = 0; k < 3; k++) {
		char dir[256], j[300];
		copy_fresh(dir, sizeof dir, "garbage");
		journal_path(j, sizeof j, dir, newest_checkpoint);
		FILE *f = fopen(j, "ab");
		assert_non_null(f);
		for (int i = 0; i < 100 + k * 1000; i++) fputc((int)(rnd() & 0xff), f);
		fclose(f);
		assert_int_equal(recover_in(dir, last_tick, last_tick), last_tick);
	}
}

static void test_damaged_newest_checkpoint(void **state) {
	(void)state;
	char dir[256], ck[300];
	copy_fresh(dir, sizeof dir, "ckflip");
	checkpoint_path(ck, sizeof ck, dir, newest_checkpoint);
	flip_bit(ck, file_size(ck) / 2, 3);
	/* the older checkpoint and both segments: all the way to the end */
	assert_int_equal(recover_in(dir, last_tick, last_tick), last_tick);

	copy_fresh(dir, sizeof dir, "ckcut");
	checkpoint_path(ck, sizeof ck, dir, newest_checkpoint);
	assert_int_equal(truncate(ck, file_size(ck) / 2), 0);
	assert_int_equal(recover_in(dir, last_tick, last_tick), last_tick);
}

static void test_no_valid_checkpoint_refuses_to_start(void **state) {
	(void)state;
	char dir[256];
	copy_fresh(dir, sizeof dir, "nockpt");
	sh("for f in %s/checkpoint-*.ckpt; do head -c 3000 /dev/urandom > $f; done", dir);
	const char *args[] = {"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--data-dir", dir, "--navigation=false", NULL};
	int status = 0;
	char *out = server_run_to_exit(args, &status);
	assert_true(WIFEXITED(status)); /* not a signal: no crash */
	assert_int_equal(WEXITSTATUS(status), 1);
	assert_null(out ? strstr(out, "listening tcp") : NULL);
	free(out);
	/* the files are left as they were, for a person to look at */
	char ck[300];
	checkpoint_path(ck, sizeof ck, dir, newest_checkpoint);
	assert_int_equal(file_size(ck), 3000);
}

/* --start-at-tick T: the world as it was after tick T, and nothing written */
static void test_start_at_tick(void **state) {
	(void)state;
	char dir[256];
	copy_fresh(dir, sizeof dir, "startat");
	char listing[512];
	snprintf(listing, sizeof listing, "ls -l --time-style=+%%s.%%N %s > %s/before.txt", dir, root);
	sh("%s", listing);
	const uint64_t at[3] = {0, 45, last_tick - 1};
	for (int k = 0; k < 3; k++) {
		char tick[32];
		snprintf(tick, sizeof tick, "%" PRIu64, at[k]);
		const char *args[] = {"--data-dir", dir, "--start-at-tick", tick, "--log-level", "warn", "--navigation=false", NULL};
		server_proc srv;
		assert_true(server_start(&srv, args));
		char *out = harness_read_file(srv.out_path);
		uint64_t t = 0, h = 0;
		assert_true(recovered_line(out, &t, &h));
		assert_int_equal(t, at[k]);
		assert_int_equal(h, history[at[k]]);
		free(out);
		assert_true(server_signal_and_wait(&srv, SIGTERM) >= 0);
		server_stop(&srv);
	}
	snprintf(listing, sizeof listing, "ls -l --time-style=+%%s.%%N %s > %s/after.txt", dir, root);
	sh("%s", listing);
	sh("cmp -s %s/before.txt %s/after.txt", root, root); /* not a file touched */
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_intact),
	    cmocka_unit_test(test_start_at_tick),
	    cmocka_unit_test(test_truncated_journal),
	    cmocka_unit_test(test_flipped_journal),
	    cmocka_unit_test(test_garbage_appended),
	    cmocka_unit_test(test_damaged_newest_checkpoint),
	    cmocka_unit_test(test_no_valid_checkpoint_refuses_to_start),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
