/* agones_json.c — reads our name, state and labels out of the sidecar's GET /gameserver
 * JSON. A small bounded recursive-descent reader: the reply is not trusted, so depth,
 * string lengths and label count are capped and anything malformed is rejected. */
#include "agones.h"

#include <string.h>

#define JSON_MAX_DEPTH 32

typedef struct json_cursor {
	const char *p;
	const char *end;
} json_cursor;

static void skip_ws(json_cursor *c) {
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) {
		c->p++;
	}
}

static int hex_digit(char ch) {
	if (ch >= '0' && ch <= '9') return ch - '0';
	if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
	return -1;
}

static int read_hex4(json_cursor *c, unsigned *out) {
	if (c->end - c->p < 4) return -1;
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		int d = hex_digit(c->p[i]);
		if (d < 0) return -1;
		v = v * 16u + (unsigned)d;
	}
	c->p += 4;
	*out = v;
	return 0;
}

/* Appends one code point as UTF-8; sets *overflow when it does not fit. */
static void put_utf8(char *dst, size_t cap, size_t *len, unsigned cp, bool *overflow) {
	char tmp[4];
	size_t n;
	if (cp < 0x80) {
		tmp[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		tmp[0] = (char)(0xC0 | (cp >> 6));
		tmp[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		tmp[0] = (char)(0xE0 | (cp >> 12));
		tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		tmp[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		tmp[0] = (char)(0xF0 | (cp >> 18));
		tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		tmp[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	if (dst == NULL) return;
	if (*len + n >= cap) {
		*overflow = true;
		return;
	}
	memcpy(dst + *len, tmp, n);
	*len += n;
}

/* Reads a JSON string at the cursor. dst may be NULL (skip). Returns 0, or -1 when
 * malformed; *overflow says it was longer than cap-1 bytes (dst then holds a prefix). */
static int read_string(json_cursor *c, char *dst, size_t cap, bool *overflow) {
	size_t len = 0;
	*overflow = false;
	if (c->p >= c->end || *c->p != '"') return -1;
	c->p++;
	while (c->p < c->end) {
		unsigned char ch = (unsigned char)*c->p++;
		if (ch == '"') {
			if (dst != NULL) dst[len] = '\0';
			return 0;
		}
		if (ch < 0x20) return -1;
		if (ch != '\\') {
			if (dst != NULL) {
				if (len + 1 >= cap) {
					*overflow = true;
				} else {
					dst[len++] = (char)ch;
				}
			}
			continue;
		}
		if (c->p >= c->end) return -1;
		char esc = *c->p++;
		unsigned cp;
		switch (esc) {
		case '"':
			cp = '"';
			break;
		case '\\':
			cp = '\\';
			break;
		case '/':
			cp = '/';
			break;
		case 'b':
			cp = '\b';
			break;
		case 'f':
			cp = '\f';
			break;
		case 'n':
			cp = '\n';
			break;
		case 'r':
			cp = '\r';
			break;
		case 't':
			cp = '\t';
			break;
		case 'u':
			if (read_hex4(c, &cp) != 0) return -1;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				unsigned lo;
				if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u') return -1;
				c->p += 2;
				if (read_hex4(c, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF) return -1;
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
				return -1;
			}
			if (cp == 0) return -1; /* an embedded NUL would cut our C strings */
			break;
		default:
			return -1;
		}
		put_utf8(dst, cap, &len, cp, overflow);
	}
	return -1;
}

static int skip_value(json_cursor *c, int depth);

static int skip_literal(json_cursor *c, const char *word) {
	size_t n = strlen(word);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return -1;
	c->p += n;
	return 0;
}

static int skip_number(json_cursor *c) {
	const char *start = c->p;
	while (c->p < c->end) {
		char ch = *c->p;
		if ((ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.' || ch == 'e' || ch == 'E') {
			c->p++;
		} else {
			break;
		}
	}
	return c->p > start ? 0 : -1;
}

/* Calls on_member for each key of the object at the cursor; the callback must consume
 * the value. Returns 0 or -1. */
typedef int (*member_fn)(json_cursor *c, const char *key, bool key_overflow, void *ctx, int depth);

static int walk_object(json_cursor *c, int depth, member_fn on_member, void *ctx) {
	if (depth > JSON_MAX_DEPTH) return -1;
	skip_ws(c);
	if (c->p >= c->end || *c->p != '{') return -1;
	c->p++;
	skip_ws(c);
	if (c->p < c->end && *c->p == '}') {
		c->p++;
		return 0;
	}
	for (;;) {
		char key[CROWD_AGONES_KEY_MAX + 1];
		bool overflow;
		skip_ws(c);
		if (read_string(c, key, sizeof key, &overflow) != 0) return -1;
		skip_ws(c);
		if (c->p >= c->end || *c->p != ':') return -1;
		c->p++;
		skip_ws(c);
		int rc = on_member ? on_member(c, key, overflow, ctx, depth + 1) : skip_value(c, depth + 1);
		if (rc != 0) return -1;
		skip_ws(c);
		if (c->p >= c->end) return -1;
		if (*c->p == ',') {
			c->p++;
			continue;
		}
		if (*c->p == '}') {
			c->p++;
			return 0;
		}
		return -1;
	}
}

static int skip_value(json_cursor *c, int depth) {
	if (depth > JSON_MAX_DEPTH) return -1;
	skip_ws(c);
	if (c->p >= c->end) return -1;
	bool overflow;
	switch (*c->p) {
	case '"':
		return read_string(c, NULL, 0, &overflow);
	case '{':
		return walk_object(c, depth, NULL, NULL);
	case '[':
		c->p++;
		skip_ws(c);
		if (c->p < c->end && *c->p == ']') {
			c->p++;
			return 0;
		}
		for (;;) {
			if (skip_value(c, depth + 1) != 0) return -1;
			skip_ws(c);
			if (c->p >= c->end) return -1;
			if (*c->p == ',') {
				c->p++;
				continue;
			}
			if (*c->p == ']') {
				c->p++;
				return 0;
			}
			return -1;
		}
	case 't':
		return skip_literal(c, "true");
	case 'f':
		return skip_literal(c, "false");
	case 'n':
		return skip_literal(c, "null");
	default:
		return skip_number(c);
	}
}

static int on_label(json_cursor *c, const char *key, bool key_overflow, void *ctx, int depth) {
	crowd_agones_gameserver *gs = ctx;
	if (c->p >= c->end || *c->p != '"') return skip_value(c, depth);
	char value[CROWD_AGONES_VALUE_MAX + 1];
	bool value_overflow;
	if (read_string(c, value, sizeof value, &value_overflow) != 0) return -1;
	if (key_overflow || value_overflow || gs->label_count >= CROWD_AGONES_MAX_LABELS) {
		gs->labels_dropped++;
		return 0;
	}
	crowd_agones_label *label = &gs->labels[gs->label_count++];
	memcpy(label->key, key, strlen(key) + 1);
	memcpy(label->value, value, strlen(value) + 1);
	return 0;
}

static int on_meta(json_cursor *c, const char *key, bool key_overflow, void *ctx, int depth) {
	crowd_agones_gameserver *gs = ctx;
	if (!key_overflow && strcmp(key, "name") == 0 && c->p < c->end && *c->p == '"') {
		bool overflow;
		if (read_string(c, gs->name, sizeof gs->name, &overflow) != 0) return -1;
		if (overflow) gs->name[0] = '\0';
		return 0;
	}
	if (!key_overflow && strcmp(key, "labels") == 0 && c->p < c->end && *c->p == '{') {
		return walk_object(c, depth, on_label, gs);
	}
	return skip_value(c, depth);
}

static int on_status(json_cursor *c, const char *key, bool key_overflow, void *ctx, int depth) {
	crowd_agones_gameserver *gs = ctx;
	if (!key_overflow && strcmp(key, "state") == 0 && c->p < c->end && *c->p == '"') {
		bool overflow;
		if (read_string(c, gs->state, sizeof gs->state, &overflow) != 0) return -1;
		if (overflow) gs->state[0] = '\0';
		return 0;
	}
	return skip_value(c, depth);
}

static int on_top(json_cursor *c, const char *key, bool key_overflow, void *ctx, int depth) {
	if (!key_overflow && c->p < c->end && *c->p == '{') {
		if (strcmp(key, "object_meta") == 0 || strcmp(key, "objectMeta") == 0) {
			return walk_object(c, depth, on_meta, ctx);
		}
		if (strcmp(key, "status") == 0) return walk_object(c, depth, on_status, ctx);
	}
	return skip_value(c, depth);
}

int crowd_agones_parse_gameserver(const char *json, size_t len, crowd_agones_gameserver *out) {
	memset(out, 0, sizeof *out);
	json_cursor c = {json, json + len};
	if (walk_object(&c, 0, on_top, out) != 0) {
		memset(out, 0, sizeof *out);
		return -1;
	}
	skip_ws(&c);
	if (c.p != c.end) {
		memset(out, 0, sizeof *out);
		return -1;
	}
	return 0;
}
