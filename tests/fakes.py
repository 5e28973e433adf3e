"""Fake instances for the tests of what drives targets (``run.execute``, ``run.pipeline``, the batch
engine).

``FakeFleet`` opens ``fvp_harness.targets.fake.FakeTarget`` instances whose runner builds are
``program`` handlers: they print what the simulated ExecuTorch runner prints (``runner_output``) and
write their output files into the unit folder, so execute's ``ls``/``sha256sum`` of that folder and
``run.fetch`` work on real (fake guest) files. No model, simulator or process is involved: these
tests take milliseconds. What the real path does is covered by the slow tests that boot the
simulator.
"""

from __future__ import annotations

import contextlib
import posixpath
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from fvp_harness.errors import BootTimeout
from fvp_harness.targets.base import CommandResult
from fvp_harness.targets.fake import FakeCall, FakeTarget

__all__ = ["CPU_MS", "Behaviour", "FakeFleet", "runner_output"]

CPU_MS = {"before": 2.0, "after": 1.0}
"""CPU time per inference (ms) the fake runner of each build prints (the first execution prints 100
ms)."""

FIRST_EXECUTION_MS = 100.0


def runner_output(build: str, iterations: int, *, build_id: str | None = None,
                  cpu: float | None = None) -> str:
    """What the simulated runner prints: id line, then per execution the cycle counter and CPU time.

    The build id is ``id-<build>``; the first (warmup) execution is slow (100 ms), later ones take
    ``CPU_MS[build]`` plus a thousandth of a millisecond per execution."""
    ident = build_id if build_id is not None else f"id-{build}"
    lines = ["I 00:00:00.000100 executorch:executor_runner.cpp:60] executor_runner build id: "
             f"{ident}"]
    base = CPU_MS[build] if cpu is None else cpu
    for i in range(iterations):
        value = FIRST_EXECUTION_MS if i == 0 else base + 0.001 * i
        lines.append("I 00:00:00.000200 executorch:EthosUBackend.cpp:284] Ethos-U Linux delegate "
                     "cycle counter: 4242")
        lines.append("I 00:00:00.000300 executorch:EthosUBackend.cpp:291] "
                     f"EthosUBackend::execute() CPU time: {value:.3f} ms")
    lines.append("I 00:00:00.000400 executorch:executor_runner.cpp:296] Model executed "
                 f"successfully {iterations} time(s) in 1.0 ms.")
    return "\n".join(lines)


Behaviour = Callable[[str, str, int], "CommandResult | None"]
"""(unit id, build, call number of that unit) -> a result to return instead of the normal output, or
None. It may also raise (ConsoleLost, CommandTimeout, KeyboardInterrupt), or set a stop event."""


def _option(argv: Sequence[str], name: str) -> str | None:
    prefix = f"--{name}="
    return next((arg[len(prefix):] for arg in argv if arg.startswith(prefix)), None)


class FakeFleet:
    """Opens fake instances (optionally failing some boots) and remembers everything that happened.

    The runner builds are the guest programs ``*/runner-<build>``. A runner needs
    ``--num_executions=N`` and ``--output_file=<unit folder>/out`` (the unit's id is the folder's
    name, or ``--unit=`` when given); it prints ``runner_output(build, N)`` and writes ``outputs``
    into the unit folder (names may contain ``{unit}`` and ``..``). ``behaviour`` can replace any
    unit's answer.

    Use ``factory`` as execute's ``TargetFactory``, ``opener`` as the batch executor's, and
    ``deploy`` as execute's deploy function when the test is not about deploying (it copies into
    ``/guest`` and records what).
    """

    def __init__(self, behaviour: Behaviour | None = None,
                 boot_fails: Callable[[int], bool] | None = None,
                 outputs: Mapping[str, bytes] | None = None) -> None:
        self.behaviour = behaviour
        self.boot_fails = boot_fails
        self.outputs: dict[str, bytes] = dict(outputs if outputs is not None
                                              else {"out-0.bin": b"same"})
        """What the runner writes, by name relative to the unit folder: its outputs, and whatever
        else."""
        self.boots: list[str] = []
        self.targets: list[FakeTarget] = []
        self.calls: dict[str, int] = {}
        self.ran: list[tuple[str, str]] = []
        """(instance name, unit id) of every runner call, in order."""
        self.units_by_instance: list[list[str]] = []
        """The unit ids each instance ran, in boot order (instances of different sessions may share
        a name)."""
        self.deployed: list[tuple[str, list[str]]] = []
        self._lock = threading.Lock()

    @property
    def fetched(self) -> list[str]:
        """Every guest path read back with ``get`` (``run.fetch``), instance by instance."""
        return [path for target in self.targets for kind, path in target.transfers if kind == "get"]

    @property
    def commands(self) -> list[str]:
        """Every command line run on any instance (instance by instance)."""
        return [command for target in self.targets for command in target.commands]

    # -- instances ---------------------------------------------------------------------------------

    @contextlib.contextmanager
    def factory(self, name: str, log_dir: Path) -> Iterator[FakeTarget]:
        """An instance for ``execute`` (``TargetFactory``): booted, programmed, closed at exit."""
        with self._lock:
            self.boots.append(name)
            number = len(self.boots)
        if self.boot_fails is not None and self.boot_fails(number):
            raise BootTimeout(f"{name}: no login prompt (fake)", stage="boot")
        target = FakeTarget(name, log_dir=log_dir)
        units: list[str] = []
        target.program("*/runner-*", lambda call: self._runner(target, units, call))
        with self._lock:
            self.targets.append(target)
            self.units_by_instance.append(units)
        with target:
            yield target

    def opener(self, scenario: Any, profile: Any, name: str, log_dir: Path,
               timeout_scale: float) -> contextlib.AbstractContextManager[FakeTarget]:
        """An instance for the batch engine (``lanes.Opener``)."""
        return self.factory(name, log_dir)

    def deploy(self, target: Any,
               files: Sequence[tuple[Path, bool]]) -> tuple[dict[Path, str], str]:
        """Execute's ``DeployFunction`` without the transfer: each file lands at
        ``/guest/<name>``."""
        self.deployed.append((target.name, [Path(local).name for local, _ in files]))
        placed = {}
        for local, _executable in files:
            placed[Path(local)] = f"/guest/{Path(local).name}"
            target.put(Path(local), placed[Path(local)])
        return placed, "/guest"

    # -- the runner --------------------------------------------------------------------------------

    def _runner(self, target: FakeTarget, units: list[str], call: FakeCall) -> CommandResult:
        build = posixpath.basename(call.argv[0]).removeprefix("runner-")
        output, executions = _option(call.argv, "output_file"), _option(call.argv, "num_executions")
        assert output is not None and executions is not None, (
            f"not a unit's runner command: {call.argv}")
        unit_dir = posixpath.dirname(call.path(output))
        unit = _option(call.argv, "unit") or posixpath.basename(unit_dir)
        with self._lock:
            calls = self.calls[unit] = self.calls.get(unit, 0) + 1
            self.ran.append((target.name, unit))
            units.append(unit)
        special = self.behaviour(unit, build, calls) if self.behaviour else None
        if special is not None:
            return special
        for name, data in self.outputs.items():
            call.write(posixpath.join(unit_dir, name.format(unit=unit)), data)
        return CommandResult(" ".join(call.argv), 0, runner_output(build, int(executions)),
                             duration_s=0.01)
