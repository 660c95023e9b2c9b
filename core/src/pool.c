/* pool.c — the engine's own small thread pool: worker_count - 1 threads that
 * wait for a job and, with the caller, take chunks of a parallel loop from an
 * atomic counter. Which worker runs which chunk never changes a result: every
 * item writes only its own slot.
 *
 * A step runs about eight jobs back to back. Waking a thread asleep on a
 * condition variable (and waking the caller when the last chunk ends) costs
 * tens of microseconds on a virtual machine, each time; so both sides first
 * watch the job counters for a short while (POOL_SPIN_NS) and only then
 * sleep (for worlds of 4,096 agents or more: orca_pool_set_spin). The spin
 * is bounded, so idle pools still sleep, and it is off when
 * there are more workers than processors (a spinning thread would hold the
 * processor that the thread it waits for needs). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

#define POOL_SPIN_NS 100000 /* 0.1 ms: longer than a step's gaps between jobs */

struct orca_pool {
	int workers;
	bool spin;            /* workers <= processors */
	atomic_bool spin_now; /* and the world is big enough to care (orca_pool_set_spin) */
	pthread_t *threads;
	pthread_mutex_t mutex;
	pthread_cond_t start_cv, done_cv;
	atomic_uint_fast64_t generation; /* bumped for every job (release: the job's fields are set) */
	atomic_int running;              /* background workers still in the current job */
	atomic_bool quit;
	int allocated; /* entries in threads / args */
	struct thread_arg *args;
	/* the current job */
	orca_task_fn fn;
	void *ctx;
	uint32_t count, grain;
	bool guided;
	atomic_uint next;
	atomic_int *cpu; /* per worker (0: the caller) the processor it last started a job on */
};

struct thread_arg {
	orca_pool *pool;
	int index;
};
typedef struct thread_arg thread_arg;

static void work(orca_pool *pool, int worker)
{
	if (pool->guided) {
		/* a share of what is left (at least grain): long runs first, short
		 * ones at the end to even out the finish */
		const uint32_t parts = 2u * (uint32_t)pool->workers;
		uint32_t begin = atomic_load_explicit(&pool->next, memory_order_relaxed);
		for (;;) {
			if (begin >= pool->count)
				return;
			const uint32_t left = pool->count - begin;
			const uint32_t size = left / parts > pool->grain ? left / parts : pool->grain;
			const uint32_t end = left < size ? pool->count : begin + size;
			if (!atomic_compare_exchange_weak_explicit(&pool->next, &begin, end, memory_order_relaxed,
			                                           memory_order_relaxed))
				continue; /* begin is the counter's current value */
			pool->fn(pool->ctx, begin, end, worker);
			begin = atomic_load_explicit(&pool->next, memory_order_relaxed);
		}
	}
	for (;;) {
		const uint32_t begin = atomic_fetch_add_explicit(&pool->next, pool->grain, memory_order_relaxed);
		if (begin >= pool->count)
			return;
		const uint32_t end = (pool->count - begin < pool->grain) ? pool->count : begin + pool->grain;
		pool->fn(pool->ctx, begin, end, worker);
	}
}

/* A big world's pool with no more workers than processors: its threads
 * watch for work before they sleep, and keep to processors of their own. */
static bool spinning(const orca_pool *pool)
{
	return pool->spin && atomic_load_explicit(&pool->spin_now, memory_order_relaxed);
}

/* The processor the calling thread runs on, in cpu[worker]: a worker
 * started on the processor of a thread that started the job before it
 * (the caller, or a worker with a lower index) moves to another.
 *
 * A thread woken from its sleep lands where the kernel places it: on a
 * 2-core virtual machine a woken worker was seen on the processor of the
 * thread that woke it while the other processor idled, the two taking turns
 * for 10-15 ms of a step before the kernel moved one of them. Forbidding the
 * processor for a moment moves the thread at once; its own set of
 * processors is given back right after. Only when the pool is spinning. */
static void note_cpu(orca_pool *pool, int worker)
{
#ifdef __linux__
	const int cpu = sched_getcpu();
	if (cpu < 0)
		return;
	bool shared = false;
	for (int k = 0; k < worker && !shared; ++k)
		shared = atomic_load_explicit(&pool->cpu[k], memory_order_relaxed) == cpu;
	if (shared) {
		cpu_set_t own, others;
		if (sched_getaffinity(0, sizeof own, &own) == 0 && CPU_ISSET(cpu, &own) && CPU_COUNT(&own) > 1) {
			others = own;
			CPU_CLR(cpu, &others);
			if (sched_setaffinity(0, sizeof others, &others) == 0) /* moves this thread now */
				sched_setaffinity(0, sizeof own, &own);
		}
		const int now = sched_getcpu();
		if (now >= 0)
			atomic_store_explicit(&pool->cpu[worker], now, memory_order_relaxed);
		return;
	}
	atomic_store_explicit(&pool->cpu[worker], cpu, memory_order_relaxed);
#else
	(void)pool;
	(void)worker;
#endif
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spin until done(pool) or POOL_SPIN_NS have passed; true if done. */
static bool spin_until(orca_pool *pool, bool (*done)(orca_pool *, uint64_t), uint64_t arg)
{
	if (!spinning(pool))
		return false;
	const uint64_t t0 = now_ns();
	for (;;) {
		for (int k = 0; k < 32; ++k) {
			if (done(pool, arg))
				return true;
			cpu_relax();
		}
		if (now_ns() - t0 > POOL_SPIN_NS)
			return false;
		sched_yield(); /* on a busy machine, let the thread we wait for run */
	}
}

static bool job_posted(orca_pool *pool, uint64_t seen)
{
	return atomic_load_explicit(&pool->quit, memory_order_acquire) ||
	       atomic_load_explicit(&pool->generation, memory_order_acquire) != seen;
}

static bool job_done(orca_pool *pool, uint64_t unused)
{
	(void)unused;
	return atomic_load_explicit(&pool->running, memory_order_acquire) == 0;
}

static void *thread_main(void *p)
{
	thread_arg *arg = p;
	orca_pool *pool = arg->pool;
	const int index = arg->index;
	uint64_t seen = 0;
	for (;;) {
		if (!spin_until(pool, job_posted, seen)) {
			pthread_mutex_lock(&pool->mutex);
			while (!job_posted(pool, seen))
				pthread_cond_wait(&pool->start_cv, &pool->mutex);
			pthread_mutex_unlock(&pool->mutex);
		}
		if (atomic_load_explicit(&pool->quit, memory_order_acquire))
			break;
		seen = atomic_load_explicit(&pool->generation, memory_order_acquire);
		if (spinning(pool))
			note_cpu(pool, index);
		work(pool, index);
		if (atomic_fetch_sub_explicit(&pool->running, 1, memory_order_acq_rel) == 1) {
			/* the last one out: wake the caller if it went to sleep */
			pthread_mutex_lock(&pool->mutex);
			pthread_cond_signal(&pool->done_cv);
			pthread_mutex_unlock(&pool->mutex);
		}
	}
	return NULL;
}

int orca_pool_create(orca_heap *heap, int workers, orca_pool **out)
{
	orca_pool *pool = orca_heap_alloc(heap, sizeof *pool);
	if (!pool)
		return ORCA_ERR_NO_MEMORY;
	*pool = (orca_pool){0};
	pool->workers = workers;
	atomic_init(&pool->next, 0);
	atomic_init(&pool->generation, 0);
	atomic_init(&pool->running, 0);
	atomic_init(&pool->quit, false);
	atomic_init(&pool->spin_now, false);
	pthread_mutex_init(&pool->mutex, NULL);
	pthread_cond_init(&pool->start_cv, NULL);
	pthread_cond_init(&pool->done_cv, NULL);
	const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	pool->spin = cpus > 0 && workers <= cpus; /* set before any thread reads it */
	const int extra = workers - 1;
	if (extra > 0) {
		pool->threads = orca_heap_alloc(heap, sizeof(pthread_t) * (size_t)extra);
		thread_arg *args = orca_heap_alloc(heap, sizeof(thread_arg) * (size_t)extra);
		pool->cpu = orca_heap_alloc(heap, sizeof(atomic_int) * (size_t)workers);
		if (!pool->threads || !args || !pool->cpu) {
			orca_heap_free(heap, pool->threads, sizeof(pthread_t) * (size_t)extra);
			orca_heap_free(heap, args, sizeof(thread_arg) * (size_t)extra);
			orca_heap_free(heap, pool->cpu, sizeof(atomic_int) * (size_t)workers);
			orca_heap_free(heap, pool, sizeof *pool);
			return ORCA_ERR_NO_MEMORY;
		}
		for (int i = 0; i < workers; ++i)
			atomic_init(&pool->cpu[i], -1);
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

void orca_pool_destroy(orca_heap *heap, orca_pool *pool)
{
	if (!pool)
		return;
	const int extra = pool->workers - 1;
	pthread_mutex_lock(&pool->mutex);
	atomic_store_explicit(&pool->quit, true, memory_order_release);
	pthread_cond_broadcast(&pool->start_cv);
	pthread_mutex_unlock(&pool->mutex);
	for (int i = 0; i < extra; ++i)
		pthread_join(pool->threads[i], NULL);
	pthread_mutex_destroy(&pool->mutex);
	pthread_cond_destroy(&pool->start_cv);
	pthread_cond_destroy(&pool->done_cv);
	orca_heap_free(heap, pool->threads, sizeof(pthread_t) * (size_t)pool->allocated);
	orca_heap_free(heap, pool->args, sizeof(thread_arg) * (size_t)pool->allocated);
	if (pool->cpu)
		orca_heap_free(heap, pool->cpu, sizeof(atomic_int) * (size_t)(pool->allocated + 1)); /* workers as created */
	orca_heap_free(heap, pool, sizeof *pool);
}

static void run(orca_pool *pool, orca_task_fn fn, void *ctx, uint32_t count, uint32_t grain, bool guided)
{
	if (count == 0)
		return;
	if (grain == 0)
		grain = 1;
	if (pool->workers <= 1 || count <= grain) {
		fn(ctx, 0, count, 0);
		return;
	}
	/* every worker has left the last job (running was 0): the fields are
	 * free to write */
	pool->fn = fn;
	pool->ctx = ctx;
	pool->count = count;
	pool->grain = grain;
	pool->guided = guided;
	atomic_store_explicit(&pool->next, 0, memory_order_relaxed);
	atomic_store_explicit(&pool->running, pool->workers - 1, memory_order_relaxed);
	if (spinning(pool))
		note_cpu(pool, 0);
	pthread_mutex_lock(&pool->mutex);
	atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
	pthread_cond_broadcast(&pool->start_cv);
	pthread_mutex_unlock(&pool->mutex);

	work(pool, 0);

	if (!spin_until(pool, job_done, 0)) {
		pthread_mutex_lock(&pool->mutex);
		while (!job_done(pool, 0))
			pthread_cond_wait(&pool->done_cv, &pool->mutex);
		pthread_mutex_unlock(&pool->mutex);
	}
}

void orca_pool_run(orca_pool *pool, orca_task_fn fn, void *ctx, uint32_t count, uint32_t grain)
{
	run(pool, fn, ctx, count, grain, false);
}

void orca_pool_run_guided(orca_pool *pool, orca_task_fn fn, void *ctx, uint32_t count, uint32_t min_grain)
{
	run(pool, fn, ctx, count, min_grain, true);
}

void orca_pool_set_spin(orca_pool *pool, bool spin)
{
	atomic_store_explicit(&pool->spin_now, spin, memory_order_relaxed);
}
