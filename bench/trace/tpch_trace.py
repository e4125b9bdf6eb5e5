#!/usr/bin/env python3
"""Helper of bench/trace/make_trace.sh (run with bench/trace/.venv/bin/python).

  load  --sf SF --db DB [--page-size N]
        TPC-H data from DuckDB's built-in tpch extension (CALL dbgen), loaded into a new
        SQLite database DB with PRAGMA page_size=N (Python's sqlite3), primary keys, ANALYZE.
        Checks Q3 (q3.sql) in SQLite against DuckDB's own Q3 (PRAGMA tpch(3)) on the same
        data and writes DuckDB's rows to DB.q3ref.out for the `trace` step to compare.
  trace --raw STRACE --db DB --out TRACE --sf SF --cli-out FILE [--cmd TEXT]
        Turns an `strace -y` log into the trace: one `offset length` per read of DB, in
        order, under `#` header comments; checks the CLI's Q3 rows against DB.q3ref.out;
        validates the trace and prints its summary.
  check TRACE
        Validates a written trace against its own header (no database needed) and prints
        the summary.
"""
import argparse
import datetime
import os
import re
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
Q3_SQL = os.path.join(HERE, "q3.sql")

# TPC-H primary keys (spec 1.4.2). Single integer keys become the rowid (INTEGER PRIMARY
# KEY); the two composite keys get SQLite's automatic unique index.
PKEYS = {
    "region": ["r_regionkey"],
    "nation": ["n_nationkey"],
    "part": ["p_partkey"],
    "supplier": ["s_suppkey"],
    "partsupp": ["ps_partkey", "ps_suppkey"],
    "customer": ["c_custkey"],
    "orders": ["o_orderkey"],
    "lineitem": ["l_orderkey", "l_linenumber"],
}
TABLES = list(PKEYS)  # load order: small tables first, lineitem last


def die(msg):
    print(f"tpch_trace: {msg}", file=sys.stderr)
    sys.exit(1)


def q3_text():
    with open(Q3_SQL) as f:
        return f.read()


def norm_rows(rows):
    """Q3 rows compared at cent precision: (orderkey, revenue, date, shippriority)."""
    return [(int(k), round(float(r), 2), str(d), int(p)) for k, r, d, p in rows]


def cmd_load(a):
    import duckdb

    if os.path.exists(a.db):
        os.unlink(a.db)
    con = duckdb.connect()
    ext = con.execute(
        "select loaded, install_path from duckdb_extensions() where extension_name = 'tpch'"
    ).fetchone()
    if not ext or ext[1] != "(BUILT-IN)":
        die(f"duckdb {duckdb.__version__} has no built-in tpch extension ({ext}); "
            "bench/trace/requirements.txt pins a wheel that links it in")
    con.execute("LOAD tpch")
    con.execute(f"CALL dbgen(sf = {float(a.sf)!r})")

    db = sqlite3.connect(a.db, isolation_level=None)
    db.execute(f"PRAGMA page_size = {int(a.page_size)}")
    db.execute("PRAGMA journal_mode = OFF")  # bulk load of a fresh file
    db.execute("PRAGMA synchronous = OFF")
    counts = {}
    for t in TABLES:
        cols = con.execute(f"DESCRIBE {t}").fetchall()  # name, type, ...
        decl, sel = [], []
        pk = PKEYS[t]
        for name, typ, *_ in cols:
            typ = typ.upper()
            if typ in ("INTEGER", "BIGINT", "INT"):
                st, expr = "INTEGER", name
            elif typ.startswith("DECIMAL") or typ in ("DOUBLE", "FLOAT", "REAL"):
                st, expr = "REAL", f"CAST({name} AS DOUBLE)"
            elif typ == "DATE":
                st, expr = "TEXT", f"strftime({name}, '%Y-%m-%d')"  # 'YYYY-MM-DD'
            else:
                st, expr = "TEXT", name
            if pk == [name] and st == "INTEGER":
                decl.append(f"{name} INTEGER PRIMARY KEY")
            else:
                decl.append(f"{name} {st} NOT NULL")
            sel.append(expr)
        if len(pk) > 1:
            decl.append(f"PRIMARY KEY ({', '.join(pk)})")
        db.execute(f"CREATE TABLE {t} ({', '.join(decl)})")
        ins = f"INSERT INTO {t} VALUES ({', '.join('?' * len(sel))})"
        res = con.execute(f"SELECT {', '.join(sel)} FROM {t} ORDER BY {', '.join(pk)}")
        n = 0
        db.execute("BEGIN")
        while True:
            batch = res.fetchmany(50000)
            if not batch:
                break
            db.executemany(ins, batch)
            n += len(batch)
        db.execute("COMMIT")
        counts[t] = n
        print(f"  {t:9s} {n:>9d} rows", flush=True)
    db.execute("ANALYZE")
    db.execute("PRAGMA journal_mode = DELETE")
    got = norm_rows(db.execute(q3_text()).fetchall())
    plan = db.execute("EXPLAIN QUERY PLAN " + q3_text()).fetchall()
    db.close()

    ref = norm_rows(con.execute("PRAGMA tpch(3)").fetchall())
    if got != ref:
        die(f"Q3 in SQLite differs from DuckDB's PRAGMA tpch(3):\n  sqlite {got}\n  duckdb {ref}")
    with open(a.db + ".q3ref.out", "w") as f:
        for r in ref:
            f.write("|".join(map(str, r)) + "\n")
    with open(a.db + ".plan.out", "w") as f:
        for r in plan:
            f.write(f"{r[3]}\n")
    with open(a.db + ".rows.out", "w") as f:
        f.write(" ".join(f"{t}={n}" for t, n in counts.items()) + "\n")
    print(f"  Q3 in SQLite = DuckDB's PRAGMA tpch(3) ({len(ref)} rows); "
          f"{os.path.getsize(a.db)} bytes in {a.db}")


# strace -y -s 0 lines, e.g.
#   1234  pread64(3</work/x.db>, ""..., 16384, 32768) = 16384
#   1234  read(3</work/x.db>, ""..., 4096) = 4096
LINE = re.compile(r"^(?:\d+\s+)?(\w+)\((\d+)<(.*)>, .*\) += (-?\d+)")
PREAD = re.compile(r", (\d+), (\d+)\) += (-?\d+)")


def parse_strace(path, db):
    reads, other, short = [], 0, 0
    with open(path) as f:
        for line in f:
            if "unfinished" in line or "resumed" in line:
                die(f"interleaved strace line (threads?): {line.strip()}")
            m = LINE.match(line)
            if not m or m.group(3) != db:
                continue
            call = m.group(1)
            if call != "pread64":
                other += 1
                continue
            p = PREAD.search(line)
            length, off, ret = int(p.group(1)), int(p.group(2)), int(p.group(3))
            if ret < 0:
                die(f"failed read: {line.strip()}")
            if ret != length:
                short += 1
            reads.append((off, ret))  # what was really read
    if other:
        die(f"{other} reads of {db} by other calls than pread64: the trace would miss them")
    return reads, short


def summary(reads, page_size, db_size):
    n = len(reads)
    total = sum(l for _, l in reads)
    pages = {o // page_size for o, _ in reads}
    seq = runs = 0
    in_runs = 0
    run_len = 1
    for i in range(1, n + 1):
        if i < n and reads[i][0] == reads[i - 1][0] + reads[i - 1][1]:
            seq += 1
            run_len += 1
            continue
        if run_len >= 2:
            runs += 1
            in_runs += run_len
        run_len = 1
    sizes = {}
    for _, l in reads:
        sizes[l] = sizes.get(l, 0) + 1
    db_pages = db_size // page_size
    return [
        f"reads {n}, bytes {total} ({total / 2**20:.1f} MiB)",
        f"distinct pages {len(pages)} of {db_pages} in the file ({100 * len(pages) / max(db_pages, 1):.1f}%),"
        f" re-reads {n - len(pages)}",
        "read sizes " + ", ".join(f"{s} B x{c}" for s, c in sorted(sizes.items(), key=lambda x: -x[1])),
        f"sequential (offset = previous offset + length) {seq} = {100 * seq / max(n, 1):.1f}% of reads;"
        f" {runs} sequential runs (>= 2 reads) holding {in_runs} reads = {100 * in_runs / max(n, 1):.1f}%",
    ]


def validate(reads, page_size, db_size):
    bad = [(o, l) for o, l in reads if o < 0 or l <= 0 or o + l > db_size]
    if bad:
        die(f"{len(bad)} reads outside the {db_size}-byte file, first {bad[0]}")
    odd = [(o, l) for o, l in reads if l != page_size or o % page_size]
    # SQLite's own small reads of the header on page 1 (100 B at 0, 16 B at 24) are kept:
    # they are what it really read. Anything else off the page grid is an error.
    if any(o + l > page_size for o, l in odd):
        die(f"unaligned reads beyond page 1: {[x for x in odd if x[0] + x[1] > page_size][:5]}")
    return odd


def tool_version(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True).stdout.splitlines()[0].strip()
    except (OSError, IndexError):
        return "?"


def cmd_trace(a):
    import duckdb

    db = os.path.realpath(a.db)
    db_size = os.path.getsize(db)
    with open(db, "rb") as f:
        hdr = f.read(100)
    page_size = int.from_bytes(hdr[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    reads, short = parse_strace(a.raw, db)
    if not reads:
        die(f"no pread64 of {db} in {a.raw}")
    odd = validate(reads, page_size, db_size)

    with open(db + ".q3ref.out") as f:
        ref = [tuple(l.strip().split("|")) for l in f if l.strip()]
    with open(a.cli_out) as f:
        got = [tuple(l.strip().split("|")) for l in f if l.strip()]
    if norm_rows(got) != norm_rows(ref):
        die(f"the traced sqlite3 run's Q3 rows differ from DuckDB's:\n  {got}\n  {ref}")
    with open(db + ".plan.out") as f:
        plan = [l.rstrip("\n") for l in f]
    with open(db + ".rows.out") as f:
        rows = f.read().strip()

    stats = summary(reads, page_size, db_size)
    hdr = [
        "rampart IO trace: TPC-H Q3 on SQLite, the page reads of the database file",
        "format: one `offset length` per line (bytes, decimal), each a pread64 of the",
        "  database file in the order SQLite issued it; `#` lines are comments",
        f"made by bench/trace/make_trace.sh {a.sf} on "
        f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"data: TPC-H sf {a.sf}, DuckDB {duckdb.__version__} built-in tpch extension (CALL dbgen)",
        f"  rows: {rows}",
        f"database: SQLite, PRAGMA page_size={page_size}, loaded by Python sqlite3"
        f" (SQLite {sqlite3.sqlite_version}); TPC-H primary keys, ANALYZE; dates as 'YYYY-MM-DD' TEXT",
        f"  file size {db_size} bytes = {db_size // page_size} pages",
        "query: TPC-H Q3 (bench/trace/q3.sql), SEGMENT='BUILDING', DATE=1995-03-15;"
        " result checked against DuckDB's PRAGMA tpch(3)",
        "plan: " + " / ".join(plan),
        f"run: {a.cmd}",
        f"  fresh sqlite3 process (cold SQLite page cache, default cache_size=-2000, mmap_size=0),",
        "  the file's OS page cache dropped first (posix_fadvise DONTNEED)",
        f"tools: sqlite3 CLI {tool_version(['sqlite3', '--version']).split(' ')[0]}"
        f" (Debian sqlite3), strace {tool_version(['strace', '-V']).split()[-1]} (Debian strace),"
        f" Python {sys.version.split()[0]}, kernel {os.uname().release}",
        f"reads that returned fewer bytes than asked: {short}; reads off the {page_size}-byte"
        f" grid (SQLite's header reads on page 1): {len(odd)}",
    ] + ["summary: " + s for s in stats]
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        for h in hdr:
            f.write(f"# {h}\n")
        for o, l in reads:
            f.write(f"{o} {l}\n")
    os.replace(tmp, a.out)
    print(f"wrote {a.out} ({os.path.getsize(a.out)} bytes)")
    for s in stats:
        print("  " + s)


def cmd_check(a):
    db_size = page_size = None
    reads = []
    with open(a.trace) as f:
        for line in f:
            if line.startswith("#"):
                m = re.search(r"file size (\d+) bytes", line)
                db_size = int(m.group(1)) if m else db_size
                m = re.search(r"page_size=(\d+)", line)
                page_size = int(m.group(1)) if m else page_size
                continue
            o, l = line.split()
            reads.append((int(o), int(l)))
    if db_size is None or page_size is None:
        die("header lacks the file size or page size")
    validate(reads, page_size, db_size)
    print(f"{a.trace}: valid against a {db_size}-byte file of {page_size}-byte pages")
    for s in summary(reads, page_size, db_size):
        print("  " + s)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="sub", required=True)
    p = sub.add_parser("load")
    p.add_argument("--sf", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--page-size", type=int, default=16384)
    p.set_defaults(fn=cmd_load)
    p = sub.add_parser("trace")
    for k in ("--raw", "--db", "--out", "--sf", "--cli-out"):
        p.add_argument(k, required=True)
    p.add_argument("--cmd", default="?")
    p.set_defaults(fn=cmd_trace)
    p = sub.add_parser("check")
    p.add_argument("trace")
    p.set_defaults(fn=cmd_check)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
