#!/usr/bin/env bash
# bench/geo.sh: the GEO commands through rampart's proxy and against one redis-server, side by
# side, REPS times with the systems alternating:
#   rampart   `rampart up`, 4 kv-nodes x 1 partition, every other setting at its default
#             (durable redo log, one proxy worker on 2 cores)
#   redis     redis-server --save "" --appendonly no
# Each run loads POINTS random positions (fixed seed: the same on both) into one key, members
# p:000000000000 .. (redis-benchmark's __rand_int__ form), then runs redis-benchmark -c CLIENTS
# -r POINTS -n N at -P 1 and -P 16 for
#   geosearch  GEOSEARCH geo FROMLONLAT 13.4 38.1 BYRADIUS 20 km COUNT 10 ASC WITHDIST
#   geopos     GEOPOS geo p:__rand_int__
#   geodist    GEODIST geo p:__rand_int__ p:__rand_int__ km
#   geoadd     GEOADD geo:new 13.361389 38.115556 m:__rand_int__ (-r 100000000: mostly new members of
#              a second, growing set; a read-modify-write of one key from every client)
#
#   bench/geo.sh                          # 100,000 points, 50 clients, 3 reps
#   POINTS=20000 N=20000 REPS=5 bench/geo.sh
#
# Prints one line per run and the medians with [min-max] per system, test and depth.
set -euo pipefail
cd "$(dirname "$0")/.."
points="${POINTS:-100000}" n="${N:-100000}" clients="${CLIENTS:-50}" reps="${REPS:-3}"
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then sed -n '2,17p' "$0" | cut -c3-; exit 0; fi
for tool in redis-server redis-benchmark; do
  command -v "$tool" >/dev/null || { echo "geo.sh: $tool not found (make deps)" >&2; exit 1; }
done

. bench/cluster.sh
bench_init "${RAMPART_BIN:-build/release/rampart}"
redis_pid=""
trap 'stop_cluster; [ -z "$redis_pid" ] || stop_pid "$redis_pid"; rm -rf "$tmp"' EXIT
results="$tmp/results.txt"
: > "$results"

load() {  # PORT: the positions, 1,000 a GEOADD (a fixed seed: both systems get the same)
  bench/.venv/bin/python - "$1" "$points" <<'PY'
import random, sys
import redis
port, points = int(sys.argv[1]), int(sys.argv[2])
r = redis.Redis(port=port, socket_timeout=120)
rng = random.Random(7)
for lo in range(0, points, 1000):
    args = []
    for i in range(lo, min(points, lo + 1000)):
        # Around Sicily, within about 5 degrees.
        args += [round(13.4 + rng.uniform(-5, 5), 6), round(38.1 + rng.uniform(-5, 5), 6), f"p:{i:012d}"]
    r.execute_command("GEOADD", "geo", *args)
assert r.zcard("geo") == points, r.zcard("geo")
PY
}

point() {  # SYSTEM PORT: every test at -P 1 and -P 16 into $results
  local p line rate range
  load "$2"
  for p in 1 16; do
    line="$1 P$p"
    for t in geosearch geopos geodist geoadd; do
      case "$t" in
        geosearch) set -- "$1" "$2" GEOSEARCH geo FROMLONLAT 13.4 38.1 BYRADIUS 20 km COUNT 10 ASC WITHDIST ;;
        geopos) set -- "$1" "$2" GEOPOS geo p:__rand_int__ ;;
        geodist) set -- "$1" "$2" GEODIST geo p:__rand_int__ p:__rand_int__ km ;;
        geoadd) set -- "$1" "$2" GEOADD geo:new 13.361389 38.115556 m:__rand_int__ ;;
      esac
      range=$points
      [ "$t" != geoadd ] || range=100000000
      rate=$(redis-benchmark -h 127.0.0.1 -p "$2" -c "$clients" -r "$range" -n "$n" -P "$p" --csv "${@:3}" |
             tr -d '"' | awk -F, 'NR == 2 { print $2 }')
      [ -n "$rate" ] || { echo "geo.sh: redis-benchmark $t against $1 failed" >&2; exit 1; }
      line+=" $t=$rate"
    done
    echo "$line" | tee -a "$results"
  done
}

rampart() {
  start_proxy_cluster geo
  point rampart "$proxy_port"
  stop_cluster
}

redis() {
  start_redis_server --save "" --appendonly no
  point redis "$redis_port"
  stop_pid "$redis_pid"
  redis_pid=""
}

echo "$points positions, $clients clients, $n requests per point, $reps reps"
for rep in $(seq 1 "$reps"); do
  rampart
  redis
done

python3 - "$results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    system, depth, *fields = line.split()
    for f in fields:
        test, rate = f.split("=")
        runs.setdefault((test, depth, system), []).append(float(rate))
print(f"{'test':10} {'-P':>3} {'rampart':>26} {'redis-server':>26} {'ratio':>6}")
fmt = lambda r: f"{statistics.median(r):9,.0f} [{min(r):,.0f}-{max(r):,.0f}]"
for test in ("geosearch", "geopos", "geodist", "geoadd"):
    for depth in ("P1", "P16"):
        a, b = runs.get((test, depth, "rampart")), runs.get((test, depth, "redis"))
        if a and b:
            print(f"{test:10} {depth[1:]:>3} {fmt(a):>26} {fmt(b):>26} {statistics.median(a) / statistics.median(b):5.2f}x")
PY
