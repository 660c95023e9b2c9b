/* test_config.c — the option table: defaults, flags, INI files, errors, tokens,
 * booleans' forms, enum-valued options, --help, --help-markdown, --version. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "config.h"
#include "crowd/wire.h"
#include "log.h"
#include "orca/orca.h"

static int parse(server_config *cfg, char *err, size_t errlen, int argc, char **argv) {
	config_init(cfg);
	return config_parse_args(cfg, argc, argv, err, errlen);
}

/* replication: a follower keeps a journal, names a world that can be one, and records */
static void test_replication_options(void **state) {
	(void)state;
	server_config cfg;
	char err[256];
	config_init(&cfg);
	assert_string_equal(cfg.follow, "");
	assert_int_equal(cfg.min_followers_ack, 0);
	assert_int_equal(config_set(&cfg, "follow", "127.0.0.1:7777", err, sizeof err), 0);
	assert_int_equal(config_validate(&cfg, err, sizeof err), -1);
	assert_non_null(strstr(err, "--data-dir"));
	assert_int_equal(config_set(&cfg, "data-dir", "/tmp/x", err, sizeof err), 0);
	assert_int_equal(config_validate(&cfg, err, sizeof err), 0);
	assert_int_equal(config_set(&cfg, "follow-world", "a/b", err, sizeof err), 0);
	assert_int_equal(config_validate(&cfg, err, sizeof err), -1);
	assert_non_null(strstr(err, "--follow-world"));
	assert_int_equal(config_set(&cfg, "follow-world", "arena", err, sizeof err), 0);
	assert_int_equal(config_set(&cfg, "start-at-tick", "5", err, sizeof err), 0);
	assert_int_equal(config_validate(&cfg, err, sizeof err), -1);
	assert_non_null(strstr(err, "--start-at-tick"));
	assert_int_equal(config_set(&cfg, "min-followers-ack", "65", err, sizeof err), -1);
	assert_int_equal(config_set(&cfg, "min-followers-ack", "2", err, sizeof err), 0);
	assert_int_equal(cfg.min_followers_ack, 2);
	config_free(&cfg);
	config_init(&cfg);
	assert_int_equal(config_set(&cfg, "min-followers-ack", "1", err, sizeof err), 0);
	assert_int_equal(config_validate(&cfg, err, sizeof err), -1);
	assert_non_null(strstr(err, "--data-dir"));
	config_free(&cfg);
}

static void test_defaults(void **state) {
	(void)state;
	server_config cfg;
	config_init(&cfg);
	assert_string_equal(cfg.listen.host, "127.0.0.1");
	assert_int_equal(cfg.listen.port, 7777);
	assert_int_equal(cfg.tick_rate_hz, 30);
	assert_int_equal(cfg.precision, 100);
	/* one stepping thread per core this process may use */
	assert_int_equal(cfg.workers, uv_available_parallelism());
	char werr[256];
	assert_int_equal(config_set(&cfg, "workers", "3", werr, sizeof werr), 0);
	assert_int_equal(cfg.workers, 3);
	assert_int_equal(config_set(&cfg, "workers", "cores", werr, sizeof werr), 0);
	assert_int_equal(cfg.workers, uv_available_parallelism());
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
	                "--token",
	                "match7=player@arena-7",
	                "--max-worlds",
	                "9",
	                "--world-idle-seconds",
	                "2.5",
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
	assert_int_equal(cfg.token_count, 3);
	assert_int_equal(cfg.max_worlds, 9);
	assert_true(cfg.world_idle_seconds == 2.5);
	/* TOKEN=ROLE@WORLD: limited to that world; TOKEN=ROLE: every world */
	char world[40];
	assert_int_equal(config_role_for_token(&cfg, "match7"), crowd_v1_Role_ROLE_PLAYER);
	config_token_world(&cfg, "match7", world, sizeof world);
	assert_string_equal(world, "arena-7");
	config_token_world(&cfg, "root", world, sizeof world);
	assert_string_equal(world, "");
	config_token_world(&cfg, "nope", world, sizeof world);
	assert_string_equal(world, "");
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
	expect_error("--workers", "0");
	expect_error("--workers", "all");
	expect_error("--listen", "localhost");
	expect_error("--listen", "127.0.0.1:70000");
	expect_error("--listen", ":80");
	expect_error("--token", "secret");
	expect_error("--token", "secret=king");
	expect_error("--token", "secret=player@");
	expect_error("--token", "secret=player@../etc");
	expect_error("--token", "secret=king@arena");
	expect_error("--max-worlds", "0");
	expect_error("--world-idle-seconds", "0");
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

static char *help_text(void) {
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	config_print_help(f, "crowd-server");
	fclose(f);
	return buf;
}

/* The line of `text` that starts (after blanks) with `start`, copied into line. */
static bool find_line(const char *text, const char *start, char *line, size_t cap) {
	for (const char *p = text; *p;) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *q = p;
		while (*q == ' ') q++;
		if (strncmp(q, start, strlen(start)) == 0) {
			snprintf(line, cap, "%.*s", (int)len, p);
			return true;
		}
		p += len + (end ? 1 : 0);
	}
	return false;
}

/* --version: the product version from CMake's project() and the protocol from wire.h. */
static void test_version(void **state) {
	(void)state;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	config_print_version(f);
	fclose(f);
	char want[128];
	snprintf(want, sizeof want, "crowd-server %s (protocol crowd.v1 %u.%u)\n", CROWD_VERSION,
	         (unsigned)CROWD_PROTOCOL_MAJOR, (unsigned)CROWD_PROTOCOL_MINOR);
	assert_string_equal(buf, want);
	assert_string_not_equal(CROWD_VERSION, "0.0.0"); /* the compile definition reached the library */
	free(buf);
	server_config cfg;
	char err[256];
	char *argv[] = {"crowd-server", "--tick-rate", "60", "--version"};
	assert_int_equal(parse(&cfg, err, sizeof err, 4, argv), 1); /* printed: exit 0 */
	config_free(&cfg);
}

static bool parse_bools(const char *a, const char *b, const char *c, server_config *cfg, char *err, size_t errlen) {
	char *argv[] = {"crowd-server", (char *)a, (char *)b, (char *)c};
	int argc = 2 + (b != NULL) + (c != NULL);
	return parse(cfg, err, errlen, argc, argv) == 0;
}

/* Booleans: --NAME, --NAME=BOOL, --NAME BOOL and --no-NAME, for a default-on and a default-off one. */
static void test_booleans(void **state) {
	(void)state;
	server_config cfg;
	char err[256];
	config_init(&cfg);
	assert_true(cfg.nav_enabled);
	assert_false(cfg.demo);
	config_free(&cfg);
	const char *off[][2] = {{"--navigation=false", NULL}, {"--navigation", "false"}, {"--no-navigation", NULL},
	                        {"--navigation=no", NULL},    {"--navigation", "OFF"},   {"--navigation=0", NULL}};
	for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
		assert_true(parse_bools(off[i][0], off[i][1], NULL, &cfg, err, sizeof err));
		assert_false(cfg.nav_enabled);
		config_free(&cfg);
	}
	const char *on[][2] = {
	    {"--demo", NULL}, {"--demo=true", NULL}, {"--demo", "true"}, {"--demo", "yes"}, {"--demo=1", NULL}};
	for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
		assert_true(parse_bools(on[i][0], on[i][1], NULL, &cfg, err, sizeof err));
		assert_true(cfg.demo);
		config_free(&cfg);
	}
	/* a switch followed by another flag takes no value from it */
	assert_true(parse_bools("--demo", "--workers", "3", &cfg, err, sizeof err));
	assert_true(cfg.demo);
	assert_int_equal(cfg.workers, 3);
	config_free(&cfg);
	/* the last word wins */
	assert_true(parse_bools("--no-navigation", "--navigation", NULL, &cfg, err, sizeof err));
	assert_true(cfg.nav_enabled);
	config_free(&cfg);
	/* errors name the option */
	assert_false(parse_bools("--navigation", "maybe", NULL, &cfg, err, sizeof err));
	assert_non_null(strstr(err, "--navigation: 'maybe' is not true or false"));
	config_free(&cfg);
	assert_false(parse_bools("--no-navigation=true", NULL, NULL, &cfg, err, sizeof err));
	assert_non_null(strstr(err, "--no-navigation"));
	config_free(&cfg);
	assert_false(parse_bools("--no-tick-rate", NULL, NULL, &cfg, err, sizeof err)); /* not a boolean */
	assert_non_null(strstr(err, "--no-tick-rate"));
	config_free(&cfg);
	/* the INI file: NAME = false */
	char *path = write_temp("[navigation]\nnavigation = false\n[general]\ndemo = on\n");
	config_init(&cfg);
	assert_int_equal(config_load_file(&cfg, path, err, sizeof err), 0);
	assert_false(cfg.nav_enabled);
	assert_true(cfg.demo);
	config_free(&cfg);
	unlink(path);
}

/* Enum-valued options come from their config_enum: every listed name parses to
 * its value (in any case), anything else is refused with the names listed. */
static void test_enums(void **state) {
	(void)state;
	size_t n, enums = 0;
	const config_option *opts = config_options(&n);
	for (size_t i = 0; i < n; i++) {
		const config_option *opt = &opts[i];
		if (opt->set != config_set_enum) continue;
		enums++;
		assert_non_null(opt->choices);
		assert_non_null(opt->def);
		assert_true(config_enum_parse(opt->choices, opt->def) >= 0);
		char flag[80], upper[32];
		snprintf(flag, sizeof flag, "--%s", opt->name);
		for (size_t k = 0; k < opt->choices->count; k++) {
			const config_enum_value *v = &opt->choices->values[k];
			size_t len = strlen(v->name);
			assert_true(len < sizeof upper);
			for (size_t c = 0; c <= len; c++)
				upper[c] =
				    (char)(v->name[c] >= 'a' && v->name[c] <= 'z' ? v->name[c] - 32 : v->name[c]);
			for (int pass = 0; pass < 2; pass++) {
				server_config cfg;
				char err[256];
				char *argv[] = {"crowd-server", flag, pass ? upper : (char *)v->name};
				assert_int_equal(parse(&cfg, err, sizeof err, 3, argv), 0);
				int got;
				memcpy(&got, (char *)&cfg + opt->offset, sizeof got);
				assert_int_equal(got, v->value);
				config_free(&cfg);
			}
			/* the printed name of a value is a listed one */
			const char *name = config_enum_name(opt->choices, v->value);
			assert_non_null(name);
			assert_int_equal(config_enum_parse(opt->choices, name), v->value);
		}
		server_config cfg;
		char err[256];
		char *argv[] = {"crowd-server", flag, "no-such-name"};
		assert_int_equal(parse(&cfg, err, sizeof err, 3, argv), -1);
		char want[160];
		snprintf(want, sizeof want, "%s: 'no-such-name' is not ", flag);
		assert_non_null(strstr(err, want));
		for (size_t k = 0; k < opt->choices->count; k++)
			if (opt->choices->values[k].help) assert_non_null(strstr(err, opt->choices->values[k].name));
		config_free(&cfg);
	}
	assert_int_equal(enums, 6); /* avoidance, fsync, log level, open role, map, snapshot overlap */
	/* the fields hold what the server reads */
	server_config cfg;
	char err[256];
	char *argv[] = {"crowd-server", "--avoidance",  "reference",   "--fsync",       "everysec",
	                "--log-level",  "warning",      "--open-role", "viewer",        "--map",
	                "city",         "--city-block", "30",          "--city-street", "9",
	                "--snapshot-overlap", "off"};
	assert_int_equal(parse(&cfg, err, sizeof err, 17, argv), 0);
	assert_int_equal(cfg.map, CONFIG_MAP_CITY);
	assert_int_equal(cfg.snapshot_overlap, CONFIG_OVERLAP_NEVER); /* a boolean's word, as it once was */
	assert_true(cfg.city_block == 30.0 && cfg.city_street == 9.0);
	assert_int_equal(cfg.avoidance, ORCA_AVOIDANCE_REFERENCE);
	assert_int_equal(cfg.fsync_mode, CONFIG_FSYNC_EVERYSEC);
	assert_int_equal(cfg.log_level, LOG_WARN);
	assert_int_equal(cfg.open_role, crowd_v1_Role_ROLE_VIEWER);
	config_free(&cfg);
	assert_string_equal(config_role_name(crowd_v1_Role_ROLE_PLAYER), "player");
	assert_string_equal(config_role_name(crowd_v1_Role_ROLE_UNSPECIFIED), "none");
	assert_int_equal(config_role_parse("Admin"), crowd_v1_Role_ROLE_ADMIN);
	assert_int_equal(config_role_parse("king"), -1);
	/* --token's ROLE is checked against the same names */
	char *argv2[] = {"crowd-server", "--token", "t=king"};
	assert_int_equal(parse(&cfg, err, sizeof err, 3, argv2), -1);
	assert_non_null(strstr(err, "--token: role 'king' is not viewer, player or admin"));
	config_free(&cfg);
}

/* --help: every boolean with its =false form and its default; every enum's names. */
static void test_help_booleans_and_enums(void **state) {
	(void)state;
	char *help = help_text();
	size_t n, bools = 0;
	const config_option *opts = config_options(&n);
	for (size_t i = 0; i < n; i++) {
		const config_option *opt = &opts[i];
		char start[80], line[512], want[96];
		if (!opt->metavar) {
			bools++;
			snprintf(start, sizeof start, "--%s[=true|false] ", opt->name);
			assert_true(find_line(help, start, line, sizeof line));
			assert_non_null(opt->def);
			snprintf(want, sizeof want, "(default %s", opt->def);
			assert_non_null(strstr(line, want));
			if (strcmp(opt->def, "true") == 0) {
				snprintf(want, sizeof want, "--%s=false", opt->name);
				assert_non_null(strstr(line, want));
			}
		}
		/* an enum's values are listed under its option (two enums may share a name: auto) */
		snprintf(start, sizeof start, "--%s ", opt->name);
		const char *block = opt->choices ? strstr(help, start) : NULL;
		if (opt->choices) assert_non_null(block);
		for (size_t k = 0; opt->choices && k < opt->choices->count; k++) {
			const config_enum_value *v = &opt->choices->values[k];
			if (!v->help) continue;
			assert_true(find_line(block, v->name, line, sizeof line));
			assert_non_null(strstr(line, v->help));
		}
	}
	assert_true(bools >= 3); /* demo, agones, navigation */
	assert_non_null(strstr(help, "--help-markdown"));
	free(help);
}

/* --help-markdown: one table row per option with its INI key and default. */
static void test_markdown(void **state) {
	(void)state;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	config_print_markdown(f);
	fclose(f);
	assert_non_null(strstr(buf, "crowd-server --help-markdown"));
	size_t n;
	const config_option *opts = config_options(&n);
	for (size_t i = 0; i < n; i++) {
		char row[160];
		if (opts[i].metavar)
			snprintf(row, sizeof row, "| `--%s %s` | ", opts[i].name, opts[i].metavar);
		else
			snprintf(row, sizeof row, "| `--%s[=true\\|false]` | `%s` | `%s` |", opts[i].name, opts[i].name,
			         opts[i].def);
		assert_non_null(strstr(buf, row));
		char section[64];
		snprintf(section, sizeof section, "## [%s]", opts[i].section);
		assert_non_null(strstr(buf, section));
	}
	assert_non_null(strstr(buf, "| `--tick-rate HZ` | `tick-rate` | `30` |"));
	assert_non_null(strstr(buf, "`reference`: RVO2's ORCA, bit for bit"));
	free(buf);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_flags),
	    cmocka_unit_test(test_open_server),
	    cmocka_unit_test(test_flag_errors),
	    cmocka_unit_test(test_hostport),
	    cmocka_unit_test(test_ini_file),
	    cmocka_unit_test(test_ini_errors),
	    cmocka_unit_test(test_help),
	    cmocka_unit_test(test_avoidance),
	    cmocka_unit_test(test_version),
	    cmocka_unit_test(test_booleans),
	    cmocka_unit_test(test_enums),
	    cmocka_unit_test(test_help_booleans_and_enums),
	    cmocka_unit_test(test_markdown),
	    cmocka_unit_test(test_replication_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
