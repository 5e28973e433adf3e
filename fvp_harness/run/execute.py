"""Run a plan's sessions: one boot per session, artifacts deployed once, units in plan order, idle
instances stealing from busy ones; each unit is ``run.unit.UnitRunner``'s. Why it is shaped so:
docs/architecture.md, "Running a scenario" and "Running a unit".
"""

from __future__ import annotations

import functools
import logging
import shlex
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Protocol

from fvp_harness.errors import (
    ConfigurationError,
    HarnessError,
    InfrastructureError,
    StorageError,
    UnitFailure,
    is_storage_failure,
    storage_error,
)
from fvp_harness.events import Event, Listener, null_listener
from fvp_harness.files import file_sha256
from fvp_harness.run.deploy import Deployer
from fvp_harness.run.guest_needs import RunnerNeeds, check_guest, not_found_problem
from fvp_harness.run.instances import TargetFactory
from fvp_harness.run.plan import Plan, Session, Unit
from fvp_harness.run.unit import UnitRunner, utc_now
from fvp_harness.run.unit_context import UnitContext, failure_text
from fvp_harness.scenario.executable import host_exec_problem
from fvp_harness.scenario.fit import refuse_misfits
from fvp_harness.scenario.model import Scenario
from fvp_harness.store.folder import ResultStore, free_instance_name
from fvp_harness.store.records import Record
from fvp_harness.targets.base import CommandResult, Target
from fvp_harness.targets.transfer import sha256sum_digests

__all__ = [
    "DeployFunction",
    "EarlyInstance",
    "ExecuteOptions",
    "InstanceInfo",
    "SessionOutcome",
    "SessionRunner",
    "WorkSharing",
    "default_deploy",
    "execute_plan",
]

log = logging.getLogger(__name__)


class EarlyInstance(Protocol):
    """A session's first instance booted before the session asked (a lane's pre-boot): entering it
    waits for its boot; ``boot_seconds``: the boot's own duration once entered (None: unknown)."""

    name: str
    boot_seconds: float | None

    def __enter__(self) -> Target: ...

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> bool | None: ...


class WorkSharing(Protocol):
    """A session's queue shared with other instances (``run.lanes``' board, under its lock)."""

    def share(self, queue: list[Unit]) -> None: ...

    def take_front(self, queue: list[Unit]) -> None: ...

    def steal(self, queue: list[Unit]) -> list[Unit]: ...

    def retire(self, queue: list[Unit]) -> None: ...


class _Alone:
    """No sharing: the session runs exactly its own units."""

    def share(self, queue: list[Unit]) -> None:
        return None

    def take_front(self, queue: list[Unit]) -> None:
        queue.pop(0)

    def steal(self, queue: list[Unit]) -> list[Unit]:
        return []

    def retire(self, queue: list[Unit]) -> None:
        return None


class DeployFunction(Protocol):
    """Puts ``files`` (host path, executable) into an open target; returns (host path -> guest path,
    guest folder for unit dirs)."""

    def __call__(
        self, target: Target, files: Sequence[tuple[Path, bool]]
    ) -> tuple[dict[Path, str], str]: ...


@dataclass(frozen=True)
class ExecuteOptions:
    """How to execute (the CLI's flags); defaults are the normal run."""

    fresh_boot_per_unit: bool = False
    command_timeout: float | None = None
    """Timeout of the harness's own guest commands (prepare, hash); None: the target's configured
    one."""
    wanted: Callable[[str, int], bool] | None = None
    """``run.until``: asked ``(model, repetition)`` before each unit; False skips it unrecorded (its
    model has stopped: ``run.adaptive.StoppingRule``). None: every unit runs."""
    sharing: WorkSharing | None = None
    """Where the session's queue is shared with other instances (``run.lanes``' board steals
    groups between them); None: the session runs exactly its units."""
    preboot: Callable[[str], EarlyInstance | None] | None = None
    """A session's first instance when it was booted before the session asked (``run.lanes``):
    asked with the session's name; None (or no callable): the session boots its own."""


@dataclass
class InstanceInfo:
    """One booted instance (for the manifest): its name, the session it served, and the target's
    metadata."""

    name: str
    session: str
    metadata: dict[str, object] = field(default_factory=dict)
    boot_seconds: float | None = None
    deploy_seconds: float | None = None
    units: int = 0
    error: str | None = None


@dataclass
class SessionOutcome:
    """What a session did: instances booted, records written, and why it stopped early (if it
    did)."""

    session: str
    instances: list[InstanceInfo] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    aborted: str | None = None
    unit_seconds: float = 0.0
    """Sum of the runner commands' own durations: the time spent in the code under test (and the
    simulator)."""
    stopped: bool = False
    """A stop request ended the session with units still to run (they stay unrecorded, for
    ``--resume``)."""


def default_deploy(scenario: Scenario, timeout: float | None = None) -> DeployFunction:
    """Deploy through ``deploy.Deployer`` with the scenario's method and guest folder (each file
    once per instance, content-addressed, sha256-checked)."""
    def deploy(target: Target, files: Sequence[tuple[Path, bool]]) -> tuple[dict[Path, str], str]:
        deployer = Deployer(target, method=scenario.deploy.method,
                            guest_dir=scenario.deploy.guest_dir, timeout=timeout)
        placed = {local: placed.guest_path for local, placed in deployer.deploy_all(files).items()}
        # deploy.method auto: which way this instance took, for the manifest
        if deployer.transport is not None:
            target.metadata["deploy"] = deployer.transport
        return placed, deployer.guest_dir

    return deploy


class _Shared:
    """What the sessions of one execution share: the store (single writer: appends under one lock),
    the listener and the two stop flags. ``stop``: schedule nothing more (the units in flight finish
    and are recorded). ``abort``: the instances are being closed under the units in flight; their
    failures are not recorded."""

    def __init__(self, store: ResultStore, listener: Listener,
                 stop: threading.Event | None = None) -> None:
        self.store = store
        self.listener = listener
        self.lock = threading.Lock()
        self.stop = stop if stop is not None else threading.Event()
        self.abort = threading.Event()

    @property
    def halted(self) -> bool:
        """No new boot, deploy or unit may start."""
        return self.stop.is_set() or self.abort.is_set()

    def append(self, record: Record) -> None:
        with self.lock:
            self.store.append(record)

    def emit(self, event: Event) -> None:
        try:
            self.listener(event)
        except Exception:  # a broken progress display must never stop a measurement
            log.exception("progress listener failed on %s", event.kind)


class SessionRunner:
    """Runs one session's units (docs/architecture.md, "Running a scenario"); ``run()`` returns a
    ``SessionOutcome``."""

    def __init__(
        self,
        plan: Plan,
        session: Session,
        units: Sequence[Unit],
        shared: _Shared,
        factory: TargetFactory,
        deploy: DeployFunction,
        options: ExecuteOptions,
    ) -> None:
        self.plan = plan
        self.scenario = plan.scenario
        self.session = session
        self.units = list(units)
        self.shared = shared
        self.factory = factory
        self.deploy = deploy
        self.options = options
        self.outcome = SessionOutcome(session.name)
        self.queue: list[Unit] = list(units)
        """Units still to run, in run order; shared with thieves (``options.sharing``)."""
        self.sharing: WorkSharing = options.sharing or _Alone()
        self._instance_count = 0
        self._runner_proof: dict[str, str] = {}
        """Build -> its runner's sha256 as the guest computed it (or why it could not be proven):
        ``_prove_runners``."""
        self._needs: dict[str, RunnerNeeds] = {}
        """Build -> what its runner needs of the guest (``run.guest_needs``), checked after each
        boot."""
        self._runner_paths: dict[str, str] = {}
        """Build -> its runner's guest path (``_prove_runners``)."""
        self.unit_runner = UnitRunner(UnitContext(
            plan.scenario, plan.profile, shared.store, self,
            command_timeout=options.command_timeout, secrets=tuple(self.scenario.secret_values())))
        """Runs each unit (``run.unit``): render, run, judge, record."""

    # -- files -------------------------------------------------------------------------------------

    def _files_for(self, units: Sequence[Unit]) -> list[tuple[Path, bool]]:
        files: dict[Path, bool] = {}
        for unit in units:
            files[Path(self.scenario.builds[unit.build].runner)] = True
            for library in self.scenario.builds[unit.build].libraries:
                files.setdefault(Path(library.file), False)
            model = self.scenario.models[unit.model]
            files.setdefault(Path(self.scenario.model_file(unit.build, unit.model)), False)
            for item in model.inputs:
                files.setdefault(Path(item.file), False)
        return list(files.items())

    # -- the loop ----------------------------------------------------------------------------------

    def run(self) -> SessionOutcome:
        """The session's loop. A file of this host that cannot be written (a unit log, a record, a
        fetched file: disk full, read-only, ...) is a ``StorageError``: raised at once, never
        retried; ``run``'s executor then closes every other lane's instance
        (``run.lanes.LocalExecutor``), so the run ends within seconds."""
        self.sharing.share(self.queue)
        try:
            return self._run()
        # the image cannot run the runners: no other instance can
        except (StorageError, ConfigurationError):
            self.shared.abort.set()
            raise
        except OSError as exc:
            if not is_storage_failure(exc):
                raise
            self.shared.abort.set()
            raise storage_error(exc.filename, exc) from exc
        finally:
            self.sharing.retire(self.queue)

    def _run(self) -> SessionOutcome:
        queue = self.queue
        attempts: dict[str, int] = {}
        boot_failures = 0
        retries = self.scenario.run.retries
        while queue and not self.shared.halted:
            self.unit_runner.unit_log = None
            early = None
            if self.options.preboot is not None and not self.outcome.instances:
                early = self.options.preboot(self.session.name)
            if early is not None:
                name = early.name
                # its log folder exists: a fresh instance after it is s0.2, ...
                self._instance_count += 1
            else:
                name = self._next_instance_name()
            info = InstanceInfo(name=name, session=self.session.name)
            self.outcome.instances.append(info)
            batch = queue[:1] if self.options.fresh_boot_per_unit else queue
            ready = False
            target: Target | None = None
            try:
                if early is None:  # an early boot announced itself when it started
                    self.shared.emit(Event("boot", session=name))
                began = time.monotonic()
                # a checked name, folder created
                log_dir = self.shared.store.log_path(name, "fvp.log").parent
                with early if early is not None else self.factory(name, log_dir) as target:
                    info.boot_seconds = round(time.monotonic() - began, 3)
                    # the boot's own time, not the wait
                    if early is not None and early.boot_seconds is not None:
                        info.boot_seconds = early.boot_seconds
                    self.shared.emit(Event("booted", session=name, seconds=info.boot_seconds))
                    if self.shared.halted:
                        break  # stopped while booting: close the instance without deploying
                    files = self._files_for(batch)
                    self._needs = check_guest(functools.partial(self._guest_output, target),
                                              self.scenario,
                                              self.plan.profile, [unit.build for unit in batch],
                                              [local for local, _ in files])
                    self.shared.emit(Event("deploy", session=name, count=len(files)))
                    began = time.monotonic()
                    placed, guest_root = self.deploy(target, files)
                    info.deploy_seconds = round(time.monotonic() - began, 3)
                    self.shared.emit(Event("deployed", session=name, seconds=info.deploy_seconds))
                    self._runner_proof = self._prove_runners(target, placed, batch)
                    ready = True
                    boot_failures = 0
                    self._run_units(target, name, info, queue, attempts, placed, guest_root,
                                    retries)
            except StorageError:
                raise  # no fresh instance can help: the run ends (``run``)
            except (InfrastructureError, UnitFailure) as exc:
                if isinstance(exc, UnitFailure) and ready:
                    raise  # not expected: a unit's own failures are recorded by unit_runner.run
                # before the units: a failed or timed-out guest step of the deploy or the runner
                # check makes the instance unusable, whatever its class (a garbled console times out
                # a deploy step, say)
                info.error = self._with_log(exc)
                if not ready:
                    boot_failures += 1
                    log.warning("%s could not be brought up (%s of %s tries): %s", name,
                                boot_failures, retries + 1, exc)
                    if boot_failures > retries:
                        self.outcome.aborted = (
                            f"{self.session.name}: no usable instance after {boot_failures} tries; "
                            # with the log path
                            f"{len(queue)} unit(s) not run: {str(exc).strip()[:2000]}")
                        break
                # else: a unit failed with the instance (already recorded): go on with a fresh one
            finally:
                if target is not None:
                    # the target's own dict: a lane closes the instance later (its exit adds --stat)
                    metadata = getattr(target, "metadata", None)
                    info.metadata = metadata if isinstance(metadata, dict) else {}
                self.shared.emit(Event("closed", session=name))
        if queue and self.shared.stop.is_set() and not self.outcome.aborted:
            self.outcome.stopped = True
        return self.outcome

    def _detail(self, record: Record) -> str | None:
        """A failed record for a progress line: the failure and the log that shows it (every failure
        line names its log)."""
        if record.failure is None or not record.log:
            return record.failure
        return f"{record.failure} (log: {self.shared.store.root / record.log})"

    def _next_instance_name(self) -> str:
        """``s0``, then ``s0.2``, ``s0.3``, ...: the first whose log folder does not exist yet
        (``store.folder.free_instance_name``)."""
        name, self._instance_count = free_instance_name(
            self.shared.store.logs_dir, self.session.name, self._instance_count + 1
        )
        return name

    def _with_log(self, exc: BaseException) -> str:
        """An instance's failure for the manifest: the text and the log that shows it (relative to
        the folder)."""
        text = failure_text(exc)
        log_path = exc.log_path if isinstance(exc, HarnessError) else None
        if log_path is None:
            return text
        where = self.unit_runner.ctx.relative(log_path)
        return text if where in text else f"{text} (log: {where})"

    def _prove_runners(self, target: Target, placed: Mapping[Path, str],
                       units: Sequence[Unit]) -> dict[str, str]:
        """Hash every build's runner *in the guest* before its units run, in one command: build name
        -> the guest's sha256 when it equals the artifact's, else a ``ProvenanceError`` text that
        fails that build's units.

        This proves which binary runs without asking the runner to print anything: stock upstream
        runners print no build id (a printed id is still checked when ``builds.X.id`` is set)."""
        runners: dict[str, tuple[str, str]] = {}
        for unit in units:
            if unit.build not in runners:
                local = Path(self.scenario.builds[unit.build].runner)
                runners[unit.build] = (placed[local], file_sha256(local))
        self._runner_paths.update({build: guest for build, (guest, _) in runners.items()})
        paths = sorted({guest for guest, _ in runners.values()})
        result = self._guest(target, "sha256sum " + " ".join(shlex.quote(path) for path in paths))
        seen = sha256sum_digests(result.output)
        proof: dict[str, str] = {}
        for build, (guest, expected) in runners.items():
            actual = seen.get(guest)
            if actual == expected:
                proof[build] = actual
            else:
                got = "unreadable" if actual is None else f"sha256 {actual}"
                proof[build] = (f"the runner of build {build} in the guest ({guest}) is {got}, not "
                                f"the artifact's sha256 {expected}: another binary would run")
        return proof

    def _run_units(self, target: Target, name: str, info: InstanceInfo, queue: list[Unit],
                   attempts: dict[str, int],
                   placed: dict[Path, str], guest_root: str, retries: int) -> None:
        """Run units from the front of ``queue`` on this instance until it is done, broken, or
        (fresh-boot mode) one unit has run. A unit leaves the queue when it is recorded for good."""
        while not self.shared.halted:
            if not queue and not self._steal(target, name, placed):
                return
            unit = queue[0]
            if (self.options.wanted is not None and
                not self.options.wanted(unit.model, unit.repetition)):
                self.sharing.take_front(queue)  # run.until: no more rounds needed; no record
                self.shared.emit(Event("unit_skipped", session=name, unit=unit.id))
                continue
            self.unit_runner.unit_log = None
            attempt = attempts.get(unit.id, 0) + 1
            attempts[unit.id] = attempt
            self.shared.emit(Event("unit", session=name, unit=unit.id))
            try:
                record = self.unit_runner.run(target, name, unit, attempt, placed, guest_root)
            except StorageError:
                raise  # nothing is recorded: the store's own disk may be the one that failed
            except InfrastructureError as exc:
                if self.shared.abort.is_set():
                    return  # interrupted: the instance was closed under us; record nothing
                record = self.unit_runner.ctx.failed_record(
                    unit, name, attempt, exc, utc_now(), 0.0, log_rel=self.unit_runner.unit_log)
                self.shared.append(record)
                self.outcome.records.append(record)
                if attempt <= retries:
                    self.shared.emit(Event("retry", session=name, unit=unit.id,
                                           detail=self._detail(record)))
                else:
                    self.sharing.take_front(queue)
                    self.shared.emit(Event("unit_done", session=name, unit=unit.id, status="failed",
                                           seconds=0.0, detail=self._detail(record)))
                raise
            self.shared.append(record)
            self.outcome.records.append(record)
            info.units += 1
            self.sharing.take_front(queue)
            self.shared.emit(Event("unit_done", session=name, unit=unit.id, status=record.status,
                                   seconds=record.duration_s, detail=self._detail(record)))
            if self.options.fresh_boot_per_unit:
                return

    def _steal(self, target: Target, name: str, placed: dict[Path, str]) -> bool:
        """Out of units: take a group from a busier session (``options.sharing``), deploy the files
        this instance lacks and prove the runners it has not proven yet. False when there is nothing
        to take (or in fresh-boot mode, where every unit has an instance of its own anyway)."""
        if self.options.fresh_boot_per_unit:
            return False
        taken = self.sharing.steal(self.queue)
        if not taken:
            return False
        missing = [(local, executable)
                   for local, executable in self._files_for(taken) if local not in placed]
        if missing:
            more, _ = self.deploy(target, missing)
            placed.update(more)
        unchecked = [unit.build for unit in taken if unit.build not in self._needs]
        if unchecked:
            self._needs.update(check_guest(functools.partial(self._guest_output, target),
                                           self.scenario, self.plan.profile, unchecked))
        unproven = [unit for unit in taken if unit.build not in self._runner_proof]
        if unproven:
            self._runner_proof.update(self._prove_runners(target, placed, unproven))
        self.shared.emit(Event("stolen", session=name, count=len(taken),
                               detail=", ".join(unit.id for unit in taken)))
        return True

    # -- what the units ask of the session (``run.unit_context.SessionFacts``) -------------------

    def runner_proof(self, build: str) -> str | None:
        return self._runner_proof.get(build)

    def guest_problem(self, output: str, exit_status: int) -> str | None:
        return not_found_problem(output, exit_status, self._runner_paths, self._needs)

    def count_unit_seconds(self, seconds: float) -> None:
        self.outcome.unit_seconds += seconds

    def _guest_output(self, target: Target, command: str) -> str:
        """A guest command's output (``run.guest_needs.check_guest`` asks through it)."""
        return self._guest(target, command).output

    def _guest(self, target: Target, command: str) -> CommandResult:
        return self.unit_runner.ctx.guest(target, command)


def _check_host_runners(scenario: Scenario, units: Sequence[Unit]) -> None:
    """``target: host``: refuse, before any unit runs, a runner this host cannot execute. The loader
    refuses the ones that exist when the scenario is read (with their ``file:line:col``); this
    catches the ones a build produced."""
    if scenario.target != "host":
        return
    problems = []
    for build in dict.fromkeys(unit.build for unit in units):
        runner = scenario.builds[build].runner
        problem = host_exec_problem(runner)
        if problem is not None:
            problems.append(f"builds.{build}.runner: {runner} cannot run on this host (target: "
                            f"host): {problem}")
    if problems:
        raise ConfigurationError("; ".join(problems))


def execute_plan(
    plan: Plan,
    store: ResultStore,
    factory: TargetFactory,
    *,
    units: Sequence[Unit] | None = None,
    options: ExecuteOptions | None = None,
    listener: Listener = null_listener,
    deploy: DeployFunction | None = None,
    stop: threading.Event | None = None,
) -> list[SessionOutcome]:
    """Run ``units`` (default: all of the plan, in plan order) session by session, one after another
    (``run.lanes`` runs sessions side by side, one lane each). Returns one outcome per session that
    had units to run.

    ``stop`` set (from any thread): the unit in flight finishes and is recorded, then nothing new
    starts (no unit, boot or retry) and the instance is closed politely; a session that still had
    units says ``SessionOutcome.stopped``. A KeyboardInterrupt ends the unit in flight without a
    record and is re-raised."""
    options = options or ExecuteOptions()
    chosen = list(plan.units if units is None else units)
    _check_host_runners(plan.scenario, chosen)
    # what was built since the preflight (a runner, a program) is read now, before the first unit
    refuse_misfits(plan.scenario, plan.profile, dict.fromkeys(unit.build for unit in chosen),
                   when="before the first unit")
    shared = _Shared(store, listener, stop)
    deploy = deploy or default_deploy(plan.scenario, plan.scenario.fvp.timeouts.deploy)
    outcomes = []
    for session in plan.sessions:
        mine = [unit for unit in chosen if unit.session == session.index]
        if mine:
            try:
                runner = SessionRunner(plan, session, mine, shared, factory, deploy, options)
                outcomes.append(runner.run())
            except KeyboardInterrupt:
                shared.abort.set()
                raise
    return outcomes
