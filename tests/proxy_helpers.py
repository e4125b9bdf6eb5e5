"""Helpers shared by the proxy's test modules (test_proxy*.py): redis-py
clients of a target, raw RESP on a socket and the text of its error replies,
the per-test key prefix, Redis's rank-range rules on a Python list, SCAN-like
iterations to cursor 0, threads whose result or error a test collects, and
Java's String.hashCode/Double.toString as YCSB's redis binding uses them.
"""
import socket
import threading
import time

import pytest
import redis

from conftest import TARGETS_UCX

ucx_too = pytest.mark.proxy_targets(*TARGETS_UCX)

# ---------------------------------------------------------------------------
# Helpers

def client(target, **kw):
    """A redis-py client of `target` (str replies unless decode_responses=False)."""
    kw.setdefault("decode_responses", True)
    kw.setdefault("socket_timeout", 30)
    kw.setdefault("password", target.password)
    return redis.Redis(host=target.host, port=target.port, **kw)


@pytest.fixture
def r(redis_target):
    c = client(redis_target)
    yield c
    c.close()


@pytest.fixture
def rb(redis_target):
    """A client that returns bytes."""
    c = client(redis_target, decode_responses=False)
    yield c
    c.close()


@pytest.fixture
def key(request):
    """key("x") -> a key of this test only, e.g. "test_get_set:x"."""
    prefix = request.node.originalname
    return lambda name="k": f"{prefix}:{name}"


class RespError(Exception):
    """An error reply ("-..."): str(e) is its text without the '-'."""


def encode(*args):
    """One command as a RESP array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Raw:
    """One TCP connection speaking RESP by hand: no client library, no
    handshake, no response callbacks."""

    def __init__(self, target, timeout=10.0):
        self.sock = socket.create_connection((target.host, target.port), timeout=timeout)
        self.file = self.sock.makefile("rb")

    def close(self):
        self.file.close()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    def call(self, *args):
        """Sends one command, returns its reply; an error reply comes back as a
        RespError instance (not raised)."""
        self.send(encode(*args))
        return self.reply()

    def line(self):
        line = self.file.readline()
        if not line:
            raise EOFError("connection closed")
        assert line.endswith(b"\r\n"), f"reply line without CRLF: {line!r}"
        return line[:-2]

    def reply(self):
        """The next reply: bulk and simple strings as bytes, errors as RespError,
        RESP3 maps as dicts, sets and pushes as lists."""
        line = self.line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            return RespError(rest.decode(errors="replace"))
        if kind in (b":", b"("):
            return int(rest)
        if kind in (b"$", b"="):
            n = int(rest)
            if n < 0:
                return None
            data = self.file.read(n + 2)
            assert len(data) == n + 2 and data.endswith(b"\r\n"), f"bad bulk string {data!r}"
            return data[:-2]
        if kind in (b"*", b"~", b">"):
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        if kind == b"%":
            out = {}
            for _ in range(int(rest)):
                k = self.reply()
                out[k] = self.reply()
            return out
        if kind == b"_":
            return None
        if kind == b"#":
            return rest == b"t"
        if kind == b",":
            return float(rest)
        raise AssertionError(f"unknown reply type: {line!r}")

    def read_until_closed(self, timeout=5.0):
        """Every byte until the server closes the connection; (bytes, closed)
        where closed is False if `timeout` s passed without the close. Reads
        the socket itself (a timed-out socket file is unusable), so call it
        only on a connection nothing was read from through self.file."""
        chunks = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = self.sock.recv(65536)
            except (socket.timeout, TimeoutError):
                break
            except ConnectionResetError:
                return b"".join(chunks), True
            if not chunk:
                return b"".join(chunks), True
            chunks.append(chunk)
        return b"".join(chunks), False


def replies_of(clients, *args):
    """Each client's reply to one command, an error reply as ("error", its text): for tests
    that send the same commands to a redis-server and to rampart and compare."""
    replies = []
    for c in clients:
        try:
            replies.append(c.execute_command(*args))
        except redis.ResponseError as e:
            replies.append(("error", str(e)))
    return replies


def error_text(reply):
    """The text of an error reply of Raw.call (the reply must be one)."""
    assert isinstance(reply, RespError), f"expected an error reply, got {reply!r}"
    return str(reply)


def rank_slice(items, start, stop):
    """Redis's rank range rules (LRANGE, ZRANGE start stop) on a Python list:
    negative indexes count from the end, start is clamped to 0 and stop to
    the last item; [] when nothing is left."""
    n = len(items)
    if start < 0:
        start += n
    if stop < 0:
        stop += n
    start = max(start, 0)
    if start > stop or start >= n:
        return []
    return items[start:min(stop, n - 1) + 1]


def scan_chunks(scan, k, max_calls=10_000, **kw):
    """Every reply of one full iteration (bounded) of a SCAN-like command:
    scan is a redis-py method such as r.sscan, called as scan(k, cursor, **kw)
    and answering (cursor, chunk); the chunk of each call, in order."""
    cursor, chunks = 0, []
    for _ in range(max_calls):
        cursor, chunk = scan(k, cursor, **kw)
        chunks.append(chunk)
        if cursor == 0:
            return chunks
    raise AssertionError(f"{scan.__name__.upper()} did not reach cursor 0 in {max_calls} calls")


def in_thread(fn):
    """Runs fn() on a thread; returns (thread, result dict) with "value" or
    "error" once it is done."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 (the test looks at it; pytest.fail too)
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def joined(t, out, timeout=10.0):
    """Joins t (bounded) and returns its value, re-raising its error."""
    t.join(timeout)
    assert not t.is_alive(), f"thread still running after {timeout} s"
    if "error" in out:
        raise out["error"]
    return out["value"]


def run_threads(fns, timeout=120.0):
    """Runs each fn() on a thread of its own, joins them all (bounded) and
    returns their results in order; an exception in any is re-raised (the
    first in fns' order)."""
    runs = [in_thread(fn) for fn in fns]
    deadline = time.monotonic() + timeout
    for t, _ in runs:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t, _ in runs), f"threads still running after {timeout} s"
    return [joined(t, out, timeout=0) for t, out in runs]


def blocked_clients(r):
    """INFO clients' blocked_clients of redis-py client r's server."""
    return r.info("clients")["blocked_clients"]


def wait_blocked_clients(r, n, timeout_s=3.0):
    """Polls INFO clients (bounded) until blocked_clients is n."""
    deadline = time.monotonic() + timeout_s
    while (now := blocked_clients(r)) != n:
        assert time.monotonic() < deadline, f"blocked_clients {now}, not {n}, after {timeout_s} s"
        time.sleep(0.02)


def pairs(flat):
    """A flat [k1, v1, k2, v2, ...] reply as a dict."""
    assert isinstance(flat, list) and len(flat) % 2 == 0, flat
    return dict(zip(flat[0::2], flat[1::2]))


def java_hash(s):
    """Java's String.hashCode (YCSB's redis binding scores keys with it)."""
    h = 0
    for ch in s:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_double(n):
    """Java's Double.toString of an integral double, as Jedis sends scores:
    "3.0", "-1234567.0", "-5.94971599E8", "1.0E10"."""
    if abs(n) < 10 ** 7:
        return f"{n}.0"
    digits = str(abs(n))
    mantissa = digits[0] + "." + (digits[1:].rstrip("0") or "0")
    return ("-" if n < 0 else "") + f"{mantissa}E{len(digits) - 1}"
