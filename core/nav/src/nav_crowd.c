/* nav_crowd.c — the navigating agents: which agents navigate and where, the
 * path-query queue with its per-update budget, corridor refreshes, re-plans,
 * arrival/unreachable/stuck events, and the update that runs the due
 * agents' visits in parallel and applies them in agent order. The rules for
 * crowds where paths meet are nav_flow.c's. */
#include "nav_internal.h"

/* ------------------------------------------------------------------ agents */

static void drop_agent(orca_nav *nav, uint32_t index)
{
	nav_agent *a = &nav->agents[index];
	navmesh_corridor_destroy(a->corridor);
	/* the slot may already name a newer agent's entry (a removed agent is
	 * forgotten lazily): only clear it if it names this one */
	if (nav->index_of_slot[slot_of(a->id)] == index)
		nav->index_of_slot[slot_of(a->id)] = NAV_NO_INDEX;
	const uint32_t last = nav->agent_count - 1;
	if (index != last) {
		nav->agents[index] = nav->agents[last];
		nav->due[index] = nav->due[last];
		if (index < nav->crowd_cap)
			nav->crowd_poly[index] =
			    last < nav->crowd_cap ? nav->crowd_poly[last] : nav_crowd_poly(nav, &nav->agents[index]);
		if (nav->index_of_slot[slot_of(nav->agents[index].id)] == last)
			nav->index_of_slot[slot_of(nav->agents[index].id)] = index;
	}
	nav->agent_count--;
}

bool nav_queue_push(orca_nav *nav, int ring, orca_agent_id id)
{
	nav_ring *q = &nav->queue[ring];
	if (q->len == q->cap) {
		const uint32_t nc = q->cap ? q->cap * 2 : 256;
		orca_agent_id *ids = nav_alloc(nav, (size_t)nc * sizeof *ids);
		if (!ids)
			return false;
		for (uint32_t i = 0; i < q->len; ++i)
			ids[i] = q->ids[(q->head + i) % q->cap];
		nav_free(nav, q->ids, (size_t)q->cap * sizeof *q->ids);
		q->ids = ids;
		q->head = 0;
		q->cap = nc;
	}
	q->ids[(q->head + q->len) % q->cap] = id;
	q->len++;
	return true;
}


/* Room for slots [0, need) in done_hint and phase_hint (new ones 0). */
bool nav_grow_hints(orca_nav *nav, uint32_t need)
{
	if (need <= nav->hint_cap)
		return true;
	uint32_t cap = nav->hint_cap ? nav->hint_cap : 16;
	while (cap < need)
		cap *= 2;
	uint8_t *done = nav_calloc(nav, cap, 1);
	uint8_t *phase = done ? nav_calloc(nav, cap, 1) : NULL;
	if (!phase) {
		nav_free(nav, done, cap);
		return false; /* both stay as they were */
	}
	if (nav->hint_cap) {
		memcpy(done, nav->done_hint, nav->hint_cap);
		memcpy(phase, nav->phase_hint, nav->hint_cap);
	}
	nav_free(nav, nav->done_hint, nav->hint_cap);
	nav_free(nav, nav->phase_hint, nav->hint_cap);
	nav->done_hint = done;
	nav->phase_hint = phase;
	nav->hint_cap = cap;
	return true;
}


/* A visit's result for its agent alone: what other agents' visits read of
 * it (done, was_waiting, was_heading: only the next update's visits and this
 * update's path answers, after the commit) and the engine's waypoint (only
 * this agent's target). Runs in parallel for the due agents (commit_task). */
static void commit_own(orca_nav *nav, nav_agent *a, const nav_visit *v)
{
	set_done(nav, a, a->phase == ORCA_NAV_DONE);
	a->was_waiting = a->waiting;
	a->was_heading = a->heading;
	if (v->set_steer)
		orca_agent_set_waypoint(nav->world, a->id, a->steer);
}

/* Whether commit_shared has anything to do for v. */
static bool visit_shared(const nav_visit *v)
{
	bool any = v->enqueue || v->event_count > 0 || v->make_way;
	for (int r = 0; r < ORCA_NAV_REPLAN_REASONS; ++r)
		any = any || v->replans[r] > 0;
	return any;
}

/* What a visit decided beyond its agent: counters, the path queue, events,
 * agents asked to make way (serially, in agent order). make_way sets the
 * waypoint of the agents it moves: after their own commit_own, as when one
 * commit did both in agent order (a moved agent's steer is then where it
 * moves it, and it is the engine's waypoint either way). */
static void commit_shared(orca_nav *nav, nav_agent *a, const nav_visit *v)
{
	for (int r = 0; r < ORCA_NAV_REPLAN_REASONS; ++r)
		nav->replans[r] += v->replans[r];
	if (v->enqueue && !nav_queue_push(nav, queue_ring(a), a->id))
		a->queued = false; /* out of memory: asked again at a later visit */
	for (uint8_t k = 0; k < v->event_count; ++k)
		nav_emit(nav, a, v->kinds[k], v->points[k]);
	orca_agent_state st;
	if (v->make_way && v->way_found)
		nav_make_way_found(nav, a, NULL, &nav->way_lists[v->way_worker].items[v->way_begin], v->way_count);
	else if (v->make_way && orca_agent_get(nav->world, a->id, &st) == ORCA_OK)
		nav_make_way(nav, a, &st);
}

/* Apply all a visit decided (one agent's: plan). */
static void commit_visit(orca_nav *nav, nav_agent *a, const nav_visit *v)
{
	commit_own(nav, a, v);
	commit_shared(nav, a, v);
}

int orca_nav_set_target(orca_nav *nav, orca_agent_id id, orca_vec2 target)
{
	if (!nav)
		return ORCA_ERR_INVALID_ARGUMENT;
	int rc = orca_agent_check(nav->world, id);
	if (rc != ORCA_OK)
		return rc;
	nav_agent *a = find_agent(nav, id);
	if (!a) {
		const uint32_t s = slot_of(id);
		if (s >= nav->slot_cap) {
			uint32_t old = nav->slot_cap;
			if (!nav_grow(nav, (void **)&nav->index_of_slot, &nav->slot_cap, s + 1, sizeof *nav->index_of_slot))
				return ORCA_ERR_NO_MEMORY;
			for (uint32_t i = old; i < nav->slot_cap; ++i)
				nav->index_of_slot[i] = NAV_NO_INDEX;
		}
		if (!nav_grow_hints(nav, s + 1))
			return ORCA_ERR_NO_MEMORY;
		if (!nav_grow(nav, (void **)&nav->agents, &nav->agent_cap, nav->agent_count + 1, sizeof *nav->agents) ||
		    !nav_grow(nav, (void **)&nav->due, &nav->due_cap, nav->agent_count + 1, sizeof *nav->due))
			return ORCA_ERR_NO_MEMORY;
		navmesh_corridor *c = navmesh_corridor_create((int)nav->def.max_path);
		if (!c)
			return ORCA_ERR_NO_MEMORY;
		a = &nav->agents[nav->agent_count];
		memset(a, 0, sizeof *a);
		a->id = id;
		a->corridor = c;
		nav->index_of_slot[s] = nav->agent_count++;
	}
	orca_agent_state st;
	orca_agent_get(nav->world, id, &st);
	const bool queued_for_target = a->queued && queue_ring(a) == NAV_RING_TARGETS;
	a->target = target;
	a->goal = target;
	a->phase = ORCA_NAV_WAITING;
	note_phase(nav, a);
	sync_due(nav, a);
	set_done(nav, a, false);
	a->far = a->unreachable = a->unreachable_sent = a->stuck_sent = a->replanned_for_stall = a->making_way = false;
	a->waiting = a->was_waiting = a->returning = false;
	a->heading = a->progress_ref = a->prev_ref = a->was_heading = target;
	a->best_dist = a->prev_best = dist(st.position, target);
	a->stall_time = 0.0f;
	a->final_leg = false;
	if (!queued_for_target) { /* a re-plan's entry, if any, is stale now */
		if (!nav_queue_push(nav, NAV_RING_TARGETS, a->id))
			return ORCA_ERR_NO_MEMORY;
		a->queued = true;
	}
	/* until its path comes: straight at the target, a new target (quality
	 * mode's right of way) */
	a->steer = target;
	return orca_agent_set_target(nav->world, a->id, target);
}

int orca_nav_stop(orca_nav *nav, orca_agent_id id)
{
	if (!nav)
		return ORCA_ERR_INVALID_ARGUMENT;
	nav_agent *a = find_agent(nav, id);
	if (a)
		drop_agent(nav, (uint32_t)(a - nav->agents));
	return ORCA_OK;
}

/* On the mesh: a point an agent's centre may stand on. */

/* Choose the point to steer at from the corridor; re-plan when pushed off it. */
static void refresh(orca_nav *nav, nav_visit *v, int worker, nav_agent *a, const orca_agent_state *st, float dt,
                    bool optimize, bool fresh)
{
	orca_vec2 corners[NAV_MAX_CORNERS];
	bool end_is_last;
	float off;
	orca_vec2 on_mesh;
	/* stuck for the whole stuck time: the corridor may lead back through
	 * where the crowd pushed the agent from (navmesh.cpp, skip_loop) */
	const bool stuck_now = nav->def.stuck_time > 0.0f && a->stall_time >= nav->def.stuck_time;
	const int n = navmesh_corridor_corners(nav->mesh, worker, a->corridor, st->position, optimize, stuck_now,
	                                       corners, NAV_MAX_CORNERS, &end_is_last, &off, &on_mesh);
	if (n < 0) {
		request_path(v, a, ORCA_NAV_REPLAN_MESH_CHANGED);
		return;
	}
	if (fresh)
		a->plan_off = off; /* off the mesh where the plan started (pressed into a wall's margin, or outside the world) */
	else if (off > a->plan_off + nav->def.agent_radius)
		request_path(v, a, ORCA_NAV_REPLAN_OFF_CORRIDOR); /* pushed off the corridor: keep the old corners until the new path */
	if (n == 0) {
		a->final_leg = true;
		a->heading = a->goal;
		if (!same_point(a->steer, a->goal))
			steer_to(nav, v, a, a->goal);
		return;
	}
	/* look past a corner the agent is about to reach, so it never slows at
	 * one; not once it has made no progress for the whole stuck time: a
	 * corridor that turns at a polygon junction the agent has not passed
	 * lists that corner again as soon as the agent turns early for the
	 * next, and it can walk to and fro between the two */
	const float speed = st->pref_speed > 0.0f ? st->pref_speed : 1.0f;
	const float look = stuck_now ? 0.5f * nav->def.agent_radius
	                               : nav->def.agent_radius + 2.0f * speed * dt; /* visits come sooner near a corner */
	int k = 0;
	while (k + 1 < n && dist(st->position, corners[k]) < look)
		++k;
	a->final_leg = end_is_last && k == n - 1;
	orca_vec2 p = a->final_leg ? a->goal : corners[k];
	a->heading = p;
	a->waiting = false;
	/* The crowd ahead (crowd_ahead), looked at while the agent is slowed
	 * (under half its cruising speed; a walker that gets on pays nothing): behind
	 * an agent it waits for, it waits its turn where it stands, unless
	 * pressed into a wall's margin (below). */
	const float r = nav->def.agent_radius;
	const float dx = p.x - st->position.x, dy = p.y - st->position.y;
	const float len = sqrtf(dx * dx + dy * dy);
	const bool stalled = nav->def.stuck_time > 0.0f && a->stall_time >= 0.25f * nav->def.stuck_time;
	const float pref = st->pref_speed > 0.0f ? st->pref_speed : 1.0f;
	const bool slowed = st->velocity.x * st->velocity.x + st->velocity.y * st->velocity.y < 0.25f * pref * pref;
	/* only in quality avoidance, whose lowest right of way lets a walker
	 * pass a waiting agent: reference mode's ORCA is reciprocal, and walkers
	 * pressed into waiting agents (steerbench: deep overlaps in SteerSuite's
	 * hallway-two-way and bottleneck-evacuation) */
	const bool quality = orca_world_avoidance(nav->world) == ORCA_AVOIDANCE_QUALITY;
	bool oncoming = false, wait = false;
	if (len > 0.0f && slowed && quality)
		nav_crowd_ahead(nav, a, st, p, dx / len, dy / len, false, &oncoming, &wait);
	if (wait && off <= 0.5f * r && !(a->stall_time >= nav->def.stuck_time && nav->def.stuck_time > 0.0f)) {
		a->waiting = true;
		a->final_leg = false;
		if (!same_point(a->steer, st->position))
			steer_to(nav, v, a, st->position);
		return;
	}
	/* Lanes between walls (quality avoidance): in a corridor, an agent that
	 * sees a walker coming the other way far ahead keeps to the right of
	 * its way, at any speed and stalled or not, so that the two streams
	 * pass in lanes before they meet (nav_flow crossing 40: two corridors
	 * crossing lock solid without). Open floor keeps the rules below. */
	orca_vec2 lane;
	if (quality && len > 0.0f && dist(st->position, a->goal) > 4.0f * r &&
	    nav_in_corridor(nav, worker, st->position, dx / len, dy / len) &&
	    nav_sees_oncoming(nav, a, st, dx / len, dy / len) &&
	    nav_lane_point(nav, worker, st, dx / len, dy / len, len, &lane)) {
		a->final_leg = false;
		if (!same_point(a->steer, lane))
			steer_to(nav, v, a, lane);
		return;
	}
	/* Keep right: with oncoming agents ahead, aim two radii to the right of
	 * the way, so that counter-flows form lanes (when the right is a wall,
	 * straight on). Stalled for half of stuck_time (a quarter in reference
	 * avoidance; two agents meeting head-on settle it by waiting first,
	 * above), the same: aim two radii to
	 * the right until it moves again, or to the left when the right is a
	 * wall (the point is off the mesh: an agent pinned at a wall's corner,
	 * whom a step right would press into the wall for good); when both are,
	 * neither. Not when the goal itself is near. */
	const bool aside = nav->def.stuck_time > 0.0f && a->stall_time >= (quality ? 0.5f : 0.25f) * nav->def.stuck_time;
	if ((aside || oncoming) && len > 0.0f && dist(st->position, a->goal) > 4.0f * r) {
		const orca_vec2 right = {p.x + dy / len * 2.0f * r, p.y - dx / len * 2.0f * r};
		const orca_vec2 left = {p.x - dy / len * 2.0f * r, p.y + dx / len * 2.0f * r};
		const bool right_open = walkable(nav, worker, right);
		if (right_open || (aside && walkable(nav, worker, left))) {
			p = right_open ? right : left;
			a->final_leg = false;
		}
	}
	/* Pressed into a wall's margin (off the mesh), the straight line to the
	 * next corner can cut the wall's corner and pin the agent against it:
	 * first back onto the mesh, then on. Not once that has stalled it for a
	 * quarter of stuck_time: the way back can be taken (nav_scale: an agent
	 * pushed outside the world's margin, the mesh's edge lined with arrived
	 * agents), and the way on, or a step aside, may be open. */
	if (off > 0.5f * r && !stalled) {
		p = on_mesh;
		a->final_leg = false;
	}
	if (!same_point(a->steer, p))
		steer_to(nav, v, a, p);
}

/* Answer an agent's path query (serially, worker 0's query). */
static void plan(orca_nav *nav, nav_agent *a, float dt)
{
	orca_agent_state st;
	if (orca_agent_get(nav->world, a->id, &st) != ORCA_OK)
		return;
	nav_visit v;
	memset(&v, 0, sizeof v);
	orca_vec2 goal = a->target;
	navmesh_plan_result r;
	const nav_found *f = nav->found_next < nav->found_count ? &nav->found[nav->found_next] : NULL;
	const bool crowded = nav_avoids_crowds(nav, a);
	if (f && f->id == a->id && same_bits(f->position, st.position) && same_bits(f->target, a->target) &&
	    f->crowded == crowded) {
		nav->found_next++;
		navmesh_plan_apply(a->corridor, &f->answer);
		r = f->answer.result;
		if (r != NAVMESH_PLAN_FAILED)
			goal = f->answer.goal;
	} else {
		nav->found_count = nav->found_next = 0; /* not the batch's order (never so far): a new batch next */
		r = navmesh_plan(nav->mesh, a->corridor, st.position, a->target, crowded, &goal);
	}
	nav->paths_planned++;
	a->far = r == NAVMESH_PLAN_FAR;
	if (r == NAVMESH_PLAN_FAILED) {
		goal = st.position; /* no mesh near it (off the world or walled in): stay */
	}
	const float tol = nav->def.goal_tolerance >= 0.0f ? nav->def.goal_tolerance : 0.5f * nav->def.agent_radius;
	a->unreachable = r == NAVMESH_PLAN_FAILED || r == NAVMESH_PLAN_UNREACHABLE ||
	                 (r == NAVMESH_PLAN_COMPLETE && dist(goal, a->target) > tol);
	if (a->unreachable && !a->unreachable_sent) {
		note_event(&v, ORCA_NAV_UNREACHABLE, goal);
		a->unreachable_sent = true;
	}
	a->goal = goal;
	if (a->phase != ORCA_NAV_DONE)
		a->phase = ORCA_NAV_MOVING;
	note_phase(nav, a);
	a->last_visit = nav->updates;
	if (r == NAVMESH_PLAN_FAILED) {
		a->final_leg = true;
		a->heading = goal;
		steer_to(nav, &v, a, goal);
		a->next_visit = nav->updates + 1;
		sync_due(nav, a);
		commit_visit(nav, a, &v);
		return;
	}
	refresh(nav, &v, 0, a, &st, dt, false, true);
	commit_visit(nav, a, &v);
	nav_schedule(nav, a, &st, dt);
	/* many agents planned in one update would all be due together: spread
	 * the first visit by id, the interval keeps them apart afterwards */
	const uint32_t interval = nav->def.refresh_interval ? nav->def.refresh_interval : 1;
	if (a->next_visit == nav->updates + interval)
		a->next_visit = nav->updates + 1u + a->id % interval;
	sync_due(nav, a);
}

/* When to look at this agent again: at its refresh interval, or sooner when
 * it will reach the point it steers at before then (so it never stops at a
 * corner, and ARRIVED is told on time). */
void nav_schedule(orca_nav *nav, nav_agent *a, const orca_agent_state *st, float dt)
{
	const uint32_t interval = nav->def.refresh_interval ? nav->def.refresh_interval : 1;
	/* at the speed it goes (a quarter of its cruising speed at least): an
	 * agent held in a crowd near its corner is not looked at every update */
	const float pref = st->pref_speed > 0.0f ? st->pref_speed : 1.0f;
	const float moving = sqrtf(st->velocity.x * st->velocity.x + st->velocity.y * st->velocity.y);
	const float speed = moving > 0.25f * pref ? moving : 0.25f * pref;
	const float left = dist(st->position, a->steer) - (a->final_leg ? 0.0f : nav->def.agent_radius);
	const float steps = left / (speed * dt);
	uint32_t wait = interval;
	if (steps < (float)interval)
		wait = steps < 1.0f ? 1u : (uint32_t)steps;
	if (a->waiting)
		wait = NAV_WAIT_VISIT < interval ? NAV_WAIT_VISIT : interval;
	a->next_visit = nav->updates + wait;
}

/* A due agent (st: its state, read by visit_task): still ours? progress,
 * STUCK, arrival, corridor refresh. Returns false when the agent is to be
 * forgotten (taken over through orca.h: a velocity, or a target that is not
 * ours; visit_task forgets a removed one). */
static bool visit_agent(orca_nav *nav, nav_visit *v, int worker, nav_agent *a, float dt,
                        const orca_agent_state *st)
{
	if (st->steer_mode == ORCA_STEER_VELOCITY || !same_point(st->target, a->steer))
		return false;
	const uint64_t since = nav->updates - a->last_visit;
	const float elapsed = (float)since * dt;
	a->last_visit = nav->updates;
	if (a->phase == ORCA_NAV_DONE) {
		nav_visit_arrived(nav, v, a, st, dt, since);
		return true;
	}

	/* Progress: a radius closer to the corner it heads for (or a new corner).
	 * Moving about without getting closer is no progress. STUCK is said
	 * once, and again only after the agent got 4 radii away from there. */
	const float r = nav->def.agent_radius;
	if (a->stuck_sent && dist(st->position, a->stuck_pos) >= 4.0f * r)
		a->stuck_sent = false;
	/* A corridor can swing: from one spot its first corner is one ahead,
	 * from a few steps on it is one behind (quality mode, 10,000 agents:
	 * an agent walking a tile border went to and fro between two corners
	 * for ever, each time "closer" to the one it headed for). So a corner
	 * headed for again right after another is measured against the best
	 * distance it had reached to it before: going back is no progress. */
	const float to_corner = dist(st->position, a->heading);
	bool progress = to_corner <= a->best_dist - r;
	if (!same_point(a->heading, a->progress_ref)) {
		const bool back = same_point(a->heading, a->prev_ref);
		const float before = a->prev_best;
		a->prev_ref = a->progress_ref;
		a->prev_best = a->best_dist;
		a->progress_ref = a->heading;
		a->best_dist = back && before < to_corner ? before : to_corner;
		progress = !back || to_corner <= before - r;
	} else if (progress) {
		a->best_dist = to_corner;
	}
	if (progress) {
		a->stall_time = 0.0f;
		a->replanned_for_stall = false;
	} else {
		a->stall_time += elapsed;
		if (nav->def.stuck_time > 0.0f) {
			if (a->stall_time >= 0.5f * nav->def.stuck_time && !a->replanned_for_stall) {
				a->replanned_for_stall = true;
				request_path(v, a, ORCA_NAV_REPLAN_NO_PROGRESS);
			}
			if (a->stall_time >= 0.25f * nav->def.stuck_time)
				v->make_way = true;
			if (a->stall_time >= nav->def.stuck_time && !a->stuck_sent) {
				a->stuck_sent = true;
				a->stuck_pos = st->position;
				note_event(v, ORCA_NAV_STUCK, st->position);
			}
		}
	}

	const float arrive = nav->def.arrival_distance;
	if (a->final_leg && !a->queued &&
	    (st->arrived || dist(st->position, a->goal) <= arrive || nav_goal_taken(nav, a, st))) {
		if (a->far) {
			request_path(v, a, ORCA_NAV_REPLAN_NEXT_PART); /* the end of a part: the next part */
			return true;
		}
		a->phase = ORCA_NAV_DONE;
		note_phase(nav, a);
		if (!a->returning)
			note_event(v, ORCA_NAV_ARRIVED, st->position);
		a->returning = false;
		/* Arrived within arrival_distance, short of the goal and making no
		 * progress: stop where it is. Pressing on at the goal it would push
		 * for ever on whoever stands there, and in a narrow spot that pins
		 * the other for good (nav_scale: an agent held between a block and
		 * an arrived one pressing at its goal). An agent still closing in
		 * walks on to the goal itself, as a client expects, while it keeps
		 * closing in (visit_arrived). */
		a->best_dist = dist(st->position, a->goal);
		if (!st->arrived && a->stall_time > 0.0f)
			nav_rest(nav, v, a, st);
		else
			nav_schedule(nav, a, st, dt);
		return true;
	}
	if (a->queued) {
		/* Its new path comes when the queue reaches it (plan schedules its
		 * next visit then); until then it is looked at as often as a walker,
		 * not every update: with the queue longer than path_budget (100,000
		 * agents, 40,000 queued) most of an update went to visits of queued
		 * agents that changed nothing. */
		nav_schedule(nav, a, st, dt);
		return true;
	}
	const uint32_t interval = nav->def.refresh_interval ? nav->def.refresh_interval : 1;
	refresh(nav, v, worker, a, st, dt, ((nav->updates / interval + a->id) & 3u) == 0, false); /* shortcut every 4th */
	nav_schedule(nav, a, st, dt);
	return true;
}

/* The parallel part of an update: agents [begin, end) on worker `worker`,
 * due ones in batches: first every entry of a batch is fetched and every
 * agent's state read (in a large crowd the agents due in an update are far
 * apart: each entry and each state is a cache miss, and so they overlap),
 * then each is visited. Nothing a visit changes is read by another agent's
 * (visits run in parallel), so the order within a batch does not matter. */
static void visit_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	enum { VISIT_BATCH = 32 };
	orca_nav *nav = ctx;
	uint32_t batch[VISIT_BATCH];
	orca_agent_state states[VISIT_BATCH];
	bool read[VISIT_BATCH];
	for (uint32_t i = begin; i < end;) {
		uint32_t n = 0;
		for (; i < end && n < VISIT_BATCH; ++i) {
			nav_agent *a = &nav->agents[i];
			nav_visit *v = &nav->visits[i];
			nav->visited[i] = 0; /* visits[i] is written only for an agent looked at */
			if (nav->visit_mesh_changed && !a->queued && !navmesh_corridor_valid(nav->mesh, a->corridor)) {
				memset(v, 0, sizeof *v);
				nav->visited[i] = 1;
				request_path(v, a, ORCA_NAV_REPLAN_MESH_CHANGED); /* a rebuilt tile touched its corridor */
				if (a->phase == ORCA_NAV_DONE)
					a->phase = ORCA_NAV_MOVING;
				note_phase(nav, a);
				a->making_way = false;
				a->next_visit = nav->updates;
				sync_due(nav, a);
			}
			if (nav->updates < nav->due[i]) /* not due, or waiting for its first path */
				continue;
			__builtin_prefetch(a);
			__builtin_prefetch((const char *)a + 64);
			__builtin_prefetch(v, 1);
			batch[n++] = i;
		}
		for (uint32_t k = 0; k < n; ++k)
			read[k] = orca_agent_get(nav->world, nav->agents[batch[k]].id, &states[k]) == ORCA_OK;
		for (uint32_t k = 0; k < n; ++k) {
			const uint32_t j = batch[k];
			nav_agent *a = &nav->agents[j];
			nav_visit *v = &nav->visits[j];
			if (!nav->visited[j]) {
				memset(v, 0, sizeof *v);
				nav->visited[j] = 1;
			}
			v->drop = !read[k] || !visit_agent(nav, v, worker, a, nav->visit_dt, &states[k]);
			if (!v->drop && v->make_way)
				nav_find_way(nav, v, worker, a, &states[k]);
			sync_due(nav, a);
		}
	}
}

/* The commit's part for each visited agent alone (commit_own), in parallel;
 * marks the visits whose commit_shared (or drop) must follow in agent order
 * (visited 2). */
static void commit_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	(void)worker;
	orca_nav *nav = ctx;
	for (uint32_t i = begin; i < end; ++i) {
		if (!nav->visited[i])
			continue;
		const nav_visit *v = &nav->visits[i];
		if (!v->drop)
			commit_own(nav, &nav->agents[i], v);
		if (v->drop || visit_shared(v))
			nav->visited[i] = 2;
	}
}

static void find_task(void *ctx, uint32_t begin, uint32_t end, int worker)
{
	orca_nav *nav = ctx;
	for (uint32_t i = begin; i < end; ++i) {
		nav_found *f = &nav->found[i];
		navmesh_plan_find(nav->mesh, worker, f->position, f->target, f->crowded,
		                  nav->found_paths + (size_t)i * nav->def.max_path, (int)nav->def.max_path, &f->answer);
	}
}

/* The path queries answer_paths is about to make, answered ahead in
 * parallel: `first` (just taken from the queue) and those after it in the
 * queue that answer_paths will plan as things stand, up to `left` (0: no
 * limit) and the batch's size. answer_paths still decides, serially and in
 * queue order, whom it plans; plan takes an answer only when it is the next
 * of the batch and for the same agent, position and target (the query is a
 * pure function of these and the mesh, which does not change meanwhile), and
 * else asks itself. So the result is the same as all-serial, for any worker
 * count. */
static void find_paths(orca_nav *nav, const nav_agent *first, uint32_t left)
{
	enum { NAV_FIND_BATCH = 1024 };
	uint32_t want = left == 0 || left > NAV_FIND_BATCH ? NAV_FIND_BATCH : left;
	const uint32_t queued = queue_length(nav);
	if (want > queued + 1u)
		want = queued + 1u;
	nav->found_count = nav->found_next = 0;
	if (want > nav->found_cap) {
		nav_found *found = nav_alloc(nav, (size_t)want * sizeof *found);
		uint32_t *paths = found ? nav_alloc(nav, (size_t)want * nav->def.max_path * sizeof *paths) : NULL;
		if (!paths) {
			nav_free(nav, found, (size_t)want * sizeof *found);
			return; /* plan asks itself */
		}
		nav_free(nav, nav->found, (size_t)nav->found_cap * sizeof *nav->found);
		nav_free(nav, nav->found_paths, (size_t)nav->found_cap * nav->def.max_path * sizeof *nav->found_paths);
		nav->found = found;
		nav->found_paths = paths;
		nav->found_cap = want;
	}
	const uint64_t mark = nav->updates + 1u;
	for (uint32_t k = 0; nav->found_count < want && k <= queued; ++k) {
		nav_agent *a = (nav_agent *)first;
		if (k > 0) {
			int ring;
			a = find_agent(nav, queue_at(nav, k - 1u, &ring));
			if (!queue_entry_live(a, ring) || a->found_in == mark)
				continue;
		}
		orca_agent_state st;
		if (orca_agent_get(nav->world, a->id, &st) != ORCA_OK)
			continue;
		a->found_in = mark;
		nav_found *f = &nav->found[nav->found_count++];
		f->id = a->id;
		f->position = st.position;
		f->target = a->target;
		f->crowded = nav_avoids_crowds(nav, a);
	}
	if (nav->found_count > 1)
		orca_world_parallel_for(nav->world, find_task, nav, nav->found_count, 1);
	else
		nav->found_count = 0; /* one query: plan asks itself */
}

static void answer_paths(orca_nav *nav, float dt)
{
	uint32_t done = 0;
	nav->found_count = nav->found_next = 0;
	while (queue_length(nav) > 0 && (nav->def.path_budget == 0 || done < nav->def.path_budget)) {
		const int ring = nav->queue[NAV_RING_TARGETS].len > 0 ? NAV_RING_TARGETS : NAV_RING_REPLANS;
		nav_ring *q = &nav->queue[ring];
		const orca_agent_id id = q->ids[q->head];
		q->head = (q->head + 1) % q->cap;
		q->len--;
		nav_agent *a = find_agent(nav, id);
		if (!queue_entry_live(a, ring))
			continue;
		a->queued = false;
		if (orca_agent_check(nav->world, id) != ORCA_OK) {
			drop_agent(nav, (uint32_t)(a - nav->agents));
			continue;
		}
		if (nav->found_next == nav->found_count && orca_world_worker_count(nav->world) > 1)
			find_paths(nav, a, nav->def.path_budget ? nav->def.path_budget - done : 0);
		plan(nav, a, dt);
		++done;
	}
	nav->found_count = nav->found_next = 0;
}

int orca_nav_update(orca_nav *nav, float dt)
{
	if (!nav || !(dt > 0.0f))
		return ORCA_ERR_INVALID_ARGUMENT;
	nav->event_count = 0;
	int rc = nav_sync_obstacles(nav);
	const bool mesh_changed = nav_rebuild_tiles(nav, nav->def.tile_budget);

	/* Only agents that are due are looked at: a corridor refresh every
	 * refresh_interval updates (staggered by id), sooner near a corner or the
	 * goal. Removed or taken-over agents are forgotten at their next visit.
	 * The visits run in parallel on the world's workers, each writing only
	 * its agent and its agent's nav_visit; what they decided for more than
	 * their agent (events, the path queue, counters, engine targets, agents
	 * asked to make way, agents forgotten) is then applied in agent order.
	 * So the result is the same for any worker count. */
	if (navmesh_set_workers(nav->mesh, orca_world_worker_count(nav->world)) != ORCA_OK || /* a query each */
	    !nav_grow(nav, (void **)&nav->visits, &nav->visit_cap, nav->agent_count, sizeof *nav->visits) ||
	    !nav_grow(nav, (void **)&nav->visited, &nav->visited_cap, nav->agent_count, sizeof *nav->visited))
		return ORCA_ERR_NO_MEMORY;
	const int workers = orca_world_worker_count(nav->world);
	if (nav->way_list_count < (uint32_t)workers) {
		nav_way_list *lists = nav_calloc(nav, (size_t)workers, sizeof *lists);
		if (!lists)
			return ORCA_ERR_NO_MEMORY;
		if (nav->way_list_count)
			memcpy(lists, nav->way_lists, (size_t)nav->way_list_count * sizeof *lists);
		nav_free(nav, nav->way_lists, (size_t)nav->way_list_count * sizeof *lists);
		nav->way_lists = lists;
		nav->way_list_count = (uint32_t)workers;
	}
	/* the visits (parallel) do not allocate: each worker's list gets room
	 * here for what the last update wanted (more, and the commit finds the
	 * candidates itself: the same result) */
	for (uint32_t k = 0; k < nav->way_list_count; ++k) {
		nav_way_list *list = &nav->way_lists[k];
		if (list->want > list->cap)
			nav_grow(nav, (void **)&list->items, &list->cap, list->want, sizeof *list->items);
		list->count = 0;
		list->want = 0;
	}
	nav->visit_dt = dt;
	nav->visit_mesh_changed = mesh_changed;
	/* runs of 1,024 agents (about a hundred of them due): each run's ends
	 * share cache lines (visited, due, visits) with the neighbouring runs,
	 * often another worker's; runs of 64 made the update slower */
	orca_world_parallel_for(nav->world, visit_task, nav, nav->agent_count, 1024);
	/* The commit: each agent's own part in parallel, then what reaches
	 * beyond it in agent order (few: events, path requests, make_way); on one
	 * worker both in one pass, in agent order (the same result). */
	uint32_t drops = 0;
	if (workers > 1) {
		orca_world_parallel_for(nav->world, commit_task, nav, nav->agent_count, 1024);
		for (uint32_t i = 0; i < nav->agent_count; ++i) {
			if (nav->visited[i] != 2)
				continue;
			const nav_visit *v = &nav->visits[i];
			drops += v->drop;
			if (!v->drop)
				commit_shared(nav, &nav->agents[i], v);
		}
	} else {
		for (uint32_t i = 0; i < nav->agent_count; ++i) {
			if (!nav->visited[i])
				continue;
			const nav_visit *v = &nav->visits[i];
			if (!v->drop) {
				commit_visit(nav, &nav->agents[i], v);
				continue;
			}
			nav->visited[i] = 2; /* dropped below */
			drops++;
		}
	}
	/* from the last: a dropped entry's place is taken by the last one, kept */
	for (uint32_t i = nav->agent_count; drops > 0 && i-- > 0;)
		if (nav->visited[i] == 2 && nav->visits[i].drop) {
			drop_agent(nav, i);
			--drops;
		}
	nav_crowd_mark(nav);
	answer_paths(nav, dt);
	nav_crowd_clear(nav);
	nav->updates++;
	return rc;
}

/* ------------------------------------------------------------------ queries */

