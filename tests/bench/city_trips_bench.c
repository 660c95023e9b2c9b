/* city_trips_bench.c — the load bench's city scenario (server_load.py
 * --scenarios city, crowd-load --trips) in one process: the server's sim
 * (server/sim: --map city, navigation, the server's agent defaults) and
 * crowd-load's trips (clients/load/load_trips.c), without sockets. Every
 * ARRIVED starts the agent's next trip in the same tick, as a client that
 * answers at once would; a trip is timed from the tick its target was set to
 * the tick of its ARRIVED, first trips (from the spawn) included. The same
 * arguments give the same run on any machine, so what it prints says what
 * the crowd does, not what the network or a loaded machine did.
 *
 *   city_trips_bench [--agents N] [--seconds S] [--warm-up S] [--reach D]
 *                    [--workers W] [--seed N] [--max-late N]
 *                    [--time-horizon T] [--time-horizon-obst T]
 *
 * The city is server_load.py's: about 80 m^2 of ground per agent, blocks of
 * 40 with streets of 12, trips within --reach along each axis. Prints, over
 * the measured seconds (after --warm-up): trips finished, the share within
 * twice their free-walk time, trip time p50/p99, trips more than 60 s past
 * their free-walk time (finished so, or still walking at the end), agents
 * that never arrived, STUCK events, and the share of agents at a time that
 * walk away from where they aim (velocity against the preferred velocity,
 * faster than 0.3 of cruising speed) or stand (slower than 0.3 m/s).
 * --max-late N: exit 1 when more than N trips are 60 s late. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "load_trips.h"
#include "log.h"
#include "sim.h"

#define LATE_S 60.0
#define TRIP_MARGIN 2.0f /* crowd-load's: trip ends keep an agent's radius and a little off the blocks */

typedef struct options {
	uint32_t agents, workers;
	double seconds, warm_up, reach, horizon, horizon_obst;
	uint64_t seed;
	long long max_late;
} options;

static int parse(options *o, int argc, char **argv) {
	*o = (options){
	    .agents = 1000, .workers = 2, .seconds = 120, .warm_up = 10, .reach = 30, .seed = 1, .max_late = -1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v) return -1;
		if (!strcmp(a, "--agents"))
			o->agents = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--seconds"))
			o->seconds = atof(v);
		else if (!strcmp(a, "--warm-up"))
			o->warm_up = atof(v);
		else if (!strcmp(a, "--reach"))
			o->reach = atof(v);
		else if (!strcmp(a, "--workers"))
			o->workers = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--seed"))
			o->seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--max-late"))
			o->max_late = atoll(v);
		else if (!strcmp(a, "--time-horizon"))
			o->horizon = atof(v);
		else if (!strcmp(a, "--time-horizon-obst"))
			o->horizon_obst = atof(v);
		else
			return -1;
		i++;
	}
	return o->agents > 0 && o->agents <= 1000000 && o->workers > 0 && o->seconds > 0 && o->warm_up >= 0 &&
	               o->reach > 0
	           ? 0
	           : -1;
}

static int cmp_float(const void *a, const void *b) {
	const float x = *(const float *)a, y = *(const float *)b;
	return x < y ? -1 : x > y;
}

static float percentile(float *v, size_t n, double p) {
	if (n == 0) return 0.0f;
	qsort(v, n, sizeof *v, cmp_float);
	size_t k = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return v[k < n ? k : n - 1];
}

typedef struct trip {
	uint64_t start; /* tick its target was set */
	float free_s;   /* free-walk time */
	bool late;      /* counted as 60 s late */
} trip;

int main(int argc, char **argv) {
	options o;
	if (parse(&o, argc, argv)) {
		fprintf(stderr,
		        "usage: city_trips_bench [--agents N] [--seconds S] [--warm-up S] [--reach D] [--workers W] "
		        "[--seed N] [--max-late N] [--time-horizon T] [--time-horizon-obst T]\n");
		return 2;
	}
	server_config cfg;
	config_init(&cfg);
	cfg.log_level = LOG_WARN;
	log_set_level(LOG_WARN);
	cfg.map = CONFIG_MAP_CITY;
	cfg.tick_rate_hz = 20;
	cfg.workers = o.workers;
	cfg.max_agents = o.agents + 16;
	if (o.horizon > 0) cfg.agent_time_horizon = o.horizon; /* crowd-load --time-horizon */
	if (o.horizon_obst > 0) cfg.agent_time_horizon_obst = o.horizon_obst;
	/* server_load.py's city_bounds: about 80 m^2 of ground per agent, at least 300 m */
	const double half = fmax(150.0, ceil(sqrt(o.agents * 80.0) / 2.0));
	cfg.world_min_x = cfg.world_min_y = -half;
	cfg.world_max_x = cfg.world_max_y = half;
	sim *s = NULL;
	if (sim_create(&cfg, &s) || sim_start_navigation(s)) {
		fprintf(stderr, "city_trips_bench: no sim\n");
		return 2;
	}
	load_city city;
	const float world[4] = {(float)-half, (float)-half, (float)half, (float)half};
	load_city_init(&city, world, (float)cfg.city_block, (float)cfg.city_street, TRIP_MARGIN);
	uint64_t rng = o.seed * 0x9E3779B97F4A7C15ull + 1;
	const double rate = cfg.tick_rate_hz, speed = cfg.agent_pref_speed;

	orca_agent_id *ids = calloc(o.agents, sizeof *ids);
	trip *trips = calloc(o.agents, sizeof *trips);
	bool *arrived_once = calloc(o.agents, sizeof *arrived_once);
	uint32_t index_bits = 0;
	for (uint32_t i = 0; ids && trips && arrived_once && i < o.agents; i++) {
		crowd_v1_AgentSpec spec = crowd_v1_AgentSpec_init_zero;
		spec.has_position = spec.has_target = true;
		load_city_random_point(&city, &rng, &spec.position.x, &spec.position.y);
		const float len = load_city_trip(&city, &rng, spec.position.x, spec.position.y, (float)o.reach,
		                                 &spec.target.x, &spec.target.y);
		const orca_agent_def def = command_agent_def(&cfg, &spec, 1);
		if (orca_agent_add(s->world, &def, &ids[i]) != ORCA_OK) return 2;
		navigation_set_target(s->nav, ids[i], def.target);
		trips[i] = (trip){.start = 0, .free_s = (float)(len / speed)};
		const uint32_t slot = ids[i] & ((1u << ORCA_ID_INDEX_BITS) - 1u);
		index_bits = slot > index_bits ? slot : index_bits;
	}
	uint32_t *index_of = calloc((size_t)index_bits + 1, sizeof *index_of);
	if (!index_of) return 2;
	for (uint32_t i = 0; i < o.agents; i++) index_of[ids[i] & ((1u << ORCA_ID_INDEX_BITS) - 1u)] = i;

	const uint64_t t0 = (uint64_t)(o.warm_up * rate), ticks = t0 + (uint64_t)(o.seconds * rate);
	size_t took_cap = 1024, took_n = 0;
	float *took = malloc(took_cap * sizeof *took);
	uint64_t finished = 0, within = 0, late = 0, stuck = 0, unreachable = 0, samples = 0, away = 0, standing = 0;
	for (uint64_t t = 1; t <= ticks && took; t++) {
		if (sim_step(s, NULL) != ORCA_OK) return 2;
		const bool measuring = t > t0;
		uint32_t n;
		const crowd_v1_AgentEvent *ev = navigation_events(s->nav, &n);
		for (uint32_t k = 0; k < n; k++) {
			const uint32_t i = index_of[ev[k].agent_id & ((1u << ORCA_ID_INDEX_BITS) - 1u)];
			if (ev[k].kind == crowd_v1_AgentEventKind_AGENT_EVENT_STUCK) stuck += measuring;
			if (ev[k].kind == crowd_v1_AgentEventKind_AGENT_EVENT_UNREACHABLE) unreachable++;
			if (ev[k].kind != crowd_v1_AgentEventKind_AGENT_EVENT_ARRIVED) continue;
			arrived_once[i] = true;
			if (measuring) {
				const double d = (double)(t - trips[i].start) / rate;
				finished++;
				within += d <= 2.0 * trips[i].free_s;
				late += d > trips[i].free_s + LATE_S && !trips[i].late;
				if (took_n == took_cap) {
					float *p = realloc(took, 2 * took_cap * sizeof *took);
					if (!p) return 2;
					took = p;
					took_cap *= 2;
				}
				took[took_n++] = (float)d;
			}
			float qx, qy;
			const float len =
			    load_city_trip(&city, &rng, ev[k].point.x, ev[k].point.y, (float)o.reach, &qx, &qy);
			navigation_set_target(s->nav, ev[k].agent_id, (orca_vec2){qx, qy});
			trips[i] = (trip){.start = t, .free_s = (float)(len / speed)};
		}
		if (!measuring || t % (uint64_t)rate) continue;
		/* once a simulated second: who walks away from its aim, who stands,
		 * and which trips still walking are 60 s late by now */
		for (uint32_t i = 0; i < o.agents; i++) {
			orca_agent_state st;
			if (orca_agent_get(s->world, ids[i], &st) != ORCA_OK) continue;
			const float v2 = st.velocity.x * st.velocity.x + st.velocity.y * st.velocity.y;
			const float p2 =
			    st.pref_velocity.x * st.pref_velocity.x + st.pref_velocity.y * st.pref_velocity.y;
			const float dot = st.velocity.x * st.pref_velocity.x + st.velocity.y * st.pref_velocity.y;
			samples++;
			standing += v2 < 0.09f;
			away += p2 > 0.01f && dot < 0.0f && v2 > 0.09f * (float)(speed * speed);
			if (!trips[i].late && (double)(t - trips[i].start) / rate > trips[i].free_s + LATE_S) {
				trips[i].late = true;
				late++;
			}
		}
	}
	uint64_t open = 0, never = 0;
	for (uint32_t i = 0; i < o.agents; i++) {
		open++;
		never += !arrived_once[i];
	}
	const double all = (double)(finished + open);
	printf("city_trips_bench: %u agents, %.0f m city (blocks %g, streets %g), trips within %g m, %u worker(s), "
	       "%.0f s measured after %.0f s, time horizons %g s (agents) and %g s (obstacles)\n",
	       o.agents, 2.0 * half, cfg.city_block, cfg.city_street, o.reach, o.workers, o.seconds, o.warm_up,
	       cfg.agent_time_horizon, cfg.agent_time_horizon_obst);
	printf("  trips finished                        %llu (%.2f per agent per minute)\n",
	       (unsigned long long)finished, (double)finished / o.agents / (o.seconds / 60.0));
	printf("  ... within 2x free-walk time          %.1f%%\n",
	       finished ? 100.0 * (double)within / (double)finished : 0.0);
	printf("  trip time p50 / p99 (s)               %.1f / %.1f\n", percentile(took, took_n, 50),
	       percentile(took, took_n, 99));
	printf("  trips > 60 s late (finished + open)   %llu = %.2f%% of %.0f\n", (unsigned long long)late,
	       all > 0 ? 100.0 * (double)late / all : 0.0, all);
	printf("  agents that never arrived             %llu\n", (unsigned long long)never);
	printf("  STUCK events; UNREACHABLE             %llu; %llu\n", (unsigned long long)stuck,
	       (unsigned long long)unreachable);
	printf("  agents walking away from their aim    %.1f%%\n",
	       samples ? 100.0 * (double)away / (double)samples : 0.0);
	printf("  agents standing (< 0.3 m/s)           %.1f%%\n",
	       samples ? 100.0 * (double)standing / (double)samples : 0.0);
	printf("  state hash                            %016llx\n",
	       (unsigned long long)orca_world_state_hash(s->world));
	free(took);
	free(index_of);
	free(arrived_once);
	free(trips);
	free(ids);
	sim_destroy(s);
	return o.max_late >= 0 && late > (uint64_t)o.max_late ? 1 : 0;
}
