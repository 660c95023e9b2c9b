/* snapshot_fixture.c — writes a stream of snapshot frames made by proto/wire's C
 * encoder (the one the server uses) and, beside it, the views they encode, so the
 * Unity client's C# decoder can be checked against the reference, frame by frame.
 * Usage: unity_snapshot_fixture FRAMES_FILE EXPECTED_FILE */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "crowd/wire.h"

#define MAX_AGENTS 256
#define SNAPSHOTS 240

static uint64_t rng_state = 0x2545F4914F6CDD1DULL;

static uint32_t rnd(uint32_t n) {
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

static int32_t rnd_range(int32_t lo, int32_t hi) {
	return (int32_t)((int64_t)lo + rnd((uint32_t)((int64_t)hi - lo + 1)));
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: %s FRAMES_FILE EXPECTED_FILE\n", argv[0]);
		return 2;
	}
	FILE *frames = fopen(argv[1], "wb");
	FILE *expected = fopen(argv[2], "w");
	if (!frames || !expected) {
		perror("fopen");
		return 1;
	}
	static crowd_agent_q agents[MAX_AGENTS];
	uint32_t n = 0, next_id = 1;
	crowd_view baseline;
	crowd_view_init(&baseline);
	crowd_obstacle_set obstacles;
	crowd_obstacle_set_init(&obstacles);
	crowd_buf out;
	crowd_buf_init(&out);
	int status = 0;

	for (uint64_t tick = 1; tick <= SNAPSHOTS && status == 0; tick++) {
		/* Agents enter (ids ascend with gaps), leave, move; radius or owner change now and then. */
		if ((rnd(3) == 0 || n < 3) && n < MAX_AGENTS) {
			crowd_agent_q *a = &agents[n++];
			a->id = next_id;
			next_id += 1 + rnd(1000);
			a->x = rnd_range(-1073741824, 1073741823);
			a->y = rnd_range(-200000, 200000);
			a->vx = a->vy = 0;
			a->radius = 1 + rnd(3000);
			a->owner = rnd(4);
		}
		if (rnd(4) == 0 && n > 1) {
			uint32_t k = rnd(n);
			for (uint32_t i = k; i + 1 < n; i++) agents[i] = agents[i + 1];
			n--;
		}
		for (uint32_t i = 0; i < n; i++) {
			crowd_agent_q *a = &agents[i];
			if (rnd(4) != 0) {
				a->vx = rnd_range(-5000, 5000);
				a->x += a->vx / 30;
			}
			if (rnd(4) != 0) {
				a->vy = rnd_range(-5000, 5000);
				a->y += a->vy / 30;
			}
			if (rnd(60) == 0) a->radius++;
			if (rnd(90) == 0) a->owner = rnd(4);
		}
		crowd_obstacle_set *send = NULL;
		if (tick == 1 || tick == 120) {
			crowd_obstacle_set_clear(&obstacles);
			float x[3] = {0.0f, 4.5f, 4.5f}, y[3] = {0.0f, 0.0f, (float)tick};
			if (!crowd_obstacle_set_add(&obstacles, 7, x, y, 3) ||
			    (tick == 120 && !crowd_obstacle_set_add(&obstacles, 9, x, y, 2))) {
				status = 1;
				break;
			}
			send = &obstacles;
		}
		crowd_snapshot_header h = {
		    .tick = tick, .state_hash = tick * 0x9E3779B97F4A7C15ULL, .world_agent_count = n + 5,
		    .keyframe = tick % 50 == 1};
		out.len = 0;
		if (!crowd_snapshot_encode(&h, agents, n, &baseline, send, true, &out)) {
			fprintf(stderr, "encode failed at tick %" PRIu64 "\n", tick);
			status = 1;
			break;
		}
		fwrite(out.data, 1, out.len, frames);
		fprintf(expected, "S %" PRIu64 " %" PRIu64 " %d %u %u %u\n", h.tick, h.state_hash, h.keyframe ? 1 : 0,
		        h.world_agent_count, n, obstacles.count);
		for (uint32_t i = 0; i < n; i++) {
			const crowd_agent_q *a = &agents[i];
			fprintf(expected, "A %u %d %d %d %d %u %u\n", a->id, a->x, a->y, a->vx, a->vy, a->radius, a->owner);
		}
		for (uint32_t i = 0; i < obstacles.count; i++)
			fprintf(expected, "O %u %u\n", obstacles.items[i].id, obstacles.items[i].count);
	}
	crowd_buf_free(&out);
	crowd_view_free(&baseline);
	crowd_obstacle_set_free(&obstacles);
	if (fclose(frames) != 0 || fclose(expected) != 0) status = 1;
	return status;
}
