"""Storage-tier processes for the integration tests: a cluster file with
[[storage_nodes]] (and [[volumes]]), and `rampart storage-node --id N`
processes serving files under tmp_path, and `rampart nbd` (NbdProcess), all
started and stopped by PID.

    text = storage_toml([(0, port, tmp_path / "n0.img", 16)])
    node = StorageNode(config_path, 0, port, tmp_path / "n0.img", tmp_path)
    node.start(); ...; node.kill() or node.stop()
"""
import os
import signal
import subprocess
import time

from conftest import RAMPART, pid_alive

# Plain files through the page cache (direct = false works on tmpfs too), a
# thread-pool engine small enough for a 2-core machine.
STORAGE_SETTINGS = (
    '[storage]\nengine = "threads"\nio_threads = 2\nqueue_depth = 32\n'
    'direct = false\nstaging_bytes = "4MiB"\nmax_io_bytes = "1MiB"\n'
)


def storage_toml(nodes, volumes=(), name="pytest-storage", transport_extra=""):
    """A cluster file of `nodes`, (id, port, path, size in MiB) each, and
    `volumes`, dicts of [[volumes]] keys to raw TOML values."""
    text = (f'[cluster]\nname = "{name}"\n'
            f'[transport]\nbackend = "ucx"\n{transport_extra}' + STORAGE_SETTINGS)
    for node_id, port, path, size_mib in nodes:
        text += (f'[[storage_nodes]]\nid = {node_id}\nhost = "127.0.0.1"\nport = {port}\n'
                 f'path = "{path}"\nsize = "{size_mib}MiB"\n')
    for volume in volumes:
        text += "[[volumes]]\n" + "".join(f"{k} = {v}\n" for k, v in volume.items())
    return text


def listening(port):
    """True when something listens on TCP `port` (per ss)."""
    out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"],
                         capture_output=True, text=True, timeout=5).stdout
    return bool(out.strip())


class StorageNode:
    """`rampart --config CONFIG storage-node --id NODE_ID` serving `file`;
    each start logs to log_dir/node-ID-START.log."""

    def __init__(self, config, node_id, port, file, log_dir):
        self.config = config
        self.node_id = node_id
        self.port = port
        self.file = file
        self.log_dir = log_dir
        self.proc = None
        self.starts = 0

    def start(self):
        """Starts the node and waits (bounded) until it listens."""
        self.starts += 1
        with open(self.log_dir / f"node-{self.node_id}-{self.starts}.log", "w") as log:
            self.proc = subprocess.Popen(
                [str(RAMPART), "--config", str(self.config), "storage-node",
                 "--id", str(self.node_id)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if listening(self.port):
                return
            assert self.proc.poll() is None, f"storage-node {self.node_id} exited at start"
            time.sleep(0.05)
        raise AssertionError(f"storage-node {self.node_id} did not listen")

    def kill(self):
        """SIGKILL by PID (a crash)."""
        if self.proc and pid_alive(self.proc.pid):
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self):
        """SIGTERM by PID, a bounded wait, then SIGKILL."""
        if self.proc and pid_alive(self.proc.pid):
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


class NbdProcess:
    """`rampart [--config CONFIG] nbd ARGS...` (with --port 0 unless ARGS
    give a port); start() waits for the URI it prints on stdout when clients
    can connect. Output goes to log_dir/TAG.stdout and TAG.stderr."""

    def __init__(self, args, log_dir, config=None, tag="nbd"):
        self.args = list(args)
        if "--port" not in self.args:
            self.args += ["--port", "0"]
        self.config = config
        self.stdout_path = log_dir / f"{tag}.stdout"
        self.stderr_path = log_dir / f"{tag}.stderr"
        self.proc = None
        self.uri = None
        self.port = None

    def command(self):
        cmd = [str(RAMPART)]
        if self.config is not None:
            cmd += ["--config", str(self.config)]
        return cmd + ["nbd", *self.args]

    def launch(self):
        """Starts the process without waiting for it."""
        with open(self.stdout_path, "w") as out, open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=err)

    def start(self, timeout_s=30):
        """Starts it and waits (bounded) for the URI line."""
        self.launch()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in self.stdout_path.read_text().splitlines():
                if line.startswith("nbd://"):
                    self.uri = line.strip()
                    self.port = int(self.uri.split(":")[2].split("/")[0])
                    return self
            if self.proc.poll() is not None:
                raise AssertionError(f"rampart nbd exited with {self.proc.returncode}:\n"
                                     f"{self.stderr()}")
            time.sleep(0.05)
        raise AssertionError(f"rampart nbd printed no URI in {timeout_s} s:\n{self.stderr()}")

    def stderr(self):
        return self.stderr_path.read_text(errors="replace")

    def wait(self, timeout_s=30):
        return self.proc.wait(timeout=timeout_s)

    def kill(self):
        """SIGKILL by PID (a crash)."""
        if self.proc and pid_alive(self.proc.pid):
            os.kill(self.proc.pid, signal.SIGKILL)
        if self.proc:
            self.proc.wait(timeout=10)

    def stop(self, timeout_s=30):
        """SIGTERM by PID and the exit code; SIGKILL after timeout_s (and None)."""
        if self.proc is None:
            return None
        if self.proc.poll() is not None:
            return self.proc.returncode
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
