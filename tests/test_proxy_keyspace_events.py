"""Keyspace notifications (docs/proxy.md, "Keyspace notifications") beside
redis-server 7.0: the same commands go to both (redis_and_rampart), and after
each one the events a pattern subscriber of `__key*__:*` received are compared
exactly — channels, messages and their order. A PUBLISH on a channel the
subscriber also listens to marks the end of a command's events: both servers
deliver a publish after the events of the commands answered before it.

The sequence walks every write command group with outcomes that send events
and outcomes that send none (a no-op, a refused option, an error); then the
classes (masks, `n`, `m`, `x`), the configuration's texts, a blocked pop
served by a push, and expiry by time.
"""
import threading
import time

import pytest
import redis

from proxy_helpers import replies_of

SENTINEL = "ksn-test:sentinel"


class Listener:
    """A PSUBSCRIBE `__key*__:*` (and SUBSCRIBE SENTINEL) connection to one server."""

    def __init__(self, client):
        self.client = client
        self.pubsub = client.pubsub()
        self.pubsub.psubscribe("__key*__:*")
        self.pubsub.subscribe(SENTINEL)
        self.marks = 0
        confirmed = 0
        deadline = time.monotonic() + 10
        while confirmed < 2 and time.monotonic() < deadline:
            m = self.pubsub.get_message(timeout=1)
            if m is not None and m["type"] in ("psubscribe", "subscribe"):
                confirmed += 1
        assert confirmed == 2, "no subscribe confirmations"

    def events(self):
        """The events received since the last call, up to a fresh mark."""
        self.marks += 1
        mark = str(self.marks).encode()
        self.client.publish(SENTINEL, mark)
        got = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            m = self.pubsub.get_message(timeout=1)
            if m is None:
                continue
            if m["type"] == "message" and m["channel"] == SENTINEL.encode():
                if m["data"] == mark:
                    return got
            elif m["type"] == "pmessage":
                got.append((m["channel"].decode(), m["data"].decode()))
        raise AssertionError(f"mark {mark!r} not received")

    def close(self):
        self.pubsub.close()


@pytest.fixture
def pair(redis_and_rampart):
    """(clients, listeners) with both servers flushed and notifications off
    again at the end."""
    clients = redis_and_rampart
    for c in clients:
        c.flushall()
    listeners = [Listener(c) for c in clients]
    yield clients, listeners
    for c in clients:
        c.config_set("notify-keyspace-events", "")
    for listener in listeners:
        listener.close()


# Commands whose reply is a set: compared sorted.
UNORDERED = {"SPOP", "SMEMBERS"}


def run_both(pair, flags, commands):
    """Sends each command to both servers under `flags`; asserts equal replies
    and equal events per command. Returns every command's events."""
    clients, listeners = pair
    for c in clients:
        c.config_set("notify-keyspace-events", flags)
    seen = []
    for args in commands:
        replies = replies_of(clients, *args)
        if args[0] in UNORDERED:
            replies = [sorted(r) if isinstance(r, list) else r for r in replies]
        events = [listener.events() for listener in listeners]
        assert replies[0] == replies[1], f"{args}: redis {replies[0]!r} != rampart {replies[1]!r}"
        assert events[0] == events[1], f"{args}: redis sent {events[0]}, rampart {events[1]}"
        seen.append(events[0])
    return seen


STRINGS = [
    ("SET", "s1", "a"), ("SET", "s1", "b"), ("SET", "s1", "c", "EX", "100"), ("SET", "s1", "d", "KEEPTTL"),
    ("SET", "s1", "e", "NX"), ("SET", "s1", "f", "XX"), ("SET", "s1", "g", "PXAT", "99999999999999"),
    ("SET", "s2", "x", "GET"), ("SET", "s2", "y", "XX", "GET"), ("SET", "s9", "y", "XX"),
    ("SETNX", "s1", "z"), ("SETNX", "s3", "z"), ("SETEX", "s4", "100", "v"), ("PSETEX", "s5", "100000", "v"),
    ("GETSET", "s1", "h"), ("GETSET", "s6", "h"), ("MSET", "m1", "1", "m2", "2"),
    ("MSETNX", "m1", "1", "m3", "3"), ("MSETNX", "m4", "1", "m5", "2"),
    ("APPEND", "s1", "xx"), ("APPEND", "s7", "yy"), ("APPEND", "s7", ""),
    ("SETRANGE", "s1", "1", "ZZ"), ("SETRANGE", "s8", "0", ""), ("SETRANGE", "s8", "2", "ab"),
    ("SETRANGE", "s8", "0", ""),
    ("INCR", "n1"), ("INCRBY", "n1", "5"), ("DECR", "n1"), ("DECRBY", "n1", "2"), ("INCRBYFLOAT", "f1", "1.5"),
    ("INCR", "s1"), ("INCRBYFLOAT", "s1", "1"),
    ("GETDEL", "m1"), ("GETDEL", "nokey"), ("GETEX", "s4", "EX", "200"), ("GETEX", "s4", "PERSIST"),
    ("GETEX", "s4", "PERSIST"), ("GETEX", "s5", "PXAT", "1"), ("GETEX", "s1"), ("GETEX", "nokey", "EX", "5"),
    ("SETBIT", "b1", "3", "1"), ("SETBIT", "b1", "3", "1"), ("SETBIT", "b1", "3", "0"),
    ("BITFIELD", "b2", "SET", "u8", "0", "255"), ("BITFIELD", "b2", "SET", "u8", "0", "255"),
    ("BITFIELD", "b2", "GET", "u8", "0"), ("BITFIELD", "b2", "INCRBY", "u8", "0", "1", "OVERFLOW", "FAIL",
                                          "INCRBY", "u8", "0", "1"),
    ("BITOP", "OR", "b3", "b1", "b2"), ("BITOP", "AND", "b4", "nokey1", "nokey2"),
    ("BITOP", "AND", "b3", "nokey1", "nokey2"), ("BITOP", "NOT", "b5", "b1"),
    ("PFADD", "h1", "a", "b"), ("PFADD", "h1", "a"), ("PFADD", "h9"), ("PFADD", "h9"), ("PFMERGE", "h2", "h1"),
    ("PFMERGE", "h2"), ("PFCOUNT", "h1"),
]

KEYS = [
    ("MSET", "k1", "1", "k2", "2", "k3", "3", "k4", "4"),
    ("DEL", "k1", "nokey", "k2"), ("DEL", "nokey"), ("UNLINK", "k3"),
    ("EXPIRE", "k4", "100"), ("EXPIRE", "k4", "100", "NX"), ("EXPIRE", "k4", "200", "XX"),
    ("EXPIRE", "k4", "50", "GT"), ("EXPIRE", "k4", "50", "LT"), ("PEXPIRE", "k4", "10000000"),
    ("EXPIREAT", "k4", "99999999999"), ("PEXPIREAT", "k4", "99999999999999"), ("EXPIRE", "nokey", "10"),
    ("PERSIST", "k4"), ("PERSIST", "k4"), ("PERSIST", "nokey"),
    ("SET", "k5", "v"), ("EXPIREAT", "k5", "1"), ("SET", "k5", "v"), ("EXPIRE", "k5", "-1"),
    ("SET", "k5", "v"), ("PEXPIRE", "k5", "0"),
    ("SET", "r1", "v"), ("RENAME", "r1", "r2"), ("RENAME", "r2", "r2"), ("SET", "r3", "w"),
    ("RENAME", "r2", "r3"), ("RENAMENX", "r3", "r3"), ("SET", "r4", "x"), ("RENAMENX", "r3", "r4"),
    ("RENAMENX", "r3", "r5"), ("RENAME", "nokey", "r6"),
    ("COPY", "r5", "c1"), ("COPY", "r5", "c1"), ("COPY", "r5", "c1", "REPLACE"), ("COPY", "nokey", "c2"),
    ("HSET", "c3", "f", "v"), ("COPY", "c3", "c4"), ("COPY", "c3", "c3"),
    ("EXPIRE", "c4", "100"), ("RENAME", "c4", "c5"),
]

LISTS = [
    ("LPUSH", "l1", "a", "b"), ("RPUSH", "l1", "c"), ("LPUSHX", "l9", "a"), ("RPUSHX", "l9", "a"),
    ("RPUSHX", "l1", "d"), ("LPUSHX", "l1", "e"),
    ("LINSERT", "l1", "BEFORE", "a", "x"), ("LINSERT", "l1", "AFTER", "nope", "y"),
    ("LINSERT", "l9", "AFTER", "a", "y"), ("LSET", "l1", "0", "z"), ("LSET", "l1", "99", "z"),
    ("LREM", "l1", "0", "nope"), ("LREM", "l1", "1", "z"), ("LTRIM", "l1", "0", "2"), ("LTRIM", "l9", "0", "1"),
    ("LPOP", "l1"), ("RPOP", "l1", "2"), ("LPOP", "l1"), ("LPOP", "l9"), ("LPOP", "l9", "2"),
    ("RPUSH", "l2", "a", "b", "c"), ("LTRIM", "l2", "5", "10"),
    ("RPUSH", "l2", "a", "b", "c"), ("LREM", "l2", "0", "a"), ("LREM", "l2", "0", "b"), ("LREM", "l2", "0", "c"),
    ("RPUSH", "l3", "a", "b"), ("LMOVE", "l3", "l4", "LEFT", "RIGHT"), ("RPOPLPUSH", "l3", "l4"),
    ("RPOPLPUSH", "l3", "l4"), ("LMOVE", "l4", "l4", "LEFT", "RIGHT"), ("LMOVE", "l4", "l4", "RIGHT", "RIGHT"),
    ("LMPOP", "2", "l9", "l4", "LEFT", "COUNT", "1"), ("LMPOP", "1", "l4", "RIGHT", "COUNT", "5"),
    ("LMPOP", "1", "l9", "LEFT"),
    ("RPUSH", "l5", "a", "b", "c"), ("BLPOP", "l9", "l5", "0.01"), ("BRPOP", "l5", "0.01"),
    ("BLMOVE", "l5", "l6", "RIGHT", "LEFT", "0.01"), ("BRPOPLPUSH", "l6", "l5", "0.01"),
    ("BLMPOP", "0.01", "1", "l5", "LEFT", "COUNT", "3"), ("BLPOP", "l9", "0.01"),
    ("SET", "ls", "v"), ("LPUSH", "ls", "a"), ("LPOP", "ls"),
]

SETS = [
    ("SADD", "t1", "a", "b", "c", "d"), ("SADD", "t1", "a"), ("SREM", "t1", "x"), ("SREM", "t1", "a"),
    ("SADD", "t2", "only"), ("SPOP", "t2"), ("SPOP", "t2"), ("SADD", "t2", "x", "y"), ("SPOP", "t2", "5"),
    ("SADD", "t2", "x"), ("SPOP", "t2", "0"), ("SPOP", "t9", "3"),
    ("SMOVE", "t1", "t3", "b"), ("SMOVE", "t1", "t3", "zz"), ("SADD", "t3", "c"), ("SMOVE", "t1", "t3", "c"),
    ("SMOVE", "t1", "t1", "d"), ("SMOVE", "t1", "t3", "d"), ("SMOVE", "t9", "t3", "d"),
    ("SADD", "t4", "b", "x"), ("SINTERSTORE", "t5", "t3", "t4"), ("SUNIONSTORE", "t6", "t3", "t4"),
    ("SDIFFSTORE", "t7", "t3", "t3"), ("SDIFFSTORE", "t6", "t3", "t3"), ("SINTERSTORE", "t5", "t9", "t4"),
    ("SREM", "t4", "b", "x", "y"), ("SCARD", "t3"), ("SISMEMBER", "t3", "b"),
    ("SET", "ts", "v"), ("SADD", "ts", "a"),
]

HASHES = [
    ("HSET", "h1", "a", "1", "b", "2"), ("HSET", "h1", "a", "1"), ("HMSET", "h1", "c", "3"),
    ("HSETNX", "h1", "a", "9"), ("HSETNX", "h1", "d", "4"), ("HINCRBY", "h1", "a", "5"),
    ("HINCRBYFLOAT", "h1", "a", "1.5"), ("HINCRBY", "h1", "a", "x"), ("HDEL", "h1", "zz"),
    ("HDEL", "h1", "a", "b"), ("HDEL", "h1", "c", "d", "e"), ("HDEL", "h9", "a"),
    ("HINCRBY", "h2", "n", "1"), ("HINCRBYFLOAT", "h3", "n", "1"),
]

ZSETS = [
    ("ZADD", "z1", "1", "a", "2", "b"), ("ZADD", "z1", "1", "a"), ("ZADD", "z1", "NX", "5", "a"),
    ("ZADD", "z1", "XX", "5", "a"), ("ZADD", "z1", "INCR", "1", "a"), ("ZADD", "z1", "NX", "INCR", "1", "a"),
    ("ZADD", "z1", "CH", "3", "c"), ("ZADD", "z1", "GT", "1", "c"), ("ZADD", "z9", "XX", "1", "a"),
    ("ZINCRBY", "z1", "1", "b"), ("ZINCRBY", "z1", "0", "b"),
    ("ZREM", "z1", "nope"), ("ZREM", "z1", "c"), ("ZREMRANGEBYSCORE", "z1", "100", "200"),
    ("ZREMRANGEBYRANK", "z1", "0", "0"), ("ZREMRANGEBYSCORE", "z1", "-inf", "+inf"),
    ("ZADD", "z2", "0", "a", "0", "b", "0", "c", "0", "d"), ("ZREMRANGEBYLEX", "z2", "[a", "[b"),
    ("ZREMRANGEBYLEX", "z2", "[x", "[y"), ("ZADD", "z1", "1", "a", "2", "b", "3", "c"),
    ("ZPOPMIN", "z1"), ("ZPOPMAX", "z1", "5"), ("ZPOPMIN", "z1"), ("ZPOPMAX", "z9", "0"),
    ("ZADD", "z3", "1", "a", "2", "b", "3", "c"), ("ZMPOP", "2", "z9", "z3", "MIN", "COUNT", "2"),
    ("ZMPOP", "1", "z3", "MAX", "COUNT", "5"), ("ZMPOP", "1", "z3", "MAX"),
    ("ZADD", "z3", "1", "a", "2", "b"), ("BZPOPMIN", "z9", "z3", "0.01"), ("BZPOPMAX", "z3", "0.01"),
    ("BZPOPMAX", "z3", "0.01"), ("ZADD", "z3", "1", "a"), ("BZMPOP", "0.01", "1", "z3", "MIN", "COUNT", "2"),
    ("ZUNIONSTORE", "z4", "2", "z2", "z9"), ("ZINTERSTORE", "z5", "2", "z2", "z4"),
    ("ZDIFFSTORE", "z6", "2", "z2", "z4"), ("ZDIFFSTORE", "z5", "2", "z2", "z4"),
    ("ZINTERSTORE", "z7", "2", "z2", "z9"), ("ZRANGESTORE", "z8", "z2", "0", "-1"),
    ("ZRANGESTORE", "z8", "z2", "5", "10"), ("ZRANGESTORE", "z8", "z2", "5", "10"),
    ("ZADD", "z2", "x", "a"), ("SET", "zs", "v"), ("ZADD", "zs", "1", "a"),
]

GEO = [
    ("GEOADD", "g1", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"),
    ("GEOADD", "g1", "13.361389", "38.115556", "Palermo"), ("GEOADD", "g1", "XX", "13.4", "38.1", "Palermo"),
    ("GEOADD", "g1", "NX", "13.4", "38.1", "Palermo"), ("GEOADD", "g1", "CH", "13.5", "38.1", "Palermo"),
    ("GEOSEARCHSTORE", "g2", "g1", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"),
    ("GEOSEARCHSTORE", "g2", "g1", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "STOREDIST"),
    ("GEORADIUS", "g1", "15", "37", "200", "km", "STORE", "g3"),
    ("GEORADIUSBYMEMBER", "g1", "Palermo", "200", "km", "STOREDIST", "g4"),
    ("GEOSEARCHSTORE", "g2", "g1", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"),
    ("GEOSEARCHSTORE", "g2", "g1", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"),
    ("GEORADIUS", "g1", "0", "0", "1", "km", "STORE", "g3"), ("GEORADIUS", "g9", "0", "0", "1", "km", "STORE", "g3"),
]

SORTS = [
    ("RPUSH", "q1", "3", "1", "2"), ("SORT", "q1", "STORE", "q2"), ("SORT", "q1", "STORE", "q2"),
    ("SORT", "nokey", "STORE", "q2"), ("SORT", "nokey", "STORE", "q2"), ("SORT", "q1"),
]

SCRIPTS_AND_BLOCKS = [
    ("EVAL", "redis.call('set', KEYS[1], 'x'); redis.call('lpush', KEYS[2], 'a'); return redis.call('del', KEYS[1])",
     "2", "e1", "e2"),
    ("EVAL", "redis.call('set', KEYS[1], 'x'); return redis.call('incr', KEYS[1])", "1", "e3"),
    ("EVAL", "return redis.call('get', KEYS[1])", "1", "e9"),
]

GROUPS = {"strings": STRINGS, "keys": KEYS, "lists": LISTS, "sets": SETS, "hashes": HASHES, "zsets": ZSETS,
          "geo": GEO, "sort": SORTS, "scripts": SCRIPTS_AND_BLOCKS}


@pytest.mark.parametrize("flags", ["KEA", "KEAmn"])
@pytest.mark.parametrize("group", list(GROUPS))
def test_events_of_every_write_command_equal_redis(pair, group, flags):
    """Every command sends the events redis-server sends, on both channels;
    with m and n also its lookups' misses and the keys it adds."""
    seen = run_both(pair, flags, GROUPS[group])
    assert sum(len(e) for e in seen) >= len(GROUPS[group]), "too few events: is the subscriber deaf?"


def test_restore_sends_restore(pair):
    clients, _ = pair
    clients[0].set("rs:src", "value")
    payload = clients[0].dump("rs:src")
    run_both(pair, "KEA", [("RESTORE", "rs:1", "0", payload), ("RESTORE", "rs:1", "0", payload),
                           ("RESTORE", "rs:1", "0", payload, "REPLACE"), ("RESTORE", "rs:2", "1", payload, "ABSTTL")])


def test_multi_exec_sends_each_commands_events_in_order(pair):
    clients, listeners = pair
    for c in clients:
        c.config_set("notify-keyspace-events", "KEA")
    for c in clients:
        with c.pipeline(transaction=True) as p:
            p.set("mx:1", "a").incr("mx:2").lpush("mx:3", "x").rpop("mx:3").delete("mx:1", "mx:2").get("mx:1")
            p.execute()
    events = [listener.events() for listener in listeners]
    assert events[0] == events[1]
    assert len(events[0]) == 14  # set, incrby, lpush, rpop, del (emptied), del, del: each on both channels


def test_a_failed_command_sends_nothing(pair):
    seen = run_both(pair, "KEA", [("SET", "fc:s", "v"), ("LPUSH", "fc:s", "a"), ("INCR", "fc:s"),
                                  ("HSET", "fc:s", "f", "v"), ("SET", "fc:s", "v", "EX", "0"),
                                  ("EXPIRE", "fc:s", "x"), ("ZADD", "fc:z", "nan", "a")])
    assert seen[1:] == [[]] * 6


@pytest.mark.parametrize("flags", ["K$", "El", "Kg", "KEs", "Kh", "Ez", "gKE", "$lshzxeKE"])
def test_classes_mask_events(pair, flags):
    """Only the classes asked for are sent, and only on the channels asked for."""
    seen = run_both(pair, flags, [("SET", "mk:s", "v"), ("LPUSH", "mk:l", "a"), ("SADD", "mk:t", "a"),
                                  ("HSET", "mk:h", "f", "v"), ("ZADD", "mk:z", "1", "a"),
                                  ("DEL", "mk:s", "mk:l", "mk:t", "mk:h", "mk:z")])
    assert any(seen), f"{flags}: no event at all"


def test_new_key_events(pair):
    """n: a key added, never a key changed (Redis's own test and more)."""
    seen = run_both(pair, "KEAn", [("SET", "nk:a", "1"), ("SET", "nk:a", "2"), ("SET", "nk:b", "1"),
                                   ("LPUSH", "nk:l", "x"), ("LPUSH", "nk:l", "y"), ("HSET", "nk:h", "f", "v"),
                                   ("INCR", "nk:n"), ("MSET", "nk:a", "3", "nk:c", "4"),
                                   ("SADD", "nk:t", "a"), ("ZADD", "nk:z", "1", "a"), ("COPY", "nk:a", "nk:d"),
                                   ("RENAME", "nk:d", "nk:e"), ("RENAME", "nk:e", "nk:b"),
                                   ("DEL", "nk:a"), ("SET", "nk:a", "again")])
    assert ("__keyevent@0__:new", "nk:b") in seen[2]
    assert not any(e[0] == "__keyevent@0__:new" for e in seen[1])
    seen = run_both(pair, "En", [("SET", "nk:f", "1"), ("SET", "nk:f", "2"), ("SET", "nk:g", "1")])
    assert seen == [[("__keyevent@0__:new", "nk:f")], [], [("__keyevent@0__:new", "nk:g")]]


def test_key_miss_events(pair):
    """m: a read command's keys it found missing (Redis: its lookups)."""
    clients, _ = pair
    clients[0].set("km:a", "1")
    clients[1].set("km:a", "1")
    seen = run_both(pair, "KEm", [("GET", "km:nokey"), ("GET", "km:a"), ("MGET", "km:a", "km:x", "km:y"),
                                  ("EXISTS", "km:x"), ("TYPE", "km:x"), ("TTL", "km:x"), ("HGET", "km:x", "f"),
                                  ("LRANGE", "km:x", "0", "-1"), ("STRLEN", "km:x"), ("SMEMBERS", "km:x"),
                                  ("ZSCORE", "km:x", "a"), ("SET", "km:x", "1")])
    assert seen[0] == [("__keyspace@0__:km:nokey", "keymiss"), ("__keyevent@0__:keymiss", "km:nokey")]
    assert seen[-1] == []  # a write's lookup is no miss
    # Looked up without the event; an error before the lookup sends none.
    seen = run_both(pair, "KEm", [("WATCH", "km:w"), ("UNWATCH",), ("MEMORY", "USAGE", "km:w"),
                                  ("OBJECT", "ENCODING", "km:w"), ("LRANGE", "km:w", "x", "y"),
                                  ("EVAL", "return redis.call('get', KEYS[1])", "1", "km:s")])
    assert seen[:-1] == [[]] * 5
    assert seen[-1] == [("__keyspace@0__:km:s", "keymiss"), ("__keyevent@0__:keymiss", "km:s")]


def run_both_whole(pair, flags, setup, commands):
    """Like run_both, but compares the events of the whole sequence (after
    `setup`, whose events are dropped): an expired key's event may come from
    the command or, a moment before it, from the expiry cycle."""
    clients, listeners = pair
    for c in clients:
        c.config_set("notify-keyspace-events", flags)
    for args in setup:
        replies_of(clients, *args)
    for listener in listeners:
        listener.events()
    time.sleep(0.3)  # the keys of `setup` with a PX of 50 have expired
    for args in commands:
        replies = replies_of(clients, *args)
        assert replies[0] == replies[1], f"{args}: redis {replies[0]!r} != rampart {replies[1]!r}"
    events = [listener.events() for listener in listeners]
    # The cycle reaps keys in its own order: compared key by key.
    per_key = [{}, {}]
    for got, mine in zip(events, per_key):
        for channel, message in got:
            key = channel.split(":", 1)[1] if channel.startswith("__keyspace") else message
            mine.setdefault(key, []).append((channel, message))
    assert per_key[0] == per_key[1]
    return events[1]


def test_writes_over_expired_keys(pair):
    """A write's lookup of an expired key removes it first: "expired" before
    the command's own events, once."""
    setup = [("SET", f"xk:{n}", "v", "PX", "50") for n in range(6)] + [("RPUSH", "xk:l", "a"),
                                                                      ("PEXPIRE", "xk:l", "50")]
    events = run_both_whole(pair, "KEAmn", setup, [
        ("GETSET", "xk:0", "w"), ("DEL", "xk:1"), ("EXPIRE", "xk:2", "100"), ("PERSIST", "xk:3"),
        ("SET", "xk:4", "w", "GET"), ("LPUSHX", "xk:l", "b"), ("MSETNX", "xk:5", "1", "xk:6", "2")])
    assert events.count(("__keyevent@0__:expired", "xk:0")) == 1
    assert events.index(("__keyevent@0__:expired", "xk:0")) < events.index(("__keyevent@0__:set", "xk:0"))


def test_config_texts_equal_redis(redis_and_rampart):
    clients = redis_and_rampart
    try:
        for value in ["gKE", "$lshzxeKE", "KA", "EA", "AKEnm", "", "Eg$lshzxetdn"]:
            for c in clients:
                c.config_set("notify-keyspace-events", value)
            got = [c.config_get("notify-keyspace-events") for c in clients]
            assert got[0] == got[1], value
        for bad in ["KEQ", "k", "K E"]:
            replies = replies_of(clients, "CONFIG", "SET", "notify-keyspace-events", bad)
            assert replies[0] == replies[1] and replies[0][0] == "error", bad
        # Names are checked before values, an alias counts as its name.
        for args in [("notify-keyspace-events", "Q", "no-such-option", "1"),
                     ("notify-keyspace-events", "KEA", "notify-keyspace-events", "KE"),
                     ("lua-time-limit", "x"), ("busy-reply-threshold", "-1"),
                     ("notify-keyspace-events", "KEA", "lua-time-limit", "-1")]:
            replies = replies_of(clients, "CONFIG", "SET", *args)
            assert replies[0] == replies[1] and replies[0][0] == "error", args
        # All or nothing: a bad pair refuses the whole CONFIG SET.
        replies = replies_of(clients, "CONFIG", "SET", "notify-keyspace-events", "KEA", "no-such-option", "1")
        assert all(r[0] == "error" for r in replies)
        got = [c.config_get("notify-keyspace-events") for c in clients]
        assert got[0] == got[1] == {"notify-keyspace-events": "AE"}
    finally:
        for c in clients:
            c.config_set("notify-keyspace-events", "")


def test_blocked_pop_served_by_a_push(pair):
    """A BLPOP woken by an LPUSH: the push's events, then the pop's."""
    clients, listeners = pair
    for c in clients:
        c.config_set("notify-keyspace-events", "KEA")
    for c in clients:
        blocked = redis.Redis(host=c.connection_pool.connection_kwargs["host"],
                              port=c.connection_pool.connection_kwargs["port"], socket_timeout=30)
        result = []
        t = threading.Thread(target=lambda: result.append(blocked.blpop(["bp:l"], timeout=20)))
        t.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and int(c.info("clients")["blocked_clients"]) == 0:
            time.sleep(0.01)
        assert c.lpush("bp:l", "x") == 1
        t.join(30)
        assert result == [(b"bp:l", b"x")]
        blocked.close()
    events = [listener.events() for listener in listeners]
    assert events[0] == events[1]
    assert [e for e in events[0] if e[0].startswith("__keyevent")] == [
        ("__keyevent@0__:lpush", "bp:l"), ("__keyevent@0__:lpop", "bp:l"), ("__keyevent@0__:del", "bp:l")]


def wait_events(listener, want, timeout_s=10):
    """Events until `want` of them arrived (or the time is up)."""
    got = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        got += listener.events()
        time.sleep(0.05)
    return got


def test_expired_keys_send_expired(pair):
    """x: a key that expires is reported once, whether the sweeper (Redis: its
    expiry cycle) or a write reaching it first removes it."""
    clients, listeners = pair
    for c in clients:
        c.config_set("notify-keyspace-events", "Ex")
        c.psetex("ex:a", 100, "1")
        c.psetex("ex:b", 100, "1")
        c.set("ex:c", "1", px=60)
    time.sleep(0.3)
    for c in clients:
        c.set("ex:c", "2")  # a write over an expired key: "expired" first, if nothing reaped it
    for name, listener in zip(("redis", "rampart"), listeners):
        got = wait_events(listener, 3)
        assert sorted(got) == [("__keyevent@0__:expired", k) for k in ("ex:a", "ex:b", "ex:c")], name
        assert listener.events() == [], name  # once
