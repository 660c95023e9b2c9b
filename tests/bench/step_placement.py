#!/usr/bin/env python3
"""step_placement.py: from `perf sched timehist` output of a crowd-server
run, how often the step's two threads shared one processor while the other
idled. The engine pool's worker is taken to be the server thread that ran
longest (it runs a share of every parallel job). In 2-ms stretches, it counts
those where the worker ran, and of them those where one processor ran both
the worker and another server thread and the other processor was idle for
nine tenths of the stretch or more. For 2-processor machines.

    perf sched record -a -o sched.data -- sleep 2     # during a server_load.py run
    perf sched timehist -i sched.data > timehist.txt
    python3 tests/bench/step_placement.py timehist.txt
"""
import re
import sys

STRETCH = 0.002


def main():
    runs = []  # (start, end, cpu, task)
    for line in open(sys.argv[1]):
        f = line.split()
        if len(f) < 6:
            continue
        try:
            end, cpu, ran_ms = float(f[0]), int(f[1].strip("[]")), float(f[-1])
        except ValueError:
            continue
        runs.append((end - ran_ms / 1000.0, end, cpu, " ".join(f[2:-3])))
    server = {}
    for s, e, _, task in runs:
        if task.startswith("crowd-server["):
            server[task] = server.get(task, 0.0) + (e - s)
    if not server:
        sys.exit("no crowd-server threads in the capture")
    worker = max(server, key=server.get)
    t0, t1 = min(r[0] for r in runs), max(r[1] for r in runs)
    stretches = int((t1 - t0) / STRETCH)
    by_stretch = [[] for _ in range(stretches + 1)]
    for r in runs:
        for k in range(max(0, int((r[0] - t0) / STRETCH)), min(stretches, int((r[1] - t0) / STRETCH)) + 1):
            by_stretch[k].append(r)
    stepping = shared = 0
    for k in range(stretches):
        a, b = t0 + k * STRETCH, t0 + (k + 1) * STRETCH
        busy = {0: 0.0, 1: 0.0}
        tasks = {0: set(), 1: set()}
        for s, e, cpu, task in by_stretch[k]:
            overlap = min(e, b) - max(s, a)
            if overlap <= 0 or "idle" in task or cpu not in busy:
                continue
            busy[cpu] += overlap
            if task in server:
                tasks[cpu].add(task)
        if not any(worker in tasks[c] for c in (0, 1)):
            continue
        stepping += 1
        for c in (0, 1):
            if worker in tasks[c] and len(tasks[c]) > 1 and busy[1 - c] < 0.1 * STRETCH:
                shared += 1
    print("pool worker %s; 2-ms stretches with it running: %d; of them both step threads on one processor, "
          "the other idle: %d" % (re.sub(r"\s+", " ", worker), stepping, shared))


if __name__ == "__main__":
    main()
