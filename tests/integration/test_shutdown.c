/* test_shutdown.c — SIGTERM on a serving crowd-server: every client is told
 * (an unasked Error SHUTTING_DOWN, then a close) and the process exits 0. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "harness.h"

static void test_sigterm_tells_clients_and_exits_zero(void **state) {
	(void)state;
	server_proc server;
	const char *args[] = {"--log-level", "warn", NULL};
	assert_true(server_start(&server, args));

	tc *watcher = tc_connect(server.port, NULL, false);
	tc *idle = tc_connect(server.port, NULL, true);
	assert_non_null(watcher);
	assert_non_null(idle);
	const tc_answer *a = tc_await(idle, tc_spawn_grid(idle, 20, 5, 0.0f, 0.0f, 4.0f, 0));
	assert_true(a && a->ok);
	assert_true(tc_await(watcher, crowd_client_subscribe(watcher->client, NULL, 1))->ok);
	assert_true(tc_await_snapshots(watcher, 3));

	assert_int_equal(kill(server.pid, SIGTERM), 0);
	assert_int_equal(tc_await_unasked_error(watcher), crowd_v1_ErrorCode_ERROR_SHUTTING_DOWN);
	assert_int_equal(tc_await_unasked_error(idle), crowd_v1_ErrorCode_ERROR_SHUTTING_DOWN);
	assert_true(tc_await_closed(watcher));
	assert_true(tc_await_closed(idle));
	assert_int_equal(watcher->closed_status, CROWD_CLIENT_ERR_CLOSED);

	int status = server_signal_and_wait(&server, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) server_dump_output(&server);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* Nobody is listening any more. */
	crowd_client *late = NULL;
	assert_true(crowd_client_connect("127.0.0.1", server.port, NULL, &late) < 0);
	tc_close(idle);
	tc_close(watcher);
	server_stop(&server);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sigterm_tells_clients_and_exits_zero),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
