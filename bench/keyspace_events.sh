#!/usr/bin/env bash
# bench/keyspace_events.sh: what keyspace notifications cost, rampart's proxy beside one
# redis-server, REPS times with the systems alternating:
#   rampart   `rampart up`, 4 kv-nodes x 1 partition, every other setting at its default
#             (durable redo log, one proxy worker on 2 cores)
#   redis     redis-server --save "" --appendonly no
# Each system runs redis-benchmark -c CLIENTS -r 100000 -n N -t TESTS at -P 1 and -P 16, first
# with notify-keyspace-events "" and then with "KEA" (every class, both channels) and one
# `redis-cli PSUBSCRIBE '__key*__:*'` reading every event (its output dropped).
#
#   bench/keyspace_events.sh                       # set,incr,lpush,sadd,hset; 3 reps
#   TESTS=set,incr N=50000 REPS=5 bench/keyspace_events.sh
#
# Prints one line per run and the medians with [min-max] per system, flags, test and depth.
set -euo pipefail
cd "$(dirname "$0")/.."
tests="${TESTS:-set,incr,lpush,sadd,hset}" n="${N:-100000}" clients="${CLIENTS:-50}" reps="${REPS:-3}"
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then sed -n '2,14p' "$0" | cut -c3-; exit 0; fi
for tool in redis-server redis-benchmark redis-cli; do
  command -v "$tool" >/dev/null || { echo "keyspace_events.sh: $tool not found (make deps)" >&2; exit 1; }
done

. bench/cluster.sh
bench_init "${RAMPART_BIN:-build/release/rampart}"
redis_pid="" listener_pid=""
trap 'stop_cluster; for p in $listener_pid $redis_pid; do stop_pid "$p"; done; rm -rf "$tmp"' EXIT
results="$tmp/results.txt"
: > "$results"

point() {  # SYSTEM PORT FLAGS: every test at -P 1 and -P 16 into $results
  local p
  redis-cli -p "$2" CONFIG SET notify-keyspace-events "$3" > /dev/null
  if [ -n "$3" ]; then
    redis-cli -p "$2" PSUBSCRIBE '__key*__:*' > /dev/null &
    listener_pid=$!
  fi
  for p in 1 16; do
    redis-benchmark -h 127.0.0.1 -p "$2" -c "$clients" -r 100000 -n "$n" -P "$p" -t "$tests" --csv |
      tr -d '"' | awk -F, -v sys="$1" -v flags="${3:-off}" -v p="$p" \
        'NR > 1 { printf "%s %s P%s %s=%s\n", sys, flags, p, tolower($1), $2 }' | tee -a "$results"
  done
  if [ -n "$listener_pid" ]; then stop_pid "$listener_pid"; listener_pid=""; fi
}

rampart() {
  start_proxy_cluster events
  point rampart "$proxy_port" ""
  point rampart "$proxy_port" KEA
  stop_cluster
}

redis() {
  start_redis_server --save "" --appendonly no
  point redis "$redis_port" ""
  point redis "$redis_port" KEA
  stop_pid "$redis_pid"
  redis_pid=""
}

echo "tests $tests, $clients clients, $n requests per point, $reps reps"
for rep in $(seq 1 "$reps"); do
  rampart
  redis
done

python3 - "$results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    system, flags, depth, field = line.split()
    test, rate = field.rsplit("=", 1)
    runs.setdefault((test, depth, system, flags), []).append(float(rate))
fmt = lambda r: f"{statistics.median(r):9,.0f} [{min(r):,.0f}-{max(r):,.0f}]"
print(f"{'test':8} {'-P':>3} {'system':8} {'off':>26} {'KEA':>26} {'KEA/off':>8}")
for test, depth in sorted({(t, d) for t, d, _, _ in runs}, key=lambda k: (k[0], int(k[1][1:]))):
    for system in ("rampart", "redis"):
        off, on = runs.get((test, depth, system, "off")), runs.get((test, depth, system, "KEA"))
        if off and on:
            print(f"{test:8} {depth[1:]:>3} {system:8} {fmt(off):>26} {fmt(on):>26} "
                  f"{statistics.median(on) / statistics.median(off):7.2f}x")
PY
