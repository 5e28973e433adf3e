"""The guest's sshd, reached through user-mode networking (a ``userNetPorts`` mapping ``host=22``).

One asyncssh server on ``127.0.0.1:<host port>`` per mapping to guest port 22 of a network device
that is enabled with user-mode networking: ``board.hostbridge.userNetPorts`` (the SMSC Ethernet,
``board.smsc_91c111.enabled`` and ``board.hostbridge.userNetworking``) and
``board.virtio_net.hostbridge.userNetPorts`` (``board.virtio_net.enabled`` and
``board.virtio_net.hostbridge.userNetworking``); a host port named on both is served once. Like the
image's dropbear: ``root`` logs in with no password (any other user is refused), exec runs in the
same guest shell implementation and filesystem as the console, an interactive session gets a prompt,
and SFTP and scp (legacy ``scp -O`` and OpenSSH 9's SFTP-based scp) reach the same guest files. The
host key is generated per instance, in memory.

As on the real model, the host port is listened on by the model from the start, but until the
guest's init has started dropbear (or after a kernel panic, or with ``fault_refuse_ssh``) a
connection is accepted and closed at once, which an ssh client reports as "Connection closed by
remote host".
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import socket
import sys
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import asyncssh

from fvp_harness.sim.corstone1000.forwarding import parse_user_net_ports
from fvp_harness.sim.corstone1000.machine import Machine
from fvp_harness.sim.guest.programs import ProgramInterrupted
from fvp_harness.sim.guest.shell import IO, ExitShell, Incomplete, Shell, parse

__all__ = ["GuestSSHServer", "parse_user_net_ports"]

_EOF = b""


class _ChannelStdin:
    """A command's stdin from an ssh channel: chunks queued by a reader task, until EOF."""

    def __init__(self, closed: threading.Event) -> None:
        self.queue: queue.Queue[bytes] = queue.Queue()
        self._closed = closed
        self._done = False

    def read(self) -> bytes:
        data = bytearray()
        while not self._done:
            try:
                chunk = self.queue.get(timeout=0.2)
            except queue.Empty:
                if self._closed.is_set():
                    raise ProgramInterrupted from None
                continue
            if chunk == _EOF:
                self._done = True
            else:
                data += chunk
        return bytes(data)


class GuestSSHServer:
    """All forwarded ssh ports of one model instance."""

    def __init__(self, machine: Machine, refuse: bool = False) -> None:
        self.machine = machine
        self.refuse = refuse
        self.ports: list[int] = []
        self._acceptors: list[asyncssh.SSHAcceptor] = []
        self._key = asyncssh.generate_private_key("ssh-ed25519")
        self._pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="ssh-exec")
        self._loop: asyncio.AbstractEventLoop | None = None

    async def listen(self, port: int, sock: socket.socket | None = None) -> None:
        """Serve ssh on 127.0.0.1:``port`` (raises OSError if the port is taken), or on ``sock``, a
        socket already listening there (``forwarding.listening_socket``)."""
        self._loop = asyncio.get_running_loop()
        where: dict[str, Any] = ({"sock": sock} if sock is not None
                                 else {"host": "127.0.0.1", "port": port})
        acceptor = await asyncssh.create_server(
            self._server_factory, **where,
            server_host_keys=[self._key],
            process_factory=self._process,
            sftp_factory=self._sftp_factory,
            allow_scp=True,
            encoding=None,
            keepalive_interval=0,
            login_timeout=60,
        )
        self._acceptors.append(acceptor)
        self.ports.append(port)

    async def close(self) -> None:
        for acceptor in self._acceptors:
            acceptor.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(acceptor.wait_closed(), 2)
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- connections -------------------------------------------------------------------------------

    def _server_factory(self) -> asyncssh.SSHServer:
        return _Server(self)

    def available(self) -> bool:
        """True when the guest's sshd would answer."""
        m = self.machine
        return not (self.refuse or m.halted.is_set() or m.stopping.is_set() or
                    not m.booted.is_set())

    def _sftp_factory(self, chan: asyncssh.SSHServerChannel) -> asyncssh.SFTPServer:
        return _GuestSFTP(chan, self.machine)

    async def _process(self, process: asyncssh.SSHServerProcess) -> None:
        """One session: exec a command, or an interactive shell when none is given."""
        closed = threading.Event()
        # dropbear runs a command as `sh -c CMD` ($0 `sh`), a session without one as the login shell
        # `-sh`
        shell = Shell(self.machine, interrupted=closed.is_set, login=process.command is None)
        loop = asyncio.get_running_loop()

        def out(data: bytes) -> None:
            loop.call_soon_threadsafe(_write, process.stdout, data, tty)

        def err(data: bytes) -> None:
            loop.call_soon_threadsafe(_write, process.stderr, data, tty)

        tty = process.get_terminal_type() is not None
        command = process.command
        try:
            if command is None:
                status = await self._interactive(process, shell, out, closed)
            else:
                stdin = _ChannelStdin(closed)
                reader = asyncio.create_task(_pump_stdin(process, stdin.queue))
                try:
                    status = await loop.run_in_executor(
                        self._pool, _run_exec, shell, command, IO(out, err, stdin, None))
                finally:
                    reader.cancel()
            await asyncio.sleep(0)  # let queued writes go out before the exit status
            process.exit(status & 0xFF)
        except (asyncssh.Error, ConnectionError, OSError):
            closed.set()
        except asyncio.CancelledError:
            closed.set()
            raise

    async def _interactive(self, process: asyncssh.SSHServerProcess, shell: Shell,
                           out: Callable[[bytes], None], closed: threading.Event) -> int:
        loop = asyncio.get_running_loop()
        text = ""
        while True:
            out(
                (shell.prompt() if not text else shell.prompt2()).encode("utf-8", "surrogateescape")
            )
            try:
                line = await process.stdin.readline()
            except asyncssh.BreakReceived:
                continue
            except asyncssh.TerminalSizeChanged:
                continue
            if not line:
                closed.set()
                return shell.status
            text += line.decode("utf-8", "surrogateescape").rstrip("\r\n") + "\n"
            try:
                parse(text)
            except Incomplete:
                continue
            except Exception:
                pass
            stdin = _ChannelStdin(closed)
            stdin.queue.put(_EOF)
            try:
                await loop.run_in_executor(self._pool, shell.run_line, text,
                                           IO(out, out, stdin, None))
            except ExitShell as exc:
                return exc.status
            text = ""


def _write(stream: asyncssh.SSHWriter, data: bytes, tty: bool) -> None:
    with contextlib.suppress(Exception):
        stream.write(data.replace(b"\n", b"\r\n") if tty else data)


async def _pump_stdin(process: asyncssh.SSHServerProcess, q: queue.Queue[bytes]) -> None:
    try:
        while True:
            data = await process.stdin.read(65536)
            if not data:
                break
            q.put(data)
    except (asyncssh.Error, ConnectionError, OSError, asyncssh.BreakReceived,
            asyncssh.TerminalSizeChanged):
        pass
    finally:
        q.put(_EOF)


def _run_exec(shell: Shell, command: str, io: IO) -> int:
    try:
        return shell.run_line(command, io)
    except ExitShell as exc:
        return exc.status
    except Incomplete:
        io.complain("sh: syntax error: unterminated quoted string\n")
        return 2
    except Exception:
        sys.stderr.write(f"fvp-sim: ssh exec failed:\n{traceback.format_exc()}")
        io.complain("sh: internal error\n")
        return 1


class _Server(asyncssh.SSHServer):
    """Per connection: refuse when sshd is not up; root needs no password, nobody else gets in."""

    def __init__(self, owner: GuestSSHServer) -> None:
        self._owner = owner

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        if not self._owner.available():
            conn.abort()

    def begin_auth(self, username: str) -> bool:
        return username != "root"

    def password_auth_supported(self) -> bool:
        return True

    def validate_password(self, username: str, password: str) -> bool:
        return False


class _GuestSFTP(asyncssh.SFTPServer):
    """SFTP (and scp) over the guest filesystem: relative paths start at /root; no links can be
    made."""

    def __init__(self, chan: asyncssh.SSHServerChannel, machine: Machine) -> None:
        self._machine = machine
        super().__init__(chan, chroot=os.fsencode(machine.fs.root))

    def map_path(self, path: bytes) -> bytes:
        guest = self._machine.fs.normalize(os.fsdecode(path), "/root")
        try:
            return os.fsencode(self._machine.fs.host_path(guest))
        except PermissionError:
            raise asyncssh.SFTPPermissionDenied("Permission denied") from None

    def exit(self) -> None:
        """OpenSSH's sftp-server ends the subsystem with exit status 0; scp (SFTP mode) treats a
        missing status as a failure, so send it (the legacy scp handler sends its own)."""
        chan = self.channel
        if chan.get_subsystem() == "sftp":
            with contextlib.suppress(Exception):
                chan.exit(0)

    def symlink(self, oldpath: bytes, newpath: bytes) -> None:
        raise asyncssh.SFTPOpUnsupported("symlinks are not allowed in the simulated guest")

    def link(self, oldpath: bytes, newpath: bytes) -> None:
        raise asyncssh.SFTPOpUnsupported("links are not allowed in the simulated guest")
