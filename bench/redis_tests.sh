#!/usr/bin/env bash
# Runs Redis 7.0's own Tcl test suite (tests/ of the redis source) against a
# Redis-protocol server, unit by unit, in the suite's external-server mode.
#
#   bench/redis_tests.sh HOST PORT [UNIT...]
#   bench/redis_tests.sh --help
#
# UNIT is a path under tests/unit without .tcl (type/list, keyspace, ...), or
# with the unit/ prefix; scripting-eval is scripting's EVAL half (below). Default units:
#   type/string type/incr type/list type/list-2 type/list-3 type/set type/hash type/zset sort
#   keyspace scan expire multi dump bitops bitfield hyperloglog scripting-eval geo pubsub protocol
#   quit info-command slowlog
#
# The suite comes from Debian's source package of redis (the same 7.0.15 that
# Debian's redis-server is built from), fetched once into CACHE:
#   1. a deb-src entry for Debian's archive: if `apt-cache showsrc redis` finds
#      nothing, /etc/apt/sources.list.d/rampart-deb-src.sources is written (the
#      Debian `Types: deb` entries of /etc/apt/sources.list.d/*.sources copied
#      as `Types: deb-src`) and `apt-get update` is run (needs root)
#   2. `apt-get source --download-only redis` (the .dsc, orig.tar.gz, debian.tar.xz)
#   3. `dpkg-source -x redis_*.dsc src` (applies Debian's patches, which touch
#      tests too); without dpkg-source the upstream redis_*.orig.tar.gz is untarred
#   4. tclsh from Debian's `tcl` package (`apt-get install -y tcl`) if absent
# Nothing is fetched when CACHE/src/tests/test_helper.tcl exists.
#
# Each unit runs as
#   tclsh tests/test_helper.tcl --host HOST --port PORT --single unit/UNIT \
#       RT_FLAGS --tags "RT_TAGS" --timeout RT_NOPROGRESS
# under `timeout UNIT_TIMEOUT`, one unit at a time (the external mode uses one
# test client, so one tclsh process drives the target). External mode itself
# skips tests tagged external:skip (and large-memory without --large-memory;
# singledb:skip with --singledb). Before every start_server block the harness
# sends FLUSHALL and FUNCTION FLUSH to the target, and CONFIG GET/SET for the
# block's config overrides: the target must be a throwaway server. Use a fresh
# one per run: a test that fails half-way leaves its CONFIG SET in place (e.g.
# rdb-key-save-delay 2147483647, appendonly yes, set-max-intset-entries 0),
# which fails later tests and can keep a redis-server from shutting down.
# The runner's own test server listens on a free port in 127.0.0.1:21079-21110.
# Tests tagged needs:repl read a SYNC stream: a target that accepts SYNC but
# never sends the RDB leaves them waiting until RT_NOPROGRESS ends the unit.
# Against redis-server, needs:debug tests fail unless it runs with
# --enable-debug-command yes (Debian's default is no).
#
# Environment:
#   RT_FLAGS       default "--singledb --ignore-encoding --ignore-digest --durable"
#                  --singledb: no SELECT (db 0 only); --ignore-encoding: skip
#                  OBJECT ENCODING checks; --ignore-digest: skip DEBUG DIGEST
#                  checks; --durable: an error that is not an assertion (e.g. an
#                  unknown command) fails that one test instead of aborting the unit
#   RT_TAGS        tags to deny, default "-needs:repl -needs:debug
#                  -needs:config-maxmemory -needs:config-resetstat -needs:reset
#                  -needs:save -needs:pfdebug" (what a non-Redis server lacks:
#                  SYNC, DEBUG/OBJECT, CONFIG SET maxmemory, CONFIG RESETSTAT,
#                  RESET, SAVE, PFDEBUG); set RT_TAGS= to deny none
#   RT_EXTRA       more runner arguments, e.g. "--skiptest /SRANDMEMBER.*chain"
#   UNIT_TIMEOUT   wall-clock seconds per unit (default 600); on expiry the unit
#                  is killed and reported as timed out with what it had passed
#   RT_NOPROGRESS  the runner's own --timeout: seconds without a test finishing
#                  before it gives up (default 120)
#   CACHE          where the suite is unpacked (default build/redis-tests)
#   OUT            results directory (default build/redis-tests/results/HOST-PORT)
#   FAIL_LINES     lines of each failure's reason printed (default 4)
#   BASELINE       a summary.json of an earlier run (e.g. against redis-server
#                  with the same flags): tests it passed that this run neither
#                  passed nor failed are listed as NOT RUN (a non-test error in a
#                  start_server block, under --durable, skips the rest of it)
# Writes OUT/<unit>.log (the runner's output), OUT/summary.txt (also printed)
# and OUT/summary.json: per unit passed, failed, ignored (denied by tag),
# skipped, status (ok | failed | aborted | timeout), seconds, and each failure
# with its reason. Exit status 0 when every unit finished without a failure,
# 1 otherwise, 2 on a usage or setup error.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

DEFAULT_UNITS="type/string type/incr type/list type/list-2 type/list-3 type/set type/hash type/zset sort keyspace scan expire multi dump bitops bitfield hyperloglog scripting-eval geo pubsub protocol quit info-command slowlog"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

case "${1:-}" in
  -h|--help) usage; exit 0 ;;
esac
if [ $# -lt 2 ]; then
  echo "usage: bench/redis_tests.sh HOST PORT [UNIT...]   (--help for more)" >&2
  exit 2
fi
HOST=$1 PORT=$2; shift 2
case "$PORT" in ''|*[!0-9]*) echo "PORT must be a number: $PORT" >&2; exit 2 ;; esac
if [ $# -gt 0 ]; then UNITS="$*"; else UNITS=$DEFAULT_UNITS; fi

RT_FLAGS=${RT_FLAGS---singledb --ignore-encoding --ignore-digest --durable}
RT_TAGS=${RT_TAGS--needs:repl -needs:debug -needs:config-maxmemory -needs:config-resetstat -needs:reset -needs:save -needs:pfdebug}
RT_EXTRA=${RT_EXTRA:-}
UNIT_TIMEOUT=${UNIT_TIMEOUT:-600}
RT_NOPROGRESS=${RT_NOPROGRESS:-120}
CACHE=${CACHE:-build/redis-tests}
OUT=${OUT:-$CACHE/results/$HOST-$PORT}
FAIL_LINES=${FAIL_LINES:-4}
case "$CACHE" in /*) ;; *) CACHE=$ROOT/$CACHE ;; esac
case "$OUT" in /*) ;; *) OUT=$ROOT/$OUT ;; esac

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# ---- (a) fetch the suite -----------------------------------------------------
ensure_tclsh() {
  if ! command -v tclsh >/dev/null 2>&1; then
    echo "== installing tclsh: apt-get install -y tcl"
    as_root apt-get install -y tcl >/dev/null
  fi
}

ensure_deb_src() {
  if apt-cache showsrc redis 2>/dev/null | grep '^Package: redis$' >/dev/null; then return; fi
  local f=/etc/apt/sources.list.d/rampart-deb-src.sources tmp
  echo "== no deb-src for redis: writing $f and running apt-get update"
  tmp=$(mktemp)
  # deb822 files: copy each Debian stanza with Types: deb as Types: deb-src
  for s in /etc/apt/sources.list.d/*.sources; do
    [ -e "$s" ] && [ "$s" != "$f" ] || continue
    awk 'BEGIN{RS=""; ORS="\n\n"} /debian\.org/ && /Types:[ \t]*deb([ \t\n]|$)/ {
           sub(/Types:[ \t]*deb/, "Types: deb-src"); print }' "$s" >>"$tmp"
  done
  # one-line sources.list entries
  if [ -f /etc/apt/sources.list ]; then
    grep -E '^deb[[:space:]].*debian\.org' /etc/apt/sources.list |
      sed 's/^deb[[:space:]]/deb-src /' >"$tmp.list" || true
  fi
  if [ -s "$tmp" ]; then as_root cp "$tmp" "$f"; fi
  if [ -s "$tmp.list" ]; then as_root cp "$tmp.list" /etc/apt/sources.list.d/rampart-deb-src.list; fi
  rm -f "$tmp" "$tmp.list"
  as_root apt-get update >/dev/null
  if ! apt-cache showsrc redis 2>/dev/null | grep '^Package: redis$' >/dev/null; then
    echo "apt still knows no source package redis: add a deb-src line by hand" >&2
    exit 2
  fi
}

fetch_suite() {
  if [ -f "$CACHE/src/tests/test_helper.tcl" ]; then return; fi
  ensure_deb_src
  mkdir -p "$CACHE/dl"
  echo "== apt-get source --download-only redis (into $CACHE/dl)"
  # _apt cannot write into root-owned dirs: apt then downloads unsandboxed (a warning only)
  (cd "$CACHE/dl" && apt-get source --download-only redis 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
  local dsc
  dsc=$(ls -t "$CACHE"/dl/redis_*.dsc 2>/dev/null | head -n1 || true)
  [ -n "$dsc" ] || { echo "apt-get source redis fetched no .dsc" >&2; exit 2; }
  rm -rf "$CACHE/src.tmp"
  if command -v dpkg-source >/dev/null 2>&1; then
    echo "== dpkg-source -x $(basename "$dsc")"
    # apt has checked the files against the signed Release; dpkg-source's own
    # check of the .dsc signature needs debian-keyring and only warns without it
    dpkg-source -x "$dsc" "$CACHE/src.tmp" >"$CACHE/dpkg-source.log" 2>&1 ||
      { cat "$CACHE/dpkg-source.log" >&2; exit 2; }
    rm -f "$CACHE"/redis_*.orig.tar.* # dpkg-source links the tarball beside its target
  else
    echo "== no dpkg-source: untarring the upstream tarball (Debian's patches not applied)"
    mkdir -p "$CACHE/src.tmp"
    tar xzf "$(ls "$CACHE"/dl/redis_*.orig.tar.gz | head -n1)" -C "$CACHE/src.tmp" --strip-components=1
  fi
  mv "$CACHE/src.tmp" "$CACHE/src"
  basename "$dsc" .dsc >"$CACHE/src/.rampart-source-version"
}

ensure_tclsh
fetch_suite
SUITE=$CACHE/src
echo "== suite: $SUITE ($(cat "$SUITE/.rampart-source-version" 2>/dev/null || echo unknown))"

# Parses a unit's log (parse unit LOG META N) or writes the summary
# (parse summary OUT HOST PORT VERSION FLAGS TAGS EXTRA UNIT...).
parse() {
  python3 - "$@" <<'PY'
import json, os, re, sys

TAG = re.compile(r'^\[([^\]]+)\]: ?(.*)$')

def parse_log(log, meta):
    unit, rc, secs = open(meta).read().split('\n')[:3]
    rc, secs = int(rc), float(secs)
    passed, failures, ignored, skipped = [], [], 0, 0
    done, abort, cur = False, None, None
    lines = open(log, errors='replace').read().splitlines()
    for line in lines:
        if line.strip() == 'The End':
            break                          # what follows repeats the failures
        m = TAG.match(line)
        if not m:
            if cur is not None:
                cur['reason'].append(line.rstrip())
            continue
        cur = None
        kind, data = m.group(1), m.group(2)
        if kind == 'ok':
            passed.append(re.sub(r' \(\d+ ms\)$', '', data))
        elif kind == 'err':
            name, _, f = data.rpartition(' in tests/')
            if name:
                cur = {'test': name, 'file': 'tests/' + f, 'reason': []}
            else:   # --durable: an error in a start_server block outside any test
                cur = {'test': '(error outside a test: rest of its start_server block not run)',
                       'file': '', 'reason': [data]}
            failures.append(cur)
        elif kind == 'ignore':
            ignored += 1
        elif kind == 'skip':
            skipped += 1
        elif kind == 'exception':
            abort = cur = {'test': '(unit aborted: exception)', 'file': '', 'reason': [data]}
        elif kind == 'TIMEOUT':
            abort = cur = {'test': '(unit aborted: no progress for RT_NOPROGRESS s)', 'file': '', 'reason': []}
        elif re.match(r'^\d+/\d+ done$', kind):
            done = True
    for f in failures + ([abort] if abort else []):
        while f['reason'] and not f['reason'][-1].strip():
            f['reason'].pop()
        # a non-assertion error (--durable) comes as the message cut by 10
        # characters, then Tcl's errorInfo, which starts with the whole message
        r = f['reason']
        if len(r) >= 2 and r[0] and r[1].endswith(r[0]):
            r.pop(0)
    if rc in (124, 137):
        status = 'timeout'
        abort = abort or {'test': '(unit killed: UNIT_TIMEOUT)', 'file': '', 'reason': []}
    elif done and rc == 0 and not failures and not abort:
        status = 'ok'
    elif done and not abort:
        status = 'failed'
    else:
        status = 'aborted'
        if not abort:
            abort = {'test': '(unit aborted)', 'file': '',
                     'reason': [l for l in lines if l.strip()][-6:]}
    return {'unit': unit, 'status': status, 'rc': rc, 'seconds': secs,
            'passed': len(passed), 'failed': len(failures), 'ignored': ignored,
            'skipped': skipped, 'failures': failures, 'abort': abort,
            'passed_tests': passed}

def show(r, n):
    out = ['unit/%-12s %4d passed, %3d failed, %3d ignored, %3d skipped  %-8s %7.1fs'
           % (r['unit'], r['passed'], r['failed'], r['ignored'], r['skipped'],
              r['status'], r['seconds'])]
    for f in r['failures'] + ([r['abort']] if r['abort'] else []):
        out.append('    FAIL %s' % f['test'])
        for l in f['reason'][:n]:
            out.append('         ' + l.strip()[:200])
    return out

mode = sys.argv[1]
if mode == 'unit':
    log, meta, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
    r = parse_log(log, meta)
    json.dump(r, open(log[:-4] + '.json', 'w'), indent=1)
    print('\n'.join(show(r, n)))
else:
    out, host, port, version, flags, tags, extra = sys.argv[2:9]
    units = [u.replace('unit/', '', 1).removesuffix('.tcl') for u in sys.argv[9:]]
    n = int(os.environ.get('FAIL_LINES', '4'))
    res = [json.load(open(os.path.join(out, u.replace('/', '_') + '.json'))) for u in units]
    base = {}
    if os.environ.get('BASELINE'):
        for r in json.load(open(os.environ['BASELINE']))['units']:
            base[r['unit']] = r.get('passed_tests', [])
    txt = ['Redis test suite (%s) against %s:%s' % (version, host, port),
           'flags: %s  tags: %s%s' % (flags, tags, ('  extra: ' + extra) if extra else ''), '']
    for r in res:
        txt += show(r, n)
        if r['unit'] in base:
            seen = set(r['passed_tests']) | {f['test'] for f in r['failures']}
            r['not_run_vs_baseline'] = sorted(set(base[r['unit']]) - seen)
            if r['not_run_vs_baseline']:
                txt.append('    NOT RUN (passed in baseline): %d' % len(r['not_run_vs_baseline']))
                for t in r['not_run_vs_baseline'][:n * 3]:
                    txt.append('         ' + t[:200])
    tot = {k: sum(r[k] for r in res) for k in ('passed', 'failed', 'ignored', 'skipped', 'seconds')}
    tot['units_ok'] = sum(r['status'] == 'ok' for r in res)
    tot['units_aborted'] = sum(r['status'] in ('aborted', 'timeout') for r in res)
    txt += ['', 'units: %d, ok %d, aborted/timed out %d, %.1fs'
            % (len(res), tot['units_ok'], tot['units_aborted'], tot['seconds']),
            '%d passed, %d failed, %d ignored, %d skipped'
            % (tot['passed'], tot['failed'], tot['ignored'], tot['skipped'])]
    open(os.path.join(out, 'summary.txt'), 'w').write('\n'.join(txt) + '\n')
    json.dump({'target': '%s:%s' % (host, port), 'suite': version, 'flags': flags,
               'tags': tags, 'extra': extra, 'totals': tot, 'units': res},
              open(os.path.join(out, 'summary.json'), 'w'), indent=1)
    print('\n'.join(['', '=' * 20 + ' summary ' + '=' * 20] + txt))
    print('written: %s/summary.txt, %s/summary.json' % (out, out))
    sys.exit(0 if tot['units_ok'] == len(res) else 1)
PY
}

# ---- (b) run the units -------------------------------------------------------
# scripting-eval: unit/scripting.tcl runs every test twice, as a FUNCTION and as
# an EVAL (`foreach is_eval {0 1}`); this derived unit is its EVAL half alone,
# for a server that serves EVAL but not functions (rampart).
if [ -f "$SUITE/tests/unit/scripting.tcl" ]; then
  sed 's/^foreach is_eval {0 1} {/foreach is_eval {1} {/' "$SUITE/tests/unit/scripting.tcl" \
    >"$SUITE/tests/unit/scripting-eval.tcl"
fi
mkdir -p "$OUT"
rm -f "$OUT"/*.log "$OUT"/*.meta "$OUT"/*.json "$OUT"/summary.txt
for u in $UNITS; do
  u=${u#unit/}; u=${u%.tcl}
  if [ ! -f "$SUITE/tests/unit/$u.tcl" ]; then
    echo "no such unit: tests/unit/$u.tcl" >&2; exit 2
  fi
done

for u in $UNITS; do
  u=${u#unit/}; u=${u%.tcl}
  name=${u//\//_}
  log=$OUT/$name.log
  echo "== unit/$u against $HOST:$PORT (timeout ${UNIT_TIMEOUT}s)"
  t0=$(date +%s.%N)
  set +e
  # shellcheck disable=SC2086  # RT_FLAGS / RT_EXTRA are word lists
  (cd "$SUITE" && TERM=dumb timeout --kill-after=10 "$UNIT_TIMEOUT" \
      nice -n 10 tclsh tests/test_helper.tcl --host "$HOST" --port "$PORT" \
      --single "unit/$u" $RT_FLAGS --tags "$RT_TAGS" --timeout "$RT_NOPROGRESS" \
      $RT_EXTRA) >"$log" 2>&1 </dev/null
  rc=$?
  set -e
  t1=$(date +%s.%N)
  printf '%s\n%s\n%s\n' "$u" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')" >"$OUT/$name.meta"
  parse unit "$log" "$OUT/$name.meta" "$FAIL_LINES"
done

# ---- (c) summary -------------------------------------------------------------
parse summary "$OUT" "$HOST" "$PORT" \
  "$(cat "$SUITE/.rampart-source-version" 2>/dev/null || echo unknown)" \
  "$RT_FLAGS" "$RT_TAGS" "$RT_EXTRA" $UNITS
