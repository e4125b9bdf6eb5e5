#!/usr/bin/env bash
# Seed 000's micro-benchmark side by side: s2pl vs ramp vs none over tcp
# sockets and over UCX two-sided messages (the paper's Eth/Verbs columns),
# each against a fresh local cluster started by `rampart up`.
#   bench/txn.sh [SECONDS_PER_POINT]   (default 5)
# Configuration (stated in the output and the JSON): 4 kv-nodes x 1 partition
# on 127.0.0.1, 2 client threads, transactions of 8 keys, 95% read-only,
# 1,000 keys of 1 KiB (the paper's shape, scaled to 2 cores).
# Writes bench/results/txn-<transport>-<isolation>.json and bench/results/txn.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-5}"
make build >/dev/null
bin=build/release/rampart
out=bench/results
mkdir -p "$out"
tmp=$(mktemp -d)
up_pid=""
cleanup() {
  if [ -n "$up_pid" ] && kill -0 "$up_pid" 2>/dev/null; then
    kill "$up_pid"; wait "$up_pid" || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

: > "$out/txn.txt"
for transport in tcp ucx; do
  {
    printf '[cluster]\nname = "bench"\n[transport]\nbackend = "%s"\n' "$transport"
    printf '[kv]\npartitions_per_node = 1\narena_bytes = "256MiB"\ngrace_ms = 2000\n'
    for id in 0 1 2 3; do
      printf '[[nodes]]\nid = %d\nhost = "127.0.0.1"\nport = %d\n' "$id" "$(free_port)"
    done
  } > "$tmp/cluster-$transport.toml"
  "$bin" --config "$tmp/cluster-$transport.toml" up > "$tmp/up.log" 2>&1 &
  up_pid=$!
  for _ in $(seq 1 200); do grep -q '^ready' "$tmp/up.log" && break; sleep 0.1; done
  grep -q '^ready' "$tmp/up.log" || { cat "$tmp/up.log"; exit 1; }
  for isolation in s2pl ramp none; do
    echo "== $transport $isolation" | tee -a "$out/txn.txt"
    "$bin" --config "$tmp/cluster-$transport.toml" --log-level warn bench txn \
      --isolation "$isolation" --transport "$transport" --seconds "$seconds" \
      --transactions 1000000 --threads 2 --txn-size 8 --read-ratio 0.95 --keys 1000 \
      --value-size 1024 --json "$out/txn-$transport-$isolation.json" | tee -a "$out/txn.txt"
  done
  kill "$up_pid"; wait "$up_pid" || true; up_pid=""
done
