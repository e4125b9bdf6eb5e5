"""Durable kv-nodes (docs/log_format.md) against real crashes: writers keep a ledger of what the
proxy acknowledged (tests/durability_load.py) while the test SIGKILLs processes by PID at the
worst moment it can pick (in the middle of the load, checkpoints running); after the restart
every acknowledged write must read back, counters must equal their acknowledged increments, and
nothing unacknowledged may show up half-written (read atomicity across the crash). The same
check against a volatile cluster (kv.log = "none") must find losses: the checker catches what it
guards against.
"""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import redis

from conftest import RAMPART, ROOT, Cluster, stop_cluster, wait_gone

LOAD = ROOT / "tests" / "durability_load.py"
WRITERS = 3
LOAD_SECONDS = 30  # upper bound; the test kills the cluster long before
# Checkpoints start every megabyte of log, so crashes land in the middle of some.
DURABLE = {"checkpoint_log_bytes": '"1MiB"'}


def start_writers(cluster, ledger_dir, keep_going=False, first_writer=0):
    """WRITERS load processes, ids first_writer..: each id writes keys of its own."""
    procs, ledgers = [], []
    for w in range(first_writer, first_writer + WRITERS):
        ledger = ledger_dir / f"ledger-{w}.jsonl"
        ledgers.append(ledger)
        procs.append(subprocess.Popen(
            [sys.executable, str(LOAD), "--port", str(cluster.proxy["port"]), "--writer", str(w),
             "--seconds", str(LOAD_SECONDS), "--ledger", str(ledger)]
            + (["--keep-going"] if keep_going else []),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return procs, ledgers


def wait_writers(procs):
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def acked_ops(ledgers, at_least):
    """Waits (bounded) until the writers acknowledged at_least operations in all."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        n = sum(line.startswith('{"ack"') for path in ledgers if path.exists()
                for line in path.read_text().splitlines())
        if n >= at_least:
            return n
        time.sleep(0.05)
    pytest.fail(f"the writers acknowledged fewer than {at_least} operations in 30 s")


def read_ledger(path):
    tried, acked = {}, set()
    for line in path.read_text().splitlines():
        e = json.loads(line)
        if "ack" in e:
            acked.add(e["ack"])
        else:
            tried[e["try"]] = e
    return tried, acked


def check_ledgers(r, ledgers, other_keys=0):
    """Everything the ledgers say against what the cluster holds (which has other_keys keys
    that no ledger knows of). Returns the problems."""
    problems = []
    keys_acked, keys_tried = set(), set()
    for path in ledgers:
        tried, acked = read_ledger(path)
        counters, group = {}, []
        for n, e in sorted(tried.items()):
            ok = n in acked
            keys_tried.update(e["keys"])
            if ok:
                keys_acked.update(e["keys"])
            if e["op"] == "mset":
                values = [v.decode() if v is not None else None for v in r.mget(e["keys"])]
                if ok and values != [e["value"]] * 3:
                    problems.append(f"acknowledged MSET {e['keys']} = {e['value']} reads {values}")
                if not ok and values not in ([e["value"]] * 3, [None] * 3):
                    problems.append(f"unacknowledged MSET {e['keys']} reads half-written: {values}")
            elif e["op"] == "group":
                group.append((int(e["value"]), ok))
            elif e["op"] == "incr":
                acked_n, tried_n = counters.get(e["keys"][0], (0, 0))
                counters[e["keys"][0]] = (acked_n + ok, tried_n + 1)
            else:
                got = r.hget(e["keys"][0], e["field"])
                if ok and got != e["value"].encode():
                    problems.append(f"acknowledged HSET {e['keys'][0]} {e['field']} reads {got}")
        for key, (acked_n, tried_n) in counters.items():
            value = int(r.get(key) or 0)
            if not acked_n <= value <= tried_n:
                problems.append(f"counter {key} is {value}: {acked_n} increments acknowledged, "
                                f"{tried_n} sent")
        if group:
            w = json.loads(path.read_text().splitlines()[0])["keys"][0].split(":")[1]
            values = r.mget([f"g:{w}:{s}" for s in "abc"])
            newest_acked = max((v for v, ok in group if ok), default=None)
            if len(set(values)) != 1:
                problems.append(f"group g:{w} is fractured after the crash: {values}")
            elif values[0] is None:
                if newest_acked is not None:
                    problems.append(f"group g:{w} is gone; {newest_acked} was acknowledged")
            elif newest_acked is not None and int(values[0]) < newest_acked:
                problems.append(f"group g:{w} reads {values[0]}; {newest_acked} was acknowledged")
    dbsize = r.dbsize() - other_keys
    if not len(keys_acked) <= dbsize <= len(keys_tried):
        problems.append(f"DBSIZE {dbsize}: {len(keys_acked)} keys acknowledged, "
                        f"{len(keys_tried)} written at all, {r.exists(*keys_tried)} of them exist")
    return problems


def wait_every_partition_answers(r, timeout_s=10.0):
    """After a kv-node restarted under a running proxy: the proxy called its partitions
    unreachable while it was down and tries them again at its next probe, within 100 ms of
    the node listening (docs/proxy.md); until then their commands fail at once. Waits
    (bounded) until DBSIZE, which asks every partition, answers."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            r.dbsize()
            return
        except redis.exceptions.ResponseError as e:
            if "Unavailable" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def crash_under_load(cluster, ledger_dir, ops_before_crash, during=None, first_writer=0):
    """Writers on, the crash after ops_before_crash acknowledged operations (`during`, if given,
    runs after half of them, under load), the restart; returns the ledgers."""
    ledger_dir.mkdir(exist_ok=True)
    procs, ledgers = start_writers(cluster, ledger_dir, keep_going=during is not None,
                                   first_writer=first_writer)
    try:
        if during is not None:
            acked_ops(ledgers, ops_before_crash // 2)
            during()
        acked_ops(ledgers, ops_before_crash)
        cluster.crash()
    finally:
        wait_writers(procs)
    cluster.start()
    return ledgers


@pytest.fixture
def durable_cluster(tmp_path):
    c = Cluster("ucx", tmp_path, proxy=True, kv_settings=DURABLE)
    try:
        c.start()
        yield c
    finally:
        stop_cluster(c)


def test_sigkill_of_every_process_loses_nothing_acknowledged(durable_cluster, tmp_path):
    c = durable_cluster
    ledgers = crash_under_load(c, tmp_path / "first", ops_before_crash=1500)
    r = redis.Redis(host=c.proxy["host"], port=c.proxy["port"], socket_timeout=30)
    assert check_ledgers(r, ledgers) == [], c.stderr()
    # A second crash of the recovered cluster (its log now starts after checkpoints).
    ledgers += crash_under_load(c, tmp_path / "second", ops_before_crash=1000,
                                first_writer=WRITERS)
    r = redis.Redis(host=c.proxy["host"], port=c.proxy["port"], socket_timeout=30)
    assert check_ledgers(r, ledgers) == [], c.stderr()
    assert " checkpoint " in c.stderr() and "recovered" in c.stderr()


def test_the_checker_finds_the_losses_of_a_volatile_cluster(tmp_path):
    c = Cluster("ucx", tmp_path, proxy=True, kv_settings={"log": '"none"'})
    try:
        c.start()
        ledgers = crash_under_load(c, tmp_path / "ledgers", ops_before_crash=300)
        r = redis.Redis(host=c.proxy["host"], port=c.proxy["port"], socket_timeout=30)
        problems = check_ledgers(r, ledgers)
        assert any("acknowledged MSET" in p for p in problems), problems
        assert any("DBSIZE 0" in p for p in problems), problems
    finally:
        stop_cluster(c)


def test_a_killed_kv_node_is_restarted_while_replicas_keep_reads_going(tmp_path):
    c = Cluster("ucx", tmp_path, proxy_settings={"replicas": 2}, kv_settings=DURABLE)
    try:
        c.start()
        r = redis.Redis(host=c.proxy["host"], port=c.proxy["port"], socket_timeout=30)
        r.mset({f"pre:{i}": i for i in range(500)})
        victim = c.node_pids[2]

        def kill_node_2():
            os.kill(victim, signal.SIGKILL)
            # Reads of every key keep succeeding while node 2 is down and restarting.
            for _ in range(3):
                values = r.mget([f"pre:{i}" for i in range(500)])
                assert values == [str(i).encode() for i in range(500)]
            c.wait_restarted("node 2")

        procs, ledgers = start_writers(c, tmp_path, keep_going=True)
        try:
            acked_ops(ledgers, 300)
            kill_node_2()
            acked_before = acked_ops(ledgers, 0)
            acked_ops(ledgers, acked_before + 300)  # writes go on once it is back
            for p in procs:
                p.terminate()
        finally:
            wait_writers(procs)
        assert c.proc.poll() is None
        assert f"node 2 (pid {victim}) died" in c.stderr()
        assert check_ledgers(r, ledgers, other_keys=500) == []
    finally:
        stop_cluster(c)



def test_a_log_volume_survives_a_storage_node_kill_a_crash_and_a_lost_host(tmp_path):
    """kv.log = "volume": the logs live on the storage tier. A storage node is SIGKILLed in the
    middle of the load (`up` restarts it; the volumes read around it), then every kv-node and
    the proxy; after the restart nothing acknowledged is missing. Then a kv-node whose host is
    "lost" (it keeps no local state at all: there is no data directory) comes back on the
    volume alone."""
    c = Cluster("ucx", tmp_path, proxy=True, volume_logs=True, kv_settings=DURABLE)
    try:
        c.start()
        assert sorted(c.storage_pids) == [0, 1, 2], c.stdout()

        def kill_a_storage_node():
            os.kill(c.storage_pids[1], signal.SIGKILL)

        ledgers = crash_under_load(c, tmp_path / "ledgers", ops_before_crash=800,
                                   during=kill_a_storage_node)
        r = redis.Redis(host=c.proxy["host"], port=c.proxy["port"], socket_timeout=30)
        assert check_ledgers(r, ledgers) == [], c.stderr()
        assert not c.data_dir.exists()  # nothing of the kv tier on the local disk

        os.kill(c.node_pids[1], signal.SIGKILL)
        c.wait_restarted("node 1")
        wait_every_partition_answers(r)
        assert check_ledgers(r, ledgers) == [], c.stderr()
    finally:
        stop_cluster(c)
