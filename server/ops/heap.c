/* heap.c — the allocator's own count of live and held heap bytes (heap.h). */
#include "heap.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CROWD_HEAP_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define CROWD_HEAP_ASAN 1
#endif

#if defined(CROWD_HEAP_ASAN)
#include <stddef.h>
/* The sanitizer runtime's allocator interface (<sanitizer/allocator_interface.h>
 * ships with clang, not with GCC, though libasan has the same functions). */
size_t __sanitizer_get_current_allocated_bytes(void);
size_t __sanitizer_get_heap_size(void);
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>
#define CROWD_HEAP_GLIBC 1
#endif

heap_usage heap_usage_now(void) {
	heap_usage u = {.allocator = "unknown"};
#if defined(CROWD_HEAP_ASAN)
	u.allocator = "asan";
	u.live_bytes = (uint64_t)__sanitizer_get_current_allocated_bytes();
	u.held_bytes = (uint64_t)__sanitizer_get_heap_size();
#elif defined(CROWD_HEAP_GLIBC)
	struct mallinfo2 mi = mallinfo2();
	u.allocator = "glibc";
	/* uordblks: in use in the arenas; hblkhd: large chunks mmapped on their own */
	u.live_bytes = (uint64_t)(mi.uordblks + mi.hblkhd);
	u.held_bytes = (uint64_t)(mi.arena + mi.hblkhd);
#endif
	return u;
}
