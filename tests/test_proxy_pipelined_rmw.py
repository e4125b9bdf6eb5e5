"""Pipelined read-modify-writes of one connection (INCR, HINCRBY, LPUSH, ...):
the proxy takes a connection's run of them into one turn, each after the one
before it — one on keys an earlier one holds runs after it on its view, one on
other keys beside it (docs/proxy.md, "How a worker runs commands"). Checked
against redis-server 7.0: every reply is what sequential execution gives, in
order, with reads, blind writes, MULTI blocks and errors in between; 8 clients
pipelining increments of shared and own keys lose no update and each sees its
own in order; and (rampart) a pipeline of 64 INCRs takes far fewer turns than
commands (INFO rampart_turns; one turn each before).

Targets as in test_proxy.py; keys apart by the `key` fixture's prefix.
"""
from proxy_helpers import Raw, RespError, client, encode, key, run_threads  # noqa: F401


def pipeline(target, commands):
    """Sends `commands` (tuples) in one write on a fresh connection and
    returns their replies in order (errors as RespError)."""
    with Raw(target) as c:
        c.send(b"".join(encode(*cmd) for cmd in commands))
        return [c.reply() for _ in commands]


def test_pipelined_read_modify_writes_answer_in_order(redis_target, key):
    a, b, h, lst, s, z = key("a"), key("b"), key("h"), key("l"), key("s"), key("z")
    commands = [
        ("INCR", a), ("INCR", b), ("INCRBY", a, "5"), ("HINCRBY", h, "f", "2"),
        ("LPUSH", lst, "x"), ("INCR", a), ("RPUSH", lst, "y"), ("LPOP", lst),
        ("HINCRBY", h, "f", "3"), ("ZINCRBY", z, "1.5", "m"), ("ZINCRBY", z, "1", "m"),
        ("GET", a),                      # a read after them: sees all of them
        ("INCR", a), ("SET", b, "10"),   # a blind write after a read-modify-write
        ("INCR", b), ("APPEND", s, "ab"), ("APPEND", s, "cd"),
        ("HSET", h, "g", "v"), ("HINCRBY", h, "g", "1"),  # an error between them
        ("INCR", a), ("MULTI",), ("INCR", a), ("INCR", b), ("EXEC",),
        ("INCR", a), ("LRANGE", lst, "0", "-1"), ("HGETALL", h), ("GET", s), ("GET", b),
    ]
    got = pipeline(redis_target, commands)
    assert isinstance(got[18], RespError) and str(got[18]) == "ERR hash value is not an integer"
    got[18] = "error"
    assert got == [
        1, 1, 6, 2,
        1, 7, 2, b"x",
        5, b"1.5", b"2.5",
        b"7",
        8, b"OK",
        11, 2, 4,
        1, "error",
        9, b"OK", b"QUEUED", b"QUEUED", [10, 12],
        11, [b"y"], [b"f", b"5", b"g", b"v"], b"abcd", b"12",
    ]


def test_sort_patterns_see_the_pipelined_writes_before_them(redis_target, key):
    """SORT … BY/GET reads keys its lock does not cover: pipelined after
    INCRs of those keys it must see them, and the INCR after it must not
    show in its reply or in what it stored."""
    src, dst, w = key("src"), key("dst"), key("w_")
    assert pipeline(redis_target, [("RPUSH", src, "1", "2", "3")]) == [3]
    got = pipeline(redis_target, [
        ("INCR", w + "1"), ("INCRBY", w + "2", "5"),
        ("SORT", src, "BY", w + "*", "GET", w + "*"),
        ("INCRBY", w + "3", "9"),
        ("SORT", src, "BY", w + "*", "DESC", "STORE", dst),
        ("INCR", w + "1"),
        ("LRANGE", dst, "0", "-1"),
    ])
    assert got == [1, 5, [None, b"1", b"5"], 9, 3, 2, [b"3", b"2", b"1"]]


def test_pipelined_increments_of_one_key_in_one_write(redis_target, key):
    """200 INCRs of one key and 200 of 200 keys, in one write each: the
    replies count up one by one (a reply out of place or an increment lost
    shows)."""
    one = key("one")
    assert pipeline(redis_target, [("INCR", one)] * 200) == list(range(1, 201))
    many = [("INCR", key(f"k{i}")) for i in range(200)]
    assert pipeline(redis_target, many + many) == [1] * 200 + [2] * 200


def test_concurrent_pipelines_lose_no_update(redis_target, key):
    """8 clients x 100 pipelines of INCR shared, INCR own, INCR shared, HINCRBY
    shared hash, INCR own: the totals are exact, every reply of the shared
    counter is one of 1..1600 exactly once, a pipeline's second INCR of it is
    above its first, and each client's own counter counts 1, 2, 3, ..."""
    clients, rounds = 8, 100
    shared, hsh = key("shared"), key("hash")

    def work(t):
        own = key(f"own{t}")
        seen = []
        with Raw(redis_target) as c:
            for i in range(rounds):
                cmds = [("INCR", shared), ("INCR", own), ("INCR", shared),
                        ("HINCRBY", hsh, "f", "1"), ("INCR", own)]
                c.send(b"".join(encode(*cmd) for cmd in cmds))
                s1, o1, s2, _, o2 = [c.reply() for _ in cmds]
                assert (o1, o2) == (2 * i + 1, 2 * i + 2), (t, i, o1, o2)
                assert s2 > s1, (t, i, s1, s2)
                seen += [s1, s2]
        return seen

    results = run_threads([lambda t=t: work(t) for t in range(clients)])
    total = 2 * clients * rounds
    assert sorted(n for seen in results for n in seen) == list(range(1, total + 1))
    c = client(redis_target)
    try:
        assert c.get(shared) == str(total)
        assert c.hget(hsh, "f") == str(clients * rounds)
    finally:
        c.close()


def test_a_pipeline_of_increments_takes_few_turns(redis_target, key):
    """rampart only: 64 INCRs of 64 keys in one write take far fewer turns
    than commands (they took one turn each when a read-modify-write ended its
    connection's turn)."""
    if redis_target.name != "rampart":
        return
    c = client(redis_target)
    try:
        before = int(c.info("stats")["rampart_turns"])
        assert pipeline(redis_target, [("INCR", key(f"k{i}")) for i in range(64)]) == [1] * 64
        turns = int(c.info("stats")["rampart_turns"]) - before
    finally:
        c.close()
    assert turns < 16, f"64 pipelined INCRs took {turns} turns"
