"""A writer for the crash tests (tests/test_durability.py): writes through the proxy until it is
told to stop (SIGTERM), its time is up, or the cluster stops answering, and keeps a ledger of
every operation it sent and every one that was acknowledged.

    python durability_load.py --port P --writer W --seconds S --ledger FILE [--keep-going]

Ledger lines (one JSON object each, flushed before the next operation is sent):
    {"try": N, "op": "mset", "keys": [...], "value": "..."}   sent (outcome unknown yet)
    {"ack": N}                                                  acknowledged
Operations, chosen in turn:
    mset   three fresh keys f:W:N:{a,b,c} = "W:N:ppp..."  (nothing acknowledged may be lost)
    group  the writer's three keys g:W:{a,b,c} = N        (read atomic: all three equal after a crash)
    incr   one of the writer's counters c:W:{0..3}        (no lost and no doubled increment)
    hset   field N of the writer's hash h:W = "W:N:ppp..."
"""
import argparse
import json
import signal
import sys
import time

import redis

PAD = "p" * 300  # so that a few thousand operations write megabytes of log (checkpoints run)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--writer", type=int, required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--ledger", required=True)
    ap.add_argument("--keep-going", action="store_true",
                    help="go on after an error reply (the operation's outcome is unknown)")
    args = ap.parse_args()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    r = redis.Redis(host="127.0.0.1", port=args.port, socket_timeout=10)
    w = args.writer
    deadline = time.monotonic() + args.seconds
    with open(args.ledger, "w") as ledger:
        def log(entry):
            ledger.write(json.dumps(entry) + "\n")
            ledger.flush()
        n = 0
        while not stop and time.monotonic() < deadline:
            n += 1
            kind = ("mset", "group", "incr", "hset")[n % 4]
            if kind == "mset":
                keys = [f"f:{w}:{n}:{s}" for s in "abc"]
                entry = {"try": n, "op": kind, "keys": keys, "value": f"{w}:{n}:" + PAD}
                call = lambda: r.mset({k: entry["value"] for k in keys})  # noqa: E731
            elif kind == "group":
                keys = [f"g:{w}:{s}" for s in "abc"]
                entry = {"try": n, "op": kind, "keys": keys, "value": str(n)}
                call = lambda: r.mset({k: entry["value"] for k in keys})  # noqa: E731
            elif kind == "incr":
                entry = {"try": n, "op": kind, "keys": [f"c:{w}:{n % 3}"]}
                call = lambda: r.incr(entry["keys"][0])  # noqa: E731
            else:
                entry = {"try": n, "op": kind, "keys": [f"h:{w}"], "field": str(n),
                         "value": f"{w}:{n}:" + PAD}
                call = lambda: r.hset(entry["keys"][0], entry["field"], entry["value"])  # noqa: E731
            log(entry)
            try:
                call()
            except redis.ResponseError as e:
                print(f"writer {w}: op {n} failed: {e}", file=sys.stderr)
                if not args.keep_going:
                    return 0
                time.sleep(0.01)
                continue
            except (redis.ConnectionError, redis.TimeoutError) as e:
                print(f"writer {w}: op {n} failed: {e}", file=sys.stderr)
                return 0  # the cluster went away (the test killed it)
            log({"ack": n})
    return 0


if __name__ == "__main__":
    sys.exit(main())
