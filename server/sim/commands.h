/* commands.h — the queue of validated requests and their application to the
 * world at the start of a tick, in arrival order. Here live the checks that
 * need the world: ids known / stale / owned, world and per-connection agent
 * limits, the obstacle limit. Every command is all or nothing. */
#ifndef CROWD_SERVER_COMMANDS_H
#define CROWD_SERVER_COMMANDS_H

#include <stddef.h>
#include <stdint.h>

#include <orca/orca.h>

#include "config.h"
#include "crowd.pb.h"
#include "validate.h"

typedef enum command_kind {
	COMMAND_CLIENT = 0,     /* a client's request: answer with Ack or Error */
	COMMAND_DROP_OWNER = 1, /* remove every agent owned by client_id (it left) */
} command_kind;

typedef struct command {
	struct command *next;
	command_kind kind;
	uint32_t client_id;
	crowd_v1_Role role;
	crowd_v1_ClientMessage msg; /* COMMAND_CLIENT: decoded, released by command_free */
	size_t cost;                /* memory it holds, counted against --max-queued-bytes */
} command;

typedef struct command_queue {
	command *head, *tail;
	size_t count;
} command_queue;

void command_queue_push(command_queue *q, command *c);
/** Detach every queued command (in arrival order) and leave the queue empty. */
command *command_queue_take(command_queue *q);
/** Free a command and its decoded message. */
void command_free(command *c);
void command_queue_clear(command_queue *q);

/** Per-client agent counts, kept by the caller (the server keeps them on sessions). */
typedef struct command_owners {
	/** Agents client_id owns now (0 for a client that is gone). */
	uint32_t (*owned)(void *user, uint32_t client_id);
	/** client_id gained (delta > 0) or lost agents. */
	void (*changed)(void *user, uint32_t client_id, int64_t delta);
	void *user;
} command_owners;

typedef struct command_result {
	request_error error; /* code ERROR_NONE: answer Ack */
	uint32_t *ids;       /* what was created (points into the caller's scratch) */
	uint32_t id_count;
} command_result;

/** Map an orca_status onto the wire's ErrorCode. */
crowd_v1_ErrorCode command_error_from_orca(int status);

/** The agent definition a spawn makes from a spec and the configured defaults. */
orca_agent_def command_agent_def(const server_config *cfg, const crowd_v1_AgentSpec *spec, uint32_t owner);

/** Remove every agent owned by any of these clients (they left), in one pass
 * over the world. Sorts client_ids. */
void command_drop_owners(orca_world *world, uint32_t *client_ids, uint32_t count, const command_owners *owners);

/* One per world-changing message kind: the message table's `apply` column
 * (messages.h dispatches). Each checks what needs the world (ids known,
 * stale, owned; limits), then changes it all or nothing. ids (cfg->max_batch
 * entries, at least 1) receives what was created; out was zeroed. */
void command_spawn_agents(orca_world *world, const server_config *cfg, const command *cmd,
                          const command_owners *owners, uint32_t *ids, command_result *out);
void command_set_targets(orca_world *world, const server_config *cfg, const command *cmd, const command_owners *owners,
                         uint32_t *ids, command_result *out);
void command_set_velocities(orca_world *world, const server_config *cfg, const command *cmd,
                            const command_owners *owners, uint32_t *ids, command_result *out);
void command_remove_agents(orca_world *world, const server_config *cfg, const command *cmd,
                           const command_owners *owners, uint32_t *ids, command_result *out);
void command_add_obstacle(orca_world *world, const server_config *cfg, const command *cmd,
                          const command_owners *owners, uint32_t *ids, command_result *out);
void command_remove_obstacle(orca_world *world, const server_config *cfg, const command *cmd,
                             const command_owners *owners, uint32_t *ids, command_result *out);

#endif
