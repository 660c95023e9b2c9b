/* fuzz_frames.c — the bytes a TCP client sends, before any session state:
 * the varint frame splitter (fed in chunks whose sizes the input chooses), the
 * pre-decode peek (request id and longest list) and the ClientMessage decoder.
 * Input: byte 0 = chunk size seed, the rest = the stream. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <crowd/wire.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const size_t chunk = 1 + data[0] % 64u;
	data++;
	size--;
	crowd_frame_splitter sp;
	crowd_frame_splitter_init(&sp, 1u << 20);
	for (size_t off = 0; off < size; off += chunk) {
		const size_t n = size - off < chunk ? size - off : chunk;
		if (!crowd_frame_splitter_push(&sp, data + off, n))
			break;
		const uint8_t *frame;
		size_t len;
		crowd_frame_result r;
		while ((r = crowd_frame_splitter_next(&sp, &frame, &len)) == CROWD_FRAME_READY) {
			uint32_t rid = 0, longest = 0;
			const bool peeked = crowd_client_message_peek(frame, len, &rid, &longest);
			crowd_v1_ClientMessage msg;
			memset(&msg, 0, sizeof msg);
			if (crowd_decode_client_message(frame, len, &msg)) {
				/* what decodes must have peeked: the peek runs first on the server */
				if (!peeked)
					__builtin_trap();
				crowd_client_message_release(&msg);
			}
			/* the server's path: inspect, then decode with over-long Hello strings set aside */
			crowd_client_message_info info;
			if (crowd_client_message_inspect(frame, len, &info) &&
			    crowd_decode_client_message_checked(frame, len, &msg, &info))
				crowd_client_message_release(&msg);
		}
		if (r != CROWD_FRAME_NEED_MORE)
			break;
	}
	crowd_frame_splitter_free(&sp);
	return 0;
}
