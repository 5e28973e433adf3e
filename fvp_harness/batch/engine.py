"""``make`` over many scenarios: bring every result and report up to date, re-running only what
changed; the up-to-date rules, pools, the deal of lanes and the failure rules are in
docs/architecture.md ("One scheduler") and docs/batch.md."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from fvp_harness.batch.stale import (
    Action,
    MakeOptions,
    Node,
    Versions,
    digest,
    not_needed,
    plan_batch,
    plan_node,
    report_inputs,
    scenario_files,
    until_state,
)
from fvp_harness.errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INFRASTRUCTURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    ConfigurationError,
    HarnessError,
    Interrupted,
)
from fvp_harness.events import Event, Listener, null_listener
from fvp_harness.files import atomic_write
from fvp_harness.run.artifacts import (
    BUILD_TIMEOUT_S,
    BuildResult,
    BuildStep,
    build_artifacts,
)
from fvp_harness.run.plan import Plan, Unit
from fvp_harness.store.folder import (
    LOGS_DIR,
    REPORT_INPUTS_FILE,
    ResultStore,
)
from fvp_harness.store.records import Record

# lanes and manifest load execute, deploy and every target: only a make with work loads them
if TYPE_CHECKING:
    from fvp_harness.run.lanes import JobSpec, LaneControl, LaneResult, LaneSpec
    from fvp_harness.run.manifest import Manifest

__all__ = [
    "Action",
    "Executor",
    "MakeOptions",
    "MakeResult",
    "Node",
    "assign_lanes",
    "make",
    "plan_batch",
    "scenario_files",
]

log = logging.getLogger(__name__)



class Executor(Protocol):
    """Runs lanes (``run.lanes``): ``LocalExecutor`` or ``batch.dask.DaskExecutor``."""

    name: str
    ships_artifacts: bool

    def capacity(self) -> int: ...

    def run(self, lanes: Sequence[LaneSpec], control: LaneControl) -> None: ...


@dataclass
class MakeResult:
    """What a ``make`` did (or would do, with ``-n``) and its exit code."""

    nodes: list[Node]
    actions: list[Action]
    exit_code: int
    units_run: int = 0
    units_failed: int = 0
    units_not_run: int = 0
    """Stale units left without a record (each node's ``not_run`` says why); the exit code is 0 only
    when none."""
    reports: list[Path] = field(default_factory=list)
    lanes: int = 0
    boots: int = 0
    seconds: float = 0.0
    phase_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def nothing_to_do(self) -> bool:
        return all(action.kind == "up-to-date" for action in self.actions)


# --- discovery and planning -----------------------------------------------------------------------


# --- lanes ----------------------------------------------------------------------------------------


def _pool_key(plan: Plan, unit: Unit) -> str:
    """Which booted instances a unit may use: equal profile, FVP
    identity/params/args/knobs/firmware, timeouts."""
    fvp = plan.scenario.fvp
    return digest({
        "profile": unit.key_parts.get("profile"),
        "fvp": unit.key_parts.get("fvp"),
        "timeouts": fvp.timeouts.model_dump(mode="json"),
        "timeout_scale": fvp.timeout_scale,
        "target": plan.scenario.target,
    })[:16]


def assign_lanes(jobs: Mapping[str, Sequence[JobSpec]],
                 capacity: int) -> list[tuple[str, list[JobSpec]]]:
    """Deal each pool's jobs to lanes: a pool gets lanes in proportion to its work (at least one, at
    most one per job, about ``capacity`` in total), and jobs go longest first onto the least loaded
    lane. Deterministic."""
    total = sum(job.cost for pool in jobs.values() for job in pool) or 1
    lanes: list[tuple[str, list[JobSpec]]] = []
    for pool in sorted(jobs, key=lambda name: (-sum(job.cost for job in jobs[name]), name)):
        members = sorted(jobs[pool], key=lambda job: (-job.cost, job.node, job.session))
        share = sum(job.cost for job in members) / total
        count = max(1, min(len(members), round(capacity * share) or 1))
        loads = [0] * count
        bins: list[list[JobSpec]] = [[] for _ in range(count)]
        for job in members:
            lightest = loads.index(min(loads))
            bins[lightest].append(job)
            loads[lightest] += job.cost
        for chosen in bins:
            chosen.sort(key=lambda job: (job.node, job.session))
            lanes.append((pool, chosen))
    return lanes


def _lane_specs(nodes: Sequence[Node], capacity: int, ship: bool, scale: float) -> list[LaneSpec]:
    from fvp_harness.run.lanes import JobSpec, LaneSpec  # late: lanes load execute and every target

    jobs: dict[str, list[JobSpec]] = {}
    for node in nodes:
        if node.plan is None or not node.todo or node.loaded is None:
            continue
        plan = node.plan
        hashes = {str(state.path): state.sha256
                  for state in plan.artifacts.values() if state.sha256}
        by_session: dict[int, list[Unit]] = {}
        for unit, _reason in node.todo:
            by_session.setdefault(unit.session, []).append(unit)
        for session, units in sorted(by_session.items()):
            units.sort(key=lambda unit: unit.index)
            job = JobSpec(node.index, plan.scenario, str(node.loaded.path), plan.profile, session,
                          tuple(unit.id for unit in units), tuple(unit.key for unit in units),
                          node.fvp_version, hashes)
            jobs.setdefault(_pool_key(plan, units[0]), []).append(job)
    specs = []
    for number, (pool, members) in enumerate(assign_lanes(jobs, capacity)):
        blobs = None
        if ship:
            blobs = {}
            for job in members:
                for path, digest in job.artifacts.items():
                    if digest not in blobs:
                        blobs[digest] = Path(path).read_bytes()
        specs.append(LaneSpec(number, pool, tuple(members), scale, blobs))
    return specs


# --- running --------------------------------------------------------------------------------------


def make(
    paths: Sequence[str | Path],
    options: MakeOptions | None = None,
    *,
    executor: Executor | None = None,
    listener: Listener = null_listener,
    stop: threading.Event | None = None,
) -> MakeResult:
    """Bring every scenario's results and report up to date (see the module docstring); with
    ``dry_run`` only say what would be done. Raises ``Interrupted`` on Ctrl-C after keeping what was
    measured.

    ``stop`` (set from another thread or a signal handler, e.g. the CLI's first Ctrl-C): the units
    in flight finish and are recorded, nothing new starts, and ``Interrupted`` is raised as for a
    KeyboardInterrupt."""
    options = options or MakeOptions()
    stop = stop if stop is not None else threading.Event()
    began = time.monotonic()
    phases: dict[str, float] = {}
    versions = Versions()
    nodes = plan_batch(paths, options, versions=versions)
    phases["plan"] = time.monotonic() - began
    actions = [action for node in nodes for action in node.actions()]
    if options.dry_run or all(action.kind in ("up-to-date", "error") for action in actions):
        code = _exit_code(nodes, interrupted=False, dry_run=True)
        return MakeResult(nodes, actions, code, seconds=time.monotonic() - began,
                          phase_seconds=phases)
    if any(node.error for node in nodes) and not options.keep_going:
        _not_started(nodes, "drained", "not started: a scenario has an error (-k runs the others)")
        return MakeResult(nodes, actions, _exit_code(nodes, False, True),
                          seconds=time.monotonic() - began,
                          units_not_run=sum(len(node.not_run) for node in nodes))
    if executor is None:
        # late: lanes load execute and every target
        from fvp_harness.run.lanes import LocalExecutor, default_jobs

        executor = LocalExecutor(options.jobs or default_jobs(), shared=options.max_instances)
    # the models start on this machine: doctor's checks first, as ``run`` does
    if not executor.ships_artifacts:
        _preflight(nodes)
        if any(node.error for node in nodes) and not options.keep_going:
            _not_started(nodes, "drained",
                         "not started: a scenario failed its preflight checks (-k runs the others)")
            return MakeResult(nodes, actions, _exit_code(nodes, False, True),
                              seconds=time.monotonic() - began,
                              units_not_run=sum(len(node.not_run) for node in nodes))
    capacity = options.jobs or executor.capacity()
    result = MakeResult(nodes, actions, EXIT_OK)
    with contextlib.ExitStack() as stack:
        stores = _lock_stores(stack, nodes)
        mark = time.monotonic()
        build_failed = _build(nodes, stores, options, versions, capacity, listener, stop)
        phases["build"] = time.monotonic() - mark
        interrupted = stop.is_set()
        if not build_failed and not interrupted:
            mark = time.monotonic()
            try:
                interrupted = _execute(nodes, stores, options, versions, executor, capacity,
                                       listener, result, stop)
            except KeyboardInterrupt:
                interrupted = True
            phases["execute"] = time.monotonic() - mark
        elif build_failed:
            _not_started(nodes, "drained", "not started: a build failed (-k runs the others)")
        else:
            _not_started(nodes, "interrupted", "not started: stop requested")
        result.units_not_run = sum(len(node.not_run) for node in nodes)
        if interrupted:
            result.exit_code = EXIT_INTERRUPTED
            left = (f"; {result.units_not_run} stale units did not run" if result.units_not_run
                    else "")
            raise Interrupted(f"interrupted{left}; every finished unit is stored: run make again "
                              "to continue")
        mark = time.monotonic()
        _reports(nodes, stores, listener, result, stop)
        phases["report"] = time.monotonic() - mark
        # a signal while the reports were written: honoured, never swallowed (exit 130/143)
        if stop.is_set():
            result.exit_code = EXIT_INTERRUPTED
            raise Interrupted("stopped while the reports were written; every unit is stored: run "
                              "make again to write the reports left out")
    result.exit_code = _exit_code(nodes, False, False)
    result.seconds = time.monotonic() - began
    result.phase_seconds = phases
    return result


def _preflight(nodes: Sequence[Node]) -> None:
    """``run``'s preflight (``run.sequence.check_before_building``) for every scenario with work,
    side by side (the probes mostly wait): a failure is that scenario's configuration error (exit 2)
    before anything builds or boots. On a cluster the workers' machines hold the FVP, so their boots
    report it instead."""
    from concurrent.futures import ThreadPoolExecutor

    from fvp_harness.run.sequence import check_before_building  # late: only when something will run

    def check(node: Node) -> None:
        assert node.loaded is not None
        try:
            check_before_building(node.loaded)
        except ConfigurationError as exc:
            node.error = exc

    todo = [node for node in nodes
            if node.error is None and node.loaded is not None
            and (node.todo or node.maybe or node.builds)]
    if todo:
        with ThreadPoolExecutor(max_workers=min(4, len(todo)),
                                thread_name_prefix="preflight") as pool:
            list(pool.map(check, todo))


def _lock_stores(stack: contextlib.ExitStack, nodes: Sequence[Node]) -> dict[int, ResultStore]:
    """Open and lock the results folders that will be written (only those: a no-op writes nothing).
    """
    stores: dict[int, ResultStore] = {}
    for node in nodes:
        if node.error is None and (node.todo or node.maybe or node.builds or node.report_reason):
            store = ResultStore(node.results_dir)
            stack.enter_context(store.lock())
            stack.callback(store.release_reserve)
            stores[node.index] = store
    return stores


def _build(nodes: Sequence[Node], stores: Mapping[int, ResultStore], options: MakeOptions,
           versions: Versions, capacity: int,
           listener: Listener, stop: threading.Event | None = None) -> bool:
    """Build stale artifacts scenario by scenario (an artifact two scenarios share is built once,
    also with ``-B``), then re-plan with the final hashes. Returns True when a failure must stop the
    batch (no ``-k``). ``stop`` set ends the builds in flight (``build_artifacts``) and builds
    nothing more (the caller sees ``stop`` and reports the batch interrupted)."""
    forced: set[Path] = set()
    for node in nodes:
        if node.error is not None or not node.builds or node.loaded is None:
            continue
        store = stores[node.index]

        def log_for(step: BuildStep, store: ResultStore = store) -> Path:
            return store.log_path("build", step.log_name)

        def built(done: BuildResult, stem: str = node.stem) -> None:
            listener(Event("build", name=done.step.name, seconds=done.seconds, scenario=stem))

        if stop is not None and stop.is_set():
            return False
        try:
            node.built, _states = build_artifacts(
                node.loaded,
                log_path_for=log_for,
                jobs=capacity,
                timeout=BUILD_TIMEOUT_S * options.timeout_scale,
                on_built=built,
                force=options.always,
                already_built=forced,
                stop=stop,
            )
            forced.update(done.step.path for done in node.built)
        except Interrupted:
            return False  # the caller sees ``stop`` set
        except HarnessError as exc:
            node.error = exc
            log.warning("%s: a build failed: %s", node.stem, exc)
            if not options.keep_going:
                return True
    for node in nodes:
        if node.error is None and node.loaded is not None and (node.builds or node.maybe):
            plan_node(node, options, versions, after_build=True)  # final keys after building
    return False


def _execute(nodes: Sequence[Node], stores: Mapping[int, ResultStore], options: MakeOptions,
             versions: Versions,
             executor: Executor, capacity: int, listener: Listener, result: MakeResult,
             stop: threading.Event) -> bool:
    """Write the manifests, run the lanes, store what comes back, finish the manifests. Returns True
    when a ``stop`` request left units unrun (the batch then counts as interrupted)."""
    # late: the lanes and the manifest (execute, every target) and the stored-baseline check (the
    # analysis: pandas, scipy) load only when units run; the up-to-date check never needs them
    from fvp_harness.run.fail_fast import FailFast, Scope
    from fvp_harness.run.lanes import LaneControl
    from fvp_harness.run.manifest import BatchInfo, RunSettings
    from fvp_harness.run.sequence import keep_one_key_set, start_manifest
    from fvp_harness.run.unit import utc_now

    working = [node for node in nodes if node.error is None and node.todo]
    manifests: dict[int, Manifest] = {}
    started = utc_now()
    for node in working:
        assert node.loaded is not None and node.plan is not None
        store = stores[node.index]
        # a run's records hold one key set: a run of other keys is kept whole, a new one starts
        keep_one_key_set(store, node.plan, listener, scenario=node.stem, keep_build_logs=True)
        version, banner = versions.get(node.loaded, for_manifest=True)
        batch = BatchInfo(executor=getattr(executor, "name", "?"), jobs=capacity,
                          only=list(options.only), always=options.always)
        # compare.baseline_from: the stored run chosen, checked and pinned before any unit runs
        try:
            manifests[node.index] = start_manifest(
                node.loaded, node.plan, store, version=version, banner=banner,
                settings=RunSettings(resume=True, timeout_scale=options.timeout_scale),
                builds=node.built, started=started, units=node.selected,
                results_base=options.results_base, listener=listener,
                previous=_previous_manifest(store), keep_pin=True, batch=batch)
        except HarnessError as exc:
            node.error = exc
    working = [node for node in working if node.error is None]
    lanes = _lane_specs(working, capacity, executor.ships_artifacts, options.timeout_scale)
    result.lanes = len(lanes)
    listener(Event("plan", total=sum(len(node.todo) for node in working), sessions=len(lanes),
                   skipped=sum(len(node.selected) - len(node.todo) for node in working)))
    by_index = {node.index: node for node in nodes}
    lock = threading.Lock()
    drain = threading.Event()
    cut_short: list[int] = []
    remote = executor.ships_artifacts
    planned_lanes = {lane.index: lane for lane in lanes}
    reasons: dict[tuple[int, str], tuple[str, str]] = {}
    """(scenario index, unit id) -> (cause class, why): why a unit may have no record; the first
    cause wins."""

    def explain(node: int, units: Sequence[str], failure_class: str, why: str) -> None:
        for unit in units:
            reasons.setdefault((node, unit), (failure_class, why))

    def sink(index: int, record: Record) -> None:
        node = by_index[index]
        with lock:
            stores[index].append(record)
            node.records += 1
            node.latest[record.unit_id] = record
            if _final_failure(record, node) and not options.keep_going:
                drain.set()
        if remote:  # a local lane's execute reports its own progress
            detail = record.failure
            if detail and record.log:  # every failure line names its log
                detail = f"{detail} (log: {stores[index].root / record.log})"
            listener(Event("unit_done", session=f"{node.stem}/{record.instance}",
                           unit=record.unit_id,
                           status=record.status, seconds=record.duration_s, detail=detail))

    def on_lane_done(lane: LaneResult) -> None:
        result.boots += lane.boots
        planned = planned_lanes.pop(lane.index, None)
        if lane.interrupted:
            cut_short.append(lane.index)
        # the lane as a whole failed: its units without a record did not run
        if lane.error is not None:
            log.info("lane %s: %s", lane.index, lane.error)
            for wanted in (planned.jobs if planned else ()):
                explain(wanted.node, wanted.units, lane.error_class, lane.error)
            if not options.keep_going:
                drain.set()
        for job in lane.jobs:
            node = by_index[job.node]
            store = stores[job.node]
            for rel, data in job.logs.items():
                _import_log(store, rel, data)
            for record in job.records:
                sink(job.node, record)
            node.outcomes.extend(job.outcomes)
            if job.error is not None:
                node.job_errors.append((job.error_class or "infrastructure", job.error))
                explain(job.node, job.units, job.error_class or "infrastructure", job.error)
                if not options.keep_going:
                    drain.set()
            if any(outcome.aborted for outcome in job.outcomes):
                aborted = "; ".join(o.aborted or "" for o in job.outcomes)
                node.job_errors.append(("infrastructure", aborted))
                explain(job.node, job.units, "infrastructure",
                        f"its instance kept failing: {aborted}")
                if not options.keep_going:
                    drain.set()
        # units the lane did not get to: of the jobs it answers for (work stealing moves jobs
        # between lanes: ``owned``), so a job another lane took is explained by that lane's result,
        # after that lane's job errors
        owned = lane.owned if lane.owned is not None else (planned.jobs if planned else ())
        for wanted in owned:
            if stop.is_set() or control.abort.is_set():
                explain(wanted.node, wanted.units, "interrupted", "not started: stop requested")
            elif fast is not None and fast.tripped:
                explain(wanted.node, wanted.units, "drained", f"not started: {fast.short}")
            elif drain.is_set():
                explain(wanted.node, wanted.units, "drained",
                        "not started: an earlier failure stopped the batch " "(-k keeps going)")

    roots = {node.index: stores[node.index].root for node in working}
    fast = None if options.keep_going else FailFast({node.index: Scope(
        len({unit.model for unit, _ in node.todo}), node.plan.scenario.run.retries, node.stem,
        str(stores[node.index].root)) for node in working if node.plan is not None})
    control = LaneControl(sink=sink, results_roots=roots, on_lane_done=on_lane_done, drain=drain,
                          stop=stop, listener=listener, fail_fast=fast)
    stopped = False
    try:
        executor.run(lanes, control)
        stopped = stop.is_set() and bool(cut_short)
    finally:
        for lane in planned_lanes.values():  # lanes the executor never handed back
            for wanted in lane.jobs:
                if control.abort.is_set():
                    explain(wanted.node, wanted.units, "interrupted", "interrupted")
                else:
                    explain(wanted.node, wanted.units, "infrastructure",
                            "its lane returned no result")
        # a unit counts by its last attempt: a failure retried into success is a success
        for node in working:
            failed = [record for record in node.latest.values() if record.status != "ok"]
            node.failed = len(failed)
            node.infrastructure = sum(record.failure_class == "infrastructure" for record in failed)
            result.units_run += len(node.latest)
            result.units_failed += node.failed
            _settle(node, stores[node.index], reasons)
        interrupted = control.abort.is_set() or stopped
        for node in working:
            manifest = manifests[node.index].finish(node.outcomes, interrupted=interrupted)
            lost = sorted({why
                           for cause, why in node.not_run.values() if cause == "infrastructure"})
            # the platform gave out: the report counts them so (exit 3)
            if lost and manifest.status == "complete":
                manifest.status = "aborted"
                manifest.aborted = [*(manifest.aborted or []), *lost]
            manifest.write(stores[node.index], final=True)
    return stopped


def _settle(node: Node, store: ResultStore,
            reasons: Mapping[tuple[int, str], tuple[str, str]]) -> None:
    """Fill ``node.not_run``: the stale units that still have no ok record under their key in the
    store and no record of this make (a failed one counts as run), with why (``reasons``, else: no
    result came back)."""
    done = store.done_keys() if store.records_path.is_file() else set()
    sampling = until_state(node.plan, store.records()) \
        if node.plan is not None and store.records_path.is_file() \
        else None  # run.until: rounds its rule skipped did not need to run
    node.not_run = {
        unit.id: reasons.get((node.index, unit.id),
                             ("infrastructure", "no result came back for it"))
        for unit, _why in node.todo if unit.key not in done and unit.id not in node.latest
        and not (sampling is not None and not_needed(sampling, unit))
    }


def _not_started(nodes: Sequence[Node], failure_class: str, why: str) -> None:
    """Every stale unit of the scenarios without an error of their own did not run, for one
    reason."""
    for node in nodes:
        if node.error is None and not node.not_run:
            node.not_run = {unit.id: (failure_class, why) for unit, _reason in node.todo}


def _previous_manifest(store: ResultStore) -> Manifest | None:
    """The folder's earlier manifest, whose instances a new one carries on; one this version cannot
    read is replaced (``make`` tells stale records apart by their keys, not by the manifest)."""
    # late: the manifest model loads execute and the targets
    from fvp_harness.run.manifest import Manifest

    try:
        return Manifest.read(store)
    except HarnessError as exc:
        log.warning("%s: starting a new manifest: %s", store.root, exc)
        return None


def _final_failure(record: Record, node: Node) -> bool:
    """A failed record that no retry will follow: a test failure, or an infrastructure failure on
    the unit's last allowed attempt (execute retries those on a fresh instance ``run.retries``
    times)."""
    if record.status == "ok":
        return False
    if record.failure_class != "infrastructure" or node.plan is None:
        return True
    return record.attempt > node.plan.scenario.run.retries


def _import_log(store: ResultStore, relative: str, data: bytes) -> None:
    """A log a remote worker wrote, into the folder at the store-given path
    (``logs/<session>/<name>``)."""
    parts = relative.split("/")
    if len(parts) < 3 or parts[0] != LOGS_DIR:
        log.warning("ignoring an unexpected file from a worker: %s", relative)
        return
    store.log_path(parts[1], "__".join(parts[2:])).write_bytes(data)


def _reports(nodes: Sequence[Node], stores: Mapping[int, ResultStore], listener: Listener,
             result: MakeResult, stop: threading.Event | None = None) -> None:
    """Render the reports whose inputs changed, and store the hash of those inputs beside them. Once
    ``stop`` is set no further report starts (the one being written is finished, each file replaced
    atomically); the ones left out keep no ``report.inputs`` of their inputs, so the next ``make``
    writes them."""
    # late: the report loads pandas, scipy and matplotlib; a make with nothing to render never does
    from fvp_harness.run.manifest import Manifest
    from fvp_harness.run.reporting import write_report

    for node in nodes:
        if stop is not None and stop.is_set():
            break
        if node.error is not None or node.loaded is None or node.index not in stores:
            continue
        store = stores[node.index]
        if not (node.records or node.report_reason):
            continue
        try:
            manifest = Manifest.read(store)
        except HarnessError as exc:
            node.error = exc
            continue
        if manifest is None:  # nothing ever ran here (e.g. every unit filtered out)
            continue
        if not _report_can_list(manifest, node):
            log.info("%s: no report: %d stale units did not run", node.stem, len(node.not_run))
            continue
        resolved = node.loaded.scenario.model_dump(mode="json")
        pinned = (manifest.scenario.resolved.get("compare") or {}).get("baseline_from")
        if (pinned and isinstance(resolved.get("compare"), dict) and
            resolved["compare"].get("baseline_from")):
            # keep the stored run chosen when the units ran
            resolved["compare"]["baseline_from"] = pinned
        # e.g. only the report section changed: `report DIR` must agree
        if manifest.scenario.resolved != resolved:
            manifest.scenario.resolved = resolved
            manifest.write(store)
        listener(Event("analysis", scenario=node.stem))
        try:
            outcome = write_report(store, node.loaded.scenario, manifest)
        except HarnessError as exc:
            node.error = exc
            continue
        node.report_files = dict(outcome.files)
        node.exit_code = outcome.exit_code
        payload = {"parts": report_inputs(store, node.loaded),
                   "exit_code": max(outcome.exit_code, _not_run_code(node)),
                   "not_run": sorted(node.not_run),
                   "failed_units": outcome.failed_units,
                   "expectations_violated": outcome.expectations_violated,
                   "files": sorted(_relative_name(store, path) for path in outcome.files.values())}
        _write_json(store.report_path(REPORT_INPUTS_FILE), payload)
        result.reports.append(store.root)


def _report_can_list(manifest: Manifest, node: Node) -> bool:
    """Whether the report made with ``manifest`` lists this make's not-run units as not run
    (``write_report`` reports every unit the manifest plans, ``plan.keys``, that has no record of
    its key). Only a manifest this make wrote plans their current keys; one left by an earlier run
    (a build failed before the lanes started) does not, and a report from it would look complete:
    then no report is rendered."""
    if not node.not_run:
        return True
    keys = {unit.id: unit.key for unit, _why in node.todo}
    planned = manifest.plan.keys
    selected = set(planned) if manifest.plan.selected is None else set(manifest.plan.selected)
    return all(unit in selected and planned.get(unit) == keys.get(unit) for unit in node.not_run)


def _relative_name(store: ResultStore, path: Path) -> str:
    try:
        return Path(path).relative_to(store.root).as_posix()
    except ValueError:
        return str(path)


def _write_json(path: Path, payload: Mapping[str, Any]) -> None:
    """Replace a small JSON file atomically at a store-given path (like the report files)."""
    atomic_write(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


NOT_RUN_EXIT = {"infrastructure": EXIT_INFRASTRUCTURE, "configuration": EXIT_BAD_INPUT,
                "interrupted": EXIT_INTERRUPTED}
"""The exit code a stale unit left without a record causes, by cause class (others, e.g.
``drained``: 1)."""


def _not_run_code(node: Node) -> int:
    return max((NOT_RUN_EXIT.get(cause, EXIT_FAILED) for cause, _why in node.not_run.values()),
               default=EXIT_OK)


def _exit_code(nodes: Sequence[Node], interrupted: bool, dry_run: bool) -> int:
    """130 interrupted; else the worst of: 3 infrastructure, 2 configuration, 1 failed units or
    violated expectations (from this run's reports, or the stored ones for up-to-date scenarios), 0.
    A stale unit left without a record (``Node.not_run``) is never 0: 3 when infrastructure is the
    cause (a lost lane, worker or scheduler, an instance that kept failing), 2 a configuration
    error, 1 otherwise (a failure drained the batch)."""
    if interrupted:
        return EXIT_INTERRUPTED
    code = EXIT_OK
    for node in nodes:
        if node.error is not None:
            code = max(code, node.error.exit_code)
            continue
        code = max(code, _not_run_code(node))
        if dry_run:
            if node.report_reason is None:
                code = max(code, node.stored_exit)
            continue
        for failure_class, _text in node.job_errors:
            code = max(code, EXIT_INFRASTRUCTURE if failure_class == "infrastructure"
                       else 2 if failure_class == "configuration" else EXIT_FAILED)
        if node.infrastructure:
            code = max(code, EXIT_INFRASTRUCTURE)
        elif node.failed:
            code = max(code, EXIT_FAILED)
        code = max(code, node.exit_code if node.report_files else node.stored_exit)
    return code
