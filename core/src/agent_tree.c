/* agent_tree.c — RVO2's agent kd-tree (leaf size 10): built every step by
 * partitioning the persistent agent order in place, exactly as RVO2 does, so
 * that neighbours are discovered (and equal distances tie) in RVO2's order.
 * Also the box query used by orca_query_rect / orca_query_radius. */
#include "agents.h"
#include "neighbor_list.h"
#include "quality.h"
#include "world_internal.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* The box of [begin, end). min and max are exact, so taking them four lanes
 * at a time gives RVO2's box (up to the sign of a zero, which no later
 * operation can see: the split value, box widths and squared box distances
 * all come out the same). */
static void set_box(struct orca_world *w, agent_node *node, uint32_t begin, uint32_t end)
{
	const float *tx = w->tpx, *ty = w->tpy;
	float min_x = tx[begin], max_x = tx[begin], min_y = ty[begin], max_y = ty[begin];
	uint32_t i = begin + 1;
#ifdef __SSE2__
	if (end - i >= 8) {
		__m128 lo_x = _mm_loadu_ps(tx + i), hi_x = lo_x, lo_y = _mm_loadu_ps(ty + i), hi_y = lo_y;
		for (i += 4; i + 4 <= end; i += 4) {
			const __m128 x = _mm_loadu_ps(tx + i), y = _mm_loadu_ps(ty + i);
			lo_x = _mm_min_ps(lo_x, x);
			hi_x = _mm_max_ps(hi_x, x);
			lo_y = _mm_min_ps(lo_y, y);
			hi_y = _mm_max_ps(hi_y, y);
		}
		float a[4], b[4], c[4], d[4];
		_mm_storeu_ps(a, lo_x);
		_mm_storeu_ps(b, hi_x);
		_mm_storeu_ps(c, lo_y);
		_mm_storeu_ps(d, hi_y);
		for (int k = 0; k < 4; ++k) {
			min_x = minf(min_x, a[k]);
			max_x = maxf(max_x, b[k]);
			min_y = minf(min_y, c[k]);
			max_y = maxf(max_y, d[k]);
		}
	}
#endif
	for (; i < end; ++i) {
		max_x = maxf(max_x, tx[i]);
		min_x = minf(min_x, tx[i]);
		max_y = maxf(max_y, ty[i]);
		min_y = minf(min_y, ty[i]);
	}
	node->min_x = min_x;
	node->max_x = max_x;
	node->min_y = min_y;
	node->max_y = max_y;
}

static inline void swap_agents(struct orca_world *w, uint32_t a, uint32_t b)
{
	float t = w->tpx[a];
	w->tpx[a] = w->tpx[b];
	w->tpx[b] = t;
	t = w->tpy[a];
	w->tpy[a] = w->tpy[b];
	w->tpy[b] = t;
	uint32_t s = w->order[a];
	w->order[a] = w->order[b];
	w->order[b] = s;
}

/* Split one node exactly as RVO2's buildAgentTreeRecursive does; writes the
 * children's boxes and returns how many child jobs it made. */
static uint32_t split_node(struct orca_world *w, const build_job *job, build_job children[2])
{
	const uint32_t begin = job->begin, end = job->end, ni = job->node;
	agent_node *node = &w->nodes[ni];
	node->begin = begin;
	node->end = end;
	node->left = node->right = 0;
	if (!job->box_known)
		set_box(w, node, begin, end);
	if (end - begin <= ORCA_MAX_LEAF_SIZE)
		return 0;

	const bool vertical = (node->max_x - node->min_x > node->max_y - node->min_y);
	const float split = vertical ? 0.5f * (node->max_x + node->min_x) : 0.5f * (node->max_y + node->min_y);
	const float *key = vertical ? w->tpx : w->tpy;
	uint32_t left = begin, right = end;
	while (left < right) {
#ifdef __SSE2__
		/* the same scans four keys at a time (the data is mostly still
		 * partitioned from the last step: long runs stay in place) */
		const __m128 sv = _mm_set1_ps(split);
		while (right - left >= 4) {
			const unsigned m = (unsigned)_mm_movemask_ps(_mm_cmpge_ps(_mm_loadu_ps(key + left), sv));
			if (m) {
				left += (uint32_t)__builtin_ctz(m);
				break;
			}
			left += 4;
		}
#endif
		while (left < right && key[left] < split)
			++left;
#ifdef __SSE2__
		while (right - left >= 4) {
			const unsigned m = (unsigned)_mm_movemask_ps(_mm_cmplt_ps(_mm_loadu_ps(key + right - 4), sv));
			if (m) {
				right = right - 4 + (31u - (uint32_t)__builtin_clz(m)) + 1;
				break;
			}
			right -= 4;
		}
#endif
		while (right > left && key[right - 1] >= split)
			--right;
		if (left < right) {
			swap_agents(w, left, right - 1);
			++left;
			--right;
		}
	}
	if (left == begin) {
		++left;
		++right;
	}
	node->left = ni + 1;
	node->right = ni + 2 * (left - begin);
	agent_node *l = &w->nodes[node->left], *r = &w->nodes[node->right];
	/* (a vectorised pass per child is cheaper than tracking boxes while
	 * partitioning) */
	set_box(w, l, begin, left);
	set_box(w, r, left, end);
	children[0] = (build_job){begin, left, node->left, job->depth + 1, 1};
	children[1] = (build_job){left, end, node->right, job->depth + 1, 1};
	return 2;
}

/* One node of the frontier's level: split it (its children into
 * level_next_pair[2k..], level_kids[k] = 2 or 0 for a leaf) or, when small,
 * leave it to the subtree phase (level_kids[k] = 1). Each job writes only
 * its range, its node and its children: any worker, same tree. */
static void split_level_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	(void)worker;
	for (uint32_t k = begin; k < end; ++k) {
		const build_job job = w->frontier[k];
		if (job.end - job.begin <= ORCA_MAX_LEAF_SIZE * 4u) {
			w->level_kids[k] = 1;
			continue;
		}
		w->level_kids[k] = (uint8_t)split_node(w, &job, &w->level_next_pair[2 * k]);
	}
}

/* Build a whole subtree depth-first with the worker's own stack. */
static void build_subtree(struct orca_world *w, const build_job *root, build_job *stack, uint32_t *max_depth)
{
	uint32_t top = 0;
	stack[top++] = *root;
	while (top > 0) {
		const build_job job = stack[--top];
		if (job.depth > *max_depth)
			*max_depth = job.depth;
		build_job kids[2];
		if (split_node(w, &job, kids) == 2) {
			stack[top++] = kids[1];
			stack[top++] = kids[0];
		}
	}
}

static void build_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	worker_scratch *sc = &w->scratch[worker];
	for (uint32_t k = begin; k < end; ++k)
		build_subtree(w, &w->frontier[k], sc->build_stack, &sc->max_depth);
}

static void gather_positions_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	(void)worker;
	for (uint32_t i = begin; i < end; ++i) {
		const uint32_t s = w->order[i];
		w->tpx[i] = w->px[s];
		w->tpy[i] = w->py[s];
	}
}

/* Loops that read per-slot state in tree order prefetch the agent this far ahead. */
#define GATHER_AHEAD 16u

void orca_agent_gather_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	bool plain = true, uniform = true;
	const float weight0 = w->params[w->order[0]].weight;
	const bool reuse = w->gather_reuse;
	const bool quality = w->avoidance == ORCA_AVOIDANCE_QUALITY;
	for (uint32_t i = begin; i < end; ++i) {
		const uint32_t s = w->order[i];
		if (i + GATHER_AHEAD < end) {
			/* the slots are scattered: ask for a later agent's lines now */
			const uint32_t later = w->order[i + GATHER_AHEAD];
			const char *lp = (const char *)&w->params[later];
			__builtin_prefetch(lp);
			__builtin_prefetch(lp + sizeof(agent_params) - 1);
			__builtin_prefetch(&w->vx[later]);
			__builtin_prefetch(&w->vy[later]);
			__builtin_prefetch(&w->pvx[later]);
			__builtin_prefetch(&w->pvy[later]);
			__builtin_prefetch(&w->nb_guess[later]);
			__builtin_prefetch(&w->tree_index[later]);
			if (quality) { /* what orca_quality_rank_range reads next */
				__builtin_prefetch(&w->q_stuck[later]);
				__builtin_prefetch(&w->q_blocked[later]);
				__builtin_prefetch(&w->gen[later]);
			}
		}
		if (reuse && w->tree_index[s] == i) {
			/* same place in the tree order as last step and no edit since:
			 * only the state moved */
			tree_agent *t = &w->tagent[i];
			t->x = w->tpx[i];
			t->y = w->tpy[i];
			t->vx = w->vx[s];
			t->vy = w->vy[s];
			w->tself[i].pvx = w->pvx[s];
			w->tself[i].pvy = w->pvy[s];
			w->t_guess[i] = w->nb_guess[s];
			if (w->avoidance == ORCA_AVOIDANCE_QUALITY) {
				/* a new target leaves the tree valid */
				const agent_params *p = &w->params[s];
				w->tself[i].steer_mode = p->steer_mode;
				w->tself[i].target_x = p->target.x;
				w->tself[i].target_y = p->target.y;
				w->tself[i].arrival_distance = p->arrival_distance;
			}
			continue;
		}
		const agent_params *p = &w->params[s];
		tree_agent *t = &w->tagent[i];
		/* written only where it changed: a worker's writes by slot share
		 * cache lines with the other workers' (the grid order sets it
		 * before, on one thread) */
		if (w->tree_index[s] != i)
			w->tree_index[s] = i;
		w->t_guess[i] = w->nb_guess[s];
		plain = plain && p->mask == UINT32_MAX && p->layer != 0;
		uniform = uniform && p->weight == weight0;
		t->x = w->tpx[i];
		t->y = w->tpy[i];
		t->vx = w->vx[s];
		t->vy = w->vy[s];
		t->radius = p->radius;
		t->weight = p->weight;
		t->layer = p->layer;
		t->mask = p->mask;
		self_params *sp = &w->tself[i];
		sp->radius = p->radius;
		sp->weight = p->weight;
		sp->max_speed = p->max_speed;
		sp->neighbor_dist = p->neighbor_dist;
		sp->time_horizon = p->time_horizon;
		sp->time_horizon_obst = p->time_horizon_obst;
		sp->pvx = w->pvx[s];
		sp->pvy = w->pvy[s];
		sp->layer = p->layer;
		sp->mask = p->mask;
		sp->max_neighbors = p->max_neighbors;
		sp->steer_mode = p->steer_mode;
		sp->target_x = p->target.x;
		sp->target_y = p->target.y;
		sp->arrival_distance = p->arrival_distance;
		sp->pad = 0.0f;
	}
	if (!plain)
		w->scratch[worker].not_plain = 1;
	if (!uniform)
		w->scratch[worker].not_uniform = 1;
	if (quality)
		orca_quality_rank_range(w, begin, end, worker);
}

#define GATHER_GRAIN 8192u

static void make_query_nodes(struct orca_world *w);

static void gather_and_grid_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	for (uint32_t k = begin; k < end; ++k) {
		if (k == 0) {
			/* item 0: the query's node copy and the grid, while other
			 * workers gather (they read the built tree, write apart) */
			make_query_nodes(w);
			if (w->grid_wanted)
				orca_agent_grid_build(w);
			continue;
		}
		const uint32_t from = (k - 1) * GATHER_GRAIN, n = w->order_count;
		orca_agent_gather_task(ctx, from, n - from < GATHER_GRAIN ? n : from + GATHER_GRAIN, worker);
	}
}

/* The query's copy of the tree: RVO2 numbers nodes sparsely (2n - 1 slots,
 * far fewer used); the query walks a dense pre-order copy instead, with both
 * child boxes in each inner node. Same tree, same order, less memory. */
static void make_query_nodes(struct orca_world *w)
{
	uint32_t *stack = w->node_list; /* pairs: RVO2 node, query parent << 1 | right */
	uint32_t top = 0, count = 0;
	stack[top++] = 0;
	stack[top++] = ORCA_NONE;
	while (top > 0) {
		const uint32_t link = stack[--top];
		const uint32_t ni = stack[--top];
		const uint32_t qi = count++;
		const agent_node *nd = &w->nodes[ni];
		query_node *q = &w->qnodes[qi];
		q->begin = nd->begin;
		q->end = nd->end;
		q->left = q->right = 0;
		if (link != ORCA_NONE) {
			if (link & 1u)
				w->qnodes[link >> 1].right = qi;
			else
				w->qnodes[link >> 1].left = qi;
		}
		if (nd->end - nd->begin > ORCA_MAX_LEAF_SIZE) {
			const agent_node *l = &w->nodes[nd->left], *r = &w->nodes[nd->right];
			q->cmin[0] = l->min_x, q->cmin[1] = l->min_y, q->cmin[2] = r->min_x, q->cmin[3] = r->min_y;
			q->cmax[0] = l->max_x, q->cmax[1] = l->max_y, q->cmax[2] = r->max_x, q->cmax[3] = r->max_y;
			stack[top++] = nd->right;
			stack[top++] = (qi << 1) | 1u;
			stack[top++] = nd->left;
			stack[top++] = qi << 1;
		}
	}
}

void orca_agent_tree_build(struct orca_world *w)
{
	const uint32_t n = w->order_count;
	/* no agent added, removed or redefined since the last step (the refit
	 * at its end left the query tree valid): last step's copies hold */
	w->gather_reuse = w->query_tree_valid && w->steps > 0;
	const bool was_plain = w->plain_masks, was_uniform = w->uniform_share;
	w->node_count = n ? 2 * n - 1 : 0;
	w->tree_depth = 0;
	if (n == 0)
		return;
	orca_pool_run(w->pool, gather_positions_task, w, n, 8192);
	for (uint32_t i = n; i < n + ORCA_TREE_PAD; ++i)
		w->tpx[i] = w->tpy[i] = 0.0f;

	/* The top levels breadth-first on this thread until there are enough
	 * subtrees to share out; then the subtrees in parallel. A range's split
	 * depends on that range only, so neither order changes the tree. */
	const uint32_t want = w->worker_count > 1 ? 8u * (uint32_t)w->worker_count : 1u;
	uint32_t count = 1;
	w->frontier[0] = (build_job){0, n, 0, 0, 0};
	if (want > 1) {
		/* one level at a time, the level's nodes split in parallel (only
		 * the root's split runs alone) */
		bool progress = true;
		while (count < want && progress && 2 * count <= ORCA_FRONTIER_MAX) {
			orca_pool_run(w->pool, split_level_task, w, count, 1);
			uint32_t m = 0;
			progress = false;
			for (uint32_t k = 0; k < count; ++k) {
				const build_job job = w->frontier[k];
				if (w->level_kids[k] == 1) {
					w->level_next[m++] = job; /* small: left for a worker */
					continue;
				}
				if (job.depth > w->tree_depth)
					w->tree_depth = job.depth;
				for (uint32_t c = 0; c < w->level_kids[k]; ++c)
					w->level_next[m++] = w->level_next_pair[2 * k + c];
				progress = progress || w->level_kids[k] == 2;
			}
			for (uint32_t k = 0; k < m; ++k)
				w->frontier[k] = w->level_next[k];
			count = m;
		}
	}
	for (int i = 0; i < w->worker_count; ++i) {
		w->scratch[i].max_depth = 0;
		w->scratch[i].not_plain = 0;
		w->scratch[i].not_uniform = 0;
	}
	orca_pool_run(w->pool, build_task, w, count, 1);
	/* the grid (agent_neighbors.c) as one more item of the gather, so that
	 * with two workers one builds it while the other gathers */
	w->grid_wanted = orca_agent_grid_reserve(w);
	if (w->grid_wanted && w->grid_skip > 0) {
		/* it refused this crowd lately (too clustered, e.g. a ring): the
		 * kd-tree answers alone for a while. Either path gives the same
		 * neighbours, so this only saves the grid's build. */
		w->grid_skip--;
		w->grid_wanted = false;
	}
	orca_pool_run(w->pool, gather_and_grid_task, w, 1 + (n + GATHER_GRAIN - 1) / GATHER_GRAIN, 1);
	if (w->grid_wanted && !w->grid_on)
		w->grid_skip = 15;
	bool plain = true, uniform = true;
	for (int i = 0; i < w->worker_count; ++i) {
		if (w->scratch[i].max_depth > w->tree_depth)
			w->tree_depth = w->scratch[i].max_depth;
		plain = plain && !w->scratch[i].not_plain;
		uniform = uniform && !w->scratch[i].not_uniform;
	}
	if (w->gather_reuse) {
		/* the flags saw only the agents that moved in the order */
		plain = plain && was_plain;
		uniform = uniform && was_uniform;
	}
	w->plain_masks = plain;
	w->uniform_share = plain && uniform;
}

#ifdef __SSE2__
/* The box distance of both children at once. RVO2 sums four terms,
 * sqr(max(0, minX - x)) + sqr(max(0, x - maxX)) + (the same in y); of each
 * pair at most one is non-zero, so that sum is exactly sqr(dx) + sqr(dy) with
 * dx = max(minX - x, x - maxX, 0): the same bits, in two SIMD lanes. */
static inline void child_dists(const query_node *q, __m128 p, float *dl, float *dr)
{
	const __m128 a = _mm_sub_ps(_mm_loadu_ps(q->cmin), p);
	const __m128 b = _mm_sub_ps(p, _mm_loadu_ps(q->cmax));
	__m128 m = _mm_max_ps(_mm_max_ps(a, b), _mm_setzero_ps());
	m = _mm_mul_ps(m, m);
	const __m128 s = _mm_add_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
	*dl = _mm_cvtss_f32(s);
	*dr = _mm_cvtss_f32(_mm_movehl_ps(s, s));
}
#else
static inline float box_dist_sq(const float *mn, const float *mx, float x, float y)
{
	return sqrf(maxf(0.0f, mn[0] - x)) + sqrf(maxf(0.0f, x - mx[0])) + sqrf(maxf(0.0f, mn[1] - y)) +
	       sqrf(maxf(0.0f, y - mx[1]));
}
#endif

uint32_t orca_agent_tree_query_neighbors(const struct orca_world *w, uint32_t self, float range_sq,
                                         uint32_t max_neighbors, uint32_t mask, nb_entry *out,
                                         tree_visit *stack)
{
	const float x = w->tpx[self], y = w->tpy[self];
	const query_node *nodes = w->qnodes;
	const float *tx = w->tpx, *ty = w->tpy;
	const tree_agent *ta = w->tagent;
	const bool check_mask = !(w->plain_masks && mask == UINT32_MAX);
	uint32_t count = 0;
	uint32_t top = 0;
	uint32_t node = 0;
#ifdef __SSE2__
	const __m128 p = _mm_setr_ps(x, y, x, y);
	const __m128 px = _mm_set1_ps(x), py = _mm_set1_ps(y);
#endif

	/* RVO2's queryAgentTreeRecursive: nearer child first; the farther one
	 * only if it is still within range after the nearer one shrank it. */
	for (;;) {
		const query_node *nd = &nodes[node];
		if (nd->end - nd->begin <= ORCA_MAX_LEAF_SIZE) {
#ifdef __SSE2__
			for (uint32_t j0 = nd->begin; j0 < nd->end; j0 += 4) {
				const __m128 dx = _mm_sub_ps(px, _mm_loadu_ps(tx + j0));
				const __m128 dy = _mm_sub_ps(py, _mm_loadu_ps(ty + j0));
				const __m128 d = _mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy));
				unsigned bits = (unsigned)_mm_movemask_ps(_mm_cmplt_ps(d, _mm_set1_ps(range_sq)));
				if (nd->end - j0 < 4)
					bits &= (1u << (nd->end - j0)) - 1u;
				if (!bits)
					continue;
				float dist[4];
				_mm_storeu_ps(dist, d);
				while (bits) {
					const unsigned k = (unsigned)__builtin_ctz(bits);
					bits &= bits - 1;
					const uint32_t j = j0 + k;
					if (j == self || dist[k] >= range_sq || (check_mask && !(mask & ta[j].layer)))
						continue;
					nb_offer(out, &count, max_neighbors, &range_sq, dist[k], j);
				}
			}
#else
			for (uint32_t j = nd->begin; j < nd->end; ++j) {
				if (j == self || (check_mask && !(mask & ta[j].layer)))
					continue;
				const float dx = x - tx[j], dy = y - ty[j];
				const float dist_sq = dx * dx + dy * dy;
				if (dist_sq < range_sq)
					nb_offer(out, &count, max_neighbors, &range_sq, dist_sq, j);
			}
#endif
		} else {
			float dl, dr;
#ifdef __SSE2__
			child_dists(nd, p, &dl, &dr);
#else
			dl = box_dist_sq(&nd->cmin[0], &nd->cmax[0], x, y);
			dr = box_dist_sq(&nd->cmin[2], &nd->cmax[2], x, y);
#endif
			uint32_t near_node, far_node;
			float near_d, far_d;
			if (dl < dr) {
				near_node = nd->left, near_d = dl, far_node = nd->right, far_d = dr;
			} else {
				near_node = nd->right, near_d = dr, far_node = nd->left, far_d = dl;
			}
			if (near_d < range_sq) {
				/* the farther child waits on the stack only if it is in
				 * range now: the range never grows, so one out of range
				 * now would be dropped when popped (no branch here) */
				stack[top].node = far_node;
				stack[top].dist_sq = far_d;
				top += far_d < range_sq;
				node = near_node;
				continue;
			}
		}
		/* pop the next farther child still in range */
		for (;;) {
			if (top == 0) {
				if (count < max_neighbors)
					nb_sort(out, count);
				return count;
			}
			--top;
			if (stack[top].dist_sq < range_sq) {
				node = stack[top].node;
				break;
			}
		}
	}
}

/* Leaf boxes from the moved positions (tpx/tpy), in parallel. */
static void refit_leaves_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	(void)worker;
	for (uint32_t k = begin; k < end; ++k) {
		agent_node *nd = &w->nodes[w->node_list[k]];
		if (nd->end - nd->begin <= ORCA_MAX_LEAF_SIZE)
			set_box(w, nd, nd->begin, nd->end);
	}
}

void orca_agent_tree_refit(struct orca_world *w)
{
	w->query_tree_valid = true;
	w->refit_pending = w->order_count > 0;
}

static void refit_now(struct orca_world *w)
{
	w->refit_pending = false;
	/* pre-order list of the nodes in use (the index space is sparse), then
	 * backwards: children before parents */
	uint32_t *list = w->node_list, count = 0;
	list[count++] = 0;
	for (uint32_t k = 0; k < count; ++k) {
		const agent_node *nd = &w->nodes[list[k]];
		if (nd->end - nd->begin > ORCA_MAX_LEAF_SIZE) {
			list[count++] = nd->left;
			list[count++] = nd->right;
		}
	}
	orca_pool_run(w->pool, refit_leaves_task, w, count, 2048);
	for (uint32_t k = count; k-- > 0;) {
		agent_node *nd = &w->nodes[list[k]];
		if (nd->end - nd->begin > ORCA_MAX_LEAF_SIZE) {
			const agent_node *l = &w->nodes[nd->left], *r = &w->nodes[nd->right];
			nd->min_x = minf(l->min_x, r->min_x);
			nd->max_x = maxf(l->max_x, r->max_x);
			nd->min_y = minf(l->min_y, r->min_y);
			nd->max_y = maxf(l->max_y, r->max_y);
		}
	}
}

void orca_agent_tree_settle(struct orca_world *w)
{
	if (w->refit_pending)
		refit_now(w);
}

void orca_agent_tree_query_box(const struct orca_world *w, vec2 lo, vec2 hi, orca_visit_fn fn, void *ctx)
{
	if (w->order_count == 0)
		return;
	if (w->refit_pending) {
		/* the world is never const itself, only this view of it (the API is
		 * one thread at a time) */
		refit_now((struct orca_world *)w);
	}
	/* the tree is at most tree_depth deep; walk it with a small local stack,
	 * falling back to recursion-free leaf scanning when it is deeper */
	uint32_t stack[128];
	uint32_t top = 0;
	stack[top++] = 0;
	while (top > 0) {
		const agent_node *nd = &w->nodes[stack[--top]];
		if (nd->max_x < lo.x || nd->min_x > hi.x || nd->max_y < lo.y || nd->min_y > hi.y)
			continue;
		if (nd->end - nd->begin <= ORCA_MAX_LEAF_SIZE || top + 2 > 128) {
			for (uint32_t i = nd->begin; i < nd->end; ++i) {
				const uint32_t s = w->order[i];
				const float x = w->px[s], y = w->py[s];
				if (x >= lo.x && x <= hi.x && y >= lo.y && y <= hi.y)
					fn(ctx, s);
			}
			continue;
		}
		stack[top++] = nd->right;
		stack[top++] = nd->left;
	}
}
