/* validate.h — checks on a decoded ClientMessage that need no world state:
 * rights by role, finite numbers, ranges, array lengths and batch sizes.
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

/** May `role` send a message of oneof case `which_msg` (a ClientMessage_*_tag)?
 * Hello is handled by the session and never passes here. */
bool validate_rights(crowd_v1_Role role, pb_size_t which_msg, request_error *err);

/** Check every field of a command (not Hello) against the configuration. */
bool validate_message(const server_config *cfg, const crowd_v1_ClientMessage *msg, request_error *err);

/** Is a subscription area valid (finite, min <= max)? */
bool validate_rect(const crowd_v1_Rect *r);

/** A valid AddObstacle given clockwise is reversed to counter-clockwise, the
 * engine's (and RVO2's) convention. */
void validate_obstacle_make_ccw(crowd_v1_AddObstacle *m);

#endif
