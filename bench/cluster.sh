# Shared by the bench/ scripts that run a local cluster (source it):
#   bench_venv               bench/.venv with bench/requirements.txt
#   bench_init BIN           temp dir $tmp (removed on exit, with the cluster
#                            stopped by PID), BIN copied to $bin, bench_venv
#   start_cluster BACKEND    writes a cluster file for $nodes nodes x
#                            $partitions partitions (backend, $spin_us,
#                            $cluster_name), starts `rampart up` on it and
#                            waits for "ready"; sets $config. Retried: a port
#                            can be taken between the check and the bind.
#   start_proxy_cluster NAME [LINE...]
#                            `rampart up` with 4 kv-nodes x 1 partition and the proxy,
#                            every other setting at its default (LINEs: more
#                            "key = value" lines for [kv]); sets $proxy_port
#   start_redis_server [ARG...]
#                            one redis-server with ARGs (e.g. --save ""); sets
#                            $redis_port and $redis_pid (stop it with stop_pid)
#   start_up FILE, wait_up_ready
#                            the two steps of start_cluster, for callers that
#                            write their own cluster file
#   stop_cluster             SIGTERM by PID and wait
#   stop_up_children         SIGKILL what `up` started, after `up` itself was killed
#   wait_ping PORT WHAT PID  up to 10 s for a redis PONG on 127.0.0.1:PORT
#   wait_listen PORT PID LOG WHAT
#                            up to 5 s for PID to listen on PORT (a storage node); exits
#                            with LOG when it dies or does not
#   wait_child PID           waits for a background client (its PID in $client_pid meanwhile)
# Callers set nodes, partitions, spin_us and cluster_name first.

bench_init() {
  tmp=$(mktemp -d)
  up_pid=""
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  cp "$1" "$tmp/rampart"
  bin="$tmp/rampart"
  bench_venv
}

bench_venv() {  # (re)installs when requirements.txt is newer than the venv's stamp
  [ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
  if [ ! bench/.venv/.installed -nt bench/requirements.txt ]; then
    bench/.venv/bin/pip install -q -r bench/requirements.txt
    touch bench/.venv/.installed
  fi
}

stop_pid() {  # PID [SECONDS]: SIGTERM, up to SECONDS (default 10), then SIGKILL; reaps it
  local pid=$1 limit=${2:-10} i
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 $((limit * 10))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "$(basename "$0"): pid $pid did not stop in $limit s: SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  stop_cluster
  rm -rf "$tmp"
}

# NODES base ports, each with base .. base+PARTITIONS-1 free on 127.0.0.1,
# below the kernel's ephemeral range (scripts/free_ports.py says why).
free_ports() {
  python3 scripts/free_ports.py "$nodes" "$partitions"
}

start_cluster() {  # BACKEND; retried: a port can still be taken between check and bind
  local cfg="$tmp/cluster-$1.toml" attempt id ports
  for attempt in 1 2 3; do
    read -r -a ports <<< "$(free_ports)"
    {
      printf '[cluster]\nname = "%s"\n[transport]\nbackend = "%s"\nspin_us = %d\n' "$cluster_name" "$1" "$spin_us"
      printf '[kv]\npartitions_per_node = %d\narena_bytes = "256MiB"\ngrace_ms = 2000\nlog = "none"\n' "$partitions"
      for id in $(seq 0 $((nodes - 1))); do
        printf '[[nodes]]\nid = %d\nhost = "127.0.0.1"\nport = %d\n' "$id" "${ports[$id]}"
      done
    } > "$cfg"
    start_up "$cfg"
    if wait_up_ready; then config="$cfg"; return 0; fi
    echo "$0: $1 cluster did not start (attempt $attempt):" >&2
    grep -v ' info: ' "$tmp/up.log" >&2 || true
    stop_cluster
  done
  exit 1
}

start_up() {  # CLUSTER_FILE: `rampart up` on it in the background, output in $tmp/up.log; sets up_pid
  "$bin" --config "$1" up > "$tmp/up.log" 2>&1 &
  up_pid=$!
}

wait_up_ready() {  # up to 20 s for `up` to print "ready"; fails early when it exits
  local _
  for _ in $(seq 1 200); do
    grep -q '^ready' "$tmp/up.log" && return 0
    kill -0 "$up_pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '^ready' "$tmp/up.log"
}

wait_ping() {  # PORT WHAT PID: up to 10 s for PONG on 127.0.0.1:PORT
  local port=$1 what=$2 pid=$3 i
  for i in $(seq 1 100); do
    if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then return 0; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "$(basename "$0"): $what on port $port did not answer PING" >&2
  return 1
}

wait_listen() {  # PORT PID LOG WHAT: up to 5 s for PID to listen on 127.0.0.1:PORT; exits with
                 # LOG on stderr when it dies or does not listen
  local port=$1 pid=$2 log=$3 what=$4
  for _ in $(seq 1 100); do
    ss -ltnH "sport = :$port" | grep -q . && return 0
    kill -0 "$pid" 2>/dev/null || { echo "$(basename "$0"): $what exited:" >&2; cat "$log" >&2; exit 1; }
    sleep 0.05
  done
  echo "$(basename "$0"): $what did not listen on port $port in 5 s" >&2
  cat "$log" >&2
  exit 1
}

# A foreground child would hold off the INT/TERM trap until it ends: clients run in the
# background and are waited for with wait_child (wait returns on a signal); $client_pid names
# the one running, for the caller's cleanup to stop.
client_pid=""
wait_child() {  # PID: its exit status
  local rc=0
  client_pid=$1
  wait "$1" || rc=$?
  client_pid=""
  return "$rc"
}

stop_up_children() {  # after `up` itself had to be killed: SIGKILL the children it reported
  # in $tmp/up.log, only those that still run our copy of the binary ($tmp/rampart)
  local child
  [ -f "$tmp/up.log" ] || return 0
  for child in $(grep -o 'pid [0-9]\+' "$tmp/up.log" | awk '{print $2}'); do
    if kill -0 "$child" 2>/dev/null && tr '\0' ' ' < "/proc/$child/cmdline" 2>/dev/null | grep -q "^$tmp/rampart "; then
      echo "$(basename "$0"): child $child of up still runs: SIGKILL" >&2
      kill -KILL "$child" 2>/dev/null || true
    fi
  done
}

start_proxy_cluster() {  # NAME [KV_LINE...]
  local name=$1 p cfg="$tmp/cluster-$1.toml" id line
  shift
  nodes=5 partitions=1
  read -r -a p <<< "$(free_ports)"
  {
    printf '[cluster]\nname = "%s"\n[kv]\npartitions_per_node = 1\ndata_dir = "%s"\n' "$name" "$tmp/data-$name-$RANDOM"
    for line in "$@"; do printf '%s\n' "$line"; done
    printf '[proxy]\nport = %d\n' "${p[4]}"
    for id in 0 1 2 3; do printf '[[nodes]]\nid = %d\nhost = "127.0.0.1"\nport = %d\n' "$id" "${p[$id]}"; done
  } > "$cfg"
  start_up "$cfg"
  wait_up_ready || { cat "$tmp/up.log" >&2; exit 1; }
  proxy_port=${p[4]}
}

start_redis_server() {  # [ARG...]
  local dir
  nodes=1 partitions=1
  redis_port=$(free_ports)
  dir=$(mktemp -d -p "$tmp")
  redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$dir" --daemonize no --logfile "$tmp/redis.log" "$@" &
  redis_pid=$!
  wait_ping "$redis_port" redis-server "$redis_pid"
}

stop_cluster() {
  if [ -n "$up_pid" ]; then kill "$up_pid" 2>/dev/null || true; wait "$up_pid" || true; up_pid=""; fi
}

