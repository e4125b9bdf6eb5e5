"""SORT and SORT_RO against Redis 7.0 (its sort.c): against a real
redis-server ("redis", 7.0.15) and the proxy of a `rampart up` cluster
("rampart"), with the same expectations, computed here. Keys share a hash
tag only where Redis Cluster would need it; the proxy needs none."""
import random

import pytest
import redis

from proxy_helpers import Raw, error_text, key, r  # noqa: F401


def test_sorts_lists_sets_and_sorted_sets_as_numbers_or_strings(r, key):
    lst, st, zs = key("list"), key("set"), key("zset")
    numbers = ["10", "-2.5", "3", "1e3", "0", "7", "3.0"]
    r.rpush(lst, *numbers)
    r.sadd(st, *numbers)
    r.zadd(zs, {n: i for i, n in enumerate(numbers)})
    by_value = sorted(numbers, key=lambda n: (float(n), n.encode()))
    for k in (lst, st, zs):
        assert r.sort(k) == by_value
        assert r.sort(k, desc=True) == by_value[::-1]
        assert r.sort(k, alpha=True) == sorted(numbers, key=str.encode)
        assert r.sort(k, start=2, num=3) == by_value[2:5]
        assert r.sort(k, start=5, num=-1) == by_value[5:]
        assert r.sort(k, start=-3, num=2) == by_value[:2]  # a negative offset is 0
        assert r.sort(k, start=100, num=2) == []
        assert r.sort(k, start=1, num=0) == []
        assert r.execute_command("SORT_RO", k, "LIMIT", 1, 2) == by_value[1:3]
    r.rpush(lst, "x")
    with pytest.raises(redis.ResponseError, match="One or more scores can't be converted into double"):
        r.sort(lst)
    assert r.sort(key("missing")) == []


def test_by_a_constant_keeps_the_native_order(r, key):
    lst, zs = key("list"), key("zset")
    r.rpush(lst, "c", "a", "b", "d")
    r.zadd(zs, {"c": 1, "a": 2, "b": 3, "d": 3})
    assert r.sort(lst, by="nosort") == ["c", "a", "b", "d"]
    assert r.sort(lst, by="nosort", desc=True) == ["d", "b", "a", "c"]
    assert r.sort(lst, by="nosort", desc=True, start=1, num=2) == ["b", "a"]
    assert r.sort(zs, by="nosort") == ["c", "a", "b", "d"]
    assert r.sort(zs, by="nosort", desc=True, start=0, num=3) == ["d", "b", "a"]
    # A set stored by a constant: sorted as strings (a stored result must
    # not depend on the set's internal order).
    st = key("set")
    r.sadd(st, "b", "c", "a")
    assert r.sort(st, by="nosort", store=key("dst")) == 3
    assert r.lrange(key("dst"), 0, -1) == ["a", "b", "c"]


def test_by_and_get_patterns_read_other_keys_and_hash_fields(r, key):
    lst = key("ids")
    ids = [str(i) for i in range(30)]
    rng = random.Random(7)
    rng.shuffle(ids)
    r.rpush(lst, *ids)
    weight = {i: rng.randint(-50, 50) for i in ids}
    for i in ids:
        if int(i) % 7 != 0:  # some weights are missing: they count as 0
            r.set(key(f"w_{i}"), weight[i])
        r.hset(key(f"obj_{i}"), mapping={"name": f"n{i}", "rank": 100 - int(i)})
    r.set(key("w_3"), weight["3"])
    w = {i: (weight[i] if int(i) % 7 != 0 or i == "3" else 0) for i in ids}
    expect = sorted(ids, key=lambda i: (w[i], i.encode()))
    pattern = key("w_*")
    assert r.sort(lst, by=pattern) == expect
    assert r.sort(lst, by=key("obj_*->rank")) == sorted(ids, key=lambda i: (100 - int(i), i.encode()))
    got = r.sort(lst, by=pattern, get=["#", key("obj_*->name"), key("obj_*->nofield"), key("w_*")],
                 start=3, num=5)
    flat = []
    for i in expect[3:8]:
        flat += [i, f"n{i}", None, str(w[i]) if int(i) % 7 != 0 or i == "3" else None]
    assert got == flat
    # ALPHA BY: the elements without a value first, then by their values' bytes.
    alpha = r.sort(lst, by=pattern, alpha=True)
    unweighted = {i for i in ids if int(i) % 7 == 0 and i != "3"}
    assert set(alpha[:len(unweighted)]) == unweighted
    values = [str(w[i]).encode() for i in alpha[len(unweighted):]]
    assert values == sorted(values) and len(alpha) == len(ids)
    # A pattern on a key of another type gives nothing.
    assert r.sort(lst, by="nosort", get=key("ids"), start=0, num=1) == [None]
    with pytest.raises(redis.ResponseError, match="One or more scores"):
        r.sort(lst, by=key("obj_*->name"))


def test_by_patterns_over_large_hashes_and_many_keys_take_several_read_rounds(r, key):
    """Hashes larger than a page (the proxy reads their header, then their
    pages): the weights and the GETs still come from one snapshot."""
    st = key("members")
    members = [f"m{i:03d}" for i in range(120)]
    r.sadd(st, *members)
    pipe = r.pipeline(transaction=False)
    for n, m in enumerate(members):
        pipe.hset(key(f"h_{m}"), mapping={"pad": "x" * 3000, "score": (n * 37) % 120, "tag": m.upper()})
    pipe.execute()
    expect = sorted(members, key=lambda m: ((members.index(m) * 37) % 120, m.encode()))
    assert r.sort(st, by=key("h_*->score"), get=key("h_*->tag"), desc=True) == [
        m.upper() for m in expect[::-1]]


def test_store_replaces_the_destination_and_an_empty_result_deletes_it(r, key):
    src, dst = key("src"), key("dst")
    r.rpush(src, "3", "1", "2")
    r.hset(dst, "f", "v")
    r.expire(dst, 100)
    assert r.sort(src, store=dst) == 3
    assert r.type(dst) == "list" and r.ttl(dst) == -1
    assert r.lrange(dst, 0, -1) == ["1", "2", "3"]
    assert r.sort(src, get=key("nothing_*"), store=dst) == 3  # missing GET values stored as ""
    assert r.lrange(dst, 0, -1) == ["", "", ""]
    assert r.sort(key("empty"), store=dst) == 0
    assert r.exists(dst) == 0
    assert r.sort(src, store=src, desc=True) == 3  # in place
    assert r.lrange(src, 0, -1) == ["3", "2", "1"]


def test_bad_arguments_and_types(r, key):
    lst = key("list")
    r.rpush(lst, "1")
    r.set(key("string"), "x")
    cases = [
        (("SORT", lst, "BADOPT"), "ERR syntax error"),
        (("SORT", lst, "LIMIT", "1"), "ERR syntax error"),
        (("SORT", lst, "LIMIT", "a", "1"), "ERR value is not an integer or out of range"),
        (("SORT", lst, "STORE"), "ERR syntax error"),
        (("SORT_RO", lst, "STORE", key("d")), "ERR syntax error"),
        (("SORT", key("string")), "WRONGTYPE Operation against a key holding the wrong kind of value"),
        (("SORT", key("string"), "BADOPT"), "ERR syntax error"),  # options are checked first
    ]
    for args, message in cases:
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command(*args)
        assert str(e.value) == message.removeprefix("ERR ") or str(e.value) == message, args
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("SORT")


def test_command_getkeys_names_sorts_source_and_destination(redis_target):
    with Raw(redis_target) as c:
        getkeys = lambda *a: c.call("COMMAND", "GETKEYS", *a)  # noqa: E731
        assert getkeys("SORT", "abc", "STORE", "def") == [b"abc", b"def"]
        assert getkeys("SORT", "abc", "STORE", "a", "LIMIT", "1", "2", "STORE", "def") == [b"abc", b"def"]
        assert getkeys("SORT", "abc", "BY", "store", "GET", "store") == [b"abc"]
        assert getkeys("SORT_RO", "abc") == [b"abc"]
        assert getkeys("MSET", "a", "1", "b", "2") == [b"a", b"b"]
        assert getkeys("ZUNIONSTORE", "d", "2", "x", "y") == [b"d", b"x", b"y"]
        for args, message in [(("NOSUCH", "a"), "ERR Invalid command specified"),
                              (("PING", "x"), "ERR The command has no key arguments"),
                              (("GET", "a", "b"), "ERR Invalid number of arguments specified for command"),
                              (("GET",), "ERR wrong number of arguments for 'command|getkeys' command")]:
            assert error_text(getkeys(*args)) == message, args


def test_patterns_naming_impossible_keys_find_nothing(r, key):
    """A key a pattern builds from an element may be longer than any key can
    be, or start with the bytes the proxy keeps for collection pages: Redis
    finds no such key (nil); the proxy must not send the read (it failed the
    whole command with a backend error) nor read its own pages."""
    lst, big = key("list"), key("big")
    long_element, internal = "e" * 1100, "\x00\x01internal"
    r.rpush(lst, long_element, internal, "short")
    r.set(key("w_short"), "5")
    r.hset(big, mapping={f"f{i}": "x" * 100 for i in range(100)})  # a paged hash: page keys exist
    assert r.sort(lst, by="nosort", get="*") == [None, None, None]
    assert r.sort(lst, by=key("w_*"), get=["#", key("w_*")]) == [
        internal, None, long_element, None, "short", "5"]
    alpha = r.sort(lst, by=key("w_*"), alpha=True)
    assert set(alpha[:2]) == {long_element, internal} and alpha[2] == "short"


def test_a_constant_by_stays_constant(r, key):
    lst = key("list")
    r.rpush(lst, "3", "1", "2")
    r.set(key("w_1"), "9")
    assert r.sort(lst, by="nosort") == ["3", "1", "2"]
    assert r.execute_command("SORT", lst, "BY", "nosort", "BY", key("w_*")) == ["3", "1", "2"]
    assert r.execute_command("SORT", lst, "BY", key("w_*"), "BY", "nosort") == ["3", "1", "2"]
