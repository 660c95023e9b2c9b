/* test_standby.c — a hot standby (crowd-server --follow) over real sockets.
 *
 * failover: a primary with --min-followers-ack 1 and a follower; a player
 * sends spawns without waiting; once some are acknowledged the primary is
 * SIGKILLed. `Promote` makes the follower the primary: the player takes its
 * identity back with its resume key, every agent it was acknowledged is
 * there and its own (one SetTargets naming them all is acknowledged), new
 * commands are acknowledged, and crowd-replay --verify on the follower's data
 * dir matches every recorded hash (the chain is continuous across the sync
 * and the promotion).
 *
 * behind: a follower stopped with SIGSTOP while a player floods the primary
 * is cut as a slow consumer; after SIGCONT it reconnects and catches up from
 * a new checkpoint (crowd_follower_syncs_total 2), and its journal verifies.
 *
 * ack_when_durable: a follower whose journal cannot be written (its
 * --storage-fail-file) applies the primary's ticks and says so (its applied
 * tick reaches the primary), but sends no FollowAck for them: the player's
 * command on a primary with --min-followers-ack 1 is not acknowledged while
 * the follower's journal cannot hold it; once the disk is back, it is.
 *
 * promote_drains: a follower stopped (SIGSTOP) while the primary runs
 * keeps the primary's frames in its socket; the primary is stopped too at a
 * known tick (SIGSTOP: its connection stays, nothing is reset), the follower
 * resumed and promoted at once. The promotion
 * applies every complete tick the follower received (stepped off the loop,
 * queued meanwhile) before it answers: it starts from the primary's last
 * tick or later, the agents the primary acknowledged while the follower
 * slept are there, and its journal verifies.
 *
 * refusals: a follower pointed at something that is not a crowd server, at a
 * world the primary does not have, or at a primary whose history differs
 * from its data dir exits with status 1 and a line that says so, leaving its
 * data dir as it was. */
#include <dirent.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#define PRIMARY_TOKENS "--token", "adm=admin", "--token", "pl=player"

static char base_dir[128];

static void make_base(void) {
	if (base_dir[0]) return;
	snprintf(base_dir, sizeof base_dir, "/tmp/crowd_standby_%d", (int)getpid());
	mkdir(base_dir, 0700);
}

static void dir_path(char *out, size_t n, const char *name) {
	make_base();
	snprintf(out, n, "%s/%s", base_dir, name);
}

static uint64_t now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Pump clients until the server's metric `sample` reaches at least `want` (guarded). */
static bool await_metric(const server_proc *s, const char *sample, double want) {
	const uint64_t end = now_ms() + HARNESS_GUARD_MS;
	while (now_ms() < end) {
		char *m = server_metrics(s);
		double v = m ? metric_value(m, sample) : -1;
		free(m);
		if (v >= want) return true;
		tc_pump(20);
	}
	return false;
}

static bool start_follower(server_proc *f, uint16_t primary_port, const char *dir, const char *world) {
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%u", (unsigned)primary_port);
	const char *args[] = {"--data-dir", dir, "--follow", addr, "--follow-token", "adm", PRIMARY_TOKENS,
	                      world ? "--follow-world" : NULL, world, NULL};
	return server_start(f, args);
}

static uint32_t count_files(const char *dir) {
	DIR *d = opendir(dir);
	if (!d) return 0;
	uint32_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.') n++;
	closedir(d);
	return n;
}

static int run_replay_verify(const char *dir, char *last_line, size_t n) {
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s %s --verify --workers 1 2>&1 | grep -v 'navigation: mesh'", CROWD_REPLAY_PATH, dir);
	FILE *p = popen(cmd, "r");
	if (!p) return -1;
	char line[256];
	last_line[0] = '\0';
	while (fgets(line, sizeof line, p)) {
		fprintf(stderr, "  crowd-replay: %s", line);
		snprintf(last_line, n, "%s", line);
	}
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ------------------------------------------------------------------ failover */

static void test_failover(void **state) {
	(void)state;
	char pdir[192], fdir[192];
	dir_path(pdir, sizeof pdir, "failover_primary");
	dir_path(fdir, sizeof fdir, "failover_follower");
	server_proc primary, follower;
	const char *pargs[] = {"--data-dir", pdir, PRIMARY_TOKENS, "--min-followers-ack", "1", "--tick-rate", "30",
	                       "--checkpoint-seconds", "0.5", NULL};
	assert_true(server_start(&primary, pargs));
	assert_true(start_follower(&follower, primary.port, fdir, NULL));
	assert_true(await_metric(&follower, "crowd_follower_connected", 1));
	assert_true(await_metric(&primary, "crowd_followers", 1));

	/* a viewer on the follower sees the primary's world, read only */
	tc *viewer = tc_connect(follower.port, "pl", true);
	assert_non_null(viewer);
	assert_true(viewer->welcome.read_only);
	assert_int_equal(strlen(viewer->welcome.history_id), 32);
	tc_assert_error(tc_await(viewer, tc_spawn_grid(viewer, 1, 1, 0, 0, 2, 0)), crowd_v1_ErrorCode_ERROR_READ_ONLY);

	tc *player = tc_connect(primary.port, "pl", true);
	assert_non_null(player);
	assert_string_equal(player->welcome.history_id, viewer->welcome.history_id);
	char key[65];
	snprintf(key, sizeof key, "%s", player->welcome.resume_key);
	const uint32_t client_id = player->welcome.client_id;
	enum { REQUESTS = 60 };
	int64_t rids[REQUESTS];
	for (int i = 0; i < REQUESTS; i++) {
		rids[i] = tc_spawn_grid(player, 4, 4, (float)(i % 10) * 12.0f - 60.0f, (float)(i / 10) * 12.0f - 40.0f,
		                        2.5f, 1.0f);
		assert_true(rids[i] > 0);
		if (i == REQUESTS / 2) { /* half sent: wait for the first Ack, the rest goes on behind it */
			assert_non_null(tc_await(player, rids[0]));
		}
	}
	/* kill once a good part was acknowledged, some surely still in flight */
	uint64_t acked = 0;
	const uint64_t end = now_ms() + HARNESS_GUARD_MS;
	while (now_ms() < end) {
		acked = 0;
		for (uint64_t k = 0; k < player->answer_count && k < TC_ANSWERS; k++) acked += player->answers[k].ok;
		if (acked >= REQUESTS / 2) break;
		tc_pump(5);
	}
	assert_true(acked >= REQUESTS / 2);
	assert_int_equal(server_signal_and_wait(&primary, SIGKILL) & 0x7f, SIGKILL);
	tc_pump(0); /* anything already in the socket */
	uint32_t ids[REQUESTS * 4];
	uint32_t n_ids = 0;
	for (uint64_t k = 0; k < player->answer_count && k < TC_ANSWERS; k++)
		if (player->answers[k].ok)
			for (size_t j = 0; j < player->answers[k].ids_count; j++) ids[n_ids++] = player->answers[k].ids[j];
	tc_close(player);

	/* promote: the orchestrator's call */
	tc *admin = tc_connect(follower.port, "adm", true);
	assert_non_null(admin);
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_promote_tag;
	tc_assert_ack(tc_await(admin, crowd_client_send_message(admin->client, &m)));
	tc_close(admin);

	/* the player comes back with its key: the same id, its agents its own */
	tc *again = tc_open(follower.port, 0, true);
	assert_non_null(again);
	assert_true(crowd_client_hello_resume(again->client, "pl", "again", true, key) > 0);
	while (!again->welcomed && !again->closed) tc_pump(20);
	assert_true(again->welcomed);
	assert_true(again->welcome.resumed);
	assert_int_equal(again->welcome.client_id, client_id);
	assert_false(again->welcome.read_only);
	float *x = calloc(n_ids, sizeof *x), *y = calloc(n_ids, sizeof *y);
	const tc_answer *moved = tc_await(again, crowd_client_set_targets(again->client, ids, n_ids, x, y, n_ids));
	if (!moved || !moved->ok) server_dump_output(&follower);
	tc_assert_ack(moved);
	free(x);
	free(y);
	tc_assert_ack(tc_await(again, tc_spawn_grid(again, 2, 2, 70, 70, 2.5f, 1.0f)));
	tc_close(again);
	tc_close(viewer);
	char *metrics = server_metrics(&follower);
	assert_non_null(metrics);
	const double served = metric_value(metrics, "crowd_tick");
	free(metrics);
	const int stopped = server_signal_and_wait(&follower, SIGTERM);
	if (stopped != 0) server_dump_output(&follower);
	assert_int_equal(stopped, 0);

	/* the follower's data dir: one continuous chain of hashes, through the sync and the promotion */
	char last[256];
	assert_int_equal(run_replay_verify(fdir, last, sizeof last), 0);
	print_message("follower's data dir: %s", last);
	unsigned long long replayed = 0;
	assert_int_equal(sscanf(last, "tick %llu", &replayed), 1);
	if ((double)replayed < served) server_dump_output(&follower);
	server_stop(&follower);
	if ((double)replayed < served) fail_msg("the replay ends at tick %llu, the follower served tick %.0f", replayed, served);
	server_stop(&primary);
}

/* ------------------------------------------------------------------ behind */

static void test_behind(void **state) {
	(void)state;
	char pdir[192], fdir[192];
	dir_path(pdir, sizeof pdir, "behind_primary");
	dir_path(fdir, sizeof fdir, "behind_follower");
	server_proc primary, follower;
	const char *pargs[] = {"--data-dir", pdir, PRIMARY_TOKENS, "--tick-rate", "30", "--fsync", "no",
	                       "--output-hard-limit", "256k", "--output-soft-limit", "128k", NULL};
	assert_true(server_start(&primary, pargs));
	assert_true(start_follower(&follower, primary.port, fdir, NULL));
	assert_true(await_metric(&follower, "crowd_follower_connected", 1));
	tc *player = tc_connect(primary.port, "pl", true);
	assert_non_null(player);
	const tc_answer *a = tc_await(player, tc_spawn_grid(player, 500, 25, -60, -60, 2.5f, 1.0f));
	tc_assert_ack(a);
	uint32_t ids[500];
	memcpy(ids, a->ids, sizeof ids);

	assert_int_equal(kill(follower.pid, SIGSTOP), 0);
	/* the journal grows by every SetTargets: past what the sockets hold, the primary cuts the follower */
	float x[500], y[500];
	for (int round = 0; round < 4000; round++) {
		for (int i = 0; i < 500; i++) {
			x[i] = (float)((round * 7 + i) % 100) - 50.0f;
			y[i] = (float)((round * 13 + i) % 100) - 50.0f;
		}
		int64_t rid = crowd_client_set_targets(player->client, ids, 500, x, y, 500);
		assert_true(rid > 0);
		if (round % 10 == 9) tc_assert_ack(tc_await(player, rid)); /* about ten a tick */
		if (round % 50 == 49) {
			char *m = server_metrics(&primary);
			double followers = m ? metric_value(m, "crowd_followers") : -1;
			free(m);
			if (followers == 0) break;
		}
	}
	assert_true(await_metric(&primary, "crowd_disconnects_total{reason=\"output_hard_limit\"}", 1));
	assert_int_equal(kill(follower.pid, SIGCONT), 0);
	assert_true(await_metric(&follower, "crowd_follower_syncs_total", 2));
	assert_true(await_metric(&follower, "crowd_follower_connected", 1));
	tc_close(player);
	server_stop(&follower);
	char last[256];
	assert_int_equal(run_replay_verify(fdir, last, sizeof last), 0);
	print_message("caught-up follower's data dir: %s", last);
	server_stop(&primary);
}

/* ------------------------------------------------------------------ ack when durable */

/* The applied tick the primary's /metrics shows for its first follower; -1 if none. */
static double follower_acked_tick(const server_proc *primary) {
	char *m = server_metrics(primary);
	if (!m) return -1;
	const char *p = strstr(m, "\ncrowd_follower_acked_tick{");
	double v = -1;
	if (p && (p = strchr(p, '}')) != NULL) v = strtod(p + 1, NULL);
	free(m);
	return v;
}

static bool answered(const tc *t, int64_t request_id) {
	for (uint64_t k = 0; k < t->answer_count && k < TC_ANSWERS; k++)
		if ((int64_t)t->answers[k].request_id == request_id) return true;
	return false;
}

static void test_ack_when_durable(void **state) {
	(void)state;
	char pdir[192], fdir[192], fail[192], addr[64];
	dir_path(pdir, sizeof pdir, "durable_primary");
	dir_path(fdir, sizeof fdir, "durable_follower");
	dir_path(fail, sizeof fail, "durable_follower_disk_fails");
	server_proc primary, follower;
	const char *pargs[] = {"--data-dir", pdir, PRIMARY_TOKENS, "--min-followers-ack", "1", "--tick-rate", "30",
	                       NULL};
	assert_true(server_start(&primary, pargs));
	snprintf(addr, sizeof addr, "127.0.0.1:%u", (unsigned)primary.port);
	const char *fargs[] = {"--data-dir", fdir, "--follow", addr, "--follow-token", "adm", PRIMARY_TOKENS,
	                       "--storage-fail-file", fail, NULL};
	assert_true(server_start(&follower, fargs));
	assert_true(await_metric(&follower, "crowd_follower_connected", 1));
	assert_true(await_metric(&primary, "crowd_followers", 1));
	tc *player = tc_connect(primary.port, "pl", true);
	assert_non_null(player);
	tc_assert_ack(tc_await(player, tc_spawn_grid(player, 4, 2, 0, 0, 2.5f, 1.0f))); /* 4 agents, both disks fine */

	/* the follower's disk fails: it still applies every tick, it holds nothing durably */
	FILE *ff = fopen(fail, "w");
	assert_non_null(ff);
	fclose(ff);
	assert_true(await_metric(&follower, "crowd_storage_write_errors_total", 1));
	const int64_t rid = tc_spawn_grid(player, 16, 4, 20, 20, 2.5f, 1.0f);
	assert_true(rid > 0);
	if (!await_metric(&follower, "crowd_agents", 20)) { /* in the follower's memory */
		char *fm = server_metrics(&follower);
		fprintf(stderr, "%s\n", fm ? fm : "(no metrics)");
		free(fm);
		server_dump_output(&follower);
		fail_msg("the follower never applied the spawn");
	}
	char *m = server_metrics(&follower);
	assert_non_null(m);
	const double applied = metric_value(m, "crowd_tick");
	free(m);
	/* the primary has heard of that tick from the follower: an ack of it would have come with it */
	const uint64_t end = now_ms() + HARNESS_GUARD_MS;
	while (follower_acked_tick(&primary) < applied && now_ms() < end) tc_pump(20);
	assert_true(follower_acked_tick(&primary) >= applied);
	for (int i = 0; i < 5; i++) tc_pump(20); /* whatever the primary sent before its /metrics answer */
	if (answered(player, rid)) {
		server_dump_output(&follower);
		fail_msg("the spawn was acknowledged while the follower's journal could not hold it");
	}

	/* the disk is back: the follower's journal holds it, the player gets its Ack */
	assert_int_equal(unlink(fail), 0);
	const tc_answer *a = tc_await(player, rid);
	tc_assert_ack(a);
	assert_int_equal(a->ids_count, 16);
	tc_close(player);
	assert_int_equal(server_signal_and_wait(&follower, SIGTERM), 0);
	char last[256];
	assert_int_equal(run_replay_verify(fdir, last, sizeof last), 0);
	print_message("follower's data dir: %s", last);
	server_stop(&follower);
	server_stop(&primary);
}

/* ------------------------------------------------------------------ promote drains */

static double metric_of(const server_proc *s, const char *sample) {
	char *m = server_metrics(s);
	double v = m ? metric_value(m, sample) : -1;
	free(m);
	return v;
}

static void test_promote_drains(void **state) {
	(void)state;
	char pdir[192], fdir[192], addr[64];
	dir_path(pdir, sizeof pdir, "drains_primary");
	dir_path(fdir, sizeof fdir, "drains_follower");
	server_proc primary, follower;
	const char *pargs[] = {"--data-dir", pdir, PRIMARY_TOKENS, "--tick-rate", "60", "--fsync", "no", NULL};
	assert_true(server_start(&primary, pargs));
	snprintf(addr, sizeof addr, "127.0.0.1:%u", (unsigned)primary.port);
	/* checkpoints often: records held back behind a due checkpoint while ticks queue */
	const char *fargs[] = {"--data-dir", fdir, "--follow", addr, "--follow-token", "adm", PRIMARY_TOKENS,
	                       "--checkpoint-every", "10", NULL};
	assert_true(server_start(&follower, fargs));
	assert_true(await_metric(&follower, "crowd_follower_connected", 1));
	tc *player = tc_connect(primary.port, "pl", true);
	assert_non_null(player);
	tc_assert_ack(tc_await(player, tc_spawn_grid(player, 2000, 50, -60, -60, 2.2f, 1.0f)));
	assert_true(await_metric(&follower, "crowd_agents", 2000));

	/* the follower sleeps; the primary runs on, takes a spawn, and its frames pile up in the socket */
	assert_int_equal(kill(follower.pid, SIGSTOP), 0);
	const double t0 = metric_of(&primary, "crowd_tick");
	assert_true(await_metric(&primary, "crowd_tick", t0 + 60));
	tc_assert_ack(tc_await(player, tc_spawn_grid(player, 16, 4, 80, 80, 2.5f, 1.0f)));
	assert_true(await_metric(&primary, "crowd_tick", t0 + 120));
	const double last = metric_of(&primary, "crowd_tick");
	assert_true(last > 0);
	assert_true(await_metric(&primary, "crowd_tick", last + 2)); /* the TickEnd of `last` went out */
	tc_close(player);
	assert_int_equal(kill(primary.pid, SIGSTOP), 0); /* gone for the follower, its frames all sent */

	/* resumed and promoted at once: the Ack comes once every received tick is applied */
	assert_int_equal(kill(follower.pid, SIGCONT), 0);
	tc *admin = tc_connect(follower.port, "adm", true);
	assert_non_null(admin);
	crowd_v1_ClientMessage m = crowd_v1_ClientMessage_init_zero;
	m.which_msg = crowd_v1_ClientMessage_promote_tag;
	tc_assert_ack(tc_await(admin, crowd_client_send_message(admin->client, &m)));
	char *log = harness_read_file(follower.err_path);
	assert_non_null(log);
	const char *line = strstr(log, "promotion asked by client");
	const char *done = strstr(log, "the primary of the world default from tick ");
	if (!line || !done) server_dump_output(&follower);
	assert_non_null(line);
	assert_non_null(done);
	unsigned long long from = 0;
	assert_int_equal(sscanf(done, "the primary of the world default from tick %llu", &from), 1);
	const char *eol = strchr(line, '\n');
	print_message("%.*s; promoted at tick %llu, the primary was stopped past tick %.0f",
	              eol ? (int)(eol - line) : 80, line, from, last);
	free(log);
	if ((double)from < last) server_dump_output(&follower);
	assert_true((double)from >= last);
	assert_true(metric_of(&follower, "crowd_agents") >= 2016); /* the spawn the follower slept through */
	tc_assert_ack(tc_await(admin, tc_spawn_grid(admin, 4, 2, -80, 80, 2.5f, 1.0f))); /* a primary now */
	tc_close(admin);
	assert_int_equal(server_signal_and_wait(&primary, SIGKILL) & 0x7f, SIGKILL);
	assert_int_equal(server_signal_and_wait(&follower, SIGTERM), 0);
	char verified[256];
	assert_int_equal(run_replay_verify(fdir, verified, sizeof verified), 0);
	print_message("promoted follower's data dir: %s", verified);
	if (getenv("CROWD_TEST_DUMP")) server_dump_output(&follower);
	server_stop(&follower);
	server_stop(&primary);
}

/* ------------------------------------------------------------------ refusals */

/* Run a follower to its exit (stderr into a file); its log must say `want`; its data dir keeps its files. */
static void expect_refusal(uint16_t port, const char *dir, const char *world, const char *want) {
	char addr[64], log_path[256];
	snprintf(addr, sizeof addr, "127.0.0.1:%u", (unsigned)port);
	make_base();
	snprintf(log_path, sizeof log_path, "%s/refusal.err", base_dir);
	const uint32_t files_before = count_files(dir);
	const char *argv[] = {CROWD_SERVER_BIN, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--data-dir", dir,
	                      "--follow", addr, "--follow-token", "adm", PRIMARY_TOKENS,
	                      world ? "--follow-world" : NULL, world, NULL};
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		FILE *err = freopen(log_path, "w", stderr);
		FILE *out = freopen("/dev/null", "w", stdout);
		if (!err || !out) _exit(127);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid); /* the follower's own deadlines end it: 5 s at most */
	char *log = harness_read_file(log_path);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	assert_non_null(log);
	if (!strstr(log, want)) fail_msg("wanted '%s' in:\n%s", want, log);
	free(log);
	unlink(log_path);
	assert_int_equal(count_files(dir), files_before);
}

static void test_refusals(void **state) {
	(void)state;
	/* not a crowd server: something that answers garbage */
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(lfd, 4), 0);
	socklen_t alen = sizeof a;
	getsockname(lfd, (struct sockaddr *)&a, &alen);
	pid_t garbage = fork();
	if (garbage == 0) {
		for (;;) {
			int c = accept(lfd, NULL, NULL);
			if (c < 0) _exit(0);
			static const char reply[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
			if (write(c, reply, sizeof reply - 1) < 0) _exit(0);
			close(c);
		}
	}
	close(lfd);
	char empty[192];
	dir_path(empty, sizeof empty, "refused_empty");
	expect_refusal(ntohs(a.sin_port), empty, NULL, "is not a crowd server");
	kill(garbage, SIGKILL);
	waitpid(garbage, NULL, 0);
	struct stat sb;
	assert_int_not_equal(stat(empty, &sb), 0); /* not even created */

	/* a real primary: a world it does not have, then another history */
	char pdir[192], other[192];
	dir_path(pdir, sizeof pdir, "refusal_primary");
	dir_path(other, sizeof other, "refusal_other");
	server_proc primary, second;
	const char *pargs[] = {"--data-dir", pdir, PRIMARY_TOKENS, NULL};
	assert_true(server_start(&primary, pargs));
	expect_refusal(primary.port, empty, "nowhere", "ERROR_NO_SUCH_WORLD");
	assert_int_not_equal(stat(empty, &sb), 0);

	/* a data dir of another history: a second primary's */
	const char *oargs[] = {"--data-dir", other, PRIMARY_TOKENS, NULL};
	assert_true(server_start(&second, oargs));
	server_stop(&second); /* its data dir stays: history, checkpoint, journal */
	assert_true(count_files(other) >= 3);
	expect_refusal(primary.port, other, NULL, "ERROR_HISTORY_MISMATCH");
	server_stop(&primary);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_failover),
	    cmocka_unit_test(test_behind),
	    cmocka_unit_test(test_ack_when_durable),
	    cmocka_unit_test(test_promote_drains),
	    cmocka_unit_test(test_refusals),
	};
	if (getenv("CROWD_TEST_FILTER")) cmocka_set_test_filter(getenv("CROWD_TEST_FILTER")); /* one test by name */
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s", base_dir);
	if (base_dir[0] && !getenv("CROWD_TEST_KEEP") && system(cmd) != 0) rc = rc ? rc : 1;
	return rc;
}
