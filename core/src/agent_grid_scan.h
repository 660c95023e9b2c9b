/* agent_grid_scan.h — the grid scan of agent_neighbors.c opened to the tests:
 * its AVX2 and SSE2 builds must answer every query alike (the same lists, the
 * same refusals), and a test can only check that by asking both (and a
 * benchmark time both in one run: tests/bench/grid_scan_bench.c). */
#ifndef ORCA_AGENT_GRID_SCAN_H
#define ORCA_AGENT_GRID_SCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "neighbor_list.h"
#include "vec.h"

struct orca_world;

/* The cap nearest agents (tree indices, self left out) closer than radius to
 * position, sorted by distance, from the grid of the last step (grid_on);
 * ORCA_NONE where the grid refuses (too big a square, too many candidates,
 * equal distances among the cap nearest). avx2: the AVX2 build, only where
 * orca_agent_grid_scan_has_avx2(). out holds cap + 1 entries. */
uint32_t orca_agent_grid_scan(const struct orca_world *w, uint32_t self, vec2 position, float radius, uint32_t cap,
                              nb_entry *out, bool avx2);

/* Tree index self's k nearest from the grid as the velocity stage asks for
 * them (last step's guessed disc, then wider), or ORCA_NONE where the kd-tree
 * must answer; avx2 as above. out holds k + 2 entries. */
uint32_t orca_agent_grid_neighbors(const struct orca_world *w, uint32_t self, uint32_t k, vec2 position, nb_entry *out,
                                   bool avx2);

/* The CPU (and the build) can take the AVX2 scan. */
bool orca_agent_grid_scan_has_avx2(void);

#endif /* ORCA_AGENT_GRID_SCAN_H */
