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
import os
import re
import signal
import socket
import threading
import time

import pytest
import redis

from conftest import Cluster, free_ports, run_cluster

CLIENTS_PER_PROXY = 3
OPS_PER_CLIENT = 400
DEADLINE_S = 60  # every client stops by then, done or not


def run_two_proxies(backend, tmp_path, password=None, settings=""):
    """`rampart up` of 4 kv-nodes and two [[proxies]] on 127.0.0.1 (one worker
    each; with `password`, proxy.requirepass; `settings`: more [proxy] lines):
    yields the Cluster, with proxy_ports."""
    c = Cluster(backend, tmp_path)
    text = c.config.read_text()
    proxy_ports = free_ports(2)
    settings = "workers = 1\n" + (f'requirepass = "{password}"\n' if password else "") + settings
    text = text.replace("[proxy]\nenabled = false\n", "[proxy]\n" + settings)
    for i, port in enumerate(proxy_ports):
        text += f'[[proxies]]\nid = {i}\nhost = "127.0.0.1"\nport = {port}\n'
    c.config.write_text(text)
    c.proxy_ports = proxy_ports
    for started in run_cluster(c):
        out = started.stdout()
        proxy_pids = [int(p) for p in re.findall(r"^proxy \d+: pid (\d+), ", out, re.M)]
        assert len(proxy_pids) == 2, out
        started.restarted_pids.update(proxy_pids)  # stopped with the nodes
        started.proxy_pids = proxy_pids
        yield started


@pytest.fixture(params=["ucx", "tcp"])
def two_proxies(request, tmp_path):
    yield from run_two_proxies(request.param, tmp_path)


def clients(cluster, password=None):
    """A redis-py client of each proxy."""
    return [redis.Redis(host="127.0.0.1", port=p, decode_responses=True, socket_timeout=30,
                        password=password)
            for p in cluster.proxy_ports]


RETRY_ERROR = "were written by another proxy or client before its write"


def hammer(cluster, op, ports=None, ops=OPS_PER_CLIENT):
    """CLIENTS_PER_PROXY threads on each proxy (of `ports`, default both), each
    calling op(conn, client_no, i) for i < OPS_PER_CLIENT until the deadline.
    Returns the ledger: per client the i whose command was acknowledged, and
    the errors answered (not acknowledged: a refused write wrote nothing)."""
    acked = {}
    errors = []
    deadline = time.monotonic() + DEADLINE_S
    lock = threading.Lock()

    def run(port, n):
        conn = redis.Redis(host="127.0.0.1", port=port, decode_responses=True, socket_timeout=30)
        mine = []
        try:
            for i in range(ops):
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
    for p, port in enumerate(ports or cluster.proxy_ports):
        for k in range(CLIENTS_PER_PROXY):
            threads.append(threading.Thread(target=run, args=(port, p * CLIENTS_PER_PROXY + k)))
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_S + 30)
    assert not any(t.is_alive() for t in threads)
    # Only the retry limit's error, and rarely: a write lost 16 times in a row.
    assert all(RETRY_ERROR in e for e in errors), errors[:3]
    assert len(errors) * 100 <= CLIENTS_PER_PROXY * len(ports or cluster.proxy_ports) * ops
    return acked, errors


def conflicts(cluster):
    """INFO's rampart_write_conflicts of each proxy."""
    return [int(c.info("stats")["rampart_write_conflicts"]) for c in clients(cluster)]


def acknowledged(acked):
    return sum(len(v) for v in acked.values())


@pytest.mark.parametrize("command", ["incr", "hincrby", "zincrby"])
def test_increments_through_two_proxies_lose_nothing(two_proxies, command):
    """One key incremented by six clients on two proxies ends at the number
    of acknowledged increments."""
    key = f"several:{command}"
    ops = {"incr": lambda c: c.incr(key),
           "hincrby": lambda c: c.hincrby(key, "field", 1),
           "zincrby": lambda c: c.zincrby(key, 1, "member")}
    reads = {"incr": lambda c: int(c.get(key)),
             "hincrby": lambda c: int(c.hget(key, "field")),
             "zincrby": lambda c: int(c.zscore(key, "member"))}
    acked, _ = hammer(two_proxies, lambda conn, n, i: ops[command](conn))
    done = acknowledged(acked)
    assert done > 0
    for c in clients(two_proxies):
        assert reads[command](c) == done
    assert sum(conflicts(two_proxies)) > 0, "no write of one proxy was ever refused for the other's"


@pytest.mark.parametrize("command", ["rpush", "sadd"])
def test_collections_changed_through_two_proxies_keep_every_acknowledged_change(two_proxies,
                                                                                 command):
    """RPUSH to one list, SADD to one set from clients of both proxies: every
    acknowledged element is there once, each client's pushes in its order,
    and the collection reads whole (not 'damaged')."""
    key = f"several:{command}"
    acked, _ = hammer(two_proxies, lambda conn, n, i: getattr(conn, command)(key, f"{n}:{i}"))
    want = sorted(f"{n}:{i}" for n, ids in acked.items() for i in ids)
    for c in clients(two_proxies):
        if command == "sadd":
            assert sorted(c.smembers(key)) == want
            assert c.scard(key) == len(want)
            continue
        items = c.lrange(key, 0, -1)
        assert sorted(items) == want
        for n, ids in acked.items():
            assert [int(x.split(":")[1]) for x in items if x.startswith(f"{n}:")] == ids


def test_one_proxy_never_sees_a_conflict(two_proxies):
    """Through one proxy its lock table orders the read-modify-writes: no
    kv-node ever refuses one of its checked writes."""
    before = conflicts(two_proxies)
    acked, errors = hammer(two_proxies, lambda conn, n, i: conn.incr("several:one"),
                           ports=two_proxies.proxy_ports[:1])
    assert not errors
    assert int(clients(two_proxies)[0].get("several:one")) == acknowledged(acked)
    assert conflicts(two_proxies) == before


def test_watch_exec_through_two_proxies_is_optimistic_across_them(two_proxies):
    """WATCH k, GET k, MULTI, SET k v+1, EXEC from clients of both proxies,
    again on a null reply: the key ends at the number of EXECs that
    succeeded. (EXEC checks its watched versions when it reads; the kv-node
    checks them again when it writes, so another proxy's write in between
    makes the EXEC read again and answer null.)"""
    key = "several:watched"

    def increment(conn, n, i):
        for _ in range(1000):
            with conn.pipeline() as p:
                try:
                    p.watch(key)
                    value = int(p.get(key) or 0)
                    p.multi()
                    p.set(key, value + 1)
                    p.execute()
                    return
                except redis.WatchError:
                    continue
        raise AssertionError("1000 EXECs in a row answered null")

    acked, _ = hammer(two_proxies, increment, ops=60)
    done = acknowledged(acked)
    assert done > 0
    for c in clients(two_proxies):
        assert int(c.get(key)) == done


def blocked_pop(port, args, results, timeout_s=20):
    """A thread running a blocking command on the proxy at `port`; its reply
    goes to `results`."""
    def run():
        conn = redis.Redis(host="127.0.0.1", port=port, decode_responses=True,
                           socket_timeout=timeout_s + 10)
        try:
            results.append(conn.execute_command(*args))
        finally:
            conn.close()
    t = threading.Thread(target=run)
    t.start()
    return t


def test_blocked_clients_are_served_by_writes_through_another_proxy(two_proxies):
    """BLPOP and BZPOPMIN parked on one proxy get what is pushed through the
    other (within the poll interval, docs/proxy.md), each waiter one element;
    before, they waited out their timeout."""
    waiting_port, pushing_port = two_proxies.proxy_ports
    results = []
    threads = [blocked_pop(waiting_port, ["BLPOP", "several:queue", "20"], results) for _ in range(3)]
    threads.append(blocked_pop(waiting_port, ["BZPOPMIN", "several:ranked", "20"], results))
    pusher = redis.Redis(host="127.0.0.1", port=pushing_port, decode_responses=True)
    waiter = redis.Redis(host="127.0.0.1", port=waiting_port, decode_responses=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and int(waiter.info("clients")["blocked_clients"]) < 4:
        time.sleep(0.05)
    assert int(waiter.info("clients")["blocked_clients"]) == 4
    started = time.monotonic()
    pusher.rpush("several:queue", "a", "b", "c")
    pusher.zadd("several:ranked", {"low": 1, "high": 2})
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert time.monotonic() - started < 15, "served at the timeout, not by the writes"
    popped = sorted(r[1] for r in results if r and r[0] == "several:queue")
    assert popped == ["a", "b", "c"], results
    assert ("several:ranked", "low", 1.0) in results, results
    assert pusher.llen("several:queue") == 0
    assert pusher.zrange("several:ranked", 0, -1) == ["high"]


def socket_to(port):
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def wait_linked(proxies):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(
            int(c.info("stats")["rampart_pubsub_peers_linked"]) == 1 for c in proxies):
        time.sleep(0.05)


def test_publish_reaches_subscribers_of_every_proxy(two_proxies):
    """A PUBLISH on either proxy reaches the channel's and patterns'
    subscribers on both, in the order each proxy published; its reply counts
    the publishing proxy's receivers (as a Redis Cluster node counts)."""
    a, b = clients(two_proxies)
    wait_linked((a, b))
    subs = []
    for c, kind in ((a, "channel"), (b, "channel"), (b, "pattern")):
        p = c.pubsub(ignore_subscribe_messages=True)
        if kind == "channel":
            p.subscribe("several:news")
        else:
            p.psubscribe("several:*")
        subs.append(p)
    assert a.publish("several:news", "from a 0") == 1  # a's own subscriber only
    for i in range(1, 50):
        a.publish("several:news", f"from a {i}")
        b.publish("several:news", f"from b {i}")
    got = []
    for p in subs:
        mine = []
        deadline = time.monotonic() + 10
        while len(mine) < 99 and time.monotonic() < deadline:
            m = p.get_message(timeout=0.5)
            if m is not None:
                mine.append(m["data"])
        got.append(mine)
        p.close()
    for mine in got:
        assert sorted(mine) == sorted([f"from a {i}" for i in range(50)] +
                                      [f"from b {i}" for i in range(1, 50)])
        assert [m for m in mine if m.startswith("from a")] == [f"from a {i}" for i in range(50)]
        assert [m for m in mine if m.startswith("from b")] == [f"from b {i}" for i in range(1, 50)]
    assert int(a.info("stats")["rampart_pubsub_forwarded"]) >= 50
    assert int(a.info("stats")["rampart_pubsub_dropped"]) == 0


def crosses(publisher, subscriber, channel, message):
    """Whether `message` published on `channel` through one proxy reaches a
    subscriber of the other (within 10 s)."""
    p = subscriber.pubsub(ignore_subscribe_messages=True)
    p.subscribe(channel)
    publisher.publish(channel, message)
    deadline = time.monotonic() + 10
    m = None
    while m is None and time.monotonic() < deadline:
        m = p.get_message(timeout=0.5)
    p.close()
    return m is not None and m["data"] == message


def test_keyspace_events_reach_subscribers_of_every_proxy(tmp_path):
    """proxy.notify_keyspace_events in the cluster file turns notifications on
    for both proxies from their start; a write through either proxy sends its
    events to the subscribers of both, each proxy's in its order."""
    for cluster in run_two_proxies("tcp", tmp_path, settings='notify_keyspace_events = "KEl"\n'):
        a, b = clients(cluster)
        wait_linked((a, b))
        assert a.config_get("notify-keyspace-events") == b.config_get("notify-keyspace-events") == \
            {"notify-keyspace-events": "lKE"}
        subs = []
        for c in (a, b):
            p = c.pubsub(ignore_subscribe_messages=True)
            p.psubscribe("__keyevent@0__:*")
            subs.append(p)
        a.set("several:ev:s", "v")  # class $: not asked for
        for i in range(20):
            a.lpush("several:ev:a", i)
            b.rpush("several:ev:b", i)
        want = {("__keyevent@0__:lpush", "several:ev:a"): 20, ("__keyevent@0__:rpush", "several:ev:b"): 20}
        for p in subs:
            got = {}
            deadline = time.monotonic() + 10
            while sum(got.values()) < 40 and time.monotonic() < deadline:
                m = p.get_message(timeout=0.5)
                if m is not None:
                    key = (m["channel"], m["data"])
                    got[key] = got.get(key, 0) + 1
            p.close()
            assert got == want


def test_publish_links_authenticate_with_the_proxies_password(tmp_path):
    """With proxy.requirepass the links AUTH first: a message still crosses."""
    for cluster in run_two_proxies("tcp", tmp_path, password="s3cret"):
        a, b = clients(cluster, password="s3cret")
        wait_linked((a, b))
        assert crosses(a, b, "several:auth", "hello")
        assert int(a.info("stats")["rampart_pubsub_dropped"]) == 0


def test_a_proxy_killed_and_restarted_gets_messages_again(two_proxies):
    """While a peer is down its messages are lost, and PUBLISH still answers
    at once; once `up` restarted it the link comes back."""
    a, b = clients(two_proxies)
    wait_linked((a, b))
    os.kill(two_proxies.proxy_pids[1], signal.SIGKILL)
    started = time.monotonic()
    for i in range(20):
        assert a.publish("several:lost", f"m{i}") == 0
    assert time.monotonic() - started < 5
    two_proxies.wait_restarted("proxy 1")
    wait_linked((a, b))
    assert int(a.info("stats")["rampart_pubsub_peers_linked"]) == 1
    assert crosses(a, b, "several:back", "again")


def test_a_waiter_behind_another_on_one_key_gets_its_other_key(two_proxies):
    """W waits on b, then S on a and b: a push to a through the other proxy
    reaches S (first on a's line though behind W on b's), then one to b W."""
    waiting_port, pushing_port = two_proxies.proxy_ports
    waiter = redis.Redis(host="127.0.0.1", port=waiting_port, decode_responses=True)
    pusher = redis.Redis(host="127.0.0.1", port=pushing_port, decode_responses=True)

    def parked(n):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and int(waiter.info("clients")["blocked_clients"]) < n:
            time.sleep(0.05)
        assert int(waiter.info("clients")["blocked_clients"]) == n

    w_results, s_results = [], []
    w = blocked_pop(waiting_port, ["BLPOP", "several:b", "20"], w_results)
    parked(1)
    s = blocked_pop(waiting_port, ["BLPOP", "several:a", "several:b", "20"], s_results)
    parked(2)
    started = time.monotonic()
    pusher.rpush("several:a", "for s")
    s.join(30)
    assert s_results == [("several:a", "for s")]
    pusher.rpush("several:b", "for w")
    w.join(30)
    assert w_results == [("several:b", "for w")]
    assert time.monotonic() - started < 15, "served at the timeout, not by the writes"


def test_spublish_reaches_shard_subscribers_of_every_proxy(two_proxies):
    """SPUBLISH is forwarded too, to SSUBSCRIBErs only."""
    a, b = clients(two_proxies)
    wait_linked((a, b))
    with socket_to(two_proxies.proxy_ports[1]) as s:
        s.sendall(b"*2\r\n$10\r\nSSUBSCRIBE\r\n$8\r\nsh:chan1\r\n*2\r\n$9\r\nSUBSCRIBE\r\n$8\r\nsh:chan1\r\n")
        got = b""
        deadline = time.monotonic() + 10
        while got.count(b":1\r\n") < 2 and time.monotonic() < deadline:
            got += s.recv(4096)
        assert a.execute_command("SPUBLISH", "sh:chan1", "only shard") == 0  # none on a
        assert a.publish("sh:chan1", "only plain") == 0
        got = b""
        while b"only plain" not in got and time.monotonic() < deadline:
            got += s.recv(4096)
        assert got == (b"*3\r\n$8\r\nsmessage\r\n$8\r\nsh:chan1\r\n$10\r\nonly shard\r\n"
                       b"*3\r\n$7\r\nmessage\r\n$8\r\nsh:chan1\r\n$10\r\nonly plain\r\n"), got
