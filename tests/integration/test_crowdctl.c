/* test_crowdctl.c — crowdctl smoke test against the real server: --json ping,
 * spawn, target, remove, obstacle add|remove and watch print parseable results
 * and exit 0; a refused request or token exits 1 with the Error's code name; a
 * usage error is one line naming the option and exit 2, before any connection. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#ifndef CROWDCTL_PATH
#error "CROWDCTL_PATH must name the crowdctl binary"
#endif

static server_proc server;
static char address[32];

static int start_server(void **state) {
	(void)state;
	const char *args[] = {"--log-level", "warn", NULL};
	if (!server_start(&server, args)) return -1;
	snprintf(address, sizeof address, "127.0.0.1:%u", (unsigned)server.port);
	return 0;
}

static int stop_server(void **state) {
	(void)state;
	server_stop(&server);
	return 0;
}

/* Run crowdctl --server SERVER --json ARGS...; returns its stdout, *code = exit
 * status, and its stderr in *err_out (malloc'd) if err_out is not NULL. */
static char *crowdctl_at(const char *server, int *code, char **err_out, const char *const *args) {
	const char *argv[32] = {CROWDCTL_PATH, "--server", server, "--json"};
	size_t n = 4;
	for (size_t i = 0; args[i] && n < 31; i++) argv[n++] = args[i];
	argv[n] = NULL;
	int out[2];
	assert_int_equal(pipe(out), 0);
	char err_path[] = "/tmp/crowdctl-test-stderr-XXXXXX";
	int err_fd = mkstemp(err_path);
	assert_true(err_fd >= 0);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(out[1], STDOUT_FILENO);
		if (err_out) dup2(err_fd, STDERR_FILENO);
		close(out[0]);
		close(out[1]);
		close(err_fd);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(out[1]);
	close(err_fd);
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	assert_non_null(buf);
	for (ssize_t r; (r = read(out[0], buf + len, cap - len - 1)) > 0;) {
		len += (size_t)r;
		if (cap - len < 1024) {
			buf = realloc(buf, cap *= 2);
			assert_non_null(buf);
		}
	}
	buf[len] = '\0';
	close(out[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	*code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	if (err_out) {
		*err_out = harness_read_file(err_path);
		assert_non_null(*err_out);
	}
	unlink(err_path);
	return buf;
}

/* Against the test's server. */
static char *crowdctl(int *code, const char *const *args) {
	return crowdctl_at(address, code, NULL, args);
}

/* The numbers of the JSON array after "key":[ */
static size_t json_ids(const char *json, const char *key, uint32_t *ids, size_t max) {
	char pattern[64];
	snprintf(pattern, sizeof pattern, "\"%s\":[", key);
	const char *p = strstr(json, pattern);
	if (!p) return 0;
	p += strlen(pattern);
	size_t n = 0;
	while (*p && *p != ']' && n < max) {
		char *end;
		ids[n++] = (uint32_t)strtoul(p, &end, 10);
		p = *end == ',' ? end + 1 : end;
	}
	return n;
}

static void test_crowdctl_json_session(void **state) {
	(void)state;
	int code;
	char *out = crowdctl(&code, (const char *[]){"ping", "--count", "3", NULL});
	assert_int_equal(code, 0);
	assert_non_null(strstr(out, "\"ok\":true"));
	assert_non_null(strstr(out, "\"protocol\":\"1.4\""));
	assert_non_null(strstr(out, "\"pings\":3"));
	free(out);

	out = crowdctl(&code, (const char *[]){"spawn", "--count", "5", "--at", "10,10", "--spacing", "4", NULL});
	assert_int_equal(code, 0);
	assert_non_null(strstr(out, "\"ok\":true"));
	uint32_t ids[8];
	assert_int_equal(json_ids(out, "ids", ids, 8), 5);
	free(out);

	char id0[16], id1[16];
	snprintf(id0, sizeof id0, "%u", ids[0]);
	snprintf(id1, sizeof id1, "%u", ids[1]);
	out = crowdctl(&code, (const char *[]){"target", "--to", "30,10", id0, id1, NULL});
	assert_int_equal(code, 0);
	assert_non_null(strstr(out, "\"ok\":true"));
	free(out);

	out = crowdctl(&code, (const char *[]){"watch", "--count", "3", NULL});
	assert_int_equal(code, 0);
	size_t lines = 0;
	for (const char *p = out; (p = strstr(p, "\"tick\":")); p++) lines++;
	assert_int_equal(lines, 3);
	assert_non_null(strstr(out, "\"world_agents\":5"));
	free(out);

	out = crowdctl(&code, (const char *[]){"remove", id0, NULL});
	assert_int_equal(code, 0);
	free(out);
	out = crowdctl(&code, (const char *[]){"remove", id0, NULL});
	assert_int_equal(code, 1);
	assert_non_null(strstr(out, "\"ok\":false"));
	assert_non_null(strstr(out, "\"code\":\"ERROR_STALE_ID\""));
	free(out);

	out = crowdctl(&code, (const char *[]){"obstacle", "add", "50,50", "52,50", "52,52", "50,52", NULL});
	assert_int_equal(code, 0);
	uint32_t obstacle = 0;
	assert_int_equal(json_ids(out, "ids", &obstacle, 1), 1);
	free(out);
	char oid[16];
	snprintf(oid, sizeof oid, "%u", obstacle);
	out = crowdctl(&code, (const char *[]){"obstacle", "remove", oid, NULL});
	assert_int_equal(code, 0);
	free(out);
}

static void test_crowdctl_usage_and_unreachable_server(void **state) {
	(void)state;
	int code;
	char *out = crowdctl(&code, (const char *[]){"--help", NULL});
	assert_int_equal(code, 0);
	assert_non_null(strstr(out, "usage: crowdctl"));
	free(out);
	/* Global options after the command are taken as global options. */
	out = crowdctl(&code, (const char *[]){"ping", "--timeout", "3000", "--no-keep", NULL});
	assert_int_equal(code, 0);
	assert_non_null(strstr(out, "\"ok\":true"));
	free(out);
	out = crowdctl(&code, (const char *[]){"frobnicate", NULL});
	assert_int_equal(code, 2);
	free(out);
	out = crowdctl(&code, (const char *[]){"spawn", "--at", "nan,1", NULL});
	assert_int_equal(code, 2);
	free(out);
	out = crowdctl(&code, (const char *[]){"--server", "127.0.0.1:1", "ping", NULL});
	assert_int_equal(code, 3);
	assert_non_null(strstr(out, "\"ok\":false"));
	free(out);
}

/* world create, list, --world NAME with any command, world close, end to end */
static void test_crowdctl_worlds(void **state) {
	(void)state;
	int code;
	char *out = crowdctl(&code, (const char *[]){"world", "create", "ctl-arena", "--tick-rate", "15", "--bounds",
	                                             "-40,-40,40,40", "--avoidance", "reference", NULL});
	assert_int_equal(code, 0);
	assert_non_null(strstr(out, "\"ok\":true"));
	free(out);
	out = crowdctl(&code, (const char *[]){"world", "create", "ctl-arena", NULL});
	assert_int_equal(code, 1);
	assert_non_null(strstr(out, "\"code\":\"ERROR_WORLD_EXISTS\""));
	free(out);
	out = crowdctl(&code, (const char *[]){"--world", "ctl-arena", "spawn", "--count", "7", "--at", "0,0", NULL});
	assert_int_equal(code, 0);
	uint32_t ids[8];
	assert_int_equal(json_ids(out, "ids", ids, 8), 7);
	free(out);
	out = crowdctl(&code, (const char *[]){"--world", "ctl-arena", "watch", "--count", "1", NULL});
	assert_int_equal(code, 0);
	assert_non_null(strstr(out, "\"world_agents\":7"));
	free(out);
	out = crowdctl(&code, (const char *[]){"world", "list", NULL});
	assert_int_equal(code, 0);
	assert_non_null(strstr(out, "{\"name\":\"ctl-arena\",\"agents\":7,\"clients\":"));
	assert_non_null(strstr(out, "\"tick_rate\":15"));
	assert_non_null(strstr(out, "{\"name\":\"default\""));
	free(out);
	out = crowdctl(&code, (const char *[]){"--world", "ctl-nowhere", "ping", NULL});
	assert_int_equal(code, 1);
	assert_non_null(strstr(out, "\"code\":\"ERROR_NO_SUCH_WORLD\""));
	free(out);
	out = crowdctl(&code, (const char *[]){"world", "close", "ctl-arena", "--delete-data", NULL});
	assert_int_equal(code, 0);
	free(out);
	out = crowdctl(&code, (const char *[]){"world", "list", NULL});
	assert_int_equal(code, 0);
	assert_null(strstr(out, "ctl-arena"));
	free(out);
}

/* A server with tokens refuses an unknown one with Error BAD_TOKEN before it
 * closes: crowdctl reports that Error (exit 1), not a lost connection (exit 3). */
static void test_crowdctl_refused_token(void **state) {
	(void)state;
	server_proc guarded;
	const char *args[] = {"--token", "s3cret=admin", "--log-level", "error", NULL};
	assert_true(server_start(&guarded, args));
	char open_address[sizeof address];
	memcpy(open_address, address, sizeof address);
	snprintf(address, sizeof address, "127.0.0.1:%u", (unsigned)guarded.port);
	int code;
	char *out = crowdctl(&code, (const char *[]){"--token", "wrong", "ping", NULL});
	assert_int_equal(code, 1);
	assert_non_null(strstr(out, "\"code\":\"ERROR_BAD_TOKEN\""));
	free(out);
	out = crowdctl(&code, (const char *[]){"--token", "s3cret", "spawn", "--count", "2", NULL});
	assert_int_equal(code, 0);
	assert_non_null(strstr(out, "\"ok\":true"));
	free(out);
	memcpy(address, open_address, sizeof address);
	server_stop(&guarded);
}

/* Usage errors: exit 2 with one line on stderr naming the command, the option
 * and the reason, and nothing on stdout, checked before connecting. The
 * "server" is a listening socket that is never accepted from: after crowdctl
 * exits, an empty accept queue shows it never connected. */
static void test_crowdctl_usage_errors_before_connecting(void **state) {
	(void)state;
	int listener = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(listener >= 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(listener, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(listener, 16), 0);
	socklen_t sl = sizeof sa;
	assert_int_equal(getsockname(listener, (struct sockaddr *)&sa, &sl), 0);
	assert_int_equal(fcntl(listener, F_SETFL, O_NONBLOCK), 0);
	char listening[32];
	snprintf(listening, sizeof listening, "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));

	static const struct {
		const char *args[8];
		const char *line;
	} cases[] = {
	    {{"target", "--to", "5", "301"}, "crowdctl: target --to: wants X,Y (2 finite numbers), got '5'\n"},
	    {{"spawn", "--count", "0"}, "crowdctl: spawn --count: must be a whole number 1..1048574, got '0'\n"},
	    {{"spawn", "--count"}, "crowdctl: spawn --count: needs a value\n"},
	    {{"spawn", "--at", "nan,1"}, "crowdctl: spawn --at: wants X,Y (2 finite numbers), got 'nan,1'\n"},
	    {{"spawn", "--colour", "red"}, "crowdctl: spawn: unknown option '--colour' (see crowdctl --help)\n"},
	    {{"target", "--to", "1,2"},
	     "crowdctl: target: no agent ids given (usage: target --to X,Y [--direct] ID...)\n"},
	    {{"velocity", "--to", "1,2", "seven"}, "crowdctl: velocity: 'seven' is not an agent id (a whole number)\n"},
	    {{"remove"}, "crowdctl: remove: no agent ids given (usage: remove ID...)\n"},
	    {{"obstacle", "add", "1,1"}, "crowdctl: obstacle add: wants at least 3 vertices X,Y, got 1\n"},
	    {{"watch", "--divisor", "-2"},
	     "crowdctl: watch --divisor: must be a whole number 0..4294967295, got '-2'\n"},
	    {{"ping", "--timeout", "0"}, "crowdctl: --timeout: must be a whole number 1..3600000, got '0'\n"},
	    {{"frobnicate"},
	     "crowdctl: unknown command 'frobnicate' (commands: ping, spawn, target, velocity, remove, "
	     "obstacle, paths, watch, world, promote; see crowdctl --help)\n"},
	    {{"world", "create", "a/b"},
	     "crowdctl: world create: 'a/b' is not a world name (1 to 32 of A-Z a-z 0-9 _ . -)\n"},
	    {{"world", "create", "arena", "--tick-rate", "0"},
	     "crowdctl: world create --tick-rate: must be a whole number 1..1000, got '0'\n"},
	    {{"world", "create", "arena", "--avoidance", "polite"},
	     "crowdctl: world create --avoidance: wants quality or reference, got 'polite'\n"},
	    {{"world", "close"},
	     "crowdctl: world close: wants a world NAME (usage: world create NAME [--tick-rate HZ] [--bounds "
	     "X0,Y0,X1,Y1] [--avoidance quality|reference] [--navigation] [--max-agents N] | world list | world close "
	     "NAME [--delete-data])\n"},
	    {{"--world", "..", "ping"}, "crowdctl: --world: '..' is not a world name (1 to 32 of A-Z a-z 0-9 _ . -)\n"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int code;
		char *err;
		char *out = crowdctl_at(listening, &code, &err, cases[i].args);
		if (code != 2 || strcmp(err, cases[i].line) != 0)
			fprintf(stderr, "case %zu: exit %d, stderr: %s", i, code, err);
		assert_int_equal(code, 2);
		assert_string_equal(err, cases[i].line); /* exactly one line */
		assert_string_equal(out, "");
		free(out);
		free(err);
	}
	/* a bad --server is a usage error too, not a connection failure */
	int code;
	char *err;
	char *out = crowdctl_at("no-port-here", &code, &err, (const char *[]){"ping", NULL});
	assert_int_equal(code, 2);
	assert_string_equal(err,
	                    "crowdctl: --server: wants HOST:PORT (or several, comma-separated), got 'no-port-here'\n");
	free(out);
	free(err);
	out = crowdctl_at("127.0.0.1:7777,no-port-here", &code, &err, (const char *[]){"ping", NULL});
	assert_int_equal(code, 2);
	free(out);
	free(err);
	/* none of them connected */
	errno = 0;
	assert_int_equal(accept(listener, NULL, NULL), -1);
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	/* the same valid command does connect (the check above can fail) */
	out = crowdctl_at(listening, &code, &err, (const char *[]){"--timeout", "200", "ping", NULL});
	assert_int_equal(code, 3); /* connected, but no Welcome came */
	int accepted = accept(listener, NULL, NULL);
	assert_true(accepted >= 0);
	close(accepted);
	free(out);
	free(err);
	close(listener);
}

/* --server with several addresses: one that refuses is skipped, the next answers */
static void test_crowdctl_address_list(void **state) {
	(void)state;
	char list[64];
	snprintf(list, sizeof list, "127.0.0.1:1,127.0.0.1:%u", (unsigned)server.port);
	int code;
	char *out = crowdctl_at(list, &code, NULL, (const char *[]){"ping", NULL});
	assert_int_equal(code, 0);
	assert_non_null(strstr(out, "\"ok\":true"));
	free(out);
	/* every address refuses: a connection failure, exit 3 */
	out = crowdctl_at("127.0.0.1:1,127.0.0.1:1", &code, NULL, (const char *[]){"ping", NULL});
	assert_int_equal(code, 3);
	free(out);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crowdctl_json_session),
	    cmocka_unit_test(test_crowdctl_usage_and_unreachable_server),
	    cmocka_unit_test(test_crowdctl_refused_token),
	    cmocka_unit_test(test_crowdctl_worlds),
	    cmocka_unit_test(test_crowdctl_usage_errors_before_connecting),
	    cmocka_unit_test(test_crowdctl_address_list),
	};
	return cmocka_run_group_tests(tests, start_server, stop_server);
}
