#!/usr/bin/env python3
"""table.py — runs SteerSuite's cases (tests/data/steersuite) with steerbench
(quality and reference avoidance, navigation on) and detourcrowd_bench
(DetourCrowd), and prints one Markdown table with the three modes of each case
side by side. Python 3 standard library only.

  table.py --steerbench BIN [--detourcrowd-bench BIN] [--cases a,b,...]
           [--time-limit S | --max-time S] DIR
      the table of every case in DIR (or those named), in file-size order;
      --time-limit runs every case that long, --max-time at most that long

  table.py --steerbench BIN --write-expected FILE --cases a,b,... DIR
      the ctest ratchet: runs the cases in quality and reference mode and
      writes FILE with, per case and mode, the arrivals and deep overlaps seen
      (steerbench --expect fails a later run with fewer arrivals or more deep
      overlaps). Raise it after an improvement; never lower it to pass.
"""
import argparse
import os
import subprocess
import sys

MODES = ("quality", "reference", "detour")


def cases_in(d, names):
    if names:
        return [os.path.join(d, n + ".txt") for n in names]
    files = [os.path.join(d, f) for f in os.listdir(d)
             if f.endswith(".txt") and f not in ("cases.txt", "expected.txt")]
    return sorted(files, key=lambda f: (os.path.getsize(f), f))


def rows(cmd):
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    got = []
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 15 and cells[1] in MODES:
            got.append(cells)
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--steerbench", required=True)
    ap.add_argument("--detourcrowd-bench", default="")
    ap.add_argument("--cases", default="")
    ap.add_argument("--time-limit", default="")
    ap.add_argument("--max-time", type=float, default=0.0)
    ap.add_argument("--write-expected", default="")
    a = ap.parse_args()
    names = [n for n in a.cases.split(",") if n]
    files = cases_in(a.dir, names)
    limit = ["--time-limit", a.time_limit] if a.time_limit else []
    if a.write_expected:
        if not names:
            sys.exit("table.py: --write-expected needs --cases")
        lines = ["# steerbench's ctest ratchet: case mode min_arrived max_deep [time_limit s]",
                 "# written by tests/bench/steersuite/table.py --write-expected; a run that arrives fewer",
                 "# agents or makes more deep overlaps (pairs closer than 2r - 0.01, counted per step) fails."]
        for f in files:
            for r in rows([a.steerbench, "--no-header", "--mode", "quality,reference"] + limit + [f]):
                lines.append(f"{r[0]} {r[1]} {r[3]} {r[10]}" + (f" {a.time_limit}" if a.time_limit else ""))
                print(lines[-1], flush=True)
        with open(a.write_expected, "w") as o:
            o.write("\n".join(lines) + "\n")
        return 0
    print("| case | mode | agents | arrived | unreachable | last arrival s | mean time s | time/free | path/shortest "
          "| collisions | deep | wall | score | steps | ms/step |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for f in files:
        if a.max_time and not a.time_limit:
            own = [float(l.split()[1]) for l in open(f) if l.startswith("time_limit ")]
            if own and own[0] > a.max_time:
                limit = ["--time-limit", f"{a.max_time:g}"]
            else:
                limit = []
        got = rows([a.steerbench, "--no-header", "--mode", "quality,reference"] + limit + [f])
        if a.detourcrowd_bench:
            got += rows([a.detourcrowd_bench, "steersuite", "--no-header"] + limit + [f])
        for r in got:
            print("| " + " | ".join(r) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
