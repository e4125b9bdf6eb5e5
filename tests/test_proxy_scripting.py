"""Lua scripting through the proxy, with Redis 7.0 semantics: EVAL, EVALSHA, EVAL_RO,
EVALSHA_RO and SCRIPT LOAD / EXISTS / FLUSH / KILL / HELP. Lua values to replies
(numbers truncated, tables as arrays up to the first nil, {ok=}, {err=},
redis.status_reply / error_reply) and replies to Lua values (null as false, status as
{ok=}, pcall's errors as {err=}); KEYS and ARGV; the exact error texts with their
" script: <sha1>, on @user_script:<line>." suffix; numbers as command arguments in
%.17g; the script cache (EVAL caches too, NOSCRIPT, redis-py's register_script);
math.random, cjson, bit, redis.sha1hex; the data a script writes, reads back, keeps
when a later call fails; EVAL in MULTI/EXEC; a nil reply under RESP3.

Targets as in test_proxy.py: a real redis-server ("redis", the reference these
expectations were validated against, 7.0.15) and the proxy of a `rampart up` cluster
("rampart"); keys apart by the `key` fixture's prefix; error texts compared whole
(Raw). test_conversions_side_by_side sends the same scripts to both at once
(redis_and_rampart). rampart only (proxy_targets("rampart")): scripts are atomic under
concurrency (a counter ledger; transfers between keys of different partitions read
whole by MGET), one that runs past busy-reply-threshold is stopped with an error while
other clients are served, whole-store and pub/sub commands are refused from scripts,
and keys a script did not declare in KEYS are still changed atomically.
"""
import hashlib
import threading
import time

import pytest
import redis

from proxy_helpers import (Raw, encode, error_text, in_thread, joined, key, r, rb,  # noqa: F401
                           replies_of)

rampart_only = pytest.mark.proxy_targets("rampart")

NOT_INTEGER = "ERR value is not an integer or out of range"
NOSCRIPT = "NOSCRIPT No matching script. Please use EVAL."
COMPILE_ERROR = ("ERR Error compiling script (new function): user_script:1: "
                 "unexpected symbol near '+'")  # of "return +"
DEADLINE_S = 20  # every concurrent loop stops by then, done or not


@pytest.fixture
def c(redis_target):
    """A raw RESP connection: replies as bytes / ints / RespError."""
    with Raw(redis_target) as conn:
        yield conn


def sha(body):
    return hashlib.sha1(body.encode()).hexdigest()


def suffix(body, line=1):
    """What Redis appends to an error raised by a script."""
    return f" script: {sha(body)}, on @user_script:{line}."


# ---------------------------------------------------------------------------
# Conversions

def test_lua_values_to_replies(c):
    """Numbers truncate, strings are bulk, true is 1, false and nil are null, tables are
    arrays up to the first nil, {ok=}/{err=} and redis.status_reply/error_reply."""
    cases = [("return 3.99", 3), ("return -3.99", -3), ("return 'x'", b"x"), ("return true", 1),
             ("return false", None), ("return nil", None), ("return {}", []),
             ("return {1,2,{3,'a',{4}},nil,5}", [1, 2, [3, b"a", [4]]]),
             ("return {1,false,3}", [1, None, 3]), ("return {1.5, 2.7, 'x'}", [1, 2, b"x"]),
             ("return {a=1,b=2}", []), ("return {ok='fine'}", b"fine"),
             ("return redis.status_reply('S')", b"S"), ("return {ok='a\\r\\nb'}", b"a  b")]
    for body, want in cases:
        assert c.call("EVAL", body, 0) == want, body
    errors = [("return {err='MY bad'}", "MY bad"), ("return {err='bad'}", "bad"),
              ("return redis.error_reply('boo')", "ERR boo"),
              ("return redis.error_reply('MYERR boo')", "MYERR boo"),
              ("return redis.error_reply('-X y')", "X y")]
    for body, want in errors:
        assert error_text(c.call("EVAL", body, 0)) == want, body


def test_replies_to_lua_values(c, key):
    """Integers are numbers, bulk strings strings, a null bulk false, arrays tables,
    a status {ok=...}, and an error under redis.pcall {err=...} (no suffix)."""
    k, h = key(), key("h")
    c.call("DEL", k, h)
    c.call("HSET", h, "f", "v")
    cases = [("return type(redis.call('get', KEYS[1]))", b"boolean"),
             ("return tostring(redis.call('get', KEYS[1]))", b"false"),
             ("return type(redis.call('incr', KEYS[1]))", b"number"),
             ("return redis.call('incr', KEYS[1]) + 10", 12),
             ("return type(redis.call('get', KEYS[1]))", b"string"),
             ("return type(redis.call('hgetall', KEYS[2]))", b"table"),
             ("return redis.call('hgetall', KEYS[2])[2]", b"v"),
             ("local r = redis.call('set', KEYS[1], 'v'); return {type(r), r.ok}",
              [b"table", b"OK"]),
             ("return redis.call('set', KEYS[1], 'v')", b"OK"),
             ("local r = redis.pcall('incr', KEYS[1]); return {type(r), r.err}",
              [b"table", NOT_INTEGER.encode()])]
    for body, want in cases:
        assert c.call("EVAL", body, 2, k, h) == want, body
    assert error_text(c.call("EVAL", "return redis.pcall('incr', KEYS[1])", 1, k)) == NOT_INTEGER
    c.call("DEL", k, h)


def test_keys_and_argv(c):
    """KEYS and ARGV hold the arguments after numkeys; numkeys is checked."""
    body = "return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}"
    assert c.call("EVAL", body, 2, "k1", "k2", "a1", "a2") == [b"k1", b"k2", b"a1", b"a2", 2, 2]
    assert c.call("EVAL", "return {#KEYS, #ARGV, ARGV[1]}", 0, "a") == [0, 1, b"a"]
    errors = [((-1,), "ERR Number of keys can't be negative"),
              ((3, "a"), "ERR Number of keys can't be greater than number of args"),
              (("x",), NOT_INTEGER), ((), "ERR wrong number of arguments for 'eval' command")]
    for rest, want in errors:
        assert error_text(c.call("EVAL", "return 1", *rest)) == want, rest


def test_numbers_as_arguments(c, key):
    """A Lua number passed to a command is formatted as %.17g."""
    cases = [("1.5", b"1.5"), ("0.1", b"0.10000000000000001"), ("1e20", b"1e+20"),
             ("12345678901234567", b"12345678901234568"), ("3", b"3"), ("3.0", b"3"),
             ("-0.0", b"-0"), ("1/3", b"0.33333333333333331"), ("2^53", b"9007199254740992"),
             ("-1e-7", b"-9.9999999999999995e-08"), ("1e16", b"10000000000000000"),
             ("123456789012345678", b"1.2345678901234568e+17"), ("1/0", b"inf"),
             ("-1/0", b"-inf")]
    for expr, want in cases:
        body = f"redis.call('set', KEYS[1], {expr}); return redis.call('get', KEYS[1])"
        assert c.call("EVAL", body, 1, key()) == want, expr
    body = "return redis.call('incrby', KEYS[1], 2.9)"
    assert error_text(c.call("EVAL", body, 1, key("n"))) == NOT_INTEGER + suffix(body)
    c.call("DEL", key(), key("n"))


def test_conversions_side_by_side(redis_and_rampart):
    """The same scripts answer the same on redis-server and on rampart."""
    k = "scriptpair:k"
    for cl in redis_and_rampart:
        cl.delete(k)
    bodies = ["return {1, 'two', {3, {4, nil, 5}}, false, 6}", "return 2^31 + 0.5",
              "return -2^53", "return {ok='OK'}", "return {err='WRONGTYPE x'}",
              "return redis.call('set', KEYS[1], 7.25)", "return redis.call('get', KEYS[1])",
              "return redis.call('incrbyfloat', KEYS[1], 0.1)",
              "return redis.call('incr', KEYS[1])",
              "return redis.pcall('incr', KEYS[1])", "return redis.call('nosuch')",
              "return redis.call('get', KEYS[1], 'x')", "return cjson.encode({1, 'a', {b=true}})",
              "return tostring(1e300 * 1e10)", "return string.rep('ab', 3)",
              "return redis.call('exists', KEYS[1], KEYS[1])", "return {tonumber('0x10'), 7 % 3}"]
    for body in bodies:
        red, ram = replies_of(redis_and_rampart, "EVAL", body, 1, k)
        assert ram == red, body
    for cl in redis_and_rampart:
        cl.delete(k)


# ---------------------------------------------------------------------------
# Errors

def test_call_errors(c, key):
    """Errors of redis.call and of the script itself, with Redis's suffix."""
    k = key()
    c.call("SET", k, "text")
    cases = [("return redis.call('incr', KEYS[1])", NOT_INTEGER),
             ("error('x')", "ERR user_script:1: x"), ("error({err='BAD x'})", "BAD x"),
             ("return redis.call('nosuch')", "ERR Unknown Redis command called from script"),
             ("return redis.call('get')",
              "ERR Wrong number of args calling Redis command from script"),
             ("return redis.call()",
              "ERR Please specify at least one argument for this redis lib call"),
             ("return redis.call('get', {})",
              "ERR Lua redis lib command arguments must be strings or integers"),
             ("a = 5", "ERR user_script:1: Attempt to modify a readonly table"),
             ("return b",
              "ERR user_script:1: Script attempted to access nonexistent global variable 'b'"),
             ("return redis.call('multi')", "ERR This Redis command is not allowed from script"),
             ("return redis.call('blpop', KEYS[1], 0)",
              "ERR This Redis command is not allowed from script")]
    for body, want in cases:
        assert error_text(c.call("EVAL", body, 1, k)) == want + suffix(body), body
    # The line of the failing call, also inside a function.
    body = "local x = 1\nlocal y = 2\nreturn redis.call('incr', KEYS[1])"
    assert error_text(c.call("EVAL", body, 1, k)) == NOT_INTEGER + suffix(body, 3)
    body = "local x = 1\n\nerror('line3')"
    assert error_text(c.call("EVAL", body, 0)) == "ERR user_script:3: line3" + suffix(body, 3)
    body = "local function f()\n return redis.call('nosuch')\nend\nreturn f()"
    assert error_text(c.call("EVAL", body, 0)) == \
        "ERR Unknown Redis command called from script" + suffix(body, 2)
    assert error_text(c.call("EVAL", "return +", 0)) == COMPILE_ERROR
    c.call("DEL", k)


def test_read_only_scripts(c, key):
    """EVAL_RO and EVALSHA_RO read but refuse writes."""
    k = key()
    c.call("SET", k, "v")
    body = "return redis.call('set', KEYS[1], 'w')"
    want = "ERR Write commands are not allowed from read-only scripts." + suffix(body)
    assert error_text(c.call("EVAL_RO", body, 1, k)) == want
    assert c.call("SCRIPT", "LOAD", body) == sha(body).encode()
    assert error_text(c.call("EVALSHA_RO", sha(body), 1, k)) == want
    assert c.call("EVAL_RO", "return redis.call('get', KEYS[1])", 1, k) == b"v"
    assert c.call("GET", k) == b"v"
    c.call("DEL", k)


def test_writes_before_an_error_stay(c, key):
    """Redis does not roll back: what a script wrote before a failing call stays."""
    k = key()
    body = "redis.call('set', KEYS[1], 'a'); redis.call('incr', KEYS[1])"
    assert error_text(c.call("EVAL", body, 1, k)) == NOT_INTEGER + suffix(body)
    assert c.call("GET", k) == b"a"
    body = "redis.pcall('incr', KEYS[1]); redis.call('append', KEYS[1], 'b'); return 1"
    assert c.call("EVAL", body, 1, k) == 1
    assert c.call("GET", k) == b"ab"
    c.call("DEL", k)


# ---------------------------------------------------------------------------
# The script cache

def test_script_cache(c):
    """SCRIPT LOAD/EXISTS/FLUSH, EVALSHA (any case), NOSCRIPT, EVAL caching too."""
    body = "return 'loaded:' .. ARGV[1]"
    assert c.call("SCRIPT", "LOAD", body) == sha(body).encode()
    assert c.call("EVALSHA", sha(body), 0, "x") == b"loaded:x"
    assert c.call("EVALSHA", sha(body).upper(), 0, "y") == b"loaded:y"
    assert c.call("EVALSHA_RO", sha(body), 0, "z") == b"loaded:z"
    assert c.call("SCRIPT", "EXISTS", sha(body), sha(body).upper(), "ffff") == [1, 1, 0]
    evaled = "return 'evaled'"
    assert c.call("EVAL", evaled, 0) == b"evaled"
    assert c.call("EVALSHA", sha(evaled), 0) == b"evaled"
    assert c.call("SCRIPT", "FLUSH") == b"OK"
    assert c.call("SCRIPT", "EXISTS", sha(body), sha(evaled)) == [0, 0]
    for s in (sha(body), "f" * 40, "abc"):
        assert error_text(c.call("EVALSHA", s, 0)) == NOSCRIPT, s
    assert c.call("SCRIPT", "FLUSH", "ASYNC") == b"OK"
    assert c.call("SCRIPT", "FLUSH", "SYNC") == b"OK"
    errors = [(("SCRIPT", "FLUSH", "BAD"), "ERR SCRIPT FLUSH only support SYNC|ASYNC option"),
              (("SCRIPT", "KILL"), "NOTBUSY No scripts in execution right now."),
              (("SCRIPT", "NOPE"), "ERR unknown subcommand 'NOPE'. Try SCRIPT HELP."),
              (("SCRIPT", "EXISTS"), "ERR wrong number of arguments for 'script|exists' command"),
              (("SCRIPT", "LOAD"), "ERR wrong number of arguments for 'script|load' command"),
              (("SCRIPT",), "ERR wrong number of arguments for 'script' command"),
              (("SCRIPT", "LOAD", "return +"), COMPILE_ERROR)]
    for call, want in errors:
        assert error_text(c.call(*call)) == want, call


def test_script_help(c):
    """SCRIPT HELP answers Redis 7.0's lines."""
    assert c.call("SCRIPT", "HELP") == [
        b"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        b"DEBUG (YES|SYNC|NO)",
        b"    Set the debug mode for subsequent scripts executed.",
        b"EXISTS <sha1> [<sha1> ...]",
        b"    Return information about the existence of the scripts in the script cache.",
        b"FLUSH [ASYNC|SYNC]",
        b"    Flush the Lua scripts cache. Very dangerous on replicas.",
        b"    When called without the optional mode argument, the behavior is determined by the",
        b"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        b"    * ASYNC: Asynchronously flush the scripts cache.",
        b"    * SYNC: Synchronously flush the scripts cache.",
        b"KILL",
        b"    Kill the currently executing Lua script.",
        b"LOAD <script>",
        b"    Load a script into the scripts cache without executing it.",
        b"HELP",
        b"    Prints this help."]


def test_register_script(r, key):
    """redis-py's register_script runs by EVALSHA and loads the script on NOSCRIPT."""
    incr_by = r.register_script("return redis.call('incrby', KEYS[1], ARGV[1])")
    r.script_flush()
    assert incr_by(keys=[key()], args=[5]) == 5
    assert r.script_exists(incr_by.sha) == [True]
    assert incr_by(keys=[key()], args=[2]) == 7
    r.delete(key())


# ---------------------------------------------------------------------------
# Libraries

def test_libraries(c):
    """math.random continues its sequence across calls (a seed makes it repeat), cjson,
    bit, redis.sha1hex and redis.REDIS_VERSION."""
    body = "return {tostring(math.random()), math.random(100), math.random(5, 10)}"
    first, second = c.call("EVAL", body, 0), c.call("EVAL", body, 0)
    for reply in (first, second):
        assert 0 <= float(reply[0]) < 1 and 1 <= reply[1] <= 100 and 5 <= reply[2] <= 10
    assert first != second  # Redis 7 no longer reseeds at every call
    seeded = "math.randomseed(7); return tostring(math.random())"
    assert c.call("EVAL", seeded, 0) == c.call("EVAL", seeded, 0) == b"0.26644419658298"
    cases = [("return cjson.encode({1,2,3})", b"[1,2,3]"),
             ("return cjson.encode({a=1})", b'{"a":1}'),
             ("local t = cjson.decode('{\"a\":[1,2,{\"b\":\"c\"}]}'); return {t.a[1], t.a[3].b}",
              [1, b"c"]),
             ("return {bit.band(12,10), bit.bor(12,10), bit.bxor(12,10), bit.lshift(1,4),"
              " bit.tohex(255)}", [8, 14, 6, 16, b"000000ff"]),
             ("return redis.sha1hex('')", b"da39a3ee5e6b4b0d3255bfef95601890afd80709"),
             ("return redis.sha1hex('abc')", b"a9993e364706816aba3e25717850c26c9cd0d89d"),
             ("return type(redis.REDIS_VERSION)", b"string"),
             ("return string.format('%d-%s', 5, 'a')", b"5-a")]
    for body, want in cases:
        assert c.call("EVAL", body, 0) == want, body


# ---------------------------------------------------------------------------
# Data

def test_data_types(c, key):
    """A script writes strings, hashes, lists, sets and sorted sets and reads them back
    in the same call; the data is there afterwards."""
    ks = [key(t) for t in ("s", "h", "l", "set", "z")]
    c.call("DEL", *ks)
    body = """
redis.call('set', KEYS[1], 'v'); redis.call('append', KEYS[1], 'w')
redis.call('hset', KEYS[2], 'f1', 'a', 'f2', 'b'); redis.call('hincrby', KEYS[2], 'n', 3)
redis.call('rpush', KEYS[3], 'x', 'y'); redis.call('lpush', KEYS[3], 'w')
redis.call('sadd', KEYS[4], 'm2', 'm1', 'm2')
redis.call('zadd', KEYS[5], 2, 'b', 1, 'a', 1.5, 'c')
local members = redis.call('smembers', KEYS[4]); table.sort(members)
return {redis.call('get', KEYS[1]), redis.call('hget', KEYS[2], 'f2'), redis.call('hlen', KEYS[2]),
        redis.call('hget', KEYS[2], 'n'), redis.call('lrange', KEYS[3], 0, -1), members,
        redis.call('sismember', KEYS[4], 'm1'), redis.call('zrange', KEYS[5], 0, -1),
        redis.call('zscore', KEYS[5], 'c'), redis.call('type', KEYS[5]).ok}"""
    assert c.call("EVAL", body, 5, *ks) == [
        b"vw", b"b", 3, b"3", [b"w", b"x", b"y"], [b"m1", b"m2"], 1, [b"a", b"c", b"b"],
        b"1.5", b"zset"]
    assert c.call("GET", ks[0]) == b"vw"
    assert c.call("HGET", ks[1], "n") == b"3"
    assert c.call("LRANGE", ks[2], 0, -1) == [b"w", b"x", b"y"]
    assert c.call("SCARD", ks[3]) == 2
    assert c.call("ZRANGE", ks[4], 0, -1, "WITHSCORES") == [b"a", b"1", b"c", b"1.5", b"b", b"2"]
    assert c.call("EVAL", "return redis.call('del', unpack(KEYS))", 5, *ks) == 5
    assert c.call("EXISTS", *ks) == 0


def test_expire_and_ttl(c, key):
    """EXPIRE and TTL from a script; the TTL is on the key afterwards."""
    k = key()
    body = "redis.call('set', KEYS[1], 'v'); redis.call('expire', KEYS[1], 100);" \
           " return {redis.call('ttl', KEYS[1]), redis.call('ttl', KEYS[2])}"
    assert c.call("EVAL", body, 2, k, key("none")) == [100, -2]
    assert 95 <= c.call("TTL", k) <= 100
    body = "redis.call('persist', KEYS[1]); return redis.call('ttl', KEYS[1])"
    assert c.call("EVAL", body, 1, k) == -1
    c.call("DEL", k)


def test_eval_in_multi(r, key):
    """EVAL queued in MULTI runs at EXEC; its reply is in EXEC's array."""
    p = r.pipeline(transaction=True)
    p.set(key(), 10)
    p.eval("return redis.call('incrby', KEYS[1], ARGV[1])", 1, key(), 5)
    p.get(key())
    assert p.execute() == [True, 15, "15"]
    r.delete(key())


def test_resp3_nil(c):
    """Under HELLO 3 a script's nil (and false) is RESP3's null."""
    assert c.call("HELLO", "3")[b"proto"] == 3
    for body in ("return nil", "return false"):
        c.send(encode("EVAL", body, 0))
        assert c.line() == b"_", body
    assert c.call("EVAL", "return {1, 'a'}", 0) == [1, b"a"]


# ---------------------------------------------------------------------------
# rampart only

def hammer(redis_target, threads, per_thread, op, stop=None):
    """`threads` clients each calling op(client, thread_no, i) per_thread times (until
    DEADLINE_S, or until the event `stop` is set); returns every thread's list of
    results. An error of any fails the test."""
    results = [[] for _ in range(threads)]
    errors = []
    deadline = time.monotonic() + DEADLINE_S

    def run(n):
        cl = redis.Redis(host=redis_target.host, port=redis_target.port, socket_timeout=30,
                         decode_responses=True)
        try:
            for i in range(per_thread):
                if time.monotonic() > deadline or (stop and stop.is_set()):
                    break
                results[n].append(op(cl, n, i))
        except Exception as e:  # noqa: BLE001 (the test fails on it)
            errors.append(e)
        finally:
            cl.close()

    ts = [threading.Thread(target=run, args=(n,), daemon=True) for n in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(DEADLINE_S + 30)
    assert not any(t.is_alive() for t in ts)
    assert not errors, errors[:3]
    return results


COUNTER = ("local v = tonumber(redis.call('get', KEYS[1]) or '0');"
           " redis.call('set', KEYS[1], v + 1); return v + 1")


@rampart_only
def test_atomic_counter(redis_target, r, key):
    """8 clients x 200 read-then-write scripts on one key: every reply distinct and the
    key ends at the number of replies."""
    r.delete(key())
    results = hammer(redis_target, 8, 200, lambda cl, n, i: cl.eval(COUNTER, 1, key()))
    replies = [v for rs in results for v in rs]
    assert len(replies) == 1600, "not done before the deadline"
    assert sorted(replies) == list(range(1, 1601))
    assert int(r.get(key())) == 1600
    r.delete(key())


TRANSFER = """
local from, to = KEYS[1], KEYS[2]
if ARGV[1] == '1' then from, to = KEYS[2], KEYS[1] end
local a = tonumber(redis.call('get', from))
local b = tonumber(redis.call('get', to))
redis.call('set', from, a - 1)
redis.call('set', to, b + 1)
return a - 1"""
READ_BOTH = "return redis.call('mget', KEYS[1], KEYS[2])"


@rampart_only
def test_atomic_transfers(redis_target, r, key):
    """Writers move 1 between two keys (likely on different partitions) while readers
    MGET both and read both in a script: the sum never changes, and the final values
    are the initial ones plus the acknowledged transfers."""
    a, b = key("acct:a"), key("acct:b")
    r.mset({a: 1000, b: 1000})
    done = threading.Event()
    sums = []

    def read(cl, n, i):
        pair = cl.mget(a, b) if i % 2 else cl.eval_ro(READ_BOTH, 2, a, b)
        sums.append(int(pair[0]) + int(pair[1]))

    readers, out = in_thread(lambda: hammer(redis_target, 2, 1_000_000, read, stop=done))
    try:
        results = hammer(redis_target, 4, 150,
                         lambda cl, n, i: (i % 3 == 0, cl.eval(TRANSFER, 2, a, b, int(i % 3 == 0))))
    finally:
        done.set()
        joined(readers, out, timeout=DEADLINE_S + 40)
    moves = [back for rs in results for back, _ in rs]
    assert len(moves) == 600, "not done before the deadline"
    back = sum(moves)
    forth = len(moves) - back
    assert [int(v) for v in r.mget(a, b)] == [1000 - forth + back, 1000 + forth - back]
    assert sums and set(sums) == {2000}, sorted(set(sums))[:5]
    r.delete(a, b)


@rampart_only
def test_script_time_limit(redis_target, r, key):
    """A script running past busy-reply-threshold (lua-time-limit) is stopped with an
    error; another client's commands sent meanwhile and afterwards are answered."""
    assert r.config_set("lua-time-limit", 500)
    assert r.config_get("busy-reply-threshold") == {"busy-reply-threshold": "500"}
    try:
        with Raw(redis_target, timeout=30) as looping:
            looping.send(encode("EVAL", "while true do end", 0))
            time.sleep(0.1)
            assert r.set(key(), "served") and r.get(key()) == "served"
            start = time.monotonic()
            reply = looping.reply()
            assert error_text(reply).startswith("ERR rampart: the script ran longer than"), reply
            assert time.monotonic() - start < 15
            assert looping.call("EVAL", "return 1", 0) == 1
        assert r.ping() and r.eval("return redis.call('get', KEYS[1])", 1, key()) == "served"
    finally:
        r.config_set("busy-reply-threshold", 5000)
        r.delete(key())


@rampart_only
def test_whole_store_commands_refused(c):
    """KEYS, SCAN, DBSIZE and PUBLISH from a script are refused with a rampart error."""
    for call in ("'keys', '*'", "'scan', 0", "'dbsize'", "'publish', 'ch', 'm'"):
        reply = c.call("EVAL", f"return redis.call({call})", 0)
        assert error_text(reply).startswith("ERR rampart:"), (call, reply)


UNDECLARED_COUNTER = ("local v = tonumber(redis.call('get', ARGV[1]) or '0');"
                      " redis.call('set', ARGV[1], v + 1); return v + 1")


@rampart_only
def test_undeclared_keys(redis_target, r):
    """A script reading and then writing a key it did not declare in KEYS (its name in
    ARGV) still runs atomically: 4 clients x 300 runs answer 1..1200 and leave 1200, and
    a script that keeps finding new undeclared keys is answered with an error."""
    k = "undeclared:counter"
    r.delete(k)
    results = hammer(redis_target, 4, 300,
                     lambda cl, n, i: cl.eval(UNDECLARED_COUNTER, 0, k))
    replies = [v for rs in results for v in rs]
    assert len(replies) == 1200, "not done before the deadline"
    assert sorted(replies) == list(range(1, 1201))
    assert int(r.get(k)) == 1200
    r.delete(k)
    # Each run names a key the one before did not: it gives up after a bound.
    chase = "return redis.call('incr', 'undeclared:' .. redis.call('time')[2] .. math.random())"
    with pytest.raises(redis.ResponseError, match="rampart: the script kept calling commands on keys"):
        r.eval(chase, 0)


HOSTILE = [
    # Each of these crashed or hung the proxy (or could) before its guard.
    "local a = {}; setmetatable(a, {__index = function() foo() end}) return a",
    "return {unpack({1,2,3}, -2, 2147483647)}",
    "return bit.tohex(65535, -2147483648)",
    "return bit.tohex(65535, '-2147483648')",
    "local t = {}; local c = t; for i = 1, 300 do c[1] = {}; c = c[1] end; return t",
    "local t = {}; for i = 1, 300 do t[i] = 'w' end; redis.log(redis.LOG_DEBUG, unpack(t)); return 1",
    "return loadstring(string.dump(function() return 1 end))()",
    "local u = newproxy(true) return 1",
    "return cjson.new().encode({1})",
    "cjson.decode_max_depth(100000) return cjson.decode(string.rep('[', 50000))",
]


@rampart_only
def test_hostile_scripts_leave_the_proxy_serving(redis_target, r, rb):
    """Scripts that once crashed or hung the proxy (stock Lua 5.1 and its libraries, where
    Redis patches its copies) are answered, with an error or a value, and the proxy serves
    on; a script body in Lua bytecode is refused."""
    for body in HOSTILE:
        try:
            r.eval(body, 0)
        except redis.ResponseError:
            pass
        assert r.ping(), body
    bytecode = rb.execute_command("EVAL", "return string.dump(function() return 42 end)", 0)
    with pytest.raises(redis.ResponseError, match="binary chunks are not accepted"):
        rb.execute_command("EVAL", bytecode, 0)
    assert r.eval("return 7", 0) == 7


@rampart_only
def test_undeclared_key_inside_multi(r, key):
    """Inside MULTI a script's command on a key not in KEYS is an error at that call (the
    block is not taken again): EXEC's array holds it, and what the script wrote before
    stands, as after any script error."""
    k = key()
    p = r.pipeline(transaction=True)
    p.eval("redis.call('set', KEYS[1], 'x') return redis.call('get', 'elsewhere:key')", 1, k)
    p.get(k)
    replies = p.execute(raise_on_error=False)
    assert isinstance(replies[0], redis.ResponseError)
    assert "not in its KEYS" in str(replies[0])
    assert replies[1] == "x"
    r.delete(k)
