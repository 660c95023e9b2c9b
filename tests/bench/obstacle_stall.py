#!/usr/bin/env python3
"""obstacle_stall.py — does adding obstacles stall a running crowd-server?
(issue 14, item 2: 75 polygons x 256 vertices in one write held the next tick
back 1.5-2.2 s.) Starts crowd-server, spawns a crowd, subscribes to every tick,
then sends P AddObstacle requests (V-vertex polygons) in one write, and reports
the time until every Ack came and the longest gap between two snapshots around
it, against the tick period.

  python3 tests/bench/obstacle_stall.py --server build/server/crowd-server [--polygons 75] [--vertices 256]
"""
import argparse
import math
import random
import re
import socket
import struct
import subprocess
import sys
import time


# Protobuf wire helpers shared with the soak (this script's folder is on sys.path).
from soak import field, varint  # noqa: E402


def msg(rid, num, body):
    m = field(1, 0, rid) + field(num, 2, body)
    return varint(len(m)) + m


def read_varint(buf, pos):
    shift = value = 0
    while True:
        if pos >= len(buf):
            return None, pos
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def frames(self, timeout):
        """Yield (arrival time, first tag byte) of each whole ServerMessage."""
        self.s.settimeout(timeout)
        data = self.s.recv(1 << 20)
        if not data:
            raise EOFError
        now = time.monotonic()
        self.buf += data
        out = []
        pos = 0
        while True:
            n, p = read_varint(self.buf, pos)
            if n is None or p + n > len(self.buf):
                break
            out.append((now, self.buf[p] if n else 0))
            pos = p + n
        self.buf = self.buf[pos:]
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default="build/server/crowd-server")
    ap.add_argument("--polygons", type=int, default=75)
    ap.add_argument("--vertices", type=int, default=256)
    ap.add_argument("--agents", type=int, default=2000)
    ap.add_argument("--tick-rate", type=int, default=30)
    a = ap.parse_args()
    proc = subprocess.Popen([a.server, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--tick-rate",
                             str(a.tick_rate), "--token", "a=admin", "--max-obstacles", str(max(1000, a.polygons)),
                             "--max-obstacle-vertices", str(max(256, a.vertices))],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    port = http = None
    for line in proc.stdout:  # the lines themselves are the events
        m = re.search(r"listening tcp 127\.0\.0\.1:(\d+)", line)
        port = int(m.group(1)) if m else port
        m = re.search(r"listening http 127\.0\.0\.1:(\d+)", line)
        http = int(m.group(1)) if m else http
        if port and http:
            break

    def step_seconds():
        import urllib.request
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % http, timeout=10).read().decode()
        get = lambda name: float(re.search(r"^%s (\S+)" % name, text, re.M).group(1))
        return get("crowd_step_seconds_total"), get("crowd_ticks_total")
    c = Conn(port)
    hello = field(1, 0, 1) + field(3, 2, b"a") + field(4, 2, b"stall")
    spawn = b"".join(field(1, 2, field(1, 2, struct.pack("<BfBf", 0x0D, random.uniform(-900, 900), 0x15,
                                                                   random.uniform(-900, 900))) +
                                field(2, 2, struct.pack("<BfBf", 0x0D, random.uniform(-900, 900), 0x15,
                                                         random.uniform(-900, 900))))
                     for _ in range(a.agents))
    c.s.sendall(msg(1, 2, hello) + msg(2, 3, spawn) + msg(3, 9, field(2, 0, 1)))
    # wait for 60 snapshots of steady state
    gaps, last, seen = [], None, 0
    while seen < 60:
        for t, tag in c.frames(10):
            if tag == 0x22:
                if last is not None:
                    gaps.append(t - last)
                last, seen = t, seen + 1
    steady = max(gaps)
    s0, k0 = step_seconds()
    rnd = random.Random(1)
    batch = b""
    for i in range(a.polygons):
        cx, cy, r = rnd.uniform(-900, 900), rnd.uniform(-900, 900), rnd.uniform(2, 12)
        xs = [cx + r * math.cos(2 * math.pi * k / a.vertices) for k in range(a.vertices)]
        ys = [cy + r * math.sin(2 * math.pi * k / a.vertices) for k in range(a.vertices)]
        body = field(1, 2, struct.pack("<%df" % a.vertices, *xs)) + field(2, 2, struct.pack("<%df" % a.vertices, *ys))
        batch += msg(100 + i, 7, body)
    t0 = time.monotonic()
    c.s.sendall(batch)
    acks = errors = 0
    worst, later, after = 0.0, 0.0, 0
    while acks + errors < a.polygons or after < 30:
        for t, tag in c.frames(30):
            if tag == 0x12:
                acks += 1
                if acks + errors == a.polygons:
                    t_acked = t - t0
            elif tag == 0x1A:
                errors += 1
            elif tag == 0x22:
                worst = max(worst, t - last)
                if acks + errors == a.polygons:
                    after += 1
                    if after > 5:  # once the new obstacle set has gone out
                        later = max(later, t - last)
                last = t
    s1, k1 = step_seconds()
    proc.terminate()
    proc.wait()
    print("mean step during and after the change: %.1f ms over %d ticks (before: %.1f ms)" %
          ((s1 - s0) / (k1 - k0) * 1e3, k1 - k0, s0 / k0 * 1e3))
    print("obstacle_stall: %d agents at %d Hz; %d polygons x %d vertices in one write: all answered after %.1f ms "
          "(%d acks, %d errors); longest snapshot gap %.1f ms, from the 6th snapshot after %.1f ms "
          "(steady state before: %.1f ms, period %.1f ms)" %
          (a.agents, a.tick_rate, a.polygons, a.vertices, t_acked * 1e3, acks, errors, worst * 1e3, later * 1e3,
           steady * 1e3, 1e3 / a.tick_rate))
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
