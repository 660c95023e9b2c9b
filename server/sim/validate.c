/* validate.c — stateless checks of every field of a client request (see validate.h). */
#include "validate.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <crowd/wire.h>
#include <orca/orca.h>

bool request_fail(request_error *err, crowd_v1_ErrorCode code, uint32_t index, const char *fmt, ...) {
	err->code = code;
	err->index = index;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	return false;
}

static bool in_bounds(const server_config *cfg, float x, float y) {
	return isfinite(x) && isfinite(y) && x >= cfg->world_min_x && x <= cfg->world_max_x && y >= cfg->world_min_y &&
	       y <= cfg->world_max_y;
}

static bool in_range(float v, double lo, double hi) {
	return isfinite(v) && v >= lo && v <= hi;
}

static bool speed_ok(const server_config *cfg, float vx, float vy) {
	if (!isfinite(vx) || !isfinite(vy)) return false;
	double len = sqrt((double)vx * vx + (double)vy * vy);
	return len <= cfg->max_agent_speed;
}

static bool steer_ok(crowd_v1_SteerMode m) {
	return m == crowd_v1_SteerMode_STEER_DEFAULT || m == crowd_v1_SteerMode_STEER_NAVIGATE ||
	       m == crowd_v1_SteerMode_STEER_DIRECT;
}

static bool validate_spec(const server_config *cfg, const crowd_v1_AgentSpec *a, uint32_t i, request_error *err) {
	const crowd_v1_ErrorCode bad = crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT;
	if (a->has_position && !in_bounds(cfg, a->position.x, a->position.y))
		return request_fail(err, bad, i, "agent %u: position not finite or outside the world bounds", i);
	if (a->has_target && !in_bounds(cfg, a->target.x, a->target.y))
		return request_fail(err, bad, i, "agent %u: target not finite or outside the world bounds", i);
	if (a->has_target && a->has_pref_velocity)
		return request_fail(err, bad, i, "agent %u: give a target or a pref_velocity, not both", i);
	if (a->has_pref_velocity && !speed_ok(cfg, a->pref_velocity.x, a->pref_velocity.y))
		return request_fail(err, bad, i, "agent %u: pref_velocity not finite or faster than %g", i,
		                    cfg->max_agent_speed);
	if (a->has_radius && (!in_range(a->radius, 0, cfg->max_agent_radius) || a->radius <= 0))
		return request_fail(err, bad, i, "agent %u: radius must be in (0, %g]", i, cfg->max_agent_radius);
	if (a->has_max_speed && !in_range(a->max_speed, 0, cfg->max_agent_speed))
		return request_fail(err, bad, i, "agent %u: max_speed must be in [0, %g]", i, cfg->max_agent_speed);
	if (a->has_pref_speed && !in_range(a->pref_speed, 0, cfg->max_agent_speed))
		return request_fail(err, bad, i, "agent %u: pref_speed must be in [0, %g]", i, cfg->max_agent_speed);
	if (a->has_neighbor_dist && !in_range(a->neighbor_dist, 0, cfg->max_neighbor_dist))
		return request_fail(err, bad, i, "agent %u: neighbor_dist must be in [0, %g]", i,
		                    cfg->max_neighbor_dist);
	if (a->has_max_neighbors && a->max_neighbors > cfg->max_neighbors)
		return request_fail(err, bad, i, "agent %u: max_neighbors must be at most %u", i, cfg->max_neighbors);
	/* A horizon far below a tick makes ORCA's constraints meaningless: agents overlap and drift. */
	if (a->has_time_horizon && !in_range(a->time_horizon, cfg->min_time_horizon, cfg->max_time_horizon))
		return request_fail(err, bad, i, "agent %u: time_horizon must be in [%g, %g]", i, cfg->min_time_horizon,
		                    cfg->max_time_horizon);
	if (a->has_time_horizon_obst && !in_range(a->time_horizon_obst, cfg->min_time_horizon, cfg->max_time_horizon))
		return request_fail(err, bad, i, "agent %u: time_horizon_obst must be in [%g, %g]", i,
		                    cfg->min_time_horizon, cfg->max_time_horizon);
	if (a->has_weight && !in_range(a->weight, 0, 1))
		return request_fail(err, bad, i, "agent %u: weight must be in [0, 1]", i);
	if (!steer_ok(a->steer)) return request_fail(err, bad, i, "agent %u: unknown steer mode %d", i, (int)a->steer);
	return true;
}

/* Parallel arrays: ids with per-id values, or one value for every id. */
static bool check_parallel(const server_config *cfg, pb_size_t ids, pb_size_t xs, pb_size_t ys, request_error *err) {
	if (ids > cfg->max_batch)
		return request_fail(err, crowd_v1_ErrorCode_ERROR_LIMIT_BATCH, 0, "%u ids, the limit is %u",
		                    (unsigned)ids, cfg->max_batch);
	if (xs != ys || (xs != ids && xs != 1) || (ids == 0 && xs != 0 && xs != 1))
		return request_fail(err, crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT, 0,
		                    "%u ids need %u values (or 1) in each of two arrays, got %u and %u", (unsigned)ids,
		                    (unsigned)ids, (unsigned)xs, (unsigned)ys);
	return true;
}

void validate_obstacle_make_ccw(crowd_v1_ClientMessage *msg) {
	crowd_v1_AddObstacle *m = &msg->msg.add_obstacle;
	double area2 = 0.0;
	for (uint32_t i = 0; i < m->x_count; i++) {
		uint32_t j = (i + 1) % m->x_count;
		area2 += (double)m->x[i] * m->y[j] - (double)m->x[j] * m->y[i];
	}
	if (area2 >= 0.0) return;
	for (uint32_t i = 0, j = m->x_count - 1; i < j; i++, j--) {
		float t = m->x[i];
		m->x[i] = m->x[j];
		m->x[j] = t;
		t = m->y[i];
		m->y[i] = m->y[j];
		m->y[j] = t;
	}
}

bool validate_rect(const crowd_v1_Rect *r) {
	return isfinite(r->min_x) && isfinite(r->min_y) && isfinite(r->max_x) && isfinite(r->max_y) &&
	       r->min_x <= r->max_x && r->min_y <= r->max_y;
}

/* ---- one validator per message kind (the message table's `validate` column) */

bool validate_spawn_agents(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err) {
	const crowd_v1_SpawnAgents *m = &msg->msg.spawn_agents;
	if (m->agents_count > cfg->max_batch)
		return request_fail(err, crowd_v1_ErrorCode_ERROR_LIMIT_BATCH, 0, "%u agents, the limit is %u",
		                    (unsigned)m->agents_count, cfg->max_batch);
	for (uint32_t i = 0; i < m->agents_count; i++)
		if (!validate_spec(cfg, &m->agents[i], i, err)) return false;
	return true;
}

bool validate_set_targets(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err) {
	const crowd_v1_ErrorCode bad = crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT;
	const crowd_v1_SetTargets *m = &msg->msg.set_targets;
	if (!check_parallel(cfg, m->ids_count, m->x_count, m->y_count, err)) return false;
	for (uint32_t i = 0; i < m->x_count; i++)
		if (!in_bounds(cfg, m->x[i], m->y[i]))
			return request_fail(err, bad, i, "target %u not finite or outside the world bounds", i);
	if (m->steer && !steer_ok(*m->steer)) return request_fail(err, bad, 0, "unknown steer mode %d", (int)*m->steer);
	return true;
}

bool validate_set_velocities(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err) {
	const crowd_v1_SetVelocities *m = &msg->msg.set_velocities;
	if (!check_parallel(cfg, m->ids_count, m->vx_count, m->vy_count, err)) return false;
	for (uint32_t i = 0; i < m->vx_count; i++)
		if (!speed_ok(cfg, m->vx[i], m->vy[i]))
			return request_fail(err, crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT, i,
			                    "velocity %u not finite or faster than %g", i, cfg->max_agent_speed);
	return true;
}

bool validate_remove_agents(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err) {
	if (msg->msg.remove_agents.ids_count > cfg->max_batch)
		return request_fail(err, crowd_v1_ErrorCode_ERROR_LIMIT_BATCH, 0, "%u ids, the limit is %u",
		                    (unsigned)msg->msg.remove_agents.ids_count, cfg->max_batch);
	return true;
}

bool validate_add_obstacle(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err) {
	const crowd_v1_AddObstacle *m = &msg->msg.add_obstacle;
	const crowd_v1_ErrorCode poly = crowd_v1_ErrorCode_ERROR_BAD_POLYGON;
	if (m->x_count != m->y_count)
		return request_fail(err, poly, 0, "x has %u values and y %u", (unsigned)m->x_count, (unsigned)m->y_count);
	/* A polygon over the wire: at least 3 vertices. The engine also takes a
	 * 2-vertex segment (RVO2 does); a client draws a wall as a thin quad. */
	if (m->x_count == 2)
		return request_fail(err, poly, 0, "2 vertices make a segment, not a polygon: an obstacle has 3 to %u",
		                    cfg->max_obstacle_vertices);
	if (m->x_count < 3 || m->x_count > cfg->max_obstacle_vertices)
		return request_fail(err, poly, 0, "%u vertices; an obstacle has 3 to %u", (unsigned)m->x_count,
		                    cfg->max_obstacle_vertices);
	for (uint32_t i = 0; i < m->x_count; i++)
		if (!in_bounds(cfg, m->x[i], m->y[i]))
			return request_fail(err, poly, i, "vertex %u not finite or outside the world bounds", i);
	/* The engine's own definition of a valid obstacle (orca_polygon_check). */
	orca_vec2 *v = malloc(m->x_count * sizeof *v);
	if (!v) return request_fail(err, crowd_v1_ErrorCode_ERROR_INTERNAL, 0, "out of memory");
	for (uint32_t i = 0; i < m->x_count; i++) v[i] = (orca_vec2){m->x[i], m->y[i]};
	orca_polygon_issue issue;
	int rc = orca_polygon_check(v, m->x_count, &issue);
	free(v);
	if (rc != ORCA_OK) return request_fail(err, poly, issue.index, "vertex %u: %s", issue.index, issue.reason);
	return true;
}

bool validate_subscribe(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err) {
	(void)cfg;
	const crowd_v1_ErrorCode bad = crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT;
	const crowd_v1_Subscribe *m = &msg->msg.subscribe;
	if (m->has_area && !validate_rect(&m->area)) return request_fail(err, bad, 0, "area must be finite with min <= max");
	if (m->divisor > 100000) return request_fail(err, bad, 0, "divisor must be at most 100000");
	return true;
}

bool validate_get_paths(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err) {
	if (msg->msg.get_paths.ids_count > cfg->nav_max_path_ids)
		return request_fail(err, crowd_v1_ErrorCode_ERROR_LIMIT_BATCH, 0, "%u ids, the limit is %u",
		                    (unsigned)msg->msg.get_paths.ids_count, cfg->nav_max_path_ids);
	return true;
}

/* A world name becomes a directory name in the data dir: checked by the one
 * rule every C peer shares (crowd_world_name_valid). */
static bool world_name_ok(const char *name, request_error *err) {
	if (crowd_world_name_valid(name)) return true;
	return request_fail(err, crowd_v1_ErrorCode_ERROR_BAD_WORLD_NAME, 0,
	                    "a world name is 1 to %u bytes of A-Z a-z 0-9 _ . - (not \".\" or \"..\")",
	                    CROWD_WORLD_NAME_MAX);
}

bool validate_world_settings(const server_config *cfg, const crowd_v1_WorldSettings *w, request_error *err) {
	const crowd_v1_ErrorCode bad = crowd_v1_ErrorCode_ERROR_BAD_WORLD_SETTINGS;
	if (w->tick_rate > cfg->tick_rate_hz)
		return request_fail(err, bad, 0, "tick_rate %u: at most the server's %u", (unsigned)w->tick_rate,
		                    (unsigned)cfg->tick_rate_hz);
	const float b[4] = {w->bounds_min_x, w->bounds_min_y, w->bounds_max_x, w->bounds_max_y};
	const bool given = b[0] != 0.0f || b[1] != 0.0f || b[2] != 0.0f || b[3] != 0.0f;
	for (int k = 0; given && k < 4; k++)
		if (!isfinite(b[k]) || fabsf(b[k]) > 1e6f)
			return request_fail(err, bad, 0, "bounds must be finite, within [-1e6, 1e6]");
	if (given && !(b[0] < b[2] && b[1] < b[3])) return request_fail(err, bad, 0, "bounds need min < max");
	if (w->avoidance != crowd_v1_Avoidance_AVOIDANCE_DEFAULT &&
	    w->avoidance != crowd_v1_Avoidance_AVOIDANCE_QUALITY &&
	    w->avoidance != crowd_v1_Avoidance_AVOIDANCE_REFERENCE)
		return request_fail(err, bad, 0, "unknown avoidance %d", (int)w->avoidance);
	if (w->max_agents > cfg->max_agents)
		return request_fail(err, bad, 0, "max_agents %u: at most the server's %u", (unsigned)w->max_agents,
		                    (unsigned)cfg->max_agents);
	return true;
}

bool validate_create_world(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err) {
	const crowd_v1_CreateWorld *m = &msg->msg.create_world;
	if (!world_name_ok(m->name, err)) return false;
	return !m->has_settings || validate_world_settings(cfg, &m->settings, err);
}

bool validate_close_world(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err) {
	(void)cfg;
	return world_name_ok(msg->msg.close_world.name, err);
}

bool validate_join_world(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err) {
	(void)cfg;
	return world_name_ok(msg->msg.join_world.name, err);
}
