"""A client killed (SIGKILL) in the middle of a RAMP write leaves no fractured
read behind, against real kv-node processes started by `rampart up`:

- killed after PREPARE, before any COMMIT: readers see the old values on
  every key (prepared versions stay invisible);
- killed after its COMMIT reached only one partition: RAMP readers see the new
  value on every key (round 2 fetches the prepared versions the committed
  one's siblings name), while a reader without isolation sees the fracture
  (so the check is not vacuous).

`rampart check write --stop-after ... --hang` performs the write up to that
point and then waits; the test kills it by PID.
"""
import os
import signal
import subprocess
import time

from conftest import RAMPART

KEYS = [f"death-{i}" for i in range(8)]  # spans the 4 partitions (xxh3 placement)


def rampart(cluster, *args, timeout=60):
    cmd = [str(RAMPART), "--config", str(cluster.config), "--log-level", "warn", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def read(cluster, isolation):
    r = rampart(cluster, "check", "read", "--keys", ",".join(KEYS), "--isolation", isolation,
                "--transport", cluster.backend, "--client-id", "7201")
    assert r.returncode == 0, r.stderr
    return dict(line.split("=", 1) for line in r.stdout.splitlines())


def write_and_die(cluster, value, stop_after, tmp_path):
    out = tmp_path / f"writer-{value}.out"
    with open(out, "wb") as f:
        proc = subprocess.Popen(
            [str(RAMPART), "--config", str(cluster.config), "check", "write",
             "--keys", ",".join(KEYS), "--value", value, "--stop-after", stop_after, "--hang",
             "--transport", cluster.backend, "--client-id", "7202"],
            stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while "stopped" not in out.read_text(errors="replace"):
            assert proc.poll() is None, out.read_text(errors="replace")
            assert time.monotonic() < deadline, "the writer never reached its stop point"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL


def test_killed_writer_leaves_no_fractured_read(cluster, tmp_path):
    r = rampart(cluster, "check", "write", "--keys", ",".join(KEYS), "--value", "v0",
                "--transport", cluster.backend, "--client-id", "7200")
    assert r.returncode == 0, r.stderr

    write_and_die(cluster, "v1", "prepare", tmp_path)
    assert set(read(cluster, "ramp").values()) == {"v0"}
    assert set(read(cluster, "none").values()) == {"v0"}

    write_and_die(cluster, "v2", "first-commit", tmp_path)
    assert set(read(cluster, "ramp").values()) == {"v2"}, "RAMP must repair a partial commit"
    assert len(set(read(cluster, "none").values())) > 1, \
        "without isolation the partial commit should show as a fracture"
