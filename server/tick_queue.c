/* tick_queue.c — the worlds' tick deadlines, earliest first, and where a new
 * world's deadlines go in its period (tick_queue.h). */
#include "tick_queue.h"

#include <stdlib.h>

void tick_entry_init(tick_entry *e) {
	e->deadline_ns = 0;
	e->seq = 0;
	e->index = TICK_ENTRY_NONE;
}

bool tick_entry_queued(const tick_entry *e) {
	return e->index != TICK_ENTRY_NONE;
}

static bool earlier(const tick_entry *a, const tick_entry *b) {
	return a->deadline_ns < b->deadline_ns || (a->deadline_ns == b->deadline_ns && a->seq < b->seq);
}

static void put(tick_queue *q, uint32_t i, tick_entry *e) {
	q->heap[i] = e;
	e->index = i;
}

static void sift_up(tick_queue *q, uint32_t i) {
	tick_entry *e = q->heap[i];
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (!earlier(e, q->heap[parent])) break;
		put(q, i, q->heap[parent]);
		i = parent;
	}
	put(q, i, e);
}

static void sift_down(tick_queue *q, uint32_t i) {
	tick_entry *e = q->heap[i];
	for (;;) {
		uint32_t child = 2 * i + 1;
		if (child >= q->count) break;
		if (child + 1 < q->count && earlier(q->heap[child + 1], q->heap[child])) child++;
		if (!earlier(q->heap[child], e)) break;
		put(q, i, q->heap[child]);
		i = child;
	}
	put(q, i, e);
}

bool tick_queue_push(tick_queue *q, tick_entry *e, uint64_t deadline_ns) {
	if (q->count == q->cap) {
		uint32_t cap = q->cap ? q->cap * 2 : 16;
		tick_entry **p = realloc(q->heap, sizeof *p * cap);
		if (!p) return false;
		q->heap = p;
		q->cap = cap;
	}
	e->deadline_ns = deadline_ns;
	e->seq = q->next_seq++;
	put(q, q->count++, e);
	sift_up(q, e->index);
	return true;
}

void tick_queue_remove(tick_queue *q, tick_entry *e) {
	uint32_t i = e->index;
	if (i == TICK_ENTRY_NONE || i >= q->count || q->heap[i] != e) return;
	e->index = TICK_ENTRY_NONE;
	tick_entry *last = q->heap[--q->count];
	if (i == q->count) return;
	put(q, i, last);
	/* the moved entry goes up or down from the hole, whichever it must */
	if (i > 0 && earlier(last, q->heap[(i - 1) / 2]))
		sift_up(q, i);
	else
		sift_down(q, i);
}

tick_entry *tick_queue_peek(const tick_queue *q) {
	return q->count ? q->heap[0] : NULL;
}

tick_entry *tick_queue_pop_due(tick_queue *q, uint64_t now_ns) {
	tick_entry *e = tick_queue_peek(q);
	if (!e || e->deadline_ns > now_ns) return NULL;
	tick_queue_remove(q, e);
	return e;
}

void tick_queue_free(tick_queue *q) {
	free(q->heap);
	q->heap = NULL;
	q->count = q->cap = 0;
}

static int compare_u64(const void *a, const void *b) {
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

uint64_t tick_phase_place(uint64_t period_ns, uint64_t *phases, uint32_t n) {
	if (n == 0 || period_ns == 0) return 0;
	qsort(phases, n, sizeof *phases, compare_u64);
	/* the gap that wraps around the period's end first: from the last phase to the first */
	uint64_t best_start = phases[n - 1], best_len = period_ns - phases[n - 1] + phases[0];
	for (uint32_t i = 0; i + 1 < n; i++) {
		uint64_t len = phases[i + 1] - phases[i];
		if (len > best_len || (len == best_len && phases[i] < best_start)) {
			best_start = phases[i];
			best_len = len;
		}
	}
	return (best_start + best_len / 2) % period_ns;
}

uint64_t tick_phase_first_deadline(uint64_t now_ns, uint64_t period_ns, uint64_t phase_ns) {
	if (period_ns == 0) return now_ns;
	uint64_t at = now_ns % period_ns;
	return now_ns + (phase_ns + period_ns - at) % period_ns;
}

float tick_lateness_p99(const float *samples, uint32_t n) {
	if (n == 0) return 0.0f;
	uint32_t k = (uint32_t)((double)n * 0.99);
	if (k >= n) k = n - 1;
	const uint32_t m = n - k; /* the m-th largest: at most n / 100 + 2 */
	float top[TICK_LATENESS_SAMPLES_MAX / 100 + 3]; /* the m largest so far, descending */
	if (m > sizeof top / sizeof top[0]) return 0.0f; /* n past TICK_LATENESS_SAMPLES_MAX */
	uint32_t have = 0;
	for (uint32_t i = 0; i < n; i++) {
		const float x = samples[i];
		if (have == m && !(x > top[m - 1])) continue;
		uint32_t j = have < m ? have++ : m - 1;
		while (j > 0 && top[j - 1] < x) {
			top[j] = top[j - 1];
			j--;
		}
		top[j] = x;
	}
	return top[m - 1];
}
