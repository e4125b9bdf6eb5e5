"""The kv-nodes' redo logs as an operator meets them (docs/log_format.md): data that survives
`rampart up` being stopped and started, `rampart kv log info|verify`, and logs that must not be
replayed — damaged in the middle, or another cluster's — refused with an error naming them."""
import re
import subprocess

import redis

from conftest import RAMPART, Cluster, stop_cluster


def kv_log(cluster, *args):
    return subprocess.run([str(RAMPART), "--config", str(cluster.config), "kv", "log", *args],
                          capture_output=True, text=True, timeout=60)


def write_some(cluster):
    r = redis.Redis(host=cluster.proxy["host"], port=cluster.proxy["port"], socket_timeout=10)
    r.mset({f"k{i}": f"v{i}" for i in range(200)})
    for _ in range(7):
        r.incr("counter")
    r.hset("h", mapping={"a": "1", "b": "2"})
    r.delete("k0")


def check_some(cluster):
    r = redis.Redis(host=cluster.proxy["host"], port=cluster.proxy["port"], socket_timeout=10)
    assert r.mget([f"k{i}" for i in range(200)]) == [None] + [f"v{i}".encode() for i in range(1, 200)]
    assert r.get("counter") == b"7"
    assert r.hgetall("h") == {b"a": b"1", b"b": b"2"}
    assert r.dbsize() == 201


def test_up_stop_and_up_again_shows_the_same_keys(tmp_path):
    c = Cluster("ucx", tmp_path, proxy=True)
    try:
        c.start()
        write_some(c)
        assert c.stop() == 0
        c.start()
        check_some(c)
    finally:
        stop_cluster(c)


def test_a_node_refuses_logs_written_by_a_cluster_of_another_shape(tmp_path):
    """A key's partition is its hash mod (nodes x partitions_per_node): logs written with
    another count would be recovered into partitions nobody reads those keys from. The node
    refuses to start, naming what to restore; restored, every key is back."""
    c = Cluster("tcp", tmp_path, proxy=True)
    try:
        c.start()
        write_some(c)
        assert c.stop() == 0
        layout = c.data_dir / "node-1" / "layout"
        assert layout.read_text() == "rampart kv layout 1\nnodes 4\npartitions_per_node 1\n"
        written = c.config.read_text()
        last_node = written.rindex("[[nodes]]")
        c.config.write_text(written[:last_node])  # 3 nodes: keys would hash mod 3, not 4
        node = subprocess.run([str(RAMPART), "--config", str(c.config), "kv-node", "--id", "1"],
                              capture_output=True, text=True, timeout=30)
        assert node.returncode == 1, (node.stdout, node.stderr)
        assert "written by a cluster of 4 nodes x 1 partitions" in node.stderr, node.stderr
        assert "Start it with 4 [[nodes]] and kv.partitions_per_node = 1" in node.stderr, node.stderr
        c.config.write_text(written)
        c.start()
        check_some(c)
    finally:
        stop_cluster(c)


def test_kv_log_info_and_verify(tmp_path):
    c = Cluster("tcp", tmp_path, proxy=True)
    try:
        c.start()
        write_some(c)
    finally:
        stop_cluster(c)
    data = ["--data-dir", str(c.data_dir)]
    info = kv_log(c, "info", "--node", "1", *data)
    assert info.returncode == 0, info.stderr
    assert f"store: directory {c.data_dir}/node-1/partition-1" in info.stdout, info.stdout
    assert re.search(r"^  \d+ +log +1 +\d+ +", info.stdout, re.M), info.stdout
    verify = kv_log(c, "verify", "--node", "1", *data)
    assert verify.returncode == 0, verify.stderr
    assert re.fullmatch(r"partition 1: OK: checkpoint of 0 records, [1-9]\d* log records, .* checked\n",
                        verify.stdout), verify.stdout
    wrong = kv_log(c, "verify", "--node", "1", "--data-dir", str(tmp_path / "nothing"))
    assert wrong.returncode == 1
    assert "no log directory" in wrong.stdout, wrong.stdout
    bad = kv_log(c, "info", "--node", "9", *data)
    assert bad.returncode == 2 and "--node 9" in bad.stderr, bad.stderr
    assert kv_log(c, "verify", "--help").returncode == 0


def test_a_damaged_log_is_refused_naming_the_file_and_offset(tmp_path):
    c = Cluster("tcp", tmp_path, proxy=True)
    try:
        c.start()
        write_some(c)
        assert c.stop() == 0
        c.start()  # recovers, then logs into a new segment: the first one is now in the middle
        check_some(c)
    finally:
        stop_cluster(c)
    # A flipped byte in the first record of every partition's first segment.
    damaged = []
    for seg in sorted(c.data_dir.glob("node-*/partition-*/seg-0000000000000001")):
        data = bytearray(seg.read_bytes())
        if data[4096:4096 + 8] == bytes(8):
            continue  # a partition that logged nothing
        data[4096 + 40] ^= 0x20
        seg.write_bytes(bytes(data))
        damaged.append(seg)
    assert damaged
    node = int(damaged[0].parent.parent.name.split("-")[1])
    verify = kv_log(c, "verify", "--node", str(node), "--data-dir", str(c.data_dir))
    assert verify.returncode == 1, verify.stdout
    assert f"{damaged[0]} at offset 4096" in verify.stdout, verify.stdout
    # The kv-node does not start on it, and says why.
    proc = subprocess.run([str(RAMPART), "up", "--config", str(c.config)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "exited during start" in proc.stderr, proc.stderr
    # Every node with a damaged segment fails; `up` reports the ones that exit before it
    # stops the rest, so the error names one of the damaged partitions, not a chosen one.
    assert "checksum" in proc.stderr, proc.stderr
    assert any(str(d.parent) in proc.stderr for d in damaged), proc.stderr


def test_another_clusters_log_is_refused(tmp_path):
    c = Cluster("tcp", tmp_path, proxy=True)
    try:
        c.start()
        write_some(c)
    finally:
        stop_cluster(c)
    text = c.config.read_text().replace('name = "pytest"', 'name = "other"')
    c.config.write_text(text)
    proc = subprocess.run([str(RAMPART), "up", "--config", str(c.config)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    # Whichever node tries first says so.
    assert re.search(r'seg-0000000000000001 belongs to cluster "pytest" node (\d) partition \1 of 4, '
                     r'not to cluster "other" node \1 partition \1 of 4', proc.stderr), proc.stderr
