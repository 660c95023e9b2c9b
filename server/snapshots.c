/* snapshots.c — after each tick, every subscriber that is due gets the agents
 * in its area, quantized and delta-coded against what it was sent last; a
 * subscriber whose output is above the soft limit skips (its next snapshot is
 * a keyframe). The world's agents are quantized once per tick (world_table),
 * and an area-of-interest grid over their positions answers the areas; area
 * snapshots are encoded on two threads, then sent by the loop thread. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "snapshots.h"

#include "log.h"
#include "room.h"
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

#define TABLE_CHUNK 4096u /* rows filled at a time (by either thread) */

/* What filling one chunk of rows found, so that finishing the table need not
 * read every row again: in the usual tick no agent is gone and ids ascend. */
struct world_table_chunk {
	bool gone;      /* a row's agent went between the id list and the row */
	bool ascending; /* ids ascend within the chunk */
	uint32_t first_id, last_id;
	aoi_bounds bounds; /* of the chunk's positions */
};

/* The table in three parts, so that two threads can fill it: room and the
 * ids; rows in chunks of TABLE_CHUNK (row i is ids[i]; a row whose agent is
 * gone gets id 0, which no agent has); then compaction, the id order and the
 * grid, which skip what the chunks say is not needed. */
static bool table_prepare(world_table *t, const orca_world *world, uint32_t *n_out) {
	uint32_t n = orca_world_agent_count(world);
	if (!grow((void **)&t->ids, &t->ids_cap, n + 1, sizeof *t->ids) ||
	    !grow((void **)&t->agents, &t->cap, n + 1, sizeof *t->agents) ||
	    !grow((void **)&t->x, &t->x_cap, n + 1, sizeof *t->x) || !grow((void **)&t->y, &t->y_cap, n + 1, sizeof *t->y) ||
	    !grow((void **)&t->chunks, &t->chunks_cap, (n + 1) / TABLE_CHUNK + 1, sizeof *t->chunks)) {
		t->count = 0;
		return false;
	}
	n = orca_world_agent_ids(world, t->ids, t->ids_cap);
	*n_out = n > t->ids_cap ? t->ids_cap : n;
	return true;
}

/* Chunk number `chunk`: rows [chunk * TABLE_CHUNK, that + TABLE_CHUNK) ∩ [0, n). */
static void table_fill(world_table *t, const orca_world *world, float precision, uint32_t chunk, uint32_t n) {
	enum { READ_BATCH = 256 }; /* rows read from the world at a time (on the stack) */
	uint32_t begin = chunk * TABLE_CHUNK, end = n - begin < TABLE_CHUNK ? n : begin + TABLE_CHUNK;
	struct world_table_chunk c = {.gone = false, .ascending = true, .bounds = aoi_bounds_empty()};
	uint32_t last = 0;
	orca_agent_motion m[READ_BATCH];
	for (uint32_t b = begin; b < end; b += READ_BATCH) {
		const uint32_t k = end - b < READ_BATCH ? end - b : READ_BATCH;
		orca_agents_read_motion(world, t->ids + b, k, m);
		for (uint32_t j = 0; j < k; j++) {
			const uint32_t i = b + j;
			const orca_agent_motion *st = &m[j];
			crowd_agent_q *q = &t->agents[i];
			if (st->id == 0) {
				q->id = 0;
				c.gone = true;
				continue;
			}
			if (st->id < last) c.ascending = false;
			if (last == 0) c.first_id = st->id;
			last = st->id;
			q->id = st->id;
			q->x = crowd_quantize(st->position.x, precision);
			q->y = crowd_quantize(st->position.y, precision);
			q->vx = crowd_quantize(st->velocity.x, precision);
			q->vy = crowd_quantize(st->velocity.y, precision);
			int32_t r = crowd_quantize(st->radius, precision);
			q->radius = r > 0 ? (uint32_t)r : 0;
			q->owner = st->user_data;
			t->x[i] = st->position.x;
			t->y[i] = st->position.y;
			aoi_bounds_add(&c.bounds, st->position.x, st->position.y);
		}
	}
	c.last_id = last;
	t->chunks[chunk] = c;
}

static uint32_t table_chunks(uint32_t n) {
	return (n + TABLE_CHUNK - 1) / TABLE_CHUNK;
}

static bool table_finish(world_table *t, uint32_t n) {
	/* The usual tick: every row there, ids ascending: the table is done but
	 * for the grid, whose bounds the chunks have. */
	aoi_bounds bounds = aoi_bounds_empty();
	bool whole = true;
	for (uint32_t c = 0; c < table_chunks(n) && whole; c++) {
		const struct world_table_chunk *k = &t->chunks[c];
		whole = !k->gone && k->ascending && (c == 0 || t->chunks[c - 1].last_id < k->first_id);
		aoi_bounds_merge(&bounds, &k->bounds);
	}
	if (whole) {
		t->count = n;
		if (!aoi_grid_build_in(&t->grid, t->x, t->y, n, &bounds)) {
			t->count = 0;
			return false;
		}
		return true;
	}
	bool sorted = true;
	uint32_t count = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (t->agents[i].id == 0) continue; /* gone between the id list and its row */
		if (count != i) {
			t->agents[count] = t->agents[i];
			t->x[count] = t->x[i];
			t->y[count] = t->y[i];
		}
		if (count > 0 && t->agents[count - 1].id > t->agents[count].id) sorted = false;
		count++;
	}
	t->count = count;
	if ((!sorted && !sort_by_id(t)) || !aoi_grid_build(&t->grid, t->x, t->y, count)) {
		t->count = 0;
		return false;
	}
	return true;
}

bool world_table_build(world_table *t, const orca_world *world, float precision) {
	uint32_t n;
	if (!table_prepare(t, world, &n)) return false;
	for (uint32_t c = 0; c < table_chunks(n); c++) table_fill(t, world, precision, c, n);
	return table_finish(t, n);
}

void world_table_free(world_table *t) {
	free(t->agents);
	free(t->x);
	free(t->y);
	aoi_grid_free(&t->grid);
	free(t->ids);
	free(t->sort_scratch);
	free(t->chunks);
	memset(t, 0, sizeof *t);
}

/* The whole obstacle set, rebuilt when the world's obstacle version moves. */
static const crowd_obstacle_set *current_obstacles(room *rm) {
	uint32_t version = orca_world_obstacle_version(rm->sim->world);
	if (rm->obstacle_set_valid && rm->obstacle_set_version == version) return &rm->obstacle_set;
	crowd_obstacle_set_clear(&rm->obstacle_set);
	uint32_t n = orca_world_obstacle_count(rm->sim->world);
	orca_obstacle_id *ids = malloc(sizeof *ids * (n + 1));
	if (!ids) return NULL;
	n = orca_world_obstacle_ids(rm->sim->world, ids, n + 1);
	orca_vec2 *v = NULL;
	float *xs = NULL, *ys = NULL;
	uint32_t vcap = 0;
	bool ok = true;
	for (uint32_t i = 0; i < n && ok; i++) {
		uint32_t count = 0;
		if (orca_obstacle_get(rm->sim->world, ids[i], v, vcap, &count) != ORCA_OK) continue;
		if (count > vcap) {
			free(v), free(xs), free(ys);
			vcap = count;
			v = malloc(sizeof *v * vcap);
			xs = malloc(sizeof *xs * vcap);
			ys = malloc(sizeof *ys * vcap);
			if (!v || !xs || !ys || orca_obstacle_get(rm->sim->world, ids[i], v, vcap, &count) != ORCA_OK) {
				ok = false;
				break;
			}
		}
		for (uint32_t k = 0; k < count; k++) {
			xs[k] = v[k].x;
			ys[k] = v[k].y;
		}
		ok = crowd_obstacle_set_add(&rm->obstacle_set, ids[i], xs, ys, count);
	}
	free(v), free(xs), free(ys), free(ids);
	if (!ok) {
		log_error("snapshots: out of memory building the obstacle set");
		return NULL;
	}
	rm->obstacle_set_version = version;
	rm->obstacle_set_valid = true;
	return &rm->obstacle_set;
}

/* What one encoding thread needs of its own: the area query's scratch and
 * the view it selects. */
typedef struct snapshot_encoder {
	crowd_agent_q *view;
	uint32_t view_cap;
	uint32_t *hits; /* table indices of the agents in an area */
	uint32_t hits_cap;
	uint64_t *marks; /* aoi_grid_query's bitmap, all zero between queries */
	uint32_t marks_cap;
	struct snapshot_encoder *next; /* in the free list of the pool's encoders */
} snapshot_encoder;

/* The agents in an area, from the table (ascending id). */
static const crowd_agent_q *select_area(snapshot_encoder *e, const world_table *t, orca_vec2 min, orca_vec2 max,
                                        uint32_t *count) {
	uint32_t words = aoi_grid_mark_words(&t->grid);
	if (words > e->marks_cap) {
		uint32_t old = e->marks_cap;
		if (!grow((void **)&e->marks, &e->marks_cap, words, sizeof *e->marks)) return NULL;
		memset(e->marks + old, 0, (size_t)(e->marks_cap - old) * sizeof *e->marks);
	}
	if (!grow((void **)&e->hits, &e->hits_cap, t->count + 1, sizeof *e->hits) ||
	    !grow((void **)&e->view, &e->view_cap, t->count + 1, sizeof *e->view))
		return NULL;
	uint32_t n = aoi_grid_query(&t->grid, min.x, min.y, max.x, max.y, e->marks, e->hits);
	for (uint32_t i = 0; i < n; i++) e->view[i] = t->agents[e->hits[i]];
	*count = n;
	return e->view;
}

static void encoder_free(snapshot_encoder *e) {
	free(e->view);
	free(e->hits);
	free(e->marks);
}

/* One due subscriber's snapshot of a tick. It is encoded from what the job
 * holds, never from the session (off the loop thread the loop may change or
 * free the session meanwhile): the area, and the session's baseline, lent to
 * the job until the loop sends the snapshot and gives it back. A whole-world
 * job's encoding also goes to the sessions whose baselines are the same
 * table (its followers). */
typedef struct snapshot_job {
	uint32_t client_id, epoch; /* found again by id when sent; an older epoch: subscribed anew meanwhile */
	bool has_area, keyframe, with_obstacles, prefixed;
	orca_vec2 area_min, area_max;
	crowd_view baseline; /* the session's while lent (swapped: no copy), else empty */
	bool selected, encoded;
	uint32_t agents;
} snapshot_job;

/* A whole-world subscriber sent its group's shared encoding (job `job`). */
typedef struct snapshot_follower {
	uint32_t job, client_id, epoch;
} snapshot_follower;

/* The fewest and the most jobs a pool thread claims at a time (with
 * overlap). The most bounds how long the next tick's step, queued on the
 * same thread pool, can wait behind a piece when every pool thread has one. */
#define SNAPSHOT_BATCH 8u
#define SNAPSHOT_PIECE_MAX 32u

/* One lane's piece of work on libuv's thread pool: it claims its jobs when it
 * runs (a range from the shared counter), so a lane that finishes early takes
 * more; the loop sends the range once the piece is done. */
typedef struct snapshot_batch {
	uv_work_t req;
	struct snapshot_workers *w;
	uint32_t quota;      /* jobs to claim, set by the loop when it queues the piece */
	uint32_t begin, end; /* the jobs claimed (set by the pool thread; empty if none were left) */
} snapshot_batch;

enum helper_state { HELPER_IDLE, HELPER_POSTED, HELPER_RUNNING };
enum helper_task { TASK_ENCODE, TASK_TABLE };

/* A tick's jobs are encoded in one of two ways, with the same bytes:
 * - snapshots_send: by the loop thread and one helper thread together,
 *   taking jobs from a shared counter; the loop thread alone sends (sockets
 *   and sessions stay its own): each of its own as soon as it is encoded, and
 *   each of the helper's as soon as the helper hands it over (`handed`, in the
 *   order encoded), so the last send follows the last encoding closely.
 * - snapshots_start (overlap): on libuv's thread pool in `workers` lanes,
 *   each piece of a lane claiming a range of jobs from the shared counter when
 *   it runs (large ranges first, then smaller, so the lanes end together and
 *   the loop has few pieces to wait for); the loop queues the lane's next
 *   piece, then sends the finished one, while the loop goes on and the next
 *   tick steps; the table is set aside (`stage_table`) so that the step fills
 *   another.
 * Every job encodes into its own buffer (kept across ticks). */
struct snapshot_workers {
	/* [0]: loop thread, [1]: helper; with overlap the first two of the pool's
	 * (each holds room for a whole table's view: not twice over) */
	snapshot_encoder encoders[2];
	snapshot_job *jobs;
	uint32_t job_count, job_cap;
	snapshot_follower *followers;
	uint32_t follower_count, follower_cap;
	crowd_buf *outs; /* outs[i]: job i's encoding */
	uint32_t out_cap;
	uint32_t *handed; /* job indices the helper has encoded, in order */
	uint32_t handed_cap;
	atomic_uint handed_count; /* written by the helper (under lock), read by the loop thread */
	atomic_uint next_job;
	room *rm;
	const world_table *table;
	const crowd_obstacle_set *obstacles;
	crowd_snapshot_header header;
	uint32_t obstacle_version; /* the world's, when the jobs were made */

	bool helper_started;
	uv_thread_t helper;
	uv_mutex_t lock;
	uv_cond_t wake, done;
	enum helper_state state;
	enum helper_task task;
	bool quit;
	/* TASK_TABLE: hash `table_world` into `hash`, then fill rows with the
	 * step's thread, TABLE_CHUNK at a time from next_chunk */
	const orca_world *table_world;
	world_table *table_out;
	float table_precision;
	uint32_t table_rows;
	bool table_rows_known; /* table_rows is set (under lock) */
	atomic_uint next_chunk;
	uint64_t hash;

	/* overlap (snapshots_start) */
	world_table stage_table; /* the rows being sent while the room's table is refilled */
	snapshot_batch *batches; /* one per lane, queued again as each piece is done */
	uint32_t lanes, batch_cap, batches_running;
	snapshot_encoder *free_encoders; /* the pool's, taken under lock */
	bool busy;                       /* a tick's snapshots are being encoded or sent */
	void (*on_done)(room *rm);
};

static void complete_job(room *rm, struct snapshot_workers *w, uint32_t i);

/* Either thread: job i's snapshot into outs[i]. */
static void encode_job(struct snapshot_workers *w, snapshot_encoder *e, uint32_t i) {
	snapshot_job *j = &w->jobs[i];
	crowd_buf *out = &w->outs[i];
	out->len = 0;
	const crowd_agent_q *agents = w->table->agents;
	j->agents = w->table->count;
	if (j->has_area) agents = e ? select_area(e, w->table, j->area_min, j->area_max, &j->agents) : NULL;
	j->selected = !j->has_area || agents != NULL;
	if (!j->selected) return;
	crowd_snapshot_header h = w->header;
	h.keyframe = j->keyframe;
	j->encoded = crowd_snapshot_encode(&h, agents, j->agents, &j->baseline, j->with_obstacles ? w->obstacles : NULL,
	                                   j->prefixed, out);
}

/* Loop thread: send every job the helper has handed over and it has not sent. */
static void send_handed(struct snapshot_workers *w, uint32_t *sent_count) {
	uint32_t n = atomic_load_explicit(&w->handed_count, memory_order_acquire);
	while (*sent_count < n) complete_job(w->rm, w, w->handed[(*sent_count)++]);
}

/* Either thread; the loop thread (encoder 0) sends each of its snapshots as
 * soon as it is encoded, and between two of its own the helper's that are
 * ready, so its writes overlap the helper's encoding. */
static void encode_jobs(struct snapshot_workers *w, int encoder, uint32_t *sent_count) {
	for (;;) {
		uint32_t i = atomic_fetch_add(&w->next_job, 1);
		if (i >= w->job_count) return;
		encode_job(w, &w->encoders[encoder], i);
		if (encoder == 0) {
			complete_job(w->rm, w, i);
			send_handed(w, sent_count);
		} else { /* hand it over: the job and its buffer are the loop thread's from here */
			uv_mutex_lock(&w->lock);
			uint32_t n = atomic_load_explicit(&w->handed_count, memory_order_relaxed);
			w->handed[n] = i;
			atomic_store_explicit(&w->handed_count, n + 1, memory_order_release);
			uv_cond_signal(&w->done);
			uv_mutex_unlock(&w->lock);
		}
	}
}

static void fill_rows(struct snapshot_workers *w) {
	for (;;) {
		uint32_t chunk = atomic_fetch_add(&w->next_chunk, 1);
		if (chunk >= table_chunks(w->table_rows)) return;
		table_fill(w->table_out, w->table_world, w->table_precision, chunk, w->table_rows);
	}
}

/* One lane of the fill on the world's pool (idle between steps). */
static void fill_lane(void *ctx, uint32_t begin, uint32_t end, int worker) {
	(void)begin, (void)end, (void)worker;
	fill_rows(ctx);
}

static void helper_main(void *arg) {
	struct snapshot_workers *w = arg;
	uv_mutex_lock(&w->lock);
	for (;;) {
		while (!w->quit && w->state != HELPER_POSTED) uv_cond_wait(&w->wake, &w->lock);
		if (w->quit) break;
		w->state = HELPER_RUNNING;
		uv_mutex_unlock(&w->lock);
		if (w->task == TASK_TABLE) {
			w->hash = orca_world_state_hash(w->table_world);
			uv_mutex_lock(&w->lock); /* the rows to fill are known once the step's thread has the ids */
			while (!w->table_rows_known) uv_cond_wait(&w->wake, &w->lock);
			uv_mutex_unlock(&w->lock);
			fill_rows(w);
		} else
			encode_jobs(w, 1, NULL);
		uv_mutex_lock(&w->lock);
		w->state = HELPER_IDLE;
		uv_cond_signal(&w->done);
	}
	uv_mutex_unlock(&w->lock);
}

/* Room for `need` jobs and their buffers (each keeps its capacity across ticks). */
static bool grow_jobs(struct snapshot_workers *w, uint32_t need) {
	uint32_t old = w->job_cap, old_outs = w->out_cap;
	if (!grow((void **)&w->jobs, &w->job_cap, need, sizeof *w->jobs)) return false;
	for (uint32_t i = old; i < w->job_cap; i++) crowd_view_init(&w->jobs[i].baseline);
	if (!grow((void **)&w->outs, &w->out_cap, need, sizeof *w->outs)) return false;
	for (uint32_t i = old_outs; i < w->out_cap; i++) crowd_buf_init(&w->outs[i]);
	return grow((void **)&w->handed, &w->handed_cap, need, sizeof *w->handed);
}

static struct snapshot_workers *workers_get(room *rm) {
	if (rm->snapshot_workers) return rm->snapshot_workers;
	struct snapshot_workers *w = calloc(1, sizeof *w);
	if (!w) return NULL;
	atomic_init(&w->handed_count, 0);
	atomic_init(&w->next_job, 0);
	atomic_init(&w->next_chunk, 0);
	if (uv_mutex_init(&w->lock) != 0) {
		free(w);
		return NULL;
	}
	if (uv_cond_init(&w->wake) != 0 || uv_cond_init(&w->done) != 0) {
		log_error("snapshots: cannot create condition variables");
		abort();
	}
	w->encoders[0].next = &w->encoders[1];
	w->free_encoders = &w->encoders[0];
	rm->snapshot_workers = w;
	return w;
}

/* The helper is started the first time there is work to share. */
static bool helper_available(room *rm, struct snapshot_workers *w) {
	if (rm->cfg.workers < 2) return false;
	if (w->helper_started) return true;
	int rc = uv_thread_create(&w->helper, helper_main, w);
	if (rc != 0) {
		log_warn("snapshots: no helper thread (%s); encoding on the loop thread", uv_strerror(rc));
		return false;
	}
	w->helper_started = true;
	return true;
}

/* Encode and send every job: with the helper when there are two or more. */
static void encode_and_send_all(room *rm, struct snapshot_workers *w) {
	atomic_store(&w->next_job, 0);
	atomic_store(&w->handed_count, 0);
	uint32_t sent_count = 0; /* of the helper's */
	bool shared = w->job_count >= 2 && helper_available(rm, w);
	if (shared) {
		uv_mutex_lock(&w->lock);
		w->task = TASK_ENCODE;
		w->state = HELPER_POSTED;
		uv_cond_signal(&w->wake);
		uv_mutex_unlock(&w->lock);
	}
	encode_jobs(w, 0, &sent_count);
	if (!shared) return;
	for (;;) { /* the helper's last ones, each as it is handed over */
		send_handed(w, &sent_count);
		uv_mutex_lock(&w->lock);
		if (w->state == HELPER_POSTED) w->state = HELPER_IDLE; /* it never woke: every job is done */
		while (w->state == HELPER_RUNNING && atomic_load(&w->handed_count) == sent_count)
			uv_cond_wait(&w->done, &w->lock);
		bool finished = w->state != HELPER_RUNNING;
		uv_mutex_unlock(&w->lock);
		if (finished) break;
	}
	send_handed(w, &sent_count);
}

/* On the step's thread after the step: the table, with the helper (when
 * there is one) computing the state hash (from the moment the step is done:
 * it is the longest serial part) and then filling rows beside the step's
 * thread and, with three or more workers, the world's pool. */
bool snapshots_build_table(room *rm, uint64_t *state_hash) {
	struct snapshot_workers *w = workers_get(rm);
	bool helper = w && helper_available(rm, w);
	if (!helper) {
		*state_hash = orca_world_state_hash(rm->sim->world);
		return world_table_build(&rm->table, rm->sim->world, (float)rm->cfg.precision);
	}
	uv_mutex_lock(&w->lock);
	w->task = TASK_TABLE;
	w->table_world = rm->sim->world;
	w->table_out = &rm->table;
	w->table_precision = (float)rm->cfg.precision;
	w->table_rows_known = false;
	atomic_store(&w->next_chunk, 0);
	w->state = HELPER_POSTED;
	uv_cond_signal(&w->wake);
	uv_mutex_unlock(&w->lock);
	uint32_t n = 0;
	bool ok = table_prepare(&rm->table, rm->sim->world, &n);
	uv_mutex_lock(&w->lock);
	w->table_rows = ok ? n : 0;
	w->table_rows_known = true;
	uv_cond_signal(&w->wake);
	uv_mutex_unlock(&w->lock);
	/* The rows in chunks from one counter, so any thread may fill any chunk:
	 * the step's thread and the world's workers but one, which the helper's
	 * hash keeps (the longest serial part) before it fills too. */
	const int lanes = orca_world_worker_count(rm->sim->world) - 1;
	if (ok && lanes > 1)
		orca_world_parallel_for(rm->sim->world, fill_lane, w, (uint32_t)lanes, 1);
	else if (ok)
		fill_rows(w);
	uv_mutex_lock(&w->lock);
	bool started = w->state != HELPER_POSTED;
	if (!started) w->state = HELPER_IDLE; /* it never woke: every row is done; hash here */
	while (w->state == HELPER_RUNNING) uv_cond_wait(&w->done, &w->lock);
	uv_mutex_unlock(&w->lock);
	*state_hash = started ? w->hash : orca_world_state_hash(rm->sim->world);
	return ok && table_finish(&rm->table, n);
}

bool snapshots_busy(const room *rm) {
	return rm->snapshot_workers && rm->snapshot_workers->busy;
}

void snapshots_free(room *rm) {
	struct snapshot_workers *w = rm->snapshot_workers;
	if (!w) return;
	if (w->helper_started) {
		uv_mutex_lock(&w->lock);
		w->quit = true;
		uv_cond_signal(&w->wake);
		uv_mutex_unlock(&w->lock);
		uv_thread_join(&w->helper);
	}
	uv_cond_destroy(&w->wake);
	uv_cond_destroy(&w->done);
	uv_mutex_destroy(&w->lock);
	while (w->free_encoders) {
		snapshot_encoder *e = w->free_encoders;
		w->free_encoders = e->next;
		if (e == &w->encoders[0] || e == &w->encoders[1]) continue;
		encoder_free(e);
		free(e);
	}
	for (int i = 0; i < 2; i++) encoder_free(&w->encoders[i]);
	for (uint32_t i = 0; i < w->out_cap; i++) crowd_buf_free(&w->outs[i]);
	for (uint32_t i = 0; i < w->job_cap; i++) crowd_view_free(&w->jobs[i].baseline);
	world_table_free(&w->stage_table);
	free(w->outs);
	free(w->handed);
	free(w->jobs);
	free(w->followers);
	free(w->batches);
	free(w);
	rm->snapshot_workers = NULL;
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
	uint32_t job;           /* whose encoding */
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

static void swap_views(crowd_view *a, crowd_view *b) {
	crowd_view t = *a;
	*a = *b;
	*b = t;
}

/* The bookkeeping of a snapshot that goes out, and the send. */
static void sent(room *rm, const struct snapshot_workers *w, session *s, bool keyframe, bool with_obstacles,
                 const uint8_t *data, size_t len) {
	s->need_keyframe = false;
	s->snapshots_since_keyframe = keyframe ? 0 : s->snapshots_since_keyframe + 1;
	s->baseline_is_table = !s->has_area;
	s->baseline_tick = w->header.tick;
	if (with_obstacles) {
		s->obstacles_sent = true;
		s->obstacle_version_sent = w->obstacle_version;
	}
	rm->metrics->snapshots_sent++;
	rm->metrics->keyframes_sent += keyframe;
	rm->metrics->snapshot_bytes += len;
	session_send_encoded(s, data, len);
}

/* The session a job was made for, if it is still subscribed as it was then. */
static session *job_session(room *rm, uint32_t client_id, uint32_t epoch) {
	session *s = session_find(&rm->srv->host, client_id);
	return s && s->world == rm && s->subscription_epoch == epoch && s->subscribed && !s->closing ? s : NULL;
}

/* The due sessions' jobs of this tick (their baselines lent to the jobs),
 * from `table`; 0 jobs: nothing to encode. */
static void make_jobs(room *rm, struct snapshot_workers *w, const world_table *table) {
	uint64_t tick = rm->status->tick;
	shared_encoding shared[SHARED_ENCODINGS];
	int shared_count = 0;
	w->job_count = 0;
	w->follower_count = 0;
	w->rm = rm;
	w->table = table;
	w->header = (crowd_snapshot_header){
	    .tick = tick, .state_hash = rm->status->state_hash, .world_agent_count = rm->status->agents};
	w->obstacle_version = orca_world_obstacle_version(rm->sim->world);
	bool obstacles_needed = false;
	for (uint32_t i = 0; i < rm->members.count; i++) { /* this world's subscribers only */
		session *s = rm->members.items[i];
		if (!s->subscribed || s->closing) continue;
		if ((tick - s->subscribed_tick) % s->divisor != 0) continue;
		if (session_pending_output(s) > rm->cfg.output_soft_limit) {
			/* The newest wins: drop this one, resend everything next time. */
			rm->metrics->snapshots_skipped++;
			s->need_keyframe = true;
			continue;
		}
		bool keyframe = s->need_keyframe || s->snapshots_since_keyframe + 1 >= rm->cfg.keyframe_interval;
		bool with_obstacles = !s->obstacles_sent || s->obstacle_version_sent != w->obstacle_version;
		if (with_obstacles && !current_obstacles(rm)) {
			log_error("client %u: out of memory building its snapshot", s->client_id);
			continue;
		}
		const bool prefixed = s->ops->length_prefixed;
		const bool whole = !s->has_area && (keyframe || s->baseline_is_table);
		const shared_encoding *enc =
		    whole ? find_shared(shared, shared_count, keyframe, with_obstacles, prefixed, s->baseline_tick)
		          : NULL;
		if (enc) {
			if (!grow((void **)&w->followers, &w->follower_cap, w->follower_count + 1,
			          sizeof *w->followers)) {
				log_error("client %u: out of memory building its snapshot", s->client_id);
				continue;
			}
			w->followers[w->follower_count++] = (snapshot_follower){
			    .job = enc->job, .client_id = s->client_id, .epoch = s->subscription_epoch};
			continue;
		}
		if (!grow_jobs(w, w->job_count + 1)) {
			log_error("client %u: out of memory building its snapshot", s->client_id);
			continue;
		}
		snapshot_job *j = &w->jobs[w->job_count];
		crowd_view_clear(&j->baseline);
		swap_views(&j->baseline, &s->baseline);
		j->client_id = s->client_id;
		j->epoch = s->subscription_epoch;
		j->has_area = s->has_area;
		j->area_min = s->area_min;
		j->area_max = s->area_max;
		j->keyframe = keyframe;
		j->with_obstacles = with_obstacles;
		j->prefixed = prefixed;
		j->selected = j->encoded = false;
		j->agents = 0;
		obstacles_needed |= with_obstacles;
		if (whole && shared_count < SHARED_ENCODINGS)
			shared[shared_count++] =
			    (shared_encoding){keyframe, with_obstacles, prefixed, s->baseline_tick, w->job_count};
		w->job_count++;
	}
	w->obstacles = obstacles_needed ? current_obstacles(rm) : NULL;
}

/* Loop thread: job i's snapshot out (or why not), its baseline back to its
 * session, and its followers'. */
static void complete_job(room *rm, struct snapshot_workers *w, uint32_t i) {
	snapshot_job *j = &w->jobs[i];
	const crowd_buf *out = &w->outs[i];
	session *s = job_session(rm, j->client_id, j->epoch);
	if (s) {
		swap_views(&s->baseline, &j->baseline); /* encoded: what it was sent; else as it was */
		if (!j->selected)
			log_error("client %u: out of memory building its snapshot", s->client_id);
		else if (!j->encoded) {
			log_error("client %u: snapshot encoding failed (%u agents)", s->client_id, j->agents);
			s->need_keyframe = true;
		} else
			sent(rm, w, s, j->keyframe, j->with_obstacles, out->data, out->len);
	}
	crowd_view_clear(&j->baseline);
	if (j->has_area) return;
	for (uint32_t k = 0; k < w->follower_count; k++) {
		const snapshot_follower *f = &w->followers[k];
		if (f->job != i) continue;
		session *fs = job_session(rm, f->client_id, f->epoch);
		if (!fs) continue;
		if (!j->encoded || !copy_table(&fs->baseline, w->table)) {
			fs->need_keyframe = true;
			continue;
		}
		rm->metrics->snapshots_shared++;
		sent(rm, w, fs, j->keyframe, j->with_obstacles, out->data, out->len);
	}
}

void snapshots_send(room *rm) {
	struct snapshot_workers *w = workers_get(rm);
	if (!w) {
		log_error("snapshots: out of memory");
		return;
	}
	make_jobs(rm, w, &rm->table);
	if (w->job_count) encode_and_send_all(rm, w);
}

/* ------------------------------------------------------------------ overlap */

static snapshot_encoder *encoder_take(struct snapshot_workers *w) {
	uv_mutex_lock(&w->lock);
	snapshot_encoder *e = w->free_encoders;
	if (e) w->free_encoders = e->next;
	uv_mutex_unlock(&w->lock);
	return e ? e : calloc(1, sizeof *e);
}

static void encoder_give(struct snapshot_workers *w, snapshot_encoder *e) {
	if (!e) return;
	uv_mutex_lock(&w->lock);
	e->next = w->free_encoders;
	w->free_encoders = e;
	uv_mutex_unlock(&w->lock);
}

/* Jobs not claimed yet (next_job runs past job_count once every job is). */
static uint32_t jobs_unclaimed(struct snapshot_workers *w) {
	uint32_t claimed = atomic_load_explicit(&w->next_job, memory_order_relaxed);
	return claimed < w->job_count ? w->job_count - claimed : 0;
}

/* A pool thread: claim a range of jobs and encode it (without an encoder,
 * its area jobs fail as out of memory). */
static void batch_work(uv_work_t *req) {
	snapshot_batch *b = req->data;
	struct snapshot_workers *w = b->w;
	uint32_t begin = atomic_fetch_add(&w->next_job, b->quota);
	b->begin = begin < w->job_count ? begin : w->job_count;
	b->end = w->job_count - b->begin > b->quota ? b->begin + b->quota : w->job_count;
	if (b->begin == b->end) return;
	snapshot_encoder *e = encoder_take(w);
	for (uint32_t i = b->begin; i < b->end; i++) encode_job(w, e, i);
	encoder_give(w, e);
}

static void batch_done(uv_work_t *req, int status);

/* Loop thread: the lane's next piece, while jobs are left to claim; its
 * quota a share of what is left (half of an even split between the lanes,
 * from SNAPSHOT_BATCH to SNAPSHOT_PIECE_MAX), so pieces shrink as the work
 * runs out. False: nothing left, or the pool refused it. */
static bool queue_batch(struct snapshot_workers *w, snapshot_batch *b) {
	const uint32_t left = jobs_unclaimed(w);
	if (left == 0) return false;
	const uint32_t share = (left + 2 * w->lanes - 1) / (2 * w->lanes);
	b->quota = share < SNAPSHOT_BATCH ? SNAPSHOT_BATCH : share > SNAPSHOT_PIECE_MAX ? SNAPSHOT_PIECE_MAX : share;
	b->begin = b->end = 0; /* a piece cancelled before it ran claimed nothing */
	if (uv_queue_work(w->rm->srv->loop, &b->req, batch_work, batch_done) != 0) return false;
	w->batches_running++;
	return true;
}

/* Loop thread, once no piece is queued: the jobs no pool thread claimed (the
 * pool refused or cancelled the pieces; should not happen), encoded here
 * rather than not sent. */
static void finish_unclaimed(struct snapshot_workers *w) {
	if (jobs_unclaimed(w) == 0) return;
	snapshot_encoder *e = encoder_take(w);
	for (uint32_t i; (i = atomic_fetch_add(&w->next_job, 1)) < w->job_count;) {
		encode_job(w, e, i);
		complete_job(w->rm, w, i);
	}
	encoder_give(w, e);
}

/* Loop thread: a piece is encoded: queue its lane's next piece first (the
 * pool thread goes on while these are sent), send it, and when no piece is
 * left, the tick's snapshots are done. */
static void batch_done(uv_work_t *req, int status) {
	snapshot_batch *b = req->data;
	struct snapshot_workers *w = b->w;
	const uint32_t begin = b->begin, end = b->end; /* b is queued again below */
	w->batches_running--;
	if (status == 0) queue_batch(w, b);
	for (uint32_t i = begin; i < end; i++) complete_job(w->rm, w, i);
	if (w->batches_running > 0) return;
	finish_unclaimed(w);
	w->busy = false;
	w->on_done(w->rm);
}

/* The rows of a table (what snapshots read), swapped with another's; the
 * scratch of building one stays with the room's table. */
static void swap_rows(world_table *a, world_table *b) {
	world_table t = *a;
	a->agents = b->agents, a->count = b->count, a->cap = b->cap;
	a->x = b->x, a->y = b->y, a->x_cap = b->x_cap, a->y_cap = b->y_cap;
	a->grid = b->grid;
	b->agents = t.agents, b->count = t.count, b->cap = t.cap;
	b->x = t.x, b->y = t.y, b->x_cap = t.x_cap, b->y_cap = t.y_cap;
	b->grid = t.grid;
}

bool snapshots_start(room *rm, void (*done)(room *rm)) {
	struct snapshot_workers *w = workers_get(rm);
	if (!w) {
		log_error("snapshots: out of memory");
		return false;
	}
	if (w->busy) return false; /* the caller waits for the last tick's first */
	swap_rows(&w->stage_table, &rm->table);
	make_jobs(rm, w, &w->stage_table);
	if (w->job_count == 0) return false;
	const uint32_t at_once = rm->cfg.workers > 1 ? rm->cfg.workers : 1;
	w->lanes = at_once < w->job_count ? at_once : w->job_count;
	if (!grow((void **)&w->batches, &w->batch_cap, w->lanes, sizeof *w->batches)) {
		encode_and_send_all(rm, w); /* no room to queue them: now, on this thread */
		return false;
	}
	atomic_store(&w->next_job, 0);
	w->batches_running = 0;
	w->busy = true;
	w->on_done = done;
	for (uint32_t k = 0; k < w->lanes; k++) {
		snapshot_batch *b = &w->batches[k];
		b->req.data = b;
		b->w = w;
		if (!queue_batch(w, b)) break;
	}
	if (w->batches_running > 0) return true;
	finish_unclaimed(w); /* the pool refused them all */
	w->busy = false;
	return false;
}
