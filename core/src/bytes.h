/* bytes.h — little-endian bytes out and in, for the save formats (world_io.c,
 * navigation's nav_io.c). Writing counts every byte and stores those that fit
 * (a NULL buffer only counts); reading checks every byte: a read past the
 * end sets `bad` and gives 0, so a parser reads on and checks once. */
#ifndef ORCA_BYTES_H
#define ORCA_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct bytes_out {
	uint8_t *p;    /* NULL: count only */
	size_t at;     /* bytes written so far (stored or not) */
	size_t cap;
} bytes_out;

static inline void bytes_put(bytes_out *o, const void *src, size_t n)
{
	if (o->p && n <= o->cap && o->at <= o->cap - n)
		memcpy(o->p + o->at, src, n);
	o->at += n;
}

static inline void bytes_put_u8(bytes_out *o, uint8_t v)
{
	bytes_put(o, &v, 1);
}

static inline void bytes_put_u32(bytes_out *o, uint32_t v)
{
	const uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	bytes_put(o, b, 4);
}

static inline void bytes_put_u64(bytes_out *o, uint64_t v)
{
	bytes_put_u32(o, (uint32_t)v);
	bytes_put_u32(o, (uint32_t)(v >> 32));
}

static inline void bytes_put_f32(bytes_out *o, float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	bytes_put_u32(o, u);
}

typedef struct bytes_in {
	const uint8_t *p; /* the next byte */
	size_t left;
	bool bad; /* read past the end */
} bytes_in;

/* n more bytes are there; else the reader goes bad. */
static inline bool bytes_have(bytes_in *in, size_t n)
{
	if (in->bad || in->left < n) {
		in->bad = true;
		return false;
	}
	return true;
}

/* The next n bytes (NULL, and bad, if there are fewer). */
static inline const uint8_t *bytes_take(bytes_in *in, size_t n)
{
	if (!bytes_have(in, n))
		return NULL;
	const uint8_t *p = in->p;
	in->p += n;
	in->left -= n;
	return p;
}

static inline uint8_t bytes_get_u8(bytes_in *in)
{
	const uint8_t *p = bytes_take(in, 1);
	return p ? p[0] : 0;
}

static inline uint32_t bytes_get_u32(bytes_in *in)
{
	const uint8_t *p = bytes_take(in, 4);
	return p ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24 : 0;
}

static inline uint64_t bytes_get_u64(bytes_in *in)
{
	const uint64_t lo = bytes_get_u32(in);
	return lo | (uint64_t)bytes_get_u32(in) << 32;
}

static inline float bytes_get_f32(bytes_in *in)
{
	const uint32_t u = bytes_get_u32(in);
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

#endif
