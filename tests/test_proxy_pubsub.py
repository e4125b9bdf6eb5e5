"""Pub/sub through the proxy, with the same expectations for a real redis-server: SUBSCRIBE,
PSUBSCRIBE and their confirmations, PUBLISH's receiver count, messages in order to every
subscriber whatever worker holds it (the proxy runs 3 workers here), PUBSUB's introspection,
the RESP2 subscribed mode's rules, RESP3 pushes, a subscriber that closes, and one that stops
reading past the 32 MB backlog limit and is disconnected while the others go on.
"""
import socket
import time

import pytest
import redis

from conftest import TARGETS, make_target, run_target
from proxy_helpers import client, encode

MESSAGE_TIMEOUT_S = 10


@pytest.fixture(params=TARGETS)
def target(request, tmp_path):
    """A target of the test's own; the proxy with 3 workers, so that connections spread."""
    settings = {"workers": "3"} if request.param != "redis" else None
    yield from run_target(make_target(request.param, tmp_path, proxy_settings=settings))


def next_message(p):
    """The next message of redis-py PubSub p (subscription confirmations skipped)."""
    deadline = time.monotonic() + MESSAGE_TIMEOUT_S
    while time.monotonic() < deadline:
        m = p.get_message(ignore_subscribe_messages=True, timeout=0.5)
        if m is not None:
            return m
    pytest.fail("no message within the timeout")


def wait_until(fn, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if fn():
            return
        time.sleep(0.05)
    pytest.fail("condition not met within the timeout")


def test_publish_reaches_every_subscriber_in_order(target):
    pub = client(target)
    subs = [client(target).pubsub() for _ in range(6)]
    try:
        for n, p in enumerate(subs):
            if n % 2 == 0:
                p.subscribe("news")
            else:
                p.psubscribe("ne*")
            assert p.get_message(timeout=5)["type"] in ("subscribe", "psubscribe")
        assert pub.publish("news", "hello") == 6
        assert pub.publish("other", "nobody") == 0
        for n, p in enumerate(subs):
            m = next_message(p)
            assert m["data"] == "hello" and m["channel"] == "news"
            assert m["type"] == ("message" if n % 2 == 0 else "pmessage")
            if n % 2 == 1:
                assert m["pattern"] == "ne*"
        # Many messages, one publisher: every subscriber gets all of them, in order.
        for i in range(300):
            assert pub.publish("news", f"m{i}") == 6
        for p in subs:
            assert [next_message(p)["data"] for _ in range(300)] == [f"m{i}" for i in range(300)]
        assert pub.pubsub_numsub("news", "none") == [("news", 3), ("none", 0)]
        assert pub.pubsub_numpat() == 1
        assert pub.pubsub_channels() == ["news"]
        assert pub.pubsub_channels("n*") == ["news"] and pub.pubsub_channels("x*") == []
        # Subscribers that leave, by UNSUBSCRIBE or by closing, are no longer counted.
        subs[0].unsubscribe("news")
        subs[1].close()
        wait_until(lambda: pub.publish("news", "after") == 4)
    finally:
        for p in subs:
            p.close()
        pub.close()


def raw(target):
    s = socket.create_connection((target.host, target.port), timeout=5)
    return s


def read_until(s, needle, limit=1 << 20):
    data = b""
    deadline = time.monotonic() + MESSAGE_TIMEOUT_S
    while needle not in data and time.monotonic() < deadline and len(data) < limit:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_subscribed_mode_replies_as_redis(target):
    """RESP2: the confirmations' counts, only the pub/sub commands, PING and QUIT allowed,
    UNSUBSCRIBE of nothing; RESP3: confirmations and messages as pushes, other commands
    allowed."""
    s = raw(target)
    s.sendall(encode("SUBSCRIBE", "a", "b") + encode("PSUBSCRIBE", "x*") + encode("GET", "k") +
              encode("PING") + encode("PING", "hi") + encode("PUNSUBSCRIBE") + encode("UNSUBSCRIBE", "a") +
              encode("UNSUBSCRIBE", "b") + encode("UNSUBSCRIBE") + encode("GET", "k"))
    data = read_until(s, b"$-1\r\n:0\r\n$-1\r\n")
    assert data == (
        b"*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n"
        b"*3\r\n$10\r\npsubscribe\r\n$2\r\nx*\r\n:3\r\n"
        b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
        b"are allowed in this context\r\n"
        b"*2\r\n$4\r\npong\r\n$0\r\n\r\n*2\r\n$4\r\npong\r\n$2\r\nhi\r\n"
        b"*3\r\n$12\r\npunsubscribe\r\n$2\r\nx*\r\n:2\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n"
        b"*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:0\r\n*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n"
        b"$-1\r\n"), data
    s.close()
    s3 = raw(target)
    s3.sendall(encode("HELLO", "3") + encode("SUBSCRIBE", "c") + encode("GET", "nokey"))
    got = read_until(s3, b"_\r\n")
    assert b">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n_\r\n" in got, got
    pub = client(target)
    assert pub.publish("c", "pushed") == 1
    assert read_until(s3, b"pushed\r\n").endswith(b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$6\r\npushed\r\n")
    s3.close()
    pub.close()


def test_a_subscriber_that_stops_reading_is_disconnected(target):
    """A subscriber that reads nothing while 48 MB are published to it is disconnected once
    its backlog passes 32 MB (Redis's client-output-buffer-limit for pubsub); another
    subscriber of the same channel, reading, gets every message, and publishing goes on."""
    stalled = raw(target)
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    stalled.sendall(encode("SUBSCRIBE", "flood"))
    assert read_until(stalled, b":1\r\n").endswith(b":1\r\n")
    reader = client(target, decode_responses=False).pubsub()
    reader.subscribe("flood")
    assert reader.get_message(timeout=5)["type"] == "subscribe"
    pub = client(target)
    payload = "x" * 100_000
    received = 0
    for i in range(480):
        pub.publish("flood", payload)
        while (m := reader.get_message(ignore_subscribe_messages=True, timeout=0)) is not None:
            received += 1
    while received < 480:
        next_message(reader)
        received += 1
    wait_until(lambda: pub.pubsub_numsub("flood") == [("flood", 1)], timeout_s=10)
    # The stalled connection is closed: after what was buffered, end of stream (or a reset).
    stalled.settimeout(10)
    closed = False
    try:
        while True:
            chunk = stalled.recv(1 << 20)
            if not chunk:
                closed = True
                break
    except (ConnectionResetError, socket.timeout):
        closed = True
    assert closed
    assert pub.publish("flood", "still") == 1
    reader.close()
    pub.close()
    stalled.close()


def test_a_publish_after_a_write_is_sent_once_the_write_is_stored(target):
    """SET k v; PUBLISH ch v pipelined: a subscriber told v reads k and finds v (the
    cache-invalidation pattern), 100 times over. Two things see to it in rampart: a PUBLISH
    after a write of its connection waits for the write to be stored, and a read of a key
    with a write in flight waits for it (the proxy's lock table) — each alone suffices."""
    sub = client(target).pubsub()
    reader = client(target)
    writer = client(target)
    try:
        sub.subscribe("changed")
        assert sub.get_message(timeout=5)["type"] == "subscribe"
        for i in range(100):
            with writer.pipeline(transaction=False) as p:
                p.set("pubsub:k", f"v{i}")
                p.publish("changed", f"v{i}")
                assert p.execute() == [True, 1]
            told = next_message(sub)["data"]
            assert reader.get("pubsub:k") == told == f"v{i}"
    finally:
        sub.close()
        reader.close()
        writer.close()


def test_subscribers_are_pubsub_clients(target):
    """CLIENT LIST TYPE pubsub lists the subscribed connections (sub=, psub= counted),
    TYPE normal the others; PING with two arguments in subscribed mode is an arity error."""
    me = client(target)
    s = raw(target)
    try:
        s.sendall(encode("CLIENT", "ID") + encode("SUBSCRIBE", "a", "b") + encode("PSUBSCRIBE", "p*"))
        data = read_until(s, b"p*\r\n:3\r\n")
        sub_id = int(data.split(b"\r\n")[0][1:])
        pubsub_lines = me.execute_command("CLIENT", "LIST", "TYPE", "pubsub").splitlines()
        assert [line.split()[0] for line in pubsub_lines] == [f"id={sub_id}"]
        assert " sub=2 psub=1 " in pubsub_lines[0]
        normal = me.execute_command("CLIENT", "LIST", "TYPE", "normal")
        assert f"id={sub_id} " not in normal and f"id={me.client_id()} " in normal
        s.sendall(encode("PING", "a", "b"))
        assert read_until(s, b"command\r\n").endswith(b"-ERR wrong number of arguments for 'ping' command\r\n")
        assert me.execute_command("CLIENT", "KILL", "TYPE", "pubsub") == 1
        s.settimeout(5)
        assert s.recv(100) == b""
    finally:
        s.close()
        me.close()



def test_sharded_channels_as_redis(target):
    """SSUBSCRIBE / SUNSUBSCRIBE / SPUBLISH: a namespace of their own (a PUBLISH does not reach
    an SSUBSCRIBEr, nor an SPUBLISH a SUBSCRIBEr or a pattern), their own count in the
    confirmations, `smessage` messages, RESP2 subscribed mode, PUBSUB SHARDCHANNELS and
    SHARDNUMSUB, and CLIENT LIST's ssub= count."""
    s = raw(target)
    s.sendall(encode("SUNSUBSCRIBE") + encode("SSUBSCRIBE", "sa", "sb", "sa") + encode("SUBSCRIBE", "sa") +
              encode("GET", "k"))
    data = read_until(s, b"RESET are allowed in this context\r\n")
    assert data == (
        b"*3\r\n$12\r\nsunsubscribe\r\n$-1\r\n:0\r\n"
        b"*3\r\n$10\r\nssubscribe\r\n$2\r\nsa\r\n:1\r\n*3\r\n$10\r\nssubscribe\r\n$2\r\nsb\r\n:2\r\n"
        b"*3\r\n$10\r\nssubscribe\r\n$2\r\nsa\r\n:2\r\n"
        b"*3\r\n$9\r\nsubscribe\r\n$2\r\nsa\r\n:1\r\n"
        b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
        b"are allowed in this context\r\n"), data
    pub = client(target)
    pattern = client(target).pubsub()
    pattern.psubscribe("s*")
    assert pattern.get_message(timeout=5)["type"] == "psubscribe"
    assert pub.execute_command("SPUBLISH", "sa", "sharded") == 1
    assert read_until(s, b"sharded\r\n").endswith(b"*3\r\n$8\r\nsmessage\r\n$2\r\nsa\r\n$7\r\nsharded\r\n")
    assert pub.publish("sa", "plain") == 2  # s's SUBSCRIBE and the pattern, not its SSUBSCRIBE
    assert read_until(s, b"plain\r\n").endswith(b"*3\r\n$7\r\nmessage\r\n$2\r\nsa\r\n$5\r\nplain\r\n")
    assert next_message(pattern)["data"] == "plain"  # the SPUBLISH did not reach it
    assert sorted(pub.execute_command("PUBSUB", "SHARDCHANNELS")) == ["sa", "sb"]
    assert pub.execute_command("PUBSUB", "SHARDCHANNELS", "*b") == ["sb"]
    assert pub.execute_command("PUBSUB", "SHARDNUMSUB", "sa", "zz") == ["sa", 1, "zz", 0]
    assert pub.execute_command("PUBSUB", "CHANNELS") == ["sa"]
    assert [c["ssub"] for c in pub.client_list() if c["ssub"] != "0"] == ["2"]
    s.sendall(encode("SUNSUBSCRIBE", "sb") + encode("SUNSUBSCRIBE") + encode("SUNSUBSCRIBE"))
    data = read_until(s, b"$-1\r\n:0\r\n")
    assert data == (b"*3\r\n$12\r\nsunsubscribe\r\n$2\r\nsb\r\n:1\r\n*3\r\n$12\r\nsunsubscribe\r\n$2\r\nsa\r\n:0\r\n"
                    b"*3\r\n$12\r\nsunsubscribe\r\n$-1\r\n:0\r\n"), data
    assert pub.execute_command("SPUBLISH", "sa", "nobody") == 0
    s3 = raw(target)
    s3.sendall(encode("HELLO", "3") + encode("SSUBSCRIBE", "x"))
    assert read_until(s3, b"x\r\n:1\r\n").endswith(b">3\r\n$10\r\nssubscribe\r\n$1\r\nx\r\n:1\r\n")
    assert pub.execute_command("SPUBLISH", "x", "m3") == 1
    assert read_until(s3, b"m3\r\n").endswith(b">3\r\n$8\r\nsmessage\r\n$1\r\nx\r\n$2\r\nm3\r\n")
    for c in (s, s3):
        c.close()
    pattern.close()
    pub.close()
