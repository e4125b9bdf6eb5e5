"""BITFIELD and BITFIELD_RO through the proxy, checked against a real redis-server 7.0 running
beside it: random subcommands (every type from i1/u1 to i64/u63, offsets in bits and in #fields,
SET and INCRBY under WRAP, SAT and FAIL) sent to both, every reply and the string after each
command compared; then every error. BITOP is in test_proxy_strings.py.
"""
import random

from proxy_helpers import replies_of


def random_op(rng):
    kind = rng.choice(["GET", "SET", "INCRBY", "OVERFLOW"])
    if kind == "OVERFLOW":
        return ["OVERFLOW", rng.choice(["WRAP", "SAT", "FAIL"])]
    signed = rng.random() < 0.5
    bits = rng.randint(1, 64 if signed else 63)
    if rng.random() < 0.7:
        bits = rng.choice([1, 5, 8, 13, 16, 31, 32, 33, 63] + ([64] if signed else []))
    ftype = f"{'i' if signed else 'u'}{bits}"
    offset = f"#{rng.randrange(0, 40)}" if rng.random() < 0.3 else str(rng.randrange(0, 700))
    if kind == "GET":
        return ["GET", ftype, offset]
    edge = [0, 1, -1, 2 ** (bits - 1), -(2 ** (bits - 1)), 2 ** bits, 2 ** 63 - 1, -(2 ** 63)]
    value = rng.choice(edge) if rng.random() < 0.5 else rng.randint(-(2 ** 40), 2 ** 40)
    value = max(-(2 ** 63), min(2 ** 63 - 1, value))
    return [kind, ftype, offset, str(value)]


def test_bitfield_as_redis(redis_and_rampart):
    """500 random BITFIELD commands on one key: the same replies and the same string."""
    rng = random.Random(11)
    k = "bitfield:k"
    for c in redis_and_rampart:
        c.delete(k)
        c.set(k, b"\x80\x01\xff\x00ab")
        c.expire(k, 1000)
    failed = 0  # SETs and INCRBYs that overflowed under FAIL: the path is taken
    for n in range(500):
        args = ["BITFIELD", k]
        for _ in range(rng.randint(0, 5)):
            args += random_op(rng)
        red, ram = replies_of(redis_and_rampart, *args)
        assert ram == red, args
        failed += sum(1 for v in red if v is None)
        if n % 10 == 0:
            red_get, ram_get = replies_of(redis_and_rampart, "GET", k)
            assert ram_get == red_get, args
            ro = ["BITFIELD_RO", k, "GET", "u8", "0", "GET", "i64", str(rng.randrange(0, 600))]
            assert replies_of(redis_and_rampart, *ro)[1] == replies_of(redis_and_rampart, *ro)[0]
    red_get, ram_get = replies_of(redis_and_rampart, "GET", k)
    assert ram_get == red_get
    assert redis_and_rampart[1].ttl(k) > 0  # BITFIELD keeps the expiry
    assert failed > 10, failed


def test_bitfield_errors_and_edges_as_redis(redis_and_rampart):
    """Every check of BITFIELD and BITFIELD_RO, in Redis's order, and the edges: a missing key,
    another type, a write that only grows the string (FAIL), no subcommand at all."""
    k, other = "bitfield:e", "bitfield:list"
    for c in redis_and_rampart:
        c.delete(k, other)
        c.rpush(other, b"x")
    commands = [
        ("BITFIELD", k),
        ("BITFIELD", k, "GET", "u8", "0"),
        ("EXISTS", k),
        ("BITFIELD", k, "GET", "u64", "0"),
        ("BITFIELD", k, "GET", "i65", "0"),
        ("BITFIELD", k, "GET", "x8", "0"),
        ("BITFIELD", k, "GET", "i0", "0"),
        ("BITFIELD", k, "GET", "u8", "-1"),
        ("BITFIELD", k, "GET", "u8", "#-1"),
        ("BITFIELD", k, "GET", "u8", "4294967296"),
        ("BITFIELD", k, "GET", "u8", "x"),
        ("BITFIELD", k, "SET", "u8", "0"),
        ("BITFIELD", k, "SET", "u8", "0", "x"),
        ("BITFIELD", k, "INCRBY", "u8", "0", "1.5"),
        ("BITFIELD", k, "OVERFLOW", "NONE", "GET", "u8", "0"),
        ("BITFIELD", k, "OVERFLOW"),
        ("BITFIELD", k, "FOO", "u8", "0"),
        ("BITFIELD", k, "GET", "u8", "0", "SET", "u4", "0", "x"),
        ("BITFIELD_RO", k, "SET", "u8", "0", "1"),
        ("BITFIELD_RO", k, "GET", "u8", "0"),
        ("BITFIELD", other, "GET", "u8", "0"),
        ("BITFIELD", other, "SET", "u8", "0", "1"),
        ("BITFIELD_RO", other, "GET", "u8", "0"),
        ("BITFIELD", k, "OVERFLOW", "FAIL", "SET", "u8", "100", "300"),  # grows, writes nothing
        ("STRLEN", k),
        ("GET", k),
        ("BITFIELD", k, "OVERFLOW", "SAT", "INCRBY", "u8", "#0", "300", "INCRBY", "i8", "8", "-300"),
        ("BITFIELD", k, "INCRBY", "i64", "0", "9223372036854775807", "INCRBY", "i64", "0", "1"),
        ("GET", k),
    ]
    for cmd in commands:
        red, ram = replies_of(redis_and_rampart, *cmd)
        assert ram == red, cmd
