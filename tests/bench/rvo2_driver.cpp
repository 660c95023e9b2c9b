// rvo2_driver — drives the RVO2 library (snape/RVO2, built outside this repo by
// tests/bench/vs_rvo2.sh from a source directory it is given) through its
// public API on the scenarios orca_bench runs, so both are timed side by side.
// Written from RVO2's public header only; none of RVO2's code is in this repo.
// Rules (defaults, preferred-velocity rule, circle set-up): tests/data/ref/README.md.
//
//   rvo2_driver setup FILE.csv [--steps K] [--dump OUT.csv]
//   rvo2_driver blocks blocks_setup.txt [--steps K] [--dump OUT.csv]
//   rvo2_driver circle N [--steps K] [--dump OUT.csv]
//
// Prints "median ms/step X" (each doStep timed with a steady clock). With
// --dump it writes the reference trajectory format (step,agent_id,x,y,vx,vy,
// %.9g) and stops early when every agent is home, as the reference files do.
// Threads: RVO2 built with -fopenmp uses OMP_NUM_THREADS.
#include <RVOSimulator.h>
#include <Vector2.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <ctime>
#include <string>
#include <vector>

namespace {

struct Scenario {
  float time_step = 0.25f;
  float neighbor_dist = 15.0f, time_horizon = 10.0f, time_horizon_obst = 10.0f;
  float radius = 1.5f, max_speed = 2.0f;
  std::size_t max_neighbors = 10;
  float goal_dist_sq = -1.0f;  // < 0: within the agent's radius
  std::vector<RVO::Vector2> start, goal;
  std::vector<std::vector<RVO::Vector2>> obstacles;
};

bool load_csv(const char *path, Scenario *s) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    unsigned id;
    float x, y, gx, gy;
    if (std::sscanf(line.c_str(), "%u,%f,%f,%f,%f", &id, &x, &y, &gx, &gy) != 5) return false;
    s->start.emplace_back(x, y);
    s->goal.emplace_back(gx, gy);
  }
  return !s->start.empty();
}

bool load_blocks(const char *path, Scenario *s) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  int agents_left = -1, verts_left = 0, skip = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    if (skip > 0) {  // processed vertex table: RVO2 computes its own
      --skip;
      continue;
    }
    if (verts_left > 0) {
      float x, y;
      ls >> x >> y;
      s->obstacles.back().emplace_back(x, y);
      --verts_left;
      continue;
    }
    if (agents_left > 0) {
      unsigned id;
      float x, y, gx, gy;
      ls >> id >> x >> y >> gx >> gy;
      s->start.emplace_back(x, y);
      s->goal.emplace_back(gx, gy);
      --agents_left;
      continue;
    }
    std::string key;
    ls >> key;
    if (key == "time_step") {
      ls >> s->time_step;
    } else if (key == "agent_defaults") {
      float vx, vy;
      ls >> s->neighbor_dist >> s->max_neighbors >> s->time_horizon >> s->time_horizon_obst >> s->radius >>
          s->max_speed >> vx >> vy;
    } else if (key == "goal_test_dist_sq") {
      ls >> s->goal_dist_sq;
    } else if (key == "obstacle") {
      int k;
      ls >> k >> verts_left;
      s->obstacles.emplace_back();
    } else if (key == "obstacle_vertices_processed") {
      ls >> skip;
    } else if (key == "num_agents") {
      ls >> agents_left;
    }
  }
  return !s->start.empty();
}

// orca_bench's circle N, float for float (see tests/data/ref/README.md).
void make_circle(unsigned n, Scenario *s) {
  const float r = 200.0f * static_cast<float>(n) / 250.0f;
  for (unsigned i = 0; i < n; ++i) {
    const float a = static_cast<float>(i) * 2.0f * static_cast<float>(M_PI) / static_cast<float>(n);
    const float x = r * std::cos(a), y = r * std::sin(a);
    s->start.emplace_back(x, y);
    s->goal.emplace_back(-x, -y);
  }
}

// CPU time of the whole process (all threads): on a shared machine it shows
// what a step costs when other programs take the cores away.
double cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void set_preferred_velocities(RVO::RVOSimulator *sim, const Scenario &s) {
  for (std::size_t i = 0; i < s.start.size(); ++i) {
    RVO::Vector2 g = s.goal[i] - sim->getAgentPosition(i);
    if (RVO::absSq(g) > 1.0f) g = RVO::normalize(g);
    sim->setAgentPrefVelocity(i, g);
  }
}

bool done(const RVO::RVOSimulator &sim, const Scenario &s) {
  for (std::size_t i = 0; i < s.start.size(); ++i) {
    const float limit = s.goal_dist_sq >= 0.0f ? s.goal_dist_sq : sim.getAgentRadius(i) * sim.getAgentRadius(i);
    if (RVO::absSq(sim.getAgentPosition(i) - s.goal[i]) > limit) return false;
  }
  return true;
}

void dump(std::FILE *f, const RVO::RVOSimulator &sim, unsigned step) {
  for (std::size_t i = 0; i < sim.getNumAgents(); ++i) {
    const RVO::Vector2 &p = sim.getAgentPosition(i), &v = sim.getAgentVelocity(i);
    std::fprintf(f, "%u,%zu,%.9g,%.9g,%.9g,%.9g\n", step, i, static_cast<double>(p.x()), static_cast<double>(p.y()),
                 static_cast<double>(v.x()), static_cast<double>(v.y()));
  }
}

// The engine's state hashes over RVO2's state, so a test can hold RVO2's end
// state in 16 hex digits: orca_world_state_hash (core/include/orca/orca.h:
// each agent's id (index + 1) and position / velocity bits as one word, in
// blocks of 4,096) and orca_world_state_hash_v1 (FNV-1a over their bytes).
constexpr std::uint64_t kBasis = 14695981039346656037ull, kPrime = 1099511628211ull;
constexpr std::size_t kHashBlock = 4096;

std::uint64_t fnv_u32(std::uint64_t h, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) {
    h ^= (v >> (8 * i)) & 0xffu;
    h *= kPrime;
  }
  return h;
}

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

std::uint64_t state_hash(const RVO::RVOSimulator &sim) {
  const std::size_t n = sim.getNumAgents();
  std::uint64_t h = (kBasis ^ n) * kPrime;
  for (std::size_t begin = 0; begin < n; begin += kHashBlock) {
    std::uint64_t b = kBasis;
    for (std::size_t i = begin; i < n && i < begin + kHashBlock; ++i) {
      const RVO::Vector2 &p = sim.getAgentPosition(i), &v = sim.getAgentVelocity(i);
      const std::uint64_t pv = static_cast<std::uint64_t>(bits(p.x())) << 32 | bits(p.y());
      const std::uint64_t vv = static_cast<std::uint64_t>(bits(v.x())) << 32 | bits(v.y());
      const std::uint64_t word = mix64(static_cast<std::uint64_t>(i + 1) ^ mix64(pv ^ mix64(vv)));
      b = (b ^ word) * kPrime;
    }
    h = (h ^ mix64(b)) * kPrime;
  }
  return h;
}

std::uint64_t state_hash_v1(const RVO::RVOSimulator &sim) {
  std::uint64_t h = kBasis;
  for (std::size_t i = 0; i < sim.getNumAgents(); ++i) {
    const RVO::Vector2 &p = sim.getAgentPosition(i), &v = sim.getAgentVelocity(i);
    h = fnv_u32(h, static_cast<std::uint32_t>(i + 1));
    h = fnv_u32(h, bits(p.x()));
    h = fnv_u32(h, bits(p.y()));
    h = fnv_u32(h, bits(v.x()));
    h = fnv_u32(h, bits(v.y()));
  }
  return h;
}

int usage() {
  std::fprintf(stderr,
               "usage: rvo2_driver setup FILE.csv | blocks FILE.txt | circle N  [--steps K] [--dump OUT.csv]\n");
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) return usage();
  Scenario s;
  const std::string kind = argv[1];
  bool ok = false;
  if (kind == "setup")
    ok = load_csv(argv[2], &s);
  else if (kind == "blocks")
    ok = load_blocks(argv[2], &s);
  else if (kind == "circle")
    make_circle(static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10)), &s), ok = !s.start.empty();
  else
    return usage();
  if (!ok) {
    std::fprintf(stderr, "rvo2_driver: cannot load %s\n", argv[2]);
    return 1;
  }
  unsigned steps = 100;
  const char *dump_path = nullptr;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
      steps = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    else if (std::strcmp(argv[i], "--dump") == 0 && i + 1 < argc)
      dump_path = argv[++i];
    else
      return usage();
  }

  RVO::RVOSimulator sim;
  sim.setTimeStep(s.time_step);
  sim.setAgentDefaults(s.neighbor_dist, s.max_neighbors, s.time_horizon, s.time_horizon_obst, s.radius,
                       s.max_speed, RVO::Vector2(0.0f, 0.0f));
  for (const auto &o : s.obstacles) sim.addObstacle(o);
  if (!s.obstacles.empty()) sim.processObstacles();
  for (const auto &p : s.start) sim.addAgent(p);

  std::FILE *out = nullptr;
  if (dump_path) {
    out = std::fopen(dump_path, "w");
    if (!out) {
      std::fprintf(stderr, "rvo2_driver: cannot write %s\n", dump_path);
      return 1;
    }
    std::fprintf(out, "step,agent_id,x,y,vx,vy\n");
    dump(out, sim, 0);
  }
  std::vector<double> ms, cpu;
  ms.reserve(steps);
  cpu.reserve(steps);
  for (unsigned k = 1; k <= steps; ++k) {
    if (out && done(sim, s)) break;
    set_preferred_velocities(&sim, s);
    const double c = cpu_ms();
    const auto a = std::chrono::steady_clock::now();
    sim.doStep();
    const auto b = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(b - a).count());
    cpu.push_back(cpu_ms() - c);
    if (out) dump(out, sim, k);
  }
  if (out) std::fclose(out);
  if (ms.empty()) return 0;
  std::printf("scenario %s %s  agents %zu  steps %zu\n", kind.c_str(), argv[2], s.start.size(), ms.size());
  std::printf("median ms/step %.3f\n", median(ms));
  std::printf("median CPU ms/step (all threads) %.3f\n", median(cpu));
  std::printf("final state hash %016llx\n", static_cast<unsigned long long>(state_hash(sim)));
  std::printf("final state hash v1 %016llx\n", static_cast<unsigned long long>(state_hash_v1(sim)));
  return 0;
}
