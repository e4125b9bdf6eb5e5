#!/usr/bin/env python3
"""The proxy benchmark's table and plot, from bench/proxy.sh's results.

usage: bench/plot_proxy.py [--log] [DIR]   (default bench/results/proxy)
Reads DIR/<system>-<test>-P<p>.json and DIR/configuration.json, writes
DIR/summary.json (configuration and every point), DIR/summary.txt (the table
and the issue's targets, also printed) and DIR/proxy.png (grouped bars, one
panel per pipeline depth; --log for a log y axis).
"""
import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

# system id -> (label, colour, hatch)
SYSTEMS = {
    "rampart-default": ("rampart, embedded default", "tab:green", ""),
    "rampart-agg": ("rampart, aggregation on", "tab:blue", ""),
    "rampart-noagg": ("rampart, aggregation off", "tab:cyan", "//"),
    "twemproxy": ("twemproxy + 4 redis", "tab:orange", ""),
    "redis": ("1 redis-server", "tab:gray", ""),
}
TESTS = ["SET", "GET", "MSET4", "MGET4", "INCR", "EVAL"]
BASE = "twemproxy"
OURS, OURS_OFF = "rampart-agg", "rampart-noagg"
# The targets: rampart (aggregation on) over twemproxy by test, and
# aggregation on over off.
TARGET_VS_TWEMPROXY = {"SET": 1.0, "GET": 1.0, "MSET4": 1.5, "MGET4": 1.5}
TARGET_AGG = 1.3


def load(d, benchmark="proxy", key=None):
    """bench/proxy.sh's points and configuration in d; writes d/summary.json with both (points
    sorted by `key`, default this script's order)."""
    points = []
    for path in sorted(glob.glob(os.path.join(d, "*-P*.json"))):
        with open(path) as f:
            points.append(json.load(f))
    if not points:
        sys.exit(f"plot_{benchmark}.py: no results in {d}")
    cfg_path = os.path.join(d, "configuration.json")
    cfg = {}
    if os.path.exists(cfg_path):
        with open(cfg_path) as f:
            cfg = json.load(f)
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump({"benchmark": benchmark, "configuration": cfg,
                   "points": sorted(points, key=key or order)}, f, indent=2)
    return cfg, points


def order(p):
    sys_ids = list(SYSTEMS)
    return (p["pipeline"], TESTS.index(p["test"]),
            sys_ids.index(p["system"]) if p["system"] in sys_ids else 99)


def find(points, system, test, p):
    for x in points:
        if x["system"] == system and x["test"] == test and x["pipeline"] == p:
            return x
    return None


def rps(x):
    return x["results"]["rps"] if x else None


def kfmt(v):
    return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.1f}K" if v >= 1e3 else f"{v:.0f}"


def tick(v):
    if not v:
        return "0"
    return f"{v / 1e6:g}M" if v >= 1e6 else f"{v / 1e3:g}K" if v >= 1e3 else f"{v:g}"


def caption(cfg):
    if not cfg:
        return ""
    req = cfg.get("requests", {})
    reps = cfg.get("reps", 1)
    proxy = next(iter(cfg.get("rampart_proxy", {}).values()), "")
    workers = ""
    if "workers" in proxy:
        workers = ", proxy " + proxy.split(",")[2].strip()
    if "calibrated_seconds_per_point" in req:
        nsay = f"-n for ~{req['calibrated_seconds_per_point']:g} s per point"
    else:
        nsay = f"-n {req.get('P1', 0):,} (-P 1) / {req.get('P16', 0):,} (-P 16)"
    return (f"127.0.0.1, {cfg.get('cores')} cores; redis-benchmark -c {cfg.get('clients')} "
            f"-r {cfg.get('keyspace'):,} {nsay}, "
            f"{cfg.get('value_bytes')} B values, keys loaded first"
            + (f", median of {reps} runs" if reps > 1 else ", 1 run") + "\n"
            f"rampart: 4 kv-nodes x 1 partition, {cfg.get('backend')} backend, spin_us "
            f"{cfg.get('rampart_spin_us')}{workers}; twemproxy: {cfg.get('versions', {}).get('nutcracker', '').replace('This is ', '')}"
            f" (ketama, fnv1a_64); {cfg.get('versions', {}).get('redis_server', '').split(' sha')[0]}"
            f"; commit {cfg.get('git_commit', '')[:12]}"
            + ("-dirty" if cfg.get("git_commit", "").endswith("-dirty") else "")
            + (f", {cfg['date'][:10]}" if cfg.get("date") else ""))


def table(cfg, points):
    out = ["Redis-protocol proxies side by side (bench/proxy.sh)", caption(cfg),
           "'x twemproxy' = requests/s / twemproxy's at the same test and pipeline depth", ""]
    systems = [s for s in SYSTEMS if any(p["system"] == s for p in points)]
    pipes = sorted({p["pipeline"] for p in points})
    out.append(f"{'system':<26} {'test':<6} {'-P':>3} {'requests/s':>12} {'x twemproxy':>12}"
               f" {'p50 ms':>7} {'p99 ms':>7}  runs")
    for s in systems:
        for t in TESTS:
            for p in pipes:
                x = find(points, s, t, p)
                if not x:
                    continue
                base = rps(find(points, BASE, t, p))
                r = x["results"]
                runs = x.get("runs", [])
                out.append(f"{SYSTEMS[s][0]:<26} {t:<6} {p:>3} {rps(x):>12,.0f}"
                           f" {(f'{rps(x) / base:.2f}' if base else '-'):>12}"
                           f" {r.get('p50_latency_ms', float('nan')):>7.3f}"
                           f" {r.get('p99_latency_ms', float('nan')):>7.3f}"
                           + (f"  {min(runs):,.0f}-{max(runs):,.0f}" if len(runs) > 1 else ""))
        out.append("")
    out.append("Targets (issues 5 and 17):")
    for ours_id in ("rampart-default", OURS):
        for t in TESTS:
            for p in pipes:
                ours, base = rps(find(points, ours_id, t, p)), rps(find(points, BASE, t, p))
                if ours and base and t in TARGET_VS_TWEMPROXY:
                    want = TARGET_VS_TWEMPROXY[t]
                    out.append(f"  {SYSTEMS[ours_id][0]} / twemproxy, {t:<5} -P {p:<2}: "
                               f"{ours / base:5.2f}x  (target >= {want:g}x: "
                               f"{'met' if ours / base >= want else 'MISSED'})")
    for ours_id in ("rampart-default", OURS):
        for t in TESTS:
            for p in pipes:
                ours, one = rps(find(points, ours_id, t, p)), rps(find(points, "redis", t, p))
                if ours and one:
                    out.append(f"  {SYSTEMS[ours_id][0]} / one redis-server, {t:<5} -P {p:<2}: "
                               f"{ours / one:5.2f}x  (aim >= 0.7x)")
    for t in TESTS:
        for p in pipes:
            on, off = rps(find(points, OURS, t, p)), rps(find(points, OURS_OFF, t, p))
            if on and off:
                out.append(f"  aggregation on / off, {t:<5} -P {p:<2}: {on / off:5.2f}x"
                           f"  (target >= {TARGET_AGG:g}x: {'met' if on / off >= TARGET_AGG else 'MISSED'})")
    return "\n".join(out) + "\n"


def plot(cfg, points, path, logy):
    systems = [s for s in SYSTEMS if any(p["system"] == s for p in points)]
    pipes = sorted({p["pipeline"] for p in points})
    tests = [t for t in TESTS if any(p["test"] == t for p in points)]  # only those measured
    fig, axes = plt.subplots(1, len(pipes), figsize=(6.5 * len(pipes), 5.6), squeeze=False)
    width = 0.8 / len(systems)
    for ax, p in zip(axes[0], pipes):
        top = 0
        for i, s in enumerate(systems):
            label, colour, hatch = SYSTEMS[s]
            xs, ys, errs = [], [], [[], []]
            for j, t in enumerate(tests):
                x = find(points, s, t, p)
                if not x:
                    continue
                runs = x.get("runs") or [rps(x)]
                xs.append(j + (i - (len(systems) - 1) / 2) * width)
                ys.append(rps(x))
                errs[0].append(rps(x) - min(runs))
                errs[1].append(max(runs) - rps(x))
            if not xs:
                continue
            multi = cfg.get("reps", 1) > 1
            ax.bar(xs, ys, width, color=colour, hatch=hatch, edgecolor="black", label=label,
                   yerr=errs if multi else None, capsize=3)
            top = max(top, max(ys + [max(find(points, s, t, p).get("runs") or [0])
                                     for t in tests if find(points, s, t, p)]))
            for xpos, y, t in zip(xs, ys, [t for t in tests if find(points, s, t, p)]):
                x = find(points, s, t, p)
                base = rps(find(points, BASE, t, p))
                text = kfmt(y)
                if s.startswith("rampart") and base:
                    text += f"\n{y / base:.2f}x"
                top_y = max(x["runs"]) if multi and x.get("runs") else y
                ax.annotate(text, (xpos, top_y), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=6.5)
        ax.set_xticks(range(len(tests)))
        ax.set_xticklabels(tests)
        ax.set_title(f"-P {p}", fontsize=10)
        if logy:
            ax.set_yscale("log")
            ax.set_ylabel("requests / s (log scale)")
        else:
            ax.set_ylim(0, top * 1.18)
            ax.set_ylabel("requests / s")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: tick(v)))
        ax.grid(axis="y", alpha=0.3, which="both")
    axes[0][0].legend(fontsize=8, loc="upper left")
    fig.suptitle("Redis-protocol proxies side by side: requests/s "
                 "(rampart bars: x twemproxy at the same test and depth)\n" + caption(cfg),
                 fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    args = sys.argv[1:]
    logy = "--log" in args
    args = [a for a in args if a != "--log"]
    if len(args) > 1 or (args and args[0] in ("-h", "--help")):
        sys.exit(__doc__)
    d = args[0] if args else "bench/results/proxy"
    cfg, points = load(d)
    plot(cfg, points, os.path.join(d, "proxy.png"), logy)
    text = table(cfg, points)
    with open(os.path.join(d, "summary.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    print(f"plot: {d}/proxy.png")


if __name__ == "__main__":
    main()
