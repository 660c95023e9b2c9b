// detourcrowd_bench — the second peer of issue 11: the same circles, crossings
// and random crowd as tests/bench/quality_bench, run by DetourCrowd (Recast &
// Detour, Debian's librecast-dev), the crowd system most games derive from.
// A thin driver: one open square navmesh polygon around the scenario, every
// agent with DetourCrowd's high-quality adaptive velocity sampling, obstacle
// avoidance and its collision resolution (RecastDemo's crowd tool defaults). Agents walk at 1 (the
// reference scenarios' preferred speed), radius 1.5, 15 units of neighbour
// range, time step 0.25. Prints the row format of quality_bench: the step at
// which every agent was within its radius of its goal, the (pair, step)s
// overlapping by more than 0.01, the smallest centre distance, ms per step.
//
//   detourcrowd_bench all | circles [FROM TO] | circle N | random N | swap SIDE | cross4 SIDE
//                     [--cap STEPS] [--steps STEPS] [--ref-dir DIR]
//
// `detourcrowd_bench steersuite [--time-limit S] CASE.txt...` runs
// tests/data/steersuite's cases (see tests/bench/steerbench.c) with
// DetourCrowd on a Recast mesh of the case's obstacles (built as crowd's
// navigation builds its own: the ground rectangle, obstacles marked
// unwalkable, eroded by the agents' radius, cell radius / 3 rounded down to a
// power of two, tiles of 64 cells) and prints steerbench's Markdown row for
// each, mode "detour".
#include <DetourCrowd.h>
#include <DetourNavMesh.h>
#include <DetourNavMeshBuilder.h>
#include <DetourNavMeshQuery.h>
#include <Recast.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "quality_scenarios.h"
#include "steerbench_case.h"

#ifndef CROWD_REF_DIR
#define CROWD_REF_DIR "tests/data/ref"
#endif

namespace {

const float kRadius = 1.5f, kSpeed = 1.0f;

struct Stats {
	uint64_t finish = 0, steps = 0, deep = 0;
	float min_dist = INFINITY;
	double step_ms = 0.0;
};

// One square polygon covering [lo, hi]^2 (x, z), at height 0.
dtNavMesh *open_navmesh(float lo, float hi)
{
	const float cs = std::max(0.05f, (hi - lo) / 60000.0f), ch = 0.1f;
	const unsigned short top = (unsigned short)std::lround((hi - lo) / cs);
	const unsigned short verts[4 * 3] = {0, 0, 0, 0, 0, top, top, 0, top, top, 0, 0};
	const unsigned short nul = 0xffff; // border edges
	const unsigned short polys[2 * 6] = {0, 1, 2, 3, nul, nul, nul, nul, nul, nul, nul, nul};
	const unsigned short flags[1] = {1};
	const unsigned char areas[1] = {0};
	dtNavMeshCreateParams p;
	std::memset(&p, 0, sizeof p);
	p.verts = verts;
	p.vertCount = 4;
	p.polys = polys;
	p.polyFlags = flags;
	p.polyAreas = areas;
	p.polyCount = 1;
	p.nvp = 6;
	p.walkableHeight = 2.0f;
	p.walkableRadius = 0.0f;
	p.walkableClimb = 0.5f;
	p.bmin[0] = lo, p.bmin[1] = -1.0f, p.bmin[2] = lo;
	p.bmax[0] = lo + top * cs, p.bmax[1] = 1.0f, p.bmax[2] = lo + top * cs;
	p.cs = cs;
	p.ch = ch;
	p.buildBvTree = true;
	unsigned char *data = nullptr;
	int size = 0;
	if (!dtCreateNavMeshData(&p, &data, &size))
		return nullptr;
	dtNavMesh *nav = dtAllocNavMesh();
	if (!nav || dtStatusFailed(nav->init(data, size, DT_TILE_FREE_DATA))) {
		dtFree(data);
		dtFreeNavMesh(nav);
		return nullptr;
	}
	return nav;
}

// Deep overlaps and the smallest distance, by a sweep along x.
void measure(const std::vector<float> &x, const std::vector<float> &z, std::vector<uint32_t> &order, Stats &st)
{
	const uint32_t n = (uint32_t)x.size();
	for (uint32_t i = 0; i < n; ++i)
		order[i] = i;
	std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return x[a] < x[b]; });
	const float rsum = 2.0f * kRadius;
	for (uint32_t a = 0; a < n; ++a) {
		const uint32_t i = order[a];
		for (uint32_t b = a + 1; b < n && x[order[b]] - x[i] < rsum; ++b) {
			const uint32_t j = order[b];
			const float dx = x[i] - x[j], dz = z[i] - z[j];
			const float d = std::sqrt(dx * dx + dz * dz);
			st.min_dist = std::min(st.min_dist, d);
			st.deep += d < rsum - 0.01f;
		}
	}
}

int run(const char *name, const scenario &sc, uint64_t cap, bool stop_when_done)
{
	const uint32_t n = sc.agent_count;
	float lo = INFINITY, hi = -INFINITY;
	for (uint32_t i = 0; i < n; ++i) {
		lo = std::min({lo, sc.start[i].x, sc.start[i].y, sc.goal[i].x, sc.goal[i].y});
		hi = std::max({hi, sc.start[i].x, sc.start[i].y, sc.goal[i].x, sc.goal[i].y});
	}
	dtNavMesh *nav = open_navmesh(lo - 50.0f, hi + 50.0f);
	dtCrowd *crowd = dtAllocCrowd();
	if (!nav || !crowd || !crowd->init((int)n, kRadius, nav)) {
		std::fprintf(stderr, "detourcrowd_bench: navmesh or crowd init failed\n");
		return -1;
	}
	// RecastDemo's "high" quality sampling (its default crowd tool setting)
	dtObstacleAvoidanceParams oa = *crowd->getObstacleAvoidanceParams(3);
	oa.adaptiveDivs = 7;
	oa.adaptiveRings = 3;
	oa.adaptiveDepth = 3;
	crowd->setObstacleAvoidanceParams(3, &oa);

	dtCrowdAgentParams ap;
	std::memset(&ap, 0, sizeof ap);
	ap.radius = kRadius;
	ap.height = 2.0f;
	ap.maxAcceleration = 8.0f;
	ap.maxSpeed = kSpeed;
	ap.collisionQueryRange = 15.0f;
	ap.pathOptimizationRange = 30.0f;
	ap.separationWeight = 2.0f;
	// RecastDemo's crowd tool defaults: separation off (with a 15-unit query
	// range it keeps agents from goals closer than that)
	ap.updateFlags = DT_CROWD_ANTICIPATE_TURNS | DT_CROWD_OPTIMIZE_VIS | DT_CROWD_OPTIMIZE_TOPO |
	                 DT_CROWD_OBSTACLE_AVOIDANCE;
	ap.obstacleAvoidanceType = 3;
	const dtNavMeshQuery *query = crowd->getNavMeshQuery();
	const dtQueryFilter *filter = crowd->getFilter(0);
	const float ext[3] = {2.0f, 4.0f, 2.0f};
	std::vector<int> idx(n);
	for (uint32_t i = 0; i < n; ++i) {
		const float pos[3] = {sc.start[i].x, 0.0f, sc.start[i].y};
		const float goal[3] = {sc.goal[i].x, 0.0f, sc.goal[i].y};
		idx[i] = crowd->addAgent(pos, &ap);
		dtPolyRef ref = 0;
		float nearest[3];
		if (idx[i] < 0 || dtStatusFailed(query->findNearestPoly(goal, ext, filter, &ref, nearest)) || !ref ||
		    !crowd->requestMoveTarget(idx[i], ref, nearest)) {
			std::fprintf(stderr, "detourcrowd_bench: agent %u could not be placed\n", i);
			return -1;
		}
	}
	Stats st;
	std::vector<float> x(n), z(n);
	std::vector<uint32_t> order(n);
	for (uint64_t step = 1; step <= cap; ++step) {
		const auto t0 = std::chrono::steady_clock::now();
		crowd->update(sc.time_step, nullptr);
		st.step_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
		st.steps = step;
		bool done = true;
		for (uint32_t i = 0; i < n; ++i) {
			const float *p = crowd->getAgent(idx[i])->npos;
			x[i] = p[0];
			z[i] = p[2];
			const float dx = x[i] - sc.goal[i].x, dz = z[i] - sc.goal[i].y;
			done = done && dx * dx + dz * dz <= kRadius * kRadius;
		}
		measure(x, z, order, st);
		if (done && !st.finish) {
			st.finish = step;
			if (stop_when_done)
				break;
		}
	}
	char finish[32];
	if (st.finish)
		std::snprintf(finish, sizeof finish, "%llu", (unsigned long long)st.finish);
	else
		std::snprintf(finish, sizeof finish, "- (%llu)", (unsigned long long)st.steps);
	std::printf("| %-12s | %6u | %-9s | %10s | %10llu | %6.3f | %6s | %8.3f |\n", name, n, "detour", finish,
	            (unsigned long long)st.deep, (double)st.min_dist, "-", st.step_ms / (double)st.steps);
	std::fflush(stdout);
	dtFreeCrowd(crowd);
	dtFreeNavMesh(nav);
	return 0;
}

int circle(uint32_t n, uint64_t cap)
{
	scenario sc;
	if (scenario_circle(n, &sc) != 0)
		return -1;
	const std::string name = "circle " + std::to_string(n);
	const int rc = run(name.c_str(), sc, cap, true);
	scenario_free(&sc);
	return rc;
}

int built(const char *kind, uint32_t side, uint64_t cap)
{
	scenario sc;
	const bool swap = std::strcmp(kind, "swap") == 0;
	if ((swap ? qs_swap(&sc, side) : qs_cross4(&sc, side)) != 0)
		return -1;
	const std::string name = std::string(kind) + " " + std::to_string(sc.agent_count);
	const int rc = run(name.c_str(), sc, cap, true);
	scenario_free(&sc);
	return rc;
}

int random_crowd(const char *ref_dir, uint32_t n, uint64_t steps)
{
	const std::string path = std::string(ref_dir) + "/random" + std::to_string(n) + "_setup.csv";
	scenario sc;
	char err[256];
	if (scenario_load(path.c_str(), &sc, err, sizeof err) != 0) {
		std::fprintf(stderr, "detourcrowd_bench: %s\n", err);
		return -1;
	}
	const std::string name = "random " + std::to_string(n);
	const int rc = run(name.c_str(), sc, steps, false);
	scenario_free(&sc);
	return rc;
}

// ------------------------------------------------------------------ steersuite

const float kGroundHalf = 1.0f; // the heightfield spans y in [-1, 1]; the ground is y = 0

float pow2_floor(float v) {
	float p = 1.0f;
	while (p > v) p *= 0.5f;
	while (p * 2.0f <= v) p *= 2.0f;
	return p;
}

// A tiled Recast/Detour mesh of the case: the world rectangle minus every
// obstacle, eroded by the largest radius.
dtNavMesh *case_navmesh(const sb_case &c) {
	rcContext ctx(false);
	const float cs = pow2_floor(c.max_radius / 3.0f), ch = 0.125f;
	const int tile = 64, walk_r = (int)std::ceil(c.max_radius / cs), border = walk_r + 3;
	const float tile_w = tile * cs;
	const int tx_n = (int)std::ceil((c.bounds_max.x - c.bounds_min.x) / tile_w);
	const int ty_n = (int)std::ceil((c.bounds_max.y - c.bounds_min.y) / tile_w);
	dtNavMeshParams np;
	std::memset(&np, 0, sizeof np);
	np.orig[0] = c.bounds_min.x;
	np.orig[2] = c.bounds_min.y;
	np.tileWidth = np.tileHeight = tile_w;
	int bits = 1;
	while ((1 << bits) < tx_n * ty_n) bits++;
	np.maxTiles = 1 << bits;
	np.maxPolys = 1 << std::min(22 - std::min(bits, 14), 16);
	dtNavMesh *nav = dtAllocNavMesh();
	if (!nav || dtStatusFailed(nav->init(&np))) return nullptr;
	std::vector<float> lo_x(c.obstacle_count), lo_y(c.obstacle_count), hi_x(c.obstacle_count),
	    hi_y(c.obstacle_count);
	for (uint32_t k = 0; k < c.obstacle_count; ++k) {
		lo_x[k] = hi_x[k] = c.obstacles[k][0].x;
		lo_y[k] = hi_y[k] = c.obstacles[k][0].y;
		for (uint32_t v = 1; v < c.obstacle_sizes[k]; ++v) {
			lo_x[k] = std::min(lo_x[k], c.obstacles[k][v].x),
			hi_x[k] = std::max(hi_x[k], c.obstacles[k][v].x);
			lo_y[k] = std::min(lo_y[k], c.obstacles[k][v].y),
			hi_y[k] = std::max(hi_y[k], c.obstacles[k][v].y);
		}
	}
	std::vector<float> v3;
	for (int ty = 0; ty < ty_n; ++ty)
		for (int tx = 0; tx < tx_n; ++tx) {
			rcConfig cfg;
			std::memset(&cfg, 0, sizeof cfg);
			cfg.cs = cs;
			cfg.ch = ch;
			cfg.walkableSlopeAngle = 45.0f;
			cfg.walkableHeight = 4;
			cfg.walkableClimb = 1;
			cfg.walkableRadius = walk_r;
			cfg.maxSimplificationError = 0.9f;
			cfg.minRegionArea = 4;
			cfg.mergeRegionArea = 400;
			cfg.maxVertsPerPoly = DT_VERTS_PER_POLYGON;
			cfg.tileSize = tile;
			cfg.borderSize = border;
			cfg.width = cfg.height = tile + 2 * border;
			cfg.bmin[0] = c.bounds_min.x + tx * tile_w - border * cs;
			cfg.bmin[1] = -kGroundHalf;
			cfg.bmin[2] = c.bounds_min.y + ty * tile_w - border * cs;
			cfg.bmax[0] = c.bounds_min.x + (tx + 1) * tile_w + border * cs;
			cfg.bmax[1] = kGroundHalf;
			cfg.bmax[2] = c.bounds_min.y + (ty + 1) * tile_w + border * cs;
			rcHeightfield *hf = rcAllocHeightfield();
			rcCompactHeightfield *chf = rcAllocCompactHeightfield();
			rcContourSet *cset = rcAllocContourSet();
			rcPolyMesh *pm = rcAllocPolyMesh();
			bool ok = hf && chf && cset && pm &&
			          rcCreateHeightfield(&ctx, *hf, cfg.width, cfg.height, cfg.bmin, cfg.bmax, cs, ch);
			if (ok) {
				const orca_vec2 a = c.bounds_min, b = c.bounds_max;
				const float ground[12] = {a.x, 0.0f, a.y, a.x, 0.0f, b.y,
				                          b.x, 0.0f, b.y, b.x, 0.0f, a.y};
				const int tris[6] = {0, 1, 2, 0, 2, 3};
				const unsigned char areas[2] = {RC_WALKABLE_AREA, RC_WALKABLE_AREA};
				ok = rcRasterizeTriangles(&ctx, ground, 4, tris, areas, 2, *hf, cfg.walkableClimb) &&
				     rcBuildCompactHeightfield(&ctx, cfg.walkableHeight, cfg.walkableClimb, *hf, *chf);
			}
			for (uint32_t k = 0; ok && k < c.obstacle_count; ++k) {
				if (hi_x[k] < cfg.bmin[0] || lo_x[k] > cfg.bmax[0] || hi_y[k] < cfg.bmin[2] ||
				    lo_y[k] > cfg.bmax[2] || c.obstacle_sizes[k] < 3)
					continue;
				v3.resize((size_t)c.obstacle_sizes[k] * 3);
				for (uint32_t v = 0; v < c.obstacle_sizes[k]; ++v) {
					v3[(size_t)v * 3] = c.obstacles[k][v].x;
					v3[(size_t)v * 3 + 1] = 0.0f;
					v3[(size_t)v * 3 + 2] = c.obstacles[k][v].y;
				}
				rcMarkConvexPolyArea(&ctx, v3.data(), (int)c.obstacle_sizes[k], -kGroundHalf,
				                     kGroundHalf, RC_NULL_AREA, *chf);
			}
			ok = ok && rcErodeWalkableArea(&ctx, cfg.walkableRadius, *chf) &&
			     rcBuildDistanceField(&ctx, *chf) &&
			     rcBuildRegions(&ctx, *chf, cfg.borderSize, cfg.minRegionArea, cfg.mergeRegionArea) &&
			     rcBuildContours(&ctx, *chf, cfg.maxSimplificationError, cfg.maxEdgeLen, *cset) &&
			     rcBuildPolyMesh(&ctx, *cset, cfg.maxVertsPerPoly, *pm);
			if (ok && pm->npolys > 0) {
				for (int i = 0; i < pm->npolys; ++i) pm->flags[i] = 1;
				dtNavMeshCreateParams cp;
				std::memset(&cp, 0, sizeof cp);
				cp.verts = pm->verts;
				cp.vertCount = pm->nverts;
				cp.polys = pm->polys;
				cp.polyAreas = pm->areas;
				cp.polyFlags = pm->flags;
				cp.polyCount = pm->npolys;
				cp.nvp = pm->nvp;
				cp.walkableHeight = cfg.walkableHeight * ch;
				cp.walkableRadius = c.max_radius;
				cp.walkableClimb = cfg.walkableClimb * ch;
				cp.tileX = tx;
				cp.tileY = ty;
				rcVcopy(cp.bmin, pm->bmin);
				rcVcopy(cp.bmax, pm->bmax);
				cp.cs = cs;
				cp.ch = ch;
				cp.buildBvTree = true;
				unsigned char *data = nullptr;
				int size = 0;
				if (dtCreateNavMeshData(&cp, &data, &size) &&
				    dtStatusFailed(nav->addTile(data, size, DT_TILE_FREE_DATA, 0, nullptr)))
					dtFree(data);
			}
			rcFreePolyMesh(pm);
			rcFreeContourSet(cset);
			rcFreeCompactHeightfield(chf);
			rcFreeHeightField(hf);
			if (!ok) {
				dtFreeNavMesh(nav);
				return nullptr;
			}
		}
	return nav;
}

float dist2d(const float *a, const float *b) {
	const float dx = a[0] - b[0], dz = a[2] - b[2];
	return std::sqrt(dx * dx + dz * dz);
}

// Shortest path through an agent's goals on the mesh (straight where none).
float detour_shortest(const dtNavMeshQuery *q, const dtQueryFilter *filter, const sb_agent &a) {
	const float ext[3] = {2.0f, 4.0f, 2.0f};
	static std::vector<dtPolyRef> path(4096);
	static std::vector<float> straight(3 * 4096);
	float total = 0.0f;
	float from[3] = {a.start.x, 0.0f, a.start.y};
	for (uint32_t g = 0; g < a.goal_count; ++g) {
		const float to[3] = {a.goals[g].x, 0.0f, a.goals[g].y};
		float len = dist2d(from, to);
		dtPolyRef r0 = 0, r1 = 0;
		float p0[3], p1[3];
		int np = 0, ns = 0;
		if (dtStatusSucceed(q->findNearestPoly(from, ext, filter, &r0, p0)) && r0 &&
		    dtStatusSucceed(q->findNearestPoly(to, ext, filter, &r1, p1)) && r1 &&
		    dtStatusSucceed(q->findPath(r0, r1, p0, p1, filter, path.data(), &np, (int)path.size())) &&
		    np > 0 &&
		    dtStatusSucceed(q->findStraightPath(p0, p1, path.data(), np, straight.data(), nullptr, nullptr, &ns,
		                                        (int)path.size())) &&
		    ns > 0) {
			len = dist2d(from, &straight[0]);
			for (int k = 1; k < ns; ++k)
				len += dist2d(&straight[(size_t)(k - 1) * 3], &straight[(size_t)k * 3]);
			len += dist2d(&straight[(size_t)(ns - 1) * 3], to);
		}
		total += len;
		from[0] = to[0], from[2] = to[2];
	}
	return total;
}

int steersuite_case(const char *path, float limit_override) {
	sb_case c;
	char err[512];
	if (sb_case_load(path, &c, err, sizeof err) != 0) {
		std::fprintf(stderr, "detourcrowd_bench: %s\n", err);
		return -1;
	}
	const uint32_t n = c.agent_count;
	dtNavMesh *nav = case_navmesh(c);
	dtCrowd *crowd = dtAllocCrowd();
	dtNavMeshQuery *q = dtAllocNavMeshQuery();
	if (!nav || !crowd || !q || dtStatusFailed(q->init(nav, 65535)) || !crowd->init((int)n, c.max_radius, nav)) {
		std::fprintf(stderr, "detourcrowd_bench: %s: navmesh or crowd init failed\n", c.name);
		return -1;
	}
	dtObstacleAvoidanceParams oa = *crowd->getObstacleAvoidanceParams(3);
	oa.adaptiveDivs = 7;
	oa.adaptiveRings = 3;
	oa.adaptiveDepth = 3;
	crowd->setObstacleAvoidanceParams(3, &oa);
	const dtQueryFilter *filter = crowd->getFilter(0);
	const dtNavMeshQuery *cq = crowd->getNavMeshQuery();
	const float ext[3] = {2.0f, 4.0f, 2.0f};
	std::vector<float> shortest(n);
	for (uint32_t i = 0; i < n; ++i) shortest[i] = detour_shortest(q, filter, c.agents[i]);
	sb_metrics *m = sb_metrics_create(&c, shortest.data());
	std::vector<int> idx(n, -1);
	std::vector<uint32_t> goal(n, 0);
	std::vector<orca_vec2> pos(n);
	bool *active = new bool[n];
	uint32_t left = n;
	auto target = [&](uint32_t i) {
		const orca_vec2 g = c.agents[i].goals[goal[i]];
		const float p[3] = {g.x, 0.0f, g.y};
		dtPolyRef ref = 0;
		float nearest[3];
		if (dtStatusFailed(cq->findNearestPoly(p, ext, filter, &ref, nearest)) || !ref ||
		    !crowd->requestMoveTarget(idx[i], ref, nearest))
			return false;
		return true;
	};
	auto leave = [&](uint32_t i) {
		active[i] = false;
		left--;
		crowd->removeAgent(idx[i]);
	};
	for (uint32_t i = 0; i < n; ++i) {
		const sb_agent &a = c.agents[i];
		dtCrowdAgentParams ap;
		std::memset(&ap, 0, sizeof ap);
		ap.radius = a.radius;
		ap.height = 2.0f;
		ap.maxAcceleration = 8.0f;
		ap.maxSpeed = a.speed;
		ap.collisionQueryRange = 15.0f;
		ap.pathOptimizationRange = 30.0f;
		ap.separationWeight = 2.0f;
		ap.updateFlags = DT_CROWD_ANTICIPATE_TURNS | DT_CROWD_OPTIMIZE_VIS | DT_CROWD_OPTIMIZE_TOPO |
		                 DT_CROWD_OBSTACLE_AVOIDANCE;
		ap.obstacleAvoidanceType = 3;
		const float p[3] = {a.start.x, 0.0f, a.start.y};
		idx[i] = crowd->addAgent(p, &ap);
		pos[i] = a.start;
		active[i] = idx[i] >= 0;
		if (idx[i] < 0) {
			left--;
			sb_metrics_unreachable(m, i);
		} else if (!target(i)) {
			sb_metrics_unreachable(m, i);
			leave(i);
		}
	}
	const float dt = c.time_step, limit = limit_override > 0.0f ? limit_override : c.time_limit;
	const uint64_t max_steps = (uint64_t)std::ceil((double)limit / dt);
	uint64_t step = 0;
	double ms = 0.0;
	while (left > 0 && step < max_steps) {
		const auto t0 = std::chrono::steady_clock::now();
		crowd->update(dt, nullptr);
		ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
		step++;
		for (uint32_t i = 0; i < n; ++i)
			if (active[i]) {
				const float *p = crowd->getAgent(idx[i])->npos;
				pos[i] = orca_vec2{p[0], p[2]};
			}
		sb_metrics_step(m, dt, pos.data(), active);
		for (uint32_t i = 0; i < n; ++i) {
			if (!active[i]) continue;
			const sb_agent &a = c.agents[i];
			const float dx = pos[i].x - a.goals[goal[i]].x, dy = pos[i].y - a.goals[goal[i]].y;
			if (dx * dx + dy * dy > a.radius * a.radius) continue;
			if (++goal[i] < a.goal_count) {
				if (!target(i)) {
					sb_metrics_unreachable(m, i);
					leave(i);
				}
				continue;
			}
			sb_metrics_arrived(m, i, (double)step * dt);
			leave(i);
		}
	}
	sb_summary s;
	sb_metrics_summary(m, &s);
	sb_print_row(c.name, "detour", &s, step ? ms / (double)step : 0.0);
	sb_metrics_destroy(m);
	delete[] active;
	dtFreeNavMeshQuery(q);
	dtFreeCrowd(crowd);
	dtFreeNavMesh(nav);
	sb_case_free(&c);
	return 0;
}

int steersuite_main(int argc, char **argv) {
	float limit = 0.0f;
	bool header = true;
	int rc = 0, cases = 0;
	for (int i = 0; i < argc && rc == 0; ++i) {
		if (!std::strcmp(argv[i], "--time-limit") && i + 1 < argc) {
			limit = std::strtof(argv[++i], nullptr);
		} else if (!std::strcmp(argv[i], "--no-header")) {
			header = false;
		} else {
			if (header && cases == 0) sb_print_header();
			cases++;
			rc = steersuite_case(argv[i], limit);
		}
	}
	if (cases == 0) {
		std::fprintf(stderr,
		             "usage: detourcrowd_bench steersuite [--time-limit S] [--no-header] CASE.txt...\n");
		return 2;
	}
	return rc == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc > 1 && !std::strcmp(argv[1], "steersuite")) return steersuite_main(argc - 2, argv + 2);
	const char *ref_dir = CROWD_REF_DIR;
	uint64_t cap = 0, steps = 500;
	std::vector<const char *> args;
	for (int i = 1; i < argc; ++i) {
		if (!std::strcmp(argv[i], "--cap") && i + 1 < argc)
			cap = std::strtoull(argv[++i], nullptr, 10);
		else if (!std::strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = std::strtoull(argv[++i], nullptr, 10);
		else if (!std::strcmp(argv[i], "--ref-dir") && i + 1 < argc)
			ref_dir = argv[++i];
		else
			args.push_back(argv[i]);
	}
	if (args.empty()) {
		std::fprintf(stderr, "usage: detourcrowd_bench all | circles [FROM TO] | circle N | random N | swap SIDE | "
		                     "cross4 SIDE [--cap STEPS] [--steps STEPS] [--ref-dir DIR]\n");
		return 2;
	}
	const std::string what = args[0];
	const uint32_t arg = args.size() > 1 ? (uint32_t)std::strtoul(args[1], nullptr, 10) : 0;
	int rc = 0;
	if (what == "all" || what == "circles") {
		const uint32_t from = arg ? arg : 5, to = args.size() > 2 ? (uint32_t)std::strtoul(args[2], nullptr, 10) : 50;
		for (uint32_t n = from; n <= to && rc == 0; ++n)
			rc = circle(n, cap ? cap : 3000);
	}
	if (what == "all" && rc == 0) {
		rc = built("swap", 6, cap ? cap : 3000);
		if (rc == 0)
			rc = built("cross4", 8, cap ? cap : 3000);
		if (rc == 0)
			rc = circle(250, cap ? cap : 20000);
		if (rc == 0)
			rc = circle(1000, cap ? cap : 20000);
		if (rc == 0)
			rc = random_crowd(ref_dir, 10000, steps);
	} else if (what == "circle" && arg) {
		rc = circle(arg, cap ? cap : 20000);
	} else if (what == "random" && arg) {
		rc = random_crowd(ref_dir, arg, steps);
	} else if ((what == "swap" || what == "cross4") && arg) {
		rc = built(what.c_str(), arg, cap ? cap : 3000);
	} else if (what != "all" && what != "circles") {
		std::fprintf(stderr, "detourcrowd_bench: unknown scenario %s\n", what.c_str());
		return 2;
	}
	return rc == 0 ? 0 : 1;
}
