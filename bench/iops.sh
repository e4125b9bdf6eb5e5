#!/usr/bin/env bash
# Seed 001's IOPS experiments (issue 7), on 127.0.0.1, one measurement at a time:
#   local-threads, local-uring   `rampart bench iops --local FILE`: the file driven
#                                directly by the storage-node's IO engine (baseline)
#   none                         a storage-node with engine none: transport only,
#                                no device touched (seed 001's "RDMA communication")
#   remote-threads, remote-uring, remote-inline
#                                a storage-node serving FILE with that engine,
#                                measured by `rampart bench iops --node 0`
#   fio-psync, fio-uring         fio on the same file: the machine's own local
#                                limit (psync with one job per core; io_uring
#                                with O_DIRECT at each number of IOs in flight)
# Random reads of each block size over the whole device, for a file on tmpfs and
# a file on disk (O_DIRECT), at queue depth QDS per connection over CONNS
# connections (local: QDS x CONNS in flight from one thread, so every
# configuration is compared at the same number of IOs in flight). Then the
# TPC-H Q3 trace (bench/trace) replayed local vs remote at REPLAY_CONC.
#
#   bench/iops.sh
# Environment:
#   SECONDS_PER_POINT  (default 2) duration of each iops point
#   BLOCKS       block sizes in bytes (default "512 4096 16384")
#   QDS          queue depths per connection (default "1 4 16 64")
#   CONNS        connections (default "1 2 4")
#   MEDIA        subset of "tmpfs disk" (default both)
#   TMPFS_DIR    (/dev/shm), DISK_DIR (/var/tmp): where the device files go
#   DEVICE_BYTES device file size in MiB (default 1024), filled with random bytes
#   IO_THREADS   IO threads of the threads engine (default 4)
#   ENGINES      storage-node engines swept, local and remote (default
#                "threads uring inline")
#   TRACE        (default bench/trace/tpch_q3_sf0.5.trace; made by
#                bench/trace/make_trace.sh with its database); REPLAY_CONC
#                (default "1 8 32"); set TRACE= to skip the replay
#   RAMPART_BIN  default build/release/rampart (copied first)
#   OUT          results directory (default bench/results/iops)
# Writes OUT/<media>-<system>-b<bytes>-c<conns>-q<qd>.json (local:
# OUT/<media>-local-<engine>-b<bytes>-d<in flight>.json; fio:
# OUT/<media>-fio-<psync|uring>-b<bytes>-d<in flight>.json), OUT/replay-*.json,
# and through bench/plot_iops.py summary.json, summary.txt (also printed),
# iops.png (one panel per medium and block size) and replay.png. Every process
# started here is stopped by PID (SIGTERM, bounded wait, SIGKILL) when the
# script exits, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/cluster.sh

secs="${SECONDS_PER_POINT:-2}"
blocks="${BLOCKS:-512 4096 16384}"
qds="${QDS:-1 4 16 64}"
conns_list="${CONNS:-1 2 4}"
media_list="${MEDIA:-tmpfs disk}"
device_mib="${DEVICE_BYTES:-1024}"
io_threads="${IO_THREADS:-4}"
engines="${ENGINES:-threads uring inline}"
trace="${TRACE-bench/trace/tpch_q3_sf0.5.trace}"
replay_conc="${REPLAY_CONC:-1 8 32}"
out="${OUT:-bench/results/iops}"
mkdir -p "$out"

node_pid=""
stop_node() {
  if [ -n "$node_pid" ]; then stop_pid "$node_pid"; node_pid=""; fi
}
bench_init "${RAMPART_BIN:-build/release/rampart}"
files_to_remove=()
trap 'stop_node; rm -f "${files_to_remove[@]}"; cleanup' EXIT

device_file() {  # MEDIA -> path of a DEVICE_BYTES file of random bytes
  local dir
  case "$1" in
    tmpfs) dir="${TMPFS_DIR:-/dev/shm}" ;;
    disk) dir="${DISK_DIR:-/var/tmp}" ;;
    *) echo "bench/iops.sh: unknown medium $1" >&2; exit 2 ;;
  esac
  echo "$dir/rampart-iops-$$.img"
}

make_device() {  # PATH MIB
  files_to_remove+=("$1")
  echo "# filling $1 with $2 MiB of random bytes" >&2
  head -c "$(( $2 << 20 ))" /dev/urandom > "$1"
  sync "$1"
}

# The storage-node's cluster file: one node serving PATH (or "ram") with ENGINE.
node_config() {  # ENGINE PATH MIB PORT
  cat > "$tmp/storage.toml" <<EOF
[cluster]
name = "bench-iops"
[transport]
backend = "ucx"
[storage]
block_bytes = 512
engine = "$1"
io_threads = $io_threads
queue_depth = 64
max_io_bytes = "1MiB"
direct = true
staging_bytes = "64MiB"
[[storage_nodes]]
id = 0
host = "127.0.0.1"
port = $4
path = "$2"
size = "$3MiB"
EOF
}

start_node() {  # ENGINE PATH MIB
  local port
  port=$(python3 scripts/free_ports.py 1)
  node_config "$1" "$2" "$3" "$port"
  "$bin" --config "$tmp/storage.toml" storage-node --id 0 > "$tmp/node.log" 2>&1 &
  node_pid=$!
  wait_listen "$port" "$node_pid" "$tmp/node.log" "storage-node"
}

point() {  # NAME ARGS... : one bench iops run, JSON to OUT/NAME.json
  local name=$1
  shift
  echo "# $name" >&2
  "$bin" --config "$tmp/storage.toml" bench iops --op read --pattern random \
    --seconds "$secs" --json "$out/$name.json" "$@" | tail -1 >&2 || {
    echo "bench/iops.sh: $name failed" >&2
    exit 1
  }
}

sweep_remote() {  # MEDIUM SYSTEM
  for b in $blocks; do
    for c in $conns_list; do
      for q in $qds; do
        point "$1-$2-b$b-c$c-q$q" --node 0 --block-size "$b" --connections "$c" --queue-depth "$q"
      done
    done
  done
}

# Local runs have no connections: one point per number of IOs in flight that
# some remote point has (queue depth x connections).
in_flight_list=$(for c in $conns_list; do for q in $qds; do echo $((q * c)); done; done | sort -nu)

sweep_local() {  # MEDIUM ENGINE PATH
  for b in $blocks; do
    for d in $in_flight_list; do
      point "$1-local-$2-b$b-d$d" --local "$3" --local-size "${device_mib}MiB" \
        --engine "$2" --io-threads "$io_threads" --block-size "$b" --queue-depth "$d"
    done
  done
}

# fio on FILE, results in bench iops's JSON shape (results: iops, mb_per_sec,
# p50_ns, p99_ns, errors). psync: one job per core, each one IO at a time;
# io_uring: one job, O_DIRECT, DEPTH in flight.
fio_point() {  # NAME FILE BLOCK ENGINE JOBS DEPTH
  local name=$1
  echo "# $name" >&2
  fio --name="$name" --filename="$2" --size="${device_mib}M" --rw=randread --bs="$3" \
    --ioengine="$4" --numjobs="$5" --iodepth="$6" --direct="$([ "$4" = io_uring ] && echo 1 || echo 0)" \
    --time_based --runtime="$secs" --ramp_time=0 --group_reporting --norandommap \
    --output-format=json > "$tmp/fio.json"
  python3 - "$tmp/fio.json" "$out/$name.json" "$4" "$5" "$6" "$2" <<'PY'
import json, sys
src, dst, engine, jobs, depth, path = sys.argv[1:]
job = json.load(open(src))["jobs"][0]
read = job["read"]
pct = read.get("clat_ns", {}).get("percentile", {})
res = {"iops": read["iops"], "mb_per_sec": read["bw_bytes"] / 1e6,
       "p50_ns": pct.get("50.000000", 0), "p99_ns": pct.get("99.000000", 0),
       "errors": job.get("error", 0), "ops": read["total_ios"]}
conf = {"target": "fio", "path": path, "ioengine": engine, "numjobs": int(jobs),
        "iodepth": int(depth)}
json.dump({"configuration": conf, "results": res}, open(dst, "w"), indent=1)
print(f"fio {engine} jobs {jobs} depth {depth}: {res['iops']:.0f} IOPS", file=sys.stderr)
PY
}

sweep_fio() {  # MEDIUM PATH
  local cores
  cores=$(nproc)
  for b in $blocks; do
    fio_point "$1-fio-psync-b$b-d$cores" "$2" "$b" psync "$cores" 1
    for d in $in_flight_list; do
      fio_point "$1-fio-uring-b$b-d$d" "$2" "$b" io_uring 1 "$d"
    done
  done
}

command -v fio >/dev/null || { echo "bench/iops.sh: fio not found (make deps)" >&2; exit 1; }
node_config threads ram 64 1  # a cluster file for the --local runs
for medium in $media_list; do
  file=$(device_file "$medium")
  make_device "$file" "$device_mib"
  sweep_fio "$medium" "$file"
  for engine in $engines; do
    sweep_local "$medium" "$engine" "$file"
    start_node "$engine" "$file" "$device_mib"
    sweep_remote "$medium" "remote-$engine"
    stop_node
  done
  rm -f "$file"
done
# Transport only: the medium does not matter.
start_node none ram "$device_mib"
sweep_remote any none
stop_node

if [ -n "$trace" ]; then
  db="bench/trace/$(basename "$trace" .trace | sed 's/^tpch_q3_/tpch_/').db"
  if [ ! -f "$db" ]; then
    echo "bench/iops.sh: $db is missing: make it with bench/trace/make_trace.sh" >&2
    exit 1
  fi
  db_mib=$(( ($(stat -c %s "$db") + (1 << 20) - 1) >> 20 ))
  for medium in $media_list; do
    file=$(device_file "$medium")
    files_to_remove+=("$file")
    cp "$db" "$file"
    truncate -s "${db_mib}M" "$file"
    sync "$file"
    for engine in $engines; do
      for c in $replay_conc; do
        name="replay-$medium-local-$engine-c$c"
        echo "# $name" >&2
        "$bin" --config "$tmp/storage.toml" bench replay "$trace" --align 512 \
          --local "$file" --local-size "${db_mib}MiB" --engine "$engine" \
          --io-threads "$io_threads" --concurrency "$c" --json "$out/$name.json" | tail -1 >&2
      done
      start_node "$engine" "$file" "$db_mib"
      for c in $replay_conc; do
        name="replay-$medium-remote-$engine-c$c"
        echo "# $name" >&2
        "$bin" --config "$tmp/storage.toml" bench replay "$trace" --align 512 --node 0 \
          --connections "$(( c < 2 ? 1 : 2 ))" --concurrency "$c" \
          --json "$out/$name.json" | tail -1 >&2
      done
      stop_node
    done
    rm -f "$file"
  done
fi

bench_venv
bench/.venv/bin/python bench/plot_iops.py "$out"
