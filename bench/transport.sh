#!/usr/bin/env bash
# Runs `rampart bench transport` (Release build) RUNS times, merges the runs
# (median, min-max) and draws the plots.
#   bench/transport.sh [SECONDS_PER_POINT [RUNS]]   (defaults 1 and 3)
# Writes bench/results/transport.json (merged), transport.txt (the merged
# table) and transport-{ops,seed004}.png.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-1}"
runs="${2:-3}"
make build
mkdir -p bench/results
# shellcheck source=bench/cluster.sh
. bench/cluster.sh
bench_venv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq 1 "$runs"); do
  echo "run $i of $runs" >&2
  build/release/rampart bench transport --seconds "$seconds" --json "$tmp/run$i.json" >/dev/null
done
bench/.venv/bin/python bench/merge_runs.py bench/results/transport.json "$tmp"/run*.json \
  | tee bench/results/transport.txt
bench/.venv/bin/python bench/plot_transport.py bench/results/transport.json bench/results/transport
echo "plots: bench/results/transport-ops.png bench/results/transport-seed004.png"
