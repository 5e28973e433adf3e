"""``SharedTarget``: the ``fvp_target`` fixture's value, one booted and logged-in instance that the
tests of a scope share, booted again when it is lost.

Why a handle and not the ``Target`` itself: a session-scoped fixture's value lives as long as the
session, but an instance may die under a test (console lost, model crashed, kernel panic). The
handle notices the infrastructure error, closes what is left of the instance and re-raises (that
test fails: it saw the platform fail); the plugin calls ``ensure_ready`` in the setup of the next
test that uses it, which boots a fresh instance there, so a boot that fails is an *error* of that
test, never a failure. A re-boot that fails is remembered and raised again for later tests instead
of paying for a boot that will not work per test.

Boots go through ``run.instances.open_target`` (the simulator or a real model, or this host for
``target: host``), with the scenario's ``run.retries`` extra tries as ``fvp-harness run`` does, each
in a log folder of its own (``instances/<scenario stem>-<n>``, never one that exists). ``lend``
hands the open instance to ``run_scenario`` (``fvp_ab``), so an A/B run costs no boot of its own.
Every instance is closed at the end of its scope, on interrupts (pytest tears fixtures down at
session end) and by the plugin's unconfigure hook.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fvp_harness.errors import ConfigurationError, ConsoleLost, HarnessError, InfrastructureError
from fvp_harness.run.instances import open_target
from fvp_harness.scenario.load import LoadedScenario
from fvp_harness.targets.base import CommandResult, Target

__all__ = ["BootLog", "BootRecord", "InstanceLost", "SharedTarget", "new_instance_dir"]

log = logging.getLogger(__name__)


class InstanceLost(ConsoleLost):
    """The shared instance was lost in an earlier step and has not been booted again (used outside a
    test's setup, where the plugin boots it again)."""


@dataclass(frozen=True)
class BootRecord:
    """One boot attempt of this process, for the terminal summary and pytest-xdist's worker
    output."""

    name: str
    scenario: str
    log_dir: str
    seconds: float
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BootRecord:
        return cls(str(data["name"]), str(data["scenario"]), str(data["log_dir"]),
                   float(data["seconds"]),
                   None if data.get("error") is None else str(data["error"]))


class BootLog:
    """Every boot attempt of this process (thread-safe: an A/B run boots from its session
    threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[BootRecord] = []

    def add(self, record: BootRecord) -> None:
        with self._lock:
            self._records.append(record)

    @property
    def records(self) -> list[BootRecord]:
        with self._lock:
            return list(self._records)


def new_instance_dir(folder: Path, stem: str) -> tuple[str, Path]:
    """``(name, folder)`` of a new instance: ``<stem>-<n>`` with the first n whose folder does not
    exist, created here (atomically, so two threads never get the same one)."""
    folder.mkdir(parents=True, exist_ok=True)
    number = 1
    while True:
        name = f"{stem}-{number}"
        path = folder / name
        try:
            path.mkdir()
        except FileExistsError:
            number += 1
            continue
        return name, path


class SharedTarget:
    """A booted instance of ``scenario`` shared by tests: ``run``, ``put``, ``get`` like any
    ``Target``.

    ``target`` is the current instance itself (for the harness's own APIs: ``Deployer``,
    ``open_target`` users); ``boots`` how many instances this handle booted; ``generation`` changes
    with every boot (what was deployed into an older generation is gone).
    """

    def __init__(self, scenario: LoadedScenario, *, instances_dir: Path, boots: BootLog,
                 timeout_scale: float = 1.0) -> None:
        self.scenario = scenario
        self.instances_dir = instances_dir
        self.timeout_scale = timeout_scale
        self._boot_log = boots
        self._lock = threading.RLock()
        self._stack: contextlib.ExitStack | None = None
        self._target: Target | None = None
        self._lent = False
        self.boots = 0
        self.generation = 0
        self.lost: str | None = None
        """Why the last instance was given up (None while it is usable)."""
        self.failure: HarnessError | None = None
        """A re-boot that failed: raised again instead of booting per test."""
        self.closed = False

    def __repr__(self) -> str:
        state = ("lost" if self.lost else "closed" if self.closed else "ready" if self._target
                 else "not booted")
        name = self._target.name if self._target is not None else "-"
        return f"<SharedTarget {self.scenario.stem} {name} ({state}, {self.boots} boot(s))>"

    # -- the instance ------------------------------------------------------------------------------

    @property
    def target(self) -> Target:
        """The open instance. Raises ``InstanceLost`` when it was lost and not booted again yet."""
        with self._lock:
            if self._target is None:
                why = self.lost or ("closed" if self.closed else "not booted")
                raise InstanceLost(f"the shared FVP instance of {self.scenario.stem} is not "
                                   f"available ({why}); the next test that uses it boots a new one")
            return self._target

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def log_dir(self) -> Path:
        return self.target.log_dir

    @property
    def metadata(self) -> dict[str, object]:
        return self.target.metadata

    def boot(self) -> None:
        """Boot an instance, with ``run.retries`` more tries after infrastructure failures. Raises
        the last failure (its message names the log); a ``ConfigurationError`` (no binary, bad
        firmware path) at once."""
        with self._lock:
            if self.closed:
                raise ConfigurationError(f"the shared FVP instance of {self.scenario.stem} was "
                                         "closed")
            tries = self.scenario.scenario.run.retries + 1
            last: HarnessError | None = None
            for attempt in range(1, tries + 1):
                try:
                    self._stack, self._target = self._open_one()
                except InfrastructureError as exc:
                    log.warning("FVP boot of %s failed (try %d of %d): %s", self.scenario.stem,
                                attempt, tries, exc)
                    last = exc
                    continue
                self.boots += 1
                self.generation += 1
                self.lost = None
                return
            raise last if last is not None else ConfigurationError("run.retries allows no boot")

    def _open_one(self) -> tuple[contextlib.ExitStack, Target]:
        """Open one instance in a new log folder and note the attempt in the boot log."""
        name, log_dir = new_instance_dir(self.instances_dir, self.scenario.stem)
        began = time.monotonic()
        stack = contextlib.ExitStack()
        try:
            target = stack.enter_context(
                open_target(
                    self.scenario, log_dir=log_dir, name=name, timeout_scale=self.timeout_scale
                )
            )
        except HarnessError as exc:
            stack.close()
            self._boot_log.add(BootRecord(name, self.scenario.stem, str(log_dir),
                                          round(time.monotonic() - began, 3), str(exc)))
            raise
        seconds = round(time.monotonic() - began, 3)
        self._boot_log.add(BootRecord(name, self.scenario.stem, str(log_dir), seconds))
        log.info("booted FVP instance %s for %s in %.1f s (logs: %s)", name, self.scenario.stem,
                 seconds, log_dir)
        return stack, target

    def ensure_ready(self) -> None:
        """Boot a new instance when the last one was lost; raise the remembered failure when that
        already failed."""
        with self._lock:
            if self._target is not None and not self.lost:
                if not getattr(self._target, "closed", False):
                    return
                self.lose("the instance was closed by the code that used it")
            if self.failure is not None:
                raise self.failure
            self._discard()
            try:
                self.boot()
            except HarnessError as exc:
                self.failure = exc
                raise

    def lose(self, why: str) -> None:
        """Give the current instance up (close it): ``why`` is shown to the tests that ask for it
        before the next boot."""
        with self._lock:
            if self._target is not None:
                log.warning("FVP instance %s lost: %s", self._target.name, why)
            self.lost = why
            self._discard()

    def _discard(self) -> None:
        stack, self._stack, self._target = self._stack, None, None
        if stack is not None:
            stack.close()  # Target.close never raises

    def close(self) -> None:
        """Close the instance (the fixture's teardown); idempotent."""
        with self._lock:
            self.closed = True
            self._discard()

    # -- Target-like use ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _guarded(self, what: str) -> Iterator[None]:
        """Give the instance up when the platform fails under ``what``; the error goes on to the
        test."""
        try:
            yield
        except InstanceLost:
            raise  # nothing left to give up
        except InfrastructureError as exc:
            self.lose(f"{what} failed: {exc}")
            raise

    def run(self, command: str, timeout: float | None = None, *,
            check: bool = False) -> CommandResult:
        """Run a shell command in the guest (quote arguments with ``shlex.quote``). ``check``: raise
        ``AssertionError`` with the output when it exits non-zero."""
        with self._guarded(f"command {command!r}"):
            result = self.target.run(command, timeout)
        if check and not result.ok:
            raise AssertionError(f"{command!r} exited {result.exit_status}:\n{result.output}")
        return result

    def put(self, local: Path | str, remote: str) -> None:
        """Copy a host file into the guest (sha256-checked)."""
        with self._guarded(f"put {local} -> {remote}"):
            self.target.put(Path(local), remote)

    def get(self, remote: str) -> bytes:
        """A guest file's bytes."""
        with self._guarded(f"get {remote}"):
            return self.target.get(remote)

    # -- lending to run_scenario -------------------------------------------------------------------

    @contextlib.contextmanager
    def lend(self) -> Iterator[Target]:
        """The open instance for one session of an A/B run (booted again first when it was lost). An
        instance that fails under the run is given up, so the run's retry gets a fresh one. A second
        session of the same run (``fvp.instances`` > 1) gets a temporary instance of its own."""
        with self._lock:
            mine = not self._lent and not self.closed
            if mine:
                self._lent = True
        if not mine:
            with self._temporary() as extra:
                yield extra
            return
        try:
            with self._lock:
                self.ensure_ready()
                target = self.target
            try:
                yield target
            except BaseException as exc:
                self.lose(f"failed under an A/B run: {type(exc).__name__}: {exc}")
                raise
        finally:
            with self._lock:
                self._lent = False

    @contextlib.contextmanager
    def _temporary(self) -> Iterator[Target]:
        """An instance of its own for a second session of one A/B run, closed when that session
        ends."""
        stack, extra = self._open_one()
        with stack:
            yield extra
