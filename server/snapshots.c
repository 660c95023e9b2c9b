/* snapshots.c — after each tick, every subscriber that is due gets the agents
 * in its area, quantized and delta-coded against what it was sent last; a
 * subscriber whose output is above the soft limit skips (its next snapshot is
 * a keyframe). The world's agents are quantized once per tick (world_table),
 * and an area-of-interest grid over their positions answers the areas. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server.h"

/* A table row with its exact position, for the rare re-sort by id. */
struct world_table_entry {
	crowd_agent_q q;
	float x, y;
};

static int compare_entry_id(const void *a, const void *b) {
	uint32_t x = ((const struct world_table_entry *)a)->q.id, y = ((const struct world_table_entry *)b)->q.id;
	return (x > y) - (x < y);
}

static bool grow(void **ptr, uint32_t *cap, uint32_t need, size_t elem) {
	if (need <= *cap) return true;
	uint32_t n = *cap ? *cap : 256;
	while (n < need) n *= 2;
	void *p = realloc(*ptr, (size_t)n * elem);
	if (!p) return false;
	*ptr = p;
	*cap = n;
	return true;
}

/* Sort the rows (and their positions) by id: slot order is id order until a
 * slot is reused with a newer generation. */
static bool sort_by_id(world_table *t) {
	if (!grow((void **)&t->sort_scratch, &t->sort_scratch_cap, t->count, sizeof *t->sort_scratch)) return false;
	struct world_table_entry *e = t->sort_scratch;
	for (uint32_t i = 0; i < t->count; i++) e[i] = (struct world_table_entry){t->agents[i], t->x[i], t->y[i]};
	qsort(e, t->count, sizeof *e, compare_entry_id);
	for (uint32_t i = 0; i < t->count; i++) {
		t->agents[i] = e[i].q;
		t->x[i] = e[i].x;
		t->y[i] = e[i].y;
	}
	return true;
}

bool world_table_build(world_table *t, const orca_world *world, float precision) {
	uint32_t n = orca_world_agent_count(world);
	if (!grow((void **)&t->ids, &t->ids_cap, n + 1, sizeof *t->ids) ||
	    !grow((void **)&t->agents, &t->cap, n + 1, sizeof *t->agents) ||
	    !grow((void **)&t->x, &t->x_cap, n + 1, sizeof *t->x) || !grow((void **)&t->y, &t->y_cap, n + 1, sizeof *t->y)) {
		t->count = 0;
		return false;
	}
	n = orca_world_agent_ids(world, t->ids, t->ids_cap);
	if (n > t->ids_cap) n = t->ids_cap;
	bool sorted = true;
	uint32_t count = 0;
	for (uint32_t i = 0; i < n; i++) {
		orca_agent_state st;
		if (orca_agent_get(world, t->ids[i], &st) != ORCA_OK) continue;
		crowd_agent_q *q = &t->agents[count];
		q->id = st.id;
		q->x = crowd_quantize(st.position.x, precision);
		q->y = crowd_quantize(st.position.y, precision);
		q->vx = crowd_quantize(st.velocity.x, precision);
		q->vy = crowd_quantize(st.velocity.y, precision);
		int32_t r = crowd_quantize(st.radius, precision);
		q->radius = r > 0 ? (uint32_t)r : 0;
		q->owner = st.user_data;
		t->x[count] = st.position.x;
		t->y[count] = st.position.y;
		if (count > 0 && t->agents[count - 1].id > q->id) sorted = false;
		count++;
	}
	t->count = count;
	if ((!sorted && !sort_by_id(t)) || !aoi_grid_build(&t->grid, t->x, t->y, count)) {
		t->count = 0;
		return false;
	}
	return true;
}

void world_table_free(world_table *t) {
	free(t->agents);
	free(t->x);
	free(t->y);
	aoi_grid_free(&t->grid);
	free(t->ids);
	free(t->sort_scratch);
	memset(t, 0, sizeof *t);
}

/* The whole obstacle set, rebuilt when the world's obstacle version moves. */
static const crowd_obstacle_set *current_obstacles(server *srv) {
	uint32_t version = orca_world_obstacle_version(srv->world);
	if (srv->obstacle_set_valid && srv->obstacle_set_version == version) return &srv->obstacle_set;
	crowd_obstacle_set_clear(&srv->obstacle_set);
	uint32_t n = orca_world_obstacle_count(srv->world);
	orca_obstacle_id *ids = malloc(sizeof *ids * (n + 1));
	if (!ids) return NULL;
	n = orca_world_obstacle_ids(srv->world, ids, n + 1);
	orca_vec2 *v = NULL;
	float *xs = NULL, *ys = NULL;
	uint32_t vcap = 0;
	bool ok = true;
	for (uint32_t i = 0; i < n && ok; i++) {
		uint32_t count = 0;
		if (orca_obstacle_get(srv->world, ids[i], v, vcap, &count) != ORCA_OK) continue;
		if (count > vcap) {
			free(v), free(xs), free(ys);
			vcap = count;
			v = malloc(sizeof *v * vcap);
			xs = malloc(sizeof *xs * vcap);
			ys = malloc(sizeof *ys * vcap);
			if (!v || !xs || !ys || orca_obstacle_get(srv->world, ids[i], v, vcap, &count) != ORCA_OK) {
				ok = false;
				break;
			}
		}
		for (uint32_t k = 0; k < count; k++) {
			xs[k] = v[k].x;
			ys[k] = v[k].y;
		}
		ok = crowd_obstacle_set_add(&srv->obstacle_set, ids[i], xs, ys, count);
	}
	free(v), free(xs), free(ys), free(ids);
	if (!ok) {
		log_error("snapshots: out of memory building the obstacle set");
		return NULL;
	}
	srv->obstacle_set_version = version;
	srv->obstacle_set_valid = true;
	return &srv->obstacle_set;
}

/* The agents in a session's area, from the table (ascending id). */
static const crowd_agent_q *select_view(server *srv, const session *s, uint32_t *count) {
	const world_table *t = &srv->table;
	if (!s->has_area) {
		*count = t->count;
		return t->agents;
	}
	uint32_t words = aoi_grid_mark_words(&t->grid);
	if (words > srv->aoi_marks_cap) {
		uint32_t old = srv->aoi_marks_cap;
		if (!grow((void **)&srv->aoi_marks, &srv->aoi_marks_cap, words, sizeof *srv->aoi_marks)) return NULL;
		memset(srv->aoi_marks + old, 0, (size_t)(srv->aoi_marks_cap - old) * sizeof *srv->aoi_marks);
	}
	if (!grow((void **)&srv->aoi_hits, &srv->aoi_hits_cap, t->count + 1, sizeof *srv->aoi_hits) ||
	    !grow((void **)&srv->view_scratch, &srv->view_scratch_cap, t->count + 1, sizeof *srv->view_scratch))
		return NULL;
	uint32_t n = aoi_grid_query(&t->grid, s->area_min.x, s->area_min.y, s->area_max.x, s->area_max.y,
	                            srv->aoi_marks, srv->aoi_hits);
	for (uint32_t i = 0; i < n; i++) srv->view_scratch[i] = t->agents[srv->aoi_hits[i]];
	*count = n;
	return srv->view_scratch;
}

/* Whole-world subscribers whose baselines are the same world table (their last
 * snapshot went out at the same tick) get byte-identical snapshots: encode
 * once per tick and baseline, send to all of them. */
#define SHARED_ENCODINGS 8
typedef struct shared_encoding {
	bool keyframe;
	bool obstacles;
	bool prefixed;
	uint64_t baseline_tick; /* unused for keyframes */
	size_t offset, len;     /* in srv->snapshot_buf */
} shared_encoding;

static const shared_encoding *find_shared(const shared_encoding *enc, int n, bool keyframe, bool obstacles,
                                          bool prefixed, uint64_t baseline_tick) {
	for (int i = 0; i < n; i++)
		if (enc[i].keyframe == keyframe && enc[i].obstacles == obstacles && enc[i].prefixed == prefixed &&
		    (keyframe || enc[i].baseline_tick == baseline_tick))
			return &enc[i];
	return NULL;
}

/* baseline := the table (what crowd_snapshot_encode would have left there). */
static bool copy_table(crowd_view *v, const world_table *t) {
	return crowd_view_assign(v, t->agents, t->count);
}

void snapshots_send(server *srv) {
	uint64_t tick = srv->status.tick;
	shared_encoding shared[SHARED_ENCODINGS];
	int shared_count = 0;
	srv->snapshot_buf.len = 0;
	for (uint32_t i = 0; i < srv->session_count; i++) {
		session *s = srv->sessions[i];
		if (!s->subscribed || s->closing) continue;
		if ((tick - s->subscribed_tick) % s->divisor != 0) continue;
		if (session_pending_output(s) > srv->cfg->output_soft_limit) {
			/* The newest wins: drop this one, resend everything next time. */
			srv->metrics.snapshots_skipped++;
			s->need_keyframe = true;
			continue;
		}
		bool keyframe = s->need_keyframe || s->snapshots_since_keyframe + 1 >= srv->cfg->keyframe_interval;
		uint32_t obstacle_version = orca_world_obstacle_version(srv->world);
		bool with_obstacles = !s->obstacles_sent || s->obstacle_version_sent != obstacle_version;
		bool whole = !s->has_area && (keyframe || s->baseline_is_table);
		const shared_encoding *enc = whole ? find_shared(shared, shared_count, keyframe, with_obstacles,
		                                                 s->ops->length_prefixed, s->baseline_tick)
		                                   : NULL;
		size_t offset, len;
		if (enc && copy_table(&s->baseline, &srv->table)) {
			offset = enc->offset;
			len = enc->len;
			srv->metrics.snapshots_shared++;
		} else {
			uint32_t n = 0;
			const crowd_agent_q *agents = select_view(srv, s, &n);
			const crowd_obstacle_set *obstacles = with_obstacles ? current_obstacles(srv) : NULL;
			if (!agents || (with_obstacles && !obstacles)) {
				log_error("client %u: out of memory building its snapshot", s->client_id);
				continue;
			}
			crowd_snapshot_header h = {.tick = tick,
			                           .state_hash = srv->status.state_hash,
			                           .world_agent_count = srv->status.agents,
			                           .keyframe = keyframe};
			offset = srv->snapshot_buf.len;
			if (!crowd_snapshot_encode(&h, agents, n, &s->baseline, obstacles, s->ops->length_prefixed,
			                           &srv->snapshot_buf)) {
				log_error("client %u: snapshot encoding failed (%u agents)", s->client_id, n);
				s->need_keyframe = true;
				continue;
			}
			len = srv->snapshot_buf.len - offset;
			if (whole && shared_count < SHARED_ENCODINGS)
				shared[shared_count++] = (shared_encoding){
				    keyframe, with_obstacles, s->ops->length_prefixed, s->baseline_tick, offset, len};
		}
		s->need_keyframe = false;
		s->snapshots_since_keyframe = keyframe ? 0 : s->snapshots_since_keyframe + 1;
		s->baseline_is_table = !s->has_area;
		s->baseline_tick = tick;
		if (with_obstacles) {
			s->obstacles_sent = true;
			s->obstacle_version_sent = obstacle_version;
		}
		srv->metrics.snapshots_sent++;
		srv->metrics.keyframes_sent += keyframe;
		srv->metrics.snapshot_bytes += len;
		session_send_encoded(s, srv->snapshot_buf.data + offset, len);
	}
}
