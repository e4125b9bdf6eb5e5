"""rampart over several hosts: network namespaces joined by a bridge
(tests/netbed.py), one cluster file, `rampart up` on every host
(tests/multihost.py). Hosts 10.213.0.1..7 exist only inside the bed.

- Read atomicity through two proxies on two hosts at once, over tcp and over
  ucx with UCX's own choice of transports, and isolation = none fracturing in
  the same setup (the checker is not vacuous there).
- The one-sided paths across hosts: bench txn and the read-atomic check with
  GET* and PUT+ (UCX emulates one-sided operations over tcp here), and an
  erasure-coded volume over storage nodes on three hosts, copied through NBD.
- Network faults under load (tests/multihost_load.py keeps a ledger): a host
  cut off for 4 s and healed, a host whose processes are all SIGKILLed and
  started again; no request waits past proxy.timeout_ms, failures name the
  partition, reads fail over to the other replica, the cluster serves again
  without a restart, and every acknowledged write reads back.
- Peer authentication: a client with the cluster secret is served, one with
  another secret or none is refused and logged, and the secret never crosses
  the wire (a capture of the client host's frames).
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

import netbed
from multihost import RAMPART, HostCluster
from proxy_checker import checked_summary, until_fractured

CHECKER = pathlib.Path(__file__).resolve().parent / "proxy_checker.py"
CAPTURE = pathlib.Path(__file__).resolve().parent / "capture.py"
CLIENT = 6  # the client host: no rampart process
SECONDS = 5
MIN_READS = 200


@pytest.fixture
def bed():
    why = netbed.available()
    assert not why, f"the multi-host tests need network namespaces: {why}"
    with netbed.NetBed(7) as b:
        yield b


def check_through(cluster, *extra, seconds=SECONDS):
    """tests/proxy_checker.py from the client host against every proxy at once."""
    cmd = [sys.executable, CHECKER, "--seconds", seconds, "--reads", 20_000, *extra]
    for address in cluster.proxy_addresses():
        cmd += ["--server", address]
    r = cluster.bed.run(CLIENT, cmd, timeout=seconds + 90)
    try:
        summary = checked_summary(r, MIN_READS)
    except AssertionError:
        print(cluster.logs())
        raise
    assert len(summary["servers"]) == 2
    return r.returncode, summary


@pytest.mark.parametrize("backend", ["tcp", "ucx"])
def test_read_atomic_through_two_proxies_on_two_hosts(bed, tmp_path, backend):
    cluster = HostCluster(bed, tmp_path, backend=backend, proxy_hosts=[4, 5])
    cluster.start()
    # Each host started its own share: host 0 its kv-node only, host 4 its proxy.
    assert cluster.node_pids(0).keys() == {0}
    assert "proxy 0: pid" in cluster.stdout(4) and "node " not in cluster.stdout(4)
    code, summary = check_through(cluster)
    assert summary["fractured"] == 0, summary["examples"]
    assert code == 0
    cluster.stop()


def test_without_isolation_reads_fracture_across_hosts(bed, tmp_path):
    cluster = HostCluster(bed, tmp_path, backend="tcp", proxy_hosts=[4, 5],
                          proxy_settings={"isolation": '"none"', "aggregate": "false"})
    cluster.start()
    fractured = until_fractured(lambda: check_through(
        cluster, "--keys-per-writer", "6", "--expect-fractures", seconds=8))
    assert fractured > 0, "no fractured read through proxies without isolation"
    cluster.stop()


def test_one_sided_paths_across_hosts(bed, tmp_path):
    """GET* and PUT+ from a client host to kv-nodes on four others, over UCX's
    tcp transport: bench txn runs clean and the read-atomic check finds no
    fractured read (the one-sided reads really happened: the bench reports
    slot reads)."""
    cluster = HostCluster(bed, tmp_path, backend="ucx", proxy_hosts=[])
    cluster.start()
    json_path = tmp_path / "txn.json"
    r = cluster.rampart(CLIENT, ["bench", "txn", "--get", "read", "--put", "ring",
                                 "--seconds", "3", "--keys", "2000", "--txn-size", "4",
                                 "--read-ratio", "0.9", "--threads", "2", "--json", json_path])
    assert r.returncode == 0, (r.stdout, r.stderr, cluster.logs())
    run = json.loads(json_path.read_text())["results"]
    print(run)
    assert run["errors"] == 0, run
    assert run["transactions"] > 100, run
    assert run["slot_reads"] > 0, run  # GET* read slots one-sidedly across hosts
    r = cluster.rampart(CLIENT, ["check", "read-atomic", "--get", "read", "--put", "ring",
                                 "--seconds", "4", "--keys", "16", "--set-size", "4"])
    print(r.stdout, r.stderr)
    assert r.returncode == 0, (r.stdout, r.stderr, cluster.logs())
    m = re.search(r"writes (\d+)  reads (\d+)  fractured (\d+)  errors (\d+)", r.stdout)
    assert m, r.stdout
    writes, reads, fractured, errors = map(int, m.groups())
    assert fractured == 0 and errors == 0 and writes > 0 and reads > 0
    slots = re.search(r"GET\*: slot reads (\d+)", r.stdout)
    assert slots and int(slots.group(1)) > 0, r.stdout
    cluster.stop()


def test_volume_over_storage_nodes_on_three_hosts(bed, tmp_path):
    """A volume striped over storage nodes on hosts 0, 1 and 2, served over
    NBD on the client host: a file copied in and back out is byte-identical,
    and every stripe's parity checks out."""
    cluster = HostCluster(bed, tmp_path, backend="ucx", kv_hosts=[3], proxy_hosts=[],
                          storage_hosts=[0, 1, 2])
    cluster.start()
    source = tmp_path / "in.bin"
    source.write_bytes(os.urandom(24 << 20))
    nbd_out = tmp_path / "nbd.out"
    with open(nbd_out, "wb") as out:
        nbd = bed.popen(CLIENT, [RAMPART, "--config", cluster.config, "nbd", "--volume", "vol",
                                 "--port", "0"], stdout=out, stderr=subprocess.STDOUT)
    try:
        uri = netbed.wait_for(lambda: next(
            (w for w in nbd_out.read_text().split() if w.startswith("nbd://")), None), 20)
        assert uri, nbd_out.read_text()
        copy_in = bed.run(CLIENT, ["nbdcopy", source, uri], timeout=120)
        assert copy_in.returncode == 0, copy_in.stderr
        back = tmp_path / "back.bin"
        copy_out = bed.run(CLIENT, ["nbdcopy", "--", uri, "-"], timeout=120,
                           capture_output=False, stdout=open(back, "wb"))
        assert copy_out.returncode == 0
        assert back.stat().st_size >= source.stat().st_size
        with open(back, "rb") as b:
            assert b.read(source.stat().st_size) == source.read_bytes()
    finally:
        nbd.send_signal(2)
        nbd.wait(timeout=20)
    verify = cluster.rampart(CLIENT, ["volume", "verify", "vol"], timeout=120)
    assert verify.returncode == 0, (verify.stdout, verify.stderr)
    cluster.stop()


# ---- network faults ----

LOAD = pathlib.Path(__file__).resolve().parent / "multihost_load.py"
TIMEOUT_MS = 5000          # proxy.timeout_ms: the longest a request may take
UNREACHABLE_AFTER_MS = 1000
ERROR = re.compile(r"rampart: .*partition \d+ \(10\.213\.0\.\d+:7000\)")


def fault_cluster(bed, tmp_path, backend):
    """4 kv-node hosts, a proxy on host 4, every key on 2 nodes."""
    return HostCluster(bed, tmp_path, backend=backend, proxy_hosts=[4],
                       proxy_settings={"replicas": 2, "timeout_ms": TIMEOUT_MS},
                       client_settings={"unreachable_after_ms": UNREACHABLE_AFTER_MS})


def start_load(cluster, seconds, out_path):
    out = open(out_path, "wb")
    return cluster.bed.popen(CLIENT, [sys.executable, LOAD, "--server",
                                      cluster.proxy_addresses()[0], "--seconds", seconds],
                             stdout=out, stderr=subprocess.STDOUT), out


def finish_load(proc, out, out_path, seconds):
    proc.wait(timeout=seconds + 120)
    out.close()
    text = out_path.read_text()
    assert proc.returncode == 0, text[-3000:]
    return json.loads(text.strip().splitlines()[-1])


def judge(result, fault_at, healed_at, cluster):
    """The outcomes item 5 of the multi-host issue asks for."""
    ops = result["ops"]
    # Nothing waits longer than the configured timeout: a request for the lost
    # partition fails within it, and one that does not need it is not held.
    slowest = max(ops, key=lambda o: o[1])
    assert slowest[1] < TIMEOUT_MS / 1000, ("a request took longer than proxy.timeout_ms", slowest)
    # Every failure is a clear error naming the partition, never a hang or a
    # dropped connection.
    failures = [o for o in ops if not o[4]]
    assert failures, "no request failed: the fault did not happen"
    for o in failures:
        assert ERROR.search(o[5]), o
    # Detection takes unreachable_after and a connection attempt's grace.
    settled = [o for o in ops if fault_at + UNREACHABLE_AFTER_MS / 1000 + 1.0 < o[0] < healed_at]
    reads = [o for o in settled if o[2] == "get"]
    writes = [o for o in settled if o[2] == "set"]
    # Reads fail over to the other replica; writes of keys without a copy
    # there go on.
    assert reads and all(o[4] for o in reads), [o for o in reads if not o[4]][:5]
    assert any(o[4] for o in writes), "no write succeeded while one host was gone"
    assert any(not o[4] for o in writes), "no write needed the lost host"
    # Served again without a restart of anything but the lost host.
    after = [o for o in ops if o[0] > healed_at + 3]
    assert after and all(o[4] for o in after), [o for o in after if not o[4]][:5]
    # Nothing acknowledged was lost.
    for k, seq in result["acked"].items():
        final = result["final"][k]
        assert final is not None and final >= seq, (k, seq, final, cluster.logs())


def under_load(cluster, fault, recover):
    """Runs the load for 14 s; after 3 s `fault()`, 4 s later `recover()`
    (which returns once the host is back). Returns the load's result and the
    times the fault began and ended."""
    seconds = 14
    out_path = cluster.tmp / "load.json"
    load, out = start_load(cluster, seconds, out_path)
    try:
        time.sleep(3)
        fault_at = time.time()
        fault()
        time.sleep(4)
        recover()
        healed_at = time.time()
        return finish_load(load, out, out_path, seconds), fault_at, healed_at
    finally:
        if load.poll() is None:
            load.kill()


@pytest.mark.parametrize("backend", ["tcp", "ucx"])
def test_a_host_cut_off_then_healed(bed, tmp_path, backend):
    """Host 1's link goes down for 4 s under load, then up again."""
    cluster = fault_cluster(bed, tmp_path, backend)
    cluster.start()
    try:
        result, fault_at, healed_at = under_load(cluster, lambda: bed.partition(1),
                                                 lambda: bed.heal(1))
    finally:
        bed.heal(1)
    judge(result, fault_at, healed_at, cluster)
    info = bed.run(CLIENT, ["redis-cli", "-h", bed.addr(4), "-p", "6380", "info", "stats"])
    assert "rampart_unreachable_partitions:0" in info.stdout, info.stdout
    cluster.stop()


@pytest.mark.parametrize("backend", ["tcp", "ucx"])
def test_a_host_whose_processes_are_all_killed(bed, tmp_path, backend):
    """Every process of host 2 is SIGKILLed under load (a host that lost
    power); `up` there starts again 4 s later and recovers from the logs."""
    cluster = fault_cluster(bed, tmp_path, backend)
    cluster.start()

    def kill():
        killed = bed.kill_host(2)
        assert len(killed) >= 2, killed  # its `up` and its kv-node
        cluster.forget_host(2)

    result, fault_at, healed_at = under_load(cluster, kill, lambda: cluster.start_host(2))
    judge(result, fault_at, healed_at, cluster)
    cluster.stop()


# ---- peer authentication ----

def test_only_peers_with_the_cluster_secret_are_served(bed, tmp_path):
    """kv-nodes and storage nodes with a cluster secret serve a client on
    another host that holds it, and refuse, with a line in their log, one with
    another secret or none; the secret itself never crosses the wire."""
    secret = "a4d1c0ffee5eed0ddba11c0de1337f00"
    cluster = HostCluster(bed, tmp_path, backend="ucx", kv_hosts=[0, 1], proxy_hosts=[4],
                          storage_hosts=[2], secret=secret)
    cluster.start()
    wrong = tmp_path / "wrong.toml"
    wrong_secret = tmp_path / "wrong.secret"
    HostCluster.write_secret(wrong_secret, "f" * 32)
    wrong.write_text(cluster.config.read_text().replace(str(cluster.secret_file),
                                                        str(wrong_secret)))
    none = tmp_path / "none.toml"
    none.write_text(cluster.config.read_text().replace(
        f'secret_file = "{cluster.secret_file}"\n', ""))

    # The client host's traffic is recorded while it writes: its payload is
    # there (the capture works), the secret is not.
    pcap = tmp_path / "client.frames"
    capture = bed.popen(CLIENT, [sys.executable, CAPTURE, "--seconds", 8, "--out", pcap],
                        stdout=subprocess.PIPE, text=True)
    assert capture.stdout.readline().strip() == "capturing"
    ok = cluster.rampart(CLIENT, ["check", "write", "--keys", "a,b", "--value", "v1-seen-on-the-wire"])
    capture.wait(timeout=30)
    assert ok.returncode == 0, (ok.stdout, ok.stderr)
    frames = pcap.read_bytes()
    assert b"v1-seen-on-the-wire" in frames
    assert secret.encode() not in frames
    for config, expected in ((wrong, "failed to prove the cluster secret"),
                             (none, "requires the cluster secret, and this process has none")):
        bad = cluster.rampart(CLIENT, ["check", "write", "--keys", "a,b", "--value", "v2"],
                              config=config)
        assert bad.returncode != 0, (bad.stdout, bad.stderr)
        assert expected in bad.stderr, bad.stderr
    # A storage node serves the same way: a connection (with the handshake)
    # with the secret, none with another.
    good = cluster.rampart(CLIENT, ["bench", "connect", "--storage-node", "0", "--count", "5",
                                    "--json", tmp_path / "c1.json"])
    assert good.returncode == 0, (good.stdout, good.stderr)
    bad = cluster.rampart(CLIENT, ["bench", "connect", "--storage-node", "0", "--count", "5",
                                   "--json", tmp_path / "c2.json"], config=wrong)
    assert bad.returncode == 1 and "failed to prove the cluster secret" in bad.stdout, bad.stdout
    assert "refused 10.213.0.7" in cluster.stderr(2), cluster.stderr(2)
    # The nodes logged each refusal, naming the client host.
    logs = cluster.stderr(0) + cluster.stderr(1)
    assert re.search(r"refused 10\.213\.0\.7:\d+: failed to prove the cluster secret", logs), logs
    # Nothing of the refused writes is there; the good one is.
    read = cluster.rampart(CLIENT, ["check", "read", "--keys", "a,b"])
    assert read.returncode == 0, (read.stdout, read.stderr)
    assert "v2" not in read.stdout and "a=v1-seen-on-the-wire" in read.stdout, read.stdout
    # The proxy holds the secret too: Redis clients are served. (It places
    # keys on its own ring, not as the native client does: its own keys.)
    cli = ["redis-cli", "-h", bed.addr(4), "-p", "6380"]
    assert bed.run(CLIENT, cli + ["mset", "p", "1", "q", "2"]).stdout.strip() == "OK"
    r = bed.run(CLIENT, cli + ["mget", "p", "q"])
    assert r.stdout.split() == ["1", "2"], r.stdout
    assert secret not in cluster.logs()
    cluster.stop()
