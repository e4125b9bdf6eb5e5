#!/usr/bin/env bash
# How fast a kv-node recovers (docs/log_format.md, "Recovery"): one kv-node (2
# partitions) and the proxy; load data through the proxy with redis-cli --pipe,
# SIGKILL the kv-node, start it again alone and time it until its partitions
# listen; the partitions' own lines say what they replayed.
#
# Points (keys x value bytes): 100000 x 100 B, 1000000 x 100 B, 200000 x
# 1 KiB, 10000 x 100 KiB (~1 GiB), each
#   log          everything still in the log (no checkpoint yet)
#   checkpoint   a checkpoint of everything, then a short log
# from a log directory on tmpfs (/dev/shm) and on the disk (/var/tmp).
#
#   bench/recovery.sh
# Environment: POINTS ("100000:100 1000000:100 200000:1024 10000:102400"), DIRS ("/dev/shm
# /var/tmp"), REPS (3: the median recovery of REPS restarts of the same data),
# RAMPART_BIN (build/release/rampart), OUT (bench/results/recovery).
# Writes OUT/summary.json and OUT/summary.txt (printed). Every process is
# stopped by PID, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
points="${POINTS:-100000:100 1000000:100 200000:1024 10000:102400}"
dirs="${DIRS:-/dev/shm /var/tmp}"
reps="${REPS:-3}"
src_bin="${RAMPART_BIN:-build/release/rampart}"
out="${OUT:-bench/results/recovery}"
for tool in redis-cli; do command -v "$tool" >/dev/null || { echo "recovery.sh: $tool not found" >&2; exit 1; }; done
[ -x "$src_bin" ] || { echo "recovery.sh: no binary at $src_bin (make build)" >&2; exit 1; }
. bench/cluster.sh  # free_ports, stop_pid

tmp=$(mktemp -d)
cp "$src_bin" "$tmp/rampart"
pids=()
data_dirs=()
cleanup() {
  local pid d
  for pid in "${pids[@]}"; do stop_pid "$pid" 5; done
  for d in "${data_dirs[@]}"; do rm -rf "$d"; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

write_config() {  # CFG DATA_DIR CHECKPOINT_LOG_BYTES PORTS...
  local cfg=$1 data=$2 ckpt=$3
  shift 3
  {
    printf '[cluster]\nname = "recovery-bench"\n[transport]\nbackend = "ucx"\nspin_us = 0\n'
    printf '[kv]\npartitions_per_node = 2\ndata_dir = "%s"\ncheckpoint_log_bytes = "%s"\n' "$data" "$ckpt"
    printf 'max_value_bytes = "1MiB"\ngrace_ms = 200\n'
    printf '[proxy]\nport = %d\n' "$3"
    printf '[[nodes]]\nid = 0\nhost = "127.0.0.1"\nport = %d\n' "$1"
  } > "$cfg"
}

# SET key:%012d VALUE for KEYS keys through redis-cli --pipe.
load() {  # PORT KEYS VALUE_BYTES
  python3 - "$2" "$3" <<'PY' | redis-cli -p "$1" --pipe > "$tmp/pipe.log"
import sys
keys, size = int(sys.argv[1]), int(sys.argv[2])
value = b"v" * size
out = sys.stdout.buffer
for i in range(keys):
    k = b"key:%012d" % i
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, size, value))
PY
  grep -q "errors: 0" "$tmp/pipe.log" || { cat "$tmp/pipe.log" >&2; exit 1; }
}

# Starts kv-node 0 alone; waits until it logs that it serves; sets node_pid
# and secs (seconds from start to serving).
restart_node() {  # CFG
  local cfg=$1 t0 i
  : > "$tmp/node.log"
  t0=$(date +%s.%N)
  "$tmp/rampart" --config "$cfg" kv-node --id 0 > /dev/null 2> "$tmp/node.log" &
  node_pid=$!
  pids+=("$node_pid")
  for i in $(seq 1 6000); do
    grep -q "node 0: partitions" "$tmp/node.log" && break
    kill -0 "$node_pid" 2>/dev/null || { cat "$tmp/node.log" >&2; exit 1; }
    sleep 0.01
  done
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
}

results="$tmp/results.jsonl"
: > "$results"
for dir in $dirs; do
  for point in $points; do
    keys=${point%%:*}
    size=${point##*:}
    for mode in log checkpoint; do
      data="$dir/rampart-recovery-bench-$$"
      data_dirs+=("$data")
      rm -rf "$data"
      read -r -a p <<< "$(nodes=3 partitions=1 free_ports)"
      cfg="$tmp/c.toml"
      # log: no checkpoint starts (1 TiB); checkpoint: one starts every 64 MiB of log.
      write_config "$cfg" "$data" "$([ "$mode" = log ] && echo 1TiB || echo 64MiB)" "${p[0]}" "${p[1]}" "${p[2]}"
      "$tmp/rampart" --config "$cfg" up > "$tmp/up.log" 2>&1 < /dev/null &
      up_pid=$!
      pids+=("$up_pid")
      for i in $(seq 1 300); do grep -q '^ready' "$tmp/up.log" && break; sleep 0.1; done
      grep -q '^ready' "$tmp/up.log" || { cat "$tmp/up.log" >&2; exit 1; }
      node=$(sed -n 's/^node 0: pid \([0-9]*\),.*/\1/p' "$tmp/up.log")
      load "${p[2]}" "$keys" "$size"
      if [ "$mode" = checkpoint ]; then sleep 3; fi  # let the last checkpoint finish
      kill -KILL "$node" "$up_pid"
      wait "$up_pid" 2>/dev/null || true
      sleep 0.5
      for rep in $(seq 1 "$reps"); do
        sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true  # disk: read it from the disk
        restart_node "$cfg"
        grep ' recovered ' "$tmp/node.log" | python3 -c '
import json, re, sys
dir_, keys, size, mode, rep, secs = sys.argv[1:7]
parts = []
for line in sys.stdin:
    m = re.search(r"partition (\d+) .*recovered (\d+) keys in ([0-9.]+) s: checkpoint \d+ \((\d+) records, (\d+) bytes\), then (\d+) log records \((\d+) bytes\)", line)
    if m:
        parts.append(m.groups())
replayed = sum(int(p[4]) + int(p[6]) for p in parts)
print(json.dumps({"dir": dir_, "keys": int(keys), "value_bytes": int(size), "mode": mode,
                  "rep": int(rep), "seconds": float(secs),
                  "partition_seconds": max(float(p[2]) for p in parts),
                  "recovered_keys": sum(int(p[1]) for p in parts),
                  "replayed_bytes": replayed}))' "$dir" "$keys" "$size" "$mode" "$rep" "$secs" >> "$results"
        tail -1 "$results" >&2
        stop_pid "$node_pid" 10
      done
      rm -rf "$data"
    done
  done
done

mkdir -p "$out"
python3 - "$results" "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
groups = {}
for r in rows:
    groups.setdefault((r["dir"], r["keys"], r["value_bytes"], r["mode"]), []).append(r)
summary, lines = [], []
lines.append("recovery of one kv-node (2 partitions, recovered in parallel), median of the restarts")
lines.append(f"{'log dir':<10} {'keys':>9} {'value':>7} {'mode':<11} {'replayed':>10} {'seconds':>8} {'MB/s':>8} {'keys ok':>8}")
for (d, keys, size, mode), rs in sorted(groups.items()):
    med = sorted(rs, key=lambda r: r["seconds"])[(len(rs) - 1) // 2]
    mbps = med["replayed_bytes"] / 1e6 / med["partition_seconds"] if med["partition_seconds"] else 0
    ok = all(r["recovered_keys"] == keys for r in rs)
    summary.append({**med, "runs_seconds": [r["seconds"] for r in rs], "replay_mb_per_s": mbps})
    lines.append(f"{d:<10} {keys:>9} {size:>7} {mode:<11} {med['replayed_bytes'] / 1e6:>8.0f}MB"
                 f" {med['seconds']:>8.2f} {mbps:>8.0f} {'yes' if ok else 'NO':>8}")
lines.append("seconds: kv-node start until its partitions listen; MB/s: bytes replayed (checkpoint "
             "+ log) over the slower partition's replay time")
open(f"{sys.argv[2]}/summary.json", "w").write(json.dumps(summary, indent=2))
open(f"{sys.argv[2]}/summary.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
