/* tick_queue.h — every world's next tick deadline in one min-heap, earliest
 * first (equal deadlines in the order queued), so the loop starts the due
 * ticks earliest-deadline-first from one timer, and can start them between
 * two worlds' snapshot fan-outs instead of after all of them; and where a new
 * world's deadlines go in its period (tick_phase_place), so that worlds
 * opened together do not all tick at once; and the 99th percentile of a
 * world's recent lateness (tick_lateness_p99). Pure data: no libuv, no rooms
 * (room.c drives it). */
#ifndef CROWD_SERVER_TICK_QUEUE_H
#define CROWD_SERVER_TICK_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#define TICK_ENTRY_NONE UINT32_MAX

/** One world's place in the queue, kept in the world (room.h). Zero it, then
 * tick_entry_init. */
typedef struct tick_entry {
	uint64_t deadline_ns;
	uint64_t seq;   /* queued order: equal deadlines go first-queued first */
	uint32_t index; /* its heap slot; TICK_ENTRY_NONE: not queued */
} tick_entry;

typedef struct tick_queue {
	tick_entry **heap;
	uint32_t count, cap;
	uint64_t next_seq;
} tick_queue;

void tick_entry_init(tick_entry *e);
bool tick_entry_queued(const tick_entry *e);

/** Queue e (not queued) at deadline_ns. false: out of memory (e not queued). */
bool tick_queue_push(tick_queue *q, tick_entry *e, uint64_t deadline_ns);
/** Take e out of the queue (nothing if it is not in it). */
void tick_queue_remove(tick_queue *q, tick_entry *e);
/** The earliest entry, or NULL when empty. */
tick_entry *tick_queue_peek(const tick_queue *q);
/** Take out and return the earliest entry whose deadline is <= now_ns, or NULL. */
tick_entry *tick_queue_pop_due(tick_queue *q, uint64_t now_ns);
void tick_queue_free(tick_queue *q);

/** The phase (offset in [0, period_ns)) for a new world's deadlines: the
 * middle of the widest gap between `phases` (the n phases of the worlds
 * already ticking at this period, each < period_ns, any order; sorted in
 * place), the earliest such gap on a tie; 0 when n is 0. Placed one after
 * another, worlds spread evenly over the period. */
uint64_t tick_phase_place(uint64_t period_ns, uint64_t *phases, uint32_t n);

/** The first deadline at or after now_ns whose offset in the period is phase_ns. */
uint64_t tick_phase_first_deadline(uint64_t now_ns, uint64_t period_ns, uint64_t phase_ns);

/** The 99th percentile of n samples (n <= TICK_LATENESS_SAMPLES_MAX): the
 * value an ascending sort puts at index floor(0.99 n), 0 when n is 0. Found
 * as the (n - that index)-th largest, keeping only the few largest: /metrics
 * asks it of every world at every scrape, and sorting every world's samples
 * took most of a scrape with 200 worlds. */
#define TICK_LATENESS_SAMPLES_MAX 4096u
float tick_lateness_p99(const float *samples, uint32_t n);

#endif
