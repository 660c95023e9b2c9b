/* world.c — the world's lifecycle, its slot arrays (allocated through its
 * heap: memory.h), the step pipeline (preferred
 * velocities, obstacle tree, agent tree, new velocities in parallel, move),
 * the state hash and the profile of the last step. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agents.h"
#include "memory.h"
#include "obstacles.h"
#include "pool.h"
#include "quality.h"
#include "query_grid.h"
#include "velocity.h"
#include "world_internal.h"

const char *orca_strerror(int status)
{
	switch (status) {
	case ORCA_OK: return "ok";
	case ORCA_ERR_INVALID_ARGUMENT: return "invalid argument";
	case ORCA_ERR_UNKNOWN_ID: return "unknown id";
	case ORCA_ERR_STALE_ID: return "stale id";
	case ORCA_ERR_CAPACITY: return "capacity exceeded";
	case ORCA_ERR_NO_MEMORY: return "out of memory";
	case ORCA_ERR_BAD_POLYGON: return "bad polygon";
	default: return "unknown status";
	}
}

/* Grow one slot-indexed array from old_cap to new_cap elements. */
static bool regrow(struct orca_world *w, void **arr, size_t elem, uint32_t old_cap, uint32_t new_cap)
{
	return orca_heap_regrow(&w->heap, arr, elem, old_cap, new_cap);
}

bool orca_world_reserve_agents(struct orca_world *w, uint32_t need)
{
	if (need > w->slot_cap) {
		uint64_t nc = (uint64_t)w->slot_cap * 2;
		if (nc < need)
			nc = need;
		if (nc < 16)
			nc = 16;
		if (nc > ORCA_MAX_AGENTS + 1u)
			nc = ORCA_MAX_AGENTS + 1u;
		const uint32_t oc = w->slot_cap, c = (uint32_t)nc;
		bool ok = regrow(w, (void **)&w->gen, sizeof(uint32_t), oc, c) &&
		          regrow(w, (void **)&w->alive, sizeof(uint8_t), oc, c) &&
		          regrow(w, (void **)&w->free_next, sizeof(uint32_t), oc, c) &&
		          regrow(w, (void **)&w->tree_index, sizeof(uint32_t), oc, c) &&
		          regrow(w, (void **)&w->hash_order, sizeof(uint32_t), oc, c) &&
		          regrow(w, (void **)&w->hint, ORCA_HINT_MAX * sizeof(uint32_t), oc, c) &&
		          regrow(w, (void **)&w->hint_count, sizeof(uint8_t), oc, c) &&
		          regrow(w, (void **)&w->nb_guess, sizeof(float), oc, c) &&
		          regrow(w, (void **)&w->px, sizeof(float), oc, c) && regrow(w, (void **)&w->py, sizeof(float), oc, c) &&
		          regrow(w, (void **)&w->vx, sizeof(float), oc, c) && regrow(w, (void **)&w->vy, sizeof(float), oc, c) &&
		          regrow(w, (void **)&w->pvx, sizeof(float), oc, c) &&
		          regrow(w, (void **)&w->pvy, sizeof(float), oc, c) &&
		          regrow(w, (void **)&w->params, sizeof(agent_params), oc, c) &&
		          regrow(w, (void **)&w->q_stuck, sizeof(float), oc, c) &&
		          regrow(w, (void **)&w->q_blocked, sizeof(float), oc, c);
		if (!ok)
			return false;
		w->slot_cap = c;
	}
	/* tree-order arrays, sized for every live agent plus one */
	if (need > w->tree_cap) {
		uint64_t nc = (uint64_t)w->tree_cap * 2;
		if (nc < need)
			nc = need;
		if (nc < 16)
			nc = 16;
		const uint32_t oc = w->tree_cap, c = (uint32_t)nc;
		bool ok = regrow(w, (void **)&w->order, sizeof(uint32_t), oc, c) &&
		          regrow(w, (void **)&w->tpx, sizeof(float), oc + ORCA_TREE_PAD, c + ORCA_TREE_PAD) &&
		          regrow(w, (void **)&w->tpy, sizeof(float), oc + ORCA_TREE_PAD, c + ORCA_TREE_PAD) &&
		          regrow(w, (void **)&w->tnx, sizeof(float), oc + ORCA_TREE_PAD, c + ORCA_TREE_PAD) &&
		          regrow(w, (void **)&w->tny, sizeof(float), oc + ORCA_TREE_PAD, c + ORCA_TREE_PAD) &&
		          regrow(w, (void **)&w->qnodes, sizeof(query_node), 2 * oc, 2 * c) &&
		          regrow(w, (void **)&w->tnvx, sizeof(float), oc, c) &&
		          regrow(w, (void **)&w->tnvy, sizeof(float), oc, c) &&
		          regrow(w, (void **)&w->t_guess, sizeof(float), oc, c) &&
		          regrow(w, (void **)&w->t_arrived, sizeof(uint8_t), oc, c) &&
		          regrow(w, (void **)&w->tagent, sizeof(tree_agent), oc, c) &&
		          regrow(w, (void **)&w->tself, sizeof(self_params), oc, c) &&
		          regrow(w, (void **)&w->nodes, sizeof(agent_node), 2 * oc, 2 * c) &&
		          regrow(w, (void **)&w->node_list, sizeof(uint32_t), 4 * oc + 8, 4 * c + 8);
		if (!ok)
			return false;
		w->tree_cap = c;
		w->order_cap = c;
		w->node_cap = 2 * c;
	}
	return true;
}

/* ------------------------------------------------------------ lifecycle */

orca_world_def orca_default_world_def(void)
{
	orca_world_def d;
	memset(&d, 0, sizeof d);
	d.worker_count = 1;
	d.agent_capacity = 1024;
	d.obstacle_vertex_capacity = 1024;
	d.max_agents = ORCA_MAX_AGENTS;
	d.quality_follow = true;
	return d;
}

int orca_world_create(const orca_world_def *def, orca_world **out)
{
	if (!def || !out)
		return ORCA_ERR_INVALID_ARGUMENT;
	*out = NULL;
	if (def->worker_count < 1 || def->worker_count > 256 || def->max_agents > ORCA_MAX_AGENTS ||
	    def->agent_capacity > ORCA_MAX_AGENTS || def->obstacle_vertex_capacity > (1u << 24) ||
	    (unsigned)def->obstacle_index > ORCA_OBSTACLE_INDEX_RVO2)
		return ORCA_ERR_INVALID_ARGUMENT;
	if ((def->allocator.alloc == NULL) != (def->allocator.free == NULL))
		return ORCA_ERR_INVALID_ARGUMENT;
	if (def->has_bounds &&
	    !(isfinite(def->bounds_min.x) && isfinite(def->bounds_min.y) && isfinite(def->bounds_max.x) &&
	      isfinite(def->bounds_max.y) && def->bounds_min.x <= def->bounds_max.x &&
	      def->bounds_min.y <= def->bounds_max.y))
		return ORCA_ERR_INVALID_ARGUMENT;
	if (def->avoidance != ORCA_AVOIDANCE_REFERENCE && def->avoidance != ORCA_AVOIDANCE_QUALITY)
		return ORCA_ERR_INVALID_ARGUMENT;
	orca_heap heap = orca_heap_make(&def->allocator);
	orca_world *w = orca_heap_alloc(&heap, sizeof *w);
	if (!w)
		return ORCA_ERR_NO_MEMORY;
	memset(w, 0, sizeof *w);
	w->heap = heap;
	w->worker_count = def->worker_count;
	w->avoidance = def->avoidance;
	w->q_follow_rule = def->quality_follow;
	w->max_agents = def->max_agents ? def->max_agents : ORCA_MAX_AGENTS;
	w->has_bounds = def->has_bounds;
	w->bounds_min_x = def->bounds_min.x;
	w->bounds_min_y = def->bounds_min.y;
	w->bounds_max_x = def->bounds_max.x;
	w->bounds_max_y = def->bounds_max.y;
	w->free_head = ORCA_NONE;
	w->pending_head = ORCA_NONE;
	w->obst_free_head = ORCA_NONE;
	w->obst_root = ORCA_NONE;
	w->obst_index = def->obstacle_index;
	w->obst_grid = def->obstacle_index == ORCA_OBSTACLE_INDEX_GRID;
	w->obst_vert_free = ORCA_NONE;

	int rc = ORCA_ERR_NO_MEMORY;
	w->scratch = orca_mem_alloc(w, sizeof(worker_scratch) * (size_t)w->worker_count);
	if (!w->scratch)
		goto fail;
	memset(w->scratch, 0, sizeof(worker_scratch) * (size_t)w->worker_count);
	if (def->agent_capacity && !orca_world_reserve_agents(w, def->agent_capacity))
		goto fail;
	if (def->obstacle_vertex_capacity) {
		const uint32_t c = def->obstacle_vertex_capacity;
		if (!orca_mem_reserve(w, (void **)&w->verts, &w->vert_cap, c, sizeof(obst_vertex)) ||
		    !orca_mem_reserve(w, (void **)&w->onodes, &w->onode_cap, c, sizeof(obst_node)) ||
		    !orca_mem_reserve(w, (void **)&w->obst_scratch, &w->obst_scratch_cap, 4 * c, sizeof(uint32_t)))
			goto fail;
	}
	rc = orca_pool_create(&w->heap, w->worker_count, &w->pool);
	if (rc != ORCA_OK)
		goto fail;
	*out = w;
	return ORCA_OK;
fail:
	orca_world_destroy(w);
	return rc;
}

void orca_world_destroy(orca_world *w)
{
	if (!w)
		return;
	orca_pool_destroy(&w->heap, w->pool);
	const uint32_t sc = w->slot_cap, tc = w->tree_cap;
	orca_mem_free(w, w->gen, sc * sizeof(uint32_t));
	orca_mem_free(w, w->alive, sc * sizeof(uint8_t));
	orca_mem_free(w, w->free_next, sc * sizeof(uint32_t));
	orca_mem_free(w, w->tree_index, sc * sizeof(uint32_t));
	orca_mem_free(w, w->hash_order, sc * sizeof(uint32_t));
	orca_mem_free(w, w->hint, sc * ORCA_HINT_MAX * sizeof(uint32_t));
	orca_mem_free(w, w->hint_count, sc * sizeof(uint8_t));
	orca_mem_free(w, w->nb_guess, sc * sizeof(float));
	orca_query_grid_free(&w->qgrid, &w->heap);
	orca_mem_free(w, w->grid_x, w->grid_x_cap * sizeof(float));
	orca_mem_free(w, w->grid_y, w->grid_y_cap * sizeof(float));
	orca_mem_free(w, w->grid_index, w->grid_index_cap * sizeof(uint32_t));
	orca_mem_free(w, w->grid_cell, w->grid_cell_cap * sizeof(uint32_t));
	orca_mem_free(w, w->grid_start, w->grid_start_cap * sizeof(uint32_t));
	float **fa[] = {&w->px, &w->py, &w->vx, &w->vy, &w->pvx, &w->pvy};
	for (size_t i = 0; i < sizeof fa / sizeof fa[0]; ++i)
		orca_mem_free(w, *fa[i], sc * sizeof(float));
	orca_mem_free(w, w->params, sc * sizeof(agent_params));
	orca_mem_free(w, w->q_stuck, sc * sizeof(float));
	orca_mem_free(w, w->q_blocked, sc * sizeof(float));
	orca_quality_free(w);
	orca_mem_free(w, w->order, tc * sizeof(uint32_t));
	orca_mem_free(w, w->tpx, (tc + ORCA_TREE_PAD) * sizeof(float));
	orca_mem_free(w, w->tpy, (tc + ORCA_TREE_PAD) * sizeof(float));
	orca_mem_free(w, w->tnx, (tc + ORCA_TREE_PAD) * sizeof(float));
	orca_mem_free(w, w->tny, (tc + ORCA_TREE_PAD) * sizeof(float));
	orca_mem_free(w, w->qnodes, 2 * tc * sizeof(query_node));
	orca_mem_free(w, w->tnvx, tc * sizeof(float));
	orca_mem_free(w, w->tnvy, tc * sizeof(float));
	orca_mem_free(w, w->t_guess, tc * sizeof(float));
	orca_mem_free(w, w->t_arrived, tc * sizeof(uint8_t));
	orca_mem_free(w, w->tagent, tc * sizeof(tree_agent));
	orca_mem_free(w, w->tself, tc * sizeof(self_params));
	orca_mem_free(w, w->nodes, 2 * tc * sizeof(agent_node));
	orca_mem_free(w, w->node_list, (4 * tc + 8) * sizeof(uint32_t));
	for (uint32_t i = 0; i < w->obst_slot_count; ++i)
		if (w->obst[i].alive)
			orca_mem_free(w, w->obst[i].vertices, w->obst[i].count * sizeof(vec2));
	orca_mem_free(w, w->obst, w->obst_slot_cap * sizeof(obstacle_slot));
	orca_mem_free(w, w->obst_free_next, w->obst_slot_cap * sizeof(uint32_t));
	orca_mem_free(w, w->obst_order, w->obst_order_cap * sizeof(uint32_t));
	orca_mem_free(w, w->verts, w->vert_cap * sizeof(obst_vertex));
	orca_mem_free(w, w->onodes, w->onode_cap * sizeof(obst_node));
	orca_mem_free(w, w->obst_scratch, w->obst_scratch_cap * sizeof(uint32_t));
	orca_obstacle_grid_free(w);
	if (w->scratch) {
		for (int i = 0; i < w->worker_count; ++i) {
			worker_scratch *s = &w->scratch[i];
			orca_mem_free(w, s->agent_nb, s->agent_nb_cap * sizeof(nb_entry));
			orca_mem_free(w, s->obst_nb, s->obst_nb_cap * sizeof(nb_entry));
			orca_mem_free(w, s->lines, s->lines_cap * sizeof(orca_line));
			orca_mem_free(w, s->proj, s->proj_cap * sizeof(orca_line));
			orca_mem_free(w, s->stack, s->stack_cap * sizeof(tree_visit));
			orca_mem_free(w, s->build_stack, s->build_stack_cap * sizeof(build_job));
		}
		orca_mem_free(w, w->scratch, sizeof(worker_scratch) * (size_t)w->worker_count);
	}
	orca_heap heap = w->heap;
	orca_heap_free(&heap, w, sizeof *w);
}

/* ------------------------------------------------------------ step */

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Drop removed slots from the persistent order, keeping the rest in order,
 * and make their slots reusable. */
void orca_world_compact_order(struct orca_world *w)
{
	if (w->order_dirty) {
		uint32_t k = 0;
		for (uint32_t i = 0; i < w->order_count; ++i)
			if (w->alive[w->order[i]])
				w->order[k++] = w->order[i];
		w->order_count = k;
		w->order_dirty = false;
	}
	while (w->pending_head != ORCA_NONE) {
		const uint32_t s = w->pending_head;
		w->pending_head = w->free_next[s];
		w->free_next[s] = w->free_head;
		w->free_head = s;
	}
}

static void pref_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	(void)worker;
	const float dt = w->dt;
	/* the arrays in locals: the stores could alias the world's fields */
	const agent_params *params = w->params;
	const uint8_t *alive = w->alive;
	const float *px = w->px, *py = w->py;
	float *pvx = w->pvx, *pvy = w->pvy;
	for (uint32_t s = begin; s < end; ++s) { /* slot order: sequential memory */
		const agent_params *p = &params[s];
		if (!alive[s] || p->steer_mode == ORCA_STEER_VELOCITY)
			continue;
		vec2 g = v2_sub(p->target, v2(px[s], py[s]));
		if (p->steer_mode == ORCA_STEER_TARGET_RVO2) {
			/* RVO2's examples: unit speed unless closer than that */
			if (v2_abs_sq(g) > sqrf(p->pref_speed))
				g = v2_scale(v2_normalize(g), p->pref_speed);
		} else {
			/* never overshoot: at most dist / dt */
			const float dist = v2_abs(g);
			const float reach = dist / dt;
			const float speed = reach < p->pref_speed ? reach : p->pref_speed;
			g = dist > 0.0f ? v2_scale(g, speed / dist) : v2(0.0f, 0.0f);
		}
		pvx[s] = g.x;
		pvy[s] = g.y;
	}
}

static void integrate_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	const float dt = w->dt;
	/* the arrays in locals and each agent's values in registers: stores
	 * through float pointers could alias the world's fields otherwise, and
	 * every one would be reloaded per agent */
	const uint8_t *alive = w->alive;
	const uint32_t *tree_index = w->tree_index;
	const float *tnvx = w->tnvx, *tnvy = w->tnvy, *t_guess = w->t_guess;
	float *px = w->px, *py = w->py, *vx = w->vx, *vy = w->vy, *tpx = w->tpx, *tpy = w->tpy;
	float *nb_guess = w->nb_guess;
	agent_params *params = w->params;
	const bool has_bounds = w->has_bounds;
	const float min_x = w->bounds_min_x, max_x = w->bounds_max_x, min_y = w->bounds_min_y, max_y = w->bounds_max_y;
	uint32_t arrived = 0;
	for (uint32_t s = begin; s < end; ++s) { /* slot order: sequential memory */
		if (!alive[s])
			continue;
		const uint32_t i = tree_index[s];
		float nvx = tnvx[i], nvy = tnvy[i];
		float x = px[s] + nvx * dt, y = py[s] + nvy * dt;
		if (has_bounds) { /* a wall at the bounds: stop there, keep the other axis */
			if (orca_clamp_to_bound(&x, min_x, max_x))
				nvx = 0.0f;
			if (orca_clamp_to_bound(&y, min_y, max_y))
				nvy = 0.0f;
		}
		vx[s] = nvx;
		vy[s] = nvy;
		px[s] = x;
		py[s] = y;
		tpx[i] = x; /* tree order too: the refit reads these */
		tpy[i] = y;
		nb_guess[s] = t_guess[i];
		agent_params *p = &params[s];
		if (p->steer_mode != ORCA_STEER_VELOCITY) {
			const vec2 g = v2_sub(p->target, v2(x, y));
			p->arrived = v2_abs_sq(g) <= sqrf(p->arrival_distance);
			arrived += p->arrived;
		}
	}
	w->scratch[worker].arrived += arrived;
}

/* Quality mode, after the overlap pass: each slot takes its agent's outcome
 * from the tree-order arrays, in slot order, so that each worker writes its
 * own run. The step up to here wrote per-agent state by tree index only:
 * written by slot from loops in tree order, the writes of two workers would
 * share cache lines (slot and tree order are unrelated) and the lines would
 * bounce between the cores. */
static void settle_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	struct orca_world *w = ctx;
	(void)worker;
	const uint8_t *alive = w->alive;
	const uint32_t *tree_index = w->tree_index;
	const float *tnvx = w->tnvx, *tnvy = w->tnvy, *tpx = w->tpx, *tpy = w->tpy, *t_guess = w->t_guess;
	const uint8_t *t_arrived = w->t_arrived;
	const q_agent *q_agents = w->q_agents;
	float *px = w->px, *py = w->py, *vx = w->vx, *vy = w->vy, *nb_guess = w->nb_guess;
	float *q_stuck = w->q_stuck, *q_blocked = w->q_blocked;
	agent_params *params = w->params;
	for (uint32_t s = begin; s < end; ++s) {
		if (!alive[s])
			continue;
		const uint32_t i = tree_index[s];
		px[s] = tpx[i];
		py[s] = tpy[i];
		vx[s] = tnvx[i];
		vy[s] = tnvy[i];
		nb_guess[s] = t_guess[i];
		q_stuck[s] = q_agents[i].stuck;
		q_blocked[s] = q_agents[i].blocked;
		agent_params *p = &params[s];
		if (p->steer_mode != ORCA_STEER_VELOCITY)
			p->arrived = t_arrived[i];
	}
}

static bool reserve_scratch(struct orca_world *w)
{
	uint32_t nb = w->max_neighbors_max < w->order_count ? w->max_neighbors_max : w->order_count;
	const uint32_t lines = nb + w->vert_count;
	for (int i = 0; i < w->worker_count; ++i) {
		worker_scratch *s = &w->scratch[i];
		/* nb + 1 for the grid's k + 1 nearest, and one spare it writes past them */
		if (!orca_mem_reserve(w, (void **)&s->agent_nb, &s->agent_nb_cap, nb + 2, sizeof(nb_entry)) ||
		    !orca_mem_reserve(w, (void **)&s->obst_nb, &s->obst_nb_cap, w->vert_count + 1, sizeof(nb_entry)) ||
		    !orca_mem_reserve(w, (void **)&s->lines, &s->lines_cap, lines + 8, sizeof(orca_line)) ||
		    !orca_mem_reserve(w, (void **)&s->proj, &s->proj_cap, lines + 8, sizeof(orca_line)) ||
		    !orca_mem_reserve(w, (void **)&s->stack, &s->stack_cap, w->tree_cap + 1, sizeof(tree_visit)) ||
		    !orca_mem_reserve(w, (void **)&s->build_stack, &s->build_stack_cap, w->tree_cap + 1, sizeof(build_job)))
			return false;
		s->neighbor_count = 0;
		s->obstacle_line_count = 0;
		s->lp3_fallbacks = 0;
		s->arrived = 0;
	}
	return true;
}

int orca_world_step(orca_world *w, float dt)
{
	if (!w || !isfinite(dt) || !(dt > 0.0f))
		return ORCA_ERR_INVALID_ARGUMENT;
	const uint64_t allocs0 = w->heap.calls;
	orca_step_profile prof;
	memset(&prof, 0, sizeof prof);
	const double t0 = now_ms();
	w->dt = dt;
	orca_world_compact_order(w);
	const uint32_t n = w->order_count;

	orca_pool_set_spin(w->pool, n >= 4096); /* worth it only when a step is milliseconds long */
	orca_pool_run(w->pool, pref_task, w, w->slot_count, 4096);
	const double t1 = now_ms();

	if (w->obst_built_version != w->obst_version) {
		const int rc = orca_obstacles_process(w);
		if (rc != ORCA_OK)
			return rc;
		w->obst_built_version = w->obst_version;
	} else if (w->obst_grid && w->opack.stale) {
		orca_obstacle_grid_pack(w);
	}
	const double t2 = now_ms();

	if (!reserve_scratch(w) || (w->avoidance == ORCA_AVOIDANCE_QUALITY && !orca_quality_reserve(w)))
		return ORCA_ERR_NO_MEMORY;
	if (w->avoidance == ORCA_AVOIDANCE_QUALITY)
		orca_quality_rank_reset(w); /* the gather ranks the agents */
	/* quality mode: the grid alone when the crowd suits it, else the kd-tree */
	w->grid_order = w->avoidance == ORCA_AVOIDANCE_QUALITY && orca_agent_grid_order(w);
	if (!w->grid_order)
		orca_agent_tree_build(w); /* and the neighbour grid */
	if (w->avoidance == ORCA_AVOIDANCE_QUALITY)
		orca_quality_prepare(w);
	const double t3 = now_ms();

	orca_pool_run_guided(w->pool, orca_compute_velocities, w, n, 64);
	const double t4 = now_ms();

	if (w->avoidance == ORCA_AVOIDANCE_QUALITY) {
		/* the velocity stage moved the agents into tnx/tny (velocity.c):
		 * they become the tree-order positions */
		float *t = w->tpx;
		w->tpx = w->tnx;
		w->tnx = t;
		t = w->tpy;
		w->tpy = w->tny;
		w->tny = t;
		for (uint32_t k = n; k < n + ORCA_TREE_PAD; ++k)
			w->tpx[k] = w->tpy[k] = 0.0f; /* read four at a time */
		orca_quality_resolve(w); /* on the tree-order arrays, before the refit reads them */
		orca_pool_run(w->pool, settle_task, w, w->slot_count, 4096);
	} else {
		orca_pool_run(w->pool, integrate_task, w, w->slot_count, 4096);
	}
	if (w->grid_order)
		w->query_tree_valid = false; /* no kd-tree: box queries use the query grid */
	else
		orca_agent_tree_refit(w);
	w->qgrid.valid = false; /* the agents moved */
	w->steps++;
	const double t5 = now_ms();

	prof.pref_velocity_ms = t1 - t0;
	prof.obstacle_tree_ms = t2 - t1;
	prof.agent_tree_ms = t3 - t2;
	prof.velocity_ms = t4 - t3;
	prof.integrate_ms = t5 - t4;
	prof.total_ms = t5 - t0;
	prof.agents = n;
	prof.workers = (uint32_t)w->worker_count;
	for (int i = 0; i < w->worker_count; ++i) {
		prof.neighbor_count += w->scratch[i].neighbor_count;
		prof.obstacle_line_count += w->scratch[i].obstacle_line_count;
		prof.lp3_fallbacks += w->scratch[i].lp3_fallbacks;
		prof.arrived += w->scratch[i].arrived;
	}
	prof.allocations = w->heap.calls - allocs0;
	w->profile = prof;
	return ORCA_OK;
}

void orca_world_profile(const orca_world *w, orca_step_profile *out)
{
	if (!w || !out)
		return;
	*out = w->profile;
}

int orca_world_set_avoidance(orca_world *w, orca_avoidance avoidance)
{
	if (!w || (avoidance != ORCA_AVOIDANCE_REFERENCE && avoidance != ORCA_AVOIDANCE_QUALITY))
		return ORCA_ERR_INVALID_ARGUMENT;
	w->avoidance = avoidance;
	return ORCA_OK;
}

bool orca_world_query_grid_build(struct orca_world *w)
{
	return orca_query_grid_build(&w->qgrid, &w->heap, w->pool, (uint32_t)w->worker_count, w->alive, w->px, w->py,
	                             w->slot_count, w->live_count);
}

void orca_world_parallel_for(orca_world *w, orca_parallel_fn fn, void *ctx, uint32_t count, uint32_t grain)
{
	/* the queries fn may make then only read: what a query builds lazily is
	 * built here */
	orca_agent_tree_settle(w);
	if (!orca_query_tree_usable(w))
		orca_world_query_grid_build(w); /* on failure shared queries scan */
	w->queries_shared = true;
	orca_pool_run(w->pool, fn, ctx, count, grain);
	w->queries_shared = false;
}

int orca_world_worker_count(const orca_world *w) { return w ? w->worker_count : 1; }

orca_avoidance orca_world_avoidance(const orca_world *w) { return w ? w->avoidance : ORCA_AVOIDANCE_REFERENCE; }

uint64_t orca_world_step_count(const orca_world *w) { return w ? w->steps : 0; }

uint32_t orca_world_agent_count(const orca_world *w) { return w ? w->live_count : 0; }

static inline uint32_t float_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static inline uint32_t slot_id(const orca_world *w, uint32_t s)
{
	return (s + 1u) | (w->gen[s] << ORCA_ID_INDEX_BITS);
}

/* The live slots in ascending id order: NULL when that is slot order (no slot
 * was reused, every generation is 0), else w->hash_order, filled. Ascending id
 * = by generation (the high bits), then slot: a counting sort by generation
 * keeps slot order within each. */
static const uint32_t *id_order(const orca_world *w)
{
	_Static_assert(ORCA_GEN_LIMIT <= 4096u, "generation histogram size");
	uint32_t first[4097] = {0};
	for (uint32_t s = 0; s < w->slot_count; ++s)
		if (w->alive[s])
			first[w->gen[s] + 1u]++;
	if (first[1] == w->live_count)
		return NULL;
	for (uint32_t g = 1; g <= 4096u; ++g)
		first[g] += first[g - 1];
	uint32_t *order = w->hash_order; /* scratch only the state hashes touch */
	for (uint32_t s = 0; s < w->slot_count; ++s)
		if (w->alive[s])
			order[first[w->gen[s]]++] = s;
	return order;
}

/* The k-th live slot in id order, walking forward: `slot` is where the walk
 * is (the slot after the last one returned when there is no order array). */
static inline uint32_t next_live(const orca_world *w, const uint32_t *order, uint32_t k, uint32_t *slot)
{
	if (order)
		return order[k];
	uint32_t s = *slot;
	while (!w->alive[s])
		++s;
	*slot = s + 1u;
	return s;
}

/* splitmix64's finalizer: a bijection of 64 bits, each input bit reaching
 * every output bit. */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

#define HASH_BASIS 14695981039346656037ull /* FNV-1a's offset basis and prime */
#define HASH_PRIME 1099511628211ull

/* One agent as one word. Each step is a bijection of the field it takes in,
 * so a change of any one field (id, x, y, vx, vy) changes the word. The words
 * of different agents are independent: a CPU computes many at once. */
static inline uint64_t agent_word(const orca_world *w, uint32_t s)
{
	const uint64_t v = (uint64_t)float_bits(w->vx[s]) << 32 | float_bits(w->vy[s]);
	const uint64_t p = (uint64_t)float_bits(w->px[s]) << 32 | float_bits(w->py[s]);
	return mix64(slot_id(w, s) ^ mix64(p ^ mix64(v)));
}

/* The live agents in ascending id order cut into blocks of ORCA_HASH_BLOCK
 * (the last one shorter); a block's hash folds its agents' words in order
 * (h = (h ^ word) * prime, from HASH_BASIS, then mix64); the state hash folds
 * the live count and then the block hashes in order. Blocks are independent,
 * so the hash may be computed in any number of parts and comes out the same;
 * the agents' words are, too, so even one thread computes it several agents
 * at a time, where FNV-1a over bytes (orca_world_state_hash_v1) was one chain
 * of 20 multiplications per agent. */
uint64_t orca_world_state_hash(const orca_world *w)
{
	uint64_t h = (HASH_BASIS ^ (w ? w->live_count : 0u)) * HASH_PRIME;
	if (!w)
		return h;
	const uint32_t *order = id_order(w);
	uint32_t slot = 0;
	for (uint32_t begin = 0; begin < w->live_count; begin += ORCA_HASH_BLOCK) {
		const uint32_t end = w->live_count - begin < ORCA_HASH_BLOCK ? w->live_count : begin + ORCA_HASH_BLOCK;
		uint64_t b = HASH_BASIS;
		for (uint32_t k = begin; k < end; ++k)
			b = (b ^ agent_word(w, next_live(w, order, k, &slot))) * HASH_PRIME;
		h = (h ^ mix64(b)) * HASH_PRIME;
	}
	return h;
}

static inline uint64_t fnv_u32(uint64_t h, uint32_t v)
{
	for (int i = 0; i < 4; ++i) {
		h ^= (v >> (8 * i)) & 0xffu;
		h *= HASH_PRIME;
	}
	return h;
}

uint64_t orca_world_state_hash_v1(const orca_world *w)
{
	uint64_t h = HASH_BASIS; /* FNV-1a, little-endian words */
	if (!w)
		return h;
	const uint32_t *order = id_order(w);
	uint32_t slot = 0;
	for (uint32_t k = 0; k < w->live_count; ++k) {
		const uint32_t s = next_live(w, order, k, &slot);
		h = fnv_u32(h, slot_id(w, s));
		h = fnv_u32(h, float_bits(w->px[s]));
		h = fnv_u32(h, float_bits(w->py[s]));
		h = fnv_u32(h, float_bits(w->vx[s]));
		h = fnv_u32(h, float_bits(w->vy[s]));
	}
	return h;
}
