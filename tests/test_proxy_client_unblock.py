"""CLIENT UNBLOCK id [TIMEOUT|ERROR] against Redis 7.0: a client blocked in
BLPOP, BLMOVE, BZPOPMIN... is answered at once, as at its timeout (a null)
or with -UNBLOCKED; the command answers 1 if the client was blocked, 0
otherwise. Against a real redis-server ("redis", 7.0.15) and the proxy of a
`rampart up` cluster ("rampart") with two workers, so that an UNBLOCK often
names a client of the other worker. Every wait is bounded.
"""
from proxy_helpers import (Raw, RespError, blocked_clients, encode, error_text, key,  # noqa: F401
                           r, wait_blocked_clients)

PROXY_SETTINGS = {"workers": 2}


def test_unblock_answers_a_blocked_client_as_a_timeout_or_an_error(redis_target, r, key):
    """Redis's "client unblock tests" (type/list): the default and TIMEOUT
    answer the blocked command with its timeout reply, ERROR with
    -UNBLOCKED; the client then blocks and is served as before. Twelve
    clients, unblocked one by one from one connection: with two proxy
    workers, some of them live on the other worker."""
    lst, zset = key("list"), key("zset")
    base = blocked_clients(r)
    clients = [Raw(redis_target) for _ in range(12)]
    try:
        ids = [c.call("CLIENT", "ID") for c in clients]
        if redis_target.name == "rampart":
            # CLIENT LIST names each connection's worker: the twelve are on both.
            workers = {}
            for line in r.execute_command("CLIENT", "LIST").splitlines():
                fields = dict(f.split("=", 1) for f in line.split())
                workers[int(fields["id"])] = fields["rampart-worker"]
            assert len({workers[cid] for cid in ids}) == 2, "all twelve on one worker"
        for n, (c, cid) in enumerate(zip(clients, ids)):
            how = ["", "TIMEOUT", "ERROR"][n % 3]
            blocking = ("BZPOPMIN", zset, "0") if n % 2 else ("BLPOP", lst, "0")
            c.send(encode(*blocking))
            wait_blocked_clients(r, base + 1)
            args = ("CLIENT", "UNBLOCK", cid) + ((how,) if how else ())
            assert r.execute_command(*args) == 1, (n, how)
            got = c.reply()
            if how == "ERROR":
                assert error_text(got) == "UNBLOCKED client unblocked via CLIENT UNBLOCK", n
            else:
                assert got is None, (n, got)  # BLPOP's and BZPOPMIN's null array
            assert blocked_clients(r) == base, n
            # Not blocked any more: 0, and nothing is answered twice.
            assert r.execute_command("CLIENT", "UNBLOCK", cid) == 0, n
        # Still usable: blocks again and is served by a push.
        first = clients[0]
        first.send(encode("BLPOP", lst, "5"))
        wait_blocked_clients(r, base + 1)
        assert r.lpush(lst, "foo") == 1
        assert first.reply() == [lst.encode(), b"foo"]
    finally:
        for c in clients:
            c.close()


def test_unblock_refuses_bad_arguments_and_answers_0_for_a_client_not_blocked(redis_target, r):
    with Raw(redis_target) as c:
        own = c.call("CLIENT", "ID")
        assert error_text(c.call("CLIENT", "UNBLOCK", "asd")) == (
            "ERR value is not an integer or out of range")
        assert error_text(c.call("CLIENT", "UNBLOCK", own, "XXX")) == (
            "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
        assert c.call("CLIENT", "UNBLOCK", own) == 0  # itself: running, not blocked
        assert c.call("CLIENT", "UNBLOCK", "999999999") == 0  # no such client
        assert r.execute_command("CLIENT", "UNBLOCK", own) == 0  # idle, not blocked


def test_a_push_pipelined_before_the_unblock_serves_the_blocked_client_first(redis_target, r, key):
    """Redis serves a blocked client within the push that makes its key
    ready, so an UNBLOCK the same client sends right after the push finds
    it no longer blocked (0) and the element went to it. The proxy took the
    UNBLOCK (a connection command) before the turn's push ran, answered the
    blocked client with a null and left the element in the list."""
    lst = key("list")
    base = blocked_clients(r)
    with Raw(redis_target) as blocked, Raw(redis_target) as pusher:
        cid = blocked.call("CLIENT", "ID")
        blocked.send(encode("BLPOP", lst, "0"))
        wait_blocked_clients(r, base + 1)
        pusher.send(encode("LPUSH", lst, "x") + encode("CLIENT", "UNBLOCK", cid))
        assert pusher.reply() == 1
        assert pusher.reply() == 0
        assert blocked.reply() == [lst.encode(), b"x"]
    assert r.llen(lst) == 0


def test_every_blocking_command_times_out_with_a_null_array(redis_target, r, key):
    """Redis 7.0 answers a timeout (and CLIENT UNBLOCK's TIMEOUT) with a
    null array for every blocking command, BLMOVE and BRPOPLPUSH too (its
    replyToBlockedClientTimedOut); the proxy sent those two a null bulk."""
    a, b = key("a"), key("b")
    commands = [("BLPOP", a, "0.05"), ("BRPOP", a, "0.05"), ("BLMOVE", a, b, "LEFT", "RIGHT", "0.05"),
                ("BRPOPLPUSH", a, b, "0.05"), ("BZPOPMIN", a, "0.05"), ("BZPOPMAX", a, "0.05"),
                ("BLMPOP", "0.05", "1", a, "LEFT"), ("BZMPOP", "0.05", "1", a, "MIN")]
    with Raw(redis_target) as c:
        for command in commands:
            c.send(encode(*command))
            assert c.line() == b"*-1", command
        base = blocked_clients(r)
        cid = c.call("CLIENT", "ID")
        c.send(encode("BLMOVE", a, b, "LEFT", "RIGHT", "0"))
        wait_blocked_clients(r, base + 1)
        assert r.execute_command("CLIENT", "UNBLOCK", cid) == 1
        assert c.line() == b"*-1"
