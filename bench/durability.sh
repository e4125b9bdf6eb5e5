#!/usr/bin/env bash
# What durability costs (docs/log_format.md), side by side in one run through
# bench/proxy.sh: redis-benchmark -c 50 -r 100000, SET and MSET4 at -P 1 and
# -P 16, against
#   rampart-agg             rampart, kv.log = "none" (volatile)
#   rampart-dir-interval    redo logs in files, kv.sync = "interval" (the default)
#   rampart-dir-always      redo logs in files, kv.sync = "always"
#   rampart-volume-always   redo logs on a volume per kv-node over 3 storage
#                           nodes serving files, kv.sync = "always"
#   redis-aof-everysec      one redis-server, appendonly yes, appendfsync everysec
#   redis-aof-always        one redis-server, appendonly yes, appendfsync always
#   redis                   one redis-server without persistence
# All logs, AOFs and storage-node files go to DATA_DIR, one disk for all.
#
#   bench/durability.sh                               # REPS=3, data under /var/tmp
#   REPS=1 SECONDS_PER_POINT=2 bench/durability.sh
# Environment: REPS (3), SECONDS_PER_POINT (3), DATA_DIR (default
# /var/tmp/rampart-durability-bench: a real disk, not tmpfs; removed after),
# SYSTEMS (the list above), OUT (default bench/results/durability), and
# everything bench/proxy.sh takes.
# Writes OUT/*.json, summary.txt (printed) and durability.png via
# bench/plot_durability.py.
set -euo pipefail
cd "$(dirname "$0")/.."
data="${DATA_DIR:-/var/tmp/rampart-durability-bench}"
mkdir -p "$data"
fs=$(df --output=fstype "$data" | tail -1)
echo "durability bench: data in $data ($fs)" >&2
cleanup() { rm -rf "$data"; }
trap cleanup EXIT
SYSTEMS="${SYSTEMS:-rampart-agg rampart-dir-interval rampart-dir-always rampart-volume-always redis-aof-everysec redis-aof-always redis}" \
TESTS="${TESTS:-set mset4}" \
REPS="${REPS:-3}" \
DATA_DIR="$data" \
OUT="${OUT:-bench/results/durability}" \
PLOT=bench/plot_durability.py \
DATA_FS="$fs" \
  bench/proxy.sh
