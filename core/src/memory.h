/* memory.h — the engine's allocations: every block comes from one
 * orca_allocator (the world definition's, or malloc/free) and every call is
 * counted, so a step can report how many it made (orca_step_profile's
 * allocations; a step past its high-water marks makes none). A leaf: it
 * knows nothing of the world; the pool and the world's modules take an
 * orca_heap. The world's own shorthands, orca_mem_alloc(w, ...) and the
 * rest, are in world_internal.h. */
#ifndef ORCA_MEMORY_H
#define ORCA_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "orca/orca.h"

typedef struct orca_heap {
	orca_allocator allocator;
	uint64_t calls; /* every allocator call ever made */
} orca_heap;

/* The allocator a definition asks for: its alloc and free, or both NULL for
 * malloc and free. */
orca_heap orca_heap_make(const orca_allocator *a);

void *orca_heap_alloc(orca_heap *h, size_t size);
/* NULL is no call. size: what was asked of orca_heap_alloc. */
void orca_heap_free(orca_heap *h, void *p, size_t size);

/* Grow *arr (elements of elem bytes) to hold at least need, doubling (16 at
 * least, UINT32_MAX at most); keeps the contents. False: no memory (*arr and
 * *cap as they were). */
bool orca_heap_reserve(orca_heap *h, void **arr, uint32_t *cap, uint32_t need, size_t elem);

/* Grow *arr from old_cap to new_cap elements (the caller keeps the
 * capacity); keeps the first old_cap. False: no memory (*arr as it was). */
bool orca_heap_regrow(orca_heap *h, void **arr, size_t elem, uint32_t old_cap, uint32_t new_cap);

#endif /* ORCA_MEMORY_H */
