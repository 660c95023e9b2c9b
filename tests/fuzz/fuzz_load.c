/* fuzz_load.c — what a server sends to crowd-load over WebSocket: the 101
 * handshake answer, the server-to-client frames (load_ws.c), and each binary
 * message through the ServerMessage/snapshot decoder that crowd-load applies
 * to its view (TCP connections use the same decoder behind the frame splitter).
 * Input: byte 0 = chunk seed, the rest = the server's bytes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <crowd/wire.h>

#include "load_ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const size_t chunk = 1 + data[0] % 64u;
	data++;
	size--;
	load_ws ws;
	load_ws_init(&ws, 1);
	crowd_buf out;
	crowd_buf_init(&out);
	/* the request fixes the key; the fuzzer's answer has to echo its digest
	 * ("dGhlIHNhbXBsZSBub25jZQ==" style keys are in the seeds via a fixed seed) */
	load_ws_request(&ws, "127.0.0.1", 80, "/ws", &out);
	crowd_view view;
	crowd_obstacle_set obst;
	crowd_view_init(&view);
	crowd_obstacle_set_init(&obst);
	bool open = false, done = false;
	for (size_t off = 0; off < size && !done; off += chunk) {
		const size_t n = size - off < chunk ? size - off : chunk;
		if (!load_ws_push(&ws, data + off, n))
			break;
		if (!open) {
			char err[128];
			const int h = load_ws_handshake(&ws, err, sizeof err);
			if (h < 0)
				break;
			if (h == 0)
				continue;
			open = true;
		}
		for (;;) {
			const uint8_t *msg;
			size_t len;
			out.len = 0;
			const load_ws_result r = load_ws_next(&ws, &msg, &len, &out);
			if (r == LOAD_WS_NEED_MORE)
				break;
			if (r != LOAD_WS_MESSAGE) {
				done = true;
				break;
			}
			crowd_v1_ServerMessage m;
			memset(&m, 0, sizeof m);
			crowd_snapshot_stats st;
			if (crowd_decode_server_message(msg, len, &m, &view, &obst, &st))
				crowd_server_message_release(&m);
		}
	}
	crowd_view_free(&view);
	crowd_obstacle_set_free(&obst);
	crowd_buf_free(&out);
	load_ws_free(&ws);
	return 0;
}
