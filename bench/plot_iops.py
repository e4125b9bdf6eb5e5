#!/usr/bin/env python3
"""Seed 001's IOPS figures from bench/iops.sh's results.

usage: bench/plot_iops.py [DIR]   (default bench/results/iops)
Reads DIR/<medium>-<system>-b<bytes>-c<conns>-q<qd>.json (remote and transport
only), DIR/<medium>-local-<engine>-b<bytes>-d<in flight>.json (local),
DIR/<medium>-fio-<psync|uring>-b<bytes>-d<in flight>.json (fio, the machine's
local anchor) and
DIR/replay-<medium>-<local|remote>-<engine>-c<concurrency>.json; writes
DIR/summary.json (every point), DIR/summary.txt (the tables, also printed),
DIR/iops.png (IOPS over IOs in flight, one panel per
medium and block size) and DIR/replay.png.
"""
import collections
import glob
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ENGINES = ("threads", "uring", "inline")
REMOTE = re.compile(r"^(tmpfs|disk|any)-(remote-threads|remote-uring|remote-inline|none)"
                    r"-b(\d+)-c(\d+)-q(\d+)$")
LOCAL = re.compile(r"^(tmpfs|disk)-(local-threads|local-uring|local-inline|fio-psync|fio-uring)"
                   r"-b(\d+)-d(\d+)$")
REPLAY = re.compile(r"^replay-(tmpfs|disk)-(local|remote)-(threads|uring|inline)-c(\d+)$")
LOCAL_SYSTEMS = ("fio-psync", "fio-uring", "local-threads", "local-uring", "local-inline")
REMOTE_SYSTEMS = ("none", "remote-threads", "remote-uring", "remote-inline")
# The target: remote >= 80 % of local IOPS for 4 KiB reads from tmpfs
# at the best setting of each.
TARGET_BLOCK, TARGET_RATIO = 4096, 0.80
STYLE = {
    "local-threads": ("local, threads engine", "tab:gray", "-"),
    "local-uring": ("local, io_uring", "black", "-"),
    "local-inline": ("local, inline engine", "tab:brown", "-"),
    "fio-psync": ("fio psync, a job per core", "tab:red", "-."),
    "fio-uring": ("fio io_uring, O_DIRECT", "tab:purple", "-."),
    "remote-inline": ("remote, inline engine", "tab:cyan", "--"),
    "none": ("transport only (engine none)", "tab:green", ":"),
    "remote-threads": ("remote, threads engine", "tab:blue", "--"),
    "remote-uring": ("remote, io_uring", "tab:orange", "--"),
}


def load(d):
    points, replays = [], []
    for path in sorted(glob.glob(os.path.join(d, "*.json"))):
        name = os.path.basename(path)[:-5]
        with open(path) as f:
            doc = json.load(f) if not name.startswith("summary") else None
        if doc is None:
            continue
        res = doc["results"]
        m = REMOTE.match(name)
        if m:
            medium, system, b, c, q = m.groups()
            points.append(dict(medium=medium, system=system, block=int(b), conns=int(c),
                               qd=int(q), in_flight=int(c) * int(q), **res))
            continue
        m = LOCAL.match(name)
        if m:
            medium, system, b, depth = m.groups()
            points.append(dict(medium=medium, system=system, block=int(b), conns=0,
                               qd=int(depth), in_flight=int(depth), **res))
            continue
        m = REPLAY.match(name)
        if m:
            medium, where, engine, c = m.groups()
            replays.append(dict(medium=medium, where=where, engine=engine, concurrency=int(c),
                                trace=doc["configuration"].get("trace"), **res))
    if not points and not replays:
        sys.exit(f"plot_iops.py: no results in {d}")
    return points, replays


def best(points, **match):
    cand = [p for p in points if all(p[k] == v for k, v in match.items()) and p["errors"] == 0]
    return max(cand, key=lambda p: p["iops"]) if cand else None


def tables(points, replays):
    lines = []
    media = sorted({p["medium"] for p in points if p["medium"] != "any"})
    blocks = sorted({p["block"] for p in points})
    lines.append("Best IOPS of each system (random reads; setting = connections x queue depth, "
                 "local: IOs in flight)")
    lines.append(f"{'medium':<7}{'block':>7}  {'system':<16}{'IOPS':>10}{'MB/s':>9}"
                 f"{'p50 us':>9}{'p99 us':>9}  setting     vs local best")
    for medium in media:
        for b in blocks:
            local = [best(points, medium=medium, block=b, system=s) for s in LOCAL_SYSTEMS]
            local = max((p for p in local if p), key=lambda p: p["iops"], default=None)
            for system in LOCAL_SYSTEMS + REMOTE_SYSTEMS:
                p = best(points, medium="any" if system == "none" else medium, block=b,
                         system=system)
                if p is None:
                    continue
                setting = (f"d{p['in_flight']}" if system in LOCAL_SYSTEMS
                           else f"{p['conns']}x{p['qd']}")
                ratio = f"{p['iops'] / local['iops']:.2f}" if local else "-"
                lines.append(f"{medium:<7}{b:>7}  {system:<16}{p['iops']:>10.0f}"
                             f"{p['mb_per_sec']:>9.1f}{p['p50_ns'] / 1e3:>9.1f}"
                             f"{p['p99_ns'] / 1e3:>9.1f}  {setting:<11} {ratio}")
    # The target's baseline is the machine's best local figure (fio's rows
    # included); the ratio to the local file driven by the same engine is
    # shown too.
    target = []
    local_any = [best(points, medium="tmpfs", block=TARGET_BLOCK, system=s)
                 for s in LOCAL_SYSTEMS]
    local_any = max((p for p in local_any if p), key=lambda p: p["iops"], default=None)
    for engine in ENGINES:
        r = best(points, medium="tmpfs", block=TARGET_BLOCK, system="remote-" + engine)
        loc = best(points, medium="tmpfs", block=TARGET_BLOCK, system="local-" + engine)
        if r and loc and local_any:
            target.append((engine, r["iops"] / loc["iops"], r["iops"] / local_any["iops"]))
    if target:
        lines.append("")
        lines.append(f"Target: remote >= {TARGET_RATIO:.0%} of local IOPS, {TARGET_BLOCK} B "
                     "reads from tmpfs, best setting of each:")
        for engine, same, overall in target:
            verdict = "met" if overall >= TARGET_RATIO else "missed"
            lines.append(f"  {engine}: remote {overall:.2f} of the machine's best local figure "
                         f"({verdict}); {same:.2f} of local with the same engine")
    if replays:
        lines.append("")
        lines.append("Trace replay (reads in trace order, C in flight)")
        lines.append(f"{'medium':<7}{'engine':<9}{'C':>4}{'local s':>10}{'remote s':>10}"
                     f"{'local IOPS':>12}{'remote IOPS':>12}{'remote/local':>13}")
        index = {(r["medium"], r["where"], r["engine"], r["concurrency"]): r for r in replays}
        for (medium, where, engine, c) in sorted(index):
            if where != "local":
                continue
            lo, re_ = index[(medium, "local", engine, c)], index.get((medium, "remote", engine, c))
            if re_ is None:
                continue
            lines.append(f"{medium:<7}{engine:<9}{c:>4}{lo['seconds']:>10.2f}"
                         f"{re_['seconds']:>10.2f}{lo['iops']:>12.0f}{re_['iops']:>12.0f}"
                         f"{re_['iops'] / lo['iops']:>13.2f}")
    return "\n".join(lines) + "\n"


def plot_iops(points, d):
    media = sorted({p["medium"] for p in points if p["medium"] != "any"})
    blocks = sorted({p["block"] for p in points})
    if not media or not blocks:
        return
    fig, axes = plt.subplots(len(media), len(blocks), figsize=(5 * len(blocks), 4 * len(media)),
                             squeeze=False)
    for i, medium in enumerate(media):
        for j, b in enumerate(blocks):
            ax = axes[i][j]
            series = collections.defaultdict(list)
            for p in points:
                if p["block"] != b or p["medium"] not in (medium, "any"):
                    continue
                key = (p["system"], p["conns"])
                series[key].append((p["in_flight"], p["iops"]))
            for (system, conns), xy in sorted(series.items()):
                label, colour, style = STYLE[system]
                local = system in LOCAL_SYSTEMS
                if not local:
                    label += f", {conns} conn"
                xy.sort()
                alpha = 1.0 if local else 0.4 + 0.15 * conns
                ax.plot([x for x, _ in xy], [y / 1e3 for _, y in xy], style, color=colour,
                        marker="o" if conns <= 1 else ("s" if conns == 2 else "^"),
                        markersize=4, alpha=min(alpha, 1.0), label=label)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")  # transport only runs 10x above the devices
            ax.set_title(f"{medium}, {b} B random reads")
            ax.set_xlabel("IOs in flight (connections x queue depth)")
            ax.set_ylabel("kIOPS")
            ax.grid(True, alpha=0.3)
            if i == 0 and j == 0:
                ax.legend(fontsize=6, loc="upper left")
    fig.suptitle("rampart storage tier, seed 001: local vs remote IOPS "
                 "(1 host, 2 cores, UCX shared memory)")
    fig.tight_layout()
    fig.savefig(os.path.join(d, "iops.png"), dpi=110)
    plt.close(fig)


def plot_replay(replays, d):
    if not replays:
        return
    groups = sorted({(r["medium"], r["engine"]) for r in replays})
    concs = sorted({r["concurrency"] for r in replays})
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / (2 * len(groups))
    for g, (medium, engine) in enumerate(groups):
        for w, where in enumerate(("local", "remote")):
            ys = []
            for c in concs:
                r = [x for x in replays if (x["medium"], x["engine"], x["where"],
                                            x["concurrency"]) == (medium, engine, where, c)]
                ys.append(r[0]["iops"] / 1e3 if r else 0)
            xs = [k + (2 * g + w) * width for k in range(len(concs))]
            ax.bar(xs, ys, width, label=f"{medium} {engine} {where}",
                   hatch="//" if where == "remote" else "")
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(concs))])
    ax.set_xticklabels([f"C = {c}" for c in concs])
    ax.set_ylabel("kIOPS")
    ax.set_title("TPC-H Q3 page-read trace replayed, local vs remote")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "replay.png"), dpi=110)
    plt.close(fig)


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "bench/results/iops"
    points, replays = load(d)
    text = tables(points, replays)
    with open(os.path.join(d, "summary.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump({"benchmark": "iops", "points": points, "replays": replays}, f, indent=1)
    plot_iops(points, d)
    plot_replay(replays, d)
    print(text, end="")


if __name__ == "__main__":
    main()
