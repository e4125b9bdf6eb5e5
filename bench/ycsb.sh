#!/usr/bin/env bash
# Seed 000's YCSB experiment (§5.5, Fig. 7) with the rampart binding: throughput vs read
# ratio for transactions of TXNLEN keys, one `ycsb/run.sh` per point (each starts and stops
# its own `rampart up` cluster; one at a time). Run `bench/ycsb.sh --help`.
# The whole script is one { ... } block: bash parses it before running any of it, so an edit of
# this file during a sweep (tens of minutes) cannot derail the running copy.
{
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
Usage: bench/ycsb.sh [SECONDS]        (or SECONDS=N / SECONDS_PER_POINT=N in the environment)

Seed 000's Fig. 7 (YCSB, §5.5) with the rampart binding: for every read ratio r0, r25, r50,
r75, r100 (ycsb/workloads: 1,000 records of 1 field x 1,000 B, uniform, the rest updates) and
every configuration below, one `ycsb/run.sh` (load, then a run phase of SECONDS s, default 5)
against a fresh `rampart up` cluster it starts and stops itself: 4 kv-nodes x 1 partition and
the proxy on 127.0.0.1, with -c transport.spin_us=$SPIN_US. Points run one at a time, rounds
in the order rep > ratio > configuration (drift spreads over all configurations alike).

Configurations (CONFIGS picks a subset, in this order by default):
  ramp-tcp    native (JNI)  -b tcp  rampart.isolation=ramp get=rpc  put=rpc    RAMP (GET, PUT)
  ramp-ring   native (JNI)  -b ucx  rampart.isolation=ramp get=ring put=ring   RAMP (GET+, PUT+)
  ramp-read   native (JNI)  -b ucx  rampart.isolation=ramp get=read put=ring   RAMP (GET*, PUT+)
  s2pl-tcp    native (JNI)  -b tcp  rampart.isolation=s2pl get=rpc  put=rpc    S2PL
  none-read   native (JNI)  -b ucx  rampart.isolation=none get=read put=ring   no isolation
                                                                               (upper bound)
  resp-ucx    resp (Jedis through the proxy, MULTI/EXEC = one RAMP txn)  -b ucx

Environment:
  TXNLEN      keys per transaction, rampart.txnlen (default 8)
  THREADS     YCSB client threads, one YCSB process (default 8)
  REPS        runs per point (default 1); the point keeps the median run by ops/s
  RATIOS      read percentages (default "0 25 50 75 100"; each needs ycsb/workloads/r<N>)
  CONFIGS     configurations (default "ramp-tcp ramp-ring ramp-read s2pl-tcp none-read resp-ucx")
  SPIN_US     the cluster's transport.spin_us (default 0)
  RAMPART_BIN rampart binary (default build/release/rampart); librampart_jni.so is taken from
              beside it. Both are copied to a temp dir first, and so are ycsb/run.sh and the
              built binding (ycsb/target), so a rebuild during the sweep does not disturb it.
              Nothing is built here: run `make build ycsb-build` first.
  OUT         results directory (default bench/results/ycsb)

Writes OUT/<config>-r<ratio>.json (the median run of each point: the full configuration,
YCSB's figures, failed operations, every run's ops/s), OUT/<config>-r<ratio>.txt (run.sh's
output of that run), and through bench/plot_ycsb.py summary.json, summary.txt (the table,
also printed) and fig7.png. Throughput is YCSB's [OVERALL] Throughput(ops/sec); txn/s =
ops/s / TXNLEN. A run with a failed operation, a non-zero exit or no throughput is a failed
run; a point with any failed run is marked failed (JSON, table, plot), never dropped.
Every process started here is stopped by PID on exit (run.sh stops its YCSB and cluster).
EOF
}
case "${1:-}" in -h|--help) usage; exit 0 ;; esac

env_seconds=$(printenv SECONDS || true)   # bash's own $SECONDS is a timer: read the env's
seconds="${1:-${SECONDS_PER_POINT:-${env_seconds:-5}}}"
txnlen="${TXNLEN:-8}"
threads="${THREADS:-8}"
reps="${REPS:-1}"
ratios="${RATIOS:-0 25 50 75 100}"
configs="${CONFIGS:-ramp-tcp ramp-ring ramp-read s2pl-tcp none-read resp-ucx}"
spin_us="${SPIN_US:-0}"
src_bin="${RAMPART_BIN:-build/release/rampart}"
src_jni="$(dirname "$src_bin")/librampart_jni.so"
out="${OUT:-bench/results/ycsb}"

for v in seconds txnlen threads reps; do
  [[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -ge 1 ] ||
    { echo "ycsb.sh: $v must be an integer >= 1, got '${!v}'" >&2; exit 2; }
done
[[ $spin_us =~ ^[0-9]+$ ]] || { echo "ycsb.sh: SPIN_US must be an integer >= 0, got '$spin_us'" >&2; exit 2; }
for r in $ratios; do
  [ -f "ycsb/workloads/r$r" ] || { echo "ycsb.sh: no workload ycsb/workloads/r$r (RATIOS)" >&2; exit 2; }
done

# config id -> run.sh arguments (besides -w -t -T -s -c -o)
config_args() {
  case "$1" in
    ramp-tcp)  echo "-m native -b tcp -p rampart.isolation=ramp -p rampart.get=rpc -p rampart.put=rpc" ;;
    ramp-ring) echo "-m native -b ucx -p rampart.isolation=ramp -p rampart.get=ring -p rampart.put=ring" ;;
    ramp-read) echo "-m native -b ucx -p rampart.isolation=ramp -p rampart.get=read -p rampart.put=ring" ;;
    s2pl-tcp)  echo "-m native -b tcp -p rampart.isolation=s2pl -p rampart.get=rpc -p rampart.put=rpc" ;;
    none-read) echo "-m native -b ucx -p rampart.isolation=none -p rampart.get=read -p rampart.put=ring" ;;
    resp-ucx)  echo "-m resp -b ucx" ;;
    *) return 1 ;;
  esac
}
for c in $configs; do
  config_args "$c" >/dev/null || { echo "ycsb.sh: unknown configuration $c in CONFIGS" >&2; exit 2; }
done

# What the sweep runs must exist and be current: nothing is built here.
[ -x "$src_bin" ] || { echo "ycsb.sh: no binary at $src_bin (make build, or set RAMPART_BIN)" >&2; exit 1; }
[ -f "$src_jni" ] || { echo "ycsb.sh: no $src_jni (make build; the rampart_jni target needs a JDK)" >&2; exit 1; }
[ -x ycsb/run.sh ] || { echo "ycsb.sh: ycsb/run.sh is missing" >&2; exit 1; }
stamp=ycsb/target/.built
if [ ! -f "$stamp" ] || [ ! -d ycsb/target/dependency ] ||
   [ -n "$(find ycsb/pom.xml ycsb/src/main -newer "$stamp" -print -quit)" ]; then
  echo "ycsb.sh: the YCSB binding is not built or older than its sources: make ycsb-build" >&2
  exit 1
fi

# shellcheck source=bench/cluster.sh
. bench/cluster.sh   # bench_venv

tmp=$(mktemp -d)
run_pid=""
stop_run() {  # run.sh stops its YCSB and its cluster on SIGTERM (its EXIT trap)
  [ -n "$run_pid" ] || return 0
  stop_pid "$run_pid" 20
  run_pid=""
}
cleanup() {
  stop_run
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Frozen copies: the binary, the JNI library, and ycsb/ (run.sh, workloads, sources and the
# built binding; cp -p keeps the times, so run.sh sees the build as current and builds nothing).
mkdir -p "$tmp/root/ycsb" "$tmp/points"
cp "$src_bin" "$tmp/rampart"
cp "$src_jni" "$tmp/librampart_jni.so"
cp -a ycsb/run.sh ycsb/pom.xml ycsb/src ycsb/workloads ycsb/target "$tmp/root/ycsb/"
bench_venv

commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit-dirty"; fi
ycsb_state=$(git status --porcelain -- ycsb 2>/dev/null | head -20 | tr '\n' ';')
load=$(cut -d' ' -f1-3 /proc/loadavg)
npoints=$(( $(wc -w <<<"$ratios") * $(wc -w <<<"$configs") * reps ))
echo "ycsb bench: configurations [$configs], read % [$ratios], txnlen $txnlen, $threads threads," \
  "$seconds s per run x $reps run(s), spin_us $spin_us, $(nproc) cores, load $load," \
  "$npoints run(s) (~$(( npoints * (seconds + 4) / 60 + 1 )) min)" >&2
if awk -v l="${load%% *}" 'BEGIN { exit !(l > 1.5) }'; then
  echo "ycsb.sh: warning: load average ${load%% *} > 1.5 on $(nproc) cores: figures will be noisy" >&2
fi
sweep_cmd="$(for v in TXNLEN THREADS REPS RATIOS CONFIGS SPIN_US RAMPART_BIN OUT; do
  [ -z "${!v:-}" ] || printf "%s='%s' " "$v" "${!v}"; done)bench/ycsb.sh $seconds"
python3 - "$tmp/sweep.json" "$commit" "${ycsb_state:-clean}" "$src_bin" "$tmp/rampart" \
  "$src_jni" "$tmp/librampart_jni.so" "$load" "$sweep_cmd" <<'PY'
import json, os, subprocess, sys
path, commit, ycsb_tree, src_bin, bin_copy, src_jni, jni_copy, load, cmd = sys.argv[1:]
def sh(*c):
    try:
        r = subprocess.run(c, capture_output=True, text=True)
        return (r.stdout or r.stderr).strip()  # java -version writes to stderr
    except OSError:
        return ""
def built(src, copy):
    return (f"{src}, built {sh('date', '-u', '-r', src, '+%Y-%m-%dT%H:%M:%SZ')}, "
            f"sha256 {sh('sha256sum', copy)[:16]}")
json.dump({
    "sweep_command": cmd,
    "commit": commit,
    "ycsb_tree": ycsb_tree,
    "started": sh("date", "-u", "+%Y-%m-%dT%H:%M:%SZ"),
    "cores": os.cpu_count(),
    "host": "127.0.0.1",
    "binary": built(src_bin, bin_copy),
    "jni": built(src_jni, jni_copy),
    "java": sh("java", "-version").splitlines()[0] if sh("java", "-version") else "",
    "load_average_at_start": load,
}, open(path, "w"))
PY

# One run of one point: run.sh in the background (waited for, so INT/TERM stops it at once).
run_point() {  # CONFIG RATIO REP
  local c=$1 r=$2 rep=$3 name="$1-r$2" rc=0
  local -a args
  read -r -a args <<<"$(config_args "$c")"
  args+=(-w "r$r" -t "$txnlen" -T "$threads" -s "$seconds" -c "transport.spin_us=$spin_us")
  echo "ycsb/run.sh ${args[*]}" > "$tmp/points/$name.rep$rep.cmd"
  args+=(-o "$tmp/points/$name.rep$rep")   # keeps the cluster's and YCSB's logs
  RAMPART_BIN="$tmp/rampart" RAMPART_JNI="$tmp/librampart_jni.so" \
    "$tmp/root/ycsb/run.sh" "${args[@]}" \
    > "$tmp/points/$name.rep$rep.out" 2> "$tmp/points/$name.rep$rep.err" </dev/null &
  run_pid=$!
  wait "$run_pid" || rc=$?
  run_pid=""
  echo "$rc" > "$tmp/points/$name.rep$rep.rc"
  python3 - "$tmp/points" "$name.rep$rep" "$txnlen" <<'PY' >&2
import re, sys
d, base, txnlen = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = open(f"{d}/{base}.out").read()
rc = open(f"{d}/{base}.rc").read().strip()
run = out.split("\n== run:", 1)[1] if "\n== run:" in out or out.startswith("== run:") else ""
m = re.search(r"^\[OVERALL\], Throughput\(ops/sec\), ([0-9.]+)", run, re.M)
ops = float(m.group(1)) if m else 0.0
bad = sum(int(n) for k, n in re.findall(r"^\[[A-Z_-]+\], Return=([A-Z_]+), (\d+)", run, re.M)
          if k not in ("OK", "BATCHED_OK"))
err = [l for l in open(f"{d}/{base}.err").read().splitlines()
       if l.startswith(("rampart-ycsb:", "ycsb/run.sh:"))
       and "logs and the cluster file" not in l and "cluster up (" not in l]
print(f"   {base:<22} {ops:>10,.0f} ops/s {ops / txnlen:>9,.0f} txn/s  exit {rc}"
      + (f"  FAILED ops {bad}" if bad else "") + (f"  | {err[0][:150]}" if err and rc != "0" else ""))
PY
}

started=$(date +%s)
for rep in $(seq 1 "$reps"); do
  for r in $ratios; do
    for c in $configs; do
      [ "$reps" = 1 ] || echo "== $c r$r (run $rep of $reps)" >&2
      run_point "$c" "$r" "$rep"
    done
  done
done
elapsed=$(( $(date +%s) - started ))
echo "ycsb bench: sweep took $elapsed s" >&2

# Old point files would mix into the summary: the directory is written afresh.
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.txt "$out"/*.png
python3 - "$tmp" "$out" "$reps" "$txnlen" "$threads" "$seconds" "$spin_us" "$elapsed" \
  "$ratios" "$configs" <<'PY'
import json, os, re, statistics, sys
tmp, out, reps, txnlen, threads, seconds, spin_us, elapsed = sys.argv[1:9]
reps, txnlen, threads, seconds, spin_us = map(int, (reps, txnlen, threads, seconds, spin_us))
ratios, configs = sys.argv[9].split(), sys.argv[10].split()
sweep = json.load(open(f"{tmp}/sweep.json"))
sweep["sweep_seconds"] = int(elapsed)
SPEC = {  # config -> (mode, backend, isolation, get, put)
    "ramp-tcp": ("native", "tcp", "ramp", "rpc", "rpc"),
    "ramp-ring": ("native", "ucx", "ramp", "ring", "ring"),
    "ramp-read": ("native", "ucx", "ramp", "read", "ring"),
    "s2pl-tcp": ("native", "tcp", "s2pl", "rpc", "rpc"),
    "none-read": ("native", "ucx", "none", "read", "ring"),
    "resp-ucx": ("resp", "ucx", "ramp (proxy)", None, None),
}

def phase(text, name):
    """The summary lines run.sh printed under '== NAME: ... ==' (up to the next header)."""
    m = re.search(rf"^== {name}: .*?==\n(.*?)(?=^== |\Z)", text, re.M | re.S)
    return m.group(1) if m else ""

def parse(section):
    """YCSB's [SECTION], Metric, value lines -> {section: {metric: value}}."""
    d = {}
    for sec, metric, val in re.findall(r"^\[([A-Za-z_-]+)\], ([^,]+), (.+)$", section, re.M):
        try:
            v = float(val)
            v = int(v) if v.is_integer() and "Latency" not in metric and "Throughput" not in metric else v
        except ValueError:
            v = val.strip()
        d.setdefault(sec, {})[metric] = v
    return d

def run_result(base):
    text = open(f"{tmp}/points/{base}.out").read()
    err = open(f"{tmp}/points/{base}.err").read()
    rc = int(open(f"{tmp}/points/{base}.rc").read())
    cmd = open(f"{tmp}/points/{base}.cmd").read().strip()
    run, load = parse(phase(text, "run")), parse(phase(text, "load"))
    res = {"exit_status": rc, "command": cmd}
    ov = run.get("OVERALL", {})
    res["ops_per_sec"] = float(ov.get("Throughput(ops/sec)", 0.0))
    res["txn_per_sec"] = res["ops_per_sec"] / txnlen
    res["runtime_ms"] = ov.get("RunTime(ms)")
    failed_ops, returns = 0, {}
    for op in ("READ", "UPDATE", "INSERT", "CLEANUP"):
        s = run.get(op)
        if not s:
            continue
        key = op.lower()
        rets = {m[len("Return="):]: v for m, v in s.items() if m.startswith("Return=")}
        returns[op] = rets
        if op in ("READ", "UPDATE", "INSERT"):
            res[f"{key}_ops"] = s.get("Operations", 0)
            for m, k in (("AverageLatency(us)", "avg_us"), ("95thPercentileLatency(us)", "p95_us"),
                         ("99thPercentileLatency(us)", "p99_us"), ("MaxLatency(us)", "max_us")):
                if m in s:
                    res[f"{key}_{k}"] = s[m]
        failed_ops += sum(v for r, v in rets.items() if r not in ("OK", "BATCHED_OK"))
    for sec, s in run.items():  # [READ-FAILED], Operations, n: the same operations, as a check
        if sec.endswith("-FAILED"):
            res.setdefault("failed_sections", {})[sec] = s.get("Operations", 0)
    res["returns"] = returns
    res["failed_ops"] = failed_ops
    lo = load.get("OVERALL", {})
    res["load"] = {"ops_per_sec": float(lo.get("Throughput(ops/sec)", 0.0)),
                   "failed_ops": sum(v for op in ("INSERT", "UPDATE") for r, v in
                                     {m[7:]: v for m, v in load.get(op, {}).items()
                                      if m.startswith("Return=")}.items()
                                     if r not in ("OK", "BATCHED_OK")),
                   "ran": bool(lo)}
    # The cluster's own complaints (warnings, errors, UCX ERROR lines) in this run.
    up = f"{tmp}/points/{base}/up.stderr"
    up_lines = open(up, errors="replace").read().splitlines() if os.path.exists(up) else []
    res["cluster_warnings"] = [l for l in up_lines
                               if " info: " not in l and not l.startswith(("node ", "ready"))][:20]
    msgs = [l for l in err.splitlines()
            if l.startswith(("rampart-ycsb:", "ycsb/run.sh:"))
            and "logs and the cluster file" not in l and "cluster up (" not in l]
    res["messages"] = msgs[:20]
    reasons = []
    if rc != 0:
        reasons.append(f"run.sh exited {rc}")
    if failed_ops:
        reasons.append(f"{failed_ops} failed operations")
    if res["load"]["failed_ops"]:
        reasons.append(f"{res['load']['failed_ops']} failed operations in the load phase")
    if res["ops_per_sec"] <= 0:
        reasons.append("no run-phase throughput")
    res["failed"] = bool(reasons)
    cw = [re.sub(r"^\S+ \S+ ", "", w) for w in res["cluster_warnings"]]  # without the time
    res["failure"] = "; ".join(reasons + ([msgs[0]] if reasons and msgs else [])
                               + ([f"cluster: {cw[0]}"] if reasons and cw else []))
    return res

n = 0
for c in configs:
    mode, backend, iso, get, put = SPEC[c]
    for r in ratios:
        name = f"{c}-r{r}"
        runs = [run_result(f"{name}.rep{i}") for i in range(1, reps + 1)
                if os.path.exists(f"{tmp}/points/{name}.rep{i}.rc")]
        if not runs:
            continue
        order = sorted(range(len(runs)), key=lambda i: runs[i]["ops_per_sec"])
        med = order[(len(runs) - 1) // 2]
        doc = {
            "benchmark": "ycsb-fig7",
            "series": c,
            "configuration": {
                "mode": mode, "backend": backend, "isolation": iso, "get": get, "put": put,
                "workload": f"r{r}", "read_proportion": int(r) / 100,
                "update_proportion": 1 - int(r) / 100,
                "records": 1000, "field_count": 1, "field_length": 1000,
                "request_distribution": "uniform", "txnlen": txnlen,
                "client_processes": 1, "threads": threads, "seconds": seconds, "reps": reps,
                "nodes": 4, "partitions_per_node": 1, "spin_us": spin_us,
                "cluster": "ycsb/run.sh defaults (64 MiB arena, grace 1 s, proxy on with its "
                           "default workers) + transport.spin_us",
                "ycsb_core": "0.17.0", **sweep,
            },
            "results": runs[med],
            "runs": [x["ops_per_sec"] for x in runs],
            "runs_failed_ops": [x["failed_ops"] + x["load"]["failed_ops"] for x in runs],
            "failed_runs": sum(x["failed"] for x in runs),
            "failed": any(x["failed"] for x in runs),
            "failures": [f"run {i + 1}: {x['failure']}" for i, x in enumerate(runs) if x["failed"]],
        }
        doc["configuration"]["command"] = runs[med]["command"]
        with open(f"{out}/{name}.json", "w") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
        os.replace(f"{tmp}/points/{name}.rep{med + 1}.out", f"{out}/{name}.txt")
        # A failed run keeps run.sh's stderr and the tails of YCSB's and the cluster's logs.
        for i, x in enumerate(runs):
            if not x["failed"]:
                continue
            base = f"{tmp}/points/{name}.rep{i + 1}"
            with open(f"{out}/{name}.rep{i + 1}.failed.txt", "w") as f:
                f.write(f"$ {x['command']}\n(exit {x['exit_status']}: {x['failure']})\n")
                f.write("\n--- the cluster's warnings and errors (up.stderr without info lines)\n")
                f.write("\n".join(x["cluster_warnings"]) + "\n")
                for label, path in (("run.sh stderr", f"{base}.err"),
                                    ("load.stderr", f"{base}/load.stderr"),
                                    ("run.stderr", f"{base}/run.stderr")):
                    if os.path.exists(path):
                        lines = open(path, errors="replace").read().splitlines()
                        f.write(f"\n--- {label} (last {min(len(lines), 60)} of {len(lines)} lines)\n")
                        f.write("\n".join(lines[-60:]) + "\n")
        n += 1
print(f"ycsb bench: {n} points written to {out}", file=sys.stderr)
PY

bench/.venv/bin/python bench/plot_ycsb.py "$out"
exit
}
