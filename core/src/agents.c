/* agents.c — agents as seen through the public API: validated definitions,
 * slot + generation ids (a removed agent's id goes stale and is never handed
 * out again), setters and getters, id listing and the area queries. */
#include <string.h>

#include "agents.h"
#include "quality.h"
#include "query_grid.h"
#include "world_internal.h"

#define ORCA_LIMIT 1e9f /* largest magnitude accepted for any coordinate or parameter */

static bool finite_in(float v) { return isfinite(v) && fabsf(v) <= ORCA_LIMIT; }
static bool vec_ok(orca_vec2 v) { return finite_in(v.x) && finite_in(v.y); }
static bool nonneg(float v) { return finite_in(v) && v >= 0.0f; }
static bool positive(float v) { return finite_in(v) && v > 0.0f; }

static inline orca_agent_id make_id(const struct orca_world *w, uint32_t slot)
{
	return (slot + 1u) | (w->gen[slot] << ORCA_ID_INDEX_BITS);
}

/* ORCA_OK and *slot, or UNKNOWN / STALE. */
static int lookup(const struct orca_world *w, orca_agent_id id, uint32_t *slot)
{
	if (!w)
		return ORCA_ERR_INVALID_ARGUMENT;
	const uint32_t index = id & ((1u << ORCA_ID_INDEX_BITS) - 1u);
	const uint32_t g = id >> ORCA_ID_INDEX_BITS;
	if (index == 0 || index - 1 >= w->slot_count)
		return ORCA_ERR_UNKNOWN_ID;
	const uint32_t s = index - 1;
	if (g < w->gen[s])
		return ORCA_ERR_STALE_ID;
	if (g == w->gen[s] && w->alive[s]) {
		*slot = s;
		return ORCA_OK;
	}
	return ORCA_ERR_UNKNOWN_ID;
}

orca_agent_def orca_default_agent_def(void)
{
	orca_agent_def d;
	memset(&d, 0, sizeof d);
	d.steer_mode = ORCA_STEER_VELOCITY;
	d.pref_speed = 1.0f;
	d.arrival_distance = 0.05f;
	d.radius = 1.5f;
	d.max_speed = 2.0f;
	d.neighbor_dist = 15.0f;
	d.max_neighbors = 10;
	d.time_horizon = 10.0f;
	d.time_horizon_obst = 10.0f;
	d.weight = 0.5f;
	d.layer = 1u;
	d.mask = UINT32_MAX;
	return d;
}

static bool def_ok(const orca_agent_def *d)
{
	return vec_ok(d->position) && vec_ok(d->velocity) && vec_ok(d->pref_velocity) && vec_ok(d->target) &&
	       (d->steer_mode == ORCA_STEER_VELOCITY || d->steer_mode == ORCA_STEER_TARGET ||
	        d->steer_mode == ORCA_STEER_TARGET_RVO2) &&
	       nonneg(d->pref_speed) && nonneg(d->arrival_distance) && nonneg(d->radius) && nonneg(d->max_speed) &&
	       nonneg(d->neighbor_dist) && positive(d->time_horizon) && positive(d->time_horizon_obst) &&
	       nonneg(d->weight);
}

static void store_params(struct orca_world *w, uint32_t s, const orca_agent_def *d)
{
	agent_params *p = &w->params[s];
	p->radius = d->radius;
	p->max_speed = d->max_speed;
	p->neighbor_dist = d->neighbor_dist;
	p->time_horizon = d->time_horizon;
	p->time_horizon_obst = d->time_horizon_obst;
	p->weight = d->weight;
	p->pref_speed = d->pref_speed;
	p->arrival_distance = d->arrival_distance;
	p->target = d->target;
	p->max_neighbors = d->max_neighbors;
	p->layer = d->layer;
	p->mask = d->mask;
	p->user_data = d->user_data;
	p->steer_mode = (uint8_t)d->steer_mode;
	p->arrived = 0;
	w->pvx[s] = d->pref_velocity.x;
	w->pvy[s] = d->pref_velocity.y;
	if (d->max_neighbors > w->max_neighbors_max)
		w->max_neighbors_max = d->max_neighbors;
	w->query_tree_valid = false;
	w->qgrid.valid = false;
}

/* Put a valid agent into slot s (the free list's head, or the next new slot),
 * with the arrays already large enough. Cannot fail. */
static orca_agent_id place_agent(struct orca_world *w, uint32_t s, const orca_agent_def *def)
{
	if (s == w->free_head) {
		w->free_head = w->free_next[s];
	} else {
		w->gen[s] = 0;
		w->slot_count++;
	}
	w->free_next[s] = ORCA_NONE; /* a live slot links nowhere (saved with the world: no stray bytes) */
	w->alive[s] = 1;
	w->hint_count[s] = 0;
	w->q_stuck[s] = 0.0f;
	w->q_blocked[s] = 0.0f;
	w->nb_guess[s] = 0.0f;
	w->px[s] = def->position.x;
	w->py[s] = def->position.y;
	w->vx[s] = def->velocity.x;
	w->vy[s] = def->velocity.y;
	store_params(w, s, def);
	w->order[w->order_count++] = s; /* RVO2 appends new agents to its tree order */
	w->live_count++;
	return make_id(w, s);
}

/* The slot the next add takes (after making removed slots reusable when the
 * free list is empty), or ORCA_NONE when every slot is used or retired. */
static uint32_t next_slot(struct orca_world *w)
{
	if (w->free_head == ORCA_NONE && w->pending_head != ORCA_NONE)
		orca_world_compact_order(w); /* make removed slots reusable */
	if (w->free_head != ORCA_NONE)
		return w->free_head;
	return w->slot_count < ORCA_MAX_AGENTS + 1u ? w->slot_count : ORCA_NONE;
}

int orca_agent_add(orca_world *w, const orca_agent_def *def, orca_agent_id *out)
{
	if (!w || !def)
		return ORCA_ERR_INVALID_ARGUMENT;
	if (!def_ok(def))
		return ORCA_ERR_INVALID_ARGUMENT;
	if (w->live_count >= w->max_agents)
		return ORCA_ERR_CAPACITY;
	const uint32_t s = next_slot(w);
	if (s == ORCA_NONE)
		return ORCA_ERR_CAPACITY;
	if (!orca_world_reserve_agents(w, (s + 1 > w->order_count + 1 ? s + 1 : w->order_count + 1)))
		return ORCA_ERR_NO_MEMORY;
	const orca_agent_id id = place_agent(w, s, def);
	if (out)
		*out = id;
	return ORCA_OK;
}

/* Up to `limit` entries of a slot list linked through free_next. */
static uint32_t list_length(const struct orca_world *w, uint32_t head, uint32_t limit)
{
	uint32_t n = 0;
	for (uint32_t s = head; s != ORCA_NONE && n < limit; s = w->free_next[s])
		n++;
	return n;
}

int orca_world_add_agents(orca_world *w, const orca_agent_def *defs, uint32_t count, orca_agent_id *ids,
                          uint32_t *failed)
{
	if (failed)
		*failed = 0;
	if (!w || (count && (!defs || !ids)))
		return ORCA_ERR_INVALID_ARGUMENT;
	for (uint32_t i = 0; i < count; ++i)
		if (!def_ok(&defs[i])) {
			if (failed)
				*failed = i;
			return ORCA_ERR_INVALID_ARGUMENT;
		}
	if (count == 0)
		return ORCA_OK;
	if ((uint64_t)w->live_count + count > w->max_agents)
		return ORCA_ERR_CAPACITY;
	/* Where `count` orca_agent_add calls would put them, worked out without
	 * changing anything: the free list first; once it is empty, the slots
	 * removed since the last compaction (which compacts the order: it then
	 * holds the live agents only); then new slots at the end. */
	const uint32_t from_free = list_length(w, w->free_head, count);
	const uint32_t rest = count - from_free;
	const uint32_t from_pending = list_length(w, w->pending_head, rest);
	const uint32_t fresh = rest - from_pending;
	if ((uint64_t)w->slot_count + fresh > ORCA_MAX_AGENTS + 1u)
		return ORCA_ERR_CAPACITY;
	uint64_t order_peak = (uint64_t)w->order_count + count;
	if (from_pending > 0 && w->order_dirty) /* compacted before the first pending slot is taken */
		order_peak = (uint64_t)w->live_count + count;
	if (order_peak < (uint64_t)w->order_count + from_free)
		order_peak = (uint64_t)w->order_count + from_free;
	uint64_t need = (uint64_t)w->slot_count + fresh;
	if (need < order_peak)
		need = order_peak;
	if (need > UINT32_MAX || !orca_world_reserve_agents(w, (uint32_t)need))
		return ORCA_ERR_NO_MEMORY; /* only capacities grew: nothing a step or a save sees */
	/* From here nothing can fail: the same steps as orca_agent_add, in order. */
	for (uint32_t i = 0; i < count; ++i)
		ids[i] = place_agent(w, next_slot(w), &defs[i]);
	return ORCA_OK;
}

int orca_agent_remove(orca_world *w, orca_agent_id id)
{
	uint32_t s;
	const int rc = lookup(w, id, &s);
	if (rc != ORCA_OK)
		return rc;
	w->alive[s] = 0;
	w->gen[s]++;
	w->live_count--;
	w->order_dirty = true;
	w->query_tree_valid = false;
	w->qgrid.valid = false;
	if (w->gen[s] < ORCA_GEN_LIMIT) {
		/* reusable after the order array forgets it */
		w->free_next[s] = w->pending_head;
		w->pending_head = s;
	}
	return ORCA_OK;
}

int orca_agent_check(const orca_world *w, orca_agent_id id)
{
	uint32_t s;
	return lookup(w, id, &s);
}

static int steer_at(orca_world *w, orca_agent_id id, orca_vec2 target, bool new_target)
{
	uint32_t s;
	const int rc = lookup(w, id, &s);
	if (rc != ORCA_OK)
		return rc;
	if (!vec_ok(target))
		return ORCA_ERR_INVALID_ARGUMENT;
	agent_params *p = &w->params[s];
	p->target = target;
	if (new_target)
		w->q_stuck[s] = -ORCA_Q_FRESH; /* quality mode: a new target has right of way for a while */
	if (p->steer_mode == ORCA_STEER_VELOCITY)
		p->steer_mode = ORCA_STEER_TARGET;
	p->arrived = 0;
	return ORCA_OK;
}

int orca_agent_set_target(orca_world *w, orca_agent_id id, orca_vec2 target)
{
	return steer_at(w, id, target, true);
}

int orca_agent_set_waypoint(orca_world *w, orca_agent_id id, orca_vec2 waypoint)
{
	return steer_at(w, id, waypoint, false);
}

int orca_agent_set_pref_velocity(orca_world *w, orca_agent_id id, orca_vec2 pref_velocity)
{
	uint32_t s;
	const int rc = lookup(w, id, &s);
	if (rc != ORCA_OK)
		return rc;
	if (!vec_ok(pref_velocity))
		return ORCA_ERR_INVALID_ARGUMENT;
	w->params[s].steer_mode = ORCA_STEER_VELOCITY;
	w->params[s].arrived = 0;
	w->pvx[s] = pref_velocity.x;
	w->pvy[s] = pref_velocity.y;
	return ORCA_OK;
}

int orca_agent_set_def(orca_world *w, orca_agent_id id, const orca_agent_def *def)
{
	uint32_t s;
	const int rc = lookup(w, id, &s);
	if (rc != ORCA_OK)
		return rc;
	if (!def || !def_ok(def))
		return ORCA_ERR_INVALID_ARGUMENT;
	store_params(w, s, def);
	return ORCA_OK;
}

int orca_agent_set_position(orca_world *w, orca_agent_id id, orca_vec2 position)
{
	uint32_t s;
	const int rc = lookup(w, id, &s);
	if (rc != ORCA_OK)
		return rc;
	if (!vec_ok(position))
		return ORCA_ERR_INVALID_ARGUMENT;
	w->px[s] = position.x;
	w->py[s] = position.y;
	w->query_tree_valid = false;
	w->qgrid.valid = false;
	return ORCA_OK;
}

int orca_agent_get(const orca_world *w, orca_agent_id id, orca_agent_state *out)
{
	uint32_t s;
	const int rc = lookup(w, id, &s);
	if (rc != ORCA_OK)
		return rc;
	if (!out)
		return ORCA_ERR_INVALID_ARGUMENT;
	const agent_params *p = &w->params[s];
	memset(out, 0, sizeof *out);
	out->id = id;
	out->position = v2(w->px[s], w->py[s]);
	out->velocity = v2(w->vx[s], w->vy[s]);
	out->pref_velocity = v2(w->pvx[s], w->pvy[s]);
	out->steer_mode = (orca_steer_mode)p->steer_mode;
	out->target = p->target;
	out->arrived = p->arrived != 0;
	out->radius = p->radius;
	out->max_speed = p->max_speed;
	out->pref_speed = p->pref_speed;
	out->weight = p->weight;
	out->layer = p->layer;
	out->mask = p->mask;
	out->user_data = p->user_data;
	return ORCA_OK;
}

uint32_t orca_agents_read_motion(const orca_world *w, const orca_agent_id *ids, uint32_t count, orca_agent_motion *out)
{
	if (!w || !ids || !out)
		return 0;
	uint32_t live = 0;
	for (uint32_t i = 0; i < count; ++i) {
		uint32_t s;
		orca_agent_motion *m = &out[i];
		if (lookup(w, ids[i], &s) != ORCA_OK) {
			memset(m, 0, sizeof *m);
			continue;
		}
		const agent_params *p = &w->params[s];
		m->id = ids[i];
		m->position = v2(w->px[s], w->py[s]);
		m->velocity = v2(w->vx[s], w->vy[s]);
		m->radius = p->radius;
		m->user_data = p->user_data;
		++live;
	}
	return live;
}

uint32_t orca_world_agent_ids(const orca_world *w, orca_agent_id *ids, uint32_t capacity)
{
	if (!w)
		return 0;
	uint32_t k = 0;
	for (uint32_t s = 0; s < w->slot_count; ++s) {
		if (!w->alive[s])
			continue;
		if (ids && k < capacity)
			ids[k] = make_id(w, s);
		++k;
	}
	return k;
}

/* ------------------------------------------------------------ queries */

/* Keeps the `capacity` smallest ids seen in a max-heap, then sorts them. */
typedef struct id_collector {
	const struct orca_world *w;
	orca_agent_id *ids;
	uint32_t capacity, heap, count;
	vec2 center;
	float radius_sq;
	bool round;
} id_collector;

static void sift_down(orca_agent_id *h, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && h[l] > h[m])
			m = l;
		if (r < n && h[r] > h[m])
			m = r;
		if (m == i)
			return;
		const orca_agent_id t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void collect(void *ctx, uint32_t slot)
{
	id_collector *c = ctx;
	if (c->round) {
		const float dx = c->w->px[slot] - c->center.x, dy = c->w->py[slot] - c->center.y;
		if (!(dx * dx + dy * dy <= c->radius_sq))
			return;
	}
	c->count++;
	if (c->capacity == 0 || !c->ids)
		return;
	const orca_agent_id id = make_id(c->w, slot);
	if (c->heap < c->capacity) {
		uint32_t i = c->heap++;
		c->ids[i] = id;
		while (i > 0 && c->ids[(i - 1) / 2] < c->ids[i]) {
			const orca_agent_id t = c->ids[i];
			c->ids[i] = c->ids[(i - 1) / 2];
			c->ids[(i - 1) / 2] = t;
			i = (i - 1) / 2;
		}
	} else if (id < c->ids[0]) {
		c->ids[0] = id;
		sift_down(c->ids, c->heap, 0);
	}
}

static uint32_t run_query(id_collector *c, vec2 lo, vec2 hi)
{
	const struct orca_world *w = c->w;
	if (orca_query_tree_usable(w)) {
		orca_agent_tree_query_box(w, lo, hi, collect, c);
	} else if (w->qgrid.valid || (!w->queries_shared && orca_world_query_grid_build((struct orca_world *)w))) {
		/* the world is never const itself, only this view of it (the API is
		 * one thread at a time; shared queries find the grid built) */
		orca_query_grid_visit(&w->qgrid, w->px, w->py, lo, hi, collect, c);
	} else {
		for (uint32_t s = 0; s < w->slot_count; ++s) {
			if (!w->alive[s])
				continue;
			const float x = w->px[s], y = w->py[s];
			if (x >= lo.x && x <= hi.x && y >= lo.y && y <= hi.y)
				collect(c, s);
		}
	}
	/* heap sort: ascending ids */
	for (uint32_t n = c->heap; n > 1; --n) {
		const orca_agent_id t = c->ids[0];
		c->ids[0] = c->ids[n - 1];
		c->ids[n - 1] = t;
		sift_down(c->ids, n - 1, 0);
	}
	return c->count;
}

uint32_t orca_query_rect(const orca_world *w, orca_vec2 min, orca_vec2 max, orca_agent_id *ids, uint32_t capacity)
{
	if (!w || !vec_ok(min) || !vec_ok(max))
		return 0;
	id_collector c = {w, ids, capacity, 0, 0, v2(0, 0), 0.0f, false};
	return run_query(&c, min, max);
}

uint32_t orca_query_radius(const orca_world *w, orca_vec2 center, float radius, orca_agent_id *ids,
                           uint32_t capacity)
{
	if (!w || !vec_ok(center) || !nonneg(radius))
		return 0;
	id_collector c = {w, ids, capacity, 0, 0, center, radius * radius, true};
	return run_query(&c, v2(center.x - radius, center.y - radius), v2(center.x + radius, center.y + radius));
}
