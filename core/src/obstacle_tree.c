/* obstacle_tree.c — static polygon obstacles as RVO2 handles them: the vertex
 * table (edge directions, convexity), the obstacle kd-tree whose build splits
 * edges that straddle a splitting line, and the per-agent obstacle query.
 * The build is O(n^2) in the vertex count, so it runs only for what RVO2's
 * reference runs look like (every obstacle added before the first step, a
 * bounded vertex count) or when the world asks for it; any other world uses
 * the edge grid of obstacle_grid.c, and this file only dispatches to it. */
#include "obstacles.h"
#include "world_internal.h"

/* Append the processed vertices of one polygon, as RVO2's addObstacle does. */
static bool add_polygon(struct orca_world *w, uint32_t owner, const vec2 *v, uint32_t n)
{
	if (!orca_mem_reserve(w, (void **)&w->verts, &w->vert_cap, w->vert_count + n, sizeof(obst_vertex)))
		return false;
	const uint32_t base = w->vert_count;
	for (uint32_t i = 0; i < n; ++i) {
		obst_vertex *o = &w->verts[base + i];
		const uint32_t inext = (i == n - 1) ? 0 : i + 1;
		const uint32_t iprev = (i == 0) ? n - 1 : i - 1;
		o->point = v[i];
		o->next = base + inext;
		o->prev = base + iprev;
		o->unit_dir = v2_normalize(v2_sub(v[inext], v[i]));
		o->convex = (n == 2) ? 1u : (left_of(v[iprev], v[i], v[inext]) >= 0.0f);
		o->owner = owner;
		o->corner = i;
	}
	w->vert_count += n;
	return true;
}

typedef struct split_counts {
	uint32_t hi, lo; /* max(left, right), min(left, right) */
} split_counts;

static bool pair_ge(split_counts a, split_counts b) { return a.hi > b.hi || (a.hi == b.hi && a.lo >= b.lo); }

static split_counts counts(uint32_t l, uint32_t r)
{
	split_counts c = {l > r ? l : r, l < r ? l : r};
	return c;
}

/* Build the subtree over the vertex list at obst_scratch[off, off+len);
 * returns the node index or ORCA_NONE. `top` is the first free scratch word. */
static uint32_t build_recursive(struct orca_world *w, uint32_t off, uint32_t len, uint32_t top, bool *ok)
{
	if (len == 0 || !*ok)
		return ORCA_NONE;

	uint32_t optimal = 0, min_left = len, min_right = len;
	for (uint32_t i = 0; i < len; ++i) {
		uint32_t left_size = 0, right_size = 0;
		const obst_vertex *i1 = &w->verts[w->obst_scratch[off + i]];
		const obst_vertex *i2 = &w->verts[i1->next];
		for (uint32_t j = 0; j < len; ++j) {
			if (i == j)
				continue;
			const obst_vertex *j1 = &w->verts[w->obst_scratch[off + j]];
			const obst_vertex *j2 = &w->verts[j1->next];
			const float j1_left = left_of(i1->point, i2->point, j1->point);
			const float j2_left = left_of(i1->point, i2->point, j2->point);
			if (j1_left >= -ORCA_EPSILON && j2_left >= -ORCA_EPSILON) {
				++left_size;
			} else if (j1_left <= ORCA_EPSILON && j2_left <= ORCA_EPSILON) {
				++right_size;
			} else {
				++left_size;
				++right_size;
			}
			if (pair_ge(counts(left_size, right_size), counts(min_left, min_right)))
				break;
		}
		if (!pair_ge(counts(left_size, right_size), counts(min_left, min_right))) {
			min_left = left_size;
			min_right = right_size;
			optimal = i;
		}
	}

	/* room for the two child lists, and for the split vertices */
	const uint32_t left_off = top, right_off = top + min_left, new_top = top + min_left + min_right;
	if (!orca_mem_reserve(w, (void **)&w->obst_scratch, &w->obst_scratch_cap, new_top, sizeof(uint32_t)) ||
	    !orca_mem_reserve(w, (void **)&w->verts, &w->vert_cap, w->vert_count + len, sizeof(obst_vertex)) ||
	    !orca_mem_reserve(w, (void **)&w->onodes, &w->onode_cap, w->onode_count + 1, sizeof(obst_node))) {
		*ok = false;
		return ORCA_NONE;
	}

	uint32_t left_counter = 0, right_counter = 0;
	const uint32_t vi1 = w->obst_scratch[off + optimal];
	const uint32_t vi2 = w->verts[vi1].next;
	for (uint32_t j = 0; j < len; ++j) {
		if (j == optimal)
			continue;
		const uint32_t vj1 = w->obst_scratch[off + j];
		const uint32_t vj2 = w->verts[vj1].next;
		const vec2 p_i1 = w->verts[vi1].point, p_i2 = w->verts[vi2].point;
		const vec2 p_j1 = w->verts[vj1].point, p_j2 = w->verts[vj2].point;
		const float j1_left = left_of(p_i1, p_i2, p_j1);
		const float j2_left = left_of(p_i1, p_i2, p_j2);
		if (j1_left >= -ORCA_EPSILON && j2_left >= -ORCA_EPSILON) {
			w->obst_scratch[left_off + left_counter++] = vj1;
		} else if (j1_left <= ORCA_EPSILON && j2_left <= ORCA_EPSILON) {
			w->obst_scratch[right_off + right_counter++] = vj1;
		} else {
			/* split edge j1->j2 where it crosses line i */
			const float t = v2_det(v2_sub(p_i2, p_i1), v2_sub(p_j1, p_i1)) /
			                v2_det(v2_sub(p_i2, p_i1), v2_sub(p_j1, p_j2));
			const vec2 split_point = v2_add(p_j1, v2_scale(v2_sub(p_j2, p_j1), t));
			const uint32_t vn = w->vert_count++;
			obst_vertex *nv = &w->verts[vn];
			nv->point = split_point;
			nv->prev = vj1;
			nv->next = vj2;
			nv->convex = 1;
			nv->unit_dir = w->verts[vj1].unit_dir;
			nv->owner = w->verts[vj1].owner;
			nv->corner = w->verts[vj1].corner;
			w->verts[vj1].next = vn;
			w->verts[vj2].prev = vn;
			if (j1_left > 0.0f) {
				w->obst_scratch[left_off + left_counter++] = vj1;
				w->obst_scratch[right_off + right_counter++] = vn;
			} else {
				w->obst_scratch[right_off + right_counter++] = vj1;
				w->obst_scratch[left_off + left_counter++] = vn;
			}
		}
	}

	const uint32_t node = w->onode_count++;
	w->onodes[node].vertex = vi1;
	const uint32_t l = build_recursive(w, left_off, min_left, new_top, ok);
	const uint32_t r = build_recursive(w, right_off, min_right, new_top, ok);
	w->onodes[node].left = l;
	w->onodes[node].right = r;
	return node;
}

static int build_rvo2_tree(struct orca_world *w)
{
	w->vert_count = 0;
	w->onode_count = 0;
	w->obst_root = ORCA_NONE;
	for (uint32_t k = 0; k < w->obst_live; ++k) {
		const obstacle_slot *o = &w->obst[w->obst_order[k]];
		if (!add_polygon(w, w->obst_order[k], o->vertices, o->count))
			return ORCA_ERR_NO_MEMORY;
	}
	const uint32_t n = w->vert_count;
	if (n == 0)
		return ORCA_OK;
	if (!orca_mem_reserve(w, (void **)&w->obst_scratch, &w->obst_scratch_cap, n, sizeof(uint32_t)))
		return ORCA_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < n; ++i)
		w->obst_scratch[i] = i;
	bool ok = true;
	w->obst_root = build_recursive(w, 0, n, n, &ok);
	return ok ? ORCA_OK : ORCA_ERR_NO_MEMORY;
}

/* Called by the step when obstacles changed since the last one. The choice
 * depends on the world's history only (step count, vertex count, def), never
 * on timing, so every run of the same calls makes the same choice. */
int orca_obstacles_process(struct orca_world *w)
{
	uint64_t vertices = 0;
	for (uint32_t k = 0; k < w->obst_live; ++k)
		vertices += w->obst[w->obst_order[k]].count;
	if (!w->obst_grid) {
		/* AUTO: the tree only for what RVO2 itself can do — obstacles given
		 * before the first step and never changed. (A loaded world that had
		 * the tree gets it rebuilt by world_io.c, which steps it as at 0.) */
		const bool rvo2 = w->obst_index == ORCA_OBSTACLE_INDEX_RVO2 ||
		                  (!w->obst_tree && w->steps == 0 && vertices <= ORCA_RVO2_TREE_MAX_VERTICES);
		if (rvo2) {
			w->obst_tree = w->obst_index != ORCA_OBSTACLE_INDEX_RVO2;
			w->obst_stale = false;
			return build_rvo2_tree(w);
		}
		/* the first change after the first step: the grid from now on */
		w->obst_tree = false;
		w->obst_stale = true;
		w->obst_grid = true;
	}
	if (w->obst_stale || w->obst_edges != vertices) { /* just switched, or obstacles loaded without it */
		const int rc = orca_obstacle_grid_rebuild(w);
		if (rc != ORCA_OK)
			return rc;
		w->obst_stale = false;
	}
	/* the grid is kept up to date by every add and remove */
	w->obst_root = w->obst_edges ? 0u : ORCA_NONE;
	return ORCA_OK;
}

typedef struct obst_query {
	const struct orca_world *w;
	vec2 position;
	float range_sq;
	nb_entry *out;
	uint32_t count;
} obst_query;

static void insert_obstacle_neighbor(obst_query *q, uint32_t vi)
{
	const obst_vertex *o = &q->w->verts[vi];
	const float dist_sq = dist_sq_point_segment(o->point, q->w->verts[o->next].point, q->position);
	if (dist_sq < q->range_sq) {
		uint32_t i = q->count++;
		while (i != 0 && dist_sq < q->out[i - 1].dist_sq) {
			q->out[i] = q->out[i - 1];
			--i;
		}
		q->out[i].dist_sq = dist_sq;
		q->out[i].index = vi;
	}
}

static void query_recursive(obst_query *q, uint32_t node)
{
	if (node == ORCA_NONE)
		return;
	const obst_node *nd = &q->w->onodes[node];
	const obst_vertex *o1 = &q->w->verts[nd->vertex];
	const obst_vertex *o2 = &q->w->verts[o1->next];
	const float agent_left = left_of(o1->point, o2->point, q->position);

	query_recursive(q, agent_left >= 0.0f ? nd->left : nd->right);

	const float dist_sq_line = sqrf(agent_left) / v2_abs_sq(v2_sub(o2->point, o1->point));
	if (dist_sq_line < q->range_sq) {
		if (agent_left < 0.0f) {
			/* only from the right side can the agent see this edge */
			insert_obstacle_neighbor(q, nd->vertex);
		}
		query_recursive(q, agent_left >= 0.0f ? nd->right : nd->left);
	}
}

uint32_t orca_obstacle_tree_query(const struct orca_world *w, vec2 position, float range_sq, nb_entry *out)
{
	if (w->obst_grid)
		return orca_obstacle_grid_query(w, position, range_sq, out);
	obst_query q = {w, position, range_sq, out, 0};
	query_recursive(&q, w->obst_root);
	return q.count;
}
