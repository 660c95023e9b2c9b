#!/usr/bin/env python3
"""Write a dense random crowd set-up like tests/data/ref/random*_setup.csv.

Agents on a jittered grid (spacing 4: agent k sits in cell (k % W, k // W),
W = ceil(sqrt(N)), at 4*cell + 2 + u with u uniform in [-0.5, 0.5)), each with
a goal uniform in the square [0, 4W)^2. Numbers are float32 values written
with %.9g, agent rows in id order: `agent_id,x,y,goal_x,goal_y`.

The same N and seed give the same file on every machine (Python's Mersenne
Twister is fixed by the language). N = 100000 gives the 1,268-unit square
used by tests/bench/vs_rvo2.sh.

usage: gen_random_setup.py N OUT.csv [--seed S]
"""
import math
import struct
import sys
import random


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def main(argv):
    if len(argv) not in (3, 5) or (len(argv) == 5 and argv[3] != "--seed"):
        sys.stderr.write(__doc__)
        return 2
    n = int(argv[1])
    if n < 1 or n > 1_000_000:
        sys.stderr.write("gen_random_setup: N must be 1..1000000\n")
        return 2
    seed = int(argv[4]) if len(argv) == 5 else 12
    width = math.isqrt(n - 1) + 1
    side = 4.0 * width
    rng = random.Random(seed)
    with open(argv[2], "w") as out:
        out.write("agent_id,x,y,goal_x,goal_y\n")
        for k in range(n):
            col, row = k % width, k // width
            x = f32(4.0 * col + 2.0 + (rng.random() - 0.5))
            y = f32(4.0 * row + 2.0 + (rng.random() - 0.5))
            gx = f32(rng.random() * side)
            gy = f32(rng.random() * side)
            out.write("%d,%.9g,%.9g,%.9g,%.9g\n" % (k, x, y, gx, gy))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
