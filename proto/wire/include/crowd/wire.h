/* wire.h — what every C peer of crowd.v1 shares: the varint length framing,
 * message encode/decode helpers over nanopb, and the snapshot codec (per-
 * subscriber delta coding against the last snapshot sent). The server encodes
 * with it, the C client library and crowd-load decode with it. */
#ifndef CROWD_WIRE_H
#define CROWD_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>

#include "crowd.pb.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CROWD_PROTOCOL_MAJOR 1u
#define CROWD_PROTOCOL_MINOR 4u
#define CROWD_VARINT_MAX 10u

/** The wire name of an ErrorCode without its "ERROR_" prefix ("MALFORMED",
 * "NOT_OWNER", ...), generated from crowd.proto; "UNKNOWN" for other values. */
const char *crowd_error_code_name(uint32_t code);

/** The longest world name, in bytes (protocol minor 2). */
#define CROWD_WORLD_NAME_MAX 32u
/** The world a client that names none is in. */
#define CROWD_DEFAULT_WORLD "default"

/** Is `name` a valid world name: 1 to CROWD_WORLD_NAME_MAX bytes of
 * [A-Za-z0-9_.-], and not "." or ".." (a world's name is the name of its
 * directory in the server's data dir)? NULL is not. */
bool crowd_world_name_valid(const char *name);

/* ------------------------------------------------------------------ buffers */

/** A growable byte buffer. Zero-initialise, or crowd_buf_init. */
typedef struct crowd_buf {
	uint8_t *data;
	size_t len, cap;
} crowd_buf;

void crowd_buf_init(crowd_buf *b);
void crowd_buf_free(crowd_buf *b);
/** Make room for `extra` more bytes; false on allocation failure. */
bool crowd_buf_reserve(crowd_buf *b, size_t extra);
bool crowd_buf_append(crowd_buf *b, const void *data, size_t n);
/** Drop the first n bytes. */
void crowd_buf_consume(crowd_buf *b, size_t n);

/* ------------------------------------------------------------------ framing */

/** Write v as a protobuf varint; returns its length (1..10). */
size_t crowd_varint_put(uint8_t *out, uint64_t v);

typedef enum crowd_frame_result {
	CROWD_FRAME_NEED_MORE = 0,  /* no whole frame buffered yet */
	CROWD_FRAME_READY = 1,      /* *frame, *len hold one frame */
	CROWD_FRAME_TOO_LARGE = -1, /* the length prefix exceeds max_frame: close the peer */
	CROWD_FRAME_BAD_PREFIX = -2 /* the varint is longer than 10 bytes or overflows */
} crowd_frame_result;

/** Splits a byte stream into varint-length-prefixed frames. Feed whatever the
 * socket gave (any split, any coalescing); take frames until NEED_MORE. */
typedef struct crowd_frame_splitter {
	crowd_buf buf;
	size_t pos;       /* start of the next unread frame in buf */
	size_t max_frame; /* largest frame body accepted */
} crowd_frame_splitter;

void crowd_frame_splitter_init(crowd_frame_splitter *s, size_t max_frame);
void crowd_frame_splitter_free(crowd_frame_splitter *s);
/** Append received bytes; false on allocation failure. Invalidates frames returned before. */
bool crowd_frame_splitter_push(crowd_frame_splitter *s, const void *data, size_t n);
/** The next whole frame, if any. The frame points into the splitter and stays
 * valid until the next push. Once an error is returned it is returned again. */
crowd_frame_result crowd_frame_splitter_next(crowd_frame_splitter *s, const uint8_t **frame, size_t *len);
/** Bytes buffered but not yet returned as frames. */
size_t crowd_frame_splitter_pending(const crowd_frame_splitter *s);

/* ------------------------------------------------------------------ messages */

/** Append one message to out; with `delimited` it is preceded by its varint length (TCP),
 * without it is the bare message (one WebSocket binary message). */
bool crowd_encode_client_message(const crowd_v1_ClientMessage *msg, bool delimited, crowd_buf *out);
bool crowd_encode_server_message(const crowd_v1_ServerMessage *msg, bool delimited, crowd_buf *out);

/** Decode one bare ClientMessage (no length prefix). On success the caller must
 * call crowd_client_message_release (pointer fields are malloc'd, bounded by len).
 * On failure nothing needs releasing. */
bool crowd_decode_client_message(const uint8_t *data, size_t len, crowd_v1_ClientMessage *out);
void crowd_client_message_release(crowd_v1_ClientMessage *msg);

/** One string field of a Hello as it is on the wire (the last occurrence). */
typedef struct crowd_hello_string {
	const uint8_t *data; /* into the inspected frame; NULL if absent */
	uint32_t len;
	uint32_t longest; /* the longest of every occurrence */
	bool has_nul;     /* some occurrence holds a NUL byte */
} crowd_hello_string;

/** What a receiver can learn of a bare ClientMessage without decoding it. */
typedef struct crowd_client_message_info {
	uint32_t request_id;
	uint32_t which_msg;    /* field number of the oneof case (the last one wins), 0 if none */
	uint32_t longest_list; /* items in the longest repeated field of that case (packed or not) */
	crowd_hello_string token, client_name, resume_key; /* for a Hello */
} crowd_client_message_info;

/** Inspect a bare ClientMessage at the tag level: its request_id, its case, the
 * length of its longest list, so a receiver can refuse an oversized batch
 * before nanopb allocates it item by item; and the Hello strings, which nanopb
 * cannot decode past their fixed size. False if the message is not well-formed
 * protobuf at the tag level (what was read so far is filled in). */
bool crowd_client_message_inspect(const uint8_t *data, size_t len, crowd_client_message_info *info);

/** crowd_client_message_inspect's request_id and longest list only. */
bool crowd_client_message_peek(const uint8_t *data, size_t len, uint32_t *request_id, uint32_t *longest_list);

/** crowd_decode_client_message for a frame already inspected: Hello strings
 * longer than their fixed size (crowd.options) are left out of *out instead of
 * failing the decode. The receiver must judge those from `info` (refuse a long
 * token, cut a long name): out's field is empty or holds an earlier, shorter
 * occurrence. */
bool crowd_decode_client_message_checked(const uint8_t *data, size_t len, crowd_v1_ClientMessage *out,
                                         const crowd_client_message_info *info);

/* ------------------------------------------------------------------ snapshots */

/** One agent as a snapshot carries it: fixed point, round(value * precision). */
typedef struct crowd_agent_q {
	uint32_t id;
	int32_t x, y, vx, vy;
	uint32_t radius;
	uint32_t owner;
} crowd_agent_q;

/** A set of agents sorted by ascending id: a subscriber's baseline on the
 * server, the decoded world on a client. */
typedef struct crowd_view {
	crowd_agent_q *agents;
	uint32_t count, cap;
} crowd_view;

void crowd_view_init(crowd_view *v);
void crowd_view_free(crowd_view *v);
void crowd_view_clear(crowd_view *v);
/** Make v a copy of n agents (ascending id); false on allocation failure. */
bool crowd_view_assign(crowd_view *v, const crowd_agent_q *agents, uint32_t n);
/** Binary search by id; NULL if absent. */
const crowd_agent_q *crowd_view_find(const crowd_view *v, uint32_t id);

/** Quantize a float to fixed point: round(value * precision), saturating at
 * +-2^30 so that differences of two values fit a sint32; NaN gives 0.
 * Rounds as lrint does (to nearest, ties to even, in the default rounding
 * mode) without a libm call: inline, as the snapshot table calls it five
 * times per agent per tick. Below 2^30 in magnitude, adding 1.5 * 2^52
 * leaves no fraction bits, so the sum is rounded to an integer exactly as
 * lrint rounds, and subtracting it back is exact (IEEE double, no
 * fast-math; x86-64 and arm64 alike). */
static inline int32_t crowd_quantize(float value, float precision) {
	const double limit = 1073741824.0; /* 2^30 */
	const double round_to_int = 6755399441055744.0; /* 1.5 * 2^52 */
	const double scaled = (double)value * (double)precision;
	if (scaled != scaled) return 0;
	if (scaled >= limit) return (int32_t)limit;
	if (scaled <= -limit) return -(int32_t)limit;
#if defined(__FAST_MATH__) || !defined(__FLT_EVAL_METHOD__) || __FLT_EVAL_METHOD__ != 0
	/* a caller's fast-math would fold the sum and difference away, and x87
	 * extended precision would round at another bit: lrint then */
	(void)round_to_int;
	return (int32_t)lrint(scaled);
#else
	return (int32_t)((scaled + round_to_int) - round_to_int);
#endif
}

/** One obstacle: vertex i is (x[i], y[i]). */
typedef struct crowd_obstacle {
	uint32_t id;
	uint32_t count;
	float *x, *y;
} crowd_obstacle;

/** A complete obstacle set (snapshots send it whole when it changed). */
typedef struct crowd_obstacle_set {
	crowd_obstacle *items;
	uint32_t count, cap;
} crowd_obstacle_set;

void crowd_obstacle_set_init(crowd_obstacle_set *s);
void crowd_obstacle_set_free(crowd_obstacle_set *s);
void crowd_obstacle_set_clear(crowd_obstacle_set *s);
/** Copy an obstacle in; false on allocation failure. */
bool crowd_obstacle_set_add(crowd_obstacle_set *s, uint32_t id, const float *x, const float *y, uint32_t count);

typedef struct crowd_snapshot_header {
	uint64_t tick;
	uint64_t state_hash;
	uint32_t world_agent_count;
	bool keyframe; /* all values absolute; the receiver drops its previous view */
} crowd_snapshot_header;

/** Append one ServerMessage{snapshot} that takes a receiver holding `baseline`
 * to `next` (n agents, ascending id; crowd_snapshot_encode checks the order).
 * With header->keyframe the baseline is ignored. `obstacles` non-NULL sends the
 * whole obstacle set (obstacles_changed = true). On success `baseline` becomes
 * a copy of `next`; on failure out and baseline are unchanged. */
bool crowd_snapshot_encode(const crowd_snapshot_header *header, const crowd_agent_q *next, uint32_t n,
                           crowd_view *baseline, const crowd_obstacle_set *obstacles, bool delimited, crowd_buf *out);

/** Counts from the last decode, for metrics. */
typedef struct crowd_snapshot_stats {
	uint32_t agents;  /* agents in view after applying */
	uint32_t entered; /* new to the receiver */
	uint32_t removed; /* listed in removed_id_deltas */
} crowd_snapshot_stats;

/** Decode one bare ServerMessage. A snapshot is applied to `view` (the
 * receiver's copy of what it was sent; it must be the result of the previous
 * snapshot) and, when its obstacles changed, `obstacles` is replaced. On
 * success *msg holds the message (for a snapshot: its header fields; the array
 * callbacks are consumed). Any inconsistency (arrays of the wrong length, ids
 * not ascending, a delta for an agent the view lacks) fails and leaves `view`
 * and `obstacles` unchanged. stats may be NULL. */
bool crowd_decode_server_message(const uint8_t *data, size_t len, crowd_v1_ServerMessage *msg, crowd_view *view,
                                 crowd_obstacle_set *obstacles, crowd_snapshot_stats *stats);

/** Free what a successful crowd_decode_server_message allocated in *msg (Ack.ids). */
void crowd_server_message_release(crowd_v1_ServerMessage *msg);

#ifdef __cplusplus
}
#endif

#endif /* CROWD_WIRE_H */
