"""`rampart up`: start, stop, supervision (a node that dies is restarted, one that crash-loops
stops the cluster), a bad configuration."""
import os
import re
import signal
import socket
import subprocess
import time

from conftest import (RAMPART, Cluster, accepts, cluster_toml, free_ports, pid_alive,
                      stop_cluster, wait_gone)


def test_up_starts_and_stops_cleanly(cluster):
    pids = list(cluster.node_pids.values())
    assert all(pid_alive(p) for p in pids), cluster.stderr()
    assert cluster.proc.poll() is None

    os.kill(cluster.proc.pid, signal.SIGTERM)
    assert cluster.wait() == 0, cluster.stderr()
    assert wait_gone(pids, timeout_s=2.0) == []
    assert cluster.stdout().rstrip().endswith("stopped")


def test_killed_node_is_restarted_and_the_others_keep_running(cluster):
    victim = cluster.node_pids[2]
    others = {n: p for n, p in cluster.node_pids.items() if n != 2}
    os.kill(victim, signal.SIGKILL)

    new_pid = cluster.wait_restarted("node 2")
    assert new_pid != victim and pid_alive(new_pid)
    assert cluster.proc.poll() is None
    assert all(pid_alive(p) for p in others.values()), cluster.stderr()
    assert {n: p for n, p in cluster.node_pids.items() if n != 2} == others
    err = cluster.stderr()
    assert (f"node 2 (pid {victim}) died: killed by signal 9 (Killed); restarting it in 100 ms "
            "(1 deaths in the last 60 s)") in err, err
    # The new process serves node 2's partition port.
    port = int(re.search(r"^restarted node 2: pid \d+, partitions \S+ on [\d.]+:(\d+)",
                         cluster.stdout(), re.M).group(1))
    assert accepts("127.0.0.1", port)


def test_a_crash_looping_node_stops_the_cluster(tmp_path):
    c = Cluster("tcp", tmp_path)
    try:
        c.start()
        port = int(re.search(r"^node 1: pid \d+, partitions \S+ on [\d.]+:(\d+)", c.stdout(),
                             re.M).group(1))
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
            busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            os.kill(c.node_pids[1], signal.SIGKILL)
            # Every restart finds the port taken and exits 1.
            for _ in range(100):
                try:
                    busy.bind(("127.0.0.1", port))
                    break
                except OSError:
                    time.sleep(0.01)
            busy.listen()
            assert c.wait(timeout_s=30) == 1, c.stderr()
        err = c.stderr()
        assert "node 1 (pid" in err and "crash-looping): stopping the cluster" in err, err
        assert "died 6 times within 60 s" in err, err
        assert wait_gone(c.pids(), timeout_s=5.0) == []
    finally:
        stop_cluster(c)


def test_bad_config_is_one_line_and_exit_2(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text('[transport]\nbackend = "carrier-pigeon"\n')
    result = subprocess.run([str(RAMPART), "up", "--config", str(config)],
                            capture_output=True, text=True, timeout=10)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("rampart: ") and "transport.backend" in lines[0], lines[0]


def test_up_help():
    result = subprocess.run([str(RAMPART), "up", "--help"],
                            capture_output=True, text=True, timeout=10)
    assert result.returncode == 0
    assert "SIGTERM" in result.stdout


def test_node_that_cannot_start_fails_up(tmp_path):
    ports = free_ports(4)
    config = tmp_path / "busy.toml"
    config.write_text(cluster_toml("tcp", ports))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        busy.bind(("127.0.0.1", ports[1]))
        busy.listen()
        result = subprocess.run([str(RAMPART), "up", "--config", str(config)],
                                capture_output=True, text=True, timeout=30)
    assert result.returncode == 1, result.stderr
    # Usually "exited during start"; "died" if the busy socket made the port
    # look ready before node 1 gave up.
    assert "node 1 (pid " in result.stderr and "exit status 1" in result.stderr, result.stderr


def test_nodes_die_with_up(cluster):
    pids = list(cluster.node_pids.values())
    os.kill(cluster.proc.pid, signal.SIGKILL)
    assert cluster.wait() == -signal.SIGKILL
    # PR_SET_PDEATHSIG(SIGTERM): the nodes stop on their own.
    assert wait_gone(pids, timeout_s=5.0) == []
