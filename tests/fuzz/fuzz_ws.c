/* fuzz_ws.c — the server's WebSocket frame parser (ws.c over wslay) after the
 * handshake: masking, fragmentation, control frames, close codes, the message
 * size limit. Messages are echoed, as a session answers them. Input: byte 0 =
 * chunk seed (bit 7: also ask to close half way), the rest = client bytes. */
#include <stddef.h>
#include <stdint.h>

#include "ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct sink {
	crowd_ws *ws;
	size_t written, messages;
} sink;

static bool on_write(void *user, const uint8_t *data, size_t len)
{
	sink *s = user;
	(void)data;
	s->written += len;
	return s->written < (4u << 20); /* a peer that stops reading: writes fail */
}

static void on_message(void *user, const uint8_t *data, size_t len)
{
	sink *s = user;
	s->messages++;
	crowd_ws_send(s->ws, data, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const size_t chunk = 1 + data[0] % 64u;
	const bool close_midway = data[0] & 0x80u;
	data++;
	size--;
	sink s = {0};
	crowd_ws_callbacks cb = {.user = &s, .write = on_write, .message = on_message};
	s.ws = crowd_ws_new(&cb, 64u << 10);
	if (!s.ws)
		return 0;
	for (size_t off = 0; off < size; off += chunk) {
		const size_t n = size - off < chunk ? size - off : chunk;
		if (close_midway && off >= size / 2)
			crowd_ws_close(s.ws, CROWD_WS_CLOSE_GOING_AWAY, "bye");
		if (!crowd_ws_feed(s.ws, data + off, n) || crowd_ws_finished(s.ws))
			break;
	}
	(void)crowd_ws_close_code_received(s.ws);
	crowd_ws_free(s.ws);
	return 0;
}
