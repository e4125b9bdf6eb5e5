#!/usr/bin/env python3
"""The multi-host benchmarks (issue "Across hosts"), side by side in one run
on hosts made of network namespaces on one machine (tests/netbed.py: a veth
pair per host into a bridge; 10.213.0.1..7; every host shares the machine's
cores). Needs root.

  1. seed 000's micro-benchmark across hosts: `rampart bench txn` on host 7
     against 4 kv-nodes on hosts 1-4 (1 partition each) at the Fig. 4 point
     (8-key transactions, 95 % reads, 1,000 uniform keys, 1 KiB values, 2
     client threads, spin_us = 0): RAMP over tcp sockets, RAMP over UCX
     two-sided messages, RAMP with GET*/PUT+ over UCX (whose one-sided
     operations are software requests over TCP between hosts), and the
     no-isolation bound with GET*/PUT+.
  2. The proxy benchmark across hosts: redis-benchmark -c 50 on host 7 against
     rampart (4 kv-nodes on hosts 1-4, the proxy on host 5; ucx) and against
     twemproxy on host 5 in front of 4 redis-server on hosts 1-4; SET, GET,
     MSET of 4 keys, MGET of 4 keys at -P 1 and -P 16, after 100,000 keys
     were loaded.
  3. The cost of one connection with its handshake (`rampart bench connect`),
     to a kv-node on the same host and on another, tcp and ucx, with and
     without a cluster secret.

  bench/multihost.sh [--reps 3] [--seconds 5] [--parts txn,proxy,connect]
                     [--out bench/results/multihost]       (as root)

Every run of a point is one round over its systems (alternating), REPS
rounds; each point keeps the median and the spread (min, max). Writes
OUT/summary.json and OUT/summary.txt (the tables, also printed) and, with
bench/plot_multihost.py, OUT/multihost.png. Every process is stopped by PID
and every namespace removed on exit, also on failure.
"""
import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import netbed  # noqa: E402
from multihost import RAMPART, HostCluster  # noqa: E402

CLIENT = 6
KV_HOSTS = [0, 1, 2, 3]
PROXY_HOST = 4
KEYS = 100_000
CLIENTS = 50
TXN_MODES = [  # label, backend, isolation, get, put
    ("ramp-tcp", "tcp", "ramp", "rpc", "rpc"),
    ("ramp-ucx-2sided", "ucx", "ramp", "rpc", "rpc"),
    ("ramp-ucx-get*put+", "ucx", "ramp", "read", "ring"),
    ("none-ucx-get*put+", "ucx", "none", "read", "ring"),
]
PROXY_TESTS = {  # label: redis-benchmark arguments after the options
    "set": ["-t", "set"],
    "get": ["-t", "get"],
    "mset4": ["mset"] + [a for _ in range(4) for a in ("key:__rand_int__", "xxx")],
    "mget4": ["mget"] + ["key:__rand_int__"] * 4,
}
N = {1: 40_000, 16: 200_000}  # requests per point at -P 1 / -P 16


def median_spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "runs": values}


# ---- 1. transactions ----

def txn_round(bed, tmp, seconds, rep):
    """One run of every mode, each backend's on a cluster of its own (one at a
    time: they share the hosts' ports)."""
    out = {}
    for backend in ("tcp", "ucx"):
        cluster = txn_cluster(bed, tmp / f"txn-{backend}-{rep}", backend)
        cluster.start()
        try:
            for label, b, isolation, get, put in TXN_MODES:
                if b != backend:
                    continue
                path = cluster.tmp / f"txn-{label}.json"
                r = cluster.rampart(CLIENT, [
                    "bench", "txn", "--isolation", isolation, "--get", get, "--put", put,
                    "--txn-size", "8", "--read-ratio", "0.95", "--keys", "1000",
                    "--value-size", "1024", "--threads", "2", "--seconds", str(seconds),
                    "--json", str(path)], timeout=seconds * 4 + 120)
                if r.returncode != 0:
                    raise SystemExit(f"bench txn {label} failed:\n{r.stdout}\n{r.stderr}")
                res = json.loads(path.read_text())["results"]
                if res["errors"]:
                    raise SystemExit(f"bench txn {label}: {res['errors']} errors:\n{r.stdout}")
                out[label] = res
                print(f"  {label:20s} {res['txn_per_sec']:10.0f} txn/s  "
                      f"p50 {res['p50_ns'] / 1000:7.0f} us")
        finally:
            cluster.stop()
    return out


def txn_cluster(bed, tmp, backend):
    c = HostCluster(bed, tmp, backend=backend, kv_hosts=KV_HOSTS,
                    proxy_hosts=[], kv_settings={"grace_ms": 1000, "log": '"none"'})
    c.config.write_text(c.config.read_text().replace(
        "[transport]\n", "[transport]\nspin_us = 0\n"))
    return c


# ---- 2. the proxy against twemproxy ----

def load_keys(bed, address):
    host, port = address.split(":")
    code = ("import redis,sys\n"
            f"r=redis.Redis(host='{host}',port={port})\n"
            f"for lo in range(0,{KEYS},1000):\n"
            "  p=r.pipeline(transaction=False)\n"
            f"  [p.set(b'key:%012d'%i,b'xxx') for i in range(lo,min({KEYS},lo+1000))]\n"
            "  assert all(x is True for x in p.execute())\n"
            f"assert r.get(b'key:%012d'%({KEYS}-1))==b'xxx'\n")
    r = bed.run(CLIENT, [sys.executable, "-c", code], timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"loading {KEYS} keys into {address} failed:\n{r.stderr}")


def redis_benchmark(bed, address, test, pipeline):
    host, port = address.split(":")
    args = ["redis-benchmark", "-h", host, "-p", port, "-c", str(CLIENTS), "-r", str(KEYS),
            "-n", str(N[pipeline] // (2 if test.startswith("m") else 1)), "-P", str(pipeline),
            "--csv", *PROXY_TESTS[test]]
    r = bed.run(CLIENT, args, timeout=600)
    if r.returncode != 0 or "error" in r.stderr.lower():
        raise SystemExit(f"redis-benchmark {test} -P {pipeline} at {address} failed:\n"
                         f"{r.stdout}\n{r.stderr}")
    rows = [line for line in r.stdout.splitlines() if line and not line.startswith('"test"')]
    return float(rows[-1].split(",")[1].strip('"'))


class Twemproxy:
    """nutcracker on the proxy host in front of redis-server on the kv hosts."""

    def __init__(self, bed, tmp):
        self.bed, self.tmp, self.procs = bed, tmp, []

    def start(self):
        for h in KV_HOSTS:
            self.procs.append(self.bed.popen(h, [
                "redis-server", "--bind", self.bed.addr(h), "--port", "6379", "--save", "",
                "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no",
                "--logfile", str(self.tmp / f"redis-h{h}.log")]))
        conf = self.tmp / "nutcracker.yml"
        servers = "".join(f"    - {self.bed.addr(h)}:6379:1 redis-{h}\n" for h in KV_HOSTS)
        conf.write_text(f"bench:\n  listen: {self.bed.addr(PROXY_HOST)}:6380\n  hash: fnv1a_64\n"
                        "  distribution: ketama\n  redis: true\n  auto_eject_hosts: false\n"
                        f"  servers:\n{servers}")
        time.sleep(0.5)
        self.procs.append(self.bed.popen(PROXY_HOST, [
            "nutcracker", "-c", str(conf), "-s", "22222", "-o", str(self.tmp / "nutcracker.log")]))
        address = f"{self.bed.addr(PROXY_HOST)}:6380"
        ok = netbed.wait_for(lambda: self.bed.run(CLIENT, [
            "redis-cli", "-h", self.bed.addr(PROXY_HOST), "-p", "6380", "ping"]).stdout.strip()
            == "PONG", 15)
        if not ok:
            raise SystemExit("twemproxy did not answer PING")
        return address

    def stop(self):
        for p in reversed(self.procs):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        self.procs = []


def proxy_round(bed, addresses):
    out = {}
    for test in PROXY_TESTS:
        for pipeline in (1, 16):
            for system, address in addresses.items():
                rps = redis_benchmark(bed, address, test, pipeline)
                out[f"{system}/{test}/P{pipeline}"] = rps
                print(f"  {system:10s} {test:6s} -P {pipeline:2d} {rps:12.0f} requests/s")
    return out


# ---- 3. connections ----

def connect_costs(bed, tmp):
    out = {}
    for backend in ("tcp", "ucx"):
        for secret in (None, "0123456789abcdef0123456789abcdef"):
            c = HostCluster(bed, tmp / f"connect-{backend}-{bool(secret)}", backend=backend,
                            kv_hosts=[0], proxy_hosts=[], secret=secret,
                            kv_settings={"log": '"none"'})
            c.start()
            try:
                for where, host in (("same host", 0), ("other host", CLIENT)):
                    path = c.tmp / f"connect-{host}.json"
                    r = c.rampart(host, ["bench", "connect", "--node", "0", "--count", "300",
                                         "--json", str(path)])
                    if r.returncode != 0:
                        raise SystemExit(f"bench connect failed:\n{r.stdout}\n{r.stderr}")
                    res = json.loads(path.read_text())["results"]
                    key = f"{backend}/{'secret' if secret else 'no secret'}/{where}"
                    out[key] = {"p50_us": res["p50_ns"] / 1000, "p99_us": res["p99_ns"] / 1000}
                    print(f"  {key:32s} p50 {res['p50_ns'] / 1000:8.0f} us  "
                          f"p99 {res['p99_ns'] / 1000:8.0f} us")
            finally:
                c.stop()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0, help="per bench txn point")
    ap.add_argument("--out", default=str(ROOT / "bench/results/multihost"))
    ap.add_argument("--parts", default="txn,proxy,connect")
    args = ap.parse_args()
    why = netbed.available()
    if why:
        raise SystemExit(f"multihost.py: {why}")
    if not RAMPART.exists():
        raise SystemExit(f"multihost.py: no binary at {RAMPART} (make build)")
    for tool in ("redis-server", "redis-benchmark", "redis-cli", "nutcracker"):
        if shutil.which(tool) is None:
            raise SystemExit(f"multihost.py: {tool} not found (make deps)")
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    parts = args.parts.split(",")
    summary = {"configuration": {
        "hosts": "7 network namespaces on one machine, veth pairs into one bridge",
        "cores": len(__import__("os").sched_getaffinity(0)), "reps": args.reps,
        "txn": "bench txn: 4 kv-nodes x 1 partition on hosts 1-4, client on host 7, 2 threads, "
               "txn size 8, 95 % reads, 1,000 keys, 1 KiB values, spin_us 0, kv.log none",
        "proxy": "redis-benchmark -c 50 -r 100000 on host 7; rampart: 4 kv-nodes on hosts 1-4 "
                 "+ proxy on host 5 (ucx, embedded defaults otherwise, redo logs on); twemproxy "
                 "on host 5 + 4 redis-server on hosts 1-4 (no persistence)"}}
    with tempfile.TemporaryDirectory() as tmpdir, netbed.NetBed(7) as bed:
        tmp = pathlib.Path(tmpdir)
        if "txn" in parts:
            print("== seed 000's micro-benchmark across hosts")
            runs = [txn_round(bed, tmp, args.seconds, rep) for rep in range(args.reps)]
            summary["txn"] = {m[0]: median_spread([r[m[0]]["txn_per_sec"] for r in runs])
                              for m in TXN_MODES}
        if "proxy" in parts:
            print("== the proxy against twemproxy across hosts")
            runs = []
            for rep in range(args.reps):
                rampart = HostCluster(bed, tmp / f"proxy-{rep}", backend="ucx",
                                      kv_hosts=KV_HOSTS, proxy_hosts=[PROXY_HOST])
                rampart.start()
                twem = Twemproxy(bed, tmp)
                try:
                    addresses = {"rampart": rampart.proxy_addresses()[0]}
                    addresses["twemproxy"] = twem.start()
                    for a in addresses.values():
                        load_keys(bed, a)
                    runs.append(proxy_round(bed, addresses))
                finally:
                    twem.stop()
                    rampart.stop()
            summary["proxy"] = {k: median_spread([r[k] for r in runs]) for k in runs[0]}
        if "connect" in parts:
            print("== the cost of a connection and its handshake")
            summary["connect"] = connect_costs(bed, tmp)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    text = format_summary(summary)
    (out / "summary.txt").write_text(text)
    print(text)
    plot = ROOT / "bench/plot_multihost.py"
    python = ROOT / "bench/.venv/bin/python"  # matplotlib (bench/multihost.sh makes it)
    subprocess.run([str(python if python.exists() else sys.executable), str(plot),
                    str(out / "summary.json"), str(out / "multihost.png")], check=False)
    return 0


def format_summary(s):
    lines = []
    if "txn" in s:
        base = s["txn"]["ramp-tcp"]["median"]
        lines.append("seed 000, Fig. 4 point across hosts (txn/s: median [min-max]; x RAMP over tcp)")
        for label, v in s["txn"].items():
            lines.append(f"  {label:20s} {v['median']:9.0f} [{v['min']:.0f}-{v['max']:.0f}]"
                         f"  {v['median'] / base:5.2f}x")
    if "proxy" in s:
        lines.append("proxy across hosts (requests/s: median [min-max]; rampart / twemproxy)")
        for test in PROXY_TESTS:
            for p in (1, 16):
                r = s["proxy"][f"rampart/{test}/P{p}"]
                t = s["proxy"][f"twemproxy/{test}/P{p}"]
                lines.append(f"  {test:6s} -P {p:2d}  rampart {r['median']:9.0f} "
                             f"[{r['min']:.0f}-{r['max']:.0f}]  twemproxy {t['median']:9.0f} "
                             f"[{t['min']:.0f}-{t['max']:.0f}]  {r['median'] / t['median']:5.2f}x")
    if "connect" in s:
        lines.append("one connection + handshake (bench connect, 300 each)")
        for k, v in s["connect"].items():
            lines.append(f"  {k:32s} p50 {v['p50_us']:8.0f} us  p99 {v['p99_us']:8.0f} us")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
