"""SLOWLOG beside redis-server 7.0 (redis_and_rampart): with
slowlog-log-slower-than 0 every command is logged, so the same commands give
the same entries — their arguments as Redis keeps them (at most 32, each at
most 128 bytes, secrets redacted; EXEC's commands, not EXEC), newest first,
at most slowlog-max-len — and GET's count, LEN, RESET, HELP and the errors
answer alike. Times, ids and addresses differ by nature and are not compared.
"""
import pytest
import redis

from proxy_helpers import replies_of


@pytest.fixture
def pair(redis_and_rampart):
    """Clients of the two that send no CLIENT SETINFO when they connect:
    Redis 7.0 refuses it (not logged), rampart runs it (logged)."""
    clients = []
    for c in redis_and_rampart:
        kwargs = c.connection_pool.connection_kwargs
        clients.append(redis.Redis(host=kwargs["host"], port=kwargs["port"], socket_timeout=60, lib_name=None,
                                   lib_version=None))
    yield clients
    for c in clients:
        c.config_set("slowlog-log-slower-than", "10000")
        c.config_set("slowlog-max-len", "128")
        c.slowlog_reset()
        c.close()


def entries(client, count=-1):
    """The logged commands, newest first, as argument lists."""
    got = client.execute_command("SLOWLOG", "GET", count)
    for e in got:
        assert len(e) == 6 and isinstance(e[0], int) and isinstance(e[1], int) and isinstance(e[2], int)
    return [[a.decode() for a in e[3]] for e in got]


def both(clients, *args):
    got = replies_of(clients, *args)
    assert got[0] == got[1], f"{args}: redis {got[0]!r} != rampart {got[1]!r}"
    return got[0]


def test_entries_equal_redis(pair):
    for c in pair:
        c.config_set("slowlog-max-len", "128")
        c.config_set("slowlog-log-slower-than", "0")
        c.slowlog_reset()
    both(pair, "SET", "sl:k", "v")
    both(pair, "SADD", "sl:s", *[str(n) for n in range(3, 34)])  # 33 arguments
    both(pair, "SADD", "sl:s", "foo", "A" * 129)
    for c in pair:  # no password set: an error, logged redacted
        with pytest.raises(redis.exceptions.AuthenticationError):
            c.execute_command("AUTH", "secret")
    both(pair, "GET", "sl:k")
    for c in pair:
        with c.pipeline(transaction=True) as p:
            p.incr("sl:n").lpush("sl:l", "x")
            p.execute()
    for args in [("EXEC",), ("CONFIG", "SET", "masterauth", "secret")]:  # EXEC never logged; a secret redacted
        replies_of(pair, *args)
    logged = [entries(c) for c in pair]
    assert logged[0] == logged[1]
    assert ["SADD", "sl:s"] + [str(n) for n in range(3, 32)] + ["... (2 more arguments)"] in logged[1]
    assert ["SADD", "sl:s", "foo", "A" * 128 + "... (1 more bytes)"] in logged[1]
    assert ["AUTH", "(redacted)"] in logged[1]
    assert ["CONFIG", "SET", "masterauth", "(redacted)"] in logged[1]
    assert ["INCRBY", "sl:n", "1"] in logged[1] and not any(e[0].lower() == "exec" for e in logged[1])


def test_get_len_reset_and_max_len(pair):
    for c in pair:
        c.config_set("slowlog-log-slower-than", "0")
        c.config_set("slowlog-max-len", "3")
        c.slowlog_reset()
        c.set("sl:a", "1")
        c.sadd("sl:b", "a")
        c.incr("sl:c")
        c.lpush("sl:d", "a")
    assert both(pair, "SLOWLOG", "LEN") == 3
    for c in pair:  # a lower max-len cuts the log at once
        c.config_set("slowlog-max-len", "10")
        for _ in range(10):
            c.ping()
        c.config_set("slowlog-max-len", "3")
    assert both(pair, "SLOWLOG", "LEN") == 3
    assert [len(entries(c, 0)) for c in pair] == [0, 0]
    assert [len(entries(c, 1)) for c in pair] == [1, 1]
    assert [len(entries(c, -1)) for c in pair] == [3, 3]
    assert entries(pair[0]) == entries(pair[1])
    for args in [("SLOWLOG", "GET", "-2"), ("SLOWLOG", "GET", "x"), ("SLOWLOG", "GET", "1", "2"),
                 ("SLOWLOG", "NOPE"), ("SLOWLOG", "LEN", "x"), ("SLOWLOG", "RESET", "x"), ("SLOWLOG", "HELP"),
                 ("SLOWLOG", "HELP", "x"),
                 ("CONFIG", "SET", "slowlog-log-slower-than", "-2"), ("CONFIG", "SET", "slowlog-max-len", "-1"),
                 ("CONFIG", "SET", "slowlog-max-len", "x")]:
        both(pair, *args)
    assert pair[0].config_get("slowlog-*") == pair[1].config_get("slowlog-*")  # (in any order)
    for c in pair:
        c.config_set("slowlog-log-slower-than", "-1")  # off
        c.slowlog_reset()
        c.set("sl:a", "2")
    assert both(pair, "SLOWLOG", "LEN") == 0


def test_a_slow_command_is_logged_with_its_client(redis_and_rampart):
    """Past the default threshold (10 ms) only what took that long: a read of
    a large hash through rampart takes long enough; its entry names the
    client."""
    proxy = redis_and_rampart[1]
    proxy.slowlog_reset()
    proxy.client_setname("slowpoke")
    fields = {f"f{n}": "x" * 100 for n in range(20000)}
    for i in range(0, 20000, 2000):
        proxy.hset("sl:big", mapping=dict(list(fields.items())[i:i + 2000]))
    proxy.config_set("slowlog-log-slower-than", "1000")  # 1 ms
    assert len(proxy.hgetall("sl:big")) == 20000
    got = proxy.execute_command("SLOWLOG", "GET")
    slow = [e for e in got if e[3][0].lower() == b"hgetall"]
    assert slow and slow[0][2] >= 1000 and slow[0][5] == b"slowpoke", got
    proxy.config_set("slowlog-log-slower-than", "10000")
    proxy.delete("sl:big")
    proxy.client_setname("")
