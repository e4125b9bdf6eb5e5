"""A rampart cluster over the hosts of a NetBed (tests/netbed.py): one
cluster file, and on every host of the cluster `rampart up` with it, which
starts that host's processes (its address is the host's: `up` picks them).

    with NetBed(7) as bed:
        c = HostCluster(bed, tmp_path, backend="ucx", kv_hosts=[0, 1, 2, 3],
                        proxy_hosts=[4, 5])
        c.start()                       # storage, kv, then proxy hosts
        c.proxy_addresses()             # ["10.213.0.5:6380", "10.213.0.6:6380"]
        c.run(6, ["redis-cli", ...])    # from a client host
        c.stop_host(2); c.start_host(2)

Every `up` is recorded by PID and stopped by it (SIGTERM, then SIGKILL);
the bed's own teardown kills whatever is left in its namespaces. Output of
host h's `up` goes to tmp_path/up-h<h>-<n>.{stdout,stderr}.
"""
import os
import pathlib
import re
import signal
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
RAMPART = pathlib.Path(os.environ.get("RAMPART_BIN", ROOT / "build" / "release" / "rampart"))
READY_TIMEOUT_S = 30
KV_PORT = 7000
PROXY_PORT = 6380
STORAGE_PORT = 7100


class HostCluster:
    """See the module docstring. Settings: backend; replicas, isolation and
    the rest of [proxy] through proxy_settings (key -> raw TOML); kv_settings
    and client_settings likewise; secret: a cluster secret written to a file
    (mode 0600) that cluster.secret_file names; storage_hosts, with a volume
    "vol" over them when there are 3 or more (volume_size)."""

    def __init__(self, bed, tmp_path, backend="tcp", kv_hosts=(0, 1, 2, 3), proxy_hosts=(4,),
                 storage_hosts=(), proxy_settings=None, kv_settings=None,
                 client_settings=None, secret=None, volume_size="64MiB"):
        self.bed = bed
        self.tmp = pathlib.Path(tmp_path)
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.backend = backend
        self.kv_hosts = list(kv_hosts)
        self.proxy_hosts = list(proxy_hosts)
        self.storage_hosts = list(storage_hosts)
        self.config = self.tmp / "cluster.toml"
        self.secret_file = None
        if secret is not None:
            self.secret_file = self.tmp / "cluster.secret"
            self.write_secret(self.secret_file, secret)
        self.config.write_text(self.toml(proxy_settings or {}, kv_settings or {},
                                         client_settings or {}, volume_size))
        self.ups = {}      # host -> Popen of its `up`
        self.outputs = {}  # host -> (stdout path, stderr path) of its latest `up`
        self.runs = {}     # host -> how many times `up` started there

    @staticmethod
    def write_secret(path, secret):
        path.write_text(secret + "\n")
        path.chmod(0o600)

    def toml(self, proxy_settings, kv_settings, client_settings, volume_size):
        text = '[cluster]\nname = "multihost"\n'
        if self.secret_file is not None:
            text += f'secret_file = "{self.secret_file}"\n'
        text += f'[transport]\nbackend = "{self.backend}"\nconnect_timeout_ms = 3000\n'
        text += '[kv]\npartitions_per_node = 1\narena_bytes = "32MiB"\n'
        for k, v in kv_settings.items():
            text += f"{k} = {v}\n"
        text += "[client]\n"
        for k, v in client_settings.items():
            text += f"{k} = {v}\n"
        text += "[proxy]\n"
        if not self.proxy_hosts:
            text += "enabled = false\n"
        for k, v in proxy_settings.items():
            text += f"{k} = {v}\n"
        if self.storage_hosts:
            text += ('[storage]\nengine = "threads"\nio_threads = 2\ndirect = false\n'
                     'staging_bytes = "4MiB"\n')
        for i, h in enumerate(self.proxy_hosts):
            text += f'[[proxies]]\nid = {i}\nhost = "{self.bed.addr(h)}"\nport = {PROXY_PORT}\n'
        for i, h in enumerate(self.kv_hosts):
            text += f'[[nodes]]\nid = {i}\nhost = "{self.bed.addr(h)}"\nport = {KV_PORT}\n'
        for i, h in enumerate(self.storage_hosts):
            text += (f'[[storage_nodes]]\nid = {i}\nhost = "{self.bed.addr(h)}"\n'
                     f'port = {STORAGE_PORT}\npath = "{self.tmp}/storage-{i}.img"\n'
                     f'size = "128MiB"\n')
        if len(self.storage_hosts) >= 3:  # a volume needs 3 storage nodes at least
            ids = ", ".join(str(i) for i in range(len(self.storage_hosts)))
            text += f'[[volumes]]\nname = "vol"\nsize = "{volume_size}"\nnodes = [{ids}]\n'
        return text

    # ---- processes ----

    def hosts(self):
        """Every host with a process, in start order."""
        seen = []
        for h in self.storage_hosts + self.kv_hosts + self.proxy_hosts:
            if h not in seen:
                seen.append(h)
        return seen

    def start(self):
        """Starts `up` on every host, storage hosts first, then kv-node hosts
        (all at once), then proxy hosts; returns once every one is ready."""
        for group in (self.storage_hosts, self.kv_hosts, self.proxy_hosts):
            pending = [h for h in group if h not in self.ups]
            for h in pending:
                self.launch(h)
            for h in pending:
                self.await_ready(h)

    def start_host(self, h):
        self.launch(h)
        self.await_ready(h)

    def launch(self, h):
        assert RAMPART.exists(), f"{RAMPART} is missing: run `make build` first"
        self.runs[h] = self.runs.get(h, 0) + 1
        out = self.tmp / f"up-h{h}-{self.runs[h]}.stdout"
        err = self.tmp / f"up-h{h}-{self.runs[h]}.stderr"
        data = self.tmp / f"data-h{h}"
        with open(out, "wb") as o, open(err, "wb") as e:
            self.ups[h] = self.bed.popen(h, [RAMPART, "--config", self.config, "up",
                                             "--data-dir", data], stdout=o, stderr=e)
        self.outputs[h] = (out, err)

    def stdout(self, h):
        return self.outputs[h][0].read_text(errors="replace")

    def stderr(self, h):
        return self.outputs[h][1].read_text(errors="replace")

    def await_ready(self, h):
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if "\nready" in "\n" + self.stdout(h):
                return
            if self.ups[h].poll() is not None:
                raise AssertionError(f"rampart up on host {h} exited with "
                                     f"{self.ups[h].returncode} before ready:\n{self.stderr(h)}")
            time.sleep(0.05)
        raise AssertionError(f"rampart up on host {h} not ready after {READY_TIMEOUT_S} s:\n"
                             f"{self.stdout(h)}\n{self.stderr(h)}")

    def stop_host(self, h):
        """SIGTERM to host h's `up` (by its PID), SIGKILL after 10 s."""
        p = self.ups.pop(h, None)
        if p is None or p.poll() is not None:
            return
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)

    def forget_host(self, h):
        """After bed.kill_host(h): its `up` is gone."""
        p = self.ups.pop(h, None)
        if p is not None:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass

    def stop(self):
        for h in reversed(self.hosts()):
            self.stop_host(h)

    def logs(self):
        """Every `up`'s stderr so far (the processes' logs), for messages."""
        out = ""
        for f in sorted(self.tmp.glob("up-h*.stderr")):
            out += f"---- {f.name}\n{f.read_text(errors='replace')[-4000:]}\n"
        return out

    # ---- addresses and clients ----

    def proxy_addresses(self):
        return [f"{self.bed.addr(h)}:{PROXY_PORT}" for h in self.proxy_hosts]

    def node_pids(self, h):
        """{node id: pid} of the kv-nodes host h's `up` started."""
        return {int(n): int(p) for n, p in
                re.findall(r"^node (\d+): pid (\d+),", self.stdout(h), re.M)}

    def rampart(self, h, args, timeout=120, config=None):
        """`rampart --config FILE ARGS` on host h, to completion."""
        cfg = config or self.config
        return self.bed.run(h, [RAMPART, "--config", cfg, *args], timeout=timeout)
