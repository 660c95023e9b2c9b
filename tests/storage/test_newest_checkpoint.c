/* test_newest_checkpoint.c — recovery starts at the newest complete checkpoint.
 *
 * A demo crowd runs with a checkpoint every 25 ticks. The test watches the
 * data dir (inotify) and SIGKILLs the server the moment the checkpoint of
 * tick 75 (or a later one) is renamed into place (complete). Before the restart it leaves in
 * the dir what a kill during a checkpoint's write leaves: a newer
 * checkpoint-*.ckpt.tmp holding half a checkpoint. The restart must
 *   - say the .tmp is an incomplete checkpoint (a warning naming it) and remove it,
 *   - recover from the newest complete checkpoint, the one the kill followed
 *     (`recovered tick T ... from checkpoint C`, C = that tick, T >= C),
 *   - to the hash crowd-replay computes for tick T from the same files. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#define EVERY 25u
#define KILL_AFTER (3u * EVERY) /* the third checkpoint after tick 0's */

/* The newest checkpoint-*.ckpt in dir (complete ones only: no .tmp). */
static uint64_t newest_checkpoint(const char *dir) {
	DIR *d = opendir(dir);
	assert_non_null(d);
	uint64_t newest = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		uint64_t t;
		char tail[16] = "";
		if (sscanf(e->d_name, "checkpoint-%20" SCNu64 "%15s", &t, tail) == 2 && strcmp(tail, ".ckpt") == 0 &&
		    t > newest)
			newest = t;
	}
	closedir(d);
	return newest;
}

/* Block until a checkpoint of tick >= min is renamed into the dir (it is
 * complete; one may be skipped while the previous is still being written, on
 * a slow disk), guarded; its tick, or 0. */
static uint64_t await_checkpoint(int fd, uint64_t min) {
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, HARNESS_GUARD_MS);
		if (r <= 0) return 0; /* the hang guard, never the pass condition */
		ssize_t n = read(fd, buf, sizeof buf);
		if (n <= 0) return 0;
		for (char *q = buf; q < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)q;
			uint64_t t;
			char tail[16] = "";
			if (ev->len && sscanf(ev->name, "checkpoint-%20" SCNu64 "%15s", &t, tail) == 2 &&
			    strcmp(tail, ".ckpt") == 0 && t >= min)
				return t;
			q += sizeof *ev + ev->len;
		}
	}
}

static void test_recovery_starts_at_the_newest_complete_checkpoint(void **state) {
	(void)state;
	char dir[] = "/tmp/crowd-newest-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char data[128], copy[160], cmd[1400];
	snprintf(data, sizeof data, "%s/data", dir);
	snprintf(copy, sizeof copy, "%s/replayed", dir);
	assert_int_equal(mkdir(data, 0700), 0);
	int in = inotify_init1(IN_CLOEXEC);
	assert_true(in >= 0);
	assert_true(inotify_add_watch(in, data, IN_MOVED_TO) >= 0);

	const char *args[] = {"--data-dir", data, "--demo", "--demo-agents", "200", "--checkpoint-every", "25",
	                      "--keep-checkpoints", "10", "--tick-rate", "100", "--fsync", "everysec",
	                      "--navigation=false", "--log-level", "warn", NULL};
	server_proc srv;
	assert_true(server_start(&srv, args));
	const uint64_t completed = await_checkpoint(in, KILL_AFTER);
	assert_true(server_signal_and_wait(&srv, SIGKILL) >= 0);
	assert_true(completed >= KILL_AFTER);
	close(in);
	server_stop(&srv);

	/* the newest complete one: the kill came right after it (a later one only on a very slow machine) */
	const uint64_t newest = newest_checkpoint(data);
	assert_true(newest >= completed);
	fprintf(stderr, "killed after checkpoint %" PRIu64 "; newest complete checkpoint %" PRIu64 "\n", completed,
	        newest);

	/* what a kill during the next checkpoint's write leaves: half of it, under .tmp */
	char src[256], tmp[256];
	snprintf(src, sizeof src, "%s/checkpoint-%020" PRIu64 ".ckpt", data, newest);
	snprintf(tmp, sizeof tmp, "%s/checkpoint-%020" PRIu64 ".ckpt.tmp", data, newest + EVERY);
	struct stat sb;
	assert_int_equal(stat(src, &sb), 0);
	snprintf(cmd, sizeof cmd, "head -c %lld %s > %s && rm -rf %s && cp -r %s %s", (long long)sb.st_size / 2, src,
	         tmp, copy, data, copy);
	assert_int_equal(system(cmd), 0);

	const char *again[] = {"--data-dir", data, "--tick-rate", "100", "--navigation=false", "--log-level", "warn",
	                       NULL};
	assert_true(server_start(&srv, again));
	char *out = harness_read_file(srv.out_path), *err = harness_read_file(srv.err_path);
	assert_true(server_signal_and_wait(&srv, SIGTERM) >= 0);
	uint64_t tick = 0, hash = 0, from = UINT64_MAX;
	uint32_t agents = 0;
	const char *p = out ? strstr(out, "recovered tick ") : NULL;
	if (!p || !err || !strstr(err, "incomplete checkpoint")) server_dump_output(&srv);
	assert_non_null(p);
	assert_int_equal(sscanf(p, "recovered tick %" SCNu64 " agents %u state_hash 0x%" SCNx64 " from checkpoint %" SCNu64,
	                        &tick, &agents, &hash, &from),
	                 4);
	assert_int_equal(from, newest);
	assert_true(tick >= newest);
	assert_int_equal(agents, 200);
	/* the incomplete one: named in a warning, removed, never loaded */
	assert_non_null(err);
	const char *w = strstr(err, "incomplete checkpoint");
	assert_non_null(w);
	assert_non_null(strstr(err, strrchr(tmp, '/') + 1));
	assert_int_equal(access(tmp, F_OK), -1);
	free(out);
	free(err);
	server_stop(&srv);

	/* the recovered hash is the recording's at that tick */
	snprintf(cmd, sizeof cmd, "%s --verify --hashes --from-tick %" PRIu64, copy, newest);
	const replay_hashes replayed = harness_replay_hashes(CROWD_REPLAY_PATH, cmd, tick + 1u);
	assert_int_equal(replayed.status, 0);
	assert_true(replayed.hashes[tick] != 0);
	assert_int_equal(replayed.hashes[tick], hash);
	free(replayed.hashes);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_recovery_starts_at_the_newest_complete_checkpoint),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
