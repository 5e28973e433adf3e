"""The seam between the simulated platform (the guest shell) and the programs it can execute.

When the guest shell executes a file, it reads the file's first bytes and asks ``find_program``; a
registered program (the emulated ``executor_runner``, ...) runs in-process against a
``GuestContext`` that the shell provides. Files that match no program fail as Linux would (``Exec
format error``). A program may also say which dynamic loader its file names (the ELF ``PT_INTERP``
of the build it stands for; None for a static link): when the guest has no such file, the kernel's
execve fails with ENOENT and the shell says ``not found`` for a file that exists, as on a real image
(a glibc build on a musl image).

A registry the programs register into, so the dependency runs one way: the workloads import this
module (``workloads/programs.py`` registers them, when the platform that composes a guest asks it
to), the guest never imports a workload.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Protocol

__all__ = ["GuestContext", "GuestProgram", "ProgramInterrupted", "find_interpreter", "find_program",
           "register_program"]


class ProgramInterrupted(Exception):
    """Raised by ``GuestContext.check_interrupt`` when the user sent Ctrl-C (0x03) or the session is
    closing.

    The shell catches it and reports exit status 130, as busybox does for a program killed by
    SIGINT.
    """


class GuestContext(Protocol):
    """What a guest program may use. Paths are guest paths (absolute or relative to ``cwd``)."""

    argv: list[str]  # argv[0] is the program path as the shell resolved it
    env: Mapping[str, str]  # exported variables plus per-command assignments
    cwd: str
    params: Mapping[str, str]  # every -C parameter of the model, as given (strings)
    # simulator knobs (FVP_SIM_* environment, lower-case names without the prefix)
    knobs: Mapping[str, str]
    npu_macs: int  # host.ethosu.num_macs

    def read_file(self, path: str) -> bytes:
        """Read a guest file. Raises FileNotFoundError / IsADirectoryError / PermissionError like
        open()."""

    def write_file(self, path: str, data: bytes) -> None:
        """Create or replace a guest file."""

    def stdout(self, text: str) -> None:
        """Write to the program's stdout (the console or the ssh channel); '\\n' is sent as the
        terminal would."""

    def stderr(self, text: str) -> None:
        """Write to the program's stderr (on a console, interleaved with stdout as on a real
        tty)."""

    def resident(self, size: int) -> None:
        """The program's resident set is now ``size`` bytes (what it holds: its image, heap, mapped
        buffers); the largest one is the process's ``VmHWM``, what ``time -f %M`` reports when it
        ends."""

    def advance(self, cpu_seconds: float, instructions: int = 0) -> None:
        """Spend simulated time: moves the guest clock, counts towards --simlimit, --stat and the
        speed knob's wall-time sleep."""

    def now(self) -> float:
        """Simulated seconds since the model started."""

    def busy(self) -> AbstractContextManager[None]:
        """Around the program's work: the guest is busy, so simulated time is only what ``advance``
        declares."""

    def check_interrupt(self) -> None:
        """Raise ProgramInterrupted if Ctrl-C arrived or the model is stopping; call it inside long
        loops."""


GuestProgram = Callable[[GuestContext], int]
"""A program: takes the context, returns its exit status (0-255)."""

_Matcher = Callable[[bytes], bool]
_Interpreter = Callable[[bytes], "str | None"]
_REGISTRY: list[tuple[_Matcher, GuestProgram, _Interpreter | None]] = []


def register_program(matches: _Matcher, program: GuestProgram,
                     interpreter: _Interpreter | None = None) -> None:
    """Register a program for files whose leading bytes satisfy ``matches``; ``interpreter(head)``
    names the dynamic loader such a file needs (None: a static link, or a program that needs
    none)."""
    _REGISTRY.append((matches, program, interpreter))


def find_program(head: bytes) -> GuestProgram | None:
    """The program for a file starting with ``head`` (its first 64 bytes), or None."""
    for matches, program, _ in _REGISTRY:
        if matches(head):
            return program
    return None


def find_interpreter(head: bytes) -> str | None:
    """The guest path of the dynamic loader the file starting with ``head`` needs, or None."""
    for matches, _, interpreter in _REGISTRY:
        if matches(head):
            return interpreter(head) if interpreter is not None else None
    return None
