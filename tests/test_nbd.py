"""`rampart nbd --ram SIZE` as a process, with Debian's NBD clients.

- nbdinfo sees the export's size and name.
- Garbage handshakes (an HTTP request, a bad option magic, an oversized
  option) get their connection closed with a warning; the server serves on.
- fio --ioengine=nbd writes and verifies.
- SIGTERM stops it cleanly (exit 0); a port in use and bad flags are clear
  errors.

The volume side (`rampart nbd --volume`) is in test_volume.py.
"""
import json
import socket
import struct
import subprocess

import pytest

from conftest import RAMPART
from storage_nodes import NbdProcess

RAM_BYTES = 64 << 20
NBDMAGIC = b"NBDMAGIC"
IHAVEOPT = b"IHAVEOPT"
NBD_FLAG_C_FIXED_NEWSTYLE = 1
NBD_OPT_GO = 7


@pytest.fixture
def ram(tmp_path):
    server = NbdProcess(["--ram", "64MiB"], tmp_path)
    try:
        yield server.start()
    finally:
        server.stop()


def run(cmd, timeout_s=60):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)


def nbdinfo(uri):
    p = run(["nbdinfo", "--json", uri], timeout_s=20)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, f"closed after {len(data)} of {n} bytes"
        data += chunk
    return data


def closed_by_server(sock):
    """True when the server closes `sock` (EOF or reset) within its timeout."""
    try:
        while True:
            if sock.recv(4096) == b"":
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_nbdinfo_shows_size_and_name(ram):
    assert ram.uri.endswith("/ram")
    export = nbdinfo(ram.uri)["exports"][0]
    assert export["export-name"] == "ram"
    assert export["export-size"] == RAM_BYTES
    assert not export["is_read_only"]
    assert "nbd: serving export 'ram' (67108864 bytes = 64MiB, read-write" in ram.stderr()


BAD_HANDSHAKES = {
    # An HTTP client: its first 4 bytes are taken as client flags.
    "http": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    # Right flags, then an option with a wrong magic.
    "bad-option-magic": struct.pack(">I", NBD_FLAG_C_FIXED_NEWSTYLE) + b"XXXXXXXX" +
    struct.pack(">II", NBD_OPT_GO, 0),
    # Right flags, then an option announcing 1 MiB of data (limit 64 KiB).
    "oversized-option": struct.pack(">I", NBD_FLAG_C_FIXED_NEWSTYLE) + IHAVEOPT +
    struct.pack(">II", NBD_OPT_GO, 1 << 20),
}


@pytest.mark.parametrize("name", sorted(BAD_HANDSHAKES))
def test_bad_handshake_is_closed_and_the_server_serves_on(ram, name):
    held = socket.create_connection(("127.0.0.1", ram.port), timeout=5)  # a quiet client
    try:
        with socket.create_connection(("127.0.0.1", ram.port), timeout=5) as s:
            greeting = recv_exact(s, 18)
            assert greeting[:16] == NBDMAGIC + IHAVEOPT
            s.sendall(BAD_HANDSHAKES[name])
            assert closed_by_server(s), "the server kept a garbage connection open"
        assert nbdinfo(ram.uri)["exports"][0]["export-size"] == RAM_BYTES
        assert "nbd: closing the connection from 127.0.0.1" in ram.stderr()
        # The quiet client was not disturbed: its greeting is still there.
        assert recv_exact(held, 18)[:16] == NBDMAGIC + IHAVEOPT
    finally:
        held.close()
    assert ram.proc.poll() is None


def test_fio_writes_and_verifies(ram):
    p = run(["fio", "--name=nbd", "--ioengine=nbd", f"--uri={ram.uri}", "--rw=randwrite",
             "--bs=4k", "--size=16M", "--iodepth=16", "--verify=crc32c", "--do_verify=1",
             "--verify_state_save=0", "--output-format=normal"], timeout_s=60)
    assert p.returncode == 0, p.stdout + p.stderr
    # 4096 blocks written, then all read back and checked.
    assert "err= 0" in p.stdout, p.stdout
    assert "total=4096,4096" in p.stdout, p.stdout


def test_read_only_export_refuses_writes(tmp_path):
    server = NbdProcess(["--ram", "1MiB", "--read-only", "--export", "scratch"], tmp_path).start()
    try:
        assert server.uri.endswith("/scratch")
        assert nbdinfo(server.uri)["exports"][0]["is_read_only"]
        (tmp_path / "one.bin").write_bytes(b"\1" * 4096)
        p = run(["nbdcopy", str(tmp_path / "one.bin"), server.uri], timeout_s=20)
        assert p.returncode != 0
    finally:
        assert server.stop() == 0


def test_sigterm_stops_cleanly_and_a_port_in_use_is_an_error(ram, tmp_path):
    second = NbdProcess(["--ram", "1MiB", "--port", str(ram.port)], tmp_path, tag="second")
    second.launch()
    assert second.wait() == 1
    err = second.stderr()
    assert f"port {ram.port} on 127.0.0.1" in err and "in use" in err, err
    assert ram.stop() == 0
    assert "SIGTERM received, stopping" in ram.stderr()
    assert "nbd: stopped" in ram.stderr()


def test_usage_errors_and_help():
    p = run([str(RAMPART), "nbd"])
    assert p.returncode == 2 and "give --volume NAME or --ram SIZE" in p.stderr, p.stderr
    p = run([str(RAMPART), "nbd", "--ram", "1MiB", "--volume", "v"])
    assert p.returncode == 2, p.stderr
    p = run([str(RAMPART), "nbd", "--ram", "12XB"])
    assert p.returncode == 2 and "--ram" in p.stderr, p.stderr
    p = run([str(RAMPART), "nbd", "--help"])
    assert p.returncode == 0
    for flag in ("--volume", "--ram", "--host", "--port", "--export", "--read-only",
                 "try NBD clients"):
        assert flag in p.stdout, p.stdout
