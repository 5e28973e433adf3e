"""Work units of the batch engine (lanes) and the local executor that runs them.

A **lane** is one booted FVP instance's worth of work: a sequence of *jobs*, each one plan session of one scenario
(the units of that session that are not up to date, in plan order). Every job of a lane belongs to the same
*pool* (same platform profile, FVP identity, params, args, simulator knobs, firmware and timeouts), so the lane
boots one instance and runs job after job on it; the scenarios of a pool share booted instances. An
infrastructure failure closes the instance, and the next unit gets a fresh one (execute's retry rule).

Lanes are **self-contained** (``LaneSpec`` pickles): the resolved ``Scenario`` and ``Profile`` objects, the unit
ids with the content keys the coordinator expects, and either the artifact bytes (``blobs``, "shipped by
content", what the Dask executor does by default) or nothing (the paths in the scenario are read as they are: a
shared filesystem, what the local executor does). A worker re-plans the scenario with the files it actually
has and refuses to run a unit whose key differs from the expected one, so a worker can never measure other
bytes than the coordinator planned.

Records flow back to the **one store** of the coordinating process: a lane appends nothing itself. Locally the
records go through ``sink`` as each unit finishes (so Ctrl-C keeps everything measured); on a remote worker they
are collected with the unit logs and returned in the ``LaneResult``. Each record already carries its unit's
content-key parts (``plan.key_part_extras``), so ``make -n`` can say what changed.

Three events steer running lanes (``LaneControl``): *drain* (start no further job: a failure without ``-k``),
*stop* (the first Ctrl-C: the unit in flight finishes and is recorded, then nothing new starts) and *abort* (the
second Ctrl-C: close the instance now, the unit in flight is dropped).

Why threads for the local executor (and not a process pool): the measured work runs in the FVP (or simulator)
process that ``targets/`` spawns; the harness side of a lane mostly waits on a console socket. Threads therefore
give real parallelism, need no pickling, let the coordinator append each record the moment it exists, and let
Ctrl-C close every open instance at once from the main thread. A process pool would add a second hop for every
record and a worker death would orphan its FVP.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path

from fvp_harness.errors import ConfigurationError, HarnessError
from fvp_harness.events import Event, Listener, null_listener
from fvp_harness.files import atomic_write
from fvp_harness.profiles import Profile
from fvp_harness.run.adaptive import StoppingRule
from fvp_harness.run.execute import ExecuteOptions, SessionOutcome, execute_plan
from fvp_harness.run.instances import TargetFactory, open_target
from fvp_harness.run.plan import build_plan
from fvp_harness.scenario.model import Scenario
from fvp_harness.store.folder import LOGS_DIR, ResultStore
from fvp_harness.store.records import Record
from fvp_harness.targets.base import MasksSecrets, Target

__all__ = [
    "JobResult",
    "JobSpec",
    "LaneControl",
    "LaneResult",
    "LaneSpec",
    "LocalExecutor",
    "RecordSink",
    "default_jobs",
    "run_lane",
]

log = logging.getLogger(__name__)

RecordSink = Callable[[int, Record], None]
"""``sink(node, record)``: hand one finished record of scenario ``node`` to the coordinator (thread-safe)."""

ARTIFACT_CACHE_ENV = "FVP_HARNESS_ARTIFACT_CACHE"
"""Where a worker keeps shipped artifacts (default: ``<tmp>/fvp-harness-artifacts``), by sha256."""


def default_jobs() -> int:
    """``-j`` default: the CPUs this process may use (one FVP instance each, like ``make -j$(nproc)``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class JobSpec:
    """One plan session of one scenario: the units to run (ids, in plan order) and the keys they must have."""

    node: int
    """Index of the scenario in the batch: routes records back to its store."""
    scenario: Scenario
    scenario_path: str
    profile: Profile
    session: int
    units: tuple[str, ...]
    keys: tuple[str, ...]
    fvp_version: str | None = None
    artifacts: Mapping[str, str] = field(default_factory=dict)
    """Host path -> sha256 of every artifact file the scenario names (used when the bytes are shipped)."""

    @property
    def cost(self) -> int:
        """Rough work estimate for balancing lanes: executions to run."""
        run = self.scenario.run
        return len(self.units) * (run.warmup + run.iterations + 2)


@dataclass(frozen=True)
class LaneSpec:
    """Jobs that run one after another on one booted instance (same pool)."""

    index: int
    pool: str
    jobs: tuple[JobSpec, ...]
    timeout_scale: float = 1.0
    blobs: Mapping[str, bytes] | None = None
    """sha256 -> bytes of every artifact the jobs need, when shipped by content; None: read the paths as given."""

    @property
    def cost(self) -> int:
        return sum(job.cost for job in self.jobs) + 20  # + a boot


@dataclass
class JobResult:
    """What one job did. ``records``/``logs`` are filled only when the lane ran away from the store (remote)."""

    node: int
    session: int
    units: tuple[str, ...]
    outcomes: list[SessionOutcome] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    logs: dict[str, bytes] = field(default_factory=dict)
    """Path relative to the results folder (``logs/s0/x.log``) -> bytes."""
    error: str | None = None
    error_class: str | None = None
    ran: bool = False


@dataclass
class LaneResult:
    """Every job of a lane that started, in order; ``interrupted`` when a stop request ended it early; ``error``
    when the lane as a whole failed (its task died with its worker, the scheduler went away, the task raised):
    then the units of its jobs that have no record here did not run, for that reason."""

    index: int
    jobs: list[JobResult] = field(default_factory=list)
    interrupted: bool = False
    boots: int = 0
    """Instances booted (more than one when an infrastructure failure forced a fresh instance)."""
    error: str | None = None
    error_class: str = "infrastructure"


@dataclass(frozen=True)
class LaneControl:
    """What the coordinator gives an executor with the lanes: where records, logs and finished lanes go, and the
    events that stop them (see the module docstring). Executors call ``on_lane_done`` in the coordinating thread."""

    sink: RecordSink
    results_roots: Mapping[int, Path]
    on_lane_done: Callable[[LaneResult], None]
    drain: threading.Event = field(default_factory=threading.Event)
    abort: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    listener: Listener = null_listener


class _Stopped(Exception):
    """Raised out of the instance factory when a stop was requested: ends ``execute_plan`` without recording."""


Opener = Callable[[Scenario, Profile, str, Path, float], contextlib.AbstractContextManager[Target]]


def _open_target(scenario: Scenario, profile: Profile, name: str, log_dir: Path,
                 timeout_scale: float) -> contextlib.AbstractContextManager[Target]:
    return open_target(scenario, log_dir=log_dir, name=name, profile=profile, timeout_scale=timeout_scale)


class _InstanceLease:
    """One booted instance lent to job after job (``execute_plan`` asks its factory for an instance per
    session). A unit that ends in an exception closes the instance, so execute's retry gets a fresh one; a stop
    request closes it from another thread (ending the unit in flight) and makes the next request fail."""

    def __init__(self, opener: Opener, stop: threading.Event, timeout_scale: float) -> None:
        self._opener = opener
        self._stop = stop
        self._scale = timeout_scale
        self._lock = threading.Lock()
        self._context: contextlib.AbstractContextManager[Target] | None = None
        self._target: Target | None = None
        self.boots = 0
        self.reused = False
        """Whether the last lease lent the instance already booted (progress must not say it booted)."""

    @property
    def has_instance(self) -> bool:
        """An instance is booted and will be lent to the next request."""
        return self._target is not None

    def factory(self, scenario: Scenario, profile: Profile) -> TargetFactory:
        def make(name: str, log_dir: Path) -> contextlib.AbstractContextManager[Target]:
            return self._lease(scenario, profile, name, log_dir)

        return make

    @contextlib.contextmanager
    def _lease(self, scenario: Scenario, profile: Profile, name: str, log_dir: Path) -> Iterator[Target]:
        if self._stop.is_set():
            raise _Stopped()
        self.reused = self._target is not None
        if self._target is None:
            context = self._opener(scenario, profile, name, log_dir, self._scale)
            target = context.__enter__()
            self.boots += 1
            with self._lock:
                self._context, self._target = context, target
            if self._stop.is_set():
                self.close()
                raise _Stopped()
        target = self._target
        if isinstance(target, MasksSecrets):  # an instance lent to another scenario learns that one's secrets
            target.redact_also(scenario.secret_values())
        try:
            yield target
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop the instance (idempotent, any thread)."""
        with self._lock:
            context, self._context, self._target = self._context, None, None
        if context is not None:
            try:
                context.__exit__(None, None, None)
            except Exception:  # cleanup must not hide the reason we are closing
                log.exception("closing a batch instance failed")


class _SinkStore(ResultStore):
    """A results folder whose records go to the coordinator instead of ``records.jsonl``.

    ``execute_plan`` writes unit logs into ``root`` (the real results folder locally, a scratch folder on a
    remote worker) and calls ``append``; the record goes to ``sink``. Failed records that appear after an abort
    are the abort's own doing (the instance was closed under the unit) and are dropped: the unit simply runs
    again next time.
    """

    def __init__(self, root: Path, node: int, sink: RecordSink, abort: threading.Event) -> None:
        super().__init__(root)
        self._node = node
        self._sink = sink
        self._abort = abort
        self.appended: list[Record] = []
        """This job's records, for ``run.until``'s stopping rule (a remote worker has no records file)."""

    def append(self, record: Record) -> None:
        if self._abort.is_set() and record.status != "ok":
            log.info("dropping the record of %s: the batch was stopped while it ran", record.unit_id)
            return
        self.appended.append(record)
        self._sink(self._node, record)

    def known_records(self) -> list[Record]:
        """Records the folder holds (locally) and this job's own: what the stopping rule may judge on (the
        analysis keeps one record per unit, so one seen twice counts once)."""
        return [*(self.records() if self.records_path.is_file() else []), *self.appended]


def _cache_root() -> Path:
    return Path(os.environ.get(ARTIFACT_CACHE_ENV) or Path(tempfile.gettempdir()) / "fvp-harness-artifacts")


def _materialise(blobs: Mapping[str, bytes], path: str, sha256: str) -> str:
    """Put a shipped artifact into the worker's cache (by content, keeping its file name) and return its path."""
    target = _cache_root() / sha256[:2] / sha256 / Path(path).name
    if target.is_file() and target.stat().st_size == len(blobs[sha256]):
        return str(target)
    data = blobs[sha256]
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ConfigurationError(f"shipped artifact {path} arrived damaged (sha256 mismatch)")
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, data, mode=0o755)  # runners must stay executable; harmless for models
    return str(target)


def _relocated(scenario: Scenario, blobs: Mapping[str, bytes], hashes: Mapping[str, str]) -> Scenario:
    """The scenario with every artifact path pointing at the worker's cached copy (keys do not include paths)."""

    def where(path: str) -> str:
        digest = hashes.get(path)
        if digest is None or digest not in blobs:
            raise ConfigurationError(f"artifact {path} was not shipped with the job")
        return _materialise(blobs, path, digest)

    builds = {name: build.model_copy(update={
        "runner": where(build.runner),
        "models": {model: own.model_copy(update={"file": where(own.file)}) for model, own in build.models.items()}})
        for name, build in scenario.builds.items()}
    models = {}
    for name, model in scenario.models.items():
        inputs = [item.model_copy(update={"file": where(item.file)}) for item in model.inputs]
        models[name] = model.model_copy(update={"file": where(model.file), "inputs": inputs})
    return scenario.model_copy(update={"builds": builds, "models": models})


def _collect_logs(root: Path) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    logs = root / LOGS_DIR
    if logs.is_dir():
        for path in sorted(logs.rglob("*")):
            if path.is_file():
                found[path.relative_to(root).as_posix()] = path.read_bytes()
    return found


def run_lane(
    spec: LaneSpec,
    *,
    sink: RecordSink | None = None,
    results_roots: Mapping[int, Path] | None = None,
    drain: threading.Event | None = None,
    abort: threading.Event | None = None,
    stop: threading.Event | None = None,
    listener: Listener = null_listener,
    opener: Opener = _open_target,
) -> LaneResult:
    """Run a lane's jobs on one instance at a time (see the module docstring).

    ``sink`` + ``results_roots`` (scenario index -> results folder): records go to the sink and logs straight
    into the results folders (local). Without them (remote) records and logs are collected into the result.
    ``drain`` set: start no further job. ``stop`` set: finish and record the unit in flight, then start nothing
    (the instance is closed politely). ``abort`` set: close the instance now (the unit in flight is dropped).
    """
    drain = drain or threading.Event()
    abort = abort or threading.Event()
    stop = stop or threading.Event()
    result = LaneResult(spec.index)
    lease = _InstanceLease(opener, abort, spec.timeout_scale)
    finished = threading.Event()

    def watch() -> None:
        while not finished.is_set():
            if abort.wait(0.2):
                lease.close()
                return

    watcher = threading.Thread(target=watch, name=f"lane{spec.index}-watch", daemon=True)
    watcher.start()
    scratch = Path(tempfile.mkdtemp(prefix="fvp-harness-lane-")) if results_roots is None else None
    try:
        for number, job in enumerate(spec.jobs):
            if drain.is_set() or stop.is_set() or abort.is_set():
                result.interrupted = True
                break
            if results_roots is not None:
                root = results_roots[job.node]
            else:
                assert scratch is not None  # made above exactly when there are no results roots
                root = scratch / f"{number}"
            job_result = JobResult(job.node, job.session, job.units)
            result.jobs.append(job_result)
            collected: list[Record] = []

            def keep(node: int, record: Record, collected: list[Record] = collected) -> None:
                if sink is not None:
                    sink(node, record)
                else:
                    collected.append(record)

            try:
                _run_job(job, spec, root, lease, keep, abort, stop, listener, job_result)
            except _Stopped:
                result.interrupted = True
            except HarnessError as exc:
                job_result.error, job_result.error_class = str(exc), exc.failure_class
                log.warning("batch job %s/s%s failed: %s", job.scenario.name, job.session, exc)
            finally:
                job_result.records = collected
                if results_roots is None:
                    job_result.logs = _collect_logs(root)
            if any(outcome.stopped for outcome in job_result.outcomes):
                result.interrupted = True
            if result.interrupted:
                break
    finally:
        finished.set()
        lease.close()
        result.boots = lease.boots
        watcher.join()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return result


def _run_job(job: JobSpec, spec: LaneSpec, root: Path, lease: _InstanceLease, sink: RecordSink,
             abort: threading.Event, stop: threading.Event, listener: Listener, out: JobResult) -> None:
    scenario = job.scenario
    if spec.blobs is not None:
        scenario = _relocated(scenario, spec.blobs, job.artifacts)
    plan = build_plan(scenario, Path(job.scenario_path), job.profile, fvp_version=job.fvp_version)
    units = []
    for unit_id, expected in zip(job.units, job.keys, strict=True):
        unit = plan.unit(unit_id)
        if unit.key != expected:
            raise ConfigurationError(
                f"{scenario.name}/{unit_id}: its inputs changed between planning and running (key "
                f"{expected[:12]} planned, {unit.key[:12]} here); an artifact was rebuilt or edited meanwhile, or "
                "the worker sees other files at the shared path: run make again")
        units.append(unit)
    store = _SinkStore(root, job.node, sink, abort)
    label = job.scenario_path and Path(job.scenario_path).stem

    def relabel(event: Event) -> None:  # several scenarios have an s0: name sessions scenario/s0
        if (event.kind == "boot" and lease.has_instance) or (event.kind == "booted" and lease.reused):
            event = replace(event, detail="reused")  # the lane's instance serves this job too: no boot
        listener(replace(event, session=f"{label}/{event.session}") if event.session else event)

    wanted = None
    if scenario.run.until is not None:  # adaptive sampling: the lane skips the rounds a stopped model needs no more
        rule = StoppingRule(scenario.compare, scenario.run.until, models=list(scenario.models),
                            builds=[b for b in scenario.builds if any(u.build == b for u in units)],
                            keys={unit.id: unit.key for unit in plan.units}, records=store.known_records,
                            metrics=scenario.metrics)
        wanted = rule.wanted
    out.ran = True
    out.outcomes = execute_plan(plan, store, lease.factory(scenario, job.profile), units=units, listener=relabel,
                                stop=stop, options=ExecuteOptions(wanted=wanted))


class LocalExecutor:
    """Lanes on threads of this process, at most ``workers`` at once (see the module docstring for why)."""

    name = "local"
    ships_artifacts = False

    def __init__(self, workers: int, *, opener: Opener = _open_target) -> None:
        self.workers = max(1, workers)
        self._opener = opener

    def capacity(self) -> int:
        return self.workers

    def run(self, lanes: Sequence[LaneSpec], control: LaneControl) -> None:
        """Run every lane; ``control.on_lane_done`` is called in this thread as lanes finish. On
        KeyboardInterrupt: stop scheduling, close every instance, wait for the lanes to wind down, report them,
        re-raise."""
        if not lanes:
            return
        with ThreadPoolExecutor(max_workers=min(self.workers, len(lanes)), thread_name_prefix="lane") as pool:
            futures: dict[Future[LaneResult], LaneSpec] = {
                pool.submit(run_lane, lane, sink=control.sink, results_roots=control.results_roots,
                            drain=control.drain, abort=control.abort, stop=control.stop, listener=control.listener,
                            opener=self._opener): lane
                for lane in lanes
            }
            pending = set(futures)
            try:
                while pending:
                    done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                    for future in done:
                        control.on_lane_done(future.result())
            except KeyboardInterrupt:
                control.drain.set()
                control.abort.set()
                for future in pending:
                    future.cancel()
                done, _ = wait(pending)
                for future in done:
                    if not future.cancelled() and future.exception() is None:
                        control.on_lane_done(future.result())
                raise
