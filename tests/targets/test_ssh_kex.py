"""A server that greets and then drops every key exchange (dropbear dying on an assertion, seen on
the QEMU guest) is a clear ``SshUnavailable`` within seconds naming the server; a port that accepts
and closes without a greeting (a guest whose sshd is not up yet behind QEMU's user network) is
waited for until the deadline. Local sockets only."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from fvp_harness.errors import SshUnavailable
from fvp_harness.targets.deadline import Deadline
from fvp_harness.targets.ssh import SshTransport


def _serve(greeting: bytes) -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(greeting)
                conn.settimeout(0.5)
                try:
                    conn.recv(4096)  # the client's version and KEXINIT, then die
                except OSError:
                    pass

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        server.close()


@pytest.fixture
def dying_server() -> Iterator[int]:
    yield from _serve(b"SSH-2.0-dropbear_2022.83\r\n")


@pytest.fixture
def silent_port() -> Iterator[int]:
    yield from _serve(b"")


def test_a_server_dying_in_key_exchange_is_unavailable_within_seconds(dying_server: int) -> None:
    transport = SshTransport(dying_server)
    began = time.monotonic()
    try:
        with pytest.raises(SshUnavailable,
                           match=r"SSH-2\.0-dropbear_2022\.83.*dropped the key exchange 3 times"):
            transport.connect(Deadline.after(120, "deploy"))
    finally:
        transport.close()
    assert time.monotonic() - began < 20


def test_a_port_without_a_server_yet_is_waited_for_until_the_deadline(silent_port: int) -> None:
    transport = SshTransport(silent_port)
    began = time.monotonic()
    try:
        with pytest.raises(SshUnavailable, match="no SSH server answered"):
            # an attempt gets at least 1 s: 2 s is waited out whole
            transport.connect(Deadline.after(2, "deploy"))
    finally:
        transport.close()
    assert time.monotonic() - began >= 1.5
