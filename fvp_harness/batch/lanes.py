"""Work units of the batch engine (lanes) and the local executor that runs them.

A **lane** is one booted FVP instance's worth of work: a sequence of *jobs*, each one plan session of one scenario
(the units of that session that are not up to date, in plan order). Every job dealt to a lane belongs to the
same *pool* (same platform profile, FVP identity, params, args, simulator knobs, firmware and timeouts), so the
lane boots one instance and runs job after job on it; the scenarios of a pool share booted instances. An
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

**Work stealing** (local executor only): the deal is a starting point. The lanes of one ``LocalExecutor.run``
share a board (``_Board``) holding every job nobody started; a lane takes its own jobs first, and a lane with none
left takes one from another lane's tail (the busiest lane of its instance's pool first: no boot needed; a job of
another pool only when it is worth a boot, ``BOOT_COST``). When a lane starts the last job it holds and the job it
will take next is of another pool (worth a boot, and by the estimates still unstarted when the current job ends),
it claims that job at once and, as soon as the current job has its instance, boots the next pool's instance on a
thread of its own (``_PreBoot``). The Dask executor keeps the fixed deal: its lanes are shipped tasks.

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
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType

from fvp_harness.errors import ConfigurationError, HarnessError
from fvp_harness.events import Event, Listener, null_listener
from fvp_harness.files import atomic_write
from fvp_harness.profiles import Profile
from fvp_harness.run.adaptive import StoppingRule
from fvp_harness.run.execute import ExecuteOptions, SessionOutcome, execute_plan
from fvp_harness.run.instances import TargetFactory, open_target
from fvp_harness.run.plan import build_plan
from fvp_harness.run.preboot import EarlyBootCancelled, PreBooted
from fvp_harness.scenario.model import Scenario
from fvp_harness.scenario.secrets import redact_data, secret_names
from fvp_harness.store.folder import LOGS_DIR, ResultStore, free_instance_name
from fvp_harness.store.records import Record
from fvp_harness.targets.base import MasksSecrets, Target

__all__ = [
    "BOOT_COST",
    "JobResult",
    "JobSpec",
    "LaneControl",
    "LaneResult",
    "LaneSpec",
    "LocalExecutor",
    "RecordSink",
    "default_jobs",
    "restore_secrets",
    "run_lane",
    "withhold_secrets",
]

log = logging.getLogger(__name__)

RecordSink = Callable[[int, Record], None]
"""``sink(node, record)``: hand one finished record of scenario ``node`` to the coordinator (thread-safe)."""

BOOT_COST = 20
"""A boot's estimated cost in ``JobSpec.cost`` units (executions): what balancing adds per lane, and what a job of
another pool must exceed before an idle lane closes its instance and boots one for it (work stealing)."""

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
    withheld: tuple[tuple[str, str], ...] = ()
    """Secret environment entries whose values this spec does not carry (``withhold_secrets``): (section, name),
    section ``run`` or ``builds.<build>``; the worker takes each value from its own environment variable NAME."""

    @property
    def cost(self) -> int:
        """Rough work estimate for balancing lanes: executions to run."""
        run = self.scenario.run
        return len(self.units) * (run.executions + 2)


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
        return sum(job.cost for job in self.jobs) + BOOT_COST


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
    """Instances booted (more than one when an infrastructure failure forced a fresh instance, or the lane went on
    with another pool's job: pre-booted instances count, used or not)."""
    error: str | None = None
    error_class: str = "infrastructure"
    owned: list[JobSpec] | None = None
    """With work stealing (``LocalExecutor``): the jobs this lane answers for, started or not: its dealt jobs no
    other lane took, and those it took from other lanes. The coordinator explains the units of these that got no
    record (a job is in exactly one lane's list). None: the lane's dealt jobs (no stealing, e.g. on Dask)."""


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


def _close_context(context: contextlib.AbstractContextManager[Target]) -> None:
    try:
        context.__exit__(None, None, None)
    except Exception:  # cleanup must not hide the reason we are closing
        log.exception("closing a batch instance failed")


def _emit(listener: Listener, event: Event) -> None:
    try:
        listener(event)
    except Exception:  # a broken progress display must never stop a measurement
        log.exception("progress listener failed on %s", event.kind)


@dataclass(frozen=True)
class _Claim:
    """A job a lane took off the board, with the lane it was dealt to (its pool and shipped blobs)."""

    job: JobSpec
    origin: LaneSpec

    @property
    def pool(self) -> str:
        return self.origin.pool


class _PreBoot:
    """The instance of a lane's next job (of another pool), booting on a thread of its own while the current job
    runs so it is ready when that job ends.

    It is opened with the name and log folder the next job's session would pick then
    (``store.folder.free_instance_name``), and that session takes it under that name (``_Early``), so its logs land
    in that job's own results folder. Whoever holds it last closes it: the lease once it lent it, the lane
    otherwise (stop, abort, drain, an error), the boot thread itself when a close or an abort came while it booted.
    ``close`` waits for a boot in progress, so no instance outlives its lane."""

    def __init__(self, opener: Opener, claim: _Claim, root: Path, scale: float, abort: threading.Event,
                 listener: Listener) -> None:
        self.claim = claim
        self._opener = opener
        self._root = root
        self._scale = scale
        self._abort = abort
        self._listener = listener
        self._lock = threading.Lock()
        self._instance: PreBooted | None = None
        self._error: OSError | None = None
        self._closed = False
        self._started = False
        self._lent = False
        self._label = ""
        self.name: str | None = None
        """The instance's name, once ``start`` chose it."""
        self.booted = False
        """An instance was opened (it counts as a boot, used or not)."""

    @property
    def started(self) -> bool:
        return self._started

    @property
    def boot_seconds(self) -> float | None:
        """The boot's own duration, once it booted."""
        return None if self._instance is None else self._instance.boot_seconds

    def start(self) -> None:
        """Name the instance and create its log folder here, in the lane's thread (so the folder exists before the
        next job's session names its own instance), then boot on a thread of its own (``run.preboot.PreBooted``).
        Idempotent; nothing after ``close``."""
        with self._lock:
            if self._started or self._closed:
                return
            self._started = True
            job = self.claim.job
            try:
                name, _ = free_instance_name(self._root / LOGS_DIR, f"s{job.session}")
                log_dir = self._root / LOGS_DIR / name
                log_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # the session that asks for this instance gets the error
                self._error = exc
                return
            self.name = name
            self._label = f"{Path(job.scenario_path).stem}/{name}"
            self._instance = PreBooted(self._open, name, log_dir)
            self._instance.start()

    @contextlib.contextmanager
    def _open(self, name: str, log_dir: Path) -> Iterator[Target]:
        """The opener's instance, announced to the progress display; closed at once when the batch was aborted
        while it booted."""
        job = self.claim.job
        try:
            _emit(self._listener, Event("boot", session=self._label))
            began = time.monotonic()
            with self._opener(job.scenario, job.profile, name, log_dir, self._scale) as target:
                self.booted = True
                _emit(self._listener, Event("booted", session=self._label,
                                            seconds=round(time.monotonic() - began, 3)))
                if self._abort.is_set():
                    raise _Stopped()
                yield target
        finally:
            if self.booted and not self._lent:  # closed by the pre-boot itself, not by the lease it was lent to
                _emit(self._listener, Event("closed", session=self._label))

    def take(self) -> tuple[contextlib.AbstractContextManager[Target], Target]:
        """Wait for the boot and hand the instance over (the caller closes it from then on). Raises the boot's
        own error, or ``_Stopped`` when the instance was closed meanwhile."""
        with self._lock:
            instance, error = self._instance, self._error
        if error is not None:
            raise error
        if instance is None:
            raise _Stopped()
        self._lent = True
        try:
            return instance, instance.__enter__()
        except EarlyBootCancelled:
            raise _Stopped() from None

    def close(self) -> None:
        """Close the instance unless it was handed over; wait for a boot in progress (idempotent, any thread)."""
        with self._lock:
            self._closed = True
            instance = self._instance
        if instance is not None:
            instance.cancel(wait=True)


class _InstanceLease:
    """One booted instance lent to job after job (``execute_plan`` asks its factory for an instance per
    session). A unit that ends in an exception closes the instance, so execute's retry gets a fresh one; a stop
    request closes it from another thread (ending the unit in flight) and makes the next request fail.

    ``pool``: the pool of the jobs it serves; ``switch`` closes an instance another pool's job cannot use. ``adopt``
    makes a pre-booted instance the one lent next; ``on_lend`` is called each time an instance is lent (the lane
    starts its pre-boot then: once the current job has its instance, not while that one boots too)."""

    def __init__(self, opener: Opener, stop: threading.Event, timeout_scale: float) -> None:
        self._opener = opener
        self._stop = stop
        self._scale = timeout_scale
        self._lock = threading.Lock()
        self._context: contextlib.AbstractContextManager[Target] | None = None
        self._target: Target | None = None
        self._preboot: _PreBoot | None = None
        self.pool: str | None = None
        self.on_lend: Callable[[], None] | None = None
        self.boots = 0
        self.last_boot_seconds: float | None = None
        """The boot time of the last pre-booted instance lent (its own boot, not the wait for it)."""
        self.reused = False
        """Whether the last lease lent an instance booted before it was asked for (progress must not say it
        booted)."""

    @property
    def has_instance(self) -> bool:
        """An instance is booted (or being pre-booted) and will be lent to the next request."""
        return self._target is not None or self._preboot is not None

    @property
    def warm_pool(self) -> str | None:
        """The pool whose jobs the lease can serve without a boot, if any."""
        return self.pool if self.has_instance else None

    def switch(self, pool: str) -> None:
        """The next job is of ``pool``: an instance of another pool cannot serve it and is closed."""
        if pool != self.pool:
            self.close()
            self.pool = pool

    def preboot_name(self, job: JobSpec) -> str | None:
        """The name of the pre-booted instance waiting for ``job`` (None: the job boots or reuses as usual)."""
        with self._lock:
            preboot = self._preboot
        if preboot is None or preboot.claim.job is not job or not preboot.started:
            return None
        return preboot.name

    def adopt(self, preboot: _PreBoot) -> None:
        """Lend ``preboot``'s instance to the next request (after ``switch`` to its pool)."""
        with self._lock:
            self._preboot = preboot

    def factory(self, scenario: Scenario, profile: Profile) -> TargetFactory:
        def make(name: str, log_dir: Path) -> contextlib.AbstractContextManager[Target]:
            return self._lease(scenario, profile, name, log_dir)

        return make

    def _open(self, scenario: Scenario, profile: Profile, name: str,
              log_dir: Path) -> tuple[contextlib.AbstractContextManager[Target], Target]:
        with self._lock:
            preboot, self._preboot = self._preboot, None
        if preboot is not None:  # its boot's failure is this request's: execute's boot retry rule applies
            context, target = preboot.take()
            self.reused = True
            self.last_boot_seconds = preboot.boot_seconds
            return context, target
        context = self._opener(scenario, profile, name, log_dir, self._scale)
        target = context.__enter__()
        self.boots += 1
        return context, target

    @contextlib.contextmanager
    def _lease(self, scenario: Scenario, profile: Profile, name: str, log_dir: Path) -> Iterator[Target]:
        if self._stop.is_set():
            raise _Stopped()
        self.reused = self._target is not None
        target = self._target
        if target is None:
            context, target = self._open(scenario, profile, name, log_dir)
            with self._lock:
                self._context, self._target = context, target
            if self._stop.is_set():
                self.close()
                raise _Stopped()
        if isinstance(target, MasksSecrets):  # an instance lent to another scenario learns that one's secrets
            target.redact_also(scenario.secret_values())
        if self.on_lend is not None:
            self.on_lend()
        try:
            yield target
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop the instance, and a pre-booted one not lent yet (idempotent, any thread)."""
        with self._lock:
            context, self._context, self._target = self._context, None, None
            preboot, self._preboot = self._preboot, None
        if context is not None:
            _close_context(context)
        if preboot is not None:
            preboot.close()


class _Board:
    """The jobs nobody started yet, lane by lane, shared by the lanes of one ``LocalExecutor.run`` (work stealing).

    A lane takes its own jobs first (the deal, ``engine.assign_lanes``, so a balanced batch runs as dealt). A lane
    with none left takes one from another lane's tail (never the first job of a lane whose thread has not begun:
    ``_kept``): from the lane with the most estimated work left among those
    of its instance's pool (no boot needed), else a job of another pool worth a boot (cost above ``BOOT_COST``).
    Every take happens under one lock and only while no drain, stop or abort is set, so a job is started by exactly
    one lane and a stopped batch starts nothing new. ``retire`` tells a finished lane which jobs it answers for."""

    def __init__(self, lanes: Sequence[LaneSpec], events: Sequence[threading.Event],
                 workers: int | None = None) -> None:
        self._lock = threading.Lock()
        self._events = tuple(events)
        self._lanes = {lane.index: lane for lane in lanes}
        self._queues: dict[int, deque[JobSpec]] = {lane.index: deque(lane.jobs) for lane in lanes}
        self._workers = len(lanes) if workers is None else max(1, workers)
        """Lanes that run at once (the executor's threads): a lane beyond them waits for one to end."""
        self._started: set[int] = set()
        self._retired: set[int] = set()
        self._running: dict[int, int] = {}
        """Lane -> estimated cost of the job it runs (its remaining work counts it until it takes the next)."""
        self._jobs = [job for lane in lanes for job in lane.jobs]
        self._owner = {(job.node, job.session): lane.index for lane in lanes for job in lane.jobs}

    @property
    def jobs(self) -> list[JobSpec]:
        """Every job dealt to the board's lanes."""
        return list(self._jobs)

    def _halted(self) -> bool:
        return any(event.is_set() for event in self._events)

    def _left(self, lane: int) -> int:
        return self._running.get(lane, 0) + sum(job.cost for job in self._queues[lane])

    def take(self, lane: int, warm_pool: str | None) -> _Claim | None:
        """The next job for ``lane``, whose instance (if it has one) serves ``warm_pool``; None: nothing left for
        it. Raises ``_Stopped`` when there is a job but a drain, stop or abort forbids starting it."""
        with self._lock:
            self._started.add(lane)
            own = self._queues[lane]
            found = (lane, 0) if own else self._steal(lane, warm_pool)
            if found is None:
                return None
            if self._halted():
                raise _Stopped()
            claim = self._remove(lane, *found)
            self._running[lane] = claim.job.cost
            return claim

    def claim_ahead(self, lane: int, pool: str, current: int) -> _Claim | None:
        """The job of another pool ``lane`` will take after its current one (cost ``current``), claimed now so
        its instance can boot meanwhile; None when the lane still holds jobs, a job of ``pool`` is left to take,
        or no other pool's job is worth a boot and likely still unstarted when the current job ends (the
        estimated work ahead of it on its own lane exceeds ``current``)."""
        with self._lock:
            if self._halted() or self._queues[lane] or self._steal(lane, pool, warm_only=True) is not None:
                return None
            found = self._steal(lane, pool, ahead_of=current)
            return None if found is None else self._remove(lane, *found)

    def _steal(self, thief: int, warm_pool: str | None, *, warm_only: bool = False,
               ahead_of: int | None = None) -> tuple[int, int] | None:
        """(victim lane, queue position) of the job ``thief`` would take from another lane, or None."""
        victims = [index for index, queue in self._queues.items()
                   if index != thief and len(queue) > self._kept(index)]
        warm = [index for index in victims if self._lanes[index].pool == warm_pool]
        if warm:  # the same pool as the thief's instance: no boot, any job is worth it
            victim = max(warm, key=lambda index: (self._left(index), -index))
            return victim, len(self._queues[victim]) - 1
        if warm_only:
            return None
        best: tuple[int, int] | None = None
        for victim in sorted(victims, key=lambda index: (-self._left(index), index)):
            queue = self._queues[victim]
            for position in range(len(queue) - 1, self._kept(victim) - 1, -1):  # from the tail: run last there
                job = queue[position]
                before = self._running.get(victim, 0) + sum(queue[i].cost for i in range(position))
                if job.cost > BOOT_COST and (ahead_of is None or before > ahead_of):
                    best = victim, position
                    break
            if best is not None:
                return best
        return None

    def _kept(self, victim: int) -> int:
        """How many jobs at the head of ``victim``'s queue no other lane may take: its first one while its thread
        has not begun yet (it starts with it any moment: taking it would leave that lane nothing and run both
        lanes' jobs one after the other on one instance, as a quick first job on a loaded host did), none once it
        runs or while it waits for a thread (every thread runs another lane)."""
        if victim in self._started or len(self._started - self._retired) >= self._workers:
            return 0
        return 1

    def _remove(self, thief: int, victim: int, position: int) -> _Claim:
        queue = self._queues[victim]
        job = queue[position]
        del queue[position]
        self._owner[(job.node, job.session)] = thief
        if victim != thief:
            log.info("lane %s takes %s/s%s from lane %s", thief, Path(job.scenario_path).stem, job.session, victim)
        return _Claim(job, self._lanes[victim])

    def retire(self, lane: int) -> list[JobSpec]:
        """``lane`` has ended: its unstarted jobs leave the board (it reports them; nobody may start them after),
        and the jobs it answers for are returned (``LaneResult.owned``)."""
        with self._lock:
            self._queues[lane].clear()
            self._running.pop(lane, None)
            self._retired.add(lane)
            return [job for job in self._jobs if self._owner[(job.node, job.session)] == lane]


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


WITHHELD = "<secret withheld: taken from the worker's environment>"
"""What a withheld secret's value reads as in a shipped spec (long enough to stay secret by the name patterns)."""


def withhold_secrets(spec: LaneSpec) -> LaneSpec:
    """The lane without its scenarios' secret values: each secret ``env`` value becomes ``WITHHELD`` (its name is
    kept in ``JobSpec.withheld``) and ``vars`` are masked, so a spec sent over a plain (unencrypted) connection
    carries the names, never the values. ``restore_secrets`` puts them back on the worker from its environment; the
    worker's re-plan then checks the keys, so a different value there refuses the units (key mismatch)."""
    jobs: list[JobSpec] = []
    for job in spec.jobs:
        scenario = job.scenario
        names = secret_names(scenario)
        if not names:
            jobs.append(job)
            continue
        withheld: list[tuple[str, str]] = [("run", name) for name in scenario.run.env if name in names]
        builds = {}
        for build_name, build in scenario.builds.items():
            withheld += [(f"builds.{build_name}", name) for name in build.env if name in names]
            builds[build_name] = build.model_copy(update={"env": {
                name: WITHHELD if name in names else value for name, value in build.env.items()}})
        run = scenario.run.model_copy(update={"env": {
            name: WITHHELD if name in names else value for name, value in scenario.run.env.items()}})
        hidden = scenario.model_copy(update={"run": run, "builds": builds,
                                             "vars": redact_data(scenario.vars, scenario.secret_values())})
        jobs.append(replace(job, scenario=hidden, withheld=tuple(withheld)))
    return replace(spec, jobs=tuple(jobs))


def restore_secrets(spec: LaneSpec, environ: Mapping[str, str]) -> LaneSpec:
    """The lane with every withheld secret taken from ``environ`` (the worker's own environment), by its ``env``
    name. Raises ConfigurationError naming every one that is not set there (nothing runs)."""
    missing = sorted({name for job in spec.jobs for _section, name in job.withheld if name not in environ})
    if missing:
        raise ConfigurationError(
            f"secret environment value(s) {', '.join(missing)} are not sent to Dask workers over a plain connection; "
            "set them in each worker's environment under the same names, or use a tls:// scheduler "
            "(distributed's security settings)")
    jobs: list[JobSpec] = []
    for job in spec.jobs:
        if not job.withheld:
            jobs.append(job)
            continue
        scenario = job.scenario
        wanted = set(job.withheld)
        run = scenario.run.model_copy(update={"env": {
            name: environ[name] if ("run", name) in wanted else value for name, value in scenario.run.env.items()}})
        builds = {build_name: build.model_copy(update={"env": {
            name: environ[name] if (f"builds.{build_name}", name) in wanted else value
            for name, value in build.env.items()}}) for build_name, build in scenario.builds.items()}
        jobs.append(replace(job, scenario=scenario.model_copy(update={"run": run, "builds": builds}), withheld=()))
    return replace(spec, jobs=tuple(jobs))


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
    board: _Board | None = None,
) -> LaneResult:
    """Run a lane's jobs on one instance at a time (see the module docstring).

    ``sink`` + ``results_roots`` (scenario index -> results folder): records go to the sink and logs straight
    into the results folders (local). Without them (remote) records and logs are collected into the result.
    ``drain`` set: start no further job. ``stop`` set: finish and record the unit in flight, then start nothing
    (the instance is closed politely). ``abort`` set: close the instance now (the unit in flight is dropped).
    ``board``: the lanes' shared board (work stealing, pre-boots; ``LocalExecutor``); without one the lane runs
    exactly its dealt jobs, in order.
    """
    drain = drain or threading.Event()
    abort = abort or threading.Event()
    stop = stop or threading.Event()
    shared = board is not None
    source = board if board is not None else _Board([spec], (drain, stop, abort))
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
    ahead: _PreBoot | None = None
    preboots: list[_PreBoot] = []
    try:
        for number in range(len(source.jobs)):  # no lane runs more jobs than the board holds
            if ahead is not None:  # claimed while the last job ran: it still obeys the three events
                if drain.is_set() or stop.is_set() or abort.is_set():
                    result.interrupted = True
                    break
                claim: _Claim | None = ahead.claim
            else:
                try:
                    claim = source.take(spec.index, lease.warm_pool)
                except _Stopped:
                    result.interrupted = True
                    break
            if claim is None:
                break
            lease.switch(claim.pool)
            if ahead is not None:
                if ahead.started:
                    lease.adopt(ahead)
                else:  # the last job never got an instance: boot this one as usual
                    ahead.close()
            ahead = None
            lease.on_lend = None
            if shared and results_roots is not None:
                upcoming = source.claim_ahead(spec.index, claim.pool, claim.job.cost)
                if upcoming is not None:
                    ahead = _PreBoot(opener, upcoming, results_roots[upcoming.job.node], spec.timeout_scale, abort,
                                     listener)
                    preboots.append(ahead)
                    lease.on_lend = ahead.start
            if _run_one(claim, number, lease, result, sink, results_roots, scratch, abort, stop, listener):
                break
    finally:
        finished.set()
        lease.on_lend = None
        if ahead is not None:
            ahead.close()
        lease.close()
        result.boots = lease.boots + sum(preboot.booted for preboot in preboots)
        owned = source.retire(spec.index)
        if shared:
            result.owned = owned
        watcher.join()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return result


def _run_one(claim: _Claim, number: int, lease: _InstanceLease, result: LaneResult, sink: RecordSink | None,
             results_roots: Mapping[int, Path] | None, scratch: Path | None, abort: threading.Event,
             stop: threading.Event, listener: Listener) -> bool:
    """Run one job of the lane into ``result``; True when the lane must end (a stop request cut it short)."""
    job = claim.job
    if results_roots is not None:
        root = results_roots[job.node]
    else:
        assert scratch is not None  # made by the lane exactly when there are no results roots
        root = scratch / f"{number}"
    job_result = JobResult(job.node, job.session, job.units)
    result.jobs.append(job_result)
    collected: list[Record] = []

    def keep(node: int, record: Record) -> None:
        if sink is not None:
            sink(node, record)
        else:
            collected.append(record)

    try:
        _run_job(job, claim.origin, root, lease, keep, abort, stop, listener, job_result)
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
    return result.interrupted


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
    stored_baseline = scenario.compare is not None and bool(scenario.compare.baseline_from)
    if scenario.run.until is not None and not stored_baseline:
        # adaptive sampling: the lane skips the rounds a stopped model needs no more (not against a stored baseline:
        # a worker has no stored run to judge on, so it measures every round; the report's replay spares none)
        rule = StoppingRule(scenario.compare, scenario.run.until, models=list(scenario.models),
                            builds=[b for b in scenario.builds if any(u.build == b for u in units)],
                            keys={unit.id: unit.key for unit in plan.units}, records=store.known_records,
                            metrics=scenario.metrics)
        wanted = rule.wanted
    factory = lease.factory(scenario, job.profile)

    def early(session: str) -> _Early | None:  # this job's pre-booted instance keeps the name it booted under
        name = lease.preboot_name(job)
        return None if name is None else _Early(name, factory(name, root / LOGS_DIR / name), lease)

    out.ran = True
    out.outcomes = execute_plan(plan, store, factory, units=units, listener=relabel, stop=stop,
                                options=ExecuteOptions(wanted=wanted, preboot=early))


class _Early(contextlib.AbstractContextManager[Target]):
    """A job's pre-booted instance as execute's ``EarlyInstance``: the session takes the name it booted under (its
    logs are that instance's folder), and the lease lends it as usual."""

    def __init__(self, name: str, lent: contextlib.AbstractContextManager[Target], lease: _InstanceLease) -> None:
        self.name = name
        self.boot_seconds: float | None = None
        self._lent = lent
        self._lease = lease

    def __enter__(self) -> Target:
        target = self._lent.__enter__()
        self.boot_seconds = self._lease.last_boot_seconds
        return target

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> bool | None:
        return self._lent.__exit__(kind, value, traceback)


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
        """Run every lane, sharing one board (work stealing: see the module docstring);
        ``control.on_lane_done`` is called in this thread as lanes finish. On
        KeyboardInterrupt: stop scheduling, close every instance, wait for the lanes to wind down, report them,
        re-raise."""
        if not lanes:
            return
        threads = min(self.workers, len(lanes))
        board = _Board(lanes, (control.drain, control.stop, control.abort), threads)  # lanes steal from each other
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lane") as pool:
            futures: dict[Future[LaneResult], LaneSpec] = {
                pool.submit(run_lane, lane, sink=control.sink, results_roots=control.results_roots,
                            drain=control.drain, abort=control.abort, stop=control.stop, listener=control.listener,
                            opener=self._opener, board=board): lane
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
