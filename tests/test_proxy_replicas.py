"""The proxy with replicas (proxy.replicas = 2): every key is written to two
nodes in one transaction; when a node dies, reads of its keys fail over to the
other replica and keep returning the written values, and writes that would
need the dead node fail with an error naming it while the proxy keeps serving.

`rampart up` stops the whole cluster when a child dies, so this test runs the
kv-nodes and the proxy as separate processes (`rampart kv-node`, `rampart
proxy`) and kills one node by PID.
"""
import os
import signal
import socket
import subprocess
import time

import pytest
import redis

from conftest import RAMPART, cluster_toml, free_ports, wait_gone

START_TIMEOUT_S = 20


def wait_port(port, proc, timeout_s=START_TIMEOUT_S):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"process exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"nothing listening on {port} after {timeout_s} s")


@pytest.fixture
def replicated(tmp_path):
    ports = free_ports(5)
    config = tmp_path / "replicas.toml"
    config.write_text(cluster_toml("tcp", ports[:4], proxy_port=ports[4],
                                   proxy_settings={"replicas": 2}))
    procs = {}
    try:
        for node in range(4):
            log = open(tmp_path / f"node{node}.log", "wb")
            procs[node] = subprocess.Popen(
                [str(RAMPART), "--config", str(config), "kv-node", "--id", str(node)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        for node in range(4):
            wait_port(ports[node], procs[node])
        log = open(tmp_path / "proxy.log", "wb")
        procs["proxy"] = subprocess.Popen([str(RAMPART), "--config", str(config), "proxy"],
                                          stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        wait_port(ports[4], procs["proxy"])
        yield ports[4], procs, tmp_path
    finally:
        for p in procs.values():
            if p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
        left = wait_gone([p.pid for p in procs.values()], timeout_s=10)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        for p in procs.values():
            p.wait(timeout=10)


def test_reads_fail_over_to_the_other_replica(replicated):
    port, procs, tmp_path = replicated
    r = redis.Redis(port=port, decode_responses=True, socket_timeout=30)
    keys = [f"rep:{i}" for i in range(200)]
    for start in range(0, len(keys), 20):
        chunk = keys[start:start + 20]
        assert r.mset({k: f"v-{k}" for k in chunk})
    assert r.mget(keys) == [f"v-{k}" for k in keys]
    assert r.dbsize() == len(keys)  # two copies each, counted once
    # Every write answered is on both copies: WAIT says one other replica has it, at once.
    started = time.monotonic()
    assert r.execute_command("WAIT", 1, 0) == 1
    assert r.execute_command("WAIT", 5, 200) == 1
    assert time.monotonic() - started < 5

    os.kill(procs[1].pid, signal.SIGKILL)
    procs[1].wait(timeout=10)
    # Every key is still readable, one by one and atomically in groups.
    for k in keys:
        assert r.get(k) == f"v-{k}"
    assert r.mget(keys) == [f"v-{k}" for k in keys]
    info = r.info("stats")
    assert info["rampart_failovers"] > 0

    # Writes that need the dead node fail with an error; the others succeed,
    # and the proxy keeps serving.
    failed = succeeded = 0
    for k in keys[:60]:
        try:
            r.set(k, "new")
            succeeded += 1
        except redis.ResponseError as e:
            assert "rampart" in str(e), e
            failed += 1
    assert failed > 0 and succeeded > 0, (failed, succeeded)
    assert r.ping()
    log = (tmp_path / "proxy.log").read_text(errors="replace")
    assert procs["proxy"].poll() is None, log
