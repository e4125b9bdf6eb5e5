"""Erasure-coded volumes end to end: 4 `rampart storage-node` processes (files
under tmp_path), a volume over them (k = 3 data cells + 1 parity per stripe),
`rampart nbd --volume` and Debian's NBD clients, and `rampart volume
info|verify|rebuild`. Every process is started and stopped by PID.

- A 24 MiB file copied in and out byte-identical; a storage node SIGKILLed in
  the middle of the copy-in: the copy succeeds, reads back identical
  (degraded); verify cannot check stripes with a node down (it says
  FailedPrecondition, naming the node); the node, replaced by an empty file,
  stays down until `volume rebuild` restores it; then verify is clean and the
  data reads back identical with a different node killed.
- The write hole: `rampart nbd` SIGKILLed in the middle of random 4 KiB
  (partial-stripe) writes leaves dirty groups in the intent log; the next
  open resyncs them and verify is clean.
- Online rebuild (`rampart nbd --rebuild-node`) while nbdcopy writes.
- verify lists stripes whose cells were corrupted behind the volume's back;
  rebuilding the node holding them repairs them.
- A node replaced by an empty file while nothing was written (no volume
  label) is recorded failed at the next open: reads go around it, verify says
  FailedPrecondition, rebuild restores it.
- Clear errors for an unknown volume, unreachable nodes, a volume open in
  another process.
"""
import filecmp
import os
import re
import subprocess
import time

import pytest

from conftest import RAMPART, free_ports
from storage_nodes import NbdProcess, StorageNode, storage_toml

VOLUME = "data"
VOLUME_BYTES = 24 << 20          # 512 stripes of 3 x 16 KiB
STRIPES = VOLUME_BYTES // (3 * 16 << 10)
NODE_MIB = 16                    # 1 MiB metadata + 8 MiB of cells per node


class VolumeCluster:
    """Storage nodes 0..3 and volume `data` of volume_bytes over them."""

    def __init__(self, tmp_path, volume_bytes=VOLUME_BYTES):
        self.tmp_path = tmp_path
        self.config = tmp_path / "cluster.toml"
        ports = free_ports(4)
        files = [tmp_path / f"node{i}.img" for i in range(4)]
        node_mib = max(NODE_MIB, 2 + (volume_bytes >> 20) // 3)
        self.config.write_text(storage_toml(
            [(i, ports[i], files[i], node_mib) for i in range(4)],
            volumes=[{"name": f'"{VOLUME}"', "size": f'"{volume_bytes >> 20}MiB"',
                      "cell_bytes": '"16KiB"', "nodes": "[0, 1, 2, 3]"}],
            name="pytest-volume", transport_extra="connect_timeout_ms = 2000\n"))
        self.nodes = [StorageNode(self.config, i, ports[i], files[i], tmp_path)
                      for i in range(4)]
        self.servers = []

    def start(self):
        for node in self.nodes:
            node.start()

    def stop(self):
        for server in self.servers:
            server.stop()
        for node in self.nodes:
            node.stop()

    def nbd(self, *args, tag=None):
        """A started `rampart nbd --volume data`."""
        tag = tag or f"nbd{len(self.servers)}"
        server = NbdProcess(["--volume", VOLUME, *args], self.tmp_path, config=self.config,
                            tag=tag)
        self.servers.append(server)
        return server.start()

    def volume(self, *args, timeout_s=60):
        return subprocess.run(
            [str(RAMPART), "--config", str(self.config), "volume", *args],
            capture_output=True, text=True, timeout=timeout_s)


@pytest.fixture
def cluster(tmp_path):
    c = VolumeCluster(tmp_path)
    try:
        c.start()
        yield c
    finally:
        c.stop()


def run(cmd, timeout_s=60, **kwargs):
    p = subprocess.run(cmd, capture_output=True, timeout=timeout_s, **kwargs)
    assert p.returncode == 0, f"{cmd} failed:\n{p.stdout}\n{p.stderr}"
    return p


def read_back(uri, path):
    """The whole export into `path` with nbdcopy, and again with qemu-img."""
    run(["nbdcopy", uri, str(path)])
    copy = path.with_suffix(".qemu")
    run(["qemu-img", "convert", "-f", "raw", "-O", "raw", uri, str(copy)])
    assert filecmp.cmp(path, copy, shallow=False), "nbdcopy and qemu-img read different bytes"


def copy_in_killing(uri, data, node, log):
    """Streams `data` into the export through nbdcopy's stdin, SIGKILLing
    `node` when half of it was sent (so the kill lands between writes that
    went out and writes still to come)."""
    with open(log, "wb") as out:
        copier = subprocess.Popen(["nbdcopy", "-", uri], stdin=subprocess.PIPE, stdout=out,
                                  stderr=subprocess.STDOUT)
    try:
        half = len(data) // 2
        copier.stdin.write(data[:half])
        copier.stdin.flush()
        node.kill()
        copier.stdin.write(data[half:])
        copier.stdin.close()
        copier.wait(timeout=60)
    finally:
        if copier.poll() is None:
            copier.kill()
            copier.wait()
    assert copier.returncode == 0, f"nbdcopy failed with a node down:\n{log.read_text()}"


def test_copy_with_a_node_killed_then_verify_and_rebuild(cluster, tmp_path):
    data = os.urandom(VOLUME_BYTES)
    source = tmp_path / "source.bin"
    source.write_bytes(data)

    # Healthy round trip.
    server = cluster.nbd()
    assert server.uri.endswith(f"/{VOLUME}")
    run(["nbdcopy", str(source), server.uri])
    read_back(server.uri, tmp_path / "healthy.bin")
    assert (tmp_path / "healthy.bin").read_bytes() == data
    # One process at a time (on this host): a verify now is refused, info is not.
    p = cluster.volume("verify", VOLUME)
    assert p.returncode == 1, p.stdout + p.stderr
    assert f"open in another process on this host (pid {server.proc.pid}" in p.stderr, p.stderr
    assert cluster.volume("info", VOLUME).returncode == 0

    # Copy in again (other bytes), storage node 1 SIGKILLed half-way.
    data = bytes(reversed(data))
    source.write_bytes(data)
    copy_in_killing(server.uri, data, cluster.nodes[1], tmp_path / "nbdcopy.log")
    read_back(server.uri, tmp_path / "degraded.bin")
    assert (tmp_path / "degraded.bin").read_bytes() == data, "degraded read-back differs"
    assert server.stop() == 0, server.stderr()

    # Node 1 is down: no stripe can be verified (each has a cell on it).
    p = cluster.volume("verify", VOLUME)
    assert p.returncode == 1, p.stdout + p.stderr
    assert re.search(rf"stripes 0-{STRIPES - 1} not verified: FailedPrecondition: storage node 1 "
                     r"\(127\.0\.0\.1:\d+\) is down", p.stdout), p.stdout + p.stderr

    # Replaced by an empty device: the intent log recorded node 1 as failed,
    # so it stays down (not read) even though it answers again.
    cluster.nodes[1].file.unlink()
    cluster.nodes[1].start()
    p = cluster.volume("info", VOLUME)
    assert p.returncode == 0, p.stderr
    assert re.search(r"^\s+1\s+1\s+127\.0\.0\.1:\d+\s+DOWN: recorded failed", p.stdout, re.M), \
        p.stdout
    assert f"{STRIPES} of k = 3 data cells" in p.stdout, p.stdout
    p = cluster.volume("verify", VOLUME)
    assert p.returncode == 1 and "FailedPrecondition: storage node 1" in p.stdout, p.stdout

    # Rebuild it; progress lines on stderr (not a terminal here).
    p = cluster.volume("rebuild", VOLUME, "--node", "1")
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"rebuild {VOLUME}: stripes {STRIPES}/{STRIPES} (100%)" in p.stderr, p.stderr
    assert re.search(r"MB/s, ETA 0:00", p.stderr), p.stderr
    assert "storage node 1 (127.0.0.1:" in p.stdout and "rebuilt" in p.stdout, p.stdout
    p = cluster.volume("verify", VOLUME)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"{STRIPES} stripes verified, parity consistent" in p.stdout
    p = cluster.volume("info", VOLUME)
    assert "DOWN" not in p.stdout, p.stdout

    # Another node down: the rebuilt cells take part in the reconstruction.
    cluster.nodes[2].kill()
    server = cluster.nbd()
    read_back(server.uri, tmp_path / "after-rebuild.bin")
    assert (tmp_path / "after-rebuild.bin").read_bytes() == data
    assert server.stop() == 0, server.stderr()
    m = re.search(r"cell reads (\d+) healthy, (\d+) degraded", server.stderr())
    assert m and int(m.group(2)) > 0, server.stderr()


def test_online_rebuild_while_a_client_writes(tmp_path):
    """`rampart nbd --rebuild-node` rebuilds a replaced node while nbdcopy
    writes (the volume is 8x larger, so the rebuild takes long enough to
    overlap)."""
    volume_bytes = 8 * VOLUME_BYTES
    cluster = VolumeCluster(tmp_path, volume_bytes)
    try:
        cluster.start()
        # Node 3 dies and a write leaves it out: the intent log records it failed.
        cluster.nodes[3].kill()
        server = cluster.nbd()
        (tmp_path / "small.bin").write_bytes(os.urandom(1 << 20))
        run(["nbdcopy", str(tmp_path / "small.bin"), server.uri])
        assert server.stop() == 0, server.stderr()
        cluster.nodes[3].file.unlink()
        cluster.nodes[3].start()

        data = os.urandom(VOLUME_BYTES)
        (tmp_path / "source.bin").write_bytes(data)
        server = cluster.nbd("--rebuild-node", "3")
        run(["nbdcopy", str(tmp_path / "source.bin"), server.uri])
        deadline = time.monotonic() + 60
        while "answered" not in server.stderr() and time.monotonic() < deadline:
            assert server.proc.poll() is None, server.stderr()
            time.sleep(0.1)
        m = re.search(r"answered (\d+) client calls during the rebuild", server.stderr())
        assert m and int(m.group(1)) > 0, server.stderr()
        stripes = volume_bytes // (3 * 16 << 10)
        assert f"rebuild {VOLUME}: stripes {stripes}/{stripes} (100%)" in server.stderr()
        run(["nbdcopy", server.uri, str(tmp_path / "out.bin")])
        out = (tmp_path / "out.bin").read_bytes()
        assert out[:VOLUME_BYTES] == data
        assert out[VOLUME_BYTES:] == bytes(volume_bytes - VOLUME_BYTES)
        assert server.stop() == 0, server.stderr()

        p = cluster.volume("verify", VOLUME)
        assert p.returncode == 0, p.stdout + p.stderr
        cluster.nodes[0].kill()  # node 3's rebuilt cells now take part in every read
        server = cluster.nbd()
        run(["nbdcopy", server.uri, str(tmp_path / "degraded.bin")])
        assert (tmp_path / "degraded.bin").read_bytes() == out
    finally:
        cluster.stop()


def test_killed_server_leaves_no_write_hole(cluster, tmp_path):
    server = cluster.nbd()
    fio = subprocess.Popen(
        ["fio", "--name=hole", "--ioengine=nbd", f"--uri={server.uri}", "--rw=randwrite",
         "--bs=4k", "--iodepth=16", f"--size={VOLUME_BYTES}", "--time_based", "--runtime=30",
         "--randrepeat=0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        time.sleep(2.5)
        assert fio.poll() is None, fio.stdout.read().decode()
        server.kill()  # in the middle of partial-stripe writes
        fio.communicate(timeout=30)
    finally:
        if fio.poll() is None:
            fio.kill()
            fio.wait()

    # The writes left groups dirty: the intent log says so (info changes nothing).
    p = cluster.volume("info", VOLUME)
    assert p.returncode == 0, p.stderr
    m = re.search(r"intent log\s+(\d+) dirty groups", p.stdout)
    assert m and int(m.group(1)) > 0, p.stdout

    # The next open resyncs them; then every stripe is consistent.
    server = cluster.nbd()
    assert re.search(r"resynced \d+ stripes", server.stderr()), server.stderr()
    assert server.stop() == 0, server.stderr()
    p = cluster.volume("info", VOLUME)
    assert re.search(r"intent log\s+0 dirty groups", p.stdout), p.stdout
    p = cluster.volume("verify", VOLUME)
    assert p.returncode == 0, p.stdout + p.stderr


def test_verify_lists_corrupted_stripes_and_rebuild_repairs_them(cluster, tmp_path):
    data = os.urandom(VOLUME_BYTES)
    (tmp_path / "source.bin").write_bytes(data)
    server = cluster.nbd()
    run(["nbdcopy", str(tmp_path / "source.bin"), server.uri])
    assert server.stop() == 0, server.stderr()
    # Flip bytes of node 2's cells of stripes 5 and 6 behind the volume's back
    # (through the file: the node reads it through the same page cache).
    cell, metadata = 16 << 10, 1 << 20
    with open(cluster.nodes[2].file, "r+b") as f:
        for stripe in (5, 6):  # node 2 holds the parity of 5, a data cell of 6
            f.seek(metadata + stripe * cell + 100)
            f.write(b"\xff\x00\xff")
    p = cluster.volume("verify", VOLUME)
    assert p.returncode == 1, p.stdout + p.stderr
    assert re.findall(r"^stripe (\d+): Corruption", p.stdout, re.M) == ["5", "6"], p.stdout
    assert f"2 of {STRIPES} stripes have bad parity" in p.stdout, p.stdout
    # Node 2's cells, recomputed from the others, repair them.
    p = cluster.volume("rebuild", VOLUME, "--node", "2")
    assert p.returncode == 0, p.stdout + p.stderr
    p = cluster.volume("verify", VOLUME)
    assert p.returncode == 0, p.stdout + p.stderr
    server = cluster.nbd()
    run(["nbdcopy", server.uri, str(tmp_path / "out.bin")])
    assert (tmp_path / "out.bin").read_bytes() == data


def test_node_replaced_while_idle_is_detected(cluster, tmp_path):
    # Replaced while nothing was written: its volume label is missing, so the
    # next open records it failed rather than reading its zeros as data.
    data = os.urandom(VOLUME_BYTES)
    (tmp_path / "source.bin").write_bytes(data)
    server = cluster.nbd()
    run(["nbdcopy", str(tmp_path / "source.bin"), server.uri])
    assert server.stop() == 0, server.stderr()
    cluster.nodes[2].kill()
    cluster.nodes[2].file.unlink()
    cluster.nodes[2].start()
    p = cluster.volume("info", VOLUME)
    assert re.search(r"^\s+2\s+2\s+127\.0\.0\.1:\d+\s+DOWN: recorded failed", p.stdout, re.M), \
        p.stdout + p.stderr
    p = cluster.volume("verify", VOLUME)
    assert p.returncode == 1 and "FailedPrecondition: storage node 2" in p.stdout, p.stdout + p.stderr
    server = cluster.nbd()
    run(["nbdcopy", server.uri, str(tmp_path / "degraded.bin")])
    assert (tmp_path / "degraded.bin").read_bytes() == data
    assert server.stop() == 0, server.stderr()
    p = cluster.volume("rebuild", VOLUME, "--node", "2")
    assert p.returncode == 0, p.stdout + p.stderr
    p = cluster.volume("verify", VOLUME)
    assert p.returncode == 0, p.stdout + p.stderr


def test_unknown_volume_and_unreachable_nodes(cluster):
    p = subprocess.run([str(RAMPART), "--config", str(cluster.config), "nbd", "--volume", "nope"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert 'no volume named "nope"' in p.stderr and "(its volumes: data)" in p.stderr, p.stderr
    p = cluster.volume("verify", "nope")
    assert p.returncode == 2 and "its volumes: data" in p.stderr, p.stderr
    p = cluster.volume("rebuild", VOLUME, "--node", "7")
    assert p.returncode == 2 and "not a node of volume data" in p.stderr, p.stderr

    cluster.nodes[0].kill()
    cluster.nodes[3].kill()
    p = subprocess.run([str(RAMPART), "--config", str(cluster.config), "nbd", "--volume", VOLUME],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert re.search(r"storage node 0 \(127\.0\.0\.1:\d+\), storage node 3 \(127\.0\.0\.1:\d+\)",
                     last), p.stderr
    assert "storage node 1" not in last, last
