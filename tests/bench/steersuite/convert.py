#!/usr/bin/env python3
"""convert.py — turns SteerSuite test cases (testcases/*.xml of the
SteerSuite/Release repository) into crowd's set-up files for steerbench.

Usage: convert.py SRC_TESTCASES_DIR OUT_DIR [--seed N]

Reads each test case with xml.etree (Python 3 standard library only) and
writes OUT_DIR/<case>.txt in the blocks set-up format of tests/data/ref
(core/tools/scenario.c reads its first five agent columns), extended as
OUT_DIR/README.md describes, plus OUT_DIR/cases.txt: one line per source file,
converted or skipped with the reason.

What it does with SteerSuite's elements (the plane is SteerSuite's x-z plane,
mapped to ours as (x, y) = (x, -z), which keeps left and right as they were):
- <obstacle> (an axis-aligned box; its height is ignored) -> a rectangle;
  <orientedBoxObstacle> (size, thetaY degrees about the up axis) -> a rotated
  rectangle; <circleObstacle> -> a 16-gon around the circle.
- <obstacleRegion> -> numObstacles squares of obstacleSize placed at random
  in the region, not overlapping each other.
- <agent> -> one agent; <agentRegion> -> numAgents agents placed at random in
  the region, none overlapping another agent or an obstacle.
- goals: <seekStaticTarget> (a fixed point, or random: a point of the world
  not inside an obstacle); a <goalSequence> of several is kept in order;
  <seekAxisAlignedBoxRegion> -> the point of the goal box nearest to where
  the agent starts. Any other goal kind (flee, dynamic targets, flow
  directions, idle) or an <agentEmitter> cannot be represented: the case is
  skipped with that reason.
- radius from the file; desired speed from the first goal; the initial
  velocity is the initial direction times the initial speed.
Every random choice comes from random.Random(seed + crc32(case name)), so the
same seed gives the same files on any machine.
"""
import math
import os
import random
import re
import sys
import xml.etree.ElementTree as ET
import zlib

NS = "{http://www.magix.ucla.edu/steerbench}"
TIME_CAP = 1500.0  # seconds: the "25 simulated minutes"
CIRCLE_SIDES = 16


class Skip(Exception):
    pass


def tag(e):
    return e.tag.replace(NS, "")


def child(e, name):
    return e.find(NS + name)


def num(e, name, default=None):
    c = child(e, name)
    if c is None or c.text is None or not c.text.strip():
        if default is None:
            raise Skip(f"missing <{name}>")
        return default
    return float(c.text)


def xyz(e):
    """(x, z) of an XYZ tuple, or None when it says <random>true</random>."""
    r = child(e, "random")
    if r is not None and r.text and r.text.strip() == "true":
        return None
    return (num(e, "x"), num(e, "z"))


def box(e):
    """(xmin, xmax, zmin, zmax); a pair given the wrong way round is swapped."""
    x0, x1, z0, z1 = num(e, "xmin"), num(e, "xmax"), num(e, "zmin"), num(e, "zmax")
    return (min(x0, x1), max(x0, x1), min(z0, z1), max(z0, z1))


def to_plane(x, z):
    return (x, -z)


def rect_poly(xmin, xmax, zmin, zmax):
    """Counter-clockwise rectangle in our plane."""
    (x0, y0), (x1, y1) = to_plane(xmin, zmax), to_plane(xmax, zmin)
    return [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]


def signed_area(p):
    return 0.5 * sum(p[i][0] * p[(i + 1) % len(p)][1] - p[(i + 1) % len(p)][0] * p[i][1] for i in range(len(p)))


def ccw(p):
    return p if signed_area(p) > 0 else list(reversed(p))


def seg_dist(px, py, ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    l2 = dx * dx + dy * dy
    t = 0.0 if l2 == 0 else max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / l2))
    qx, qy = ax + t * dx - px, ay + t * dy - py
    return math.hypot(qx, qy)


def inside(px, py, poly):
    c = False
    n = len(poly)
    for i in range(n):
        (ax, ay), (bx, by) = poly[i], poly[(i + 1) % n]
        if (ay > py) != (by > py) and px < ax + (py - ay) * (bx - ax) / (by - ay):
            c = not c
    return c


class PolyIndex:
    """Polygons bucketed by their bounding boxes (cells of 4 units)."""

    CELL = 4.0

    def __init__(self, polys):
        self.b = {}
        for p in polys:
            xs, ys = [v[0] for v in p], [v[1] for v in p]
            bb = (min(xs), max(xs), min(ys), max(ys))
            for i in range(math.floor(bb[0] / self.CELL), math.floor(bb[1] / self.CELL) + 1):
                for j in range(math.floor(bb[2] / self.CELL), math.floor(bb[3] / self.CELL) + 1):
                    self.b.setdefault((i, j), []).append((bb, p))

    def near(self, x, y, r):
        seen = set()
        for i in range(math.floor((x - r) / self.CELL), math.floor((x + r) / self.CELL) + 1):
            for j in range(math.floor((y - r) / self.CELL), math.floor((y + r) / self.CELL) + 1):
                for bb, p in self.b.get((i, j), ()):
                    if id(p) not in seen:
                        seen.add(id(p))
                        yield bb, p


def clear_of(px, py, r, index):
    """Is the disc (px, py, r) clear of every polygon of the index?"""
    for bb, p in index.near(px, py, r):
        if px + r < bb[0] or px - r > bb[1] or py + r < bb[2] or py - r > bb[3]:
            continue
        if inside(px, py, p):
            return False
        n = len(p)
        for i in range(n):
            if seg_dist(px, py, *p[i], *p[(i + 1) % n]) < r:
                return False
    return True


class Grid:
    """Buckets of placed discs, for the no-overlap test of random placement."""

    def __init__(self, cell):
        self.cell = cell
        self.b = {}

    def key(self, x, y):
        return (math.floor(x / self.cell), math.floor(y / self.cell))

    def free(self, x, y, r):
        kx, ky = self.key(x, y)
        for i in range(kx - 1, kx + 2):
            for j in range(ky - 1, ky + 2):
                for (qx, qy, qr) in self.b.get((i, j), ()):
                    if math.hypot(qx - x, qy - y) < r + qr:
                        return False
        return True

    def add(self, x, y, r):
        self.b.setdefault(self.key(x, y), []).append((x, y, r))


def read_xml(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    # some files put a comment before the XML declaration: drop both
    text = re.sub(r"<\?xml[^>]*\?>", "", text)
    return ET.fromstring(text)


def convert(path, name, seed):
    root = read_xml(path)
    rng = random.Random(seed + zlib.crc32(name.encode()))
    header = child(root, "header")
    wb = box(child(header, "worldBounds"))
    polys, notes = [], []
    agents = []  # (x, y, goals[(gx, gy)], speed, radius, vx, vy)
    pending = []  # agents and regions, placed after every obstacle is known
    obstacle_regions = []
    for e in root:
        t = tag(e)
        if t == "obstacle":
            xmin, xmax, zmin, zmax = box(e)
            if xmax - xmin < 0.01 or zmax - zmin < 0.01:
                notes.append(f"obstacle {xmin} {xmax} {zmin} {zmax} thinner than 0.01: dropped")
                continue
            polys.append(rect_poly(xmin, xmax, zmin, zmax))
        elif t == "orientedBoxObstacle":
            th = math.radians(num(e, "thetaY"))
            sx, sz = num(child(e, "size"), "x"), num(child(e, "size"), "z")
            cx, cz = xyz(child(e, "position"))
            c, s = math.cos(th), math.sin(th)
            pts = []
            for (u, v) in ((-sx / 2, -sz / 2), (sx / 2, -sz / 2), (sx / 2, sz / 2), (-sx / 2, sz / 2)):
                # rotation about the up (y) axis of a right-handed y-up frame
                x, z = cx + c * u + s * v, cz - s * u + c * v
                pts.append(to_plane(x, z))
            polys.append(ccw(pts))
        elif t == "circleObstacle":
            r = num(e, "radius")
            cx, cz = xyz(child(e, "position"))
            px, py = to_plane(cx, cz)
            rr = r / math.cos(math.pi / CIRCLE_SIDES)  # the polygon holds the circle
            polys.append([(px + rr * math.cos(2 * math.pi * k / CIRCLE_SIDES),
                           py + rr * math.sin(2 * math.pi * k / CIRCLE_SIDES)) for k in range(CIRCLE_SIDES)])
        elif t == "obstacleRegion":
            obstacle_regions.append(e)
        elif t in ("agent", "agentRegion"):
            pending.append(e)
        elif t == "agentEmitter":
            raise Skip("agentEmitter (agents appear during the run): not representable")
        elif t in ("header", "suggestedCameraView"):
            pass
        else:
            notes.append(f"<{t}> ignored")
    # random obstacles: squares in the region, not overlapping each other
    for e in obstacle_regions:
        n = int(num(e, "numObstacles"))
        size = num(e, "obstacleSize")
        xmin, xmax, zmin, zmax = box(child(e, "regionBounds"))
        g = Grid(max(size * 1.5, 1.0))
        placed = 0
        for _ in range(n * 200):
            if placed == n:
                break
            x = rng.uniform(xmin + size / 2, xmax - size / 2)
            z = rng.uniform(zmin + size / 2, zmax - size / 2)
            # squares of side `size` apart when their circumscribed discs are
            if not g.free(x, z, size * 0.7072):
                continue
            g.add(x, z, size * 0.7072)
            polys.append(rect_poly(x - size / 2, x + size / 2, z - size / 2, z + size / 2))
            placed += 1
        if placed < n:
            raise Skip(f"obstacleRegion: only {placed} of {n} obstacles fit")

    # world bounds: SteerSuite's, unless they are empty or miss the content
    xs = [v[0] for p in polys for v in p]
    ys = [v[1] for p in polys for v in p]
    lo_x, hi_x = wb[0], wb[1]
    lo_y, hi_y = to_plane(0, wb[3])[1], to_plane(0, wb[2])[1]
    bounds_ok = lo_x < hi_x and lo_y < hi_y
    index = PolyIndex(polys)

    def random_free_point(r):
        if not bounds_ok:
            raise Skip("a random target in a world without bounds")
        for _ in range(100000):
            x, y = rng.uniform(lo_x + r, hi_x - r), rng.uniform(lo_y + r, hi_y - r)
            if clear_of(x, y, r, index):
                return (x, y)
        raise Skip("no free point for a random target")

    def goals_of(e, start, r):
        out, speed, time = [], None, 0.0
        for g in child(e, "goalSequence"):
            k = tag(g)
            if k == "seekStaticTarget":
                p = xyz(child(g, "targetLocation"))
                p = random_free_point(r) if p is None else to_plane(*p)
            elif k == "seekAxisAlignedBoxRegion":
                xmin, xmax, zmin, zmax = box(child(g, "goalRegionBounds"))
                (x0, y1), (x1, y0) = to_plane(xmin, zmin), to_plane(xmax, zmax)
                p = (min(max(start[0], x0), x1), min(max(start[1], y0), y1))
                if "seekAxisAlignedBoxRegion" not in " ".join(notes):
                    notes.append("seekAxisAlignedBoxRegion: goal = the point of the goal box nearest the start")
            else:
                raise Skip(f"goal kind {k}: not representable (only static targets)")
            v = num(g, "desiredSpeed")
            if speed is None:
                speed = v
            elif abs(v - speed) > 1e-6 and "speeds differ" not in " ".join(notes):
                notes.append("goal speeds differ within a sequence: the first is used")
            time += min(num(g, "timeDuration", TIME_CAP), TIME_CAP)
            out.append(p)
        if not out:
            raise Skip("an agent without goals")
        return out, speed, time

    grid = Grid(2.0)
    time_limit = 0.0
    for e in pending:
        ic = child(e, "initialConditions")
        r = num(ic, "radius")
        v0 = num(ic, "speed", 0.0)
        d = child(ic, "direction")
        dd = xyz(d) if d is not None else (0.0, 0.0)
        if dd is None:
            a = rng.uniform(0, 2 * math.pi)
            dd = (math.cos(a), math.sin(a))
        dl = math.hypot(*dd)
        vel = to_plane(v0 * dd[0] / dl, v0 * dd[1] / dl) if dl > 0 else (0.0, 0.0)
        grid.cell = max(grid.cell, 4 * r)
        if tag(e) == "agent":
            p = xyz(child(ic, "position"))
            if p is None:
                raise Skip("an agent at a random position of the world")  # none in the suite
            start = to_plane(*p)
            grid.add(start[0], start[1], r)
            goals, speed, t = goals_of(e, start, r)
            agents.append((start, goals, speed, r, vel))
            time_limit = max(time_limit, t)
            continue
        n = int(num(e, "numAgents"))
        xmin, xmax, zmin, zmax = box(child(e, "regionBounds"))
        placed = 0
        for _ in range(n * 1000):
            if placed == n:
                break
            x, z = rng.uniform(xmin + r, xmax - r) if xmax - xmin > 2 * r else (xmin + xmax) / 2, \
                rng.uniform(zmin + r, zmax - r) if zmax - zmin > 2 * r else (zmin + zmax) / 2
            px, py = to_plane(x, z)
            if not grid.free(px, py, r) or not clear_of(px, py, r, index):
                continue
            grid.add(px, py, r)
            goals, speed, t = goals_of(e, (px, py), r)
            agents.append(((px, py), goals, speed, r, vel))
            time_limit = max(time_limit, t)
            placed += 1
        if placed < n:
            raise Skip(f"agentRegion: only {placed} of {n} agents fit without overlap")
    if not agents:
        scen = scen_file(path)
        if scen is None:
            raise Skip("no agents (a map without a scenario)")
        time_limit = TIME_CAP
        for (sx, sy, gx, gy) in scen_trips(scen, rng):
            # MovingAI cell (column c, row r) is SteerSuite's square x in
            # [c - 256, c - 255], z in [r - 256, r - 255]: agents at cell centres
            start = to_plane(sx - 255.5, sy - 255.5)
            if not grid.free(start[0], start[1], 0.5) or not clear_of(start[0], start[1], 0.5, index):
                continue
            grid.add(start[0], start[1], 0.5)
            agents.append((start, [to_plane(gx - 255.5, gy - 255.5)], 1.3, 0.5, (0.0, 0.0)))
        notes.append(f"agents: {len(agents)} trips of {os.path.basename(scen)} (MovingAI scenario) chosen at random, "
                     "radius 0.5, speed 1.3")
        if not agents:
            raise Skip("no trip of the map's scenario starts clear of the obstacles")

    # bounds that hold everything, when SteerSuite's do not
    axs = [a[0][0] for a in agents] + [g[0] for a in agents for g in a[1]] + xs
    ays = [a[0][1] for a in agents] + [g[1] for a in agents for g in a[1]] + ys
    if not bounds_ok or min(axs) < lo_x or max(axs) > hi_x or min(ays) < lo_y or max(ays) > hi_y:
        notes.append(f"world bounds ({wb[0]} {wb[1]} {wb[2]} {wb[3]}) do not hold the case: bounding box + 10 used")
        lo_x, hi_x, lo_y, hi_y = min(axs) - 10, max(axs) + 10, min(ays) - 10, max(ays) + 10
    return {
        "title": (child(header, "name").text or name).strip(),
        "bounds": (lo_x, lo_y, hi_x, hi_y),
        "polys": polys,
        "agents": agents,
        "time_limit": time_limit if time_limit > 0 else TIME_CAP,
        "notes": notes,
    }


SCEN_TRIPS = 100


def scen_file(path):
    """star_craft/<map>.xml comes with star_craft/scen_files/<map>.map.scen."""
    d, b = os.path.split(path)
    p = os.path.join(d, "scen_files", b[:-4] + ".map.scen")
    return p if os.path.exists(p) else None


def scen_trips(path, rng):
    """SCEN_TRIPS trips of a MovingAI .scen file (bucket map w h sx sy gx gy length), chosen at random."""
    rows = []
    for line in open(path):
        f = line.split()
        if len(f) == 9 and f[0].isdigit():
            rows.append(tuple(int(v) for v in f[4:8]))
    return rng.sample(rows, min(SCEN_TRIPS, len(rows)))


def f(v):
    s = f"{v:.4f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def write(case, out_path, src_rel, seed):
    with open(out_path, "w") as o:
        o.write(f"# SteerSuite test case {src_rel} ({case['title']}), converted by tests/bench/steersuite/convert.py, seed {seed}\n")
        o.write("# derived from SteerSuite's test cases (GPLv3): see README.md and COPYING beside this file\n")
        for n in case["notes"]:
            o.write(f"# note: {n}\n")
        o.write("time_step 0.05\n")
        radius = max(a[3] for a in case["agents"])
        speed = max(a[2] for a in case["agents"])
        o.write("# agent defaults: neighborDist maxNeighbors timeHorizon timeHorizonObst radius maxSpeed initial_vx initial_vy\n")
        o.write(f"agent_defaults 15 10 10 10 {f(radius)} {f(speed)} 0 0\n")
        o.write("# world_bounds xmin ymin xmax ymax: the walkable world\n")
        b = case["bounds"]
        o.write(f"world_bounds {f(b[0])} {f(b[1])} {f(b[2])} {f(b[3])}\n")
        o.write("# time_limit: seconds the case runs at most (SteerSuite's timeDuration, at most 1500)\n")
        o.write(f"time_limit {f(case['time_limit'])}\n")
        o.write(f"num_obstacles {len(case['polys'])}\n")
        for i, p in enumerate(case["polys"]):
            o.write(f"obstacle {i} {len(p)}\n")
            for (x, y) in p:
                o.write(f"{f(x)} {f(y)}\n")
        o.write("# agents: id x y goal_x goal_y speed radius vx vy [goal_x goal_y ...further goals in order]\n")
        o.write(f"num_agents {len(case['agents'])}\n")
        for i, (s, goals, speed, r, v) in enumerate(case["agents"]):
            rest = " ".join(f"{f(g[0])} {f(g[1])}" for g in goals[1:])
            o.write(f"{i} {f(s[0])} {f(s[1])} {f(goals[0][0])} {f(goals[0][1])} {f(speed)} {f(r)} {f(v[0])} {f(v[1])}"
                    + (f" {rest}" if rest else "") + "\n")


def main(argv):
    seed = 1
    args = []
    i = 0
    while i < len(argv):
        if argv[i] == "--seed":
            seed = int(argv[i + 1])
            i += 2
        else:
            args.append(argv[i])
            i += 1
    if len(args) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    src, out = args
    os.makedirs(out, exist_ok=True)
    files = []
    for d, _, names in sorted(os.walk(src)):
        for n in sorted(names):
            if n.endswith(".xml"):
                files.append(os.path.relpath(os.path.join(d, n), src))
    index = []
    seen = {}
    # top-level files first, so a copy in a subdirectory is the one skipped
    for rel in sorted(files, key=lambda r: (os.path.dirname(r) != "", r)):
        if rel == "TestCaseSchema.xsd":
            continue
        data = open(os.path.join(src, rel), "rb").read()
        base = os.path.basename(rel)
        if os.path.dirname(rel) and base in seen and seen[base] == data:
            index.append(f"{rel}\tskipped\tthe same file as {base}")
            continue
        seen[base] = data
        name = rel[:-4].replace("/", "-")
        try:
            case = convert(os.path.join(src, rel), name, seed)
        except Skip as e:
            index.append(f"{rel}\tskipped\t{e}")
            continue
        write(case, os.path.join(out, name + ".txt"), rel, seed)
        index.append(f"{rel}\t{name}.txt\t{len(case['agents'])} agents, {len(case['polys'])} obstacles"
                     + ("; " + "; ".join(case["notes"]) if case["notes"] else ""))
    with open(os.path.join(out, "cases.txt"), "w") as o:
        o.write(f"# source file (SteerSuite testcases/) <TAB> set-up written or 'skipped' <TAB> what / why; seed {seed}\n")
        o.write("\n".join(index) + "\n")
    print("\n".join(index))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
