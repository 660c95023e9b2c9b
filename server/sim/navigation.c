/* navigation.c — see navigation.h. */
#include "navigation.h"

#include <stdlib.h>
#include <string.h>

#include <orca/nav.h>
#include <uv.h>

#include "log.h"

#define EVENTS_PER_MESSAGE 4096u /* a message's repeated count is 16-bit in nanopb */
#define PATH_CORNERS 8u          /* corners per AgentPath (the rest follow once it walks) */

struct server_navigation {
	orca_world *world;
	orca_nav *nav;
	/* events of the last update, with their owner */
	crowd_v1_AgentEvent *events;
	uint32_t event_count, event_cap;
	uint64_t totals[4];
};

server_navigation *navigation_create(orca_world *world, const server_config *cfg) {
	if (!cfg->nav_enabled) return NULL;
	server_navigation *n = calloc(1, sizeof *n);
	if (!n) return NULL;
	n->world = world;
	orca_nav_def d = orca_nav_default_def();
	d.bounds_min = (orca_vec2){(float)cfg->world_min_x, (float)cfg->world_min_y};
	d.bounds_max = (orca_vec2){(float)cfg->world_max_x, (float)cfg->world_max_y};
	d.agent_radius = (float)cfg->nav_agent_radius;
	d.cell_size = (float)cfg->nav_cell_size;
	d.tile_budget = cfg->nav_tile_budget;
	d.path_budget = cfg->nav_path_budget;
	d.stuck_time = (float)cfg->nav_stuck_seconds;
	d.arrival_distance = (float)cfg->nav_arrival_distance;
	uint64_t t0 = uv_hrtime();
	int rc = orca_nav_create(&d, world, &n->nav);
	if (rc != ORCA_OK) {
		log_error("navigation: cannot build the navigation mesh: %s", orca_strerror(rc));
		free(n);
		return NULL;
	}
	orca_nav_stats s;
	orca_nav_get_stats(n->nav, &s);
	log_info("navigation: mesh of %ux%u tiles, %u polygons, radius %g, built in %.0f ms", s.tiles_x, s.tiles_y,
	         s.polygons, cfg->nav_agent_radius, (double)(uv_hrtime() - t0) * 1e-6);
	return n;
}

void navigation_destroy(server_navigation *n) {
	if (!n) return;
	orca_nav_destroy(n->nav);
	free(n->events);
	free(n);
}

static void navigate(server_navigation *n, uint32_t id, float x, float y) {
	int rc = orca_nav_set_target(n->nav, id, (orca_vec2){x, y});
	if (rc != ORCA_OK) /* the engine target set by the command stays: straight at it */
		log_warn("navigation: agent %u: %s; it walks straight", id, orca_strerror(rc));
}

void navigation_set_target(server_navigation *n, uint32_t id, orca_vec2 target) {
	navigate(n, id, target.x, target.y);
}

navigation_phase navigation_agent_phase(server_navigation *n, uint32_t id) {
	orca_nav_path p;
	if (orca_nav_get_path(n->nav, id, &p, NULL, 0) != ORCA_OK) return NAVIGATION_NONE;
	return (navigation_phase)p.phase;
}

_Static_assert(NAVIGATION_WAITING == (int)ORCA_NAV_WAITING && NAVIGATION_MOVING == (int)ORCA_NAV_MOVING &&
                   NAVIGATION_DONE == (int)ORCA_NAV_DONE,
               "navigation_phase has orca_nav_agent_phase's numbers");

/* The message table's navigation hooks (messages.h calls them after a successful apply). */

void navigation_after_spawn(server_navigation *n, const command *cmd, const command_result *r) {
	const crowd_v1_SpawnAgents *sp = &cmd->msg.msg.spawn_agents;
	for (uint32_t i = 0; i < sp->agents_count && i < r->id_count; i++) {
		const crowd_v1_AgentSpec *a = &sp->agents[i];
		if (a->has_target && a->steer != crowd_v1_SteerMode_STEER_DIRECT) navigate(n, r->ids[i], a->target.x, a->target.y);
	}
}

void navigation_after_set_targets(server_navigation *n, const command *cmd, const command_result *r) {
	(void)r;
	const crowd_v1_SetTargets *t = &cmd->msg.msg.set_targets;
	const bool direct = t->steer && *t->steer == crowd_v1_SteerMode_STEER_DIRECT;
	for (uint32_t i = 0; i < t->ids_count; i++) {
		const uint32_t k = t->x_count == 1 ? 0 : i;
		if (direct)
			orca_nav_stop(n->nav, t->ids[i]);
		else
			navigate(n, t->ids[i], t->x[k], t->y[k]);
	}
}

void navigation_after_set_velocities(server_navigation *n, const command *cmd, const command_result *r) {
	(void)r;
	for (uint32_t i = 0; i < cmd->msg.msg.set_velocities.ids_count; i++)
		orca_nav_stop(n->nav, cmd->msg.msg.set_velocities.ids[i]);
}

void navigation_before_step(server_navigation *n, float dt) {
	n->event_count = 0;
	int rc = orca_nav_update(n->nav, dt);
	if (rc != ORCA_OK) log_warn("navigation: update: %s", orca_strerror(rc));
	uint32_t count;
	const orca_nav_event *ev = orca_nav_events(n->nav, &count);
	if (count > n->event_cap) {
		crowd_v1_AgentEvent *p = realloc(n->events, sizeof *p * count);
		if (!p) {
			log_warn("navigation: out of memory: %u events lost", count);
			return;
		}
		n->events = p;
		n->event_cap = count;
	}
	for (uint32_t i = 0; i < count; i++) {
		orca_agent_state st;
		if (orca_agent_get(n->world, ev[i].agent, &st) != ORCA_OK) continue;
		crowd_v1_AgentEvent *e = &n->events[n->event_count++];
		memset(e, 0, sizeof *e);
		e->agent_id = ev[i].agent;
		e->kind = (crowd_v1_AgentEventKind)ev[i].kind;
		e->has_point = e->has_target = true;
		e->point = (crowd_v1_Vec2){ev[i].point.x, ev[i].point.y};
		e->target = (crowd_v1_Vec2){ev[i].target.x, ev[i].target.y};
		e->owner = st.user_data;
		if ((unsigned)ev[i].kind < 4) n->totals[ev[i].kind]++;
	}
}

const crowd_v1_AgentEvent *navigation_events(const server_navigation *n, uint32_t *count) {
	*count = n ? n->event_count : 0;
	return n ? n->events : NULL;
}

/* One AgentPath's arrays live in one block (freed after the send). */
typedef struct path_block {
	uint32_t agent_id;
	bool unreachable;
	crowd_v1_Vec2 goal;
	float x[PATH_CORNERS], y[PATH_CORNERS];
	crowd_v1_Polygon *corridor;
	float *corridor_xy; /* 12 floats per polygon: 6 x then 6 y */
} path_block;

void navigation_paths_free(navigation_paths_reply *r) {
	path_block *blocks = r->blocks;
	for (uint32_t i = 0; blocks && i < r->count; i++) {
		free(blocks[i].corridor);
		free(blocks[i].corridor_xy);
	}
	free(blocks);
	free(r->msg.msg.paths.paths);
	memset(r, 0, sizeof *r);
}

bool navigation_paths(const server_navigation *n, const orca_world *world, const command *cmd,
                      navigation_paths_reply *out, request_error *err) {
	memset(out, 0, sizeof *out);
	const crowd_v1_GetPaths *g = &cmd->msg.msg.get_paths;
	const uint32_t rid = cmd->msg.request_id;
	/* rights first, all or nothing, as every request */
	for (uint32_t i = 0; i < g->ids_count; i++) {
		orca_agent_state st;
		int rc = orca_agent_get(world, g->ids[i], &st);
		if (rc != ORCA_OK) return request_fail(err, command_error_from_orca(rc), i, "no such agent");
		if (cmd->role != crowd_v1_Role_ROLE_ADMIN && st.user_data != cmd->client_id)
			return request_fail(err, crowd_v1_ErrorCode_ERROR_NOT_OWNER, i, "not your agent");
	}
	const uint32_t count = g->ids_count;
	path_block *blocks = calloc(count ? count : 1, sizeof *blocks);
	crowd_v1_AgentPath *paths = calloc(count ? count : 1, sizeof *paths);
	out->blocks = blocks;
	out->count = count;
	out->msg.msg.paths.paths = paths;
	bool ok = blocks && paths;
	for (uint32_t i = 0; ok && i < count; i++) {
		path_block *b = &blocks[i];
		crowd_v1_AgentPath *p = &paths[i];
		b->agent_id = g->ids[i];
		p->agent_id = &b->agent_id;
		if (!n) continue; /* navigation off: every path is empty */
		orca_nav_path np;
		orca_vec2 corners[PATH_CORNERS];
		if (orca_nav_get_path(n->nav, g->ids[i], &np, corners, PATH_CORNERS) != ORCA_OK ||
		    np.phase == ORCA_NAV_NONE)
			continue;
		for (uint32_t k = 0; k < np.corner_count; k++) {
			b->x[k] = corners[k].x;
			b->y[k] = corners[k].y;
		}
		p->x = b->x;
		p->y = b->y;
		p->x_count = p->y_count = (pb_size_t)np.corner_count;
		b->goal = (crowd_v1_Vec2){np.goal.x, np.goal.y};
		p->goal = &b->goal;
		b->unreachable = np.unreachable;
		p->unreachable = &b->unreachable;
		if (np.corridor_count == 0) continue;
		b->corridor = calloc(np.corridor_count, sizeof *b->corridor);
		b->corridor_xy = calloc((size_t)np.corridor_count * 12, sizeof *b->corridor_xy);
		if (!b->corridor || !b->corridor_xy) {
			ok = false;
			break;
		}
		pb_size_t used = 0;
		for (uint32_t k = 0; k < np.corridor_count; k++) {
			orca_vec2 v[6];
			const uint32_t nv = orca_nav_corridor_polygon(n->nav, g->ids[i], k, v);
			if (nv == 0) continue;
			float *xy = b->corridor_xy + (size_t)used * 12;
			for (uint32_t j = 0; j < nv; j++) {
				xy[j] = v[j].x;
				xy[6 + j] = v[j].y;
			}
			b->corridor[used].x = xy;
			b->corridor[used].y = xy + 6;
			b->corridor[used].x_count = b->corridor[used].y_count = (pb_size_t)nv;
			used++;
		}
		p->corridor = b->corridor;
		p->corridor_count = used;
	}
	if (!ok) {
		navigation_paths_free(out);
		return request_fail(err, crowd_v1_ErrorCode_ERROR_INTERNAL, 0, "out of memory");
	}
	out->msg.which_msg = crowd_v1_ServerMessage_paths_tag;
	out->msg.msg.paths.request_id = rid;
	out->msg.msg.paths.paths_count = (pb_size_t)count;
	return true;
}

void navigation_get_counters(const server_navigation *n, navigation_counters *out) {
	memset(out, 0, sizeof *out);
	if (!n) return;
	memcpy(out->events, n->totals, sizeof out->events);
	orca_nav_stats s;
	orca_nav_get_counts(n->nav, &s); /* every tick: without the memory sum, which walks every corridor */
	out->paths_planned = s.paths_planned;
	out->paths_pending = s.paths_pending;
	out->tiles_pending = s.tiles_pending;
	out->agents = s.agents;
	out->polygons = s.polygons;
	out->tiles_built = s.tiles_built;
	memcpy(out->replans, s.replans, sizeof out->replans);
}

/* ---- persistence (server/storage) */

size_t navigation_save(const server_navigation *n, uint8_t *buf, size_t capacity) {
	return n ? orca_nav_save(n->nav, buf, capacity) : 0;
}

int navigation_load(server_navigation *n, const uint8_t *buf, size_t len) {
	return n ? orca_nav_load(n->nav, buf, len) : ORCA_ERR_INVALID_ARGUMENT;
}
