/* nav_flow — runs one of flow_run.h's crowds and prints what happened:
 *   nav_flow KIND SIZE [WORKERS [MAX_STEPS [SETTLE [TIME_HORIZON [TIME_HORIZON_OBST]]]]]
 * KIND: crossing, door, evacuation, city (or all: every kind at SIZE).
 * MAX_STEPS default 45,000 (25 simulated minutes at 30 Hz), SETTLE 300;
 * TIME_HORIZON and TIME_HORIZON_OBST the server's defaults.
 * With FLOW_PICTURE=PREFIX (and FLOW_PICTURE_EVERY=N, default 300) it also writes
 * a picture every N steps: PREFIX-STEP.ppm (walls grey, agents coloured by
 * group, arrived ones outlined black, goals as dots). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flow_run.h"

typedef struct picture_ctx {
	const char *prefix;
	uint32_t every;
	flow_kind kind;
} picture_ctx;

static void put(uint8_t *img, int W, int H, int x, int y, uint32_t rgb)
{
	if (x < 0 || y < 0 || x >= W || y >= H)
		return;
	uint8_t *p = img + 3 * ((size_t)y * (size_t)W + (size_t)x);
	p[0] = (uint8_t)(rgb >> 16), p[1] = (uint8_t)(rgb >> 8), p[2] = (uint8_t)rgb;
}

/* A disc of radius rad (world units) at c; ring: only its outer 0.3. */
static void disc(uint8_t *img, int W, int H, const flow_setup *s, float scale, orca_vec2 c, float rad, uint32_t rgb,
                 bool ring)
{
	const float px = (c.x - s->lo.x) * scale, py = (s->hi.y - c.y) * scale, pr = rad * scale;
	for (int y = (int)(py - pr) - 1; y <= (int)(py + pr) + 1; ++y)
		for (int x = (int)(px - pr) - 1; x <= (int)(px + pr) + 1; ++x) {
			const float dx = (float)x + 0.5f - px, dy = (float)y + 0.5f - py, d = sqrtf(dx * dx + dy * dy);
			if (d <= pr && (!ring || d >= pr - 0.3f * scale))
				put(img, W, H, x, y, rgb);
		}
}

static void write_picture(void *ctx, const orca_world *world, orca_nav *nav, uint32_t step, const flow_setup *s, const orca_agent_motion *m,
                          const uint8_t *arrived)
{
	(void)world, (void)nav;
	const picture_ctx *c = ctx;
	if (step % c->every != 0)
		return;
	const float w = s->hi.x - s->lo.x, h = s->hi.y - s->lo.y, scale = 600.0f / (w > h ? w : h);
	const int W = (int)(w * scale) + 1, H = (int)(h * scale) + 1;
	uint8_t *img = malloc((size_t)W * (size_t)H * 3);
	if (!img)
		return;
	memset(img, 255, (size_t)W * (size_t)H * 3);
	for (uint32_t k = 0; k < s->rect_count; ++k)
		for (int y = (int)((s->hi.y - s->rects[k][3]) * scale); y < (int)((s->hi.y - s->rects[k][1]) * scale); ++y)
			for (int x = (int)((s->rects[k][0] - s->lo.x) * scale); x < (int)((s->rects[k][2] - s->lo.x) * scale); ++x)
				put(img, W, H, x, y, 0x999999);
	static const uint32_t colours[4] = {0xdd3333, 0x3333dd, 0x33aa33, 0xcc88cc};
	const uint32_t groups = c->kind == FLOW_CROSSING ? 4 : c->kind == FLOW_DOOR ? 2 : c->kind == FLOW_CITY ? 4 : 1;
	for (uint32_t i = 0; i < s->agents; ++i)
		disc(img, W, H, s, scale, s->goal[i], 0.4f, colours[i % groups], false);
	for (uint32_t i = 0; i < s->agents; ++i) {
		disc(img, W, H, s, scale, m[i].position, m[i].radius, colours[i % groups], false);
		if (arrived[i])
			disc(img, W, H, s, scale, m[i].position, m[i].radius, 0x000000, true);
	}
	char path[512];
	snprintf(path, sizeof path, "%s-%06u.ppm", c->prefix, step);
	FILE *f = fopen(path, "wb");
	if (f) {
		fprintf(f, "P6\n%d %d\n255\n", W, H);
		fwrite(img, 3, (size_t)W * (size_t)H, f);
		fclose(f);
	}
	free(img);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: nav_flow crossing|door|evacuation|city|all SIZE [WORKERS [MAX_STEPS [SETTLE "
		                "[TIME_HORIZON [TIME_HORIZON_OBST]]]]]\n");
		return 2;
	}
	const uint32_t size = (uint32_t)strtoul(argv[2], NULL, 10);
	const int workers = argc > 3 ? atoi(argv[3]) : 1;
	const uint32_t max_steps = argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 10) : 45000u;
	const uint32_t settle = argc > 5 ? (uint32_t)strtoul(argv[5], NULL, 10) : 300u;
	if (argc > 6) flow_time_horizon = strtof(argv[6], NULL);
	if (argc > 7) flow_time_horizon_obst = strtof(argv[7], NULL);
	if (size == 0 || workers < 1 || workers > 64 || !(flow_time_horizon > 0.0f) ||
	    !(flow_time_horizon_obst > 0.0f)) {
		fprintf(stderr, "nav_flow: bad SIZE, WORKERS or time horizon\n");
		return 2;
	}
	int found = 0;
	for (int k = 0; k < FLOW_KINDS; ++k) {
		if (strcmp(argv[1], "all") != 0 && strcmp(argv[1], flow_kind_names[k]) != 0)
			continue;
		found = 1;
		picture_ctx sc = {getenv("FLOW_PICTURE"), 300, (flow_kind)k};
		if (getenv("FLOW_PICTURE_EVERY"))
			sc.every = (uint32_t)strtoul(getenv("FLOW_PICTURE_EVERY"), NULL, 10);
		sc.every = sc.every ? sc.every : 1;
		const flow_observer obs = {write_picture, &sc};
		flow_result r;
		if (flow_run((flow_kind)k, size, workers, max_steps, settle, sc.prefix ? &obs : NULL, &r) != 0) {
			fprintf(stderr, "nav_flow: %s: a call failed\n", flow_kind_names[k]);
			return 1;
		}
		flow_print(stdout, (flow_kind)k, size, &r);
		fflush(stdout);
	}
	if (!found) {
		fprintf(stderr, "nav_flow: unknown KIND %s\n", argv[1]);
		return 2;
	}
	return 0;
}
