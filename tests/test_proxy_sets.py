"""Sets through the Redis-protocol proxy, with Redis 7.0 semantics: SADD,
SREM, SMEMBERS, SISMEMBER, SMISMEMBER, SCARD, SPOP and SRANDMEMBER (with
and without a count; only what Redis guarantees of their random choices),
SMOVE, SINTER / SUNION / SDIFF and their STORE forms, SINTERCARD (LIMIT),
SSCAN (iterated to cursor 0; its chunking is free), wrong types and exact
error texts, and sets of 5000 members checked against Python sets.

Targets as in test_proxy.py: a real redis-server ("redis", the reference
these expectations were validated against, 7.0.15) and the proxy of a
`rampart up` cluster ("rampart"); keys apart by the `key` fixture's prefix.
"""
import collections
import random

import pytest
import redis

from proxy_helpers import Raw, error_text, key, r, rb, scan_chunks  # noqa: F401


def sscan_all(r, k, max_calls=10_000, **kw):
    """Every SSCAN reply of one full iteration (bounded): a list of the
    members of each call, in order."""
    return scan_chunks(r.sscan, k, max_calls, **kw)


# ---------------------------------------------------------------------------
# Members

def test_sadd_srem_smembers(r, key):
    k = key()
    assert r.sadd(k, "a", "b", "c") == 3
    assert r.sadd(k, "a", "d", "d") == 1  # only d is new, once
    assert r.smembers(k) == {"a", "b", "c", "d"}
    assert r.scard(k) == 4
    assert r.srem(k, "a", "nope", "b") == 2
    assert r.smembers(k) == {"c", "d"}
    assert r.srem(k, "c", "d") == 2
    assert r.exists(k) == 0  # the last member gone, the key is gone
    assert r.smembers(k) == set()
    assert r.scard(k) == 0
    assert r.srem(key("missing"), "a") == 0
    assert r.sadd(key("e"), "") == 1  # the empty string is a member
    assert r.smembers(key("e")) == {""}


def test_integer_and_string_members(r, key):
    """Integers and strings mixed (Redis keeps small integer sets apart: the
    encoding must not show)."""
    k = key()
    assert r.sadd(k, 1, 2, 3, 100, -5) == 5
    assert r.smembers(k) == {"1", "2", "3", "100", "-5"}
    assert r.sadd(k, "01", "1") == 1  # "01" is not the integer 1
    assert r.sismember(k, "01") and r.sismember(k, "1")
    assert r.sadd(k, "x") == 1
    assert r.smembers(k) == {"1", "01", "2", "3", "100", "-5", "x"}
    assert r.srem(k, "x", "01") == 2
    assert r.smembers(k) == {"1", "2", "3", "100", "-5"}


def test_sismember_smismember(r, key):
    k = key()
    r.sadd(k, "a", "b")
    assert r.execute_command("SISMEMBER", k, "a") == 1
    assert r.execute_command("SISMEMBER", k, "z") == 0
    assert r.execute_command("SISMEMBER", key("missing"), "a") == 0
    assert r.execute_command("SMISMEMBER", k, "b", "z", "a", "b") == [1, 0, 1, 1]
    assert r.execute_command("SMISMEMBER", key("missing"), "a", "b") == [0, 0]


def test_spop(r, key):
    k = key()
    members = {f"m{i}" for i in range(10)}
    r.sadd(k, *members)
    one = r.spop(k)
    assert one in members
    assert r.sismember(k, one) == 0
    left = members - {one}
    three = r.spop(k, 3)
    assert len(three) == 3 and len(set(three)) == 3 and set(three) <= left
    left -= set(three)
    assert r.smembers(k) == left
    assert r.spop(k, 0) == []
    assert r.scard(k) == len(left)
    rest = r.spop(k, 100)  # more than there is: all of it, the key is gone
    assert sorted(rest) == sorted(left)
    assert r.exists(k) == 0
    assert r.spop(k) is None
    assert r.spop(key("missing"), 2) == []  # a missing key with a count: empty array
    assert r.spop(key("missing"), 0) == []
    r.sadd(k, "a")
    with pytest.raises(redis.ResponseError, match="^value is out of range, must be positive$"):
        r.spop(k, -1)
    assert r.smembers(k) == {"a"}


def test_srandmember(r, key):
    k = key()
    members = {f"m{i}" for i in range(10)}
    r.sadd(k, *members)
    assert r.srandmember(k) in members
    for count in (1, 3, 10, 25):  # positive: distinct members, at most the set
        got = r.srandmember(k, count)
        assert len(got) == min(count, 10) and len(set(got)) == len(got), count
        assert set(got) <= members
    for count in (-1, -3, -25):  # negative: exactly -count, repeats allowed
        got = r.srandmember(k, count)
        assert len(got) == -count and set(got) <= members, count
    assert r.srandmember(k, 0) == []
    assert r.smembers(k) == members  # nothing removed
    assert r.srandmember(key("missing")) is None
    assert r.srandmember(key("missing"), 2) == []
    assert r.srandmember(key("missing"), -2) == []
    single = key("single")
    r.sadd(single, "only")
    assert r.srandmember(single, -5) == ["only"] * 5


def test_srandmember_negative_count_repeats(r, key):
    """Of a 2-member set, 200 picks with replacement show both members and
    some repeat (200 > 2): what a negative count promises."""
    k = key()
    r.sadd(k, "a", "b")
    got = r.srandmember(k, -200)
    assert len(got) == 200
    assert set(got) == {"a", "b"}


def test_smove(r, key):
    src, dst = key("src"), key("dst")
    r.sadd(src, "a", "b")
    r.sadd(dst, "b", "z")
    assert r.smove(src, dst, "a") is True
    assert r.smembers(src) == {"b"} and r.smembers(dst) == {"a", "b", "z"}
    assert r.smove(src, dst, "b") is True  # already in dst: removed from src only
    assert r.exists(src) == 0
    assert r.smembers(dst) == {"a", "b", "z"}
    assert r.smove(src, dst, "a") is False  # missing source
    assert r.smove(dst, dst, "a") is True  # same set, a member: 1, unchanged
    assert r.smove(dst, dst, "nope") is False
    assert r.smembers(dst) == {"a", "b", "z"}
    new = key("new")
    assert r.smove(dst, new, "z") is True  # creates the destination
    assert r.smembers(new) == {"z"}


def test_smove_of_a_member_dst_has_leaves_a_watch_of_dst_standing(r, redis_target, key):
    """SMOVE of a member the destination holds changes only the source: a
    WATCH of the destination holds (Redis's "SMOVE only notify dstset when the
    addition is successful"); of one it lacks, the WATCH fails."""
    src, dst = key("wsrc"), key("wdst")
    r.sadd(src, "a", "b")
    r.sadd(dst, "a")
    other = redis.Redis(host=redis_target.host, port=redis_target.port, decode_responses=True)
    for member, holds in (("a", True), ("b", False)):
        with r.pipeline(transaction=True) as p:
            p.watch(dst)
            p.multi()
            p.sadd(dst, "c")
            assert other.smove(src, dst, member) is True
            if holds:
                assert p.execute() == [1]
            else:
                with pytest.raises(redis.WatchError):
                    p.execute()
    assert r.smembers(dst) == {"a", "b", "c"}
    other.close()


def test_set_algebra(r, key):
    a, b, c = key("a"), key("b"), key("c")
    r.sadd(a, "1", "2", "3", "x")
    r.sadd(b, "2", "3", "4")
    r.sadd(c, "3", "5", "x")
    missing = key("missing")
    assert r.sinter(a, b) == {"2", "3"}
    assert r.sinter(a, b, c) == {"3"}
    assert r.sinter(a) == {"1", "2", "3", "x"}
    assert r.sinter(a, missing) == set()
    assert r.sunion(a, b, c) == {"1", "2", "3", "4", "5", "x"}
    assert r.sunion(missing, b) == {"2", "3", "4"}
    assert r.sunion(missing) == set()
    assert r.sdiff(a, b) == {"1", "x"}
    assert r.sdiff(a, b, c) == {"1"}
    assert r.sdiff(b, a) == {"4"}
    assert r.sdiff(a, missing) == {"1", "2", "3", "x"}
    assert r.sdiff(missing, a) == set()
    assert r.sdiff(a, a) == set()


def test_set_algebra_store(r, key):
    a, b, dst = key("a"), key("b"), key("dst")
    r.sadd(a, "1", "2", "3")
    r.sadd(b, "2", "3", "4")
    assert r.sinterstore(dst, a, b) == 2
    assert r.smembers(dst) == {"2", "3"}
    assert r.sunionstore(dst, a, b) == 4  # replaces the old contents
    assert r.smembers(dst) == {"1", "2", "3", "4"}
    assert r.sdiffstore(dst, a, b) == 1
    assert r.smembers(dst) == {"1"}
    assert r.sinterstore(dst, a, key("missing")) == 0  # an empty result deletes dst
    assert r.exists(dst) == 0
    r.set(dst, "a string")
    assert r.sunionstore(dst, a) == 3  # the destination may be of any type
    assert r.type(dst) == "set" and r.smembers(dst) == {"1", "2", "3"}
    assert r.sdiffstore(a, a, b) == 1  # a source as destination
    assert r.smembers(a) == {"1"}
    assert r.sunionstore(dst, key("missing")) == 0
    assert r.exists(dst) == 0


def test_sintercard(r, key, redis_target):
    a, b = key("a"), key("b")
    r.sadd(a, *"abcdef")
    r.sadd(b, *"bcdxyz")
    assert r.sintercard(2, [a, b]) == 3
    assert r.sintercard(2, [a, b], limit=2) == 2
    assert r.sintercard(2, [a, b], limit=0) == 3  # 0: no limit
    assert r.sintercard(2, [a, b], limit=10) == 3
    assert r.sintercard(1, [a]) == 6
    assert r.sintercard(2, [a, key("missing")]) == 0
    with Raw(redis_target) as c:
        expected = {
            ("0", a): "ERR numkeys should be greater than 0",
            ("x", a): "ERR numkeys should be greater than 0",
            ("3", a, b): "ERR Number of keys can't be greater than number of args",
            ("1", a, "LIMIT", "-1"): "ERR LIMIT can't be negative",
            ("1", a, "FOO"): "ERR syntax error",
        }
        for args, text in expected.items():
            assert error_text(c.call("SINTERCARD", *args)) == text, args


# ---------------------------------------------------------------------------
# SSCAN

def test_sscan_small(r, key):
    k = key()
    r.sadd(k, "a", "b", "c")
    members = [m for chunk in sscan_all(r, k) for m in chunk]
    assert sorted(members) == ["a", "b", "c"]
    assert r.sscan(key("missing"), 0) == (0, [])
    matched = [m for chunk in sscan_all(r, k, match="[ab]") for m in chunk]
    assert sorted(matched) == ["a", "b"]


def test_sscan_errors(redis_target, key):
    k = key()
    with Raw(redis_target) as c:
        c.call("SADD", k, "a")
        assert error_text(c.call("SSCAN", k, "abc")) == "ERR invalid cursor"
        assert error_text(c.call("SSCAN", k, "0", "COUNT", "0")) == "ERR syntax error"
        assert error_text(c.call("SSCAN", k, "0", "FOO", "1")) == "ERR syntax error"


def test_sscan_large_with_match_and_count(r, key):
    """A full iteration returns every member at least once (repeats are
    allowed) and nothing else; MATCH filters, COUNT is only a hint."""
    k = key()
    members = {f"m{i}" for i in range(3000)}
    p = r.pipeline(transaction=False)
    batch = sorted(members)
    for i in range(0, len(batch), 500):
        p.sadd(k, *batch[i:i + 500])
    p.execute()
    for count in (None, 10, 1000):
        chunks = sscan_all(r, k, count=count)
        seen = [m for chunk in chunks for m in chunk]
        assert set(seen) == members, count
    chunks = sscan_all(r, k, match="m1*", count=100)
    seen = {m for chunk in chunks for m in chunk}
    assert seen == {m for m in members if m.startswith("m1")}
    chunks = sscan_all(r, k, match="nothing*")
    assert [m for chunk in chunks for m in chunk] == []


# ---------------------------------------------------------------------------
# Wrong types and binary members

def test_wrongtype(r, key):
    s, st = key("str"), key("set")
    r.set(s, "v")
    r.sadd(st, "a")
    calls = [("SADD", s, "a"), ("SREM", s, "a"), ("SMEMBERS", s), ("SISMEMBER", s, "a"),
             ("SMISMEMBER", s, "a"), ("SCARD", s), ("SPOP", s), ("SPOP", s, 2),
             ("SRANDMEMBER", s), ("SRANDMEMBER", s, 2), ("SMOVE", s, st, "a"),
             ("SMOVE", st, s, "a"), ("SINTER", st, s), ("SUNION", st, s), ("SDIFF", st, s),
             ("SDIFF", s, st), ("SINTERSTORE", key("d"), st, s), ("SINTERCARD", 2, st, s),
             ("SSCAN", s, 0), ("GET", st), ("LPUSH", st, "a"), ("HGET", st, "a")]
    for call in calls:
        with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
            r.execute_command(*call)
    assert r.smembers(st) == {"a"}  # SMOVE to a string moved nothing
    assert r.get(s) == "v"
    assert r.exists(key("d")) == 0
    assert r.type(st) == "set"


def test_binary_members(rb, key):
    k = key()
    members = {b"\x00", b"a\r\nb", bytes(range(256)), b"", b"\xff\xfe"}
    assert rb.sadd(k, *members) == 5
    assert rb.smembers(k) == members
    assert rb.execute_command("SMISMEMBER", k, b"\x00", b"\x00\x00") == [1, 0]
    assert rb.srem(k, bytes(range(256))) == 1
    assert rb.scard(k) == 4


# ---------------------------------------------------------------------------
# Large sets, against Python sets

def sadd_many(r, k, members, batch=500):
    p = r.pipeline(transaction=False)
    for i in range(0, len(members), batch):
        p.sadd(k, *members[i:i + batch])
    return sum(p.execute())


def test_large_sets(r, key):
    rng = random.Random(21)
    a, b, dst = key("a"), key("b"), key("dst")
    ma = [f"member-{i}-" + "y" * rng.randrange(0, 60) for i in range(5000)]
    mb = rng.sample(ma, 2000) + [f"only-b-{i}" for i in range(1000)]
    assert sadd_many(r, a, ma) == 5000
    assert sadd_many(r, b, mb) == 3000
    sa, sb = set(ma), set(mb)
    assert r.scard(a) == 5000
    assert r.smembers(a) == sa
    probe = rng.sample(ma, 300) + [f"absent-{i}" for i in range(100)]
    assert r.execute_command("SMISMEMBER", a, *probe) == [1] * 300 + [0] * 100
    assert r.sinter(a, b) == sa & sb
    assert r.sunion(a, b) == sa | sb
    assert r.sdiff(a, b) == sa - sb
    assert r.sintercard(2, [a, b]) == 2000
    assert r.sintercard(2, [a, b], limit=123) == 123
    assert r.sunionstore(dst, a, b) == len(sa | sb)
    assert r.scard(dst) == 6000

    gone = rng.sample(ma, 2500)
    p = r.pipeline(transaction=False)
    for i in range(0, 2500, 250):
        p.srem(a, *gone[i:i + 250], "absent")
    assert sum(p.execute()) == 2500
    sa -= set(gone)
    assert r.scard(a) == 2500
    assert r.smembers(a) == sa
    assert r.sdiffstore(dst, b, a) == len(sb - sa)
    assert r.smembers(dst) == sb - sa

    popped = r.spop(a, 1000)
    assert len(set(popped)) == 1000 and set(popped) <= sa
    sa -= set(popped)
    assert r.smembers(a) == sa
    picks = r.srandmember(a, 2000)  # more than the set: all of it, once each
    assert len(picks) == 1500 and set(picks) == sa
    picks = r.srandmember(a, -3000)
    assert len(picks) == 3000 and set(picks) <= sa
    counts = collections.Counter(picks)
    assert max(counts.values()) > 1  # 3000 picks of 1500: repeats
    seen = {m for chunk in sscan_all(r, a, count=200) for m in chunk}
    assert seen == sa


def test_large_integer_set(r, key):
    """5000 integers, then a string among them (Redis converts its integer
    encoding; nothing may show)."""
    k = key()
    rng = random.Random(22)
    ints = rng.sample(range(-10 ** 12, 10 ** 12), 5000)
    assert sadd_many(r, k, ints) == 5000
    model = {str(i) for i in ints}
    assert r.smembers(k) == model
    assert r.sadd(k, "not-a-number") == 1
    model.add("not-a-number")
    assert r.scard(k) == 5001
    assert r.smembers(k) == model
    probe = [str(i) for i in rng.sample(ints, 100)] + ["0x1", "1.0", "+5"]
    assert r.execute_command("SMISMEMBER", k, *probe) == [1] * 100 + [0, 0, 0]
