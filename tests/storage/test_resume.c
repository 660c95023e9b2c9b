/* test_resume.c — a player that reconnects after a server crash owns its
 * agents again (Hello.resume_key, Welcome.resume_key / resumed, the C
 * client's crowd_client_hello_resume).
 *
 * A player spawns three agents and keeps its Welcome's resume key; the server
 * is SIGKILLed and restarted on the same data dir. Presenting the key gives
 * the same client id back (resumed = true), its agents answer to it again and
 * count against its per-connection limit; another player with the same token
 * but no key may not command them (NOT_OWNER); the key cannot be taken twice
 * at once; an unknown key gives a new identity. */
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

typedef struct player {
	crowd_client *c;
	bool welcomed;
	crowd_v1_Welcome welcome;
	harness_answers ans;
} player;

static void on_welcome(void *user, const crowd_v1_Welcome *w) {
	player *p = user;
	p->welcome = *w;
	p->welcomed = true;
}

static void on_ack(void *user, uint32_t rid, const uint32_t *ids, size_t count) {
	harness_answers_ack(&((player *)user)->ans, rid, ids, count);
}

static void on_error(void *user, const crowd_v1_Error *e) {
	harness_answers_error(&((player *)user)->ans, e);
}

static player *connect_player(uint16_t port, const char *key) {
	player *p = calloc(1, sizeof *p);
	crowd_client_options o = crowd_client_default_options();
	o.callbacks.on_welcome = on_welcome;
	o.callbacks.on_ack = on_ack;
	o.callbacks.on_error = on_error;
	o.user = p;
	assert_int_equal(crowd_client_connect("127.0.0.1", port, &o, &p->c), 0);
	assert_true(crowd_client_hello_resume(p->c, "p1", "resumer", false, key) > 0);
	uint64_t guard = crowd_client_now_us() + (uint64_t)HARNESS_GUARD_MS * 1000u;
	while (!p->welcomed && crowd_client_now_us() < guard) crowd_client_poll(p->c, 20);
	assert_true(p->welcomed);
	return p;
}

static void await(player *p, int64_t rid) {
	harness_await_answer(p->c, &p->ans, rid);
}

static void close_player(player *p) {
	crowd_client_close(p->c, 0);
	free(p);
}

static void test_resume_after_a_crash(void **state) {
	(void)state;
	char dir[] = "/tmp/crowd-resume-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char data[128];
	snprintf(data, sizeof data, "%s/data", dir);
	const char *args[] = {"--data-dir", data, "--token", "p1=player", "--max-agents-per-connection", "4",
	                      "--tick-rate", "60", NULL};
	server_proc srv;
	assert_true(server_start(&srv, args));
	player *a = connect_player(srv.port, NULL);
	if (strlen(a->welcome.resume_key) != 32) server_dump_output(&srv);
	assert_false(a->welcome.resumed);
	assert_int_equal(strlen(a->welcome.resume_key), 32);
	char key[65];
	snprintf(key, sizeof key, "%s", a->welcome.resume_key);
	const uint32_t id = a->welcome.client_id;
	crowd_v1_AgentSpec specs[3];
	for (int i = 0; i < 3; i++) {
		specs[i] = (crowd_v1_AgentSpec)crowd_v1_AgentSpec_init_zero;
		specs[i].has_position = true;
		specs[i].position = (crowd_v1_Vec2){(float)i * 5.0f, 0.0f};
	}
	int64_t rid = crowd_client_spawn(a->c, specs, 3);
	await(a, rid);
	assert_true(a->ans.ok[rid]);
	uint32_t agents[3];
	memcpy(agents, a->ans.ids[rid], sizeof agents);

	/* the crash: the connection is gone without a goodbye, the agents stay */
	assert_true(server_signal_and_wait(&srv, SIGKILL) >= 0);
	server_stop(&srv);
	close_player(a);
	assert_true(server_start(&srv, args));

	player *b = connect_player(srv.port, key);
	assert_true(b->welcome.resumed);
	assert_int_equal(b->welcome.client_id, id);
	assert_string_equal(b->welcome.resume_key, key);
	float x = 30.0f, y = 30.0f;
	rid = crowd_client_set_targets(b->c, agents, 3, &x, &y, 1);
	await(b, rid);
	assert_true(b->ans.ok[rid]);
	/* its three agents count against its limit of four */
	rid = crowd_client_spawn(b->c, specs, 2);
	await(b, rid);
	assert_int_equal(b->ans.code[rid], crowd_v1_ErrorCode_ERROR_LIMIT_AGENTS_CONNECTION);

	/* the same token without the key: another player */
	player *c = connect_player(srv.port, NULL);
	assert_false(c->welcome.resumed);
	assert_int_not_equal(c->welcome.client_id, id);
	rid = crowd_client_set_targets(c->c, agents, 3, &x, &y, 1);
	await(c, rid);
	assert_int_equal(c->ans.code[rid], crowd_v1_ErrorCode_ERROR_NOT_OWNER);
	/* the key while its owner is connected, and a key nobody was given: new identities */
	player *d = connect_player(srv.port, key);
	assert_false(d->welcome.resumed);
	assert_int_not_equal(d->welcome.client_id, id);
	player *e = connect_player(srv.port, "0123456789abcdef0123456789abcdef");
	assert_false(e->welcome.resumed);
	close_player(b);
	close_player(c);
	close_player(d);
	close_player(e);
	assert_true(server_signal_and_wait(&srv, SIGTERM) >= 0);
	server_stop(&srv);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_resume_after_a_crash),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
