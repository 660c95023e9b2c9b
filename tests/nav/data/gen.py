#!/usr/bin/env python3
"""gen.py — writes the walled set-ups of tests/nav/data in the blocks format
(scenario.c reads it): a wall with a gap, a U open away from the goal, a
serpentine of five walls, a room with a door. Walls are 2 units thick,
rectangles counter-clockwise. Run it to regenerate; the files are committed."""

def rect(x0, y0, x1, y1):
    return [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]

def write(name, title, walls, agents):
    with open(name, "w") as f:
        f.write(f"# {title} (tests/nav/data/gen.py)\n")
        f.write("time_step 0.25\n")
        f.write("# agent defaults: neighborDist maxNeighbors timeHorizon timeHorizonObst radius maxSpeed initial_vx initial_vy\n")
        f.write("agent_defaults 15 10 5 5 1.5 2 0 0\n")
        f.write("# goal test: all agents with |pos-goal|^2 <= radius^2\n")
        f.write(f"num_obstacles {len(walls)}\n")
        for i, w in enumerate(walls):
            f.write(f"obstacle {i} {len(w)}\n")
            for x, y in w:
                f.write(f"{x} {y}\n")
        f.write(f"num_agents {len(agents)}\n")
        for i, (x, y, gx, gy) in enumerate(agents):
            f.write(f"{i} {x} {y} {gx} {gy}\n")

# 1. a long wall at x = 0 with one gap (y 60..70); agents left, goals right
write("wall_gap_setup.txt", "wall with a gap",
      [rect(-1, -100, 1, 60), rect(-1, 70, 1, 100)],
      [(-30, -20 + 4 * i, 30, -20 + 4 * i) for i in range(10)])

# 2. a U open to the left (away from the goals on the right); agents inside
write("u_trap_setup.txt", "U open away from the goal",
      [rect(0, -30, 2, 30), rect(-40, 28, 0, 30), rect(-40, -30, 0, -28)],
      [(-8 - 6 * (i % 3), -12 + 6 * (i // 3), 40, -28 + 4 * i) for i in range(15)])

# 3. a serpentine: five walls across a corridor (y -40..40), gaps alternating
#    top and bottom; agents at the left end, goals at the right end
walls = [rect(-60, -42, 60, -40), rect(-60, 40, 60, 42)]
for k in range(5):
    x = -40 + 20 * k
    if k % 2 == 0:
        walls.append(rect(x - 1, -40, x + 1, 30))   # gap at the top
    else:
        walls.append(rect(x - 1, -30, x + 1, 40))   # gap at the bottom
write("serpentine_setup.txt", "serpentine of five walls", walls,
      [(-54, -24 + 8 * i, 54, -24 + 8 * i) for i in range(7)])

# 4. a room (x -30..30, y -30..30) with a door in its left wall; agents inside,
#    goals outside to the right
write("room_door_setup.txt", "room with a door",
      [rect(-32, -32, 32, -30), rect(-32, 30, 32, 32), rect(30, -30, 32, 30),
       rect(-32, -30, -30, -5), rect(-32, 5, -30, 30)],
      [(-10 + 10 * (i % 3), -10 + 10 * (i // 3), 60, -20 + 5 * i) for i in range(9)])
