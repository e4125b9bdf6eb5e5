"""Sorted sets through the Redis-protocol proxy, with Redis 7.0 semantics
beyond YCSB's subset in test_proxy.py: ZADD's options (NX XX GT LT CH INCR),
ZRANGE by rank / BYSCORE / BYLEX with REV, LIMIT and WITHSCORES, the older
ZREVRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZRANGEBYLEX and ZREVRANGEBYLEX,
ZRANK / ZREVRANK, ZINCRBY, ZCOUNT, ZLEXCOUNT, ZPOPMIN / ZPOPMAX,
ZRANDMEMBER, ZMSCORE, ZREMRANGEBYSCORE / BYRANK / BYLEX, ZUNIONSTORE /
ZINTERSTORE / ZDIFFSTORE (WEIGHTS, AGGREGATE) and their reply forms, ZSCAN,
ZRANGESTORE, wrong types and exact error texts, and sorted sets of 5000
members checked against a Python model (ranks, score ranges, lex ranges).

Scores in replies are compared as numbers, except a few whose text every
Redis prints alike ("2", "1.5", "inf"): Redis 7.0 prints doubles with %.17g
(0.1 is "0.10000000000000001"), 7.2 and later the shortest form ("0.1").

Targets as in test_proxy.py: a real redis-server ("redis", the reference
these expectations were validated against, 7.0.15) and the proxy of a
`rampart up` cluster ("rampart"); keys apart by the `key` fixture's prefix.
"""
import random

import pytest
import redis

from proxy_helpers import Raw, error_text, key, r, rank_slice, scan_chunks  # noqa: F401

INF = float("inf")


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
