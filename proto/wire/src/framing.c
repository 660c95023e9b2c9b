/* framing.c — varint length-prefixed frames over a byte stream (protobuf's
 * "delimited" convention), tolerant of any split or coalescing of reads. */
#include <string.h>

#include "crowd/wire.h"

size_t crowd_varint_put(uint8_t *out, uint64_t v) {
	size_t n = 0;
	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

void crowd_frame_splitter_init(crowd_frame_splitter *s, size_t max_frame) {
	crowd_buf_init(&s->buf);
	s->pos = 0;
	s->max_frame = max_frame;
}

void crowd_frame_splitter_free(crowd_frame_splitter *s) {
	crowd_buf_free(&s->buf);
	s->pos = 0;
}

bool crowd_frame_splitter_push(crowd_frame_splitter *s, const void *data, size_t n) {
	/* Frames handed out earlier are dead now, so their bytes can go. */
	if (s->pos > 0) {
		crowd_buf_consume(&s->buf, s->pos);
		s->pos = 0;
	}
	return crowd_buf_append(&s->buf, data, n);
}

size_t crowd_frame_splitter_pending(const crowd_frame_splitter *s) {
	return s->buf.len - s->pos;
}

crowd_frame_result crowd_frame_splitter_next(crowd_frame_splitter *s, const uint8_t **frame, size_t *len) {
	if (s->pos >= s->buf.len) return CROWD_FRAME_NEED_MORE; /* empty (buf.data may be NULL) */
	const uint8_t *p = s->buf.data + s->pos;
	size_t avail = s->buf.len - s->pos;
	uint64_t body = 0;
	size_t i = 0;
	for (;; i++) {
		if (i >= CROWD_VARINT_MAX) return CROWD_FRAME_BAD_PREFIX;
		if (i >= avail) return CROWD_FRAME_NEED_MORE;
		uint8_t byte = p[i];
		if (i == 9 && byte > 1) return CROWD_FRAME_BAD_PREFIX; /* would overflow 64 bits */
		body |= (uint64_t)(byte & 0x7f) << (7 * i);
		if (!(byte & 0x80)) break;
	}
	size_t prefix = i + 1;
	if (body > s->max_frame) return CROWD_FRAME_TOO_LARGE;
	if (avail - prefix < body) return CROWD_FRAME_NEED_MORE;
	*frame = p + prefix;
	*len = (size_t)body;
	s->pos += prefix + (size_t)body;
	return CROWD_FRAME_READY;
}
