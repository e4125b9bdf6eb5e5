#!/usr/bin/env bash
# bench/big_values.sh: SET and GET of values longer than one kv value (stored in chunks, see
# docs/collections.md "Chunked strings") through rampart's proxy and against one redis-server,
# side by side, REPS times with the systems alternating:
#   rampart volatile   `rampart up`, 4 kv-nodes x 1 partition, kv.log = "none"
#   redis volatile     redis-server --save "" --appendonly no
#   rampart durable    the same cluster with the default redo log (kv.log = "dir", sync "interval")
#   redis durable      redis-server --appendonly yes --appendfsync everysec
# each point `redis-benchmark -c CLIENTS -n N -d SIZE -t set,get` (one key, overwritten), then
# one client's commands on parts of one PARTS_SIZE-byte string (redis-py, one request at a
# time, N of each at random places): SETBIT, GETBIT, SETRANGE (8 bytes), GETRANGE (100 bytes),
# BITCOUNT (a 100-byte range), APPEND (8 bytes). PARTS_SIZE=0 leaves them out.
#
#   bench/big_values.sh                     # 4,000,000-byte values, 4 clients, 200 requests, 3 reps
#   SIZE=20000000 N=50 REPS=5 PARTS_SIZE=0 bench/big_values.sh
#
# Prints one line per run and the medians with [min-max] per system and test.
set -euo pipefail
cd "$(dirname "$0")/.."
size="${SIZE:-4000000}" n="${N:-200}" clients="${CLIENTS:-4}" reps="${REPS:-3}"
parts_size="${PARTS_SIZE:-40000000}"
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then sed -n '2,17p' "$0" | cut -c3-; exit 0; fi
for tool in redis-server redis-benchmark redis-cli; do
  command -v "$tool" >/dev/null || { echo "big_values.sh: $tool not found (make deps)" >&2; exit 1; }
done

. bench/cluster.sh
bench_init "${RAMPART_BIN:-build/release/rampart}"
redis_pid=""
trap 'stop_cluster; [ -z "$redis_pid" ] || stop_pid "$redis_pid"; rm -rf "$tmp"' EXIT
results="$tmp/results.txt"
: > "$results"

point() {  # SYSTEM PORT: one redis-benchmark run, its SET and GET rates into $results
  local line
  line=$(redis-benchmark -h 127.0.0.1 -p "$2" -c "$clients" -n "$n" -d "$size" -t set,get --csv | tr -d '"' |
         awk -F, 'NR > 1 { printf "%s=%s ", $1, $2 }')
  case "$line" in *SET=*GET=*) ;; *) echo "big_values.sh: redis-benchmark against $1 failed" >&2; exit 1 ;; esac
  [ "$parts_size" -eq 0 ] || line+=$(parts "$2")
  echo "$1 $line" | tee -a "$results"
}

parts() {  # PORT: "TEST=rate ..." of the commands on parts of one long string
  bench/.venv/bin/python - "$1" "$parts_size" "$n" <<'PY'
import random, sys, time
import redis
port, size, n = (int(a) for a in sys.argv[1:])
r = redis.Redis(port=port, socket_timeout=60)
r.set("parts", b"x" * size)
rng = random.Random(1)
ops = {
    "SETBIT": lambda: r.setbit("parts", rng.randrange(size * 8), 1),
    "GETBIT": lambda: r.getbit("parts", rng.randrange(size * 8)),
    "SETRANGE": lambda: r.setrange("parts", rng.randrange(size - 8), b"abcdefgh"),
    "GETRANGE": lambda: r.getrange("parts", (at := rng.randrange(size - 100)), at + 99),
    "BITCOUNT": lambda: r.bitcount("parts", (at := rng.randrange(size - 100)), at + 99),
    "APPEND": lambda: r.append("parts", b"abcdefgh"),
}
rates = []
for name, op in ops.items():
    start = time.perf_counter()
    for _ in range(n):
        op()
    rates.append(f"{name}={n / (time.perf_counter() - start):.1f}")
r.delete("parts")
print(" " + " ".join(rates), end="")
PY
}

rampart() {  # NAME LOG
  start_proxy_cluster big-values "log = \"$2\""
  point "$1" "$proxy_port"
  stop_cluster
}

redis() {  # NAME ARGS...
  local name=$1
  shift
  start_redis_server "$@"
  point "$name" "$redis_port"
  stop_pid "$redis_pid"
  redis_pid=""
}

echo "values of $size bytes, $clients clients, $n requests per point, $reps reps"
for rep in $(seq 1 "$reps"); do
  rampart rampart-volatile none
  redis redis-volatile --save "" --appendonly no
  rampart rampart-durable dir
  redis redis-durable --save "" --appendonly yes --appendfsync everysec
done

python3 - "$results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    system, *fields = line.split()
    for f in fields:
        test, rate = f.split("=")
        runs.setdefault((system, test), []).append(float(rate))
print(f"{'system':18} {'test':4} {'median':>9} {'min':>9} {'max':>9}")
for (system, test), rates in sorted(runs.items()):
    print(f"{system:18} {test:4} {statistics.median(rates):9.1f} {min(rates):9.1f} {max(rates):9.1f}")
for mode in ("volatile", "durable"):
    for test in sorted({t for _, t in runs}):
        r, d = runs.get((f"rampart-{mode}", test)), runs.get((f"redis-{mode}", test))
        if r and d:
            print(f"rampart / redis, {mode} {test}: {statistics.median(r) / statistics.median(d):.2f}x")
PY
