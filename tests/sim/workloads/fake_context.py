"""An in-memory ``GuestContext`` for testing emulated guest programs without the platform: the A/B
runner's tests (``run_runner`` in this folder's conftest) and the VGF runner's
(``test_vgf_runner.py``) both use it."""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

from fvp_harness.sim.guest.programs import ProgramInterrupted

__all__ = ["FakeContext"]


@dataclass
class FakeContext:
    """Implements ``guest_programs.GuestContext`` over a dict of guest files and a counter clock."""

    argv: list[str]
    files: dict[str, bytes]
    knobs: Mapping[str, str] = field(default_factory=dict)
    npu_macs: int = 256
    cwd: str = "/root"
    env: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)
    interrupt_after_checks: int | None = None
    clock: float = 10.0
    instructions: int = 0
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    checks: int = 0
    advances: list[float] = field(default_factory=list)

    def _path(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.cwd, path))

    def read_file(self, path: str) -> bytes:
        try:
            return self.files[self._path(path)]
        except KeyError:
            raise FileNotFoundError(2, "No such file or directory", path) from None

    def write_file(self, path: str, data: bytes) -> None:
        self.files[self._path(path)] = bytes(data)

    def stdout(self, text: str) -> None:
        self.out.append(text)

    def stderr(self, text: str) -> None:
        self.err.append(text)

    def resident(self, size: int) -> None:
        assert size >= 0
        self.peak_resident = max(getattr(self, "peak_resident", 0), size)

    def advance(self, cpu_seconds: float, instructions: int = 0) -> None:
        assert cpu_seconds >= 0
        self.clock += cpu_seconds
        self.instructions += instructions
        self.advances.append(cpu_seconds)
        self.check_interrupt()

    def now(self) -> float:
        return self.clock

    def busy(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def check_interrupt(self) -> None:
        self.checks += 1
        if self.interrupt_after_checks is not None and self.checks >= self.interrupt_after_checks:
            raise ProgramInterrupted

    @property
    def stderr_text(self) -> str:
        return "".join(self.err)

    @property
    def stdout_text(self) -> str:
        return "".join(self.out)
