"""The read-atomic checker (`rampart check read-atomic`) against real kv-node
processes started by `rampart up`, for every isolation mode on both transports
(tcp: plain sockets; ucx: UCX two-sided messages, the "msg" mode).

ramp and s2pl must show zero fractured reads over 100k transactions in all
(split over the transports); `none` must be shown to fracture, so the checker
is not vacuous. Every run is bounded in time as well as in count.
"""
import pytest

from conftest import check_read_atomic

TRANSACTIONS = 50_000   # per mode and transport: 100k per mode over tcp + ucx
SECONDS = 60            # upper bound per run


def check(cluster, isolation, *extra):
    return check_read_atomic(cluster, isolation, "--transport", cluster.backend, *extra,
                             timeout_s=SECONDS + 60)


@pytest.mark.parametrize("isolation", ["ramp", "s2pl"])
def test_no_fractured_reads(cluster, isolation):
    r = check(cluster, isolation, "--transactions", str(TRANSACTIONS), "--seconds", str(SECONDS))
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "fractured" in r.stdout


def test_no_isolation_fractures(cluster):
    r = check(cluster, "none", "--expect-fractures", "--seconds", "20")
    print(r.stdout)
    assert r.returncode == 0, f"no fractured read without isolation:\n{r.stdout}{r.stderr}"
