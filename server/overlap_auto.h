/* overlap_auto.h — --snapshot-overlap=auto's choice for a tick's snapshots:
 * sent at once by the loop thread and its helper (faster: no hand-offs
 * between the pool and the loop), or encoded on the pool while the next tick
 * steps. At once only when the ticks due next leave room for them: twice
 * what a send at once is expected to take, and a quarter of the period for a
 * send slowed by the machine (sent at once, the next tick waits for it).
 *
 * The expectation is what the last send at once took (a send on the pool
 * shares the cores with a step: no measure of a send at once). So that one
 * slow send (the machine paused the process) does not keep every later tick
 * on the pool, it shrinks by 1/32 for each tick sent on the pool: after a
 * few dozen such ticks a send at once is tried again, and measured anew.
 * Pure data: no libuv, no rooms (room.c drives it). */
#ifndef CROWD_SERVER_OVERLAP_AUTO_H
#define CROWD_SERVER_OVERLAP_AUTO_H

#include <stdbool.h>
#include <stdint.h>

typedef struct overlap_auto {
	uint64_t at_once_ns; /* what a send at once is expected to take; 0 at first */
} overlap_auto;

/** A tick's snapshots went at once and took ns. */
void overlap_auto_sent_at_once(overlap_auto *a, uint64_t ns);

/** A tick's snapshots went on the pool. */
void overlap_auto_sent_on_pool(overlap_auto *a);

/** true: on the pool. now_ns: the snapshots are ready; next_ns: the earliest
 * deadline among the ticks due next (this world's next, any other world's);
 * period_ns: this world's. */
bool overlap_auto_pool(const overlap_auto *a, uint64_t now_ns, uint64_t next_ns, uint64_t period_ns);

#endif
