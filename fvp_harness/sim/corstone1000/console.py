"""The serial console on ``host_terminal_0``: getty/login and the shell's line editing, in one
thread.

Input bytes arrive from the terminal server (event loop thread) through ``feed``; a dedicated thread
does what the tty, getty, login and busybox line editing do together: echo (unless ``stty -echo``),
backspace, Ctrl-U, Ctrl-C (discard the line, or interrupt the running program: ``^C`` and status
130), Ctrl-D (logout on an empty line), the shell's ``PS1`` prompt and its ``PS2`` continuation
prompt (open quotes, here-documents, a trailing ``|``), a ``line_max`` limit, and ``\\n`` ->
``\\r\\n`` on output (prompts included). Guest programs run synchronously in this thread, as a
foreground process would (the stages of a pipeline but the last in threads of their own,
``guest/shell.py``).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

from fvp_harness.sim.corstone1000.boot import getty_banner, panic_text
from fvp_harness.sim.corstone1000.machine import Machine
from fvp_harness.sim.guest.programs import ProgramInterrupted
from fvp_harness.sim.guest.shell import IO, ExitShell, Incomplete, Shell, Tty, parse

__all__ = ["Console"]

_EOF = object()


class _Stop(Exception):
    """The model is stopping or halted: leave the console loop."""


class Console:
    """Login and shell on the console. ``start()`` runs it in a daemon thread once the machine has
    booted."""

    def __init__(self, machine: Machine, login_fail_delay: float = 1.0) -> None:
        self.machine = machine
        self.tty = Tty()
        self.login_fail_delay = login_fail_delay
        # console command lines run since boot (the Nth-command faults count these)
        self.commands = 0
        self.interrupt = threading.Event()
        self._queue: queue.Queue[bytes] = queue.Queue()
        self._buf = bytearray()
        self._running = False
        self._last_cr = False
        self._thread = threading.Thread(target=self._main, name="console", daemon=True)
        self.on_command: Callable[[int, str], None] = lambda n, text: None

    def start(self) -> None:
        self._thread.start()

    def feed(self, data: bytes) -> None:
        """Input from the terminal (any thread). Ctrl-C while a program runs interrupts it at once,
        as SIGINT."""
        if b"\x03" in data and self._running:
            self.interrupt.set()
            self.machine.console_write(b"^C")
            return  # the tty flushes pending input on SIGINT
        self._queue.put(data)

    # -- output ------------------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Console output with the tty's newline mapping."""
        if self.tty.onlcr:
            data = data.replace(b"\n", b"\r\n")
        self.machine.console_write(data)

    def _say(self, text: str) -> None:
        self.machine.console_write(text.encode("utf-8", "surrogateescape"))

    # -- input -------------------------------------------------------------------------------------

    def _byte(self) -> int:
        while not self._buf:
            if self.machine.stopping.is_set() or self.machine.halted.is_set():
                raise _Stop
            if self._running and self.interrupt.is_set():
                raise ProgramInterrupted  # Ctrl-C while a program waits for input
            try:
                self._buf += self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
        b = self._buf[0]
        del self._buf[0]
        return b

    def _flush_input(self) -> None:
        self._buf.clear()
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return

    def read_line(self, echo: bool) -> str | None:
        """One edited line without its newline; None for Ctrl-D on an empty line; '\\x03' for
        Ctrl-C."""
        line = bytearray()
        limit = self.machine.knobs.line_max
        while True:
            b = self._byte()
            if b == 0x0A and self._last_cr:
                self._last_cr = False
                continue  # CR LF from a client is one Enter
            self._last_cr = b == 0x0D
            if b in (0x0D, 0x0A):
                if echo:
                    self.machine.console_write(b"\r\n")
                return line.decode("utf-8", "surrogateescape")
            if b == 0x03:
                self.machine.console_write(b"^C\r\n")
                return "\x03"
            if b == 0x04:
                if not line:
                    return None
                continue
            if b in (0x7F, 0x08):
                if line:
                    line.pop()
                    if echo:
                        self.machine.console_write(b"\b \b")
                continue
            if b == 0x15:  # Ctrl-U: kill the line
                if echo and line:
                    self.machine.console_write(b"\b \b" * len(line))
                line.clear()
                continue
            # an escape sequence (arrow keys...): ignored, like an editor that does not bind it
            if b == 0x1B:
                nxt = self._byte()
                if nxt == ord("["):
                    while not 0x40 <= self._byte() <= 0x7E:
                        pass
                continue
            if len(line) >= limit - 1:
                continue  # the tty's line buffer is full: the byte is lost
            line.append(b)
            if echo:
                self.machine.console_write(bytes([b]))

    def _stdin_line(self) -> bytes:
        """One cooked line (with echo) of a foreground program's stdin; b"" at Ctrl-D."""
        line = self.read_line(self.tty.echo)
        if self.interrupt.is_set() or line == "\x03":
            raise ProgramInterrupted
        if line is None:
            return b""
        return line.encode("utf-8", "surrogateescape") + b"\n"

    # -- the console's life ------------------------------------------------------------------------

    def _main(self) -> None:
        try:
            while not self.machine.booted.wait(0.2):
                if self.machine.stopping.is_set():
                    return
            self._flush_input()  # getty flushes what was typed during boot
            while True:
                self._say(f"{self.machine.hostname} login: ")
                name = self.read_line(echo=True)
                if name is None or name == "\x03" or not name.strip():
                    if name is None:
                        self._say("\r\n")
                    continue
                if name.strip() != "root":
                    self._say("Password: ")
                    self.read_line(echo=False)
                    self._say("\r\n")
                    time.sleep(self.login_fail_delay)
                    self._say("Login incorrect\r\n")
                    continue
                self._shell_session()
                banner = getty_banner(self.machine.release)
                self._say(f"\r\n{banner}\r\n\r\n")
        except _Stop:
            return

    def _shell_session(self) -> None:
        shell = Shell(self.machine, interrupted=self.interrupt.is_set)
        self.tty = Tty()
        while True:
            self.write(shell.prompt().encode("utf-8", "surrogateescape"))
            text = ""
            while True:
                line = self.read_line(self.tty.echo)
                if line is None:
                    if text:
                        continue
                    return  # Ctrl-D: ash exits, getty starts over
                if line == "\x03":
                    text = None  # type: ignore[assignment]
                    break
                text += line + "\n"
                try:
                    parse(text)
                except Incomplete:
                    self.write(shell.prompt2().encode("utf-8", "surrogateescape"))
                    continue
                except Exception:  # a syntax error: run_line reports it
                    pass
                break
            if text is None or not text.strip():
                continue
            self.commands += 1
            self.on_command(self.commands, text)
            if self.machine.halted.is_set():
                raise _Stop
            io = IO(self.write, self.write, _ConsoleStdin(self), self.tty, self.tty)
            self._running = True
            self.interrupt.clear()
            try:
                shell.run_line(text, io)
            except ExitShell:
                return
            finally:
                self._running = False
            if self.interrupt.is_set():
                self.interrupt.clear()
                self._say("\r\n")
                self._flush_input()
            if self.machine.stopping.is_set() or self.machine.halted.is_set():
                raise _Stop

    def panic(self) -> None:
        """Kernel panic: print the panic text (at any loglevel) and stop responding."""
        for line in panic_text(self.machine.release):
            self.machine.printk(line, level=0)
        self.machine.halted.set()


class _ConsoleStdin:
    """A command's stdin on the console: the lines typed while it runs, until Ctrl-D."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._eof = False

    def read_chunk(self, size: int = 0) -> bytes:
        if self._eof:
            return b""
        data = self._console._stdin_line()
        self._eof = not data
        return data

    def read(self) -> bytes:
        data = bytearray()
        while True:
            chunk = self.read_chunk()
            if not chunk:
                return bytes(data)
            data += chunk
