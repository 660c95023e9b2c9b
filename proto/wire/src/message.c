/* message.c — encode ClientMessage/ServerMessage (bare or varint-delimited)
 * into a crowd_buf, and decode a ClientMessage with nanopb. Server messages
 * are decoded in snapshot.c because snapshots need the receiver's view. */
#include <pb_common.h>
#include <pb_decode.h>
#include <pb_encode.h>
#include <stdlib.h>
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
 * packed or not, using the field types of its descriptor. A scalar field that
 * is not repeated but occurs many times is not a list: the last one wins. */
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
		bool repeated = known && PB_HTYPE(field.type) == PB_HTYPE_REPEATED;
		uint32_t items = repeated ? 1 : 0;
		if (wire_type == PB_WT_STRING && repeated && PB_LTYPE(field.type) <= PB_LTYPE_LAST_PACKABLE) {
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

/* The Hello string fields the receiver checks itself (see crowd_client_message_info). */
static bool hello_strings_in(pb_istream_t *stream, crowd_client_message_info *info) {
	while (stream->bytes_left) {
		pb_wire_type_t wire_type;
		uint32_t tag;
		bool eof;
		if (!pb_decode_tag(stream, &wire_type, &tag, &eof)) return eof;
		crowd_hello_string *str = NULL;
		if (wire_type == PB_WT_STRING) {
			if (tag == crowd_v1_Hello_token_tag) str = &info->token;
			if (tag == crowd_v1_Hello_client_name_tag) str = &info->client_name;
			if (tag == crowd_v1_Hello_resume_key_tag) str = &info->resume_key;
		}
		if (!str) {
			if (!pb_skip_field(stream, wire_type)) return false;
			continue;
		}
		uint32_t len;
		if (!pb_decode_varint32(stream, &len) || len > stream->bytes_left) return false;
		const uint8_t *at = (const uint8_t *)stream->state;
		/* proto3 merges repeated occurrences of a string field: the last one wins,
		 * but a NUL or an over-long value in any of them is reported. */
		str->data = at;
		str->len = len;
		if (len > str->longest) str->longest = len;
		if (memchr(at, 0, len)) str->has_nul = true;
		if (!pb_read(stream, NULL, len)) return false;
	}
	return true;
}

static bool is_oneof_member(uint32_t tag) {
	crowd_v1_ClientMessage scratch;
	pb_field_iter_t field;
	return tag != crowd_v1_ClientMessage_request_id_tag &&
	       pb_field_iter_begin(&field, crowd_v1_ClientMessage_fields, &scratch) && pb_field_iter_find(&field, tag) &&
	       PB_HTYPE(field.type) == PB_HTYPE_ONEOF;
}

bool crowd_client_message_inspect(const uint8_t *data, size_t len, crowd_client_message_info *info) {
	crowd_v1_ClientMessage scratch;
	pb_istream_t stream = pb_istream_from_buffer(data, len);
	memset(info, 0, sizeof *info);
	while (stream.bytes_left) {
		pb_wire_type_t wire_type;
		uint32_t tag;
		bool eof;
		if (!pb_decode_tag(&stream, &wire_type, &tag, &eof)) return eof;
		if (tag == crowd_v1_ClientMessage_request_id_tag && wire_type == PB_WT_VARINT) {
			uint64_t v;
			if (!pb_decode_varint(&stream, &v)) return false;
			info->request_id = (uint32_t)v;
		} else if (wire_type == PB_WT_STRING && is_oneof_member(tag)) {
			pb_field_iter_t field;
			const pb_msgdesc_t *desc = NULL;
			if (pb_field_iter_begin(&field, crowd_v1_ClientMessage_fields, &scratch) &&
			    pb_field_iter_find(&field, tag))
				desc = field.submsg_desc;
			if (!desc) { /* unknown field or not a message: opaque bytes, as decoding skips them */
				if (!pb_skip_field(&stream, wire_type)) return false;
				continue;
			}
			if (info->which_msg != tag) info->longest_list = 0; /* another case replaces the first */
			info->which_msg = tag;
			pb_istream_t sub;
			if (!pb_make_string_substream(&stream, &sub)) return false;
			bool ok = tag == crowd_v1_ClientMessage_hello_tag ? hello_strings_in(&sub, info)
			                                                  : longest_list_in(&sub, desc, &info->longest_list);
			if (!pb_close_string_substream(&stream, &sub) || !ok) return false;
		} else if (!pb_skip_field(&stream, wire_type)) {
			return false;
		}
	}
	return true;
}

bool crowd_client_message_peek(const uint8_t *data, size_t len, uint32_t *request_id, uint32_t *longest_list) {
	crowd_client_message_info info;
	bool ok = crowd_client_message_inspect(data, len, &info);
	*request_id = info.request_id;
	*longest_list = info.longest_list;
	return ok;
}

/* Over-long Hello strings would fail nanopb's fixed-size decode. In a copy of
 * the frame their field number becomes CROWD_HELLO_SET_ASIDE_FIELD (reserved
 * in crowd.proto, one tag byte like fields 3, 4 and 6), which the decoder
 * skips as unknown; the receiver judges them from the inspection. */
#define CROWD_HELLO_SET_ASIDE_FIELD 9u
static bool set_aside_long_strings(uint8_t *copy, size_t len) {
	pb_istream_t stream = pb_istream_from_buffer(copy, len);
	while (stream.bytes_left) {
		pb_wire_type_t wire_type;
		uint32_t tag;
		bool eof;
		if (!pb_decode_tag(&stream, &wire_type, &tag, &eof)) return eof;
		if (tag != crowd_v1_ClientMessage_hello_tag || wire_type != PB_WT_STRING) {
			if (!pb_skip_field(&stream, wire_type)) return false;
			continue;
		}
		pb_istream_t sub;
		if (!pb_make_string_substream(&stream, &sub)) return false;
		while (sub.bytes_left) {
			uint8_t *tag_byte = (uint8_t *)sub.state;
			if (!pb_decode_tag(&sub, &wire_type, &tag, &eof)) return eof;
			size_t max = tag == crowd_v1_Hello_token_tag         ? sizeof(((crowd_v1_Hello *)0)->token) - 1
			             : tag == crowd_v1_Hello_client_name_tag ? sizeof(((crowd_v1_Hello *)0)->client_name) - 1
			             : tag == crowd_v1_Hello_resume_key_tag  ? sizeof(((crowd_v1_Hello *)0)->resume_key) - 1
			                                                     : 0;
			if (wire_type == PB_WT_STRING && max && (uint8_t *)sub.state == tag_byte + 1) {
				uint32_t slen;
				pb_istream_t peek = sub;
				if (pb_decode_varint32(&peek, &slen) && slen > max)
					*tag_byte = (uint8_t)(CROWD_HELLO_SET_ASIDE_FIELD << 3 | PB_WT_STRING);
			}
			if (!pb_skip_field(&sub, wire_type)) return false;
		}
		if (!pb_close_string_substream(&stream, &sub)) return false;
	}
	return true;
}

bool crowd_decode_client_message_checked(const uint8_t *data, size_t len, crowd_v1_ClientMessage *out,
                                         const crowd_client_message_info *info) {
	const size_t token_max = sizeof out->msg.hello.token - 1, name_max = sizeof out->msg.hello.client_name - 1,
	             key_max = sizeof out->msg.hello.resume_key - 1;
	if (info->token.longest <= token_max && info->client_name.longest <= name_max &&
	    info->resume_key.longest <= key_max)
		return crowd_decode_client_message(data, len, out);
	uint8_t *copy = malloc(len);
	if (!copy) return false;
	memcpy(copy, data, len);
	bool ok = set_aside_long_strings(copy, len) && crowd_decode_client_message(copy, len, out);
	free(copy);
	return ok;
}

bool crowd_world_name_valid(const char *name) {
	if (!name) return false;
	size_t len = 0;
	for (; name[len]; len++) {
		const char ch = name[len];
		if (len >= CROWD_WORLD_NAME_MAX) return false;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
		      ch == '.' || ch == '-'))
			return false;
	}
	return len > 0 && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}
