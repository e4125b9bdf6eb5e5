"""Writes of keys a proxy worker has never seen (docs/proxy.md, "Writes of new
keys"): a read-modify-write of an unknown key runs on "absent" and commits
with the kv-node's IF_ABSENT check instead of reading first. When the key
does exist (another worker or proxy wrote it), the node refuses, nothing is
written, and the command reads and runs again: its effect and reply are
those of a read first. Against a real redis-server ("redis", 7.0.15) and the
proxy of a `rampart up` cluster with two workers, so that a key one
connection wrote is unknown to the other worker: over UCX ("rampart-ucx",
where GET* keeps the addresses that tell a new key) and over tcp
("rampart", where the proxy knows nothing of a key and never guesses).
"""
from proxy_helpers import Raw, client, encode, in_thread, joined, key, r, ucx_too  # noqa: F401

PROXY_SETTINGS = {"workers": 2}
pytestmark = ucx_too


def absent_counters(target, r):
    """INFO's (rampart_absent_writes, rampart_absent_refused); None on redis."""
    if target.name == "redis":
        return None
    stats = r.info("stats")
    return stats["rampart_absent_writes"], stats["rampart_absent_refused"]


def guesses(target):
    """Whether the proxy guesses new keys here: only where GET* reads."""
    return target.name == "rampart-ucx"


def worker_of(r):
    """Each connection's proxy worker, by client id (CLIENT LIST's rampart-worker=)."""
    return {int(e["id"]): e["rampart-worker"] for e in r.client_list()}


def connections_on_two_workers(target, r, tries=16):
    """Two clients whose connections live on different proxy workers (any
    two against redis-server)."""
    first = client(target)
    first.ping()
    if target.name == "redis":
        return first, client(target)
    others = []
    try:
        for _ in range(tries):
            c = client(target)
            others.append(c)
            cid = c.client_id()
            workers = worker_of(first)
            if workers[cid] != workers[first.client_id()]:
                others.remove(c)
                return first, c
        raise AssertionError(f"{tries} connections all on the first one's worker")
    finally:
        for c in others:
            c.close()


def test_writes_of_new_keys_answer_as_redis_does(redis_target, r, key):
    """Each command creates its key: same replies as Redis, and on rampart
    every one was written without a read."""
    before = absent_counters(redis_target, r)
    assert r.hset(key("h"), mapping={"f": "1", "g": "2"}) == 2
    assert r.sadd(key("s"), "a", "b", "a") == 2
    assert r.lpush(key("l"), "x", "y") == 2
    assert r.rpush(key("l2"), "x") == 1
    assert r.incr(key("n")) == 1
    assert r.incrbyfloat(key("f"), 1.5) == 1.5
    assert r.setnx(key("nx"), "v") is True
    assert r.append(key("a"), "abc") == 3
    assert r.zadd(key("z"), {"m": 2.0}) == 1
    assert r.set(key("g"), "new", get=True) is None
    assert r.hincrby(key("hi"), "f", 5) == 5
    assert r.hgetall(key("h")) == {"f": "1", "g": "2"}
    assert r.smembers(key("s")) == {"a", "b"}
    assert r.lrange(key("l"), 0, -1) == ["y", "x"]
    assert r.get(key("n")) == "1" and r.get(key("nx")) == "v" and r.get(key("g")) == "new"
    assert r.zscore(key("z"), "m") == 2.0
    after = absent_counters(redis_target, r)
    if after is not None:
        assert after[0] - before[0] == (11 if guesses(redis_target) else 0), (before, after)
        assert after[1] == before[1]


def test_commands_that_write_nothing_on_a_missing_key_still_read_it(redis_target, r, key):
    """HDEL, SREM, GETDEL, EXPIRE of a missing key write nothing, so their
    answer cannot come from a guess the node checks: they read (rampart
    counts no guessed write), and a key that does exist is found."""
    before = absent_counters(redis_target, r)
    assert r.hdel(key("h"), "f") == 0
    assert r.srem(key("s"), "a") == 0
    assert r.getdel(key("g")) is None
    assert r.expire(key("e"), 100) is False
    after = absent_counters(redis_target, r)
    if after is not None:
        assert after == before


def test_a_key_the_other_worker_wrote_is_read_before_it_changes(redis_target, r, key):
    """One connection creates the keys; a connection on the other worker
    (which has never seen them) changes each: the guessed writes are
    refused and run again on what is there, so nothing of the first write
    is lost and the replies count it."""
    a, b = connections_on_two_workers(redis_target, r)
    try:
        before = absent_counters(redis_target, r)
        for i in range(20):
            assert a.hset(key(f"h{i}"), "f1", "v1") == 1
            assert a.incr(key(f"n{i}")) == 1
            assert a.sadd(key(f"s{i}"), "m1") == 1
        for i in range(20):
            assert b.hset(key(f"h{i}"), "f2", "v2") == 1
            assert b.incr(key(f"n{i}")) == 2
            assert b.sadd(key(f"s{i}"), "m1", "m2") == 1
        for i in range(20):
            assert r.hgetall(key(f"h{i}")) == {"f1": "v1", "f2": "v2"}, i
            assert r.get(key(f"n{i}")) == "2", i
            assert r.smembers(key(f"s{i}")) == {"m1", "m2"}, i
        after = absent_counters(redis_target, r)
        if guesses(redis_target):
            assert after[1] > before[1], (before, after)  # the other worker did guess
    finally:
        a.close()
        b.close()


def test_no_update_is_lost_when_many_clients_create_the_same_keys(redis_target, r, key):
    """Eight clients (on both workers) each add their member to, and
    increment, the same 100 fresh keys at once: every key ends with all
    eight members and the count 8."""
    clients, keys = 8, 100

    def work(n):
        c = client(redis_target)
        try:
            for i in range(keys):
                c.sadd(key(f"s{i}"), f"m{n}")
                c.incr(key(f"n{i}"))
                c.hset(key(f"h{i}"), f"f{n}", n)
        finally:
            c.close()
    runs = [in_thread(lambda n=n: work(n)) for n in range(clients)]
    for t, out in runs:
        joined(t, out, timeout=60)
    for i in range(keys):
        assert r.scard(key(f"s{i}")) == clients, i
        assert r.get(key(f"n{i}")) == str(clients), i
        assert r.hlen(key(f"h{i}")) == clients, i


def test_a_pipelined_read_never_sees_the_write_sent_after_it(redis_target, key):
    """A read and a write of the same key pipelined in one packet run in
    their order, also when the proxy sends the write in the round that
    reads: the read answers what was there before. A read of a key the
    worker has not seen goes as a message, a write of a new key (guessed
    absent, or blind) goes as another; the node does not order the two,
    so the write must wait for the read."""
    with Raw(redis_target) as c:
        for i in range(40):
            k = key(f"k{i}")
            c.send(encode("GET", k) + encode("SET", k, "v")
                   + encode("HGETALL", k + "h") + encode("HSET", k + "h", "f", "1")
                   + encode("GET", k + "n") + encode("INCR", k + "n"))
            assert [c.reply() for _ in range(6)] == [None, b"OK", [], 1, None, 1], i


def test_a_read_never_sees_its_sessions_later_write_joined_to_another(redis_target, r, key):
    """S pipelines MGET x u, INCR x while T increments x: S's INCR joins T's
    (one job of the turn, placed before S's read), whose reads of x are
    one-sided, so its write could go out with S's MGET (u unknown: a
    message). S's MGET must not see S's own INCR: x reads 0 or 1, and 1
    only if T's INCR came first (T answered 1)."""
    conns = [Raw(redis_target) for _ in range(12)]
    try:
        ids = [c.call("CLIENT", "ID") for c in conns]
        if redis_target.name == "redis":
            same = conns[:2]
        else:  # two connections on r's worker
            workers = worker_of(r)
            same = [c for c, cid in zip(conns, ids) if workers[cid] == workers[r.client_id()]][:2]
        assert len(same) == 2, "no two connections on r's worker"
        t, s = same
        for i in range(60):
            x, u = key(f"x{i}"), key(f"u{i}")
            r.set(x, 0)  # r's worker now knows x: T's read of it is one-sided
            t.send(encode("INCR", x))
            s.send(encode("MGET", x, u) + encode("INCR", x))
            seen, by_s, by_t = s.reply()[0], s.reply(), t.reply()
            assert seen in (b"0", b"1"), (i, seen)
            assert sorted([by_s, by_t]) == [1, 2], (i, by_s, by_t)
            if seen == b"1":
                assert by_t == 1, (i, seen, by_s, by_t)
    finally:
        for c in conns:
            c.close()
