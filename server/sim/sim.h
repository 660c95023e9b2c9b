/* sim.h — one simulation: the world, its navigation, the demo crowd, the
 * owner ids handed out so far, and the settings that decide what a command
 * does. Everything that decides the future of a world goes through here, in
 * one order:
 *
 *     sim_apply (each command of the tick, in arrival order)
 *     sim_step  (demo update, navigation update, orca_world_step)
 *
 * The live tick, the headless run, crowd-replay and recovery all use it, so
 * they stay equal by construction (determinism and replay exactness depend on
 * it). A sim knows nothing of sockets, sessions or files; it holds no globals,
 * so a server may run several. sim_save / sim_load copy it whole (checkpoints,
 * recovery). */
#ifndef CROWD_SERVER_SIM_H
#define CROWD_SERVER_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <orca/orca.h>

#include "commands.h"
#include "config.h"
#include "navigation.h"

typedef struct demo_crowd demo_crowd; /* demo.h, private to sim/ */

typedef struct sim {
	const server_config *cfg; /* the settings it runs by (the caller's; they outlive the sim) */
	orca_world *world;
	demo_crowd *demo;        /* NULL without --demo */
	server_navigation *nav;  /* NULL: navigation off */
	uint32_t next_client_id; /* the next owner id to hand out (ids only grow) */
	uint32_t *ids_scratch;   /* cfg->max_batch + 1 ids: what a command created */
} sim;

/** A world as the settings define it (workers, agent limit, capacity, bounds). */
int sim_world_create(const server_config *cfg, orca_world **out);

/** A new sim at tick 0: the world of the settings, the walls of the map (--map) and
 * the demo crowd if configured. Navigation comes with sim_start_navigation. 0,
 * or -1 (logged). */
int sim_create(const server_config *cfg, sim **out);
void sim_destroy(sim *s);

/** Run s by other settings from now on (recovery hands the sim it replayed
 * by the recorded settings to the server, whose settings make the same world
 * and navigation: the caller checks that). 0, or -1 when out of memory (s unchanged). */
int sim_set_settings(sim *s, const server_config *cfg);

/** With navigation configured and not built yet: the mesh over the world as
 * it is now (the map's walls included). 0, or -1 (logged). */
int sim_start_navigation(sim *s);

/** Apply one command (a client's request or a departed owner's agents) and
 * hand what it did to navigation. ids in *out point into the sim's scratch. */
void sim_apply(sim *s, const command *cmd, const command_owners *owners, command_result *out);

/** Remove every agent of these clients in one pass (sorts client_ids). */
void sim_drop_owners(sim *s, uint32_t *client_ids, uint32_t count, const command_owners *owners);

/** Where one step's time went (uv_hrtime nanoseconds), for the tick's metrics. */
typedef struct sim_step_times {
	uint64_t start_ns, before_step_ns, end_ns; /* before_step: demo and navigation done */
} sim_step_times;

/** One tick of the simulation: the demo picks its next spots, navigation plans and
 * steers, the world steps by 1 / tick rate. The only caller of
 * orca_world_step in the server. times may be NULL. Returns an orca status. */
int sim_step(sim *s, sim_step_times *times);

/** The whole state as bytes (a checkpoint's blobs); free with sim_image_free. */
typedef struct sim_image {
	uint8_t *world, *demo, *nav;
	size_t world_len, demo_len, nav_len;
	uint64_t tick; /* steps completed (the state hash is the caller's: it has it already) */
	uint32_t next_client_id;
	bool has_demo;
} sim_image;

/** Copy the sim at a tick boundary. 0, or -1 when out of memory (logged). */
int sim_save(const sim *s, sim_image *out);
void sim_image_free(sim_image *img);

/** How sim_load makes its world and takes navigation's state. */
typedef struct sim_load_options {
	const orca_world_def *world_def; /* NULL: sim_world_create(cfg) */
	bool nav_state_optional;         /* a navigation state that does not load is said, not fatal */
} sim_load_options;

/** A sim from an image, run by cfg (whose demo / navigation settings decide
 * what is loaded). 0, or -1 with err filled. */
int sim_load(const server_config *cfg, const sim_image *img, const sim_load_options *opt, sim **out, char *err,
             size_t errlen);

#endif
