"""Read atomicity through the Redis-protocol proxy: tests/proxy_checker.py
(2 writer processes doing MSET, 2 reader processes doing MGET, redis-py)
against the proxy with RAMP isolation must see zero fractured reads, over
tcp and ucx. Plain redis-server, whose MSET is atomic, validates the checker
the same way; SETs one by one (--split-writes) and a proxy with
`isolation = "none"` must fracture, so the checker is not vacuous.
"""
import pathlib
import subprocess
import sys

import pytest

from conftest import TARGETS_UCX, make_target
from proxy_checker import checked_summary, until_fractured

CHECKER = pathlib.Path(__file__).resolve().parent / "proxy_checker.py"
SECONDS = 5            # per run
READS = 20_000         # per reader, at most
MIN_READS = 200        # a run that read less than this proves nothing


def check(target, *extra, seconds=SECONDS):
    cmd = [sys.executable, str(CHECKER), "--host", target.host, "--port", str(target.port),
           "--seconds", str(seconds), "--reads", str(READS), *extra]
    if target.password:
        cmd += ["--password", target.password]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 90)
    return r.returncode, checked_summary(r, MIN_READS)


@pytest.mark.proxy_targets(*TARGETS_UCX)
def test_mset_mget_are_read_atomic(redis_target):
    code, summary = check(redis_target)
    assert summary["fractured"] == 0, summary["examples"]
    assert code == 0


@pytest.mark.proxy_targets("redis")
def test_checker_sees_non_atomic_writes(redis_target):
    code, summary = check(redis_target, "--split-writes", "--expect-fractures")
    assert summary["fractured"] > 0, summary
    assert code == 0


def test_proxy_without_isolation_fractures(tmp_path):
    """rampart only: a proxy with `isolation = "none"` (and aggregation off)
    writes an MSET's keys without RAMP, so concurrent MGETs fracture. Small key
    sets make the overlap likely; a few bounded runs until one fractures. Two
    workers, so that writers and readers run concurrently: one worker runs a
    turn's MSETs and MGETs together and waits for all of them, which leaves
    little room for a read to land between an MSET's keys."""
    target = make_target("rampart", tmp_path, proxy_settings={
        "isolation": '"none"', "aggregate": "false", "workers": "2"})
    try:
        target.start()
        assert target.cluster.proxy["aggregation"] == "off"
        fractured = until_fractured(lambda: check(
            target, "--keys-per-writer", "6", "--expect-fractures", seconds=8))
        assert fractured > 0, "no fractured read through a proxy without isolation"
    finally:
        target.stop()
