/* snapshot_bench — the snapshot codec's speed on windows like the server's:
 * a 1,000-agent view (ids ascending, quantized values) where most agents move
 * every tick, a few leave and enter, every 30th snapshot a keyframe. Prints
 * ns per encoded agent and an FNV-1a of every byte written, so two encoders
 * can be checked for identical output; then ns per decoded agent
 * (crowd_decode_server_message, what the C client and crowd-load run on every
 * snapshot they receive) and an FNV-1a of every view decoded, which must equal
 * what was encoded. A benchmark, never a pass/fail test; it fails only when a
 * decoded view differs from the encoded one. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

#include "crowd/wire.h"

static uint32_t rng(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static uint64_t fnv_view(uint64_t h, const crowd_view *v)
{
	for (uint32_t i = 0; i < v->count; ++i) {
		const crowd_agent_q *a = &v->agents[i];
		const uint32_t f[7] = {a->id, (uint32_t)a->x, (uint32_t)a->y, (uint32_t)a->vx, (uint32_t)a->vy, a->radius,
		                       a->owner};
		for (int k = 0; k < 7; ++k)
			for (int b = 0; b < 4; ++b) {
				h ^= (f[k] >> (8 * b)) & 0xffu;
				h *= 1099511628211ull;
			}
	}
	return h;
}

int main(int argc, char **argv)
{
	const uint32_t agents = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1000;
	const int snapshots = argc > 2 ? atoi(argv[2]) : 2000;
	if (agents == 0 || snapshots < 1)
		return 2;
	crowd_agent_q *a = calloc(agents, sizeof *a), *next = calloc(agents, sizeof *next);
	uint32_t seed = 12345;
	for (uint32_t i = 0; i < agents; ++i) {
		a[i].id = 1 + i * 3;
		a[i].x = (int32_t)(rng(&seed) % 100000);
		a[i].y = (int32_t)(rng(&seed) % 100000);
		a[i].radius = 150;
		a[i].owner = i % 7;
	}
	crowd_view baseline;
	crowd_view_init(&baseline);
	crowd_buf out;
	crowd_buf_init(&out);
	crowd_view received;
	crowd_view_init(&received);
	crowd_frame_splitter splitter;
	crowd_frame_splitter_init(&splitter, 1u << 24);
	uint64_t h = 14695981039346656037ull, view_h = h, bytes = 0, encoded = 0;
	double ms = 0.0, decode_ms = 0.0;
	for (int s = 0; s < snapshots; ++s) {
		uint32_t n = 0;
		for (uint32_t i = 0; i < agents; ++i) {
			const uint32_t r = rng(&seed);
			if (r % 100 < 90) { /* most move a little */
				a[i].vx = (int32_t)(r % 41) - 20;
				a[i].vy = (int32_t)((r >> 8) % 41) - 20;
				a[i].x += a[i].vx;
				a[i].y += a[i].vy;
			}
			if ((r >> 16) % 100 < 2)
				continue; /* out of the window this time */
			next[n++] = a[i];
		}
		const crowd_snapshot_header hd = {(uint64_t)s, 0x1234u, agents, s % 30 == 0};
		out.len = 0;
		const double t = cpu_ms();
		if (!crowd_snapshot_encode(&hd, next, n, &baseline, NULL, true, &out)) {
			fprintf(stderr, "snapshot_bench: encode failed\n");
			return 1;
		}
		ms += cpu_ms() - t;
		encoded += n;
		bytes += out.len;
		for (size_t k = 0; k < out.len; ++k) {
			h ^= out.data[k];
			h *= 1099511628211ull;
		}
		/* the receiver's side: the frame, then the bare message */
		const uint8_t *frame = NULL;
		size_t frame_len = 0;
		const bool framed = crowd_frame_splitter_push(&splitter, out.data, out.len) &&
		                    crowd_frame_splitter_next(&splitter, &frame, &frame_len) == CROWD_FRAME_READY;
		crowd_v1_ServerMessage msg;
		const double t_decode = cpu_ms();
		const bool decoded = framed && crowd_decode_server_message(frame, frame_len, &msg, &received, NULL, NULL);
		decode_ms += cpu_ms() - t_decode;
		if (!decoded || received.count != n || memcmp(received.agents, next, (size_t)n * sizeof *next) != 0) {
			fprintf(stderr, "snapshot_bench: snapshot %d decoded to another view\n", s);
			return 1;
		}
		view_h = fnv_view(view_h, &received);
	}
	printf("snapshots %d  agents/window %u  encode %.1f ns/agent (CPU)  %.2f bytes/agent  output fnv %016" PRIx64 "\n",
	       snapshots, agents, ms * 1e6 / (double)encoded, (double)bytes / (double)encoded, h);
	printf("decode %.1f ns/agent (CPU)  views fnv %016" PRIx64 "\n", decode_ms * 1e6 / (double)encoded, view_h);
	crowd_view_free(&received);
	crowd_frame_splitter_free(&splitter);
	crowd_buf_free(&out);
	crowd_view_free(&baseline);
	free(a);
	free(next);
	return 0;
}
