#!/usr/bin/env bash
# bench/redis_benchmark.sh: redis-benchmark's default test list (`redis-benchmark -q -n N`,
# no -t) against `rampart up` with the embedded default configuration and against one
# redis-server, side by side in one run, REPS times each, systems alternating. Run
# `bench/redis_benchmark.sh --help`.
# The whole script is one { ... } block: bash parses it before running any of it, so an edit of
# this file during a run cannot derail the running copy.
{
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
Usage: bench/redis_benchmark.sh            (settings in the environment, below)

redis-benchmark with its DEFAULT test list (PING_INLINE, PING_MBULK, SET, GET, INCR, LPUSH,
RPUSH, LPOP, RPOP, SADD, HSET, SPOP, ZADD, ZPOPMIN, LPUSH for LRANGE, LRANGE_100/300/500/600,
MSET: 20 tests in redis-benchmark 7.0), each run
    timeout TIMEOUT redis-benchmark -h 127.0.0.1 -p PORT -c CLIENTS -n N -q --csv
against
  rampart  `rampart up` with the embedded default configuration (`rampart config default` of
           the binary under test: 4 kv-nodes x 2 partitions, the proxy, redo logs in files,
           kv.sync = interval, ...). Only the ports (free ones, not 7000.. and 6380) and
           kv.data_dir (a fresh directory under DATA_DIR) are changed; the script checks that
           `rampart config show` differs from the default in nothing else.
  redis    one redis-server without persistence (--save "" --appendonly no).
Every run starts its system afresh (empty data) and stops it afterwards by PID, so only one
system runs at a time. Rep r runs the systems in SYSTEMS order when r is odd and reversed when
it is even, so slow drift of the host spreads over both.

Every run is checked: redis-benchmark's exit status (124 = TIMEOUT hit), whether it printed
every test of the default list, whether the server was still up afterwards and (rampart)
whether `up` had to restart a process during the run. A run that fails any of these is
reported loudly on stderr and in summary.txt, and the script exits 1 (after writing OUT).

Environment:
  N           requests per test (default 100000, redis-benchmark's own default)
  REPS        runs per system (default 3); the tables show the median and min-max
  SYSTEMS     subset and order of "rampart redis" (the default)
  CLIENTS     redis-benchmark -c (default 50, redis-benchmark's own default)
  TIMEOUT     seconds one redis-benchmark run (all tests) may take (default 1800), then it
              is stopped (SIGTERM, SIGKILL 10 s later) and the run counts as failed
  RAMPART_BIN default build/release/rampart (copied to a temp dir first, so a rebuild
              during the run does not disturb it)
  DATA_DIR    parent of rampart's kv.data_dir (default: the temp dir, removed at exit)
  OUT         results directory (default bench/results/redis-benchmark)

Writes into OUT (its old summary.*, redis_benchmark.png and runs/ are removed first):
  runs/<system>-rep<r>.csv/.err  redis-benchmark's output of every run
  runs/rampart-rep<r>.up.log     `rampart up`'s output;  runs/rampart-cluster.toml
  summary.json                   every run's figures and checks, medians, min/max, ratios
  summary.txt                    the configuration and a Markdown table for
                                 docs/benchmarks.md (also printed)
  redis_benchmark.png            bars per test (log y), min-max as error bars
Every process started here is stopped by PID (SIGTERM, bounded wait, SIGKILL) when the
script exits, also on failure or Ctrl-C.

Examples:
  bench/redis_benchmark.sh
  SYSTEMS=redis N=2000 REPS=1 OUT=/tmp/rb bench/redis_benchmark.sh
EOF
}
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  "") ;;
  *) echo "redis_benchmark.sh: no arguments (settings are environment variables); --help" >&2; exit 2 ;;
esac

n="${N:-100000}"
reps="${REPS:-3}"
systems="${SYSTEMS:-rampart redis}"
clients="${CLIENTS:-50}"
limit="${TIMEOUT:-1800}"
src_bin="${RAMPART_BIN:-build/release/rampart}"
out="${OUT:-bench/results/redis-benchmark}"

for v in n reps clients limit; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || { echo "redis_benchmark.sh: ${v^^} must be a positive integer" >&2; exit 2; }
done
[ -n "${systems// /}" ] || { echo "redis_benchmark.sh: SYSTEMS is empty" >&2; exit 2; }
for s in $systems; do
  case "$s" in rampart|redis) ;; *) echo "redis_benchmark.sh: unknown system $s in SYSTEMS (rampart, redis)" >&2; exit 2 ;; esac
  [ "$(grep -ow "$s" <<< "$systems" | wc -l)" = 1 ] || { echo "redis_benchmark.sh: $s twice in SYSTEMS" >&2; exit 2; }
done
for tool in redis-server redis-benchmark redis-cli timeout stdbuf; do
  command -v "$tool" >/dev/null || { echo "redis_benchmark.sh: $tool not found (make deps)" >&2; exit 1; }
done
has_rampart=false
case " $systems " in *" rampart "*) has_rampart=true ;; esac
if $has_rampart; then
  [ -x "$src_bin" ] || { echo "redis_benchmark.sh: no binary at $src_bin (make build, or set RAMPART_BIN)" >&2; exit 1; }
fi

# free_ports, stop_pid and bench_venv (bench/.venv with the pinned plot tools).
# shellcheck source=bench/cluster.sh
. bench/cluster.sh

tmp=$(mktemp -d)
data_root="${DATA_DIR:-$tmp/data}"
up_pid=""
redis_pid=""

stop_rampart() {
  if [ -n "$up_pid" ]; then stop_pid "$up_pid" 15; up_pid=""; stop_up_children; fi
}
stop_redis() {
  if [ -n "$redis_pid" ]; then stop_pid "$redis_pid"; redis_pid=""; fi
}
cleanup() {
  if [ -n "$client_pid" ]; then stop_pid "$client_pid" 15; client_pid=""; fi
  stop_rampart
  stop_redis
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM


# The cluster file: the embedded default with new ports for every [[nodes]] entry (each keeps
# its id, host and any other field) and the proxy, and kv.data_dir. Written from
# `rampart config default` of the binary under test, so it follows the binary.
write_cluster_file() {  # FILE DATA_DIR: sets $port (the proxy's)
  local file=$1 dir=$2 attempt
  "$tmp/rampart" config default > "$tmp/default.toml"
  # nodes and partitions for free_ports: one base per kv-node plus one for the proxy.
  read -r nodes partitions < <(bench/.venv/bin/python - "$tmp/default.toml" <<'PY'
import sys, tomllib
c = tomllib.load(open(sys.argv[1], "rb"))
if c.get("storage_nodes"):
    sys.exit("redis_benchmark.sh: the embedded default has [[storage_nodes]]; their ports are not moved yet")
ppn = c.get("kv", {}).get("partitions_per_node", 1)
# "auto" picks at most 8 partitions per node (docs/configuration.md): reserve that many ports.
print(len(c["nodes"]) + 1, 8 if ppn == "auto" else ppn)
PY
)
  local ports
  read -r -a ports <<< "$(free_ports)"
  bench/.venv/bin/python - "$tmp/default.toml" "$file" "$dir" "${ports[@]}" <<'PY'
import json, sys, tomllib
src, dst, data_dir, ports = sys.argv[1], sys.argv[2], sys.argv[3], [int(p) for p in sys.argv[4:]]
c = tomllib.load(open(src, "rb"))
def val(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    sys.exit(f"redis_benchmark.sh: cannot write {v!r} of a [[nodes]] entry")
lines = ["# bench/redis_benchmark.sh: the embedded default (`rampart config default`) with only",
         "# the ports and kv.data_dir changed; every key left out keeps its default.",
         "[kv]", f"data_dir = {json.dumps(data_dir)}", "[proxy]", f"port = {ports[-1]}"]
for node, port in zip(c["nodes"], ports):
    lines.append("[[nodes]]")
    lines += [f"{k} = {port if k == 'port' else val(v)}" for k, v in node.items()]
open(dst, "w").write("\n".join(lines) + "\n")
PY
  port=${ports[-1]}
  # Nothing but ports and data_dir may differ from the default (comments: the header names
  # the file it was read from).
  local diff
  diff=$(diff <("$tmp/rampart" config show) <("$tmp/rampart" --config "$file" config show) |
         grep '^[<>]' | grep -Ev '^[<>] *(#|(port|data_dir) *=)' || true)
  if [ -n "$diff" ]; then
    echo "redis_benchmark.sh: the cluster file changes more than ports and data_dir:" >&2
    echo "$diff" >&2
    exit 1
  fi
}

start_rampart() {  # REP: sets $port; retried: a port can be taken between check and bind
  local rep=$1 attempt cfg="$tmp/cluster.toml" dir="$data_root/rampart-rep$1"
  for attempt in 1 2 3; do
    rm -rf "$dir" && mkdir -p "$dir"
    write_cluster_file "$cfg" "$dir"
    : > "$tmp/up.log"
    "$tmp/rampart" --config "$cfg" up > "$tmp/up.log" 2>&1 &
    up_pid=$!
    if wait_up_ready && wait_ping "$port" "rampart proxy" "$up_pid"; then
      cp "$cfg" "$out/runs/rampart-cluster.toml"
      grep -E '^(proxy|ready)' "$tmp/up.log" | sed 's/^/   /' >&2 || true
      return 0
    fi
    echo "redis_benchmark.sh: rampart did not start (attempt $attempt):" >&2
    grep -v ' info: ' "$tmp/up.log" >&2 || true
    stop_rampart
  done
  exit 1
}

start_redis() {  # sets $port
  local attempt
  for attempt in 1 2 3; do
    port=$(nodes=1 partitions=1 free_ports)
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
      --logfile "$tmp/redis.log" &
    redis_pid=$!
    if wait_ping "$port" redis-server "$redis_pid"; then return 0; fi
    echo "redis_benchmark.sh: redis-server did not start (attempt $attempt):" >&2
    tail -5 "$tmp/redis.log" >&2 || true
    stop_redis
  done
  exit 1
}

# One redis-benchmark run of the default list into OUT/runs/<system>-rep<r>.{csv,err}; a line
# per run in OUT/runs/index.tsv: system rep position exit seconds tests server_alive restarts.
expected_tests=20   # redis-benchmark 7.0's default list; summary.json names them
failed_runs=0
run_system() {  # SYSTEM REP POSITION
  local system=$1 rep=$2 pos=$3 o="$out/runs/$1-rep$2" rc=0 t0 t1 secs tests alive restarts=0 pid
  echo "== $system, run $rep of $reps" >&2
  if [ "$system" = rampart ]; then start_rampart "$rep"; pid=$up_pid; else start_redis; pid=$redis_pid; fi
  t0=$(date +%s.%N)
  # stdbuf: a line per test reaches the file at once, so a run stopped by the timeout still
  # shows how far it got (a killed process loses its stdio buffer).
  timeout --kill-after=10 "$limit" stdbuf -oL \
    redis-benchmark -h 127.0.0.1 -p "$port" -c "$clients" -n "$n" -q --csv > "$o.csv" 2> "$o.err" &
  wait_child $! || rc=$?
  t1=$(date +%s.%N)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  # Data rows: "NAME","<rps>",...
  tests=$(grep -cE '^"[^"]+","[0-9.]+"' "$o.csv" || true)
  if kill -0 "$pid" 2>/dev/null; then alive=yes; else alive=no; fi
  if [ "$system" = rampart ]; then
    cp "$tmp/up.log" "$o.up.log"
    restarts=$(grep -cE '\(pid [0-9]+\) died: ' "$tmp/up.log" || true)  # processes `up` restarted
    stop_rampart
    rm -rf "$data_root/rampart-rep$rep"
  else
    stop_redis
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$system" "$rep" "$pos" "$rc" "$secs" "$tests" "$alive" "$restarts" \
    >> "$out/runs/index.tsv"
  if [ "$rc" = 0 ] && [ "$tests" -ge "$expected_tests" ] && [ "$alive" = yes ] && [ "$restarts" = 0 ]; then
    echo "   $system run $rep: $tests tests, exit 0, $secs s" >&2
  else
    failed_runs=$((failed_runs + 1))
    {
      echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
      echo "!!! $system run $rep FAILED: redis-benchmark exit $rc$([ "$rc" = 124 ] && echo " (TIMEOUT ${limit} s)")," \
        "$tests of $expected_tests tests, server alive: $alive, restarts by up: $restarts, $secs s"
      if [ "$tests" -gt 0 ]; then echo "!!! last test printed: $(grep -E '^"[^"]+","[0-9.]+"' "$o.csv" | tail -1 | cut -d, -f1)"; fi
      echo "!!! redis-benchmark stderr (last lines, $o.err):"
      tail -5 "$o.err" | sed 's/^/!!!   /'
      if [ "$system" = rampart ]; then grep -E ' (error|warn)|died|restarted' "$o.up.log" | tail -5 | sed 's/^/!!!   up: /' || true; fi
      echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    } >&2
  fi
}

bench_venv
if $has_rampart; then cp "$src_bin" "$tmp/rampart"; fi
mkdir -p "$out/runs"
rm -f "$out"/summary.json "$out"/summary.txt "$out"/redis_benchmark.png "$out"/runs/*
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit-dirty"; fi
binary=""
if $has_rampart; then
  binary="$src_bin, built $(date -u -r "$src_bin" +%Y-%m-%dT%H:%M:%SZ), sha256 $(sha256sum "$tmp/rampart" | cut -c1-16)"
  "$tmp/rampart" config show > "$out/runs/rampart-default.toml"  # the default, "auto"s resolved
fi
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "redis-benchmark default tests: systems [$systems], -n $n -c $clients, $reps run(s) each," \
  "timeout $limit s per run, $(nproc) cores, load $load, commit $commit" >&2
if awk -v l="${load%% *}" -v c="$(nproc)" 'BEGIN { exit !(l > c) }'; then
  echo "redis_benchmark.sh: warning: load average ${load%% *} > $(nproc) cores: the host is busy, figures will be noisy" >&2
fi
started=$(date +%s)
start_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
read -r -a order <<< "$systems"
for rep in $(seq 1 "$reps"); do
  if [ $((rep % 2)) = 1 ]; then seq_=("${order[@]}"); else seq_=(); for ((i = ${#order[@]} - 1; i >= 0; i--)); do seq_+=("${order[$i]}"); done; fi
  pos=0
  for system in "${seq_[@]}"; do pos=$((pos + 1)); run_system "$system" "$rep" "$pos"; done
done
elapsed=$(( $(date +%s) - started ))

OUT_DIR="$out" N_REQ="$n" REPS_="$reps" CLIENTS_="$clients" LIMIT="$limit" SYSTEMS_="$systems" \
COMMIT="$commit" BINARY="$binary" LOAD="$load" START_DATE="$start_date" ELAPSED="$elapsed" \
CORES="$(nproc)" REDIS_VERSION="$(redis-server --version)" RB_VERSION="$(redis-benchmark --version)" \
EXPECTED="$expected_tests" \
  bench/.venv/bin/python - <<'PY'
import csv, json, os, statistics, tomllib
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

E = os.environ
out, n, reps, clients = E["OUT_DIR"], int(E["N_REQ"]), int(E["REPS_"]), int(E["CLIENTS_"])
systems, commit = E["SYSTEMS_"].split(), E["COMMIT"]
# redis-benchmark 7.0's default list, in its order (redis-benchmark.c, the tests run without -t).
default_tests = ["PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "RPUSH", "LPOP", "RPOP",
                 "SADD", "HSET", "SPOP", "ZADD", "ZPOPMIN", "LPUSH (needed to benchmark LRANGE)",
                 "LRANGE_100 (first 100 elements)", "LRANGE_300 (first 300 elements)",
                 "LRANGE_500 (first 500 elements)", "LRANGE_600 (first 600 elements)", "MSET (10 keys)"]
assert len(default_tests) == int(E["EXPECTED"])

def read_csv(path):
    rows = {}
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if len(row) < 2 or row[0] == "test":
                continue
            try:
                rows[row[0]] = float(row[1])
            except ValueError:
                continue
    return rows

runs = []
tests = list(default_tests)
for line in open(f"{out}/runs/index.tsv"):
    system, rep, pos, rc, secs, _, alive, restarts = line.rstrip("\n").split("\t")
    base = f"{out}/runs/{system}-rep{rep}"
    rps = read_csv(base + ".csv")
    for t in rps:
        if t not in tests:
            tests.append(t)  # a redis-benchmark with another default list
    missing = [t for t in default_tests if t not in rps]
    err = open(base + ".err", errors="replace").read().splitlines()
    ok = rc == "0" and not missing and alive == "yes" and restarts == "0"
    runs.append({"system": system, "rep": int(rep), "position_in_rep": int(pos), "exit": int(rc),
                 "timed_out": rc == "124", "seconds": float(secs), "tests_run": len(rps),
                 "tests_expected": len(default_tests), "missing": missing,
                 "server_alive_after": alive == "yes", "restarts_by_up": int(restarts),
                 "complete": ok, "stderr_tail": err[-5:], "rps": rps})

results = {}
for s in systems:
    for t in tests:
        vals = [r["rps"][t] for r in runs if r["system"] == s and t in r["rps"]]
        if vals:
            results.setdefault(s, {})[t] = {"median": statistics.median(vals), "min": min(vals),
                                             "max": max(vals), "runs": len(vals), "values": vals}
ratios = {}
for t in tests:
    a, b = results.get("rampart", {}).get(t), results.get("redis", {}).get(t)
    if a and b:
        ratios[t] = a["median"] / b["median"]

rampart_cfg = None
if "rampart" in systems and os.path.exists(f"{out}/runs/rampart-default.toml"):
    c = tomllib.load(open(f"{out}/runs/rampart-default.toml", "rb"))
    kv, px, tr = c.get("kv", {}), c.get("proxy", {}), c.get("transport", {})
    rampart_cfg = {"nodes": len(c["nodes"]), "partitions_per_node": kv.get("partitions_per_node"),
                   "backend": tr.get("backend"), "spin_us": tr.get("spin_us"), "kv_log": kv.get("log"),
                   "kv_sync": kv.get("sync"), "proxy_workers": px.get("workers"),
                   "proxy_aggregate": px.get("aggregate"), "replicas": px.get("replicas"),
                   "isolation": px.get("isolation"), "binary": E["BINARY"]}
bad = [r for r in runs if not r["complete"]]
config = {"cores": int(E["CORES"]), "load_average_at_start": E["LOAD"], "redis_server": E["REDIS_VERSION"],
          "redis_benchmark": E["RB_VERSION"], "commit": commit, "requests_per_test": n, "reps": reps,
          "clients": clients, "timeout_s": int(E["LIMIT"]), "systems": systems, "date": E["START_DATE"],
          "elapsed_s": int(E["ELAPSED"]),
          "command": f"redis-benchmark -h 127.0.0.1 -p PORT -c {clients} -n {n} -q --csv",
          "redis_server_flags": "--save '' --appendonly no", "rampart": rampart_cfg}
summary = {"benchmark": "bench/redis_benchmark.sh", "configuration": config, "tests": tests,
           "all_runs_complete": not bad, "results": results, "ratio_rampart_over_redis": ratios,
           "runs": runs}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)

def fmt(r):
    if not r:
        return "—"
    s = f"{r['median']:,.0f} [{r['min']:,.0f}–{r['max']:,.0f}]"
    return s + (f" ({r['runs']}/{reps} runs)" if r["runs"] < reps else "")
def rb_version():
    v = E["RB_VERSION"].split()
    return v[1] if len(v) > 1 else E["RB_VERSION"]
redis_v = next((w[2:] for w in E["REDIS_VERSION"].split() if w.startswith("v=")), E["REDIS_VERSION"])
if rampart_cfg:
    rc = rampart_cfg
    rampart_line = (f"`rampart up` with the embedded default configuration (only ports and kv.data_dir changed): "
                    f"{rc['nodes']} kv-nodes × {rc['partitions_per_node']} partitions, proxy on "
                    f"(workers = {rc['proxy_workers']}, 0 = a quarter of the cores on one machine), transport {rc['backend']}, "
                    f"spin_us = {rc['spin_us']}, kv.log = {rc['kv_log']}, kv.sync = {rc['kv_sync']}; "
                    f"binary {rc['binary']}")
else:
    rampart_line = "not run"
lines = []
if bad:
    lines += ["**WARNING: INCOMPLETE RUNS** — " + "; ".join(
        f"{r['system']} run {r['rep']}: exit {r['exit']}{' (timeout)' if r['timed_out'] else ''}, "
        f"{r['tests_run']}/{r['tests_expected']} tests"
        + (f", first missing: {r['missing'][0]}" if r["missing"] else "")
        + ("" if r["server_alive_after"] else ", server dead")
        + (f", {r['restarts_by_up']} restarts by up" if r["restarts_by_up"] else "") for r in bad), ""]
lines += [f"redis-benchmark's default test list, `redis-benchmark -c {clients} -n {n} -q --csv` "
          f"(no -t; {clients} clients, {n:,} requests per test), {reps} run(s) per system, systems alternating; "
          f"commit {commit}, {E['START_DATE']}",
          "",
          f"- machine: {config['cores']} cores (nproc), load average at start {E['LOAD']}; "
          f"redis-benchmark {rb_version()} runs on the same host",
          f"- rampart: {rampart_line}",
          f"- redis: one redis-server {redis_v}, --save '' --appendonly no" if "redis" in systems else "- redis: not run",
          f"- runs: {len(runs) - len(bad)} of {len(runs)} complete (exit 0, all {len(default_tests)} tests, "
          f"server up, no restarts); {E['ELAPSED']} s in all",
          "",
          "| test | rampart req/s (median, [min–max]) | redis req/s (median, [min–max]) | ratio |",
          "|---|---:|---:|---:|"]
for t in tests:
    a, b = results.get("rampart", {}).get(t), results.get("redis", {}).get(t)
    ratio = f"{ratios[t]:.2f}×" if t in ratios else "—"
    lines.append(f"| {t} | {fmt(a)} | {fmt(b)} | {ratio} |")
lines += ["", "| run | system | exit | tests | seconds | server up after | restarts |", "|---:|---|---:|---:|---:|---|---:|"]
for r in runs:
    lines.append(f"| {r['rep']}.{r['position_in_rep']} | {r['system']} | {r['exit']} | "
                 f"{r['tests_run']}/{r['tests_expected']} | {r['seconds']:.1f} | "
                 f"{'yes' if r['server_alive_after'] else '**no**'} | {r['restarts_by_up']} |")
open(f"{out}/summary.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))

def short(t):
    return "LPUSH\n(for LRANGE)" if t.startswith("LPUSH (") else t.split(" (")[0]
fig, ax = plt.subplots(figsize=(12, 5))
styles = {"rampart": ("tab:blue", "rampart up, embedded default"), "redis": ("tab:grey", "one redis-server")}
width = 0.8 / max(1, len(systems))
for k, s in enumerate(systems):
    med = [results.get(s, {}).get(t, {}).get("median", 0.0) for t in tests]
    lo = [m - results.get(s, {}).get(t, {}).get("min", m) for m, t in zip(med, tests)]
    hi = [results.get(s, {}).get(t, {}).get("max", m) - m for m, t in zip(med, tests)]
    colour, label = styles[s]
    ax.bar([i + (k - (len(systems) - 1) / 2) * width for i in range(len(tests))], med, width,
           yerr=[lo, hi], capsize=2, color=colour, label=label, error_kw={"elinewidth": 0.8})
ax.set_xticks(range(len(tests)), [short(t) for t in tests], rotation=45, ha="right", fontsize=8)
if any(v.get("median", 0) > 0 for s in results.values() for v in s.values()):
    ax.set_yscale("log")
ax.set_ylabel("requests/s (log), median of runs, bars: min–max")
cfgs = (f"rampart {rampart_cfg['nodes']} kv-nodes × {rampart_cfg['partitions_per_node']} partitions + proxy "
        f"(embedded default), " if rampart_cfg else "")
ax.set_title(f"redis-benchmark default tests, -c {clients} -n {n:,}, {reps} run(s) each; {cfgs}"
             f"redis-server {redis_v} (no persistence);\n{config['cores']} cores, commit {commit}"
             + ("   INCOMPLETE RUNS: see summary.txt" if bad else ""), fontsize=9,
             color="red" if bad else "black")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(f"{out}/redis_benchmark.png", dpi=120)
print(f"\nsummary: {out}/summary.txt, {out}/summary.json; plot: {out}/redis_benchmark.png")
PY
if [ "$failed_runs" -gt 0 ]; then
  echo "redis_benchmark.sh: $failed_runs run(s) INCOMPLETE or FAILED (see above and $out/summary.txt)" >&2
  exit 1
fi
exit 0
}
