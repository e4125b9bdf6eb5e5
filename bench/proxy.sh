#!/usr/bin/env bash
# The proxy issue's side-by-side benchmark (issue 5, "Benchmark"): in one run on
# 127.0.0.1, one system at a time (never two loaded at once),
#   rampart-default  `rampart up` on the embedded default configuration (what
#                  `make run` starts), only its ports and kv.data_dir (under
#                  DATA_DIR) changed: every "auto" setting, redo logs in files,
#                  kv.sync = interval
#   rampart-agg    `rampart up`: 4 kv-nodes x 1 partition + the Redis proxy,
#                  aggregation on
#   rampart-noagg  the same, aggregation off
#   twemproxy      Debian's nutcracker (ketama, fnv1a_64) in front of 4 redis-server
#   redis          one redis-server
# and, for the durability comparison (bench/durability.sh picks them):
#   rampart-dir-interval   rampart-agg with redo logs in files under DATA_DIR,
#                          kv.sync = interval (acknowledged once written, synced each second)
#   rampart-dir-always     the same with kv.sync = always (acknowledged once synced)
#   rampart-volume-always  logs on one erasure-coded volume per kv-node over 3 storage
#                          nodes serving files under DATA_DIR, kv.sync = always
#   redis-aof-everysec     one redis-server, appendonly yes, appendfsync everysec, in DATA_DIR
#   redis-aof-always       the same with appendfsync always
# (rampart-agg itself runs with kv.log = "none": volatile.)
# each driven by redis-benchmark -c 50 -r 100000 at -P 1 and -P 16 with
#   SET, GET       -t set, -t get (3 B values; one run each, so each gets its own -n)
#   MSET4          MSET key:__rand_int__ xxx (x4)   (each __rand_int__ is drawn on
#   MGET4          MGET key:__rand_int__ (x4)        its own: checked with MONITOR)
# after the 100,000 keys key:000000000000.. were loaded with SET (pipelined), so
# every GET and MGET hits.
#
#   bench/proxy.sh
# Environment:
#   SECONDS_PER_POINT  (default 3) each point's -n is calibrated to take about
#              this long: probes from 50 x P requests up, x4 each time, until one
#              takes >= 0.5 s, then -n = its rate x SECONDS_PER_POINT (<= NMAX,
#              default 5000000, >= 10 x CLIENTS x P). Rates here span 1K-500K/s, so one fixed -n
#              would make points last from milliseconds to minutes.
#   N, N16     a fixed -n at -P 1 and at -P 16 instead (N16 default 4 x N)
#   REPS       runs per point (default 1); the point keeps the median by requests/s.
#              Each run is one round over every system (start, load, 8 points,
#              stop), so slow drift of the host spreads over all systems alike.
#   BACKEND    rampart's transport backend: ucx (default) | tcp
#   SYSTEMS    subset and order (default "rampart-agg rampart-noagg twemproxy redis")
#   TESTS      subset of "set get mset4 mget4" (the default, in that order), and
#              "incr": INCR of counter:__rand_int__ (a read-modify-write), and
#              "eval": EVAL of a Lua counter with a TTL (INCR of counter:__rand_int__,
#              EXPIRE 3600 when it is new), the shape of a rate limiter
#   DATA_DIR   where the durable systems write (default: a fresh directory under
#              the temp dir; give one on the disk to measure, e.g. under /var/tmp)
#   PLOT       the plotting script (default bench/plot_proxy.py)
#   RAMPART_BIN  default build/release/rampart (copied to a temp dir first, so a
#              rebuild during the run does not disturb it)
#   CLIENTS (50), KEYS (100000)
#   OUT        results directory (default bench/results/proxy)
# Writes OUT/<system>-<test>-P<p>.json (the median run and every
# run's figures), configuration.json, and through bench/plot_proxy.py
# summary.json, summary.txt (the table, also printed) and proxy.png.
# Every process started here is stopped by PID (SIGTERM, bounded wait, SIGKILL)
# when the script exits, also on failure or Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
fixed_n="${N:-}"
n1="${N:-0}"
n16="${N16:-$((4 * n1))}"
seconds="${SECONDS_PER_POINT:-3}"
nmax="${NMAX:-5000000}"
reps="${REPS:-1}"
backend="${BACKEND:-ucx}"
systems="${SYSTEMS:-rampart-agg rampart-noagg twemproxy redis}"
tests="${TESTS:-set get mset4 mget4}"
plot="${PLOT:-bench/plot_proxy.py}"
clients="${CLIENTS:-50}"
keys="${KEYS:-100000}"
src_bin="${RAMPART_BIN:-build/release/rampart}"
out="${OUT:-bench/results/proxy}"
pipelines=(1 16)

case "$backend" in ucx|tcp) ;; *) echo "proxy.sh: BACKEND must be ucx or tcp" >&2; exit 2 ;; esac
for s in $systems; do
  case "$s" in rampart-default|rampart-agg|rampart-noagg|twemproxy|redis|rampart-dir-interval|rampart-dir-always|\
    rampart-volume-always|redis-aof-everysec|redis-aof-always) ;;
    *) echo "proxy.sh: unknown system $s in SYSTEMS" >&2; exit 2 ;; esac
done
for t in $tests; do
  case "$t" in set|get|mset4|mget4|incr|eval) ;; *) echo "proxy.sh: unknown test $t in TESTS" >&2; exit 2 ;; esac
done
for tool in redis-server redis-benchmark redis-cli nutcracker; do
  command -v "$tool" >/dev/null || { echo "proxy.sh: $tool not found (make deps)" >&2; exit 1; }
done
case " $systems " in *" rampart-"*)
  [ -x "$src_bin" ] || { echo "proxy.sh: no binary at $src_bin (make build, or set RAMPART_BIN)" >&2; exit 1; }
  "$src_bin" proxy --help >/dev/null 2>&1 || { echo "proxy.sh: $src_bin has no proxy subcommand yet" >&2; exit 1; } ;;
esac

# free_ports and bench_venv (bench/.venv with the pinned plot tools).
# shellcheck source=bench/cluster.sh
. bench/cluster.sh

tmp=$(mktemp -d)
data_root="${DATA_DIR:-$tmp/data}"
pids=()       # every process started here, stopped by PID on exit
pid_names=()

stop_all() {
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    stop_pid "${pids[$i]}"
    # `up` stops its children on SIGTERM; if it had to be killed, stop the
    # children it reported (only if they still run our binary).
    if [ "${pid_names[$i]}" = up ]; then stop_up_children; fi
  done
  pids=()
  pid_names=()
}


cleanup() {
  if [ -n "$client_pid" ]; then stop_pid "$client_pid"; fi
  stop_all
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM


started_pid() {  # NAME: records $! for the cleanup
  pids+=("$!")
  pid_names+=("$1")
}

start_redis() {  # PORT NAME [FSYNC: everysec|always, for an AOF in DATA_DIR]
  local persistence=(--appendonly no)
  if [ -n "${3:-}" ]; then
    rm -rf "$data_root/$2" && mkdir -p "$data_root/$2"
    persistence=(--appendonly yes --appendfsync "$3" --dir "$data_root/$2")
  fi
  redis-server --port "$1" --bind 127.0.0.1 --save "" "${persistence[@]}" \
    --daemonize no --logfile "$tmp/$2.log" &
  started_pid "$2"
  wait_ping "$1" "redis-server $2" "$!" || { cat "$tmp/$2.log" >&2; exit 1; }
}

# Each start_* sets $port (where redis-benchmark goes) and $info (a line for the log).
start_system_redis() {  # [FSYNC]
  port=$(nodes=1 partitions=1 free_ports)
  start_redis "$port" "redis${1:+-aof-$1}" "${1:-}"
  info="redis-server $port${1:+, appendonly yes, appendfsync $1, in $data_root}"
}

start_system_twemproxy() {
  local p conf="$tmp/nutcracker.yml" i
  read -r -a p <<< "$(nodes=6 partitions=1 free_ports)"
  for i in 0 1 2 3; do start_redis "${p[$i]}" "redis-$i"; done
  {
    printf 'bench:\n  listen: 127.0.0.1:%d\n  hash: fnv1a_64\n  distribution: ketama\n' "${p[4]}"
    printf '  redis: true\n  auto_eject_hosts: false\n  servers:\n'
    for i in 0 1 2 3; do printf '    - 127.0.0.1:%d:1 redis-%d\n' "${p[$i]}" "$i"; done
  } > "$conf"
  nutcracker -t -c "$conf" > "$tmp/nutcracker-test.log" 2>&1 || { cat "$tmp/nutcracker-test.log" >&2; exit 1; }
  nutcracker -c "$conf" -s "${p[5]}" -a 127.0.0.1 -o "$tmp/nutcracker.log" -p "$tmp/nutcracker.pid" &
  started_pid nutcracker
  port=${p[4]}
  wait_ping "$port" nutcracker "$!" || { cat "$tmp/nutcracker.log" >&2; exit 1; }
  info="nutcracker $port (stats ${p[5]}) -> redis-server ${p[0]} ${p[1]} ${p[2]} ${p[3]}"
}

# The [kv] log settings and the extra sections of a durability mode:
# none | dir-interval | dir-always | volume-always. P: the ports array (5 on are
# the storage nodes').
log_settings() {  # MODE
  case "$1" in
    none) printf 'log = "none"\n' ;;
    dir-*) rm -rf "$data_root/rampart" && mkdir -p "$data_root/rampart"
           printf 'log = "dir"\ndata_dir = "%s"\nsync = "%s"\n' "$data_root/rampart" "${1#dir-}" ;;
    volume-*) printf 'log = "volume"\nsync = "%s"\nlog_segment_bytes = "16MiB"\n' "${1#volume-}" ;;
  esac
}

# volume-*: 3 storage nodes serving files under DATA_DIR, one 1 GiB log
# volume per kv-node over them (k = 2).
storage_settings() {  # PORT0 PORT1 PORT2
  local i ports=("$@")
  rm -rf "$data_root/storage" && mkdir -p "$data_root/storage"
  for i in 0 1 2; do
    printf '[[storage_nodes]]\nid = %d\nhost = "127.0.0.1"\nport = %d\npath = "%s"\nsize = "2100MiB"\n' \
      "$i" "${ports[$i]}" "$data_root/storage/node-$i.img"
  done
  for i in 0 1 2 3; do
    printf '[[volumes]]\nname = "kvlog-%d"\nsize = "1GiB"\nnodes = [0, 1, 2]\nnode_offset = "%dMiB"\n' \
      "$i" $((i * 520))
  done
}

start_system_rampart() {  # on|off [LOG MODE]; retried: a port can be taken between check and bind
  local agg=$1 mode=${2:-none} cfg="$tmp/rampart-$1-${2:-none}.toml" attempt id p i
  for attempt in 1 2 3; do
    read -r -a p <<< "$(nodes=8 partitions=8 free_ports)"
    if [ "$mode" = default ]; then
      rm -rf "$data_root/rampart" && mkdir -p "$data_root/rampart"
      {
        printf '[kv]\ndata_dir = "%s"\n[proxy]\nport = %d\n' "$data_root/rampart" "${p[4]}"
        for id in 0 1 2 3; do printf '[[nodes]]\nid = %d\nhost = "127.0.0.1"\nport = %d\n' "$id" "${p[$id]}"; done
      } > "$cfg"
    else {
      printf '[cluster]\nname = "proxy-bench"\n[transport]\nbackend = "%s"\nspin_us = 0\n' "$backend"
      [[ "$mode" == volume-* ]] && printf 'max_message_size = "8MiB"\n'
      printf '[kv]\npartitions_per_node = 1\narena_bytes = "256MiB"\ngrace_ms = 2000\n'
      log_settings "$mode"
      printf '[proxy]\nport = %d\naggregate = %s\n' "${p[4]}" "$([ "$agg" = on ] && echo true || echo false)"
      for id in 0 1 2 3; do
        printf '[[nodes]]\nid = %d\nhost = "127.0.0.1"\nport = %d\n' "$id" "${p[$id]}"
        [[ "$mode" == volume-* ]] && printf 'log_volume = "kvlog-%d"\n' "$id"
      done
      if [[ "$mode" == volume-* ]]; then storage_settings "${p[5]}" "${p[6]}" "${p[7]}"; fi
    } > "$cfg"
    fi
    : > "$tmp/up.log"
    "$tmp/rampart" --config "$cfg" up > "$tmp/up.log" 2>&1 &
    started_pid up
    for i in $(seq 1 300); do
      grep -q '^ready' "$tmp/up.log" && break
      kill -0 "$!" 2>/dev/null || break
      sleep 0.1
    done
    if grep -q '^ready' "$tmp/up.log"; then
      port=${p[4]}
      info=$(grep '^proxy:' "$tmp/up.log" | head -1)
      if ! grep -q "aggregation $agg" <<< "$info"; then
        echo "proxy.sh: asked for aggregation $agg, up says: $info" >&2
        exit 1
      fi
      proxy_line="$info"
      wait_ping "$port" "rampart proxy" "$!" || exit 1
      return 0
    fi
    echo "proxy.sh: rampart (aggregation $agg) did not start (attempt $attempt):" >&2
    grep -v ' info: ' "$tmp/up.log" >&2 || true
    stop_all
  done
  exit 1
}

start_system() {  # SYSTEM
  case "$1" in
    redis) start_system_redis ;;
    redis-aof-*) start_system_redis "${1#redis-aof-}" ;;
    twemproxy) start_system_twemproxy ;;
    rampart-default) start_system_rampart on default ;;
    rampart-agg) start_system_rampart on ;;
    rampart-noagg) start_system_rampart off ;;
    rampart-*) start_system_rampart on "${1#rampart-}" ;;
  esac
}

# SET key:000000000000 .. key:<KEYS-1> (redis-benchmark's __rand_int__ form)
# with 3 B values, pipelined 1,000 at a time; every reply must be +OK. Then a
# sample of GETs and one MGET through the same front door must all hit.
load_keys() {  # PORT
  python3 - "$1" "$keys" > "$tmp/load.log" 2>&1 <<'PY' &
import random, socket, sys, time
port, keys = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rb")
def cmd(*args):
    return b"".join([b"*%d\r\n" % len(args)] + [b"$%d\r\n%s\r\n" % (len(a), a) for a in args])
def reply():
    line = f.readline()
    if not line.endswith(b"\r\n"):
        sys.exit(f"proxy.sh: connection closed while loading: {line!r}")
    t, rest = line[:1], line[1:-2]
    if t == b"$":
        n = int(rest)
        return None if n < 0 else f.read(n + 2)[:-2]
    if t == b"*":
        n = int(rest)
        return None if n < 0 else [reply() for _ in range(n)]
    if t == b"-":
        sys.exit(f"proxy.sh: error reply while loading: {rest.decode(errors='replace')}")
    return rest
batch = 1000
t0 = time.monotonic()
for lo in range(0, keys, batch):
    hi = min(keys, lo + batch)
    s.sendall(b"".join(cmd(b"SET", b"key:%012d" % i, b"xxx") for i in range(lo, hi)))
    for i in range(lo, hi):
        r = reply()
        if r != b"OK":
            sys.exit(f"proxy.sh: SET key:{i:012d} answered {r!r}")
print(f"   loaded {keys} keys in {time.monotonic() - t0:.1f} s")
sample = random.sample(range(keys), min(keys, 200))
s.sendall(b"".join(cmd(b"GET", b"key:%012d" % i) for i in sample))
missing = [i for i in sample if reply() is None]
s.sendall(cmd(b"MGET", *[b"key:%012d" % i for i in sample[:4]]))
got = reply()
if missing or not isinstance(got, list) or None in got:
    sys.exit(f"proxy.sh: loaded keys do not read back: {len(missing)} of {len(sample)} GETs missed, MGET {got!r}")
PY
  wait_child $! || { cat "$tmp/load.log" >&2; exit 1; }
  cat "$tmp/load.log" >&2
}

# One redis-benchmark run (options first: anything after the command is an
# argument of the command) into OUT.csv / OUT.err; the script stops on a
# failure or an error reply (redis-benchmark also exits on one).
run_rb() {  # OUT N PIPELINE WHAT ARGS...
  local o=$1 n=$2 p=$3 what=$4
  shift 4
  redis-benchmark -h 127.0.0.1 -p "$port" -c "$clients" -r "$keys" -n "$n" -P "$p" --csv "$@" \
    > "$o.csv" 2> "$o.err" &
  if ! wait_child $!; then
    echo "proxy.sh: redis-benchmark $what -P $p -n $n against $system failed:" >&2
    tail -5 "$o.err" "$o.csv" >&2
    exit 1
  fi
  if grep -qi 'error' "$o.err"; then
    echo "proxy.sh: redis-benchmark $what -P $p against $system reported errors:" >&2
    grep -i error "$o.err" | head -5 >&2
    exit 1
  fi
}

csv_rps() {  # FILE.csv: requests/s of its (only) row
  python3 -c 'import csv, sys; print(float(next(csv.DictReader(open(sys.argv[1])))["rps"]))' "$1"
}

# One point: -n is N / N16 when set; otherwise calibrated so the point takes
# about $seconds s: probe runs from CLIENTS x P requests up, x4 each time,
# until one takes >= 0.5 s (at most $nmax requests), then
# n = probe rate x seconds, within [last probe's n, nmax] and at least 10
# requests per connection and pipeline slot (a slow point still makes 10
# rounds rather than 1-2 dominated by its start and end). The probes also warm
# the system up. Writes TMP/<system>-<label>-P<p>.rep<r>.{csv,err,n}.
bench_point() {  # SYSTEM PIPELINE REP LABEL ARGS...
  local system=$1 p=$2 rep=$3 label=$4 n rate
  local o="$tmp/$system-$label-P$p.rep$rep"
  shift 4
  if [ -n "$fixed_n" ]; then
    n=$([ "$p" = 1 ] && echo "$n1" || echo "$n16")
  else
    n=$((clients * p))
    while :; do
      run_rb "$tmp/probe/$system-$label-P$p.rep$rep" "$n" "$p" "$label (probe)" "$@"
      rate=$(csv_rps "$tmp/probe/$system-$label-P$p.rep$rep.csv")
      if [ "$n" -ge "$nmax" ] || awk -v n="$n" -v r="$rate" 'BEGIN { exit !(n / r >= 0.5) }'; then break; fi
      n=$((n * 4))
    done
    n=$(awk -v n="$n" -v r="$rate" -v s="$seconds" -v m="$nmax" -v f=$((10 * clients * p)) \
      'BEGIN { x = int(r * s); if (x < n) x = n; if (x < f) x = f; if (x > m) x = m; print x }')
  fi
  run_rb "$o" "$n" "$p" "$label" "$@"
  echo "$n" > "$o.n"
  printf '   %-6s -P %-2s %10.0f requests/s  (-n %s)\n' "$label" "$p" "$(csv_rps "$o.csv")" "$n" >&2
}

run_system() {  # SYSTEM REP
  local system=$1 rep=$2 p pid
  echo "== $system (run $rep of $reps)" >&2
  proxy_line=""
  start_system "$system"
  echo "   $info" >&2
  [ -n "$proxy_line" ] && echo "$proxy_line" > "$tmp/$system.proxy"
  load_keys "$port"
  for p in "${pipelines[@]}"; do
    for t in $tests; do
      case "$t" in
        set) bench_point "$system" "$p" "$rep" set -t set ;;
        get) bench_point "$system" "$p" "$rep" get -t get ;;
        mset4) bench_point "$system" "$p" "$rep" mset4 MSET key:__rand_int__ xxx key:__rand_int__ xxx \
                 key:__rand_int__ xxx key:__rand_int__ xxx ;;
        mget4) bench_point "$system" "$p" "$rep" mget4 MGET key:__rand_int__ key:__rand_int__ \
                 key:__rand_int__ key:__rand_int__ ;;
        incr) bench_point "$system" "$p" "$rep" incr -t incr ;;
        eval) bench_point "$system" "$p" "$rep" eval EVAL \
                "local v = redis.call('incr', KEYS[1]) if v == 1 then redis.call('expire', KEYS[1], 3600) end return v" \
                1 counter:__rand_int__ ;;
      esac
    done
    for pid in "${pids[@]}"; do
      kill -0 "$pid" 2>/dev/null || { echo "proxy.sh: a process of $system (pid $pid) died during -P $p" >&2; exit 1; }
    done
  done
  stop_all
}

load=$(cut -d' ' -f1-3 /proc/loadavg)
if [ -n "$fixed_n" ]; then nsay="-n $n1 at -P 1 and $n16 at -P 16"; else nsay="-n calibrated to ~$seconds s per point (<= $nmax)"; fi
echo "proxy bench: systems [$systems], backend $backend, -c $clients -r $keys, $nsay," \
  "$reps run(s), $(nproc) cores, load $load" >&2
if awk -v l="${load%% *}" 'BEGIN { exit !(l > 3) }'; then
  echo "proxy.sh: warning: load average ${load%% *} > 3, the host is busy; figures will be noisy" >&2
fi
case " $systems " in *" rampart-"*) cp "$src_bin" "$tmp/rampart" ;; esac
bench_venv
mkdir -p "$tmp/probe"
started=$(date +%s)
start_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# The tree the run starts from; modified tracked files make it "-dirty".
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit-dirty"; fi
binary=""
case " $systems " in *" rampart-"*)
  binary="$src_bin, built $(date -u -r "$src_bin" +%Y-%m-%dT%H:%M:%SZ), sha256 $(sha256sum "$tmp/rampart" | cut -c1-16)" ;;
esac
for rep in $(seq 1 "$reps"); do
  for system in $systems; do run_system "$system" "$rep"; done
done
elapsed=$(( $(date +%s) - started ))
# Old point files would mix into the summary: the directory is written afresh.
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.png "$out"/summary.txt

# Median run per point, every run's requests/s next to it; the configuration.
python3 - "$tmp" "$out" "$reps" "$systems" <<PY
import csv, glob, json, os, re, subprocess, sys
tmp, out, reps, systems = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split()
def sh(*cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
        return (r.stdout or r.stderr).strip()  # nutcracker --version writes to stderr
    except OSError:
        return ""
names = {"SET": "SET", "GET": "GET", "MSET": "MSET4", "MGET": "MGET4", "INCR": "INCR", "EVAL": "EVAL"}
points = {}
for path in sorted(glob.glob(f"{tmp}/*.rep*.csv")):
    m = re.match(r"(.+)-(set|get|mset4|mget4|incr|eval)-P(\d+)\.rep(\d+)\.csv$", os.path.basename(path))
    system, _, p, rep = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
    with open(path) as f:
        for row in csv.DictReader(f):
            test = names[row["test"].split()[0].upper()]
            r = {"rps": float(row["rps"])}
            for k in ("avg", "min", "p50", "p95", "p99", "max"):
                if f"{k}_latency_ms" in row:
                    r[f"{k}_latency_ms"] = float(row[f"{k}_latency_ms"])
            r["run"] = rep
            r["requests"] = int(open(path[:-4] + ".n").read())
            points.setdefault((system, test, p), []).append(r)
for (system, test, p), runs in points.items():
    runs.sort(key=lambda r: r["run"])
    med = sorted(runs, key=lambda r: r["rps"])[(len(runs) - 1) // 2]
    proxy_file = f"{tmp}/{system}.proxy"
    doc = {"system": system, "test": test, "pipeline": p, "clients": $clients, "keyspace": $keys,
           "requests": med["requests"], "results": {k: v for k, v in med.items() if k not in ("run", "requests")},
           "median_run": med["run"], "runs": [r["rps"] for r in runs],
           "runs_requests": [r["requests"] for r in runs]}
    if os.path.exists(proxy_file):
        doc["proxy"] = open(proxy_file).read().strip()
    with open(f"{out}/{system}-{test}-P{p}.json", "w") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
proxy_lines = {s: open(f"{tmp}/{s}.proxy").read().strip() for s in systems if os.path.exists(f"{tmp}/{s}.proxy")}
cfg = {
    "host": "127.0.0.1", "cores": os.cpu_count(), "load_average_at_start": "$load",
    "systems": systems, "backend": "$backend", "rampart_nodes": 4, "rampart_partitions_per_node": 1,
    "rampart_spin_us": 0, "rampart_proxy": proxy_lines,
    "twemproxy": "nutcracker, hash fnv1a_64, distribution ketama, auto_eject_hosts false, 4 redis-server",
    "redis_server_flags": "--save '' --appendonly no (redis-aof-*: --appendonly yes --appendfsync everysec|always)",
    "data_dir": "$data_root", "data_fs": os.environ.get("DATA_FS", ""),
    "clients": $clients, "keyspace": $keys, "value_bytes": 3, "pipelines": [1, 16],
    "requests": ({"P1": $n1, "P16": $n16} if "$fixed_n" else
                 {"calibrated_seconds_per_point": $seconds, "max": $nmax}),
    "reps": reps, "elapsed_s": $elapsed,
    "tests": {"SET": "-t set", "GET": "-t get",
              "MSET4": "MSET key:__rand_int__ xxx (4 keys)", "MGET4": "MGET key:__rand_int__ (4 keys)"},
    "versions": {"redis_server": sh("redis-server", "--version"),
                 "redis_benchmark": sh("redis-benchmark", "--version"),
                 "nutcracker": sh("nutcracker", "--version").splitlines()[0] if sh("nutcracker", "--version") else ""},
    "git_commit": "$commit", "rampart_binary": "$binary",
    "date": "$start_date",
    "kernel": sh("uname", "-r"),
}
with open(f"{out}/configuration.json", "w") as f:
    json.dump(cfg, f, indent=2)
PY
echo "proxy bench: took $elapsed s" >&2
bench/.venv/bin/python "$plot" "$out"
