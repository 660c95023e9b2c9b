/* neighbor_list.h — the k-nearest list both neighbour searches fill, kept as
 * RVO2's insertAgentNeighbor keeps it: sorted by squared distance, equal
 * distances in the order they were offered, the range shrinking to the k-th
 * distance once k are in. */
#ifndef ORCA_NEIGHBOR_LIST_H
#define ORCA_NEIGHBOR_LIST_H

#include <stdint.h>

typedef struct nb_entry {
	float dist_sq;
	uint32_t index; /* tree index for agents, vertex index for obstacles */
} nb_entry;

/* Stable insertion sort by distance: equal distances keep discovery order,
 * which is what RVO2's incremental insertion produces. */
static inline void nb_sort(nb_entry *out, uint32_t count)
{
	for (uint32_t k = 1; k < count; ++k) {
		const nb_entry e = out[k];
		uint32_t i = k;
		while (i != 0 && e.dist_sq < out[i - 1].dist_sq) {
			out[i] = out[i - 1];
			--i;
		}
		out[i] = e;
	}
}

/* One candidate closer than *range_sq. Until the list is full the range does
 * not move, so candidates are appended and sorted once when it fills; from
 * then on each goes to its place and the range shrinks. */
static inline void nb_offer(nb_entry *out, uint32_t *count, uint32_t max_neighbors, float *range_sq,
                            float dist_sq, uint32_t j)
{
	if (*count < max_neighbors) {
		out[*count].dist_sq = dist_sq;
		out[*count].index = j;
		if (++*count == max_neighbors) {
			nb_sort(out, *count);
			*range_sq = out[*count - 1].dist_sq;
		}
		return;
	}
	uint32_t i = *count - 1;
	while (i != 0 && dist_sq < out[i - 1].dist_sq) {
		out[i] = out[i - 1];
		--i;
	}
	out[i].dist_sq = dist_sq;
	out[i].index = j;
	*range_sq = out[*count - 1].dist_sq;
}

#endif /* ORCA_NEIGHBOR_LIST_H */
