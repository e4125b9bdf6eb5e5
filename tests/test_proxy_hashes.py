"""Hashes through the Redis-protocol proxy beyond test_proxy.py's HSET /
HGET / HMGET / HGETALL / HDEL, with Redis 7.0 semantics: HINCRBY,
HINCRBYFLOAT, HKEYS, HVALS, HSETNX, HSTRLEN, HRANDFIELD (count,
WITHVALUES; only what Redis guarantees of its random choices), HSCAN
(iterated to cursor 0; its chunking is free), wrong types and exact error
texts, and HSET / HGET / HDEL on a hash of 5000 fields against a dict.

Targets as in test_proxy.py: a real redis-server ("redis", the reference
these expectations were validated against, 7.0.15) and the proxy of a
`rampart up` cluster ("rampart"); keys apart by the `key` fixture's prefix.
"""
import random

import pytest
import redis

from proxy_helpers import Raw, error_text, key, r, rb, scan_chunks  # noqa: F401


def hscan_all(r, h, max_calls=10_000, **kw):
    """The field -> value pairs of one full HSCAN iteration (bounded); a
    field returned again must come with the same value."""
    out = {}
    for chunk in scan_chunks(r.hscan, h, max_calls, **kw):
        for field, value in chunk.items():
            assert out.get(field, value) == value, field
            out[field] = value
    return out


# ---------------------------------------------------------------------------
# Counters

def test_hincrby(r, key):
    h = key()
    assert r.hincrby(h, "n", 5) == 5  # a missing key and field count from 0
    assert r.hincrby(h, "n", -7) == -2
    assert r.hincrby(h, "n") == -1  # redis-py's default amount 1
    assert r.hget(h, "n") == "-1"
    r.hset(h, "s", "41")
    assert r.hincrby(h, "s", 1) == 42
    r.hset(h, "max", "9223372036854775806")
    assert r.hincrby(h, "max", 1) == 9223372036854775807
    assert r.hincrby(h, "other", 0) == 0
    assert r.hgetall(h) == {"n": "-1", "s": "42", "max": "9223372036854775807", "other": "0"}


def test_hincrby_errors(redis_target, key):
    h = key()
    with Raw(redis_target) as c:
        c.call("HSET", h, "text", "abc", "float", "1.5", "max", "9223372036854775807",
               "min", "-9223372036854775808", "n", "1")
        for field, incr, text in [
                ("text", "1", "ERR hash value is not an integer"),
                ("float", "1", "ERR hash value is not an integer"),
                ("n", "x", "ERR value is not an integer or out of range"),
                ("n", "1.5", "ERR value is not an integer or out of range"),
                ("n", "99999999999999999999", "ERR value is not an integer or out of range"),
                ("max", "1", "ERR increment or decrement would overflow"),
                ("min", "-1", "ERR increment or decrement would overflow")]:
            assert error_text(c.call("HINCRBY", h, field, incr)) == text, (field, incr)
        assert c.call("HMGET", h, "text", "max", "n") == [b"abc", b"9223372036854775807", b"1"]


def test_hincrbyfloat(redis_target, r, key):
    h = key()
    with Raw(redis_target) as c:  # the examples of the command's page, as text
        assert c.call("HSET", h, "field", "10.50") == 1
        assert c.call("HINCRBYFLOAT", h, "field", "0.1") == b"10.6"
        assert c.call("HINCRBYFLOAT", h, "field", "-5") == b"5.6"
        assert c.call("HSET", h, "field", "5.0e3") == 0
        assert c.call("HINCRBYFLOAT", h, "field", "2.0e2") == b"5200"
        assert c.call("HGET", h, "field") == b"5200"
        assert c.call("HINCRBYFLOAT", h, "new", "0.1") == b"0.1"
        assert c.call("HINCRBYFLOAT", h, "new", "0.2") == b"0.3"
        assert c.call("HINCRBYFLOAT", h, "int", "3") == b"3"
        assert c.call("HINCRBY", h, "int", "2") == 5  # an integral result stays an integer
    assert r.hincrbyfloat(h, "field", 0.5) == 5200.5


def test_hincrbyfloat_errors(redis_target, key):
    h = key()
    with Raw(redis_target) as c:
        c.call("HSET", h, "text", "abc", "inf", "inf", "n", "1")
        for field, incr, text in [
                ("text", "1", "ERR hash value is not a float"),
                ("n", "x", "ERR value is not a valid float"),
                ("n", "nan", "ERR value is not a valid float"),
                ("n", "inf", "ERR value is NaN or Infinity"),
                ("inf", "1", "ERR increment would produce NaN or Infinity")]:
            assert error_text(c.call("HINCRBYFLOAT", h, field, incr)) == text, (field, incr)
        assert c.call("HGET", h, "n") == b"1"


# ---------------------------------------------------------------------------
# Fields and values

def test_hkeys_hvals(r, key):
    h = key()
    fields = {"a": "1", "b": "2", "c": "", "d": "4"}
    r.hset(h, mapping=fields)
    keys, values = r.hkeys(h), r.hvals(h)
    assert sorted(keys) == sorted(fields)
    assert len(values) == 4
    assert dict(zip(keys, values)) == fields  # in the same order
    assert r.hkeys(key("missing")) == []
    assert r.hvals(key("missing")) == []


def test_hsetnx(r, key):
    h = key()
    assert r.hsetnx(h, "f", "v1") == 1  # creates key and field
    assert r.hsetnx(h, "f", "v2") == 0
    assert r.hget(h, "f") == "v1"
    assert r.hsetnx(h, "g", "") == 1
    assert r.hgetall(h) == {"f": "v1", "g": ""}


def test_hstrlen(r, key):
    h = key()
    r.hset(h, mapping={"a": "hello", "e": "", "n": "-123"})
    assert r.hstrlen(h, "a") == 5
    assert r.hstrlen(h, "e") == 0
    assert r.hstrlen(h, "n") == 4
    assert r.hstrlen(h, "nope") == 0
    assert r.hstrlen(key("missing"), "a") == 0
    r.hincrby(h, "counter", 1000)
    assert r.hstrlen(h, "counter") == 4


# ---------------------------------------------------------------------------
# HRANDFIELD

def test_hrandfield(r, key):
    h = key()
    fields = {f"f{i}": f"v{i}" for i in range(10)}
    r.hset(h, mapping=fields)
    assert r.hrandfield(h) in fields
    for count in (1, 4, 10, 30):  # positive: distinct, at most the hash
        got = r.hrandfield(h, count)
        assert len(got) == min(count, 10) and len(set(got)) == len(got) and \
            set(got) <= set(fields), count
    got = r.hrandfield(h, -30)  # negative: exactly that many, repeats allowed
    assert len(got) == 30 and set(got) <= set(fields)
    flat = r.hrandfield(h, -12, withvalues=True)
    assert len(flat) == 24
    assert all(fields[f] == v for f, v in zip(flat[0::2], flat[1::2]))
    flat = r.hrandfield(h, 6, withvalues=True)
    assert len(flat) == 12 and len(set(flat[0::2])) == 6
    assert all(fields[f] == v for f, v in zip(flat[0::2], flat[1::2]))
    assert r.hrandfield(h, 0) == []
    assert r.hgetall(h) == fields  # nothing removed
    single = key("single")
    r.hset(single, "only", "x")
    assert r.hrandfield(single, -4, withvalues=True) == ["only", "x"] * 4
    assert r.hrandfield(single, 3) == ["only"]


def test_hrandfield_missing_and_errors(r, key):
    assert r.hrandfield(key("missing")) is None
    assert r.hrandfield(key("missing"), 2) == []
    assert r.hrandfield(key("missing"), -2, withvalues=True) == []
    h = key()
    r.hset(h, "a", "1")
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.execute_command("HRANDFIELD", h, "WITHVALUES")
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("HRANDFIELD", h, 2, "FOO")


# ---------------------------------------------------------------------------
# HSCAN

def test_hscan(r, key):
    h = key()
    r.hset(h, mapping={"a": "1", "b": "2", "c": "3"})
    assert hscan_all(r, h) == {"a": "1", "b": "2", "c": "3"}
    assert hscan_all(r, h, match="[ab]") == {"a": "1", "b": "2"}
    assert r.hscan(key("missing"), 0) == (0, {})
    with pytest.raises(redis.ResponseError, match="invalid cursor"):
        r.execute_command("HSCAN", h, "x")


def test_hscan_large(r, key):
    """A full iteration returns every field at least once with its value, and
    nothing else; MATCH filters, COUNT is only a hint."""
    h = key()
    fields = {f"f{i}": f"v{i}" for i in range(3000)}
    items = list(fields.items())
    p = r.pipeline(transaction=False)
    for i in range(0, len(items), 500):
        p.hset(h, mapping=dict(items[i:i + 500]))
    p.execute()
    for count in (None, 10, 1000):
        assert hscan_all(r, h, count=count) == fields, count
    assert hscan_all(r, h, match="f2*", count=100) == \
        {f: v for f, v in fields.items() if f.startswith("f2")}


# ---------------------------------------------------------------------------
# Wrong types, binary data

def test_wrongtype(r, key):
    s, h = key("str"), key("hash")
    r.set(s, "v")
    r.hset(h, "f", "1")
    calls = [("HINCRBY", s, "f", 1), ("HINCRBYFLOAT", s, "f", 1), ("HKEYS", s), ("HVALS", s),
             ("HSETNX", s, "f", "v"), ("HSTRLEN", s, "f"), ("HRANDFIELD", s),
             ("HRANDFIELD", s, 2, "WITHVALUES"), ("HSCAN", s, 0), ("HLEN", s),
             ("HEXISTS", s, "f"), ("LPUSH", h, "a"), ("SADD", h, "a"), ("ZADD", h, 1, "a")]
    for call in calls:
        with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
            r.execute_command(*call)
    assert r.get(s) == "v"
    assert r.hgetall(h) == {"f": "1"}


def test_binary_fields(rb, key):
    h = key()
    fields = {b"\x00": b"zero", b"a\r\nb": b"\xff\x00", bytes(range(256)): b"", b"": b"empty"}
    assert rb.hset(h, mapping=fields) == 4
    assert rb.hgetall(h) == fields
    assert sorted(rb.hkeys(h)) == sorted(fields)
    assert rb.hstrlen(h, b"a\r\nb") == 2
    assert rb.hsetnx(h, b"\x00", b"again") == 0
    assert rb.hget(h, b"") == b"empty"


# ---------------------------------------------------------------------------
# A hash of 5000 fields, against a dict

def test_large_hash(r, key):
    rng = random.Random(41)
    h = key()
    model = {f"field-{i}": f"value-{i}-" + "v" * rng.randrange(0, 100) for i in range(5000)}
    items = list(model.items())
    p = r.pipeline(transaction=False)
    for i in range(0, 5000, 500):
        p.hset(h, mapping=dict(items[i:i + 500]))
    assert sum(p.execute()) == 5000
    assert r.hlen(h) == 5000
    assert r.hgetall(h) == model

    probe = rng.sample(sorted(model), 500)
    p = r.pipeline(transaction=False)
    for f in probe:
        p.hget(h, f)
    p.hget(h, "absent")
    assert p.execute() == [model[f] for f in probe] + [None]
    assert r.hmget(h, probe[:100]) == [model[f] for f in probe[:100]]

    p = r.pipeline(transaction=False)  # overwrite 500, add 500
    for f in probe[:500]:
        model[f] = "new-" + f
        p.hset(h, f, model[f])
    for i in range(500):
        model[f"added-{i}"] = str(i)
        p.hset(h, f"added-{i}", str(i))
    assert sum(p.execute()) == 500
    p = r.pipeline(transaction=False)
    for i in range(100):
        p.hincrby(h, f"added-{i}", 1000)
        model[f"added-{i}"] = str(i + 1000)
    p.execute()

    gone = rng.sample(sorted(model), 2500)
    p = r.pipeline(transaction=False)
    for i in range(0, 2500, 250):
        p.hdel(h, *gone[i:i + 250], "absent")
    assert sum(p.execute()) == 2500
    for f in gone:
        del model[f]
    assert r.hlen(h) == len(model) == 3000
    assert r.hgetall(h) == model
    assert sorted(r.hkeys(h)) == sorted(model)
    assert sorted(r.hvals(h)) == sorted(model.values())
    assert r.hexists(h, gone[0]) is False
    assert hscan_all(r, h, count=250) == model
    picks = r.hrandfield(h, 40, withvalues=True)
    assert all(model[f] == v for f, v in zip(picks[0::2], picks[1::2]))
    assert r.hdel(h, *model) == 3000
    assert r.exists(h) == 0
