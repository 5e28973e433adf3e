"""What a shell command runs with: its three streams (``IO``), stdin sources, the console's tty settings, and
``ExitShell``. Shared by the shell, its builtins (``builtins.py``), the console, ssh and guest programs' context.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["IO", "VARIABLE_NAME", "BytesStdin", "ExitShell", "Stdin", "Tty"]

VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A shell variable name (``export``, ``$NAME``, ``NAME=value``)."""


class Stdin(Protocol):
    """A command's standard input."""

    def read(self) -> bytes:
        """Everything up to end of file (blocks; raises guest_programs.ProgramInterrupted on Ctrl-C)."""


class BytesStdin:
    """Standard input from bytes (a file redirection, or nothing)."""

    def __init__(self, data: bytes = b"") -> None:
        self._data = data

    def read(self) -> bytes:
        data, self._data = self._data, b""
        return data


@dataclass
class Tty:
    """The console's terminal settings that ``stty`` changes and the console honours."""

    echo: bool = True
    onlcr: bool = True
    rows: int = 24
    cols: int = 80


@dataclass
class IO:
    """A command's three streams. ``out``/``err`` take bytes exactly as the program wrote them; a console's
    writers turn ``\\n`` into ``\\r\\n`` as the tty does."""

    out: Callable[[bytes], None]
    err: Callable[[bytes], None]
    stdin: Stdin
    tty: Tty | None = None  # set when fd 0 and 1 are the console

    def say(self, text: str) -> None:
        self.out(text.encode("utf-8", "surrogateescape"))

    def complain(self, text: str) -> None:
        self.err(text.encode("utf-8", "surrogateescape"))


class ExitShell(Exception):
    """``exit``: ends the shell (console: back to the login prompt; ssh: the channel's exit status)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status
