/* record.c — record framing and coding, and the file helpers (see record.h). */
#include "record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pb_decode.h>
#include <pb_encode.h>

#include "crc32c.h"

static void put_le32(uint8_t *p, uint32_t v) {
	p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_le32(const uint8_t *p) {
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool buf_write(pb_ostream_t *stream, const pb_byte_t *data, size_t n) {
	return crowd_buf_append(stream->state, data, n);
}

bool record_append(crowd_buf *out, const crowd_storage_v1_Record *rec) {
	const size_t start = out->len;
	static const uint8_t zero[RECORD_HEADER_BYTES];
	if (!crowd_buf_append(out, zero, sizeof zero)) return false;
	pb_ostream_t os = {buf_write, out, SIZE_MAX, 0, NULL};
	if (!pb_encode(&os, crowd_storage_v1_Record_fields, rec) || out->len - start - RECORD_HEADER_BYTES > UINT32_MAX) {
		out->len = start;
		return false;
	}
	const size_t n = out->len - start - RECORD_HEADER_BYTES;
	uint8_t *h = out->data + start;
	put_le32(h, (uint32_t)n);
	put_le32(h + 4, crc32c(0, h + RECORD_HEADER_BYTES, n));
	return true;
}

bool record_append_message(crowd_buf *out, const uint8_t *msg, size_t len) {
	if (len > UINT32_MAX) return false;
	uint8_t h[RECORD_HEADER_BYTES];
	put_le32(h, (uint32_t)len);
	put_le32(h + 4, crc32c(0, msg, len));
	const size_t start = out->len;
	if (!crowd_buf_append(out, h, sizeof h) || !crowd_buf_append(out, msg, len)) {
		out->len = start;
		return false;
	}
	return true;
}

record_status record_next(const uint8_t *data, size_t len, size_t *pos, const uint8_t **msg, size_t *msg_len) {
	if (*pos >= len) return RECORD_END;
	if (len - *pos < RECORD_HEADER_BYTES) return RECORD_TORN;
	const uint8_t *h = data + *pos;
	const uint32_t n = get_le32(h), crc = get_le32(h + 4);
	if (n > RECORD_MAX_BYTES) return RECORD_CORRUPT;
	if (len - *pos - RECORD_HEADER_BYTES < n) return RECORD_TORN;
	if (crc32c(0, h + RECORD_HEADER_BYTES, n) != crc) return RECORD_CORRUPT;
	*msg = h + RECORD_HEADER_BYTES;
	*msg_len = n;
	*pos += RECORD_HEADER_BYTES + n;
	return RECORD_OK;
}

bool record_decode(const uint8_t *msg, size_t len, crowd_storage_v1_Record *out) {
	pb_istream_t is = pb_istream_from_buffer(msg, len);
	return pb_decode(&is, crowd_storage_v1_Record_fields, out);
}

bool record_encode_bytes(pb_ostream_t *stream, const pb_field_t *field, void *const *arg) {
	const record_bytes *b = *arg;
	if (!b || b->len == 0) return true;
	return pb_encode_tag_for_field(stream, field) && pb_encode_string(stream, b->data, b->len);
}

bool record_decode_bytes(pb_istream_t *stream, const pb_field_t *field, void **arg) {
	(void)field;
	record_bytes *b = *arg;
	if (!b || b->data) return false; /* no destination, or the field twice */
	size_t n = stream->bytes_left;
	void *p = malloc(n ? n : 1);
	if (!p || !pb_read(stream, p, n)) {
		free(p);
		return false;
	}
	b->data = p;
	b->len = n;
	return true;
}

bool record_encode_u32s(pb_ostream_t *stream, const pb_field_t *field, void *const *arg) {
	const record_u32s *u = *arg;
	if (!u) return true;
	for (uint32_t i = 0; i < u->count; i++)
		if (!pb_encode_tag_for_field(stream, field) || !pb_encode_varint(stream, u->items[i])) return false;
	return true;
}

/* ------------------------------------------------------------------ files */

uint8_t *file_read_all(const char *path, size_t *len) {
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return NULL;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return NULL;
	}
	size_t cap = (size_t)st.st_size, n = 0;
	uint8_t *buf = malloc(cap ? cap : 1);
	if (!buf) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR) continue;
		if (r <= 0) break; /* shrank meanwhile: what was there */
		n += (size_t)r;
	}
	close(fd);
	*len = n;
	return buf;
}

int dir_sync(const char *dir) {
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) return -errno;
	int rc = fsync(fd) == 0 ? 0 : -errno;
	close(fd);
	return rc;
}

int file_write_atomic(const char *dir, const char *path, const void *data, size_t len) {
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) return -errno;
	const uint8_t *p = data;
	size_t left = len;
	int rc = 0;
	while (left > 0) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR) continue;
		if (w < 0) {
			rc = -errno;
			break;
		}
		p += w;
		left -= (size_t)w;
	}
	if (rc == 0 && fsync(fd) != 0) rc = -errno;
	if (close(fd) != 0 && rc == 0) rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0) rc = -errno;
	if (rc != 0) {
		unlink(tmp);
		return rc;
	}
	return dir_sync(dir);
}

static int compare_u64(const void *a, const void *b) {
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

uint64_t *dir_list_ticks(const char *dir, const char *prefix, const char *suffix, uint32_t *count) {
	*count = 0;
	DIR *d = opendir(dir);
	if (!d) return NULL;
	uint64_t *ticks = NULL;
	uint32_t n = 0, cap = 0;
	const size_t pl = strlen(prefix), sl = strlen(suffix);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		const char *name = e->d_name;
		const size_t len = strlen(name);
		if (len != pl + 20 + sl || strncmp(name, prefix, pl) != 0 || strcmp(name + pl + 20, suffix) != 0) continue;
		uint64_t t = 0;
		bool digits = true;
		for (size_t i = 0; i < 20; i++) {
			char c = name[pl + i];
			if (c < '0' || c > '9') {
				digits = false;
				break;
			}
			t = t * 10 + (uint64_t)(c - '0');
		}
		if (!digits) continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			uint64_t *p = realloc(ticks, sizeof *p * cap);
			if (!p) break;
			ticks = p;
		}
		ticks[n++] = t;
	}
	closedir(d);
	if (ticks) qsort(ticks, n, sizeof *ticks, compare_u64);
	*count = n;
	return ticks;
}
