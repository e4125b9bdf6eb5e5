#!/usr/bin/env bash
# Makes bench/trace/tpch_q3_sf<SF>.trace, the real query IO trace of issue 7 that
# `rampart bench replay` replays: TPC-H data at scale factor SF from DuckDB's tpch
# extension, loaded into SQLite with 16 KiB pages, then TPC-H Q3 run by the sqlite3 CLI
# on a cold cache under strace, which records every pread64 of the database file.
#
# Needs the Debian packages (checked below; not in scripts/install-deps.sh, since the
# trace is made once and committed, and no build or test runs this script):
#   sqlite3 strace python3 python3-venv      apt-get install sqlite3 strace python3-venv
# and from PyPI, into bench/trace/.venv: bench/trace/requirements.txt (duckdb, pinned).
#
# Usage: bench/trace/make_trace.sh [SF]     (SF default 0.5; REGEN=1 rebuilds the database)
# Committed: SF 0.5 (the replay trace) and SF 0.1 (a small one). See bench/trace/README.md.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -e/p' "$0" | grep '^#' | cut -c3-; exit 0;; esac
cd "$(dirname "$0")/../.."

sf=${1:-0.5}
page_size=16384
dir=bench/trace
db=$dir/tpch_sf$sf.db                 # not committed (.gitignore)
raw=$dir/tpch_q3_sf$sf.strace         # raw strace log, not committed
cli_out=$dir/tpch_q3_sf$sf.q3.out     # the traced run's Q3 rows, not committed
out=$dir/tpch_q3_sf$sf.trace          # committed

missing=()
for t in sqlite3 strace python3; do command -v "$t" >/dev/null || missing+=("$t"); done
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  echo "make_trace.sh: missing ${missing[*]}: apt-get install sqlite3 strace python3 python3-venv" >&2
  exit 1
fi

py=$dir/.venv/bin/python
if [ ! -x "$py" ] || ! "$py" -m pip freeze 2>/dev/null | grep -qxF -f <(grep -v '^#' $dir/requirements.txt); then
  python3 -m venv $dir/.venv
  $dir/.venv/bin/pip install -q -r $dir/requirements.txt
fi

if [ "${REGEN:-0}" = 1 ] || [ ! -s "$db" ] || [ ! -s "$db.q3ref.out" ]; then
  echo "== TPC-H sf $sf: dbgen (DuckDB) -> SQLite $db, page_size $page_size"
  rm -f "$db" "$db".*.out
  "$py" $dir/tpch_trace.py load --sf "$sf" --db "$db" --page-size $page_size
else
  echo "== reusing $db (REGEN=1 to rebuild)"
fi

# Cold cache: a fresh sqlite3 process has an empty page cache (the trace is SQLite's own
# reads, whatever the OS holds); the file's OS pages are dropped too so that the run
# really goes to the device if anyone times it.
"$py" - "$db" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(fd)
PY

# mmap_size=0 (the build's default, set anyway) so every page comes through pread64;
# read/readv/preadv are traced too, to prove none of the file's reads go by them.
run=(strace -f -y -s 0 -e trace=pread64,read,readv,preadv,preadv2 -o "$raw"
     sqlite3 -readonly -batch -bail
     -cmd '.output /dev/null' -cmd 'PRAGMA mmap_size=0' -cmd '.output stdout'
     "$db")
echo "== $(printf '%q ' "${run[@]}")< $dir/q3.sql"
"${run[@]}" < $dir/q3.sql > "$cli_out"
cat "$cli_out"

"$py" $dir/tpch_trace.py trace --raw "$raw" --db "$db" --out "$out" --sf "$sf" \
  --cli-out "$cli_out" --cmd "$(printf '%q ' "${run[@]}")< $dir/q3.sql"
"$py" $dir/tpch_trace.py check "$out"
