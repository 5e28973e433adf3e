"""User-mode networking's forwarded host ports: which ``userNetPorts`` mappings there are, and their
sockets.

Apart from ``sshd`` (which imports asyncssh, about half a second of the model's start-up) so that
the model can listen on every forwarded port the moment it starts, as the real one does, and hand
the sockets to the sshd once asyncssh has loaded, while the boot plays
(``platform.SimulatedModel._start_sshd``).
"""

from __future__ import annotations

import socket

__all__ = ["listening_socket", "parse_user_net_ports"]

BACKLOG = 100
"""Connections the kernel queues for a port before the sshd accepts them (asyncssh's own
default)."""


def parse_user_net_ports(text: str) -> list[tuple[int, int]]:
    """``5555=5555,8080=80,2222=22`` -> [(5555, 5555), (8080, 80), (2222, 22)]; malformed entries
    are skipped, as the real model does not report them either."""
    pairs = []
    for item in text.replace(" ", "").split(","):
        host, sep, guest = item.partition("=")
        if sep and host.isdigit() and guest.isdigit():
            pairs.append((int(host), int(guest)))
    return pairs


def listening_socket(port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:``port``, as asyncio's ``create_server`` makes one (address
    reuse on POSIX, non-blocking); raises OSError when the port is taken. A client that connects
    before a server accepts waits in the backlog."""
    sock = socket.create_server(("127.0.0.1", port), backlog=BACKLOG)
    sock.setblocking(False)
    return sock
