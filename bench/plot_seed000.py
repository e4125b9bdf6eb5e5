#!/usr/bin/env python3
"""Draws seed 000's Figs. 4-6 from bench/seed000.sh's results and prints the table.

usage: bench/plot_seed000.py [DIR]   (default bench/results/seed000)
Reads DIR/<series>-k<size>-r<ratio>.json, writes DIR/summary.json (all points),
DIR/fig4-transports.png, DIR/fig5-txn-size.png, DIR/fig6-read-ratio.png
and prints the throughput of every point, with its ratio to RAMP over tcp and
to the no-isolation bound at the same x, to stdout and DIR/summary.txt.
"""
import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# series id -> (label, colour, marker, linestyle)
SERIES = {
    "s2pl-tcp": ("S2PL (GET, PUT), tcp", "tab:red", "v", "-"),
    "ramp-tcp": ("RAMP (GET, PUT), tcp", "tab:orange", "o", "-"),
    "ramp-ucx-rpc": ("RAMP (GET, PUT), UCX two-sided", "tab:olive", "s", "-"),
    "ramp-ucx-ring": ("RAMP (GET+, PUT+), UCX ring", "tab:blue", "^", "-"),
    "ramp-ucx-read": ("RAMP (GET*, PUT+), UCX one-sided + ring", "tab:green", "D", "-"),
    "none-ucx-read": ("no isolation (GET*, PUT+): upper bound", "black", "x", "--"),
}
FIG4 = [  # (series, bar label)
    ("ramp-tcp", "(a) tcp sockets\nGET / PUT"),
    ("ramp-ucx-rpc", "(b) UCX two-sided\nGET / PUT"),
    ("ramp-ucx-ring", "(c) UCX ring\nGET+ / PUT+"),
    ("ramp-ucx-read", "(d) UCX one-sided read\n+ ring  GET* / PUT+"),
    ("none-ucx-read", "no isolation\nGET* / PUT+ (bound)"),
]
LINES = ["s2pl-tcp", "ramp-tcp", "ramp-ucx-ring", "ramp-ucx-read", "none-ucx-read"]
BASE, BOUND = "ramp-tcp", "none-ucx-read"
FIG4_SIZE, FIG4_RATIO = 8, 0.95


# Configuration keys every point of a sweep shares (the rest vary by point).
COMMON = ("nodes", "partitions_per_node", "client_threads", "keys", "value_size", "distribution",
          "spin_us", "cores", "transactions_bound", "ucx_tls")


def load(d):
    """The sweep's points from DIR/<series>-k<size>-r<ratio>.json (bench/seed000.sh
    keeps the median run of each), and the configuration they share; also
    written to DIR/summary.json."""
    points, cfg = [], None
    for path in sorted(glob.glob(os.path.join(d, "*-k*-r*.json"))):
        with open(path) as f:
            doc = json.load(f)
        c = doc["configuration"]
        if cfg is None:
            cfg = {k: c[k] for k in COMMON if k in c}
            cfg.update({"seconds_per_point": c["duration_bound_ms"] / 1000,
                        "reps": len(doc.get("runs", [1])), "host": "127.0.0.1",
                        "client_processes": 1})
        points.append({"series": doc["series"], "file": os.path.basename(path),
                       "isolation": c["isolation"], "transport": c["transport"],
                       "get": c.get("get"), "put": c.get("put"),
                       "txn_size": c["txn_size"], "read_ratio": c["read_ratio"],
                       "runs": doc.get("runs", []), "failed_runs": doc.get("failed_runs", 0),
                       "first_error": doc["results"].get("first_error", ""),
                       "results": doc["results"]})
    if not points:
        sys.exit(f"plot_seed000.py: no results in {d}")
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump({"benchmark": "seed000", "configuration": cfg, "points": points}, f, indent=2)
    return cfg, points


def caption(cfg, workload):
    reps = cfg.get("reps", 1)
    return (f"{cfg['nodes']} kv-nodes x {cfg['partitions_per_node']} partition on 127.0.0.1, "
            f"1 client process x {cfg['client_threads']} threads, {cfg['keys']:,} keys "
            f"({cfg.get('distribution', 'uniform')}), {cfg['value_size']} B values, {workload}\n"
            f"{cfg['seconds_per_point']:g} s per point (<= {cfg['transactions_bound']:,} txns)"
            + (f", median of {reps} runs (bars: min-max)" if reps > 1 else ", 1 run")
            + f", {cfg['cores']} cores, spin_us {cfg['spin_us']}\n"
            "tcp series on a tcp cluster, UCX series on UCX shared memory")


def find(points, series, size, ratio):
    for p in points:
        if p["series"] == series and p["txn_size"] == size and abs(p["read_ratio"] - ratio) < 1e-9:
            return p
    return None


def tps(p):
    return p["results"]["txn_per_sec"] if p else None


def spread(p):
    runs = p.get("runs") or [tps(p)]
    return tps(p) - min(runs), max(runs) - tps(p)


def kfmt(x):
    return f"{x / 1e3:.1f}K" if x >= 1e3 else f"{x:.0f}"


def fig4(cfg, points, path):
    bars = [(s, lab, find(points, s, FIG4_SIZE, FIG4_RATIO)) for s, lab in FIG4]
    bars = [b for b in bars if b[2]]
    base = tps(find(points, BASE, FIG4_SIZE, FIG4_RATIO))
    fig, ax = plt.subplots(figsize=(9, 5))
    xs = range(len(bars))
    vals = [tps(p) for _, _, p in bars]
    errs = list(zip(*[spread(p) for _, _, p in bars]))
    rects = ax.bar(xs, vals, 0.6, yerr=errs if cfg.get("reps", 1) > 1 else None, capsize=4,
                   color=[SERIES[s][1] for s, _, _ in bars], edgecolor="black")
    for (s, _, _), r in zip(bars, rects):
        if s == BOUND:
            r.set_hatch("//")
            r.set_facecolor("white")
    for x, (_, _, p) in zip(xs, bars):
        if p["results"]["errors"]:
            ax.annotate(f"{p['results']['errors']} errors", (x, 0), xytext=(0, 4),
                        textcoords="offset points", ha="center", color="red", fontsize=8)
    for x, v in zip(xs, vals):
        ax.annotate(kfmt(v) + (f"\n{v / base:.2f}x tcp" if base else ""), (x, v),
                    xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([lab for _, lab, _ in bars], fontsize=8)
    ax.set_ylabel("transactions / s")
    ax.set_ylim(0, max(vals) * 1.22)
    ax.set_title("Fig. 4 analogue: RAMP throughput by transport\n"
                 + caption(cfg, f"txn size {FIG4_SIZE}, {FIG4_RATIO:.0%} read-only"), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def lines(cfg, points, path, xkey, xs, fixed, title, xlabel, logx):
    fig, ax = plt.subplots(figsize=(9, 5.2))
    for s in LINES:
        pts = [find(points, s, *((x, fixed) if xkey == "txn_size" else (fixed, x))) for x in xs]
        xy = [(x, p) for x, p in zip(xs, pts) if p]
        if not xy:
            continue
        label, colour, marker, style = SERIES[s]
        ys = [tps(p) for _, p in xy]
        ax.plot([x for x, _ in xy], ys, marker=marker, linestyle=style, color=colour, label=label)
        bad = [(x, tps(p)) for x, p in xy if p["results"]["errors"]]
        if bad:  # a failed txn (e.g. a timeout) stalls its thread: the point is suspect
            ax.scatter(*zip(*bad), s=160, facecolors="none", edgecolors="red", linewidths=1.5,
                       label=f"point with errors ({label.split(',')[0]})")
        if cfg.get("reps", 1) > 1:
            lo, hi = zip(*[spread(p) for _, p in xy])
            ax.errorbar([x for x, _ in xy], ys, yerr=[lo, hi], fmt="none", ecolor=colour, capsize=3)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{x:g}" for x in xs])
    ax.set_xlabel(xlabel)
    # Log scale: GET* at 100 % reads is 20x the rest, which a linear axis
    # flattens to zero.
    ax.set_yscale("log")
    ax.set_ylabel("transactions / s (log scale)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    workload = (f"{fixed:.0%} read-only txns" if xkey == "txn_size" else f"txn size {fixed}")
    ax.set_title(title + "\n" + caption(cfg, workload), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(cfg, points):
    out = []
    out.append("seed 000 (RAMP on RDMA) with rampart bench txn")
    out.append(caption(cfg, "txn size / read ratio per table").replace("\n", "\n"))
    out.append("'x tcp' = / RAMP (GET, PUT) over tcp at the same x; "
               "'x none' = / the no-isolation bound (GET*, PUT+) at the same x")

    def block(title, rows):
        out.append("")
        out.append(title)
        out.append(f"{'x':>6}  {'series':<42} {'txn/s':>10} {'p50':>9} {'p99':>9}"
                   f" {'x tcp':>7} {'x none':>7} {'errors':>6}")
        for x, s, p in rows:
            if not p:
                out.append(f"{x:>6}  {SERIES[s][0]:<42} {'-':>10}")
                continue
            base = tps(find(points, BASE, p["txn_size"], p["read_ratio"]))
            bound = tps(find(points, BOUND, p["txn_size"], p["read_ratio"]))
            r = p["results"]
            runs = p.get("runs") or []
            extra = (f"  runs {min(runs):,.0f}-{max(runs):,.0f}" if len(runs) > 1 else "")
            if p.get("first_error"):
                extra += f"  first error: {p['first_error']}"
            out.append(f"{x:>6}  {SERIES[s][0]:<42} {tps(p):>10,.0f} {r['p50_ns'] / 1e3:>7.0f}us"
                       f" {r['p99_ns'] / 1e3:>7.0f}us"
                       f" {(f'{tps(p) / base:.2f}' if base else '-'):>7}"
                       f" {(f'{tps(p) / bound:.2f}' if bound else '-'):>7} {r['errors']:>6}{extra}")

    block(f"Fig. 4: RAMP by transport (txn size {FIG4_SIZE}, {FIG4_RATIO:.0%} reads)",
          [("", s, find(points, s, FIG4_SIZE, FIG4_RATIO)) for s, _ in FIG4])
    sizes = sorted({p["txn_size"] for p in points})
    block(f"Fig. 5: by txn size ({FIG4_RATIO:.0%} reads)",
          [(k, s, find(points, s, k, FIG4_RATIO)) for k in sizes for s in LINES])
    ratios = sorted({p["read_ratio"] for p in points if p["read_ratio"] != FIG4_RATIO})
    block(f"Fig. 6: by read ratio (txn size {FIG4_SIZE})",
          [(f"{r:g}", s, find(points, s, FIG4_SIZE, r)) for r in ratios for s in LINES])
    errs = [p for p in points if p["results"]["errors"] or p.get("failed_runs")]
    out.append("")
    out.append(f"points with errors or failed runs: {len(errs)}"
               + "".join(f"\n  {p['series']} k{p['txn_size']} r{p['read_ratio']:g}: "
                         f"{p['results']['errors']} errors, {p.get('failed_runs', 0)} failed runs"
                         f" {p.get('first_error', '')}" for p in errs))
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help")):
        sys.exit(__doc__)
    d = sys.argv[1] if len(sys.argv) == 2 else "bench/results/seed000"
    cfg, points = load(d)
    fig4(cfg, points, os.path.join(d, "fig4-transports.png"))
    sizes = sorted({p["txn_size"] for p in points if p["read_ratio"] == FIG4_RATIO})
    lines(cfg, points, os.path.join(d, "fig5-txn-size.png"), "txn_size", sizes, FIG4_RATIO,
          "Fig. 5 analogue: throughput vs transaction size", "keys per transaction", True)
    # The sweep's read ratios plus 0.95, the Fig. 4/5 point at the same txn size.
    ratios = sorted({p["read_ratio"] for p in points if p["txn_size"] == FIG4_SIZE})
    lines(cfg, points, os.path.join(d, "fig6-read-ratio.png"), "read_ratio", ratios, FIG4_SIZE,
          "Fig. 6 analogue: throughput vs read ratio",
          f"fraction of read-only transactions ({FIG4_RATIO:g} = the Fig. 4/5 point)", False)
    text = table(cfg, points)
    with open(os.path.join(d, "summary.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    print(f"plots: {d}/fig4-transports.png {d}/fig5-txn-size.png {d}/fig6-read-ratio.png")


if __name__ == "__main__":
    main()
