#!/usr/bin/env bash
# Seed 002's experiments (issue 8) on 127.0.0.1, one measurement at a time:
#   (a) parity throughput   `rampart bench xor` at 1 MiB and 16 KiB blocks
#   (b) healthy vs degraded `rampart bench volume v4`: sequential whole-stripe
#                           reads of a 4-node volume (k = 3), healthy and with
#                           storage node 1 taken out (--degraded 1)
#   (c) load concentration  seed 002's Fig. 7-11: volumes "a" over storage
#                           nodes 0,1,2 and "b" over 2,3,4 meet on node 2 only
#                           (a volume needs >= 3 nodes, so exactly one shared
#                           node takes 5); 4 client processes, clients 0,1 read
#                           a and 2,3 read b, all at once (--start-at), with
#                           hot-node steering off and on, REPS interleaved runs
#                           (off first in odd runs, on first in even ones)
# The volumes are written whole first (reads of never-written RAM would copy the
# kernel's shared zero page). Storage nodes serve RAM (`path = "ram"`, engine uring: the copy runs on the
# node's one polling thread, like the paper's RAM disk) with
# transport.spin_us = 0 (2 shared cores: no poll loop spins).
#
# Every process shares the host's cores. (c) runs twice unless CAP_PCT=0:
# "shared" (no limit) and "capped": each storage node in its own cgroup (v1
# cpu controller) limited to CAP_PCT % of one core, which stands in for the
# paper's one machine per storage node (a node's capacity is its own, not
# what the other processes leave over). Skipped when the cgroup cannot be made.
#
#   bench/volume.sh
# Environment:
#   SECONDS_PER_RUN   (default 5) duration of each measurement
#   REPS              (default 3) interleaved off/on runs of (c)
#   CAP_PCT           (default 25) % of a core per storage node in "capped"; 0 skips it
#   SETUPS            (default "shared capped") which setups of (c) to run
#   RAMPART_BIN       default build/release/rampart (copied first)
#   OUT               results directory (default bench/results/volume)
# Writes OUT/xor-<bytes>.json, OUT/rw-<healthy|degraded>-r<rep>.json,
# OUT/conc-<shared|capped>-<off|on>-r<rep>-c<client>.json and through
# bench/plot_volume.py summary.json, summary.txt (also printed) and
# volume.png. Holds /tmp/rampart-bench.lock while it measures. Every process
# started here is stopped by PID when the script exits, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/cluster.sh

secs="${SECONDS_PER_RUN:-5}"
reps="${REPS:-3}"
cap_pct="${CAP_PCT:-25}"
setups="${SETUPS:-shared capped}"
out="${OUT:-bench/results/volume}"
lock=/tmp/rampart-bench.lock
mkdir -p "$out"

node_pids=()
cgroups=()
own_lock=""
stop_nodes() {
  local pid
  for pid in "${node_pids[@]}"; do stop_pid "$pid"; done
  node_pids=()
}
remove_cgroups() {
  local cg
  for cg in "${cgroups[@]}"; do rmdir "$cg" 2>/dev/null || true; done
  cgroups=()
}
bench_init "${RAMPART_BIN:-build/release/rampart}"
trap 'stop_nodes; remove_cgroups; [ -n "$own_lock" ] && rm -f "$lock"; cleanup' EXIT

while [ -e "$lock" ]; do echo "# waiting for $lock ($(cat "$lock" 2>/dev/null))" >&2; sleep 10; done
echo "bench/volume.sh pid $$" > "$lock"
own_lock=1

# (a) parity throughput
for b in 1048576 16384; do
  echo "# xor $b" >&2
  "$bin" bench xor --k 3 --block-size "$b" --seconds 1 --json "$out/xor-$b.json" >&2
done

# The cluster file: 5 RAM storage nodes on free ports, volumes v4, a and b.
read -r -a ports <<< "$(nodes=5 partitions=1 free_ports)"
cfg="$tmp/volume.toml"
{
  printf '[cluster]\nname = "bench-volume"\n[transport]\nbackend = "ucx"\nspin_us = 0\n'
  printf '[storage]\nblock_bytes = 4096\nengine = "uring"\nqueue_depth = 64\n'
  printf 'max_io_bytes = "1MiB"\nstaging_bytes = "64MiB"\n'
  for id in 0 1 2 3 4; do
    printf '[[storage_nodes]]\nid = %d\nhost = "127.0.0.1"\nport = %d\npath = "ram"\nsize = "192MiB"\n' \
      "$id" "${ports[$id]}"
  done
  printf '[[volumes]]\nname = "v4"\nsize = "96MiB"\ncell_bytes = "16KiB"\nnodes = [0, 1, 2, 3]\n'
  printf '[[volumes]]\nname = "a"\nsize = "64MiB"\ncell_bytes = "16KiB"\nnodes = [0, 1, 2]\nnode_offset = "64MiB"\n'
  printf '[[volumes]]\nname = "b"\nsize = "64MiB"\ncell_bytes = "16KiB"\nnodes = [2, 3, 4]\nnode_offset = "128MiB"\n'
} > "$cfg"
cp "$cfg" "$out/cluster.toml"

start_nodes() {  # [CGROUP_PCT]: the 5 storage nodes, each in its own capped cgroup when given
  local id cg
  for id in 0 1 2 3 4; do
    "$bin" --config "$cfg" storage-node --id "$id" > "$tmp/node$id.log" 2>&1 &
    node_pids+=($!)
    if [ -n "${1:-}" ]; then
      cg="/sys/fs/cgroup/cpu/rampart-volume-$$-node$id"
      mkdir "$cg"
      cgroups+=("$cg")
      # A short period (10 ms) so that a node over its quota stalls briefly.
      echo 10000 > "$cg/cpu.cfs_period_us"
      echo $(( $1 * 100 )) > "$cg/cpu.cfs_quota_us"
      echo "$!" > "$cg/cgroup.procs"  # the process, all its threads (and later ones)
    fi
  done
  for id in 0 1 2 3 4; do
    wait_listen "${ports[$id]}" "${node_pids[$id]}" "$tmp/node$id.log" "storage node $id"
  done
}

# Writes every volume whole (sequential writes for a while, wrapping around),
# so that reads copy real pages, not the kernel's shared zero page.
fill_volumes() {
  local v
  for v in "$@"; do
    echo "# filling $v" >&2
    "$bin" --config "$cfg" bench volume "$v" --op write --pattern sequential --seconds 2 \
      --json "$tmp/fill-$v.json" | sed -n 3p >&2
    python3 - "$tmp/fill-$v.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["results"]["bytes"] >= d["configuration"]["volume_bytes"], "volume not filled"
PY
  done
}

volume_bench() {  # NAME JSON ARGS...
  local name=$1 json=$2
  shift 2
  "$bin" --config "$cfg" bench volume "$name" --seconds "$secs" --json "$json" "$@"
}

# (b) healthy vs degraded, interleaved (steering off: the healthy path alone)
start_nodes
fill_volumes v4 a b
for r in $(seq 1 "$reps"); do
  for mode in healthy degraded; do
    echo "# v4 $mode r$r" >&2
    extra=()
    [ "$mode" = degraded ] && extra=(--degraded 1)
    volume_bench v4 "$out/rw-$mode-r$r.json" --pattern sequential --steering off "${extra[@]}" |
      sed -n 3p >&2
  done
done

# (c) load concentration: clients 0,1 on a, 2,3 on b, measuring the same interval.
concentration() {  # SETUP STEERING REP
  local c vol pids=() start
  start=$(python3 -c 'import time; print(f"{time.time() + 2.5:.3f}")')
  for c in 0 1 2 3; do
    vol=a
    [ "$c" -ge 2 ] && vol=b
    volume_bench "$vol" "$out/conc-$1-$2-r$3-c$c.json" --pattern random --steering "$2" \
      --start-at "$start" > "$tmp/client$c.out" 2>&1 &
    pids+=($!)
  done
  for c in 0 1 2 3; do
    wait "${pids[$c]}" || { echo "client $c failed:" >&2; cat "$tmp/client$c.out" >&2; exit 1; }
  done
  for c in 0 1 2 3; do echo "  client $c: $(sed -n 3p "$tmp/client$c.out")" >&2; done
}
order() {  # REP: off first in odd runs, on first in even ones
  if [ $(( $1 % 2 )) -eq 1 ]; then echo off on; else echo on off; fi
}
if [[ " $setups " == *" shared "* ]]; then
  for r in $(seq 1 "$reps"); do
    for steering in $(order "$r"); do
      echo "# concentration shared steering $steering r$r" >&2
      concentration shared "$steering" "$r"
    done
  done
fi
stop_nodes

if [ "$cap_pct" -gt 0 ] && [[ " $setups " == *" capped "* ]]; then
  if mkdir "/sys/fs/cgroup/cpu/rampart-volume-$$-probe" 2>/dev/null; then
    rmdir "/sys/fs/cgroup/cpu/rampart-volume-$$-probe"
    start_nodes "$cap_pct"
    fill_volumes a b
    for r in $(seq 1 "$reps"); do
      for steering in $(order "$r"); do
        echo "# concentration capped ($cap_pct %) steering $steering r$r" >&2
        concentration capped "$steering" "$r"
      done
    done
    stop_nodes
    remove_cgroups
  else
    echo "bench/volume.sh: cannot make a cpu cgroup: skipping the capped runs" >&2
  fi
fi

rm -f "$lock"
own_lock=""
bench_venv
bench/.venv/bin/python bench/plot_volume.py "$out" --cap-pct "$cap_pct"
