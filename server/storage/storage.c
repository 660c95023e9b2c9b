/* storage.c — the journal, checkpoints, recovery and resume identities of
 * --data-dir (see storage.h for the contract, proto/storage.proto for the
 * files). The loop thread fills batches; the writer thread owns the files. */
#include "storage.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <pb_encode.h>
#include <uv.h>

#include "log.h"
#include "record.h"
#include "replay.h"

#define RETRY_NS 200000000ull /* a failing disk is tried again this often */

typedef struct pending_reply {
	uint64_t seq; /* answered once this batch is durable */
	uint32_t client_id, request_id;
	bool ok;
	int code;
	uint32_t index;
	char message[129];
	uint32_t *ids;
	uint32_t id_count;
} pending_reply;

typedef enum job_kind { JOB_BATCH, JOB_CHECKPOINT } job_kind;

typedef struct job {
	struct job *next;
	struct storage *owner; /* checkpoint: for its thread */
	job_kind kind;
	uint64_t seq;   /* batch */
	crowd_buf bytes; /* batch: framed records */
	/* checkpoint: copied at the tick boundary by the loop thread */
	sim_image image; /* the sim's bytes, its tick and next client id */
	uint64_t hash;
	crowd_storage_v1_SimConfig config;
	replay_identity *clients;
	uint32_t client_count;
} job;

struct storage {
	storage_hooks hooks; /* how replies reach clients, and a held tick goes on */
	const server_config *cfg;
	uint64_t tick; /* ticks completed (the journal's records belong to tick + 1) */
	char dir[1024];
	bool recording; /* false with --start-at-tick: nothing is written */
	int mode;       /* config_fsync_mode */

	/* ---- loop thread */
	crowd_buf batch;
	uint64_t next_seq; /* the next submitted batch's number (from 1) */
	uint64_t tick_seq; /* the batch holding this tick's commands */
	bool available_seen;
	pending_reply *replies;
	uint32_t reply_count, reply_cap;
	bool held; /* a tick waits for its commands to be durable: hooks.resume once they are */
	replay_identity *clients;
	uint32_t client_count, client_cap;
	bool checkpoint_in_flight;
	uint64_t checkpoint_ns; /* when the newest checkpoint was copied (--checkpoint-seconds counts from it) */
	uint32_t quiet_ticks; /* after a recovery: ticks that apply no new command */
	double copy_seconds;
	uint64_t refused;
	uint64_t replicated_seq; /* --min-followers-ack: batches held by enough followers */
	uint64_t durable_told;   /* the last durable seq hooks.durable was given */
	char history[33];        /* the data dir's history id */
	uv_async_t async;
	bool async_open;

	/* ---- shared, under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	job *jobs_head, *jobs_tail;
	bool quit;
	uint64_t durable_seq;
	bool failing;
	bool checkpoint_finished;
	storage_stats stats;
	char error_text[160];

	/* ---- writer thread */
	pthread_t thread;
	bool thread_started;
	pthread_t checkpoint_thread; /* one checkpoint at a time, joined by the writer */
	bool checkpoint_thread_started;
	pthread_t sync_thread; /* everysec: fdatasync of the current segment once a second */
	bool sync_thread_started;
	pthread_cond_t sync_cv; /* under mu, with quit */
	int fd;
	uint64_t segment_tick;
	off_t synced_offset;   /* the segment holds these bytes for sure */
	crowd_buf pending;     /* bytes after synced_offset: written or not yet */
	size_t pending_written;
	uint64_t pending_seq;  /* the last batch in pending */
	uint64_t synced_seq;
	uint64_t last_sync_ns;
};

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void path_of(char *out, size_t n, const char *dir, const char *prefix, uint64_t tick, const char *suffix) {
	snprintf(out, n, "%s/%s%020" PRIu64 "%s", dir, prefix, tick, suffix);
}

/* ------------------------------------------------------------------ records */

static void sim_config_of(const server_config *cfg, bool demo, crowd_storage_v1_SimConfig *out) {
	memset(out, 0, sizeof *out);
	out->tick_rate_hz = cfg->tick_rate_hz;
	out->world_min_x = cfg->world_min_x;
	out->world_min_y = cfg->world_min_y;
	out->world_max_x = cfg->world_max_x;
	out->world_max_y = cfg->world_max_y;
	out->agent_radius = cfg->agent_radius;
	out->agent_max_speed = cfg->agent_max_speed;
	out->agent_pref_speed = cfg->agent_pref_speed;
	out->agent_neighbor_dist = cfg->agent_neighbor_dist;
	out->agent_max_neighbors = cfg->agent_max_neighbors;
	out->agent_time_horizon = cfg->agent_time_horizon;
	out->agent_time_horizon_obst = cfg->agent_time_horizon_obst;
	out->agent_weight = cfg->agent_weight;
	out->max_agents = cfg->max_agents;
	out->max_agents_per_connection = cfg->max_agents_per_connection;
	out->max_obstacles = cfg->max_obstacles;
	out->demo = demo;
	out->demo_agents = cfg->demo_agents;
	out->navigation = cfg->nav_enabled;
	out->nav_agent_radius = cfg->nav_agent_radius;
	out->nav_cell_size = cfg->nav_cell_size;
	out->nav_tile_budget = cfg->nav_tile_budget;
	out->nav_path_budget = cfg->nav_path_budget;
	out->nav_stuck_seconds = cfg->nav_stuck_seconds;
	out->nav_arrival_distance = cfg->nav_arrival_distance;
	out->map = (uint32_t)cfg->map;
	out->city_block = cfg->city_block;
	out->city_street = cfg->city_street;
}

typedef struct clients_arg {
	const replay_identity *items;
	uint32_t count;
} clients_arg;

static bool encode_clients_cb(pb_ostream_t *stream, const pb_field_t *field, void *const *arg) {
	const clients_arg *c = *arg;
	for (uint32_t i = 0; i < c->count; i++) {
		crowd_storage_v1_ClientIdentity id = crowd_storage_v1_ClientIdentity_init_zero;
		id.client_id = c->items[i].client_id;
		id.role = c->items[i].role;
		memcpy(id.resume_key, c->items[i].key, sizeof id.resume_key);
		if (!pb_encode_tag_for_field(stream, field) ||
		    !pb_encode_submessage(stream, crowd_storage_v1_ClientIdentity_fields, &id))
			return false;
	}
	return true;
}

/* One checkpoint file's bytes. */
static bool encode_checkpoint(const job *j, crowd_buf *out) {
	crowd_storage_v1_Record rec = crowd_storage_v1_Record_init_zero;
	rec.has_checkpoint = true;
	crowd_storage_v1_Checkpoint *c = &rec.checkpoint;
	c->format = STORAGE_FORMAT;
	c->tick = j->image.tick;
	c->state_hash = j->hash;
	c->next_client_id = j->image.next_client_id;
	c->has_config = true;
	c->config = j->config;
	const sim_image *img = &j->image;
	record_bytes world = {img->world, img->world_len}, demo = {img->demo, img->demo_len},
	             nav = {img->nav, img->nav_len};
	c->nav.funcs.encode = record_encode_bytes;
	c->nav.arg = &nav;
	clients_arg clients = {j->clients, j->client_count};
	c->world.funcs.encode = record_encode_bytes;
	c->world.arg = &world;
	c->demo.funcs.encode = record_encode_bytes;
	c->demo.arg = &demo;
	c->clients.funcs.encode = encode_clients_cb;
	c->clients.arg = &clients;
	return record_append(out, &rec);
}

static bool encode_segment_header(uint64_t tick, crowd_buf *out) {
	crowd_storage_v1_Record rec = crowd_storage_v1_Record_init_zero;
	rec.has_segment = true;
	rec.segment.format = STORAGE_FORMAT;
	rec.segment.start_tick = tick;
	return record_append(out, &rec);
}

static void job_free(job *j) {
	if (!j) return;
	crowd_buf_free(&j->bytes);
	sim_image_free(&j->image);
	free(j->clients);
	free(j);
}

/* ------------------------------------------------------------------ writer thread */

static bool fail_hook(const storage *st) {
	return st->cfg->storage_fail_file[0] && access(st->cfg->storage_fail_file, F_OK) == 0;
}

static void writer_error(storage *st, const char *what, int err) {
	pthread_mutex_lock(&st->mu);
	if (!st->failing)
		snprintf(st->error_text, sizeof st->error_text, "%s: %s", what, strerror(err));
	st->failing = true;
	st->stats.write_errors++;
	pthread_mutex_unlock(&st->mu);
}

static bool failing_now(storage *st) {
	pthread_mutex_lock(&st->mu);
	bool f = st->failing;
	pthread_mutex_unlock(&st->mu);
	return f;
}

/* Write every pending byte not written yet. After a failure everything
 * after the last fsync is written again: what the kernel kept is unknown. */
static bool writer_write(storage *st) {
	if (st->pending.len == st->pending_written) return true;
	if (failing_now(st)) {
		if (ftruncate(st->fd, st->synced_offset) != 0 && !fail_hook(st)) {
			writer_error(st, "truncate journal", errno);
			return false;
		}
		st->pending_written = 0;
	}
	if (fail_hook(st)) {
		writer_error(st, "write journal", EIO);
		return false;
	}
	while (st->pending_written < st->pending.len) {
		ssize_t w = pwrite(st->fd, st->pending.data + st->pending_written, st->pending.len - st->pending_written,
		                   st->synced_offset + (off_t)st->pending_written);
		if (w < 0 && errno == EINTR) continue;
		if (w <= 0) {
			writer_error(st, "write journal", w < 0 ? errno : ENOSPC);
			return false;
		}
		st->pending_written += (size_t)w;
		pthread_mutex_lock(&st->mu);
		st->stats.journal_bytes += (uint64_t)w;
		pthread_mutex_unlock(&st->mu);
	}
	return true;
}

/* Make what was written durable, as the mode says (force: now, whatever it says). */
static bool writer_sync(storage *st, bool force) {
	if (st->pending.len == 0 || st->pending_written != st->pending.len) return st->pending.len == 0;
	uint64_t now = now_ns();
	bool want = force || st->mode == CONFIG_FSYNC_ALWAYS;
	if (st->mode != CONFIG_FSYNC_ALWAYS && !force) {
		/* no: the kernel decides; everysec: the sync thread fsyncs once a second, never
		 * this thread (a slow fsync here would hold back the writes, and a kill would
		 * lose what waited) -- written counts as done */
	} else if (!want) {
		return true;
	} else {
		if (fail_hook(st)) {
			writer_error(st, "fsync journal", EIO);
			return false;
		}
		if (fdatasync(st->fd) != 0) {
			writer_error(st, "fsync journal", errno);
			return false;
		}
		st->last_sync_ns = now;
		pthread_mutex_lock(&st->mu);
		st->stats.fsyncs++;
		pthread_mutex_unlock(&st->mu);
	}
	st->synced_offset += (off_t)st->pending.len;
	st->pending.len = 0;
	st->pending_written = 0;
	st->synced_seq = st->pending_seq;
	return true;
}

/* Delete checkpoints beyond the newest `keep` and segments older than the oldest kept one. */
static void prune(const char *dir, uint32_t keep) {
	uint32_t nc = 0, nj = 0;
	uint64_t *cks = dir_list_ticks(dir, "checkpoint-", ".ckpt", &nc);
	uint64_t *segs = dir_list_ticks(dir, "journal-", ".log", &nj);
	if (nc > keep) {
		char path[1200];
		const uint64_t oldest_kept = cks[nc - keep];
		for (uint32_t i = 0; i < nc - keep; i++) {
			path_of(path, sizeof path, dir, "checkpoint-", cks[i], ".ckpt");
			unlink(path);
		}
		for (uint32_t i = 0; i < nj; i++)
			if (segs[i] < oldest_kept) {
				path_of(path, sizeof path, dir, "journal-", segs[i], ".log");
				unlink(path);
			}
	}
	free(cks);
	free(segs);
}

/* Open a new segment for the ticks after `tick` with its header (and any
 * records given), durable before it is used. Returns the fd or -errno. */
static int segment_create(const char *dir, uint64_t tick, const void *records, size_t len, off_t *size) {
	crowd_buf b;
	crowd_buf_init(&b);
	if (!encode_segment_header(tick, &b) || (len && !crowd_buf_append(&b, records, len))) {
		crowd_buf_free(&b);
		return -ENOMEM;
	}
	char path[1200];
	path_of(path, sizeof path, dir, "journal-", tick, ".log");
	int rc = file_write_atomic(dir, path, b.data, b.len);
	*size = (off_t)b.len;
	crowd_buf_free(&b);
	if (rc != 0) return rc;
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* The checkpoint thread: encode and write one checkpoint while the writer
 * goes on with the journal (a slow disk must not hold back the journal: with
 * everysec a kill would lose every acknowledged request since the checkpoint
 * began, with always the Acks and snapshots would wait). */
static void *checkpoint_main(void *arg) {
	job *j = arg;
	storage *st = j->owner;
	uint64_t t0 = now_ns();
	crowd_buf b;
	crowd_buf_init(&b);
	char path[1200];
	path_of(path, sizeof path, st->dir, "checkpoint-", j->image.tick, ".ckpt");
	int rc = fail_hook(st) ? -EIO : encode_checkpoint(j, &b) ? 0 : -ENOMEM;
	if (rc == 0) rc = file_write_atomic(st->dir, path, b.data, b.len);
	size_t size = b.len;
	crowd_buf_free(&b);
	if (rc != 0) {
		/* its segment stays: it continues the previous one, recovery reads through both */
		log_warn("storage: checkpoint %s: %s; recovery starts from the previous one", path, strerror(-rc));
	} else {
		prune(st->dir, st->cfg->keep_checkpoints);
		log_debug("storage: checkpoint of tick %" PRIu64 ": %zu bytes in %.3f s", j->image.tick, size,
		          (double)(now_ns() - t0) * 1e-9);
	}
	pthread_mutex_lock(&st->mu);
	if (rc != 0) {
		st->stats.write_errors++;
	} else {
		st->stats.checkpoints++;
		st->stats.checkpoint_bytes = size;
		st->stats.checkpoint_seconds = (double)(now_ns() - t0) * 1e-9;
	}
	st->checkpoint_finished = true;
	pthread_mutex_unlock(&st->mu);
	uv_async_send(&st->async);
	job_free(j);
	return NULL;
}

/* Rotate the journal at the checkpoint's tick, then hand the checkpoint to its
 * own thread. The new segment exists before its checkpoint: a crash between
 * them leaves the previous checkpoint, whose segment chains into the new one.
 * True when the job was handed over (the thread frees it). */
static bool writer_checkpoint(storage *st, job *j) {
	/* the journal up to this tick first: the new segment continues exactly here */
	if (!writer_write(st) || !writer_sync(st, true)) {
		log_warn("storage: checkpoint of tick %" PRIu64 " skipped: the journal cannot be written", j->image.tick);
		return false;
	}
	if (fail_hook(st)) {
		writer_error(st, "write checkpoint", EIO);
		return false;
	}
	off_t seg_size;
	int fd = segment_create(st->dir, j->image.tick, NULL, 0, &seg_size);
	if (fd < 0) {
		log_warn("storage: new journal segment: %s; checkpoint skipped, the journal goes on in the current segment",
		         strerror(-fd));
		pthread_mutex_lock(&st->mu);
		st->stats.write_errors++;
		pthread_mutex_unlock(&st->mu);
		return false;
	}
	pthread_mutex_lock(&st->mu); /* the sync thread reads st->fd */
	close(st->fd);
	st->fd = fd;
	pthread_mutex_unlock(&st->mu);
	st->segment_tick = j->image.tick;
	st->synced_offset = seg_size;
	if (st->checkpoint_thread_started) pthread_join(st->checkpoint_thread, NULL); /* done: one at a time */
	st->checkpoint_thread_started = false;
	j->owner = st;
	if (pthread_create(&st->checkpoint_thread, NULL, checkpoint_main, j) != 0) {
		log_warn("storage: no thread for the checkpoint of tick %" PRIu64 "; skipped", j->image.tick);
		return false;
	}
	st->checkpoint_thread_started = true;
	return true;
}

/* everysec: what the writer wrote reaches the disk within about a second. */
static void *sync_main(void *arg) {
	storage *st = arg;
	pthread_mutex_lock(&st->mu);
	while (!st->quit) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&st->sync_cv, &st->mu, &ts);
		if (st->quit) break;
		int fd = st->fd >= 0 ? dup(st->fd) : -1;
		pthread_mutex_unlock(&st->mu);
		if (fd >= 0) {
			if (fail_hook(st) || fdatasync(fd) != 0)
				writer_error(st, "fsync journal", fail_hook(st) ? EIO : errno);
			else {
				pthread_mutex_lock(&st->mu);
				st->stats.fsyncs++;
				pthread_mutex_unlock(&st->mu);
			}
			close(fd);
		}
		pthread_mutex_lock(&st->mu);
	}
	pthread_mutex_unlock(&st->mu);
	return NULL;
}

static void *writer_main(void *arg) {
	storage *st = arg;
	pthread_mutex_lock(&st->mu);
	for (;;) {
		while (!st->quit && !st->jobs_head) {
			bool timed = st->failing || (st->mode == CONFIG_FSYNC_EVERYSEC && st->pending.len > 0);
			if (!timed) {
				pthread_cond_wait(&st->cv, &st->mu);
				continue;
			}
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long)RETRY_NS;
			if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
			if (pthread_cond_timedwait(&st->cv, &st->mu, &ts) != 0) break; /* time: retry or sync */
		}
		job *jobs = st->jobs_head;
		st->jobs_head = st->jobs_tail = NULL;
		bool quit = st->quit;
		pthread_mutex_unlock(&st->mu);

		bool checkpointed = false;
		while (jobs) {
			job *j = jobs;
			jobs = j->next;
			if (j->kind == JOB_BATCH) {
				if (!crowd_buf_append(&st->pending, j->bytes.data, j->bytes.len)) {
					/* out of memory: keep the job for the next round, as a failing disk */
					writer_error(st, "journal buffer", ENOMEM);
					j->next = jobs;
					jobs = j;
					break;
				}
				st->pending_seq = j->seq;
				pthread_mutex_lock(&st->mu);
				st->stats.journal_records++;
				pthread_mutex_unlock(&st->mu);
			} else if (writer_checkpoint(st, j)) {
				continue; /* the checkpoint thread has it */
			} else {
				checkpointed = true; /* skipped: the next one may start */
			}
			job_free(j);
		}
		bool ok = writer_write(st) && writer_sync(st, quit);

		pthread_mutex_lock(&st->mu);
		if (ok && st->failing) {
			log_info("storage: the journal can be written again");
			st->failing = false;
		}
		st->durable_seq = st->synced_seq;
		if (checkpointed) st->checkpoint_finished = true;
		if (jobs) { /* put back what could not be taken */
			job *last = jobs;
			while (last->next) last = last->next;
			last->next = st->jobs_head;
			st->jobs_head = jobs;
			if (!st->jobs_tail) st->jobs_tail = last;
		}
		pthread_mutex_unlock(&st->mu);
		uv_async_send(&st->async);
		pthread_mutex_lock(&st->mu);
		if (quit && !st->jobs_head) break;
	}
	pthread_mutex_unlock(&st->mu);
	return NULL;
}

static void submit(storage *st, job *j) {
	pthread_mutex_lock(&st->mu);
	j->next = NULL;
	if (st->jobs_tail)
		st->jobs_tail->next = j;
	else
		st->jobs_head = j;
	st->jobs_tail = j;
	pthread_cond_signal(&st->cv);
	pthread_mutex_unlock(&st->mu);
}

/* ------------------------------------------------------------------ loop thread: progress */

static void send_reply(storage *st, const pending_reply *r) {
	const storage_reply out = {.client_id = r->client_id,
	                           .request_id = r->request_id,
	                           .ok = r->ok,
	                           .code = r->code,
	                           .index = r->index,
	                           .message = r->message,
	                           .ids = r->ids,
	                           .id_count = r->id_count};
	st->hooks.reply(st->hooks.user, &out);
}

static void on_progress(uv_async_t *h) {
	storage *st = h->data;
	pthread_mutex_lock(&st->mu);
	uint64_t durable = st->durable_seq;
	bool available = !st->failing;
	bool checkpoint_finished = st->checkpoint_finished;
	st->checkpoint_finished = false;
	char text[160];
	snprintf(text, sizeof text, "%s", st->error_text);
	pthread_mutex_unlock(&st->mu);
	if (checkpoint_finished) st->checkpoint_in_flight = false;
	if (available != st->available_seen) {
		if (!available)
			log_error("storage: %s; world changes are refused (STORAGE_UNAVAILABLE) until the journal can be "
			          "written",
			          text);
		else
			log_info("storage: available again; world changes are accepted");
		st->available_seen = available;
	}
	uint32_t k = 0;
	for (uint32_t i = 0; i < st->reply_count; i++) {
		pending_reply *r = &st->replies[i];
		if (r->seq <= durable && (!st->cfg->min_followers_ack || r->seq <= st->replicated_seq)) {
			send_reply(st, r);
			free(r->ids);
		} else {
			st->replies[k++] = *r;
		}
	}
	st->reply_count = k;
	if (durable > st->durable_told) { /* replication: a follower acknowledges what is durable */
		st->durable_told = durable;
		if (st->hooks.durable) st->hooks.durable(st->hooks.user, durable);
	}
	/* a held tick goes on once durable; while the disk fails, viewers keep their snapshots */
	if (st->held && (durable >= st->tick_seq || !available)) {
		st->held = false;
		st->hooks.resume(st->hooks.user);
	}
}

/* ------------------------------------------------------------------ loop thread: journal */

bool storage_available(const storage *st) { return !st->recording || st->available_seen; }

static void append(storage *st, const crowd_storage_v1_Record *rec) {
	if (!st->recording) return;
	if (!record_append(&st->batch, rec)) log_error("storage: a journal record did not encode");
}

void storage_journal_command(storage *st, const command *c) {
	if (!st->recording) return;
	crowd_buf body;
	crowd_buf_init(&body);
	if (!crowd_encode_client_message(&c->msg, false, &body)) {
		log_error("storage: command of client %u did not encode", c->client_id);
		crowd_buf_free(&body);
		return;
	}
	crowd_storage_v1_Record rec = crowd_storage_v1_Record_init_zero;
	rec.has_command = true;
	rec.command.tick = st->tick + 1;
	rec.command.client_id = c->client_id;
	rec.command.role = (uint32_t)c->role;
	rec.command.request_id = c->msg.request_id;
	record_bytes b = {body.data, body.len};
	rec.command.message.funcs.encode = record_encode_bytes;
	rec.command.message.arg = &b;
	append(st, &rec);
	crowd_buf_free(&body);
}

void storage_journal_drop_owners(storage *st, const uint32_t *client_ids, uint32_t count) {
	if (!st->recording || count == 0) return;
	crowd_storage_v1_Record rec = crowd_storage_v1_Record_init_zero;
	rec.has_drop_owners = true;
	rec.drop_owners.tick = st->tick + 1;
	record_u32s ids = {client_ids, count};
	rec.drop_owners.client_ids.funcs.encode = record_encode_u32s;
	rec.drop_owners.client_ids.arg = &ids;
	append(st, &rec);
}

void storage_commit(storage *st) {
	if (!st->recording) return;
	st->tick_seq = st->next_seq; /* this tick's commands are in this batch (or an earlier one) */
	if (st->batch.len == 0) {
		st->tick_seq = st->next_seq - 1;
		return;
	}
	job *j = calloc(1, sizeof *j);
	if (!j) {
		log_error("storage: out of memory for a journal batch; it stays for the next tick");
		return;
	}
	j->kind = JOB_BATCH;
	j->seq = st->next_seq++;
	j->bytes = st->batch;
	crowd_buf_init(&st->batch);
	if (st->hooks.batch) st->hooks.batch(st->hooks.user, j->bytes.data, j->bytes.len, j->seq); /* replication */
	submit(st, j);
}

uint64_t storage_committed_seq(const storage *st) {
	return st->next_seq - 1;
}

static void start_checkpoint(storage *st, const sim *sm, uint64_t state_hash) {
	job *j = calloc(1, sizeof *j);
	if (!j) return;
	uint64_t t0 = now_ns();
	if (sim_save(sm, &j->image) != 0) {
		log_error("storage: cannot copy the world for a checkpoint (out of memory)");
		job_free(j);
		return;
	}
	if (st->client_count) {
		j->clients = malloc(sizeof *j->clients * st->client_count);
		if (!j->clients) {
			job_free(j);
			return;
		}
		memcpy(j->clients, st->clients, sizeof *j->clients * st->client_count);
		j->client_count = st->client_count;
	}
	st->copy_seconds = (double)(now_ns() - t0) * 1e-9;
	st->checkpoint_ns = t0;
	j->kind = JOB_CHECKPOINT;
	j->hash = state_hash;
	sim_config_of(st->cfg, sm->demo != NULL, &j->config);
	st->checkpoint_in_flight = true;
	submit(st, j);
}

/* A checkpoint is due at `tick` (logging one skipped because the last is still being written). */
static bool checkpoint_due(storage *st, uint64_t tick) {
	if (!st->available_seen) return false;
	const uint32_t every = st->cfg->checkpoint_every;
	if (every) {
		if (tick % every != 0) return false;
		if (st->checkpoint_in_flight) { /* said, so that a missing checkpoint is never a mystery */
			log_warn("storage: checkpoint of tick %" PRIu64 " skipped: the one before is still being written; "
			         "the next one is due at tick %" PRIu64,
			         tick, tick + every);
			return false;
		}
		return true;
	}
	/* by wall time: replaying a tick costs about what running it did, so recovery
	 * replays about --checkpoint-seconds whatever the tick rate or the load */
	const uint64_t period_ns = (uint64_t)(st->cfg->checkpoint_seconds * 1e9);
	if (now_ns() - st->checkpoint_ns < period_ns) return false;
	return !st->checkpoint_in_flight; /* due: the first tick after the one before is written */
}

void storage_tick_end(storage *st, const sim *sm, uint64_t tick, uint64_t state_hash, uint32_t agents) {
	st->tick = tick;
	if (!st->recording) return;
	crowd_storage_v1_Record rec = crowd_storage_v1_Record_init_zero;
	rec.has_tick_end = true;
	rec.tick_end.tick = tick;
	rec.tick_end.state_hash = state_hash;
	rec.tick_end.agents = agents;
	append(st, &rec);
	if (!checkpoint_due(st, tick)) return;
	storage_commit(st); /* the segment ends exactly at this tick */
	start_checkpoint(st, sm, state_hash);
}

bool storage_follow_checkpoint_due(storage *st, uint64_t tick) {
	if (!st->recording || !checkpoint_due(st, tick)) return false;
	storage_commit(st); /* the segment ends exactly at this tick's TickEnd */
	return true;
}

void storage_follow_tick_done(storage *st, const sim *sm, uint64_t tick, uint64_t state_hash, bool checkpoint) {
	st->tick = tick;
	if (checkpoint && st->recording) start_checkpoint(st, sm, state_hash);
}

bool storage_quiet_tick(storage *st) {
	if (!st->quiet_ticks) return false;
	st->quiet_ticks--;
	return true;
}

bool storage_defers_replies(const storage *st) {
	return st->recording && (st->mode == CONFIG_FSYNC_ALWAYS || st->cfg->min_followers_ack > 0);
}

static pending_reply *new_reply(storage *st) {
	if (st->reply_count == st->reply_cap) {
		uint32_t cap = st->reply_cap ? st->reply_cap * 2 : 64;
		pending_reply *p = realloc(st->replies, sizeof *p * cap);
		if (!p) return NULL;
		st->replies = p;
		st->reply_cap = cap;
	}
	pending_reply *r = &st->replies[st->reply_count++];
	memset(r, 0, sizeof *r);
	r->seq = st->next_seq; /* the batch storage_commit submits next */
	return r;
}

void storage_defer_ack(storage *st, uint32_t client_id, uint32_t request_id, const uint32_t *ids, uint32_t count) {
	pending_reply *r = new_reply(st);
	if (!r) return; /* out of memory: the client sees no answer, never a wrong one */
	r->client_id = client_id;
	r->request_id = request_id;
	r->ok = true;
	if (count) {
		r->ids = malloc(sizeof *ids * count);
		if (r->ids) {
			memcpy(r->ids, ids, sizeof *ids * count);
			r->id_count = count;
		}
	}
}

void storage_defer_error(storage *st, uint32_t client_id, uint32_t request_id, int code, uint32_t index,
                         const char *message) {
	pending_reply *r = new_reply(st);
	if (!r) return;
	r->client_id = client_id;
	r->request_id = request_id;
	r->code = code;
	r->index = index;
	snprintf(r->message, sizeof r->message, "%s", message ? message : "");
}

bool storage_hold_tick(storage *st) {
	if (!st->recording || st->mode != CONFIG_FSYNC_ALWAYS || !st->available_seen) return false;
	pthread_mutex_lock(&st->mu);
	bool durable = st->durable_seq >= st->tick_seq && !st->failing;
	bool failing = st->failing;
	pthread_mutex_unlock(&st->mu);
	if (durable || failing) return false;
	st->held = true;
	return true;
}

void storage_count_refused(storage *st) { st->refused++; }

void storage_get_stats(const storage *st, storage_stats *out) {
	pthread_mutex_lock((pthread_mutex_t *)&st->mu);
	*out = st->stats;
	pthread_mutex_unlock((pthread_mutex_t *)&st->mu);
	out->available = storage_available(st);
	out->refused = st->refused;
	out->checkpoint_copy_seconds = st->copy_seconds;
}

/* ------------------------------------------------------------------ identities */

static bool add_identity(storage *st, const replay_identity *id) {
	for (uint32_t i = 0; i < st->client_count; i++)
		if (st->clients[i].client_id == id->client_id) {
			st->clients[i] = *id;
			return true;
		}
	if (st->client_count == st->client_cap) {
		uint32_t cap = st->client_cap ? st->client_cap * 2 : 16;
		replay_identity *p = realloc(st->clients, sizeof *p * cap);
		if (!p) return false;
		st->clients = p;
		st->client_cap = cap;
	}
	st->clients[st->client_count++] = *id;
	return true;
}

bool storage_new_identity(storage *st, uint32_t client_id, uint32_t role, char key_out[33]) {
	if (!st->recording) return false;
	uint8_t raw[16];
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) return false;
	replay_identity id = {.client_id = client_id, .role = role};
	for (int i = 0; i < 16; i++) snprintf(id.key + 2 * i, 3, "%02x", raw[i]);
	if (!add_identity(st, &id)) return false;
	crowd_storage_v1_Record rec = crowd_storage_v1_Record_init_zero;
	rec.has_client = true;
	rec.client.client_id = client_id;
	rec.client.role = role;
	memcpy(rec.client.resume_key, id.key, sizeof rec.client.resume_key);
	append(st, &rec);
	memcpy(key_out, id.key, 33);
	return true;
}

bool storage_find_identity(const storage *st, const char *key, uint32_t *client_id, uint32_t *role) {
	if (strlen(key) != 32) return false;
	for (uint32_t i = 0; i < st->client_count; i++)
		if (strcmp(st->clients[i].key, key) == 0) {
			*client_id = st->clients[i].client_id;
			*role = st->clients[i].role;
			return true;
		}
	return false;
}

/* ------------------------------------------------------------------ history and replication */

#define HISTORY_FILE "history"

bool storage_read_history(const char *dir, char out[33]) {
	char path[1200];
	snprintf(path, sizeof path, "%s/" HISTORY_FILE, dir);
	size_t len = 0;
	uint8_t *data = file_read_all(path, &len);
	if (!data) return false;
	bool ok = len >= 32;
	for (size_t i = 0; ok && i < 32; i++)
		ok = (data[i] >= '0' && data[i] <= '9') || (data[i] >= 'a' && data[i] <= 'f');
	if (ok) {
		memcpy(out, data, 32);
		out[32] = '\0';
	}
	free(data);
	return ok;
}

static int write_history(const char *dir, const char *history) {
	char path[1200], text[34];
	snprintf(path, sizeof path, "%s/" HISTORY_FILE, dir);
	snprintf(text, sizeof text, "%s\n", history);
	return file_write_atomic(dir, path, text, 33);
}

/* A new history: the lineage of checkpoints this data dir starts. */
static int make_history(storage *st) {
	uint8_t raw[16];
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) return -1;
	for (int i = 0; i < 16; i++) snprintf(st->history + 2 * i, 3, "%02x", raw[i]);
	int rc = write_history(st->dir, st->history);
	if (rc != 0) errno = -rc;
	return rc;
}

const char *storage_history_id(const storage *st) {
	return st->history;
}

int storage_install_checkpoint(const char *dir, const char *history, const uint8_t *checkpoint, size_t len,
                               uint64_t tick) {
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) return -errno;
	static const struct {
		const char *prefix, *suffix;
	} kinds[] = {
	    {"checkpoint-", ".ckpt"}, {"journal-", ".log"}, {"checkpoint-", ".ckpt.tmp"}, {"journal-", ".log.tmp"}};
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		uint32_t n = 0;
		uint64_t *ticks = dir_list_ticks(dir, kinds[k].prefix, kinds[k].suffix, &n);
		for (uint32_t i = 0; i < n; i++) {
			char path[1200];
			path_of(path, sizeof path, dir, kinds[k].prefix, ticks[i], kinds[k].suffix);
			if (unlink(path) != 0 && errno != ENOENT) {
				int e = errno;
				free(ticks);
				return -e;
			}
		}
		free(ticks);
	}
	int rc = write_history(dir, history);
	if (rc != 0) return rc;
	char path[1200];
	path_of(path, sizeof path, dir, "checkpoint-", tick, ".ckpt");
	return file_write_atomic(dir, path, checkpoint, len);
}

bool storage_encode_checkpoint(const storage *st, const sim *sm, uint64_t state_hash, crowd_buf *out) {
	job j;
	memset(&j, 0, sizeof j);
	if (sim_save(sm, &j.image) != 0) return false;
	j.clients = st->clients;
	j.client_count = st->client_count;
	j.hash = state_hash;
	sim_config_of(st->cfg, sm->demo != NULL, &j.config);
	bool ok = encode_checkpoint(&j, out);
	sim_image_free(&j.image);
	return ok;
}

uint32_t storage_journal_replicated(storage *st, const uint8_t *msg, size_t len) {
	if (!st->recording) return 0;
	uint32_t client_id = 0;
	crowd_storage_v1_Record rec = crowd_storage_v1_Record_init_zero;
	if (record_decode(msg, len, &rec) && rec.has_client && rec.client.client_id &&
	    strlen(rec.client.resume_key) == 32) {
		replay_identity id = {.client_id = rec.client.client_id, .role = rec.client.role};
		memcpy(id.key, rec.client.resume_key, 33);
		add_identity(st, &id);
		client_id = id.client_id;
	}
	if (!record_append_message(&st->batch, msg, len)) log_error("storage: out of memory for a replicated record");
	return client_id;
}

void storage_set_replicated(storage *st, uint64_t seq) {
	if (seq <= st->replicated_seq) return;
	st->replicated_seq = seq;
	if (st->async_open) on_progress(&st->async);
}

void storage_quiet_next_tick(storage *st) {
	st->quiet_ticks = 1;
}

/* ------------------------------------------------------------------ recovery */

/* Replay the segments after rw's checkpoint. The last segment's bytes and its
 * unfinished tick are handed back (for the new segment). */
static void replay_journal(storage *st, replay_world *rw, int64_t stop_at, uint8_t **last_file, size_t *last_len,
                           replay_result *last_res) {
	uint32_t n = 0;
	uint64_t *segs = dir_list_ticks(st->dir, "journal-", ".log", &n);
	*last_file = NULL;
	memset(last_res, 0, sizeof *last_res);
	for (uint32_t i = 0; i < n; i++) {
		if (segs[i] < rw->tick) continue;
		if (stop_at >= 0 && rw->tick >= (uint64_t)stop_at) break;
		char path[1200];
		path_of(path, sizeof path, st->dir, "journal-", segs[i], ".log");
		if (segs[i] != rw->tick) {
			log_warn("storage: %s does not continue tick %" PRIu64 ": ignored (and everything after it)", path,
			         rw->tick);
			break;
		}
		size_t len = 0;
		uint8_t *file = file_read_all(path, &len);
		if (!file) {
			log_error("storage: cannot read %s: %s", path, strerror(errno));
			break;
		}
		/* every recorded hash is checked, navigation on or off (orca_nav_save is exact) */
		replay_options opt = {.to_tick = stop_at >= 0 ? (uint64_t)stop_at : UINT64_MAX, .verify = true};
		replay_result res;
		char err[200];
		if (replay_segment(rw, file, len, &opt, &res, err, sizeof err) != 0) {
			log_warn("storage: %s: %s: ignored", path, err);
			free(file);
			break;
		}
		free(*last_file);
		*last_file = file;
		*last_len = len;
		*last_res = res;
		if (res.tail == RECORD_TORN || res.tail == RECORD_CORRUPT || res.bad_record)
			log_warn("storage: %s: %s tail of %zu bytes at offset %zu dropped", path,
			         res.bad_record ? "an out-of-order" : res.tail == RECORD_TORN ? "a torn" : "a corrupt",
			         len - res.tail_offset, res.tail_offset);
		if (res.mismatch_tick && !opt.keep_going) {
			log_error("storage: %s: tick %" PRIu64 " replays to state hash 0x%016" PRIx64
			          ", the journal says 0x%016" PRIx64 " (desync): recovery stops there",
			          path, res.mismatch_tick, res.computed_hash, res.recorded_hash);
			break;
		}
		if (res.reached_to_tick || res.tail != RECORD_END || res.bad_record) break;
	}
	free(segs);
}

/* A checkpoint or segment is written to NAME.tmp and renamed once complete
 * (file_write_atomic), so a .tmp file found at start was being written when
 * the server stopped: it is incomplete whatever it holds. Said, and removed
 * (unless nothing may be written: --start-at-tick), never loaded. */
static void drop_incomplete(const storage *st) {
	static const struct {
		const char *prefix, *suffix, *what;
	} kinds[] = {{"checkpoint-", ".ckpt.tmp", "checkpoint"}, {"journal-", ".log.tmp", "journal segment"}};
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		uint32_t n = 0;
		uint64_t *ticks = dir_list_ticks(st->dir, kinds[k].prefix, kinds[k].suffix, &n);
		for (uint32_t i = 0; i < n; i++) {
			char path[1200];
			path_of(path, sizeof path, st->dir, kinds[k].prefix, ticks[i], kinds[k].suffix);
			log_warn("storage: %s: an incomplete %s of tick %" PRIu64 " (being written when the server stopped): %s",
			         path, kinds[k].what, ticks[i], st->recording ? "removed" : "ignored");
			if (st->recording && unlink(path) != 0)
				log_warn("storage: cannot remove %s: %s", path, strerror(errno));
		}
		free(ticks);
	}
}

/* Load the newest checkpoint that reads, newest first. */
static int load_newest_checkpoint(storage *st, replay_world *rw, int64_t stop_at) {
	uint32_t n = 0;
	uint64_t *cks = dir_list_ticks(st->dir, "checkpoint-", ".ckpt", &n);
	int rc = -1;
	for (uint32_t i = n; i-- > 0;) {
		if (stop_at >= 0 && cks[i] > (uint64_t)stop_at) continue;
		char path[1200], err[200];
		path_of(path, sizeof path, st->dir, "checkpoint-", cks[i], ".ckpt");
		size_t len = 0;
		uint8_t *file = file_read_all(path, &len);
		if (!file) {
			log_warn("storage: cannot read %s: %s", path, strerror(errno));
			continue;
		}
		int r = replay_load_checkpoint(rw, file, len, (int)st->cfg->recovery_workers, err, sizeof err);
		free(file);
		if (r == 0) {
			log_info("storage: checkpoint %s: tick %" PRIu64 ", %u agents", path, rw->tick,
			         orca_world_agent_count(rw->sim->world));
			rc = 0;
			break;
		}
		log_warn("storage: checkpoint %s: %s; trying an older one", path, err);
	}
	free(cks);
	return rc;
}

/* True when the server's settings make the world and navigation the replay
 * made by the recorded ones (the usual restart): the replayed sim can then be
 * run as it is, with no copy and no second navigation mesh. */
static bool same_sim(const server_config *cfg, const replay_world *rw) {
	const server_config *r = &rw->cfg;
	if (orca_world_worker_count(rw->sim->world) != (int)cfg->workers || cfg->world_alloc_fail_file[0] ||
	    cfg->max_agents != r->max_agents || cfg->nav_enabled != r->nav_enabled)
		return false;
	if (!cfg->nav_enabled) return true;
	return cfg->world_min_x == r->world_min_x && cfg->world_min_y == r->world_min_y &&
	       cfg->world_max_x == r->world_max_x && cfg->world_max_y == r->world_max_y &&
	       cfg->nav_agent_radius == r->nav_agent_radius && cfg->nav_cell_size == r->nav_cell_size &&
	       cfg->nav_tile_budget == r->nav_tile_budget && cfg->nav_path_budget == r->nav_path_budget &&
	       cfg->nav_stuck_seconds == r->nav_stuck_seconds && cfg->nav_arrival_distance == r->nav_arrival_distance;
}

/* The recovered sim, run by the server's own settings: rw's own sim when they
 * make the same one (rw gives it up), else remade by them (its world
 * definition, its navigation mesh). */
static int adopt(storage *st, replay_world *rw, sim **out) {
	if (same_sim(st->cfg, rw)) {
		if (sim_set_settings(rw->sim, st->cfg) != 0) {
			log_error("storage: cannot take the recovered world: out of memory");
			return -1;
		}
		*out = rw->sim;
		rw->sim = NULL;
		for (uint32_t i = 0; i < rw->client_count; i++) add_identity(st, &rw->clients[i]);
		return 0;
	}
	log_info("storage: the recovered world is remade by this server's settings (workers, agent limit or "
	         "navigation differ from the recording's)");
	sim_image img;
	char err[200];
	const sim_load_options opt = {.nav_state_optional = true}; /* a navigation state that does not load: walk straight */
	if (sim_save(rw->sim, &img) != 0 || sim_load(st->cfg, &img, &opt, out, err, sizeof err) != 0) {
		log_error("storage: cannot take the recovered world: %s", img.world ? err : "out of memory");
		sim_image_free(&img);
		return -1;
	}
	sim_image_free(&img);
	for (uint32_t i = 0; i < rw->client_count; i++) add_identity(st, &rw->clients[i]);
	return 0;
}

/* Write the checkpoint of a sim as it is now (tick boundary), synchronously. */
static int write_checkpoint_now(storage *st, const sim *sm) {
	job j;
	memset(&j, 0, sizeof j);
	if (sim_save(sm, &j.image) != 0) return -ENOMEM;
	j.clients = st->clients;
	j.client_count = st->client_count;
	j.hash = orca_world_state_hash(sm->world);
	sim_config_of(st->cfg, sm->demo != NULL, &j.config);
	crowd_buf b;
	crowd_buf_init(&b);
	int rc = encode_checkpoint(&j, &b) ? 0 : -ENOMEM;
	uint64_t tick = j.image.tick;
	sim_image_free(&j.image);
	if (rc == 0) {
		char path[1200];
		path_of(path, sizeof path, st->dir, "checkpoint-", tick, ".ckpt");
		rc = file_write_atomic(st->dir, path, b.data, b.len);
	}
	crowd_buf_free(&b);
	return rc;
}

static void free_storage(storage *st);

/* Stop the writer after it wrote and fsynced everything, and answer what became durable. */
static void stop_writer(storage *st) {
	if (!st->thread_started) return;
	pthread_mutex_lock(&st->mu);
	st->quit = true;
	pthread_cond_signal(&st->cv);
	pthread_mutex_unlock(&st->mu);
	pthread_join(st->thread, NULL);
	st->thread_started = false;
	if (st->sync_thread_started) {
		pthread_mutex_lock(&st->mu);
		pthread_cond_signal(&st->sync_cv);
		pthread_mutex_unlock(&st->mu);
		pthread_join(st->sync_thread, NULL);
		st->sync_thread_started = false;
	}
	if (st->checkpoint_thread_started) pthread_join(st->checkpoint_thread, NULL);
	st->checkpoint_thread_started = false;
	on_progress(&st->async);
}

void storage_stop(storage *st) {
	storage_commit(st); /* the last tick's hash record too */
	stop_writer(st);
	if (st->async_open) {
		uv_close((uv_handle_t *)&st->async, NULL);
		st->async_open = false;
	}
}

static void on_async_closed(uv_handle_t *h) { free_storage(h->data); }

static int recover(storage *st, int64_t stop_at, storage_recovery *out) {
	replay_world rw;
	if (load_newest_checkpoint(st, &rw, stop_at) != 0) {
		log_error("storage: %s holds files but no checkpoint that reads%s: not starting (move the directory "
		          "away to start an empty world)",
		          st->dir, stop_at >= 0 ? " at or before --start-at-tick" : "");
		return -1;
	}
	const uint64_t checkpoint_tick = rw.tick, t0 = now_ns();
	uint8_t *last = NULL;
	size_t last_len = 0;
	replay_result res;
	replay_journal(st, &rw, stop_at, &last, &last_len, &res);
	log_info("storage: %" PRIu64 " tick(s) after the checkpoint replayed in %.3f s with %d worker(s)",
	         rw.tick - checkpoint_tick, (double)(now_ns() - t0) * 1e-9, orca_world_worker_count(rw.sim->world));
	/* by this version's definition: the files may be of an older format */
	const uint64_t tick = rw.tick, hash = orca_world_state_hash(rw.sim->world);
	const uint32_t agents = orca_world_agent_count(rw.sim->world);
	if (adopt(st, &rw, &out->sim) != 0) {
		replay_world_free(&rw);
		free(last);
		return -1;
	}
	out->state_hash = hash;
	printf("recovered tick %" PRIu64 " agents %u state_hash 0x%016" PRIx64 " from checkpoint %" PRIu64 "\n", tick,
	       agents, hash, checkpoint_tick);
	fflush(stdout);
	if (!st->recording) {
		log_warn("storage: serving tick %" PRIu64 " of %s without recording (--start-at-tick)", tick, st->dir);
		replay_world_free(&rw);
		free(last);
		return 0;
	}
	/* Later recoveries start here: a segment that continues tick T and begins
	 * with the acknowledged commands of the tick that never finished, then a
	 * checkpoint of tick T. In this order a crash between the two files loses
	 * nothing: the older checkpoint's segment chains into the new one. */
	const bool has_pending = last && res.pending_end > res.pending_begin;
	off_t size = 0;
	int rc = segment_create(st->dir, tick, has_pending ? last + res.pending_begin : NULL,
	                        has_pending ? res.pending_end - res.pending_begin : 0, &size);
	if (rc >= 0) {
		st->fd = rc;
		st->segment_tick = tick;
		st->synced_offset = size;
		rc = write_checkpoint_now(st, out->sim);
	}
	if (rc != 0) {
		log_error("storage: cannot write the recovery checkpoint in %s: %s", st->dir, strerror(-rc));
	} else if (has_pending) {
		uint32_t n = replay_apply_pending(&rw, out->sim, last, res.pending_begin, res.pending_end);
		log_info("storage: %u acknowledged command(s) of tick %" PRIu64 " applied again", n, tick + 1);
	}
	/* Tick T+1 may have run and been seen (its commands durable, its hash
	 * record not): it runs again with exactly those commands, new ones wait a tick. */
	st->quiet_ticks = 1;
	if (rc == 0) prune(st->dir, st->cfg->keep_checkpoints);
	replay_world_free(&rw);
	free(last);
	return rc == 0 ? 0 : -1;
}

int storage_open(const server_config *cfg, uv_loop_t *loop, const sim *current, const storage_hooks *hooks,
                 storage **out, storage_recovery *recovered) {
	*out = NULL;
	memset(recovered, 0, sizeof *recovered);
	storage *st = calloc(1, sizeof *st);
	if (!st) return -1;
	st->hooks = *hooks;
	st->cfg = cfg;
	st->tick = orca_world_step_count(current->world);
	st->mode = cfg->fsync_mode;
	st->recording = cfg->start_at_tick < 0;
	st->next_seq = 1;
	st->available_seen = true;
	st->fd = -1;
	snprintf(st->dir, sizeof st->dir, "%s", cfg->data_dir);
	crowd_buf_init(&st->batch);
	crowd_buf_init(&st->pending);
	pthread_mutex_init(&st->mu, NULL);
	pthread_cond_init(&st->cv, NULL);
	pthread_cond_init(&st->sync_cv, NULL);
	*out = st; /* storage_close frees it whatever happens below */
	if (mkdir(st->dir, 0700) != 0 && errno != EEXIST) {
		log_error("storage: cannot create %s: %s", st->dir, strerror(errno));
		return -1;
	}
	drop_incomplete(st);
	if (!storage_read_history(st->dir, st->history) && st->recording && make_history(st) != 0) {
		log_error("storage: cannot write %s/history: %s", st->dir, strerror(errno));
		return -1;
	}
	uint32_t nc = 0, nj = 0;
	free(dir_list_ticks(st->dir, "checkpoint-", ".ckpt", &nc));
	free(dir_list_ticks(st->dir, "journal-", ".log", &nj));
	if (nc == 0 && nj == 0) {
		if (!st->recording) {
			log_error("storage: %s holds no recording to start at", st->dir);
			return -1;
		}
		int rc = write_checkpoint_now(st, current);
		off_t size = 0;
		const uint64_t tick = orca_world_step_count(current->world);
		int fd = rc == 0 ? segment_create(st->dir, tick, NULL, 0, &size) : rc;
		if (fd < 0) {
			log_error("storage: cannot start a journal in %s: %s", st->dir, strerror(-fd));
			return -1;
		}
		st->fd = fd;
		st->segment_tick = tick;
		st->synced_offset = size;
		char cadence[64];
		if (cfg->checkpoint_every)
			snprintf(cadence, sizeof cadence, "%u ticks", cfg->checkpoint_every);
		else
			snprintf(cadence, sizeof cadence, "%g s", cfg->checkpoint_seconds);
		log_info("storage: new journal in %s (fsync %s, a checkpoint every %s, %u kept)", st->dir,
		         st->mode == CONFIG_FSYNC_ALWAYS ? "always" : st->mode == CONFIG_FSYNC_EVERYSEC ? "everysec" : "no",
		         cadence, cfg->keep_checkpoints);
	} else if (recover(st, cfg->start_at_tick, recovered) != 0) {
		return -1;
	}
	if (recovered->sim) st->tick = orca_world_step_count(recovered->sim->world);
	st->checkpoint_ns = now_ns(); /* tick 0's or the recovered tick's checkpoint was just written */
	return loop ? storage_attach(st, loop) : 0;
}

void storage_use_config(storage *st, const server_config *cfg) {
	st->cfg = cfg;
}

int storage_attach(storage *st, uv_loop_t *loop) {
	if (!st->recording || st->async_open) return 0;
	if (uv_async_init(loop, &st->async, on_progress) != 0) return -1;
	st->async.data = st;
	st->async_open = true;
	if (pthread_create(&st->thread, NULL, writer_main, st) != 0) {
		log_error("storage: cannot start the writer thread");
		return -1;
	}
	st->thread_started = true;
	if (st->mode == CONFIG_FSYNC_EVERYSEC) {
		if (pthread_create(&st->sync_thread, NULL, sync_main, st) != 0) {
			log_error("storage: cannot start the fsync thread");
			return -1;
		}
		st->sync_thread_started = true;
	}
	return 0;
}

void storage_close(storage *st) {
	if (!st) return;
	stop_writer(st);
	if (st->async_open) {
		/* the loop never stopped us (start-up failed): freed once the loop closes the handle */
		st->async_open = false;
		uv_close((uv_handle_t *)&st->async, on_async_closed);
		return;
	}
	free_storage(st);
}

static void free_storage(storage *st) {
	for (uint32_t i = 0; i < st->reply_count; i++) free(st->replies[i].ids);
	free(st->replies);
	free(st->clients);
	job *j = st->jobs_head;
	while (j) {
		job *next = j->next;
		job_free(j);
		j = next;
	}
	if (st->fd >= 0) close(st->fd);
	crowd_buf_free(&st->batch);
	crowd_buf_free(&st->pending);
	pthread_mutex_destroy(&st->mu);
	pthread_cond_destroy(&st->cv);
	pthread_cond_destroy(&st->sync_cv);
	free(st);
}
