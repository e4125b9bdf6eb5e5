#!/usr/bin/env bash
# ycsb/run.sh: YCSB against rampart in one command (issue 6). Run `ycsb/run.sh --help`.
#
# Builds what is missing (the rampart binary and librampart_jni.so with `make build`, the
# binding with Maven when ycsb/ changed), starts a `rampart up` cluster on free ports
# (4 nodes x 1 partition, the proxy on), runs YCSB's load phase then its run phase bounded by
# time, prints YCSB's summaries, and stops the cluster by PID on exit. Exit status: 0 when no
# operation failed, 1 when one did (or something broke), 2 on a usage error or a property the
# binding refuses.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
YCSB_DIR=$ROOT/ycsb
PROG=ycsb/run.sh

usage() {
  cat <<'EOF'
Usage: ycsb/run.sh [options]

Runs YCSB (site.ycsb.Client, core 0.17.0) with the rampart binding
(site.ycsb.db.rampart.RampartClient; RedisLayoutClient with -d redis): the
load phase, then the run phase for a fixed time, against a fresh `rampart up`
cluster (4 kv-nodes x 1 partition and the Redis-protocol proxy, on free ports),
and prints YCSB's summaries.

Options:
  -m MODE        resp (default): through the proxy with Jedis (MULTI/HMSET/HGETALL);
                 native: the C++ client library over JNI (librampart_jni.so), so
                 the one-sided GET*/PUT+ path is measured (-p rampart.get=read ...)
  -d DB          rampart (default): RampartClient, transactions of -t keys;
                 redis: RedisLayoutClient, YCSB's own redis binding's commands and
                 layout through the proxy, one operation at a time, scans included
                 (workload E); resp mode and txnlen 1 only
  -w WORKLOAD    a file of ycsb/workloads (workloada|b|c|d|e|f, r0|r25|r50|r75|r100)
                 or a path to a workload file (default: workloada)
  -t TXNLEN      keys per transaction, rampart.txnlen (default: 1)
  -s SECONDS     length of the run phase, YCSB's maxexecutiontime (default: 10)
  -T THREADS     YCSB client threads of both phases (default: 4)
  -b BACKEND     transport of the started cluster: ucx | tcp (default: the value of
                 -p rampart.transport, else ucx)
  -c SEC.KEY=VAL a setting of the started cluster's file, e.g. -c proxy.aggregate=false,
                 -c proxy.workers=1, -c kv.grace_ms=100 (repeatable; strings need no quotes)
  -p KEY=VALUE   a YCSB or binding property, passed to both phases (repeatable), e.g.
                 -p rampart.get=read -p rampart.put=ring -p rampart.isolation=s2pl
  -o DIR         keep the cluster file and every log in DIR (default: a temporary
                 folder, removed after a successful run, kept and named otherwise)
  --no-cluster   start no cluster: use a running one, named by -p rampart.port (and
                 rampart.host) in resp mode or -p rampart.config in native mode
  --no-load      skip the load phase (with --no-cluster, on data loaded before)
  -h, --help     this text

Binding properties (-p; README "YCSB" and RampartClient's Javadoc):
  rampart.mode        resp | native (set by -m)
  rampart.txnlen      N >= 1 (set by -t): operations are buffered and committed as ONE
                      multi-key transaction of N distinct keys (reads as one multi-get,
                      writes as one multi-put); buffered operations return BATCHED_OK
  rampart.isolation   ramp | s2pl | none (native; resp takes ramp only: the proxy's
                      isolation is its cluster file's [proxy] isolation, -c proxy.isolation=none)
  rampart.get         rpc | ring | read | auto (native: GET, GET+, GET*, GET* on this host; default [client] get)
  rampart.put         rpc | ring (native: PUT, PUT+; default [client] put)
  rampart.transport   tcp | ucx (native; default: the cluster's backend)
  rampart.clientidbase  first timestamp client id of the native clients (default 2000)
  rampart.stats       true: native clients print their counters at cleanup
  rampart.host, rampart.port  resp: the proxy (set to the started cluster's)
  rampart.config      native: the cluster file (set to the started cluster's)
  rampart.timeoutms   resp: Jedis socket timeout (default 10000)

Examples:
  ycsb/run.sh                                     # workloada through the proxy, 10 s
  ycsb/run.sh -w r50 -t 4 -s 30                   # seed 000's r50, 4-key transactions
  ycsb/run.sh -m native -w r100 -t 4 -p rampart.get=read -p rampart.put=ring
  ycsb/run.sh -m native -b tcp -w r75 -p rampart.isolation=s2pl
  ycsb/run.sh -d redis -w workloade               # YCSB's redis binding's commands
  ycsb/run.sh --no-cluster -p rampart.port=6380   # against a running `rampart up`

Environment: RAMPART_BIN (default build/release/rampart), RAMPART_JNI (default
librampart_jni.so beside RAMPART_BIN), JAVA (default java), MVN (default mvn).
Exit status: 0 when no operation failed, 1 when one did or a step broke (the log
folder is named), 2 on a usage error or a property the binding refuses.
EOF
}

die_usage() {
  echo "$PROG: $*" >&2
  echo "Try '$PROG --help'." >&2
  exit 2
}
die() {
  echo "$PROG: $*" >&2
  exit 1
}

# --- arguments ---------------------------------------------------------------------------
mode=resp
db=rampart
workload=workloada
txnlen=1
seconds=10
threads=4
backend=
out_dir=
start_cluster=1
do_load=1
user_props=()
cluster_settings=()

need_arg() { [ $# -ge 2 ] && [ -n "$2" ] || die_usage "option $1 needs a value"; }
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    -m) need_arg "$@"; mode=$2; shift 2 ;;
    -d) need_arg "$@"; db=$2; shift 2 ;;
    -w) need_arg "$@"; workload=$2; shift 2 ;;
    -t) need_arg "$@"; txnlen=$2; shift 2 ;;
    -s) need_arg "$@"; seconds=$2; shift 2 ;;
    -T) need_arg "$@"; threads=$2; shift 2 ;;
    -b) need_arg "$@"; backend=$2; shift 2 ;;
    -c) need_arg "$@"; cluster_settings+=("$2"); shift 2 ;;
    -p) need_arg "$@"; user_props+=("$2"); shift 2 ;;
    -o) need_arg "$@"; out_dir=$2; shift 2 ;;
    --no-cluster) start_cluster=0; shift ;;
    --no-load) do_load=0; shift ;;
    *) die_usage "unknown argument '$1'" ;;
  esac
done

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# -p rampart.mode / rampart.txnlen are the same as -m / -t; the last one given wins.
declare -A prop_value=()
for kv in ${user_props[@]+"${user_props[@]}"}; do
  [[ $kv == ?*=* ]] || die_usage "-p takes KEY=VALUE, got '$kv'"
  prop_value[${kv%%=*}]=${kv#*=}
done
[ -n "${prop_value[rampart.mode]:-}" ] && mode=${prop_value[rampart.mode]}
[ -n "${prop_value[rampart.txnlen]:-}" ] && txnlen=${prop_value[rampart.txnlen]}

case "$mode" in resp|native) ;; *) die_usage "-m $mode: the mode is resp or native" ;; esac
case "$db" in
  rampart) db_class=site.ycsb.db.rampart.RampartClient ;;
  redis)
    db_class=site.ycsb.db.rampart.RedisLayoutClient
    [ "$mode" = resp ] || die_usage "-d redis goes through the proxy: not with -m $mode"
    [ "$txnlen" = 1 ] || die_usage "-d redis runs one operation at a time: not with -t $txnlen" ;;
  *) die_usage "-d $db: the database is rampart or redis" ;;
esac
is_uint "$txnlen" && [ "$txnlen" -ge 1 ] || die_usage "-t $txnlen: txnlen is an integer >= 1"
is_uint "$seconds" && [ "$seconds" -ge 1 ] || die_usage "-s $seconds: seconds is an integer >= 1"
is_uint "$threads" && [ "$threads" -ge 1 ] || die_usage "-T $threads: threads is an integer >= 1"
transport=${prop_value[rampart.transport]:-}
if [ -z "$backend" ]; then
  backend=${transport:-ucx}
fi
case "$backend" in tcp|ucx) ;; *) die_usage "-b $backend: the backend is ucx or tcp" ;; esac
if [ $start_cluster = 1 ] && [ -n "$transport" ] && [ "$transport" != "$backend" ]; then
  die_usage "-p rampart.transport=$transport but the started cluster runs $backend (-b)"
fi
for s in ${cluster_settings[@]+"${cluster_settings[@]}"}; do
  [[ $s =~ ^[a-z_]+(\.[a-z_]+)?\.[a-z_]+=.+$ ]] ||
    die_usage "-c takes SECTION.KEY=VALUE (e.g. proxy.aggregate=false), got '$s'"
done
if [ $start_cluster = 0 ]; then
  [ ${#cluster_settings[@]} -eq 0 ] || die_usage "-c configures the started cluster: not with --no-cluster"
  if [ "$mode" = native ] && [ -z "${prop_value[rampart.config]:-}" ]; then
    die_usage "--no-cluster in native mode needs -p rampart.config=CLUSTER_FILE"
  fi
  if [ "$mode" = resp ] && [ -z "${prop_value[rampart.port]:-}" ]; then
    die_usage "--no-cluster in resp mode needs -p rampart.port=PORT (the proxy's)"
  fi
fi

if [ -f "$YCSB_DIR/workloads/$workload" ]; then
  workload_file=$YCSB_DIR/workloads/$workload
elif [ -f "$workload" ]; then
  workload_file=$(cd "$(dirname "$workload")" && pwd)/$(basename "$workload")
else
  die_usage "-w $workload: no such workload (ycsb/workloads has: $(ls "$YCSB_DIR/workloads" | tr '\n' ' '))"
fi

# --- build what is missing ---------------------------------------------------------------
JAVA=${JAVA:-java}
MVN=${MVN:-mvn}
RAMPART=${RAMPART_BIN:-$ROOT/build/release/rampart}
JNI=${RAMPART_JNI:-$(dirname "$RAMPART")/librampart_jni.so}

command -v "$JAVA" >/dev/null && command -v "$MVN" >/dev/null ||
  die "java and mvn are needed: 'make deps' (scripts/install-deps.sh) installs them"

if [ ! -x "$RAMPART" ] || { [ "$mode" = native ] && [ ! -f "$JNI" ]; }; then
  echo "$PROG: building rampart (make build)" >&2
  make -C "$ROOT" -s build >&2 || die "make build failed"
fi
if [ "$mode" = native ] && [ ! -f "$JNI" ]; then
  ninja -C "$(dirname "$JNI")" rampart_jni >&2 || true
fi
[ -x "$RAMPART" ] || die "$RAMPART is missing after make build"
if [ "$mode" = native ] && [ ! -f "$JNI" ]; then
  die "$JNI is missing after make build (the CMake target rampart_jni needs a JDK: make deps)"
fi

# The binding is rebuilt when a source, a workload-independent input, is newer than the
# stamp that `make ycsb-build` and this script leave after a successful build.
stamp=$YCSB_DIR/target/.built
stale=0
if [ ! -f "$stamp" ] || [ ! -d "$YCSB_DIR/target/dependency" ] ||
   [ ! -f "$YCSB_DIR/target/classes/site/ycsb/db/rampart/RampartClient.class" ]; then
  stale=1
elif [ -n "$(find "$YCSB_DIR/pom.xml" "$YCSB_DIR/src/main" -newer "$stamp" -print -quit)" ]; then
  stale=1
fi
if [ $stale = 1 ]; then
  echo "$PROG: building the binding (mvn package)" >&2
  if ! mvn_out=$("$MVN" -q -B -f "$YCSB_DIR/pom.xml" package -DskipTests 2>&1); then
    printf '%s\n' "$mvn_out" >&2
    die "mvn package failed"
  fi
  touch "$stamp"
fi

# --- the work folder and the cluster ------------------------------------------------------
keep_dir=0
if [ -n "$out_dir" ]; then
  mkdir -p "$out_dir"
  work=$(cd "$out_dir" && pwd)
  keep_dir=1
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/rampart-ycsb.XXXXXX")
fi

up_pid=
ycsb_pid=
status=1
on_exit() {
  trap - EXIT INT TERM
  if [ -n "$ycsb_pid" ] && kill -0 "$ycsb_pid" 2>/dev/null; then
    kill -TERM "$ycsb_pid" 2>/dev/null || true
    wait "$ycsb_pid" 2>/dev/null || true
  fi
  if [ -n "$up_pid" ] && kill -0 "$up_pid" 2>/dev/null; then
    kill -TERM "$up_pid" 2>/dev/null || true
    # `up` stops its nodes and the proxy (SIGKILL after 5 s); then we stop waiting.
    for _ in $(seq 100); do
      kill -0 "$up_pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$up_pid" 2>/dev/null; then
      kill -KILL "$up_pid" 2>/dev/null || true
    fi
    wait "$up_pid" 2>/dev/null || true
  fi
  if [ $keep_dir = 1 ] || [ $status = 1 ]; then
    echo "$PROG: logs and the cluster file are in $work" >&2
  else
    rm -rf "$work"
  fi
  exit $status
}
trap on_exit EXIT
trap 'status=130; exit' INT
trap 'status=143; exit' TERM

cluster_props=()
if [ $start_cluster = 1 ]; then
  config=$work/cluster.toml
  # 5 free ports (4 nodes, the proxy), and the cluster file with the -c settings merged in.
  python3 - "$config" "$backend" "$ROOT" ${cluster_settings[@]+"${cluster_settings[@]}"} <<'PY'
import os, re, sys
path, backend, root, overrides = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
sys.path.insert(0, os.path.join(root, "scripts"))
from free_ports import free_port_bases  # below the ephemeral range: it says why
ports = free_port_bases(5)
sections = {
    "cluster": {"name": '"ycsb"'},
    "transport": {"backend": f'"{backend}"'},
    # A fresh data directory per run (removed before the cluster starts).
    "kv": {"partitions_per_node": "1", "arena_bytes": '"64MiB"',
           "data_dir": '"' + os.path.join(os.path.dirname(path), "rampart-data") + '"'},
    "proxy": {"enabled": "true", "port": str(ports[4])},
}
def toml(v):
    if v in ("true", "false") or re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", v) or v[:1] in "\"'[":
        return v
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
for o in overrides:
    name, value = o.split("=", 1)
    section, key = name.rsplit(".", 1)
    sections.setdefault(section, {})[key] = toml(value)
with open(path, "w") as f:
    for section, items in sections.items():
        f.write(f"[{section}]\n")
        for k, v in items.items():
            f.write(f"{k} = {v}\n")
    for i, port in enumerate(ports[:4]):
        f.write(f'[[nodes]]\nid = {i}\nhost = "127.0.0.1"\nport = {port}\n')
PY
  "$RAMPART" config check "$config" >/dev/null 2>"$work/config-check.stderr" || {
    cat "$work/config-check.stderr" >&2
    status=2
    exit
  }
  rm -rf "$work/rampart-data"
  "$RAMPART" up --config "$config" </dev/null >"$work/up.stdout" 2>"$work/up.stderr" &
  up_pid=$!
  deadline=$((SECONDS + 25))
  until grep -qs "^ready" "$work/up.stdout"; do
    if ! kill -0 "$up_pid" 2>/dev/null; then
      cat "$work/up.stderr" >&2
      die "rampart up exited before it was ready"
    fi
    [ $SECONDS -lt $deadline ] || { cat "$work/up.stderr" >&2; die "rampart up not ready after 25 s"; }
    sleep 0.1
  done
  proxy_line=$(grep -m1 '^proxy: ' "$work/up.stdout" || true)
  [ -n "$proxy_line" ] || die "rampart up started no proxy: $(cat "$work/up.stdout")"
  proxy_port=$(sed -E 's/^proxy: pid [0-9]+, [^:]+:([0-9]+),.*/\1/' <<<"$proxy_line")
  proxy_host=$(sed -E 's/^proxy: pid [0-9]+, ([^:]+):.*/\1/' <<<"$proxy_line")
  echo "$PROG: cluster up ($backend, 4 nodes x 1 partition, proxy on $proxy_host:$proxy_port), logs in $work" >&2
  if [ "$mode" = resp ]; then
    cluster_props=(-p "rampart.host=$proxy_host" -p "rampart.port=$proxy_port")
  else
    cluster_props=(-p "rampart.config=$config")
  fi
fi

# --- YCSB ----------------------------------------------------------------------------------
java_args=(-cp "$YCSB_DIR/target/classes:$YCSB_DIR/target/dependency/*")
if [ "$mode" = native ]; then
  java_args+=("-Drampart.jni=$(cd "$(dirname "$JNI")" && pwd)/$(basename "$JNI")"
              "-Djava.library.path=$(cd "$(dirname "$JNI")" && pwd)")
fi
# The script's defaults first, the user's -p next (they win), the started cluster's address
# last (it must win).
props=(-p "rampart.mode=$mode" -p "rampart.txnlen=$txnlen")
for kv in ${user_props[@]+"${user_props[@]}"}; do
  case "${kv%%=*}" in rampart.mode|rampart.txnlen) ;; *) props+=(-p "$kv") ;; esac
done
props+=(${cluster_props[@]+"${cluster_props[@]}"})
run_defaults=(-p "maxexecutiontime=$seconds")
[ -n "${prop_value[operationcount]:-}" ] || run_defaults+=(-p operationcount=1000000000)

# Runs one phase (load|run); prints its summary; sets phase_failed.
run_phase() {
  local phase=$1
  shift
  local flag=-t
  [ "$phase" = load ] && flag=-load
  "$JAVA" "${java_args[@]}" site.ycsb.Client "$flag" -db "$db_class" \
    -P "$workload_file" -threads "$threads" "$@" \
    >"$work/$phase.stdout" 2>"$work/$phase.stderr" </dev/null &
  ycsb_pid=$!
  local rc=0
  wait "$ycsb_pid" || rc=$?
  ycsb_pid=
  local out=$work/$phase.stdout err=$work/$phase.stderr
  if grep -q '^rampart-ycsb: bad property: ' "$err"; then
    grep -m1 '^rampart-ycsb: bad property: ' "$err" |
      sed "s|^rampart-ycsb: bad property: |$PROG: |; s/ (logged once)\$//" >&2
    status=2
    exit
  fi
  local plural=s
  [ "$threads" = 1 ] && plural=
  echo "== $phase: $(basename "$workload_file"), $db, $mode, txnlen $txnlen, $threads thread$plural$([ "$phase" = run ] && echo ", $seconds s") =="
  grep -E '^\[[A-Za-z_-]+\], ' "$out" || true
  grep '^rampart-ycsb: ' "$err" >&2 || true
  phase_failed=0
  if [ $rc -ne 0 ]; then
    echo "$PROG: YCSB's $phase phase exited with $rc" >&2
    phase_failed=1
  fi
  if grep -q 'DBException' "$out" "$err"; then
    echo "$PROG: the binding failed in the $phase phase: $(grep -h -m1 'DBException' "$err" "$out" | head -1)" >&2
    phase_failed=1
  fi
  local failed
  failed=$(grep -E '^\[[A-Za-z_-]+-FAILED\], Operations, |^\[[A-Za-z_-]+\], Return=' "$out" |
           grep -vE 'Return=(OK|BATCHED_OK),' || true)
  if [ -n "$failed" ]; then
    echo "$PROG: failed operations in the $phase phase:" >&2
    printf '%s\n' "$failed" >&2
    phase_failed=1
  fi
  if ! grep -qE '^\[OVERALL\], Throughput\(ops/sec\), [0-9.]*[1-9]' "$out"; then
    echo "$PROG: no throughput reported by the $phase phase" >&2
    phase_failed=1
  fi
}

any_failed=0
if [ $do_load = 1 ]; then
  run_phase load "${props[@]}"
  [ $phase_failed = 0 ] || { status=1; exit; }
fi
run_phase run "${run_defaults[@]}" "${props[@]}"
any_failed=$phase_failed
status=$any_failed
