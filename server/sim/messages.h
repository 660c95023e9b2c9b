/* messages.h — the message table: one row per ClientMessage kind, saying who
 * may send it, how its fields are checked, whether the session answers it at
 * once or the tick applies it to the sim, whether it changes the world (then
 * it is journaled, refused while the journal cannot be written, and answered
 * once durable with --fsync always), what applying it does, and what
 * navigation makes of it. Adding a message: a row here (and, for one the
 * session answers at once, its case in session.c's one switch). Hello is not
 * a row: the session handles it before any of this. */
#ifndef CROWD_SERVER_MESSAGES_H
#define CROWD_SERVER_MESSAGES_H

#include <stdbool.h>
#include <stdint.h>

#include <orca/orca.h>

#include "commands.h"
#include "config.h"
#include "crowd.pb.h"
#include "navigation.h"
#include "validate.h"

typedef enum message_route {
	MESSAGE_AT_ONCE = 0, /* the session answers it as it arrives (no world access) */
	MESSAGE_AT_TICK = 1, /* queued; taken at the next tick, in arrival order, while the world is idle */
} message_route;

typedef struct message_kind {
	pb_size_t tag; /* crowd_v1_ClientMessage_*_tag */
	const char *name;
	crowd_v1_Role min_role; /* VIEWER < PLAYER < ADMIN */
	/** Stateless checks of every field (validate.h); NULL: nothing to check. */
	bool (*validate)(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err);
	/** After validation, before queueing: bring the message to the engine's conventions. May be NULL. */
	void (*normalize)(crowd_v1_ClientMessage *msg);
	message_route route;
	bool changes_world; /* applied by `apply`, journaled; false at the tick: answered from the sim, read-only */
	/** Change the world (commands.h); NULL for a message that does not. */
	void (*apply)(orca_world *world, const server_config *cfg, const command *cmd, const command_owners *owners,
	              uint32_t *ids_scratch, command_result *out);
	/** After a successful apply: what navigation makes of it (navigation.h). May be NULL. */
	void (*nav_hook)(server_navigation *nav, const command *cmd, const command_result *r);
} message_kind;

/** The row of a message kind; NULL for an unknown kind (and Hello). */
const message_kind *message_kind_of(pb_size_t which_msg);

/** May `role` send a message of oneof case `which_msg` (a ClientMessage_*_tag)?
 * Hello is handled by the session and never passes here. */
bool validate_rights(crowd_v1_Role role, pb_size_t which_msg, request_error *err);

/** Check every field of a command (not Hello) against the configuration. */
bool validate_message(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err);

/** Apply one command (a client's, or a departed owner's agents) to the world.
 * ids_scratch must hold cfg->max_batch entries (and at least 1). The message
 * was already checked by validate_rights and validate_message. */
void message_apply(orca_world *world, const server_config *cfg, const command *cmd, const command_owners *owners,
                   uint32_t *ids_scratch, command_result *out);

/** After message_apply: hand what a successful command did to navigation (NULL: off). */
void message_navigate(server_navigation *nav, const command *cmd, const command_result *r);

#endif
