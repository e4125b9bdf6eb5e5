#!/usr/bin/env python3
"""Records every frame on every interface of the network namespace it runs
in, for --seconds, into --out (raw frames back to back; the tests only search
the bytes). Needs root: an AF_PACKET socket. Used by the peer-authentication
test to show the cluster secret never crosses the wire (and, as a control,
that the payload of the same connection does)."""
import argparse
import socket
import sys
import time

ETH_P_ALL = 0x0003


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.settimeout(0.1)
    deadline = time.time() + args.seconds
    with open(args.out, "wb") as out:
        print("capturing", flush=True)
        while time.time() < deadline:
            try:
                frame = s.recv(65536)
            except socket.timeout:
                continue
            out.write(frame)
    return 0


if __name__ == "__main__":
    sys.exit(main())
