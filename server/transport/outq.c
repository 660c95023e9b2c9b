/* outq.c — see outq.h. */
#include "outq.h"

#include <stdlib.h>
#include <string.h>

#ifdef __linux__
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#endif

struct outq_item {
	outq_item *next;
	uv_write_t req;
	outq *q;
	size_t len;
	uint8_t data[];
};

void outq_init(outq *q, uv_stream_t *stream, void (*written)(void *, int, size_t), void *owner) {
	memset(q, 0, sizeof *q);
	q->stream = stream;
	q->written = written;
	q->owner = owner;
}

static void on_write(uv_write_t *req, int status) {
	outq_item *it = req->data;
	outq *q = it->q;
	size_t len = it->len;
	free(it);
	/* A cancelled write (the handle closed) must not touch the queue: its owner may be gone. */
	if (status == UV_ECANCELED) return;
	q->in_flight -= len;
	if (status < 0) q->failed = true;
	if (status == 0 && !q->failed) {
		while (q->head && q->in_flight < OUTQ_IN_FLIGHT_MAX) {
			outq_item *next = q->head;
			q->head = next->next;
			if (!q->head) q->tail = NULL;
			q->held -= next->len;
			uv_buf_t b = uv_buf_init((char *)next->data, (unsigned)next->len);
			if (uv_write(&next->req, q->stream, &b, 1, on_write) != 0) {
				free(next);
				q->failed = true;
				status = UV_EPIPE;
				break;
			}
			q->in_flight += next->len;
		}
	}
	q->written(q->owner, status, len);
}

static int hand_over(outq *q, outq_item *it) {
	uv_buf_t b = uv_buf_init((char *)it->data, (unsigned)it->len);
	int rc = uv_write(&it->req, q->stream, &b, 1, on_write);
	if (rc != 0) {
		free(it);
		q->failed = true;
		return rc;
	}
	q->in_flight += it->len;
	return 0;
}

int outq_write(outq *q, const void *data, size_t len) {
	if (q->failed) return UV_EPIPE;
	size_t done = 0;
	if (q->in_flight == 0 && !q->head && uv_stream_get_write_queue_size(q->stream) == 0) {
		uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
		int n = uv_try_write(q->stream, &b, 1);
		if (n > 0)
			done = (size_t)n;
		else if (n != UV_EAGAIN && n != UV_ENOSYS) {
			q->failed = true;
			return n;
		}
	}
	if (done == len) return 0;
	size_t rest = len - done;
	outq_item *it = malloc(sizeof *it + rest);
	if (!it) {
		q->failed = true;
		return UV_ENOMEM;
	}
	memcpy(it->data, (const uint8_t *)data + done, rest);
	it->len = rest;
	it->next = NULL;
	it->q = q;
	it->req.data = it;
	/* A partly written message always goes to libuv at once (done > 0 means nothing was in flight). */
	if (q->in_flight < OUTQ_IN_FLIGHT_MAX && !q->head) return hand_over(q, it);
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
	q->held += rest;
	return 0;
}

size_t outq_pending(const outq *q) {
	return q->held + q->in_flight;
}

size_t outq_kernel_unsent(const outq *q) {
#ifdef SIOCOUTQNSD
	uv_os_fd_t fd;
	int n = 0;
	if (q->failed || uv_fileno((const uv_handle_t *)q->stream, &fd) != 0) return 0;
	if (ioctl(fd, SIOCOUTQNSD, &n) != 0 || n < 0) return 0;
	return (size_t)n;
#else
	(void)q;
	return 0;
#endif
}

bool outq_set_unsent_limit(outq *q, size_t bytes) {
#ifdef TCP_NOTSENT_LOWAT
	uv_os_fd_t fd;
	int v = bytes > (size_t)INT32_MAX ? INT32_MAX : (int)bytes;
	q->lowat = uv_fileno((const uv_handle_t *)q->stream, &fd) == 0 &&
	           setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, sizeof v) == 0;
#else
	(void)bytes;
	q->lowat = false;
#endif
	return q->lowat;
}

size_t outq_backlog(const outq *q) {
	size_t here = outq_pending(q);
	if (q->lowat && here == 0) return 0;
	return here + outq_kernel_unsent(q);
}

void outq_discard(outq *q) {
	while (q->head) {
		outq_item *next = q->head->next;
		free(q->head);
		q->head = next;
	}
	q->tail = NULL;
	q->held = 0;
}

int outq_submit_all(outq *q) {
	while (q->head) {
		outq_item *it = q->head;
		q->head = it->next;
		q->held -= it->len;
		int rc = hand_over(q, it);
		if (rc != 0) {
			outq_discard(q);
			return rc;
		}
	}
	q->tail = NULL;
	return 0;
}

void outq_free(outq *q) {
	outq_discard(q);
}
