"""Redis 7.0's string and key commands beyond GET/SET through the proxy:
SETNX, SETEX, PSETEX, MSETNX, GETEX, GETDEL, APPEND, GETRANGE, SUBSTR,
SETRANGE, INCRBYFLOAT, SETBIT, GETBIT, BITCOUNT, BITPOS, LCS (against a
model of Redis 7.0's walk, over random strings); EXPIREAT,
PEXPIREAT, EXPIRETIME, PEXPIRETIME, the NX|XX|GT|LT options of the EXPIRE
family, TOUCH, UNLINK and TIME — normal cases, option combinations, wrong
types, exact error texts, edge cases, and the ranges of GETRANGE / BITCOUNT
/ BITPOS against a model of Redis 7.0's index rules over many random cases.

Targets as in test_proxy.py: a real redis-server ("redis", the reference
these expectations were validated against, 7.0.15) and the proxy of a
`rampart up` cluster ("rampart"); keys apart by the `key` fixture's prefix.
Error texts are compared whole, through Raw (redis-py would cut their
prefix).
"""
import random
import time

import pytest

from proxy_helpers import Raw, RespError, encode, key, r, rb  # noqa: F401

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
NOT_INTEGER = "ERR value is not an integer or out of range"
NOT_FLOAT = "ERR value is not a valid float"
SYNTAX = "ERR syntax error"
TOO_LONG = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
MAX_INT64 = 2 ** 63 - 1


@pytest.fixture
def c(redis_target):
    """A raw RESP connection: replies as bytes / ints / RespError."""
    with Raw(redis_target) as conn:
        yield conn


def error_text(reply):
    """The text of an error reply of Raw.call (the reply must be one)."""
    assert isinstance(reply, RespError), f"expected an error reply, got {reply!r}"
    return str(reply)


def now_ms():
    return int(time.time() * 1000)


def assert_ttl_near(r, k, seconds):
    """The key's PTTL is `seconds` (less the test's own run time)."""
    pttl = r.pttl(k)
    assert seconds * 1000 - 5000 <= pttl <= seconds * 1000, (k, pttl)


# ---------------------------------------------------------------------------
# Models of Redis 7.0's range rules (getrangeCommand, bitcountCommand,
# bitposCommand), checked against redis-server by the tests below.

def clamp(start, end, n, reversed_negatives_empty):
    """The inclusive index range start..end means over n items, or None."""
    if reversed_negatives_empty and start < 0 and end < 0 and start > end:
        return None
    if start < 0:
        start += n
    if end < 0:
        end += n
    start, end = max(start, 0), max(end, 0)
    end = min(end, n - 1)
    return None if start > end else (start, end)


def bits_of(s):
    return [(b >> (7 - i)) & 1 for b in s for i in range(8)]


def bit_range(s, start, end, unit, reversed_negatives_empty):
    """The bit range of start..end in `unit` (BYTE or BIT) over s, or None."""
    r = clamp(start, end, len(s) * (8 if unit == "BIT" else 1), reversed_negatives_empty)
    if r is None or unit == "BIT":
        return r
    return r[0] * 8, r[1] * 8 + 7


def model_getrange(s, start, end):
    r = clamp(start, end, len(s), True)
    return b"" if r is None else s[r[0]:r[1] + 1]


def model_bitcount(s, start=0, end=-1, unit="BYTE"):
    r = bit_range(s, start, end, unit, True)
    return 0 if r is None else sum(bits_of(s)[r[0]:r[1] + 1])


def model_bitpos(s, bit, start=0, end=None, unit="BYTE"):
    r = bit_range(s, start, -1 if end is None else end, unit, False)
    if r is None:
        return -1
    bits = bits_of(s)
    for i in range(r[0], r[1] + 1):
        if bits[i] == bit:
            return i
    # Without an end, the string reads as padded with zeros.
    return -1 if bit == 1 or end is not None else r[1] + 1


# ---------------------------------------------------------------------------
# SETNX, SETEX, PSETEX, MSETNX

def test_setnx(r, key):
    assert r.setnx(key(), "v1") is True
    assert r.setnx(key(), "v2") is False
    assert r.get(key()) == "v1"
    r.hset(key("h"), "f", "v")
    assert r.setnx(key("h"), "v") is False  # exists, whatever its type
    assert r.type(key("h")) == "hash"
    r.set(key("old"), "x", px=100)
    time.sleep(0.3)
    assert r.setnx(key("old"), "new") is True  # expired: absent
    assert r.get(key("old")) == "new" and r.ttl(key("old")) == -1


def test_setex_psetex(r, c, key):
    assert r.setex(key(), 100, "v") is True
    assert r.get(key()) == "v"
    assert_ttl_near(r, key(), 100)
    assert r.psetex(key("p"), 100_000, "w") is True
    assert_ttl_near(r, key("p"), 100)
    r.hset(key("h"), "f", "v")
    assert r.setex(key("h"), 100, "s") is True  # overwrites any type
    assert r.type(key("h")) == "string" and r.get(key("h")) == "s"
    r.set(key("t"), "old", ex=5)
    assert r.setex(key("t"), 1000, "new") is True
    assert_ttl_near(r, key("t"), 1000)
    assert r.psetex(key("short"), 150, "v") is True
    time.sleep(0.35)
    assert r.get(key("short")) is None


def test_setex_psetex_errors(r, c, key):
    k = key()
    for name, amount in [("SETEX", "0"), ("SETEX", "-1"), ("PSETEX", "0"), ("PSETEX", "-5"),
                         ("SETEX", str(MAX_INT64)), ("PSETEX", str(MAX_INT64)),
                         ("SETEX", str(MAX_INT64 // 1000))]:  # + now overflows
        assert error_text(c.call(name, k, amount, "v")) == \
            f"ERR invalid expire time in '{name.lower()}' command", (name, amount)
    for amount in ["abc", "1.5", "", " 1", "99999999999999999999"]:
        assert error_text(c.call("SETEX", k, amount, "v")) == NOT_INTEGER
    assert error_text(c.call("SETEX", k, "10")) == \
        "ERR wrong number of arguments for 'setex' command"
    assert error_text(c.call("PSETEX", k, "10", "v", "x")) == \
        "ERR wrong number of arguments for 'psetex' command"
    assert r.exists(k) == 0


def test_msetnx(r, c, key):
    a, b, cc = key("a"), key("b"), key("c")
    assert r.msetnx({a: "1", b: "2"}) is True
    assert r.mget(a, b) == ["1", "2"]
    assert r.msetnx({cc: "3", a: "x"}) is False  # a exists: nothing is set
    assert r.exists(cc) == 0 and r.get(a) == "1"
    r.zadd(key("z"), {"m": 1})
    assert r.msetnx({key("d"): "4", key("z"): "x"}) is False  # exists as a zset
    assert r.exists(key("d")) == 0
    assert c.call("MSETNX", key("e"), "1", key("e"), "2") == 1  # named twice: the last wins
    assert r.get(key("e")) == "2"
    assert error_text(c.call("MSETNX", key("f"), "1", key("g"))) == \
        "ERR wrong number of arguments for 'msetnx' command"
    assert error_text(c.call("MSETNX")) == "ERR wrong number of arguments for 'msetnx' command"
    assert r.exists(key("f"), key("g")) == 0
    keys = {key(f"k{i}"): str(i) for i in range(20)}  # spans the partitions
    assert r.msetnx(keys) is True
    assert r.mget(list(keys)) == list(keys.values())
    assert r.msetnx({key("new"): "n", key("k7"): "x"}) is False
    assert r.exists(key("new")) == 0


# ---------------------------------------------------------------------------
# GETEX, GETDEL

def test_getex_expiry_options(r, c, key):
    k = key()
    r.set(k, "v")
    assert r.getex(k) == "v"
    assert r.ttl(k) == -1
    assert r.getex(k, ex=100) == "v"
    assert_ttl_near(r, k, 100)
    assert r.getex(k) == "v"  # no option: the expiry stays
    assert_ttl_near(r, k, 100)
    assert r.getex(k, px=200_000) == "v"
    assert_ttl_near(r, k, 200)
    at = int(time.time()) + 300
    assert r.getex(k, exat=at) == "v"
    assert r.execute_command("EXPIRETIME", k) == at
    assert r.getex(k, pxat=at * 1000 + 123) == "v"
    assert r.execute_command("PEXPIRETIME", k) == at * 1000 + 123
    assert r.getex(k, persist=True) == "v"
    assert r.ttl(k) == -1
    assert c.call("GETEX", k, "persist", "PERSIST") == b"v"
    assert c.call("GETEX", k, "ex", "10", "EX", "400") == b"v"  # the same kind again: the last
    assert_ttl_near(r, k, 400)
    assert c.call("GETEX", k, "pX", "1000") == b"v"  # options in any case
    assert_ttl_near(r, k, 1)


def test_getex_past_and_missing(r, c, key):
    r.set(key("a"), "va", ex=100)
    assert r.getex(key("a"), exat=int(time.time()) - 10) == "va"  # replied, then deleted
    assert r.exists(key("a")) == 0
    r.set(key("b"), "vb")
    assert r.getex(key("b"), pxat=1) == "vb"
    assert r.exists(key("b")) == 0
    assert r.getex(key("missing"), ex=10) is None
    assert r.exists(key("missing")) == 0
    # A missing key is nil before the amount is looked at (Redis's order).
    assert c.call("GETEX", key("missing"), "EX", "abc") is None
    assert c.call("GETEX", key("missing"), "EX", "0") is None


def test_getex_errors(r, c, key):
    k = key()
    r.set(k, "v", ex=100)
    for options in (["EX"], ["PXAT"], ["EX", "10", "PX", "10"], ["PERSIST", "EX", "10"],
                    ["EX", "10", "PERSIST"], ["NX"], ["XX"], ["GET"], ["KEEPTTL"], ["foo"],
                    ["EXAT", "1", "PXAT", "1"], ["10"]):
        assert error_text(c.call("GETEX", k, *options)) == SYNTAX, options
    # Syntax errors come before the key is looked at.
    assert error_text(c.call("GETEX", key("missing"), "FOO")) == SYNTAX
    for options in (["EX", "0"], ["PX", "-1"], ["EXAT", "0"], ["PXAT", "-5"],
                    ["EX", str(MAX_INT64 // 1000 + 1)], ["PX", str(MAX_INT64)]):
        assert error_text(c.call("GETEX", k, *options)) == \
            "ERR invalid expire time in 'getex' command", options
    assert error_text(c.call("GETEX", k, "EX", "soon")) == NOT_INTEGER
    assert r.get(k) == "v"
    assert_ttl_near(r, k, 100)  # untouched by the errors
    r.hset(key("h"), "f", "v")
    assert error_text(c.call("GETEX", key("h"))) == WRONGTYPE
    assert error_text(c.call("GETEX", key("h"), "EX", "abc")) == WRONGTYPE  # type before amount
    assert error_text(c.call("GETEX")) == "ERR wrong number of arguments for 'getex' command"


def test_getdel(r, c, key):
    r.set(key(), "v", ex=100)
    assert r.getdel(key()) == "v"
    assert r.exists(key()) == 0
    assert r.getdel(key()) is None
    r.hset(key("h"), "f", "v")
    assert error_text(c.call("GETDEL", key("h"))) == WRONGTYPE
    assert r.exists(key("h")) == 1
    assert error_text(c.call("GETDEL", key(), "x")) == \
        "ERR wrong number of arguments for 'getdel' command"


# ---------------------------------------------------------------------------
# APPEND, GETRANGE, SUBSTR, SETRANGE

def test_append(r, rb, c, key):
    assert r.append(key(), "Hello") == 5
    assert r.append(key(), " World") == 11
    assert r.get(key()) == "Hello World"
    assert r.append(key("empty"), "") == 0  # creates the key, empty
    assert r.exists(key("empty")) == 1 and r.get(key("empty")) == ""
    r.set(key("t"), "a", ex=100)
    assert r.append(key("t"), "b") == 2
    assert_ttl_near(r, key("t"), 100)  # keeps the expiry
    assert rb.append(key("bin"), b"\x00\r\n") == 3
    assert rb.append(key("bin"), b"\xff") == 4
    assert rb.get(key("bin")) == b"\x00\r\n\xff"
    r.set(key("n"), 12)
    assert r.append(key("n"), 3) == 3 and r.incr(key("n")) == 124
    r.hset(key("h"), "f", "v")
    assert error_text(c.call("APPEND", key("h"), "x")) == WRONGTYPE


def joined_commands(conn):
    """INFO stats' rampart_joined_commands of the proxy behind Raw conn."""
    info = conn.call("INFO", "stats").decode()
    return int(next(line.split(":")[1] for line in info.splitlines()
                    if line.startswith("rampart_joined_commands:")))


@pytest.mark.proxy_targets("rampart")
def test_joined_write_over_max_value_fails_whole(redis_target, key):
    """kv.max_value_bytes (1 MiB by default) bounds one element of a
    collection, and a write set holding a longer one is refused whole, so
    every command joined into it fails with it. One client pipelines HSETs
    that change nothing (f0 x), which keep the hash's lock busy turn after
    turn, and meanwhile two clients HSET field a (fits) and field b with
    1,100,000 bytes (too long). The proxy joins read-modify-writes of one key
    taken in one turn into one write set; a set holding the long field is
    refused, and no client may be told of a field the hash does not get
    (before the fix, the joined commands got their success replies).
    Repeats until joins happened (INFO), bounded. Strings are not bounded by
    the setting any more: longer ones go in chunks (test_proxy_big_values.py)."""
    k = key()
    tail = b"y" * 1_100_000
    with Raw(redis_target) as setup:
        first = joined_commands(setup)
        deadline = time.monotonic() + 60
        for _ in range(50):
            if joined_commands(setup) - first >= 20 or time.monotonic() > deadline:
                break
            assert setup.call("DEL", k) in (0, 1)
            assert setup.call("HSET", k, "f0", "x") == 1
            with Raw(redis_target) as busy, Raw(redis_target) as a, Raw(redis_target) as b:
                busy.send(b"".join(encode("HSET", k, "f0", "x") for _ in range(100)))
                a.send(encode("HSET", k, "a", "1"))
                b.send(encode("HSET", k, "b", tail))
                small, large = a.reply(), b.reply()
                others = [busy.reply() for _ in range(100)]
            has_a = setup.call("HEXISTS", k, "a")
            assert isinstance(large, RespError), f"HSET of 1,100,000 bytes answered {large!r}"
            assert "kv.max_value_bytes" in str(large), large
            assert setup.call("HEXISTS", k, "b") == 0
            if isinstance(small, RespError):
                assert "kv.max_value_bytes" in str(small), small
                assert has_a == 0
            else:
                assert (small, has_a) == (1, 1)
            for reply in others:  # nothing changed, or the refusal
                assert reply == 0 or "kv.max_value_bytes" in str(reply), reply
        assert joined_commands(setup) - first > 0, "no command joined another: nothing was checked"


def test_getrange_substr(r, rb, c, key):
    k = key()
    r.set(k, "This is a string")
    for name in ("GETRANGE", "SUBSTR"):
        assert c.call(name, k, 0, 3) == b"This"
        assert c.call(name, k, -3, -1) == b"ing"
        assert c.call(name, k, 0, -1) == b"This is a string"
        assert c.call(name, k, 10, 100) == b"string"
        assert c.call(name, k, 5, 3) == b""
        assert c.call(name, k, -100, 3) == b"This"
        assert c.call(name, k, 0, -100) == b"T"  # Redis 7.0: the end clamps to 0
        assert c.call(name, k, -1, -5) == b""    # both negative, reversed: empty
        assert c.call(name, k, 16, 20) == b""
        assert c.call(name, key("missing"), 0, -1) == b""
    r.set(key("one"), "a")
    assert c.call("GETRANGE", key("one"), -1, -100) == b""
    assert c.call("GETRANGE", key("one"), 0, -100) == b"a"
    r.set(key("empty"), "")
    assert c.call("GETRANGE", key("empty"), 0, -1) == b""
    rb.set(key("bin"), b"\x00\xff\r\n")
    assert rb.getrange(key("bin"), 1, 2) == b"\xff\r"
    assert error_text(c.call("GETRANGE", k, "a", 1)) == NOT_INTEGER
    assert error_text(c.call("GETRANGE", key("missing"), 0, "1.5")) == NOT_INTEGER  # before lookup
    r.hset(key("h"), "f", "v")
    assert error_text(c.call("GETRANGE", key("h"), 0, 1)) == WRONGTYPE
    assert error_text(c.call("SUBSTR", k, 0)) == "ERR wrong number of arguments for 'substr' command"


def test_setrange(r, rb, c, key):
    r.set(key(), "Hello World")
    assert r.setrange(key(), 6, "Redis") == 11
    assert r.get(key()) == "Hello Redis"
    assert r.setrange(key(), 9, "sss!") == 13  # past the end: grows
    assert r.get(key()) == "Hello Redsss!"
    assert r.setrange(key("pad"), 5, "x") == 6  # a missing key: zeros before
    assert rb.get(key("pad")) == b"\x00\x00\x00\x00\x00x"
    r.set(key("short"), "ab")
    assert r.setrange(key("short"), 4, "z") == 5
    assert rb.get(key("short")) == b"ab\x00\x00z"
    assert r.setrange(key("none"), 3, "") == 0  # nothing to write: no key
    assert r.exists(key("none")) == 0
    assert r.setrange(key("none"), 10 ** 12, "") == 0  # not even a size check
    assert r.setrange(key(), 100, "") == 13
    assert r.get(key()) == "Hello Redsss!"
    r.set(key("t"), "abc", ex=100)
    assert r.setrange(key("t"), 0, "x") == 3
    assert r.get(key("t")) == "xbc"
    assert_ttl_near(r, key("t"), 100)


def test_setrange_errors(r, c, key):
    r.set(key(), "v")
    assert error_text(c.call("SETRANGE", key(), -1, "x")) == "ERR offset is out of range"
    assert error_text(c.call("SETRANGE", key(), "x", "x")) == NOT_INTEGER
    assert error_text(c.call("SETRANGE", key("new"), 512 * 2 ** 20, "x")) == TOO_LONG
    assert error_text(c.call("SETRANGE", key(), 512 * 2 ** 20 - 1, "ab")) == TOO_LONG
    assert error_text(c.call("SETRANGE", key(), MAX_INT64, "ab")) == TOO_LONG
    assert r.get(key()) == "v" and r.exists(key("new")) == 0
    r.hset(key("h"), "f", "v")
    assert error_text(c.call("SETRANGE", key("h"), 0, "x")) == WRONGTYPE
    assert error_text(c.call("SETRANGE", key("h"), 0, "")) == WRONGTYPE
    assert error_text(c.call("SETRANGE", key("h"), -1, "x")) == "ERR offset is out of range"


# ---------------------------------------------------------------------------
# INCRBYFLOAT

@pytest.mark.parametrize("start, by, expected", [
    (None, "10.5", "10.5"),
    ("10.5", "0.1", "10.6"),
    ("5.0e3", "0", "5000"),
    ("5.0e3", "2.0e2", "5200"),
    ("3.0000000000000000001", "0", "3"),
    ("0.1", "0.2", "0.3"),
    ("0.3", "1e-17", "0.30000000000000001"),
    ("1", "-1", "0"),
    ("-0.0", "0", "0"),
    ("0", "-0.0000000000000000001", "0"),
    ("7", "1.23456789012345678901234", "8.23456789012345679"),
    ("0", "0x10", "16"),
    ("10", "+1", "11"),
    ("10", ".5", "10.5"),
    ("10", "1.", "11"),
    ("-10000000000000000000.5", "0", "-10000000000000000000"),
    ("1e20", "1", "100000000000000000000"),  # 1e20 + 1 rounds back in long double
    ("12", "-2.5", "9.5"),
    ("1.5e300", "0",  # every digit of the long double, as "%.17Lf" prints it
     "15000000000000000000498001098614721663623792391186739285512197182489735299298127"
     "08792854310575830930686530644566050229406926646739311017606984258288377434143937"
     "60277819671066123465594419577083851326884682615020541863299554727187482707293623"
     "0594920013241190363994471886080567336615911694509046614720512"),
])
def test_incrbyfloat_values(r, c, key, start, by, expected):
    k = key()  # one key for every parameter set
    r.delete(k)
    if start is not None:
        r.set(k, start)
    assert c.call("INCRBYFLOAT", k, by) == expected.encode()
    assert r.get(k) == expected  # what is stored is what is replied


def test_incrbyfloat_keeps_ttl_and_errors(r, c, key):
    r.set(key("t"), "1.5", ex=100)
    assert r.incrbyfloat(key("t"), 1) == 2.5
    assert_ttl_near(r, key("t"), 100)
    for bad in ["abc", "", " 1", "1 ", "nan", "1.5x", "1e99999", "1,5", "x" * 6000]:
        r.set(key("bad"), bad)
        assert error_text(c.call("INCRBYFLOAT", key("bad"), "1")) == NOT_FLOAT, bad
        assert r.get(key("bad")) == bad
        assert error_text(c.call("INCRBYFLOAT", key("n"), bad)) == NOT_FLOAT, bad
    assert r.exists(key("n")) == 0
    assert error_text(c.call("INCRBYFLOAT", key("n"), "inf")) == \
        "ERR increment would produce NaN or Infinity"
    r.set(key("inf"), "inf")
    assert error_text(c.call("INCRBYFLOAT", key("inf"), "-inf")) == \
        "ERR increment would produce NaN or Infinity"
    r.set(key("big"), "1e4932")
    assert error_text(c.call("INCRBYFLOAT", key("big"), "1e4932")) == \
        "ERR increment would produce NaN or Infinity"
    assert r.get(key("big")) == "1e4932"
    r.hset(key("h"), "f", "1")
    assert error_text(c.call("INCRBYFLOAT", key("h"), "1")) == WRONGTYPE
    assert error_text(c.call("INCRBYFLOAT", key("h"), "abc")) == WRONGTYPE  # type first
    r.set(key("s"), "abc")
    assert error_text(c.call("INCRBYFLOAT", key("s"), "abc")) == NOT_FLOAT


# ---------------------------------------------------------------------------
# SETBIT, GETBIT, BITCOUNT, BITPOS

def test_setbit_getbit(r, rb, c, key):
    k = key()
    assert r.setbit(k, 7, 1) == 0
    assert rb.get(k) == b"\x01"
    assert r.setbit(k, 7, 1) == 1
    assert r.setbit(k, 7, 0) == 1
    assert rb.get(k) == b"\x00"
    assert r.setbit(k, 100, 1) == 0  # grows with zero bytes
    assert r.strlen(k) == 13
    assert r.getbit(k, 100) == 1 and r.getbit(k, 99) == 0
    assert r.getbit(k, 10 ** 6) == 0  # beyond the string
    assert r.getbit(key("missing"), 3) == 0
    assert r.setbit(key("zero"), 15, 0) == 0  # setting a 0 still creates the key
    assert rb.get(key("zero")) == b"\x00\x00"
    r.set(key("a"), "a")  # 0x61 = 0110 0001
    assert [r.getbit(key("a"), i) for i in range(8)] == [0, 1, 1, 0, 0, 0, 0, 1]
    assert r.setbit(key("a"), 6, 1) == 0
    assert r.get(key("a")) == "c"
    r.set(key("t"), "a", ex=100)
    assert r.setbit(key("t"), 0, 1) == 0
    assert_ttl_near(r, key("t"), 100)


def test_setbit_getbit_errors(r, c, key):
    offset_error = "ERR bit offset is not an integer or out of range"
    bit_error = "ERR bit is not an integer or out of range"
    for offset in ["-1", "abc", "1.5", str(4 * 2 ** 30), str(MAX_INT64), "99999999999999999999"]:
        assert error_text(c.call("SETBIT", key(), offset, 1)) == offset_error, offset
        assert error_text(c.call("GETBIT", key(), offset)) == offset_error, offset
    for bit in ["2", "-1", "x", "", "1.0"]:
        assert error_text(c.call("SETBIT", key(), 0, bit)) == bit_error, bit
    assert error_text(c.call("SETBIT", key(), -1, 5)) == offset_error  # the offset first
    assert r.exists(key()) == 0
    r.hset(key("h"), "f", "v")
    assert error_text(c.call("SETBIT", key("h"), 0, 1)) == WRONGTYPE
    assert error_text(c.call("GETBIT", key("h"), 0)) == WRONGTYPE
    assert error_text(c.call("SETBIT", key("h"), 0, 2)) == bit_error  # the value before the type


def test_bitcount(r, c, key):
    k = key()
    r.set(k, "foobar")
    assert r.bitcount(k) == 26
    assert r.bitcount(k, 0, 0) == 4
    assert r.bitcount(k, 1, 1) == 6
    assert r.bitcount(k, 1, -2) == 18
    assert c.call("BITCOUNT", k, 5, 30, "BIT") == 17
    assert c.call("BITCOUNT", k, 1, 1, "byte") == 6
    assert c.call("BITCOUNT", k, 0, -1, "bit") == 26
    assert c.call("BITCOUNT", k, -1, -2) == 0
    assert r.bitcount(key("missing")) == 0
    r.set(key("empty"), "")
    assert r.bitcount(key("empty")) == 0
    assert c.call("BITCOUNT", key("empty"), 0, -1, "BIT") == 0
    # Redis 7.0 answers 0 for a missing key before it looks at the arguments.
    assert c.call("BITCOUNT", key("missing"), "a", "b") == 0
    assert c.call("BITCOUNT", key("missing"), 1) == 0
    assert error_text(c.call("BITCOUNT", k, 1)) == SYNTAX
    assert error_text(c.call("BITCOUNT", k, 0, 1, "BIT", "x")) == SYNTAX
    assert error_text(c.call("BITCOUNT", k, 0, 1, "bits")) == SYNTAX
    assert error_text(c.call("BITCOUNT", k, "a", 1)) == NOT_INTEGER
    assert error_text(c.call("BITCOUNT", k, "a", 1, "foo")) == NOT_INTEGER  # indexes first
    r.hset(key("h"), "f", "v")
    assert error_text(c.call("BITCOUNT", key("h"))) == WRONGTYPE
    assert error_text(c.call("BITCOUNT", key("h"), "x")) == WRONGTYPE


def test_bitpos(r, rb, c, key):
    k = key()
    rb.set(k, b"\xff\xf0\x00")
    assert r.bitpos(k, 0) == 12
    rb.set(k, b"\x00\xff\xf0")
    assert r.bitpos(k, 1, 0) == 8
    assert r.bitpos(k, 1, 2) == 16
    assert r.bitpos(k, 1, 2, -1) == 16
    assert c.call("BITPOS", k, 1, 7, 15, "BIT") == 8
    assert c.call("BITPOS", k, 1, 7, -3, "bit") == 8
    rb.set(key("ones"), b"\xff\xff")
    assert r.bitpos(key("ones"), 0) == 16       # no end: padded with zeros
    assert r.bitpos(key("ones"), 0, 1) == 16
    assert r.bitpos(key("ones"), 0, 0, -1) == -1  # an end: none in the range
    assert r.bitpos(key("missing"), 0) == 0
    assert r.bitpos(key("missing"), 1) == -1
    rb.set(key("zeros"), b"\x00\x00")
    assert r.bitpos(key("zeros"), 1) == -1
    r.set(key("empty"), "")
    assert r.bitpos(key("empty"), 0) == -1
    assert r.bitpos(key("empty"), 1) == -1
    r.set(key("one"), "a")
    assert r.bitpos(key("one"), 1, -1, -100) == 1  # no reversed-range shortcut here
    assert error_text(c.call("BITPOS", k, 2)) == "ERR The bit argument must be 1 or 0."
    assert error_text(c.call("BITPOS", key("missing"), 2)) == "ERR The bit argument must be 1 or 0."
    assert error_text(c.call("BITPOS", k, "x")) == NOT_INTEGER
    assert c.call("BITPOS", key("missing"), 1, "abc") == -1  # missing: before the range
    assert error_text(c.call("BITPOS", k, 1, "a")) == NOT_INTEGER
    assert error_text(c.call("BITPOS", k, 1, 0, "a")) == NOT_INTEGER
    assert error_text(c.call("BITPOS", k, 1, 0, 1, "foo")) == SYNTAX
    # Redis 7.0's order: start, then the unit, then end.
    assert error_text(c.call("BITPOS", k, 1, "a", 1, "foo")) == NOT_INTEGER
    assert error_text(c.call("BITPOS", k, 1, 0, "a", "foo")) == SYNTAX
    assert error_text(c.call("BITPOS", k, 1, 0, "a", "bit")) == NOT_INTEGER
    # BITCOUNT's: start, end, then the unit.
    assert error_text(c.call("BITCOUNT", k, 0, "a", "foo")) == NOT_INTEGER
    assert error_text(c.call("BITPOS", k, 1, 0, 1, "BIT", "x")) == SYNTAX
    r.hset(key("h"), "f", "v")
    assert error_text(c.call("BITPOS", key("h"), 1)) == WRONGTYPE


def test_ranges_against_the_model(rb, key):
    """GETRANGE, BITCOUNT and BITPOS over random strings and ranges, against
    the model of Redis 7.0's index rules above."""
    rng = random.Random(7)
    values = [b"", b"\x00", b"\xff", b"\xff\xff\xff", b"\x00\x00\x00", b"\xff\xf0\x00",
              b"foobar", bytes(rng.getrandbits(8) for _ in range(5))]
    pipe = rb.pipeline(transaction=False)
    commands, expected = [], []

    def add(command, want):
        pipe.execute_command(*command)
        commands.append(command)
        expected.append(want)

    for n, value in enumerate(values):
        k = key(f"v{n}")
        add(("SET", k, value), True)
        for _ in range(120):
            start, end = rng.randint(-12, 12), rng.randint(-12, 12)
            bstart, bend = rng.randint(-50, 50), rng.randint(-50, 50)
            bit = rng.randint(0, 1)
            add(("GETRANGE", k, start, end), model_getrange(value, start, end))
            add(("BITCOUNT", k, start, end), model_bitcount(value, start, end))
            add(("BITCOUNT", k, bstart, bend, "BIT"), model_bitcount(value, bstart, bend, "BIT"))
            add(("BITPOS", k, bit, start), model_bitpos(value, bit, start))
            add(("BITPOS", k, bit, start, end), model_bitpos(value, bit, start, end))
            add(("BITPOS", k, bit, bstart, bend, "BIT"),
                model_bitpos(value, bit, bstart, bend, "BIT"))
        add(("BITPOS", k, 0), model_bitpos(value, 0))
        add(("BITPOS", k, 1), model_bitpos(value, 1))
    got = pipe.execute()
    assert len(got) == len(expected)
    for command, want, have in zip(commands, expected, got):
        assert have == want, (command, have, want)


# ---------------------------------------------------------------------------
# SET's option parsing, shared with GETEX

def test_set_option_parsing_like_redis(r, c, key):
    k = key()
    assert c.call("SET", k, "v", "EX", "1", "EX", "100") == b"OK"  # the same kind: the last
    assert_ttl_near(r, k, 100)
    assert c.call("SET", k, "v", "NX", "NX") is None  # exists
    assert c.call("SET", k, "w", "XX", "xx", "KEEPTTL", "keepttl") == b"OK"
    assert_ttl_near(r, k, 100)
    # Options are parsed whole before the amount is checked.
    assert error_text(c.call("SET", k, "v", "EX", "abc", "FOO")) == SYNTAX
    assert error_text(c.call("SET", k, "v", "EX", "0", "PX", "1")) == SYNTAX
    assert error_text(c.call("SET", k, "v", "PX", "100", "KEEPTTL")) == SYNTAX
    assert error_text(c.call("SET", k, "v", "PERSIST")) == SYNTAX
    assert error_text(c.call("SET", k, "v", "EX", "0")) == "ERR invalid expire time in 'set' command"
    assert error_text(c.call("SET", k, "v", "EX", "abc")) == NOT_INTEGER
    assert r.get(k) == "w"


# ---------------------------------------------------------------------------
# EXPIREAT, PEXPIREAT, EXPIRETIME, PEXPIRETIME, EXPIRE options

def test_expireat_pexpireat_expiretime(r, c, key):
    k = key()
    r.set(k, "v")
    assert c.call("EXPIRETIME", k) == -1 and c.call("PEXPIRETIME", k) == -1
    assert c.call("EXPIRETIME", key("missing")) == -2
    assert c.call("PEXPIRETIME", key("missing")) == -2
    at = int(time.time()) + 1000
    assert c.call("EXPIREAT", k, at) == 1
    assert c.call("EXPIRETIME", k) == at
    assert c.call("PEXPIRETIME", k) == at * 1000
    assert_ttl_near(r, k, 1000)
    assert c.call("PEXPIREAT", k, at * 1000 + 600) == 1
    assert c.call("PEXPIRETIME", k) == at * 1000 + 600
    assert c.call("EXPIRETIME", k) == at + 1  # rounded to the nearest second
    assert c.call("PEXPIREAT", k, at * 1000 + 499) == 1
    assert c.call("EXPIRETIME", k) == at
    assert c.call("EXPIREAT", key("missing"), at) == 0
    assert c.call("PEXPIREAT", key("missing"), at * 1000) == 0
    assert c.call("EXPIREAT", k, int(time.time()) - 1) == 1  # in the past: deleted
    assert r.exists(k) == 0
    r.set(k, "v")
    assert c.call("PEXPIREAT", k, -5) == 1
    assert r.exists(k) == 0
    r.set(k, "v")
    assert c.call("PEXPIREAT", k, MAX_INT64) == 1
    assert c.call("PEXPIRETIME", k) == MAX_INT64
    assert c.call("EXPIRETIME", k) == MAX_INT64 // 1000 + 1
    assert c.call("PERSIST", k) == 1 and c.call("EXPIRETIME", k) == -1
    r.set(key("short"), "v")
    assert c.call("PEXPIREAT", key("short"), now_ms() + 200) == 1
    time.sleep(0.4)
    assert r.exists(key("short")) == 0


def test_expire_family_errors(r, c, key):
    k = key()
    r.set(k, "v")
    for name in ("EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"):
        assert error_text(c.call(name, k, "abc")) == NOT_INTEGER
        assert error_text(c.call(name, k, "10", "FOO")) == "ERR Unsupported option FOO"
        assert error_text(c.call(name, k, "abc", "foo")) == "ERR Unsupported option foo"
        for options in (["NX", "XX"], ["nx", "GT"], ["LT", "NX"], ["NX", "XX", "GT", "LT"]):
            assert error_text(c.call(name, k, "10", *options)) == \
                "ERR NX and XX, GT or LT options at the same time are not compatible"
        assert error_text(c.call(name, k, "10", "GT", "LT")) == \
            "ERR GT and LT options at the same time are not compatible"
        assert error_text(c.call(name, k)) == \
            f"ERR wrong number of arguments for '{name.lower()}' command"
    for name, amount in [("EXPIRE", MAX_INT64), ("EXPIRE", -MAX_INT64 - 1),
                         ("EXPIRE", MAX_INT64 // 1000), ("PEXPIRE", MAX_INT64),
                         ("EXPIREAT", MAX_INT64), ("EXPIREAT", -MAX_INT64 - 1)]:
        assert error_text(c.call(name, k, amount)) == \
            f"ERR invalid expire time in '{name.lower()}' command", (name, amount)
    assert r.get(k) == "v" and r.ttl(k) == -1  # untouched by the errors
    for name in ("EXPIRETIME", "PEXPIRETIME"):
        assert error_text(c.call(name)) == f"ERR wrong number of arguments for '{name.lower()}' command"


@pytest.mark.parametrize("name, scale, absolute", [
    ("EXPIRE", 1, False), ("PEXPIRE", 1000, False), ("EXPIREAT", 1, True), ("PEXPIREAT", 1000, True)])
def test_expire_conditions(r, c, key, name, scale, absolute):
    """NX, XX, GT, LT as Redis 7.0 has them: no expiry counts as infinite."""
    base = int(time.time()) if absolute else 0

    def expire(k, seconds, *options):
        return c.call(name, k, (base + seconds) * scale, *options)

    k = key()
    r.set(k, "v")
    assert expire(k, 100, "XX") == 0     # no expiry yet
    assert expire(k, 100, "GT") == 0     # nothing is greater than none
    assert r.ttl(k) == -1
    assert expire(k, 100, "NX") == 1
    assert_ttl_near(r, k, 100)
    assert expire(k, 200, "NX") == 0
    assert expire(k, 200, "xx") == 1
    assert_ttl_near(r, k, 200)
    assert expire(k, 100, "GT") == 0
    if absolute:  # a relative time is counted from each command's clock
        assert expire(k, 200, "GT") == 0     # not greater when equal
    assert expire(k, 300, "gt") == 1
    assert_ttl_near(r, k, 300)
    assert expire(k, 400, "LT") == 0
    assert expire(k, 150, "LT") == 1
    assert_ttl_near(r, k, 150)
    assert expire(k, 120, "XX", "LT") == 1
    assert expire(k, 500, "GT", "XX") == 1
    assert_ttl_near(r, k, 500)
    assert expire(k, 600, "NX", "NX") == 0
    r.persist(k)
    assert expire(k, 100, "LT") == 1     # anything is less than none
    assert_ttl_near(r, k, 100)
    assert expire(key("missing"), 100, "NX") == 0
    assert expire(key("missing"), 100) == 0
    # A deadline in the past deletes, when the condition holds.
    assert expire(k, -10 if not absolute else -1000, "GT") == 0
    assert r.exists(k) == 1
    assert expire(k, -10 if not absolute else -1000, "LT") == 1
    assert r.exists(k) == 0


def test_expiry_on_other_types(r, c, key):
    """The EXPIRE family and TTL work on every type through the value's header."""
    h, z, big = key("h"), key("z"), key("big")
    r.hset(h, mapping={"a": "1", "b": "2"})
    r.zadd(z, {"m": 1, "n": 2})
    r.hset(big, mapping={f"field{i:05d}": "x" * 20 for i in range(3000)})
    at = int(time.time()) + 500
    for k in (h, z, big):
        assert c.call("EXPIRE", k, 100, "NX") == 1
        assert_ttl_near(r, k, 100)
        assert c.call("EXPIREAT", k, at, "GT") == 1
        assert c.call("EXPIRETIME", k) == at
        assert c.call("PEXPIRE", k, 50_000, "LT") == 1
        assert_ttl_near(r, k, 50)
        assert r.persist(k) is True
    assert r.hgetall(h) == {"a": "1", "b": "2"}
    assert r.zrange(z, 0, -1, withscores=True) == [("m", 1.0), ("n", 2.0)]
    assert r.hlen(big) == 3000 and r.hget(big, "field02999") == "x" * 20
    assert c.call("PEXPIREAT", big, 1) == 1
    assert r.exists(big) == 0 and r.hlen(big) == 0
    assert c.call("PEXPIRE", h, 150) == 1
    time.sleep(0.35)
    assert r.exists(h) == 0 and r.hgetall(h) == {}


# ---------------------------------------------------------------------------
# TOUCH, UNLINK, TIME

def test_touch_unlink(r, c, key):
    r.mset({key("a"): "1", key("b"): "2"})
    r.hset(key("h"), "f", "v")
    assert r.touch(key("a"), key("b"), key("h"), key("missing")) == 3
    assert c.call("TOUCH", key("a"), key("a")) == 2  # named twice, counted twice
    assert r.unlink(key("a"), key("h"), key("missing")) == 2
    assert r.exists(key("a"), key("h")) == 0
    assert c.call("UNLINK", key("b"), key("b")) == 1  # deleted once
    assert r.unlink(key("b")) == 0
    assert error_text(c.call("TOUCH")) == "ERR wrong number of arguments for 'touch' command"
    assert error_text(c.call("UNLINK")) == "ERR wrong number of arguments for 'unlink' command"


def test_time(r, c):
    before = time.time()
    seconds, micros = c.call("TIME")
    after = time.time()
    assert seconds.isdigit() and micros.isdigit(), (seconds, micros)
    assert 0 <= int(micros) < 1_000_000
    assert before - 1 <= int(seconds) + int(micros) / 1e6 <= after + 1
    assert r.time()[0] >= int(seconds)
    assert error_text(c.call("TIME", "x")) == "ERR wrong number of arguments for 'time' command"


# ---------------------------------------------------------------------------
# Across commands

def test_wrongtype_on_collections(r, c, key):
    r.hset(key("h"), "f", "1")
    r.zadd(key("z"), {"m": 1})
    commands = [["SETRANGE", "$", 0, "x"], ["GETRANGE", "$", 0, 1], ["SUBSTR", "$", 0, 1],
                ["APPEND", "$", "x"], ["GETDEL", "$"], ["GETEX", "$"], ["GETEX", "$", "PERSIST"],
                ["INCRBYFLOAT", "$", "1"], ["SETBIT", "$", 0, 1], ["GETBIT", "$", 0],
                ["BITCOUNT", "$"], ["BITCOUNT", "$", 0, 1, "BIT"], ["BITPOS", "$", 1]]
    for k in (key("h"), key("z")):
        for command in commands:
            args = [k if a == "$" else a for a in command]
            assert error_text(c.call(*args)) == WRONGTYPE, args
    assert r.hgetall(key("h")) == {"f": "1"}
    assert r.zscore(key("z"), "m") == 1.0


def test_arity(c, key):
    k = key()
    for args in (["SETNX", k], ["SETEX", k, 1], ["PSETEX", k, 1], ["MSETNX", k], ["GETEX"],
                 ["GETDEL"], ["APPEND", k], ["GETRANGE", k, 0], ["SUBSTR", k, 0, 1, 2],
                 ["SETRANGE", k, 0], ["INCRBYFLOAT", k], ["SETBIT", k, 0], ["GETBIT", k],
                 ["BITCOUNT"], ["BITPOS", k], ["EXPIREAT", k], ["PEXPIREAT", k],
                 ["EXPIRETIME", k, k], ["PEXPIRETIME"], ["TOUCH"], ["UNLINK"], ["TIME", 1]):
        assert error_text(c.call(*args)) == \
            f"ERR wrong number of arguments for '{args[0].lower()}' command", args


def test_command_info(c):
    """Arity and key positions as Redis 7.0's command table has them."""
    expected = {
        "setnx": (3, 1, 1, 1), "setex": (4, 1, 1, 1), "psetex": (4, 1, 1, 1),
        "msetnx": (-3, 1, -1, 2), "getex": (-2, 1, 1, 1), "getdel": (2, 1, 1, 1),
        "append": (3, 1, 1, 1), "getrange": (4, 1, 1, 1), "substr": (4, 1, 1, 1),
        "setrange": (4, 1, 1, 1), "incrbyfloat": (3, 1, 1, 1), "setbit": (4, 1, 1, 1),
        "getbit": (3, 1, 1, 1), "bitcount": (-2, 1, 1, 1), "bitpos": (-3, 1, 1, 1),
        "expire": (-3, 1, 1, 1), "pexpire": (-3, 1, 1, 1), "expireat": (-3, 1, 1, 1),
        "pexpireat": (-3, 1, 1, 1), "expiretime": (2, 1, 1, 1), "pexpiretime": (2, 1, 1, 1),
        "touch": (-2, 1, -1, 1), "unlink": (-2, 1, -1, 1), "time": (1, 0, 0, 0),
    }
    infos = c.call("COMMAND", "INFO", *expected)
    for name, info in zip(expected, infos):
        assert info is not None, name
        assert info[0] == name.encode()
        assert (info[1], info[3], info[4], info[5]) == expected[name], name


def test_multi_block_of_new_writes(r, key):
    """A MULTI block of writes (one transaction on rampart): each command sees
    the ones before it."""
    k, n, b = key("k"), key("n"), key("b")
    pipe = r.pipeline(transaction=True)
    pipe.setnx(k, "Hello")
    pipe.append(k, " World")
    pipe.setrange(k, 6, "Redis")
    pipe.getdel(k)
    pipe.setnx(k, "again")
    pipe.incrbyfloat(n, "1.5")
    pipe.incrbyfloat(n, "2.25")
    pipe.setbit(b, 9, 1)
    pipe.setbit(b, 9, 0)
    pipe.expire(n, 100, nx=True)
    pipe.expire(n, 50, gt=True)
    pipe.getex(k, px=100_000)
    pipe.msetnx({key("m1"): "1", k: "x"})
    assert pipe.execute() == [True, 11, 11, "Hello Redis", True, 1.5, 3.75, 0, 1, True, False,
                              "again", False]
    assert r.get(n) == "3.75"
    assert r.get(b) == "\x00\x00"
    assert_ttl_near(r, n, 100)
    assert_ttl_near(r, k, 100)
    assert r.exists(key("m1")) == 0


# ---------------------------------------------------------------------------
# LCS

def lcs_model(a, b, min_match_len=0):
    """Redis 7.0's LCS: the DP table, then the walk back from the end that
    picks the common string and the contiguous matched ranges (ties go to b's
    side, as in Redis). Returns (string, length, [(a range, b range, len)])."""
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            t[i][j] = t[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(t[i - 1][j], t[i][j - 1])
    out, ranges, cur = [], [], None
    i, j = len(a), len(b)
    while i > 0 and j > 0:
        close = False
        if a[i - 1] == b[j - 1]:
            out.append(a[i - 1])
            cur = [i - 1, i - 1, j - 1, j - 1] if cur is None else [i - 1, cur[1], j - 1, cur[3]]
            close = cur[0] == 0 or cur[2] == 0
            i, j = i - 1, j - 1
        else:
            if t[i - 1][j] > t[i][j - 1]:
                i -= 1
            else:
                j -= 1
            close = cur is not None
        if close:
            n = cur[1] - cur[0] + 1
            if min_match_len == 0 or n >= min_match_len:
                ranges.append(([cur[0], cur[1]], [cur[2], cur[3]], n))
            cur = None
    return "".join(reversed(out)), t[len(a)][len(b)], ranges


def test_lcs(r, key):
    a, b = key("a"), key("b")
    r.mset({a: "ohmytext", b: "mynewtext"})
    assert r.execute_command("LCS", a, b) == "mytext"
    assert r.execute_command("LCS", a, b, "LEN") == 6
    assert r.execute_command("LCS", a, b, "IDX", "MINMATCHLEN", 4, "WITHMATCHLEN") == \
        ["matches", [[[4, 7], [5, 8], 4]], "len", 6]
    assert r.execute_command("LCS", a, key("missing")) == ""
    rng = random.Random(7)
    for _ in range(40):
        x = "".join(rng.choice("abc") for _ in range(rng.randint(0, 30)))
        y = "".join(rng.choice("abc") for _ in range(rng.randint(0, 30)))
        m = rng.randint(0, 3)
        r.mset({a: x, b: y})
        text, length, ranges = lcs_model(x, y, m)
        assert r.execute_command("LCS", a, b) == text, (x, y)
        assert r.execute_command("LCS", a, b, "len") == length
        want = [[list(ra), list(rb), n] for ra, rb, n in ranges]
        assert r.execute_command("LCS", a, b, "IDX", "MINMATCHLEN", m, "WITHMATCHLEN") == \
            ["matches", want, "len", length], (x, y, m)
        assert r.execute_command("LCS", a, b, "IDX", "MINMATCHLEN", m) == \
            ["matches", [[ra, rb] for ra, rb, _ in want], "len", length]


def test_lcs_errors(c, key):
    a, b = key("a"), key("b")
    c.call("SET", a, "abc")
    c.call("RPUSH", b, "x")
    assert error_text(c.call("LCS", a, b)) == "ERR The specified keys must contain string values"
    c.call("SET", b, "abd")
    assert error_text(c.call("LCS", a, b, "LEN", "IDX")) == \
        "ERR If you want both the length and indexes, please just use IDX."
    assert error_text(c.call("LCS", a, b, "FOO")) == SYNTAX
    assert error_text(c.call("LCS", a, b, "MINMATCHLEN")) == SYNTAX
    assert error_text(c.call("LCS", a, b, "MINMATCHLEN", "x")) == NOT_INTEGER
    assert c.call("LCS", a, b, "MINMATCHLEN", "-5", "LEN") == 2
    assert error_text(c.call("LCS", a)) == "ERR wrong number of arguments for 'lcs' command"


@pytest.mark.proxy_targets("rampart")
def test_lcs_table_bound(c, key):
    """rampart bounds LCS's transient table at 64 MiB (docs/proxy.md), where
    Redis's bound is proto-max-bulk-len; just under it LCS still answers."""
    a, b = key("a"), key("b")
    c.call("SET", a, "x" * 5000)
    c.call("SET", b, "y" * 5000)
    assert error_text(c.call("LCS", a, b, "LEN")) == (
        "ERR rampart: LCS of a 5000-byte and a 5000-byte string needs more than 64 MiB of "
        "transient memory")
    c.call("SET", b, "x" * 3000)
    assert c.call("LCS", a, b, "LEN") == 3000


def test_bitop(rb, key):
    """BITOP AND, OR, XOR, NOT against a model: shorter sources padded with zeros, missing
    ones empty, the destination written without its old expiry or type, an empty result
    deleting it; the errors as Redis's."""
    rng = random.Random(3)
    srcs = [key(f"s{i}") for i in range(3)]
    dst = key("dst")
    for k in srcs:
        rb.set(k, rng.randbytes(rng.randrange(1, 40)))
    values = [rb.get(k) for k in srcs]

    def combine(op, vals):
        n = max((len(v) for v in vals), default=0)
        out = bytearray(n)
        for i in range(n):
            b = [v[i] if i < len(v) else 0 for v in vals]
            x = b[0]
            for y in b[1:]:
                x = x & y if op == "AND" else x | y if op == "OR" else x ^ y
            out[i] = (~x & 0xFF) if op == "NOT" else x
        return bytes(out)

    for op in ("AND", "OR", "XOR"):
        assert rb.execute_command("BITOP", op.lower(), dst, *srcs, key("missing")) == max(map(len, values))
        assert rb.get(dst) == combine(op, values + [b""])
    assert rb.execute_command("BITOP", "NOT", dst, srcs[0]) == len(values[0])
    assert rb.get(dst) == combine("NOT", values[:1])
    assert rb.execute_command("BITOP", "AND", srcs[1], srcs[1], srcs[2]) == max(map(len, values[1:]))
    assert rb.get(srcs[1]) == combine("AND", values[1:])  # the destination among the sources
    # The old value's expiry and type go.
    rb.delete(dst)
    rb.rpush(dst, b"x")
    rb.expire(dst, 100)
    assert rb.execute_command("BITOP", "OR", dst, srcs[0]) == len(values[0])
    assert rb.type(dst) == b"string" and rb.ttl(dst) == -1
    # Nothing to combine: the destination is deleted.
    assert rb.execute_command("BITOP", "OR", dst, key("missing"), key("missing2")) == 0
    assert rb.exists(dst) == 0
    rb.rpush(key("list"), b"x")
    for args, error in ((("NOT", dst, srcs[0], srcs[1]), "BITOP NOT must be called with a single source key."),
                        (("NAND", dst, srcs[0]), "syntax error"),
                        (("AND", dst, srcs[0], key("list")), "WRONGTYPE")):
        with pytest.raises(Exception, match=error):
            rb.execute_command("BITOP", *args)
    with pytest.raises(Exception, match="wrong number of arguments"):
        rb.execute_command("BITOP", "AND", dst)

