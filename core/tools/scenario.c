/* scenario.c — reads the reference set-up formats (see scenario.h and
 * tests/data/ref/RVO2-README.md) and turns them into worlds. */
#include "scenario.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_err(char *err, size_t len, const char *msg, const char *path)
{
	if (err && len)
		snprintf(err, len, "%s: %s", path, msg);
}

static void defaults(scenario *s)
{
	memset(s, 0, sizeof *s);
	s->time_step = 0.25f;
	s->agent = orca_default_agent_def();
	s->agent.steer_mode = ORCA_STEER_TARGET_RVO2;
	s->agent.pref_speed = 1.0f;
	s->goal_dist_sq = -1.0f;
}

static bool push_agent(scenario *s, uint32_t *cap, float x, float y, float gx, float gy)
{
	if (s->agent_count == *cap) {
		uint32_t nc = *cap ? *cap * 2 : 64;
		orca_vec2 *a = realloc(s->start, nc * sizeof *a);
		if (!a)
			return false;
		s->start = a;
		orca_vec2 *b = realloc(s->goal, nc * sizeof *b);
		if (!b)
			return false;
		s->goal = b;
		*cap = nc;
	}
	s->start[s->agent_count] = (orca_vec2){x, y};
	s->goal[s->agent_count] = (orca_vec2){gx, gy};
	s->agent_count++;
	return true;
}

static int load_csv(FILE *f, scenario *s, char *err, size_t err_len, const char *path)
{
	char line[512];
	uint32_t cap = 0;
	if (!fgets(line, sizeof line, f) || strncmp(line, "agent_id", 8) != 0) {
		set_err(err, err_len, "expected header agent_id,x,y,goal_x,goal_y", path);
		return -1;
	}
	while (fgets(line, sizeof line, f)) {
		unsigned id;
		float x, y, gx, gy;
		if (line[0] == '\n' || line[0] == '\0')
			continue;
		if (sscanf(line, "%u,%f,%f,%f,%f", &id, &x, &y, &gx, &gy) != 5 || id != s->agent_count) {
			set_err(err, err_len, "bad agent row", path);
			return -1;
		}
		if (!push_agent(s, &cap, x, y, gx, gy)) {
			set_err(err, err_len, "out of memory", path);
			return -1;
		}
	}
	return 0;
}

static int load_blocks(FILE *f, scenario *s, char *err, size_t err_len, const char *path)
{
	char line[512];
	uint32_t cap = 0, expect_agents = 0, verts_left = 0, cur = 0;
	bool in_agents = false, in_processed = false;
	uint32_t processed_left = 0;
	while (fgets(line, sizeof line, f)) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		char key[64];
		if (verts_left > 0) {
			float x, y;
			if (sscanf(line, "%f %f", &x, &y) != 2)
				goto bad;
			const uint32_t k = s->obstacle_sizes[cur] - verts_left;
			s->obstacles[cur][k] = (orca_vec2){x, y};
			verts_left--;
			continue;
		}
		if (in_processed && processed_left > 0) {
			processed_left--; /* the processed table is informative only */
			continue;
		}
		if (in_agents) {
			unsigned id;
			float x, y, gx, gy;
			if (sscanf(line, "%u %f %f %f %f", &id, &x, &y, &gx, &gy) != 5 || id != s->agent_count)
				goto bad;
			if (!push_agent(s, &cap, x, y, gx, gy))
				goto bad;
			continue;
		}
		if (sscanf(line, "%63s", key) != 1)
			continue;
		if (strcmp(key, "time_step") == 0) {
			if (sscanf(line, "%*s %f", &s->time_step) != 1)
				goto bad;
		} else if (strcmp(key, "agent_defaults") == 0) {
			unsigned mn;
			float vx, vy;
			if (sscanf(line, "%*s %f %u %f %f %f %f %f %f", &s->agent.neighbor_dist, &mn, &s->agent.time_horizon,
			           &s->agent.time_horizon_obst, &s->agent.radius, &s->agent.max_speed, &vx, &vy) != 8)
				goto bad;
			s->agent.max_neighbors = mn;
			s->agent.velocity = (orca_vec2){vx, vy};
		} else if (strcmp(key, "goal_test_dist_sq") == 0) {
			if (sscanf(line, "%*s %f", &s->goal_dist_sq) != 1)
				goto bad;
		} else if (strcmp(key, "num_obstacles") == 0) {
			unsigned n;
			if (sscanf(line, "%*s %u", &n) != 1 || n > 100000)
				goto bad;
			s->obstacle_sizes = calloc(n ? n : 1, sizeof *s->obstacle_sizes);
			s->obstacles = calloc(n ? n : 1, sizeof *s->obstacles);
			if (!s->obstacle_sizes || !s->obstacles)
				goto bad;
			s->obstacle_count = n;
		} else if (strcmp(key, "obstacle") == 0) {
			unsigned k, nv;
			if (sscanf(line, "%*s %u %u", &k, &nv) != 2 || k >= s->obstacle_count || nv < 2 || nv > 1000000)
				goto bad;
			cur = k;
			s->obstacle_sizes[k] = nv;
			s->obstacles[k] = calloc(nv, sizeof(orca_vec2));
			if (!s->obstacles[k])
				goto bad;
			verts_left = nv;
		} else if (strcmp(key, "obstacle_vertices_processed") == 0) {
			unsigned n;
			if (sscanf(line, "%*s %u", &n) != 1)
				goto bad;
			in_processed = true;
			processed_left = n;
		} else if (strcmp(key, "num_agents") == 0) {
			if (sscanf(line, "%*s %u", &expect_agents) != 1)
				goto bad;
			in_agents = true;
		}
	}
	if (s->agent_count != expect_agents)
		goto bad;
	return 0;
bad:
	set_err(err, err_len, "cannot parse blocks set-up", path);
	return -1;
}

int scenario_load(const char *path, scenario *out, char *err, size_t err_len)
{
	defaults(out);
	FILE *f = fopen(path, "r");
	if (!f) {
		set_err(err, err_len, "cannot open", path);
		return -1;
	}
	const size_t n = strlen(path);
	int rc;
	if (n >= 4 && strcmp(path + n - 4, ".txt") == 0)
		rc = load_blocks(f, out, err, err_len, path);
	else
		rc = load_csv(f, out, err, err_len, path);
	fclose(f);
	if (rc != 0)
		scenario_free(out);
	return rc;
}

int scenario_circle(uint32_t n, scenario *out)
{
	defaults(out);
	uint32_t cap = 0;
	const float r = 200.0f * (float)n / 250.0f;
	for (uint32_t i = 0; i < n; ++i) {
		const float a = (float)i * 2.0f * (float)M_PI / (float)n;
		const float x = r * cosf(a), y = r * sinf(a);
		if (!push_agent(out, &cap, x, y, -x, -y)) {
			scenario_free(out);
			return -1;
		}
	}
	return 0;
}

void scenario_free(scenario *s)
{
	free(s->start);
	free(s->goal);
	for (uint32_t i = 0; i < s->obstacle_count; ++i)
		free(s->obstacles ? s->obstacles[i] : NULL);
	free(s->obstacles);
	free(s->obstacle_sizes);
	memset(s, 0, sizeof *s);
}

int scenario_make_world(const scenario *s, int workers, orca_world **out, orca_agent_id *ids)
{
	orca_world_def wd = orca_default_world_def();
	wd.worker_count = workers;
	wd.agent_capacity = s->agent_count + 1;
	orca_world *w;
	int rc = orca_world_create(&wd, &w);
	if (rc != ORCA_OK)
		return rc;
	for (uint32_t i = 0; i < s->obstacle_count; ++i) {
		rc = orca_obstacle_add(w, s->obstacles[i], s->obstacle_sizes[i], NULL);
		if (rc != ORCA_OK)
			goto fail;
	}
	for (uint32_t i = 0; i < s->agent_count; ++i) {
		orca_agent_def d = s->agent;
		d.position = s->start[i];
		d.target = s->goal[i];
		rc = orca_agent_add(w, &d, &ids[i]);
		if (rc != ORCA_OK)
			goto fail;
	}
	*out = w;
	return ORCA_OK;
fail:
	orca_world_destroy(w);
	return rc;
}

bool scenario_done(const scenario *s, const orca_world *w, const orca_agent_id *ids)
{
	for (uint32_t i = 0; i < s->agent_count; ++i) {
		orca_agent_state st;
		if (orca_agent_get(w, ids[i], &st) != ORCA_OK)
			return false;
		const float dx = st.position.x - s->goal[i].x, dy = st.position.y - s->goal[i].y;
		const float limit = s->goal_dist_sq >= 0.0f ? s->goal_dist_sq : st.radius * st.radius;
		if (dx * dx + dy * dy > limit)
			return false;
	}
	return true;
}
