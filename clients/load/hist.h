/* hist.h — a latency histogram in the manner of HdrHistogram: log-spaced
 * buckets, each power of two split into 2^sub_bits linear sub-buckets, so any
 * recorded value is known to within 1/2^sub_bits of itself. Fixed memory,
 * O(1) record, percentiles by one walk over the buckets. */
#ifndef CROWD_LOAD_HIST_H
#define CROWD_LOAD_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct load_hist {
	uint64_t *counts;
	uint32_t bucket_count;
	uint32_t sub_bits; /* 2^sub_bits sub-buckets per power of two */
	uint32_t max_bits; /* values >= 2^max_bits are clamped to 2^max_bits - 1 */
	uint64_t total;    /* values recorded */
	uint64_t clamped;  /* of which clamped at the top */
	uint64_t min, max; /* exact, as recorded (before clamping) */
	double sum;        /* for the mean */
} load_hist;

/** Create an empty histogram for values in [0, 2^max_bits) with relative
 * precision 2^-sub_bits (1 <= sub_bits <= 16, sub_bits < max_bits <= 64).
 * False on bad parameters or allocation failure. */
bool load_hist_init(load_hist *h, uint32_t sub_bits, uint32_t max_bits);
void load_hist_free(load_hist *h);
void load_hist_reset(load_hist *h);

/** Record one value (n times). */
void load_hist_record(load_hist *h, uint64_t value);
void load_hist_record_n(load_hist *h, uint64_t value, uint64_t n);

/** Add every count of src into dst; false if their shapes differ. */
bool load_hist_merge(load_hist *dst, const load_hist *src);

/** The bucket a value falls into (exposed so tests can check precision). */
uint32_t load_hist_index(const load_hist *h, uint64_t value);
/** The smallest and the largest value of a bucket. */
uint64_t load_hist_bucket_low(const load_hist *h, uint32_t index);
uint64_t load_hist_bucket_high(const load_hist *h, uint32_t index);

/** The value at percentile p (0..100): the recorded value of rank
 * ceil(p/100 * total) (at least 1), given as the highest value of its bucket
 * but never above the exact max nor below the exact min. 0 if empty. */
uint64_t load_hist_percentile(const load_hist *h, double p);
double load_hist_mean(const load_hist *h);

#endif /* CROWD_LOAD_HIST_H */
