"""PFADD, PFCOUNT and PFMERGE through the proxy, side by side with a real redis-server 7.0:
the same elements give the same replies and the same counts (the same hash, registers and
estimator), from a handful of elements (sparse) to 60,000 (dense); values written by one
server count the same on the other (GET/SET and DUMP/RESTORE); the errors as Redis's.
"""
import random

from proxy_helpers import replies_of


def test_counts_as_redis(redis_and_rampart):
    """Batches of random elements into three HLLs on both servers: every PFADD reply and
    PFCOUNT (one key, a union) equal, and PFMERGE's result too."""
    rng = random.Random(5)
    keys = ["hll:a", "hll:b", "hll:c"]
    for c in redis_and_rampart:
        c.delete(*keys, "hll:merged")
    total = 0
    while total < 60_000:
        n = rng.choice([1, 3, 50, 400, 5000])
        k = rng.choice(keys)
        elements = [f"e{rng.randrange(80_000)}" for _ in range(n)]
        total += n
        red, ram = replies_of(redis_and_rampart, "PFADD", k, *elements)
        assert ram == red, (k, n)
        for args in (("PFCOUNT", k), ("PFCOUNT", *keys), ("PFCOUNT", keys[0], "hll:missing")):
            red, ram = replies_of(redis_and_rampart, *args)
            assert ram == red, args
    red, ram = replies_of(redis_and_rampart, "PFMERGE", "hll:merged", *keys)
    assert ram == red and ram in (True, b"OK")
    red, ram = replies_of(redis_and_rampart, "PFCOUNT", "hll:merged")
    assert ram == red
    # Both went dense for the large ones: the same encoding byte.
    assert [c.getrange(k, 4, 4) for c in redis_and_rampart for k in keys][:3] == \
        [c.getrange(k, 4, 4) for c in redis_and_rampart for k in keys][3:]


def test_values_move_between_servers(redis_and_rampart):
    """An HLL written by one server counts the same on the other, sparse and dense, by GET/SET
    and by DUMP/RESTORE; adding more to it there answers as the first server would."""
    red, ram = redis_and_rampart
    for size in (3, 300, 20_000):
        for src, dst in ((red, ram), (ram, red)):
            k, moved, restored = f"move:{size}", f"move:{size}:set", f"move:{size}:restored"
            for c in redis_and_rampart:
                c.delete(k, moved, restored)
            src.pfadd(k, *[f"m{n}" for n in range(size)])
            dst.set(moved, src.get(k))
            dst.restore(restored, 0, src.dump(k))
            assert dst.pfcount(moved) == dst.pfcount(restored) == src.pfcount(k)
            extra = [f"x{n}" for n in range(100)]
            assert dst.pfadd(moved, *extra) == src.pfadd(k, *extra)
            assert dst.pfcount(moved) == src.pfcount(k)


def test_errors_as_redis(redis_and_rampart):
    k = "hllerr:k"
    for c in redis_and_rampart:
        c.delete(k, "hllerr:s", "hllerr:l", "hllerr:bad")
        c.set("hllerr:s", b"not an hll")
        c.rpush("hllerr:l", b"x")
        c.pfadd(k, "a", "b")
        c.set("hllerr:bad", c.get(k)[:-1])  # its sparse runs end short
    for args in (("PFADD", "hllerr:s", "a"), ("PFADD", "hllerr:l", "a"), ("PFCOUNT", k, "hllerr:s"),
                 ("PFCOUNT", "hllerr:l"), ("PFMERGE", k, "hllerr:s"), ("PFMERGE", "hllerr:s", k),
                 ("PFCOUNT", "hllerr:bad"), ("PFMERGE", k, "hllerr:bad"), ("PFADD",), ("PFCOUNT",),
                 ("PFMERGE",), ("PFCOUNT", k)):
        red, ram = replies_of(redis_and_rampart, *args)
        assert ram == red, args
