/* test_agones_json.c — the GET /gameserver reader and the /healthz fragment of the
 * Agones client: real sidecar replies, both JSON spellings, and hostile bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agones.h"

/* Shape of a real reply from the SDK sidecar's REST gateway (local mode). */
static const char real_reply[] =
    "{\"object_meta\":{\"name\":\"crowd-fleet-x7k2p-5ldrv\",\"namespace\":\"default\","
    "\"uid\":\"1234\",\"resource_version\":\"9\",\"generation\":\"1\",\"creation_timestamp\":\"1700000000\","
    "\"annotations\":{\"a\":\"b\"},\"labels\":{\"agones.dev/fleet\":\"crowd\",\"world\":\"plaza\"}},"
    "\"spec\":{\"health\":{\"period_seconds\":5,\"failure_threshold\":3,\"initial_delay_seconds\":5}},"
    "\"status\":{\"state\":\"Scheduled\",\"address\":\"10.0.0.7\",\"ports\":[{\"name\":\"game\",\"port\":7123}],"
    "\"players\":null}}";

static void test_real_reply(void **state) {
	(void)state;
	crowd_agones_gameserver gs;
	assert_int_equal(crowd_agones_parse_gameserver(real_reply, strlen(real_reply), &gs), 0);
	assert_string_equal(gs.name, "crowd-fleet-x7k2p-5ldrv");
	assert_string_equal(gs.state, "Scheduled");
	assert_int_equal(gs.label_count, 2);
	assert_string_equal(gs.labels[0].key, "agones.dev/fleet");
	assert_string_equal(gs.labels[0].value, "crowd");
	assert_string_equal(gs.labels[1].key, "world");
	assert_string_equal(gs.labels[1].value, "plaza");
}

static void test_camel_case_and_escapes(void **state) {
	(void)state;
	const char *json = " {\"objectMeta\" : {\"labels\":{\"k\\\"q\":\"caf\\u00e9 \\ud83d\\ude00\"},"
	                   "\"name\":\"gs\\/1\"}} ";
	crowd_agones_gameserver gs;
	assert_int_equal(crowd_agones_parse_gameserver(json, strlen(json), &gs), 0);
	assert_string_equal(gs.name, "gs/1");
	assert_int_equal(gs.label_count, 1);
	assert_string_equal(gs.labels[0].key, "k\"q");
	assert_string_equal(gs.labels[0].value, "caf\xc3\xa9 \xf0\x9f\x98\x80");
}

static void test_malformed_rejected(void **state) {
	(void)state;
	static const char *const bad[] = {
	    "",
	    "[]",
	    "{",
	    "{\"object_meta\":{\"name\":\"x\"}",
	    "{\"object_meta\":{\"name\":\"x\"}} trailing",
	    "{\"a\":tru}",
	    "{\"a\":\"\\x\"}",
	    "{\"a\":\"\\ud800\"}", /* lone high surrogate */
	    "{\"a\":\"\\u0000\"}", /* would cut a C string */
	    "{\"a\":\"raw\ncontrol\"}",
	    "{\"a\":[1,2,}",
	    "{\"a\" 1}",
	    "{\"a\":1,}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		crowd_agones_gameserver gs;
		memset(&gs, 0x55, sizeof gs);
		assert_int_equal(crowd_agones_parse_gameserver(bad[i], strlen(bad[i]), &gs), -1);
		assert_int_equal(gs.label_count, 0);
		assert_string_equal(gs.name, "");
	}
}

static void test_deep_nesting_rejected(void **state) {
	(void)state;
	size_t depth = 100000;
	char *json = malloc(2 * depth + 16);
	assert_non_null(json);
	size_t n = 0;
	json[n++] = '{';
	memcpy(json + n, "\"a\":", 4);
	n += 4;
	for (size_t i = 0; i < depth; i++) json[n++] = '[';
	for (size_t i = 0; i < depth; i++) json[n++] = ']';
	json[n++] = '}';
	crowd_agones_gameserver gs;
	assert_int_equal(crowd_agones_parse_gameserver(json, n, &gs), -1);
	free(json);
}

static void test_limits(void **state) {
	(void)state;
	/* 40 labels: the first 32 kept, the rest dropped and counted; an oversized value too. */
	char json[8192];
	size_t n = (size_t)snprintf(json, sizeof json, "{\"object_meta\":{\"labels\":{");
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(json + n, sizeof json - n, "%s\"k%d\":\"v%d\"", i ? "," : "", i, i);
	n += (size_t)snprintf(json + n, sizeof json - n, ",\"big\":\"");
	for (int i = 0; i < 100; i++) json[n++] = 'x';
	n += (size_t)snprintf(json + n, sizeof json - n, "\",\"num\":5},\"name\":\"");
	for (int i = 0; i < 300; i++) json[n++] = 'n';
	n += (size_t)snprintf(json + n, sizeof json - n, "\"}}");
	crowd_agones_gameserver gs;
	assert_int_equal(crowd_agones_parse_gameserver(json, n, &gs), 0);
	assert_int_equal(gs.label_count, CROWD_AGONES_MAX_LABELS);
	assert_int_equal(gs.labels_dropped, 40 - CROWD_AGONES_MAX_LABELS + 1);
	assert_string_equal(gs.labels[31].key, "k31");
	assert_string_equal(gs.name, ""); /* a 300-byte name is not a Kubernetes name: dropped */
}

static void test_healthz_without_client(void **state) {
	(void)state;
	char buf[64];
	size_t need = crowd_agones_healthz_json(NULL, buf, sizeof buf);
	assert_string_equal(buf, "{\"ready\":false}");
	assert_int_equal(need, strlen(buf));
	/* truncation is snprintf-like: NUL-terminated, full length reported */
	char small[8];
	need = crowd_agones_healthz_json(NULL, small, sizeof small);
	assert_int_equal(need, strlen("{\"ready\":false}"));
	assert_int_equal(strlen(small), sizeof small - 1);
}

static void test_parse_port(void **state) {
	(void)state;
	assert_int_equal(crowd_agones_parse_port("9358"), 9358);
	assert_int_equal(crowd_agones_parse_port("65535"), 65535);
	assert_int_equal(crowd_agones_parse_port("65536"), 0);
	assert_int_equal(crowd_agones_parse_port("93a"), 0);
	assert_int_equal(crowd_agones_parse_port(""), 0);
	assert_int_equal(crowd_agones_parse_port(NULL), 0);
	assert_int_equal(crowd_agones_parse_port("99999999999999999999"), 0);
}

int main(void) {
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_real_reply),
	    cmocka_unit_test(test_camel_case_and_escapes),
	    cmocka_unit_test(test_malformed_rejected),
	    cmocka_unit_test(test_deep_nesting_rejected),
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_healthz_without_client),
	    cmocka_unit_test(test_parse_port),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
