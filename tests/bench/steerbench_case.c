/* steerbench_case.c — see steerbench_case.h. */
#include "steerbench_case.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ loading */

static void set_err(char *err, size_t len, const char *path, int line, const char *msg) {
	if (err && len) snprintf(err, len, "%s:%d: %s", path, line, msg);
}

void sb_case_free(sb_case *c) {
	for (uint32_t i = 0; i < c->agent_count; ++i) free(c->agents[i].goals);
	free(c->agents);
	for (uint32_t i = 0; i < c->obstacle_count; ++i) free(c->obstacles ? c->obstacles[i] : NULL);
	free(c->obstacles);
	free(c->obstacle_sizes);
	memset(c, 0, sizeof *c);
}

static bool finite_all(const float *v, int n) {
	for (int i = 0; i < n; ++i)
		if (!isfinite(v[i])) return false;
	return true;
}

int sb_case_load(const char *path, sb_case *c, char *err, size_t err_len) {
	memset(c, 0, sizeof *c);
	c->time_step = 0.05f;
	c->time_limit = 1500.0f;
	c->bounds_min = (orca_vec2){-1000.0f, -1000.0f};
	c->bounds_max = (orca_vec2){1000.0f, 1000.0f};
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	snprintf(c->name, sizeof c->name, "%s", base);
	char *dot = strrchr(c->name, '.');
	if (dot && strcmp(dot, ".txt") == 0) *dot = '\0';
	FILE *f = fopen(path, "r");
	if (!f) {
		set_err(err, err_len, path, 0, "cannot open");
		return -1;
	}
	/* agent rows hold up to a few hundred goals: lines are read whole */
	size_t cap = 0;
	char *line = NULL;
	int lineno = 0;
	uint32_t verts_left = 0, cur = 0, agents_left = 0, agents_cap = 0;
	bool have_obstacles = false;
	const char *msg = NULL;
	for (;;) {
		/* getline is POSIX; a portable loop instead */
		size_t len = 0;
		int ch;
		while ((ch = fgetc(f)) != EOF && ch != '\n') {
			if (len + 2 > cap) {
				size_t nc = cap ? cap * 2 : 256;
				char *p = realloc(line, nc);
				if (!p) {
					msg = "out of memory";
					goto fail;
				}
				line = p;
				cap = nc;
			}
			line[len++] = (char)ch;
		}
		if (len == 0 && ch == EOF) break;
		if (!line) {
			line = malloc(256);
			if (!line) {
				msg = "out of memory";
				goto fail;
			}
			cap = 256;
		}
		line[len] = '\0';
		lineno++;
		if (line[0] == '#' || line[0] == '\0') continue;
		if (verts_left > 0) {
			float x, y;
			if (sscanf(line, "%f %f", &x, &y) != 2 || !isfinite(x) || !isfinite(y)) {
				msg = "bad vertex";
				goto fail;
			}
			c->obstacles[cur][c->obstacle_sizes[cur] - verts_left] = (orca_vec2){x, y};
			verts_left--;
			continue;
		}
		if (agents_left > 0) {
			float v[9];
			char *p = line;
			for (int k = 0; k < 9; ++k) {
				char *end;
				v[k] = strtof(p, &end);
				if (end == p) {
					msg = "agent row: id x y gx gy speed radius vx vy [gx gy ...]";
					goto fail;
				}
				p = end;
			}
			if (!finite_all(v, 9) || v[0] != (float)c->agent_count || !(v[5] > 0.0f) || !(v[6] > 0.0f)) {
				msg = "bad agent row";
				goto fail;
			}
			if (c->agent_count == agents_cap) {
				msg = "more agent rows than num_agents";
				goto fail;
			}
			sb_agent *a = &c->agents[c->agent_count];
			a->start = (orca_vec2){v[1], v[2]};
			a->speed = v[5];
			a->radius = v[6];
			a->velocity = (orca_vec2){v[7], v[8]};
			uint32_t gcap = 4;
			a->goals = malloc(gcap * sizeof *a->goals);
			if (!a->goals) {
				msg = "out of memory";
				goto fail;
			}
			a->goals[0] = (orca_vec2){v[3], v[4]};
			a->goal_count = 1;
			c->agent_count++;
			for (;;) {
				char *end;
				const float gx = strtof(p, &end);
				if (end == p) break;
				p = end;
				const float gy = strtof(p, &end);
				if (end == p || !isfinite(gx) || !isfinite(gy)) {
					msg = "a further goal without its y";
					goto fail;
				}
				p = end;
				if (a->goal_count == gcap) {
					gcap *= 2;
					orca_vec2 *g = realloc(a->goals, gcap * sizeof *g);
					if (!g) {
						msg = "out of memory";
						goto fail;
					}
					a->goals = g;
				}
				a->goals[a->goal_count++] = (orca_vec2){gx, gy};
			}
			if (a->radius > c->max_radius) c->max_radius = a->radius;
			agents_left--;
			continue;
		}
		char key[64];
		if (sscanf(line, "%63s", key) != 1) continue;
		if (strcmp(key, "time_step") == 0) {
			if (sscanf(line, "%*s %f", &c->time_step) != 1 || !(c->time_step > 0.0f) ||
			    !isfinite(c->time_step)) {
				msg = "bad time_step";
				goto fail;
			}
		} else if (strcmp(key, "time_limit") == 0) {
			if (sscanf(line, "%*s %f", &c->time_limit) != 1 || !(c->time_limit > 0.0f) ||
			    !isfinite(c->time_limit)) {
				msg = "bad time_limit";
				goto fail;
			}
		} else if (strcmp(key, "world_bounds") == 0) {
			float b[4];
			if (sscanf(line, "%*s %f %f %f %f", &b[0], &b[1], &b[2], &b[3]) != 4 || !finite_all(b, 4) ||
			    !(b[0] < b[2]) || !(b[1] < b[3])) {
				msg = "bad world_bounds";
				goto fail;
			}
			c->bounds_min = (orca_vec2){b[0], b[1]};
			c->bounds_max = (orca_vec2){b[2], b[3]};
		} else if (strcmp(key, "num_obstacles") == 0) {
			unsigned n;
			if (have_obstacles || sscanf(line, "%*s %u", &n) != 1 || n > 1000000) {
				msg = "bad num_obstacles";
				goto fail;
			}
			have_obstacles = true;
			c->obstacle_sizes = calloc(n ? n : 1, sizeof *c->obstacle_sizes);
			c->obstacles = calloc(n ? n : 1, sizeof *c->obstacles);
			if (!c->obstacle_sizes || !c->obstacles) {
				msg = "out of memory";
				goto fail;
			}
			c->obstacle_count = n;
		} else if (strcmp(key, "obstacle") == 0) {
			unsigned k, nv;
			if (sscanf(line, "%*s %u %u", &k, &nv) != 2 || k >= c->obstacle_count || c->obstacles[k] ||
			    nv < 2 || nv > 100000) {
				msg = "bad obstacle line";
				goto fail;
			}
			cur = k;
			c->obstacle_sizes[k] = nv;
			c->obstacles[k] = calloc(nv, sizeof(orca_vec2));
			if (!c->obstacles[k]) {
				msg = "out of memory";
				goto fail;
			}
			verts_left = nv;
		} else if (strcmp(key, "num_agents") == 0) {
			unsigned n;
			if (c->agents || sscanf(line, "%*s %u", &n) != 1 || n == 0 || n > 1000000) {
				msg = "bad num_agents";
				goto fail;
			}
			c->agents = calloc(n, sizeof *c->agents);
			if (!c->agents) {
				msg = "out of memory";
				goto fail;
			}
			agents_cap = n;
			agents_left = n;
		}
	}
	if (verts_left || agents_left || !c->agents) {
		msg = "file ends early";
		goto fail;
	}
	for (uint32_t i = 0; i < c->obstacle_count; ++i)
		if (!c->obstacles[i]) {
			msg = "an obstacle listed in num_obstacles is missing";
			goto fail;
		}
	free(line);
	fclose(f);
	return 0;
fail:
	set_err(err, err_len, path, lineno, msg);
	free(line);
	fclose(f);
	sb_case_free(c);
	return -1;
}

/* ------------------------------------------------------------------ measurements */

#define COLLISION_EPS 0.001f /* SteerSuite's: an overlap deeper than this is a collision */
#define DEEP 0.01f

typedef struct sb_track {
	double path;    /* walked length while active */
	double time;    /* seconds active */
	double energy;  /* sum over steps of |v|^2 / 2 */
	double arrival; /* < 0: not arrived */
	uint32_t collisions;
	bool unreachable;
	orca_vec2 prev;
} sb_track;

struct sb_metrics {
	const sb_case *c;
	uint32_t n;
	sb_track *t;
	float *shortest;
	/* obstacle buckets */
	float cell;
	int gx, gy;
	orca_vec2 origin;
	uint32_t *cell_start, *cell_items; /* CSR */
	uint32_t *stamp, stamp_now;
	orca_vec2 *obs_lo, *obs_hi;
	/* overlaps of the last step and this one, as sorted keys */
	uint64_t *prev, *now;
	size_t prev_n, now_n, keys_cap;
	uint32_t *order;
	uint64_t deep, wall, steps, episodes;
};

static bool push_key(sb_metrics *m, uint64_t k) {
	if (m->now_n == m->keys_cap) {
		size_t nc = m->keys_cap ? m->keys_cap * 2 : 1024;
		uint64_t *a = realloc(m->now, nc * sizeof *a), *b;
		if (!a) return false;
		m->now = a;
		b = realloc(m->prev, nc * sizeof *b);
		if (!b) return false;
		m->prev = b;
		m->keys_cap = nc;
	}
	m->now[m->now_n++] = k;
	return true;
}

static int cell_of(const sb_metrics *m, float v, float o, int g) {
	int k = (int)floorf((v - o) / m->cell);
	return k < 0 ? 0 : k >= g ? g - 1 : k;
}

sb_metrics *sb_metrics_create(const sb_case *c, const float *shortest) {
	sb_metrics *m = calloc(1, sizeof *m);
	if (!m) return NULL;
	m->c = c;
	m->n = c->agent_count;
	m->t = calloc(m->n, sizeof *m->t);
	m->shortest = malloc(m->n * sizeof *m->shortest);
	m->order = malloc(m->n * sizeof *m->order);
	m->obs_lo = malloc((c->obstacle_count + 1) * sizeof *m->obs_lo);
	m->obs_hi = malloc((c->obstacle_count + 1) * sizeof *m->obs_hi);
	m->stamp = calloc(c->obstacle_count + 1, sizeof *m->stamp);
	if (!m->t || !m->shortest || !m->order || !m->obs_lo || !m->obs_hi || !m->stamp) goto fail;
	memcpy(m->shortest, shortest, m->n * sizeof *m->shortest);
	for (uint32_t i = 0; i < m->n; ++i) {
		m->t[i].arrival = -1.0;
		m->t[i].prev = c->agents[i].start;
	}
	/* obstacles bucketed by bounding box over the world (plus their own extent) */
	orca_vec2 lo = c->bounds_min, hi = c->bounds_max;
	for (uint32_t k = 0; k < c->obstacle_count; ++k) {
		orca_vec2 a = c->obstacles[k][0], b = a;
		for (uint32_t v = 1; v < c->obstacle_sizes[k]; ++v) {
			const orca_vec2 p = c->obstacles[k][v];
			a.x = fminf(a.x, p.x), a.y = fminf(a.y, p.y), b.x = fmaxf(b.x, p.x), b.y = fmaxf(b.y, p.y);
		}
		m->obs_lo[k] = a, m->obs_hi[k] = b;
		lo.x = fminf(lo.x, a.x), lo.y = fminf(lo.y, a.y), hi.x = fmaxf(hi.x, b.x), hi.y = fmaxf(hi.y, b.y);
	}
	m->cell = 4.0f;
	while (((hi.x - lo.x) / m->cell) * ((hi.y - lo.y) / m->cell) > 4e6f) m->cell *= 2.0f;
	m->origin = lo;
	m->gx = (int)((hi.x - lo.x) / m->cell) + 1;
	m->gy = (int)((hi.y - lo.y) / m->cell) + 1;
	const size_t cells = (size_t)m->gx * (size_t)m->gy;
	m->cell_start = calloc(cells + 1, sizeof *m->cell_start);
	if (!m->cell_start) goto fail;
	size_t total = 0;
	for (int pass = 0; pass < 2; ++pass) {
		for (uint32_t k = 0; k < c->obstacle_count; ++k) {
			const int x0 = cell_of(m, m->obs_lo[k].x, lo.x, m->gx),
			          x1 = cell_of(m, m->obs_hi[k].x, lo.x, m->gx);
			const int y0 = cell_of(m, m->obs_lo[k].y, lo.y, m->gy),
			          y1 = cell_of(m, m->obs_hi[k].y, lo.y, m->gy);
			for (int y = y0; y <= y1; ++y)
				for (int x = x0; x <= x1; ++x) {
					const size_t ci = (size_t)y * (size_t)m->gx + (size_t)x;
					if (pass == 0)
						m->cell_start[ci + 1]++;
					else
						m->cell_items[m->cell_start[ci]++] = k;
				}
		}
		if (pass == 0) {
			for (size_t i = 0; i < cells; ++i) m->cell_start[i + 1] += m->cell_start[i];
			total = m->cell_start[cells];
			m->cell_items = malloc((total ? total : 1) * sizeof *m->cell_items);
			if (!m->cell_items) goto fail;
		} else {
			/* the second pass moved each start to its end: shift back */
			for (size_t i = cells; i > 0; --i) m->cell_start[i] = m->cell_start[i - 1];
			m->cell_start[0] = 0;
		}
	}
	return m;
fail:
	sb_metrics_destroy(m);
	return NULL;
}

void sb_metrics_destroy(sb_metrics *m) {
	if (!m) return;
	free(m->t);
	free(m->shortest);
	free(m->order);
	free(m->obs_lo);
	free(m->obs_hi);
	free(m->stamp);
	free(m->cell_start);
	free(m->cell_items);
	free(m->prev);
	free(m->now);
	free(m);
}

static float seg_dist(orca_vec2 p, orca_vec2 a, orca_vec2 b) {
	const float dx = b.x - a.x, dy = b.y - a.y;
	const float l2 = dx * dx + dy * dy;
	float t = l2 > 0.0f ? ((p.x - a.x) * dx + (p.y - a.y) * dy) / l2 : 0.0f;
	t = t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
	const float qx = a.x + t * dx - p.x, qy = a.y + t * dy - p.y;
	return sqrtf(qx * qx + qy * qy);
}

/* How deep the disc (p, r) reaches into obstacle k (<= 0: not at all). */
static float obstacle_depth(const sb_case *c, uint32_t k, orca_vec2 p, float r) {
	const orca_vec2 *v = c->obstacles[k];
	const uint32_t n = c->obstacle_sizes[k];
	float d = INFINITY;
	bool in = false;
	for (uint32_t i = 0, j = n - 1; i < n; j = i++) {
		d = fminf(d, seg_dist(p, v[j], v[i]));
		if (n > 2 && (v[i].y > p.y) != (v[j].y > p.y) &&
		    p.x < v[i].x + (p.y - v[i].y) * (v[j].x - v[i].x) / (v[j].y - v[i].y))
			in = !in;
	}
	return in ? r + d : r - d;
}

static const orca_vec2 *g_pos; /* for the sort below only */

static int by_x(const void *a, const void *b) {
	const float x = g_pos[*(const uint32_t *)a].x, y = g_pos[*(const uint32_t *)b].x;
	if (x != y) return (x > y) - (x < y);
	return (*(const uint32_t *)a > *(const uint32_t *)b) - (*(const uint32_t *)a < *(const uint32_t *)b);
}

static int cmp_u64(const void *a, const void *b) {
	const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

void sb_metrics_step(sb_metrics *m, float dt, const orca_vec2 *pos, const bool *active) {
	const sb_case *c = m->c;
	const uint64_t span = (uint64_t)m->n + c->obstacle_count;
	uint32_t count = 0;
	m->steps++;
	m->now_n = 0;
	for (uint32_t i = 0; i < m->n; ++i) {
		if (!active[i]) continue;
		sb_track *t = &m->t[i];
		const float dx = pos[i].x - t->prev.x, dy = pos[i].y - t->prev.y;
		const double d = sqrt((double)dx * dx + (double)dy * dy);
		t->path += d;
		t->time += dt;
		t->energy += 0.5 * (d / dt) * (d / dt);
		t->prev = pos[i];
		m->order[count++] = i;
		/* obstacles */
		const float r = c->agents[i].radius;
		const int x0 = cell_of(m, pos[i].x - r, m->origin.x, m->gx),
		          x1 = cell_of(m, pos[i].x + r, m->origin.x, m->gx);
		const int y0 = cell_of(m, pos[i].y - r, m->origin.y, m->gy),
		          y1 = cell_of(m, pos[i].y + r, m->origin.y, m->gy);
		m->stamp_now++;
		bool deep_wall = false;
		for (int y = y0; y <= y1; ++y)
			for (int x = x0; x <= x1; ++x) {
				const size_t ci = (size_t)y * (size_t)m->gx + (size_t)x;
				for (uint32_t e = m->cell_start[ci]; e < m->cell_start[ci + 1]; ++e) {
					const uint32_t k = m->cell_items[e];
					if (m->stamp[k] == m->stamp_now) continue;
					m->stamp[k] = m->stamp_now;
					if (pos[i].x + r < m->obs_lo[k].x || pos[i].x - r > m->obs_hi[k].x ||
					    pos[i].y + r < m->obs_lo[k].y || pos[i].y - r > m->obs_hi[k].y)
						continue;
					const float depth = obstacle_depth(c, k, pos[i], r);
					if (depth > COLLISION_EPS) push_key(m, (uint64_t)i * span + m->n + k);
					deep_wall = deep_wall || depth > DEEP;
				}
			}
		m->wall += deep_wall;
	}
	/* agent pairs: sweep along x */
	g_pos = pos;
	if (count > 1) qsort(m->order, count, sizeof *m->order, by_x);
	const float reach = 2.0f * c->max_radius;
	for (uint32_t a = 0; a < count; ++a) {
		const uint32_t i = m->order[a];
		for (uint32_t b = a + 1; b < count && pos[m->order[b]].x - pos[i].x < reach; ++b) {
			const uint32_t j = m->order[b];
			const float dx = pos[i].x - pos[j].x, dy = pos[i].y - pos[j].y;
			const float depth = c->agents[i].radius + c->agents[j].radius - sqrtf(dx * dx + dy * dy);
			if (depth > COLLISION_EPS) {
				const uint32_t lo = i < j ? i : j, hi = i < j ? j : i;
				push_key(m, (uint64_t)lo * span + hi);
			}
			m->deep += depth > DEEP;
		}
	}
	/* a key not in the last step's set is a new collision, for each agent in it */
	if (m->now_n > 1) qsort(m->now, m->now_n, sizeof *m->now, cmp_u64);
	size_t p = 0;
	for (size_t q = 0; q < m->now_n; ++q) {
		while (p < m->prev_n && m->prev[p] < m->now[q]) p++;
		if (p < m->prev_n && m->prev[p] == m->now[q]) continue;
		const uint64_t a = m->now[q] / span, b = m->now[q] % span;
		m->episodes++;
		m->t[a].collisions++;
		if (b < m->n) m->t[b].collisions++;
	}
	uint64_t *sw = m->prev;
	m->prev = m->now;
	m->now = sw;
	m->prev_n = m->now_n;
}

void sb_metrics_arrived(sb_metrics *m, uint32_t i, double t) {
	if (i < m->n && m->t[i].arrival < 0.0) m->t[i].arrival = t;
}

void sb_metrics_unreachable(sb_metrics *m, uint32_t i) {
	if (i < m->n) m->t[i].unreachable = true;
}

void sb_metrics_summary(const sb_metrics *m, sb_summary *s) {
	memset(s, 0, sizeof *s);
	s->agents = m->n;
	double coll = 0.0, time = 0.0, energy = 0.0;
	for (uint32_t i = 0; i < m->n; ++i) {
		const sb_track *t = &m->t[i];
		const sb_agent *a = &m->c->agents[i];
		coll += t->collisions;
		time += t->time;
		energy += t->energy;
		s->unreachable += t->unreachable;
		if (t->arrival < 0.0) continue;
		s->arrived++;
		s->last_arrival = fmax(s->last_arrival, t->arrival);
		s->mean_time += t->arrival;
		/* an agent is at a goal within its radius of it: the free walk is that much shorter per goal */
		const double shortest = fmax((double)m->shortest[i] - (double)a->radius * a->goal_count, 0.1);
		s->time_ratio += t->arrival / (shortest / a->speed);
		s->path_ratio += t->path / shortest;
	}
	if (s->arrived) {
		s->mean_time /= s->arrived;
		s->time_ratio /= s->arrived;
		s->path_ratio /= s->arrived;
	}
	const double n = m->n ? (double)m->n : 1.0;
	s->score = 50.0 * coll / n + time / n + energy / n;
	s->collisions = m->episodes; /* an agent pair once, though it counts for both agents above */
	s->deep = m->deep;
	s->wall = m->wall;
	s->steps = m->steps;
}

void sb_print_header(void) {
	printf(
	    "| case | mode | agents | arrived | unreachable | last arrival s | mean time s | time/free | path/shortest "
	    "| collisions | deep | wall | score | steps | ms/step |\n");
	printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
}

void sb_print_row(const char *name, const char *mode, const sb_summary *s, double ms) {
	printf("| %s | %s | %u | %u | %u | %.1f | %.1f | %.2f | %.2f | %llu | %llu | %llu | %.1f | %llu | %.3f |\n",
	       name, mode, s->agents, s->arrived, s->unreachable, s->last_arrival, s->mean_time, s->time_ratio,
	       s->path_ratio, (unsigned long long)s->collisions, (unsigned long long)s->deep,
	       (unsigned long long)s->wall, s->score, (unsigned long long)s->steps, ms);
	fflush(stdout);
}

int sb_expect_load(const char *path, const char *name, const char *mode, sb_expect *out) {
	memset(out, 0, sizeof *out);
	FILE *f = fopen(path, "r");
	if (!f) return -1;
	char line[512];
	while (fgets(line, sizeof line, f)) {
		char n[128], md[32];
		unsigned arrived;
		unsigned long long deep;
		float limit = 0.0f;
		if (line[0] == '#') continue;
		const int got = sscanf(line, "%127s %31s %u %llu %f", n, md, &arrived, &deep, &limit);
		if (got < 4 || strcmp(n, name) != 0 || strcmp(md, mode) != 0) continue;
		out->found = true;
		out->min_arrived = arrived;
		out->max_deep = deep;
		out->time_limit = got == 5 ? limit : 0.0f;
	}
	fclose(f);
	return 0;
}
