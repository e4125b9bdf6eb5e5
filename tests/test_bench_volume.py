"""`rampart bench volume` against a tiny volume over 3 `rampart storage-node`
processes (files under tmp_path), started and stopped by PID: a short healthy
read run, a degraded one (the JSON counts reconstructed reads) and a write
run exit 0 with sane JSON; bad flags and an unknown volume or node exit 2."""
import json
import subprocess

import pytest

from conftest import RAMPART, free_ports
from storage_nodes import StorageNode, storage_toml


@pytest.fixture
def volume_config(tmp_path):
    config = tmp_path / "cluster.toml"
    ports = free_ports(3)
    files = [tmp_path / f"node{i}.img" for i in range(3)]
    config.write_text(storage_toml(
        [(i, ports[i], files[i], 4) for i in range(3)],
        volumes=[{"name": '"tiny"', "size": '"2MiB"', "cell_bytes": '"16KiB"',
                  "nodes": "[0, 1, 2]"}],
        name="pytest-bench-volume", transport_extra="connect_timeout_ms = 2000\n"))
    nodes = [StorageNode(config, i, ports[i], files[i], tmp_path) for i in range(3)]
    try:
        for node in nodes:
            node.start()
        yield config
    finally:
        for node in nodes:
            node.stop()


def bench(config, *args, timeout_s=60):
    return subprocess.run([str(RAMPART), "--config", str(config), "bench", "volume", *args],
                          capture_output=True, text=True, timeout=timeout_s)


def test_runs_write_json_and_count_reads(volume_config, tmp_path):
    out = tmp_path / "healthy.json"
    p = bench(volume_config, "tiny", "--seconds", "0.3", "--json", str(out))
    assert p.returncode == 0, p.stderr
    assert "MB/s" in p.stdout
    doc = json.loads(out.read_text())
    assert doc["benchmark"] == "volume"
    conf, res = doc["configuration"], doc["results"]
    assert conf["nodes"] == [0, 1, 2] and conf["data_cells"] == 2
    assert conf["block_bytes"] == 16 * 2 * 16384 and conf["steering"] == "on"
    assert res["ops"] > 0 and res["errors"] == 0 and res["mb_per_sec"] > 0
    assert res["p50_ns"] <= res["p99_ns"]
    # 32 cell pieces a call; a few may be steered around a node that was
    # slow for a moment on a busy machine.
    assert res["healthy_reads"] + res["steered_reads"] == res["ops"] * 32
    assert res["degraded_reads"] == 0

    out = tmp_path / "degraded.json"
    p = bench(volume_config, "tiny", "--seconds", "0.3", "--degraded", "1", "--steering", "off",
              "--pattern", "random", "--block-size", "64KiB", "--json", str(out))
    assert p.returncode == 0, p.stderr
    res = json.loads(out.read_text())["results"]
    assert res["ops"] > 0 and res["errors"] == 0
    assert res["degraded_reads"] > 0 and res["steered_reads"] == 0
    assert [n["up"] for n in res["nodes"]] == [True, False, True]

    out = tmp_path / "write.json"
    p = bench(volume_config, "tiny", "--op", "write", "--seconds", "0.3", "--json", str(out))
    assert p.returncode == 0, p.stderr
    assert json.loads(out.read_text())["results"]["ops"] > 0


@pytest.mark.parametrize("args", [
    ["tiny", "--steering", "maybe"],
    ["tiny", "--op", "erase"],
    ["tiny", "--seconds", "0"],
    ["tiny", "--bogus"],
    ["tiny", "--block-size", "lots"],
    ["tiny", "--degraded", "7"],
    ["nosuch"],
    [],
])
def test_bad_flags_exit_2(volume_config, args):
    p = bench(volume_config, *args)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert p.stderr.startswith("rampart: ")
