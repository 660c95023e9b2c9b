/* internal.h — every private header of the engine at once, for white-box
 * code outside core/src (tests and benchmarks that read the world's fields).
 * The engine's own files include only the headers they use:
 *   memory.h          the allocator and its call count (a leaf)
 *   pool.h            the thread pool
 *   vec.h             2-D float math in RVO2's operation order
 *   neighbor_list.h   the k-nearest list
 *   linear_program.h  ORCA's lines and linear programs
 *   query_grid.h      box queries' grid of the live agents
 *   agents.h          agent types, the agent kd-tree and neighbour search
 *   obstacles.h       obstacle types, RVO2's obstacle tree and the edge grid
 *   world_internal.h  the world struct and world.c's helpers
 *   velocity.h        the velocity stage
 *   quality.h         quality mode (its velocity-stage hooks: quality_hooks.h) */
#ifndef ORCA_INTERNAL_H
#define ORCA_INTERNAL_H

#include "agents.h"
#include "linear_program.h"
#include "memory.h"
#include "neighbor_list.h"
#include "obstacles.h"
#include "pool.h"
#include "quality.h"
#include "query_grid.h"
#include "vec.h"
#include "velocity.h"
#include "world_internal.h"

#endif /* ORCA_INTERNAL_H */
