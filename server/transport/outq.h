/* outq.h — a connection's output: whole messages in order, at most a bounded
 * amount handed to libuv at a time and the rest held here, so that what is
 * held can be dropped whole (a slow consumer is cut: its Error goes right after
 * what the kernel already has, not behind megabytes that will never be read). */
#ifndef CROWD_SERVER_OUTQ_H
#define CROWD_SERVER_OUTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

/* Bytes handed to libuv at once (at least one whole message is, however large). */
#define OUTQ_IN_FLIGHT_MAX 65536u

typedef struct outq_item outq_item;

typedef struct outq {
	uv_stream_t *stream;
	/** Called after each libuv write completes (status < 0: it failed, and the
	 * owner should close); `len` bytes left the queue. */
	void (*written)(void *owner, int status, size_t len);
	void *owner;
	outq_item *head, *tail; /* held, not handed to libuv yet */
	size_t held;            /* bytes in head..tail */
	size_t in_flight;       /* bytes handed to libuv, not written yet */
	bool failed;
	bool lowat; /* the kernel keeps at most about OUTQ's notsent low-water mark unsent */
} outq;

void outq_init(outq *q, uv_stream_t *stream, void (*written)(void *, int, size_t), void *owner);
/** Queue one whole message (copied). Returns 0, or a libuv error (the owner closes). */
int outq_write(outq *q, const void *data, size_t len);
/** Bytes accepted and not yet written to the kernel. */
size_t outq_pending(const outq *q);
/** Bytes the kernel holds for the stream and has not sent yet (the peer's
 * window is closed, or the network is slower). 0 where it cannot be asked. */
size_t outq_kernel_unsent(const outq *q);
/** Let the kernel take only about `bytes` it cannot send yet (TCP_NOTSENT_LOWAT):
 * past that, writes wait here, where they can be counted and dropped. Without
 * it a client that stops reading fills the socket's send buffer (autotuned up
 * to several MiB) before anything waits here. False where unsupported. */
bool outq_set_unsent_limit(outq *q, size_t bytes);
/** What the output limits count: outq_pending, plus what the kernel holds
 * unsent when anything waits here (with the unsent limit set, an empty queue
 * means the kernel holds at most about that limit, and it is not asked). */
size_t outq_backlog(const outq *q);
/** Drop every message held (never a partly written one). */
void outq_discard(outq *q);
/** Hand everything held to libuv now (before a shutdown, which waits for libuv's writes only). */
int outq_submit_all(outq *q);
/** Free what is held; the stream is closing (libuv cancels what it has). */
void outq_free(outq *q);

#endif
