/* buffer.c — the growable byte buffer every wire helper appends to. */
#include <stdlib.h>
#include <string.h>

#include "crowd/wire.h"

void crowd_buf_init(crowd_buf *b) {
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void crowd_buf_free(crowd_buf *b) {
	free(b->data);
	crowd_buf_init(b);
}

bool crowd_buf_reserve(crowd_buf *b, size_t extra) {
	if (extra > SIZE_MAX - b->len) return false;
	size_t need = b->len + extra;
	if (need <= b->cap) return true;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need) {
		if (cap > SIZE_MAX / 2) {
			cap = need;
			break;
		}
		cap *= 2;
	}
	uint8_t *data = realloc(b->data, cap);
	if (!data) return false;
	b->data = data;
	b->cap = cap;
	return true;
}

bool crowd_buf_append(crowd_buf *b, const void *data, size_t n) {
	if (n == 0) return true;
	if (!crowd_buf_reserve(b, n)) return false;
	memcpy(b->data + b->len, data, n);
	b->len += n;
	return true;
}

void crowd_buf_consume(crowd_buf *b, size_t n) {
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}
