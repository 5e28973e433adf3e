"""One socket terminal of the model: connect, telnet or raw, drained continuously, logged, matched
through pexpect.

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

from __future__ import annotations

import contextlib
import datetime
import logging
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

import pexpect
from pexpect.spawnbase import SpawnBase

from fvp_harness.errors import PortError, StorageError, storage_error
from fvp_harness.targets.deadline import Deadline
from fvp_harness.targets.text import TextCleaner, held_back, mask

__all__ = ["TelnetCodec", "Terminal", "TerminalSpawn"]

log = logging.getLogger(__name__)

LineListener = Callable[[str, str], None]
"""Called from the drain thread with (terminal name, complete clean line without LF)."""

MAX_BUFFER_CHARS = 8 * 1024 * 1024
"""Unread console text kept for matching; beyond this the oldest half is dropped (it is still in the
log)."""

PARTIAL_FLUSH_S = 0.5
"""An unfinished line (a prompt) is written to the log after this much silence, so the log shows
prompts."""

# Telnet (RFC 854/855) bytes.
IAC, DONT, DO, WONT, WILL, SB, SE = 255, 254, 253, 252, 251, 250, 240
OPT_BINARY, OPT_ECHO, OPT_SGA = 0, 1, 3


def _quick_ack(sock: socket.socket) -> None:
    """Acknowledge at once (Linux): with delayed ACKs, a model that writes small segments with Nagle
    on waits up to 40 ms for our ACK before its next one, which would add 40 ms to every command's
    round trip."""
    quickack = getattr(socket, "TCP_QUICKACK", None)
    if quickack is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)
        except OSError:
            pass


class TelnetCodec:
    """Minimal client side of telnet: strips commands from the data and answers option requests.

    Policy: let the server echo and suppress go-ahead (``WILL ECHO``/``WILL SGA`` -> ``DO``), agree
    to binary in both directions, and refuse everything else (``WONT``/``DONT``), including terminal
    type and window size which a serial console does not need. Each option is answered once per
    state change, so two polite ends cannot loop. Subnegotiations are skipped. ``IAC IAC`` is a
    literal 0xFF byte in either direction.
    """

    ACCEPT_WILL = frozenset({OPT_ECHO, OPT_SGA, OPT_BINARY})
    ACCEPT_DO = frozenset({OPT_SGA, OPT_BINARY})

    def __init__(self) -> None:
        self._state = "data"
        self._command = 0
        self._answered: dict[tuple[int, int], int] = {}
        self.binary = False

    def feed(self, data: bytes) -> tuple[bytes, bytes]:
        """Split received bytes into (payload, reply to send back)."""
        payload = bytearray()
        reply = bytearray()
        for byte in data:
            state = self._state
            if state == "data":
                if byte == IAC:
                    self._state = "iac"
                else:
                    payload.append(byte)
            elif state == "iac":
                if byte == IAC:
                    payload.append(IAC)
                    self._state = "data"
                elif byte in (DO, DONT, WILL, WONT):
                    self._command = byte
                    self._state = "option"
                elif byte == SB:
                    self._state = "sb"
                else:  # NOP, GA, AYT...: nothing to do
                    self._state = "data"
            elif state == "option":
                reply += self._answer(self._command, byte)
                self._state = "data"
            elif state == "sb":
                if byte == IAC:
                    self._state = "sb_iac"
            elif state == "sb_iac":
                self._state = "data" if byte == SE else "sb"
        return bytes(payload), bytes(reply)

    def _answer(self, command: int, option: int) -> bytes:
        if command == WILL:
            response = DO if option in self.ACCEPT_WILL else DONT
        elif command == DO:
            response = WILL if option in self.ACCEPT_DO else WONT
            if option == OPT_BINARY:
                self.binary = response == WILL
        elif command == WONT:
            response = DONT
        else:  # DONT
            response = WONT
        key = (command in (WILL, WONT), option)
        if self._answered.get(key) == response:
            return b""
        self._answered[key] = response
        return bytes((IAC, response, option))

    def encode(self, data: bytes) -> bytes:
        """Escape payload for sending: IAC doubled; a bare CR becomes CR NUL unless binary mode was
        agreed."""
        data = data.replace(bytes((IAC,)), bytes((IAC, IAC)))
        if not self.binary:
            out = bytearray()
            for index, byte in enumerate(data):
                out.append(byte)
                if byte == 0x0D and (index + 1 >= len(data) or data[index + 1] != 0x0A):
                    out.append(0)
            data = bytes(out)
        return data


class TerminalSpawn(SpawnBase):
    """A pexpect spawn over a terminal's clean-text buffer (filled by the drain thread).

    ``expect``, ``expect_exact``, ``read_nonblocking``, TIMEOUT and EOF behave as pexpect documents;
    ``send`` goes to the terminal's socket. EOF means the connection closed and everything received
    was consumed.
    """

    def __init__(self, terminal: Terminal, *, searchwindowsize: int, timeout: float) -> None:
        super().__init__(timeout=timeout, maxread=65536, searchwindowsize=searchwindowsize,
                         encoding="utf-8", codec_errors="replace")
        self._terminal = terminal
        self.name = f"<terminal {terminal.name}:{terminal.port}>"
        self.closed = False
        self.delayafterread = None

    def read_nonblocking(self, size: int = 1, timeout: float | None = -1) -> str:
        if timeout == -1:
            timeout = self.timeout
        return self._terminal._take(size, timeout)

    def send(self, s: str | bytes) -> int:
        return self._terminal.send(s)

    def sendline(self, s: str = "") -> int:
        return self.send(s + self._terminal.newline)

    def isalive(self) -> bool:
        return not self._terminal.closed

    def discard_pending(self) -> str:
        """Drop everything received but not yet matched (it is in the log); returns what was
        dropped."""
        dropped = self._terminal._take_all()
        self.buffer = ""
        return dropped


class Terminal:
    """A connected, continuously drained terminal of the model."""

    def __init__(
        self,
        name: str,
        port: int,
        *,
        log_path: Path,
        mode: str = "raw",
        host: str = "127.0.0.1",
        newline: str = "\n",
        searchwindowsize: int = 16384,
        tail_size: int = 200,
        wall_clock: Callable[[], datetime.datetime] = datetime.datetime.now,
        redact: Sequence[str] = (),
    ) -> None:
        if mode not in ("raw", "telnet"):
            raise ValueError(f"terminal mode must be raw or telnet, not {mode!r}")
        self.name = name
        self.port = port
        self.host = host
        self.mode = mode
        self.newline = newline
        self.log_path = Path(log_path)
        self._now = wall_clock
        self._redact = tuple(redact)
        """Secret texts the log shows as ``***`` (what was typed, and the guest's echo of it)."""
        self._sock: socket.socket | None = None
        self._codec = TelnetCodec() if mode == "telnet" else None
        self._cleaner = TextCleaner()
        self._cond = threading.Condition()
        self._chunks: deque[str] = deque()
        self._buffered = 0
        self._line = ""  # unfinished line for the log / listeners
        self._line_logged = 0  # chars of _line already written to the log as a partial line
        self._tail: deque[str] = deque(maxlen=tail_size)
        self._listeners: list[LineListener] = []
        self._tap: Callable[[bytes], None] | None = None
        self._send_lock = threading.Lock()
        self._log_lock = threading.Lock()
        self._log_file: TextIO | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.closed = False
        self.close_reason: str | None = None
        self.storage_failure: StorageError | None = None
        """Why the log could not be written (disk full, read-only, ...): the terminal is then
        closed, and the console raises this instead of waiting out its deadline on a terminal nobody
        drains."""
        self.bytes_received = 0
        self.spawn = TerminalSpawn(self, searchwindowsize=searchwindowsize, timeout=30)

    # -- lifecycle ---------------------------------------------------------------------------------

    def connect(self, deadline: Deadline, *, alive: Callable[[], bool] | None = None) -> None:
        """Connect, retrying while the model gets its listener up, then start draining.

        A model announces a port a moment before it accepts on it, so refusals are retried until
        ``deadline``.
        """
        last_error: OSError | None = None
        while True:
            try:
                sock = socket.create_connection((self.host, self.port),
                                                timeout=max(0.2, deadline.slice(5.0)))
                break
            except OSError as exc:
                last_error = exc
            if deadline.expired or (alive is not None and not alive()):
                raise PortError(
                    deadline.message(f"could not connect to {self.name} on {self.host}:{self.port} "
                                     f"({last_error})"),
                    stage="ports",
                ) from last_error
            time.sleep(deadline.slice(0.05))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        self._sock = sock
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = self.log_path.open("a", encoding="utf-8", errors="replace")
        self._write_log_line("#", f"connected to {self.host}:{self.port} ({self.mode})")
        self._thread = threading.Thread(target=self._drain, name=f"drain-{self.name}", daemon=True)
        self._thread.start()

    def redact_also(self, secrets: Sequence[str]) -> None:
        """Show these texts as ``***`` in the log too, from now on (the drain thread reads the tuple
        anew each time)."""
        self._redact = tuple(dict.fromkeys([*self._redact, *secrets]))

    def close(self) -> None:
        """Stop draining, close the socket and the log. Safe to call twice."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass
        self._mark_closed(self.close_reason or "closed by the harness")
        with self._log_lock:
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None

    # -- I/O ---------------------------------------------------------------------------------------

    def send(self, data: str | bytes) -> int:
        """Send text (UTF-8) or bytes to the terminal; logged as a ``>`` line (long sends shortened
        in the log)."""
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        sock = self._sock
        if sock is None or self.closed:
            raise OSError(f"terminal {self.name} is closed ({self.close_reason})")
        shown = mask(raw.decode("utf-8", "replace").rstrip("\r\n"), self._redact)
        if len(shown) > 160:
            shown = shown[:120] + f"... ({len(raw)} bytes)"
        self._write_log_line(">", shown)
        wire = self._codec.encode(raw) if self._codec is not None else raw
        with self._send_lock:
            view = memoryview(wire)
            while view:
                try:
                    sent = sock.send(view)
                except BlockingIOError:
                    select.select([], [sock], [], 1.0)
                    continue
                view = view[sent:]
        return len(raw)

    def add_line_listener(self, listener: LineListener) -> None:
        self._listeners.append(listener)

    def set_tap(self, tap: Callable[[bytes], None] | None) -> None:
        """Also hand every received payload byte string, uncleaned, to ``tap`` (interactive
        shells)."""
        self._tap = tap

    def tail(self, count: int = 200) -> list[str]:
        """The last ``count`` clean lines received (the unfinished last line included)."""
        lines = list(self._tail)
        if self._line:
            lines.append(self._line)
        return lines[-count:]

    # -- what TerminalSpawn reads ------------------------------------------------------------------

    def _take(self, size: int, timeout: float | None) -> str:
        end = None if timeout is None else time.monotonic() + max(0.0, timeout)
        with self._cond:
            while not self._chunks:
                if self.closed:
                    raise pexpect.EOF(f"{self.name}: {self.close_reason}")
                remaining = None if end is None else end - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise pexpect.TIMEOUT(f"{self.name}: no output")
                self._cond.wait(remaining)
            out: list[str] = []
            taken = 0
            while self._chunks and taken < size:
                chunk = self._chunks.popleft()
                if taken + len(chunk) > size:
                    keep = size - taken
                    self._chunks.appendleft(chunk[keep:])
                    chunk = chunk[:keep]
                out.append(chunk)
                taken += len(chunk)
            self._buffered -= taken
            return "".join(out)

    def _take_all(self) -> str:
        with self._cond:
            text = "".join(self._chunks)
            self._chunks.clear()
            self._buffered = 0
            return text

    # -- drain thread ------------------------------------------------------------------------------

    def _drain(self) -> None:
        """The drain thread: ``_drain_loop``; a log that cannot be written closes the terminal with
        the reason (``storage_failure``), so whoever waits on it learns at once instead of at its
        deadline."""
        try:
            self._drain_loop()
        except StorageError:
            pass  # the terminal is closed with the reason (``_write_log_line``)

    def _drain_loop(self) -> None:
        sock = self._sock
        assert sock is not None
        last_data = time.monotonic()
        while not self._stop.is_set():
            try:
                readable, _, _ = select.select([sock], [], [], 0.1)
            except (OSError, ValueError):
                self._mark_closed("socket error")
                break
            if not readable:
                if self._line and len(self._line) > self._line_logged and \
                        time.monotonic() - last_data > PARTIAL_FLUSH_S:
                    # never log half a secret
                    ready = len(self._line) - held_back(self._line, self._redact)
                    if ready > self._line_logged:
                        self._write_log_line("<", self._line[self._line_logged:ready], partial=True)
                        self._line_logged = ready
                continue
            try:
                data = sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError as exc:
                self._mark_closed(f"connection error: {exc}")
                break
            if not data:
                self._mark_closed("the model closed the connection")
                break
            last_data = time.monotonic()
            _quick_ack(sock)
            self._receive(data)
        tail = self._cleaner.flush()
        if tail:
            self._consume_text(tail)
        if self._line and len(self._line) > self._line_logged:
            self._write_log_line("<", self._line[self._line_logged:], partial=True)

    def _receive(self, data: bytes) -> None:
        self.bytes_received += len(data)
        if self._codec is not None:
            data, reply = self._codec.feed(data)
            if reply and self._sock is not None:
                with self._send_lock:
                    try:
                        self._sock.sendall(reply)
                    except OSError:
                        pass
        if not data:
            return
        tap = self._tap
        if tap is not None:
            try:
                tap(data)
            except Exception:  # a broken tap must not stop draining (the log is what matters)
                log.exception("terminal tap failed on %s", self.name)
                self._tap = None
        self._consume_text(self._cleaner.feed(data))

    def _consume_text(self, text: str) -> None:
        if not text:
            return
        with self._cond:
            self._chunks.append(text)
            self._buffered += len(text)
            if self._buffered > MAX_BUFFER_CHARS:
                log.warning("%s: more than %s unread characters; dropping the oldest (kept in %s)",
                            self.name, MAX_BUFFER_CHARS, self.log_path)
                while self._buffered > MAX_BUFFER_CHARS // 2 and self._chunks:
                    self._buffered -= len(self._chunks.popleft())
            self._cond.notify_all()
        parts = (self._line + text).split("\n")
        self._line = parts.pop()
        logged = self._line_logged
        self._line_logged = 0 if parts else logged
        for index, line in enumerate(parts):
            shown = line[logged:] if index == 0 else line
            self._write_log_line("<", shown, continued=index == 0 and logged > 0)
            self._tail.append(line)
            for listener in self._listeners:
                try:
                    listener(self.name, line)
                except Exception:  # a listener bug must not stop the drain; it is logged
                    log.exception("line listener failed on %s", self.name)

    def _mark_closed(self, reason: str) -> None:
        with self._cond:
            if not self.closed:
                self.closed = True
                self.close_reason = reason
                log.debug("%s: %s", self.name, reason)
            self._cond.notify_all()

    def _write_log_line(self, direction: str, text: str, *, partial: bool = False,
                        continued: bool = False) -> None:
        stamp = self._now().isoformat(sep=" ", timespec="milliseconds")
        mark = direction
        if continued:
            mark = "+"  # the rest of a line whose start was logged as a partial line
        suffix = "  [unfinished line]" if partial else ""
        text = mask(text, self._redact)
        with self._log_lock:
            if self._log_file is None:
                if self.storage_failure is not None:
                    raise self.storage_failure
                return
            try:
                self._log_file.write(f"{stamp} {mark} {text}{suffix}\n")
                self._log_file.flush()
            except OSError as exc:
                failure = self.storage_failure = storage_error(self.log_path, exc)
                with contextlib.suppress(OSError):
                    self._log_file.close()
                self._log_file = None
            else:
                return
        log.debug("%s: %s", self.name, failure)
        self._mark_closed(str(failure))
        raise failure
