#!/usr/bin/env bash
# Runs `rampart bench transport` (Release build) and draws its plots.
#   bench/transport.sh [SECONDS_PER_POINT]   (default 1)
# Writes bench/results/transport.json and bench/results/transport-{ops,seed004}.png.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-1}"
make build
mkdir -p bench/results
build/release/rampart bench transport --seconds "$seconds" --json bench/results/transport.json \
  | tee bench/results/transport.txt
if [ ! -x bench/.venv/bin/python ]; then
  python3 -m venv bench/.venv
  bench/.venv/bin/pip install -q -r bench/requirements.txt
fi
bench/.venv/bin/python bench/plot_transport.py bench/results/transport.json bench/results/transport
echo "plots: bench/results/transport-ops.png bench/results/transport-seed004.png"
