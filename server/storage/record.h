/* record.h — the records of the data dir (proto/storage.proto): framing
 * (u32 length, u32 CRC32C, message), encoding into a growable buffer, a
 * reader that stops at a torn or corrupt tail, and small file helpers
 * (read a whole file, write one atomically, list a directory by prefix). */
#ifndef CROWD_STORAGE_RECORD_H
#define CROWD_STORAGE_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <crowd/wire.h>

#include "storage.pb.h"

#define RECORD_HEADER_BYTES 8u
/** Largest record a reader accepts (a checkpoint of a full world fits). */
#define RECORD_MAX_BYTES ((size_t)1 << 31)

/** Append one framed record to out. False when encoding failed (out unchanged). */
bool record_append(crowd_buf *out, const crowd_storage_v1_Record *rec);

/** Append one framed record from its message bytes (a record received as it was written). */
bool record_append_message(crowd_buf *out, const uint8_t *msg, size_t len);

typedef enum record_status {
	RECORD_OK = 1,
	RECORD_END = 0,      /* clean end of data */
	RECORD_TORN = -1,    /* a header or message runs past the end */
	RECORD_CORRUPT = -2, /* CRC mismatch or an impossible length */
} record_status;

/** The next record of data[*pos..len): its message bytes; *pos moves past it on RECORD_OK. */
record_status record_next(const uint8_t *data, size_t len, size_t *pos, const uint8_t **msg, size_t *msg_len);

/** Decode a Record. Callback fields must be set in *out before the call. */
bool record_decode(const uint8_t *msg, size_t len, crowd_storage_v1_Record *out);

/** Encode-callback helpers: a bytes field from a buffer, a repeated uint32 from an array. */
typedef struct record_bytes {
	const void *data;
	size_t len;
} record_bytes;
bool record_encode_bytes(pb_ostream_t *stream, const pb_field_t *field, void *const *arg);  /* arg: record_bytes* */
/** Decode callback: the field's bytes are pointed to (arg: record_bytes*, into the decoded buffer). */
bool record_decode_bytes(pb_istream_t *stream, const pb_field_t *field, void **arg);

typedef struct record_u32s {
	const uint32_t *items;
	uint32_t count;
} record_u32s;
bool record_encode_u32s(pb_ostream_t *stream, const pb_field_t *field, void *const *arg); /* arg: record_u32s* */

/* ---- files */

/** Read a whole file; malloc'd (free it), NULL with errno on failure. */
uint8_t *file_read_all(const char *path, size_t *len);
/** Write path atomically: PATH.tmp, fsync, rename, fsync the directory. 0 or -errno. */
int file_write_atomic(const char *dir, const char *path, const void *data, size_t len);
/** fsync a directory. 0 or -errno. */
int dir_sync(const char *dir);
/** Ticks of the files in dir named PREFIX<20 digits>SUFFIX, ascending; malloc'd, *count set. */
uint64_t *dir_list_ticks(const char *dir, const char *prefix, const char *suffix, uint32_t *count);

#endif
