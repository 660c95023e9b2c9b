/* test_config.c — the option table: defaults, flags, INI files, errors, tokens. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "orca/orca.h"

static int parse(server_config *cfg, char *err, size_t errlen, int argc, char **argv) {
	config_init(cfg);
	return config_parse_args(cfg, argc, argv, err, errlen);
}

static void test_defaults(void **state) {
	(void)state;
	server_config cfg;
	config_init(&cfg);
	assert_string_equal(cfg.listen.host, "127.0.0.1");
	assert_int_equal(cfg.listen.port, 7777);
	assert_int_equal(cfg.tick_rate_hz, 30);
	assert_int_equal(cfg.precision, 100);
	assert_int_equal(cfg.workers, 1);
	assert_false(cfg.demo);
	assert_int_equal(cfg.token_count, 0);
	assert_int_equal(cfg.open_role, crowd_v1_Role_ROLE_ADMIN);
	assert_int_equal(cfg.max_frame_bytes, 1024 * 1024);
	assert_true(cfg.output_soft_limit < cfg.output_hard_limit);
	char err[256];
	assert_int_equal(config_validate(&cfg, err, sizeof err), 0);
	/* every option has a name, a section, help, and a setter */
	size_t n;
	const config_option *opts = config_options(&n);
	assert_true(n > 30);
	for (size_t i = 0; i < n; i++) {
		assert_non_null(opts[i].name);
		assert_non_null(opts[i].section);
		assert_non_null(opts[i].help);
		assert_non_null(opts[i].set);
	}
	config_free(&cfg);
}

static void test_flags(void **state) {
	(void)state;
	server_config cfg;
	char err[256];
	char *argv[] = {"crowd-server",
	                "--listen",
	                "0.0.0.0:0",
	                "--tick-rate=60",
	                "--demo",
	                "--workers",
	                "4",
	                "--max-frame",
	                "64k",
	                "--output-hard-limit",
	                "2M",
	                "--token",
	                "abc=viewer",
	                "--token",
	                "root=admin",
	                "--world-bounds",
	                "-10,-20,30,40",
	                "--log-level",
	                "debug"};
	assert_int_equal(parse(&cfg, err, sizeof err, (int)(sizeof argv / sizeof argv[0]), argv), 0);
	assert_string_equal(cfg.listen.host, "0.0.0.0");
	assert_int_equal(cfg.listen.port, 0);
	assert_int_equal(cfg.tick_rate_hz, 60);
	assert_true(cfg.demo);
	assert_int_equal(cfg.workers, 4);
	assert_int_equal(cfg.max_frame_bytes, 64 * 1024);
	assert_int_equal(cfg.output_hard_limit, 2 * 1024 * 1024);
	assert_int_equal(cfg.token_count, 2);
	assert_int_equal(config_role_for_token(&cfg, "abc"), crowd_v1_Role_ROLE_VIEWER);
	assert_int_equal(config_role_for_token(&cfg, "root"), crowd_v1_Role_ROLE_ADMIN);
	assert_int_equal(config_role_for_token(&cfg, "nope"), crowd_v1_Role_ROLE_UNSPECIFIED);
	assert_int_equal(config_role_for_token(&cfg, ""), crowd_v1_Role_ROLE_UNSPECIFIED);
	assert_true(cfg.world_min_x == -10 && cfg.world_min_y == -20 && cfg.world_max_x == 30 && cfg.world_max_y == 40);
	assert_int_equal(cfg.log_level, 0);
	config_free(&cfg);
}

static void test_open_server(void **state) {
	(void)state;
	server_config cfg;
	char err[256];
	char *argv[] = {"crowd-server", "--open-role", "player"};
	assert_int_equal(parse(&cfg, err, sizeof err, 3, argv), 0);
	/* no tokens: any token, even none, gets the open role */
	assert_int_equal(config_role_for_token(&cfg, ""), crowd_v1_Role_ROLE_PLAYER);
	assert_int_equal(config_role_for_token(&cfg, "whatever"), crowd_v1_Role_ROLE_PLAYER);
	config_free(&cfg);
}

static void expect_error(const char *flag, const char *value) {
	server_config cfg;
	char err[256] = "";
	char *argv[] = {"crowd-server", (char *)flag, (char *)value};
	int argc = value ? 3 : 2;
	assert_int_equal(parse(&cfg, err, sizeof err, argc, argv), -1);
	assert_true(strlen(err) > 0);
	config_free(&cfg);
}

static void test_flag_errors(void **state) {
	(void)state;
	expect_error("--no-such-option", "1");
	expect_error("--tick-rate", "0");
	expect_error("--tick-rate", "abc");
	expect_error("--tick-rate", "30.5");
	expect_error("--tick-rate", "nan");
	expect_error("--workers", "-1");
	expect_error("--listen", "localhost");
	expect_error("--listen", "127.0.0.1:70000");
	expect_error("--listen", ":80");
	expect_error("--token", "secret");
	expect_error("--token", "secret=king");
	expect_error("--world-bounds", "1,2,3");
	expect_error("--world-bounds", "10,0,0,10");
	expect_error("--max-frame", "12q");
	expect_error("--log-level", "loud");
	expect_error("--demo", "maybe");
	expect_error("--tick-rate", NULL); /* missing value */
	expect_error("positional", NULL);
	/* cross-field: soft above hard */
	server_config cfg;
	char err[256];
	char *argv[] = {"crowd-server", "--output-soft-limit", "8m", "--output-hard-limit", "1m"};
	assert_int_equal(parse(&cfg, err, sizeof err, 5, argv), -1);
	assert_non_null(strstr(err, "soft"));
	config_free(&cfg);
	/* a precision whose fixed point overflows at the world bounds */
	char *argv2[] = {"crowd-server", "--precision", "1000000", "--world-bounds", "-2000,-2000,2000,2000"};
	assert_int_equal(parse(&cfg, err, sizeof err, 5, argv2), -1);
	assert_non_null(strstr(err, "precision"));
	config_free(&cfg);
	char *argv3[] = {"crowd-server", "--precision", "1000000"}; /* 1000 x 1e6 < 2^30: fits */
	assert_int_equal(parse(&cfg, err, sizeof err, 3, argv3), 0);
	config_free(&cfg);
	/* a default horizon under the minimum */
	char *argv4[] = {"crowd-server", "--min-time-horizon", "20"};
	assert_int_equal(parse(&cfg, err, sizeof err, 3, argv4), -1);
	config_free(&cfg);
}

static void test_hostport(void **state) {
	(void)state;
	config_hostport hp;
	assert_int_equal(config_parse_hostport("[::1]:8080", &hp), 0);
	assert_string_equal(hp.host, "::1");
	assert_int_equal(hp.port, 8080);
	assert_int_equal(config_parse_hostport("example.org:1", &hp), 0);
	assert_string_equal(hp.host, "example.org");
	assert_int_equal(config_parse_hostport("[::1]8080", &hp), -1);
	assert_int_equal(config_parse_hostport("host:", &hp), -1);
	assert_int_equal(config_parse_hostport("host:-1", &hp), -1);
}

static char *write_temp(const char *text) {
	static char path[64];
	strcpy(path, "/tmp/crowd-test-config-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_ini_file(void **state) {
	(void)state;
	const char *text = "; a comment\n"
	                   "tick-rate = 20\n"
	                   "[network]\nlisten = 127.0.0.1:9000\n"
	                   "[limits]\nmax-agents = 500\noutput-soft-limit = 128k\n"
	                   "[tokens]\nviewer-token = viewer\nplayer-token = player\n";
	char *path = write_temp(text);
	server_config cfg;
	char err[256];
	/* the file is read first, flags override it */
	char *argv[] = {"crowd-server", "--max-agents", "700", "--config", path};
	assert_int_equal(parse(&cfg, err, sizeof err, 5, argv), 0);
	assert_int_equal(cfg.tick_rate_hz, 20);
	assert_int_equal(cfg.listen.port, 9000);
	assert_int_equal(cfg.max_agents, 700);
	assert_int_equal(cfg.output_soft_limit, 128 * 1024);
	assert_int_equal(cfg.token_count, 2);
	assert_int_equal(config_role_for_token(&cfg, "player-token"), crowd_v1_Role_ROLE_PLAYER);
	assert_string_equal(cfg.config_path, path);
	config_free(&cfg);
	unlink(path);
}

static void test_ini_errors(void **state) {
	(void)state;
	const char *bad[] = {"[network]\nnot-an-option = 1\n", "[limits]\nmax-agents = lots\n",
	                     "[network]\ntick-rate = 30\n", /* wrong section */
	                     "[tokens]\nt = emperor\n", "this is not ini\n"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *path = write_temp(bad[i]);
		server_config cfg;
		char err[256] = "";
		config_init(&cfg);
		assert_int_equal(config_load_file(&cfg, path, err, sizeof err), -1);
		assert_non_null(strstr(err, path));
		config_free(&cfg);
		unlink(path);
	}
	server_config cfg;
	char err[256];
	config_init(&cfg);
	assert_int_equal(config_load_file(&cfg, "/nonexistent/crowd.ini", err, sizeof err), -1);
	config_free(&cfg);
}

/* --avoidance: quality by default, reference on request, nothing else. */
static void test_avoidance(void **state) {
	(void)state;
	server_config cfg;
	char err[256];
	config_init(&cfg);
	assert_int_equal(cfg.avoidance, ORCA_AVOIDANCE_QUALITY);
	config_free(&cfg);
	char *argv[] = {"crowd-server", "--avoidance", "reference"};
	assert_int_equal(parse(&cfg, err, sizeof err, 3, argv), 0);
	assert_int_equal(cfg.avoidance, ORCA_AVOIDANCE_REFERENCE);
	config_free(&cfg);
	expect_error("--avoidance", "fast");
	expect_error("--avoidance", NULL);
}

static void test_help(void **state) {
	(void)state;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	config_print_help(f, "crowd-server");
	fclose(f);
	size_t n;
	const config_option *opts = config_options(&n);
	for (size_t i = 0; i < n; i++) {
		char flag[80];
		snprintf(flag, sizeof flag, "--%s", opts[i].name);
		assert_non_null(strstr(buf, flag));
	}
	assert_non_null(strstr(buf, "(default 127.0.0.1:7777)"));
	free(buf);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),    cmocka_unit_test(test_flags),    cmocka_unit_test(test_open_server),
	    cmocka_unit_test(test_flag_errors), cmocka_unit_test(test_hostport), cmocka_unit_test(test_ini_file),
	    cmocka_unit_test(test_ini_errors),  cmocka_unit_test(test_help),        cmocka_unit_test(test_avoidance),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
