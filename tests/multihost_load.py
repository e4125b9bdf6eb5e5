#!/usr/bin/env python3
"""A bounded load through one Redis-protocol server with a ledger: the fault
tests of tests/test_multihost.py run it on a client host while they cut a
host off or kill it, then judge every request by when it ran.

Threads t = 0..T-1 each own the keys k with k % T == t, so the values of a
key are written by one thread in order: SET k "k:<seq>" with seq 1, 2, ...
Each thread alternates a SET of one of its keys and a GET of any key, one
request at a time, until --seconds passed. First every key is written once
(seq 1, all must succeed: the cluster is healthy then).

Prints one JSON object:
  ops:   [[start (unix s), seconds, "set"|"get", key, ok, error or ""], ...]
  acked: {key: the highest seq a SET acknowledged}
  final: {key: the seq a last GET of every key returned (after the run,
          retried until it succeeds or --final-seconds pass), or null}
"""
import argparse
import json
import random
import sys
import threading
import time

import redis


def connect(address, timeout_s):
    host, _, port = address.rpartition(":")
    return redis.Redis(host=host, port=int(port), socket_timeout=timeout_s,
                       decode_responses=True)


def seq_of(value):
    return int(value.split(":", 1)[1]) if value else 0


def worker(args, t, deadline, ops, acked, lock):
    r = connect(args.server, args.request_timeout)
    rng = random.Random(t)
    mine = [k for k in range(args.keys) if k % args.threads == t]
    seq = {k: 1 for k in mine}  # seq 1 was the initial load
    log = []
    while time.time() < deadline:
        for op in ("set", "get"):
            if op == "set":
                k = rng.choice(mine)
                seq[k] += 1
                call = lambda: r.set(f"key{k}", f"{k}:{seq[k]}")  # noqa: E731
            else:
                k = rng.randrange(args.keys)
                call = lambda: r.get(f"key{k}")  # noqa: E731
            start = time.time()
            ok, error = True, ""
            try:
                call()
            except redis.RedisError as e:  # the request failed: a reply error or a timeout
                ok, error = False, f"{type(e).__name__}: {e}"
            log.append([start, time.time() - start, op, k, ok, error])
            if ok and op == "set":
                with lock:
                    acked[k] = max(acked.get(k, 0), seq[k])
    with lock:
        ops.extend(log)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", required=True, help="HOST:PORT")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--keys", type=int, default=64)
    ap.add_argument("--request-timeout", type=float, default=30.0)
    ap.add_argument("--final-seconds", type=float, default=30.0)
    args = ap.parse_args()
    r = connect(args.server, args.request_timeout)
    acked = {}
    for k in range(args.keys):
        r.set(f"key{k}", f"{k}:1")
        acked[k] = 1
    ops, lock = [], threading.Lock()
    deadline = time.time() + args.seconds
    threads = [threading.Thread(target=worker, args=(args, t, deadline, ops, acked, lock))
               for t in range(args.threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    final = {}
    stop = time.time() + args.final_seconds
    for k in range(args.keys):
        while True:
            try:
                final[k] = seq_of(r.get(f"key{k}"))
                break
            except redis.RedisError:
                if time.time() > stop:
                    final[k] = None
                    break
                time.sleep(0.1)
    print(json.dumps({"ops": ops, "acked": acked, "final": final}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
