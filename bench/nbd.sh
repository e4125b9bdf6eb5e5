#!/usr/bin/env bash
# bench/nbd.sh: an erasure-coded volume through NBD beside local IO (issue 18,
# item 4), one measurement at a time, on 127.0.0.1:
#   volume   fio --ioengine=nbd against `rampart nbd --volume v4`: a 96 MiB
#            volume over 4 RAM storage nodes (k = 3, 16 KiB cells), written
#            whole first; every storage setting at its default
#   ram      fio --ioengine=nbd against `rampart nbd --ram 96MiB`: the NBD
#            server alone, no storage tier
#   local    fio --ioengine=io_uring on a 96 MiB file in /dev/shm (tmpfs: no
#            O_DIRECT, so buffered), the same depth
#   direct   `rampart bench volume v4` (the volume's own client in process,
#            no NBD): 16 whole stripes per call (sequential), one 4 KiB block
#            per call (random)
# each for sequential 1 MiB reads (fio iodepth 8) and random 4 KiB reads (fio
# iodepth 32), REPS times round-robin.
#
#   bench/nbd.sh
# Environment: SECONDS_PER_RUN (default 5), REPS (default 3), RAMPART_BIN
# (default build/release/rampart, copied first), OUT (default bench/results/nbd).
# Writes OUT/<target>-<pattern>-r<rep>.json (fio's JSON, or bench volume's),
# OUT/summary.txt (medians, ranges, ratios to local; also printed) and
# OUT/cluster.toml. Every process started here is stopped by PID on exit, also
# on failure; the /dev/shm file is removed.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/cluster.sh

secs="${SECONDS_PER_RUN:-5}"
reps="${REPS:-3}"
out="${OUT:-bench/results/nbd}"
command -v fio >/dev/null || { echo "nbd.sh: fio not found (make deps)" >&2; exit 1; }
fio --enghelp 2>/dev/null | grep -qw nbd || { echo "nbd.sh: this fio has no nbd engine" >&2; exit 1; }
mkdir -p "$out"
rm -f "$out"/*.json "$out"/summary.txt

node_pids=()
server_pid=""
local_file=/dev/shm/rampart-nbd-bench-$$
stop_all() {
  local pid
  [ -z "$client_pid" ] || stop_pid "$client_pid"  # a fio or bench run (bench/cluster.sh)
  client_pid=""
  [ -z "$server_pid" ] || stop_pid "$server_pid"
  server_pid=""
  for pid in "${node_pids[@]}"; do stop_pid "$pid"; done
  node_pids=()
  rm -f "$local_file"
}
bench_init "${RAMPART_BIN:-build/release/rampart}"
trap 'stop_all; cleanup' EXIT

read -r -a ports <<< "$(nodes=4 partitions=1 free_ports)"
cfg="$tmp/nbd.toml"
{
  printf '[cluster]\nname = "bench-nbd"\n'
  for id in 0 1 2 3; do
    printf '[[storage_nodes]]\nid = %d\nhost = "127.0.0.1"\nport = %d\npath = "ram"\nsize = "64MiB"\n' \
      "$id" "${ports[$id]}"
  done
  printf '[[volumes]]\nname = "v4"\nsize = "96MiB"\ncell_bytes = "16KiB"\nnodes = [0, 1, 2, 3]\n'
} > "$cfg"
cp "$cfg" "$out/cluster.toml"

for id in 0 1 2 3; do
  "$bin" --config "$cfg" storage-node --id "$id" > "$tmp/node$id.log" 2>&1 &
  node_pids+=($!)
done
for id in 0 1 2 3; do
  wait_listen "${ports[$id]}" "${node_pids[$id]}" "$tmp/node$id.log" "storage node $id"
done
echo "# filling v4" >&2
"$bin" --config "$cfg" bench volume v4 --op write --pattern sequential --seconds 2 \
  --json "$tmp/fill.json" > /dev/null
python3 - "$tmp/fill.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["results"]["bytes"] >= d["configuration"]["volume_bytes"], "volume not filled"
PY
dd if=/dev/urandom of="$local_file" bs=1M count=96 status=none

start_server() {  # ARGS...: `rampart nbd ARGS --port 0`; sets $uri
  : > "$tmp/server.out"  # emptied here: the previous server's URI must not be read
  "$bin" --config "$cfg" nbd "$@" --port 0 > "$tmp/server.out" 2> "$tmp/server.err" &
  server_pid=$!
  for _ in $(seq 1 200); do
    uri=$(grep -m1 '^nbd://' "$tmp/server.out" || true)
    [ -n "$uri" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || { cat "$tmp/server.err" >&2; exit 1; }
    sleep 0.05
  done
  echo "nbd.sh: rampart nbd $* printed no URI" >&2
  exit 1
}

fio_run() {  # TARGET PATTERN REP
  local target=$1 pattern=$2 rep=$3 io
  io=(--rw=read --bs=1M --iodepth=8)
  [ "$pattern" = random ] && io=(--rw=randread --bs=4k --iodepth=32 --randrepeat=0)
  local where=(--ioengine=nbd "--uri=$uri")
  [ "$target" = local ] && where=(--ioengine=io_uring "--filename=$local_file")
  # In the background: a signal then reaches the script's trap at once (bench/cluster.sh).
  fio --name="$target-$pattern" "${where[@]}" "${io[@]}" --size=96M --time_based \
    --runtime="$secs" --output-format=json --output="$out/$target-$pattern-r$rep.json" > /dev/null &
  wait_child $!
}

direct_run() {  # PATTERN REP
  local extra=()
  [ "$1" = random ] && extra=(--block-size 4KiB)
  "$bin" --config "$cfg" bench volume v4 --pattern "$1" --steering off --seconds "$secs" \
    "${extra[@]}" --json "$out/direct-$1-r$2.json" > /dev/null &
  wait_child $!
}

for rep in $(seq 1 "$reps"); do
  for pattern in sequential random; do
    echo "# rep $rep $pattern: volume, ram, local, direct" >&2
    start_server --volume v4
    fio_run volume "$pattern" "$rep"
    stop_pid "$server_pid"; server_pid=""
    start_server --ram 96MiB
    fio_run ram "$pattern" "$rep"
    stop_pid "$server_pid"; server_pid=""
    fio_run local "$pattern" "$rep"
    direct_run "$pattern" "$rep"
  done
done

python3 - "$out" "$reps" "$secs" "$(git rev-parse --short=12 HEAD)" <<'PY' | tee "$out/summary.txt"
import json, statistics, sys
out, reps, secs, commit = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def figures(target, pattern, rep):
    d = json.load(open(f"{out}/{target}-{pattern}-r{rep}.json"))
    if target == "direct":
        r = d["results"]
        return r["iops"], r["mb_per_sec"]
    job = d["jobs"][0]["read"]
    return job["iops"], job["bw_bytes"] / 1e6
names = {"volume": "fio nbd -> rampart nbd --volume v4",
         "ram": "fio nbd -> rampart nbd --ram",
         "local": "fio io_uring, file in /dev/shm",
         "direct": "rampart bench volume v4 (no NBD)"}
print(f"bench/nbd.sh at {commit}: median of {reps} x {secs} s [min-max]; 2 cores, 127.0.0.1")
print("sequential: 1 MiB reads, fio iodepth 8 (bench volume: 16 stripes = 768 KiB a call);"
      " random: 4 KiB reads, fio iodepth 32 (bench volume: one at a time)")
for pattern in ("sequential", "random"):
    rows = {}
    for t in names:
        runs = [figures(t, pattern, r) for r in range(1, reps + 1)]
        rows[t] = ([x[0] for x in runs], [x[1] for x in runs])
    local = statistics.median(rows["local"][1])
    print(f"\n{pattern}")
    print(f"  {'target':<38} {'ops/s':>12} {'MB/s':>9}  {'x local':>7}  range (MB/s)")
    for t, (ops, mb) in rows.items():
        m = statistics.median(mb)
        print(f"  {names[t]:<38} {statistics.median(ops):>12,.0f} {m:>9,.0f}  {m / local:>7.2f}"
              f"  {min(mb):,.0f}-{max(mb):,.0f}")
PY
