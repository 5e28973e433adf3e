"""What every busybox applet here shares: option parsing (``getopt``), busybox's usage text and
messages (``busybox_applet``), reading a file or stdin line by line, Ctrl-C checks."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterator

from fvp_harness.sim.guest import programs
from fvp_harness.sim.guest.io import IO, read_lines
from fvp_harness.sim.guest.session import Session

__all__ = [
    "BUSYBOX",
    "SPACE",
    "Fail",
    "Usage",
    "busybox_applet",
    "check",
    "getopt",
    "input_lines",
    "lines_of",
    "number",
    "print_usage",
    "read_input",
]

BUSYBOX = "BusyBox v1.36.1 () multi-call binary."
SPACE = b" \t\n\v\f\r"


class Usage(Exception):
    """Bad options: the message (if any) is printed, then the applet's usage; exit 1 (2 for grep and
    sort)."""


class Fail(Exception):
    """An error busybox reports as ``applet: message`` and exits on (the applet's usage exit
    status)."""


def check(sh: Session) -> None:
    if sh.interrupted() or sh.machine.stopping.is_set():
        raise programs.ProgramInterrupted


def getopt(args: list[str], spec: str) -> tuple[list[tuple[str, str]], list[str]]:
    """GNU-style short options (permuted, ``-abc``, ``-nVALUE``, ``-n VALUE``, ``--`` ends them);
    ``spec`` as getopt's (``n:`` takes a value). Raises Usage."""
    takes = {c for i, c in enumerate(spec) if i + 1 < len(spec) and spec[i + 1] == ":"}
    known = set(spec.replace(":", ""))
    opts: list[tuple[str, str]] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            operands += args[i:]
            break
        if not a.startswith("-") or a == "-":
            operands.append(a)
            continue
        j = 1
        while j < len(a):
            c = a[j]
            if c not in known:
                raise Usage(f"invalid option -- '{c}'")
            if c in takes:
                value = a[j + 1:]
                if not value:
                    if i >= len(args):
                        raise Usage(f"option requires an argument -- '{c}'")
                    value = args[i]
                    i += 1
                opts.append((c, value))
                break
            opts.append((c, ""))
            j += 1
    return opts, operands


def print_usage(io: IO, name: str, usage: str, message: str = "") -> None:
    if message:
        io.complain(f"{name}: {message}\n")
    io.complain(f"{BUSYBOX}\n\nUsage: {name} {usage}\n")


def read_input(sh: Session, name: str, io: IO, applet: str, style: str = "open") -> bytes | None:
    """A file's bytes, or None after busybox's message (``can't open 'X': ...`` or ``X: ...`` for
    grep)."""
    try:
        return sh.fs.read(name, sh.cwd)
    except OSError as exc:
        reason = exc.strerror or os.strerror(exc.errno or 0)
        io.complain(f"{applet}: can't open '{name}': {reason}\n" if style == "open"
                    else f"{applet}: {name}: {reason}\n")
        return None


def lines_of(data: bytes) -> list[bytes]:
    """Lines with their ``\\n`` (the last may lack it)."""
    lines = data.split(b"\n")
    last = lines.pop()
    return [line + b"\n" for line in lines] + ([last] if last else [])


def input_lines(sh: Session, io: IO, name: str, data: bytes | None) -> Iterator[bytes]:
    if name == "-":
        for line in read_lines(io.stdin):
            check(sh)
            yield line
    else:
        yield from lines_of(data or b"")


def number(text: str) -> int:
    m = re.fullmatch(r"(\d+)([bkm]?)", text)
    if not m:
        raise Fail(f"invalid number '{text}'")
    return int(m.group(1)) * {"": 1, "b": 512, "k": 1024, "m": 1024 * 1024}[m.group(2)]


def busybox_applet(
    usage: str, usage_status: int = 1
) -> Callable[[Callable[[Session, list[str], IO], int]], Callable[[Session, list[str], IO], int]]:
    """Turn Usage into busybox's usage text and exit status."""

    def wrap(
        fn: Callable[[Session, list[str], IO], int],
    ) -> Callable[[Session, list[str], IO], int]:
        @functools.wraps(fn)
        def run(sh: Session, argv: list[str], io: IO) -> int:
            try:
                return fn(sh, argv, io)
            except Usage as exc:
                print_usage(io, argv[0], usage, str(exc))
                return usage_status
            except Fail as exc:
                io.complain(f"{argv[0]}: {exc}\n")
                return usage_status

        return run

    return wrap
