"""What a shell command runs with: its three streams (``IO``), stdin sources, pipes between the
stages of a pipeline, the console's tty settings, and ``ExitShell``. Shared by the shell, its
builtins (``guest/builtins.py``, ``applets/``), the console, ssh and guest programs' context.

A command's stdin is anything with ``read()`` (everything up to end of file). Sources that can
deliver data as it comes (a pipe, the console, a file) also have ``read_chunk()``; ``read_chunks``
and ``read_lines`` use it when it is there, so ``head`` stops reading (and closes its pipe) as soon
as it has its lines, as a real process would.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "IO",
    "VARIABLE_NAME",
    "BytesStdin",
    "ExitShell",
    "LoopControl",
    "Pipe",
    "PipeClosed",
    "Stdin",
    "Tty",
    "read_chunks",
    "read_lines",
]

VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A shell variable name (``export``, ``$NAME``, ``NAME=value``)."""

PIPE_CAPACITY = 65536
"""Bytes a pipe holds before its writer blocks (Linux's default pipe size)."""


class Stdin(Protocol):
    """A command's standard input."""

    def read(self) -> bytes:
        """Everything up to end of file (blocks; raises programs.ProgramInterrupted on Ctrl-C)."""


class BytesStdin:
    """Standard input from bytes (a file redirection, a here-document, or nothing)."""

    def __init__(self, data: bytes = b"") -> None:
        self._data = data

    def read(self) -> bytes:
        data, self._data = self._data, b""
        return data

    def read_chunk(self, size: int = PIPE_CAPACITY) -> bytes:
        data, self._data = self._data[:size], self._data[size:]
        return data


def read_chunks(stdin: Stdin) -> Iterator[bytes]:
    """The input as it arrives (one ``read()`` for sources that cannot stream)."""
    chunk_reader = getattr(stdin, "read_chunk", None)
    if chunk_reader is None:
        data = stdin.read()
        if data:
            yield data
        return
    while True:
        data = chunk_reader()
        if not data:
            return
        yield data


def read_lines(stdin: Stdin) -> Iterator[bytes]:
    """The input line by line, each with its ``\\n`` (the last one may lack it)."""
    pending = b""
    for chunk in read_chunks(stdin):
        pending += chunk
        *whole, pending = pending.split(b"\n")
        for line in whole:
            yield line + b"\n"
    if pending:
        yield pending


class PipeClosed(Exception):
    """Writing to a pipe whose reader has gone (EPIPE/SIGPIPE): the writing command ends, status
    141."""


class Pipe:
    """A pipe between two stages of a pipeline: a bounded byte buffer, thread safe.

    The writer blocks while it is full; the reader blocks while it is empty and sees end of file
    once the writer has closed its end. When the reader closes its end, further writes raise
    PipeClosed (the writer would get SIGPIPE). Every wait polls ``stop`` so Ctrl-C or a stopping
    model never leaves a thread blocked.
    """

    def __init__(self, stop: Callable[[], bool], interrupted: Callable[[], Exception]) -> None:
        self._cv = threading.Condition()
        self._buf = bytearray()
        self._write_closed = False
        self._read_closed = False
        self._stop = stop
        self._interrupted = interrupted

    def write(self, data: bytes) -> None:
        view = memoryview(bytes(data))
        with self._cv:
            while view:
                if self._read_closed:
                    raise PipeClosed
                space = PIPE_CAPACITY - len(self._buf)
                if space <= 0:
                    self._wait()
                    continue
                self._buf += view[:space]
                view = view[space:]
                self._cv.notify_all()

    def close_write(self) -> None:
        with self._cv:
            self._write_closed = True
            self._cv.notify_all()

    def read_chunk(self, size: int = PIPE_CAPACITY) -> bytes:
        with self._cv:
            while not self._buf and not self._write_closed:
                self._wait()
            data = bytes(self._buf[:size])
            del self._buf[:size]
            self._cv.notify_all()
            return data

    def read(self) -> bytes:
        out = bytearray()
        while True:
            data = self.read_chunk()
            if not data:
                return bytes(out)
            out += data

    def close_read(self) -> None:
        with self._cv:
            self._read_closed = True
            self._buf.clear()
            self._cv.notify_all()

    def _wait(self) -> None:
        if self._stop():
            raise self._interrupted()
        self._cv.wait(0.1)


@dataclass
class Tty:
    """The console's terminal settings that ``stty`` changes and the console honours."""

    echo: bool = True
    onlcr: bool = True
    rows: int = 24
    cols: int = 80


@dataclass
class IO:
    """A command's three streams. ``out``/``err`` take bytes exactly as the program wrote them; a
    console's writers turn ``\\n`` into ``\\r\\n`` as the tty does.

    ``tty`` is set when stdout is the console (``ls`` prints columns); ``term`` when stdin is the
    console (``stty`` works on it). A redirection or a pipe clears the one it replaces.
    """

    out: Callable[[bytes], None]
    err: Callable[[bytes], None]
    stdin: Stdin
    tty: Tty | None = None
    term: Tty | None = None

    def say(self, text: str) -> None:
        self.out(text.encode("utf-8", "surrogateescape"))

    def complain(self, text: str) -> None:
        self.err(text.encode("utf-8", "surrogateescape"))


class LoopControl(Exception):
    """``break [N]`` / ``continue [N]``: leaves (``kind`` ``break``) or restarts (``continue``) the
    Nth enclosing loop; outside a loop it does nothing, as in ash."""

    def __init__(self, kind: str, count: int = 1) -> None:
        super().__init__(kind, count)
        self.kind = kind
        self.count = count


class ExitShell(Exception):
    """``exit``: ends the shell (console: back to the login prompt; ssh: the channel's exit
    status)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status
