"""Run a plan's units on booted targets: one boot per session, artifacts deployed once, units in plan order.

The loop per session (``SessionRunner``)::

    boot an instance -> deploy the artifacts its remaining units need -> for each unit in plan order:
        prepare a private guest folder -> run the rendered command (per-unit timeout) -> save the console text
        -> check exit status, build identity, metrics -> hash (and fetch) outputs -> append one Record

Why it is shaped like this:

- **One boot serves the whole matrix** (the point of the tool): the real model boots in minutes, a unit takes
  seconds. ``fresh_boot_per_unit`` exists only to measure what that saves (how existing scripts work).
- **Failure classes decide what happens next.** A test failure (non-zero exit, timeout, missing metric, wrong
  build) is recorded and the next unit runs on the same instance: retrying would not change it. An
  infrastructure failure (console lost, model died, panic) is recorded as a failed attempt and the unit is
  retried on a fresh instance, at most ``run.retries`` times. Instances that cannot even boot are retried the same
  number of times in a row; then the session gives up and its remaining units stay unmeasured (``--resume``
  runs them later). A guest step of the deploy or the runner check that fails or times out, whatever its class,
  leaves the instance unusable like a failed boot. A fresh instance (``s0.2``, ...) never takes a name whose log
  folder exists, so no retry and no ``--resume`` overwrites a log a stored record points at.
- **Nothing measured is lost.** Each unit's record is appended (fsynced by ``store``) before the next unit starts,
  so Ctrl-C or a crash loses at most the unit in flight; an interrupted unit is not recorded at all.
- **Two ways to stop.** ``stop`` (an event the caller sets, e.g. on a first Ctrl-C) lets every unit in flight
  finish and be recorded, then schedules nothing more and closes the instances politely; a KeyboardInterrupt
  (the second Ctrl-C) closes every instance at once and records nothing for the units in flight.
- **Records say what they were made of.** Every record carries the unit's content-key parts in ``extra``
  (``kp.<part>``, ``key_part_extras``), so ``make -n`` can name the input that changed since it ran, whichever
  verb wrote it.
- **Outputs are model outputs.** ``Record.outputs`` hashes the files the runner left in its unit folder, except
  the ones ``run.fetch`` names (reports kept for later, not outputs to compare).
- **Provenance.** Before a session's units run, every runner is hashed in the guest (one ``sha256sum``) and
  compared with the artifact's hash; a build whose runner differs does not run (its units fail as a
  ``ProvenanceError``) and every record carries the proven hash (``extra["runner_sha256"]``). Stock runners
  print no build id, so this needs nothing from them; a build with an ``id`` must also print it.
- **Warmup** executions are run (``{iterations}`` = warmup + iterations) and their per-inference samples dropped
  from the front, so a cold first inference never reaches the statistics.
- **Environment**: build env and run env reach the runner as ``NAME=value`` prefixes of the runner word when the
  command starts with ``{runner}`` (a plain command; the variables die with it), otherwise as ``export``
  before the command (they then stay set in that instance's shell; a later unit's own values override them).
  A build's ``libraries`` put their deployed folders first on ``LD_LIBRARY_PATH`` the same way,
  but a compound command then runs in a subshell, ``(export ...; command)``: no later unit
  (another build) inherits the folders.
  Build ``args`` follow the runner word. Both use only the guest contract and ``shlex.quote``.
- With ``fvp.instances`` > 1 every session runs in its own thread with its own target; records are appended
  under one lock (the store is single-writer). The plan's deal is only the starting point: an instance that has run
  out of units **steals** the last not-started (repetition, model) group of the busiest other session (all builds of
  that model, so the interleaving stays within one instance), deploys what it lacks and proves the new runners
  first. An instance that is slow, or lost a boot to an infrastructure retry, so holds up no one (``_Shared.steal``).
- **Bare-metal platforms** (a target that ``LaunchesModel``): a unit is one model launch instead of a guest
  command (``BaremetalLaunch``: the runner as the application, the build's ``fvp_params``, the model at its
  ``data_address`` or in the unit folder for semihosting with the rendered ``run.cmd_line``). The unit folder is
  the semihosting folder, so the outputs the runner writes there are hashed the same way (not the model and input
  files the launch put there; without semihosting the printed ``Output[i][j]`` lines, as ``uart:Output``); the
  record adds ``model_sha256`` (and ``inputs_sha256``), hashed as the model got them. Nothing is deployed
  (``deploy``: in place) and the runner is still proven by its hash.

Only ``targets/`` starts models: sessions get their instances from a ``TargetFactory`` (by default
``run.instances.open_target``), which tests replace with fakes (``targets.fake.FakeTarget``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import hashlib
import logging
import posixpath
import shlex
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from fvp_harness.errors import (
    CommandFailed,
    ConfigurationError,
    FailureClass,
    HarnessError,
    InfrastructureError,
    MetricMissing,
    ProvenanceError,
    StorageError,
    UnitFailure,
    is_storage_failure,
    storage_error,
)
from fvp_harness.events import Event, Listener, null_listener
from fvp_harness.files import file_sha256
from fvp_harness.run.deploy import Deployer
from fvp_harness.run.framed import FramedResult, frame_unit, new_token, parse_framed
from fvp_harness.run.guest_needs import RunnerNeeds, check_guest, not_found_problem
from fvp_harness.run.instances import TargetFactory
from fvp_harness.run.memory import harness_samples
from fvp_harness.run.plan import Plan, Session, Unit, key_part_extras
from fvp_harness.run.scrape import ETDUMP_FILES, find_build_id, find_errors, find_etdump, printed_outputs, scrape
from fvp_harness.scenario.baremetal import SEMIHOSTING_OUTPUT, semihosting_unit
from fvp_harness.scenario.executable import host_exec_problem
from fvp_harness.scenario.fit import refuse_misfits
from fvp_harness.scenario.metrics import HARNESS_METRICS
from fvp_harness.scenario.model import Scenario, render_template
from fvp_harness.scenario.secrets import redact_text
from fvp_harness.store.folder import ResultStore, free_instance_name
from fvp_harness.store.records import Record
from fvp_harness.targets.baremetal import BaremetalLaunch, LaunchesModel, LaunchResult
from fvp_harness.targets.base import CommandResult, NamesPhases, SharesHostFiles, Target
from fvp_harness.targets.transfer import sha256sum_digests

__all__ = [
    "PRINTED_OUTPUTS",
    "DeployFunction",
    "EarlyInstance",
    "ExecuteOptions",
    "InstanceInfo",
    "SessionOutcome",
    "SessionRunner",
    "UnitCommand",
    "default_deploy",
    "etdump_path",
    "execute_plan",
    "render_unit_command",
    "utc_now",
]

log = logging.getLogger(__name__)

LOG_TAIL = 30

PRINTED_OUTPUTS = "uart:Output"
"""``Record.outputs`` name of a bare-metal unit's printed output tensors (``Output[i][j]: ...`` lines) when it ran
without semihosting and so wrote no output files: the sha256 of those lines."""


class EarlyInstance(Protocol):
    """A session's first instance booted before the session asked (``run.preboot``, a batch lane's pre-boot): its
    name (its log folder exists already), and entering it waits for its boot; ``boot_seconds`` is the boot's own
    duration once entered (None: unknown, the wait is counted instead)."""

    name: str
    boot_seconds: float | None

    def __enter__(self) -> Target: ...

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> bool | None: ...


class DeployFunction(Protocol):
    """Puts artifacts into an open target and says where they are (guest paths), plus the guest work folder."""

    def __call__(self, target: Target, files: Sequence[tuple[Path, bool]]) -> tuple[dict[Path, str], str]:
        """``files``: (host path, executable). Returns (host path -> guest path, guest folder for unit dirs)."""
        ...


def utc_now() -> str:
    """UTC ISO-8601 with milliseconds: record start times and manifest dates."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class ExecuteOptions:
    """How to execute (the CLI's flags); defaults are the normal run."""

    fresh_boot_per_unit: bool = False
    command_timeout: float | None = None
    """Timeout of the harness's own guest commands (prepare, hash); None: the target's configured one."""
    wanted: Callable[[str, int], bool] | None = None
    """``run.until``: asked ``(model, repetition)`` before each unit; False skips it unrecorded (its model has
    stopped: ``run.adaptive.StoppingRule``). None: every unit runs."""
    steal: bool = True
    """Work stealing between the sessions of one execution (``_Shared.steal``); False keeps the plan's deal."""
    preboot: Callable[[str], EarlyInstance | None] | None = None
    """A session's first instance when it was booted while the artifacts built (``run.preboot``): asked with the
    session's name; None (or no callable): the session boots its own."""


@dataclass
class InstanceInfo:
    """One booted instance (for the manifest): its name, the session it served, and the target's metadata."""

    name: str
    session: str
    metadata: dict[str, object] = field(default_factory=dict)
    boot_seconds: float | None = None
    deploy_seconds: float | None = None
    units: int = 0
    error: str | None = None


@dataclass
class SessionOutcome:
    """What a session did: instances booted, records written, and why it stopped early (if it did)."""

    session: str
    instances: list[InstanceInfo] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    aborted: str | None = None
    unit_seconds: float = 0.0
    """Sum of the runner commands' own durations: the time spent in the code under test (and the simulator)."""
    stopped: bool = False
    """A stop request ended the session with units still to run (they stay unrecorded, for ``--resume``)."""


@dataclass(frozen=True)
class UnitCommand:
    """The guest command of one unit and the guest paths it uses. ``staged`` names the files the harness itself
    puts into the unit folder (a bare-metal unit's semihosting model and inputs): not outputs."""

    command: str
    unit_dir: str
    output: str
    staged: tuple[str, ...] = ()
    launch: BaremetalLaunch | None = None
    """A bare-metal unit's model launch (then ``command`` is only its description, for the log)."""


def _quoted_env(env: Mapping[str, str], library_dirs: Sequence[str] = ()) -> str:
    """``NAME=value`` words; with ``library_dirs`` (a build's deployed libraries)
    ``LD_LIBRARY_PATH`` holds those folders first, then the env's own value, else the guest's
    (expanded by the guest shell when it is set)."""
    words = []
    for name, value in env.items():
        if name == LIBRARY_PATH and library_dirs:
            value = ":".join([*library_dirs, value]) if value else ":".join(library_dirs)
        words.append(f"{name}={shlex.quote(value)}")
    if library_dirs and LIBRARY_PATH not in env:
        folders = shlex.quote(":".join(library_dirs))
        words.append(f'{LIBRARY_PATH}={folders}"${{{LIBRARY_PATH}:+:${LIBRARY_PATH}}}"')
    return " ".join(words)


LIBRARY_PATH = "LD_LIBRARY_PATH"


def render_unit_command(
    scenario: Scenario,
    unit: Unit,
    *,
    runner: str,
    model: str,
    inputs: Sequence[str],
    guest_root: str,
    libraries: Sequence[str] = (),
) -> UnitCommand:
    """The unit's guest command: ``run.command`` with every placeholder filled and quoted (see module docstring
    for how build/run env and build args are attached). ``libraries``: the guest paths of the
    build's deployed shared libraries; their folders, in order, go first on ``LD_LIBRARY_PATH``."""
    build = scenario.builds[unit.build]
    run = scenario.run
    unit_dir = posixpath.join(guest_root, "units", unit.id)
    output = posixpath.join(unit_dir, "out")
    env = {**run.env, **build.env}
    library_dirs = list(dict.fromkeys(posixpath.dirname(path) for path in libraries))
    simple = run.command.lstrip().startswith("{runner}")
    runner_word = shlex.quote(runner)
    if build.args:
        runner_word += " " + " ".join(shlex.quote(arg) for arg in build.args)
    if build.traced:  # a runner built with the event tracer writes its ETDump where the harness says
        runner_word += " " + shlex.quote(f"--etdump_path={etdump_path(unit_dir)}")
    if (env or library_dirs) and simple:
        runner_word = f"{_quoted_env(env, library_dirs)} {runner_word}"
    values = {
        "model": model,
        "inputs": ",".join(inputs),
        "iterations": str(run.executions),
        "output": output,
        "unit_dir": unit_dir,
        "build": unit.build,
        "model_name": unit.model,
        "unit": unit.id,
    }
    quoted = {name: shlex.quote(value) for name, value in values.items()}
    quoted["runner"] = runner_word
    command = render_template(run.command, quoted, quote=False)
    if library_dirs and not simple:  # a subshell: no later unit (another build) inherits them
        command = f"(export {_quoted_env(env, library_dirs)}; {command})"
    elif env and not simple:
        command = f"export {_quoted_env(env)}; {command}"
    return UnitCommand(command, unit_dir, output)


def default_deploy(scenario: Scenario, timeout: float | None = None) -> DeployFunction:
    """Deploy through ``deploy.Deployer`` with the scenario's method and guest folder (each file once per
    instance, content-addressed, sha256-checked)."""
    def deploy(target: Target, files: Sequence[tuple[Path, bool]]) -> tuple[dict[Path, str], str]:
        deployer = Deployer(target, method=scenario.deploy.method, guest_dir=scenario.deploy.guest_dir,
                            timeout=timeout)
        placed = {local: placed.guest_path for local, placed in deployer.deploy_all(files).items()}
        if deployer.transport is not None:  # deploy.method auto: which way this instance took, for the manifest
            target.metadata["deploy"] = deployer.transport
        return placed, deployer.guest_dir

    return deploy


def _failure_text(exc: BaseException) -> str:
    text = exc.message if isinstance(exc, HarnessError) else str(exc)
    return text.strip()[:2000] or type(exc).__name__


class _Shared:
    """What every session thread shares: the store (single writer: appends under one lock), the listener,
    the two stop flags, and the open targets (so an interrupt can close them from the main thread).

    ``stop``: schedule nothing more (the units in flight finish and are recorded). ``abort``: the instances are
    being closed under the units in flight (KeyboardInterrupt); their failures are not recorded."""

    def __init__(self, store: ResultStore, listener: Listener, stop: threading.Event | None = None) -> None:
        self.store = store
        self.listener = listener
        self.lock = threading.Lock()
        self.stop = stop if stop is not None else threading.Event()
        self.abort = threading.Event()
        self.targets: dict[str, Target] = {}
        self.runners: list[SessionRunner] = []
        """Every session of this execution: where an idle instance steals work from."""
        self.queues = threading.Lock()
        """Guards every runner's ``queue`` (its owner takes from the front, a thief from the tail)."""

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

    def take_front(self, runner: SessionRunner) -> None:
        """``runner`` is done with the first unit of its queue."""
        with self.queues:
            runner.queue.pop(0)

    def steal(self, thief: SessionRunner) -> list[Unit]:
        """Move the last not-started (repetition, model) group of the session with the most units left to
        ``thief``'s (empty) queue and return it; [] when no session has a group to spare.

        The victim's first unit is never taken (it may be in flight, or a unit being retried), nor a group that
        shares its (repetition, model), so a model's builds of one round always run on one instance, back to back.
        Finished sessions (done, or given up after failed boots) are not robbed: their leftovers stay unrun, as
        their outcome says."""
        with self.queues:
            victims = [r for r in self.runners if r is not thief and not r.finished and len(r.queue) > 1]
            for victim in sorted(victims, key=lambda r: -len(r.queue)):
                head = victim.queue[0]
                group = (victim.queue[-1].repetition, victim.queue[-1].model)
                if group == (head.repetition, head.model):
                    continue
                count = 0
                for unit in reversed(victim.queue):
                    if (unit.repetition, unit.model) != group:
                        break
                    count += 1
                taken = victim.queue[-count:]
                del victim.queue[-count:]
                thief.queue.extend(taken)
                return taken
            return []

    def close_all(self) -> None:
        with self.lock:
            targets = list(self.targets.values())
        for target in targets:
            with contextlib.suppress(Exception):
                target.close()


class SessionRunner:
    """Runs one session's units (see the module docstring); ``run()`` returns a ``SessionOutcome``."""

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
        """Units still to run, in run order; shared with thieves under ``shared.queues``."""
        self.finished = False
        """The session has left its loop: its instance is closed and it takes no more units."""
        self._instance_count = 0
        self._unit_log: str | None = None
        """The log of the unit in flight: where a failed attempt's record points (it holds the console tail)."""
        self._runner_proof: dict[str, str] = {}
        self._needs: dict[str, RunnerNeeds] = {}
        self._runner_paths: dict[str, str] = {}  # build -> its runner's guest path (``_prove_runners``)
        """Build -> what its runner needs of the guest (``run.guest_needs``), checked after each boot."""
        self._secrets = self.scenario.secret_values()
        """Secret environment values: masked in unit logs, failure texts and records (the runner gets them)."""
        """Build -> its runner's sha256 as the guest computed it (or why it could not be proven): ``_prove_runners``."""

    # -- files ---------------------------------------------------------------------------------------------------

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

    # -- the loop --------------------------------------------------------------------------------------------

    def run(self) -> SessionOutcome:
        """The session's loop. A file of this host that cannot be written (a unit log, a record, a fetched file:
        disk full, read-only, ...) is a ``StorageError``: raised at once, never retried, and it halts every other
        session of the execution (``_Shared.abort``) so the run ends within seconds."""
        try:
            return self._run()
        except (StorageError, ConfigurationError):  # the image cannot run the runners: no other instance can
            self.shared.abort.set()
            raise
        except OSError as exc:
            if not is_storage_failure(exc):
                raise
            self.shared.abort.set()
            raise storage_error(exc.filename, exc) from exc
        finally:
            with self.shared.queues:
                self.finished = True

    def _run(self) -> SessionOutcome:
        queue = self.queue
        attempts: dict[str, int] = {}
        boot_failures = 0
        retries = self.scenario.run.retries
        while queue and not self.shared.halted:
            self._unit_log = None
            early = None
            if self.options.preboot is not None and not self.outcome.instances:
                early = self.options.preboot(self.session.name)
            if early is not None:
                name = early.name
                self._instance_count += 1  # its log folder exists: a fresh instance after it is s0.2, ...
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
                log_dir = self.shared.store.log_path(name, "fvp.log").parent  # a checked name, folder created
                with early if early is not None else self.factory(name, log_dir) as target:
                    with self.shared.lock:
                        self.shared.targets[name] = target
                    info.boot_seconds = round(time.monotonic() - began, 3)
                    if early is not None and early.boot_seconds is not None:  # the boot's own time, not the wait
                        info.boot_seconds = early.boot_seconds
                    self.shared.emit(Event("booted", session=name, seconds=info.boot_seconds))
                    if self.shared.halted:
                        break  # stopped while booting: close the instance without deploying
                    files = self._files_for(batch)
                    self._needs = check_guest(functools.partial(self._guest_output, target), self.scenario,
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
                    self._run_units(target, name, info, queue, attempts, placed, guest_root, retries)
            except StorageError:
                raise  # no fresh instance can help: the run ends (``run``)
            except (InfrastructureError, UnitFailure) as exc:
                if isinstance(exc, UnitFailure) and ready:
                    raise  # not expected: a unit's own failures are recorded by run_unit
                # before the units: a failed or timed-out guest step of the deploy or the runner check makes the
                # instance unusable, whatever its class (a garbled console times out a deploy step, say)
                info.error = self._with_log(exc)
                if not ready:
                    boot_failures += 1
                    log.warning("%s could not be brought up (%s of %s tries): %s", name, boot_failures,
                                retries + 1, exc)
                    if boot_failures > retries:
                        self.outcome.aborted = (
                            f"{self.session.name}: no usable instance after {boot_failures} tries; "
                            f"{len(queue)} unit(s) not run: {str(exc).strip()[:2000]}")  # with the log path
                        break
                # else: a unit failed with the instance (already recorded): go on with a fresh one
            finally:
                with self.shared.lock:
                    self.shared.targets.pop(name, None)
                if target is not None:
                    info.metadata = dict(getattr(target, "metadata", {}) or {})
                self.shared.emit(Event("closed", session=name))
        if queue and self.shared.stop.is_set() and not self.outcome.aborted:
            self.outcome.stopped = True
        return self.outcome

    def _detail(self, record: Record) -> str | None:
        """A failed record for a progress line: the failure and the log that shows it (every failure line names
        its log)."""
        if record.failure is None or not record.log:
            return record.failure
        return f"{record.failure} (log: {self.shared.store.root / record.log})"

    def _next_instance_name(self) -> str:
        """``s0``, then ``s0.2``, ``s0.3``, ...: the first whose log folder does not exist yet
        (``store.folder.free_instance_name``)."""
        name, self._instance_count = free_instance_name(self.shared.store.logs_dir, self.session.name,
                                                        self._instance_count + 1)
        return name

    def _with_log(self, exc: BaseException) -> str:
        """An instance's failure for the manifest: the text and the log that shows it (relative to the folder)."""
        text = _failure_text(exc)
        log_path = exc.log_path if isinstance(exc, HarnessError) else None
        if log_path is None:
            return text
        where = self._relative(log_path)
        return text if where in text else f"{text} (log: {where})"

    def _prove_runners(self, target: Target, placed: Mapping[Path, str], units: Sequence[Unit]) -> dict[str, str]:
        """Hash every build's runner *in the guest* before its units run, in one command: build name -> the guest's
        sha256 when it equals the artifact's, else a ``ProvenanceError`` text that fails that build's units.

        This proves which binary runs without asking the runner to print anything: stock upstream runners print
        no build id (a printed id is still checked when ``builds.X.id`` is set)."""
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
                proof[build] = (f"the runner of build {build} in the guest ({guest}) is {got}, not the artifact's "
                                f"sha256 {expected}: another binary would run")
        return proof

    def _run_units(self, target: Target, name: str, info: InstanceInfo, queue: list[Unit], attempts: dict[str, int],
                   placed: dict[Path, str], guest_root: str, retries: int) -> None:
        """Run units from the front of ``queue`` on this instance until it is done, broken, or (fresh-boot mode)
        one unit has run. A unit leaves the queue when it is recorded for good."""
        while not self.shared.halted:
            if not queue and not self._steal(target, name, placed):
                return
            unit = queue[0]
            if self.options.wanted is not None and not self.options.wanted(unit.model, unit.repetition):
                self.shared.take_front(self)  # run.until: no more rounds needed; nothing to record
                self.shared.emit(Event("unit_skipped", session=name, unit=unit.id))
                continue
            self._unit_log = None
            attempt = attempts.get(unit.id, 0) + 1
            attempts[unit.id] = attempt
            self.shared.emit(Event("unit", session=name, unit=unit.id))
            try:
                record = self.run_unit(target, name, unit, attempt, placed, guest_root)
            except StorageError:
                raise  # nothing is recorded: the store's own disk may be the one that failed
            except InfrastructureError as exc:
                if self.shared.abort.is_set():
                    return  # interrupted: the instance was closed under us; record nothing
                record = self._failed_record(unit, name, attempt, exc, utc_now(), 0.0, log_rel=self._unit_log)
                self.shared.append(record)
                self.outcome.records.append(record)
                if attempt <= retries:
                    self.shared.emit(Event("retry", session=name, unit=unit.id, detail=self._detail(record)))
                else:
                    self.shared.take_front(self)
                    self.shared.emit(Event("unit_done", session=name, unit=unit.id, status="failed",
                                           seconds=0.0, detail=self._detail(record)))
                raise
            self.shared.append(record)
            self.outcome.records.append(record)
            info.units += 1
            self.shared.take_front(self)
            self.shared.emit(Event("unit_done", session=name, unit=unit.id, status=record.status,
                                   seconds=record.duration_s, detail=self._detail(record)))
            if self.options.fresh_boot_per_unit:
                return

    def _steal(self, target: Target, name: str, placed: dict[Path, str]) -> bool:
        """Out of units: take a group from a busier session (``_Shared.steal``), deploy the files this instance
        lacks and prove the runners it has not proven yet. False when there is nothing to take (or in fresh-boot
        mode, where every unit has an instance of its own anyway)."""
        if self.options.fresh_boot_per_unit or not self.options.steal or len(self.shared.runners) < 2:
            return False
        taken = self.shared.steal(self)
        if not taken:
            return False
        missing = [(local, executable) for local, executable in self._files_for(taken) if local not in placed]
        if missing:
            more, _ = self.deploy(target, missing)
            placed.update(more)
        unchecked = [unit.build for unit in taken if unit.build not in self._needs]
        if unchecked:
            self._needs.update(check_guest(functools.partial(self._guest_output, target), self.scenario,
                                           self.plan.profile, unchecked))
        unproven = [unit for unit in taken if unit.build not in self._runner_proof]
        if unproven:
            self._runner_proof.update(self._prove_runners(target, placed, unproven))
        self.shared.emit(Event("stolen", session=name, count=len(taken),
                               detail=", ".join(unit.id for unit in taken)))
        return True

    # -- one unit --------------------------------------------------------------------------------------------

    def _failed_record(self, unit: Unit, instance: str, attempt: int, exc: BaseException, started: str,
                       duration: float, *, log_rel: str | None = None, extra: Mapping[str, Any] | None = None,
                       build_id_seen: str | None = None, samples: Mapping[str, list[float]] | None = None,
                       units: Mapping[str, str] | None = None) -> Record:
        failure_class: FailureClass = exc.failure_class if isinstance(exc, HarnessError) else "test"
        if log_rel is None and isinstance(exc, HarnessError) and exc.log_path is not None:
            log_rel = self._relative(exc.log_path)
        return self._masked(Record(
            scenario=self.scenario.name, key=unit.key, unit_id=unit.id, instance=instance, build=unit.build,
            model=unit.model, repetition=unit.repetition, attempt=attempt, status="failed",
            failure_class=failure_class, failure=f"{type(exc).__name__}: {_failure_text(exc)}", log=log_rel,
            samples=dict(samples or {}), metric_units=dict(units or {}), build_id_seen=build_id_seen, started=started,
            duration_s=round(duration, 6),
            extra={**(extra or {}), **self._proof_extra(unit), **key_part_extras(unit.key_parts)},
        ))

    def _masked(self, record: Record) -> Record:
        """The record with secret environment values masked in its texts (failure, build id line, extras)."""
        if not self._secrets:
            return record
        secrets = self._secrets
        return record.model_copy(update={
            "failure": None if record.failure is None else redact_text(record.failure, secrets),
            "build_id_seen": None if record.build_id_seen is None else redact_text(record.build_id_seen, secrets),
            "extra": {key: redact_text(value, secrets) if isinstance(value, str) else value
                      for key, value in record.extra.items()},
        })

    def _proof_extra(self, unit: Unit) -> dict[str, str]:
        """``runner_sha256``: the runner's hash as the guest computed it before the unit ran (when proven)."""
        proof = self._runner_proof.get(unit.build)
        return {"runner_sha256": proof} if proof is not None and _is_sha256(proof) else {}

    def _relative(self, path: Path) -> str:
        root = self.shared.store.root
        try:
            return Path(path).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return str(path)

    def _command_timeout(self) -> float | None:
        return self.options.command_timeout

    def _guest_output(self, target: Target, command: str) -> str:
        """A guest command's output (``run.guest_needs.check_guest`` asks through it)."""
        return self._guest(target, command).output

    def _guest(self, target: Target, command: str) -> CommandResult:
        return target.run(command, self._command_timeout())

    def run_unit(self, target: Target, instance: str, unit: Unit, attempt: int, placed: Mapping[Path, str],
                 guest_root: str) -> Record:
        """Run one unit on an open target and return its record (ok or a test failure). Raises
        InfrastructureError when the instance failed under it."""
        scenario = self.scenario
        build = scenario.builds[unit.build]
        model = scenario.models[unit.model]
        runner, model_file = placed[Path(build.runner)], placed[Path(scenario.model_file(unit.build, unit.model))]
        inputs = [placed[Path(item.file)] for item in model.inputs]
        if isinstance(target, LaunchesModel):
            rendered = self._launch_of(unit, runner=runner, model=model_file, inputs=inputs, guest_root=guest_root)
        else:
            libraries = [placed[Path(item.file)] for item in build.libraries]
            rendered = render_unit_command(scenario, unit, runner=runner, model=model_file, inputs=inputs,
                                           guest_root=guest_root, libraries=libraries)
        started = utc_now()
        began = time.monotonic()
        log_name = f"{unit.id}.log" if attempt == 1 else f"{unit.id}.a{attempt}.log"
        log_path = self.shared.store.log_path(instance, log_name)
        log_rel = self._relative(log_path)
        self._unit_log = log_rel
        quoted_dir = shlex.quote(rendered.unit_dir)
        proof = self._runner_proof.get(unit.build)
        if proof is not None and not _is_sha256(proof):  # the guest holds another binary: do not run it
            error = ProvenanceError(proof)
            _write_log(log_path, unit, rendered.command, None, error, secrets=self._secrets)
            return self._failed_record(unit, instance, attempt, error, started, time.monotonic() - began,
                                       log_rel=log_rel)
        if rendered.launch is None:  # one round trip: prepare, run, status, hashes, clean-up (run.framed)
            return self._run_framed(target, instance, unit, attempt, rendered, started, began, log_path, log_rel,
                                    launched=None)
        try:
            prepare = self._guest(target, f"rm -rf {quoted_dir} && mkdir -p {quoted_dir}")
            if not prepare.ok:
                raise CommandFailed(f"cannot prepare the unit folder {rendered.unit_dir}: "
                                    f"{prepare.output.strip()}", exit_status=prepare.exit_status)
        except UnitFailure as exc:
            _write_log(log_path, unit, rendered.command, None, exc, secrets=self._secrets)
            return self._failed_record(unit, instance, attempt, exc, started, time.monotonic() - began,
                                       log_rel=log_rel)
        timeout = scenario.run.timeout or scenario.fvp.timeouts.unit
        result: CommandResult | None = None
        try:
            result = _run_unit_command(target, rendered, timeout)
        except CommandFailed as exc:  # a timeout (the console recovered): the runner hung, a test failure
            _write_log(log_path, unit, rendered.command, None, exc, secrets=self._secrets)
            return self._failed_record(unit, instance, attempt, exc, started, time.monotonic() - began,
                                       log_rel=log_rel, extra={"exit_status": exc.exit_status})
        except InfrastructureError as exc:
            _write_log(log_path, unit, rendered.command, None, exc, secrets=self._secrets)
            raise
        _write_log(log_path, unit, result.command, result, None, secrets=self._secrets)
        self.outcome.unit_seconds += result.duration_s
        record = self._judge(target, instance, unit, attempt, rendered, result, started, began, log_rel,
                             launched=_launch_extra(result, model_file, inputs))
        with contextlib.suppress(UnitFailure):
            self._guest(target, f"rm -rf {quoted_dir}")
        return record

    def _run_framed(self, target: Target, instance: str, unit: Unit, attempt: int, rendered: UnitCommand,
                    started: str, began: float, log_path: Path, log_rel: str,
                    launched: Mapping[str, Any] | None) -> Record:
        """The unit as one framed guest line (``run.framed``): the log and the scraper see only the runner's own
        output and status, exactly as if it had run alone; the outputs' digests come from the same line. With
        ``run.fetch`` files the folder stays until they are read back, then one more command removes it."""
        fetched = self._fetch_paths(unit, rendered)
        token = new_token()
        line = frame_unit(rendered.command, rendered.unit_dir, token, cleanup=not fetched,
                          peak_rss=_builtin_wanted(self.scenario, "peak_rss"))
        timeout = self.scenario.run.timeout or self.scenario.fvp.timeouts.unit

        def failed(exc: HarnessError, extra: Mapping[str, Any] | None = None) -> Record:
            _write_log(log_path, unit, rendered.command, None, exc, secrets=self._secrets)
            return self._failed_record(unit, instance, attempt, exc, started, time.monotonic() - began,
                                       log_rel=log_rel, extra=extra)

        try:
            raw = _run_unit_command(target, dataclasses.replace(rendered, command=line), timeout)
        except CommandFailed as exc:  # a timeout (the console recovered): the runner hung, a test failure
            _name_the_users_command(exc, line, rendered.command)
            return failed(exc, {"exit_status": exc.exit_status})
        except InfrastructureError as exc:
            _write_log(log_path, unit, rendered.command, None, exc, secrets=self._secrets)
            raise
        framed = parse_framed(raw.output, token)
        if not framed.ready:
            return failed(CommandFailed(f"cannot prepare the unit folder {rendered.unit_dir}: "
                                        f"{framed.output.strip()[-300:]}", exit_status=raw.exit_status))
        if framed.status is None:
            return failed(CommandFailed(f"the unit's command line ended without its exit status (the console text "
                                        f"is in {log_rel}): {framed.output.strip()[-300:]}",
                                        exit_status=raw.exit_status))
        result = CommandResult(rendered.command, framed.status, framed.output, raw.duration_s, raw.log_path)
        _write_log(log_path, unit, result.command, result, None, secrets=self._secrets)
        self.outcome.unit_seconds += result.duration_s
        record = self._judge(target, instance, unit, attempt, rendered, result, started, began, log_rel,
                             launched=launched, framed=framed)
        if fetched:
            with contextlib.suppress(UnitFailure):
                self._guest(target, f"rm -rf {shlex.quote(rendered.unit_dir)}")
        return record

    def _launch_of(self, unit: Unit, *, runner: str, model: str, inputs: Sequence[str],
                   guest_root: str) -> UnitCommand:
        """A bare-metal unit: its folder (also the semihosting folder), the command line its runner gets and the
        launch that runs it. Raises ConfigurationError when a name cannot be put into a command line."""
        scenario = self.scenario
        build = scenario.builds[unit.build]
        unit_dir = posixpath.join(guest_root, "units", unit.id)
        try:
            semihosting = semihosting_unit(scenario, unit.build, unit.model, unit.id, model_file=model,
                                           input_files=inputs)
        except ValueError as exc:
            raise ConfigurationError(f"run.cmd_line of {unit.id}: {exc}") from exc
        data: list[tuple[Path, str]] = []
        if build.data_address:
            address = self.plan.profile.data_address if build.data_address is True else build.data_address
            if address is None:
                raise ConfigurationError(f"builds.{unit.build}.data_address: true, but platform "
                                         f"{self.plan.profile.name} has no data_address; give the address")
            data.append((Path(model), str(address)))
        launch = BaremetalLaunch(
            runner=Path(runner), label=unit.id, cwd=Path(unit_dir) if semihosting.cmd_line is not None else None,
            cmd_line=semihosting.cmd_line, files={name: Path(path) for name, path in semihosting.files.items()},
            data=data, params=dict(build.fvp_params))
        described = (f"(launch) semihosting-cmd_line: {semihosting.cmd_line}" if semihosting.cmd_line is not None
                     else f"(launch) {runner}")
        return UnitCommand(described, unit_dir, posixpath.join(unit_dir, SEMIHOSTING_OUTPUT),
                           staged=tuple(semihosting.files), launch=launch)

    def _judge(self, target: Target, instance: str, unit: Unit, attempt: int, rendered: UnitCommand,
               result: CommandResult, started: str, began: float, log_rel: str,
               launched: Mapping[str, Any] | None = None, framed: FramedResult | None = None) -> Record:
        """Exit status -> provenance -> metrics -> outputs; the first problem makes the record a test failure.
        ``framed``: the digests came with the unit's own line (``run.framed``); else they are asked for."""
        scenario = self.scenario
        run = scenario.run
        build = scenario.builds[unit.build]
        extra: dict[str, Any] = {"exit_status": result.exit_status, "command_s": round(result.duration_s, 6),
                                 **(launched or {})}
        seen = find_build_id(result.output, build.id) if build.id else None
        scraped = scrape(result.output, scenario.metrics)
        samples: dict[str, list[float]] = {}
        partitions: dict[str, list[list[float]]] = {}
        expected = run.executions
        short: list[str] = []
        for name, values in scraped.samples.items():
            if scraped.per.get(name, "inference") == "inference":
                printed = scraped.printed(name)  # valid and rejected: how many executions reported it
                if printed < expected:
                    short.append(f"{name}: {printed} of {expected} values")
                # the first `warmup` printed samples are warmup, whether they were valid or rejected
                warm = run.warmup - sum(1 for at in scraped.rejected_at.get(name, ()) if at < run.warmup)
                samples[name] = [float(v) for v in values[warm:]]
                if name in scraped.calls:  # each inference's delegate calls (partitions), aligned with samples
                    partitions[name] = scraped.calls[name][warm:]
            else:
                samples[name] = [float(v) for v in values]
        rejected = scraped.rejected
        if rejected:  # a structured count next to the warnings (the analysis never sees the rejected values)
            extra["rejected_samples"] = sum(rejected.values())
            extra.update({f"rejected.{name}": count for name, count in rejected.items()})
            for name in rejected:  # nothing kept: say why in one field (a failed measurement gives no sample)
                if not samples.get(name) and scraped.reasons.get(name):
                    extra[f"no_sample.{name}"] = scraped.reasons[name][0][:300]
        measured = harness_samples(
            [spec.name for spec in scenario.metrics
             if not spec.regex and spec.name in HARNESS_METRICS],
            runner=Path(build.runner), model=Path(scenario.model_file(unit.build, unit.model)),
            peak_rss_kib=framed.peak_rss_kib if framed is not None else None)
        samples.update(measured.samples)
        scraped.units.update(dict.fromkeys(measured.samples, "bytes"))
        extra.update({f"no_sample.{name}": why[:300] for name, why in measured.reasons.items()})
        if scraped.executions is not None:
            extra["executions"] = scraped.executions
        dumped, dump_warnings = find_etdump(result.output)
        if dumped:  # a bare-metal runner's ETDump (and debug buffer), kept like a run.fetch file
            folder = self.shared.store.fetched_dir / unit.id
            folder.mkdir(parents=True, exist_ok=True)
            for name, data in dumped.items():
                try:
                    (folder / name).write_bytes(data)
                except OSError as exc:  # a write error names no file: say which
                    raise storage_error(folder / name, exc) if is_storage_failure(exc) else exc from exc
            extra["etdump"] = ",".join(sorted(dumped))
        warnings = [*scraped.warnings, *dump_warnings]
        if warnings:
            extra["scrape_warnings"] = "; ".join(warnings)[:1000]
        if short:
            extra["short_metrics"] = "; ".join(short)

        def failed(exc: HarnessError) -> Record:
            return self._failed_record(unit, instance, attempt, exc, started, time.monotonic() - began,
                                       log_rel=log_rel, extra=extra, build_id_seen=seen, samples=samples,
                                       units=scraped.units)

        if not result.ok:
            problem = not_found_problem(result.output, result.exit_status, self._runner_paths, self._needs)
            if problem is not None:  # the runner is there (hashed in the guest), its loader is not: the image's
                raise ConfigurationError(problem)
            errors = find_errors(result.output)
            why = f"; {' | '.join(errors[-3:])}" if errors else ""
            tail = next((line for line in reversed(result.output.strip().splitlines()) if line.strip()), "")
            return failed(CommandFailed(
                f"the runner exited with status {result.exit_status}{why or '; last output: ' + tail}",
                exit_status=result.exit_status))
        if build.id and seen is None:
            return failed(ProvenanceError(
                f"the runner never printed the id of build {unit.build} ({build.id!r}): a different binary ran, "
                f"or the id changed; check builds.{unit.build}.id and the runner"))
        required = [spec.name for spec in scenario.metrics if spec.required]
        missing = [name for name in required if not samples.get(name)] + [
            name for name in scraped.missing if name not in required]
        truncated = [item for item in short if item.split(":")[0] in required]
        if missing or truncated:
            what = ", ".join(f"{name} (no valid sample: {rejected[name]} rejected, see scrape_warnings)"
                             if rejected.get(name) else name for name in dict.fromkeys(missing)) or ""
            if truncated:
                what = (what + "; " if what else "") + "too few values: " + ", ".join(truncated)
            return failed(MetricMissing(f"required metric(s) missing in the runner output: {what}"))
        fetched = self._fetch_paths(unit, rendered)
        traced = _traced_etdump(scenario, unit, rendered)
        if traced is not None and framed is not None:  # the digests say whether the runner wrote it
            digest = framed.digests.get(posixpath.basename(traced))
            if digest is None:
                return failed(CommandFailed(
                    f"builds.{unit.build}.traced: the runner wrote no ETDump at {traced} (it was given "
                    f"--etdump_path); is it built with the event tracer (ET_EVENT_TRACER_ENABLED)?", exit_status=1))
            extra["etdump"], extra["etdump_sha256"] = posixpath.basename(traced), digest
        if rendered.launch is not None and isinstance(target, SharesHostFiles):  # bare metal: a semihosting
            dumps = [posixpath.join(rendered.unit_dir, name) for name in ETDUMP_FILES]  # runner's ETDump files
            written = [path for path in dumps if path not in fetched and target.local_path(path).is_file()]
            if written:  # kept like run.fetch files, not outputs (they hold timings)
                fetched += written
                extra["etdump"] = ",".join(posixpath.basename(path) for path in written)
        try:
            staged = [posixpath.join(rendered.unit_dir, name) for name in rendered.staged]
            outputs = (_framed_outputs(framed, rendered.unit_dir, exclude=[*fetched, *staged]) if framed is not None
                       else self._hash_outputs(target, rendered.unit_dir, exclude=[*fetched, *staged]))
            if rendered.launch is not None and rendered.launch.cmd_line is None:  # no semihosting: no files
                tensors = printed_outputs(result.output)
                if tensors:
                    outputs[PRINTED_OUTPUTS] = hashlib.sha256("\n".join(tensors).encode()).hexdigest()
            self._fetch(target, unit, fetched)
            if traced is not None:  # the copy is the file the guest hashed (unframed: the copy's own digest)
                kept = self.shared.store.fetched_dir / unit.id / posixpath.basename(traced)
                digest = hashlib.sha256(kept.read_bytes()).hexdigest()
                if digest != extra.setdefault("etdump_sha256", digest):
                    raise CommandFailed(f"the ETDump fetched from {traced} differs from the file the guest hashed "
                                        f"(sha256 {extra['etdump_sha256']})", exit_status=1)
                extra["etdump"] = posixpath.basename(traced)
        except UnitFailure as exc:
            return failed(exc)
        return self._masked(Record(
            scenario=scenario.name, key=unit.key, unit_id=unit.id, instance=instance, build=unit.build,
            model=unit.model, repetition=unit.repetition, attempt=attempt, status="ok", log=log_rel,
            samples=samples, partitions=partitions, metric_units=dict(scraped.units), outputs=outputs,
            build_id_seen=seen, started=started,
            duration_s=round(time.monotonic() - began, 6),
            extra={**extra, **self._proof_extra(unit), **key_part_extras(unit.key_parts)},
        ))

    def _hash_outputs(self, target: Target, unit_dir: str, *, exclude: Sequence[str] = ()) -> dict[str, str]:
        """sha256 of every file the runner left in the unit folder, computed in the guest (nothing copied),
        except the guest paths in ``exclude`` (the ``run.fetch`` files: reports, not model outputs)."""
        quoted = shlex.quote(unit_dir)
        listing = self._guest(target, f"ls {quoted}")
        if not listing.ok:
            raise CommandFailed(f"cannot list {unit_dir}: {listing.output.strip()}", exit_status=listing.exit_status)
        folder = posixpath.normpath(unit_dir)
        skipped = {posixpath.basename(path) for path in exclude
                   if posixpath.dirname(posixpath.normpath(path)) == folder}
        names = sorted(name for name in listing.output.split() if name and name not in skipped)
        if not names:
            return {}
        hashed = self._guest(target, f"cd {quoted} && sha256sum {' '.join(shlex.quote(n) for n in names)}")
        if not hashed.ok:
            raise CommandFailed(f"sha256sum of the outputs in {unit_dir} failed: {hashed.output.strip()[-300:]}",
                                exit_status=hashed.exit_status)
        return sha256sum_digests(hashed.output)

    def _fetch_paths(self, unit: Unit, rendered: UnitCommand) -> list[str]:
        """The guest paths ``run.fetch`` names for this unit (templates filled, unquoted), and a traced Linux
        build's ETDump file."""
        values = {"runner": "", "model": "", "inputs": "", "iterations": "", "output": rendered.output,
                  "unit_dir": rendered.unit_dir, "build": unit.build, "model_name": unit.model, "unit": unit.id}
        paths = [render_template(template, values, quote=False) for template in self.scenario.run.fetch]
        traced = _traced_etdump(self.scenario, unit, rendered)
        return [*paths, traced] if traced is not None and traced not in paths else paths

    def _fetch(self, target: Target, unit: Unit, remotes: Sequence[str]) -> None:
        """Copy the ``run.fetch`` files (guest paths) back into ``<results>/fetched/<unit>/``."""
        if not remotes:
            return
        folder = self.shared.store.fetched_dir / unit.id
        for remote in remotes:
            try:
                data = target.get(remote)
            except FileNotFoundError as exc:
                raise CommandFailed(f"run.fetch: {remote} is not in the guest ({exc})", exit_status=1) from exc
            kept = folder / posixpath.basename(remote)
            try:
                folder.mkdir(parents=True, exist_ok=True)
                kept.write_bytes(data)
            except OSError as exc:  # a write error names no file: say which
                raise storage_error(kept, exc) if is_storage_failure(exc) else exc from exc


def etdump_path(unit_dir: str) -> str:
    """Where a traced Linux build writes its ETDump: the unit folder's ``etdump.bin``, the name the bare-metal
    runner's file has, so ``fetched/<unit>/etdump.bin`` is every unit's trace."""
    return posixpath.join(unit_dir, ETDUMP_FILES[0])


def _traced_etdump(scenario: Scenario, unit: Unit, rendered: UnitCommand) -> str | None:
    """The guest path of this unit's ETDump when its build is traced and runs under Linux (a bare-metal runner
    prints or semihosts its own, which is kept either way)."""
    if not scenario.builds[unit.build].traced or rendered.launch is not None:
        return None
    return etdump_path(rendered.unit_dir)


def _framed_outputs(framed: FramedResult, unit_dir: str, *, exclude: Sequence[str]) -> dict[str, str]:
    """The digests of a framed line without the excluded guest paths (``run.fetch`` files, staged inputs); a
    problem line about any other name (a folder among the outputs, an unreadable file) fails the unit, as a failed
    ``sha256sum`` did."""
    folder = posixpath.normpath(unit_dir)
    skipped = {posixpath.basename(path) for path in exclude if posixpath.dirname(posixpath.normpath(path)) == folder}
    problems = [line for line in framed.problems if not any(name in line for name in skipped)]
    if problems:
        raise CommandFailed(f"sha256sum of the outputs in {unit_dir} failed: {'; '.join(problems)[-300:]}",
                            exit_status=1)
    return {name: digest for name, digest in framed.digests.items() if name not in skipped}


def _name_the_users_command(exc: HarnessError, line: str, command: str) -> None:
    """A target's message names the command it ran: for a unit that is the framed line (``run.framed``), whose
    preparation hides the user's ``run.command`` and pushes it past where messages are cut. Name the rendered
    command instead (in place: the exception keeps its class and fields)."""
    for framed in (repr(line), line):
        if framed in exc.message:
            exc.message = exc.message.replace(framed, repr(command) if framed != line else command)
            exc.args = (exc.message,)
            return


def _is_sha256(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def _run_unit_command(target: Target, rendered: UnitCommand, timeout: float) -> CommandResult:
    """The unit under its timeout: a bare-metal unit's model launch, else ``target.run`` of its command (targets
    that name phases say ``unit`` in timeout messages)."""
    if rendered.launch is not None and isinstance(target, LaunchesModel):
        return target.launch(rendered.launch, timeout)
    if isinstance(target, NamesPhases):
        return target.run_in_phase(rendered.command, timeout, "unit")
    return target.run(rendered.command, timeout)


def _builtin_wanted(scenario: Scenario, name: str) -> bool:
    """True when the scenario measures the built-in metric ``name`` (listed without a regex of its
    own)."""
    spec = scenario.metric(name)
    return spec is not None and spec.regex is None


def _launch_extra(result: CommandResult, model: str, inputs: Sequence[str]) -> dict[str, Any]:
    """A bare-metal unit's provenance: the sha256 of the model file (and inputs) as the launch handed them over."""
    if not isinstance(result, LaunchResult):
        return {}
    extra: dict[str, Any] = {}
    if model in result.handed:
        extra["model_sha256"] = result.handed[model]
    digests = [result.handed[path] for path in inputs if path in result.handed]
    if digests:
        extra["inputs_sha256"] = ",".join(digests)
    return extra


def _write_log(path: Path, unit: Unit, command: str, result: CommandResult | None, exc: BaseException | None, *,
               secrets: Sequence[str] = ()) -> None:
    """The unit's console text, as the target returned it, under a short header (a store-given path); secret
    environment values (``secrets``) are masked everywhere in it."""
    lines = [f"# unit {unit.id} (key {unit.key})", f"$ {command}"]
    if result is not None:
        lines += [result.output, f"# exit status {result.exit_status} after {result.duration_s:.3f} s"]
    if exc is not None:
        partial = getattr(exc, "output", "") or ""
        if partial:
            lines.append(partial)
        tail = getattr(exc, "last_lines", []) or []
        if tail:
            lines += ["# last console lines:", *tail[-LOG_TAIL:]]
        lines.append(f"# {type(exc).__name__}: {_failure_text(exc)}")
    try:
        path.write_text(redact_text("\n".join(lines) + "\n", secrets), encoding="utf-8")
    except OSError as exc:  # a write error names no file: say which
        raise storage_error(path, exc) if is_storage_failure(exc) else exc from exc


def _check_host_runners(scenario: Scenario, units: Sequence[Unit]) -> None:
    """``target: host``: refuse, before any unit runs, a runner this host cannot execute. The loader refuses the ones
    that exist when the scenario is read (with their ``file:line:col``); this catches the ones a build produced."""
    if scenario.target != "host":
        return
    problems = []
    for build in dict.fromkeys(unit.build for unit in units):
        runner = scenario.builds[build].runner
        problem = host_exec_problem(runner)
        if problem is not None:
            problems.append(f"builds.{build}.runner: {runner} cannot run on this host (target: host): {problem}")
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
    """Run ``units`` (default: all of the plan, in plan order) session by session; sessions run in parallel
    threads when the plan has several. Returns one outcome per session that had units to run.

    ``stop`` set (from any thread): every unit in flight finishes and is recorded, then nothing new starts (no
    unit, boot or retry) and the instances are closed politely; sessions that still had units say
    ``SessionOutcome.stopped``. KeyboardInterrupt stops every session at once (open instances are closed so units
    in flight end without a record) and is re-raised after the threads are done; everything recorded so far stays
    in the store.
    """
    options = options or ExecuteOptions()
    chosen = list(plan.units if units is None else units)
    _check_host_runners(plan.scenario, chosen)
    # what was built since the preflight (a runner, a program) is read now, before the first unit
    refuse_misfits(plan.scenario, plan.profile, dict.fromkeys(unit.build for unit in chosen),
                   when="before the first unit")
    shared = _Shared(store, listener, stop)
    deploy = deploy or default_deploy(plan.scenario, plan.scenario.fvp.timeouts.deploy)
    runners = []
    for session in plan.sessions:
        mine = [unit for unit in chosen if unit.session == session.index]
        if mine:
            runners.append(SessionRunner(plan, session, mine, shared, factory, deploy, options))
    shared.runners = runners
    if len(runners) <= 1:
        try:
            return [runner.run() for runner in runners]
        except KeyboardInterrupt:
            shared.abort.set()
            raise
    with ThreadPoolExecutor(max_workers=len(runners), thread_name_prefix="session") as pool:
        futures = [pool.submit(runner.run) for runner in runners]
        try:
            while not all(future.done() for future in futures):
                if shared.abort.is_set():  # a session hit a StorageError: end the others' units at once
                    shared.close_all()
                    for future in futures:
                        with contextlib.suppress(BaseException):
                            future.result()
                    break
                # wakes when a session ends, or every 0.1 s so Ctrl-C reaches the main thread and an abort is seen
                wait([future for future in futures if not future.done()], timeout=0.1, return_when=FIRST_COMPLETED)
            failed = [f.exception() for f in futures if isinstance(f.exception(), StorageError)]
            if failed:
                raise failed[0]  # type: ignore[misc]
            return [future.result() for future in futures]
        except KeyboardInterrupt:
            shared.abort.set()
            shared.close_all()
            for future in futures:
                with contextlib.suppress(BaseException):
                    future.result()
            raise
