/* sim.c — one simulation object (see sim.h). */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "demo.h"
#include "log.h"
#include "map.h"
#include "messages.h"

/* --world-alloc-fail-file (tests): the engine is out of memory while the file exists. */
static void *alloc_unless_file(size_t size, void *user) {
	return access((const char *)user, F_OK) == 0 ? NULL : malloc(size);
}

static void free_alloc_unless_file(void *p, size_t size, void *user) {
	(void)size, (void)user;
	free(p);
}

int sim_world_create(const server_config *cfg, orca_world **out) {
	orca_world_def def = orca_default_world_def();
	def.worker_count = (int)cfg->workers;
	def.avoidance = (orca_avoidance)cfg->avoidance;
	def.max_agents = cfg->max_agents;
	def.agent_capacity = cfg->max_agents < 1024 ? cfg->max_agents : 1024;
	if (cfg->demo && cfg->demo_agents > def.agent_capacity) def.agent_capacity = cfg->demo_agents;
	def.has_bounds = true; /* --world-bounds holds for every agent, however it is steered */
	def.bounds_min = (orca_vec2){(float)cfg->world_min_x, (float)cfg->world_min_y};
	def.bounds_max = (orca_vec2){(float)cfg->world_max_x, (float)cfg->world_max_y};
	if (cfg->world_alloc_fail_file[0])
		def.allocator =
		    (orca_allocator){alloc_unless_file, free_alloc_unless_file, (void *)cfg->world_alloc_fail_file};
	return orca_world_create(&def, out);
}

/* The parts every sim has: settings, id counter, scratch. */
static sim *sim_new(const server_config *cfg) {
	sim *s = calloc(1, sizeof *s);
	if (!s) return NULL;
	s->cfg = cfg;
	s->next_client_id = 1;
	s->ids_scratch = malloc(sizeof *s->ids_scratch * (cfg->max_batch + 1));
	if (!s->ids_scratch) {
		free(s);
		return NULL;
	}
	return s;
}

int sim_create(const server_config *cfg, sim **out) {
	*out = NULL;
	sim *s = sim_new(cfg);
	if (!s) {
		log_error("cannot create the simulation: out of memory");
		return -1;
	}
	int rc = sim_world_create(cfg, &s->world);
	if (rc != ORCA_OK) {
		log_error("cannot create the world: %s", orca_strerror(rc));
		sim_destroy(s);
		return -1;
	}
	const map_def map = map_def_of(cfg);
	const uint32_t walls = map_wall_count(&map);
	if (walls > 0) {
		rc = map_build(&map, s->world);
		if (rc != ORCA_OK) {
			log_error("cannot build the map (%u walls): %s", walls, orca_strerror(rc));
			sim_destroy(s);
			return -1;
		}
		log_info("map: %s, %u walls", map.kind == MAP_ROOMS ? "rooms" : "city", walls);
	}
	if (cfg->demo && !(s->demo = demo_create(s->world, cfg, &map))) {
		sim_destroy(s);
		return -1;
	}
	*out = s;
	return 0;
}

int sim_set_settings(sim *s, const server_config *cfg) {
	uint32_t *scratch = realloc(s->ids_scratch, sizeof *scratch * (cfg->max_batch + 1));
	if (!scratch) return -1;
	s->ids_scratch = scratch;
	s->cfg = cfg;
	return 0;
}

int sim_start_navigation(sim *s) {
	if (!s->cfg->nav_enabled || s->nav) return 0;
	s->nav = navigation_create(s->world, s->cfg);
	return s->nav ? 0 : -1;
}

void sim_destroy(sim *s) {
	if (!s) return;
	navigation_destroy(s->nav);
	demo_destroy(s->demo);
	orca_world_destroy(s->world);
	free(s->ids_scratch);
	free(s);
}

void sim_apply(sim *s, const command *cmd, const command_owners *owners, command_result *out) {
	message_apply(s->world, s->cfg, cmd, owners, s->ids_scratch, out);
	message_navigate(s->nav, cmd, out);
}

void sim_drop_owners(sim *s, uint32_t *client_ids, uint32_t count, const command_owners *owners) {
	command_drop_owners(s->world, client_ids, count, owners);
}

int sim_step(sim *s, sim_step_times *times) {
	const float dt = 1.0f / (float)s->cfg->tick_rate_hz;
	uint64_t t0 = times ? uv_hrtime() : 0;
	if (s->demo) demo_update(s->demo, s->world, s->nav);
	if (s->nav) navigation_before_step(s->nav, dt);
	uint64_t t1 = times ? uv_hrtime() : 0;
	int rc = orca_world_step(s->world, dt);
	if (times) {
		times->start_ns = t0;
		times->before_step_ns = t1;
		times->end_ns = uv_hrtime();
	}
	return rc;
}

/* ------------------------------------------------------------------ save / load */

void sim_image_free(sim_image *img) {
	free(img->world);
	free(img->demo);
	free(img->nav);
	memset(img, 0, sizeof *img);
}

int sim_save(const sim *s, sim_image *out) {
	memset(out, 0, sizeof *out);
	size_t need = 0;
	orca_world_save(s->world, NULL, 0, &need);
	out->world = malloc(need ? need : 1);
	if (!out->world || orca_world_save(s->world, out->world, need, &out->world_len) != ORCA_OK) {
		log_error("cannot copy the world (out of memory)");
		goto fail;
	}
	if (s->demo && !(out->demo = demo_save(s->demo, &out->demo_len))) goto fail;
	out->has_demo = s->demo != NULL;
	if (s->nav) { /* none without navigation */
		size_t n = navigation_save(s->nav, NULL, 0);
		out->nav = malloc(n ? n : 1);
		if (!out->nav) goto fail;
		out->nav_len = navigation_save(s->nav, out->nav, n);
	}
	out->tick = orca_world_step_count(s->world);
	out->next_client_id = s->next_client_id;
	return 0;
fail:
	sim_image_free(out);
	return -1;
}

int sim_load(const server_config *cfg, const sim_image *img, const sim_load_options *opt, sim **out, char *err,
             size_t errlen) {
	*out = NULL;
	sim *s = sim_new(cfg);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int rc =
	    opt && opt->world_def ? orca_world_create(opt->world_def, &s->world) : sim_world_create(cfg, &s->world);
	if (rc == ORCA_OK) rc = orca_world_load(s->world, img->world, img->world_len);
	if (rc != ORCA_OK) {
		snprintf(err, errlen, "world: %s", orca_strerror(rc));
		goto fail;
	}
	if (img->has_demo && !(s->demo = demo_load(img->demo, img->demo_len))) {
		snprintf(err, errlen, "demo state malformed");
		goto fail;
	}
	if (cfg->nav_enabled) { /* the mesh over the loaded obstacles, then who navigates where */
		s->nav = navigation_create(s->world, cfg);
		if (!s->nav) {
			snprintf(err, errlen, "navigation state does not load");
			goto fail;
		}
		if (img->nav_len > 0 && navigation_load(s->nav, img->nav, img->nav_len) != ORCA_OK) {
			if (!(opt && opt->nav_state_optional)) {
				snprintf(err, errlen, "navigation state does not load");
				goto fail;
			}
			log_warn("the navigation state did not load; navigating agents walk straight");
		}
	}
	if (img->next_client_id > s->next_client_id) s->next_client_id = img->next_client_id;
	*out = s;
	return 0;
fail:
	sim_destroy(s);
	return -1;
}
