"""DUMP and RESTORE through the proxy, against a real redis-server 7.0 at the same time: values
of every type in every encoding redis-server picks (small and large, integers, compressible
strings) dumped by Redis and restored into rampart, and the other way; RESTORE's options and
errors answered as Redis answers them; a reader never sees half of a restored collection.

Payloads are Redis's RDB object encoding (src/proxy/redis_dump.h, docs/proxy.md "DUMP and
RESTORE"); both servers run for the whole module: redis-server on a free port, the proxy of a
`rampart up` cluster over tcp.
"""
import random
import threading
import time

import pytest
import redis

from proxy_helpers import replies_of


MB = 1_000_000


def build_values(c, prefix):
    """Writes a value of each kind at `prefix:<name>` through client `c`; their names."""
    rng = random.Random(7)
    names = []

    def name(n):
        names.append(n)
        return f"{prefix}:{n}"

    c.set(name("str-short"), b"hello")
    c.set(name("str-empty"), b"")
    c.set(name("str-int8"), b"-100")
    c.set(name("str-int16"), b"30000")
    c.set(name("str-int32"), b"-2000000000")
    c.set(name("str-int64"), b"9223372036854775807")
    c.set(name("str-compressible"), b"abc" * 2000)
    c.set(name("str-random"), rng.randbytes(5000))
    c.set(name("str-long"), rng.randbytes(3 * MB))  # rampart stores it in chunks
    c.rpush(name("list-small"), b"a", b"0", b"-1", b"127", b"128", b"-4096", b"4095", b"40000",
            b"-8388608", b"2147483648", b"-1099511627776", b"x" * 70, b"y" * 5000)
    # listpack entries whose back-lengths take 1, 2 and 3 bytes (127, 128, 16383 and 16384
    # bytes with their encodings)
    c.rpush(name("list-backlen"), b"a" * 125, b"b" * 126, b"c" * 16377, b"d" * 16378)
    c.rpush(name("list-large"), *[rng.randbytes(rng.randrange(1, 40)) for _ in range(20_000)])
    c.sadd(name("set-intset16"), 1, 2, 300)
    c.sadd(name("set-intset64"), 1, -(2 ** 40), 2 ** 62)
    c.sadd(name("set-small"), b"a", b"b", b"\x00\xff")
    c.sadd(name("set-large"), *[f"m{n}" for n in range(5000)])
    c.hset(name("hash-small"), mapping={b"f": b"v", b"n": b"7", b"neg": b"-5000", b"": b"empty"})
    c.hset(name("hash-large"), mapping={f"field{n}": rng.randbytes(20) for n in range(3000)})
    c.hset(name("hash-longvalue"), mapping={b"f": b"v" * 100})
    c.zadd(name("zset-small"), {b"a": 1.5, b"b": -3, b"c": float("inf"), b"d": 0, b"e": 1e-300})
    c.zadd(name("zset-large"), {f"m{n}": rng.uniform(-1e6, 1e6) for n in range(3000)})
    return names


def content(c, k):
    """Everything a key holds, comparable across servers: (type, value, has expiry)."""
    t = c.type(k).decode()
    value = {
        "string": lambda: c.get(k),
        "list": lambda: c.lrange(k, 0, -1),
        "set": lambda: sorted(c.smembers(k)),
        "hash": lambda: sorted(c.hgetall(k).items()),
        "zset": lambda: c.zrange(k, 0, -1, withscores=True),
        "none": lambda: None,
    }[t]()
    return t, value


def test_redis_payloads_restore_into_rampart(redis_and_rampart):
    """Every value Redis dumps — in each encoding it chose — restores into rampart whole."""
    red, ram = redis_and_rampart
    names = build_values(red, "from-redis")
    encodings = set()
    for n in names:
        k = f"from-redis:{n}"
        encodings.add(red.object("encoding", k).decode())
        payload = red.dump(k)
        assert ram.restore(k, 0, payload) == b"OK", n
        assert content(ram, k) == content(red, k), n
    # The encodings Redis 7.0 writes for these types, all met.
    assert encodings >= {"int", "embstr", "raw", "quicklist", "intset", "listpack", "hashtable",
                         "skiplist"}, encodings


def test_rampart_payloads_restore_into_redis(redis_and_rampart):
    """What rampart dumps, redis-server 7.0 restores to the same value."""
    red, ram = redis_and_rampart
    names = build_values(ram, "from-rampart")
    for n in names:
        k = f"from-rampart:{n}"
        payload = ram.dump(k)
        assert red.restore(k, 0, payload) == b"OK", n
        assert content(red, k) == content(ram, k), n
        assert ram.dump(k) == payload  # DUMP is a function of the value


def test_restore_options_and_errors_as_redis(redis_and_rampart):
    """RESTORE's options, TTLs and every error, answered by both servers alike."""
    red, ram = redis_and_rampart
    k, other = "opts:k", "opts:other"
    red.set("opts:src", b"value")
    payload = red.dump("opts:src")
    long_ago, far = 1_000, int(time.time() * 1000) + 3_600_000
    bad_crc = payload[:-1] + bytes([payload[-1] ^ 1])
    for c in redis_and_rampart:
        c.delete(k, other)
        c.rpush(other, b"x")
    commands = [
        ("SET", k, b"exists"),  # Redis's order of checks: options, BUSYKEY, TTL, payload
        ("RESTORE", k, -1, b"junk", "BOGUS"),
        ("RESTORE", k, -1, b"junk"),
        ("RESTORE", k, -1, b"junk", "REPLACE"),
        ("RESTORE", k, 0, b"junk", "REPLACE"),
        ("RESTORE", k, 2 ** 63 - 1, payload, "REPLACE"),  # wraps: already expired, k deleted
        ("EXISTS", k),
        ("RESTORE", k, -1, payload),
        ("RESTORE", k, "ttl", payload),
        ("RESTORE", k, 0, b"junk"),
        ("RESTORE", k, 0, bad_crc),
        ("RESTORE", k, 0, payload, "IDLETIME", -1),
        ("RESTORE", k, 0, payload, "FREQ", 300),
        ("RESTORE", k, 0, payload, "IDLETIME", 1, "FREQ", 1),
        ("RESTORE", k, 0, payload, "BOGUS"),
        ("RESTORE", k, 0, payload, "IDLETIME"),
        ("RESTORE", k),
        ("DUMP",),
        ("DUMP", "opts:missing"),
        ("RESTORE", k, 0, payload, "IDLETIME", 100, "ABSTTL"),
        ("GET", k),
        ("RESTORE", k, 0, payload),  # BUSYKEY
        ("RESTORE", other, 0, payload, "REPLACE"),  # a list replaced by a string
        ("TYPE", other),
        ("RESTORE", k, long_ago, payload, "ABSTTL", "REPLACE"),  # already expired: deletes k
        ("EXISTS", k),
        ("RESTORE", k, far, payload, "ABSTTL"),
        ("PEXPIRETIME", k),
        ("RESTORE", k, 60_000, payload, "REPLACE"),
        ("TTL", k),
    ]
    for cmd in commands:
        red_reply, ram_reply = replies_of(redis_and_rampart, *cmd)
        assert ram_reply == red_reply, cmd


def test_restore_of_a_stream_is_refused_clearly(redis_and_rampart):
    """A payload of a type rampart does not serve gets an error naming it; the proxy goes on."""
    red, ram = redis_and_rampart
    red.xadd("stream:s", {"f": "v"})
    with pytest.raises(redis.ResponseError, match="Bad data format: a stream"):
        ram.restore("stream:s", 0, red.dump("stream:s"))
    assert ram.ping()


def test_restore_inside_multi(redis_and_rampart):
    """DUMP and RESTORE are queued in MULTI and answered in EXEC's array."""
    _, ram = redis_and_rampart
    ram.sadd("multi:src", b"a", b"b")
    payload = ram.dump("multi:src")
    with ram.pipeline(transaction=True) as p:
        p.restore("multi:dst", 0, payload)
        p.dump("multi:dst")
        p.scard("multi:dst")
        assert p.execute() == [b"OK", payload, 2]


def test_a_reader_never_sees_half_a_restore(redis_and_rampart):
    """RESTORE ... REPLACE of a many-page set is one write set: a reader of SCARD and
    SISMEMBER of its first and last member sees set A or set B whole, never a mix."""
    _, ram = redis_and_rampart
    k = "atomic:set"
    sets = {tag: [f"{tag}{n:05d}" for n in range(4000)] for tag in ("a", "b")}
    payloads = {}
    for tag, members in sets.items():
        ram.delete("atomic:tmp")
        ram.sadd("atomic:tmp", *members)
        payloads[tag] = ram.dump("atomic:tmp")
    ram.restore(k, 0, payloads["a"], replace=True)
    stop = time.monotonic() + 4
    errors = []

    def writer():
        c = redis.Redis(host=ram.connection_pool.connection_kwargs["host"],
                        port=ram.connection_pool.connection_kwargs["port"], socket_timeout=30)
        n = 0
        while time.monotonic() < stop and n < 2000:
            c.restore(k, 0, payloads["ab"[n % 2]], replace=True)
            n += 1
        c.close()

    t = threading.Thread(target=writer)
    t.start()
    seen = set()
    reads = 0
    while time.monotonic() < stop and reads < 20_000:
        with ram.pipeline(transaction=True) as p:
            p.scard(k)
            p.smismember(k, ["a00000", "a03999", "b00000", "b03999"])
            card, flags = p.execute()
        state = tuple(flags)
        if state not in ((1, 1, 0, 0), (0, 0, 1, 1)) or card != 4000:
            errors.append((card, state))
        seen.add(state)
        reads += 1
    t.join(timeout=60)
    assert not errors, errors[:5]
    assert len(seen) == 2, seen  # both sets were read: the writer did interleave
