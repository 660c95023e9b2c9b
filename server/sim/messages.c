/* messages.c — the message table (see messages.h). */
#include "messages.h"

#include <string.h>

#define V crowd_v1_Role_ROLE_VIEWER
#define P crowd_v1_Role_ROLE_PLAYER
#define A crowd_v1_Role_ROLE_ADMIN

/* tag, name, min_role, validate, normalize, route, changes_world, apply, nav_hook */
static const message_kind table[] = {
    {crowd_v1_ClientMessage_spawn_agents_tag, "SpawnAgents", P, validate_spawn_agents, NULL, MESSAGE_AT_TICK, true,
     command_spawn_agents, navigation_after_spawn},
    {crowd_v1_ClientMessage_set_targets_tag, "SetTargets", P, validate_set_targets, NULL, MESSAGE_AT_TICK, true,
     command_set_targets, navigation_after_set_targets},
    {crowd_v1_ClientMessage_set_velocities_tag, "SetVelocities", P, validate_set_velocities, NULL, MESSAGE_AT_TICK,
     true, command_set_velocities, navigation_after_set_velocities},
    {crowd_v1_ClientMessage_remove_agents_tag, "RemoveAgents", P, validate_remove_agents, NULL, MESSAGE_AT_TICK, true,
     command_remove_agents, NULL},
    {crowd_v1_ClientMessage_add_obstacle_tag, "AddObstacle", A, validate_add_obstacle, validate_obstacle_make_ccw,
     MESSAGE_AT_TICK, true, command_add_obstacle, NULL},
    {crowd_v1_ClientMessage_remove_obstacle_tag, "RemoveObstacle", A, NULL, NULL, MESSAGE_AT_TICK, true,
     command_remove_obstacle, NULL},
    {crowd_v1_ClientMessage_subscribe_tag, "Subscribe", V, validate_subscribe, NULL, MESSAGE_AT_ONCE, false, NULL,
     NULL},
    {crowd_v1_ClientMessage_ping_tag, "Ping", V, NULL, NULL, MESSAGE_AT_ONCE, false, NULL, NULL},
    /* all_agents: admins only, checked by the session */
    {crowd_v1_ClientMessage_subscribe_events_tag, "SubscribeEvents", V, NULL, NULL, MESSAGE_AT_ONCE, false, NULL, NULL},
    /* answered at the tick from navigation's paths, while the world is idle */
    {crowd_v1_ClientMessage_get_paths_tag, "GetPaths", P, validate_get_paths, NULL, MESSAGE_AT_TICK, false, NULL, NULL},
    /* worlds (minor 2): the server's, not a sim's; the session hands them to its host */
    {crowd_v1_ClientMessage_create_world_tag, "CreateWorld", A, validate_create_world, NULL, MESSAGE_AT_ONCE, false,
     NULL, NULL},
    {crowd_v1_ClientMessage_close_world_tag, "CloseWorld", A, validate_close_world, NULL, MESSAGE_AT_ONCE, false, NULL,
     NULL},
    {crowd_v1_ClientMessage_list_worlds_tag, "ListWorlds", V, NULL, NULL, MESSAGE_AT_ONCE, false, NULL, NULL},
    {crowd_v1_ClientMessage_join_world_tag, "JoinWorld", V, validate_join_world, NULL, MESSAGE_AT_ONCE, false, NULL,
     NULL},
    /* replication (minor 3): the server's, answered by its host */
    {crowd_v1_ClientMessage_follow_tag, "Follow", A, NULL, NULL, MESSAGE_AT_ONCE, false, NULL, NULL},
    {crowd_v1_ClientMessage_follow_ack_tag, "FollowAck", A, NULL, NULL, MESSAGE_AT_ONCE, false, NULL, NULL},
    {crowd_v1_ClientMessage_promote_tag, "Promote", A, NULL, NULL, MESSAGE_AT_ONCE, false, NULL, NULL},
};

#undef V
#undef P
#undef A

const message_kind *message_kind_of(pb_size_t which_msg) {
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
		if (table[i].tag == which_msg) return &table[i];
	return NULL;
}

bool validate_rights(crowd_v1_Role role, pb_size_t which_msg, request_error *err) {
	const message_kind *k = message_kind_of(which_msg);
	if (!k) return request_fail(err, crowd_v1_ErrorCode_ERROR_UNKNOWN_MESSAGE, 0, "unknown message");
	if (role >= k->min_role && role <= crowd_v1_Role_ROLE_ADMIN) return true;
	return request_fail(err, crowd_v1_ErrorCode_ERROR_PERMISSION_DENIED, 0, "role %s may not do this",
	                    role == crowd_v1_Role_ROLE_VIEWER   ? "viewer"
	                    : role == crowd_v1_Role_ROLE_PLAYER ? "player"
	                                                        : "none");
}

bool validate_message(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err) {
	if (msg->which_msg == crowd_v1_ClientMessage_hello_tag)
		return request_fail(err, crowd_v1_ErrorCode_ERROR_ALREADY_HELLO, 0, "Hello was already received");
	const message_kind *k = message_kind_of(msg->which_msg);
	if (!k) return request_fail(err, crowd_v1_ErrorCode_ERROR_UNKNOWN_MESSAGE, 0, "empty or unknown message");
	return k->validate ? k->validate(cfg, msg, err) : true;
}

void message_apply(orca_world *world, const server_config *cfg, const command *cmd, const command_owners *owners,
                   uint32_t *ids_scratch, command_result *out) {
	memset(out, 0, sizeof *out);
	if (cmd->kind == COMMAND_DROP_OWNER) {
		uint32_t id = cmd->client_id;
		command_drop_owners(world, &id, 1, owners);
		return;
	}
	const message_kind *k = message_kind_of(cmd->msg.which_msg);
	if (!k || !k->apply) {
		request_fail(&out->error, crowd_v1_ErrorCode_ERROR_INTERNAL, 0, "%s", "not a queued command");
		return;
	}
	k->apply(world, cfg, cmd, owners, ids_scratch, out);
}

void message_navigate(server_navigation *nav, const command *cmd, const command_result *r) {
	if (!nav || cmd->kind != COMMAND_CLIENT || r->error.code != crowd_v1_ErrorCode_ERROR_NONE) return;
	const message_kind *k = message_kind_of(cmd->msg.which_msg);
	if (k && k->nav_hook) k->nav_hook(nav, cmd, r);
}
