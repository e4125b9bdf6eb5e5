#!/usr/bin/env python3
"""Merges repeated runs of one benchmark (same JSON shape) into one file.

usage: bench/merge_runs.py OUT.json RUN1.json RUN2.json ...
Each result row becomes the median over the runs of ops_per_sec, p50_ns and
p99_ns, with ops_per_sec_min/max and runs added; prints a table of the medians
with the min-max spread of ops/s. This machine is a small VM whose figures
move by tens of percent from run to run, so one run is not a measurement.
"""
import json
import statistics
import sys


def key(r):
    return (r["path"], r["operation"], r["bytes"], r["in_flight"])


def rate(x):
    return f"{x / 1e6:.2f} M/s" if x >= 1e6 else f"{x / 1e3:.1f} K/s" if x >= 1e3 else f"{x:.0f} /s"


def ns(x):
    return f"{x / 1e6:.2f} ms" if x >= 1e6 else f"{x / 1e3:.2f} us" if x >= 1e3 else f"{x:.0f} ns"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    runs = []
    for path in sys.argv[2:]:
        with open(path) as f:
            runs.append(json.load(f))
    merged = {"benchmark": runs[0]["benchmark"], "configuration": dict(runs[0]["configuration"]),
              "results": []}
    merged["configuration"]["runs"] = len(runs)
    rows = {}
    order = []
    for run in runs:
        for r in run["results"]:
            if key(r) not in rows:
                rows[key(r)] = []
                order.append(key(r))
            rows[key(r)].append(r)
    print(f"{'path':9}{'operation':32}{'bytes':>8}{'flight':>7}{'ops/s (median)':>16}"
          f"{'min-max':>24}{'p50':>11}{'p99':>11}")
    for k in order:
        rs = rows[k]
        ops = [r["ops_per_sec"] for r in rs]
        out = dict(rs[0])
        out["ops_per_sec"] = statistics.median(ops)
        out["ops_per_sec_min"] = min(ops)
        out["ops_per_sec_max"] = max(ops)
        out["p50_ns"] = statistics.median(r["p50_ns"] for r in rs)
        out["p99_ns"] = statistics.median(r["p99_ns"] for r in rs)
        out["runs"] = len(rs)
        merged["results"].append(out)
        print(f"{k[0]:9}{k[1]:32}{k[2]:>8}{k[3]:>7}{rate(out['ops_per_sec']):>16}"
              f"{rate(min(ops)) + ' - ' + rate(max(ops)):>24}{ns(out['p50_ns']):>11}"
              f"{ns(out['p99_ns']):>11}")
    with open(sys.argv[1], "w") as f:
        json.dump(merged, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
