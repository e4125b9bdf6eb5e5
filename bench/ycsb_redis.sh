#!/usr/bin/env bash
# bench/ycsb_redis.sh: YCSB's standard workloads A-F with YCSB's own redis binding's commands and
# layout (RedisLayoutClient, `ycsb/run.sh -d redis`), through rampart's proxy and against one
# redis-server, side by side in one run: each system gets RECORDS records (default 100,000)
# loaded once, then a timed run of each workload, one after another on the same data.
#
#   bench/ycsb_redis.sh                 # 100,000 records, 10 s per workload, 4 YCSB threads
#   RECORDS=10000 SECONDS_PER_RUN=5 THREADS=2 OUT=/tmp/r bench/ycsb_redis.sh
#
# rampart runs as `rampart up` with the default configuration (the cluster ycsb/run.sh starts:
# 4 kv-nodes x 1 partition, every other setting at its default, the redo log included); redis is
# one redis-server without persistence (--save "" --appendonly no).
# Writes per system and workload <system>-<workload>.txt (run.sh's output), summary.json,
# summary.txt and ycsb_redis.png into OUT (default bench/results/ycsb-redis).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${SECONDS_PER_RUN:-10}"
threads="${THREADS:-4}"
records="${RECORDS:-100000}"
out="${OUT:-bench/results/ycsb-redis}"
workloads=(workloada workloadb workloadc workloadd workloade workloadf)
command -v redis-server >/dev/null || { echo "ycsb_redis.sh: redis-server not found (make deps)" >&2; exit 1; }

. bench/cluster.sh
bench_init "${RAMPART_BIN:-build/release/rampart}"
redis_pid=""
trap 'stop_cluster; [ -z "$redis_pid" ] || stop_pid "$redis_pid"; rm -rf "$tmp"' EXIT
mkdir -p "$out"
rm -f "$out"/*.txt "$out"/*.json "$out"/*.png

run_system() {  # NAME
  local name=$1 w args
  for w in "${workloads[@]}"; do
    args=(--no-cluster -d redis -w "$w" -s "$seconds" -T "$threads" -p "rampart.port=$port"
          -p "recordcount=$records" -p "operationcount=$records")
    [ "$w" = workloada ] || args+=(--no-load)
    echo "== $name $w" >&2
    RAMPART_BIN="$bin" ycsb/run.sh "${args[@]}" > "$out/$name-$w.txt" 2> "$out/$name-$w.stderr.txt" ||
      echo "ycsb_redis.sh: $name $w failed (see $out/$name-$w.stderr.txt)" >&2
  done
}

start_proxy_cluster ycsb-redis
port=$proxy_port
run_system rampart
stop_cluster
start_redis_server --save "" --appendonly no
port=$redis_port
run_system redis
stop_pid "$redis_pid"
redis_pid=""

bench/.venv/bin/python - "$out" "$seconds" "$threads" "$(git rev-parse --short=12 HEAD)" "$records" <<'PY'
import json, re, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
out, seconds, threads, commit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
records = int(sys.argv[5])
workloads = ["workloada", "workloadb", "workloadc", "workloadd", "workloade", "workloadf"]
def phases(path):
    res, cur = {}, None
    for line in open(path):
        m = re.match(r"^== (load|run): ", line)
        if m:
            cur = res.setdefault(m.group(1), {"failed": 0})
            continue
        if cur is None:
            continue
        m = re.match(r"^\[OVERALL\], Throughput\(ops/sec\), ([0-9.eE+-]+)", line)
        if m:
            cur["ops_per_sec"] = float(m.group(1))
        m = re.match(r"^\[([A-Z-]+)\], Return=(\w+), (\d+)", line)
        if m and m.group(2) not in ("OK",):
            cur["failed"] += int(m.group(3))
    return res
points = []
for system in ("rampart", "redis"):
    for w in workloads:
        p = phases(f"{out}/{system}-{w}.txt")
        for phase, r in p.items():
            points.append({"system": system, "workload": w, "phase": phase, **r})
summary = {"benchmark": "bench/ycsb_redis.sh", "records": records, "seconds_per_run": seconds, "threads": threads,
           "commit": commit, "points": points}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
get = {(p["system"], p["workload"], p["phase"]): p for p in points}
lines = [f"YCSB A-F with RedisLayoutClient (YCSB's redis binding's commands), {records:,} records, "
         f"{threads} threads, {seconds} s per workload, commit {commit}",
         "rampart: proxy + 4 kv-nodes x 1 partition, every other setting default (redo log on); "
         "redis: one redis-server, no persistence",
         "", f"{'phase':<16}{'rampart ops/s':>14}{'redis ops/s':>14}{'ratio':>8}{'failed':>8}"]
rows = [("load", "workloada", "load")] + [(w, w, "run") for w in workloads]
for label, w, phase in rows:
    a, b = get.get(("rampart", w, phase), {}), get.get(("redis", w, phase), {})
    ra, rb = a.get("ops_per_sec", 0.0), b.get("ops_per_sec", 0.0)
    ratio = f"{ra / rb:.2f}" if rb else "-"
    lines.append(f"{label:<16}{ra:>14,.0f}{rb:>14,.0f}{ratio:>8}{a.get('failed', 0) + b.get('failed', 0):>8}")
open(f"{out}/summary.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))

labels = [label for label, _, _ in rows]
fig, ax = plt.subplots(figsize=(9, 4.5))
for k, (system, colour) in enumerate((("rampart", "tab:blue"), ("redis", "tab:grey"))):
    values = [get.get((system, w, phase), {}).get("ops_per_sec", 0.0) for _, w, phase in rows]
    ax.bar([i + (k - 0.5) * 0.4 for i in range(len(rows))], values, 0.4, color=colour,
           label="rampart proxy + 4 kv-nodes" if system == "rampart" else "one redis-server")
ax.set_xticks(range(len(rows)), labels)
ax.set_yscale("log")
ax.set_ylabel("YCSB operations/s (log)")
ax.set_title(f"YCSB A-F, YCSB redis binding's commands (RedisLayoutClient), {records:,} records,\n"
             f"{threads} threads, {seconds} s per workload, 2 cores, commit {commit}", fontsize=9)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(f"{out}/ycsb_redis.png", dpi=120)
print(f"plot: {out}/ycsb_redis.png")
PY
