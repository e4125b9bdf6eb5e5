"""Memory through the proxy: the kv-nodes' arenas grow past their first extent, INFO memory
reports what is used, and kv.maxmemory turns writes into Redis's -OOM error while deletes still
run (docs/proxy.md, "Memory"; docs/kv_format.md, "Arena layout")."""
import time

import pytest
import redis

from conftest import Cluster, stop_cluster
from proxy_helpers import Raw, RespError


class Target:
    """Where Raw connects."""

    def __init__(self, host, port):
        self.host, self.port = host, port

OOM = "OOM command not allowed when used memory > 'maxmemory'."
VALUE_BYTES = 100_000


def info_memory(r):
    """INFO memory as redis-py parses it (numbers as ints)."""
    return r.info("memory")


@pytest.fixture
def small_arena_cluster(tmp_path):
    """4 nodes whose partitions start with a 1 MiB arena (the minimum)."""
    c = Cluster("ucx", tmp_path, proxy=True, arena_bytes="1MiB", grace_ms=200)
    try:
        c.start()
        yield c
    finally:
        stop_cluster(c)


def test_arenas_grow_past_their_first_extent(small_arena_cluster):
    c = small_arena_cluster
    r = redis.Redis(host=c.proxy["host"], port=c.proxy["port"], socket_timeout=30)
    values = {f"grow:{i}": (f"{i}:" + "v" * VALUE_BYTES).encode() for i in range(200)}
    for k, v in values.items():  # 20 MB over four 1 MiB first extents
        assert r.set(k, v)
    for k, v in values.items():
        assert r.get(k) == v, k
    mem = info_memory(r)
    assert int(mem["used_memory"]) >= 200 * VALUE_BYTES, mem
    assert int(mem["rampart_reserved_memory"]) > 4 * (1 << 20), mem
    assert int(mem["maxmemory"]) == 0, mem
    assert mem["maxmemory_policy"] == "noeviction", mem
    # Rounds that overwrite every value, each after the last round's versions passed their grace
    # period: the freed memory serves the next round, so the store stops growing.
    reserved = []
    for n in range(5):
        for k, v in values.items():
            assert r.set(k, v[n % 2:])
        time.sleep(0.5)  # grace_ms 200 + the node's GC tick
        reserved.append(int(info_memory(r)["rampart_reserved_memory"]))
    assert reserved[-1] == reserved[1], reserved
    assert int(info_memory(r)["used_memory"]) < 2 * 200 * VALUE_BYTES + (4 << 20)


def test_maxmemory_refuses_writes_with_redis_oom_and_lets_deletes_run(tmp_path):
    c = Cluster("ucx", tmp_path, proxy=True, arena_bytes="4MiB",
                kv_settings={"maxmemory": '"2MiB"'})
    try:
        c.start()
        r = redis.Redis(host=c.proxy["host"], port=c.proxy["port"], socket_timeout=30)
        assert r.config_get("maxmemory") == {"maxmemory": str(4 * 2 * (1 << 20))}
        written = []
        error = None
        with Raw(Target(c.proxy["host"], c.proxy["port"])) as raw:  # the reply's exact text
            for i in range(400):  # 40 MB offered to 8 MiB of budget
                reply = raw.call("SET", f"oom:{i}", b"x" * VALUE_BYTES)
                if isinstance(reply, RespError):
                    error = str(reply)
                    break
                assert reply == b"OK"
                written.append(f"oom:{i}")
        assert error == OOM, error
        assert 20 <= len(written) <= 90, len(written)
        mem = info_memory(r)
        assert int(mem["maxmemory"]) == 4 * 2 * (1 << 20), mem
        # Everything acknowledged is there; a delete runs, and the proxy serves on.
        assert r.get(written[0]) == b"x" * VALUE_BYTES
        assert r.delete(*written) == len(written)
        assert r.dbsize() == 0
        assert r.ping()
    finally:
        stop_cluster(c)


def test_chunks_of_overwritten_long_strings_are_swept(small_arena_cluster):
    """A long string (over kv.max_value_bytes, 1 MiB) is stored in chunks. A blind SET over one
    cannot know its chunks and writes under a new id; the proxy's sweeper then deletes the old
    chunks, and never the live string's: five SETs of 8 MB at one key return to about one
    string's memory, and the value reads back."""
    c = small_arena_cluster
    r = redis.Redis(host=c.proxy["host"], port=c.proxy["port"], socket_timeout=30)
    size = 8_000_000
    base = int(info_memory(r)["used_memory"])
    for n in range(5):
        assert r.set("long", bytes([65 + n]) * size)
    deadline = time.monotonic() + 30
    used = int(info_memory(r)["used_memory"])
    while used - base > 2 * size and time.monotonic() < deadline:
        time.sleep(0.2)
        used = int(info_memory(r)["used_memory"])
    assert used - base <= 2 * size, (base, used)
    assert r.get("long") == b"E" * size
    assert r.strlen("long") == size
