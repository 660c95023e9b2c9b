/* client_internal.h — what the client library's own files share: the client
 * struct and the function that encodes and queues one ClientMessage. Not
 * installed, not part of the public face (see include/crowd/client.h). */
#ifndef CROWD_CLIENT_INTERNAL_H
#define CROWD_CLIENT_INTERNAL_H

#include "crowd/client.h"
#include "crowd/wire.h"

struct crowd_client {
	int fd;
	int state; /* 0 while connected, else the status that ended it */
	int last_errno;
	bool write_closed; /* the server stopped reading (EPIPE/ECONNRESET on send) */
	bool closed_reported;
	uint32_t next_request_id;
	crowd_client_options options;
	char world[CROWD_WORLD_NAME_MAX + 1]; /* options.world, copied: Hello's world */

	crowd_buf out; /* encoded, not yet written */
	crowd_frame_splitter in;

	bool have_welcome;
	crowd_v1_Welcome welcome;
	float precision; /* fixed-point units per world unit (Welcome), 1 until then */

	crowd_view view; /* fixed-point agents as decoded */
	crowd_obstacle_set obstacles;
	bool have_snapshot;
	crowd_client_snapshot snapshot;
	uint32_t arrays_cap;
	uint32_t *ids, *owners;
	float *xs, *ys, *vxs, *vys, *radii;

	crowd_client_counters counters;
};

/** Encode msg (request_id set here unless it is a raw send) and queue it, then
 * try a non-blocking write. Returns the request_id or a negative status. */
int64_t crowd_client_enqueue(crowd_client *client, crowd_v1_ClientMessage *msg);

#endif /* CROWD_CLIENT_INTERNAL_H */
