/* overlap_auto.c — --snapshot-overlap=auto's choice (overlap_auto.h). */
#include "overlap_auto.h"

/* The expectation loses 1/32 a tick on the pool: one 30 ms send is
 * forgotten in 47 ticks where 6.75 ms fit (2.4 s at 20 Hz); a world whose
 * sends at once really are that slow tries one that often (its next tick
 * waits for it) */
#define OVERLAP_AUTO_SHRINK 32u

void overlap_auto_sent_at_once(overlap_auto *a, uint64_t ns) {
	a->at_once_ns = ns;
}

void overlap_auto_sent_on_pool(overlap_auto *a) {
	a->at_once_ns -= a->at_once_ns / OVERLAP_AUTO_SHRINK;
}

bool overlap_auto_pool(const overlap_auto *a, uint64_t now_ns, uint64_t next_ns, uint64_t period_ns) {
	const uint64_t out_by = now_ns + 2 * a->at_once_ns + period_ns / 4;
	return out_by >= next_ns;
}
