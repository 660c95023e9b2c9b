/* internal.h — the engine's private data: the world struct (agents as
 * structure-of-arrays indexed by slot), the agent and obstacle kd-trees, the
 * worker pool and per-worker scratch. Shared by core/src only. */
#ifndef ORCA_INTERNAL_H
#define ORCA_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "memory.h"
#include "orca/orca.h"
#include "pool.h"
#include "query_grid.h"
#include "vec.h"

#define ORCA_MAX_LEAF_SIZE 10u
#define ORCA_GEN_LIMIT 4096u /* 12 generation bits; a slot reaching it is retired */
#define ORCA_NONE UINT32_MAX
#define ORCA_HINT_MAX 16u /* neighbour lists up to this long are remembered for the next step */
#define ORCA_Q_CONTACTS 6u /* quality mode: close neighbours remembered for the overlap pass */

/* ------------------------------------------------------------ agents */

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

/* ------------------------------------------------------------ obstacles */

/* One processed obstacle vertex (RVO2's Obstacle): an edge point -> next. */
typedef struct obst_vertex {
	vec2 point, unit_dir;
	uint32_t next, prev;
	uint32_t convex;
	uint32_t owner;  /* obstacle slot */
	uint32_t corner; /* its index in the polygon as given: (owner, corner) names an edge for good */
} obst_vertex;

typedef struct obst_node {
	uint32_t vertex;
	uint32_t left, right; /* ORCA_NONE = empty */
} obst_node;

typedef struct obstacle_slot {
	vec2 *vertices;
	uint32_t count;
	uint32_t gen;
	uint32_t first_vert; /* grid index: its first vertex in verts (edges follow .next) */
	bool alive;
} obstacle_slot;

/* An edge as the grid stores it: its end points inline, so a query streams
 * through a cell without visiting the vertex table. */
typedef struct obst_grid_edge {
	vec2 a, b;
	uint32_t vertex; /* the edge is vertex -> its next */
	uint32_t owner, corner;
} obst_grid_edge;

/* One cell of the obstacle edge grid (obstacle_grid.c): the edges that pass
 * through it, in no particular order. */
typedef struct obst_cell {
	int32_t cx, cy;
	uint32_t used; /* 0: empty slot of the hash table */
	uint32_t count, cap;
	obst_grid_edge *edges;
} obst_cell;

/* ------------------------------------------------------------ scratch */

typedef struct nb_entry {
	float dist_sq;
	uint32_t index; /* tree index for agents, vertex index for obstacles */
} nb_entry;

typedef struct orca_line {
	vec2 point, direction;
} orca_line;

/* A scratch buffer of `cap` orca_lines seen as four arrays of `cap` floats
 * (point x, point y, direction x, direction y): the linear programs read
 * four lines with four loads. Writers leave room for 4 lines past the last. */
typedef struct orca_lines {
	float *px, *py, *dx, *dy;
} orca_lines;

static inline orca_lines orca_lines_of(orca_line *buf, uint32_t cap)
{
	float *f = &buf->point.x;
	const orca_lines l = {f, f + cap, f + 2 * (size_t)cap, f + 3 * (size_t)cap};
	return l;
}

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
	float q_radius_min, q_radius_max; /* quality: the radii this worker saw */
	float bb_min_x, bb_min_y, bb_max_x, bb_max_y; /* grid order: the positions this worker saw */
	uint32_t part_count, part_occupied; /* grid order: agents and occupied cells of cell range [this worker's index] */
	char pad[64];
} worker_scratch;

/* Quality mode, per tree index during a step: the turn it aims with (NAN:
 * none), and its stuck timer and blockage, back to their slots after the
 * overlap pass; its top speed, for that pass (quality.c). */
typedef struct q_agent {
	float turn, stuck, blocked, max_speed;
} q_agent;

/* ------------------------------------------------------------ world */

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
};


/* The world's allocations (memory.h), by the names the modules use. */
static inline void *orca_mem_alloc(struct orca_world *w, size_t size) { return orca_heap_alloc(&w->heap, size); }
static inline void orca_mem_free(struct orca_world *w, void *p, size_t size) { orca_heap_free(&w->heap, p, size); }
/* Grow *arr (elements of elem bytes) to hold at least need; keeps contents. */
static inline bool orca_mem_reserve(struct orca_world *w, void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	return orca_heap_reserve(&w->heap, arr, cap, need, elem);
}

/* world.c */
bool orca_world_reserve_agents(struct orca_world *w, uint32_t need);
void orca_world_compact_order(struct orca_world *w);
/* The box queries' grid of the live agents as they stand (query_grid.h);
 * false: no memory (then queries scan). */
bool orca_world_query_grid_build(struct orca_world *w);

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
/* Box queries use the kd-tree when it holds every agent as they stand. */
static inline bool orca_query_tree_usable(const struct orca_world *w)
{
	return w->query_tree_valid && !w->order_dirty && w->order_count == w->live_count;
}

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
uint32_t orca_agent_neighbors(struct orca_world *w, worker_scratch *sc, uint32_t self, uint32_t slot,
                              const self_params *p, uint32_t max_nb, vec2 position);

/* obstacle_tree.c */
int orca_obstacles_process(struct orca_world *w);
/* The index's state for orca_world_save / _load (world_io.c): 0 none chosen
 * yet, 1 RVO2's tree, 2 the grid. A loaded world rebuilds the same index at
 * its next step, so it steps exactly as the saved one would have. */
uint32_t orca_obstacle_tree_query(const struct orca_world *w, vec2 position, float range_sq, nb_entry *out);

/* obstacle_grid.c */
int orca_obstacle_grid_insert(struct orca_world *w, uint32_t slot, const vec2 *v, uint32_t n, uint32_t *first);
void orca_obstacle_grid_remove(struct orca_world *w, uint32_t first, uint32_t n);
int orca_obstacle_grid_rebuild(struct orca_world *w);
uint32_t orca_obstacle_grid_query(const struct orca_world *w, vec2 position, float range_sq, nb_entry *out);
void orca_obstacle_grid_free(struct orca_world *w);

/* linear_program.c */
/* avx: the programs' AVX build (the same bits; only where the CPU has AVX). */
uint32_t orca_linear_program2(const orca_lines *lines, uint32_t count, float radius, vec2 opt_velocity,
                              bool direction_opt, vec2 *result, bool avx);
void orca_linear_program3(const orca_lines *lines, uint32_t count, uint32_t obst_lines, uint32_t begin_line,
                          float radius, vec2 *result, orca_lines *proj, bool avx);

/* velocity.c */
void orca_compute_velocities(void *ctx, uint32_t begin, uint32_t end, int worker);

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

/* Quality mode, right of way between equals (share 0.5): an idle agent
 * (wanting less than ORCA_Q_IDLE speed: arrived, or waiting) makes way for a
 * walking one, a walking one for one given a new target in the last
 * ORCA_Q_FRESH seconds. The lower rank takes ORCA_Q_YIELD_SHARE. One second
 * is enough to turn (the jammed agent of core_quality turns in one step);
 * longer, more agents hold it at once and it means less: with 2,000 retargets
 * a second among 50,000 agents, 3 s gave the load bench's probes a p99 of
 * 1.25 s to turn visibly, 1 s gives 150 ms (tests/bench/retarget_bench). */
#define ORCA_Q_IDLE 0.1f
#define ORCA_Q_FRESH 1.0f
#define ORCA_Q_YIELD_SHARE 1.0f
static inline float quality_share(const struct orca_world *w, uint32_t self, uint32_t other, float share)
{
	if (share != 0.5f || w->q_rank[self] == w->q_rank[other])
		return share;
	return w->q_rank[self] < w->q_rank[other] ? ORCA_Q_YIELD_SHARE : 1.0f - ORCA_Q_YIELD_SHARE;
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

/* quality.c: the quality avoidance mode's hooks */
bool orca_quality_reserve(struct orca_world *w);
void orca_quality_free(struct orca_world *w);
/* Right of way, in three parts: before the tree (or grid order) build, the
 * per-worker counts cleared; each gather chunk ranks its agents while their
 * slots' lines are still in cache (orca_agent_gather_task); after the build,
 * the counts summed. */
void orca_quality_rank_reset(struct orca_world *w);
void orca_quality_rank_range(struct orca_world *w, uint32_t begin, uint32_t end, int worker);
void orca_quality_prepare(struct orca_world *w);
/* After integration, before the tree refit: push overlapping agents apart. */
void orca_quality_resolve(struct orca_world *w);
/* The velocity stage's hooks: orca_quality_aim, orca_quality_after. */
#include "quality_hooks.h"

#endif /* ORCA_INTERNAL_H */
