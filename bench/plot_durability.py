#!/usr/bin/env python3
"""The durability benchmark's table and plot, from bench/durability.sh (bench/proxy.sh) results.

usage: bench/plot_durability.py [DIR]   (default bench/results/durability)
Reads DIR/<system>-<test>-P<p>.json and DIR/configuration.json; writes DIR/summary.json,
DIR/summary.txt (the table: median requests/s, the runs' spread, each durable mode over rampart
volatile, redis-server's AOF modes over redis-server without persistence, and the targets; also
printed) and DIR/durability.png (grouped bars, one panel per pipeline depth).
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_proxy import find, load  # noqa: E402  (bench/proxy.sh's results)

# system id -> (label, colour, hatch, baseline id)
SYSTEMS = {
    "rampart-agg": ("rampart volatile (kv.log none)", "tab:blue", "", None),
    "rampart-dir-interval": ("rampart, log files, interval", "tab:green", "", "rampart-agg"),
    "rampart-dir-always": ("rampart, log files, always", "tab:olive", "//", "rampart-agg"),
    "rampart-volume-always": ("rampart, log on a volume, always", "tab:purple", "xx",
                              "rampart-agg"),
    "redis": ("redis-server, no persistence", "tab:gray", "", None),
    "redis-aof-everysec": ("redis-server, AOF everysec", "tab:orange", "", "redis"),
    "redis-aof-always": ("redis-server, AOF always", "tab:red", "//", "redis"),
}
TESTS = ["SET", "MSET4"]
TARGETS = {"rampart-dir-interval": 0.8, "rampart-dir-always": 0.7}


def rps(x):
    return x["results"]["rps"] if x else 0.0


def spread(x):
    runs = x.get("runs") or [rps(x)]
    return f"{min(runs) / 1e3:.1f}-{max(runs) / 1e3:.1f}K"


def table(cfg, points):
    pipes = sorted({p["pipeline"] for p in points})
    systems = [s for s in SYSTEMS if any(p["system"] == s for p in points)]
    out = [f"durability: redis-benchmark -c {cfg.get('clients', 50)} -r {cfg.get('keyspace', 100000)}"
           f", median of {cfg.get('reps', 1)} run(s) (spread min-max), {cfg.get('cores', '?')} cores,"
           f" rampart {cfg.get('rampart_nodes', 4)} kv-nodes x 1 partition over "
           f"{cfg.get('backend', 'ucx')}, commit {cfg.get('git_commit', '?')[:12]}",
           "x base = requests/s over rampart volatile (rampart rows) or redis-server without "
           "persistence (redis rows) at the same test and depth", ""]
    out.append(f"{'system':<36} {'test':<6} {'-P':>3} {'requests/s':>11} {'spread':>14} {'x base':>7}")
    for s in systems:
        for t in TESTS:
            for p in pipes:
                x = find(points, s, t, p)
                if not x:
                    continue
                base = SYSTEMS[s][3]
                ratio = f"{rps(x) / rps(find(points, base, t, p)):.2f}" if base and find(points, base, t, p) else ""
                out.append(f"{SYSTEMS[s][0]:<36} {t:<6} {p:>3} {rps(x):>11.0f} {spread(x):>14} {ratio:>7}")
    out.append("")
    for s, target in TARGETS.items():
        for t in TESTS:
            for p in pipes:
                x, base = find(points, s, t, p), find(points, "rampart-agg", t, p)
                if x and base:
                    r = rps(x) / rps(base)
                    out.append(f"  {s} / volatile, {t:<5} -P {p:<2}: {r:5.2f}x  (target >= "
                               f"{target:g}x: {'met' if r >= target else 'MISSED'})")
    return "\n".join(out) + "\n"


def plot(cfg, points, path):
    systems = [s for s in SYSTEMS if any(p["system"] == s for p in points)]
    pipes = sorted({p["pipeline"] for p in points})
    fig, axes = plt.subplots(1, len(pipes), figsize=(7 * len(pipes), 5.4), squeeze=False)
    width = 0.8 / len(systems)
    for ax, p in zip(axes[0], pipes):
        for i, s in enumerate(systems):
            label, colour, hatch, base = SYSTEMS[s]
            xs, ys, lo, hi, notes = [], [], [], [], []
            for j, t in enumerate(TESTS):
                x = find(points, s, t, p)
                if not x:
                    continue
                runs = x.get("runs") or [rps(x)]
                xs.append(j + (i - (len(systems) - 1) / 2) * width)
                ys.append(rps(x))
                lo.append(rps(x) - min(runs))
                hi.append(max(runs) - rps(x))
                b = find(points, base, t, p) if base else None
                notes.append(f"{rps(x) / 1e3:.0f}K" + (f"\n{rps(x) / rps(b):.2f}x" if b else ""))
            ax.bar(xs, ys, width, color=colour, hatch=hatch, edgecolor="black", label=label,
                   yerr=[lo, hi], capsize=2)
            for xpos, y, note in zip(xs, ys, notes):
                ax.annotate(note, (xpos, y), xytext=(0, 3), textcoords="offset points",
                            ha="center", va="bottom", fontsize=6)
        ax.set_xticks(range(len(TESTS)))
        ax.set_xticklabels(TESTS)
        ax.set_title(f"-P {p}", fontsize=10)
        ax.set_ylabel("requests / s")
        ax.yaxis.set_major_formatter(
            matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / 1e3:.0f}K"))
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.suptitle("What durability costs: rampart's redo logs and redis-server's AOF, same disk "
                 f"({cfg.get('data_fs', '?')}), {cfg.get('cores', '?')} cores; "
                 "x = over the same system without persistence", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    args = sys.argv[1:]
    if len(args) > 1 or (args and args[0] in ("-h", "--help")):
        sys.exit(__doc__)
    d = args[0] if args else "bench/results/durability"
    cfg, points = load(d, "durability", key=lambda p: (p["pipeline"], p["test"], p["system"]))
    plot(cfg, points, os.path.join(d, "durability.png"))
    text = table(cfg, points)
    with open(os.path.join(d, "summary.txt"), "w") as f:
        f.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
