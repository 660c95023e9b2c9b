/* message.c — encode ClientMessage/ServerMessage (bare or varint-delimited)
 * into a crowd_buf, and decode a ClientMessage with nanopb. Server messages
 * are decoded in snapshot.c because snapshots need the receiver's view. */
#include <pb_common.h>
#include <pb_decode.h>
#include <pb_encode.h>
#include <string.h>

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

const char *crowd_error_code_name(uint32_t code) {
	const char *name = crowd_v1_ErrorCode_name((crowd_v1_ErrorCode)code);
	if (strncmp(name, "ERROR_", 6) != 0) return "UNKNOWN";
	return name + 6;
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

/* Counts the items of every repeated field of one command submessage,
 * packed or not, using the field types of its descriptor. */
static bool longest_list_in(pb_istream_t *stream, const pb_msgdesc_t *desc, uint32_t *longest) {
	crowd_v1_ClientMessage scratch; /* the iterator needs a message to point into */
	uint32_t counts[16] = {0};
	while (stream->bytes_left) {
		pb_wire_type_t wire_type;
		uint32_t tag;
		bool eof;
		if (!pb_decode_tag(stream, &wire_type, &tag, &eof)) return eof;
		pb_field_iter_t field;
		bool known = desc && pb_field_iter_begin(&field, desc, &scratch) && pb_field_iter_find(&field, tag);
		uint32_t items = 1;
		if (wire_type == PB_WT_STRING && known && PB_LTYPE(field.type) <= PB_LTYPE_LAST_PACKABLE) {
			pb_istream_t sub;
			if (!pb_make_string_substream(stream, &sub)) return false;
			size_t bytes = sub.bytes_left;
			if (PB_LTYPE(field.type) == PB_LTYPE_FIXED32) {
				items = (uint32_t)(bytes / 4);
			} else if (PB_LTYPE(field.type) == PB_LTYPE_FIXED64) {
				items = (uint32_t)(bytes / 8);
			} else { /* varints: one item per byte without the continuation bit */
				items = 0;
				uint8_t byte;
				while (sub.bytes_left && pb_read(&sub, &byte, 1))
					if (!(byte & 0x80)) items++;
			}
			if (!pb_close_string_substream(stream, &sub)) return false;
		} else if (!pb_skip_field(stream, wire_type)) {
			return false;
		}
		uint32_t *count = &counts[tag < 16 ? tag : 0];
		*count = *count > UINT32_MAX - items ? UINT32_MAX : *count + items;
		if (*count > *longest) *longest = *count;
	}
	return true;
}

bool crowd_client_message_peek(const uint8_t *data, size_t len, uint32_t *request_id, uint32_t *longest_list) {
	crowd_v1_ClientMessage scratch;
	pb_istream_t stream = pb_istream_from_buffer(data, len);
	*request_id = 0;
	*longest_list = 0;
	while (stream.bytes_left) {
		pb_wire_type_t wire_type;
		uint32_t tag;
		bool eof;
		if (!pb_decode_tag(&stream, &wire_type, &tag, &eof)) return eof;
		if (tag == crowd_v1_ClientMessage_request_id_tag && wire_type == PB_WT_VARINT) {
			uint64_t v;
			if (!pb_decode_varint(&stream, &v)) return false;
			*request_id = (uint32_t)v;
		} else if (wire_type == PB_WT_STRING) {
			pb_field_iter_t field;
			const pb_msgdesc_t *desc = NULL;
			if (pb_field_iter_begin(&field, crowd_v1_ClientMessage_fields, &scratch) &&
			    pb_field_iter_find(&field, tag))
				desc = field.submsg_desc;
			if (!desc) { /* unknown field or not a message: opaque bytes, as decoding skips them */
				if (!pb_skip_field(&stream, wire_type)) return false;
				continue;
			}
			pb_istream_t sub;
			if (!pb_make_string_substream(&stream, &sub)) return false;
			bool ok = longest_list_in(&sub, desc, longest_list);
			if (!pb_close_string_substream(&stream, &sub) || !ok) return false;
		} else if (!pb_skip_field(&stream, wire_type)) {
			return false;
		}
	}
	return true;
}
