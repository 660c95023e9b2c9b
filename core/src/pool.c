/* pool.c — the engine's own small thread pool: worker_count - 1 threads that
 * sleep on a condition variable and, with the caller, take chunks of a
 * parallel loop from an atomic counter. Which worker runs which chunk never
 * changes a result: every item writes only its own slot. */
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

struct orca_pool {
	int workers;
	pthread_t *threads;
	pthread_mutex_t mutex;
	pthread_cond_t start_cv, done_cv;
	uint64_t generation; /* bumped for every job */
	int running;         /* background workers still in the current job */
	bool quit;
	int allocated; /* entries in threads / args */
	struct thread_arg *args;
	/* the current job */
	orca_task_fn fn;
	void *ctx;
	uint32_t count, grain;
	atomic_uint next;
};

struct thread_arg {
	orca_pool *pool;
	int index;
};
typedef struct thread_arg thread_arg;

static void work(orca_pool *pool, int worker)
{
	for (;;) {
		const uint32_t begin = atomic_fetch_add_explicit(&pool->next, pool->grain, memory_order_relaxed);
		if (begin >= pool->count)
			return;
		const uint32_t end = (pool->count - begin < pool->grain) ? pool->count : begin + pool->grain;
		pool->fn(pool->ctx, begin, end, worker);
	}
}

static void *thread_main(void *p)
{
	thread_arg *arg = p;
	orca_pool *pool = arg->pool;
	const int index = arg->index;
	uint64_t seen = 0;
	pthread_mutex_lock(&pool->mutex);
	for (;;) {
		while (!pool->quit && pool->generation == seen)
			pthread_cond_wait(&pool->start_cv, &pool->mutex);
		if (pool->quit)
			break;
		seen = pool->generation;
		pthread_mutex_unlock(&pool->mutex);
		work(pool, index);
		pthread_mutex_lock(&pool->mutex);
		if (--pool->running == 0)
			pthread_cond_signal(&pool->done_cv);
	}
	pthread_mutex_unlock(&pool->mutex);
	return NULL;
}

int orca_pool_create(struct orca_world *w, int workers, orca_pool **out)
{
	orca_pool *pool = orca_mem_alloc(w, sizeof *pool);
	if (!pool)
		return ORCA_ERR_NO_MEMORY;
	*pool = (orca_pool){0};
	pool->workers = workers;
	atomic_init(&pool->next, 0);
	pthread_mutex_init(&pool->mutex, NULL);
	pthread_cond_init(&pool->start_cv, NULL);
	pthread_cond_init(&pool->done_cv, NULL);
	const int extra = workers - 1;
	if (extra > 0) {
		pool->threads = orca_mem_alloc(w, sizeof(pthread_t) * (size_t)extra);
		thread_arg *args = orca_mem_alloc(w, sizeof(thread_arg) * (size_t)extra);
		if (!pool->threads || !args) {
			orca_mem_free(w, pool->threads, sizeof(pthread_t) * (size_t)extra);
			orca_mem_free(w, args, sizeof(thread_arg) * (size_t)extra);
			orca_mem_free(w, pool, sizeof *pool);
			return ORCA_ERR_NO_MEMORY;
		}
		int started = 0;
		for (int i = 0; i < extra; ++i) {
			args[i].pool = pool;
			args[i].index = i + 1;
		}
		pool->args = args;
		pool->allocated = extra;
		for (; started < extra; ++started)
			if (pthread_create(&pool->threads[started], NULL, thread_main, &args[started]) != 0)
				break;
		pool->workers = started + 1; /* fewer threads still give the same bits */
	}
	*out = pool;
	return ORCA_OK;
}

void orca_pool_destroy(struct orca_world *w, orca_pool *pool)
{
	if (!pool)
		return;
	const int extra = pool->workers - 1;
	pthread_mutex_lock(&pool->mutex);
	pool->quit = true;
	pthread_cond_broadcast(&pool->start_cv);
	pthread_mutex_unlock(&pool->mutex);
	for (int i = 0; i < extra; ++i)
		pthread_join(pool->threads[i], NULL);
	pthread_mutex_destroy(&pool->mutex);
	pthread_cond_destroy(&pool->start_cv);
	pthread_cond_destroy(&pool->done_cv);
	orca_mem_free(w, pool->threads, sizeof(pthread_t) * (size_t)pool->allocated);
	orca_mem_free(w, pool->args, sizeof(thread_arg) * (size_t)pool->allocated);
	orca_mem_free(w, pool, sizeof *pool);
}

void orca_pool_run(orca_pool *pool, orca_task_fn fn, void *ctx, uint32_t count, uint32_t grain)
{
	if (count == 0)
		return;
	if (grain == 0)
		grain = 1;
	if (pool->workers <= 1 || count <= grain) {
		fn(ctx, 0, count, 0);
		return;
	}
	pthread_mutex_lock(&pool->mutex);
	pool->fn = fn;
	pool->ctx = ctx;
	pool->count = count;
	pool->grain = grain;
	atomic_store_explicit(&pool->next, 0, memory_order_relaxed);
	pool->running = pool->workers - 1;
	pool->generation++;
	pthread_cond_broadcast(&pool->start_cv);
	pthread_mutex_unlock(&pool->mutex);

	work(pool, 0);

	pthread_mutex_lock(&pool->mutex);
	while (pool->running > 0)
		pthread_cond_wait(&pool->done_cv, &pool->mutex);
	pthread_mutex_unlock(&pool->mutex);
}
