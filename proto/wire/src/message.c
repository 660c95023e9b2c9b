/* message.c — encode ClientMessage/ServerMessage (bare or varint-delimited)
 * into a crowd_buf, and decode a ClientMessage with nanopb. Server messages
 * are decoded in snapshot.c because snapshots need the receiver's view. */
#include <pb_decode.h>
#include <pb_encode.h>

#include "crowd/wire.h"

static bool buf_write(pb_ostream_t *stream, const pb_byte_t *data, size_t count) {
	return crowd_buf_append((crowd_buf *)stream->state, data, count);
}

/* Encodes `msg` once to learn its size, then into `out` after the optional
 * length prefix. Callback fields must encode identically both times. */
static bool encode_into(const pb_msgdesc_t *fields, const void *msg, bool delimited, crowd_buf *out) {
	size_t body = 0;
	if (!pb_get_encoded_size(&body, fields, msg)) return false;
	size_t start = out->len;
	uint8_t prefix[CROWD_VARINT_MAX];
	size_t prefix_len = delimited ? crowd_varint_put(prefix, body) : 0;
	if (!crowd_buf_reserve(out, prefix_len + body)) return false;
	crowd_buf_append(out, prefix, prefix_len);
	pb_ostream_t stream = {buf_write, out, SIZE_MAX, 0, NULL};
	if (!pb_encode(&stream, fields, msg) || stream.bytes_written != body) {
		out->len = start;
		return false;
	}
	return true;
}

bool crowd_encode_client_message(const crowd_v1_ClientMessage *msg, bool delimited, crowd_buf *out) {
	return encode_into(crowd_v1_ClientMessage_fields, msg, delimited, out);
}

bool crowd_encode_server_message(const crowd_v1_ServerMessage *msg, bool delimited, crowd_buf *out) {
	return encode_into(crowd_v1_ServerMessage_fields, msg, delimited, out);
}

bool crowd_decode_client_message(const uint8_t *data, size_t len, crowd_v1_ClientMessage *out) {
	*out = (crowd_v1_ClientMessage)crowd_v1_ClientMessage_init_zero;
	pb_istream_t stream = pb_istream_from_buffer(data, len);
	/* PB_DECODE_NOINIT is not used: a failed decode releases what it allocated. */
	return pb_decode(&stream, crowd_v1_ClientMessage_fields, out);
}

void crowd_client_message_release(crowd_v1_ClientMessage *msg) {
	pb_release(crowd_v1_ClientMessage_fields, msg);
}

void crowd_server_message_release(crowd_v1_ServerMessage *msg) {
	/* Snapshot callbacks point at stack state of the decoder: clear them first. */
	if (msg->which_msg == crowd_v1_ServerMessage_snapshot_tag) {
		msg->which_msg = 0;
		return;
	}
	pb_release(crowd_v1_ServerMessage_fields, msg);
}
