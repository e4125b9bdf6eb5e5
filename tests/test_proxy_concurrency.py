"""Concurrent clients of the Redis-protocol proxy on collections, with Redis
7.0 semantics: no lost update when 8 clients LPUSH / SADD / ZINCRBY /
HINCRBY the same keys; WATCH (a watched key changed by another client makes
EXEC answer nil, redis-py's WatchError; unchanged, EXEC runs; UNWATCH,
DISCARD and EXEC forget the watches; WATCH inside MULTI is refused) and a
check-and-set loop built on it; MULTI blocks that mix reads and writes,
answered in order, each command seeing the effects of the earlier ones; and
read atomicity of multi-member changes: writers move members between two
sets, lists or fields (MULTI blocks, SMOVE, LMOVE, paired ZINCRBY / HINCRBY)
keeping a total constant while readers check it with MULTI reads and with
single commands that read several members or keys.

Targets as in test_proxy.py: a real redis-server ("redis", the reference
these expectations were validated against, 7.0.15) and the proxy of a
`rampart up` cluster ("rampart"); keys apart by the `key` fixture's prefix.
Every loop is bounded in time and count, every thread joined (bounded).
"""
import random
import time

import pytest
import redis

from proxy_helpers import Raw, RespError, client, encode, key, r, run_threads  # noqa: F401

# Two workers whatever the machine's cores (a 2-core machine gets one by default):
# clients land on both, so lock waits and the joins of read-modify-writes are
# also checked across worker threads.
PROXY_SETTINGS = {"workers": 2}


def exec_aborts(p, k, value):
    """MULTI on the watching pipeline p, SET k value queued: the EXEC must be
    aborted (redis-py's WatchError)."""
    p.multi()
    p.set(k, value)
    with pytest.raises(redis.WatchError):
        p.execute()


def incr_in_multi(c, n):
    """MULTI, INCR n, EXEC on the Raw connection c: EXEC's reply."""
    assert c.call("MULTI") == b"OK"
    assert c.call("INCR", n) == b"QUEUED"
    return c.call("EXEC")


# ---------------------------------------------------------------------------
# (a) No lost update

def test_no_lost_update(redis_target, key):
    """8 clients x 300 rounds of LPUSH, SADD (distinct members), ZINCRBY and
    HINCRBY (one member / field): the totals are exact, and the replies of
    the counters are each value 1..2400 exactly once (no two clients saw the
    same state)."""
    threads, rounds = 8, 300
    lst, st, zs, hs = key("list"), key("set"), key("zset"), key("hash")

    def work(t):
        c = client(redis_target)
        replies = {"lpush": [], "sadd": [], "zincrby": [], "hincrby": []}
        try:
            for i in range(rounds):
                replies["lpush"].append(c.lpush(lst, f"{t}:{i}"))
                replies["sadd"].append(c.sadd(st, f"{t}:{i}"))
                replies["zincrby"].append(c.zincrby(zs, 1, "m"))
                replies["hincrby"].append(c.hincrby(hs, "f", 1))
        finally:
            c.close()
        return replies

    results = run_threads([lambda t=t: work(t) for t in range(threads)])
    total = threads * rounds
    r = client(redis_target)
    try:
        assert r.llen(lst) == total
        assert sorted(r.lrange(lst, 0, -1)) == sorted(f"{t}:{i}" for t in range(threads)
                                                      for i in range(rounds))
        assert r.scard(st) == total
        assert r.zscore(zs, "m") == total
        assert r.hget(hs, "f") == str(total)
    finally:
        r.close()
    for name in ("lpush", "zincrby", "hincrby"):
        every = sorted(int(v) for res in results for v in res[name])
        assert every == list(range(1, total + 1)), name
        for res in results:  # each client saw its own changes in order
            assert res[name] == sorted(res[name]), name
    assert all(v == 1 for res in results for v in res["sadd"])


def test_readers_replies_beside_read_modify_writes(redis_target, key):
    """Turns that mix readers with read-modify-writes (the proxy answers the
    readers before the turn's write round, and joins INCRs of one key into one
    write): 4 clients x 150 pipelines of ECHO, GET, INCR of a shared counter,
    PING, and 3 readers x 150 pipelines of GET, GET of two constants. Every
    reply is the one its command asked for, in order, each exactly once (a
    reply sent twice or out of order shifts the replies after it; a joined
    INCR's reply must not go out after the PING behind it, nor before the GET
    ahead of it), and the counter's replies are 1..600, each once."""
    writers, rounds = 4, 150
    consts = [key(f"const{i}") for i in range(2)]
    counter = key("counter")
    setup = client(redis_target)
    try:
        for i, k in enumerate(consts):
            setup.set(k, f"v{i}")
    finally:
        setup.close()

    def writer(t):
        c = client(redis_target)
        seen = []
        try:
            for i in range(rounds):
                with c.pipeline(transaction=False) as p:
                    p.echo(f"w{t}:{i}").get(consts[0]).incr(counter).ping()
                    echo, got, n, pong = p.execute()
                assert (echo, got, pong) == (f"w{t}:{i}", "v0", True), (echo, got, n, pong)
                assert isinstance(n, int), n
                seen.append(n)
        finally:
            c.close()
        return seen

    def reader():
        c = client(redis_target)
        try:
            for _ in range(rounds):
                with c.pipeline(transaction=False) as p:
                    p.get(consts[0]).get(consts[1])
                    assert p.execute() == ["v0", "v1"]
        finally:
            c.close()

    results = run_threads([lambda t=t: writer(t) for t in range(writers)] + [reader] * 3)
    counts = [n for seen in results[:writers] for n in seen]
    assert sorted(counts) == list(range(1, writers * rounds + 1))
    for seen in results[:writers]:
        assert seen == sorted(seen)  # each client saw its own increments in order


def info_stat(target, name):
    """An INFO stats field of the proxy (an int)."""
    c = client(target)
    try:
        return int(c.info("stats")[name])
    finally:
        c.close()


def test_reads_of_one_key_share_a_read_and_keep_their_replies(redis_target, key):
    """Reads of one key taken in one turn from different clients run on one
    read and one view (the proxy joins them; INFO rampart_joined_reads), each
    with its own command: 6 clients x 60 pipelines of different reads of one
    paged list and one string (LRANGE from the head and the tail, LLEN,
    LINDEX, GET, STRLEN, GETRANGE) get each its own reply, in order, while a
    seventh client appends to another list. A follower given its leader's
    reply, or a reply out of place, fails it."""
    readers, rounds = 6, 60
    lst, s, other = key("list"), key("str"), key("other")
    elements = [f"e{i}:" + "x" * (i % 40) for i in range(2000)]
    setup = client(redis_target)
    try:
        for i in range(0, len(elements), 500):
            setup.rpush(lst, *elements[i:i + 500])
        setup.set(s, "0123456789")
    finally:
        setup.close()
    before = info_stat(redis_target, "rampart_joined_reads") if redis_target.name == "rampart" else 0

    def reader(t):
        c = client(redis_target)
        try:
            for i in range(rounds):
                at = (t * 7 + i) % len(elements)
                with c.pipeline(transaction=False) as p:
                    p.lrange(lst, 0, 9).llen(lst).lindex(lst, at).lrange(lst, -3, -1)
                    p.get(s).strlen(s).getrange(s, t, t + 2)
                    got = p.execute()
                assert got == [elements[:10], len(elements), elements[at], elements[-3:],
                               "0123456789", 10, "0123456789"[t:t + 3]], (t, i, got)
        finally:
            c.close()

    def appender():
        c = client(redis_target)
        try:
            for i in range(rounds * 3):
                assert c.rpush(other, i) == i + 1
        finally:
            c.close()

    run_threads([lambda t=t: reader(t) for t in range(readers)] + [appender])
    if redis_target.name == "rampart":
        assert info_stat(redis_target, "rampart_joined_reads") > before, "no read was joined"


# ---------------------------------------------------------------------------
# (b) WATCH

def test_watch_change_aborts_exec(redis_target, r, key):
    k = key()
    r.set(k, "1")
    other = client(redis_target)
    try:
        with r.pipeline() as p:
            p.watch(k)
            assert p.get(k) == "1"  # immediate mode while watching
            other.set(k, "changed")
            exec_aborts(p, k, "mine")
        assert r.get(k) == "changed"
    finally:
        other.close()


def test_watch_exec_nil_raw(redis_target, key):
    k, n = key(), key("n")
    with Raw(redis_target) as c, Raw(redis_target) as other:
        assert c.call("WATCH", k) == b"OK"
        assert other.call("SET", k, "x") == b"OK"
        assert c.call("MULTI") == b"OK"
        assert c.call("INCR", n) == b"QUEUED"
        c.send(b"*1\r\n$4\r\nEXEC\r\n")
        assert c.line() == b"*-1"  # a nil array: nothing ran
        assert c.call("GET", n) is None
        assert incr_in_multi(c, n) == [1]  # EXEC forgot the watch


def test_watch_unchanged_runs(redis_target, r, key):
    k, other_key = key(), key("other")
    r.set(k, "1")
    other = client(redis_target)
    try:
        with r.pipeline() as p:
            p.watch(k, key("missing"))
            value = int(p.get(k))
            other.set(other_key, "x")  # another key: no matter
            other.get(k)  # reads: no matter
            p.multi()
            p.set(k, value + 1)
            p.get(k)
            assert p.execute() == [True, "2"]
    finally:
        other.close()


def assert_change_aborts_exec(r, k, change, marker):
    """WATCH k, then `change()` (by another client), then a MULTI block that
    would set `marker`: its EXEC must abort and the marker stay unset."""
    with r.pipeline() as p:
        p.watch(k)
        change()
        exec_aborts(p, marker, "ran")
    assert r.get(marker) is None


@pytest.mark.parametrize("change", ["set", "del", "create", "rpush", "lpop", "sadd", "srem",
                                    "zadd", "zincrby", "hset", "hincrby", "expire"])
def test_watch_sees_every_kind_of_change(redis_target, r, key, change):
    """A change of any type of value by another client aborts the EXEC."""
    k = key(change)
    setup = {"set": lambda: r.set(k, "v"), "del": lambda: r.set(k, "v"),
             "create": lambda: None, "rpush": lambda: r.rpush(k, "a"),
             "lpop": lambda: r.rpush(k, "a", "b"), "sadd": lambda: r.sadd(k, "a"),
             "srem": lambda: r.sadd(k, "a", "b"), "zadd": lambda: r.zadd(k, {"a": 1}),
             "zincrby": lambda: r.zadd(k, {"a": 1}), "hset": lambda: r.hset(k, "f", "1"),
             "hincrby": lambda: r.hset(k, "f", "1"), "expire": lambda: r.set(k, "v")}
    other = client(redis_target)
    act = {"set": lambda: other.set(k, "w"), "del": lambda: other.delete(k),
           "create": lambda: other.set(k, "new"), "rpush": lambda: other.rpush(k, "b"),
           "lpop": lambda: other.lpop(k), "sadd": lambda: other.sadd(k, "b"),
           "srem": lambda: other.srem(k, "a"), "zadd": lambda: other.zadd(k, {"b": 2}),
           "zincrby": lambda: other.zincrby(k, 1, "a"), "hset": lambda: other.hset(k, "g", "2"),
           "hincrby": lambda: other.hincrby(k, "f", 1), "expire": lambda: other.expire(k, 100)}
    try:
        setup[change]()
        assert_change_aborts_exec(r, k, act[change], key("marker"))
    finally:
        other.close()


@pytest.mark.parametrize("change", ["hset", "hincrby", "lset", "zadd"])
def test_watch_sees_changes_inside_large_collections(redis_target, r, key, change):
    """A change of one element of a collection large enough to be paged
    (docs/collections.md) that leaves every count as it was (an existing
    field, index or member) aborts the EXEC too."""
    k, n = key(change), 3000
    pad = "x" * 100
    with r.pipeline(transaction=False) as p:
        for i in range(0, n, 500):
            chunk = range(i, min(i + 500, n))
            if change in ("hset", "hincrby"):
                p.hset(k, mapping={f"f{j:05}": str(j) for j in chunk})
                p.hset(k, mapping={f"pad{j:05}": pad for j in chunk})
            elif change == "lset":
                p.rpush(k, *[f"{pad}{j}" for j in chunk])
            else:
                p.zadd(k, {f"{pad}{j:05}": j for j in chunk})
        p.execute()
    other = client(redis_target)
    act = {"hset": lambda: other.hset(k, "f01500", "changed"),
           "hincrby": lambda: other.hincrby(k, "f01500", 1),
           "lset": lambda: other.lset(k, n // 2, "changed"),
           "zadd": lambda: other.zadd(k, {f"{pad}01500": 1500.5})}
    try:
        assert_change_aborts_exec(r, k, act[change], key("marker"))
    finally:
        other.close()
        r.delete(k)


def test_watch_own_write_aborts(r, key):
    """A change by the watching client itself, before MULTI, counts too."""
    k = key()
    with r.pipeline() as p:
        p.watch(k)
        p.set(k, "own")  # immediate mode: runs now
        exec_aborts(p, key("marker"), "ran")
    assert r.get(key("marker")) is None


def test_watch_several_keys(redis_target, r, key):
    a, b, c = key("a"), key("b"), key("c")
    other = client(redis_target)
    try:
        with r.pipeline() as p:
            p.watch(a, b, c)
            other.sadd(b, "x")
            exec_aborts(p, key("marker"), "ran")
        with r.pipeline() as p:  # watched one after the other
            p.watch(a)
            p.watch(c)
            other.hset(c, "f", "v")
            exec_aborts(p, key("marker"), "ran")
        assert r.get(key("marker")) is None
    finally:
        other.close()


def test_unwatch_and_discard_forget_watches(redis_target, key):
    k, n = key(), key("n")
    with Raw(redis_target) as c, Raw(redis_target) as other:
        assert c.call("WATCH", k) == b"OK"
        other.call("SET", k, "1")
        assert c.call("UNWATCH") == b"OK"
        assert incr_in_multi(c, n) == [1]  # the change came before UNWATCH: no matter

        assert c.call("WATCH", k) == b"OK"
        assert c.call("MULTI") == b"OK"
        assert c.call("DISCARD") == b"OK"
        other.call("SET", k, "2")  # after DISCARD: not watched any more
        assert incr_in_multi(c, n) == [2]

        assert c.call("UNWATCH") == b"OK"  # without watches: fine
        assert c.call("WATCH", k) == b"OK"
        assert incr_in_multi(c, n) == [3]
        other.call("SET", k, "3")  # after EXEC: not watched any more
        assert incr_in_multi(c, n) == [4]


def test_pipelined_watch_is_used_and_forgotten_in_order(redis_target, key):
    """WATCH, MULTI, INCR, EXEC sent in one packet: the EXEC checks the
    watch and clears it, so a later change of the key does not abort the
    next transaction; a pipelined WATCH, UNWATCH and WATCH, MULTI, DISCARD
    leave nothing watched either. (The proxy took the EXEC, DISCARD or
    UNWATCH in the WATCH's turn, before the WATCH had recorded its
    versions: the watch outlived them and aborted a later EXEC.)"""
    k, n = key(), key("n")
    exec_block = encode("MULTI") + encode("INCR", n) + encode("EXEC")
    expect = 0
    with Raw(redis_target) as c, Raw(redis_target) as other:
        for i, (pipelined, replies) in enumerate([
                (encode("WATCH", k) + exec_block, 4),
                (encode("WATCH", k) + encode("UNWATCH"), 2),
                (encode("WATCH", k) + encode("MULTI") + encode("DISCARD"), 3)]):
            c.send(pipelined)
            got = [c.reply() for _ in range(replies)]
            assert got[0] == b"OK", (i, got)
            if replies == 4:
                expect += 1
                assert got[3] == [expect], (i, got)
            other.call("SET", k, str(i))  # after the watch is gone
            c.send(exec_block)
            got = [c.reply() for _ in range(3)]
            expect += 1
            assert got[2] == [expect], (i, got)  # not aborted (a null)


def test_watch_inside_multi_refused(redis_target, key):
    k = key()
    with Raw(redis_target) as c:
        assert c.call("MULTI") == b"OK"
        reply = c.call("WATCH", k)
        assert isinstance(reply, RespError), reply
        assert str(reply) == "ERR WATCH inside MULTI is not allowed"
        assert c.call("SET", k, "v") == b"QUEUED"  # the transaction goes on
        assert c.call("EXEC") == [b"OK"]
        assert c.call("GET", k) == b"v"
        reply = c.call("WATCH")
        assert isinstance(reply, RespError) and "wrong number of arguments" in str(reply)


def test_watch_check_and_set_loop(redis_target, key):
    """The optimistic-locking idiom: 4 clients add to a counter (and a list)
    with WATCH / GET / MULTI / SET / EXEC, retrying on WatchError: nothing
    is lost, and some retries happened or not, as the schedule fell."""
    threads, adds = 4, 40
    counter, log = key("counter"), key("log")
    deadline = time.monotonic() + 60

    def work(t):
        c = client(redis_target)
        retries = 0
        try:
            for i in range(adds):
                while True:
                    assert time.monotonic() < deadline, "check-and-set loop out of time"
                    with c.pipeline() as p:
                        try:
                            p.watch(counter)
                            n = int(p.get(counter) or 0)
                            p.multi()
                            p.set(counter, n + 1)
                            p.rpush(log, n + 1)
                            p.execute()
                            break
                        except redis.WatchError:
                            retries += 1
        finally:
            c.close()
        return retries

    run_threads([lambda t=t: work(t) for t in range(threads)])
    r = client(redis_target)
    try:
        assert r.get(counter) == str(threads * adds)
        assert r.lrange(log, 0, -1) == [str(i) for i in range(1, threads * adds + 1)]
    finally:
        r.close()


# ---------------------------------------------------------------------------
# (c) MULTI blocks of reads and writes

def test_multi_mixed_reads_and_writes(r, key):
    k, lst, st, zs, hs = key("k"), key("l"), key("s"), key("z"), key("h")
    r.set(k, "10")
    r.rpush(lst, "a")
    p = r.pipeline(transaction=True)
    p.get(k).incr(k).get(k)
    p.lrange(lst, 0, -1).rpush(lst, "x").lrange(lst, 0, -1).lpop(lst).llen(lst)
    p.sadd(st, "m1", "m2").scard(st).sismember(st, "m1").srem(st, "m1").smembers(st)
    p.zadd(zs, {"a": 1}).zincrby(zs, 5, "a").zscore(zs, "a").zrange(zs, 0, -1)
    p.hset(hs, "f", "1").hincrby(hs, "f", 2).hgetall(hs).delete(k).get(k).exists(k)
    assert p.execute() == [
        "10", 11, "11",
        ["a"], 2, ["a", "x"], "a", 1,
        2, 2, 1, 1, {"m2"},
        1, 6.0, 6.0, ["a"],
        1, 3, {"f": "3"}, 1, None, 0]
    assert r.lrange(lst, 0, -1) == ["x"]


def test_multi_mixed_raw(redis_target, key):
    k, lst = key("k"), key("l")
    with Raw(redis_target) as c:
        assert c.call("MULTI") == b"OK"
        for cmd in (("GET", k), ("INCR", k), ("LRANGE", lst, 0, -1), ("RPUSH", lst, "x"),
                    ("GET", k), ("LRANGE", lst, 0, -1), ("INCRBY", k, 10), ("MGET", k, lst)):
            assert c.call(*cmd) == b"QUEUED", cmd
        reply = c.call("EXEC")
        assert reply[:7] == [None, 1, [], 1, b"1", [b"x"], 11]
        assert reply[7] == [b"11", None]  # MGET of a list: nil, no error


def test_multi_runtime_errors_do_not_stop_the_block(r, key):
    """A command failing when EXEC runs it (here: the wrong type) answers its
    error in place; the commands before and after it still run."""
    s, lst = key("s"), key("l")
    r.set(s, "text")
    p = r.pipeline(transaction=True)
    p.rpush(lst, "a").lpush(s, "x").rpush(lst, "b").incr(s).lrange(lst, 0, -1)
    replies = p.execute(raise_on_error=False)
    assert replies[0] == 1 and replies[2] == 2 and replies[4] == ["a", "b"]
    assert isinstance(replies[1], redis.ResponseError) and "WRONGTYPE" in str(replies[1])
    assert isinstance(replies[3], redis.ResponseError) and "not an integer" in str(replies[3])
    assert r.get(s) == "text"


def test_multi_read_your_writes_under_concurrency(redis_target, key):
    """4 clients each run 50 blocks MULTI: INCR k; GET k; RPUSH l v; LLEN l;
    within a block the GET equals the INCR's reply and the LLEN the RPUSH's
    (another client cannot get in between), and the totals are exact."""
    threads, blocks = 4, 50
    k, lst = key("k"), key("l")

    def work(t):
        c = client(redis_target)
        try:
            for i in range(blocks):
                p = c.pipeline(transaction=True)
                p.incr(k).get(k).rpush(lst, f"{t}:{i}").llen(lst)
                n, got, length, llen = p.execute()
                assert got == str(n) and llen == length, (n, got, length, llen)
        finally:
            c.close()

    run_threads([lambda t=t: work(t) for t in range(threads)])
    r = client(redis_target)
    try:
        assert r.get(k) == str(threads * blocks)
        assert r.llen(lst) == threads * blocks
    finally:
        r.close()


# ---------------------------------------------------------------------------
# (d) Read atomicity of multi-member changes

DURATION_S = 1.0    # each invariant test runs this long (bounded further by counts)
MAX_OPS = 3000      # per thread
MIN_OPS = 20        # a thread that did fewer proves nothing


def invariant_run(redis_target, writers, readers, duration=DURATION_S):
    """Runs each writer(client, rng) and reader(client) over and over on a
    thread of its own, each with its own client, until `duration` has passed
    or it ran MAX_OPS times; returns the counts of runs (each >= MIN_OPS)."""
    stop_at = time.monotonic() + duration

    def bounded(step, seed):
        def run():
            c = client(redis_target)
            rng = random.Random(seed)
            n = 0
            try:
                while n < MAX_OPS and time.monotonic() < stop_at:
                    step(c, rng)
                    n += 1
            finally:
                c.close()
            return n
        return run

    steps = list(writers) + [lambda c, rng, rd=rd: rd(c) for rd in readers]
    counts = run_threads([bounded(step, 100 + i) for i, step in enumerate(steps)])
    assert all(n >= MIN_OPS for n in counts), counts
    return counts


def test_sets_moves_keep_total(redis_target, r, key):
    """Writers move their own members between sets a and b with MULTI SREM
    + SADD, or with SMOVE; readers see every member in exactly one set, by
    MULTI SCARD a / SCARD b, by MULTI SMEMBERS a / SMEMBERS b, and by one
    SUNION / SINTER."""
    a, b = key("a"), key("b")
    owned = [[f"w{w}-m{i}" for i in range(20)] for w in range(2)]
    every = {m for ms in owned for m in ms}
    r.sadd(a, *every)

    def writer(members, use_smove):
        where = {m: a for m in members}

        def step(c, rng):
            m = rng.choice(members)
            src, dst = where[m], (b if where[m] == a else a)
            if use_smove:
                assert c.smove(src, dst, m) is True
            else:
                p = c.pipeline(transaction=True)
                p.srem(src, m).sadd(dst, m)
                assert p.execute() == [1, 1]
            where[m] = dst
        return step

    def reader_cards(c):
        p = c.pipeline(transaction=True)
        p.scard(a).scard(b)
        na, nb = p.execute()
        assert na + nb == len(every), (na, nb)

    def reader_members(c):
        p = c.pipeline(transaction=True)
        p.smembers(a).smembers(b)
        sa, sb = p.execute()
        assert not sa & sb and sa | sb == every, (sa & sb, every - (sa | sb))

    def reader_union(c):
        assert c.sunion(a, b) == every
        assert c.sinter(a, b) == set()

    invariant_run(redis_target, [writer(owned[0], False), writer(owned[1], True)],
                  [reader_cards, reader_members, reader_union])
    assert r.scard(a) + r.scard(b) == len(every)


def test_zset_paired_zincrby_keeps_total(redis_target, r, key):
    """Writers run MULTI ZINCRBY z +x m_i / ZINCRBY z -x m_j (integers, so
    exact); readers sum ZRANGE 0 -1 WITHSCORES and ZMSCORE of every member
    (one command each). A second sorted set of two members gets the same
    pairs, and a reader sums its two ZSCOREs in one MULTI."""
    z, z2 = key("z"), key("z2")
    members = [f"m{i}" for i in range(10)]
    r.zadd(z, {m: 100 for m in members})
    r.zadd(z2, {"p": 0, "q": 0})
    total = 100 * len(members)

    def writer(c, rng):
        i, j = rng.sample(members, 2)
        x = rng.randrange(1, 50)
        p = c.pipeline(transaction=True)
        p.zincrby(z, x, i).zincrby(z, -x, j)
        p.execute()

    def pair_writer(c, rng):
        x = rng.randrange(-50, 50)
        p = c.pipeline(transaction=True)
        p.zincrby(z2, x, "p").zincrby(z2, -x, "q")
        p.execute()

    def reader_range(c):
        pairs = c.zrange(z, 0, -1, withscores=True)
        assert len(pairs) == len(members)
        assert sum(s for _, s in pairs) == total, pairs

    def reader_scores(c):
        assert sum(c.zmscore(z, members)) == total

    def reader_pair(c):
        p = c.pipeline(transaction=True)
        p.zscore(z2, "p").zscore(z2, "q")
        sp, sq = p.execute()
        assert sp + sq == 0, (sp, sq)

    invariant_run(redis_target, [writer, writer, pair_writer],
                  [reader_range, reader_scores, reader_pair])
    assert sum(s for _, s in r.zrange(z, 0, -1, withscores=True)) == total
    assert sum(r.zmscore(z2, ["p", "q"])) == 0


def test_hash_paired_hincrby_keeps_total(redis_target, r, key):
    """Writers run MULTI HINCRBY h f_i +x / HINCRBY h f_j -x; readers sum
    HGETALL and HMGET (one command each), and HGET of every field in one
    MULTI."""
    h = key("h")
    fields = [f"f{i}" for i in range(8)]
    r.hset(h, mapping={f: 1000 for f in fields})
    total = 1000 * len(fields)

    def writer(c, rng):
        i, j = rng.sample(fields, 2)
        x = rng.randrange(1, 100)
        p = c.pipeline(transaction=True)
        p.hincrby(h, i, x).hincrby(h, j, -x)
        p.execute()

    def reader_getall(c):
        assert sum(int(v) for v in c.hgetall(h).values()) == total

    def reader_hmget(c):
        assert sum(int(v) for v in c.hmget(h, fields)) == total

    def reader_multi(c):
        p = c.pipeline(transaction=True)
        for f in fields:
            p.hget(h, f)
        assert sum(int(v) for v in p.execute()) == total

    invariant_run(redis_target, [writer, writer], [reader_getall, reader_hmget, reader_multi])
    assert sum(int(v) for v in r.hvals(h)) == total


def test_lists_lmove_keeps_total(redis_target, r, key):
    """Writers LMOVE elements between lists a and b (one command over two
    keys) and run MULTI blocks of RPOP a / LPUSH b of a known element;
    readers check MULTI LLEN a / LLEN b and MULTI LRANGE of both (every
    element once)."""
    a, b = key("a"), key("b")
    elements = [f"e{i}" for i in range(30)]
    r.rpush(a, *elements)

    def mover(c, rng):
        src, dst = (a, b) if rng.random() < 0.5 else (b, a)
        c.lmove(src, dst, rng.choice(["LEFT", "RIGHT"]), rng.choice(["LEFT", "RIGHT"]))

    def rotator(c, rng):
        p = c.pipeline(transaction=True)  # both lists rotate, inside one block
        p.lmove(a, a, "LEFT", "RIGHT").lmove(b, b, "RIGHT", "LEFT")
        p.execute()

    def reader_len(c):
        p = c.pipeline(transaction=True)
        p.llen(a).llen(b)
        na, nb = p.execute()
        assert na + nb == len(elements), (na, nb)

    def reader_range(c):
        p = c.pipeline(transaction=True)
        p.lrange(a, 0, -1).lrange(b, 0, -1)
        la, lb = p.execute()
        assert sorted(la + lb) == sorted(elements), (la, lb)

    invariant_run(redis_target, [mover, rotator], [reader_len, reader_range])
    assert sorted(r.lrange(a, 0, -1) + r.lrange(b, 0, -1)) == sorted(elements)
