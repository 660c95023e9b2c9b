/* pool.h — the engine's thread pool (pool.c): worker_count - 1 threads and
 * the caller run the chunks of a parallel loop. Its memory comes from a heap
 * (memory.h); it knows nothing of the world. */
#ifndef ORCA_POOL_H
#define ORCA_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "memory.h"

typedef void (*orca_task_fn)(void *ctx, uint32_t begin, uint32_t end, int worker);
typedef struct orca_pool orca_pool;

/* ORCA_OK or ORCA_ERR_NO_MEMORY. Fewer threads than asked for when the
 * system refuses some (the results are the same bits). */
int orca_pool_create(orca_heap *heap, int workers, orca_pool **out);
/* pool from orca_pool_create with the same heap; NULL is nothing. */
void orca_pool_destroy(orca_heap *heap, orca_pool *pool);
/* Run fn over [0, count) in chunks of `grain`, on every worker; returns when done. */
void orca_pool_run(orca_pool *pool, orca_task_fn fn, void *ctx, uint32_t count, uint32_t grain);
/* The same with chunks of a share of what is left, at least min_grain: each
 * worker walks long runs of neighbouring items (a loop over the tree order
 * then reads the data its neighbours read, in its own cache) and the short
 * chunks at the end still even out the finish. */
void orca_pool_run_guided(orca_pool *pool, orca_task_fn fn, void *ctx, uint32_t count, uint32_t min_grain);
/* Let waiting threads spin briefly before sleeping (worth it when steps are
 * long enough that a wake-up per job matters; off by default). */
void orca_pool_set_spin(orca_pool *pool, bool spin);

#endif /* ORCA_POOL_H */
