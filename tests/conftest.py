"""Fixtures of the integration tests: a local cluster run by `rampart up`.

The `cluster` fixture writes a cluster file with 4 nodes on free high ports
(one partition each) for the transport backend given by its parameter, starts
`build/release/rampart up --config FILE`, and waits for "ready" on stdout. In
teardown (also when the test failed) it sends SIGTERM to `up` by PID, waits,
and SIGKILLs it if needed. Output goes to files under the test's tmp_path, so
a full pipe never blocks a process.

The Redis-protocol proxy tests (test_proxy*.py) use `redis_target`: the same
tests run against a real redis-server (the reference their expectations were
validated against) and against the proxy of a `rampart up` cluster whose
cluster file has a [proxy] section. See RedisServer, ProxyTarget and
pytest_generate_tests below.
"""
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import time

import pytest
import redis

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from free_ports import free_port_bases  # noqa: E402
RAMPART = pathlib.Path(os.environ.get("RAMPART_BIN", ROOT / "build" / "release" / "rampart"))

READY_TIMEOUT_S = 25  # `up` itself gives up after 20 s
STOP_TIMEOUT_S = 10   # `up` SIGKILLs its nodes after 5 s


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1, below the kernel's ephemeral
    range (scripts/free_ports.py says why)."""
    return free_port_bases(n)


def toml_value(v):
    """A TOML value: bools and numbers as such, strings passed through raw
    (so '"none"' is the TOML string none and 'false' the boolean)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def cluster_toml(backend, ports, ucx_tls="", grace_ms=1000, proxy_port=None,
                 proxy_settings=None, arena_bytes=None, kv_settings=None, data_dir=None):
    """The cluster file of `ports` (one node each); with proxy_port a [proxy]
    section whose port is proxy_port, plus proxy_settings (key -> raw TOML).
    arena_bytes: kv.arena_bytes (default 64MiB with a proxy, else 32MiB);
    kv_settings: more [kv] keys (key -> value); data_dir: the kv-nodes' redo
    logs go there (kv.log = "dir", the default); None: kv.log = "none"."""
    if arena_bytes is None:
        # The proxy tests write hard (redis-benchmark): room for the versions
        # kept for grace_ms.
        arena_bytes = "64MiB" if proxy_port is not None else "32MiB"
    text = (
        '[cluster]\nname = "pytest"\n'
        f'[transport]\nbackend = "{backend}"\n'
        f'[transport.ucx]\ntls = "{ucx_tls}"\n'
        '[kv]\npartitions_per_node = 1\n'
        f'arena_bytes = "{arena_bytes}"\n'
        f'grace_ms = {grace_ms}\n'
    )
    text += f'data_dir = "{data_dir}"\n' if data_dir is not None else 'log = "none"\n'
    for key, value in (kv_settings or {}).items():
        text += f"{key} = {toml_value(value)}\n"
    if proxy_port is None and not proxy_settings:
        text += "[proxy]\nenabled = false\n"  # `up` starts no proxy
    else:
        text += "[proxy]\n"
        if proxy_port is not None:
            text += f"port = {proxy_port}\n"
        for key, value in (proxy_settings or {}).items():
            text += f"{key} = {toml_value(value)}\n"
    for i, port in enumerate(ports):
        text += f'[[nodes]]\nid = {i}\nhost = "127.0.0.1"\nport = {port}\n'
    return text


def volume_logs_toml(storage_ports, storage_dir, nodes):
    """kv.log = "volume": len(storage_ports) storage nodes serving files in storage_dir, and one
    32 MiB log volume over them per kv-node (kvlog-N), for a cluster file of cluster_toml(). The
    [[nodes]] entries get their log_volume from log_volume_lines()."""
    text = ('[storage]\nengine = "threads"\nio_threads = 2\nqueue_depth = 32\ndirect = false\n'
            'staging_bytes = "4MiB"\nmax_io_bytes = "1MiB"\n')
    for i, port in enumerate(storage_ports):
        text += (f'[[storage_nodes]]\nid = {i}\nhost = "127.0.0.1"\nport = {port}\n'
                 f'path = "{storage_dir}/storage-{i}.img"\nsize = "{20 * nodes}MiB"\n')
    for n in range(nodes):
        text += (f'[[volumes]]\nname = "kvlog-{n}"\nsize = "32MiB"\n'
                 f'nodes = [{", ".join(str(i) for i in range(len(storage_ports)))}]\n'
                 f'node_offset = "{20 * n}MiB"\n')
    return text


def accepts(host, port, timeout_s=1.0):
    """True when a TCP connection to host:port is accepted."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


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


# The line `up` prints for its proxy before "ready" when the cluster file has a
# [proxy] section.
PROXY_LINE = re.compile(
    r"^proxy: pid (\d+), (\S+):(\d+), (\d+) workers?, aggregation (on|off)$", re.M)


class Cluster:
    """`rampart up` on 4 nodes (one partition each). With proxy=True (implied
    by proxy_settings) the cluster file also has a [proxy] section on a free
    port, and start() parses the proxy line of `up` into self.proxy."""

    def __init__(self, backend, tmp_path, ucx_tls="", grace_ms=1000, flavour=None,
                 proxy=False, proxy_settings=None, arena_bytes=None, kv_settings=None,
                 volume_logs=False):
        self.backend = backend
        self.flavour = flavour or backend  # "tcp", "ucx", "ucx-shm", "ucx-tcp"
        self.config = tmp_path / f"cluster-{backend}.toml"
        self.proxy_settings = dict(proxy_settings or {})
        self.proxy_port = None
        with_proxy = bool(proxy or self.proxy_settings)
        ports = free_ports(5 if with_proxy else 4)
        if with_proxy:
            self.proxy_port = ports[4]
        self.data_dir = tmp_path / "data"
        text = cluster_toml(backend, ports[:4], ucx_tls, grace_ms, self.proxy_port,
                            self.proxy_settings, arena_bytes, kv_settings, self.data_dir)
        if volume_logs:
            # Logs on a volume per kv-node over three storage nodes (files in tmp_path). Small
            # messages and segments, so that 32 MiB volumes hold several.
            storage_ports = free_ports(3)
            self.storage_ports = storage_ports
            text = text.replace("[kv]\n", '[kv]\nlog = "volume"\nlog_segment_bytes = "2MiB"\n', 1)
            text = text.replace("[transport]\n", '[transport]\nmax_message_size = "1MiB"\n', 1)
            text = re.sub(r'(\[\[nodes\]\]\nid = (\d+)\n)', r'\1log_volume = "kvlog-\2"\n', text)
            text += volume_logs_toml(storage_ports, tmp_path, 4)
        self.config.write_text(text)
        self.tmp_path = tmp_path
        self.runs = 0  # start() calls; run N > 1 logs to up-N.stdout/stderr
        self.stdout_path = tmp_path / "up.stdout"
        self.stderr_path = tmp_path / "up.stderr"
        self.proc = None
        self.node_pids = {}  # node id -> pid, from the "node N: pid P, ..." lines
        self.storage_pids = {}  # storage node id -> pid, likewise
        self.restarted_pids = set()  # every pid of a "restarted ..." line seen
        self.proxy = None    # {"pid", "host", "port", "workers", "aggregation"}

    def start(self):
        """Runs `up` on the cluster file (again, after a crash(): same ports, same data)."""
        assert RAMPART.exists(), f"{RAMPART} is missing: run `make build` first"
        self.runs += 1
        if self.runs > 1:
            self.stdout_path = self.tmp_path / f"up-{self.runs}.stdout"
            self.stderr_path = self.tmp_path / f"up-{self.runs}.stderr"
            self.node_pids = {}
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
        self.storage_pids = {int(m.group(1)): int(m.group(2)) for m in re.finditer(
            r"^storage node (\d+): pid (\d+),", self.stdout(), re.M)}
        if self.proxy_port is not None:
            self.parse_proxy_line()

    def parse_proxy_line(self):
        out = self.stdout()
        m = PROXY_LINE.search(out)
        assert m, f"no 'proxy: pid P, HOST:PORT, W workers, aggregation on|off' line:\n{out}"
        assert out.index(m.group(0)) < out.index("\nready"), "proxy line after ready:\n" + out
        self.proxy = {"pid": int(m.group(1)), "host": m.group(2), "port": int(m.group(3)),
                      "workers": int(m.group(4)), "aggregation": m.group(5)}
        assert self.proxy["port"] == self.proxy_port, out
        assert self.proxy["workers"] >= 1, out
        aggregate = str(self.proxy_settings.get("aggregate", "")).lower()
        if aggregate in ("true", "false"):
            assert self.proxy["aggregation"] == ("on" if aggregate == "true" else "off"), out

    def pids(self):
        """Every process `up` reported: the nodes and the proxy, restarted ones too."""
        pids = list(self.node_pids.values()) + list(self.restarted_pids)
        if self.proxy:
            pids.append(self.proxy["pid"])
        return pids

    def crash(self):
        """SIGKILLs every kv-node and the proxy at once, then `up` (before its supervision
        restarts any: that waits 100 ms), by PID; waits until they are gone."""
        victims = self.pids()
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=STOP_TIMEOUT_S)
        assert wait_gone(victims, timeout_s=5.0) == []
        # Restarted children (if any got that far) die with `up` (PR_SET_PDEATHSIG).
        assert wait_gone(list(self.restarted_pids), timeout_s=5.0) == []

    def wait_restarted(self, label, count=1, timeout_s=20.0):
        """Waits (bounded) for the count-th `restarted LABEL: pid P, ...` line of `up` (label:
        "node 2", "proxy", "storage node 0"); returns P, which node_pids (or proxy) then holds."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = re.findall(rf"^restarted {re.escape(label)}: pid (\d+),", self.stdout(), re.M)
            if len(found) >= count:
                pid = int(found[count - 1])
                self.restarted_pids.add(pid)
                m = re.fullmatch(r"node (\d+)", label)
                if m:
                    self.node_pids[int(m.group(1))] = pid
                elif label == "proxy" and self.proxy:
                    self.proxy["pid"] = pid
                return pid
            if self.proc.poll() is not None:
                pytest.fail(f"rampart up exited with {self.proc.returncode}:\n{self.stderr()}")
            time.sleep(0.05)
        pytest.fail(f"no 'restarted {label}' line after {timeout_s} s:\n{self.stdout()}\n"
                    f"{self.stderr()}")

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
        stop_cluster(c)


def stop_cluster(c):
    """Stops `up` by PID, then SIGKILLs any of its processes still alive
    (children get PR_SET_PDEATHSIG(SIGTERM); this catches stragglers)."""
    c.stop()
    for pid in wait_gone(c.pids(), timeout_s=5.0):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# ---------------------------------------------------------------------------
# Redis-protocol targets: a real redis-server, or the proxy of `rampart up`.

REDIS_SERVER = os.environ.get("REDIS_SERVER_BIN", "redis-server")
REDIS_PASSWORD = "pw"  # requirepass of the AUTH targets


class RedisServer:
    """A real redis-server on a free port, no persistence, one database (so
    SELECT 1 fails as it does on the proxy). Started by Popen, stopped by PID."""

    kind = "redis"

    def __init__(self, tmp_path, requirepass=None):
        self.tmp_path = tmp_path
        self.host = "127.0.0.1"
        self.port = free_ports(1)[0]
        self.password = requirepass
        self.proc = None
        self.stdout_path = tmp_path / "redis.stdout"

    def start(self):
        cmd = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
               "--save", "", "--appendonly", "no", "--dir", str(self.tmp_path),
               "--databases", "1", "--daemonize", "no", "--logfile", ""]
        if self.password:
            cmd += ["--requirepass", self.password]
        with open(self.stdout_path, "wb") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"redis-server exited with {self.proc.returncode}:\n"
                            f"{self.stdout_path.read_text(errors='replace')}")
            try:
                with socket.create_connection((self.host, self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    reply = s.recv(64)
                if reply.startswith(b"+PONG") or reply.startswith(b"-NOAUTH"):
                    return
            except OSError:
                pass
            time.sleep(0.05)
        pytest.fail(f"redis-server not answering PING after {READY_TIMEOUT_S} s")

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=STOP_TIMEOUT_S)


class ProxyTarget:
    """The proxy of a `rampart up` cluster (4 nodes x 1 partition)."""

    kind = "rampart"

    def __init__(self, backend, tmp_path, requirepass=None, proxy_settings=None):
        settings = dict(proxy_settings or {})
        if requirepass:
            settings["requirepass"] = f'"{requirepass}"'
        self.cluster = Cluster(backend, tmp_path, proxy=True, proxy_settings=settings)
        self.password = requirepass
        self.host = "127.0.0.1"
        self.port = self.cluster.proxy_port

    def start(self):
        self.cluster.start()
        self.host = self.cluster.proxy["host"]

    def stop(self):
        stop_cluster(self.cluster)


# Target names, as they appear in test ids: "redis" is the reference server,
# "rampart" the proxy over the tcp backend, "rampart-ucx" over ucx.
TARGETS = ("redis", "rampart")
TARGETS_UCX = ("redis", "rampart", "rampart-ucx")


def make_target(name, tmp_path, requirepass=None, proxy_settings=None):
    """The target called `name` (one of TARGETS_UCX); not started yet."""
    if name == "redis":
        assert not proxy_settings, "proxy settings on redis-server"
        target = RedisServer(tmp_path, requirepass=requirepass)
    else:
        backend = {"rampart": "tcp", "rampart-ucx": "ucx"}[name]
        target = ProxyTarget(backend, tmp_path, requirepass=requirepass,
                             proxy_settings=proxy_settings)
    target.name = name
    return target


def run_target(target):
    """Starts `target`, yields it, stops it (also when start failed)."""
    try:
        target.start()
        yield target
    finally:
        target.stop()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "proxy_targets(*names): the redis_target params of a test "
        "(default: redis, rampart; names from conftest.TARGETS_UCX)")


def pytest_generate_tests(metafunc):
    """redis_target is parametrised per test: by default over TARGETS, or over
    the names of the test's proxy_targets marker (module scope, so one target
    of each name serves every test of a module)."""
    if "redis_target" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("proxy_targets")
        names = marker.args if marker else TARGETS
        metafunc.parametrize("redis_target", list(names), indirect=True, scope="module")


@pytest.fixture(scope="module")
def redis_target(request, tmp_path_factory):
    """One Redis-protocol target per name and test module; tests keep apart by
    key prefix, and those that need an empty database flush it themselves. A
    module's PROXY_SETTINGS (key -> raw TOML), if it has one, go into the
    proxy's [proxy] section."""
    name = request.param
    settings = getattr(request.module, "PROXY_SETTINGS", None) if name != "redis" else None
    yield from run_target(make_target(name, tmp_path_factory.mktemp(f"target-{name}"),
                                      proxy_settings=settings))


@pytest.fixture(scope="module", params=TARGETS)
def auth_target(request, tmp_path_factory):
    """A target with requirepass = REDIS_PASSWORD."""
    name = request.param
    yield from run_target(make_target(name, tmp_path_factory.mktemp(f"auth-{name}"),
                                      requirepass=REDIS_PASSWORD))


@pytest.fixture(scope="module")
def redis_and_rampart(tmp_path_factory):
    """A redis-server and the proxy of a `rampart up` cluster (tcp) at once, for tests that
    compare their answers or move data between them: (redis client, rampart client), bytes
    replies."""
    targets = [make_target(name, tmp_path_factory.mktemp(f"pair-{name}"))
               for name in ("redis", "rampart")]
    runs = [run_target(t) for t in targets]
    started = []
    try:
        for run in runs:
            started.append(next(run))
        clients = [redis.Redis(host=t.host, port=t.port, socket_timeout=60) for t in started]
        yield clients
        for c in clients:
            c.close()
    finally:
        for run in runs[:len(started)]:
            run.close()


@pytest.fixture(params=TARGETS)
def fresh_target(request, tmp_path):
    """A target of the test's own, started empty."""
    yield from run_target(make_target(request.param, tmp_path))
