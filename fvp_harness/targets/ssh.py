"""SSH to the guest through the instance's forwarded port: exec, and file transfer by SFTP or
``cat``.

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

from __future__ import annotations

import asyncio
import logging
import shlex
import socket
import threading
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from fvp_harness.errors import ConsoleLost, SshUnavailable
from fvp_harness.targets.base import CommandResult
from fvp_harness.targets.deadline import Deadline

__all__ = ["SshTransport"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class _LoopThread:
    """A private asyncio loop in a daemon thread; ``call`` runs a coroutine there and waits for
    it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="ssh-loop", daemon=True)
        self.thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout)

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5.0)
        if not self.thread.is_alive():
            self.loop.close()


KEX_DROPS = 3
"""Failed handshakes in a row, each time with a server that greets (``SSH-...``), before
SshUnavailable."""

_READ_CHUNK = 1 << 16
"""SFTP read size of ``get``; it reads until EOF, never trusting the reported file size."""

_PREFERRED_HOST_KEYS = ("ssh-ed25519", "ecdsa-sha2-nistp256")


def _host_key_preference(asyncssh: Any) -> list[str]:
    """Host key algorithms, ed25519 and ECDSA first, then asyncssh's defaults.

    Why: asyncssh takes the first of its list the server offers, and its default puts RSA early.
    Dropbear 2022.83 started with only an ed25519 key (or ``-R``, keys made on demand) still offers
    RSA; picking it made a real guest's server die on an assertion (or spend seconds making an RSA
    key under emulation). OpenSSH's client prefers ed25519 and never shows it; so does this one
    now."""
    defaults = [alg.decode() if isinstance(alg, bytes) else str(alg)
                for alg in asyncssh.public_key.get_default_public_key_algs()]
    return [*_PREFERRED_HOST_KEYS, *(alg for alg in defaults if alg not in _PREFERRED_HOST_KEYS)]


class SshTransport:
    """An SSH connection to ``host:port`` as ``user``; connect lazily with retries until a
    deadline."""

    def __init__(self, port: int, *, host: str = "127.0.0.1", user: str = "root",
                 password: str | None = None, log_path: Path | None = None) -> None:
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.log_path = log_path
        self._loop: _LoopThread | None = None
        self._conn: Any = None
        self._sftp_ok: bool | None = None
        self.server_version: str | None = None

    @property
    def connected(self) -> bool:
        return self._conn is not None

    def connect(self, deadline: Deadline) -> None:
        """Connect, retrying refusals and resets (sshd not up yet) until ``deadline``;
        SshUnavailable after."""
        import asyncssh

        if self._conn is not None:
            return
        if self._loop is None:
            self._loop = _LoopThread()
        attempts = dropped = 0
        last: BaseException | None = None
        while True:
            attempts += 1
            budget = max(1.0, deadline.slice(10.0))
            try:
                self._conn = self._loop.call(self._connect(asyncssh, budget), timeout=budget + 2.0)
                self.server_version = self._conn.get_extra_info("server_version")
                log.info("ssh connected to %s:%s after %s attempt(s) (%s)", self.host, self.port,
                         attempts, self.server_version)
                return
            except (OSError, asyncssh.Error, asyncio.TimeoutError, TimeoutError) as exc:
                last = exc
                log.debug("ssh attempt %s to %s:%s failed: %s", attempts, self.host, self.port, exc)
                banner = (self._banner(deadline)
                          if isinstance(exc, asyncssh.Error | ConnectionError) else None)
                dropped = dropped + 1 if banner else 0
                if dropped >= KEX_DROPS:
                    raise SshUnavailable(
                        f"the SSH server on {self.host}:{self.port} ({banner}) answers but dropped "
                        f"the key exchange {dropped} times in a row: {type(exc).__name__}: {exc} "
                        "(see the guest's sshd log)", log_path=self.log_path, stage="ssh") from exc
            if deadline.expired:
                raise SshUnavailable(
                    deadline.message(f"no SSH server answered on {self.host}:{self.port} "
                                     f"({attempts} attempts; last error: {type(last).__name__}: "
                                     f"{last})", log_path=self.log_path),
                    log_path=self.log_path, stage="ssh") from last
            time.sleep(deadline.slice(min(0.2 * attempts, 1.0)))

    def _banner(self, deadline: Deadline) -> str | None:
        """The server's ``SSH-`` version line if one answers on the port now (within 2 s), else
        None.

        Why: a port that accepts and closes is a server not up yet (QEMU's user network accepts for
        a guest port nobody listens on), worth waiting for; a server that greets and then drops the
        key exchange is broken, and waiting the whole deploy timeout for it (600 s) hides the
        reason."""
        try:
            with socket.create_connection((self.host, self.port),
                                          timeout=max(0.1, deadline.slice(2.0))) as probe:
                probe.settimeout(max(0.1, deadline.slice(2.0)))
                line = probe.recv(256).split(b"\n", 1)[0].strip()
        except OSError:
            return None
        return line.decode("ascii", "replace") if line.startswith(b"SSH-") else None

    async def _connect(self, asyncssh: Any, timeout: float) -> Any:
        return await asyncssh.connect(
            self.host, self.port, username=self.user, password=self.password,
            # throwaway local instance with a fresh key per boot: see the module docstring
            known_hosts=None,
            client_keys=None, agent_path=None, login_timeout=timeout, connect_timeout=timeout,
            keepalive_interval=15, server_host_key_algs=_host_key_preference(asyncssh),
        )

    def _require(self) -> Any:
        if self._conn is None or self._loop is None:
            raise SshUnavailable(f"ssh to {self.host}:{self.port} is not connected",
                                 log_path=self.log_path)
        return self._conn

    def _call(self, coro: Coroutine[Any, Any, T], deadline: Deadline, what: str) -> T:
        import asyncssh

        assert self._loop is not None
        try:
            return self._loop.call(asyncio.wait_for(coro, deadline.remaining()),
                                   timeout=deadline.remaining() + 5)
        except (asyncio.TimeoutError, TimeoutError) as exc:
            raise SshUnavailable(
                deadline.message(f"ssh {what} did not finish", log_path=self.log_path),
                log_path=self.log_path,
                stage=what,
            ) from exc
        except (OSError, asyncssh.DisconnectError, asyncssh.ConnectionLost) as exc:
            self._conn = None
            raise ConsoleLost(f"ssh connection to {self.host}:{self.port} lost during {what}: "
                              f"{exc}", log_path=self.log_path, stage=what) from exc

    def run(self, command: str, deadline: Deadline) -> CommandResult:
        """Run a shell command; stdout and stderr merged as a console would show them."""
        import asyncssh

        conn = self._require()
        began = time.monotonic()

        async def go() -> Any:
            return await conn.run(command, check=False, stderr=asyncssh.STDOUT)

        result = self._call(go(), deadline, "exec")
        output = (
            result.stdout
            if isinstance(result.stdout, str)
            else (result.stdout or b"").decode("utf-8", "replace")
        )
        status = result.exit_status if result.exit_status is not None else 255
        return CommandResult(command=command, exit_status=status,
                             output=output.replace("\r\n", "\n"),
                             duration_s=time.monotonic() - began, log_path=self.log_path)

    def put(self, local: Path, remote: str, deadline: Deadline) -> str:
        """Copy a host file to the guest; returns ``sftp`` or ``cat`` (the way it went)."""
        import asyncssh

        conn = self._require()
        if self._sftp_ok is not False:
            async def sftp_put() -> None:
                async with conn.start_sftp_client() as sftp:
                    await sftp.put(str(local), remote)

            try:
                self._call(sftp_put(), deadline, "sftp put")
                self._sftp_ok = True
                return "sftp"
            except (asyncssh.SFTPError, asyncssh.ChannelOpenError) as exc:
                if self._sftp_ok:
                    raise
                log.info("SFTP unavailable on %s:%s (%s); using cat over exec", self.host,
                         self.port, exc)
                self._sftp_ok = False
        data = Path(local).read_bytes()

        async def cat_put() -> Any:
            return await conn.run(f"cat > {shlex.quote(remote)}", input=data, encoding=None,
                                  check=False)

        result = self._call(cat_put(), deadline, "cat put")
        if result.exit_status != 0:
            message = (result.stderr or b"").decode("utf-8", "replace").strip()
            raise ConsoleLost(f"ssh cat > {remote} exited {result.exit_status}: {message}",
                              log_path=self.log_path, stage="put")
        return "cat"

    def get(self, remote: str, deadline: Deadline) -> bytes:
        """A guest file's bytes (SFTP, else ``cat`` over exec)."""
        import asyncssh

        conn = self._require()
        if self._sftp_ok is not False:
            async def sftp_get() -> bytes:
                async with conn.start_sftp_client() as sftp, sftp.open(remote, "rb") as handle:
                    # read to EOF in chunks: a plain read() stops at the size the server reports,
                    # and procfs and sysfs files report 0 (``/proc/version`` came back empty from a
                    # real guest)
                    parts = []
                    while chunk := await handle.read(_READ_CHUNK):
                        parts.append(bytes(chunk))
                    return b"".join(parts)

            try:
                data = self._call(sftp_get(), deadline, "sftp get")
                self._sftp_ok = True
                return data
            except (asyncssh.ChannelOpenError, asyncssh.SFTPError) as exc:
                if isinstance(exc, asyncssh.SFTPNoSuchFile):
                    raise FileNotFoundError(remote) from exc
                self._sftp_ok = (
                    False if isinstance(exc, asyncssh.ChannelOpenError) else self._sftp_ok
                )

        async def cat_get() -> Any:
            return await conn.run(f"cat {shlex.quote(remote)}", encoding=None, check=False)

        result = self._call(cat_get(), deadline, "cat get")
        if result.exit_status != 0:
            raise FileNotFoundError(f"{remote}: "
                                    f"{(result.stderr or b'').decode('utf-8', 'replace').strip()}")
        return bytes(result.stdout or b"")

    def close(self) -> None:
        """Close the connection and the private loop. Never raises."""
        conn, self._conn = self._conn, None
        if conn is not None and self._loop is not None:
            async def shut() -> None:
                conn.close()
                try:
                    await asyncio.wait_for(conn.wait_closed(), 2.0)
                except (asyncio.TimeoutError, OSError):
                    pass

            try:
                self._loop.call(shut(), timeout=5.0)
            except Exception as exc:  # cleanup must not raise; the connection is gone either way
                log.debug("ssh close: %s", exc)
        if self._loop is not None:
            self._loop.close()
            self._loop = None
