/* commands.c — applying queued requests to the world (see commands.h). */
#include "commands.h"

#include <stdlib.h>
#include <string.h>

#include <crowd/wire.h>

#include "map.h"

void command_queue_push(command_queue *q, command *c) {
	c->next = NULL;
	if (q->tail)
		q->tail->next = c;
	else
		q->head = c;
	q->tail = c;
	q->count++;
}

command *command_queue_take(command_queue *q) {
	command *all = q->head;
	q->head = q->tail = NULL;
	q->count = 0;
	return all;
}

void command_free(command *c) {
	if (!c) return;
	if (c->kind == COMMAND_CLIENT) crowd_client_message_release(&c->msg);
	free(c);
}

void command_queue_clear(command_queue *q) {
	command *c = command_queue_take(q);
	while (c) {
		command *next = c->next;
		command_free(c);
		c = next;
	}
}

crowd_v1_ErrorCode command_error_from_orca(int status) {
	switch (status) {
	case ORCA_OK:
		return crowd_v1_ErrorCode_ERROR_NONE;
	case ORCA_ERR_INVALID_ARGUMENT:
		return crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT;
	case ORCA_ERR_UNKNOWN_ID:
		return crowd_v1_ErrorCode_ERROR_UNKNOWN_ID;
	case ORCA_ERR_STALE_ID:
		return crowd_v1_ErrorCode_ERROR_STALE_ID;
	case ORCA_ERR_CAPACITY:
		return crowd_v1_ErrorCode_ERROR_LIMIT_AGENTS_WORLD;
	case ORCA_ERR_BAD_POLYGON:
		return crowd_v1_ErrorCode_ERROR_BAD_POLYGON;
	default:
		return crowd_v1_ErrorCode_ERROR_INTERNAL;
	}
}

orca_agent_def command_agent_def(const server_config *cfg, const crowd_v1_AgentSpec *spec, uint32_t owner) {
	orca_agent_def def = orca_default_agent_def();
	def.position.x = (float)((cfg->world_min_x + cfg->world_max_x) * 0.5);
	def.position.y = (float)((cfg->world_min_y + cfg->world_max_y) * 0.5);
	def.radius = (float)cfg->agent_radius;
	def.max_speed = (float)cfg->agent_max_speed;
	def.pref_speed = (float)cfg->agent_pref_speed;
	def.neighbor_dist = (float)cfg->agent_neighbor_dist;
	def.max_neighbors = cfg->agent_max_neighbors;
	def.time_horizon = (float)cfg->agent_time_horizon;
	def.time_horizon_obst = (float)cfg->agent_time_horizon_obst;
	def.weight = (float)cfg->agent_weight;
	def.user_data = owner;
	if (spec->has_position) def.position = (orca_vec2){spec->position.x, spec->position.y};
	if (spec->has_target) {
		def.steer_mode = ORCA_STEER_TARGET;
		def.target = (orca_vec2){spec->target.x, spec->target.y};
	} else if (spec->has_pref_velocity) {
		def.steer_mode = ORCA_STEER_VELOCITY;
		def.pref_velocity = (orca_vec2){spec->pref_velocity.x, spec->pref_velocity.y};
	}
	if (spec->has_radius) def.radius = spec->radius;
	if (spec->has_max_speed) def.max_speed = spec->max_speed;
	if (spec->has_pref_speed) def.pref_speed = spec->pref_speed;
	if (spec->has_neighbor_dist) def.neighbor_dist = spec->neighbor_dist;
	if (spec->has_max_neighbors) def.max_neighbors = spec->max_neighbors;
	if (spec->has_time_horizon) def.time_horizon = spec->time_horizon;
	if (spec->has_time_horizon_obst) def.time_horizon_obst = spec->time_horizon_obst;
	if (spec->has_weight) def.weight = spec->weight;
	if (spec->has_layer) def.layer = spec->layer;
	if (spec->has_mask) def.mask = spec->mask;
	return def;
}

static void fail(command_result *out, crowd_v1_ErrorCode code, uint32_t index, const char *text) {
	request_fail(&out->error, code, index, "%s", text);
}

/* Every id must be a live agent that this client may command. */
static bool check_ids(const orca_world *world, const command *cmd, const uint32_t *ids, uint32_t count,
                      command_result *out) {
	for (uint32_t i = 0; i < count; i++) {
		int rc = orca_agent_check(world, ids[i]);
		if (rc != ORCA_OK) {
			request_fail(&out->error, command_error_from_orca(rc), i, "agent id %u: %s", ids[i],
			             rc == ORCA_ERR_STALE_ID ? "removed" : "unknown");
			return false;
		}
		if (cmd->role != crowd_v1_Role_ROLE_ADMIN) {
			orca_agent_state st;
			if (orca_agent_get(world, ids[i], &st) != ORCA_OK || st.user_data != cmd->client_id) {
				request_fail(&out->error, crowd_v1_ErrorCode_ERROR_NOT_OWNER, i,
				             "agent id %u belongs to another client", ids[i]);
				return false;
			}
		}
	}
	return true;
}

void command_spawn_agents(orca_world *world, const server_config *cfg, const command *cmd,
                          const command_owners *owners, uint32_t *ids, command_result *out) {
	const crowd_v1_SpawnAgents *m = &cmd->msg.msg.spawn_agents;
	uint32_t n = m->agents_count;
	if ((uint64_t)orca_world_agent_count(world) + n > cfg->max_agents) {
		request_fail(&out->error, crowd_v1_ErrorCode_ERROR_LIMIT_AGENTS_WORLD, 0,
		             "the world holds %u agents, its limit is %u", orca_world_agent_count(world),
		             cfg->max_agents);
		return;
	}
	uint32_t owned = owners->owned(owners->user, cmd->client_id);
	if ((uint64_t)owned + n > cfg->max_agents_per_connection) {
		request_fail(&out->error, crowd_v1_ErrorCode_ERROR_LIMIT_AGENTS_CONNECTION, 0,
		             "this connection owns %u agents, its limit is %u", owned, cfg->max_agents_per_connection);
		return;
	}
	orca_agent_def *defs = malloc(sizeof *defs * (n ? n : 1));
	if (!defs) {
		fail(out, crowd_v1_ErrorCode_ERROR_INTERNAL, 0, "out of memory");
		return;
	}
	for (uint32_t i = 0; i < n; i++) defs[i] = command_agent_def(cfg, &m->agents[i], cmd->client_id);
	/* All or nothing in the engine: a request that fails (no memory, no slot)
	 * leaves no id, generation or slot used. It is not journaled, so anything
	 * it left behind would make the replay hand out other ids than this run. */
	uint32_t bad = 0;
	int rc = orca_world_add_agents(world, defs, n, ids, &bad);
	free(defs);
	if (rc != ORCA_OK) {
		if (rc == ORCA_ERR_INVALID_ARGUMENT)
			request_fail(&out->error, command_error_from_orca(rc), bad, "agent %u: %s", bad, orca_strerror(rc));
		else
			request_fail(&out->error, command_error_from_orca(rc), 0, "%u agents: %s", n, orca_strerror(rc));
		return;
	}
	if (n > 0) owners->changed(owners->user, cmd->client_id, n);
	out->ids = ids;
	out->id_count = n;
}

void command_set_targets(orca_world *world, const server_config *cfg, const command *cmd, const command_owners *owners,
                         uint32_t *ids, command_result *out) {
	(void)cfg, (void)owners, (void)ids;
	const crowd_v1_SetTargets *m = &cmd->msg.msg.set_targets;
	if (!check_ids(world, cmd, m->ids, m->ids_count, out)) return;
	for (uint32_t i = 0; i < m->ids_count; i++) {
		uint32_t k = m->x_count == 1 ? 0 : i;
		orca_agent_set_target(world, m->ids[i], (orca_vec2){m->x[k], m->y[k]});
	}
}

void command_set_velocities(orca_world *world, const server_config *cfg, const command *cmd,
                            const command_owners *owners, uint32_t *ids, command_result *out) {
	(void)cfg, (void)owners, (void)ids;
	const crowd_v1_SetVelocities *m = &cmd->msg.msg.set_velocities;
	if (!check_ids(world, cmd, m->ids, m->ids_count, out)) return;
	for (uint32_t i = 0; i < m->ids_count; i++) {
		uint32_t k = m->vx_count == 1 ? 0 : i;
		orca_agent_set_pref_velocity(world, m->ids[i], (orca_vec2){m->vx[k], m->vy[k]});
	}
}

void command_remove_agents(orca_world *world, const server_config *cfg, const command *cmd,
                           const command_owners *owners, uint32_t *ids, command_result *out) {
	(void)cfg, (void)ids;
	const crowd_v1_RemoveAgents *m = &cmd->msg.msg.remove_agents;
	if (!check_ids(world, cmd, m->ids, m->ids_count, out)) return;
	for (uint32_t i = 0; i < m->ids_count; i++) {
		orca_agent_state st;
		if (orca_agent_get(world, m->ids[i], &st) != ORCA_OK) continue; /* the same id twice in one request */
		if (orca_agent_remove(world, m->ids[i]) == ORCA_OK && st.user_data != 0)
			owners->changed(owners->user, st.user_data, -1);
	}
}

void command_add_obstacle(orca_world *world, const server_config *cfg, const command *cmd,
                          const command_owners *owners, uint32_t *ids, command_result *out) {
	(void)owners;
	const crowd_v1_AddObstacle *m = &cmd->msg.msg.add_obstacle;
	/* the map's walls (--map) are the server's own: --max-obstacles counts what clients add */
	const map_def map = map_def_of(cfg);
	const uint32_t walls = map_wall_count(&map);
	if (orca_world_obstacle_count(world) >= cfg->max_obstacles + walls) {
		request_fail(
		    &out->error, crowd_v1_ErrorCode_ERROR_INVALID_ARGUMENT, 0,
		    "the world holds %u obstacles (%u of them the map's walls), its limit is %u besides the walls",
		    orca_world_obstacle_count(world), walls, cfg->max_obstacles);
		return;
	}
	orca_vec2 *v = malloc(sizeof *v * m->x_count);
	if (!v) {
		fail(out, crowd_v1_ErrorCode_ERROR_INTERNAL, 0, "out of memory");
		return;
	}
	for (uint32_t i = 0; i < m->x_count; i++) v[i] = (orca_vec2){m->x[i], m->y[i]};
	int rc = orca_obstacle_add(world, v, m->x_count, &ids[0]);
	free(v);
	if (rc != ORCA_OK) {
		request_fail(&out->error, command_error_from_orca(rc), 0, "obstacle: %s", orca_strerror(rc));
		return;
	}
	out->ids = ids;
	out->id_count = 1;
}

void command_remove_obstacle(orca_world *world, const server_config *cfg, const command *cmd,
                             const command_owners *owners, uint32_t *ids, command_result *out) {
	(void)cfg, (void)owners, (void)ids;
	uint32_t id = cmd->msg.msg.remove_obstacle.id;
	int rc = orca_obstacle_remove(world, id);
	if (rc != ORCA_OK)
		request_fail(&out->error, command_error_from_orca(rc), 0, "obstacle id %u: %s", id,
		             rc == ORCA_ERR_STALE_ID ? "removed" : "unknown");
}

static int compare_u32(const void *a, const void *b) {
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

void command_drop_owners(orca_world *world, uint32_t *client_ids, uint32_t count, const command_owners *owners) {
	uint32_t n = orca_world_agent_count(world);
	if (n == 0 || count == 0) return;
	orca_agent_id *ids = malloc(sizeof *ids * n);
	if (!ids) return;
	n = orca_world_agent_ids(world, ids, n);
	/* One pass over the world for every client that left since the last tick. */
	qsort(client_ids, count, sizeof *client_ids, compare_u32);
	for (uint32_t i = 0; i < n; i++) {
		orca_agent_state st;
		if (orca_agent_get(world, ids[i], &st) != ORCA_OK || st.user_data == 0) continue;
		if (!bsearch(&st.user_data, client_ids, count, sizeof *client_ids, compare_u32)) continue;
		if (orca_agent_remove(world, ids[i]) == ORCA_OK) owners->changed(owners->user, st.user_data, -1);
	}
	free(ids);
}
