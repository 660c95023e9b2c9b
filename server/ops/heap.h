/* heap.h — how much heap memory the process holds, as the allocator itself
 * counts it. RSS alone cannot tell memory the server keeps from memory the
 * allocator caches: glibc keeps freed chunks in its arenas, and under
 * AddressSanitizer freed chunks wait in a quarantine (256 MiB by default) and
 * each size class keeps its own free list, so RSS climbs for a long time with
 * nothing leaked. `live_bytes` is what malloc handed out and free has not
 * taken back: the number to watch for growth. */
#ifndef CROWD_SERVER_HEAP_H
#define CROWD_SERVER_HEAP_H

#include <stdint.h>

typedef struct heap_usage {
	const char *allocator; /* "asan" (the sanitizer's allocator), "glibc", or "unknown" (all zero) */
	uint64_t live_bytes;   /* allocated and not freed (under ASan, a chunk in quarantine counts as freed) */
	uint64_t held_bytes;   /* what the allocator holds from the system: live + cached + quarantined */
} heap_usage;

/** The allocator's counters now (under glibc it walks the arenas: call it per
 * scrape, not per tick). */
heap_usage heap_usage_now(void);

#endif
