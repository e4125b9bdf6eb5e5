#!/usr/bin/env python3
"""Draws the results of `rampart bench transport` (its JSON) as PNG bar charts.

usage: bench/plot_transport.py RESULTS.json OUT_PREFIX
writes OUT_PREFIX-ops.png (ops/s by path and operation, 1 and 16 in flight)
and OUT_PREFIX-seed004.png (seed 004's discrete-buffer experiment).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def label(r):
    return f"{r['path']}\n{r['operation']} {r['bytes']}B"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    results = doc["results"]
    cfg = doc["configuration"]
    caption = (f"1 client thread, 1 peer process on one host (127.0.0.1), {cfg['cores']} cores, "
               f"{cfg['duration_ms']} ms per point, spin {cfg['spin_us']} us")

    basic = [r for r in results if not r["operation"].startswith("seed004")]
    keys = []
    for r in basic:
        k = label(r)
        if k not in keys:
            keys.append(k)
    fig, ax = plt.subplots(figsize=(14, 5))
    width = 0.4
    for i, flight in enumerate((1, 16)):
        vals = []
        for k in keys:
            match = [r for r in basic if label(r) == k and r["in_flight"] == flight]
            vals.append(match[0]["ops_per_sec"] / 1e6 if match else 0)
        ax.bar([x + (i - 0.5) * width for x in range(len(keys))], vals, width,
               label=f"{flight} in flight")
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(keys, fontsize=7)
    ax.set_ylabel("million operations / s")
    ax.set_yscale("log")
    ax.set_title("rampart transport: round trips per second by path\n" + caption, fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[2] + "-ops.png", dpi=110)

    seed = [r for r in results if r["operation"].startswith("seed004")]
    paths = sorted({r["path"] for r in seed})
    fig, axes = plt.subplots(1, len(paths), figsize=(6 * len(paths), 4), squeeze=False)
    for ax, path in zip(axes[0], paths):
        rs = [r for r in seed if r["path"] == path]
        ax.bar([r["operation"].replace("seed004-", "").replace("-", "\n", 1) for r in rs],
               [r["ops_per_sec"] for r in rs])
        ax.set_ylabel("32 x 4 KiB moves / s")
        ax.set_title(f"seed 004 experiment, {path}", fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
    fig.suptitle(caption, fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2] + "-seed004.png", dpi=110)


if __name__ == "__main__":
    main()
