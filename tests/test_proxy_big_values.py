"""Strings longer than one kv value (kv.max_value_bytes, 1 MiB by default) through the proxy:
kept in chunks beside a header at the key (docs/collections.md, "Chunked strings") and read and
written as one string by every string and key command. Redis's own "Very big payload in GET/SET"
(4 MB), the commands that change a part of such a string, a reader that never sees half of a
change under concurrent writers, and a write larger than one kv message refused with an error
while the proxy goes on.

Targets as in test_proxy.py: a real redis-server (the reference, 7.0.15) and the proxy of a
`rampart up` cluster (tcp, and ucx where marked); every expectation holds on both but the last.
"""
import random
import threading
import time

import pytest

from proxy_helpers import Raw, RespError, encode, key, r, rb, ucx_too  # noqa: F401

MB = 1_000_000


def test_very_big_payload_in_get_set(rb, key):
    """Redis's unit/type/string "Very big payload in GET/SET", and one of 30 MB."""
    for n, k in ((4, key("4mb")), (30, key("30mb"))):
        value = b"abcd" * (n * MB // 4)
        assert rb.set(k, value)
        assert rb.get(k) == value
        assert rb.strlen(k) == len(value)
        assert rb.delete(k) == 1
        assert rb.get(k) is None


def test_commands_on_a_long_string(rb, key):
    """Reads of a part, changes of a part, the expiry, the type, copies and
    renames of a 3 MB string, checked against a copy kept here."""
    rng = random.Random(5)
    k, copy, moved = key("s"), key("copy"), key("moved")
    v = bytearray(rng.randbytes(3 * MB))
    assert rb.set(k, bytes(v))
    assert rb.getrange(k, 1_500_000, 1_500_099) == v[1_500_000:1_500_100]
    assert rb.getrange(k, -10, -1) == v[-10:]
    assert rb.append(k, b"tail") == len(v) + 4
    v += b"tail"
    assert rb.setrange(k, 2_000_000, b"XYZ") == len(v)
    v[2_000_000:2_000_003] = b"XYZ"
    bit = 8 * 2_500_000 + 3
    old = (v[bit // 8] >> (7 - bit % 8)) & 1
    assert rb.setbit(k, bit, 1 - old) == old
    v[bit // 8] ^= 1 << (7 - bit % 8)
    assert rb.getbit(k, bit) == 1 - old
    assert rb.bitcount(k, 0, 999) == sum(bin(b).count("1") for b in v[:1000])
    assert rb.setrange(k, len(v) + 10, b"!") == len(v) + 11  # past the end: zero bytes between
    v += b"\x00" * 10 + b"!"
    assert rb.get(k) == bytes(v)
    assert rb.type(k) == b"string"
    assert rb.object("encoding", k) == b"raw"
    with pytest.raises(Exception, match="not an integer"):
        rb.incr(k)
    assert rb.expire(k, 100)
    assert 99 <= rb.ttl(k) <= 100
    assert rb.get(k) == bytes(v)
    assert rb.persist(k)
    assert rb.ttl(k) == -1
    assert rb.copy(k, copy)
    assert rb.rename(k, moved)
    assert rb.exists(k) == 0
    assert rb.get(copy) == bytes(v) and rb.get(moved) == bytes(v)
    assert rb.getdel(copy) == bytes(v)
    assert rb.exists(copy) == 0
    assert sorted(rb.keys(key("*"))) == [moved.encode()]
    assert rb.set(moved, b"short")  # back to a value that fits
    assert rb.get(moved) == b"short"
    assert rb.mset({k: b"x" * (2 * MB), copy: b"y" * (2 * MB)})
    assert rb.mget(k, copy) == [b"x" * (2 * MB), b"y" * (2 * MB)]
    with pytest.raises(Exception, match="WRONGTYPE"):
        rb.lpush(k, b"e")
    # BITOP over two long strings into a third (all in chunks)
    assert rb.set(k, b"x" * (3 * MB)) and rb.set(copy, b"\x0f" * (2 * MB))
    assert rb.execute_command("BITOP", "XOR", moved, k, copy) == 3 * MB
    assert rb.get(moved) == bytes([ord("x") ^ 0x0F]) * (2 * MB) + b"x" * MB


@ucx_too
def test_a_reader_never_sees_half_of_a_long_string(redis_target, key):
    """A writer sets a 3 MB key to one byte repeated, a different byte each
    time, and appends to a second; two readers GET both meanwhile: every read
    is one byte repeated, and the second key only grows, by whole appends
    (3 s, at most 200 writes)."""
    k, log = key("k"), key("log")
    size, piece = 3 * MB, b"0123456789" * 50_000  # appends of 500,000 bytes
    stop = time.monotonic() + 3
    errors, reads, writes = [], [0], [0]

    def writer():
        with Raw(redis_target) as c:
            for i in range(200):
                if time.monotonic() > stop:
                    break
                replies = c.call("SET", k, bytes([65 + i % 26]) * size), c.call("APPEND", log, piece)
                if replies != (b"OK", (i + 1) * len(piece)):
                    errors.append(f"write {i} answered {str(replies)[:200]}")
                    return
                writes[0] += 1

    def reader():
        with Raw(redis_target) as c:
            last = 0
            while time.monotonic() < stop:
                v, grown = c.call("GET", k), c.call("GET", log)
                if v is not None and (len(v) != size or v.count(v[:1]) != size):
                    errors.append(f"GET returned {len(v)} bytes mixing {sorted(set(v))[:4]}")
                if grown is not None:
                    if len(grown) % len(piece) != 0 or grown != piece * (len(grown) // len(piece)):
                        errors.append(f"GET of the appended key returned {len(grown)} bytes")
                    if len(grown) < last:
                        errors.append(f"the appended key shrank from {last} to {len(grown)}")
                    last = len(grown)
                reads[0] += 1

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[:5]
    assert writes[0] > 1 and reads[0] > 4, (writes, reads)


@pytest.mark.proxy_targets("rampart")
def test_a_write_larger_than_a_message_is_refused(redis_target, key):
    """70 MB do not fit one message to a kv partition (transport.max_message_size, 64 MiB by
    default): the SET is answered with an error naming the setting, the key keeps its value, and
    the connection and the proxy go on."""
    k = key()
    with Raw(redis_target) as c:
        assert c.call("SET", k, "before") == b"OK"
        reply = c.call("SET", k, b"x" * (70 * MB))
        assert isinstance(reply, RespError), reply
        assert "transport.max_message_size" in str(reply), reply
        assert c.call("GET", k) == b"before"
        assert c.call("PING") == b"PONG"


def test_pipelined_long_strings_of_one_partition(redis_target, key):
    """Two 40 MB SETs of keys of one partition ({hash tag}) pipelined on one connection are taken
    in one turn, where the proxy commits write sets as a group: a group larger than one message
    would fail both, so the group stops growing past a quarter of the message bound."""
    a, b = key("{t}a"), key("{t}b")
    va, vb = b"a" * (40 * MB), b"b" * (40 * MB)
    with Raw(redis_target) as c:
        c.send(encode("SET", a, va) + encode("SET", b, vb) + encode("GET", a) + encode("GET", b))
        assert [c.reply() for _ in range(4)] == [b"OK", b"OK", va, vb]
        assert c.call("DEL", a, b) == 2


@pytest.mark.proxy_targets("rampart")
def test_a_read_larger_than_a_message_fails_at_once(redis_target, key):
    """70 values of 1,000,000 bytes on one partition ({hash tag}) are more than one reply message
    carries (64 MiB): over tcp the kv-node answers the MGET's read with an error instead of a reply
    it cannot send (before, the proxy waited 5 s for it and answered a timeout), and the proxy goes
    on. (Over ucx such a read is one-sided: no message.)"""
    keys = [key(f"{{p}}{i}") for i in range(70)]
    with Raw(redis_target) as c:
        c.send(b"".join(encode("SET", k, b"v" * MB) for k in keys))
        assert [c.reply() for _ in keys] == [b"OK"] * len(keys)
        started = time.monotonic()
        reply = c.call("MGET", *keys)
        assert isinstance(reply, RespError), type(reply)
        assert "read fewer keys at once" in str(reply), reply
        assert time.monotonic() - started < 4, "the read waited for a timeout"
        assert c.call("MGET", *keys[:10]) == [b"v" * MB] * 10
        for i in range(0, len(keys), 10):  # DEL reads what it deletes: as much at once fails too
            assert c.call("DEL", *keys[i:i + 10]) == 10


def test_long_keys(r, key):
    """Keys far past 1 KiB (URLs as cache keys do): a 50,000-byte string key and a 60,000-byte
    hash key (its pages live at the key plus 18 bytes), and Redis's keyspace regression "pattern
    matching very long nested loops": KEYS with 50,000 "*?" gives up and matches nothing."""
    s, h = key("s") + "a" * 50_000, key("h") + "b" * 60_000
    assert r.set(s, "1")
    assert r.get(s) == "1"
    assert r.hset(h, mapping={f"f{i}": "v" * 100 for i in range(100)}) == 100  # pages, not one value
    assert r.hget(h, "f57") == "v" * 100
    assert r.keys("*?" * 50_000) == []
    assert sorted(r.keys(key("*"))) == sorted([s, h])
    assert r.delete(s, h) == 2


@pytest.mark.proxy_targets("rampart")
def test_a_key_past_max_key_bytes_is_refused(redis_target, key):
    """kv.max_key_bytes (64 KiB by default) less the 18 bytes of a page key: one byte more is
    refused with an error naming the setting, and the connection goes on."""
    with Raw(redis_target) as c:
        fits = key() + "k" * (65_518 - len(key()))
        assert c.call("SET", fits, "v") == b"OK"
        assert c.call("GET", fits) == b"v"
        reply = c.call("SET", fits + "k", "v")
        assert isinstance(reply, RespError) and "kv.max_key_bytes" in str(reply), reply
        assert c.call("DEL", fits) == 1
