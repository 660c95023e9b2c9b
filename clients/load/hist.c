/* hist.c — log-bucket histogram (see hist.h). Bucket layout: values below
 * 2·S (S = 2^sub_bits) have a bucket each; above, a value with highest bit m
 * is shifted right by m - sub_bits, and the shift and the S..2S-1 remainder
 * name the bucket — the layout HdrHistogram uses. */
#include "hist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t highest_bit(uint64_t v) {
	return 63u - (uint32_t)__builtin_clzll(v);
}

static uint64_t max_trackable(const load_hist *h) {
	return h->max_bits >= 64 ? UINT64_MAX : (((uint64_t)1 << h->max_bits) - 1);
}

bool load_hist_init(load_hist *h, uint32_t sub_bits, uint32_t max_bits) {
	memset(h, 0, sizeof *h);
	if (sub_bits < 1 || sub_bits > 16 || max_bits <= sub_bits || max_bits > 64) return false;
	h->sub_bits = sub_bits;
	h->max_bits = max_bits;
	h->bucket_count = load_hist_index(h, max_trackable(h)) + 1;
	h->counts = calloc(h->bucket_count, sizeof *h->counts);
	if (!h->counts) return false;
	load_hist_reset(h);
	return true;
}

void load_hist_free(load_hist *h) {
	free(h->counts);
	h->counts = NULL;
}

void load_hist_reset(load_hist *h) {
	if (h->counts) memset(h->counts, 0, h->bucket_count * sizeof *h->counts);
	h->total = h->clamped = 0;
	h->min = UINT64_MAX;
	h->max = 0;
	h->sum = 0;
}

uint32_t load_hist_index(const load_hist *h, uint64_t value) {
	uint64_t s = (uint64_t)1 << h->sub_bits;
	if (value < 2 * s) return (uint32_t)value;
	uint32_t shift = highest_bit(value) - h->sub_bits;
	return (uint32_t)(shift * s + (value >> shift));
}

uint64_t load_hist_bucket_low(const load_hist *h, uint32_t index) {
	uint64_t s = (uint64_t)1 << h->sub_bits;
	if (index < 2 * s) return index;
	uint32_t shift = (uint32_t)(index / s) - 1;
	uint64_t top = index - shift * s;
	return top << shift;
}

uint64_t load_hist_bucket_high(const load_hist *h, uint32_t index) {
	uint64_t s = (uint64_t)1 << h->sub_bits;
	if (index < 2 * s) return index;
	uint32_t shift = (uint32_t)(index / s) - 1;
	return load_hist_bucket_low(h, index) + (((uint64_t)1 << shift) - 1);
}

void load_hist_record_n(load_hist *h, uint64_t value, uint64_t n) {
	if (n == 0) return;
	if (value < h->min) h->min = value;
	if (value > h->max) h->max = value;
	h->sum += (double)value * (double)n;
	h->total += n;
	uint64_t top = max_trackable(h);
	if (value > top) {
		h->clamped += n;
		value = top;
	}
	h->counts[load_hist_index(h, value)] += n;
}

void load_hist_record(load_hist *h, uint64_t value) {
	load_hist_record_n(h, value, 1);
}

bool load_hist_merge(load_hist *dst, const load_hist *src) {
	if (dst->sub_bits != src->sub_bits || dst->max_bits != src->max_bits) return false;
	if (src->total == 0) return true;
	for (uint32_t i = 0; i < dst->bucket_count; i++) dst->counts[i] += src->counts[i];
	dst->total += src->total;
	dst->clamped += src->clamped;
	dst->sum += src->sum;
	if (src->min < dst->min) dst->min = src->min;
	if (src->max > dst->max) dst->max = src->max;
	return true;
}

uint64_t load_hist_percentile(const load_hist *h, double p) {
	if (h->total == 0) return 0;
	if (!(p > 0)) p = 0;
	if (p > 100) p = 100;
	uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->total);
	if (rank < 1) rank = 1;
	if (rank > h->total) rank = h->total;
	if (rank == 1) return h->min; /* the extremes are known exactly */
	if (rank == h->total) return h->max;
	uint64_t seen = 0;
	for (uint32_t i = 0; i < h->bucket_count; i++) {
		seen += h->counts[i];
		if (seen >= rank) {
			uint64_t v = load_hist_bucket_high(h, i);
			if (v > h->max) v = h->max;
			if (v < h->min) v = h->min;
			return v;
		}
	}
	return h->max;
}

double load_hist_mean(const load_hist *h) {
	return h->total ? h->sum / (double)h->total : 0.0;
}
