"""``SimGuestContext``: the simulator's implementation of ``programs.GuestContext``.

A guest program (the emulated ``executor_runner``) gets one per execution. Everything it can touch
goes through here: guest files (never host paths), the command's stdout/stderr (the console with tty
newline handling, a redirection file, or an ssh channel, streamed as written), the model's
parameters and knobs, and the simulated clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from types import MappingProxyType

from fvp_harness.sim.guest.io import IO
from fvp_harness.sim.guest.programs import ProgramInterrupted
from fvp_harness.sim.guest.session import Session

__all__ = ["PAGE", "SimGuestContext"]

PAGE = 4096
"""The guest kernel's page size (arm64 Debian and Yocto kernels: 4 KiB)."""


class SimGuestContext:
    """One program execution's view of the machine (satisfies ``programs.GuestContext``)."""

    def __init__(self, shell: Session, argv: list[str], env: Mapping[str, str], io: IO) -> None:
        machine = shell.machine
        self._shell = shell
        self._machine = machine
        self._io = io
        self.argv: list[str] = list(argv)
        self.env: Mapping[str, str] = MappingProxyType(dict(env))
        self.cwd: str = shell.cwd
        self.params: Mapping[str, str] = MappingProxyType(dict(machine.params))
        self.knobs: Mapping[str, str] = MappingProxyType(dict(machine.knobs.raw))
        self.npu_macs: int = machine.npu_macs
        self.peak_rss_kib = 0
        """The process's peak resident set (``VmHWM``), KiB: the largest ``resident`` it
        declared."""

    def read_file(self, path: str) -> bytes:
        """Read a guest file (FileNotFoundError / IsADirectoryError / PermissionError like
        open())."""
        return self._machine.fs.read(path, self.cwd)

    def write_file(self, path: str, data: bytes) -> None:
        """Create or replace a guest file."""
        self._machine.fs.write(path, bytes(data), self.cwd)

    def stdout(self, text: str) -> None:
        """Write to stdout now (the console turns ``\\n`` into ``\\r\\n`` as a tty does)."""
        self._io.out(text.encode("utf-8", "surrogateescape"))

    def stderr(self, text: str) -> None:
        """Write to stderr now."""
        self._io.err(text.encode("utf-8", "surrogateescape"))

    def resident(self, size: int) -> None:
        """The program's resident set is now ``size`` bytes; the kernel counts it in whole 4 KiB
        pages."""
        self.peak_rss_kib = max(self.peak_rss_kib, -(-int(size) // PAGE) * PAGE // 1024)

    def advance(self, cpu_seconds: float, instructions: int = 0) -> None:
        """Spend simulated time (and, with the speed knob, wall time); counts for --simlimit and
        --stat."""
        self._machine.clock.advance(cpu_seconds, instructions or None)
        self.check_interrupt()

    def busy(self) -> AbstractContextManager[None]:
        """The guest is busy running this program (``SimClock.working``)."""
        return self._machine.clock.working()

    def now(self) -> float:
        """Simulated seconds since the model started."""
        return self._machine.clock.now()

    def check_interrupt(self) -> None:
        """Raise ProgramInterrupted after Ctrl-C on the console, a closed ssh channel, or when the
        model stops."""
        if (self._shell.interrupted() or self._machine.stopping.is_set() or
            self._machine.halted.is_set()):
            raise ProgramInterrupted
