/* world_internal.h — the world struct: agents as structure-of-arrays indexed
 * by slot, their copies in kd-tree order, the obstacles and their index, the
 * worker pool and per-worker scratch, quality mode's state; and world.c's
 * helpers for the modules. Each module's types and functions are in its own
 * header (agents.h, obstacles.h, quality.h, ...). */
#ifndef ORCA_WORLD_INTERNAL_H
#define ORCA_WORLD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agents.h"
#include "linear_program.h"
#include "memory.h"
#include "neighbor_list.h"
#include "obstacles.h"
#include "orca/orca.h"
#include "pool.h"
#include "query_grid.h"
#include "vec.h"

#define ORCA_GEN_LIMIT 4096u /* 12 generation bits; a slot reaching it is retired */
#define ORCA_NONE UINT32_MAX

typedef struct worker_scratch {
	nb_entry *agent_nb;
	uint32_t agent_nb_cap;
	nb_entry *obst_nb;
	uint32_t obst_nb_cap;
	orca_line *lines;
	uint32_t lines_cap;
	orca_line *proj;
	uint32_t proj_cap;
	struct tree_visit *stack; /* kd-tree traversal stack, tree depth deep */
	uint32_t stack_cap;
	build_job *build_stack;   /* kd-tree build stack */
	uint32_t build_stack_cap;
	uint32_t max_depth, not_plain, not_uniform;
	uint64_t neighbor_count, obstacle_line_count;
	uint32_t lp3_fallbacks, arrived;
	uint32_t q_rank_count[3]; /* quality: agents of each rank this worker saw */
	uint32_t q_target_count;  /* quality: agents steered at a target this worker saw */
	float q_radius_min, q_radius_max; /* quality: the radii this worker saw */
	float bb_min_x, bb_min_y, bb_max_x, bb_max_y; /* grid order: the positions this worker saw */
	uint32_t part_count, part_occupied; /* grid order: agents and occupied cells of cell range [this worker's index] */
	char pad[64];
} worker_scratch;

struct orca_world {
	orca_heap heap; /* every allocation, counted */
	int worker_count;
	uint32_t max_agents;
	bool has_bounds; /* positions clamped to [bounds_min, bounds_max] after each step */
	float bounds_min_x, bounds_min_y, bounds_max_x, bounds_max_y;
	orca_pool *pool;
	uint64_t steps;
	float dt;             /* time step of the step in progress */

	/* agent slots, structure of arrays */
	uint32_t slot_count, slot_cap, live_count;
	uint32_t *gen;
	uint8_t *alive;
	uint32_t *free_next;  /* free-list links */
	uint32_t free_head, pending_head; /* pending: freed since last compaction */
	float *px, *py, *vx, *vy, *pvx, *pvy;
	uint32_t *tree_index; /* slot -> index in the last tree order */
	uint32_t *hash_order; /* state-hash scratch: live slots in ascending id order */
	uint32_t *hint;       /* per slot: last step's neighbour slots (ORCA_HINT_MAX each) */
	uint8_t *hint_count;
	agent_params *params;
	uint32_t max_neighbors_max; /* upper bound of every agent's max_neighbors */

	/* RVO2's agents_ array: live slots in a persistent order that every tree
	 * build partitions in place (so neighbour ties follow RVO2's history). */
	uint32_t *order;
	uint32_t order_count, order_cap;
	bool order_dirty;   /* holds removed slots */
	float *tpx, *tpy;   /* positions in tree order */
	float *tnvx, *tnvy; /* new velocities in tree order (each worker writes its own run); quality
	                     * mode: the velocities the agents move with until the step's end */
	float *tnx, *tny;   /* quality mode: the moved positions, in tree order, from the velocity
	                     * stage (then they become tpx/tpy: the arrays trade places) */
	float *t_guess;     /* nb_guess in tree order during a step (the velocity stage's workers
	                     * write their own runs; back to the slots with the move) */
	uint8_t *t_arrived; /* quality mode: params.arrived in tree order until the step's end */
	tree_agent *tagent; /* the rest of each agent, in tree order */
	self_params *tself; /* each agent's own parameters, in tree order */
	uint32_t tree_cap;
	agent_node *nodes;
	query_node *qnodes;
	bool plain_masks; /* every agent has mask all-ones and a non-zero layer */
	bool uniform_share; /* plain masks and one weight for all: every share is 0.5 */
	uint32_t node_cap, node_count;
	uint32_t tree_depth;   /* deepest node level of the last build */
	uint32_t *node_list;   /* refit scratch: nodes in use (the index space is sparse) */
	build_job frontier[ORCA_FRONTIER_MAX]; /* subtrees handed to the workers */
	build_job level_next[ORCA_FRONTIER_MAX], level_next_pair[2 * ORCA_FRONTIER_MAX]; /* the top levels' build */
	uint8_t level_kids[ORCA_FRONTIER_MAX];
	bool query_tree_valid; /* the tree holds every agent and no edit since the step (boxes: see refit_pending) */
	bool refit_pending;    /* node boxes still from before the step's moves: refit before a box query */
	bool gather_reuse;     /* this step's gather may keep last step's per-agent copies */
	bool grid_wanted;      /* the grid has room this step */
	uint8_t grid_skip;     /* steps left before trying again a grid that refused the crowd (clustered) */

	/* uniform grid over the tree-order positions (agent_neighbors.c) */
	float *grid_x, *grid_y;   /* positions sorted by cell, ORCA_TREE_PAD spare */
	uint32_t *grid_index;     /* their tree indices */
	uint32_t *grid_cell;      /* build scratch: each tree index's cell */
	uint32_t *grid_start;     /* per cell its first entry; cells + 1 */
	uint32_t grid_x_cap, grid_y_cap, grid_index_cap, grid_cell_cap, grid_start_cap;
	uint32_t grid_w, grid_h;
	float grid_ox, grid_oy, grid_inv, grid_last_x, grid_last_y;
	bool grid_on;
	bool grid_order;          /* quality: this step's order is the grid's, no kd-tree */
	float *nb_guess; /* per slot: last step's k-th neighbour distance, 0 = unknown (t_guess during a step) */

	/* box queries' grid of live agents (query_grid.c) */
	orca_query_grid qgrid;
	bool queries_shared;  /* workers query at once (orca_world_parallel_for): no build */

	/* obstacles */
	obstacle_slot *obst;
	uint32_t obst_slot_count, obst_slot_cap, obst_live;
	uint32_t *obst_free_next;
	uint32_t obst_free_head;
	uint32_t *obst_order; /* live obstacle slots in add order */
	uint32_t obst_order_cap;
	uint32_t obst_version, obst_built_version;
	obst_vertex *verts;
	uint32_t vert_count, vert_cap;
	obst_node *onodes;
	uint32_t onode_count, onode_cap;
	uint32_t obst_root; /* ORCA_NONE: no obstacle edge; else the kd-tree root (0 with the grid) */
	uint32_t *obst_scratch;
	uint32_t obst_scratch_cap;
	/* The obstacle index: RVO2's kd-tree (built once, at the first step, when
	 * it is small), or the edge grid, updated in place by every add/remove. */
	int obst_index;  /* orca_obstacle_index of the world def */
	bool obst_grid;  /* the grid is in use (for good: a world never goes back) */
	bool obst_tree;  /* AUTO: RVO2's tree was chosen (the next change moves to the grid) */
	bool obst_stale; /* the grid does not hold the live obstacles yet (just switched to it) */
	uint32_t obst_vert_free; /* grid: free vertex slots, linked through .next */
	uint32_t obst_edges;     /* grid: live edges */
	obst_cell *ocells;       /* grid: open-addressing hash table of cells */
	uint32_t ocell_cap, ocell_used;
	obst_grid_edge *obig;    /* grid: edges spanning too many cells, checked by every query */
	uint32_t obig_count, obig_cap;

	/* quality avoidance (quality.c) */
	orca_avoidance avoidance;
	bool q_follow_rule;   /* the follow rules (quality.h, quality_follow); saved with the world */
	bool q_follow_now;    /* the rule, and this step two agents or more with a target (velocity-steered ones never follow) */
	float *q_blocked;     /* per slot: how far avoidance kept the agent from its aim last step (0..1); saved with the world */
	float *q_stuck;       /* per slot: seconds of being blocked (decays while moving); below 0:
	                       * seconds left of a new target's right of way; saved with the world */
	uint32_t *q_contact;  /* per tree index: up to ORCA_Q_CONTACTS close neighbours (tree indices) */
	uint8_t *q_contact_count;
	float *q_bx, *q_by;   /* per tree index: overlap pass, the positions of every other iteration */
	uint8_t *q_flag;      /* per tree index: overlap pass flags (quality.c) */
	uint8_t *q_look;      /* 2 x per tree index: overlap pass, who looks in the next iteration, 0 between steps */
	uint32_t *q_moved;    /* per worker (a cache line each): agents its overlap pass pushed deeper than Q_MOVED */
	struct q_agent *q_agents; /* per tree index: this step's quality state (quality.c) */
	float *q_follow;      /* per tree index: the follow rule's four inputs (quality.h, QF_*) */
	uint8_t *q_rank;      /* per tree index: right of way this step (0 idle, 1 walking, 2 newly retargeted) */
	bool q_any_rank;      /* ranks differ this step (else every share stays uniform) */
	float q_radius_max;   /* the largest radius this step */
	bool q_same_radius;   /* every agent has that radius this step */
	uint32_t q_cap;       /* tree indices the q_ arrays above hold */

	worker_scratch *scratch;
	orca_step_profile profile;
	/* Tests only: take the SSE2 paths even on a CPU with AVX or AVX2
	 * (velocity.c, linear_program.c, agent_neighbors.c), so that both are
	 * checked to give the same bits. */
	bool simd_sse2_only;

	obst_pack opack; /* the obstacle grid's cells packed for the step's queries (obstacle_grid.c) */
};

/* The world's allocations (memory.h), by the names the modules use. */
static inline void *orca_mem_alloc(struct orca_world *w, size_t size) { return orca_heap_alloc(&w->heap, size); }
static inline void orca_mem_free(struct orca_world *w, void *p, size_t size) { orca_heap_free(&w->heap, p, size); }
/* Grow *arr (elements of elem bytes) to hold at least need; keeps contents. */
static inline bool orca_mem_reserve(struct orca_world *w, void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	return orca_heap_reserve(&w->heap, arr, cap, need, elem);
}

/* world.c: room for need agent slots and tree-order entries; false: no memory. */
bool orca_world_reserve_agents(struct orca_world *w, uint32_t need);
/* Drop removed slots from the persistent order and make them reusable. */
void orca_world_compact_order(struct orca_world *w);
/* The box queries' grid of the live agents as they stand (query_grid.h);
 * false: no memory (then queries scan). */
bool orca_world_query_grid_build(struct orca_world *w);

/* Box queries use the kd-tree when it holds every agent as they stand. */
static inline bool orca_query_tree_usable(const struct orca_world *w)
{
	return w->query_tree_valid && !w->order_dirty && w->order_count == w->live_count;
}

/* The world's bounds are walls (orca.h): a coordinate past [lo, hi] stops at
 * the one it crossed. True when it did: the caller zeroes that velocity
 * component. Integration, quality mode's move and its overlap pass all use
 * this one rule. */
static inline bool orca_clamp_to_bound(float *x, float lo, float hi)
{
	if (!(*x < lo || *x > hi))
		return false;
	*x = *x < lo ? lo : hi;
	return true;
}

#endif /* ORCA_WORLD_INTERNAL_H */
