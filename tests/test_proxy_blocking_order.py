"""The order in which the proxy serves blocked clients that a write woke,
against Redis 7.0: within the command that unblocked them, before any other
client's next command that reads their keys. Against a real redis-server
("redis", 7.0.15) and the proxy of a `rampart up` cluster ("rampart") with
one worker: the guarantee is per worker (docs/proxy.md, "Blocking commands").
Every wait is bounded, every thread joined (bounded).
"""
from proxy_helpers import (Raw, RespError, blocked_clients, client, encode,  # noqa: F401
                           error_text, in_thread, joined, key, r, wait_blocked_clients)

PROXY_SETTINGS = {"workers": 1}


def test_woken_blocked_clients_are_served_before_the_next_command(redis_target, r, key):
    """Redis serves a blocked client within the command that unblocks it, so
    the next command of any client sees the move: an RPUSH to a list two
    BRPOPLPUSHes wait on in a circle (l1 -> l2, l2 -> l1) has moved its
    element around the circle before the pusher's next LRANGE; and a WATCH
    on the destination of a BRPOPLPUSH that an LPUSH woke fails the EXEC
    sent after the LPUSH's reply. Before the fix the woken commands ran in a
    later turn than the reads, which saw the lists without the moves. (One
    worker: across workers a read may still run before the woken command,
    docs/proxy.md.)"""
    l1, l2, src, dst, other = key("l1"), key("l2"), key("src"), key("dst"), key("other")
    before = blocked_clients(r)
    first = client(redis_target, socket_timeout=10)
    second = client(redis_target, socket_timeout=10)
    try:
        t1, out1 = in_thread(lambda: first.brpoplpush(l1, l2, 5))
        wait_blocked_clients(r, before + 1)
        t2, out2 = in_thread(lambda: second.brpoplpush(l2, l1, 5))
        wait_blocked_clients(r, before + 2)
        assert r.rpush(l1, "foo") == 1
        assert r.lrange(l1, 0, -1) == ["foo"]
        assert r.lrange(l2, 0, -1) == []
        assert joined(t1, out1) == "foo" and joined(t2, out2) == "foo"

        r.set(other, "v")
        t3, out3 = in_thread(lambda: first.brpoplpush(src, dst, 5))
        wait_blocked_clients(r, before + 1)
        with Raw(redis_target) as watcher:
            assert watcher.call("WATCH", dst) == b"OK"
            assert watcher.call("MULTI") == b"OK"
            assert watcher.call("GET", other) == b"QUEUED"
            assert r.lpush(src, "element") == 1
            watcher.send(encode("EXEC"))
            assert watcher.line() == b"*-1"  # a nil array: dst changed by the woken move
        assert joined(t3, out3) == "element"
        assert r.lrange(dst, 0, -1) == ["element"]
    finally:
        first.close()
        second.close()


def test_clients_block_in_the_order_their_commands_arrived(redis_target, r, key):
    """Redis's "BRPOPLPUSH with multiple blocked clients": two clients send
    BRPOPLPUSHes of one empty list, the first into a key holding a string,
    and a third pushes, all back to back without waiting. Redis runs them in
    arrival order, so the push serves the first client (WRONGTYPE, the
    element stays) and then the second. The proxy took a turn's sessions in
    rotating order: the second client's command could run first and block
    first, the push then served it, and the first client waited for its
    timeout with a null (a third of the tries, 21 of 60 in one run). Forty
    tries; each command's timeout is 5 s, so a miss fails, never hangs."""
    source, wrong, target = key("source"), key("wrong"), key("target")
    for attempt in range(40):
        r.delete(source, wrong, target)
        r.set(wrong, "nolist")
        with Raw(redis_target) as first, Raw(redis_target) as second:
            first.send(encode("BRPOPLPUSH", source, wrong, 5))
            second.send(encode("BRPOPLPUSH", source, target, 5))
            assert r.lpush(source, "foo") == 1
            got_first = first.reply()
            assert isinstance(got_first, RespError), (attempt, got_first)
            assert error_text(got_first).startswith("WRONGTYPE"), attempt
            assert second.reply() == b"foo", attempt
        assert r.lrange(target, 0, -1) == ["foo"], attempt
        assert r.llen(source) == 0, attempt
