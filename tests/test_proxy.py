"""The Redis-protocol proxy (issue 5) through the clients users already have:
redis-py and raw RESP on a socket — server and connection commands, strings,
hashes, sorted sets (YCSB's redis binding). MULTI, pipelines, protocol
errors, redis-cli/redis-benchmark and concurrency are in
test_proxy_protocol.py; shared helpers in proxy_helpers.py.

Every test runs against `redis_target`: a real redis-server ("redis", the
reference these expectations were validated against) and the proxy of a
`rampart up` cluster of 4 nodes x 1 partition over tcp ("rampart"); the tests
marked proxy_targets(*TARGETS_UCX) also run over ucx ("rampart-ucx"). So what
they assert is Redis semantics both must show.

One target of each kind serves a whole module: tests keep apart by key
prefix (the `key` fixture), and those that need an empty database flush it.
"""
import random
import subprocess
import time

import pytest
import redis

from conftest import REDIS_PASSWORD, Cluster, stop_cluster
from proxy_helpers import (Raw, RespError, client, encode, java_double, java_hash,  # noqa: F401
                           key, pairs, r, rb, ucx_too)

def test_java_double_matches_java():
    assert java_double(-594971599) == "-5.94971599E8"
    assert java_double(10 ** 10) == "1.0E10"
    assert java_double(9999999) == "9999999.0"
    assert java_double(-10000000) == "-1.0E7"
    assert java_hash("user1") == 111578566  # as Java 17 computes them
    assert java_double(java_hash("user1")) == "1.11578566E8"
    assert java_double(java_hash("user199")) == "-1.4717865E8"


# ---------------------------------------------------------------------------
# Connection

@ucx_too
def test_ping(r, redis_target):
    assert r.ping() is True
    with Raw(redis_target) as c:
        assert c.call("PING") == b"PONG"
        assert c.call("PING", "hello") == b"hello"
        assert c.call("ping") == b"PONG"


@ucx_too
def test_echo(rb):
    assert rb.echo("hi") == b"hi"
    assert rb.echo(b"a\x00b\r\nc") == b"a\x00b\r\nc"
    assert rb.echo(b"") == b""


def test_select(redis_target):
    with Raw(redis_target) as c:
        assert c.call("SELECT", "0") == b"OK"
        assert isinstance(c.call("SELECT", "1"), RespError)
        assert c.call("PING") == b"PONG"  # the error leaves the connection usable
    r = client(redis_target, db=0)  # redis-py sends no SELECT for db 0 but must work
    assert r.ping()


def test_quit(redis_target):
    with Raw(redis_target) as c:
        c.send(encode("QUIT"))
        data, closed = c.read_until_closed()
    assert data == b"+OK\r\n"
    assert closed


def test_auth(auth_target, key):
    k = key()
    with Raw(auth_target) as c:
        for cmd in (("GET", k), ("SET", k, "v"), ("PING",)):
            reply = c.call(*cmd)
            assert isinstance(reply, RespError) and str(reply).startswith("NOAUTH"), (cmd, reply)
        wrong = c.call("AUTH", "not-the-password")
        assert isinstance(wrong, RespError), wrong
        assert str(wrong).startswith(("WRONGPASS", "ERR invalid password")), wrong
        assert str(c.call("GET", k)).startswith("NOAUTH")
        assert c.call("AUTH", REDIS_PASSWORD) == b"OK"
        assert c.call("SET", k, "v") == b"OK"
        assert c.call("GET", k) == b"v"

    assert client(auth_target).get(k) == "v"  # redis-py sends AUTH on connect
    with pytest.raises(redis.AuthenticationError):
        client(auth_target, password="not-the-password").get(k)
    with pytest.raises(redis.AuthenticationError):  # NOAUTH
        client(auth_target, password=None).get(k)

    cli = subprocess.run(["redis-cli", "-h", auth_target.host, "-p", str(auth_target.port),
                          "-a", REDIS_PASSWORD, "--no-auth-warning", "GET", k],
                         capture_output=True, text=True, timeout=30)
    assert cli.returncode == 0 and cli.stdout == "v\n", cli


@ucx_too
def test_hello(redis_target, key):
    with Raw(redis_target) as c:
        hello2 = pairs(c.call("HELLO", "2"))
        assert hello2[b"proto"] == 2
        assert b"server" in hello2 and b"version" in hello2
        c.send(encode("HELLO", "3"))
        assert c.file.peek(1)[:1] == b"%", "HELLO 3 replies with a RESP3 map"
        hello3 = c.reply()
        assert isinstance(hello3, dict) and hello3[b"proto"] == 3, hello3
        assert c.call("HSET", key("h"), "f", "v") == 1
        c.send(encode("HGETALL", key("h")))
        assert c.file.peek(1)[:1] == b"%", "HGETALL over RESP3 is a map"
        assert c.reply() == {b"f": b"v"}
        unsupported = c.call("HELLO", "4")
        assert isinstance(unsupported, RespError) and str(unsupported).startswith("NOPROTO")

    r3 = client(redis_target, protocol=3)
    assert r3.ping()
    assert r3.execute_command("HELLO", "3")["proto"] == 3
    assert r3.set(key("s"), "v") and r3.get(key("s")) == "v"
    assert r3.hset(key("h3"), mapping={"a": "1", "b": "2"}) == 2
    assert r3.hgetall(key("h3")) == {"a": "1", "b": "2"}
    assert r3.get(key("missing")) is None


def test_client_commands(redis_target):
    r = client(redis_target, single_connection_client=True)
    assert r.client_getname() is None
    assert r.client_setname("pytest-conn") is True
    assert r.client_getname() == "pytest-conn"
    cid = r.client_id()
    assert isinstance(cid, int) and cid > 0
    assert r.client_id() == cid  # the same connection
    # redis-py 5 sends CLIENT SETINFO on connect and ignores an error reply:
    # Redis 7.2+ answers OK, the 7.0 of Debian "unknown subcommand 'SETINFO'".
    for attr, value in (("LIB-NAME", "rampart-pytest"), ("LIB-VER", "1.2.3")):
        try:
            assert r.execute_command("CLIENT", "SETINFO", attr, value) in (True, "OK")
        except redis.ResponseError as e:
            assert "SETINFO" in str(e) and redis_target.name == "redis", e
    assert r.client_getname() == "pytest-conn"  # the connection goes on
    other = client(redis_target, single_connection_client=True)
    assert other.client_id() != cid
    assert other.client_getname() is None  # names are per connection
    other.close()
    r.close()


def test_command(r, redis_target):
    with Raw(redis_target) as c:
        table = c.call("COMMAND")
    assert isinstance(table, list) and table
    assert all(isinstance(e, list) and len(e) >= 6 for e in table)
    commands = r.command()  # redis-py's parser: name, arity, flags, key positions
    arity = {"get": 2, "set": -3, "mget": -2, "mset": -3, "del": -2, "exists": -2,
             "incr": 2, "incrby": 3, "decr": 2, "getset": 3, "hset": -4, "hmset": -4,
             "hget": 3, "hmget": -3, "hgetall": 2, "hdel": -3, "zadd": -4, "zrem": -3,
             "zscore": 3, "zcard": 2, "zrangebyscore": -4}
    for name, n in arity.items():
        assert name in commands, name
        assert commands[name]["arity"] == n, (name, commands[name])


def test_command_docs(redis_target):
    with Raw(redis_target) as c:
        docs = c.call("COMMAND", "DOCS", "GET")
        assert isinstance(docs, list) and len(docs) == 2, docs
        assert docs[0].lower() == b"get"
        assert b"summary" in pairs(docs[1])
        every = c.call("COMMAND", "DOCS")
        assert isinstance(every, list) and every and len(every) % 2 == 0


def test_config_get(r, redis_target):
    with Raw(redis_target) as c:
        assert c.call("CONFIG", "GET", "save") == [b"save", b""]  # pairs
        assert c.call("CONFIG", "GET", "appendonly") == [b"appendonly", b"no"]
    assert r.config_get("save") == {"save": ""}
    assert r.config_get("appendonly") == {"appendonly": "no"}
    assert r.config_get("no-such-parameter") == {}


def test_info(r, redis_target, key):
    info = r.info()
    assert "redis_version" in info
    r.set(key(), "v")
    with Raw(redis_target) as c:
        text = c.call("INFO").decode()
        assert "# Server" in text and "redis_version:" in text
        keyspace = c.call("INFO", "keyspace").decode()
        assert "db0:keys=" in keyspace, keyspace
        server = c.call("INFO", "server").decode()
        assert "# Server" in server and "# Keyspace" not in server


def test_info_counts_the_read_paths(tmp_path):
    """INFO stats counts the keys read one-sidedly (client.get = "auto": GET* for partitions on
    this host, here over UCX shared memory) and those that fell back to an rpc GET; every key a
    GET reads is one of the two, and once the worker has the addresses (its first GETs bring
    them) the reads are one-sided."""
    c = Cluster("ucx", tmp_path, proxy=True)
    try:
        c.start()
        r = redis.Redis(host=c.proxy["host"], port=c.proxy["port"], socket_timeout=10,
                        decode_responses=True)

        def counters():
            info = r.info("stats")
            return info["rampart_one_sided_reads"], info["rampart_one_sided_fallbacks"]
        keys = [f"k{i}" for i in range(20)]
        for k in keys:
            r.set(k, "v")
        reads0, fallbacks0 = counters()
        for _ in range(3):
            for k in keys:
                assert r.get(k) == "v"
        reads, fallbacks = counters()
        assert (reads - reads0) + (fallbacks - fallbacks0) == 60, (reads0, fallbacks0, reads,
                                                                   fallbacks)
        assert reads - reads0 >= 40, (reads0, reads)
        assert "rampart_ramp_repair_rounds" in r.info("stats")
    finally:
        stop_cluster(c)


def test_dbsize_on_a_fresh_target(fresh_target):
    r = client(fresh_target)
    assert r.dbsize() == 0
    for i in range(25):
        r.set(f"s{i}", i)
    for i in range(5):
        r.set(f"s{i}", "again")  # overwrites are no new keys
    r.mset({"s0": "x", "m1": "y", "m2": "z"})  # one old, two new
    r.hset("h", mapping={"f1": "1", "f2": "2"})
    r.zadd("z", {"a": 1, "b": 2})
    assert r.dbsize() == 29
    assert r.delete("s3", "h") == 2
    assert r.dbsize() == 27
    r.close()


def test_flushdb_and_flushall(r, key):
    for flush in (r.flushdb, r.flushall):
        r.mset({key("a"): "1", key("b"): "2"})
        r.hset(key("h"), "f", "v")
        assert r.dbsize() >= 3
        assert flush() is True
        assert r.dbsize() == 0
        assert r.get(key("a")) is None
        assert r.hgetall(key("h")) == {}


# ---------------------------------------------------------------------------
# Strings

@ucx_too
def test_get_set(r, key):
    assert r.get(key()) is None
    assert r.set(key(), "v1") is True
    assert r.get(key()) == "v1"
    assert r.set(key(), "v2") is True
    assert r.get(key()) == "v2"
    assert r.set(key("empty"), "") is True
    assert r.get(key("empty")) == ""  # an empty value is not a missing key


def test_set_ex_px(r, key):
    assert r.set(key("px"), "v", px=200) is True
    assert r.set(key("ex"), "v", ex=1) is True
    assert r.get(key("px")) == "v" and r.get(key("ex")) == "v"
    time.sleep(0.4)
    assert r.get(key("px")) is None
    assert r.exists(key("px")) == 0
    assert r.get(key("ex")) == "v"
    time.sleep(0.8)
    assert r.get(key("ex")) is None


def test_set_without_expiry_clears_it(r, key):
    assert r.set(key(), "v1", px=200)
    assert r.set(key(), "v2")  # a plain SET drops the old TTL
    time.sleep(0.4)
    assert r.get(key()) == "v2"


def test_set_invalid_expiry(r, key):
    for bad in (["EX", "0"], ["PX", "-5"], ["EX", "soon"]):
        with pytest.raises(redis.ResponseError):
            r.execute_command("SET", key(), "v", *bad)
    assert r.get(key()) is None


@ucx_too
def test_set_nx_xx(r, key):
    assert r.set(key("xx"), "v", xx=True) is None
    assert r.get(key("xx")) is None
    assert r.set(key("nx"), "v1", nx=True) is True
    assert r.set(key("nx"), "v2", nx=True) is None
    assert r.get(key("nx")) == "v1"
    assert r.set(key("nx"), "v3", xx=True) is True
    assert r.get(key("nx")) == "v3"


def test_set_nx_px_lock(r, key):
    lock = key("lock")
    assert r.set(lock, "owner-a", nx=True, px=300) is True
    assert r.set(lock, "owner-b", nx=True, px=300) is None  # held
    assert r.get(lock) == "owner-a"
    time.sleep(0.5)
    assert r.set(lock, "owner-b", nx=True, px=300) is True  # expired, taken over
    assert r.get(lock) == "owner-b"
    assert r.delete(lock) == 1  # released
    assert r.set(lock, "owner-c", nx=True, px=300) is True


@ucx_too
def test_del(r, key):
    r.mset({key("a"): "1", key("b"): "2", key("c"): "3"})
    assert r.delete(key("a")) == 1
    assert r.delete(key("a")) == 0
    assert r.delete(key("b"), key("c"), key("missing")) == 2
    assert r.mget(key("a"), key("b"), key("c")) == [None, None, None]
    r.set(key("d"), "4")
    assert r.execute_command("DEL", key("d"), key("d")) == 1  # one key, named twice


def test_exists(r, key):
    r.set(key("a"), "1")
    assert r.exists(key("a")) == 1
    assert r.exists(key("missing")) == 0
    assert r.exists(key("a"), key("a"), key("missing")) == 2  # duplicates count


@ucx_too
def test_mget_mset(r, key):
    values = {key(f"k{i}"): f"v{i}" for i in range(20)}  # spans the partitions
    assert r.mset(values) is True
    names = list(values)
    assert r.mget(names) == list(values.values())
    assert r.mget(key("missing"), names[3], key("missing2")) == [None, "v3", None]
    assert r.mget(names[5], names[5]) == ["v5", "v5"]


@ucx_too
def test_mset_duplicate_keys_last_wins(r, key):
    assert r.execute_command("MSET", key("a"), "1", key("b"), "x", key("a"), "2",
                             key("a"), "3") is True
    assert r.mget(key("a"), key("b")) == ["3", "x"]


def test_mset_odd_arguments(r, key):
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("MSET", key("a"), "1", key("b"))
    assert r.get(key("a")) is None


@ucx_too
def test_incr_incrby_decr(r, key):
    assert r.incr(key("n")) == 1  # a missing key counts from 0
    assert r.incr(key("n")) == 2
    assert r.incrby(key("n"), 10) == 12
    assert r.incrby(key("n"), -20) == -8
    assert r.decr(key("n")) == -9
    assert r.decr(key("m")) == -1
    assert r.get(key("n")) == "-9"
    r.set(key("s"), "41")
    assert r.incr(key("s")) == 42
    r.set(key("big"), "9223372036854775806")
    assert r.incr(key("big")) == 9223372036854775807


def test_incr_errors(r, key):
    for bad in ("abc", "1.5", " 1", "1 ", "", "99999999999999999999"):
        r.set(key("bad"), bad)
        with pytest.raises(redis.ResponseError, match="value is not an integer"):
            r.incr(key("bad"))
        assert r.get(key("bad")) == bad  # unchanged
    r.set(key("max"), "9223372036854775807")
    with pytest.raises(redis.ResponseError, match="overflow"):
        r.incr(key("max"))
    r.set(key("min"), "-9223372036854775808")
    with pytest.raises(redis.ResponseError, match="overflow"):
        r.decr(key("min"))
    assert r.get(key("max")) == "9223372036854775807"
    with pytest.raises(redis.ResponseError, match="value is not an integer"):
        r.execute_command("INCRBY", key("n"), "one")
    assert r.get(key("n")) is None


def test_getset(r, key):
    assert r.getset(key(), "v1") is None
    assert r.get(key()) == "v1"
    assert r.getset(key(), "v2") == "v1"
    assert r.get(key()) == "v2"


@ucx_too
def test_binary_safe_values(rb, key):
    value = b"a\x00b\r\nc$3\r\n*1\r\n\xff\xfe"
    k = key("bin\x00\r\n").encode()
    assert rb.set(k, value) is True
    assert rb.get(k) == value
    every_byte = bytes(range(256)) * 4
    rb.mset({key("m1"): every_byte, key("m2"): value})
    assert rb.mget(key("m1"), key("m2")) == [every_byte, value]


@ucx_too
def test_large_values(rb, key):
    rng = random.Random(5)
    big = bytes(rng.getrandbits(8) for _ in range(100 * 1024))
    assert rb.set(key("big"), big) is True
    assert rb.get(key("big")) == big
    rb.mset({key("big2"): big[::-1], key("small"): b"s"})
    assert rb.mget(key("big2"), key("small")) == [big[::-1], b"s"]


def test_command_names_are_case_insensitive(r, key):
    assert r.execute_command("set", key(), "v") is True
    assert r.execute_command("GeT", key()) == "v"
    assert r.execute_command("mGeT", key(), key("x")) == ["v", None]


# ---------------------------------------------------------------------------
# Hashes

@ucx_too
def test_hashes(r, key):
    h = key("h")
    assert r.hset(h, mapping={"f1": "1", "f2": "2", "f3": "3"}) == 3
    assert r.hset(h, mapping={"f3": "33", "f4": "4"}) == 1  # one new field
    assert r.hget(h, "f3") == "33"
    assert r.hget(h, "nope") is None
    assert r.hget(key("missing"), "f1") is None
    assert r.hmget(h, ["f1", "nope", "f4"]) == ["1", None, "4"]
    assert r.hgetall(h) == {"f1": "1", "f2": "2", "f3": "33", "f4": "4"}
    assert r.hgetall(key("missing")) == {}
    assert r.hdel(h, "f1", "nope") == 1
    assert r.hgetall(h) == {"f2": "2", "f3": "33", "f4": "4"}
    assert r.hdel(h, "f2", "f3", "f4") == 3
    assert r.exists(h) == 0  # the last field gone, the key is gone


def test_hmset(r, key):
    h = key("h")
    assert r.execute_command("HMSET", h, "a", "1", "b", "2") is True
    assert r.execute_command("HMSET", h, "b", "3") is True
    assert r.hgetall(h) == {"a": "1", "b": "3"}
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("HMSET", h, "c")


def test_wrongtype(r, key):
    r.hset(key("h"), "f", "v")
    r.set(key("s"), "v")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.get(key("h"))
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.hget(key("s"), "f")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.hgetall(key("s"))
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.incr(key("h"))
    assert r.hgetall(key("h")) == {"f": "v"}  # untouched by the errors
    assert r.set(key("h"), "now a string") is True  # SET replaces any type
    assert r.get(key("h")) == "now a string"


# ---------------------------------------------------------------------------
# Sorted sets, as YCSB's redis binding (Jedis) uses them

def test_zset_java_doubles(r, key):
    z = key("z")
    zadd = lambda score, member: r.execute_command("ZADD", z, score, member)  # noqa: E731
    assert zadd("-5.94971599E8", "a") == 1
    assert zadd("1.0E10", "b") == 1
    assert zadd("3.0", "c") == 1
    assert zadd("+inf", "top") == 1
    assert zadd("-inf", "bottom") == 1
    assert zadd("4.0", "c") == 0  # an update, no new member
    assert r.zscore(z, "a") == -594971599.0
    assert r.zscore(z, "b") == 1e10
    assert r.zscore(z, "c") == 4.0
    assert r.zscore(z, "top") == float("inf")
    assert r.zscore(z, "nope") is None
    assert r.zcard(z) == 5
    assert r.zcard(key("missing")) == 0
    assert r.zrem(z, "bottom", "nope") == 1
    assert r.zcard(z) == 4
    with pytest.raises(redis.ResponseError, match="not a valid float"):
        zadd("1.0E", "bad")


def test_zrangebyscore(r, key):
    z = key("z")
    for score, member in [("1.0", "a"), ("2.0", "b"), ("2.0", "a2"), ("3.0", "c"),
                          ("-5.94971599E8", "neg"), ("1.0E10", "huge")]:
        r.execute_command("ZADD", z, score, member)
    q = lambda lo, hi, *extra: r.execute_command("ZRANGEBYSCORE", z, lo, hi, *extra)  # noqa: E731
    assert q("-inf", "+inf") == ["neg", "a", "a2", "b", "c", "huge"]  # ties by member
    assert q("2.0", "+inf", "LIMIT", "0", "2") == ["a2", "b"]
    assert q("2.0", "+inf", "LIMIT", "1", "10") == ["b", "c", "huge"]
    assert q("(2.0", "+inf") == ["c", "huge"]
    assert q("-inf", "(2") == ["neg", "a"]
    assert q("(1", "(3") == ["a2", "b"]
    assert q("-6.0E8", "0") == ["neg"]
    assert q("5", "4") == []
    assert r.execute_command("ZRANGEBYSCORE", key("missing"), "-inf", "+inf") == []


def test_mini_ycsb(r, key):
    """YCSB's redis binding on 200 records: insert = HMSET + ZADD _indices
    hashCode(key) key; read = HGETALL; update = HMSET; scan = ZRANGEBYSCORE
    _indices hashCode(start) +inf LIMIT 0 n, then HGETALL each; delete = DEL +
    ZREM."""
    rng = random.Random(3)
    index = "_indices"
    r.delete(index)
    value = lambda: "".join(rng.choice("abcdefghij") for _ in range(1000))  # noqa: E731
    records = {}
    for i in range(200):
        k = f"user{i}"
        records[k] = {"field0": value()}
        assert r.execute_command("HMSET", k, "field0", records[k]["field0"]) is True
        assert r.execute_command("ZADD", index, java_double(java_hash(k)), k) == 1
    assert r.zcard(index) == 200

    def scan(start, n):
        order = sorted(records, key=lambda k: (java_hash(k), k))
        lo = java_hash(start)
        return [k for k in order if java_hash(k) >= lo][:n]

    for k in rng.sample(sorted(records), 20):  # read
        assert r.hgetall(k) == records[k]
    for k in rng.sample(sorted(records), 20):  # update
        records[k] = {"field0": value()}
        assert r.execute_command("HMSET", k, "field0", records[k]["field0"]) is True
        assert r.hgetall(k) == records[k]
    for k in rng.sample(sorted(records), 20):  # scan
        n = rng.randint(1, 30)
        got = r.execute_command("ZRANGEBYSCORE", index, java_double(java_hash(k)), "+inf",
                                "LIMIT", "0", str(n))
        assert got == scan(k, n)
        assert [r.hgetall(m) for m in got] == [records[m] for m in got]
    for k in rng.sample(sorted(records), 20):  # delete
        assert r.delete(k) == 1
        assert r.zrem(index, k) == 1
        del records[k]
        assert r.hgetall(k) == {}
    assert r.zcard(index) == 180
    first = min(records, key=lambda k: (java_hash(k), k))
    assert r.execute_command("ZRANGEBYSCORE", index, "-inf", "+inf", "LIMIT", "0", "200") \
        == scan(first, 200)
