"""YCSB through the rampart binding (issue 6), end to end through ycsb/run.sh.

Each case is one `ycsb/run.sh` invocation: it starts its own `rampart up`
cluster (4 nodes x 1 partition, the proxy on), runs YCSB's load phase and a
run phase of a few seconds, and stops the cluster. A case fails when run.sh
fails or when YCSB's summary shows any failed operation (a `[READ-FAILED]`
line, a `Return=` other than OK/BATCHED_OK) or a zero throughput. The binding
is built by `make integration-test` (its dependency ycsb-build); run.sh would
build it otherwise.

resp mode goes through the proxy (Jedis, MULTI/HMSET/HGETALL); native mode
through librampart_jni with GET* reads and PUT+ writes over UCX, and its
clients' counters must show one-sided slot reads.
"""
import os
import re
import shutil
import signal
import subprocess

import pytest

from conftest import RAMPART, ROOT, Cluster, stop_cluster

RUN_SH = ROOT / "ycsb" / "run.sh"
RUN_SECONDS = 3
THREADS = 2
TIMEOUT_S = 90  # one run.sh: build check, cluster start, load, run, stop

pytestmark = pytest.mark.skipif(
    shutil.which("java") is None or shutil.which("mvn") is None,
    reason="java and mvn are not installed (make deps installs them)")

NATIVE_ONE_SIDED = ["-p", "rampart.get=read", "-p", "rampart.put=ring",
                    "-p", "rampart.transport=ucx", "-p", "rampart.stats=true"]

# workloada runs with YCSB's dataintegrity check: every read's values must be the
# deterministic ones its key and field were written with (its updates write one field of ten,
# which native mode merges into the stored record).
VERIFY = ["-p", "dataintegrity=true"]

CASES = {
    "resp-r50-txnlen4": ["-m", "resp", "-w", "r50", "-t", "4"],
    "resp-workloada-txnlen1": ["-m", "resp", "-w", "workloada", "-t", "1", *VERIFY],
    "native-r50-txnlen4": ["-m", "native", "-w", "r50", "-t", "4", *NATIVE_ONE_SIDED],
    "native-workloada-txnlen1": ["-m", "native", "-w", "workloada", "-t", "1", *VERIFY,
                                 *NATIVE_ONE_SIDED],
}


def run_sh(args, tmp_path, timeout_s=TIMEOUT_S):
    """Runs ycsb/run.sh in a session of its own. Past timeout_s it gets SIGTERM (its trap stops
    YCSB and the cluster), then, if still there, its process group SIGKILL; the test fails."""
    env = dict(os.environ, RAMPART_BIN=str(RAMPART))
    proc = subprocess.Popen([str(RUN_SH), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        pytest.fail(f"ycsb/run.sh {' '.join(args)} still running after {timeout_s} s\n"
                    f"stdout:\n{out}\nstderr:\n{err}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def phases(stdout):
    """{"load": [summary lines], "run": [...]} from run.sh's '== phase: ... ==' headers."""
    out, current = {}, None
    for line in stdout.splitlines():
        m = re.match(r"^== (load|run): ", line)
        if m:
            current = out.setdefault(m.group(1), [])
        elif current is not None:
            current.append(line)
    return out


def counts(lines, op):
    """{status: operations} of YCSB's `[OP], Return=STATUS, N` lines."""
    result = {}
    for line in lines:
        m = re.match(rf"^\[{op}\], Return=(\w+), (\d+)$", line)
        if m:
            result[m.group(1)] = int(m.group(2))
    return result


def operations(lines, op):
    """YCSB's `[OP], Operations, N` count, 0 when the phase did no OP."""
    for line in lines:
        m = re.match(rf"^\[{re.escape(op)}\], Operations, (\d+)$", line)
        if m:
            return int(m.group(1))
    return 0


def check_summary(lines, phase, report):
    """No failed operation and a positive overall throughput. `report` (the command, its stdout
    and its stderr, where YCSB and the binding say why an operation failed) goes with every
    failure."""
    text = "\n".join(lines)
    failed = [l for l in lines if re.match(r"^\[[\w-]+-FAILED\]", l)
              or (re.match(r"^\[[\w-]+\], Return=", l)
                  and not re.search(r"Return=(OK|BATCHED_OK),", l))]
    assert not failed, f"{phase}: failed operations:\n" + "\n".join(failed) + "\n" + report
    m = re.search(r"^\[OVERALL\], Throughput\(ops/sec\), ([0-9.eE+-]+)$", text, re.M)
    assert m, f"{phase}: no [OVERALL] throughput:\n{text}\n{report}"
    assert float(m.group(1)) > 0, f"{phase}: zero throughput:\n{text}\n{report}"


@pytest.mark.parametrize("case", list(CASES))
def test_ycsb_run(case, tmp_path):
    args = [*CASES[case], "-s", str(RUN_SECONDS), "-T", str(THREADS), "-o", str(tmp_path / "logs")]
    r = run_sh(args, tmp_path)
    report = f"ycsb/run.sh {' '.join(args)}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    by_phase = phases(r.stdout)
    assert set(by_phase) == {"load", "run"}, report
    check_summary(by_phase["load"], "load", report)
    check_summary(by_phase["run"], "run", report)
    assert r.returncode == 0, report
    assert "DBException" not in r.stdout + r.stderr, report

    run = by_phase["run"]
    reads, updates = counts(run, "READ"), counts(run, "UPDATE")
    inserts = counts(by_phase["load"], "INSERT")
    if "-t 4" in " ".join(args):
        # Four distinct keys per transaction: each OK completes a transaction that holds at
        # least three BATCHED_OK operations (more when an operation merged into a pending key).
        for name, c in (("READ", reads), ("UPDATE", updates), ("INSERT", inserts)):
            assert c.get("OK", 0) > 0, f"no {name} transaction ran\n{report}"
            assert c.get("BATCHED_OK", 0) >= 3 * c["OK"], f"{name}: {c}\n{report}"
    else:
        for name, c in (("READ", reads), ("UPDATE", updates), ("INSERT", inserts)):
            assert c.get("OK", 0) > 0 and "BATCHED_OK" not in c, f"{name}: {c}\n{report}"
    if "dataintegrity=true" in args:
        verify = counts(run, "VERIFY")
        assert verify.get("OK", 0) == reads["OK"], f"VERIFY: {verify}\n{report}"
    # The load inserted every record: recordcount is 1,000 (r*) or 10,000 (workloada).
    records = 1000 if "r50" in args else 10000
    assert sum(inserts.values()) == records, report

    if "native" in args:
        # GET* did its job: the run's clients read slots one-sidedly.
        stats = re.findall(r"^rampart-ycsb: native client \d+ stats: (.*)$", r.stderr, re.M)
        assert stats, report
        slot_reads = sum(int(m) for s in stats for m in re.findall(r'"slot_reads":\s*(\d+)', s))
        assert slot_reads > 0, report


def test_ycsb_redis_layout_workloads_a_to_f(tmp_path):
    """YCSB's own redis binding's commands (RedisLayoutClient) through the proxy: 10,000 records
    loaded once, then workloads A-F (E's scans are ZRANGEBYSCORE on the key index, D and E insert
    more records), each run with no failed operation and a positive throughput."""
    cluster = Cluster("ucx", tmp_path, proxy=True)
    try:
        cluster.start()
        target = ["--no-cluster", "-d", "redis", "-T", str(THREADS), "-s", "2",
                  "-p", f"rampart.host={cluster.proxy['host']}",
                  "-p", f"rampart.port={cluster.proxy['port']}"]
        ops_seen = {}
        for workload in ("workloada", "workloadb", "workloadc", "workloadd", "workloade",
                         "workloadf"):
            args = [*target, "-w", workload] + ([] if workload == "workloada" else ["--no-load"])
            r = run_sh(args, tmp_path, timeout_s=150)
            report = f"ycsb/run.sh {' '.join(args)}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
            by_phase = phases(r.stdout)
            assert "run" in by_phase and (workload != "workloada" or "load" in by_phase), report
            if workload == "workloada":
                check_summary(by_phase["load"], "load", report)
                assert counts(by_phase["load"], "INSERT") == {"OK": 10000}, report
            check_summary(by_phase["run"], f"run of {workload}", report)
            assert r.returncode == 0, report
            for op in ("READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE"):
                ops_seen.setdefault(workload, {})[op] = operations(by_phase["run"], op)
        assert ops_seen["workloade"]["SCAN"] > 0, ops_seen
        assert ops_seen["workloadd"]["INSERT"] > 0 and ops_seen["workloadd"]["READ"] > 0, ops_seen
        assert ops_seen["workloadf"]["READ-MODIFY-WRITE"] > 0, ops_seen
        assert ops_seen["workloada"]["UPDATE"] > 0, ops_seen
    finally:
        stop_cluster(cluster)


def test_ycsb_bad_property_is_a_usage_error(tmp_path):
    """A property the binding refuses stops the run with its message and exit code 2."""
    r = run_sh(["--no-cluster", "--no-load", "-s", "1", "-T", "1", "-p", "rampart.port=1",
                "-p", "rampart.isolation=s2pl"], tmp_path, timeout_s=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "rampart.isolation=s2pl is not available with rampart.mode=resp" in r.stderr, r.stderr
    assert "[proxy] section" in r.stderr, r.stderr


def test_ycsb_run_sh_usage_errors(tmp_path):
    for args, message in ((["-m", "grpc"], "the mode is resp or native"),
                          (["-t", "0"], "txnlen is an integer >= 1"),
                          (["-w", "workloadz"], "no such workload"),
                          (["-d", "mongodb"], "the database is rampart or redis"),
                          (["-d", "redis", "-t", "4"], "one operation at a time"),
                          (["--no-cluster"], "needs -p rampart.port"),
                          (["-p", "rampart.transport=tcp", "-b", "ucx"], "runs ucx"),
                          (["--bogus"], "unknown argument")):
        r = run_sh(args, tmp_path, timeout_s=30)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert message in r.stderr, (args, r.stderr)
    r = run_sh(["--help"], tmp_path, timeout_s=30)
    assert r.returncode == 0 and "rampart.txnlen" in r.stdout
