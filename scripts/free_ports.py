#!/usr/bin/env python3
"""Free TCP ports on 127.0.0.1 for local clusters (tests, bench/, ycsb/run.sh).

    free_ports.py COUNT [SPAN]    prints COUNT base ports, each with base ..
                                  base+SPAN-1 free (SPAN: a kv-node's
                                  partitions, default 1), separated by spaces

The ports come from 20000 up to the kernel's ephemeral range (32768-60999 by
default), never from inside it. A port the kernel handed out for `bind(0)` and
that was closed again can be taken by any outgoing connection before the
server binds it: a cluster's kv-nodes connect to each other while the later
ones are still starting, and kv-node 3 found its port taken ("Device is busy")
once in about forty `make test` runs. Ports below that range are never given
to outgoing connections. A port can still be taken between the check and the
bind by another program binding it on purpose; callers that can retry do.

Within one process, a port handed out is not handed out again for the next
RECENT ports: a caller often picks the ports of two servers (a redis-server and
a cluster, two proxies and their cluster) before it starts either, and the
first one's port, still unbound, passes the second call's bind check. The
tests' `redis_and_rampart` fixture lost a kv-node to "Address already in use"
that way.
"""
import random
import socket
import sys

LOW = 20000
RECENT = 4096

# The ports this process handed out last, oldest first (a dict keeps its keys
# in insertion order; a port in it is never handed out again, so never added twice).
_recent = {}


def _remember(ports):
    for p in ports:
        _recent[p] = None
    while len(_recent) > RECENT:
        del _recent[next(iter(_recent))]


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(ports):
    held = []
    try:
        for p in ports:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(s)
            s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        for s in held:
            s.close()


def free_port_bases(count, span=1, rng=random):
    """count base ports, each with base .. base+span-1 free, disjoint, and none
    of them among the RECENT ports this process handed out before."""
    high = min(_ephemeral_low(), 65536) - span
    if high < LOW + 1000:  # an unusual range: stay below the default one
        high = 32768 - span
    bases, used = [], set()
    for _ in range(100000):
        if len(bases) == count:
            for base in bases:
                _remember(range(base, base + span))
            return bases
        base = rng.randrange(LOW, high)
        ports = range(base, base + span)
        if used.intersection(ports) or any(p in _recent for p in ports) or not _bindable(ports):
            continue
        bases.append(base)
        used.update(ports)
    raise RuntimeError(f"no {count} free port ranges of {span} in {LOW}..{high}")


def main(argv):
    if len(argv) not in (2, 3) or not all(a.isdigit() and int(a) > 0 for a in argv[1:]):
        print("usage: free_ports.py COUNT [SPAN]", file=sys.stderr)
        return 2
    span = int(argv[2]) if len(argv) == 3 else 1
    print(" ".join(map(str, free_port_bases(int(argv[1]), span))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
