/* validate.h — checks on a decoded ClientMessage that need no world state:
 * finite numbers, ranges, array lengths and batch sizes, one function per
 * message kind (the message table, sim/messages.h, holds them with the rights).
 * Checks that need the world (ids known, stale, owned; limits of the world)
 * happen when the command is applied (commands.h). */
#ifndef CROWD_SERVER_VALIDATE_H
#define CROWD_SERVER_VALIDATE_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "crowd.pb.h"

/** What went wrong, as sent in Error. */
typedef struct request_error {
	crowd_v1_ErrorCode code;
	uint32_t index; /* which item of a batch */
	char message[128];
} request_error;

/** Fill *err; returns false so callers can `return request_fail(...)`. */
bool request_fail(request_error *err, crowd_v1_ErrorCode code, uint32_t index, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* One validator per message kind: the message table's `validate` column
 * (sim/messages.h, which also holds validate_rights and validate_message).
 * Each checks every field of its kind against the configuration. */
bool validate_spawn_agents(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err);
bool validate_set_targets(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err);
bool validate_set_velocities(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err);
bool validate_remove_agents(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err);
bool validate_add_obstacle(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err);
bool validate_subscribe(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err);
bool validate_get_paths(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err);
bool validate_create_world(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err);
bool validate_close_world(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err);
bool validate_join_world(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err);

/** A new world's settings within the server's limits (ERROR_BAD_WORLD_SETTINGS). */
bool validate_world_settings(const server_config *cfg, const crowd_v1_WorldSettings *w, request_error *err);

/** Is a subscription area valid (finite, min <= max)? */
bool validate_rect(const crowd_v1_Rect *r);

/** A valid AddObstacle given clockwise is reversed to counter-clockwise, the
 * engine's (and RVO2's) convention (its table row's `normalize`). */
void validate_obstacle_make_ccw(crowd_v1_ClientMessage *msg);

#endif
