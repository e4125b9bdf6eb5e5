#!/usr/bin/env python3
"""Read-atomic checker through a Redis-protocol server, with redis-py MSET and
MGET from several processes (issue 5: "the read-atomic checker driven through
the proxy").

Design (sound and complete for fractured reads):
- Writer w (one process) owns its own keys K_w = {<run>:w<w>:<j>}, j <
  --keys-per-writer; nobody else writes them. Its i-th write (seq i = 1, 2,
  ...) is one MSET of --set-size random keys of K_w, every key set to the
  same value "w<w>-<i>:<j1>,<j2>,...": the writer, the seq and the full key
  set of that MSET. The writer waits for each MSET's reply before the next,
  so on each of its keys the seqs grow in commit order.
- A reader (one process) picks a writer w at random and MGETs --set-size
  random keys of K_w. For every fetched key a whose value comes from write
  T = (w, s) and every other fetched key b that T also wrote, the read must
  see b at T or later: seq(b) >= s (a missing b counts as seq 0). A read with
  seq(b) < s saw a's version of T and b's version from before T: it is
  FRACTURED. Because only w writes K_w and its seqs order its writes, this is
  exactly the read-atomic condition on the keys the read fetched.
  "checked" counts the (a, b) pairs where the condition could be tested.

Every run has a fresh random key prefix (<run>), so values left by earlier
runs against the same server never mix with this one's seqs.

--split-writes makes writers SET the keys one by one instead of one MSET: not
atomic on any server, so it must fracture (shows the checker is not vacuous).

--server HOST:PORT, repeated, spreads the processes over several servers of
one store (the proxies of a rampart cluster on several hosts): writer i and
reader i use server i modulo their number, so reads meet writes made through
the other servers.

Prints one JSON object. Exit code: 0 when no read fractured (with
--expect-fractures: when at least one did), 1 otherwise, 2 on an error
(connection, protocol, a value no writer wrote).
"""
import argparse
import json
import multiprocessing as mp
import os
import random
import sys
import time

import redis

EXAMPLES = 5  # fractured reads reported in full


def parse_value(raw, writer):
    """(seq, key indices) of a value written by `writer`; ValueError if the
    value is not one of its writes."""
    head, _, keys = raw.partition(":")
    who, _, seq = head.partition("-")
    if who != f"w{writer}" or not seq.isdigit() or not keys:
        raise ValueError(f"value {raw!r} is not a write of w{writer}")
    return int(seq), {int(j) for j in keys.split(",")}


def connect(args, index):
    host, port = args.servers[index % len(args.servers)]
    return redis.Redis(host=host, port=port, password=args.password,
                       decode_responses=True, socket_timeout=30)


def key_name(args, writer, j):
    return f"{args.run}:w{writer}:{j}"


def writer_main(args, writer, stop, deadline, out):
    rng = random.Random(f"{args.run}-w{writer}")
    result = {"role": "writer", "id": writer, "writes": 0}
    try:
        r = connect(args, writer)
        seq = 0
        while not stop.is_set() and time.time() < deadline:
            seq += 1
            idx = sorted(rng.sample(range(args.keys_per_writer), args.set_size))
            value = f"w{writer}-{seq}:" + ",".join(map(str, idx))
            keys = [key_name(args, writer, j) for j in idx]
            if args.split_writes:
                for k in keys:
                    r.set(k, value)
            else:
                r.mset({k: value for k in keys})
            result["writes"] = seq
    except Exception as e:  # noqa: BLE001 (reported as an error of the run)
        result["error"] = f"writer {writer}: {e!r}"
    out.put(result)


def reader_main(args, reader, deadline, out):
    rng = random.Random(f"{args.run}-r{reader}")
    result = {"role": "reader", "id": reader, "reads": 0, "fractured": 0, "checked": 0,
              "examples": []}
    try:
        r = connect(args, reader)
        while result["reads"] < args.reads and time.time() < deadline:
            writer = rng.randrange(args.writers)
            idx = rng.sample(range(args.keys_per_writer), args.set_size)
            values = r.mget([key_name(args, writer, j) for j in idx])
            result["reads"] += 1
            seen = {}  # key index -> (seq, key set of its write)
            for j, v in zip(idx, values):
                if v is None:
                    seen[j] = (0, set())
                else:
                    seq, keys = parse_value(v, writer)
                    if j not in keys:
                        raise ValueError(f"key {j} holds {v!r}, a write that did not include it")
                    seen[j] = (seq, keys)
            fractured = []
            for a, (seq_a, keys_a) in seen.items():
                for b in keys_a:
                    if b == a or b not in seen:
                        continue
                    result["checked"] += 1
                    if seen[b][0] < seq_a:
                        fractured.append((a, b))
            if fractured:
                result["fractured"] += 1
                if len(result["examples"]) < EXAMPLES:
                    result["examples"].append({
                        "writer": writer, "pairs": fractured,
                        "read": {str(j): v for j, v in zip(idx, values)}})
    except Exception as e:  # noqa: BLE001 (reported as an error of the run)
        result["error"] = f"reader {reader}: {e!r}"
    out.put(result)


def run(args):
    start = time.time()
    deadline = start + args.seconds
    out = mp.Queue()
    stop = mp.Event()
    writers = [mp.Process(target=writer_main, args=(args, w, stop, deadline + 5, out))
               for w in range(args.writers)]
    readers = [mp.Process(target=reader_main, args=(args, i, deadline, out))
               for i in range(args.readers)]
    for p in writers + readers:
        p.start()
    results, errors = [], []
    try:
        # Readers end by count or deadline; then the writers are told to stop.
        want = len(writers) + len(readers)
        readers_done = 0
        hard_deadline = deadline + 30
        while len(results) < want and time.time() < hard_deadline:
            try:
                res = out.get(timeout=0.5)
            except Exception:  # noqa: BLE001 (queue.Empty)
                continue
            results.append(res)
            if res["role"] == "reader":
                readers_done += 1
                if readers_done == len(readers):
                    stop.set()
        if len(results) < want:
            errors.append(f"{want - len(results)} worker(s) did not finish in time")
    finally:
        stop.set()
        for p in writers + readers:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()  # by its pid
                p.join(timeout=5)
    reads = [x for x in results if x["role"] == "reader"]
    summary = {
        "run": args.run,
        "servers": [f"{h}:{p}" for h, p in args.servers],
        "mode": "split-writes" if args.split_writes else "mset",
        "writers": args.writers, "readers": args.readers,
        "keys_per_writer": args.keys_per_writer, "set_size": args.set_size,
        "writes": sum(x["writes"] for x in results if x["role"] == "writer"),
        "reads": sum(x["reads"] for x in reads),
        "checked": sum(x["checked"] for x in reads),
        "fractured": sum(x["fractured"] for x in reads),
        "seconds": round(time.time() - start, 2),
        "examples": [e for x in reads for e in x["examples"]][:EXAMPLES],
        "errors": errors + [x["error"] for x in results if "error" in x],
    }
    return summary


def checked_summary(completed, min_reads):
    """The summary of a finished checker run (a subprocess.CompletedProcess
    with text output) for a test: it printed one, had no errors, read at
    least `min_reads` times, wrote, and tested some pair. Raises
    AssertionError otherwise."""
    print(completed.stdout, completed.stderr)
    assert completed.stdout.strip(), (f"checker printed nothing (exit {completed.returncode}):\n"
                                      f"{completed.stderr}")
    summary = json.loads(completed.stdout.strip().splitlines()[-1])
    assert summary["errors"] == [], summary
    assert summary["reads"] >= min_reads and summary["writes"] > 0, summary
    assert summary["checked"] > 0, summary
    return summary


def until_fractured(run_once, attempts=3):
    """Calls `run_once()`, which runs the checker with --expect-fractures and
    returns (exit code, summary), until a run saw a fractured read (a few
    bounded attempts: fractures are likely, not certain, in one run).
    Returns the fractured reads of that run, 0 when no run saw one."""
    for _ in range(attempts):
        code, summary = run_once()
        if summary["fractured"]:
            assert code == 0, summary
            return summary["fractured"]
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int)
    ap.add_argument("--server", action="append", default=[], metavar="HOST:PORT",
                    help="a server of the store (repeatable); instead of --host/--port")
    ap.add_argument("--password", default=None)
    ap.add_argument("--writers", type=int, default=2)
    ap.add_argument("--readers", type=int, default=2)
    ap.add_argument("--keys-per-writer", type=int, default=16)
    ap.add_argument("--set-size", type=int, default=4, help="keys per MSET and per MGET")
    ap.add_argument("--seconds", type=float, default=5.0, help="bound of the run")
    ap.add_argument("--reads", type=int, default=20_000, help="reads per reader, at most")
    ap.add_argument("--split-writes", action="store_true",
                    help="SET the keys of a write one by one (not atomic)")
    ap.add_argument("--expect-fractures", action="store_true",
                    help="succeed only if some read fractured")
    ap.add_argument("--run", default=None, help="key prefix (default: a random one)")
    args = ap.parse_args(argv)
    if not 1 <= args.set_size <= args.keys_per_writer:
        ap.error("--set-size must be within 1..--keys-per-writer")
    if args.server and args.port is not None:
        ap.error("give --server or --host/--port, not both")
    if not args.server and args.port is None:
        ap.error("give --port (or --server HOST:PORT)")
    args.servers = []
    for s in args.server or [f"{args.host}:{args.port}"]:
        host, _, port = s.rpartition(":")
        if not host or not port.isdigit():
            ap.error(f"--server wants HOST:PORT, got {s!r}")
        args.servers.append((host, int(port)))
    args.run = args.run or f"ra{os.getpid()}x{random.randrange(1 << 30):x}"
    summary = run(args)
    print(json.dumps(summary), flush=True)
    if summary["errors"]:
        return 2
    fractured = summary["fractured"] > 0
    return 0 if fractured == args.expect_fractures else 1


if __name__ == "__main__":
    sys.exit(main())
