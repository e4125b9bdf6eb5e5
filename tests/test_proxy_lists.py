"""Lists through the Redis-protocol proxy, with Redis 7.0 semantics: LPUSH /
RPUSH / LPUSHX / RPUSHX, LPOP / RPOP (with and without a count), LLEN,
LRANGE, LINDEX, LSET, LINSERT, LREM, LTRIM, LPOS, LMOVE / RPOPLPUSH, LMPOP,
the blocking BLPOP / BRPOP / BLMOVE / BLMPOP (immediate data, timeouts, a
client woken by another client's push, nil at once inside MULTI, a client
that stays blocked while its key holds a string), wrong types and exact
error texts, and lists of 5000 elements (many pages) checked against a
Python model.

Targets as in test_proxy.py: a real redis-server ("redis", the reference
these expectations were validated against, 7.0.15) and the proxy of a
`rampart up` cluster ("rampart"); keys apart by the `key` fixture's prefix.
Blocking tests use short timeouts (0.2 s) and bound every wait and join.
"""
import random
import time

import pytest
import redis

from proxy_helpers import (Raw, blocked_clients, client, encode, error_text, in_thread,  # noqa: F401
                           joined, key, r, rank_slice, rb, wait_blocked_clients)

# Two workers whatever the machine's cores (a 2-core machine gets one by default):
# a parked BLPOP is also woken by a push through the other worker.
PROXY_SETTINGS = {"workers": 2}

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def lrem_model(model, count, value):
    """LREM on a Python list in place; returns the number removed."""
    positions = [i for i, v in enumerate(model) if v == value]
    if count < 0:
        positions = positions[::-1][:-count]
    elif count > 0:
        positions = positions[:count]
    for i in sorted(positions, reverse=True):
        del model[i]
    return len(positions)


# ---------------------------------------------------------------------------
# Push, pop, length

def test_push_order_and_length(r, key):
    k = key()
    assert r.lpush(k, "a") == 1
    assert r.lpush(k, "b", "c") == 3  # pushed one by one at the head: c b a
    assert r.rpush(k, "d", "e") == 5
    assert r.lrange(k, 0, -1) == ["c", "b", "a", "d", "e"]
    assert r.llen(k) == 5
    assert r.llen(key("missing")) == 0
    assert r.rpush(k, "a") == 6  # duplicates are fine
    assert r.lrange(k, 0, -1) == ["c", "b", "a", "d", "e", "a"]
    assert r.rpush(key("empty"), "") == 1  # an empty element is an element
    assert r.lrange(key("empty"), 0, -1) == [""]


def test_pushx_only_on_existing_lists(r, key):
    k = key()
    assert r.lpushx(key("missing"), "a") == 0
    assert r.rpushx(key("missing"), "a") == 0
    assert r.exists(key("missing")) == 0  # not created
    r.rpush(k, "m")
    assert r.lpushx(k, "l1", "l2") == 3  # several elements since Redis 4
    assert r.rpushx(k, "r1") == 4
    assert r.lrange(k, 0, -1) == ["l2", "l1", "m", "r1"]


def test_lpop_rpop(r, key):
    k = key()
    r.rpush(k, "a", "b", "c", "d")
    assert r.lpop(k) == "a"
    assert r.rpop(k) == "d"
    assert r.lrange(k, 0, -1) == ["b", "c"]
    assert r.lpop(k) == "b"
    assert r.rpop(k) == "c"
    assert r.exists(k) == 0  # the last element gone, the key is gone
    assert r.lpop(k) is None
    assert r.rpop(key("missing")) is None


def test_pop_with_count(r, key):
    k = key()
    r.rpush(k, *"abcdefg")
    assert r.lpop(k, 2) == ["a", "b"]
    assert r.rpop(k, 2) == ["g", "f"]  # from the tail, tail first
    assert r.lpop(k, 1) == ["c"]  # a count always answers an array
    assert r.execute_command("LPOP", k, 0) == []  # count 0 on a list: empty array
    assert r.execute_command("RPOP", k, 0) == []
    assert r.lrange(k, 0, -1) == ["d", "e"]
    assert r.rpop(k, 10) == ["e", "d"]  # more than there is: all of it
    assert r.exists(k) == 0
    # A missing key with a count answers nil (a null array), count 0 too.
    assert r.execute_command("LPOP", key("missing"), 2) is None
    assert r.execute_command("RPOP", key("missing"), 2) is None
    assert r.execute_command("LPOP", key("missing"), 0) is None
    r.rpush(k, "x")
    for cmd in ("LPOP", "RPOP"):
        with pytest.raises(redis.ResponseError, match="^value is out of range, must be positive$"):
            r.execute_command(cmd, k, -1)
        with pytest.raises(redis.ResponseError, match="value is out of range"):
            r.execute_command(cmd, k, "two")
    assert r.lrange(k, 0, -1) == ["x"]


def test_pop_with_count_raw(redis_target, key):
    """The wire form: nil bulk, nil array, empty array."""
    with Raw(redis_target) as c:
        assert c.call("LPOP", key("missing")) is None
        c.send(b"*3\r\n$4\r\nLPOP\r\n$%d\r\n%s\r\n$1\r\n2\r\n"
               % (len(key("missing")), key("missing").encode()))
        assert c.line() == b"*-1"
        assert c.call("RPUSH", key(), "a") == 1
        c.send(b"*3\r\n$4\r\nLPOP\r\n$%d\r\n%s\r\n$1\r\n0\r\n" % (len(key()), key().encode()))
        assert c.line() == b"*0"
        assert c.call("RPOP", key(), "5") == [b"a"]


# ---------------------------------------------------------------------------
# Reading by index

def test_lrange(r, key):
    k = key()
    r.rpush(k, *"abcde")
    cases = [(0, -1), (0, 0), (1, 3), (-2, -1), (-100, 100), (2, 1), (5, 10), (-1, -2),
             (3, 100), (-3, 2), (-6, 0), (0, -6), (4, 4), (-5, -5)]
    model = list("abcde")
    for start, stop in cases:
        assert r.lrange(k, start, stop) == rank_slice(model, start, stop), (start, stop)
    assert r.lrange(key("missing"), 0, -1) == []
    with pytest.raises(redis.ResponseError, match="value is not an integer"):
        r.execute_command("LRANGE", k, "a", "1")


def test_lindex(r, key):
    k = key()
    r.rpush(k, "a", "b", "c")
    assert [r.lindex(k, i) for i in (0, 1, 2, 3, -1, -3, -4, 100)] == \
        ["a", "b", "c", None, "c", "a", None, None]
    assert r.lindex(key("missing"), 0) is None
    with pytest.raises(redis.ResponseError, match="value is not an integer"):
        r.execute_command("LINDEX", k, "x")


def test_lset(r, key, redis_target):
    k = key()
    r.rpush(k, "a", "b", "c")
    assert r.lset(k, 0, "A") is True
    assert r.lset(k, -1, "C") is True
    assert r.lrange(k, 0, -1) == ["A", "b", "C"]
    with Raw(redis_target) as c:
        assert error_text(c.call("LSET", key("missing"), "0", "x")) == "ERR no such key"
        assert error_text(c.call("LSET", k, "3", "x")) == "ERR index out of range"
        assert error_text(c.call("LSET", k, "-4", "x")) == "ERR index out of range"
        assert c.call("LSET", k, "1", "B") == b"OK"
    assert r.lrange(k, 0, -1) == ["A", "B", "C"]
    assert r.exists(key("missing")) == 0


# ---------------------------------------------------------------------------
# Inserting and removing in place

def test_linsert(r, key):
    k = key()
    r.rpush(k, "a", "b", "a")
    assert r.linsert(k, "BEFORE", "a", "x") == 4  # before the first match only
    assert r.linsert(k, "AFTER", "a", "y") == 5
    assert r.lrange(k, 0, -1) == ["x", "a", "y", "b", "a"]
    assert r.execute_command("LINSERT", k, "after", "b", "z") == 6  # case-insensitive
    assert r.lrange(k, 0, -1) == ["x", "a", "y", "b", "z", "a"]
    assert r.linsert(k, "BEFORE", "nope", "w") == -1  # no pivot: -1, nothing inserted
    assert r.linsert(key("missing"), "BEFORE", "a", "w") == 0  # no key: 0, not created
    assert r.exists(key("missing")) == 0
    assert r.llen(k) == 6
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("LINSERT", k, "MIDDLE", "a", "w")


def test_lrem(r, key):
    k = key()
    start = list("aXbXcXdXe")
    cases = [(2, "X"), (-2, "X"), (0, "X"), (1, "nope"), (0, "a"), (-1, "e")]
    for count, value in cases:
        r.delete(k)
        r.rpush(k, *start)
        model = list(start)
        removed = lrem_model(model, count, value)
        assert r.lrem(k, count, value) == removed, (count, value)
        assert r.lrange(k, 0, -1) == model, (count, value)
    r.delete(k)
    r.rpush(k, "a", "b", "a")
    assert r.lrem(k, -1, "a") == 1
    assert r.lrange(k, 0, -1) == ["a", "b"]  # the last "a" went
    assert r.lrem(k, 0, "a") == 1
    assert r.lrem(k, 0, "b") == 1
    assert r.exists(k) == 0
    assert r.lrem(key("missing"), 0, "a") == 0


def test_ltrim(r, key):
    k = key()
    cases = [(1, 3), (0, -1), (-2, -1), (-100, 1), (2, 100), (3, 1), (10, 20), (0, 0)]
    for start, stop in cases:
        r.delete(k)
        r.rpush(k, *"abcde")
        assert r.ltrim(k, start, stop) is True
        expected = rank_slice(list("abcde"), start, stop)
        assert r.lrange(k, 0, -1) == expected, (start, stop)
        assert r.exists(k) == (1 if expected else 0), (start, stop)  # emptied: gone
    assert r.ltrim(key("missing"), 0, 1) is True
    assert r.exists(key("missing")) == 0


def test_lpos(r, key):
    k = key()
    r.rpush(k, "a", "b", "c", "a", "b", "c", "1", "2", "a")
    lpos = lambda *args: r.execute_command("LPOS", k, *args)  # noqa: E731
    assert lpos("a") == 0
    assert lpos("c") == 2
    assert lpos("nope") is None
    assert lpos("a", "RANK", 2) == 3
    assert lpos("a", "RANK", 3) == 8
    assert lpos("a", "RANK", 4) is None
    assert lpos("a", "RANK", -1) == 8  # from the tail
    assert lpos("a", "RANK", -2) == 3
    assert lpos("a", "COUNT", 2) == [0, 3]
    assert lpos("a", "COUNT", 0) == [0, 3, 8]  # 0: every match
    assert lpos("a", "COUNT", 0, "RANK", -1) == [8, 3, 0]
    assert lpos("a", "RANK", 2, "COUNT", 5) == [3, 8]
    assert lpos("nope", "COUNT", 0) == []  # with COUNT no match is an empty array
    assert lpos("a", "MAXLEN", 1) == 0
    assert lpos("b", "MAXLEN", 1) is None  # only the first element compared
    assert lpos("b", "COUNT", 0, "MAXLEN", 5) == [1, 4]
    assert lpos("a", "COUNT", 0, "MAXLEN", 2, "RANK", -1) == [8]  # the last 2 only
    assert lpos("a", "COUNT", 0, "MAXLEN", 0) == [0, 3, 8]  # 0: no limit
    assert r.execute_command("LPOS", key("missing"), "a") is None
    assert r.execute_command("LPOS", key("missing"), "a", "COUNT", 0) == []
    assert r.lpos(k, "c", rank=-1, count=1) == [5]  # redis-py's own form


def test_lpos_errors(redis_target, key):
    k = key()
    with Raw(redis_target) as c:
        c.call("RPUSH", k, "a", "b")
        expected = {
            ("RANK", "0"): "ERR RANK can't be zero: use 1 to start from the first match, "
                           "2 from the second ... or use negative to start from the end "
                           "of the list",
            ("COUNT", "-1"): "ERR COUNT can't be negative",
            ("MAXLEN", "-1"): "ERR MAXLEN can't be negative",
            ("RANK", "x"): "ERR value is not an integer or out of range",
            ("COUNT",): "ERR syntax error",
            ("FOO", "1"): "ERR syntax error",
        }
        for args, text in expected.items():
            assert error_text(c.call("LPOS", k, "a", *args)) == text, args


# ---------------------------------------------------------------------------
# Moving between lists

def test_lmove(r, key):
    src, dst = key("src"), key("dst")
    r.rpush(src, "a", "b", "c")
    assert r.lmove(src, dst, "LEFT", "RIGHT") == "a"
    assert r.lmove(src, dst, "RIGHT", "LEFT") == "c"
    assert r.lmove(src, dst, "LEFT", "LEFT") == "b"
    assert r.exists(src) == 0  # emptied by the move
    assert r.lrange(dst, 0, -1) == ["b", "c", "a"]
    assert r.lmove(dst, src, "RIGHT", "RIGHT") == "a"
    assert r.lrange(src, 0, -1) == ["a"]
    assert r.lmove(key("missing"), dst, "LEFT", "RIGHT") is None
    assert r.exists(key("missing")) == 0
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("LMOVE", src, dst, "UP", "DOWN")
    assert r.lrange(src, 0, -1) == ["a"]


def test_lmove_same_list_rotates(r, key):
    k = key()
    r.rpush(k, "a", "b", "c", "d")
    assert r.lmove(k, k, "LEFT", "RIGHT") == "a"
    assert r.lrange(k, 0, -1) == ["b", "c", "d", "a"]
    assert r.lmove(k, k, "RIGHT", "LEFT") == "a"
    assert r.lrange(k, 0, -1) == ["a", "b", "c", "d"]
    assert r.lmove(k, k, "LEFT", "LEFT") == "a"  # taken and put back in place
    assert r.lmove(k, k, "RIGHT", "RIGHT") == "d"
    assert r.lrange(k, 0, -1) == ["a", "b", "c", "d"]
    assert r.rpoplpush(k, k) == "d"
    assert r.lrange(k, 0, -1) == ["d", "a", "b", "c"]
    one = key("one")
    r.rpush(one, "x")
    assert r.lmove(one, one, "LEFT", "RIGHT") == "x"
    assert r.lrange(one, 0, -1) == ["x"]


def test_rpoplpush(r, key):
    src, dst = key("src"), key("dst")
    r.rpush(src, "a", "b")
    r.rpush(dst, "z")
    assert r.rpoplpush(src, dst) == "b"
    assert r.rpoplpush(src, dst) == "a"
    assert r.rpoplpush(src, dst) is None
    assert r.lrange(dst, 0, -1) == ["a", "b", "z"]
    assert r.exists(src) == 0


def test_lmove_wrongtype(r, key):
    lst, s = key("list"), key("str")
    r.rpush(lst, "a")
    r.set(s, "v")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.lmove(lst, s, "LEFT", "RIGHT")  # destination of the wrong type: nothing moves
    assert r.lrange(lst, 0, -1) == ["a"]
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.lmove(s, lst, "LEFT", "RIGHT")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.rpoplpush(lst, s)
    assert r.lrange(lst, 0, -1) == ["a"]
    assert r.get(s) == "v"
    # A missing source answers nil before the destination's type is looked at.
    assert r.lmove(key("missing"), s, "LEFT", "RIGHT") is None


# ---------------------------------------------------------------------------
# Wrong types

def test_wrongtype(r, key):
    s, h = key("str"), key("hash")
    r.set(s, "v")
    r.hset(h, "f", "v")
    calls = [("LPUSH", s, "a"), ("RPUSH", s, "a"), ("LPUSHX", s, "a"), ("RPUSHX", s, "a"),
             ("LPOP", s), ("RPOP", s), ("LPOP", s, 2), ("LLEN", s), ("LRANGE", s, 0, -1),
             ("LINDEX", s, 0), ("LSET", s, 0, "x"), ("LINSERT", s, "BEFORE", "a", "b"),
             ("LREM", s, 0, "a"), ("LTRIM", s, 0, 1), ("LPOS", s, "a"),
             ("LPUSH", h, "a"), ("LRANGE", h, 0, -1)]
    for call in calls:
        with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
            r.execute_command(*call)
    assert r.get(s) == "v"
    assert r.hgetall(h) == {"f": "v"}
    lst = key("list")
    r.rpush(lst, "a")
    for call in [("GET", lst), ("HGET", lst, "f"), ("INCR", lst), ("ZADD", lst, 1, "m")]:
        with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
            r.execute_command(*call)
    assert r.type(lst) == "list"
    assert r.set(lst, "now a string") is True  # SET replaces any type
    assert r.get(lst) == "now a string"


def test_binary_elements(rb, key):
    k = key()
    values = [b"\x00", b"a\r\nb", b"*1\r\n$1\r\nx\r\n", bytes(range(256)), b""]
    assert rb.rpush(k, *values) == len(values)
    assert rb.lrange(k, 0, -1) == values
    assert rb.lindex(k, 3) == bytes(range(256))
    assert rb.lpos(k, b"a\r\nb") == 1
    assert rb.lrem(k, 0, b"\x00") == 1
    assert rb.lpop(k) == b"a\r\nb"


# ---------------------------------------------------------------------------
# Blocking pops

def test_blocking_pops_with_data_answer_at_once(r, key):
    a, b = key("a"), key("b")
    r.rpush(b, "b1", "b2")
    t0 = time.monotonic()
    assert r.blpop([key("missing"), b], timeout=5) == (b, "b1")  # first non-empty key
    assert r.brpop([a, b], timeout=5) == (b, "b2")
    assert time.monotonic() - t0 < 1.0
    assert r.exists(b) == 0
    r.rpush(a, "x", "y")
    r.rpush(b, "z")
    assert r.blpop([a, b], timeout=0) == (a, "x")  # 0 blocks forever, but there is data
    assert r.blmove(a, b, timeout=5, src="RIGHT", dest="LEFT") == "y"
    assert r.lrange(b, 0, -1) == ["y", "z"]
    assert r.execute_command("BRPOPLPUSH", b, a, "1") == "z"
    assert r.lrange(a, 0, -1) == ["z"]


def test_blocking_pops_time_out(r, key):
    for call in [lambda: r.blpop([key("a"), key("b")], timeout=0.2),
                 lambda: r.brpop([key("a")], timeout=0.2),
                 lambda: r.blmove(key("a"), key("b"), timeout=0.2, src="LEFT", dest="RIGHT"),
                 lambda: r.execute_command("BRPOPLPUSH", key("a"), key("b"), "0.2")]:
        t0 = time.monotonic()
        assert call() is None
        elapsed = time.monotonic() - t0
        assert 0.15 <= elapsed < 1.5, elapsed
    assert r.exists(key("a"), key("b")) == 0


def test_blocking_pop_timeout_raw(redis_target, key):
    """On the wire a timed-out BLPOP is a nil array, BLMOVE a nil bulk."""
    with Raw(redis_target) as c:
        c.send(b"*3\r\n$5\r\nBLPOP\r\n$%d\r\n%s\r\n$3\r\n0.2\r\n"
               % (len(key()), key().encode()))
        assert c.line() == b"*-1"
        assert c.call("BLMOVE", key(), key("d"), "LEFT", "LEFT", "0.2") is None
        assert c.call("PING") == b"PONG"  # the connection serves on


def test_blpop_woken_by_push(redis_target, r, key):
    k = key()
    waiter = client(redis_target, socket_timeout=10)
    try:
        t, out = in_thread(lambda: waiter.blpop([key("other"), k], timeout=5))
        time.sleep(0.1)
        t0 = time.monotonic()
        assert r.rpush(k, "v1", "v2") == 2
        assert joined(t, out) == (k, "v1")
        assert time.monotonic() - t0 < 2.0
        assert r.lrange(k, 0, -1) == ["v2"]
    finally:
        waiter.close()


def test_brpop_forever_woken_by_push(redis_target, r, key):
    k = key()
    waiter = client(redis_target, socket_timeout=10)
    try:
        t, out = in_thread(lambda: waiter.brpop([k], timeout=0))  # 0: no timeout
        time.sleep(0.1)
        r.lpush(k, "a", "b")  # list b a: BRPOP takes a
        assert joined(t, out) == (k, "a")
        assert r.lrange(k, 0, -1) == ["b"]
    finally:
        waiter.close()


def test_blmove_woken_by_push(redis_target, r, key):
    src, dst = key("src"), key("dst")
    r.rpush(dst, "old")
    waiter = client(redis_target, socket_timeout=10)
    try:
        t, out = in_thread(lambda: waiter.blmove(src, dst, timeout=5, src="LEFT", dest="LEFT"))
        time.sleep(0.1)
        r.rpush(src, "x", "y")
        assert joined(t, out) == "x"
        assert r.lrange(src, 0, -1) == ["y"]
        assert r.lrange(dst, 0, -1) == ["x", "old"]
    finally:
        waiter.close()


def test_two_blocked_clients_each_get_one(redis_target, r, key):
    k = key()
    waiters = [client(redis_target, socket_timeout=10) for _ in range(2)]
    try:
        runs = [in_thread(lambda w=w: w.blpop([k], timeout=5)) for w in waiters]
        time.sleep(0.15)
        r.rpush(k, "a", "b", "c")
        got = sorted(joined(t, out)[1] for t, out in runs)
        assert got == ["a", "b"]  # the first two elements, one each
        assert r.lrange(k, 0, -1) == ["c"]
    finally:
        for w in waiters:
            w.close()


def test_blocking_pop_errors(r, key, redis_target):
    s, lst = key("str"), key("list")
    r.set(s, "v")
    r.rpush(lst, "a")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.blpop([s], timeout=0.2)
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.brpop([key("missing"), s], timeout=0.2)  # a later key of the wrong type
    assert r.blpop([lst, s], timeout=0.2) == (lst, "a")  # data before it: served
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.blmove(s, lst, timeout=0.2, src="LEFT", dest="RIGHT")
    with Raw(redis_target) as c:
        assert error_text(c.call("BLPOP", lst, "-1")) == "ERR timeout is negative"
        assert error_text(c.call("BLPOP", lst, "soon")) == \
            "ERR timeout is not a float or out of range"
        assert error_text(c.call("BLMOVE", lst, s, "LEFT", "UP", "1")) == "ERR syntax error"


def test_blocking_pops_inside_multi_do_not_block(r, key):
    """Inside MULTI a blocking pop on empty lists answers nil at once."""
    k = key()
    p = r.pipeline(transaction=True)
    p.blpop([k], timeout=5).brpop([k], timeout=5)
    p.blmove(k, key("d"), timeout=5, src="LEFT", dest="RIGHT")
    p.rpush(k, "a").blpop([k], timeout=5)
    t0 = time.monotonic()
    assert p.execute() == [None, None, None, 1, (k, "a")]
    assert time.monotonic() - t0 < 1.0


# ---------------------------------------------------------------------------
# LMPOP and BLMPOP

def test_lmpop(r, key):
    a, b, c = key("a"), key("b"), key("c")
    r.rpush(b, "b1", "b2", "b3")
    r.rpush(c, "c1")
    # From the first key that has elements; a missing key is passed over.
    assert r.lmpop(3, a, b, c, direction="LEFT") == [b, ["b1"]]
    assert r.lmpop(3, a, b, c, direction="RIGHT", count=1) == [b, ["b3"]]
    assert r.lmpop(2, b, c, direction="LEFT", count=5) == [b, ["b2"]]  # fewer than count: all
    assert r.exists(b) == 0  # emptied: gone
    assert r.lmpop(3, a, b, c, direction="RIGHT", count=2) == [c, ["c1"]]
    assert r.lmpop(3, a, b, c, direction="LEFT") is None  # nothing anywhere: nil
    assert r.exists(a, b, c) == 0
    r.rpush(a, *"abcdef")
    assert r.lmpop(1, a, direction="LEFT", count=2) == [a, ["a", "b"]]
    assert r.lmpop(1, a, direction="RIGHT", count=3) == [a, ["f", "e", "d"]]  # tail first
    assert r.execute_command("LMPOP", 1, a, "left", "count", 1) == [a, ["c"]]  # any case
    assert r.exists(a) == 0


def test_lmpop_raw(redis_target, key):
    """On the wire: [key, [elements]], and a nil array when every list is empty."""
    a, b = key("a"), key("b")
    with Raw(redis_target) as c:
        c.send(encode("LMPOP", 2, a, b, "LEFT"))
        assert c.line() == b"*-1"
        assert c.call("RPUSH", b, "x", "y", "z") == 3
        assert c.call("LMPOP", 2, a, b, "LEFT") == [b.encode(), [b"x"]]
        assert c.call("LMPOP", 2, a, b, "RIGHT", "COUNT", 5) == [b.encode(), [b"z", b"y"]]
        assert c.call("EXISTS", b) == 0


def test_lmpop_errors(redis_target, key):
    k, s = key("list"), key("str")
    with Raw(redis_target) as c:
        c.call("RPUSH", k, "a", "b")
        c.call("SET", s, "v")
        expected = {
            ("0", k, "LEFT"): "ERR numkeys should be greater than 0",
            ("-1", k, "LEFT"): "ERR numkeys should be greater than 0",
            ("x", k, "LEFT"): "ERR numkeys should be greater than 0",
            ("2", k, "LEFT"): "ERR syntax error",  # more keys than arguments
            ("1", k, "UP"): "ERR syntax error",
            ("1", k, "LEFT", "COUNT", "0"): "ERR count should be greater than 0",
            ("1", k, "LEFT", "COUNT", "-1"): "ERR count should be greater than 0",
            ("1", k, "LEFT", "COUNT", "x"): "ERR count should be greater than 0",
            ("1", k, "LEFT", "COUNT"): "ERR syntax error",
            ("1", k, "LEFT", "COUNT", "1", "COUNT", "2"): "ERR syntax error",
            ("1", k, "LEFT", "FOO"): "ERR syntax error",
            ("1", k, "UP", "COUNT", "0"): "ERR syntax error",  # the end before the count
            ("1", k): "ERR wrong number of arguments for 'lmpop' command",
            ("1", s, "LEFT"): WRONGTYPE,
            ("2", key("missing"), s, "LEFT"): WRONGTYPE,
            ("2", s, k, "LEFT"): WRONGTYPE,  # a wrong type before the data stops the walk
        }
        for args, text in expected.items():
            assert error_text(c.call("LMPOP", *args)) == text, args
        assert c.call("LRANGE", k, 0, -1) == [b"a", b"b"]  # no error popped anything
        # A list with data before the key of the wrong type: served.
        assert c.call("LMPOP", 2, k, s, "LEFT") == [k.encode(), [b"a"]]
        assert c.call("GET", s) == b"v"


def test_blmpop_with_data_answers_at_once(r, key):
    a, b = key("a"), key("b")
    r.rpush(b, "b1", "b2", "b3")
    t0 = time.monotonic()
    assert r.blmpop(5, 2, a, b, direction="LEFT") == [b, ["b1"]]
    assert r.blmpop(0, 2, a, b, direction="RIGHT", count=5) == [b, ["b3", "b2"]]  # 0: forever
    assert time.monotonic() - t0 < 1.0
    assert r.exists(b) == 0


def test_blmpop_times_out(redis_target, r, key):
    t0 = time.monotonic()
    assert r.blmpop(0.2, 2, key("a"), key("b"), direction="LEFT", count=3) is None
    assert 0.15 <= time.monotonic() - t0 < 1.5
    with Raw(redis_target) as c:
        c.send(encode("BLMPOP", "0.2", 1, key("a"), "RIGHT"))
        assert c.line() == b"*-1"  # a nil array
        assert c.call("PING") == b"PONG"
    assert r.exists(key("a"), key("b")) == 0


def test_blmpop_woken_by_push(redis_target, r, key):
    a, b = key("a"), key("b")
    waiter = client(redis_target, socket_timeout=10)
    try:
        t, out = in_thread(lambda: waiter.blmpop(5, 2, a, b, direction="LEFT", count=2))
        time.sleep(0.1)
        t0 = time.monotonic()
        assert r.rpush(b, "x", "y", "z") == 3
        assert joined(t, out) == [b, ["x", "y"]]
        assert time.monotonic() - t0 < 2.0
        assert r.lrange(b, 0, -1) == ["z"]
    finally:
        waiter.close()


def test_blmpop_errors(redis_target, key):
    k, s = key("list"), key("str")
    with Raw(redis_target) as c:
        c.call("RPUSH", k, "a")
        c.call("SET", s, "v")
        expected = {
            ("-1", "1", k, "LEFT"): "ERR timeout is negative",
            ("soon", "1", k, "LEFT"): "ERR timeout is not a float or out of range",
            ("0.2", "0", k, "LEFT"): "ERR numkeys should be greater than 0",
            ("0.2", "x", k, "LEFT"): "ERR numkeys should be greater than 0",
            ("0.2", "2", k, "LEFT"): "ERR syntax error",
            ("0.2", "1", k, "MIDDLE"): "ERR syntax error",
            ("0.2", "1", k, "LEFT", "COUNT", "0"): "ERR count should be greater than 0",
            ("0.2", "1", k, "LEFT", "COUNT"): "ERR syntax error",
            ("0.2", "1", k): "ERR wrong number of arguments for 'blmpop' command",
            ("0.2", "1", s, "LEFT"): WRONGTYPE,
            ("0.2", "2", key("missing"), s, "RIGHT"): WRONGTYPE,
        }
        for args, text in expected.items():
            assert error_text(c.call("BLMPOP", *args)) == text, args
        assert c.call("LRANGE", k, 0, -1) == [b"a"]


def test_blmpop_error_order(redis_target, key):
    """Redis checks numkeys, the end and COUNT before the timeout."""
    k = key()
    with Raw(redis_target) as c:
        expected = {
            ("-1", "0", k, "LEFT"): "ERR numkeys should be greater than 0",
            ("-1", "1", k, "UP"): "ERR syntax error",
            ("-1", "1", k, "LEFT", "COUNT", "0"): "ERR count should be greater than 0",
            ("soon", "2", k, "LEFT"): "ERR syntax error",
        }
        for args, text in expected.items():
            assert error_text(c.call("BLMPOP", *args)) == text, args


def test_blmpop_inside_multi_does_not_block(redis_target, key):
    a, b = key("a"), key("b")
    with Raw(redis_target) as c:
        assert c.call("MULTI") == b"OK"
        assert c.call("BLMPOP", 5, 2, a, b, "LEFT") == b"QUEUED"
        assert c.call("RPUSH", b, "x", "y") == b"QUEUED"
        assert c.call("BLMPOP", 5, 2, a, b, "RIGHT", "COUNT", 5) == b"QUEUED"
        t0 = time.monotonic()
        c.send(encode("EXEC"))
        assert c.line() == b"*3"
        assert c.line() == b"*-1"  # nothing yet: a nil array at once
        assert c.reply() == 2
        assert c.reply() == [b.encode(), [b"y", b"x"]]
        assert time.monotonic() - t0 < 1.0
        assert c.call("EXISTS", a, b) == 0


def test_blpop_stays_blocked_while_key_is_a_string(redis_target, r, key):
    """A blocked client waits on for a list: a SET of its key to a string
    neither serves it nor fails it; a list pushed there later is served."""
    k = key()
    waiter = client(redis_target, socket_timeout=10)
    try:
        t, out = in_thread(lambda: waiter.blpop([k], timeout=5))
        time.sleep(0.1)
        assert r.set(k, "a string") is True
        time.sleep(0.3)
        assert t.is_alive(), out  # still blocked: no WRONGTYPE
        assert r.delete(k) == 1
        assert r.rpush(k, "v1", "v2") == 2
        assert joined(t, out) == (k, "v1")
        assert r.lrange(k, 0, -1) == ["v2"]
    finally:
        waiter.close()


def test_blpop_behind_a_pipelined_command_keeps_its_place(redis_target, r, key):
    """A BLPOP pipelined behind another command (PING) parks in the turn that
    answers the PING, and keeps what a parked command keeps: its place in
    line (a client that blocks on the key later is served after it) and its
    pass-over of a key turned string (no WRONGTYPE when woken by the SET).
    Before the fix, finishing the PING reset the session's park: woken by the
    SET, the BLPOP answered WRONGTYPE."""
    k = key()
    before = blocked_clients(r)
    with Raw(redis_target) as first:
        first.send(encode("PING") + encode("BLPOP", k, "5"))  # one write: one turn
        assert first.reply() == b"PONG"
        wait_blocked_clients(r, before + 1)
        second = client(redis_target, socket_timeout=10)
        try:
            t, out = in_thread(lambda: second.blpop([k], timeout=5))
            wait_blocked_clients(r, before + 2)
            assert r.set(k, "a string") is True
            time.sleep(0.3)
            assert t.is_alive(), out
            assert r.delete(k) == 1
            assert r.rpush(k, "v1") == 1
            assert first.reply() == [k.encode(), b"v1"]  # first in line, first served
            assert r.rpush(k, "v2") == 1
            assert joined(t, out) == (k, "v2")
        finally:
            second.close()


def pushes_one_at_a_time(redis_target, r, k, waiters, after_each_push=lambda i: None):
    """`waiters` clients send BLPOP k 5 in turn, each blocked before the
    next sends; then r pushes v0, v1, ... to k one RPUSH at a time (each sent
    after the reply to the one before), calling after_each_push(i) after the
    push of v<i>. Returns the waiters' replies, in the order they blocked."""
    before = blocked_clients(r)
    conns = []
    try:
        for i in range(waiters):
            conns.append(Raw(redis_target))
            conns[-1].send(encode("BLPOP", k, "5"))  # (under Raw's 10 s socket timeout)
            wait_blocked_clients(r, before + i + 1)
        for i in range(waiters):
            assert r.rpush(k, f"v{i}") >= 1  # (rampart's waiters may not have popped yet)
            after_each_push(i)
        return [c.reply() for c in conns]
    finally:
        for c in conns:
            c.close()


def test_blocked_clients_are_served_in_order_by_pushes_one_at_a_time(redis_target, r, key):
    """Eight clients block on one key in turn (spread over both workers);
    then one client pushes eight elements, one RPUSH at a time, each sent
    after the reply to the one before. Each push serves the oldest waiter
    left, so waiter i gets element i. Before the fix a waiter woken by one
    push could run after the next (its turn on the other worker came late)
    and take its element ahead of an older waiter woken by that push: 12 of
    30 rounds were out of order."""
    for n in range(6):
        k = key(f"r{n}")
        got = pushes_one_at_a_time(redis_target, r, k, 8)
        assert got == [[k.encode(), f"v{i}".encode()] for i in range(8)], f"round {n}"
        assert r.llen(k) == 0


def test_a_client_blocking_after_a_push_does_not_take_a_waiters_element(redis_target, r, key):
    """Four clients block on one key; then one client pushes four elements,
    one RPUSH at a time, and after each push's reply a fifth client sends a
    BLPOP of its own. Redis serves the push to the oldest waiter within the
    RPUSH, so the newcomers find nothing and time out, and waiter i gets
    element i. Before the fix a newcomer through the other worker could pop
    the element before the waiter the push had woken ran (11 of 20 rounds),
    and that waiter timed out."""
    newcomers = [Raw(redis_target) for _ in range(4)]
    try:
        for n in range(5):
            k = key(f"r{n}")
            got = pushes_one_at_a_time(redis_target, r, k, 4,
                                       lambda i: newcomers[i].send(encode("BLPOP", k, "0.3")))
            assert got == [[k.encode(), f"v{i}".encode()] for i in range(4)], f"round {n}"
            assert [c.reply() for c in newcomers] == [None] * 4, f"round {n}"
    finally:
        for c in newcomers:
            c.close()


def test_blmpop_passes_over_key_turned_string(redis_target, r, key):
    """Blocked on two keys, the first SET to a string and a list pushed on
    the second: served from the second, no WRONGTYPE."""
    a, b = key("a"), key("b")
    waiter = client(redis_target, socket_timeout=10)
    try:
        t, out = in_thread(lambda: waiter.blmpop(5, 2, a, b, direction="RIGHT"))
        time.sleep(0.1)
        assert r.set(a, "a string") is True
        time.sleep(0.3)
        assert t.is_alive(), out
        assert r.rpush(b, "x", "y") == 2
        assert joined(t, out) == [b, ["y"]]
        assert r.get(a) == "a string"
        assert r.lrange(b, 0, -1) == ["x"]
    finally:
        waiter.close()


# ---------------------------------------------------------------------------
# Large lists (many pages), against a Python model

def element(i, rng):
    return f"e{i}:" + "x" * rng.randrange(0, 120)


def load(r, k, values, batch=500):
    p = r.pipeline(transaction=False)
    for i in range(0, len(values), batch):
        p.rpush(k, *values[i:i + batch])
    lengths = p.execute()
    assert lengths[-1] == len(values)


def test_large_list_reads(r, key):
    rng = random.Random(11)
    k = key()
    model = [element(i, rng) for i in range(5000)]
    load(r, k, model)
    assert r.llen(k) == 5000
    assert r.lrange(k, 0, -1) == model
    slices = [(0, 99), (4900, 4999), (-100, -1), (2500, 2600), (123, 4321), (-5000, 10),
              (4990, 6000), (5000, 5100), (-7000, -4990), (3000, 2999)]
    slices += [tuple(sorted((rng.randrange(-5500, 5500), rng.randrange(-5500, 5500))))
               for _ in range(40)]
    p = r.pipeline(transaction=False)
    for start, stop in slices:
        p.lrange(k, start, stop)
    for (start, stop), got in zip(slices, p.execute()):
        assert got == rank_slice(model, start, stop), (start, stop)
    positions = [0, 1, 4999, 5000, -1, -5000, -5001] + \
        [rng.randrange(-5000, 5000) for _ in range(300)]
    p = r.pipeline(transaction=False)
    for i in positions:
        p.lindex(k, i)
    for i, got in zip(positions, p.execute()):
        expected = model[i] if -5000 <= i < 5000 else None
        assert got == expected, i


def test_large_list_edits(r, key):
    rng = random.Random(12)
    k = key()
    model = [element(i, rng) for i in range(5000)]
    for i in range(0, 5000, 250):
        model[i] = "dup"  # 20 equal elements spread over the list
    load(r, k, model)
    assert r.execute_command("LPOS", k, "dup", "COUNT", 0) == list(range(0, 5000, 250))
    assert r.execute_command("LPOS", k, "dup", "RANK", -3) == 4250

    p = r.pipeline(transaction=False)
    for i in rng.sample(range(5000), 100):  # LSET at scattered positions
        model[i] = f"set{i}"
        p.lset(k, i, model[i])
    assert all(p.execute())

    pivot = model[2501]
    assert pivot.startswith("e2501:")
    assert r.linsert(k, "BEFORE", pivot, "before-mid") == 5001
    model.insert(model.index(pivot), "before-mid")
    assert r.linsert(k, "AFTER", pivot, "after-mid") == 5002
    model.insert(model.index(pivot) + 1, "after-mid")
    assert r.lrange(k, 2495, 2510) == model[2495:2511]

    for count in (3, -3, 0):
        expected = lrem_model(model, count, "dup")
        assert r.lrem(k, count, "dup") == expected, count
        assert r.llen(k) == len(model)
    assert r.lrange(k, 0, -1) == model

    assert r.lpop(k, 700) == model[:700]
    assert r.rpop(k, 300) == model[-300:][::-1]
    model = model[700:-300]
    for _ in range(50):  # rotate across the whole list
        assert r.lmove(k, k, "LEFT", "RIGHT") == model[0]
        model.append(model.pop(0))
    assert r.ltrim(k, 1000, -1001) is True
    model = rank_slice(model, 1000, -1001)
    assert r.llen(k) == len(model)
    assert r.lrange(k, 0, -1) == model
    p = r.pipeline(transaction=False)
    for i in range(0, len(model), 97):
        p.lindex(k, i)
    assert p.execute() == model[::97]
