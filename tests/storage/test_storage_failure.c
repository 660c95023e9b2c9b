/* test_storage_failure.c — when the journal cannot be written.
 *
 * crowd-server runs with --fsync always and --storage-fail-file F: while F
 * exists every journal write fails as a broken disk's would (EIO). Then:
 *   - a spawn accepted just before the failure gets no answer while the disk
 *     fails (its record is not durable), later requests get
 *     ERROR_STORAGE_UNAVAILABLE, a viewer keeps getting snapshots, the log says
 *     so and /metrics shows crowd_storage_available 0;
 *   - once F is gone the spawn is acknowledged, new requests are accepted and
 *     crowd_storage_available is 1 again;
 *   - after a SIGKILL and a restart every acknowledged agent is there. */
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

typedef struct probe {
	bool acked[4096];        /* by request id */
	uint32_t first_id[4096]; /* the first agent id each acknowledged spawn made */
	uint32_t acked_rid, acked_ids[8];
	size_t acked_count;
	uint32_t error_rid;
	int error_code;
	int error_of[4096]; /* by request id */
	uint64_t snapshots;
	const crowd_client_snapshot *last;
} probe;

static void on_ack(void *user, uint32_t rid, const uint32_t *ids, size_t count) {
	probe *p = user;
	if (rid < 4096) {
		p->acked[rid] = true;
		p->first_id[rid] = count ? ids[0] : 0;
	}
	p->acked_rid = rid;
	p->acked_count = count < 8 ? count : 8;
	if (p->acked_count) memcpy(p->acked_ids, ids, sizeof *ids * p->acked_count); /* an empty Ack has no ids array */
}

static void on_error(void *user, const crowd_v1_Error *e) {
	probe *p = user;
	p->error_rid = e->request_id;
	p->error_code = (int)e->code;
	if (e->request_id < 4096) p->error_of[e->request_id] = (int)e->code;
}

static void on_snapshot(void *user, const crowd_client_snapshot *s) {
	probe *p = user;
	p->snapshots++;
	(void)s;
}

static crowd_client *open_client(uint16_t port, probe *p) {
	crowd_client_options o = crowd_client_default_options();
	o.callbacks.on_ack = on_ack;
	o.callbacks.on_error = on_error;
	o.callbacks.on_snapshot = on_snapshot;
	o.user = p;
	crowd_client *c;
	assert_int_equal(crowd_client_connect("127.0.0.1", port, &o, &c), 0);
	assert_true(crowd_client_hello(c, NULL, "disk", true) > 0);
	assert_true(crowd_client_subscribe(c, NULL, 1) > 0);
	return c;
}

static int64_t spawn_one(crowd_client *c, float x) {
	crowd_v1_AgentSpec spec = crowd_v1_AgentSpec_init_zero;
	spec.has_position = true;
	spec.position = (crowd_v1_Vec2){x, 5.0f};
	return crowd_client_spawn(c, &spec, 1);
}

static bool pump_until_ack(crowd_client *c, probe *p, int64_t rid) {
	uint64_t guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u;
	while (!p->acked[rid] && p->error_rid != (uint32_t)rid && crowd_client_now_us() < guard)
		crowd_client_poll(c, 20);
	return p->acked[rid];
}

static double available_metric(const server_proc *s) {
	char *m = server_metrics(s);
	double v = m ? metric_value(m, "crowd_storage_available") : -1;
	free(m);
	return v;
}

static bool log_says(const server_proc *s, const char *text) {
	FILE *f = fopen(s->err_path, "r");
	if (!f) return false;
	char line[1024];
	bool found = false;
	while (!found && fgets(line, sizeof line, f)) found = strstr(line, text) != NULL;
	fclose(f);
	return found;
}

static void test_failing_disk(void **state) {
	(void)state;
	char dir[] = "/tmp/crowd-disk-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char data[128], fail[128];
	snprintf(data, sizeof data, "%s/data", dir);
	snprintf(fail, sizeof fail, "%s/fail", dir);
	const char *args[] = {"--data-dir", data, "--fsync", "always", "--storage-fail-file", fail, "--tick-rate", "60",
	                      "--navigation=false", NULL};
	server_proc srv;
	assert_true(server_start(&srv, args));
	probe p = {0};
	crowd_client *c = open_client(srv.port, &p);

	int64_t rid = spawn_one(c, 1.0f);
	assert_true(pump_until_ack(c, &p, rid));
	uint32_t first = p.first_id[rid];
	assert_int_equal(available_metric(&srv), 1);

	/* The disk fails, then a spawn is sent. Whether the server applies it
	 * before it learns that the journal write failed is up to the scheduler:
	 * then it is accepted and held (the case under test), else refused with
	 * STORAGE_UNAVAILABLE. Refusals are sent at once and in order, so once a
	 * later request is refused the held one's fate is known; a refused one
	 * means another try with the disk back. */
	uint64_t guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u;
	int64_t held = -1, refused = -1;
	for (int attempt = 0; crowd_client_now_us() < guard; attempt++) {
		if (attempt > 0) { /* the disk back, and the journal available, before the next try */
			assert_int_equal(unlink(fail), 0);
			while (available_metric(&srv) != 1 && crowd_client_now_us() < guard) crowd_client_poll(c, 20);
		}
		FILE *f = fopen(fail, "w");
		assert_non_null(f);
		fclose(f);
		held = spawn_one(c, 2.0f);
		assert_true(held > 0 && held < 4096);
		/* requests until one is refused */
		refused = -1;
		while (refused < 0 && crowd_client_now_us() < guard) {
			int64_t r = spawn_one(c, 3.0f);
			assert_true(r > 0 && r < 4096);
			uint64_t until = p.snapshots + 2;
			while (p.snapshots < until && p.error_of[r] == 0 && crowd_client_now_us() < guard)
				crowd_client_poll(c, 20);
			if (p.error_of[r] == crowd_v1_ErrorCode_ERROR_STORAGE_UNAVAILABLE) refused = r;
		}
		assert_true(refused > 0);
		if (p.error_of[held] == 0) break; /* accepted before the failure was seen: held */
		print_message("the spawn of try %d was refused: the disk fails again for another try\n", attempt + 1);
		assert_int_equal(p.error_of[held], crowd_v1_ErrorCode_ERROR_STORAGE_UNAVAILABLE);
	}
	assert_int_equal(p.error_of[held], 0);
	assert_false(p.acked[held]); /* not durable: not acknowledged */
	/* viewers keep their snapshots */
	uint64_t before = p.snapshots;
	guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u;
	while (p.snapshots < before + 10 && crowd_client_now_us() < guard) crowd_client_poll(c, 20);
	assert_true(p.snapshots >= before + 10);
	assert_false(p.acked[held]);
	assert_int_equal(available_metric(&srv), 0);
	assert_true(log_says(&srv, "STORAGE_UNAVAILABLE"));

	/* the disk is back: the held spawn is acknowledged, new ones are accepted */
	assert_int_equal(unlink(fail), 0);
	if (!pump_until_ack(c, &p, held)) server_dump_output(&srv);
	assert_true(p.acked[held]);
	uint32_t second = p.first_id[held];
	rid = spawn_one(c, 4.0f);
	assert_true(pump_until_ack(c, &p, rid));
	uint32_t third = p.first_id[rid];
	assert_int_equal(available_metric(&srv), 1);
	assert_true(log_says(&srv, "available again"));
	crowd_client_close(c, 0);

	/* crash and restart: every acknowledged agent is there */
	assert_true(server_signal_and_wait(&srv, SIGKILL) >= 0);
	server_stop(&srv);
	assert_true(server_start(&srv, args));
	probe q = {0};
	c = open_client(srv.port, &q);
	guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u;
	while (q.snapshots == 0 && crowd_client_now_us() < guard) crowd_client_poll(c, 20);
	const crowd_client_snapshot *s = crowd_client_latest_snapshot(c);
	assert_non_null(s);
	uint32_t found = 0;
	for (uint32_t i = 0; i < s->count; i++) found += s->id[i] == first || s->id[i] == second || s->id[i] == third;
	assert_int_equal(found, 3);
	crowd_client_close(c, 0);
	assert_true(server_signal_and_wait(&srv, SIGTERM) >= 0);
	server_stop(&srv);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_failing_disk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
