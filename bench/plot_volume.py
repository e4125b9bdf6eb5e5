#!/usr/bin/env python3
"""Seed 002's figures from bench/volume.sh's results.

usage: bench/plot_volume.py [DIR] [--cap-pct PCT]   (default bench/results/volume)
Reads DIR/xor-<bytes>.json, DIR/rw-<healthy|degraded>-r<rep>.json and
DIR/conc-<setup>-<off|on>-r<rep>-c<client>.json; writes DIR/summary.json,
DIR/summary.txt (the tables, also printed) and DIR/volume.png (parity
throughput, healthy vs degraded reads, per-client throughput with steering
off and on for each setup: seed 002's Fig. 11).
"""
import argparse
import collections
import glob
import json
import os
import re
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

XOR = re.compile(r"^xor-(\d+)$")
RW = re.compile(r"^rw-(healthy|degraded)-r(\d+)$")
CONC = re.compile(r"^conc-(\w+)-(off|on)-r(\d+)-c(\d)$")
DEGRADED_TARGET = 0.70
# Seed 002 Fig. 11: clients of the node the load concentrates on, the others.
PAPER_GAIN = (0.29, 0.14)
VOLUME_OF = {0: "a", 1: "a", 2: "b", 3: "b"}


def load(d):
    xor, rw, conc = {}, collections.defaultdict(list), collections.defaultdict(list)
    for path in sorted(glob.glob(os.path.join(d, "*.json"))):
        name = os.path.basename(path)[:-5]
        if name.startswith("summary"):
            continue
        with open(path) as f:
            doc = json.load(f)
        if m := XOR.match(name):
            xor[int(m.group(1))] = doc["results"]
        elif m := RW.match(name):
            rw[m.group(1)].append(dict(doc["results"], rep=int(m.group(2))))
        elif m := CONC.match(name):
            setup, steering, rep, client = m.groups()
            conc[(setup, steering, int(client))].append(dict(doc["results"], rep=int(rep)))
    return xor, rw, conc


def med(results, key="mb_per_sec"):
    return statistics.median(r[key] for r in results) if results else 0.0


def paired_ratios(base, other):
    """other / base MB/s for each run number both have."""
    b = {r["rep"]: r["mb_per_sec"] for r in base}
    return [o["mb_per_sec"] / b[o["rep"]] for o in sorted(other, key=lambda r: r["rep"])
            if b.get(o["rep"])]


def sum_by_rep(conc, setup, steering, clients):
    """{rep: total MB/s of `clients`} for the runs where all of them ran."""
    by = collections.defaultdict(dict)
    for c in clients:
        for r in conc[(setup, steering, c)]:
            by[r["rep"]][c] = r["mb_per_sec"]
    return {rep: sum(v.values()) for rep, v in by.items() if len(v) == len(clients)}


def tables(xor, rw, conc, cap_pct):
    lines, summary = [], {"xor": {}, "degraded": {}, "concentration": {}}
    if xor:
        lines.append("(a) Parity throughput, k = 3 sources, one thread (GB/s of source bytes)")
        lines.append(f"{'block':>9}  " + "".join(f"{r['method']:>12}" for r in next(iter(xor.values()))))
        for b in sorted(xor, reverse=True):
            lines.append(f"{b:>9}  " + "".join(f"{r['gb_per_sec']:>12.2f}" for r in xor[b]))
            summary["xor"][b] = {r["method"]: r["gb_per_sec"] for r in xor[b]}
        lines.append("")
    if rw:
        h, dg = med(rw["healthy"]), med(rw["degraded"])
        ratio = dg / h if h else 0.0
        lines.append("(b) 4-node volume v4 (k = 3, 16 KiB cells), sequential 16-stripe reads, "
                     "median of runs (MB/s)")
        lines.append("  healthy  " + " ".join(f"{r['mb_per_sec']:.0f}" for r in rw["healthy"])
                     + f"  -> {h:.0f}")
        lines.append("  degraded " + " ".join(f"{r['mb_per_sec']:.0f}" for r in rw["degraded"])
                     + f"  -> {dg:.0f}  (node 1 down)")
        paired = paired_ratios(rw["healthy"], rw["degraded"])
        verdict = "met" if ratio >= DEGRADED_TARGET else "missed"
        lines.append(f"  degraded / healthy = {ratio:.2f} of the medians; per run pair "
                     + " ".join(f"{x:.2f}" for x in paired)
                     + f" (target >= {DEGRADED_TARGET:.2f}: {verdict})")
        lines.append("")
        summary["degraded"] = {"healthy_mb_s": h, "degraded_mb_s": dg, "ratio": ratio,
                               "paired_ratios": paired,
                               "runs": {k: [r["mb_per_sec"] for r in v] for k, v in rw.items()}}
    setups = sorted({k[0] for k in conc}, key=lambda s: s != "shared")
    for setup in setups:
        label = setup if setup != "capped" else f"capped (each storage node <= {cap_pct} % of a core)"
        lines.append(f"(c) Load concentration, {label}: volumes a (nodes 0,1,2) and b (2,3,4), "
                     "clients 0,1 read a, 2,3 read b; random 16-stripe reads, MB/s per client "
                     "(median of runs)")
        lines.append(f"{'client':>8}{'volume':>8}{'off':>9}{'on':>9}{'gain':>8}{'steered':>10}")
        per = {}
        for c in range(4):
            off, on = med(conc[(setup, "off", c)]), med(conc[(setup, "on", c)])
            steered = med(conc[(setup, "on", c)], "steered_reads")
            per[c] = (off, on)
            gain = on / off - 1 if off else 0.0
            lines.append(f"{c:>8}{VOLUME_OF[c]:>8}{off:>9.0f}{on:>9.0f}{gain:>+8.0%}{steered:>10.0f}")
        tot_off, tot_on = sum(v[0] for v in per.values()), sum(v[1] for v in per.values())
        gains = {}
        for group, clients in (("a", (0, 1)), ("b", (2, 3))):
            o = sum(per[c][0] for c in clients)
            n = sum(per[c][1] for c in clients)
            gains[group] = n / o - 1 if o else 0.0
        total_gain = tot_on / tot_off - 1 if tot_off else 0.0
        pairs = {}
        for group, clients in (("a", (0, 1)), ("b", (2, 3)), ("all", (0, 1, 2, 3))):
            off_runs = [sum_by_rep(conc, setup, "off", clients)]
            on_runs = [sum_by_rep(conc, setup, "on", clients)]
            pairs[group] = [on_runs[0][r] / off_runs[0][r] - 1
                            for r in sorted(off_runs[0]) if r in on_runs[0] and off_runs[0][r]]
        lines.append("  gain per run pair (on vs off measured back to back): "
                     + "; ".join(f"{g} " + " ".join(f"{x:+.0%}" for x in v) for g, v in pairs.items())
                     + f"; median all {statistics.median(pairs['all']):+.0%}" if pairs["all"] else "")
        lines.append(f"  total {tot_off:.0f} -> {tot_on:.0f} MB/s ({total_gain:+.0%}); "
                     f"clients of a {gains['a']:+.0%}, of b {gains['b']:+.0%} "
                     f"(paper: +{PAPER_GAIN[0]:.0%} / +{PAPER_GAIN[1]:.0%})")
        lines.append("")
        summary["concentration"][setup] = {
            "per_client_mb_s": {c: {"off": v[0], "on": v[1]} for c, v in per.items()},
            "gain_a": gains["a"], "gain_b": gains["b"], "gain_total": total_gain,
            "paired_gains": pairs,
            "runs": {f"{s}-c{c}": [r["mb_per_sec"] for r in conc[(setup, s, c)]]
                     for s in ("off", "on") for c in range(4)}}
    return lines, summary, setups


def plot(d, xor, rw, conc, setups, cap_pct):
    panels = 2 + len(setups)
    fig, axes = plt.subplots(1, panels, figsize=(4.2 * panels, 4))
    ax = axes[0]
    if xor:
        methods = [r["method"] for r in next(iter(xor.values()))]
        blocks = sorted(xor, reverse=True)
        width = 0.8 / len(blocks)
        for i, b in enumerate(blocks):
            ax.bar([m + i * width for m in range(len(methods))], [r["gb_per_sec"] for r in xor[b]],
                   width, label=f"{b // 1024} KiB")
        ax.set_xticks([m + width * (len(blocks) - 1) / 2 for m in range(len(methods))], methods)
        ax.set_ylabel("GB/s (source bytes)")
        ax.set_title("(a) parity, k = 3, one thread")
        ax.legend()
    ax = axes[1]
    if rw:
        vals = [med(rw["healthy"]), med(rw["degraded"])]
        ax.bar(["healthy", "degraded\n(node 1 down)"], vals, color=["tab:blue", "tab:orange"])
        for x, v in enumerate(vals):
            ax.text(x, v, f"{v:.0f}", ha="center", va="bottom")
        ax.set_ylabel("MB/s")
        ax.set_title("(b) 4-node volume, sequential reads")
    for ax, setup in zip(axes[2:], setups):
        xs = range(4)
        off = [med(conc[(setup, "off", c)]) for c in xs]
        on = [med(conc[(setup, "on", c)]) for c in xs]
        ax.bar([x - 0.2 for x in xs], off, 0.4, label="steering off (Case 1)", color="tab:gray")
        ax.bar([x + 0.2 for x in xs], on, 0.4, label="steering on (Case 2)", color="tab:green")
        ax.set_xticks(list(xs), [f"client {c}\n(vol {VOLUME_OF[c]})" for c in xs])
        ax.set_ylabel("MB/s per client")
        title = "shared cores" if setup == "shared" else f"nodes <= {cap_pct} % of a core"
        ax.set_title(f"(c) concentration, {title}")
        ax.legend(fontsize=8)
    fig.suptitle("seed 002 on one 2-core host: 127.0.0.1, UCX shm, RAM storage nodes, "
                 "16 KiB cells, 16-stripe reads, 1 client thread per process")
    fig.tight_layout()
    fig.savefig(os.path.join(d, "volume.png"), dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default="bench/results/volume")
    ap.add_argument("--cap-pct", type=int, default=25)
    args = ap.parse_args()
    xor, rw, conc = load(args.dir)
    lines, summary, setups = tables(xor, rw, conc, args.cap_pct)
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.dir, "summary.txt"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(args.dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    plot(args.dir, xor, rw, conc, setups, args.cap_pct)


if __name__ == "__main__":
    main()
