"""Keyspace commands through the Redis-protocol proxy, with Redis 7.0
semantics: KEYS (Redis's glob: ?, *, classes with ranges and ^, escapes,
binary bytes), SCAN (to cursor 0; MATCH, COUNT, TYPE; every key present for
the whole iteration is listed at least once, repeats allowed: compared as
sets), RANDOMKEY (an existing key; nil on an empty db is not testable on a
shared db), COPY (REPLACE, DB 0, every type small and large, with its TTL),
RENAME / RENAMENX (the TTL moves, the same name, a destination of another
type), OBJECT ENCODING / FREQ / REFCOUNT / IDLETIME / HELP as far as Redis
and the proxy agree (an encoding is only one of Redis's names), MEMORY USAGE
(an integer, nil for a missing key; SAMPLES) and MEMORY HELP, CONFIG SET
of Redis's tuning parameters (read back by CONFIG GET; all or nothing), and
active expiry: keys with a TTL of 50..200 ms leave DBSIZE, KEYS and SCAN
without being touched. rampart only (proxy_targets("rampart")): user keys
starting with the internal prefix b"\x00\x01" are refused, KEYS / SCAN
never list collection pages, and the pages of a deleted large hash / sorted
set are reclaimed by the sweeper (INFO keyspace's rampart_collection_pages).

Targets as in test_proxy.py: a real redis-server ("redis", the reference
these expectations were validated against, 7.0.15) and the proxy of a
`rampart up` cluster ("rampart"); keys apart by the `key` fixture's prefix.
The db is shared: nothing flushes it, KEYS / SCAN results are filtered on
the test's prefix, and no test leaves keys with a short TTL behind
(test_active_expiry counts on DBSIZE). Error texts compared whole (Raw).
"""
import time

import pytest

from proxy_helpers import Raw, error_text, key, r, rb, scan_chunks  # noqa: F401

rampart_only = pytest.mark.proxy_targets("rampart")

SYNTAX = "ERR syntax error"
NOT_INTEGER = "ERR value is not an integer or out of range"
ARITY = "ERR wrong number of arguments for '{}' command"
TTL_MS = 1_000_000  # long enough to outlive the module's run
KINDS = ("string", "list", "set", "zset", "hash")
# Every OBJECT ENCODING answer Redis 7.0 has for these types.
REDIS_ENCODINGS = {b"int", b"embstr", b"raw", b"quicklist", b"listpack", b"intset",
                   b"hashtable", b"skiplist"}


@pytest.fixture
def c(redis_target):
    """A raw RESP connection: replies as bytes / ints / RespError."""
    with Raw(redis_target) as conn:
        yield conn


def scan_all(rb, **kw):
    """Every key of one full SCAN iteration (bounded), as bytes, repeats kept."""
    def scan(_, cursor, **kw):
        return rb.scan(cursor, **kw)
    return [k for chunk in scan_chunks(scan, None, **kw) for k in chunk]


def scan_keys(rb, prefix, **kw):
    """The keys of scan_all that start with `prefix`, as str (through a
    bytes client: other tests' keys need not be UTF-8)."""
    p = prefix.encode()
    return [k.decode() for k in scan_all(rb, **kw) if k.startswith(p)]


def fill(r, k, kind, n):
    """Writes k as a value of `kind` with n elements (a string of n bytes)."""
    p = r.pipeline(transaction=False)
    if kind == "string":
        p.set(k, "s" * n)
    for i in range(0, n, 500):
        part = range(i, min(n, i + 500))
        if kind == "list":
            p.rpush(k, *[f"e{j}" for j in part])
        elif kind == "set":
            p.sadd(k, *[f"m{j}" for j in part])
        elif kind == "zset":
            p.zadd(k, {f"m{j}": j / 4 for j in part})
        elif kind == "hash":
            p.hset(k, mapping={f"f{j}": f"v{j}" for j in part})
    p.execute()


def contents(r, k, kind):
    return {"string": r.get, "list": lambda k: r.lrange(k, 0, -1), "set": r.smembers,
            "zset": lambda k: r.zrange(k, 0, -1, withscores=True), "hash": r.hgetall}[kind](k)


def mutate(r, k, kind):
    """Changes k's value a little (an element more)."""
    {"string": lambda: r.append(k, "+"), "list": lambda: r.rpush(k, "more"),
     "set": lambda: r.sadd(k, "more"), "zset": lambda: r.zadd(k, {"more": -1}),
     "hash": lambda: r.hset(k, "more", "x")}[kind]()


def assert_ttl_near(r, k, ms=TTL_MS):
    """k's PTTL is ms less the test's run time (-1, no TTL, for ms=None)."""
    pttl = r.pttl(k)
    assert pttl == -1 if ms is None else ms - 10_000 <= pttl <= ms, (k, pttl)


# ---------------------------------------------------------------------------
# KEYS

GLOB_KEYS = ["a", "b", "c", "d", "x", "ab", "abc", "a*b", "a?b", "a[b", "a\\b", "a-b",
             "hello", "hallo", "hxllo", "hllo", "heeeello"]
GLOB_CASES = {
    "*": set(GLOB_KEYS), "?": {"a", "b", "c", "d", "x"}, "??": {"ab"}, "**c": {"c", "abc"},
    "a*": {"a", "ab", "abc", "a*b", "a?b", "a[b", "a\\b", "a-b"},
    "*b": {"b", "ab", "a*b", "a?b", "a[b", "a\\b", "a-b"},
    "*b*": {"b", "ab", "abc", "a*b", "a?b", "a[b", "a\\b", "a-b"},
    "a?b": {"a*b", "a?b", "a[b", "a\\b", "a-b"},
    "[a-c]": {"a", "b", "c"}, "[c-a]": {"a", "b", "c"},  # a reversed range: the same
    "[^x]": {"a", "b", "c", "d"}, "[^a-c]": {"d", "x"}, "[abx]": {"a", "b", "x"},
    "[A-C]": set(),  # case matters
    "h?llo": {"hello", "hallo", "hxllo"}, "h*llo": {"hello", "hallo", "hxllo", "hllo", "heeeello"},
    "h[ae]llo": {"hello", "hallo"}, "h[^e]llo": {"hallo", "hxllo"},
    "a\\*b": {"a*b"}, "a\\?b": {"a?b"}, "a\\[b": {"a[b"}, "a\\\\b": {"a\\b"},
    "\\a": {"a"},  # an escaped ordinary byte is itself
    "a[*?]b": {"a*b", "a?b"}, "a[\\-]b": {"a-b"},  # an escape inside a class
    "a[b": {"ab"},  # a class that the pattern ends ends with it
    "hello*": {"hello"},  # a trailing star matches the empty rest
    "nothing*": set(),
}


def test_keys_glob(r, c, key):
    prefix = key("")
    r.mset({prefix + k: "v" for k in GLOB_KEYS})
    for pattern, want in GLOB_CASES.items():
        got = r.keys(prefix + pattern)
        assert len(got) == len(set(got)), pattern  # KEYS lists a key once
        assert {k[len(prefix):] for k in got} == want, pattern
    assert error_text(c.call("KEYS")) == ARITY.format("keys")
    assert error_text(c.call("KEYS", "a", "b")) == ARITY.format("keys")


def test_keys_binary(rb, key):
    """Binary bytes in keys and patterns; a range's bounds are compared as
    signed chars, as Redis does on x86-64 (so [\\x01-\\xff] is -1..1)."""
    p = key("").encode()
    names = [b"\xff", b"\x00", b"a", b"\x80z", b"\r\n"]
    rb.mset({p + n: b"v" for n in names})
    cases = {b"?": {b"\xff", b"\x00", b"a"}, b"\x80*": {b"\x80z"}, b"\x00": {b"\x00"},
             b"[\x01-\xff]": {b"\xff", b"\x00"}, b"[\x00-\x7f]": {b"\x00", b"a"},
             b"\r?": {b"\r\n"}, b"*": set(names)}
    try:
        for pattern, want in cases.items():
            assert {k[len(p):] for k in rb.keys(p + pattern)} == want, pattern
    finally:
        rb.delete(*[p + n for n in names])  # RANDOMKEY's test reads keys as they come


# ---------------------------------------------------------------------------
# SCAN

def test_scan_match_count(r, rb, key):
    prefix = key("")
    mine = {key(f"k{i}") for i in range(400)}
    r.mset({k: "v" for k in mine})
    for count in (None, 7, 1000):
        assert set(scan_keys(rb, prefix, count=count)) == mine, count
        assert set(scan_keys(rb, prefix, match=prefix + "*", count=count)) == mine, count
    assert set(scan_keys(rb, prefix, match=prefix + "k1?")) == {key(f"k{i}") for i in range(10, 20)}
    assert set(scan_keys(rb, prefix, match=prefix + "k[2-3]5*", count=50)) == {
        k for k in mine if k[len(prefix) + 1:len(prefix) + 3] in ("25", "35")}
    assert scan_keys(rb, prefix, match=prefix + "nothing*") == []


def test_scan_type(r, rb, key):
    prefix = key("")
    for kind in KINDS:
        fill(r, key(f"{kind}-small"), kind, 3)
        fill(r, key(f"{kind}-large"), kind, 600)
    for kind in KINDS:
        want = {key(f"{kind}-small"), key(f"{kind}-large")}
        assert set(scan_keys(rb, prefix, _type=kind)) == want, kind
        assert set(scan_keys(rb, prefix, _type=kind, count=3)) == want, kind
        assert set(scan_keys(rb, prefix, _type=kind, match=prefix + "*-large")) == {
            key(f"{kind}-large")}, kind
    assert scan_keys(rb, prefix, _type="stream") == []
    assert scan_keys(rb, prefix, _type="nosuchtype") == []  # not an error in 7.0
    r.delete(*[key(f"{kind}-large") for kind in KINDS])


def test_scan_type_ignores_case(r, rb, key):
    """Redis 7.0 compares the TYPE filter with strcasecmp."""
    prefix = key("")
    r.set(key("s"), "v")
    r.rpush(key("l"), "a")
    assert set(scan_keys(rb, prefix, _type="STRING")) == {key("s")}
    assert set(scan_keys(rb, prefix, _type="List")) == {key("l")}


def test_scan_keys_present_throughout(r, rb, key):
    """Keys present for the whole iteration are listed (at least once);
    keys deleted or added meanwhile may or may not be; nothing else is."""
    prefix = key("")
    p = prefix.encode()
    keep = {key(f"keep{i}") for i in range(300)}
    gone = {key(f"gone{i}") for i in range(100)}
    new = {key(f"new{i}") for i in range(100)}
    r.mset({k: "v" for k in keep | gone})
    cursor, seen = 0, []
    for calls in range(1, 20_000):
        cursor, chunk = rb.scan(cursor, count=20)
        seen += [k.decode() for k in chunk if k.startswith(p)]
        if calls == 3:
            assert r.delete(*gone) == len(gone)
            r.mset({k: "v" for k in new})
        if cursor == 0:
            break
    assert cursor == 0
    assert keep <= set(seen)
    assert set(seen) <= keep | gone | new


def test_scan_errors(c):
    expected = {("abc",): "ERR invalid cursor", ("0", "COUNT", "0"): SYNTAX,
                ("0", "COUNT", "-1"): SYNTAX, ("0", "COUNT", "x"): NOT_INTEGER,
                ("0", "COUNT"): SYNTAX, ("0", "MATCH"): SYNTAX, ("0", "FOO", "1"): SYNTAX,
                (): ARITY.format("scan")}
    for args, text in expected.items():
        assert error_text(c.call("SCAN", *args)) == text, args


# ---------------------------------------------------------------------------
# RANDOMKEY

def test_randomkey(rb, c, key):
    for i in range(5):
        rb.set(key(f"k{i}"), "v")
    for _ in range(30):
        k = rb.randomkey()
        assert k is not None and rb.exists(k) == 1, k
    assert error_text(c.call("RANDOMKEY", "x")) == ARITY.format("randomkey")


# ---------------------------------------------------------------------------
# COPY

def test_copy_string(r, c, key):
    src, dst, missing = key("src"), key("dst"), key("missing")
    r.set(src, "v1")
    assert c.call("COPY", src, dst) == 1
    assert r.get(dst) == "v1" and r.get(src) == "v1"
    assert r.pttl(dst) == -1
    r.set(src, "v2")
    assert c.call("COPY", src, dst) == 0  # the destination exists, no REPLACE
    assert r.get(dst) == "v1"
    assert c.call("COPY", src, dst, "REPLACE") == 1
    assert r.get(dst) == "v2"
    assert c.call("COPY", missing, key("d2")) == 0
    assert c.call("COPY", missing, dst, "REPLACE") == 0  # nothing to copy: dst stays
    assert r.exists(key("d2")) == 0 and r.get(dst) == "v2"
    assert c.call("COPY", src, key("d3"), "DB", "0") == 1
    assert c.call("copy", src, key("d3"), "replace", "db", "0", "REPLACE") == 1
    assert r.get(key("d3")) == "v2"
    r.append(dst, "+")  # the copy is a value of its own
    assert r.get(src) == "v2" and r.get(dst) == "v2+"


def test_copy_every_type(r, c, key):
    """Small and large values of every type, with and without a TTL; the
    copy equals the source, has its TTL, and changes apart from it."""
    for kind in KINDS:
        for n, ttl in ((3, None), (3, TTL_MS), (1500, TTL_MS)):
            src, dst = key(f"{kind}-{n}-{ttl}-src"), key(f"{kind}-{n}-{ttl}-dst")
            fill(r, src, kind, n)
            if ttl:
                r.pexpire(src, ttl)
            want = contents(r, src, kind)
            assert c.call("COPY", src, dst) == 1, (kind, n)
            assert r.type(dst) == kind
            assert contents(r, dst, kind) == want, (kind, n)
            assert_ttl_near(r, dst, ttl)
            mutate(r, dst, kind)
            assert contents(r, src, kind) == want, (kind, n)
            assert contents(r, dst, kind) != want, (kind, n)
            assert r.delete(src, dst) == 2


def test_copy_replace_other_type(r, c, key):
    src, dst = key("src"), key("dst")
    r.rpush(src, "a", "b")
    r.set(dst, "string", px=TTL_MS)
    assert c.call("COPY", src, dst) == 0
    assert r.get(dst) == "string"
    assert c.call("COPY", src, dst, "REPLACE") == 1
    assert r.type(dst) == "list" and r.lrange(dst, 0, -1) == ["a", "b"]
    assert r.pttl(dst) == -1  # the source's TTL (none), not the old one
    r.delete(src)
    fill(r, src, "hash", 700)
    fill(r, dst, "list", 700)
    assert c.call("COPY", src, dst, "REPLACE") == 1  # a large list by a large hash
    assert r.hgetall(dst) == r.hgetall(src) and r.hlen(dst) == 700
    assert r.delete(src, dst) == 2


def test_copy_errors(r, c, key):
    src, dst, missing = key("src"), key("dst"), key("missing")
    r.set(src, "v")
    same = "ERR source and destination objects are the same"
    db_range = "ERR DB index is out of range"  # the target has one database, as rampart
    expected = {
        (src, dst, "DB", "1"): db_range, (src, dst, "DB", "-1"): db_range,
        (src, dst, "DB", "x"): NOT_INTEGER, (src, dst, "DB"): SYNTAX, (src, dst, "FOO"): SYNTAX,
        (src, dst, "REPLACE", "FOO"): SYNTAX, (src, src): same, (src, src, "DB", "0"): same,
        (missing, missing): same, (src, src, "FOO"): SYNTAX,  # options are read first
        (src,): ARITY.format("copy"),
    }
    for args, text in expected.items():
        assert error_text(c.call("COPY", *args)) == text, args
    assert r.exists(dst) == 0
    assert c.call("COPY", src, dst, "DB", "0") == 1


# ---------------------------------------------------------------------------
# RENAME, RENAMENX

def test_rename(r, c, key):
    a, b = key("a"), key("b")
    r.set(a, "v", px=TTL_MS)
    assert c.call("RENAME", a, b) == b"OK"
    assert r.exists(a) == 0 and r.get(b) == "v"
    assert_ttl_near(r, b)  # the TTL moves with the key
    r.set(a, "w")
    assert c.call("RENAME", a, b) == b"OK"  # over b: b's TTL goes with its value
    assert r.get(b) == "w" and r.pttl(b) == -1
    assert c.call("RENAME", b, b) == b"OK"  # the same name: nothing changes
    assert c.call("RENAMENX", b, b) == 0
    assert r.get(b) == "w"
    r.set(a, "x", px=TTL_MS)
    assert c.call("RENAMENX", a, b) == 0  # the destination exists
    assert r.get(a) == "x" and r.get(b) == "w"
    assert c.call("RENAMENX", a, key("c")) == 1
    assert r.exists(a) == 0 and r.get(key("c")) == "x"
    assert_ttl_near(r, key("c"))


def test_rename_errors(c, key):
    missing, b = key("missing"), key("b")
    for cmd in ("RENAME", "RENAMENX"):
        assert error_text(c.call(cmd, missing, b)) == "ERR no such key"
        assert error_text(c.call(cmd, missing, missing)) == "ERR no such key"
        assert error_text(c.call(cmd, missing)) == ARITY.format(cmd.lower())
    assert c.call("EXISTS", b) == 0


def test_rename_every_type(r, c, key):
    """Small and large values of every type with a TTL, renamed over a key
    of another type and back; a new value at the old name is a new value."""
    for kind in KINDS:
        for n in (3, 1500):
            src, dst = key(f"{kind}-{n}-src"), key(f"{kind}-{n}-dst")
            fill(r, src, kind, n)
            r.pexpire(src, TTL_MS)
            fill(r, dst, "list" if kind == "hash" else "hash", 5)
            want = contents(r, src, kind)
            assert c.call("RENAME", src, dst) == b"OK", (kind, n)
            assert r.exists(src) == 0
            assert r.type(dst) == kind and contents(r, dst, kind) == want, (kind, n)
            assert_ttl_near(r, dst)
            fill(r, src, kind, 2)  # nothing of the renamed value is left at src
            assert contents(r, src, kind) != want and r.pttl(src) == -1, (kind, n)
            assert c.call("RENAMENX", dst, src) == 0
            assert r.delete(src) == 1
            assert c.call("RENAMENX", dst, src) == 1, (kind, n)
            assert r.exists(dst) == 0 and contents(r, src, kind) == want, (kind, n)
            assert_ttl_near(r, src)
            assert r.delete(src) == 1


# ---------------------------------------------------------------------------
# OBJECT

FREQ_ERROR = ("ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
              "Please note that when switching between policies at runtime LRU and LFU data "
              "will take some time to adjust.")


def test_object(r, c, key):
    missing = key("missing")
    for sub in ("ENCODING", "FREQ", "REFCOUNT", "IDLETIME", "encoding"):
        assert c.call("OBJECT", sub, missing) is None, sub
    r.mset({key("int"): "12345", key("embstr"): "short", key("raw"): "x" * 100})
    names = ["int", "embstr", "raw"]
    for kind in KINDS[1:]:
        for n in (3, 600):
            fill(r, key(f"{kind}{n}"), kind, n)
            names.append(f"{kind}{n}")
    for name in names:
        k = key(name)
        assert c.call("OBJECT", "ENCODING", k) in REDIS_ENCODINGS, name
        refcount = c.call("OBJECT", "REFCOUNT", k)
        assert isinstance(refcount, int) and refcount >= 1, (name, refcount)
        idle = c.call("OBJECT", "IDLETIME", k)
        assert isinstance(idle, int) and idle >= 0, (name, idle)
        assert error_text(c.call("OBJECT", "FREQ", k)) == FREQ_ERROR, name
    for kind in KINDS[1:]:
        r.delete(key(f"{kind}600"))
    help_lines = c.call("OBJECT", "HELP")
    assert help_lines[0] == b"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    for sub in (b"ENCODING", b"FREQ", b"IDLETIME", b"REFCOUNT"):
        assert sub + b" <key>" in help_lines, sub
    assert error_text(c.call("OBJECT")) == ARITY.format("object")


# ---------------------------------------------------------------------------
# MEMORY

MEMORY_HELP_FIRST = b"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"


def test_memory_usage(r, c, key):
    """MEMORY USAGE answers an integer for a key of any type (the sizes are
    the server's own: only compared with each other), nil for a missing one."""
    assert c.call("MEMORY", "USAGE", key("missing")) is None
    assert c.call("MEMORY", "USAGE", key("missing"), "SAMPLES", "5") is None
    assert r.memory_usage(key("missing")) is None
    r.set(key("small"), "s")
    r.set(key("large"), "x" * 1000)
    small = c.call("MEMORY", "USAGE", key("small"))
    large = c.call("MEMORY", "USAGE", key("large"))
    assert isinstance(small, int) and small > 0, small
    assert isinstance(large, int) and large >= 1000 and large > small, (small, large)
    for kind in KINDS[1:]:
        k = key(kind)
        fill(r, k, kind, 3)
        for args in ((), ("SAMPLES", "0"), ("SAMPLES", "5"), ("samples", "1")):
            used = c.call("MEMORY", "USAGE", k, *args)
            assert isinstance(used, int) and used > 0, (kind, args, used)
    assert c.call("MEMORY", "usage", key("small")) == small  # any case
    assert r.memory_usage(key("large"), samples=5) == large  # redis-py's form
    assert r.get(key("large")) == "x" * 1000  # nothing changed


def test_memory_errors_and_help(c, key):
    k = key()
    c.call("SET", k, "v")
    expected = {
        ("USAGE", k, "SAMPLES", "-1"): SYNTAX,
        ("USAGE", k, "SAMPLES", "x"): NOT_INTEGER,
        ("USAGE", k, "SAMPLES"): SYNTAX,
        ("USAGE", k, "FOO", "1"): SYNTAX,
    }
    for args, text in expected.items():
        assert error_text(c.call("MEMORY", *args)) == text, args
    assert error_text(c.call("MEMORY")) == ARITY.format("memory")
    help_lines = c.call("MEMORY", "HELP")
    assert help_lines[0] == MEMORY_HELP_FIRST
    assert b"USAGE <key> [SAMPLES <count>]" in help_lines
    assert c.call("MEMORY", "help")[0] == MEMORY_HELP_FIRST


# ---------------------------------------------------------------------------
# CONFIG SET of Redis's tuning parameters

TUNING = {"hash-max-ziplist-entries": "16", "zset-max-listpack-entries": "64",
          "set-max-intset-entries": "256", "lazyfree-lazy-user-del": "yes",
          "slowlog-max-len": "64"}


def test_config_set_tuning(r, c):
    before = {name: r.config_get(name)[name] for name in TUNING}
    try:
        assert c.call("CONFIG", "SET", "hash-max-ziplist-entries", "16") == b"OK"
        assert r.config_get("hash-max-ziplist-entries") == {"hash-max-ziplist-entries": "16"}
        assert c.call("CONFIG", "SET", "Slowlog-Max-Len", "99") == b"OK"  # names ignore case
        assert r.config_get("slowlog-max-len") == {"slowlog-max-len": "99"}
        args = [x for pair in TUNING.items() for x in pair]
        assert c.call("CONFIG", "SET", *args) == b"OK"  # several at once
        for name, value in TUNING.items():
            assert r.config_get(name) == {name: value}, name
        # An unknown parameter fails the whole command: nothing is set.
        assert error_text(c.call("CONFIG", "SET", "slowlog-max-len", "99",
                                 "no-such-parameter", "1")) == (
            "ERR Unknown option or number of arguments for CONFIG SET - 'no-such-parameter'")
        assert r.config_get("slowlog-max-len") == {"slowlog-max-len": "64"}
        assert error_text(c.call("CONFIG", "SET", "slowlog-max-len")) == ARITY.format("config|set")
        # Past the arity (-4), a name without a value is a syntax error.
        assert error_text(c.call("CONFIG", "SET", "slowlog-max-len", "1", "hz")) == SYNTAX
        assert r.config_get("slowlog-max-len") == {"slowlog-max-len": "64"}
    finally:
        for name, value in before.items():
            r.config_set(name, value)


# ---------------------------------------------------------------------------
# Active expiry

def test_active_expiry(r, rb, key):
    """Keys with a TTL of 50..200 ms (strings, and collections small and
    large) leave DBSIZE within a bounded wait while nothing reads them, and
    then KEYS and SCAN list none of them; a key without TTL stays."""
    prefix = key("")
    baseline = r.dbsize()  # the module's other keys have no short TTL
    keep = key("keep")
    r.set(keep, "v")
    p = r.pipeline(transaction=False)
    for i in range(150):
        p.set(key(f"s{i}"), "v", px=50 + i)
    p.execute()
    for kind in KINDS[1:]:
        for n in (3, 600):
            fill(r, key(f"{kind}{n}"), kind, n)
            assert r.pexpire(key(f"{kind}{n}"), 200)
    deadline = time.monotonic() + 10
    while (size := r.dbsize()) > baseline + 1:
        assert time.monotonic() < deadline, f"DBSIZE {size}, not {baseline + 1}, after 10 s"
        time.sleep(0.05)
    assert r.keys(prefix + "*") == [keep]
    assert set(scan_keys(rb, prefix, count=50)) == {keep}
    assert r.get(keep) == "v"


# ---------------------------------------------------------------------------
# rampart only: its internal keys

RESERVED = "ERR rampart: keys starting with the bytes 00 01 are reserved for collection pages"


@rampart_only
def test_reserved_internal_prefix(c, key):
    bad = b"\x00\x01" + key().encode()
    src, ok = key("src"), key("ok")
    c.call("SET", src, "v")
    calls = [("SET", bad, "v"), ("GET", bad), ("HSET", bad, "f", "v"), ("SADD", bad, "m"),
             ("ZADD", bad, "1", "m"), ("RPUSH", bad, "a"), ("DEL", bad), ("EXISTS", bad),
             ("COPY", src, bad), ("RENAME", src, bad), ("OBJECT", "ENCODING", bad),
             ("MSET", ok, "v", bad, "v"), ("SET", b"\x00\x01", "v")]
    for call in calls:
        assert error_text(c.call(*call)) == RESERVED, call
    assert c.call("EXISTS", ok) == 0  # the refused MSET wrote nothing
    assert c.call("GET", src) == b"v"  # nor did COPY / RENAME move it
    for good in (b"\x00\x02", b"\x01\x00", b"\x00", b"\x01"):
        k = good + key().encode()
        assert c.call("SET", k, "v") == b"OK", good
        assert c.call("GET", k) == b"v", good
        assert c.call("DEL", k) == 1, good


@rampart_only
def test_collection_pages_reclaimed(r, rb, key):
    """A hash and a sorted set of 2000 members of 100 bytes take many pages,
    which KEYS / SCAN never list; once both are gone (DEL; SET over the
    sorted set, then DEL) the page sweeper deletes the pages (1024 keys per
    100 ms) and rampart_collection_pages drops back within a bounded wait."""
    def pages():
        return r.info("keyspace")["rampart_collection_pages"]

    prefix = key("")
    h, z = key("h"), key("z")
    before = pages()
    p = r.pipeline(transaction=False)
    for i in range(0, 2000, 250):
        p.hset(h, mapping={f"f{j:05d}": "x" * 100 for j in range(i, i + 250)})
        p.zadd(z, {f"{j:05d}" + "y" * 95: j for j in range(i, i + 250)})
    p.execute()
    assert r.hlen(h) == 2000 and r.zcard(z) == 2000
    grown = pages()
    assert grown > before + 10, (before, grown)
    assert rb.keys(b"\x00\x01*") == []
    assert not [k for k in scan_all(rb, count=500) if k.startswith(b"\x00\x01")]
    assert set(scan_keys(rb, prefix)) == {h, z}
    assert r.delete(h) == 1
    assert r.set(z, "a string now")
    assert r.delete(z) == 1
    deadline = time.monotonic() + 30
    while (now := pages()) > before:
        assert time.monotonic() < deadline, f"{now} pages left of {grown}, {before} before"
        time.sleep(0.1)
