"""One scenario from YAML to report (``fvp-harness run``, ``run_scenario``), and a report rebuilt
from a results folder alone (``fvp-harness report DIR``, ``rebuild_report``). The units run in
lanes, as ``make``'s do: see docs/architecture.md, "One scheduler"."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fvp_harness.errors import (
    Interrupted,
    StorageError,
    check_names,
    is_storage_failure,
    storage_error,
)
from fvp_harness.events import Event, Listener, null_listener
from fvp_harness.report.stored.stored_compare import load_stored_baseline
from fvp_harness.run.adaptive import StoppingRule, round_builds
from fvp_harness.run.artifacts import (
    BUILD_TIMEOUT_S,
    BuildResult,
    BuildStep,
    build_artifacts,
    check_replaceable,
)
from fvp_harness.run.baseline import check_stored_baseline
from fvp_harness.run.doctor import PROBE_TIMEOUT_S
from fvp_harness.run.execute import DeployFunction, SessionOutcome
from fvp_harness.run.fail_fast import FailFast, Scope
from fvp_harness.run.instances import TargetFactory, default_target_factory, query_fvp_version
from fvp_harness.run.lanes import (
    JobSpec,
    LaneControl,
    LaneResult,
    LaneSpec,
    LocalExecutor,
    LocalRun,
)
from fvp_harness.run.manifest import Manifest, RunSettings
from fvp_harness.run.plan import ArtifactState, Plan, Unit, build_plan, why_stale
from fvp_harness.run.preboot import PreBoot
from fvp_harness.run.reporting import ReportOutcome, exit_code_for, report_unless_stopped
from fvp_harness.run.seats import shared_factory
from fvp_harness.run.sequence import archive_current, check_before_building, start_manifest
from fvp_harness.run.unit import utc_now
from fvp_harness.scenario.load import LoadedScenario
from fvp_harness.scenario.model import Scenario
from fvp_harness.store.folder import (
    DEFAULT_RESULTS_BASE,
    ResultStore,
    free_instance_name,
    results_dir_for,
)
from fvp_harness.store.records import Record

__all__ = ["RunOptions", "RunOutcome", "check_selection", "run_scenario", "select_units"]


@dataclass(frozen=True)
class RunOptions:
    """The ``run`` verb's choices. ``output_dir`` is ``-o DIR``; without it results go to
    ``<results_base>/<scenario file stem>/``."""

    output_dir: Path | None = None
    results_base: Path = DEFAULT_RESULTS_BASE
    resume: bool = False
    fresh_boot_per_unit: bool = False
    timeout_scale: float = 1.0
    only_builds: tuple[str, ...] = ()
    only_models: tuple[str, ...] = ()
    rebuild: bool = False
    """``--rebuild``: run every artifact's build command, even when its file is up to date."""
    replace: bool = False
    """``--replace``: delete the folder's current run instead of keeping it in ``runs/<id>/``."""
    early_boot: bool = True
    """Boot the sessions' first instances while the artifacts build (``run.preboot``);
    ``--no-early-boot``: boot only once the builds succeeded (a licence seat is then never taken for
    a run whose build fails)."""
    steal: bool = True
    """With ``fvp.instances`` > 1, an idle instance takes not-started units dealt to a busier one
    (``--no-steal`` keeps the plan's fixed deal: for measuring what stealing saves)."""
    keep_going: bool = False
    """``-k``: no fail-fast (``run.fail_fast``): every unit runs whatever the first ones did."""
    max_instances: int | None = None
    """``--max-instances``: host-wide seats shared with other processes (``run.seats``)."""

    def settings(self) -> RunSettings:
        """What the manifest records of these options."""
        return RunSettings(resume=self.resume, fresh_boot_per_unit=self.fresh_boot_per_unit,
                           timeout_scale=self.timeout_scale, only_builds=list(self.only_builds),
                           only_models=list(self.only_models), rebuild=self.rebuild)


@dataclass
class RunOutcome(ReportOutcome):
    """A whole run: the report outcome plus what ran and how long it took."""

    plan: Plan | None = None
    units_run: int = 0
    units_skipped: int = 0
    """Units not run because a record of their key was stored already (``--resume``)."""
    units_spared: int = 0
    """``run.until``: units the stopping rule spared (the manifest's ``plan.spared``)."""
    sessions: list[SessionOutcome] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)
    builds: list[BuildResult] = field(default_factory=list)
    wall_seconds: float = 0.0
    phase_seconds: dict[str, float] = field(default_factory=dict)


def check_selection(scenario: Scenario, only_builds: Sequence[str] = (),
                    only_models: Sequence[str] = ()) -> None:
    """``--only-build`` / ``--only-model`` name builds and models of the scenario, else
    ``UnknownName`` (exit 2).

    ``run_scenario`` calls it first, before the lock, the version query, the archive, the early boot
    and the builds: a typo must cost nothing and leave no log folder behind (nor shift the next
    boot's name to ``s0.2``)."""
    check_names("--only-build", only_builds, scenario.builds, what="build")
    check_names("--only-model", only_models, scenario.models, what="model")


def select_units(plan: Plan, only_builds: Sequence[str] = (),
                 only_models: Sequence[str] = ()) -> list[Unit]:
    """The plan's units restricted to some builds / models (in plan order); unknown names are input
    errors."""
    check_selection(plan.scenario, only_builds, only_models)
    return [unit for unit in plan.units
            if (not only_builds or unit.build in only_builds) and
            (not only_models or unit.model in only_models)]


def _stopping_rule(scenario: Scenario, plan: Plan, units: Sequence[Unit], store: ResultStore,
                   manifest: Manifest) -> Callable[[str, int], bool] | None:
    """The live ``run.until`` rule for ``execute`` (None without ``until``). With a stored baseline
    (``compare.baseline_from``) its records are judged with every round, and this run's re-run
    baseline units (the drift check, round 0) are no part of a round: the candidate samples against
    the stored samples."""
    until = scenario.run.until
    if until is None:
        return None
    pinned = manifest.scenario.resolved.get("compare") or {}
    stored = (load_stored_baseline(scenario, manifest.to_json(), store.root)
              if pinned.get("baseline_from") else None)

    def judged() -> list[Record]:
        return stored.merged(store.records()) if stored is not None else store.records()

    rule = StoppingRule(scenario.compare, until, models=list(scenario.models),
                        builds=round_builds((unit.build, unit.repetition) for unit in units),
                        keys={unit.id: unit.key for unit in plan.units}, records=judged,
                        metrics=scenario.metrics,
                        fixed=stored.records if stored is not None else ())
    return rule.wanted


def run_scenario(
    loaded: LoadedScenario,
    options: RunOptions | None = None,
    *,
    listener: Listener = null_listener,
    factory: TargetFactory | None = None,
    deploy: DeployFunction | None = None,
    stop: threading.Event | None = None,
) -> RunOutcome:
    """Run a loaded scenario end to end and write its report. Raises ``Interrupted`` on Ctrl-C after
    recording what was measured and marking the manifest interrupted, and likewise when ``stop`` was
    set before every unit ran (the units in flight then finish and are recorded). ``factory`` and
    ``deploy`` replace how instances are opened and artifacts put into them (tests use fakes)."""
    options = options or RunOptions()
    began = time.monotonic()
    phases: dict[str, float] = {}
    _refuse_early(loaded, options)
    store = ResultStore(results_dir_for(loaded.path, options.results_base, options.output_dir))
    with contextlib.ExitStack() as stack:
        stack.enter_context(store.lock())  # refuses a folder it cannot write, before anything boots
        version, banner = _preflight(loaded, options, store, factory is None)
        phases["version"] = time.monotonic() - began
        _archive_or_reset(options, store, listener)
        mark = time.monotonic()
        factory = shared_factory(factory or default_target_factory(loaded, options.timeout_scale),
                                 options.max_instances, lambda: stop is not None and stop.is_set())
        # instances boot while the artifacts build; the ones no session took are closed at the end
        early = stack.enter_context(_early_boots(loaded, options, store, factory, listener))
        builds, states = _build(loaded, options, store, listener, stop)
        phases["build"] = time.monotonic() - mark
        plan = build_plan(loaded, fvp_version=version, artifacts=states)
        units = select_units(plan, options.only_builds, options.only_models)
        stack.callback(store.release_reserve)
        manifest = start_manifest(
            loaded, plan, store, version=version, banner=banner, settings=options.settings(),
            builds=builds, started=utc_now(), units=units, results_base=options.results_base,
            listener=listener, previous=Manifest.read(store) if options.resume else None,
            resume=options.resume)
        done = _done_keys(options.resume, store, units, listener)
        wanted = _stopping_rule(loaded.scenario, plan, units, store, manifest)
        todo = [unit for unit in units if unit.key not in done]
        until = loaded.scenario.run.until  # the plan is a ceiling: count is the most rounds
        listener(Event("plan", total=len(todo), skipped=len(units) - len(todo),
                       sessions=len({unit.session for unit in todo}),
                       count=until.max_repetitions if until is not None else None))
        mark = time.monotonic()
        local = LocalRun(plan, deploy, options.fresh_boot_per_unit, wanted, early.take)
        fast = None if options.keep_going else FailFast({0: Scope(
            len({u.model for u in todo}), loaded.scenario.run.retries, root=str(store.root))})
        with _manifest_finished_on_failure(manifest, store):
            outcomes = _in_lanes(loaded, store, factory, todo, local, options.steal, listener, stop,
                                 fast)
        phases["execute"] = time.monotonic() - mark
        early.close()  # an early instance no session took is not kept booted
        mark = time.monotonic()
        aborted = [outcome.aborted for outcome in outcomes if outcome.aborted]
        _finish_manifest(manifest, store, outcomes, len(todo), stop, fast)
        listener(Event("analysis"))
        report, stored_manifest = report_unless_stopped(store, loaded.scenario, manifest, stop)
        phases["report"] = time.monotonic() - mark
    code = exit_code_for(report.failed_units, report.infrastructure_failures,
                         report.expectations_violated, bool(aborted))
    return RunOutcome(
        results_dir=store.root, analysis=report.analysis, files=report.files,
        failed_units=report.failed_units,
        infrastructure_failures=report.infrastructure_failures,
        expectations_violated=report.expectations_violated,
        exit_code=code, vgf=report.vgf, plan=plan,
        units_run=len({r.unit_id for o in outcomes for r in o.records}),
        units_skipped=len(units) - len(todo), units_spared=len(stored_manifest.plan.spared),
        sessions=outcomes, aborted=aborted, builds=builds,
        wall_seconds=time.monotonic() - began, phase_seconds=phases,
    )


def _build(loaded: LoadedScenario, options: RunOptions, store: ResultStore, listener: Listener,
           stop: threading.Event | None) -> tuple[list[BuildResult], dict[str, ArtifactState]]:
    """The artifacts built (when stale) and hashed, each build's output in ``logs/build/``."""

    def log_for(step: BuildStep) -> Path:
        return store.log_path("build", step.log_name)

    def built(result: BuildResult) -> None:
        listener(Event("build", name=result.step.name, seconds=result.seconds))

    return build_artifacts(loaded, log_path_for=log_for,
                           timeout=BUILD_TIMEOUT_S * options.timeout_scale, on_built=built,
                           force=options.rebuild, stop=stop)


def _finish_manifest(manifest: Manifest, store: ResultStore, outcomes: Sequence[SessionOutcome],
                     todo: int, stop: threading.Event | None, fast: FailFast | None) -> None:
    """The manifest's final state; a stop before every unit ran raises ``Interrupted`` (not the
    fail-fast's halt: that run is complete, its units left listed as not run)."""
    halted = fast is not None and fast.tripped
    stopped = ((any(outcome.stopped for outcome in outcomes) and not halted)
               or (stop is not None and stop.is_set()))
    manifest.finish(outcomes, interrupted=stopped).write(store, final=True)
    if stopped:
        done_now = len({record.unit_id for outcome in outcomes for record in outcome.records})
        raise Interrupted(f"stopped after the units in flight ({done_now} of {todo} units run); "
                          f"everything measured so far is in {store.root} (continue with --resume)")


def _refuse_early(loaded: LoadedScenario, options: RunOptions) -> None:
    """What is refused before the lock and any boot: an unknown selection, a file the harness did
    not make, a stored baseline's name (checked now, pinned after the archive)."""
    check_selection(loaded.scenario, options.only_builds, options.only_models)
    check_replaceable(loaded, force=options.rebuild)
    compare = loaded.scenario.compare
    if compare is not None and compare.baseline_from and not options.resume:
        check_stored_baseline(loaded, options.results_base)  # and that it holds ok baseline samples


def _preflight(loaded: LoadedScenario, options: RunOptions, store: ResultStore,
               doctor: bool) -> tuple[str | None, str]:
    """The checks before building (a damaged ``--resume`` folder, doctor's preflight when the real
    model starts), then the FVP's version and banner."""
    if options.resume:  # a damaged manifest or records file is refused now, not after the builds
        store.read_manifest()
        store.records()
    if doctor:  # the model starts here: doctor's checks first (host: fit)
        probe = min(PROBE_TIMEOUT_S, _boot_timeout(loaded, options.timeout_scale))
        check_before_building(loaded, probe)
    return query_fvp_version(loaded, options.timeout_scale)


def _archive_or_reset(options: RunOptions, store: ResultStore, listener: Listener) -> None:
    """A plain run is a new run: the folder's current one is kept, whole, in ``runs/<its id>/``
    (``--replace``: thrown away); ``--resume`` goes on with it."""
    if not options.resume and store.has_run():
        if options.replace:
            store.reset()
        else:
            archive_current(store, listener)


def _done_keys(
    resume: bool, store: ResultStore, units: Sequence[Unit], listener: Listener
) -> set[str]:
    """``--resume``: the keys stored ok already; each unit it will measure again is announced with
    why (make -n's reasons)."""
    if not resume:
        return set()
    stored = store.records()
    done = {record.key for record in stored if record.status == "ok"}
    latest = {record.unit_id: record for record in stored}
    for unit in units:
        if unit.key not in done and unit.id in latest:
            listener(Event("rerun", unit=unit.id, detail=why_stale(unit, latest[unit.id])))
    return done


@contextlib.contextmanager
def _manifest_finished_on_failure(manifest: Manifest, store: ResultStore) -> Iterator[None]:
    """A Ctrl-C marks the manifest interrupted; a crash must not leave it saying "running"."""
    try:
        yield
    except KeyboardInterrupt as exc:
        with contextlib.suppress(OSError):  # a full disk must not turn a Ctrl-C into a traceback
            manifest.finish((), interrupted=True).write(store, final=True)
        raise Interrupted(
            f"interrupted; everything measured so far is in {store.root} (continue with --resume)"
        ) from exc
    except Exception as exc:
        failure: BaseException = exc
        if isinstance(exc, OSError) and is_storage_failure(exc):
            failure = storage_error(exc.filename, exc)
        try:
            aborted = SessionOutcome("run", aborted=f"{type(failure).__name__}: {failure}")
            manifest.finish([aborted]).write(store, final=True)
        except OSError as again:  # the disk that failed holds the manifest too: say so
            if not isinstance(failure, StorageError):
                raise
            failure.message += f"; the manifest could not record it either ({again.strerror})"
        if failure is exc:
            raise
        raise failure from exc


def _in_lanes(loaded: LoadedScenario, store: ResultStore, factory: TargetFactory,
              units: Sequence[Unit], local: LocalRun, steal: bool, listener: Listener,
              stop: threading.Event | None, fast: FailFast | None = None) -> list[SessionOutcome]:
    """``make`` of one scenario on the local executor: one lane per plan session (``run.lanes``: the
    instances, stealing between them, the early boots); each record is appended to ``store`` as its
    unit finishes."""
    plan, lock = local.plan, threading.Lock()
    outcomes: list[SessionOutcome] = []

    def sink(_node: int, record: Record) -> None:
        with lock:
            store.append(record)

    def open_instance(_s: Scenario, _p: object, name: str, log_dir: Path, _scale: float) -> Any:
        return factory(name, log_dir)

    lanes: list[LaneSpec] = []
    for session in sorted({unit.session for unit in units}):
        mine = [unit for unit in units if unit.session == session]
        job = JobSpec(0, plan.scenario, str(loaded.path), plan.profile, session,
                      tuple(u.id for u in mine), tuple(u.key for u in mine))
        lanes.append(LaneSpec(len(lanes), "run", (job,)))
    def done(lane: LaneResult) -> None:
        outcomes.extend(outcome for job in lane.jobs for outcome in job.outcomes)

    control = LaneControl(sink=sink, results_roots={0: store.root}, listener=listener, run=local,
                          on_lane_done=done, stop=stop if stop is not None else threading.Event(),
                          fail_fast=fast)
    LocalExecutor(max(1, len(lanes)), opener=open_instance, steal=steal).run(lanes, control)
    return sorted(outcomes, key=lambda outcome: outcome.session)


def _boot_timeout(loaded: LoadedScenario, scale: float) -> float:
    """The scaled boot timeout: a preflight probe never waits longer than a boot would."""
    fvp = loaded.scenario.fvp
    return fvp.timeouts.boot * fvp.timeout_scale * scale


def _early_boots(loaded: LoadedScenario, options: RunOptions, store: ResultStore,
                 factory: TargetFactory, listener: Listener) -> PreBoot:
    """The sessions' first instances, booting while the artifacts build (``run.preboot``): one per
    session the plan will have, when the units to run are known without the artifacts (see that
    module for when not)."""
    scenario = loaded.scenario
    sessions: list[str] = []
    if (options.early_boot and
        not (options.resume or options.fresh_boot_per_unit or scenario.target == "host"
                                   or loaded.profile.baremetal)):
        models = [m for m in scenario.models if not options.only_models or m in options.only_models]
        groups = scenario.run.planned_repetitions * len(models)
        sessions = [f"s{index}" for index in range(min(scenario.fvp.instances, groups))]
    return PreBoot(factory, sessions, lambda name: store.log_path(name, "fvp.log").parent,
                   lambda session: free_instance_name(store.logs_dir, session)[0], listener)
