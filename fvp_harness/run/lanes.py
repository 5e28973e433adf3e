"""The scheduler of ``run`` and ``make``: lanes (one booted instance's worth of jobs), the board
they steal from, pre-boots, and the local executor (docs/architecture.md, "One scheduler")."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType

from fvp_harness.errors import ConfigurationError, HarnessError
from fvp_harness.events import Event, Listener, null_listener
from fvp_harness.profiles import Profile
from fvp_harness.run.adaptive import StoppingRule
from fvp_harness.run.execute import ExecuteOptions, execute_plan
from fvp_harness.run.instances import TargetFactory, open_target
from fvp_harness.run.lane_specs import (
    ARTIFACT_CACHE_ENV,
    BOOT_COST,
    WITHHELD,
    JobResult,
    JobSpec,
    LaneControl,
    LaneResult,
    LaneSpec,
    LocalRun,
    RecordSink,
    collect_logs,
    relocated,
    restore_secrets,
    withhold_secrets,
)
from fvp_harness.run.plan import Unit, build_plan
from fvp_harness.run.preboot import EarlyBootCancelled, PreBooted
from fvp_harness.run.seats import Seat, Seats, seated
from fvp_harness.scenario.model import Scenario
from fvp_harness.store.folder import LOGS_DIR, ResultStore, free_instance_name
from fvp_harness.store.records import Record
from fvp_harness.targets.base import MasksSecrets, Target

__all__ = [
    "ARTIFACT_CACHE_ENV",
    "BOOT_COST",
    "WITHHELD",
    "JobResult",
    "JobSpec",
    "LaneControl",
    "LaneResult",
    "LaneSpec",
    "LocalExecutor",
    "LocalRun",
    "RecordSink",
    "default_jobs",
    "restore_secrets",
    "run_lane",
    "withhold_secrets",
]

log = logging.getLogger(__name__)


def default_jobs() -> int:
    """``-j`` default: the CPUs this process may use (one FVP instance each, like ``make
    -j$(nproc)``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class _Either(threading.Event):
    """Set when any of ``events`` is: the stop request execute reads (``stop`` or the fail-fast
    ``halt``); execute only asks ``is_set``, so neither event needs a thread to pass it on."""

    def __init__(self, *events: threading.Event) -> None:
        super().__init__()
        self._events = events

    def is_set(self) -> bool:
        return any(event.is_set() for event in self._events)

    def wait(self, timeout: float | None = None) -> bool:
        end = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            if end is not None and time.monotonic() >= end:
                return False
            time.sleep(0.05)
        return True


class _Stopped(Exception):
    """Raised out of the instance factory when a stop was requested: ends ``execute_plan`` without
    recording."""


Opener = Callable[[Scenario, Profile, str, Path, float], contextlib.AbstractContextManager[Target]]


def _open_target(scenario: Scenario, profile: Profile, name: str, log_dir: Path,
                 timeout_scale: float) -> contextlib.AbstractContextManager[Target]:
    return open_target(scenario, log_dir=log_dir, name=name, profile=profile,
                       timeout_scale=timeout_scale)


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
    """A job a lane took off the board, with the lane it was dealt to (its pool and shipped
    blobs)."""

    job: JobSpec
    origin: LaneSpec

    @property
    def pool(self) -> str:
        return self.origin.pool


class _PreBoot:
    """The instance of a lane's next job (of another pool), booting on a thread of its own while the
    current job runs so it is ready when that job ends.

    It is opened with the name and log folder the next job's session would pick then
    (``store.folder.free_instance_name``), and that session takes it under that name (``_Early``),
    so its logs land in that job's own results folder. Whoever holds it last closes it: the lease
    once it lent it, the lane otherwise (stop, abort, drain, an error), the boot thread itself when
    a close or an abort came while it booted. ``close`` waits for a boot in progress, so no instance
    outlives its lane."""

    def __init__(self, opener: Opener, claim: _Claim, root: Path, scale: float,
                 abort: threading.Event, listener: Listener, seats: Seats | None = None) -> None:
        self.claim = claim
        self._seats = seats
        self._seat: Seat | None = None
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
        """Name the instance and create its log folder here, in the lane's thread (so the folder
        exists before the next job's session names its own instance), then boot on a thread of its
        own (``run.preboot.PreBooted``). Idempotent; nothing after ``close``. Only with a free seat
        (``-j`` counts pre-boots): without one it stays unstarted (tried again at the next lend),
        and the job boots as usual."""
        with self._lock:
            if self._started or self._closed:
                return
            if self._seats is not None:
                self._seat = self._seats.try_acquire()
                if self._seat is None:
                    return
            self._started = True
            job = self.claim.job
            try:
                name, _ = free_instance_name(self._root / LOGS_DIR, f"s{job.session}")
                log_dir = self._root / LOGS_DIR / name
                log_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # the session that asks for this instance gets the error
                self._error = exc
                if self._seat is not None:
                    self._seat.release()
                return
            self.name = name
            self._label = f"{Path(job.scenario_path).stem}/{name}"
            self._instance = PreBooted(self._open, name, log_dir)
            self._instance.start()

    @contextlib.contextmanager
    def _open(self, name: str, log_dir: Path) -> Iterator[Target]:
        """The opener's instance, announced to the progress display; closed at once when the batch
        was aborted while it booted."""
        job = self.claim.job
        try:
            _emit(self._listener, Event("boot", session=self._label))
            began = time.monotonic()
            opened = self._opener(job.scenario, job.profile, name, log_dir, self._scale)
            with opened if self._seat is None else seated(self._seat, opened) as target:
                self.booted = True
                _emit(self._listener, Event("booted", session=self._label,
                                            seconds=round(time.monotonic() - began, 3)))
                if self._abort.is_set():
                    raise _Stopped()
                yield target
        finally:
            # closed by the pre-boot itself, not by the lease it was lent to
            if self.booted and not self._lent:
                _emit(self._listener, Event("closed", session=self._label))

    def take(self) -> tuple[contextlib.AbstractContextManager[Target], Target]:
        """Wait for the boot and hand the instance over (the caller closes it from then on). Raises
        the boot's own error, or ``_Stopped`` when the instance was closed meanwhile."""
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
        """Close the instance unless it was handed over; wait for a boot in progress (idempotent,
        any thread)."""
        with self._lock:
            self._closed = True
            instance = self._instance
        if instance is not None:
            instance.cancel(wait=True)


class _InstanceLease:
    """One booted instance lent to job after job (``execute_plan`` asks its factory for an instance
    per session). A unit that ends in an exception closes the instance, so execute's retry gets a
    fresh one; a stop request closes it from another thread (ending the unit in flight) and makes
    the next request fail.

    ``pool``: the pool of the jobs it serves; ``switch`` closes an instance another pool's job
    cannot use. ``adopt`` makes a pre-booted instance the one lent next; ``on_lend`` is called each
    time an instance is lent (the lane starts its pre-boot then: once the current job has its
    instance, not while that one boots too)."""

    def __init__(self, opener: Opener, stop: threading.Event, timeout_scale: float,
                 fresh: bool = False) -> None:
        self._opener = opener
        self._fresh = fresh
        """Close the instance after each use (``--fresh-boot-per-unit``)."""
        self._early: PreBooted | None = None
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
        """The boot time of the last pre-booted instance lent (its own boot, not the wait for
        it)."""
        self.reused = False
        """Whether the last lease lent an instance booted before it was asked for (progress must not
        say it booted)."""

    @property
    def has_instance(self) -> bool:
        """An instance is booted (or being pre-booted) and will be lent to the next request."""
        return self._target is not None or self._preboot is not None or self._early is not None

    @property
    def warm_pool(self) -> str | None:
        """The pool whose jobs the lease can serve without a boot, if any."""
        return self.pool if self.has_instance else None

    def switch(self, pool: str) -> None:
        """The next job is of ``pool``: an instance of another pool cannot serve it and is
        closed."""
        if pool != self.pool:
            self.close()
            self.pool = pool

    def preboot_name(self, job: JobSpec) -> str | None:
        """The name of the pre-booted instance waiting for ``job`` (None: the job boots or reuses as
        usual)."""
        with self._lock:
            preboot = self._preboot
        if preboot is None or preboot.claim.job is not job or not preboot.started:
            return None
        return preboot.name

    def adopt_early(self, booted: PreBooted) -> None:
        """Lend ``booted`` (booted while ``run``'s artifacts built) to the next request."""
        with self._lock:
            self._early = booted

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
            early, self._early = self._early, None
        if early is not None:  # its boot's failure is this request's, as below
            try:
                target = early.__enter__()
            except EarlyBootCancelled:
                raise _Stopped() from None
            self.reused = False
            self.last_boot_seconds = early.boot_seconds
            return early, target
        # its boot's failure is this request's: execute's boot retry rule applies
        if preboot is not None:
            context, target = preboot.take()
            self.reused = True
            self.last_boot_seconds = preboot.boot_seconds
            return context, target
        context = self._opener(scenario, profile, name, log_dir, self._scale)
        target = context.__enter__()
        self.boots += 1
        return context, target

    @contextlib.contextmanager
    def _lease(self, scenario: Scenario, profile: Profile, name: str,
               log_dir: Path) -> Iterator[Target]:
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
        # an instance lent to another scenario learns that one's secrets
        if isinstance(target, MasksSecrets):
            target.redact_also(scenario.secret_values())
        if self.on_lend is not None:
            self.on_lend()
        try:
            yield target
        except BaseException:
            self.close()
            raise
        if self._fresh:
            self.close()

    def close(self) -> None:
        """Stop the instance, and a pre-booted one not lent yet (idempotent, any thread)."""
        with self._lock:
            context, self._context, self._target = self._context, None, None
            preboot, self._preboot = self._preboot, None
            early, self._early = self._early, None
        if early is not None:
            early.cancel(wait=True)
        if context is not None:
            _close_context(context)
        if preboot is not None:
            preboot.close()


class _Board:
    """The jobs nobody started yet, lane by lane, shared by the lanes of one ``LocalExecutor.run``
    (work stealing).

    A lane takes its own jobs first (the deal, ``engine.assign_lanes``, so a balanced batch runs as
    dealt). A lane with none left takes one from another lane's tail (never the first job of a lane
    whose thread has not begun: ``_kept``): from the lane with the most estimated work left among
    those of its instance's pool (no boot needed), else a job of another pool worth a boot (cost
    above ``BOOT_COST``). Every take happens under one lock and only while no drain, stop or abort
    is set, so a job is started by exactly one lane and a stopped batch starts nothing new.
    ``retire`` tells a finished lane which jobs it answers for."""

    def __init__(self, lanes: Sequence[LaneSpec], events: Sequence[threading.Event],
                 workers: int | None = None, steal: bool = True) -> None:
        self._lock = threading.Lock()
        self._steals = steal
        """False (``--no-steal``): every lane runs exactly its dealt jobs and units."""
        self._units: dict[int, tuple[int, int, str, list[Unit]]] = {}
        """id(queue) -> (lane, scenario, pool, queue) of each running job: its units not started."""
        self._events = tuple(events)
        self._lanes = {lane.index: lane for lane in lanes}
        self._queues: dict[int, deque[JobSpec]] = {lane.index: deque(lane.jobs) for lane in lanes}
        self._workers = len(lanes) if workers is None else max(1, workers)
        """Lanes that run at once (the executor's threads): a lane beyond them waits for one to
        end."""
        self._started: set[int] = set()
        self._retired: set[int] = set()
        self._running: dict[int, int] = {}
        """Lane -> estimated cost of the job it runs (its remaining work counts it until it takes
        the next)."""
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
        """The next job for ``lane``, whose instance (if it has one) serves ``warm_pool``; None:
        nothing left for it. Raises ``_Stopped`` when there is a job but a drain, stop or abort
        forbids starting it."""
        with self._lock:
            self._started.add(lane)
            own = self._queues[lane]
            found = (lane, 0) if own else self._steal(lane, warm_pool) if self._steals else None
            if found is None:
                return None
            if self._halted():
                raise _Stopped()
            claim = self._remove(lane, *found)
            self._running[lane] = claim.job.cost
            return claim

    def claim_ahead(self, lane: int, pool: str, current: int) -> _Claim | None:
        """The job of another pool ``lane`` will take after its current one (cost ``current``),
        claimed now so its instance can boot meanwhile; None when the lane still holds jobs, a job
        of ``pool`` is left to take, or no other pool's job is worth a boot and likely still
        unstarted when the current job ends (the estimated work ahead of it on its own lane exceeds
        ``current``)."""
        with self._lock:
            if (not self._steals or self._halted() or self._queues[lane]
                    or self._steal(lane, pool, warm_only=True) is not None):
                return None
            found = self._steal(lane, pool, ahead_of=current)
            return None if found is None else self._remove(lane, *found)

    def _steal(self, thief: int, warm_pool: str | None, *, warm_only: bool = False,
               ahead_of: int | None = None) -> tuple[int, int] | None:
        """(victim lane, queue position) of the job ``thief`` would take from another lane, or
        None."""
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
            # from the tail: run last there
            for position in range(len(queue) - 1, self._kept(victim) - 1, -1):
                job = queue[position]
                before = self._running.get(victim, 0) + sum(queue[i].cost for i in range(position))
                if job.cost > BOOT_COST and (ahead_of is None or before > ahead_of):
                    best = victim, position
                    break
            if best is not None:
                return best
        return None

    def sharing(self, lane: int, node: int, pool: str) -> _Sharing:
        """The ``WorkSharing`` of a job ``lane`` runs: its queue is on the board while it runs."""
        return _Sharing(self, lane, node, pool)

    def steal_units(self, lane: int, node: int, pool: str, queue: list[Unit]) -> list[Unit]:
        """Move the last not-started (repetition, model) group of the busiest running job of the
        same scenario and pool into ``queue`` (the idle job's) and return it; [] when ``lane`` still
        has jobs of its own, an unstarted job of its pool is left to take, or no running job has a
        group to spare.

        The victim's first unit is never taken (it may be in flight, or a unit being retried), nor a
        group that shares its (repetition, model), so a model's builds of one round always run on
        one instance, back to back."""
        with self._lock:
            if (not self._steals or self._halted() or self._queues[lane]
                    or self._steal(lane, pool, warm_only=True) is not None):
                return []
            victims = [units for other, scenario, kind, units in self._units.values()
                       if units is not queue and other != lane and scenario == node and kind == pool
                       and len(units) > 1]
            for victim in sorted(victims, key=lambda units: -len(units)):
                head, group = victim[0], (victim[-1].repetition, victim[-1].model)
                if group == (head.repetition, head.model):
                    continue
                count = 0
                for unit in reversed(victim):
                    if (unit.repetition, unit.model) != group:
                        break
                    count += 1
                taken = victim[-count:]
                del victim[-count:]
                queue.extend(taken)
                return taken
            return []

    def _kept(self, victim: int) -> int:
        """How many jobs at the head of ``victim``'s queue no other lane may take: its first one
        while its thread has not begun yet (it starts with it any moment: taking it would leave that
        lane nothing and run both lanes' jobs one after the other on one instance, as a quick first
        job on a loaded host did), none once it runs or while it waits for a thread (every thread
        runs another lane)."""
        if victim in self._started or len(self._started - self._retired) >= self._workers:
            return 0
        return 1

    def _remove(self, thief: int, victim: int, position: int) -> _Claim:
        queue = self._queues[victim]
        job = queue[position]
        del queue[position]
        self._owner[(job.node, job.session)] = thief
        if victim != thief:
            log.info("lane %s takes %s/s%s from lane %s", thief, Path(job.scenario_path).stem,
                     job.session, victim)
        return _Claim(job, self._lanes[victim])

    def retire(self, lane: int) -> list[JobSpec]:
        """``lane`` has ended: its unstarted jobs leave the board (it reports them; nobody may start
        them after), and the jobs it answers for are returned (``LaneResult.owned``)."""
        with self._lock:
            self._queues[lane].clear()
            self._running.pop(lane, None)
            self._retired.add(lane)
            return [job for job in self._jobs if self._owner[(job.node, job.session)] == lane]


class _Sharing:
    """A running job's queue on the board (execute's ``WorkSharing``): the owner takes from the
    front under the board's lock, an idle instance of the same scenario and pool steals groups from
    its tail."""

    def __init__(self, board: _Board, lane: int, node: int, pool: str) -> None:
        self._board, self._lane, self._node, self._pool = board, lane, node, pool

    def share(self, queue: list[Unit]) -> None:
        with self._board._lock:
            self._board._units[id(queue)] = (self._lane, self._node, self._pool, queue)

    def take_front(self, queue: list[Unit]) -> None:
        with self._board._lock:
            queue.pop(0)

    def steal(self, queue: list[Unit]) -> list[Unit]:
        return self._board.steal_units(self._lane, self._node, self._pool, queue)

    def retire(self, queue: list[Unit]) -> None:
        with self._board._lock:
            self._board._units.pop(id(queue), None)


class _SinkStore(ResultStore):
    """A results folder whose records go to the coordinator instead of ``records.jsonl``.

    ``execute_plan`` writes unit logs into ``root`` (the real results folder locally, a scratch
    folder on a remote worker) and calls ``append``; the record goes to ``sink``. Failed records
    that appear after an abort are the abort's own doing (the instance was closed under the unit)
    and are dropped: the unit simply runs again next time.
    """

    def __init__(self, root: Path, node: int, sink: RecordSink, abort: threading.Event) -> None:
        super().__init__(root)
        self._node = node
        self._sink = sink
        self._abort = abort
        self.appended: list[Record] = []
        """This job's records, for ``run.until``'s stopping rule (a remote worker has no records
        file)."""

    def append(self, record: Record) -> None:
        if self._abort.is_set() and record.status != "ok":
            log.info("dropping the record of %s: the batch was stopped while it ran",
                     record.unit_id)
            return
        self.appended.append(record)
        self._sink(self._node, record)

    def known_records(self) -> list[Record]:
        """Records the folder holds (locally) and this job's own: what the stopping rule may judge
        on (the analysis keeps one record per unit, so one seen twice counts once)."""
        return [*(self.records() if self.records_path.is_file() else []), *self.appended]




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
    local: LocalRun | None = None,
    halt: threading.Event | None = None,
    seats: Seats | None = None,
) -> LaneResult:
    """Run a lane's jobs on one instance at a time (see the module docstring).

    ``sink`` + ``results_roots`` (scenario index -> results folder): records go to the sink and logs
    straight into the results folders (local). Without them (remote) records and logs are collected
    into the result. ``drain`` set: start no further job. ``stop`` set: finish and record the unit
    in flight, then start nothing (the instance is closed politely). ``abort`` set: close the
    instance now (the unit in flight is dropped). ``board``: the lanes' shared board (work stealing,
    pre-boots; ``LocalExecutor``); without one the lane runs exactly its dealt jobs, in order.
    ``local``: ``run``'s additions (``LocalRun``). ``halt`` set (fail-fast): as ``stop``.
    ``seats``: every instance of the lane, pre-boots included, holds one while it lives."""
    drain = drain or threading.Event()
    abort = abort or threading.Event()
    stop = stop or threading.Event()
    if halt is not None:
        stop = _Either(stop, halt)
    shared = board is not None
    source = board if board is not None else _Board([spec], (drain, stop, abort))
    result = LaneResult(spec.index)
    capped = opener if seats is None else _capped(opener, seats, abort)
    lease = _InstanceLease(capped, abort, spec.timeout_scale,
                           fresh=local is not None and local.fresh_boot_per_unit)
    finished = threading.Event()

    def watch() -> None:  # polls briefly: the lane's end joins it, and no event can wake it then
        while not finished.is_set():
            if abort.wait(0.02):
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
                    ahead = _PreBoot(opener, upcoming, results_roots[upcoming.job.node],
                                     spec.timeout_scale, abort, listener, seats)
                    preboots.append(ahead)
                    lease.on_lend = ahead.start
            sharing = source.sharing(spec.index, claim.job.node, claim.pool) if shared else None
            if _run_one(claim, number, lease, result, sink, results_roots, scratch, abort, stop,
                        listener, (local, sharing)):
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


def _run_one(claim: _Claim, number: int, lease: _InstanceLease, result: LaneResult,
             sink: RecordSink | None,
             results_roots: Mapping[int, Path] | None, scratch: Path | None, abort: threading.Event,
             stop: threading.Event, listener: Listener,
             extra: tuple[LocalRun | None, _Sharing | None] = (None, None)) -> bool:
    """Run one job of the lane into ``result``; True when the lane must end (a stop request cut it
    short). ``extra``: ``run``'s additions (its failures end the run) and the job's share of the
    board."""
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
        _run_job(job, claim.origin, root, lease, keep, abort, stop, listener, job_result, *extra)
    except _Stopped:
        result.interrupted = True
    except HarnessError as exc:
        if extra[0] is not None:
            raise
        job_result.error, job_result.error_class = str(exc), exc.failure_class
        log.warning("batch job %s/s%s failed: %s", job.scenario.name, job.session, exc)
    finally:
        job_result.records = collected
        if results_roots is None:
            job_result.logs = collect_logs(root)
    if any(outcome.stopped for outcome in job_result.outcomes):
        result.interrupted = True
    return result.interrupted


def _run_job(job: JobSpec, spec: LaneSpec, root: Path, lease: _InstanceLease, sink: RecordSink,
             abort: threading.Event, stop: threading.Event, listener: Listener, out: JobResult,
             local: LocalRun | None = None, sharing: _Sharing | None = None) -> None:
    scenario = job.scenario
    if spec.blobs is not None:
        scenario = relocated(scenario, spec.blobs, job.artifacts)
    plan = local.plan if local is not None else build_plan(
        scenario, Path(job.scenario_path), job.profile, fvp_version=job.fvp_version)
    units = []
    for unit_id, expected in zip(job.units, job.keys, strict=True):
        unit = plan.unit(unit_id)
        if unit.key != expected:
            raise ConfigurationError(
                f"{scenario.name}/{unit_id}: its inputs changed between planning and running (key "
                f"{expected[:12]} planned, {unit.key[:12]} here); an artifact was rebuilt or "
                "edited meanwhile, or the worker sees other files at the shared path: run make "
                "again")
        units.append(unit)
    store = _SinkStore(root, job.node, sink, abort)
    label = job.scenario_path and Path(job.scenario_path).stem

    def relabel(event: Event) -> None:  # several scenarios have an s0: name sessions scenario/s0
        if (event.kind == "boot" and lease.has_instance) or (event.kind == "booted" and
                                                             lease.reused):
            # the lane's instance serves this job too: no boot
            event = replace(event, detail="reused")
        listener(replace(event, session=f"{label}/{event.session}") if event.session else event)

    wanted = None
    stored_baseline = scenario.compare is not None and bool(scenario.compare.baseline_from)
    if local is not None:
        wanted = local.wanted
    elif scenario.run.until is not None and not stored_baseline:
        # adaptive sampling: the lane skips the rounds a stopped model needs no more (not against a
        # stored baseline: a worker has no stored run to judge on, so it measures every round; the
        # report's replay spares none)
        rule = StoppingRule(scenario.compare, scenario.run.until, models=list(scenario.models),
                            builds=[b for b in scenario.builds if any(u.build == b for u in units)],
                            keys={unit.id: unit.key for unit in plan.units},
                            records=store.known_records, metrics=scenario.metrics)
        wanted = rule.wanted
    factory = lease.factory(scenario, job.profile)

    # this job's pre-booted instance keeps the name it booted under
    def early(session: str) -> _Early | None:
        name = lease.preboot_name(job)
        booted = None
        if name is None and local is not None and local.early is not None:
            booted = local.early(session)
        if booted is not None:  # booted while run's artifacts built
            lease.adopt_early(booted)
            name = booted.name
        return None if name is None else _Early(name, factory(name, root / LOGS_DIR / name), lease)

    out.ran = True
    options = ExecuteOptions(wanted=wanted, preboot=early, sharing=sharing,
                             fresh_boot_per_unit=local is not None and local.fresh_boot_per_unit)
    out.outcomes = execute_plan(plan, store, factory, units=units, stop=stop, options=options,
                                listener=relabel if local is None else listener,
                                deploy=local.deploy if local is not None else None)


class _Early(contextlib.AbstractContextManager[Target]):
    """A job's pre-booted instance as execute's ``EarlyInstance``: the session takes the name it
    booted under (its logs are that instance's folder), and the lease lends it as usual."""

    def __init__(self, name: str, lent: contextlib.AbstractContextManager[Target],
                 lease: _InstanceLease) -> None:
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
    """Lanes on threads of this process, at most ``workers`` at once (see the module docstring for
    why)."""

    name = "local"
    ships_artifacts = False

    def __init__(self, workers: int, *, opener: Opener = _open_target, steal: bool = True,
                 instances: int | None = None, shared: int | None = None) -> None:
        self.workers = max(1, workers)
        self._opener = opener
        self._steal = steal
        self.instances = instances or self.workers
        """Live instances at once in this process, pre-boots included (``-j``)."""
        self.shared = shared
        """Host-wide seats (``--max-instances``: ``run.seats``), None: no such limit."""
        self.peak = 0
        """The most instances that were live at once in the last ``run``."""

    def capacity(self) -> int:
        return self.workers

    def run(self, lanes: Sequence[LaneSpec], control: LaneControl) -> None:
        """Run every lane, sharing one board (work stealing: see the module docstring);
        ``control.on_lane_done`` is called in this thread as lanes finish. On
        KeyboardInterrupt: stop scheduling, close every instance, wait for the lanes to wind down,
        report them, re-raise."""
        if not lanes:
            return
        threads = min(self.workers, len(lanes))
        board = _Board(lanes, (control.drain, control.stop, control.abort), threads, self._steal)
        seats = Seats(self.instances, self.shared)

        sink = control.sink if control.fail_fast is None else _failing_fast(control)

        def lane_run(lane: LaneSpec) -> LaneResult:
            return run_lane(lane, sink=sink, results_roots=control.results_roots,
                            drain=control.drain, abort=control.abort, stop=control.stop,
                            listener=control.listener, opener=self._opener, board=board,
                            local=control.run, halt=control.halt, seats=seats)

        try:
            self._run(lanes, control, threads, lane_run)
        finally:
            self.peak = seats.peak

    def _run(self, lanes: Sequence[LaneSpec], control: LaneControl, threads: int,
             lane_run: Callable[[LaneSpec], LaneResult]) -> None:
        if len(lanes) == 1:  # in this thread: a signal's handler runs between two units, at once
            try:
                control.on_lane_done(lane_run(lanes[0]))
            except BaseException:
                control.drain.set()
                control.abort.set()
                raise
            return
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lane") as pool:
            futures: dict[Future[LaneResult], LaneSpec] = {
                pool.submit(lane_run, lane): lane for lane in lanes}
            pending = set(futures)
            try:
                while pending:
                    done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                    for future in done:
                        control.on_lane_done(future.result())
            except BaseException:  # Ctrl-C, or a failure that ends ``run``: close every instance
                control.drain.set()
                control.abort.set()
                for future in pending:
                    future.cancel()
                done, _ = wait(pending)
                for future in done:
                    if not future.cancelled() and future.exception() is None:
                        control.on_lane_done(future.result())
                raise


def _capped(opener: Opener, seats: Seats, abort: threading.Event) -> Opener:
    """``opener`` whose instances each hold a seat while they live: a boot waits for one (an abort
    ends the wait)."""

    def open_seated(scenario: Scenario, profile: Profile, name: str, log_dir: Path,
                    scale: float) -> contextlib.AbstractContextManager[Target]:
        seat = seats.acquire(abort.is_set, f"{scenario.name}/{name}")
        if seat is None:
            raise _Stopped()
        try:
            return seated(seat, opener(scenario, profile, name, log_dir, scale))
        except BaseException:
            seat.release()
            raise

    return open_seated


def _failing_fast(control: LaneControl) -> RecordSink:
    """``control.sink`` that also feeds the fail-fast rule: when it trips, its line goes to the
    listener and the lanes drain and halt (the units in flight finish, nothing new starts)."""
    rule = control.fail_fast
    assert rule is not None

    def sink(node: int, record: Record) -> None:
        control.sink(node, record)
        line = rule.observe(node, record)
        if line is not None:
            control.drain.set()
            control.halt.set()
            _emit(control.listener, Event("fail_fast", detail=line))

    return sink
