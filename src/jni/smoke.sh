#!/usr/bin/env bash
# Smoke test of librampart_jni (the native mode of the YCSB binding), run by
# hand: starts a 4-node ucx cluster with `rampart up` on free ports (no proxy,
# one partition per node), compiles NativeClient + src/jni/NativeClientSmoke.java
# with javac and runs it against the cluster, then stops the cluster.
#
#   ninja -C build/release rampart rampart_jni
#   src/jni/smoke.sh [BUILD_DIR]                       # default build/release
#   JAVA_OPTS=-Xcheck:jni src/jni/smoke.sh build/jni   # also check JNI use
#
# Exit 0 when every check passed ("smoke: OK").
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build/release}" && pwd)
for f in "$build/rampart" "$build/librampart_jni.so"; do
  [ -e "$f" ] || { echo "smoke: $f missing (ninja -C $build rampart rampart_jni)" >&2; exit 2; }
done

work=$(mktemp -d)
up_pid=""
cleanup() {
  if [ -n "$up_pid" ]; then
    kill -TERM "$up_pid" 2>/dev/null || true
    wait "$up_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Five free ports: four nodes and one nobody listens on (the dead cluster).
read -r p0 p1 p2 p3 p4 < <(python3 "$root/scripts/free_ports.py" 5)

cat > "$work/cluster.toml" <<TOML
[transport]
backend = "ucx"
[kv]
partitions_per_node = 1
arena_bytes = "16MiB"
[proxy]
enabled = false
[[nodes]]
id = 0
host = "127.0.0.1"
port = $p0
[[nodes]]
id = 1
host = "127.0.0.1"
port = $p1
[[nodes]]
id = 2
host = "127.0.0.1"
port = $p2
[[nodes]]
id = 3
host = "127.0.0.1"
port = $p3
TOML
cat > "$work/dead.toml" <<TOML
[transport]
backend = "ucx"
connect_timeout_ms = 500
[kv]
partitions_per_node = 1
[proxy]
enabled = false
[[nodes]]
id = 0
host = "127.0.0.1"
port = $p4
TOML

mkdir "$work/classes"
javac -Xlint:all -Werror -d "$work/classes" \
  "$root/ycsb/src/main/java/site/ycsb/db/rampart/NativeClient.java" \
  "$root/ycsb/src/main/java/site/ycsb/db/rampart/RampartException.java" \
  "$root/src/jni/NativeClientSmoke.java"

"$build/rampart" --config "$work/cluster.toml" up > "$work/up.log" 2>&1 &
up_pid=$!
for _ in $(seq 300); do
  grep -q '^ready' "$work/up.log" && break
  kill -0 "$up_pid" 2>/dev/null || { cat "$work/up.log" >&2; echo "smoke: rampart up died" >&2; exit 1; }
  sleep 0.1
done
grep -q '^ready' "$work/up.log" || { cat "$work/up.log" >&2; echo "smoke: cluster not ready" >&2; exit 1; }

# shellcheck disable=SC2086  # JAVA_OPTS is a list of options
java ${JAVA_OPTS:-} -Drampart.jni="$build/librampart_jni.so" -cp "$work/classes" \
  NativeClientSmoke "$work/cluster.toml" "$work/dead.toml"
