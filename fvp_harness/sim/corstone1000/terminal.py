"""TelnetTerminal components: one TCP server on 127.0.0.1 per UART, like the real model's terminals.

What a client of the real model relies on, and this keeps:

* the port is ``start_port`` or, when that is busy, the next free one up; the model announces it on
  stdout as ``host_terminal_0: Listening for serial connection on port 5000`` (also with
  ``start_telnet=0``);
* ``mode=telnet`` negotiates (the server will echo and suppress go-ahead, IAC bytes are escaped both
  ways, ``CR NUL`` is a plain CR), ``mode=raw`` passes bytes untouched;
* the model never waits for a reader: output is always drained into a bounded buffer (oldest bytes
  dropped past ``backlog_bytes``), which a client receives when it connects; a dropped client can
  reconnect, and a new connection replaces an old one (so a harness that lost its socket can always
  get back in).

Everything here runs on the simulator's event loop; ``write`` and ``inject`` may be called from any
thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import random
import socket
from collections.abc import Callable, Iterable
from typing import BinaryIO

__all__ = ["TerminalServer", "bind_stepping"]

log = logging.getLogger(__name__)

IAC, DONT, DO, WONT, WILL, SB, SE = 255, 254, 253, 252, 251, 250, 240
OPT_ECHO, OPT_SGA, OPT_LINEMODE = 1, 3, 34
TELNET_GREETING = bytes([IAC, WILL, OPT_ECHO, IAC, WILL, OPT_SGA, IAC, DONT, OPT_LINEMODE])


def bind_stepping(start_port: int, skip: Iterable[int] = ()) -> socket.socket:
    """A listening socket on 127.0.0.1 at ``start_port`` or the next port up that is free (and not
    in ``skip``).

    ``skip`` lets the busy-port fault pretend ports are taken without touching them.
    """
    skipped = set(skip)
    for port in range(start_port, 65536):
        if port in skipped:
            continue
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen(4)
        except OSError as exc:
            sock.close()
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                continue
            raise
        sock.setblocking(False)
        return sock
    raise OSError(errno.EADDRINUSE, f"no free port from {start_port} upwards")


class _TelnetDecoder:
    """Strips telnet commands from a client's byte stream; keeps state across reads."""

    def __init__(self) -> None:
        self._state = "data"

    def feed(self, data: bytes) -> bytes:
        out = bytearray()
        for b in data:
            st = self._state
            if st == "data":
                if b == IAC:
                    self._state = "iac"
                elif b == 0 and out[-1:] == b"\r":
                    continue  # CR NUL is a bare carriage return
                else:
                    out.append(b)
            elif st == "iac":
                if b == IAC:
                    out.append(IAC)
                    self._state = "data"
                elif b in (WILL, WONT, DO, DONT):
                    self._state = "option"
                elif b == SB:
                    self._state = "sb"
                else:
                    self._state = "data"  # a two-byte command (NOP, AYT, ...): ignored
            elif st == "option":
                self._state = "data"
            elif st == "sb":
                if b == IAC:
                    self._state = "sb-iac"
            elif st == "sb-iac":
                self._state = "data" if b == SE else "sb"
        return bytes(out)


class TerminalServer:
    """One terminal: a listening socket, at most one client, and an output buffer drained by a pump
    task."""

    def __init__(
        self,
        name: str,
        *,
        mode: str = "telnet",
        backlog_bytes: int = 1 << 20,
        rate: float = 0.0,
        garbage: float = 0.0,
        rng: random.Random | None = None,
        copy_to: BinaryIO | None = None,
        on_input: Callable[[bytes], None] | None = None,
        uart_rate: float = 0.0,
    ) -> None:
        self.name = name
        # bytes/s of the line both ways (knob uart_rate), 0: as fast as the host goes
        self.uart_rate = uart_rate
        self.mode = mode
        self.backlog_bytes = backlog_bytes
        self.rate = rate
        self.garbage = garbage
        self.rng = rng or random.Random()
        self.copy_to = copy_to
        self.on_input = on_input
        self.port = 0
        self.dropped = 0  # bytes dropped from the backlog because nobody read them
        self._pending = bytearray()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._pump_task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._closed = False
        self._refusing = False

    async def start(self, start_port: int, skip: Iterable[int] = ()) -> int:
        """Bind (stepping past busy ports), start serving, and return the port."""
        self._loop = asyncio.get_running_loop()
        sock = bind_stepping(start_port, skip)
        self.port = sock.getsockname()[1]
        self._server = await asyncio.start_server(self._on_client, sock=sock)
        self._pump_task = asyncio.create_task(self._pump(), name=f"pump-{self.name}")
        return self.port

    # -- output ------------------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Queue output for the client (thread-safe). Never blocks and never fails."""
        if not data:
            return
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            if _on_loop_thread(loop):
                self._append(data)
            else:
                loop.call_soon_threadsafe(self._append, data)
        except RuntimeError:  # loop closing while a shell thread still writes
            pass

    def inject(self, data: bytes) -> None:
        """Insert ``data`` at a random point of the not yet delivered output (thread-safe): kernel
        messages land wherever the console happens to be, mid-line included."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._insert, data)

    def _append(self, data: bytes) -> None:
        if self.garbage and self.rng.random() < self.garbage:
            junk = bytes(self.rng.randrange(0x80, 0xFF) for _ in range(self.rng.randrange(1, 9)))
            cut = self.rng.randrange(0, len(data) + 1)
            data = data[:cut] + junk + data[cut:]
        if self.copy_to is not None:
            try:
                self.copy_to.write(data)
                self.copy_to.flush()
            except (OSError, ValueError):
                self.copy_to = None
        self._pending += data
        self._trim()
        self._wake.set()

    def _insert(self, data: bytes) -> None:
        cut = self.rng.randrange(0, len(self._pending) + 1) if self._pending else 0
        self._pending[cut:cut] = data
        if self.copy_to is not None:
            with contextlib.suppress(OSError, ValueError):
                self.copy_to.write(data)
        self._trim()
        self._wake.set()

    def _trim(self) -> None:
        excess = len(self._pending) - self.backlog_bytes
        if excess > 0:
            del self._pending[:excess]
            self.dropped += excess

    async def _pump(self) -> None:
        """Deliver pending output to the client whenever there is one; pace it if the console is
        slow."""
        while not self._closed:
            await self._wake.wait()
            self._wake.clear()
            while self._pending and self._writer is not None and not self._closed:
                rate = min(r for r in (self.rate, self.uart_rate, float("inf")) if r)
                size = max(1, int(rate * 0.05)) if rate != float("inf") else 65536
                chunk = bytes(self._pending[:size])
                del self._pending[:size]
                writer = self._writer
                payload = chunk.replace(b"\xff", b"\xff\xff") if self.mode == "telnet" else chunk
                try:
                    writer.write(payload)
                    await writer.drain()
                except (ConnectionError, OSError):
                    self._pending[0:0] = chunk  # keep it for the next client
                    self._disconnect(writer)
                    break
                if rate != float("inf"):
                    await asyncio.sleep(len(chunk) / rate)

    # -- clients -----------------------------------------------------------------------------------

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._refusing or self._closed:
            writer.close()
            return
        if self._writer is not None:
            self._disconnect(self._writer)  # a new connection replaces the old one
        self._writer = writer
        if self.mode == "telnet":
            writer.write(TELNET_GREETING)
        self._wake.set()
        decoder = _TelnetDecoder() if self.mode == "telnet" else None
        try:
            while True:
                # a UART takes a character at a time (a PL011 interrupt each): with uart_rate the
                # line is read no faster than its rate, and the client's writes wait in its socket
                # as they wait in a real line's
                data = await reader.read(max(1, int(self.uart_rate * 0.05)) if self.uart_rate
                                         else 4096)
                if not data:
                    break
                if self.uart_rate:
                    await asyncio.sleep(len(data) / self.uart_rate)
                if decoder is not None:
                    data = decoder.feed(data)
                if data and self.on_input is not None and self._writer is writer:
                    self.on_input(data)
        except (ConnectionError, OSError):
            pass
        finally:
            self._disconnect(writer)

    def _disconnect(self, writer: asyncio.StreamWriter) -> None:
        if self._writer is writer:
            self._writer = None
        with contextlib.suppress(Exception):
            writer.close()

    @property
    def connected(self) -> bool:
        """True while a client is connected."""
        return self._writer is not None

    def drop(self) -> None:
        """Console-drop fault: close the client and refuse new ones (call on the loop thread)."""
        self._refusing = True
        if self._writer is not None:
            self._disconnect(self._writer)
        if self._server is not None:
            self._server.close()

    async def close(self) -> None:
        """Stop serving; pending output is discarded."""
        self._closed = True
        self._wake.set()
        if self._writer is not None:
            self._disconnect(self._writer)
        if self._server is not None:
            self._server.close()
        if self._pump_task is not None:
            self._pump_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._pump_task


def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
