/* replay_main.c — crowd-replay: re-simulate a crowd-server data dir headless.
 *
 *   crowd-replay DIR [--from-tick A] [--to-tick B] [--verify] [--csv OUT] [--hashes] [--workers N]
 *
 * Starts from the oldest checkpoint (or the newest one at or before A), applies
 * the journal tick by tick and compares every recorded state hash. --verify
 * stops at the first tick that differs (a desync) and exits 1. --csv writes
 * every agent of every tick in [A, B] as `tick,id,x,y,vx,vy`. --hashes prints
 * `tick T state_hash 0x...` for every tick replayed. At the end it prints
 * `tick T state_hash 0x...` for the last tick. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "replay.h"

typedef struct options {
	const char *dir;
	uint64_t from, to;
	bool verify, hashes;
	const char *csv_path;
	int workers;
} options;

typedef struct tick_output {
	const options *opt;
	FILE *csv;
	orca_agent_id *ids;
	uint32_t ids_cap;
	uint64_t mismatches;
} tick_output;

static void usage(FILE *out) {
	fprintf(out, "usage: crowd-replay DIR [--from-tick A] [--to-tick B] [--verify] [--csv OUT] [--hashes] "
	             "[--workers N]\n");
}

static bool parse_u64(const char *s, uint64_t *out) {
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-') return false;
	*out = v;
	return true;
}

static void write_csv(tick_output *t, const replay_world *rw) {
	uint32_t n = orca_world_agent_ids(rw->sim->world, NULL, 0);
	if (n > t->ids_cap) {
		orca_agent_id *p = realloc(t->ids, sizeof *p * n);
		if (!p) return;
		t->ids = p;
		t->ids_cap = n;
	}
	n = orca_world_agent_ids(rw->sim->world, t->ids, t->ids_cap);
	for (uint32_t i = 0; i < n; i++) {
		orca_agent_state a;
		if (orca_agent_get(rw->sim->world, t->ids[i], &a) != ORCA_OK) continue;
		fprintf(t->csv, "%" PRIu64 ",%u,%.9g,%.9g,%.9g,%.9g\n", rw->tick, a.id, (double)a.position.x,
		        (double)a.position.y, (double)a.velocity.x, (double)a.velocity.y);
	}
}

static void on_tick(void *user, const replay_world *rw, uint64_t recorded) {
	tick_output *t = user;
	if (rw->state_hash != recorded) t->mismatches++;
	if (rw->tick < t->opt->from) return;
	if (t->opt->hashes) printf("tick %" PRIu64 " state_hash 0x%016" PRIx64 "\n", rw->tick, rw->state_hash);
	if (t->csv) write_csv(t, rw);
}

static int load_checkpoint(const options *opt, replay_world *rw) {
	uint32_t n = 0;
	uint64_t *cks = dir_list_ticks(opt->dir, "checkpoint-", ".ckpt", &n);
	/* the newest at or before --from-tick; without it, the oldest (the longest history) */
	int rc = -1;
	for (uint32_t k = 0; k < n && rc != 0; k++) {
		uint32_t i = opt->from ? n - 1 - k : k;
		if (opt->from && cks[i] > opt->from) continue;
		char path[1200], err[200];
		snprintf(path, sizeof path, "%s/checkpoint-%020" PRIu64 ".ckpt", opt->dir, cks[i]);
		size_t len = 0;
		uint8_t *file = file_read_all(path, &len);
		if (!file) {
			fprintf(stderr, "crowd-replay: %s: %s\n", path, strerror(errno));
			continue;
		}
		rc = replay_load_checkpoint(rw, file, len, opt->workers, err, sizeof err);
		free(file);
		if (rc != 0) fprintf(stderr, "crowd-replay: %s: %s\n", path, err);
	}
	/* nothing at or before --from-tick: the oldest, replayed up to it */
	for (uint32_t i = 0; i < n && rc != 0 && opt->from; i++) {
		char path[1200], err[200];
		snprintf(path, sizeof path, "%s/checkpoint-%020" PRIu64 ".ckpt", opt->dir, cks[i]);
		size_t len = 0;
		uint8_t *file = file_read_all(path, &len);
		if (!file) continue;
		rc = replay_load_checkpoint(rw, file, len, opt->workers, err, sizeof err);
		free(file);
	}
	free(cks);
	return rc;
}

/* A server restarted with other settings (tick rate, agent defaults, ...)
 * wrote a checkpoint at the tick its segment starts and recorded the ticks
 * after it by them: the replay goes on from that checkpoint, once the world
 * replayed so far is the one it holds. 0: on (switched or not); 1: the
 * replayed world differs from it (a desync at that tick); -1: it does not
 * read (on with the settings so far). */
static int follow_settings(const options *opt, replay_world **rw) {
	char path[1200], err[200];
	snprintf(path, sizeof path, "%s/checkpoint-%020" PRIu64 ".ckpt", opt->dir, (*rw)->tick);
	size_t len = 0;
	uint8_t *file = file_read_all(path, &len);
	if (!file) return 0; /* none kept here */
	int rc = 0;
	if (replay_settings_differ(*rw, file, len)) {
		/* on the heap, not moved after: its sim reads next->cfg */
		replay_world *next = calloc(1, sizeof *next);
		if (!next || replay_load_checkpoint(next, file, len, opt->workers, err, sizeof err) != 0) {
			fprintf(stderr, "crowd-replay: %s: %s\n", path, next ? err : "out of memory");
			free(next);
			rc = -1;
		} else if (next->tick != (*rw)->tick ||
		           storage_state_hash(next->format, (*rw)->sim->world) != next->state_hash) {
			fprintf(stderr, "crowd-replay: %s: the world replayed to tick %" PRIu64 " is not the one it holds\n", path,
			        (*rw)->tick);
			replay_world_free(next);
			free(next);
			rc = 1;
		} else {
			fprintf(stderr, "crowd-replay: the settings change at tick %" PRIu64 ": on from %s\n", (*rw)->tick, path);
			next->commands_applied = (*rw)->commands_applied;
			replay_world_free(*rw);
			free(*rw);
			*rw = next;
		}
	}
	free(file);
	return rc;
}

int main(int argc, char **argv) {
	options opt = {.to = UINT64_MAX, .workers = 1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		uint64_t v;
		if (!strcmp(a, "--verify"))
			opt.verify = true;
		else if (!strcmp(a, "--hashes"))
			opt.hashes = true;
		else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if ((!strcmp(a, "--from-tick") || !strcmp(a, "--to-tick") || !strcmp(a, "--workers")) && i + 1 < argc) {
			if (!parse_u64(argv[++i], &v)) {
				fprintf(stderr, "crowd-replay: %s: '%s' is not a number\n", a, argv[i]);
				return 2;
			}
			if (!strcmp(a, "--from-tick"))
				opt.from = v;
			else if (!strcmp(a, "--to-tick"))
				opt.to = v;
			else
				opt.workers = v >= 1 && v <= 256 ? (int)v : 1;
		} else if (!strcmp(a, "--csv") && i + 1 < argc) {
			opt.csv_path = argv[++i];
		} else if (a[0] != '-' && !opt.dir) {
			opt.dir = a;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!opt.dir || opt.from > opt.to) {
		usage(stderr);
		return 2;
	}
	/* on the heap and never moved: its sim reads rw->cfg */
	replay_world *rw = calloc(1, sizeof *rw);
	if (!rw || load_checkpoint(&opt, rw) != 0) {
		fprintf(stderr, "crowd-replay: %s: no checkpoint that reads\n", opt.dir);
		free(rw);
		return 1;
	}
	tick_output out = {.opt = &opt};
	if (opt.csv_path) {
		out.csv = fopen(opt.csv_path, "w");
		if (!out.csv) {
			fprintf(stderr, "crowd-replay: %s: %s\n", opt.csv_path, strerror(errno));
			replay_world_free(rw);
			free(rw);
			return 1;
		}
		fprintf(out.csv, "tick,id,x,y,vx,vy\n");
		if (rw->tick >= opt.from && rw->tick <= opt.to) write_csv(&out, rw);
	}
	fprintf(stderr, "crowd-replay: checkpoint of tick %" PRIu64 ", %u agents\n", rw->tick,
	        orca_world_agent_count(rw->sim->world));
	uint32_t n = 0;
	uint64_t *segs = dir_list_ticks(opt.dir, "journal-", ".log", &n);
	int exit_code = 0;
	uint64_t first_mismatch = 0;
	for (uint32_t i = 0; i < n && rw->tick < opt.to; i++) {
		if (segs[i] < rw->tick) continue;
		char path[1200], err[200];
		snprintf(path, sizeof path, "%s/journal-%020" PRIu64 ".log", opt.dir, segs[i]);
		if (segs[i] != rw->tick) {
			fprintf(stderr, "crowd-replay: %s does not continue tick %" PRIu64 "; stopping\n", path, rw->tick);
			break;
		}
		if (follow_settings(&opt, &rw) == 1) {
			out.mismatches++;
			if (!first_mismatch) first_mismatch = rw->tick;
			if (opt.verify) {
				exit_code = 1;
				break;
			}
		}
		size_t len = 0;
		uint8_t *file = file_read_all(path, &len);
		if (!file) {
			fprintf(stderr, "crowd-replay: %s: %s\n", path, strerror(errno));
			break;
		}
		replay_options ro = {.to_tick = opt.to, .verify = opt.verify, .on_tick = on_tick, .user = &out};
		replay_result res;
		int rc = replay_segment(rw, file, len, &ro, &res, err, sizeof err);
		free(file);
		if (rc != 0) {
			fprintf(stderr, "crowd-replay: %s: %s\n", path, err);
			break;
		}
		if (res.tail != RECORD_END || res.bad_record)
			fprintf(stderr, "crowd-replay: %s: %zu bytes of %s tail dropped\n", path, len - res.tail_offset,
			        res.bad_record ? "out-of-order" : res.tail == RECORD_TORN ? "torn" : "corrupt");
		if (res.mismatch_tick && !first_mismatch) {
			first_mismatch = res.mismatch_tick;
			fprintf(stderr,
			        "crowd-replay: desync at tick %" PRIu64 ": recorded state_hash 0x%016" PRIx64
			        ", replayed 0x%016" PRIx64 "\n",
			        res.mismatch_tick, res.recorded_hash, res.computed_hash);
			if (opt.verify) {
				exit_code = 1;
				break;
			}
		}
		if (res.tail != RECORD_END || res.bad_record) break;
	}
	free(segs);
	if (out.csv) fclose(out.csv);
	printf("tick %" PRIu64 " state_hash 0x%016" PRIx64 "\n", rw->tick, rw->state_hash);
	if (out.mismatches) {
		fprintf(stderr, "crowd-replay: %" PRIu64 " tick(s) differ from the recording\n", out.mismatches);
		exit_code = 1;
	} else {
		fprintf(stderr, "crowd-replay: %" PRIu64 " command(s) replayed, every recorded hash matched\n",
		        rw->commands_applied);
	}
	free(out.ids);
	replay_world_free(rw);
	free(rw);
	return exit_code;
}
