"""A multi-host test bed: N hosts made of network namespaces on one machine.

    with NetBed(3) as bed:                  # hosts 10.213.0.1 .. 10.213.0.3
        p = bed.popen(0, ["rampart", "up", "--config", path], stdout=f)
        bed.run(1, ["redis-cli", "-h", bed.addr(0), "ping"])
        bed.partition(2); ...; bed.heal(2)  # link down / up inside host 2
        bed.kill_host(1)                    # SIGKILL every process of host 1

Each host is a namespace of its own with `lo` up and one interface, eth0,
carrying its address in 10.213.0.0/24; the hosts' eth0s are veth pairs whose
other ends hang on a bridge that lives in one more namespace (the switch). So
nothing of a bed is visible in the machine's own namespace, the subnet exists
only inside the bed, and beds of concurrent runs (same addresses) never meet:
no packet can leave the machine.

Processes started in a host are children of this process, recorded by PID;
kill_host() and close() also SIGKILL the processes their namespace holds
(`ip netns pids`, which names exactly the processes of our own namespace: no
name patterns). close() removes every namespace the bed made; it runs on
exit from the `with` block, on garbage collection and at interpreter exit,
and a new bed first removes beds left by test processes that died (their
names carry the owner's PID).

Needs root (CI runs as root) and iproute2.
"""
import atexit
import os
import signal
import subprocess
import time

PREFIX = "rpbed"   # namespace names: rpbed-<owner pid>-<bed>-h<i> and -sw
SUBNET = "10.213.0"
_beds_made = 0


def _ip(*args, check=True):
    """Runs `ip ARGS`; raises with ip's own message on failure when check."""
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def _namespaces():
    out = _ip("netns", "list", check=False)
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _kill_namespace_processes(ns):
    """SIGKILLs the processes whose network namespace is `ns` (ours)."""
    out = _ip("netns", "pids", ns, check=False)
    for pid in (int(p) for p in out.split() if p.isdigit()):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _remove_namespace(ns):
    _kill_namespace_processes(ns)
    _ip("netns", "del", ns, check=False)


def remove_orphans():
    """Removes the namespaces of beds whose owning process is gone."""
    for ns in _namespaces():
        parts = ns.split("-")
        if len(parts) >= 3 and parts[0] == PREFIX and parts[1].isdigit():
            if not _pid_alive(int(parts[1])):
                _remove_namespace(ns)


def available():
    """Why a bed cannot be made here, or "" when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    try:
        _ip("netns", "list")
    except (OSError, RuntimeError) as e:
        return f"iproute2 unusable: {e}"
    return ""


class NetBed:
    """N hosts (namespaces) on one bridge; see the module docstring."""

    def __init__(self, hosts, subnet=SUBNET):
        global _beds_made
        if not 1 <= hosts <= 200:
            raise ValueError(f"a bed has 1..200 hosts, not {hosts}")
        remove_orphans()
        _beds_made += 1
        self.name = f"{PREFIX}-{os.getpid()}-{_beds_made}"
        self.subnet = subnet
        self.hosts = [f"{self.name}-h{i}" for i in range(hosts)]
        self.switch = f"{self.name}-sw"
        self.procs = []  # (host index, Popen)
        self._made = []  # namespaces created so far, removed by close()
        atexit.register(self.close)
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def _build(self):
        _ip("netns", "add", self.switch)
        self._made.append(self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for i, ns in enumerate(self.hosts):
            _ip("netns", "add", ns)
            self._made.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            # Both ends are made in the switch; one moves into the host at once.
            _ip("-n", self.switch, "link", "add", f"p{i}", "type", "veth",
                "peer", "name", "eth0", "netns", ns)
            _ip("-n", self.switch, "link", "set", f"p{i}", "master", "br0")
            _ip("-n", self.switch, "link", "set", f"p{i}", "up")
            _ip("-n", ns, "addr", "add", f"{self.addr(i)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")

    # ---- addresses and processes ----

    def addr(self, host):
        return f"{self.subnet}.{host + 1}"

    def exec_prefix(self, host):
        """The command prefix that runs a program inside `host`."""
        return ["ip", "netns", "exec", self.hosts[host]]

    def popen(self, host, args, **kwargs):
        """Starts `args` inside `host` (`ip netns exec` execs it: the PID is
        the program's). Recorded; close() kills it if it still runs."""
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        p = subprocess.Popen(self.exec_prefix(host) + [str(a) for a in args], **kwargs)
        self.procs.append((host, p))
        return p

    def run(self, host, args, timeout=60, check=False, **kwargs):
        """Runs `args` inside `host` to completion (bounded by timeout)."""
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("text", True)
        return subprocess.run(self.exec_prefix(host) + [str(a) for a in args],
                              timeout=timeout, check=check, **kwargs)

    def pids(self, host):
        """PIDs of every process in `host`'s namespace."""
        out = _ip("netns", "pids", self.hosts[host], check=False)
        return [int(p) for p in out.split() if p.isdigit()]

    # ---- faults ----

    def partition(self, host):
        """Cuts `host` off: its eth0 goes down inside its namespace."""
        _ip("-n", self.hosts[host], "link", "set", "eth0", "down")

    def heal(self, host):
        _ip("-n", self.hosts[host], "link", "set", "eth0", "up")

    def kill_host(self, host):
        """SIGKILLs every process of `host` (a machine that lost power);
        returns their PIDs. The namespace and its address stay."""
        pids = self.pids(host)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for h, p in self.procs:
            if h == host:
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
        return pids

    # ---- teardown ----

    def close(self):
        """Kills every process of the bed and removes its namespaces. Idempotent."""
        for _, p in self.procs:
            if p.poll() is None:
                try:
                    p.kill()
                except ProcessLookupError:
                    pass
        for ns in reversed(self._made):
            _remove_namespace(ns)
        for _, p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._made = []
        self.procs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to do
            pass


def wait_for(predicate, timeout_s, interval_s=0.05):
    """Polls `predicate` until it is true or timeout_s passed; returns its last value."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval_s)
