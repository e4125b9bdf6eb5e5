#!/usr/bin/env python3
"""Draws bench/multihost.py's summary: seed 000's Fig. 4 point across hosts
(txn/s per mode) and the proxy against twemproxy across hosts (requests/s per
test and pipeline depth), medians with min-max bars.

  bench/plot_multihost.py SUMMARY.json OUT.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def bars(ax, labels, series, title, ylabel):
    """series: [(name, [summary dicts per label])]; grouped bars with min-max bars."""
    width = 0.8 / len(series)
    for i, (name, points) in enumerate(series):
        xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(labels))]
        medians = [p["median"] for p in points]
        low = [p["median"] - p["min"] for p in points]
        high = [p["max"] - p["median"] for p in points]
        ax.bar(xs, medians, width, yerr=[low, high], capsize=3, label=name)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=20, ha="right")
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    if len(series) > 1:
        ax.legend()


def main():
    summary = json.load(open(sys.argv[1]))
    parts = [p for p in ("txn", "proxy") if p in summary]
    if not parts:
        return 0
    fig, axes = plt.subplots(1, len(parts), figsize=(7 * len(parts), 4.5), squeeze=False)
    for ax, part in zip(axes[0], parts):
        if part == "txn":
            labels = list(summary["txn"])
            bars(ax, labels, [("txn/s", [summary["txn"][k] for k in labels])],
                 "seed 000 Fig. 4 point, client and 4 kv-nodes on 5 hosts", "transactions/s")
        else:
            keys = sorted({k.split("/", 1)[1] for k in summary["proxy"]},
                          key=lambda k: (k.split("/")[1], k))
            series = [(system, [summary["proxy"][f"{system}/{k}"] for k in keys])
                      for system in ("rampart", "twemproxy")]
            bars(ax, [k.replace("/", " ") for k in keys], series,
                 "redis-benchmark -c 50 across hosts", "requests/s")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
