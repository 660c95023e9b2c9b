/* fuzz_client.c — what a server sends to the C client library (clients/c):
 * the bytes arrive on a socket, go through crowd_client_poll: the frame
 * splitter, ServerMessage decoding, snapshot deltas applied to the client's
 * view, obstacle sets, and the float arrays published to callbacks. The
 * client struct is made as crowd_client_connect makes it, over a socketpair
 * (client.c is compiled into this target to reach that constructor). */
#include "../../clients/c/src/client.c"

#include <sys/socket.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_snapshot(void *user, const crowd_client_snapshot *s)
{
	float sum = 0; /* read everything the client published */
	for (uint32_t i = 0; i < s->count; i++)
		sum += s->x[i] + s->y[i] + s->vx[i] + s->vy[i] + s->radius[i] + (float)s->id[i];
	*(volatile float *)user = sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
		abort();
	int sndbuf = 1 << 20;
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
	crowd_client_options o = crowd_client_default_options();
	static float published;
	o.callbacks.on_snapshot = on_snapshot;
	o.user = &published;
	o.max_frame = 1u << 20;
	crowd_client *c = calloc(1, sizeof *c);
	if (!c)
		abort();
	c->fd = sv[0];
	c->options = o;
	c->next_request_id = 1;
	c->precision = 1.0f;
	crowd_buf_init(&c->out);
	crowd_frame_splitter_init(&c->in, o.max_frame);
	crowd_view_init(&c->view);
	crowd_obstacle_set_init(&c->obstacles);

	size_t off = 0;
	while (c->state == 0) {
		if (off < size) {
			ssize_t n = write(sv[1], data + off, size - off);
			if (n > 0)
				off += (size_t)n;
		} else if (sv[1] >= 0) {
			close(sv[1]);
			sv[1] = -1;
		}
		int rc = crowd_client_poll(c, 0);
		if (rc < 0)
			break;
	}
	crowd_client_close(c, 0);
	if (sv[1] >= 0)
		close(sv[1]);
	return 0;
}
