"""Two-process tests of the storage tier: `rampart storage-node` serving a
backing file, and the volume client in another process (`rampart bench iops`
and `rampart bench replay`, which drive storage::VolumeClient).

- IO through the node lands in the backing file, and a restarted node serves
  the same file.
- Data written remotely reads back identical: random offsets, two block sizes,
  many IOs in flight over two connections (`bench iops --verify`, which is
  shown to catch a corrupted byte).
- Out-of-range requests get error completions; the node keeps serving.
- A node SIGKILLed mid-read makes the client fail fast with kUnavailable.

Processes are stopped by PID; output goes to files under tmp_path.
"""
import json
import subprocess
import time

import pytest

from conftest import RAMPART, free_ports
from storage_nodes import StorageNode, storage_toml

DEVICE_BYTES = 16 << 20


def single_node(tmp_path):
    """Storage node 0 alone, serving tmp_path/device.img."""
    port = free_ports(1)[0]
    config = tmp_path / "storage.toml"
    file = tmp_path / "device.img"
    config.write_text(storage_toml([(0, port, file, DEVICE_BYTES >> 20)]))
    return StorageNode(config, 0, port, file, tmp_path)


@pytest.fixture
def node(tmp_path):
    n = single_node(tmp_path)
    n.start()
    yield n
    n.stop()


def bench(node, tmp_path, *args, timeout=60):
    out = tmp_path / "bench.json"
    p = subprocess.run(
        [str(RAMPART), "--config", str(node.config), "bench", *args,
         "--address", f"127.0.0.1:{node.port}", "--json", str(out)],
        capture_output=True, text=True, timeout=timeout)
    doc = json.loads(out.read_text()) if out.exists() else None
    return p, doc


def test_writes_reach_the_file_and_a_restart_serves_them(node, tmp_path):
    # Writes of 0x5a blocks over the first MiB, then reads of all of it.
    p, doc = bench(node, tmp_path, "iops", "--op", "write", "--pattern", "sequential",
                   "--block-size", "16KiB", "--span", "1MiB", "--queue-depth", "8",
                   "--connections", "2", "--seconds", "0.5")
    assert p.returncode == 0, p.stderr + p.stdout
    assert doc["results"]["ops"] > 0 and doc["results"]["errors"] == 0
    data = node.file.read_bytes()
    assert len(data) >= DEVICE_BYTES
    assert data[:1 << 20] == b"\x5a" * (1 << 20)
    node.kill()
    node.start()
    trace = tmp_path / "trace.txt"
    trace.write_text("# offset length\n" + "".join(
        f"{off} {ln}\n" for off, ln in [(0, 4096), (65536, 16384), (DEVICE_BYTES - 8192, 8192)]))
    p, doc = bench(node, tmp_path, "replay", str(trace), "--concurrency", "3")
    assert p.returncode == 0, p.stderr + p.stdout
    assert doc["results"]["ops"] == 3 and doc["results"]["errors"] == 0


def test_remote_writes_read_back_identical(node, tmp_path):
    span = ["--span", "4MiB", "--connections", "2"]
    p, doc = bench(node, tmp_path, "iops", "--op", "write", "--pattern", "sequential",
                   "--block-size", "16KiB", "--queue-depth", "8", "--seconds", "0.6",
                   "--verify", *span)
    assert p.returncode == 0, p.stderr + p.stdout
    assert doc["results"]["bytes"] >= 4 << 20, "the span was not written whole"
    for block in ("4KiB", "1536"):  # another size, and one that is not a power of two
        p, doc = bench(node, tmp_path, "iops", "--op", "read", "--block-size", block,
                       "--queue-depth", "16", "--seconds", "0.4", "--verify", *span)
        assert p.returncode == 0, p.stderr + p.stdout
        assert doc["results"]["errors"] == 0 and doc["results"]["ops"] > 100
    # The check catches a wrong byte: flip one in the file behind the node.
    with open(node.file, "r+b") as f:
        f.seek(5000)
        byte = f.read(1)
        f.seek(5000)
        f.write(bytes([byte[0] ^ 0xFF]))
    p, doc = bench(node, tmp_path, "iops", "--op", "read", "--pattern", "sequential",
                   "--block-size", "4KiB", "--span", "8KiB", "--queue-depth", "1",
                   "--seconds", "0.2", "--verify")
    assert p.returncode == 1
    assert doc["results"]["errors"] > 0
    assert "verify: byte 5000 of the device" in doc["results"]["first_error"]


def test_out_of_range_requests_get_errors(node, tmp_path):
    trace = tmp_path / "trace.txt"
    trace.write_text(f"{DEVICE_BYTES} 4096\n{DEVICE_BYTES - 4096} 8192\n0 4096\n")
    p, doc = bench(node, tmp_path, "replay", str(trace), "--concurrency", "1")
    assert p.returncode == 1
    assert doc["results"]["errors"] == 2 and doc["results"]["ops"] == 1
    # The node serves on.
    p, doc = bench(node, tmp_path, "iops", "--seconds", "0.3")
    assert p.returncode == 0, p.stderr + p.stdout


def test_node_named_by_its_configuration_id(node, tmp_path):
    def run(node_id):
        out = tmp_path / f"node{node_id}.json"
        p = subprocess.run(
            [str(RAMPART), "--config", str(node.config), "bench", "iops", "--node", node_id,
             "--seconds", "0.2", "--json", str(out)],
            capture_output=True, text=True, timeout=60)
        return p, (json.loads(out.read_text()) if out.exists() else None)

    p, doc = run("0")
    assert p.returncode == 0, p.stderr + p.stdout
    assert doc["configuration"]["address"] == f"127.0.0.1:{node.port}"
    assert doc["results"]["ops"] > 0
    p, doc = run("9")
    assert p.returncode == 2 and doc is None
    assert "--node 9: no storage node with that id" in p.stderr


def test_node_killed_mid_read_fails_the_client_fast(node, tmp_path):
    out = tmp_path / "bench.json"
    client = subprocess.Popen(
        [str(RAMPART), "--config", str(node.config), "bench", "iops", "--seconds", "30",
         "--queue-depth", "16", "--connections", "2",
         "--address", f"127.0.0.1:{node.port}", "--json", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(1.5)
        assert client.poll() is None, client.stdout.read()
        node.kill()
        killed = time.monotonic()
        output, _ = client.communicate(timeout=10)
        assert time.monotonic() - killed < 5, "the client did not fail fast"
        assert client.returncode == 1, output
        doc = json.loads(out.read_text())
        assert doc["results"]["ops"] > 0
        assert doc["results"]["errors"] > 0
        assert "Unavailable" in doc["results"]["first_error"] or \
            "unavailable" in doc["results"]["first_error"].lower()
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
