"""Several proxies in front of one cluster (docs/proxy.md, "Several proxies").

Each proxy's lock table orders only its own read-modify-writes; what orders
them across proxies is the kv-node's IF_UNCHANGED check (docs/kv_protocol.md):
a read-modify-write's write commits only while the versions it read are still
the newest, else the proxy reads and runs it again. Here two proxies of one
`rampart up` cluster (two [[proxies]] on 127.0.0.1) take concurrent
increments, pushes and adds of the same few keys from clients of both, and a
ledger of the acknowledged replies must match what the keys hold at the end:
no lost update, no damaged collection. Without the check (the binary before
it) the counters come out short and lists lose pushes.
"""
import re
import threading
import time

import pytest
import redis

from conftest import Cluster, free_ports, run_cluster

CLIENTS_PER_PROXY = 3
OPS_PER_CLIENT = 400
DEADLINE_S = 60  # every client stops by then, done or not


@pytest.fixture(params=["ucx", "tcp"])
def two_proxies(request, tmp_path):
    c = Cluster(request.param, tmp_path)
    text = c.config.read_text()
    proxy_ports = free_ports(2)
    text = text.replace("[proxy]\nenabled = false\n", "[proxy]\nworkers = 1\n")
    for i, port in enumerate(proxy_ports):
        text += f'[[proxies]]\nid = {i}\nhost = "127.0.0.1"\nport = {port}\n'
    c.config.write_text(text)
    c.proxy_ports = proxy_ports
    for started in run_cluster(c):
        out = started.stdout()
        proxy_pids = [int(p) for p in re.findall(r"^proxy \d+: pid (\d+), ", out, re.M)]
        assert len(proxy_pids) == 2, out
        started.restarted_pids.update(proxy_pids)  # stopped with the nodes
        yield started


def clients(cluster):
    """A redis-py client of each proxy."""
    return [redis.Redis(host="127.0.0.1", port=p, decode_responses=True, socket_timeout=30)
            for p in cluster.proxy_ports]


def hammer(cluster, op):
    """CLIENTS_PER_PROXY threads on each proxy, each calling op(conn, client_no, i) for
    i < OPS_PER_CLIENT until the deadline. Returns the ledger: per client the i whose
    command was acknowledged, and the errors answered (not acknowledged)."""
    acked = {}
    errors = []
    deadline = time.monotonic() + DEADLINE_S
    lock = threading.Lock()

    def run(port, n):
        conn = redis.Redis(host="127.0.0.1", port=port, decode_responses=True, socket_timeout=30)
        mine = []
        try:
            for i in range(OPS_PER_CLIENT):
                if time.monotonic() > deadline:
                    break
                try:
                    op(conn, n, i)
                    mine.append(i)
                except redis.ResponseError as e:
                    with lock:
                        errors.append(str(e))
        finally:
            conn.close()
            with lock:
                acked[n] = mine

    threads = []
    for p, port in enumerate(cluster.proxy_ports):
        for k in range(CLIENTS_PER_PROXY):
            threads.append(threading.Thread(target=run, args=(port, p * CLIENTS_PER_PROXY + k)))
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_S + 30)
    assert not any(t.is_alive() for t in threads)
    return acked, errors


def test_increments_through_two_proxies_lose_nothing(two_proxies):
    """INCR, HINCRBY and ZINCRBY of one key each from six clients on two proxies:
    each ends at the number of acknowledged increments."""
    def op(conn, n, i):
        pipe = conn.pipeline(transaction=False)
        pipe.incr("several:counter")
        pipe.hincrby("several:hash", "field", 1)
        pipe.zincrby("several:zset", 1, "member")
        for reply in pipe.execute(raise_on_error=False):
            if isinstance(reply, Exception):
                raise reply

    acked, errors = hammer(two_proxies, op)
    done = sum(len(v) for v in acked.values())
    assert done > 0
    a, b = clients(two_proxies)
    # A pipeline with an error reply counts as not acknowledged, but its other
    # commands may have landed: then the errors bound the difference.
    slack = len(errors)
    for c in (a, b):
        counter = int(c.get("several:counter"))
        field = int(c.hget("several:hash", "field"))
        score = c.zscore("several:zset", "member")
        assert done <= counter <= done + slack, (counter, done, errors[:3])
        assert done <= field <= done + slack, (field, done, errors[:3])
        assert done <= score <= done + slack, (score, done, errors[:3])
    conflicts = sum(int(c.info("stats")["rampart_write_conflicts"]) for c in (a, b))
    assert conflicts > 0, "no write of one proxy was ever refused for the other's"


def test_collections_changed_through_two_proxies_keep_every_acknowledged_change(two_proxies):
    """RPUSH to one list and SADD to one set from clients of both proxies: every
    acknowledged element is there exactly once, and the collections read whole
    (not 'damaged')."""
    def op(conn, n, i):
        conn.rpush("several:list", f"{n}:{i}")
        conn.sadd("several:set", f"{n}:{i}")

    acked, errors = hammer(two_proxies, op)
    assert not errors, errors[:3]
    want = sorted(f"{n}:{i}" for n, ids in acked.items() for i in ids)
    a, b = clients(two_proxies)
    for c in (a, b):
        items = c.lrange("several:list", 0, -1)
        assert len(items) == len(want), (len(items), len(want))
        assert sorted(items) == want
        # Each client's pushes in its order.
        for n, ids in acked.items():
            mine = [int(x.split(":")[1]) for x in items if x.startswith(f"{n}:")]
            assert mine == ids
        assert sorted(c.smembers("several:set")) == want
        assert c.scard("several:set") == len(want)
