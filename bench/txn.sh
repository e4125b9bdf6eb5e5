#!/usr/bin/env bash
# Seed 000's micro-benchmark side by side: s2pl vs ramp vs none over tcp
# sockets and over UCX two-sided messages (the paper's Eth/Verbs columns),
# each against a fresh local cluster started by `rampart up`.
#   bench/txn.sh [SECONDS_PER_POINT]   (default 5)
# Configuration (stated in the output and the JSON): 4 kv-nodes x 1 partition
# on 127.0.0.1, 2 client threads, transactions of 8 keys, 95% read-only,
# 1,000 keys of 1 KiB (the paper's micro-benchmark shape with the values of
# its YCSB setup (§5.5), scaled to 2 cores).
# Writes bench/results/txn-<transport>-<isolation>.json and bench/results/txn.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-5}"
make build >/dev/null
out=bench/results
mkdir -p "$out"
nodes=4 partitions=1 spin_us=50 cluster_name=bench
# shellcheck source=bench/cluster.sh
. bench/cluster.sh
bench_init build/release/rampart

: > "$out/txn.txt"
for transport in tcp ucx; do
  start_cluster "$transport"
  for isolation in s2pl ramp none; do
    echo "== $transport $isolation" | tee -a "$out/txn.txt"
    "$bin" --config "$config" --log-level warn bench txn \
      --isolation "$isolation" --transport "$transport" --seconds "$seconds" \
      --transactions 1000000 --threads 2 --txn-size 8 --read-ratio 0.95 --keys 1000 \
      --value-size 1024 --json "$out/txn-$transport-$isolation.json" | tee -a "$out/txn.txt"
  done
  stop_cluster
done
