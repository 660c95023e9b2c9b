/* replay.c — checkpoint loading and journal replay (see replay.h). */
#include "replay.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pb_decode.h>


/* ------------------------------------------------------------------ identities */

bool replay_set_identity(replay_world *rw, const replay_identity *id) {
	for (uint32_t i = 0; i < rw->client_count; i++)
		if (rw->clients[i].client_id == id->client_id) {
			rw->clients[i] = *id;
			return true;
		}
	if (rw->client_count == rw->client_cap) {
		uint32_t cap = rw->client_cap ? rw->client_cap * 2 : 16;
		replay_identity *p = realloc(rw->clients, sizeof *p * cap);
		if (!p) return false;
		rw->clients = p;
		rw->client_cap = cap;
	}
	rw->clients[rw->client_count++] = *id;
	if (rw->sim && id->client_id >= rw->sim->next_client_id) rw->sim->next_client_id = id->client_id + 1;
	return true;
}

static bool identity_from(const crowd_storage_v1_ClientIdentity *c, replay_identity *out) {
	if (c->client_id == 0 || strlen(c->resume_key) != 32) return false;
	out->client_id = c->client_id;
	out->role = c->role;
	memcpy(out->key, c->resume_key, 33);
	return true;
}

static bool decode_client_cb(pb_istream_t *stream, const pb_field_t *field, void **arg) {
	(void)field;
	replay_world *rw = *arg;
	crowd_storage_v1_ClientIdentity c = crowd_storage_v1_ClientIdentity_init_zero;
	replay_identity id;
	if (!pb_decode(stream, crowd_storage_v1_ClientIdentity_fields, &c)) return false;
	return identity_from(&c, &id) && replay_set_identity(rw, &id);
}

/* ------------------------------------------------------------------ checkpoint */

static void apply_sim_config(server_config *cfg, const crowd_storage_v1_SimConfig *s) {
	cfg->tick_rate_hz = s->tick_rate_hz;
	cfg->world_min_x = s->world_min_x;
	cfg->world_min_y = s->world_min_y;
	cfg->world_max_x = s->world_max_x;
	cfg->world_max_y = s->world_max_y;
	cfg->agent_radius = s->agent_radius;
	cfg->agent_max_speed = s->agent_max_speed;
	cfg->agent_pref_speed = s->agent_pref_speed;
	cfg->agent_neighbor_dist = s->agent_neighbor_dist;
	cfg->agent_max_neighbors = s->agent_max_neighbors;
	cfg->agent_time_horizon = s->agent_time_horizon;
	cfg->agent_time_horizon_obst = s->agent_time_horizon_obst;
	cfg->agent_weight = s->agent_weight;
	cfg->max_agents = s->max_agents;
	cfg->max_agents_per_connection = s->max_agents_per_connection;
	cfg->max_obstacles = s->max_obstacles;
	cfg->demo = s->demo;
	cfg->demo_agents = s->demo_agents;
	cfg->nav_enabled = s->navigation;
	if (s->map <= CONFIG_MAP_CITY) cfg->map = (int)s->map;
	if (s->city_block > 0) cfg->city_block = s->city_block;
	if (s->city_street > 0) cfg->city_street = s->city_street;
	if (s->navigation) {
		cfg->nav_agent_radius = s->nav_agent_radius;
		cfg->nav_cell_size = s->nav_cell_size;
		cfg->nav_tile_budget = s->nav_tile_budget;
		cfg->nav_path_budget = s->nav_path_budget;
		cfg->nav_stuck_seconds = s->nav_stuck_seconds;
		cfg->nav_arrival_distance = s->nav_arrival_distance;
	}
}

void replay_world_free(replay_world *rw) {
	sim_destroy(rw->sim);
	free(rw->clients);
	config_free(&rw->cfg);
	memset(rw, 0, sizeof *rw);
}

int replay_load_checkpoint(replay_world *rw, const uint8_t *file, size_t len, int workers, char *err, size_t errlen) {
	memset(rw, 0, sizeof *rw);
	config_init(&rw->cfg);
	size_t pos = 0;
	const uint8_t *msg;
	size_t msg_len;
	record_status st = record_next(file, len, &pos, &msg, &msg_len);
	if (st != RECORD_OK) {
		snprintf(err, errlen, "%s", st == RECORD_TORN ? "torn (shorter than its record)" : "corrupt (CRC mismatch)");
		goto fail;
	}
	crowd_storage_v1_Record rec = crowd_storage_v1_Record_init_zero;
	record_bytes world = {0}, demo = {0}, nav = {0};
	rec.checkpoint.world.funcs.decode = record_decode_bytes;
	rec.checkpoint.world.arg = &world;
	rec.checkpoint.demo.funcs.decode = record_decode_bytes;
	rec.checkpoint.demo.arg = &demo;
	rec.checkpoint.nav.funcs.decode = record_decode_bytes;
	rec.checkpoint.nav.arg = &nav;
	rec.checkpoint.clients.funcs.decode = decode_client_cb;
	rec.checkpoint.clients.arg = rw;
	bool ok = record_decode(msg, msg_len, &rec);
	const crowd_storage_v1_Checkpoint *c = &rec.checkpoint;
	if (!ok || !rec.has_checkpoint || !storage_format_known(c->format) || !c->has_config || c->config.tick_rate_hz == 0 ||
	    c->config.tick_rate_hz > 1000) {
		snprintf(err, errlen, "not a checkpoint this version reads");
		goto fail_blobs;
	}
	apply_sim_config(&rw->cfg, &c->config);
	rw->format = c->format;
	rw->sim_config = c->config;
	orca_world_def def = orca_default_world_def();
	def.worker_count = workers < 1 ? 1 : workers;
	def.max_agents = rw->cfg.max_agents <= ORCA_MAX_AGENTS ? rw->cfg.max_agents : ORCA_MAX_AGENTS;
	def.agent_capacity = 16;
	const sim_image img = {.world = (uint8_t *)world.data,
	                       .world_len = world.len,
	                       .demo = (uint8_t *)demo.data,
	                       .demo_len = demo.len,
	                       .has_demo = rw->cfg.demo,
	                       .nav = (uint8_t *)nav.data,
	                       .nav_len = nav.len,
	                       .next_client_id = c->next_client_id};
	const sim_load_options lopt = {.world_def = &def};
	if (sim_load(&rw->cfg, &img, &lopt, &rw->sim, err, errlen) != 0) goto fail_blobs;
	if (orca_world_step_count(rw->sim->world) != c->tick || storage_state_hash(c->format, rw->sim->world) != c->state_hash) {
		snprintf(err, errlen, "world does not match its tick %" PRIu64 " / state hash", c->tick);
		goto fail_blobs;
	}
	for (uint32_t i = 0; i < rw->client_count; i++) /* identities decoded before the sim existed */
		if (rw->clients[i].client_id >= rw->sim->next_client_id)
			rw->sim->next_client_id = rw->clients[i].client_id + 1;
	rw->tick = c->tick;
	rw->state_hash = c->state_hash;
	free((void *)world.data);
	free((void *)demo.data);
	free((void *)nav.data);
	return 0;
fail_blobs:
	free((void *)world.data);
	free((void *)demo.data);
	free((void *)nav.data);
fail:
	replay_world_free(rw);
	return -1;
}

/* ------------------------------------------------------------------ journal */

static bool peek(const uint8_t *msg, size_t len, crowd_storage_v1_Record *rec);

static uint32_t owned_none(void *user, uint32_t client_id) {
	(void)user, (void)client_id;
	return 0; /* recorded commands were accepted; a smaller count can only accept them again */
}

static void changed_none(void *user, uint32_t client_id, int64_t delta) {
	(void)user, (void)client_id, (void)delta;
}

typedef struct u32_list {
	uint32_t *items;
	uint32_t count, cap;
	bool bad;
} u32_list;

static bool decode_u32s_cb(pb_istream_t *stream, const pb_field_t *field, void **arg) {
	(void)field;
	u32_list *l = *arg;
	while (stream->bytes_left > 0) { /* packed: many values; unpacked: one */
		uint64_t v;
		if (!pb_decode_varint(stream, &v)) return false;
		if (l->count == l->cap) {
			uint32_t cap = l->cap ? l->cap * 2 : 64;
			uint32_t *p = realloc(l->items, sizeof *p * cap);
			if (!p) return false;
			l->items = p;
			l->cap = cap;
		}
		l->items[l->count++] = (uint32_t)v;
	}
	return true;
}

typedef enum apply_status { APPLY_OK, APPLY_SKIP, APPLY_BAD, APPLY_FAILED } apply_status;

/* Apply one command or drop_owners record of tick `tick` to `target`; identities are taken as read
 * into rw (NULL: a view for the unfinished tick, nothing recorded). */
static apply_status apply_record(replay_world *rw, sim *target, const uint8_t *msg, size_t len, uint64_t tick,
                                 bool identities) {
	crowd_storage_v1_Record rec = crowd_storage_v1_Record_init_zero;
	record_bytes body = {0};
	u32_list ids = {0};
	rec.command.message.funcs.decode = record_decode_bytes;
	rec.command.message.arg = &body;
	rec.drop_owners.client_ids.funcs.decode = decode_u32s_cb;
	rec.drop_owners.client_ids.arg = &ids;
	apply_status out = APPLY_SKIP;
	if (!record_decode(msg, len, &rec)) {
		out = APPLY_BAD;
	} else if (rec.has_command) {
		command cmd;
		memset(&cmd, 0, sizeof cmd);
		cmd.kind = COMMAND_CLIENT;
		cmd.client_id = rec.command.client_id;
		cmd.role = (crowd_v1_Role)rec.command.role;
		if (rec.command.tick != tick || !crowd_decode_client_message(body.data, body.len, &cmd.msg)) {
			out = APPLY_BAD;
		} else {
			command_owners owners = {owned_none, changed_none, rw};
			command_result r;
			sim_apply(target, &cmd, &owners, &r); /* as the live tick does */
			if (cmd.client_id >= target->next_client_id) target->next_client_id = cmd.client_id + 1;
			crowd_client_message_release(&cmd.msg);
			if (rw) rw->commands_applied++;
			out = r.error.code == crowd_v1_ErrorCode_ERROR_NONE ? APPLY_OK : APPLY_FAILED;
		}
	} else if (rec.has_drop_owners) {
		if (rec.drop_owners.tick != tick) {
			out = APPLY_BAD;
		} else {
			command_owners owners = {owned_none, changed_none, rw};
			sim_drop_owners(target, ids.items, ids.count, &owners);
			if (rw) rw->commands_applied++;
			out = APPLY_OK;
		}
	} else if (rec.has_client) {
		replay_identity id;
		if (!identity_from(&rec.client, &id))
			out = APPLY_BAD;
		else if (identities && rw)
			replay_set_identity(rw, &id);
	} else if (rec.has_segment || rec.has_checkpoint) {
		out = APPLY_BAD;
	}
	free((void *)body.data);
	free(ids.items);
	return out;
}

uint32_t replay_apply_pending(const replay_world *rw, sim *target, const uint8_t *file, size_t begin, size_t end) {
	/* the recorded settings over the target's world and navigation; no demo update */
	sim view = *target;
	view.cfg = &rw->cfg;
	view.demo = NULL;
	uint32_t n = 0;
	size_t pos = begin;
	const uint8_t *msg;
	size_t msg_len;
	while (pos < end && record_next(file, end, &pos, &msg, &msg_len) == RECORD_OK)
		if (apply_record(NULL, &view, msg, msg_len, rw->tick + 1, false) == APPLY_OK) n++;
	return n;
}

int replay_apply_records(sim *target, const uint8_t *records, size_t len, uint64_t tick) {
	int n = 0;
	size_t pos = 0;
	const uint8_t *msg;
	size_t msg_len;
	while (pos < len) {
		if (record_next(records, len, &pos, &msg, &msg_len) != RECORD_OK) return -1;
		apply_status a = apply_record(NULL, target, msg, msg_len, tick, false);
		if (a == APPLY_BAD || a == APPLY_FAILED)
			return -1; /* a recorded command was accepted: it applies again */
		if (a == APPLY_OK) n++;
	}
	return n;
}

bool replay_settings_differ(const replay_world *rw, const uint8_t *file, size_t len) {
	size_t pos = 0;
	const uint8_t *msg;
	size_t msg_len;
	crowd_storage_v1_Record rec;
	if (record_next(file, len, &pos, &msg, &msg_len) != RECORD_OK || !peek(msg, msg_len, &rec) ||
	    !rec.has_checkpoint || !rec.checkpoint.has_config)
		return false;
	/* both decoded into zeroed structs of scalars: equal settings, equal bytes */
	return memcmp(&rec.checkpoint.config, &rw->sim_config, sizeof rw->sim_config) != 0;
}

int replay_checkpoint_settings(const uint8_t *file, size_t len, server_config *cfg, uint64_t *tick) {
	size_t pos = 0;
	const uint8_t *msg;
	size_t msg_len;
	crowd_storage_v1_Record rec;
	if (record_next(file, len, &pos, &msg, &msg_len) != RECORD_OK || !peek(msg, msg_len, &rec) ||
	    !rec.has_checkpoint || !storage_format_known(rec.checkpoint.format) || !rec.checkpoint.has_config ||
	    rec.checkpoint.config.tick_rate_hz == 0 || rec.checkpoint.config.tick_rate_hz > 1000)
		return -1;
	apply_sim_config(cfg, &rec.checkpoint.config);
	*tick = rec.checkpoint.tick;
	return 0;
}

/* Peek a record's kind and tick without its callbacks (their bytes are skipped). */
static bool peek(const uint8_t *msg, size_t len, crowd_storage_v1_Record *rec) {
	memset(rec, 0, sizeof *rec);
	return record_decode(msg, len, rec);
}

int replay_segment(replay_world *rw, const uint8_t *file, size_t len, const replay_options *opt,
                   replay_result *res, char *err, size_t errlen) {
	memset(res, 0, sizeof *res);
	size_t pos = 0;
	const uint8_t *msg;
	size_t msg_len;
	crowd_storage_v1_Record rec;
	record_status st = record_next(file, len, &pos, &msg, &msg_len);
	if (st != RECORD_OK || !peek(msg, msg_len, &rec) || !rec.has_segment ||
	    !storage_format_known(rec.segment.format)) {
		snprintf(err, errlen, "no segment header");
		res->tail = st == RECORD_OK ? RECORD_CORRUPT : st;
		return -1;
	}
	const uint32_t format = rec.segment.format; /* how its state hashes were computed */
	if (rec.segment.start_tick != rw->tick) {
		snprintf(err, errlen, "starts at tick %" PRIu64 ", the world is at tick %" PRIu64, rec.segment.start_tick,
		         rw->tick);
		return -1;
	}
	size_t tick_begin = pos; /* the first record of the tick being read */
	uint32_t tick_records = 0;
	for (;;) {
		size_t at = pos;
		st = record_next(file, len, &pos, &msg, &msg_len);
		if (st != RECORD_OK) {
			res->tail = st;
			res->tail_offset = at;
			break;
		}
		if (!peek(msg, msg_len, &rec)) {
			res->bad_record = true;
			res->tail_offset = at;
			break;
		}
		if (rec.has_client) {
			apply_record(rw, rw->sim, msg, msg_len, rw->tick + 1, true);
			continue;
		}
		if (!rec.has_tick_end) {
			if ((rec.has_command && rec.command.tick != rw->tick + 1) ||
			    (rec.has_drop_owners && rec.drop_owners.tick != rw->tick + 1) ||
			    !(rec.has_command || rec.has_drop_owners)) {
				res->bad_record = true;
				res->tail_offset = at;
				break;
			}
			tick_records++;
			continue;
		}
		if (rec.tick_end.tick != rw->tick + 1) {
			res->bad_record = true;
			res->tail_offset = at;
			break;
		}
		/* a whole tick: its commands, the demo, the step */
		size_t p2 = tick_begin;
		const uint8_t *m2;
		size_t l2;
		bool failed = false;
		while (p2 < at && record_next(file, at, &p2, &m2, &l2) == RECORD_OK) {
			apply_status a = apply_record(rw, rw->sim, m2, l2, rw->tick + 1, false);
			if (a == APPLY_BAD || a == APPLY_FAILED) failed = true;
		}
		sim_step(rw->sim, NULL);
		rw->tick = orca_world_step_count(rw->sim->world);
		rw->state_hash = storage_state_hash(format, rw->sim->world);
		res->ticks++;
		tick_begin = pos;
		tick_records = 0;
		if (opt && opt->on_tick) opt->on_tick(opt->user, rw, rec.tick_end.state_hash);
		if ((failed || rw->state_hash != rec.tick_end.state_hash) && res->mismatch_tick == 0) {
			res->mismatch_tick = rw->tick;
			res->recorded_hash = rec.tick_end.state_hash;
			res->computed_hash = rw->state_hash;
			if (!opt || (opt->verify && !opt->keep_going)) break;
		}
		if (opt && rw->tick >= opt->to_tick) {
			res->reached_to_tick = true;
			break;
		}
	}
	res->pending_begin = tick_begin;
	res->pending_end = res->tail_offset ? res->tail_offset : pos;
	/* stopped early: what follows is not the unfinished tick */
	if (res->reached_to_tick || (res->mismatch_tick && !(opt && opt->keep_going)))
		res->pending_end = res->pending_begin;
	res->pending_records = tick_records;
	return 0;
}
