/* test_crowdctl.c — crowdctl smoke test against the real server: --json ping,
 * spawn, target, remove, obstacle add|remove and watch print parseable results
 * and exit 0; a refused request or token exits 1 with the Error's code name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Run crowdctl --server ADDRESS --json ARGS...; returns its stdout, *code = exit status. */
static char *crowdctl(int *code, const char *const *args) {
	const char *argv[32] = {CROWDCTL_PATH, "--server", address, "--json"};
	size_t n = 4;
	for (size_t i = 0; args[i] && n < 31; i++) argv[n++] = args[i];
	argv[n] = NULL;
	int out[2];
	assert_int_equal(pipe(out), 0);
	fflush(stdout);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(out[1], STDOUT_FILENO);
		close(out[0]);
		close(out[1]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(out[1]);
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
	return buf;
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
	assert_non_null(strstr(out, "\"protocol\":\"1.1\""));
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

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crowdctl_json_session),
	    cmocka_unit_test(test_crowdctl_usage_and_unreachable_server),
	    cmocka_unit_test(test_crowdctl_refused_token),
	};
	return cmocka_run_group_tests(tests, start_server, stop_server);
}
