#!/usr/bin/env python3
"""Draws seed 000's Fig. 7 analogue from bench/ycsb.sh's results and prints the table.

usage: bench/plot_ycsb.py [DIR]   (default bench/results/ycsb)
Reads DIR/<config>-r<ratio>.json, writes DIR/summary.json (all points and the configuration
they share), DIR/fig7.png (transactions/s vs read ratio, one line per configuration; failed
points circled in red) and prints the table, with the paper's ratios (RAMP (GET*, PUT+) and
RAMP (GET+, PUT+) over RAMP (GET, PUT) at 100 % reads), to stdout and DIR/summary.txt.
"""
import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from plot_seed000 import SERIES as SEED_SERIES  # noqa: E402  (bench/, beside this file)

# config id -> (label, colour, marker, linestyle): seed 000's series as bench/plot_seed000.py
# draws them (same labels and colours as Figs. 4-6), plus the proxy.
SERIES = {
    "ramp-tcp": SEED_SERIES["ramp-tcp"],
    "ramp-ring": SEED_SERIES["ramp-ucx-ring"],
    "ramp-read": SEED_SERIES["ramp-ucx-read"],
    "s2pl-tcp": SEED_SERIES["s2pl-tcp"],
    "none-read": SEED_SERIES["none-ucx-read"],
    "resp-ucx": ("RAMP through the proxy (resp, MULTI/EXEC), UCX", "tab:purple", "s", ":"),
}
BASE = "ramp-tcp"
# The paper's Fig. 7 ratios at 100 % reads, over RAMP (GET, PUT) on IPoIB.
PAPER = {"ramp-read": 2.67, "ramp-ring": 2.06}
# Configuration keys every point shares (the rest vary by point).
COMMON = ("txnlen", "threads", "client_processes", "seconds", "reps", "records", "field_count",
          "field_length", "request_distribution", "nodes", "partitions_per_node", "spin_us",
          "cluster", "cores", "host", "commit", "ycsb_tree", "binary", "jni", "java",
          "ycsb_core", "started", "load_average_at_start", "sweep_command", "sweep_seconds")


def load(d):
    points, cfg = [], None
    for path in sorted(glob.glob(os.path.join(d, "*-r*.json"))):
        with open(path) as f:
            doc = json.load(f)
        c = doc["configuration"]
        if cfg is None:
            cfg = {k: c[k] for k in COMMON if k in c}
        r = doc["results"]
        points.append({
            "series": doc["series"], "file": os.path.basename(path),
            "mode": c["mode"], "backend": c["backend"], "isolation": c["isolation"],
            "get": c["get"], "put": c["put"], "workload": c["workload"],
            "read_proportion": c["read_proportion"], "command": c["command"],
            "ops_per_sec": r["ops_per_sec"], "txn_per_sec": r["txn_per_sec"],
            "read_ops": r.get("read_ops", 0), "read_avg_us": r.get("read_avg_us"),
            "read_p99_us": r.get("read_p99_us"),
            "update_ops": r.get("update_ops", 0), "update_avg_us": r.get("update_avg_us"),
            "update_p99_us": r.get("update_p99_us"),
            "failed_ops": r["failed_ops"], "returns": r.get("returns", {}),
            "runs": doc.get("runs", []), "failed_runs": doc.get("failed_runs", 0),
            "runs_failed_ops": doc.get("runs_failed_ops", [r["failed_ops"]]),
            "cluster_warnings": r.get("cluster_warnings", []),
            "failed": doc.get("failed", False), "failures": doc.get("failures", []),
        })
    if not points:
        sys.exit(f"plot_ycsb.py: no results in {d}")
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump({"benchmark": "ycsb-fig7", "configuration": cfg, "points": points}, f,
                  indent=2)
    return cfg, points


def find(points, series, ratio):
    for p in points:
        if p["series"] == series and abs(p["read_proportion"] - ratio) < 1e-9:
            return p
    return None


def caption(cfg):
    reps = cfg.get("reps", 1)
    return (f"{cfg['nodes']} kv-nodes x {cfg['partitions_per_node']} partition on "
            f"{cfg.get('host', '127.0.0.1')} (ycsb/run.sh clusters, spin_us {cfg['spin_us']}), "
            f"1 YCSB process x {cfg['threads']} threads, txnlen {cfg['txnlen']}\n"
            f"{cfg['records']:,} records of {cfg['field_count']} field x {cfg['field_length']} B, "
            f"{cfg['request_distribution']}, reads + updates, "
            f"{cfg['seconds']} s run phase per point, "
            + (f"median of {reps} runs (bars: min-max)" if reps > 1 else "1 run")
            + f", {cfg['cores']} cores, commit {cfg['commit'][:12]}\n"
            "native = C++ client over JNI; tcp series on a tcp cluster, UCX series on UCX "
            "shared memory (no InfiniBand)")


def plot(cfg, points, path):
    ratios = sorted({p["read_proportion"] for p in points})
    fig, ax = plt.subplots(figsize=(9, 5.4))
    txn = cfg["txnlen"]
    allys = []
    failed_label = False
    for s, (label, colour, marker, style) in SERIES.items():
        xy = [(r, find(points, s, r)) for r in ratios]
        xy = [(r, p) for r, p in xy if p]
        if not xy:
            continue
        xs = [100 * r for r, _ in xy]
        ys = [p["txn_per_sec"] for _, p in xy]
        allys += [y for y in ys if y > 0]
        ax.plot(xs, ys, marker=marker, linestyle=style, color=colour, label=label)
        if cfg.get("reps", 1) > 1:
            lo = [p["txn_per_sec"] - min(p["runs"]) / txn for _, p in xy]
            hi = [max(p["runs"]) / txn - p["txn_per_sec"] for _, p in xy]
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="none", ecolor=colour, capsize=3)
        bad = [(100 * r, max(p["txn_per_sec"], 1)) for r, p in xy if p["failed"]]
        if bad:
            ax.scatter(*zip(*bad), s=180, facecolors="none", edgecolors="red", linewidths=1.6,
                       zorder=5, label=None if failed_label else
                       "failed point: a run with a failed operation (median run shown)")
            failed_label = True
    base100 = find(points, BASE, 1.0)
    for s in PAPER:
        p = find(points, s, 1.0)
        if p and base100 and base100["txn_per_sec"]:
            ax.annotate(f"{p['txn_per_sec'] / base100['txn_per_sec']:.2f}x RAMP tcp "
                        f"(paper {PAPER[s]:.2f}x)", (100, p["txn_per_sec"]), xytext=(-8, 4),
                        textcoords="offset points", ha="right", fontsize=7,
                        color=SERIES[s][1])
    # A log axis only when the series are more than 20x apart (a linear one flattens them).
    if allys and max(allys) / min(allys) > 20:
        ax.set_yscale("log")
        ax.set_ylabel(f"transactions / s (log scale; = YCSB ops/s / {txn})")
    else:
        ax.set_ylim(bottom=0)
        ax.set_ylabel(f"transactions / s (= YCSB ops/s / {txn})")
    ax.set_xticks([100 * r for r in ratios])
    ax.set_xlabel("read proportion, % (rest updates): workloads r0 .. r100")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax.set_title("Fig. 7 analogue: YCSB throughput vs read ratio\n" + caption(cfg), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(cfg, points):
    out = ["seed 000 Fig. 7 (YCSB) with the rampart binding (bench/ycsb.sh)",
           caption(cfg),
           f"sweep: {cfg.get('sweep_command', '?')}  ({cfg.get('sweep_seconds', '?')} s)",
           "'x tcp' = txn/s / RAMP (GET, PUT) over tcp at the same read ratio; avg latency is "
           "YCSB's per-operation average (buffered operations included); 'failed' = failed "
           "operations summed over all runs of the point (a FAILED point's figures are its "
           "median run's)", ""]
    out.append(f"{'read':>4}  {'configuration':<48} {'ops/s':>9} {'txn/s':>8} {'x tcp':>6}"
               f" {'READ ops':>9} {'avg us':>7} {'UPD ops':>9} {'avg us':>7} {'failed':>7}")
    ratios = sorted({p["read_proportion"] for p in points})
    for r in ratios:
        base = find(points, BASE, r)
        for s in SERIES:
            p = find(points, s, r)
            if not p:
                continue
            x = (f"{p['txn_per_sec'] / base['txn_per_sec']:.2f}"
                 if base and base["txn_per_sec"] else "-")
            ra = f"{p['read_avg_us']:.0f}" if p.get("read_avg_us") is not None else "-"
            ua = f"{p['update_avg_us']:.0f}" if p.get("update_avg_us") is not None else "-"
            runs = p["runs"]
            extra = (f"  runs {min(runs):,.0f}-{max(runs):,.0f} ops/s" if len(runs) > 1 else "")
            flag = (f"FAILED ({p['failed_runs']} of {len(runs)} runs)" if p["failed"] else "")
            out.append(f"{100 * r:>3.0f}%  {SERIES[s][0]:<48} {p['ops_per_sec']:>9,.0f}"
                       f" {p['txn_per_sec']:>8,.0f} {x:>6} {p['read_ops']:>9,} {ra:>7}"
                       f" {p['update_ops']:>9,} {ua:>7} {sum(p['runs_failed_ops']):>7,}"
                       f" {flag}{extra}")
        out.append("")
    out.append("At 100 % reads, over RAMP (GET, PUT) on tcp (paper: over IPoIB):")
    base = find(points, BASE, 1.0)
    for s, paper in PAPER.items():
        p = find(points, s, 1.0)
        if p and base and base["txn_per_sec"]:
            out.append(f"  {SERIES[s][0]:<48} {p['txn_per_sec'] / base['txn_per_sec']:.2f}x"
                       f"   (paper {paper:.2f}x)")
    for s in ("none-read", "s2pl-tcp", "resp-ucx"):
        p = find(points, s, 1.0)
        if p and base and base["txn_per_sec"]:
            out.append(f"  {SERIES[s][0]:<48} {p['txn_per_sec'] / base['txn_per_sec']:.2f}x")
    bad = [p for p in points if p["failed"]]
    out.append("")
    out.append(f"failed points: {len(bad)}" + "".join(
        f"\n  {p['series']} {p['workload']}: " + " | ".join(p["failures"]) for p in bad))
    warned = [(p, w) for p in points for w in p["cluster_warnings"]]
    if warned:
        out.append("cluster warnings in the median runs:"
                   + "".join(f"\n  {p['series']} {p['workload']}: {w}" for p, w in warned[:20]))
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help")):
        sys.exit(__doc__)
    d = sys.argv[1] if len(sys.argv) == 2 else "bench/results/ycsb"
    cfg, points = load(d)
    plot(cfg, points, os.path.join(d, "fig7.png"))
    text = table(cfg, points)
    with open(os.path.join(d, "summary.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    print(f"plot: {d}/fig7.png")


if __name__ == "__main__":
    main()
