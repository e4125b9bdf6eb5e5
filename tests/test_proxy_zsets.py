"""Sorted sets through the Redis-protocol proxy, with Redis 7.0 semantics
beyond YCSB's subset in test_proxy.py: ZADD's options (NX XX GT LT CH INCR),
ZRANGE by rank / BYSCORE / BYLEX with REV, LIMIT and WITHSCORES, the older
ZREVRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZRANGEBYLEX and ZREVRANGEBYLEX,
ZRANK / ZREVRANK, ZINCRBY, ZCOUNT, ZLEXCOUNT, ZPOPMIN / ZPOPMAX, ZMPOP,
the blocking BZPOPMIN / BZPOPMAX / BZMPOP (immediate data, timeouts, a
client woken by another client's ZADD, nil at once inside MULTI, a client
that stays blocked while its key holds another type), ZRANDMEMBER, ZMSCORE,
ZREMRANGEBYSCORE / BYRANK / BYLEX, ZUNIONSTORE / ZINTERSTORE / ZDIFFSTORE
(WEIGHTS, AGGREGATE) and their reply forms, ZSCAN, ZRANGESTORE, wrong types
and exact error texts, and sorted sets of 5000 members checked against a
Python model (ranks, score ranges, lex ranges).

Scores in replies are mostly compared as numbers; test_score_texts_exact
and the raw tests compare the exact texts of Redis 7.0, which prints doubles
with %.17g (0.1 is "0.10000000000000001"; 7.2 and later print the shortest
form, "0.1").

Targets as in test_proxy.py: a real redis-server ("redis", the reference
these expectations were validated against, 7.0.15) and the proxy of a
`rampart up` cluster ("rampart"); keys apart by the `key` fixture's prefix.
"""
import random
import time

import pytest
import redis

from proxy_helpers import (Raw, client, encode, error_text, in_thread, joined, key,  # noqa: F401
                           r, rank_slice, scan_chunks)

INF = float("inf")
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def scored(flat):
    """A flat [member, score, ...] reply (score strings) as [(member, float)]."""
    assert len(flat) % 2 == 0, flat
    return [(m, float(s)) for m, s in zip(flat[0::2], flat[1::2])]


def score_bound(text):
    """A ZRANGEBYSCORE bound as (value, exclusive)."""
    if text.startswith("("):
        return float(text[1:]), True
    return float(text), False


def in_score_range(score, lo, hi):
    (lv, lx), (hv, hx) = score_bound(lo), score_bound(hi)
    return (score > lv if lx else score >= lv) and (score < hv if hx else score <= hv)


def in_lex_range(member, lo, hi):
    """member within the ZRANGEBYLEX bounds lo, hi ("-", "+", "[x", "(x")."""
    if lo == "+" or hi == "-":
        return False
    above = lo == "-" or (member > lo[1:] if lo[0] == "(" else member >= lo[1:])
    below = hi == "+" or (member < hi[1:] if hi[0] == "(" else member <= hi[1:])
    return above and below


def limited(items, offset, count):
    """LIMIT offset count: a negative offset gives nothing, a negative count
    everything from offset."""
    if offset < 0:
        return []
    return items[offset:] if count < 0 else items[offset:offset + count]


# ---------------------------------------------------------------------------
# ZADD

def test_zadd_and_ch(r, key):
    z = key()
    assert r.execute_command("ZADD", z, 1, "a", 2, "b", 3, "c") == 3
    assert r.execute_command("ZADD", z, 1, "a", 20, "b", 4, "d") == 1  # only d is new
    assert r.execute_command("ZADD", z, "CH", 1, "a", 5, "b", 7, "e") == 2  # b changed, e new
    assert r.execute_command("ZADD", z, "CH", 1, "a") == 0  # same score: no change
    assert scored(r.execute_command("ZRANGE", z, 0, -1, "WITHSCORES")) == \
        [("a", 1), ("c", 3), ("d", 4), ("b", 5), ("e", 7)]
    assert r.execute_command("ZADD", z, 9, "x", 8, "x") == 1  # the last pair of a member wins
    assert r.zscore(z, "x") == 8


def test_zadd_nx_xx(r, key):
    z = key()
    r.zadd(z, {"a": 1, "b": 2})
    assert r.execute_command("ZADD", z, "NX", 10, "a", 3, "c") == 1  # adds c, a untouched
    assert r.execute_command("ZADD", z, "XX", 20, "b", 4, "d") == 0  # updates b, never adds
    assert r.execute_command("ZADD", z, "XX", "CH", 30, "b", 4, "d") == 1
    assert r.zmscore(z, ["a", "b", "c", "d"]) == [1, 30, 3, None]
    assert r.execute_command("ZADD", key("missing"), "XX", 1, "a") == 0
    assert r.exists(key("missing")) == 0


def test_zadd_gt_lt(r, key):
    z = key()
    r.zadd(z, {"a": 10, "b": 10})
    assert r.execute_command("ZADD", z, "GT", "CH", 5, "a", 15, "b", 1, "new") == 2
    assert r.zmscore(z, ["a", "b", "new"]) == [10, 15, 1]  # GT still adds new members
    assert r.execute_command("ZADD", z, "LT", "CH", 5, "a", 20, "b", 7, "new2") == 2
    assert r.zmscore(z, ["a", "b", "new2"]) == [5, 15, 7]
    assert r.execute_command("ZADD", z, "GT", "XX", "CH", 100, "a", 100, "nope") == 1
    assert r.zmscore(z, ["a", "nope"]) == [100, None]
    assert r.execute_command("ZADD", z, "GT", "CH", 100, "a") == 0  # equal is not greater


def test_zadd_incr(r, key, redis_target):
    z = key()
    with Raw(redis_target) as c:
        assert c.call("ZADD", z, "INCR", 5, "a") == b"5"  # a missing member from 0
        assert c.call("ZADD", z, "INCR", "2.5", "a") == b"7.5"
        assert c.call("ZADD", z, "INCR", -10, "a") == b"-2.5"
        assert c.call("ZADD", z, "NX", "INCR", 1, "a") is None  # a exists
        assert c.call("ZADD", z, "XX", "INCR", 1, "b") is None  # b does not
        assert c.call("ZSCORE", z, "b") is None
        assert c.call("ZADD", z, "GT", "INCR", -1, "a") is None  # would lower it
        assert c.call("ZADD", z, "LT", "INCR", 1, "a") is None  # would raise it
        assert c.call("ZADD", z, "GT", "INCR", 1, "a") == b"-1.5"
        assert c.call("ZADD", z, "NX", "INCR", 4, "c") == b"4"
    assert r.zadd(z, {"a": 3}, incr=True) == 1.5  # redis-py's form
    assert r.zrange(z, 0, -1, withscores=True) == [("a", 1.5), ("c", 4)]


def test_zadd_error_texts(redis_target, key):
    z = key()
    expected = {
        ("NX", "XX", 1, "a"): "ERR XX and NX options at the same time are not compatible",
        ("GT", "LT", 1, "a"): "ERR GT, LT, and/or NX options at the same time are not "
                              "compatible",
        ("GT", "NX", 1, "a"): "ERR GT, LT, and/or NX options at the same time are not "
                              "compatible",
        ("LT", "NX", 1, "a"): "ERR GT, LT, and/or NX options at the same time are not "
                              "compatible",
        ("INCR", 1, "a", 2, "b"): "ERR INCR option supports a single increment-element pair",
        (1, "a", 2): "ERR syntax error",
        ("abc", "a"): "ERR value is not a valid float",
        ("nan", "a"): "ERR value is not a valid float",
        (1,): "ERR wrong number of arguments for 'zadd' command",
    }
    with Raw(redis_target) as c:
        for args, text in expected.items():
            assert error_text(c.call("ZADD", z, *args)) == text, args
        assert c.call("EXISTS", z) == 0  # no error created the key
        assert error_text(c.call("ZINCRBY", z, "abc", "a")) == "ERR value is not a valid float"
        assert c.call("ZADD", z, "+inf", "a") == 1
        assert error_text(c.call("ZINCRBY", z, "-inf", "a")) == \
            "ERR resulting score is not a number (NaN)"
        assert error_text(c.call("ZADD", z, "INCR", "-inf", "a")) == \
            "ERR resulting score is not a number (NaN)"
        assert c.call("ZSCORE", z, "a") == b"inf"


def test_score_texts(redis_target, key):
    z = key()
    with Raw(redis_target) as c:
        c.call("ZADD", z, "1.5", "a", "2", "b", "1e3", "c", "0.25", "d", "-inf", "lo", "+inf", "hi",
               "-7", "neg", "2.0", "b2")
        assert c.call("ZRANGE", z, 0, -1, "WITHSCORES") == \
            [b"lo", b"-inf", b"neg", b"-7", b"d", b"0.25", b"a", b"1.5", b"b", b"2", b"b2", b"2",
             b"c", b"1000", b"hi", b"inf"]
        assert c.call("ZSCORE", z, "c") == b"1000"
        assert c.call("ZINCRBY", z, "0.5", "a") == b"2"
        assert c.call("ZADD", z, "0.1", "tenth") == 1
        assert float(c.call("ZSCORE", z, "tenth")) == 0.1  # the text differs by version
        assert float(c.call("ZINCRBY", z, "0.2", "tenth")) == 0.1 + 0.2


def test_score_texts_exact(redis_target, key):
    """Redis 7.0 replies scores with %.17g (0.1 is "0.10000000000000001",
    1e17 "1e+17"), whole ones without a point; ZSCAN of a small sorted set
    writes whole scores as integers (1e17 is "100000000000000000")."""
    z = key()
    scores = {"tenth": "0.1", "one": "1", "neg": "-3", "big": "1e17", "tiny": "1e-7",
              "huge": "1e300", "half": "2.5", "zero": "-0.0"}
    texts = {"tenth": b"0.10000000000000001", "one": b"1", "neg": b"-3", "big": b"1e+17",
             "tiny": b"9.9999999999999995e-08", "huge": b"1.0000000000000001e+300",
             "half": b"2.5", "zero": b"0"}
    with Raw(redis_target) as c:
        c.call("ZADD", z, *[x for m, s in scores.items() for x in (s, m)])
        for m, text in texts.items():
            assert c.call("ZSCORE", z, m) == text, m
        assert c.call("ZRANGE", z, 0, -1, "WITHSCORES") == \
            [b"neg", b"-3", b"zero", b"0", b"tiny", texts["tiny"], b"tenth", texts["tenth"],
             b"one", b"1", b"half", b"2.5", b"big", b"1e+17", b"huge", texts["huge"]]
        assert c.call("ZRANGEBYSCORE", z, "0.05", "2", "WITHSCORES") == \
            [b"tenth", texts["tenth"], b"one", b"1"]
        assert c.call("ZMSCORE", z, "tenth", "missing", "big") == [texts["tenth"], None, b"1e+17"]
        assert c.call("ZINCRBY", z, "0.2", "tenth") == b"0.30000000000000004"
        assert c.call("ZADD", z, "INCR", "0.1", "one") == b"1.1000000000000001"
        cursor, seen = b"0", {}
        for _ in range(100):
            cursor, chunk = c.call("ZSCAN", z, cursor)
            seen.update(zip(chunk[0::2], chunk[1::2]))
            if cursor == b"0":
                break
        assert cursor == b"0"
        assert seen == {b"neg": b"-3", b"zero": b"0", b"tiny": texts["tiny"],
                        b"tenth": b"0.30000000000000004", b"one": b"1.1000000000000001",
                        b"half": b"2.5", b"big": b"100000000000000000", b"huge": texts["huge"]}
        assert c.call("ZPOPMIN", z) == [b"neg", b"-3"]
        assert c.call("ZPOPMAX", z) == [b"huge", texts["huge"]]


# ---------------------------------------------------------------------------
# Ranges

def test_zrange_by_rank(r, key):
    z = key()
    items = [("a", 1), ("b", 2), ("c", 3), ("d", 3), ("e", 5)]
    r.zadd(z, dict(items))
    members = [m for m, _ in items]
    for start, stop in [(0, -1), (1, 2), (-2, -1), (-100, 100), (3, 1), (5, 9), (0, 0),
                        (-1, -1), (-6, 1)]:
        assert r.execute_command("ZRANGE", z, start, stop) == \
            rank_slice(members, start, stop), (start, stop)
        assert r.execute_command("ZRANGE", z, start, stop, "REV") == \
            rank_slice(members[::-1], start, stop), (start, stop)
        assert r.execute_command("ZREVRANGE", z, start, stop) == \
            rank_slice(members[::-1], start, stop), (start, stop)
    assert scored(r.execute_command("ZRANGE", z, 0, 1, "WITHSCORES")) == [("a", 1), ("b", 2)]
    assert scored(r.execute_command("ZREVRANGE", z, 0, 1, "WITHSCORES")) == \
        [("e", 5), ("d", 3)]
    assert r.zrange(z, 0, -1, withscores=True) == [(m, float(s)) for m, s in items]
    assert r.execute_command("ZRANGE", key("missing"), 0, -1) == []


def test_zrange_byscore(r, key):
    z = key()
    items = [("neg", -5), ("a", 1), ("b", 2), ("b2", 2), ("c", 3), ("top", INF)]
    r.zadd(z, dict(items))
    ranges = [("-inf", "+inf"), ("1", "2"), ("(1", "2"), ("1", "(2"), ("(1", "(3"),
              ("2", "2"), ("(2", "(2"), ("3", "1"), ("-inf", "0"), ("3", "+inf"),
              ("(3", "+inf"), ("-inf", "(-5")]
    for lo, hi in ranges:
        expected = [m for m, s in items if in_score_range(s, lo, hi)]
        assert r.execute_command("ZRANGE", z, lo, hi, "BYSCORE") == expected, (lo, hi)
        assert r.execute_command("ZRANGEBYSCORE", z, lo, hi) == expected, (lo, hi)
        assert r.execute_command("ZRANGE", z, hi, lo, "BYSCORE", "REV") == expected[::-1], \
            (lo, hi)  # REV takes max first
        assert r.execute_command("ZREVRANGEBYSCORE", z, hi, lo) == expected[::-1], (lo, hi)
        assert r.zcount(z, lo, hi) == len(expected), (lo, hi)
    assert r.execute_command("ZRANGE", z, "1", "3", "BYSCORE", "REV") == []  # min first: empty
    every = [m for m, _ in items]
    for offset, count in [(0, 2), (1, 3), (4, 10), (0, -1), (2, -5), (-1, 2), (10, 1),
                          (0, 0)]:
        assert r.execute_command("ZRANGE", z, "-inf", "+inf", "BYSCORE", "LIMIT",
                                 offset, count) == limited(every, offset, count), (offset, count)
        assert r.execute_command("ZREVRANGEBYSCORE", z, "+inf", "-inf", "LIMIT", offset,
                                 count) == limited(every[::-1], offset, count), (offset, count)
    assert scored(r.execute_command("ZRANGE", z, "(1", "3", "BYSCORE", "WITHSCORES")) == \
        [("b", 2), ("b2", 2), ("c", 3)]
    assert scored(r.execute_command("ZRANGE", z, "+inf", "2", "BYSCORE", "REV", "LIMIT", 1, 2,
                                    "WITHSCORES")) == [("c", 3), ("b2", 2)]
    assert scored(r.execute_command("ZREVRANGEBYSCORE", z, "3", "-inf", "WITHSCORES", "LIMIT",
                                    0, 2)) == [("c", 3), ("b2", 2)]
    assert r.zrangebyscore(z, 2, 3, withscores=True) == [("b", 2.0), ("b2", 2.0), ("c", 3.0)]


def test_zrange_bylex(r, key):
    z = key()
    members = ["a", "aa", "ab", "b", "ba", "c", "d"]
    r.zadd(z, {m: 0 for m in members})
    ranges = [("-", "+"), ("[a", "[b"), ("(a", "[b"), ("[a", "(b"), ("(aa", "(ba"),
              ("[b", "+"), ("-", "(b"), ("[c", "[a"), ("[z", "+"), ("-", "[a"), ("[ab", "[ab"),
              ("(ab", "(ab")]
    for lo, hi in ranges:
        expected = [m for m in members if in_lex_range(m, lo, hi)]
        assert r.execute_command("ZRANGE", z, lo, hi, "BYLEX") == expected, (lo, hi)
        assert r.execute_command("ZRANGEBYLEX", z, lo, hi) == expected, (lo, hi)
        assert r.execute_command("ZRANGE", z, hi, lo, "BYLEX", "REV") == expected[::-1], \
            (lo, hi)
        assert r.execute_command("ZREVRANGEBYLEX", z, hi, lo) == expected[::-1], (lo, hi)
        assert r.zlexcount(z, lo, hi) == len(expected), (lo, hi)
    assert r.execute_command("ZRANGEBYLEX", z, "+", "-") == []
    for offset, count in [(0, 2), (2, 3), (0, -1), (3, -1), (-1, 1), (10, 2)]:
        assert r.execute_command("ZRANGE", z, "-", "+", "BYLEX", "LIMIT", offset, count) == \
            limited(members, offset, count), (offset, count)
        assert r.execute_command("ZREVRANGEBYLEX", z, "+", "-", "LIMIT", offset, count) == \
            limited(members[::-1], offset, count), (offset, count)
    assert r.execute_command("ZRANGEBYLEX", key("missing"), "-", "+") == []
    assert r.zlexcount(key("missing"), "-", "+") == 0


def test_zrange_error_texts(redis_target, key):
    z = key()
    with Raw(redis_target) as c:
        c.call("ZADD", z, 1, "a", 2, "b")
        expected = {
            ("0", "1", "LIMIT", "0", "1"): "ERR syntax error, LIMIT is only supported in "
                                          "combination with either BYSCORE or BYLEX",
            ("[a", "[b", "BYLEX", "WITHSCORES"): "ERR syntax error, WITHSCORES not supported "
                                                 "in combination with BYLEX",
            ("a", "b", "BYSCORE"): "ERR min or max is not a float",
            ("a", "b", "BYLEX"): "ERR min or max not valid string range item",
            ("0", "-1", "BYSCORE", "BYLEX"): "ERR syntax error",
            ("0", "-1", "FOO"): "ERR syntax error",
            ("0", "-1", "BYSCORE", "LIMIT", "0"): "ERR syntax error",
            ("x", "1"): "ERR value is not an integer or out of range",
        }
        for args, text in expected.items():
            assert error_text(c.call("ZRANGE", z, *args)) == text, args
        for cmd, args, text in [
                ("ZRANGEBYSCORE", ("x", "1"), "ERR min or max is not a float"),
                ("ZREVRANGEBYSCORE", ("1", "(x"), "ERR min or max is not a float"),
                ("ZRANGEBYLEX", ("a", "+"), "ERR min or max not valid string range item"),
                ("ZREVRANGEBYLEX", ("+", "b"), "ERR min or max not valid string range item"),
                ("ZCOUNT", ("x", "1"), "ERR min or max is not a float"),
                ("ZLEXCOUNT", ("a", "b"), "ERR min or max not valid string range item"),
                ("ZREMRANGEBYSCORE", ("x", "1"), "ERR min or max is not a float"),
                ("ZREMRANGEBYLEX", ("a", "b"), "ERR min or max not valid string range item"),
                ("ZREMRANGEBYRANK", ("a", "1"), "ERR value is not an integer or out of range"),
                ("ZRANGEBYSCORE", ("0", "1", "LIMIT", "0"), "ERR syntax error")]:
            assert error_text(c.call(cmd, z, *args)) == text, (cmd, args)
        assert c.call("ZCARD", z) == 2


def test_zrank_zrevrank(r, key):
    z = key()
    r.zadd(z, {"a": 1, "b": 2, "c": 2, "d": 10})
    assert [r.zrank(z, m) for m in "abcd"] == [0, 1, 2, 3]
    assert [r.zrevrank(z, m) for m in "abcd"] == [3, 2, 1, 0]
    assert r.zrank(z, "nope") is None
    assert r.zrevrank(z, "nope") is None
    assert r.zrank(key("missing"), "a") is None


def test_zincrby(r, key):
    z = key()
    assert r.zincrby(z, 2, "a") == 2  # a missing key and member count from 0
    assert r.zincrby(z, -0.5, "a") == 1.5
    assert r.execute_command("ZINCRBY", z, "10", "a") == 11.5
    assert r.zincrby(z, 1, "b") == 1
    assert r.zrange(z, 0, -1) == ["b", "a"]
    r.zadd(z, {"top": INF})
    assert r.zincrby(z, 1, "top") == INF
    with pytest.raises(redis.ResponseError, match="not a number"):
        r.zincrby(z, "-inf", "top")
    assert r.zscore(z, "top") == INF


def test_zcount_zlexcount(r, key):
    z = key()
    r.zadd(z, {"a": 1, "b": 2, "c": 3})
    assert r.zcount(z, "-inf", "+inf") == 3
    assert r.zcount(z, "(1", "3") == 2
    assert r.zcount(z, 4, 10) == 0
    assert r.zcount(key("missing"), "-inf", "+inf") == 0
    assert r.zlexcount(z, "-", "+") == 3
    assert r.zlexcount(z, "[b", "+") == 2


# ---------------------------------------------------------------------------
# Pops, random members, several scores

def test_zpopmin_zpopmax(r, key):
    z = key()
    r.zadd(z, {"a": 1, "b": 2, "c": 3, "x": 3, "d": 4})
    assert scored(r.execute_command("ZPOPMIN", z)) == [("a", 1)]
    assert scored(r.execute_command("ZPOPMAX", z)) == [("d", 4)]
    assert scored(r.execute_command("ZPOPMAX", z, 2)) == [("x", 3), ("c", 3)]  # ties: rev lex
    assert r.execute_command("ZPOPMIN", z, 0) == []
    assert r.zpopmin(z, 5) == [("b", 2.0)]  # more than there is: all, the key is gone
    assert r.exists(z) == 0
    assert r.execute_command("ZPOPMIN", z) == []  # a missing key: empty array
    assert r.execute_command("ZPOPMAX", key("missing"), 3) == []
    r.zadd(z, {"m1": 0, "m2": 0, "m3": 0})
    assert r.execute_command("ZPOPMIN", z, 2) == ["m1", "0", "m2", "0"]  # ties: lex
    with pytest.raises(redis.ResponseError, match="^value is out of range, must be positive$"):
        r.execute_command("ZPOPMIN", z, -1)
    assert r.zcard(z) == 1


def test_zrandmember(r, key):
    z = key()
    items = {f"m{i}": i for i in range(10)}
    r.zadd(z, items)
    assert r.zrandmember(z) in items
    for count in (1, 4, 10, 30):  # positive: distinct, at most the set
        got = r.zrandmember(z, count)
        assert len(got) == min(count, 10) and len(set(got)) == len(got) and set(got) <= \
            set(items), count
    got = r.zrandmember(z, -30)  # negative: exactly that many, repeats allowed
    assert len(got) == 30 and set(got) <= set(items)
    pairs = scored(r.execute_command("ZRANDMEMBER", z, -20, "WITHSCORES"))
    assert len(pairs) == 20 and all(items[m] == s for m, s in pairs)
    pairs = scored(r.execute_command("ZRANDMEMBER", z, 5, "WITHSCORES"))
    assert len({m for m, _ in pairs}) == 5 and all(items[m] == s for m, s in pairs)
    assert r.zrandmember(z, 0) == []
    assert r.zcard(z) == 10  # nothing removed
    assert r.zrandmember(key("missing")) is None
    assert r.zrandmember(key("missing"), 3) == []
    assert r.execute_command("ZRANDMEMBER", key("missing"), -3, "WITHSCORES") == []
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.execute_command("ZRANDMEMBER", z, "WITHSCORES")
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("ZRANDMEMBER", z, 2, "FOO")


def test_zmscore(r, key, redis_target):
    z = key()
    r.zadd(z, {"a": 1.5, "b": -2})
    assert r.execute_command("ZMSCORE", z, "a", "nope", "b") == [1.5, None, -2.0]
    assert r.execute_command("ZMSCORE", key("missing"), "a", "b") == [None, None]
    with Raw(redis_target) as c:
        assert c.call("ZMSCORE", z, "a", "nope") == [b"1.5", None]


# ---------------------------------------------------------------------------
# Removing ranges

def test_zremrangebyscore(r, key):
    z = key()
    r.zadd(z, {"a": 1, "b": 2, "c": 3, "d": 4})
    assert r.zremrangebyscore(z, "(1", "3") == 2
    assert r.zrange(z, 0, -1) == ["a", "d"]
    assert r.zremrangebyscore(z, 10, 20) == 0
    assert r.zremrangebyscore(z, "-inf", "+inf") == 2
    assert r.exists(z) == 0
    assert r.zremrangebyscore(key("missing"), "-inf", "+inf") == 0


def test_zremrangebyrank(r, key):
    z = key()
    members = list("abcdefg")
    for start, stop in [(0, 1), (-2, -1), (2, 4), (5, 2), (10, 20), (-100, 0)]:
        r.delete(z)
        r.zadd(z, {m: i for i, m in enumerate(members)})
        gone = rank_slice(members, start, stop)
        assert r.zremrangebyrank(z, start, stop) == len(gone), (start, stop)
        assert r.zrange(z, 0, -1) == [m for m in members if m not in gone], (start, stop)
    assert r.zremrangebyrank(z, 0, -1) == len(members) - 1
    assert r.exists(z) == 0


def test_zremrangebylex(r, key):
    z = key()
    r.zadd(z, {m: 0 for m in ["a", "b", "c", "d", "e"]})
    assert r.zremrangebylex(z, "[b", "(d") == 2
    assert r.zrange(z, 0, -1) == ["a", "d", "e"]
    assert r.zremrangebylex(z, "(e", "+") == 0
    assert r.zremrangebylex(z, "-", "+") == 3
    assert r.exists(z) == 0


# ---------------------------------------------------------------------------
# Combining sorted sets

def test_zunionstore_zinterstore(r, key):
    a, b, dst = key("a"), key("b"), key("dst")
    r.zadd(a, {"x": 1, "y": 2, "z": 3})
    r.zadd(b, {"y": 10, "z": 20, "w": 30})
    assert r.zunionstore(dst, [a, b]) == 4
    assert r.zrange(dst, 0, -1, withscores=True) == \
        [("x", 1), ("y", 12), ("z", 23), ("w", 30)]
    assert r.zinterstore(dst, [a, b]) == 2  # replaces dst
    assert r.zrange(dst, 0, -1, withscores=True) == [("y", 12), ("z", 23)]
    assert r.execute_command("ZUNIONSTORE", dst, 2, a, b, "WEIGHTS", 2, -1) == 4
    assert r.zrange(dst, 0, -1, withscores=True) == \
        [("w", -30), ("z", -14), ("y", -6), ("x", 2)]
    assert r.execute_command("ZUNIONSTORE", dst, 2, a, b, "AGGREGATE", "MIN") == 4
    assert r.zrange(dst, 0, -1, withscores=True) == \
        [("x", 1), ("y", 2), ("z", 3), ("w", 30)]
    assert r.execute_command("ZINTERSTORE", dst, 2, a, b, "WEIGHTS", 3, 0.5,
                             "AGGREGATE", "MAX") == 2
    assert r.zrange(dst, 0, -1, withscores=True) == [("y", 6), ("z", 10)]
    assert r.execute_command("ZINTERSTORE", dst, 2, a, b, "aggregate", "sum") == 2
    assert r.zrange(dst, 0, -1, withscores=True) == [("y", 12), ("z", 23)]
    assert r.zunionstore(dst, [a, key("missing")]) == 3
    assert r.zrange(dst, 0, -1) == ["x", "y", "z"]
    assert r.zinterstore(dst, [a, key("missing")]) == 0  # empty: dst deleted
    assert r.exists(dst) == 0
    r.set(dst, "a string")
    assert r.zunionstore(dst, [b]) == 3  # the destination may be of any type
    assert r.type(dst) == "zset"
    assert r.zunionstore(a, [a, b]) == 4  # a source as destination
    assert r.zscore(a, "y") == 12


def test_zunionstore_infinities(r, key):
    """inf * 0 and inf + -inf are NaN, which Redis stores as 0."""
    a, b, dst = key("a"), key("b"), key("dst")
    r.zadd(a, {"p": INF, "n": -INF, "one": 1})
    r.zadd(b, {"p": -INF, "n": INF})
    assert r.execute_command("ZUNIONSTORE", dst, 1, a, "WEIGHTS", 0) == 3
    assert r.zrange(dst, 0, -1, withscores=True) == [("n", 0), ("one", 0), ("p", 0)]
    assert r.zunionstore(dst, [a, b]) == 3
    assert r.zrange(dst, 0, -1, withscores=True) == [("n", 0), ("p", 0), ("one", 1)]
    assert r.zinterstore(dst, [a, b], aggregate="MIN") == 2
    assert r.zrange(dst, 0, -1, withscores=True) == [("n", -INF), ("p", -INF)]


def test_zunionstore_accepts_plain_sets(r, key):
    """A set among the sources counts as a sorted set of score 1 members."""
    z, s, dst = key("z"), key("s"), key("dst")
    r.zadd(z, {"a": 1, "b": 2})
    r.sadd(s, "a", "c")
    assert r.zunionstore(dst, [z, s]) == 3
    assert r.zrange(dst, 0, -1, withscores=True) == [("c", 1), ("a", 2), ("b", 2)]
    assert r.execute_command("ZINTERSTORE", dst, 2, z, s, "WEIGHTS", 2, 3,
                             "AGGREGATE", "MAX") == 1
    assert r.zrange(dst, 0, -1, withscores=True) == [("a", 3)]


def test_zdiffstore_and_reply_forms(r, key):
    a, b, dst = key("a"), key("b"), key("dst")
    r.zadd(a, {"x": 1, "y": 2, "z": 3})
    r.zadd(b, {"y": 10})
    assert r.zdiffstore(dst, [a, b]) == 2
    assert r.zrange(dst, 0, -1, withscores=True) == [("x", 1), ("z", 3)]
    assert r.zdiffstore(dst, [a, key("missing")]) == 3
    assert r.zdiffstore(dst, [key("missing"), a]) == 0
    assert r.exists(dst) == 0
    assert r.execute_command("ZDIFF", 2, a, b) == ["x", "z"]
    assert scored(r.execute_command("ZDIFF", 2, a, b, "WITHSCORES")) == [("x", 1), ("z", 3)]
    assert r.execute_command("ZUNION", 2, a, b) == ["x", "z", "y"]
    assert scored(r.execute_command("ZUNION", 2, a, b, "WEIGHTS", 1, 2, "WITHSCORES")) == \
        [("x", 1), ("z", 3), ("y", 22)]
    assert scored(r.execute_command("ZINTER", 2, a, b, "AGGREGATE", "MIN", "WITHSCORES")) == \
        [("y", 2)]
    assert r.execute_command("ZINTER", 2, a, key("missing")) == []


def test_combine_error_texts(redis_target, key):
    a, s = key("a"), key("str")
    with Raw(redis_target) as c:
        c.call("ZADD", a, 1, "x")
        c.call("SET", s, "v")
        for cmd, args, text in [
                ("ZUNIONSTORE", ("0", a),
                 "ERR at least 1 input key is needed for 'zunionstore' command"),
                ("ZINTERSTORE", ("-1", a),
                 "ERR at least 1 input key is needed for 'zinterstore' command"),
                ("ZDIFFSTORE", ("0", a),
                 "ERR at least 1 input key is needed for 'zdiffstore' command"),
                ("ZUNIONSTORE", ("x", a), "ERR value is not an integer or out of range"),
                ("ZUNIONSTORE", ("2", a), "ERR syntax error"),
                ("ZUNIONSTORE", ("1", a, "WEIGHTS"), "ERR syntax error"),
                ("ZUNIONSTORE", ("1", a, "WEIGHTS", "x"), "ERR weight value is not a float"),
                ("ZUNIONSTORE", ("1", a, "WEIGHTS", "1", "2"), "ERR syntax error"),
                ("ZUNIONSTORE", ("1", a, "AGGREGATE", "AVG"), "ERR syntax error"),
                ("ZINTERSTORE", ("2", a, s), "WRONGTYPE Operation against a key holding the "
                                            "wrong kind of value")]:
            assert error_text(c.call(cmd, key("dst"), *args)) == text, (cmd, args)
        assert c.call("EXISTS", key("dst")) == 0


def test_zrangestore(r, key):
    src, dst = key("src"), key("dst")
    r.zadd(src, {"a": 1, "b": 2, "c": 3, "d": 4})
    assert r.zrangestore(dst, src, 1, 2) == 2
    assert r.zrange(dst, 0, -1, withscores=True) == [("b", 2), ("c", 3)]
    assert r.zrangestore(dst, src, "(1", "+inf", byscore=True, offset=0, num=2) == 2
    assert r.zrange(dst, 0, -1) == ["b", "c"]
    assert r.zrangestore(dst, src, 4, 1, byscore=True, desc=True) == 4
    assert r.zrange(dst, 0, -1) == ["a", "b", "c", "d"]
    r.zadd(key("lex"), {m: 0 for m in "abcd"})
    assert r.zrangestore(dst, key("lex"), "[b", "+", bylex=True) == 3
    assert r.zrange(dst, 0, -1) == ["b", "c", "d"]
    assert r.zrangestore(dst, src, 10, 20) == 0  # empty: dst deleted
    assert r.exists(dst) == 0
    assert r.zrangestore(dst, key("missing"), 0, -1) == 0


# ---------------------------------------------------------------------------
# ZMPOP and the blocking pops BZPOPMIN / BZPOPMAX / BZMPOP

def test_zmpop(r, key):
    a, b, c = key("a"), key("b"), key("c")
    r.zadd(b, {"b1": 1, "b2": 2, "b3": 3, "b4": 4})
    r.zadd(c, {"c1": 1})
    # From the first key that has members; a missing key is passed over.
    assert r.zmpop(3, [a, b, c], min=True) == [b, [["b1", "1"]]]
    assert r.zmpop(3, [a, b, c], max=True, count=2) == [b, [["b4", "4"], ["b3", "3"]]]
    assert r.zmpop(2, [b, c], min=True, count=10) == [b, [["b2", "2"]]]  # fewer: all
    assert r.exists(b) == 0  # emptied: gone
    assert r.zmpop(3, [a, b, c], max=True) == [c, [["c1", "1"]]]
    assert r.zmpop(3, [a, b, c], min=True) is None  # nothing anywhere: nil
    r.zadd(a, {"x": 1, "y": 1, "z": 1, "w": 0.5})
    assert r.execute_command("ZMPOP", 1, a, "min", "count", 2) == \
        [a, [["w", "0.5"], ["x", "1"]]]  # any case; ties in member order
    assert r.execute_command("ZMPOP", 1, a, "MAX") == [a, [["z", "1"]]]
    assert r.zrange(a, 0, -1) == ["y"]


def test_zmpop_raw(redis_target, key):
    """On the wire: [key, [[member, score], ...]], a nil array for nothing;
    scores as Redis 7.0 prints them."""
    a, b = key("a"), key("b")
    with Raw(redis_target) as c:
        c.send(encode("ZMPOP", 2, a, b, "MIN"))
        assert c.line() == b"*-1"
        assert c.call("ZADD", b, "0.1", "tenth", "2", "two", "-inf", "lo", "1.5", "x") == 4
        assert c.call("ZMPOP", 2, a, b, "MIN", "COUNT", 2) == \
            [b.encode(), [[b"lo", b"-inf"], [b"tenth", b"0.10000000000000001"]]]
        assert c.call("ZMPOP", 2, a, b, "MAX", "COUNT", 5) == \
            [b.encode(), [[b"two", b"2"], [b"x", b"1.5"]]]
        assert c.call("EXISTS", b) == 0


def test_zmpop_errors(redis_target, key):
    z, s = key("zset"), key("str")
    with Raw(redis_target) as c:
        c.call("ZADD", z, 1, "a", 2, "b")
        c.call("SET", s, "v")
        expected = {
            ("0", z, "MIN"): "ERR numkeys should be greater than 0",
            ("-1", z, "MIN"): "ERR numkeys should be greater than 0",
            ("x", z, "MIN"): "ERR numkeys should be greater than 0",
            ("2", z, "MIN"): "ERR syntax error",
            ("1", z, "LEFT"): "ERR syntax error",
            ("1", z, "MIN", "COUNT", "0"): "ERR count should be greater than 0",
            ("1", z, "MIN", "COUNT", "-2"): "ERR count should be greater than 0",
            ("1", z, "MAX", "COUNT"): "ERR syntax error",
            ("1", z, "MAX", "COUNT", "1", "COUNT", "1"): "ERR syntax error",
            ("1", z, "MAX", "WITHSCORES"): "ERR syntax error",
            ("1", z): "ERR wrong number of arguments for 'zmpop' command",
            ("1", s, "MIN"): WRONGTYPE,
            ("2", key("missing"), s, "MAX"): WRONGTYPE,
            ("2", s, z, "MIN"): WRONGTYPE,
        }
        for args, text in expected.items():
            assert error_text(c.call("ZMPOP", *args)) == text, args
        assert c.call("ZCARD", z) == 2  # no error popped anything
        assert c.call("ZMPOP", 2, z, s, "MIN") == [z.encode(), [[b"a", b"1"]]]


def test_blocking_zset_pops_with_data_answer_at_once(redis_target, r, key):
    a, b = key("a"), key("b")
    r.zadd(b, {"m1": 1, "m2": 2, "m3": 3, "m4": 4.5})
    t0 = time.monotonic()
    assert r.bzpopmin([a, b], timeout=5) == (b, "m1", 1.0)  # the first non-empty key
    assert r.bzpopmax([a, b], timeout=0) == (b, "m4", 4.5)  # 0 blocks forever, but there is data
    assert r.bzmpop(5, 2, [a, b], max=True, count=5) == [b, [["m3", "3"], ["m2", "2"]]]
    assert time.monotonic() - t0 < 1.0
    assert r.exists(b) == 0
    with Raw(redis_target) as c:
        c.call("ZADD", b, "0.1", "x", "7", "y")
        assert c.call("BZPOPMIN", a, b, "1") == [b.encode(), b"x", b"0.10000000000000001"]
        assert c.call("BZPOPMAX", b, "1") == [b.encode(), b"y", b"7"]
        c.call("ZADD", a, "2.5", "p")
        assert c.call("BZMPOP", "1", 2, a, b, "MIN") == [a.encode(), [[b"p", b"2.5"]]]


def test_blocking_zset_pops_time_out(redis_target, r, key):
    a, b = key("a"), key("b")
    for call in [lambda: r.bzpopmin([a, b], timeout=0.2),
                 lambda: r.bzpopmax([a], timeout=0.2),
                 lambda: r.bzmpop(0.2, 2, [a, b], min=True, count=2)]:
        t0 = time.monotonic()
        assert call() is None
        elapsed = time.monotonic() - t0
        assert 0.15 <= elapsed < 1.5, elapsed
    with Raw(redis_target) as c:
        for args in (("BZPOPMIN", a, "0.2"), ("BZPOPMAX", a, b, "0.2"),
                     ("BZMPOP", "0.2", 1, a, "MAX")):
            c.send(encode(*args))
            assert c.line() == b"*-1", args  # a nil array
        assert c.call("PING") == b"PONG"
    assert r.exists(a, b) == 0


def test_bzpopmin_woken_by_zadd(redis_target, r, key):
    z = key()
    waiter = client(redis_target, socket_timeout=10)
    try:
        t, out = in_thread(lambda: waiter.bzpopmin([key("other"), z], timeout=5))
        time.sleep(0.1)
        t0 = time.monotonic()
        assert r.zadd(z, {"b": 2, "a": 1}) == 2
        assert joined(t, out) == (z, "a", 1.0)
        assert time.monotonic() - t0 < 2.0
        assert r.zrange(z, 0, -1) == ["b"]
    finally:
        waiter.close()


@pytest.mark.parametrize("pop", ["bzpopmin", "bzmpop", "blmpop"])
def test_woken_blocking_pop_among_writes_of_its_key(redis_target, r, key, pop):
    """A blocking pop woken by a write that leaves nothing to pop (DEL) may
    meet the next write of its key (the push) in its turn: it must still
    wait for and pop the pushed element, never answer nil (run joined with
    that write, as a read-modify-write of the same key would be, it could
    not block)."""
    z = key()
    push = (lambda p, i: p.rpush(z, f"e{i}")) if pop == "blmpop" else \
        (lambda p, i: p.zadd(z, {f"e{i}": i}))
    call = {"bzpopmin": lambda c: c.bzpopmin([z], timeout=5),
            "bzmpop": lambda c: c.execute_command("BZMPOP", 5, 1, z, "MIN"),
            "blmpop": lambda c: c.execute_command("BLMPOP", 5, 1, z, "LEFT")}[pop]
    for round_ in range(30):
        r.delete(z)
        waiter = client(redis_target, socket_timeout=10)
        try:
            t, out = in_thread(lambda: call(waiter))
            time.sleep(0.05)
            with r.pipeline(transaction=False) as p:
                p.delete(z)  # wakes the waiter, with nothing for it
                push(p, round_)
                p.execute()
            got = joined(t, out)
            assert got is not None, f"round {round_}: {pop} answered nil"
        finally:
            waiter.close()
    r.delete(z)


def test_bzpopmax_forever_woken_by_zadd(redis_target, r, key):
    z = key()
    waiter = client(redis_target, socket_timeout=10)
    try:
        t, out = in_thread(lambda: waiter.bzpopmax([z], timeout=0))  # 0: no timeout
        time.sleep(0.1)
        r.zadd(z, {"a": 1, "b": 2.5})
        assert joined(t, out) == (z, "b", 2.5)
        assert r.zrange(z, 0, -1) == ["a"]
    finally:
        waiter.close()


def test_bzmpop_woken_by_zadd(redis_target, r, key):
    a, b = key("a"), key("b")
    waiter = client(redis_target, socket_timeout=10)
    try:
        t, out = in_thread(lambda: waiter.bzmpop(5, 2, [a, b], min=True, count=2))
        time.sleep(0.1)
        assert r.zadd(b, {"x": 3, "y": 1, "z": 2}) == 3
        assert joined(t, out) == [b, [["y", "1"], ["z", "2"]]]
        assert r.zrange(b, 0, -1) == ["x"]
    finally:
        waiter.close()


def test_blocking_zset_pop_errors(redis_target, key):
    z, s = key("zset"), key("str")
    with Raw(redis_target) as c:
        c.call("ZADD", z, 1, "a")
        c.call("SET", s, "v")
        expected = {
            ("BZPOPMIN", z, "-1"): "ERR timeout is negative",
            ("BZPOPMAX", z, "soon"): "ERR timeout is not a float or out of range",
            ("BZPOPMIN", s, "0.2"): WRONGTYPE,
            ("BZPOPMAX", key("missing"), s, "0.2"): WRONGTYPE,
            ("BZPOPMIN", z): "ERR wrong number of arguments for 'bzpopmin' command",
            ("BZMPOP", "-1", 1, z, "MIN"): "ERR timeout is negative",
            ("BZMPOP", "soon", 1, z, "MIN"): "ERR timeout is not a float or out of range",
            ("BZMPOP", "0.2", 0, z, "MIN"): "ERR numkeys should be greater than 0",
            ("BZMPOP", "0.2", 2, z, "MIN"): "ERR syntax error",
            ("BZMPOP", "0.2", 1, z, "LEFT"): "ERR syntax error",
            ("BZMPOP", "0.2", 1, z, "MAX", "COUNT", "0"): "ERR count should be greater than 0",
            ("BZMPOP", "0.2", 1, z): "ERR wrong number of arguments for 'bzmpop' command",
            ("BZMPOP", "0.2", 2, key("missing"), s, "MIN"): WRONGTYPE,
        }
        for args, text in expected.items():
            assert error_text(c.call(*args)) == text, args
        assert c.call("ZCARD", z) == 1
        # Data before the key of the wrong type: served.
        assert c.call("BZPOPMIN", z, s, "0.2") == [z.encode(), b"a", b"1"]


def test_bzmpop_error_order(redis_target, key):
    """Redis checks numkeys, MIN / MAX and COUNT before the timeout."""
    z = key()
    with Raw(redis_target) as c:
        expected = {
            ("-1", "0", z, "MIN"): "ERR numkeys should be greater than 0",
            ("-1", "1", z, "LEFT"): "ERR syntax error",
            ("soon", "1", z, "MAX", "COUNT", "0"): "ERR count should be greater than 0",
        }
        for args, text in expected.items():
            assert error_text(c.call("BZMPOP", *args)) == text, args


def test_blocking_zset_pops_inside_multi_do_not_block(redis_target, key):
    a, b = key("a"), key("b")
    with Raw(redis_target) as c:
        assert c.call("MULTI") == b"OK"
        assert c.call("BZPOPMIN", a, b, 5) == b"QUEUED"
        assert c.call("BZPOPMAX", a, 5) == b"QUEUED"
        assert c.call("BZMPOP", 5, 2, a, b, "MIN") == b"QUEUED"
        assert c.call("ZADD", b, 1, "x", 2, "y") == b"QUEUED"
        assert c.call("BZPOPMAX", a, b, 5) == b"QUEUED"
        t0 = time.monotonic()
        c.send(encode("EXEC"))
        assert c.line() == b"*5"
        for _ in range(3):
            assert c.line() == b"*-1"  # nothing yet: nil arrays at once
        assert c.reply() == 2
        assert c.reply() == [b.encode(), b"y", b"2"]
        assert time.monotonic() - t0 < 1.0
        assert c.call("ZRANGE", b, 0, -1) == [b"x"]


def test_bzpopmin_stays_blocked_while_key_is_another_type(redis_target, r, key):
    """A client blocked for a sorted set waits on while its key holds a list;
    a sorted set added there later is served."""
    z = key()
    waiter = client(redis_target, socket_timeout=10)
    try:
        t, out = in_thread(lambda: waiter.bzpopmin([z], timeout=5))
        time.sleep(0.1)
        assert r.rpush(z, "a list now") == 1
        time.sleep(0.3)
        assert t.is_alive(), out  # still blocked: no WRONGTYPE
        assert r.delete(z) == 1
        assert r.zadd(z, {"m": 3}) == 1
        assert joined(t, out) == (z, "m", 3.0)
        assert r.exists(z) == 0
    finally:
        waiter.close()


def test_bzmpop_passes_over_key_turned_string(redis_target, r, key):
    a, b = key("a"), key("b")
    waiter = client(redis_target, socket_timeout=10)
    try:
        t, out = in_thread(lambda: waiter.bzmpop(5, 2, [a, b], max=True))
        time.sleep(0.1)
        assert r.set(a, "a string") is True
        time.sleep(0.3)
        assert t.is_alive(), out
        assert r.zadd(b, {"x": 1, "y": 2}) == 2
        assert joined(t, out) == [b, [["y", "2"]]]
        assert r.get(a) == "a string"
    finally:
        waiter.close()


# ---------------------------------------------------------------------------
# ZSCAN, wrong types

def zscan_all(r, z, max_calls=10_000, **kw):
    """The (member, score) pairs of one full ZSCAN iteration (bounded), in order."""
    return [pair for chunk in scan_chunks(r.zscan, z, max_calls, **kw) for pair in chunk]


def test_zscan(r, key):
    z = key()
    small = {"a": 1, "b": 2.5, "c": -INF}
    r.zadd(z, small)
    assert dict(zscan_all(r, z)) == small
    assert dict(zscan_all(r, z, match="[ab]")) == {"a": 1, "b": 2.5}
    assert r.zscan(key("missing"), 0) == (0, [])
    big = key("big")
    items = {f"m{i}": i * 0.5 for i in range(2000)}
    p = r.pipeline(transaction=False)
    names = list(items)
    for i in range(0, 2000, 500):
        p.zadd(big, {m: items[m] for m in names[i:i + 500]})
    p.execute()
    for count in (None, 7, 500):
        got = zscan_all(r, big, count=count)
        assert dict(got) == items, count  # every member (repeats allowed), right scores
    got = dict(zscan_all(r, big, match="m19*", count=100))
    assert got == {m: s for m, s in items.items() if m.startswith("m19")}
    with pytest.raises(redis.ResponseError, match="invalid cursor"):
        r.execute_command("ZSCAN", big, "x")


def test_wrongtype(r, key):
    s, z = key("str"), key("zset")
    r.set(s, "v")
    r.zadd(z, {"a": 1})
    calls = [("ZADD", s, 1, "a"), ("ZINCRBY", s, 1, "a"), ("ZRANGE", s, 0, -1),
             ("ZRANGE", s, "-inf", "+inf", "BYSCORE"), ("ZRANGEBYLEX", s, "-", "+"),
             ("ZREVRANGE", s, 0, -1), ("ZRANK", s, "a"), ("ZREVRANK", s, "a"), ("ZCOUNT", s, 0, 1),
             ("ZLEXCOUNT", s, "-", "+"), ("ZPOPMIN", s), ("ZPOPMAX", s, 2),
             ("ZRANDMEMBER", s), ("ZMSCORE", s, "a"), ("ZSCORE", s, "a"), ("ZCARD", s),
             ("ZREMRANGEBYRANK", s, 0, -1), ("ZREMRANGEBYSCORE", s, 0, 1),
             ("ZREMRANGEBYLEX", s, "-", "+"), ("ZUNIONSTORE", key("d"), 2, z, s),
             ("ZDIFFSTORE", key("d"), 2, s, z), ("ZRANGESTORE", key("d"), s, 0, -1),
             ("ZSCAN", s, 0), ("GET", z), ("SADD", z, "a"), ("LPUSH", z, "a")]
    for call in calls:
        with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
            r.execute_command(*call)
    assert r.zrange(z, 0, -1, withscores=True) == [("a", 1)]
    assert r.get(s) == "v"
    assert r.exists(key("d")) == 0


# ---------------------------------------------------------------------------
# Large sorted sets, against a Python model

def check_ranges(r, z, ranges, by, expected_of, offset, count):
    """For each (lo, hi) of ranges, pipelined: ZRANGEBY<by> lo hi, its count
    (ZCOUNT, ZLEXCOUNT) and ZREVRANGEBY<by> hi lo LIMIT offset count, checked
    against expected_of(lo, hi), the members within the range in order."""
    count_command = {"SCORE": "ZCOUNT", "LEX": "ZLEXCOUNT"}[by]
    p = r.pipeline(transaction=False)
    for lo, hi in ranges:
        p.execute_command(f"ZRANGEBY{by}", z, lo, hi)
        p.execute_command(count_command, z, lo, hi)
        p.execute_command(f"ZREVRANGEBY{by}", z, hi, lo, "LIMIT", offset, count)
    got = p.execute()
    for i, (lo, hi) in enumerate(ranges):
        expected = expected_of(lo, hi)
        assert got[3 * i] == expected, (lo, hi)
        assert got[3 * i + 1] == len(expected), (lo, hi)
        assert got[3 * i + 2] == expected[::-1][offset:offset + count], (lo, hi)


def zadd_many(r, z, mapping, batch=500):
    items = list(mapping.items())
    p = r.pipeline(transaction=False)
    for i in range(0, len(items), batch):
        p.zadd(z, dict(items[i:i + batch]))
    return sum(p.execute())


def test_large_zset_ranks_and_scores(r, key):
    rng = random.Random(31)
    z = key()
    scores = {f"m{i:05d}-" + "q" * rng.randrange(0, 40):
              rng.randrange(-1000, 1000) + rng.choice([0, 0, 0.5, 0.25]) for i in range(5000)}
    assert zadd_many(r, z, scores) == 5000
    model = sorted(scores.items(), key=lambda kv: (kv[1], kv[0]))
    members = [m for m, _ in model]
    assert r.zcard(z) == 5000
    assert r.zrange(z, 0, -1) == members
    p = r.pipeline(transaction=False)
    slices = [(0, 99), (-100, -1), (2000, 2100), (4990, 6000), (rng.randrange(5000), -1)] + \
        [tuple(sorted((rng.randrange(-5200, 5200), rng.randrange(-5200, 5200))))
         for _ in range(20)]
    for start, stop in slices:
        p.execute_command("ZRANGE", z, start, stop)
        p.execute_command("ZREVRANGE", z, start, stop)
    got = p.execute()
    for i, (start, stop) in enumerate(slices):
        assert got[2 * i] == rank_slice(members, start, stop), (start, stop)
        assert got[2 * i + 1] == rank_slice(members[::-1], start, stop), (start, stop)

    probe = rng.sample(members, 200)
    p = r.pipeline(transaction=False)
    for m in probe:
        p.zrank(z, m).zrevrank(z, m)
    got = p.execute()
    for i, m in enumerate(probe):
        assert got[2 * i] == members.index(m) and got[2 * i + 1] == 4999 - members.index(m), m
    assert r.zmscore(z, probe[:50] + ["absent"]) == [scores[m] for m in probe[:50]] + [None]

    ranges = [("-inf", "+inf"), ("0", "0"), ("(0", "(0.5"), ("-10.5", "10.25"), ("999", "+inf"),
              ("-inf", "-999")]
    for _ in range(20):
        lo, hi = sorted(rng.randrange(-1100, 1100) / 4 for _ in range(2))
        ranges.append((rng.choice(["", "("]) + str(lo), rng.choice(["", "("]) + str(hi)))
    check_ranges(r, z, ranges, "SCORE",
                 lambda lo, hi: [m for m, s in model if in_score_range(s, lo, hi)],
                 offset=3, count=50)
    assert scored(r.execute_command("ZRANGE", z, 100, 150, "WITHSCORES")) == model[100:151]


def test_large_zset_changes(r, key):
    rng = random.Random(32)
    z = key()
    scores = {f"k{i}": float(rng.randrange(0, 3000)) for i in range(5000)}
    zadd_many(r, z, scores)
    p = r.pipeline(transaction=False)
    expected = []
    for m in rng.sample(sorted(scores), 500):  # moves within the order
        delta = rng.randrange(-500, 500)
        scores[m] += delta
        expected.append(scores[m])
        p.zincrby(z, delta, m)
    assert p.execute() == expected
    model = sorted(scores.items(), key=lambda kv: (kv[1], kv[0]))
    assert r.zrange(z, 0, -1, withscores=True) == model

    assert r.zremrangebyrank(z, 1000, 1999) == 1000
    model = model[:1000] + model[2000:]
    assert r.zremrangebyscore(z, "(2000", 2500) == sum(1 for _, s in model if 2000 < s <= 2500)
    model = [(m, s) for m, s in model if not 2000 < s <= 2500]
    popped = r.zpopmin(z, 100)
    assert popped == model[:100]
    popped = r.zpopmax(z, 100)
    assert popped == model[::-1][:100]
    model = model[100:-100]
    assert r.zcard(z) == len(model)
    assert r.zrange(z, 0, -1, withscores=True) == model
    assert dict(zscan_all(r, z, count=300)) == dict(model)


def test_large_zset_lex(r, key):
    rng = random.Random(33)
    z = key()
    alphabet = "abcdefghij"
    unique = set()
    for _ in range(20_000):
        unique.add("".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 8))))
        if len(unique) == 5000:
            break
    members = sorted(unique)
    assert len(members) == 5000
    zadd_many(r, z, {m: 0 for m in members})
    assert r.execute_command("ZRANGEBYLEX", z, "-", "+") == members
    ranges = [("-", "+"), ("[a", "(b"), ("(j", "+"), ("-", "[a"), ("[c", "[c"),
              ("[cab", "(dd"), ("(a", "[aaa")]
    for _ in range(20):
        lo, hi = sorted("".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 5)))
                        for _ in range(2))
        ranges.append((rng.choice("[(") + lo, rng.choice("[(") + hi))
    check_ranges(r, z, ranges, "LEX",
                 lambda lo, hi: [m for m in members if in_lex_range(m, lo, hi)], offset=2, count=30)
    lo, hi = "[c", "(e"
    gone = [m for m in members if in_lex_range(m, lo, hi)]
    assert r.zremrangebylex(z, lo, hi) == len(gone) > 0
    rest = [m for m in members if m not in set(gone)]
    assert r.execute_command("ZRANGEBYLEX", z, "-", "+") == rest
    assert r.zrank(z, rest[len(rest) // 2]) == len(rest) // 2
    assert r.zscore(z, rest[0]) == 0
