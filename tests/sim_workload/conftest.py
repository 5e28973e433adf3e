"""An in-memory ``GuestContext`` and ready-made artifacts, so the emulated runner is tested without the
platform."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pytest

from fvp_harness.sim.guest_programs import ProgramInterrupted
from fvp_harness.sim.modelfile import RunnerArtifact, compile_model, encode_model, encode_runner, make_input
from fvp_harness.sim.models import ARCHITECTURES, get_architecture
from fvp_harness.sim.runner import executor_runner


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

    def advance(self, cpu_seconds: float, instructions: int = 0) -> None:
        assert cpu_seconds >= 0
        self.clock += cpu_seconds
        self.instructions += instructions
        self.advances.append(cpu_seconds)
        self.check_interrupt()

    def now(self) -> float:
        return self.clock

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


@pytest.fixture(scope="session")
def model_files() -> dict[str, bytes]:
    """Each of the four models compiled for ethos-u85-256 with seed 0."""
    return {name: encode_model(compile_model(get_architecture(name), 0, 256)) for name in ARCHITECTURES}


@pytest.fixture(scope="session")
def input_files() -> dict[str, bytes]:
    return {name: make_input(get_architecture(name), 0).tobytes() for name in ARCHITECTURES}


RunRunner = Callable[..., tuple[int, FakeContext]]


@pytest.fixture
def run_runner(model_files: dict[str, bytes], input_files: dict[str, bytes]) -> RunRunner:
    """Run the emulated runner: ``run_runner(driver, *flags, model=..., knobs=..., npu_macs=..., fault=...,
    id=...)``.

    The guest holds ``/root/runner`` (the artifact), ``/root/<model>.bin`` and ``/root/<model>.in``.
    """

    def run(
        driver: str,
        *flags: str,
        model: str = "resnet8",
        knobs: Mapping[str, str] | None = None,
        npu_macs: int = 256,
        fault: str = "",
        build_id: str = "test-build",
        extra_files: Mapping[str, bytes] | None = None,
        interrupt_after_checks: int | None = None,
    ) -> tuple[int, FakeContext]:
        files = {
            "/root/runner": encode_runner(RunnerArtifact(driver, build_id, fault)),
            **{f"/root/{name}.bin": data for name, data in model_files.items()},
            **{f"/root/{name}.in": data for name, data in input_files.items()},
            **(extra_files or {}),
        }
        argv = ["/root/runner", *(flags or (f"--model_path={model}.bin",))]
        ctx = FakeContext(
            argv, files, dict(knobs or {}), npu_macs, interrupt_after_checks=interrupt_after_checks
        )
        status = executor_runner(ctx)
        return status, ctx

    return run
