/* load_worlds.c — crowd-load --worlds N: connection i loads world PREFIX(i mod N).
 * The first connection of each world (i < N) says Hello in the default world,
 * creates its world (one already open is used as it is) and joins it; the
 * others name the world in their Hello, so they are opened only once every
 * world is there. At the end of the measured time one connection asks
 * ListWorlds, and the report shows each world's agents, clients and tick
 * lateness as the server measured it. */
#include "load.h"

#include <stdlib.h>
#include <string.h>

bool load_worlds_enabled(const load_run *run) {
	return run->opt.worlds > 0;
}

uint32_t load_world_of(const load_run *run, uint32_t conn) {
	return run->opt.worlds ? conn % run->opt.worlds : 0;
}

bool load_world_leader(const load_run *run, uint32_t conn) {
	return run->opt.worlds > 0 && conn < run->opt.worlds;
}

void load_world_name(const load_run *run, uint32_t world, char *out, size_t cap) {
	snprintf(out, cap, "%s%u", run->opt.world_prefix, world);
}

uint32_t load_worlds_leaders(const load_run *run) {
	return run->opt.worlds < run->opt.connections ? run->opt.worlds : run->opt.connections;
}

bool load_worlds_may_open(const load_run *run, uint32_t conn) {
	if (!load_worlds_enabled(run) || load_world_leader(run, conn)) return true;
	return run->worlds_ready + run->worlds_failed >= load_worlds_leaders(run);
}

void load_worlds_ask_list(load_run *run) {
	if (!load_worlds_enabled(run) || run->world_list_asked) return;
	for (uint32_t i = 0; i < run->opt.connections; i++) {
		if (run->conns[i].state != LOAD_CONN_RUNNING) continue;
		run->world_list_asked = load_conn_list_worlds(&run->conns[i]);
		return;
	}
}

void load_worlds_record_list(load_run *run, const crowd_v1_WorldList *list) {
	free(run->world_infos);
	run->world_infos = NULL;
	run->world_info_count = 0;
	run->max_worlds = list->max_worlds;
	if (list->worlds_count == 0) return;
	run->world_infos = calloc(list->worlds_count, sizeof *run->world_infos);
	if (!run->world_infos) return;
	for (pb_size_t i = 0; i < list->worlds_count; i++) {
		const crowd_v1_WorldInfo *w = &list->worlds[i];
		load_world_info *o = &run->world_infos[i];
		snprintf(o->name, sizeof o->name, "%s", w->name);
		o->agents = w->agents;
		o->clients = w->clients;
		o->tick_rate = w->tick_rate;
		o->lateness_p99_ms = w->lateness_p99_ms;
		o->tick = w->tick;
	}
	run->world_info_count = list->worlds_count;
}

static bool ours(const load_run *run, const char *name) {
	size_t n = strlen(run->opt.world_prefix);
	return strncmp(name, run->opt.world_prefix, n) == 0;
}

void load_worlds_report(const load_run *run, FILE *out) {
	if (!load_worlds_enabled(run)) return;
	fprintf(out, "worlds         %u (%s0..%s%u): %u created or joined, %u failed\n", run->opt.worlds,
	        run->opt.world_prefix, run->opt.world_prefix, run->opt.worlds - 1, run->worlds_ready,
	        run->worlds_failed);
	if (!run->world_list_asked) return;
	if (run->world_info_count == 0) {
		fprintf(out, "               (no WorldList answer before the end)\n");
		return;
	}
	double worst = 0, sum = 0;
	uint32_t counted = 0;
	const char *worst_name = "";
	for (uint32_t i = 0; i < run->world_info_count; i++) {
		const load_world_info *w = &run->world_infos[i];
		if (!ours(run, w->name)) continue;
		counted++;
		sum += w->lateness_p99_ms;
		if (w->lateness_p99_ms >= worst) {
			worst = w->lateness_p99_ms;
			worst_name = w->name;
		}
	}
	fprintf(out, "world lateness p99 (server's ListWorlds): mean %.2f ms, worst %.2f ms (%s) over %u worlds\n",
	        counted ? sum / counted : 0.0, worst, worst_name, counted);
	fprintf(out, "%-34s %8s %8s %6s %12s\n", "world", "agents", "clients", "Hz", "late p99 ms");
	for (uint32_t i = 0; i < run->world_info_count; i++) {
		const load_world_info *w = &run->world_infos[i];
		fprintf(out, "%-34s %8u %8u %6u %12.2f\n", w->name, w->agents, w->clients, w->tick_rate,
		        w->lateness_p99_ms);
	}
}

void load_worlds_report_json(const load_run *run, FILE *f) {
	if (!load_worlds_enabled(run)) return;
	fprintf(f,
	        "  \"worlds\": {\"count\": %u, \"prefix\": \"%s\", \"ready\": %u, \"failed\": %u, \"max_worlds\": %u, "
	        "\"listed\": [",
	        run->opt.worlds, run->opt.world_prefix, run->worlds_ready, run->worlds_failed, run->max_worlds);
	for (uint32_t i = 0; i < run->world_info_count; i++) {
		const load_world_info *w = &run->world_infos[i];
		fprintf(f,
		        "%s\n    {\"name\": \"%s\", \"agents\": %u, \"clients\": %u, \"tick_rate\": %u, "
		        "\"lateness_p99_ms\": %.3f, \"tick\": %llu}",
		        i ? "," : "", w->name, w->agents, w->clients, w->tick_rate, w->lateness_p99_ms,
		        (unsigned long long)w->tick);
	}
	fprintf(f, "%s]},\n", run->world_info_count ? "\n  " : "");
}
