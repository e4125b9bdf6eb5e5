"""Fixtures of the integration tests: a local cluster run by `rampart up`.

The `cluster` fixture writes a cluster file with 4 nodes on free high ports
(one partition each) for the transport backend given by its parameter, starts
`build/release/rampart up --config FILE`, and waits for "ready" on stdout. In
teardown (also when the test failed) it sends SIGTERM to `up` by PID, waits,
and SIGKILLs it if needed. Output goes to files under the test's tmp_path, so
a full pipe never blocks a process.
"""
import os
import pathlib
import re
import signal
import socket
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
RAMPART = pathlib.Path(os.environ.get("RAMPART_BIN", ROOT / "build" / "release" / "rampart"))

READY_TIMEOUT_S = 25  # `up` itself gives up after 20 s
STOP_TIMEOUT_S = 10   # `up` SIGKILLs its nodes after 5 s


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 (held open together, then released)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def cluster_toml(backend, ports, ucx_tls="", grace_ms=1000):
    text = (
        '[cluster]\nname = "pytest"\n'
        f'[transport]\nbackend = "{backend}"\n'
        f'[transport.ucx]\ntls = "{ucx_tls}"\n'
        '[kv]\npartitions_per_node = 1\narena_bytes = "32MiB"\n'
        f'grace_ms = {grace_ms}\n'
    )
    for i, port in enumerate(ports):
        text += f'[[nodes]]\nid = {i}\nhost = "127.0.0.1"\nport = {port}\n'
    return text


def pid_alive(pid):
    """True while /proc/<pid> exists and is not a zombie."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pids, timeout_s=5.0):
    """Waits (bounded) until none of `pids` is alive; returns those still alive."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive = [p for p in pids if pid_alive(p)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


class Cluster:
    def __init__(self, backend, tmp_path, ucx_tls="", grace_ms=1000, flavour=None):
        self.backend = backend
        self.flavour = flavour or backend  # "tcp", "ucx", "ucx-shm", "ucx-tcp"
        self.config = tmp_path / f"cluster-{backend}.toml"
        self.config.write_text(cluster_toml(backend, free_ports(4), ucx_tls, grace_ms))
        self.stdout_path = tmp_path / "up.stdout"
        self.stderr_path = tmp_path / "up.stderr"
        self.proc = None
        self.node_pids = {}  # node id -> pid, from the "node N: pid P, ..." lines

    def start(self):
        assert RAMPART.exists(), f"{RAMPART} is missing: run `make build` first"
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [str(RAMPART), "up", "--config", str(self.config)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if "\nready" in "\n" + self.stdout():
                break
            if self.proc.poll() is not None:
                pytest.fail(f"rampart up exited with {self.proc.returncode} before ready:\n"
                            f"{self.stderr()}")
            time.sleep(0.05)
        else:
            pytest.fail(f"rampart up not ready after {READY_TIMEOUT_S} s:\n{self.stderr()}")
        for m in re.finditer(r"^node (\d+): pid (\d+), partitions \S+ on (\S+) over (\w+)$",
                             self.stdout(), re.M):
            assert m.group(4) == self.backend
            self.node_pids[int(m.group(1))] = int(m.group(2))
        assert sorted(self.node_pids) == [0, 1, 2, 3], self.stdout()

    def stdout(self):
        return self.stdout_path.read_text(errors="replace")

    def stderr(self):
        return self.stderr_path.read_text(errors="replace")

    def wait(self, timeout_s=STOP_TIMEOUT_S):
        """The exit code of `up`, or None if it is still running after timeout_s."""
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        """SIGTERM by PID, a bounded wait, then SIGKILL. Returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            if self.wait() is None:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=STOP_TIMEOUT_S)
        return self.proc.returncode


@pytest.fixture(params=["tcp", "ucx"])
def cluster(request, tmp_path):
    yield from run_cluster(Cluster(request.param, tmp_path))


# The one-sided data path over UCX on shared memory and over UCX's tcp
# transport, with an aggressive GC (versions reclaimed ~1 ms after they are
# superseded, at the node's next 100 ms tick) so slots are reused constantly.
@pytest.fixture(params=["ucx-shm", "ucx-tcp"])
def ucx_cluster(request, tmp_path):
    tls = "tcp" if request.param == "ucx-tcp" else ""
    yield from run_cluster(Cluster("ucx", tmp_path, ucx_tls=tls, grace_ms=1,
                                   flavour=request.param))


def check_read_atomic(cluster, isolation, *extra, timeout_s):
    """`rampart check read-atomic` against `cluster`, bounded by timeout_s."""
    cmd = [str(RAMPART), "--config", str(cluster.config), "check", "read-atomic",
           "--isolation", isolation, *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)


def run_cluster(c):
    """Starts `c`, yields it, and stops it and every node process it started."""
    try:
        c.start()
        yield c
    finally:
        c.stop()
        # Children get PR_SET_PDEATHSIG(SIGTERM); kill any straggler anyway.
        for pid in wait_gone(list(c.node_pids.values()), timeout_s=5.0):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
