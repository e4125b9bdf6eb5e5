"""INFO beside redis-server 7.0 (redis_and_rampart): which sections a request
selects and in what order (Redis's info-command unit, and more), the CPU
section, and the counts of commandstats and errorstats after the same
commands — calls, rejected and failed calls per command (not their times:
rampart gives each command an equal share of its turn), error replies per
code — and CONFIG RESETSTAT clearing them.
"""
import threading
import time

import pytest
import redis

from proxy_helpers import replies_of


def raw_info(client, *args):
    """INFO's text as sent (redis-py's own parsing off)."""
    kwargs = client.connection_pool.connection_kwargs
    with redis.Redis(host=kwargs["host"], port=kwargs["port"]) as raw:
        raw.set_response_callback("INFO", lambda reply, **_: reply)
        return raw.execute_command("INFO", *args).decode()


def sections(client, *args):
    """The section titles of INFO's text, in order."""
    return [line[2:] for line in raw_info(client, *args).splitlines() if line.startswith("# ")]


def test_sections_are_selected_and_ordered_as_redis(redis_and_rampart):
    """Default, all, everything, one or several sections in any case, unknown
    ones: rampart's sections are those redis-server writes (minus the ones it
    has no text for) in the same order."""
    rampart_has = {"Server", "Clients", "Memory", "Stats", "Replication", "CPU", "Commandstats", "Errorstats",
                   "Keyspace"}
    redis_server, proxy = redis_and_rampart
    redis_server.set("info:k", "v")
    proxy.set("info:k", "v")
    for args in [(), ("default",), ("all",), ("everything",), ("cpu",), ("CPU", "sentinel"), ("commandSTATS",),
                 ("cpu", "all"), ("cpu", "default"), ("keyspace", "server"), ("errorstats", "stats"),
                 ("sentinel",), ("nosuchsection",)]:
        want = [s for s in sections(redis_server, *args) if s in rampart_has]
        assert sections(proxy, *args) == want, args
    cpu = raw_info(proxy, "cpu")
    for field in ("used_cpu_sys:", "used_cpu_user:", "used_cpu_sys_children:", "used_cpu_user_main_thread:"):
        assert field in cpu
    assert "master_repl_offset:" in raw_info(proxy, "default")
    assert "rejected_calls" not in raw_info(proxy) and "rejected_calls" in raw_info(proxy, "all")


def counts(client):
    """{command: (calls, rejected_calls, failed_calls)}, {error code: count}
    and total_error_replies."""
    info = client.info("all")
    commands = {}
    for name, v in info.items():
        if name.startswith("cmdstat_"):
            commands[name[len("cmdstat_"):]] = (v["calls"], v["rejected_calls"], v["failed_calls"])
    errors = {name[len("errorstat_"):]: v["count"] for name, v in info.items() if name.startswith("errorstat_")}
    return commands, errors, info["total_error_replies"]


SEQUENCE = [
    ("SET", "cs:s", "v"), ("GET", "cs:s"), ("GET", "cs:s"), ("LPUSH", "cs:s", "x"), ("INCR", "cs:s"),
    ("GET",), ("SET", "cs:s"), ("NOSUCHCOMMAND", "x"), ("HSET", "cs:h", "f", "v"), ("HGET", "cs:h", "f"),
    ("LRANGE", "cs:s", "0", "-1"), ("ZADD", "cs:z", "nan", "a"), ("EVAL", "return redis.call('get', KEYS[1])", "1",
                                                                   "cs:s"),
    ("EVALSHA", "0" * 40, "0"), ("EXPIRE", "cs:s", "x"),
]


def test_commandstats_and_errorstats_count_as_redis(redis_and_rampart):
    for c in redis_and_rampart:
        c.config_resetstat()
    for args in SEQUENCE:
        replies_of(redis_and_rampart, *args)
    # MULTI: a queued command refused, the block aborted; then one that runs
    # with an error inside.
    for c in redis_and_rampart:
        with c.pipeline(transaction=True) as p:
            p.set("cs:m", "1").execute_command("GET")
            try:
                p.execute()
            except redis.ResponseError:
                pass
        with c.pipeline(transaction=True) as p:
            p.set("cs:m", "1").lpush("cs:m", "x").get("cs:m")
            p.execute(raise_on_error=False)
    got = [counts(c) for c in redis_and_rampart]
    names = {args[0].lower() for args in SEQUENCE if args[0] != "NOSUCHCOMMAND"} | {"multi", "exec"}
    want_commands = {n: v for n, v in got[0][0].items() if n in names}
    have_commands = {n: v for n, v in got[1][0].items() if n in names}
    assert have_commands == want_commands
    assert got[1][1] == got[0][1]  # errors by code
    assert got[1][2] == got[0][2]  # total_error_replies
    assert got[1][1]["WRONGTYPE"] >= 3 and got[1][1]["NOSCRIPT"] == 1
    # CONFIG RESETSTAT clears both.
    proxy = redis_and_rampart[1]
    proxy.config_resetstat()
    commands, errors, total = counts(proxy)
    assert errors == {} and total == 0
    assert set(commands) <= {"config|resetstat", "info"}, commands


# Subcommands of the containers the proxy serves: calls, a known
# subcommand's arity error (rejected, on the subcommand's own line), the
# container's arity error (rejected, on the container's), an unknown
# subcommand (an error, counted on no line), a refused call.
SUBCOMMANDS = [
    ("CONFIG", "GET", "maxmemory"), ("CONFIG", "GET"), ("CONFIG",), ("CONFIG", "NOSUCH"), ("CLIENT", "ID"),
    ("CLIENT", "GETNAME"), ("CLIENT", "SETNAME"), ("CLIENT", "NOSUCH", "x"), ("OBJECT", "ENCODING", "sc:s"),
    ("OBJECT", "ENCODING"), ("OBJECT", "NOSUCH", "sc:s"), ("OBJECT",), ("SLOWLOG", "LEN"), ("SLOWLOG", "GET", "x"),
    ("SLOWLOG", "GET", "1", "2"), ("MEMORY", "USAGE"), ("MEMORY", "NOSUCH"), ("SCRIPT", "EXISTS"),
    ("SCRIPT", "EXISTS", "0" * 40), ("COMMAND", "COUNT"), ("COMMAND", "NOSUCH"), ("COMMAND",), ("PUBSUB", "NUMPAT"),
    ("PUBSUB", "NUMSUB", "ch"), ("PUBSUB", "NOSUCH"), ("FUNCTION", "NOSUCH"), ("FUNCTION", "DELETE"),
    ("CLIENT", "UNBLOCK", "1", "TIMEOUT", "x"), ("PUBSUB", "NUMPAT", "x"), ("CONFIG", "HELP"), ("CLIENT", "HELP"),
    ("EVAL", "return redis.call('object', 'nosuch', KEYS[1])", "1", "sc:s"),
]


def test_subcommands_are_checked_and_counted_as_redis(redis_and_rampart):
    """Redis 7.0 checks a subcommand's arity before it runs ("ERR wrong number
    of arguments for 'config|get' command") and INFO commandstats counts it
    on its own line (cmdstat_config|get); an unknown subcommand answers
    "ERR unknown subcommand 'x'. Try CONFIG HELP." and counts nowhere. Before
    this, rampart counted every subcommand on the container's line, an
    unknown one too, with Redis 6's error texts."""
    for c in redis_and_rampart:
        c.set("sc:s", "v")
        c.set_response_callback("COMMAND", lambda reply, **_: reply)  # COMMAND COUNT's integer too
        c.config_resetstat()
    for args in SUBCOMMANDS:
        want, have = replies_of(redis_and_rampart, *args)
        if isinstance(want, tuple) or isinstance(have, tuple):  # errors alike (values differ: ids, tables)
            assert have == want, args
    got = [counts(c) for c in redis_and_rampart]
    containers = {args[0].lower() for args in SUBCOMMANDS}
    want = {n: v for n, v in got[0][0].items() if n.split("|")[0] in containers}
    have = {n: v for n, v in got[1][0].items() if n.split("|")[0] in containers}
    assert have == want
    assert want["config|get"] == (1, 1, 0) and want["config"] == (0, 1, 0) and "client|nosuch" not in want
    assert got[1][1] == got[0][1] and got[1][2] == got[0][2]  # errors by code, total_error_replies
    # Inside MULTI an unknown subcommand is refused when queued: EXEC aborts.
    aborted = []
    for c in redis_and_rampart:
        with c.pipeline(transaction=True) as p:
            p.set("sc:m", "1").execute_command("CONFIG", "NOSUCH")
            with pytest.raises(redis.ResponseError) as e:
                p.execute()
            aborted.append(str(e.value))
    assert aborted[1] == aborted[0] and "unknown subcommand 'NOSUCH'" in aborted[0]
    assert [c.get("sc:m") for c in redis_and_rampart] == [None, None]  # the block did not run


def blpop_in_thread(client, key, timeout):
    """Starts BLPOP key timeout on a connection of its own; returns (thread, its id, results)."""
    kwargs = client.connection_pool.connection_kwargs
    # No CLIENT SETINFO on connect: Redis 7.0 answers it with an error, which errorstats would count.
    blocked = redis.Redis(host=kwargs["host"], port=kwargs["port"], socket_timeout=30, lib_name=None, lib_version=None)
    cid = blocked.client_id()
    results = []

    def run():
        try:
            results.append(blocked.blpop([key], timeout=timeout))
        except redis.ResponseError as e:
            results.append(str(e))
        blocked.close()
    t = threading.Thread(target=run)
    t.start()
    return t, cid, results


def wait_blocked(client, n):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and client.info("clients")["blocked_clients"] != n:
        time.sleep(0.01)
    assert client.info("clients")["blocked_clients"] == n


def test_blocking_commands_blocks_and_scripts_count_as_redis(redis_and_rampart):
    """A blocking command counts one call whether it times out, is served
    later or is unblocked (then failed, with UNBLOCKED); an EXEC of an empty
    block after WATCH, a block of PINGs, and a script's refused call."""
    for c in redis_and_rampart:
        c.config_resetstat()
        c.delete("cb:l")
        t, _, results = blpop_in_thread(c, "cb:l", 0.1)  # times out
        t.join(10)
        assert results == [None]
        t, _, results = blpop_in_thread(c, "cb:l", 10)  # served by a push
        wait_blocked(c, 1)
        c.lpush("cb:l", "x")
        t.join(10)
        assert results == [(b"cb:l", b"x")]
        t, cid, results = blpop_in_thread(c, "cb:l", 10)  # CLIENT UNBLOCK ... ERROR
        wait_blocked(c, 1)
        assert c.client_unblock(cid, error=True)
        t.join(10)
        assert results and "UNBLOCKED" in results[0]
        with c.pipeline(transaction=True) as p:  # WATCH, then an empty block
            p.watch("cb:w")
            p.multi()
            p.execute()
        with c.pipeline(transaction=True) as p:
            p.ping().echo("x")
            p.execute()
        replies_of([c], "EVAL", "return redis.pcall('get')", "0")
        replies_of([c], "EVAL", "return redis.call('get')", "0")
        with c.pipeline(transaction=True) as p:  # an error without a space, and a reply after it
            p.eval("return redis.error_reply('MYERR')", 0).echo("hello world")
            p.execute(raise_on_error=False)
    got = [counts(c) for c in redis_and_rampart]
    names = {"blpop", "lpush", "exec", "multi", "watch", "ping", "echo", "get", "eval"}
    assert {n: v for n, v in got[1][0].items() if n in names} == {n: v for n, v in got[0][0].items() if n in names}
    assert got[1][0]["blpop"] == (3, 0, 1)
    assert got[1][1] == got[0][1] and got[1][2] == got[0][2]
    assert got[1][1].get("UNBLOCKED") == 1
