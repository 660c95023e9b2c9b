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
#include <DetourCrowd.h>
#include <DetourNavMesh.h>
#include <DetourNavMeshBuilder.h>
#include <DetourNavMeshQuery.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "quality_scenarios.h"

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

} // namespace

int main(int argc, char **argv)
{
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
