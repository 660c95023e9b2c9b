/* nav_flow.c — the rules for crowds where paths meet: an agent slowed behind
 * another waits its turn, counter-flows keep right (lanes), a stalled agent
 * steps aside, and arrived agents make way for walkers, rest where pushed,
 * walk back when the way is clear, and navigate back when pushed far. Each
 * reads the engine's state and the last commit only (the visits that call
 * them run in parallel); what moves other agents runs in the commit. */
#include "nav_internal.h"

/* What the crowd ahead asks of an agent heading along unit direction (ux,
 * uy) for the point p, from the agents within NAV_AHEAD radii of it, as the
 * engine and the last commit have them (visits run in parallel: nothing a
 * visit changes is read).
 *  - oncoming: a walking agent ahead (within 60 degrees of the way) whose
 *    own way runs against ours: keep right, so that counter-flows form lanes
 *    instead of meeting head-on;
 *  - wait: when the agent is slow (under half its cruising speed) and
 *    touches (centres within the two radii and half agent_radius) an agent
 *    ahead that is nearer p and walks the same way (within 90 degrees), or
 *    waits its turn heading the same way (within 60 degrees), or walks
 *    across or against us and has the lower id: it waits its turn (its
 *    engine target where it stands: idle, quality mode's lowest right of
 *    way, so the walkers pass it) instead of pressing. The front of a queue
 *    never waits, and in agents blocking each other across the lowest id
 *    walks. Arrived agents are never waited for (they make way). */
void nav_crowd_ahead(const orca_nav *nav, const nav_agent *a, const orca_agent_state *st, orca_vec2 p, float ux,
                     float uy, bool any_speed, bool *oncoming, bool *wait)
{
	const float r = nav->def.agent_radius;
	const float pref = st->pref_speed > 0.0f ? st->pref_speed : 1.0f;
	const bool slow =
	    any_speed || st->velocity.x * st->velocity.x + st->velocity.y * st->velocity.y < 0.25f * pref * pref;
	const float mine = dist(st->position, p);
	orca_agent_id near[16];
	uint32_t n = orca_query_radius(nav->world, st->position, NAV_AHEAD * r, near, 16);
	n = n < 16 ? n : 16;
	*oncoming = *wait = false;
	for (uint32_t i = 0; i < n; ++i) {
		if (near[i] == a->id)
			continue;
		orca_agent_state os;
		if (orca_agent_get(nav->world, near[i], &os) != ORCA_OK)
			continue;
		const float rx = os.position.x - st->position.x, ry = os.position.y - st->position.y;
		const float d = sqrtf(rx * rx + ry * ry);
		const float ahead = (rx * ux + ry * uy) / (d > 0.0f ? d : 1.0f);
		if (!(ahead > 0.5f))
			continue; /* not ahead */
		const float ox = os.pref_velocity.x, oy = os.pref_velocity.y;
		const float olen = sqrtf(ox * ox + oy * oy);
		const bool idle = !(olen > 0.1f);
		const float along = idle ? 0.0f : (ox * ux + oy * uy) / olen;
		if (!idle && along < -0.5f && ahead > 0.5f)
			*oncoming = true;
		if (!slow || *wait || d > st->radius + os.radius + 0.5f * r || !(dist(os.position, p) < mine))
			continue;
		const nav_agent *o = find_agent(nav, near[i]);
		if (o && o->done && idle)
			continue; /* arrived and at rest: it makes way */
		if (o && o->was_waiting) {
			const float hx = o->was_heading.x - os.position.x, hy = o->was_heading.y - os.position.y;
			const float hlen = sqrtf(hx * hx + hy * hy);
			*wait = hlen > 0.0f && hx * ux + hy * uy > 0.5f * hlen;
		} else {
			/* a walker that does not move (pinned: reference mode does not
			 * push a waiting agent aside) is not waited for */
			const float moving = os.velocity.x * os.velocity.x + os.velocity.y * os.velocity.y;
			*wait = !idle && moving > 0.01f * pref * pref && (along > 0.0f || near[i] < a->id);
		}
	}
}

/* Between walls: a point off the mesh on both sides of the way (unit
 * direction ux, uy) within NAV_CORRIDOR_SIDE radii of p, the two together
 * within NAV_CORRIDOR_WIDTH radii across. A wall is at least two radii off
 * the mesh across (the mesh is inflated by a radius on each side), so probes
 * every 1.5 radii never step over one. Reads only the mesh (navmesh_on_mesh:
 * the same answer on every CPU and worker). */
#define NAV_CORRIDOR_STEP 1.5f
#define NAV_CORRIDOR_SIDE 6.0f
#define NAV_CORRIDOR_WIDTH 7.5f
static float wall_side(const orca_nav *nav, int worker, orca_vec2 p, float nx, float ny)
{
	const float r = nav->def.agent_radius;
	for (float k = NAV_CORRIDOR_STEP; k <= NAV_CORRIDOR_SIDE; k += NAV_CORRIDOR_STEP) {
		const orca_vec2 q = {p.x + nx * k * r, p.y + ny * k * r};
		if (!walkable(nav, worker, q))
			return k;
	}
	return -1.0f;
}

static bool between_walls(const orca_nav *nav, int worker, orca_vec2 p, float ux, float uy)
{
	const float right = wall_side(nav, worker, p, uy, -ux);
	if (!(right > 0.0f))
		return false;
	const float left = wall_side(nav, worker, p, -uy, ux);
	return left > 0.0f && right + left <= NAV_CORRIDOR_WIDTH;
}

/* Between walls at p and NAV_CORRIDOR_LENGTH radii along the way ahead of p
 * or behind it: a corridor, not a door's jambs (a wall's thickness plus
 * two radii off the mesh along the way). */
#define NAV_CORRIDOR_LENGTH 4.0f
bool nav_in_corridor(const orca_nav *nav, int worker, orca_vec2 p, float ux, float uy)
{
	if (!between_walls(nav, worker, p, ux, uy))
		return false;
	const float along = NAV_CORRIDOR_LENGTH * nav->def.agent_radius;
	const orca_vec2 ahead = {p.x + ux * along, p.y + uy * along}, behind = {p.x - ux * along, p.y - uy * along};
	return (walkable(nav, worker, ahead) && between_walls(nav, worker, ahead, ux, uy)) ||
	       (walkable(nav, worker, behind) && between_walls(nav, worker, behind, ux, uy));
}

/* A walker coming the other way: an agent within NAV_LANE_SEE radii ahead
 * (within 60 degrees of the way, unit ux, uy) whose wanted velocity runs
 * within NAV_LANE_AGAINST of against the way. Up to NAV_LANE_LOOK agents of
 * the radius query, in its order (ascending id: the same for any worker
 * count). Reads the engine's state only. */
#define NAV_LANE_SEE 24.0f
#define NAV_LANE_LOOK 128u
#define NAV_LANE_AGAINST 0.5f /* cos 60 degrees */
bool nav_sees_oncoming(const orca_nav *nav, const nav_agent *a, const orca_agent_state *st, float ux, float uy)
{
	const float r = nav->def.agent_radius;
	orca_agent_id near[NAV_LANE_LOOK];
	uint32_t n = orca_query_radius(nav->world, st->position, NAV_LANE_SEE * r, near, NAV_LANE_LOOK);
	n = n < NAV_LANE_LOOK ? n : NAV_LANE_LOOK;
	for (uint32_t i = 0; i < n; ++i) {
		if (near[i] == a->id)
			continue;
		orca_agent_state os;
		if (orca_agent_get(nav->world, near[i], &os) != ORCA_OK)
			continue;
		const float rx = os.position.x - st->position.x, ry = os.position.y - st->position.y;
		const float d = sqrtf(rx * rx + ry * ry);
		if (!(d > 0.0f) || !(rx * ux + ry * uy > 0.5f * d))
			continue; /* not ahead */
		const float ox = os.pref_velocity.x, oy = os.pref_velocity.y;
		const float olen = sqrtf(ox * ox + oy * oy);
		if (olen > 0.1f && ox * ux + oy * uy < -NAV_LANE_AGAINST * olen)
			return true;
	}
	return false;
}

/* Where an agent keeping to its lane aims: NAV_LANE_AHEAD radii along its
 * way (no further than the point p it heads for, len away) and
 * NAV_LANE_RIGHT radii to the right of that, nearer by half radii where
 * that is off the mesh. False when even the point straight along the way is. */
#define NAV_LANE_AHEAD 6.0f
#define NAV_LANE_RIGHT 3.0f
bool nav_lane_point(const orca_nav *nav, int worker, const orca_agent_state *st, float ux, float uy, float len,
                    orca_vec2 *out)
{
	const float r = nav->def.agent_radius;
	const float along = len < NAV_LANE_AHEAD * r ? len : NAV_LANE_AHEAD * r;
	const orca_vec2 c = {st->position.x + ux * along, st->position.y + uy * along};
	for (float k = NAV_LANE_RIGHT; k >= 0.0f; k -= 0.5f) {
		const orca_vec2 q = {c.x + uy * k * r, c.y - ux * k * r};
		if (walkable(nav, worker, q)) {
			*out = q;
			return true;
		}
	}
	return false;
}

/* An arrived agent at rest: its engine target is where it stands, so it
 * wants no velocity and ORCA moves it only to make way. Looked at again soon
 * if it is being pushed (visit_arrived), else now and then. */
void nav_rest(orca_nav *nav, nav_visit *v, nav_agent *a, const orca_agent_state *st)
{
	const bool pushed = !same_point(a->steer, a->goal) && !same_point(a->steer, st->position);
	if (!same_point(a->steer, st->position))
		steer_to(nav, v, a, st->position);
	a->next_visit = nav->updates + (pushed ? 1u : nav->def.refresh_interval ? nav->def.refresh_interval : 1u);
}

/* An agent that has ARRIVED (phase DONE) makes way for those still walking.
 * It is in one of two states, told by its engine target:
 *  - walking on to its goal (target = goal): at the goal (the engine's
 *    arrival), it stays; while it gets closer it walks on; when it no longer
 *    does (someone stands at its goal, or on the way), it rests where it is;
 *  - resting where it stopped (target = a point of its own): pushed by a
 *    passer-by, it stays where it was pushed (its target follows it, so it
 *    never presses back: nav_scale, an arrived agent pressing back toward
 *    the spot it was pushed from walled a corner's passage for good) as long
 *    as that is within arrival_distance + 2 radii of its goal; pushed farther,
 *    it walks back to its goal (and rests again where that stops working).
 *    It walks back to its goal too once left alone for a refresh interval
 *    with its goal free (orca_bench maze: arrived agents jostled off their
 *    goals by those passing to deeper ones stayed off them);
 *  - making way (make_way): walking to a point a radius aside, where it
 *    rests.
 * A resting agent is looked at every refresh_interval updates, every update
 * while it is being pushed; one at its goal every NAV_DONE_VISIT. */
/* No other agent stands on the goal (they would overlap were it there). */
static bool goal_free(const orca_nav *nav, const nav_agent *a, const orca_agent_state *st)
{
	orca_agent_id near[16];
	uint32_t n = orca_query_radius(nav->world, a->goal, st->radius + nav->def.agent_radius, near, 16);
	n = n < 16 ? n : 16;
	for (uint32_t i = 0; i < n; ++i) {
		orca_agent_state os;
		if (near[i] != a->id && orca_agent_get(nav->world, near[i], &os) == ORCA_OK &&
		    dist(os.position, a->goal) < st->radius + os.radius)
			return false;
	}
	return true;
}

/* No walker near an arrived agent (within NAV_CLEAR radii of it or of its
 * goal): no agent that wants to move and has not arrived itself. Then the
 * way back to its goal is clear: it walks back instead of resting where a
 * passer-by pushed it (flow_run's crossing: 8 of 40 stood off their goals
 * for good, each within 2 radii of it). Reads the engine's state and the
 * last commit only (visits run in parallel). */
#define NAV_CLEAR 3.0f
static bool way_clear(const orca_nav *nav, const nav_agent *a, const orca_agent_state *st)
{
	const float r = nav->def.agent_radius;
	for (int k = 0; k < 2; ++k) {
		orca_agent_id near[16];
		uint32_t n = orca_query_radius(nav->world, k ? a->goal : st->position, NAV_CLEAR * r, near, 16);
		if (n > 16)
			return false;
		for (uint32_t i = 0; i < n; ++i) {
			if (near[i] == a->id)
				continue;
			orca_agent_state os;
			if (orca_agent_get(nav->world, near[i], &os) != ORCA_OK)
				continue;
			const nav_agent *o = find_agent(nav, near[i]);
			const bool idle = !(os.pref_velocity.x * os.pref_velocity.x + os.pref_velocity.y * os.pref_velocity.y >
			                    0.01f);
			if (!idle && !(o && o->done))
				return false;
			if (o && !o->done && o->was_waiting)
				return false; /* waiting to pass */
		}
	}
	return true;
}

/* Walking back to its goal, an arrived agent touches one ahead that it
 * would wait for (crowd_ahead, at any speed): two arrived agents standing on
 * each other's goals walked round each other for ever (flow_run's
 * crossing). It rests instead, and goes back when the way is clear. Not
 * looked at while it gets on toward its goal (over half its cruising speed). */
static bool home_blocked(const orca_nav *nav, const nav_agent *a, const orca_agent_state *st, float to_goal)
{
	if (!(to_goal > 0.0f) || orca_world_avoidance(nav->world) != ORCA_AVOIDANCE_QUALITY)
		return false;
	const float pref = st->pref_speed > 0.0f ? st->pref_speed : 1.0f;
	const float gx = a->goal.x - st->position.x, gy = a->goal.y - st->position.y;
	if (st->velocity.x * gx + st->velocity.y * gy > 0.5f * pref * to_goal)
		return false; /* well on its way: nothing to look at */
	bool oncoming, wait;
	nav_crowd_ahead(nav, a, st, a->goal, (a->goal.x - st->position.x) / to_goal, (a->goal.y - st->position.y) / to_goal,
	            true, &oncoming, &wait);
	return wait;
}

void nav_visit_arrived(orca_nav *nav, nav_visit *v, nav_agent *a, const orca_agent_state *st, float dt,
                          uint64_t since)
{
	if (a->making_way) {
		const float to_aside = dist(st->position, a->steer);
		if (!st->arrived && to_aside < a->best_dist) {
			a->best_dist = to_aside;
			nav_schedule(nav, a, st, dt);
			return;
		}
		a->making_way = false; /* there, or as far as it gets */
		nav_rest(nav, v, a, st);
		return;
	}
	const float to_goal = dist(st->position, a->goal);
	if (to_goal > NAV_RETURN * nav->def.agent_radius + nav->def.arrival_distance) {
		/* Pushed far off its goal (by passers-by, or making way, round a
		 * block's corner): the straight line back may cross a block (flow_run's
		 * city: arrived agents 10 to 25 away pressed into blocks for good).
		 * It navigates back like a walker, and is not told ARRIVED again. */
		a->phase = ORCA_NAV_MOVING;
		note_phase(nav, a);
		a->making_way = false;
		a->returning = true;
		a->stall_time = 0.0f;
		a->replanned_for_stall = false;
		a->heading = a->progress_ref = a->prev_ref = a->goal;
		a->best_dist = a->prev_best = to_goal;
		request_path(v, a, ORCA_NAV_REPLAN_OFF_CORRIDOR);
		a->next_visit = nav->updates + 1;
		return;
	}
	if (same_point(a->steer, a->goal)) {
		if (st->arrived) {
			a->best_dist = to_goal;
			a->next_visit = nav->updates + NAV_DONE_VISIT;
		} else if (to_goal < a->best_dist && !home_blocked(nav, a, st, to_goal)) {
			a->best_dist = to_goal; /* closing in */
			nav_schedule(nav, a, st, dt);
		} else {
			nav_rest(nav, v, a, st);
		}
		return;
	}
	const uint32_t interval = nav->def.refresh_interval ? nav->def.refresh_interval : 1;
	const bool left_alone = same_point(st->position, a->steer) && since >= interval;
	const bool off_goal = to_goal > nav->def.arrival_distance + 0.5f * nav->def.agent_radius;
	if (to_goal > nav->def.arrival_distance + 2.0f * nav->def.agent_radius ||
	    ((left_alone || (off_goal && same_point(st->position, a->steer) && way_clear(nav, a, st))) &&
	     goal_free(nav, a, st))) {
		a->best_dist = to_goal; /* pushed too far, or left alone with its goal free: back to the goal */
		steer_to(nav, v, a, a->goal);
		nav_schedule(nav, a, st, dt);
		return;
	}
	nav_rest(nav, v, a, st);
}

/* A stalled agent asks the arrived agents it touches to make way: each
 * walks a radius straight away from it (if that point is on the mesh) and
 * rests there. ORCA moves agents by their velocities: an agent pinned at a
 * wall's corner does not move, so it cannot push an arrived agent at rest
 * that narrows the passage (nav_scale: a passage of 2.7 for an agent of
 * radius 1 beside a block, left by an arrived agent, held one for good).
 * Runs in the commit (it moves other agents), in agent order. */
/* Where `os` would step aside for the agent `st`: one radius straight away
 * from it, if the two touch (centres within their radii and a quarter of
 * agent_radius) and that point is walkable (on `worker`'s query: the same
 * answer on any). Reads only positions and the mesh. */
static bool way_aside(orca_nav *nav, int worker, const orca_agent_state *st, const orca_agent_state *os,
                      orca_vec2 *aside)
{
	const float r = nav->def.agent_radius;
	const float d = dist(os->position, st->position);
	if (d > st->radius + os->radius + 0.25f * r || !(d > 0.0f))
		return false;
	*aside = (orca_vec2){os->position.x + (os->position.x - st->position.x) / d * r,
	                     os->position.y + (os->position.y - st->position.y) / d * r};
	return walkable(nav, worker, *aside);
}

/* make_way's candidates: the agents near `st` (up to 16, in the radius
 * query's order) that may step aside, and where to. All (`all`: the
 * commit's own make_way) are checked here (way_aside). A visit (parallel)
 * checks only those that had arrived before this update (done_hint, which
 * no visit writes) and keeps the others unchecked, for the commit to check
 * if they have arrived by then: make_way moves only arrived agents, an
 * agent arrives in this update at most by its own visit, and in a crowd
 * nearly every agent a stalled one touches is still walking, so the visits
 * skip a state read and a mesh query per neighbour, and the commit checks
 * the few that arrived meanwhile. Whatever the hint says, the commit moves
 * the same agents to the same points. Returns how many. */
static uint32_t way_candidates(orca_nav *nav, int worker, orca_agent_id self, const orca_agent_state *st,
                               bool all, nav_way out[16])
{
	const float r = nav->def.agent_radius;
	orca_agent_id near[16];
	uint32_t n = orca_query_radius(nav->world, st->position, st->radius + r + 0.25f * r, near, 16);
	n = n < 16 ? n : 16;
	uint32_t count = 0;
	for (uint32_t i = 0; i < n; ++i) {
		if (near[i] == self)
			continue;
		const uint32_t s = slot_of(near[i]);
		if (!all && (s >= nav->hint_cap || !nav->done_hint[s])) {
			out[count++] = (nav_way){near[i], {0.0f, 0.0f}, false};
			continue;
		}
		orca_agent_state os;
		orca_vec2 aside;
		if (orca_agent_get(nav->world, near[i], &os) == ORCA_OK && way_aside(nav, worker, st, &os, &aside))
			out[count++] = (nav_way){near[i], aside, true};
	}
	return count;
}

/* All of make_way in the commit (when its visit could not keep the candidates). */
void nav_make_way(orca_nav *nav, const nav_agent *a, const orca_agent_state *st)
{
	nav_way way[16];
	nav_make_way_found(nav, a, st, way, way_candidates(nav, 0, a->id, st, true, way));
}

/* make_way's part that reads only positions and the mesh, in a visit (on
 * `worker`; st: the agent's state): the candidates, kept in the worker's
 * list for the commit. Without room for them the commit does all of
 * make_way itself. */
void nav_find_way(orca_nav *nav, nav_visit *v, int worker, const nav_agent *a, const orca_agent_state *st)
{
	nav_way_list *list = &nav->way_lists[worker];
	if (list->count + 16 > list->cap) {
		list->want = list->cap * 2 > list->count + 16 ? list->cap * 2 : list->count + 16; /* room at the next update */
		return;
	}
	v->way_begin = list->count;
	v->way_count = (uint8_t)way_candidates(nav, worker, a->id, st, false, list->items + list->count);
	list->count += v->way_count;
	v->way_worker = (uint16_t)worker;
	v->way_found = true;
}

/* The rest of make_way, in the commit: the candidates that are arrived and
 * not making way already (as this update's earlier commits left them), and,
 * for one the visit left unchecked, touching and with a walkable point
 * aside (way_aside, as the visit would have said: positions and the mesh
 * do not change in an update). st: a's state (NULL: read when needed). */
void nav_make_way_found(orca_nav *nav, const nav_agent *a, const orca_agent_state *st, const nav_way *way,
                           uint32_t count)
{
	const float r = nav->def.agent_radius;
	orca_agent_state self;
	for (uint32_t i = 0; i < count; ++i) {
		const uint32_t s = slot_of(way[i].id);
		if (s < nav->hint_cap && !nav->phase_hint[s])
			continue; /* not arrived (find_agent would say so: a nav_agent's read less) */
		nav_agent *o = find_agent(nav, way[i].id);
		if (!o || o == a || o->phase != ORCA_NAV_DONE || o->making_way)
			continue;
		orca_vec2 aside = way[i].aside;
		if (!way[i].checked) {
			orca_agent_state os;
			if (!st) {
				if (orca_agent_get(nav->world, a->id, &self) != ORCA_OK)
					return;
				st = &self;
			}
			if (orca_agent_get(nav->world, way[i].id, &os) != ORCA_OK || !way_aside(nav, 0, st, &os, &aside))
				continue;
		}
		o->making_way = true;
		o->best_dist = r;
		steer_to(nav, NULL, o, aside);
		o->next_visit = nav->updates + 1;
		sync_due(nav, o);
	}
}

/* How near its goal (in its radii) an agent may find it held by another. */
#define NAV_HELD 3.0f

/* Another, not arrived, holds the goal (the two would overlap were a
 * there): an agent nearer the goal than a (mine away), slower than half a's
 * cruising speed, whose engine target is as near the goal (it stands
 * there), and that is not navigation's, or is navigation's and waits its
 * turn there on its way to a goal of its own (a walker only passes by).
 * Agents sent to one spot do not hold it from each other: they press for it
 * as before (SteerSuite's hallways send a hundred to one point; with this
 * rule between them those that gave up on it were pressed through, deep).
 * near: the n agents within the two radii of the goal (nav_goal_taken's
 * query). Reads the engine's state, what the last commit left (was_waiting)
 * and goals (set outside the visits) only: visits run in parallel. */
static bool goal_held(const orca_nav *nav, const nav_agent *a, const orca_agent_state *st, float mine,
                      const orca_agent_id *near, uint32_t n)
{
	const float pref = st->pref_speed > 0.0f ? st->pref_speed : 1.0f;
	for (uint32_t i = 0; i < n; ++i) {
		orca_agent_state os;
		if (near[i] == a->id || orca_agent_get(nav->world, near[i], &os) != ORCA_OK)
			continue;
		const float theirs = dist(os.position, a->goal), both = st->radius + os.radius;
		const float v2 = os.velocity.x * os.velocity.x + os.velocity.y * os.velocity.y;
		if (!(theirs < both && theirs < mine && dist(os.target, a->goal) <= both && v2 < 0.25f * pref * pref))
			continue;
		const nav_agent *o = find_agent(nav, near[i]);
		if (!o || (o->was_waiting && dist(o->goal, a->goal) > st->radius))
			return true;
	}
	return false;
}

/* Its goal is taken: on its last leg it has made no progress for a quarter
 * of stuck_time, and
 *  - an arrived agent stands on the goal (the two would overlap were it
 *    there) and it touches (centres within the two radii and a quarter of
 *    agent_radius) an arrived agent that stands nearer its goal; or
 *  - no arrived agent stands on the goal, it is within NAV_HELD radii of
 *    it, and another holds the goal (goal_held).
 * Many agents sent to one spot, or to spots closer together than they are
 * wide, cannot all stand there: the later ones arrive against the earlier,
 * as RTS units sent to one point do (nav_scale: targets clamped to the
 * world's edge). A goal held by another is as taken: pressing for it, an
 * agent only adds to the crowd that holds the other up (city_trips_bench:
 * trips more than 60 s late 16.4 % -> 10.1 % at 1,000 agents, waiting in
 * the street crossings). Within NAV_HELD radii only: arrived farther off,
 * agents in a corridor's grid of goals stood on each other's goals
 * (nav_flow crossing 20 with 4 radii: 75 of 80 on their goals a minute
 * after the last arrival). A free goal behind arrived agents is not taken:
 * make_way opens the way. */
bool nav_goal_taken(const orca_nav *nav, const nav_agent *a, const orca_agent_state *st)
{
	const float stalled = nav->def.stuck_time > 0.0f ? 0.25f * nav->def.stuck_time : 0.0f;
	if (!(a->stall_time > stalled))
		return false;
	const float reach = st->radius + nav->def.agent_radius + 0.25f * nav->def.agent_radius;
	const float mine = dist(st->position, a->goal);
	orca_agent_id near[16];
	uint32_t n = orca_query_radius(nav->world, a->goal, st->radius + nav->def.agent_radius, near, 16);
	n = n < 16 ? n : 16;
	bool covered = false;
	for (uint32_t i = 0; i < n && !covered; ++i) {
		const nav_agent *o = find_agent(nav, near[i]);
		orca_agent_state os;
		covered = o && o != a && o->done && orca_agent_get(nav->world, near[i], &os) == ORCA_OK &&
		          dist(os.position, a->goal) < st->radius + os.radius;
	}
	if (!covered)
		return mine <= NAV_HELD * st->radius && goal_held(nav, a, st, mine, near, n);
	n = orca_query_radius(nav->world, st->position, reach, near, 16);
	n = n < 16 ? n : 16;
	for (uint32_t i = 0; i < n; ++i) {
		const nav_agent *o = find_agent(nav, near[i]);
		orca_agent_state os;
		/* arrived before this update (o->done: visits run in parallel) */
		if (!o || o == a || !o->done || orca_agent_get(nav->world, near[i], &os) != ORCA_OK)
			continue;
		if (dist(os.position, st->position) <= st->radius + os.radius + 0.25f * nav->def.agent_radius &&
		    dist(os.position, a->goal) < mine)
			return true;
	}
	return false;
}

/* Held up: still walking, and no progress for a quarter of stuck_time
 * (in a jam, or waiting its turn in a queue). */
static bool held_up(const orca_nav *nav, const nav_agent *a)
{
	return a->phase == ORCA_NAV_MOVING && nav->def.stuck_time > 0.0f &&
	       a->stall_time >= 0.25f * nav->def.stuck_time;
}

/* Quality avoidance only: in reference avoidance the walkers rerouted past
 * a jam pressed deeper into others (steerbench: bottleneck-evacuation's
 * deep overlaps 54 -> 96 in reference mode). */
static bool crowd_costs_on(const orca_nav *nav)
{
	return nav->def.stuck_time > 0.0f && orca_world_avoidance(nav->world) == ORCA_AVOIDANCE_QUALITY;
}

/* A held-up agent's path query weighs crowding: each held-up agent marks
 * the polygon it stands in, and a path through a polygon marked twice costs
 * twice its length, more for more (navmesh_crowd_mark). Re-planned when held
 * up (or pushed off its corridor), it takes another street where that is not
 * much longer instead of waiting in the jam (flow_run's city: trips through
 * its middle streets locked them solid). Other queries (new targets) are
 * plain shortest paths and cost no more. */
bool nav_avoids_crowds(const orca_nav *nav, const nav_agent *a)
{
	return crowd_costs_on(nav) && held_up(nav, a);
}

/* The polygon a held-up agent marks (0: none): where its corridor starts. */
uint32_t nav_crowd_poly(const orca_nav *nav, const nav_agent *a)
{
	return held_up(nav, a) ? navmesh_corridor_first(a->corridor) : 0u;
}

/* The marks for this update's path queries, made before them if one of
 * the agents the queries will serve avoids crowds (those at the queue's
 * head, path_budget of them: a few more are served when some ahead were
 * dropped, and one of those avoiding crowds then finds no marks, the plain
 * shortest path), and cleared after them (nav_crowd_clear): nothing of it is
 * kept between updates. Made from the agents as they stand before any query
 * (whatever the worker count: the same marks), read from crowd_poly (kept by
 * sync_due; agents beyond it get room here and their entry from their
 * state: the same). */
void nav_crowd_mark(orca_nav *nav)
{
	if (!crowd_costs_on(nav))
		return;
	const uint32_t len = queue_length(nav);
	const uint32_t head = nav->def.path_budget && nav->def.path_budget < len ? nav->def.path_budget : len;
	bool wanted = false;
	for (uint32_t k = 0; k < head && !wanted; ++k) {
		int ring;
		const nav_agent *a = find_agent(nav, queue_at(nav, k, &ring));
		wanted = queue_entry_live(a, ring) && held_up(nav, a);
	}
	if (!wanted)
		return;
	nav->crowd_marked = true;
	if (nav->crowd_cap < nav->agent_count) {
		const uint32_t old = nav->crowd_cap;
		if (nav_grow(nav, (void **)&nav->crowd_poly, &nav->crowd_cap, nav->agent_count, sizeof *nav->crowd_poly))
			for (uint32_t i = old; i < nav->crowd_cap && i < nav->agent_count; ++i)
				nav->crowd_poly[i] = nav_crowd_poly(nav, &nav->agents[i]);
	}
	/* agents next to each other in the list mostly stand on one polygon
	 * (they came in together): one mark of a run's length each run */
	uint32_t run_ref = 0, run = 0;
	for (uint32_t i = 0; i < nav->agent_count; ++i) {
		const uint32_t ref = i < nav->crowd_cap ? nav->crowd_poly[i] : nav_crowd_poly(nav, &nav->agents[i]);
		if (ref != run_ref) {
			navmesh_crowd_mark(nav->mesh, run_ref, run);
			run_ref = ref;
			run = 0;
		}
		run++;
	}
	navmesh_crowd_mark(nav->mesh, run_ref, run);
}

void nav_crowd_clear(orca_nav *nav)
{
	if (nav->crowd_marked)
		navmesh_crowd_clear(nav->mesh);
	nav->crowd_marked = false;
}
