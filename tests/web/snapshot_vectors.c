/* snapshot_vectors.c — writes a stream of snapshots made by the C encoder
 * (proto/wire) as JSON lines: the encoded ServerMessage (hex) and the view the C
 * decoder gets from it. test_snapshot.mjs checks that the viewer's JavaScript
 * decoder (clients/js/src/snapshot.js, which the viewer uses) gets exactly the same views. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <crowd/wire.h>

#define MAX_AGENTS 64

static uint32_t rng = 12345;
static uint32_t next_rand(void) {
	rng = rng * 1664525u + 1013904223u;
	return rng >> 8;
}

static void print_hex(const uint8_t *data, size_t len) {
	for (size_t i = 0; i < len; i++) printf("%02x", data[i]);
}

int main(void) {
	crowd_agent_q world[MAX_AGENTS];
	uint32_t n = 0;
	/* Ids with gaps and one near the top of the range. */
	for (uint32_t i = 0; i < 40; i++) {
		crowd_agent_q a = {.id = 1 + i * 7, .radius = 50 + i % 3, .owner = i % 4};
		a.x = (int32_t)(next_rand() % 200000) - 100000;
		a.y = (int32_t)(next_rand() % 200000) - 100000;
		world[n++] = a;
	}
	world[n++] =
	    (crowd_agent_q){.id = 0xFFFFFFF0u, .x = INT32_MAX - 5, .y = INT32_MIN + 5, .radius = 1, .owner = 9};

	crowd_view sender, receiver;
	crowd_view_init(&sender);
	crowd_view_init(&receiver);
	crowd_obstacle_set obstacles, received_obstacles;
	crowd_obstacle_set_init(&obstacles);
	crowd_obstacle_set_init(&received_obstacles);
	const float ox[3] = {0, 10, 0}, oy[3] = {0, 0, 10};
	crowd_obstacle_set_add(&obstacles, 3, ox, oy, 3);

	crowd_buf out;
	crowd_buf_init(&out);
	int status = 0;
	for (uint32_t step = 0; step < 60 && status == 0; step++) {
		/* Move some agents, leave some unchanged, remove and add a few. */
		for (uint32_t i = 0; i < n; i++) {
			uint32_t r = next_rand() % 10;
			if (world[i].id == 0xFFFFFFF0u)
				continue; /* the extreme agent stays put: its values sit at the int32 limits */
			if (r < 4) world[i].x += (int32_t)(next_rand() % 2001) - 1000;
			if (r < 2) world[i].y -= (int32_t)(next_rand() % 301);
			if (r == 5) world[i].vx = (int32_t)(next_rand() % 801) - 400;
			if (r == 6) world[i].vy = -world[i].vy - 1;
		}
		if (step % 7 == 3 && n > 10) { /* drop one from the middle */
			uint32_t k = 1 + next_rand() % (n - 2);
			memmove(&world[k], &world[k + 1], (n - k - 1) * sizeof world[0]);
			n--;
		}
		if (step % 5 == 2 && n < MAX_AGENTS - 1) { /* a newcomer between existing ids */
			uint32_t k = next_rand() % (n - 1);
			if (world[k + 1].id - world[k].id > 1) {
				memmove(&world[k + 2], &world[k + 1], (n - k - 1) * sizeof world[0]);
				world[k + 1] =
				    (crowd_agent_q){.id = world[k].id + 1, .x = -7, .y = 7, .radius = 40, .owner = 5};
				n++;
			}
		}
		if (step == 20) /* an agent changes owner: it is sent as new again */
			world[2].owner += 10;
		crowd_snapshot_header h = {.tick = 1000 + step,
		                           .state_hash = 0x1234567890abcdefull + step,
		                           .world_agent_count = n + 100,
		                           .keyframe = step == 0 || step == 30};
		out.len = 0;
		if (!crowd_snapshot_encode(&h, world, n, &sender, step == 0 || step == 40 ? &obstacles : NULL, false,
		                           &out)) {
			status = 1;
			break;
		}
		crowd_v1_ServerMessage msg;
		if (!crowd_decode_server_message(out.data, out.len, &msg, &receiver, &received_obstacles, NULL)) {
			status = 2;
			break;
		}
		printf("{\"hex\":\"");
		print_hex(out.data, out.len);
		printf("\",\"tick\":%u,\"keyframe\":%s,\"agents\":[", (unsigned)h.tick, h.keyframe ? "true" : "false");
		for (uint32_t i = 0; i < receiver.count; i++) {
			const crowd_agent_q *a = &receiver.agents[i];
			printf("%s[%u,%d,%d,%d,%d,%u,%u]", i ? "," : "", a->id, a->x, a->y, a->vx, a->vy, a->radius,
			       a->owner);
		}
		printf("]}\n");
	}
	crowd_buf_free(&out);
	crowd_view_free(&sender);
	crowd_view_free(&receiver);
	crowd_obstacle_set_free(&obstacles);
	crowd_obstacle_set_free(&received_obstacles);
	if (status) fprintf(stderr, "snapshot_vectors: codec failed (%d)\n", status);
	return status;
}
