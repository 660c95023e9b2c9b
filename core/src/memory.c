/* memory.c — allocation through the world definition's allocator, counted
 * (memory.h). */
#include <stdlib.h>
#include <string.h>

#include "memory.h"

static void *default_alloc(size_t size, void *user)
{
	(void)user;
	return malloc(size);
}

static void default_free(void *ptr, size_t size, void *user)
{
	(void)size;
	(void)user;
	free(ptr);
}

orca_heap orca_heap_make(const orca_allocator *a)
{
	orca_heap h;
	memset(&h, 0, sizeof h);
	if (a && a->alloc) {
		h.allocator = *a;
	} else {
		h.allocator.alloc = default_alloc;
		h.allocator.free = default_free;
		h.allocator.user = NULL;
	}
	return h;
}

void *orca_heap_alloc(orca_heap *h, size_t size)
{
	h->calls++;
	return h->allocator.alloc(size, h->allocator.user);
}

void orca_heap_free(orca_heap *h, void *p, size_t size)
{
	if (!p)
		return;
	h->calls++;
	h->allocator.free(p, size, h->allocator.user);
}

bool orca_heap_reserve(orca_heap *h, void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap && *arr)
		return true;
	uint64_t new_cap = (uint64_t)*cap * 2;
	if (new_cap < need)
		new_cap = need;
	if (new_cap < 16)
		new_cap = 16;
	if (new_cap > UINT32_MAX)
		new_cap = UINT32_MAX;
	void *p = orca_heap_alloc(h, (size_t)new_cap * elem);
	if (!p)
		return false;
	if (*arr) {
		memcpy(p, *arr, (size_t)*cap * elem);
		orca_heap_free(h, *arr, (size_t)*cap * elem);
	}
	*arr = p;
	*cap = (uint32_t)new_cap;
	return true;
}

bool orca_heap_regrow(orca_heap *h, void **arr, size_t elem, uint32_t old_cap, uint32_t new_cap)
{
	void *p = orca_heap_alloc(h, (size_t)new_cap * elem);
	if (!p)
		return false;
	if (*arr) {
		memcpy(p, *arr, (size_t)old_cap * elem);
		orca_heap_free(h, *arr, (size_t)old_cap * elem);
	}
	*arr = p;
	return true;
}
