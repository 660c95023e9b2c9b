/* agents.h — the agents' private types (a slot's parameters, the
 * tree-order copies the step reads, the kd-tree's nodes) and the agent
 * kd-tree (agent_tree.c) and neighbour search (agent_neighbors.c). The
 * world struct is in world_internal.h; the public agent API is agents.c. */
#ifndef ORCA_AGENTS_H
#define ORCA_AGENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "neighbor_list.h"
#include "query_grid.h"
#include "vec.h"

#define ORCA_MAX_LEAF_SIZE 10u
#define ORCA_HINT_MAX 16u /* neighbour lists up to this long are remembered for the next step */

struct orca_world;
struct worker_scratch;

typedef struct agent_params {
	float radius, max_speed, neighbor_dist, time_horizon, time_horizon_obst;
	float weight, pref_speed, arrival_distance;
	vec2 target;
	uint32_t max_neighbors, layer, mask, user_data;
	uint8_t steer_mode, arrived;
} agent_params;

/* What a neighbour needs to know about another agent, in kd-tree order. */
typedef struct tree_agent {
	float x, y, vx, vy; /* loaded as one SIMD vector */
	float radius, weight;
	uint32_t layer, mask;
} tree_agent;

/* What an agent's own computation reads, copied into kd-tree order each step
 * so the velocity stage streams through memory. */
typedef struct self_params {
	float radius, weight, max_speed, neighbor_dist;
	float time_horizon, time_horizon_obst, pvx, pvy;
	uint32_t layer, mask, max_neighbors, steer_mode;
	/* quality mode's move (velocity.c) checks arrival here, not in the
	 * agent's scattered agent_params line */
	float target_x, target_y, arrival_distance, pad;
} self_params;

/* RVO2's agent kd-tree node: [begin, end) of the tree order, children, box. */
typedef struct build_job {
	uint32_t begin, end, node, depth;
	uint32_t box_known; /* the parent wrote this node's box */
} build_job;

#define ORCA_FRONTIER_MAX 256u

typedef struct tree_visit {
	uint32_t node;
	float dist_sq;
} tree_visit;

/* What the neighbour query reads at an inner node, in one cache line: both
 * children's boxes as [left x, left y, right x, right y] minima and maxima. */
typedef struct query_node {
	float cmin[4], cmax[4];
	uint32_t begin, end, left, right;
	uint32_t pad[4];
} query_node;

#define ORCA_TREE_PAD 4u /* tree-order position arrays carry 4 spare floats for SIMD reads */

typedef struct agent_node {
	uint32_t begin, end, left, right;
	float min_x, max_x, min_y, max_y;
} agent_node;

/* Share of the avoidance `self` takes on against `other` (see orca.h):
 * w_self / (w_self + w_other); both 0 counts as both 0.5; an agent that the
 * other ignores (its mask lacks our layer) is left with all of it, unless we
 * never yield ourselves. 0.5/(0.5+0.5) is exactly 0.5, RVO2's factor. */
static inline float avoidance_share(float w_self, float w_other, bool other_avoids_us)
{
	if (w_self == 0.0f)
		return (w_other == 0.0f && other_avoids_us) ? 0.5f : 0.0f;
	if (!other_avoids_us)
		return 1.0f;
	if (w_self == w_other)
		return 0.5f; /* x / (x + x), exactly, without the division */
	return w_self / (w_self + w_other);
}

/* agent_tree.c */
void orca_agent_tree_build(struct orca_world *w);
/* After a step: the boxes are refitted to the moved agents lazily, by the
 * first box query (queries are rare; a step never reads them). */
void orca_agent_tree_refit(struct orca_world *w);
/* Refit now if one is pending (a box query would, on the pool): before
 * orca_world_parallel_for, so that queries from its workers only read. */
void orca_agent_tree_settle(struct orca_world *w);
uint32_t orca_agent_tree_query_neighbors(const struct orca_world *w, uint32_t self, float range_sq,
                                         uint32_t max_neighbors, uint32_t mask, nb_entry *out,
                                         tree_visit *stack);
/* Copy each agent of [begin, end) of the order into the tree-order arrays
 * (tagent, tself, tree_index), noting masks and weights that are not plain
 * in the worker's scratch (pool task; ctx is the world). */
void orca_agent_gather_task(void *ctx, uint32_t begin, uint32_t end, int worker);
void orca_agent_tree_query_box(const struct orca_world *w, vec2 lo, vec2 hi, orca_visit_fn fn, void *ctx);

/* agent_neighbors.c */
/* Room for the grid (on the calling thread: it may allocate); false: no grid
 * this step. Then the build, which any worker may run. */
bool orca_agent_grid_reserve(struct orca_world *w);
void orca_agent_grid_build(struct orca_world *w);
/* Quality mode: sort the order by grid cell and gather the tree-order
 * arrays from it, no kd-tree (w->grid_order); false: the crowd is too
 * small or clustered, build the kd-tree. Calling thread (may allocate). */
bool orca_agent_grid_order(struct orca_world *w);
/* Agent `self`'s (tree index; `slot` its slot) neighbours into sc->agent_nb,
 * exactly RVO2's list: the max_nb nearest closer than neighbor_dist, sorted,
 * ties in RVO2's discovery order. */
uint32_t orca_agent_neighbors(struct orca_world *w, struct worker_scratch *sc, uint32_t self, uint32_t slot,
                              const self_params *p, uint32_t max_nb, vec2 position);

#endif /* ORCA_AGENTS_H */
