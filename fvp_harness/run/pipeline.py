"""One scenario from YAML to report: build artifacts, plan, manifest, sessions, analysis, report.

``run_scenario`` is what ``fvp-harness run`` does, as a library call; ``rebuild_report`` is what
``fvp-harness report DIR`` does: it reads only ``manifest.json`` and ``records.jsonl`` (and the VGF reports a run
fetched), so the report files it writes are byte-identical to the ones the run wrote. The batch engine
(``batch.engine``) shares the steps: ``run.manifest.Manifest`` (start, continue, finish) and ``write_report``.

Order of work, and why:

1. the preflight, ``doctor``'s own checks (``run.doctor.preflight``: ``--version``, ``--list-params``, every ``-C``
   parameter, firmware files; no boot): a deterministic start failure is exit 2 before anything is built, archived
   or booted, and never retried; then the model's ``--version`` banner for the manifest;
2. build missing or stale artifacts (``run.artifacts``; all of them with ``RunOptions.rebuild``), hash everything,
   and re-plan with those hashes so every content key is final before a single unit runs;
3. open the results folder (``store``): a plain run starts it over, ``--resume`` refuses a folder whose key
   metadata differ (other FVP, other artifacts) and skips units whose key is already stored ok;
4. write the manifest *before* running (a killed run still says what it was), run the sessions (``execute``),
   then rewrite it with the instances' argv, version, ports and ``--stat`` blocks and the end time;
5. analyse every stored record and render the report into the same folder, plus the VGF report
   (``vgf.report.report_results_folder``) when the run fetched VGF benchmark reports.

A ``stop`` event (the CLI's first Ctrl-C) lets the units in flight finish and be recorded, then ends the run as
interrupted (manifest ``interrupted``, no report, ``Interrupted`` raised: continue with ``--resume``); one that
comes while the report is written is honoured too (the report is finished, the manifest becomes ``interrupted``,
``Interrupted`` raised), never swallowed into a success. The final manifest is written with the room the store kept
for it (``ResultStore.reserve_space``), so a disk that filled up during the run still records how it ended.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fvp_harness.errors import (
    EXIT_FAILED,
    EXIT_INFRASTRUCTURE,
    EXIT_OK,
    ConfigurationError,
    Interrupted,
    StorageError,
    check_names,
    is_storage_failure,
    storage_error,
)
from fvp_harness.events import Event, Listener, null_listener
from fvp_harness.report.rendering.context import ReportContext
from fvp_harness.report.rendering.render import render_report
from fvp_harness.report.stats.analysis import analyse
from fvp_harness.report.stats.etdump_events import compare_events
from fvp_harness.report.stats.findings import SamplingNote
from fvp_harness.report.stats.result import AnalysisResult, expectations_violated
from fvp_harness.report.stored.stored_compare import (
    StoredBaseline,
    analyse_with_stored_baseline,
    load_stored_baseline,
    stored_baseline_events,
)
from fvp_harness.report.stored.summary_cache import SummaryCache
from fvp_harness.run.adaptive import (
    StoppingRule,
    UntilLike,
    planned_units,
    replay,
    round_builds,
    spared_units,
    unit_parts,
)
from fvp_harness.run.artifacts import BUILD_TIMEOUT_S, BuildResult, BuildStep, build_artifacts, check_replaceable
from fvp_harness.run.baseline import pin_stored_baseline
from fvp_harness.run.doctor import PROBE_TIMEOUT_S, preflight
from fvp_harness.run.execute import DeployFunction, ExecuteOptions, SessionOutcome, execute_plan, utc_now
from fvp_harness.run.instances import TargetFactory, default_target_factory, query_fvp_version
from fvp_harness.run.manifest import Manifest, PlanInfo, RunSettings
from fvp_harness.run.plan import Plan, Unit, build_plan, why_stale
from fvp_harness.run.preboot import PreBoot
from fvp_harness.scenario.fit import refuse_misfits
from fvp_harness.scenario.load import LoadedScenario
from fvp_harness.scenario.model import Scenario
from fvp_harness.store.folder import (
    DEFAULT_RESULTS_BASE,
    ResultStore,
    StoredRun,
    free_instance_name,
    results_dir_for,
)
from fvp_harness.store.locate import find_run
from fvp_harness.store.records import Record
from fvp_harness.vgf.report import VgfComparison, report_results_folder

__all__ = [
    "ReportOutcome",
    "RunOptions",
    "RunOutcome",
    "check_selection",
    "exit_code_for",
    "in_plan_order",
    "rebuild_report",
    "run_scenario",
    "select_units",
    "until_sampling",
    "write_report",
]


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
    """Boot the sessions' first instances while the artifacts build (``run.preboot``); ``--no-early-boot``: boot
    only once the builds succeeded (a licence seat is then never taken for a run whose build fails)."""
    steal: bool = True
    """With ``fvp.instances`` > 1, an idle instance takes not-started units dealt to a busier one (``--no-steal``
    keeps the plan's fixed deal: for measuring what stealing saves)."""

    def settings(self) -> RunSettings:
        """What the manifest records of these options."""
        return RunSettings(resume=self.resume, fresh_boot_per_unit=self.fresh_boot_per_unit,
                           timeout_scale=self.timeout_scale, only_builds=list(self.only_builds),
                           only_models=list(self.only_models), rebuild=self.rebuild)


@dataclass
class ReportOutcome:
    """What a report (re)build produced and what it means for the exit code.

    ``files``: output name -> path; the A/B report's under ``markdown``/``csv``/``json``/``png``, the VGF
    report's (when the folder holds VGF benchmark reports) under ``vgf_markdown``... ``expectations_violated``
    covers both reports; ``vgf`` is the VGF comparison, or None."""

    results_dir: Path
    analysis: AnalysisResult
    files: dict[str, Path]
    failed_units: int
    infrastructure_failures: int
    expectations_violated: bool
    exit_code: int
    vgf: VgfComparison | None = None


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


def exit_code_for(failed_units: int, infrastructure: int, violated: bool, aborted: bool = False) -> int:
    """3 when the platform failed (an aborted session, a unit lost to infrastructure), else 1 when a unit failed
    or an expectation was violated, else 0 (docs: README exit codes)."""
    if aborted or infrastructure:
        return EXIT_INFRASTRUCTURE
    if failed_units or violated:
        return EXIT_FAILED
    return EXIT_OK


def check_selection(scenario: Scenario, only_builds: Sequence[str] = (), only_models: Sequence[str] = ()) -> None:
    """``--only-build`` / ``--only-model`` name builds and models of the scenario, else ``UnknownName`` (exit 2).

    ``run_scenario`` calls it first, before the lock, the version query, the archive, the early boot and the
    builds: a typo must cost nothing and leave no log folder behind (nor shift the next boot's name to ``s0.2``)."""
    check_names("--only-build", only_builds, scenario.builds, what="build")
    check_names("--only-model", only_models, scenario.models, what="model")


def select_units(plan: Plan, only_builds: Sequence[str] = (), only_models: Sequence[str] = ()) -> list[Unit]:
    """The plan's units restricted to some builds / models (in plan order); unknown names are input errors."""
    check_selection(plan.scenario, only_builds, only_models)
    return [unit for unit in plan.units
            if (not only_builds or unit.build in only_builds) and (not only_models or unit.model in only_models)]


def in_plan_order(records: Sequence[Record], plan: PlanInfo) -> list[Record]:
    """``records`` with the models in the order the plan first runs them, each model's records in the order they
    were stored (a stable sort keeps each model's execution order, which drift detection reads).

    Why: the report lists models in the order the analysis first meets them, and records are stored as units
    finish; with ``instances: 2`` (two launches side by side) that order is a race, and the same run gave its rows
    in another order from one ``report`` to the next. Not the scenario's order: ``report DIR`` reads the scenario
    back from ``manifest.json``, whose keys are sorted; the plan's unit lists keep their order."""
    position: dict[str, int] = {}
    for name in sorted(plan.sessions):
        for unit_id in plan.sessions[name]:
            position.setdefault(unit_id, len(position))
    first: dict[str, int] = {}
    for record in records:
        at = position.get(record.unit_id)
        if at is not None:
            first[record.model] = min(first.get(record.model, at), at)
    return sorted(records, key=lambda record: first.get(record.model, len(position)))


def write_report(store: ResultStore, scenario: Scenario, manifest: Manifest) -> ReportOutcome:
    """Analyse every record in ``store`` and write the report files into its folder: the A/B report
    (``report.*``, the manifest as stored gives its context) and, when the folder holds fetched VGF benchmark
    reports, the VGF report (``vgf_report.*``, builds and minimum effect from the scenario's ``compare``). The
    caller holds the store's lock. The outcome's exit code counts failed units and both reports' expectations.

    With ``run.until`` the units the stopping rule spared are written into the manifest (``plan.spared``) when
    they differ from what it holds: this is where a run (and ``make``) records them, and ``report DIR`` adds them to
    a run stored before they were recorded, so readers of the stored run never count them as not run."""
    records = in_plan_order(store.records(), manifest.plan)
    stored_keys: dict[str, set[str]] = {}
    for record in records:
        stored_keys.setdefault(record.unit_id, set()).add(record.key)
    planned = manifest.plan.planned(stored_keys) if manifest.plan.keys else None
    sampling: tuple[SamplingNote, ...] = ()
    from_stored = scenario.compare is not None and bool(scenario.compare.baseline_from)
    stored = load_stored_baseline(scenario, manifest.to_json(), store.root) if from_stored else None
    if scenario.run.until is not None and planned is not None:
        # the replay decides afresh over every selected unit: the recorded list is its copy, never its input
        every = manifest.plan.model_copy(update={"spared": []}).planned(stored_keys)
        planned, sampling, spared = until_sampling(scenario, scenario.run.until, every, records, stored,
                                                   cache=SummaryCache(store.root))
        if spared != manifest.plan.spared:
            manifest.plan.spared = spared
            manifest.write(store)
    if stored is not None:  # the baseline was measured by a stored run
        result, context = analyse_with_stored_baseline(records, scenario, manifest.to_json(), planned, store.root,
                                                       stored)
    else:
        result = analyse(records, scenario.compare, scenario.metrics, planned=planned)
        context = ReportContext.from_manifest(manifest.to_json())
    if sampling:
        result = dataclasses.replace(result, sampling=sampling)
    if stored is not None:  # this run's traces against the stored baseline's, the re-run units left out
        events = stored_baseline_events(records, result, store.root, stored, warmup=scenario.run.warmup,
                                        planned=planned)
    else:
        events = compare_events(store.root, records, result, warmup=scenario.run.warmup, planned=planned)
    files = dict(render_report(result, store.root, scenario.report.outputs, scenario.report.title, context,
                               events=events))
    compare = scenario.compare
    spec: dict[str, Any] = ({"baseline": compare.baseline, "candidate": compare.candidate,
                             "min_effect": compare.min_effect} if compare is not None else {})
    vgf = report_results_folder(store.root, records, outputs=scenario.report.outputs, **spec)
    comparison = None
    if vgf is not None:
        comparison, written = vgf
        files.update({f"vgf_{name}": path for name, path in written.items()})
    failed = list(result.failed_units)
    infra = sum(1 for unit in failed if unit.failure_class == "infrastructure")
    if result.not_run and manifest.status in ("aborted", "running"):  # the platform (or the harness) gave out
        infra += len(result.not_run)
    violated = expectations_violated(result) or (comparison is not None and comparison.violated)
    unfinished = len(failed) + len(result.not_run)
    return ReportOutcome(store.root, result, files, unfinished, infra, violated,
                         exit_code_for(unfinished, infra, violated), comparison)


def _unit_build(unit_id: str, model: str, repetition: int) -> str:
    """The build part of a plan unit id ``r<rep>-<build>-<model>`` whose model and repetition are known."""
    return unit_id[len(f"r{repetition}-"): -len(model) - 1]


def until_sampling(scenario: Scenario, until: UntilLike, planned: Mapping[str, str], records: Sequence[Record],
                   stored: StoredBaseline | None = None, *, cache: SummaryCache | None = None
                   ) -> tuple[dict[str, str], tuple[SamplingNote, ...], list[str]]:
    """``run.until`` over a run's stored records: the units a report accounts for (``planned`` less the ones the
    stopping rule spared), one note per model, and the spared unit ids, all replayed from the records exactly as
    the run decided (``run.adaptive.replay``). ``stored``: the stored baseline of a ``compare.baseline_from`` run,
    judged with every round as the live rule judged it. ``write_report`` decides here, so ``run``, ``make`` and
    ``report DIR`` record the same ``plan.spared``."""
    builds = list(scenario.builds)
    wanted = [r for r in records if planned.get(r.unit_id) == r.key]
    # models in the order they ran (the manifest's scenario may list them in another order; the report must not move)
    models = list(dict.fromkeys([*(r.model for r in wanted), *sorted(scenario.models)]))
    parts = {unit_id: unit_parts(unit_id, builds, models) for unit_id in planned}
    units = [(unit_id, part[0], part[1], planned[unit_id]) for unit_id, part in parts.items() if part is not None]
    rounds = round_builds((_unit_build(unit_id, model, rep), rep) for unit_id, model, rep, _key in units)
    judged = stored.merged(wanted) if stored is not None else wanted
    state = replay(judged, scenario.compare, until, models=models, builds=rounds, metrics=scenario.metrics,
                   fixed=stored.records if stored is not None else (), cache=cache)
    measured = {r.unit_id for r in wanted}
    spared = spared_units(((unit_id, model, rep) for unit_id, model, rep, _key in units), state, measured)
    chosen = planned_units(units, state, measured)
    chosen.update({unit_id: key for unit_id, key in planned.items() if parts[unit_id] is None})
    notes = tuple(SamplingNote(m.model, m.repetitions, m.reason, m.detail) for m in state.models)
    return chosen, notes, spared


def _stopping_rule(scenario: Scenario, plan: Plan, units: Sequence[Unit], store: ResultStore,
                   stored: StoredBaseline | None) -> Callable[[str, int], bool] | None:
    """The live ``run.until`` rule for ``execute`` (None without ``until``). With a stored baseline
    (``compare.baseline_from``) its records are judged with every round, and this run's re-run baseline units
    (the drift check, round 0) are no part of a round: the candidate samples against the stored samples."""
    until = scenario.run.until
    if until is None:
        return None

    def judged() -> list[Record]:
        return stored.merged(store.records()) if stored is not None else store.records()

    rule = StoppingRule(scenario.compare, until, models=list(scenario.models),
                        builds=round_builds((unit.build, unit.repetition) for unit in units),
                        keys={unit.id: unit.key for unit in plan.units}, records=judged,
                        metrics=scenario.metrics, fixed=stored.records if stored is not None else ())
    return rule.wanted


def rebuild_report(results_dir: Path | str) -> ReportOutcome:
    """Rebuild ``report.*`` in ``results_dir`` from its manifest and records alone (no model, no artifacts)."""
    store = ResultStore(results_dir, create=False)
    if not store.root.is_dir():
        raise ConfigurationError(f"{store.root} is not a results folder (it does not exist)")
    manifest = Manifest.read(store)
    if manifest is None:
        raise ConfigurationError(f"{store.root} has no manifest.json; run the scenario first, or point at the "
                                 "folder a run wrote")
    scenario = manifest.resolved_scenario
    with store.lock():
        return write_report(store, scenario, manifest)


def run_scenario(
    loaded: LoadedScenario,
    options: RunOptions | None = None,
    *,
    listener: Listener = null_listener,
    factory: TargetFactory | None = None,
    deploy: DeployFunction | None = None,
    stop: threading.Event | None = None,
) -> RunOutcome:
    """Run a loaded scenario end to end and write its report (see the module docstring). Raises
    ``Interrupted`` on Ctrl-C after recording what was measured and marking the manifest interrupted, and
    likewise when ``stop`` was set before every unit ran (the units in flight then finish and are recorded).

    ``factory`` and ``deploy`` replace how instances are opened and artifacts put into them (tests use fakes)."""
    options = options or RunOptions()
    began = time.monotonic()
    phases: dict[str, float] = {}
    check_selection(loaded.scenario, options.only_builds, options.only_models)
    check_replaceable(loaded, force=options.rebuild)  # a file the harness did not make: refused before any boot
    results_dir = results_dir_for(loaded.path, options.results_base, options.output_dir)
    compare = loaded.scenario.compare
    if compare is not None and compare.baseline_from and not options.resume:
        # the stored baseline's name is checked before anything is built or booted (pinned later, after the archive)
        find_run(compare.baseline_from, results_base=options.results_base, scenario_folder=results_dir)
    store = ResultStore(results_dir)
    with contextlib.ExitStack() as stack:
        stack.enter_context(store.lock())  # refuses a folder it cannot write, before anything boots
        if options.resume:  # a damaged manifest or records file is refused now, not after the builds
            store.read_manifest()
            store.records()
        if factory is None and loaded.scenario.target != "host":  # the model will start: doctor's checks first
            preflight(loaded.scenario, loaded.profile, base_dir=loaded.directory,
                      probe_timeout=min(PROBE_TIMEOUT_S, _boot_timeout(loaded, options.timeout_scale)))
        elif factory is None:  # target: host asks no model; its programs must still fit this host
            refuse_misfits(loaded.scenario, loaded.profile, when="nothing was built or run")
        version, banner = query_fvp_version(loaded, options.timeout_scale)
        phases["version"] = time.monotonic() - began
        archived: Path | None = None
        if not options.resume and store.has_run():
            if options.replace:  # the user asked to throw the current run away
                store.reset()
            else:  # a plain run is a new run: the previous one is kept, whole, in runs/<its id>/
                archived = store.archive(StoredRun.of(store.root, current=True).run_id)
                listener(Event("archived", name=str(archived)))
        mark = time.monotonic()
        scale = options.timeout_scale
        factory = factory or default_target_factory(loaded, scale)
        # instances boot while the artifacts build; the ones no session took are closed when execution ends
        early = stack.enter_context(_early_boots(loaded, options, store, factory, listener))

        def log_for(step: BuildStep) -> Path:
            return store.log_path("build", step.log_name)

        def built(result: BuildResult) -> None:
            listener(Event("build", name=result.step.name, seconds=result.seconds))

        builds, states = build_artifacts(loaded, log_path_for=log_for, timeout=BUILD_TIMEOUT_S * scale,
                                         on_built=built, force=options.rebuild, stop=stop)
        phases["build"] = time.monotonic() - mark
        plan = build_plan(loaded, fvp_version=version, artifacts=states)
        units = select_units(plan, options.only_builds, options.only_models)
        started = utc_now()
        manifest = Manifest.start(loaded, plan, version, banner, options.settings(), builds, started, units=units)
        if options.resume:
            store.check_compatible(manifest.to_json())
            manifest.continue_from(Manifest.read(store))
            stored = store.records()
            done = {record.key for record in stored if record.status == "ok"}
            latest = {record.unit_id: record for record in stored}
            for unit in units:  # what --resume will measure again, and why (make -n's reasons)
                if unit.key not in done and unit.id in latest:
                    listener(Event("rerun", unit=unit.id, detail=why_stale(unit, latest[unit.id])))
        else:
            done = set()
        pinned = pin_stored_baseline(manifest, store, options.results_base, resume=options.resume,
                                     listener=listener)
        source = (load_stored_baseline(loaded.scenario, manifest.to_json(), store.root)
                  if pinned is not None and loaded.scenario.run.until is not None else None)
        wanted = _stopping_rule(loaded.scenario, plan, units, store, source)
        todo = [unit for unit in units if unit.key not in done]
        skipped = len(units) - len(todo)
        stack.callback(store.release_reserve)
        store.reserve_space(manifest.to_json())  # room for the final status on a disk that fills up meanwhile
        manifest.write(store)
        sessions_used = len({unit.session for unit in todo})
        until = loaded.scenario.run.until  # the plan is then a ceiling: count is the most rounds the rule may run
        listener(Event("plan", total=len(todo), skipped=skipped, sessions=sessions_used,
                       count=until.max_repetitions if until is not None else None))
        mark = time.monotonic()
        outcomes: list[SessionOutcome] = []
        execute_options = ExecuteOptions(fresh_boot_per_unit=options.fresh_boot_per_unit,
                                         wanted=wanted, steal=options.steal, preboot=early.take)
        try:
            outcomes = execute_plan(plan, store, factory, units=todo,
                                    options=execute_options, listener=listener, deploy=deploy, stop=stop)
        except KeyboardInterrupt as exc:
            with contextlib.suppress(OSError):  # a full disk must not turn a Ctrl-C into a traceback
                manifest.finish((), interrupted=True).write(store, final=True)
            raise Interrupted(f"interrupted; everything measured so far is in {store.root} (continue with "
                              "--resume)") from exc
        except Exception as exc:  # a crashed run must not leave its manifest saying "running"
            failure: BaseException = exc
            if isinstance(exc, OSError) and is_storage_failure(exc):
                failure = storage_error(exc.filename, exc)
            try:
                manifest.finish([SessionOutcome("run", aborted=f"{type(failure).__name__}: {failure}")]).write(
                    store, final=True)
            except OSError as again:  # the disk that failed holds the manifest too: say so where it can be read
                if not isinstance(failure, StorageError):
                    raise
                failure.message += f"; the manifest could not record it either ({again.strerror})"
            if failure is exc:
                raise
            raise failure from exc
        phases["execute"] = time.monotonic() - mark
        early.close()  # an early instance no session took (its session had nothing to run) is not kept booted
        mark = time.monotonic()
        aborted = [outcome.aborted for outcome in outcomes if outcome.aborted]
        stopped = any(outcome.stopped for outcome in outcomes) or (stop is not None and stop.is_set())
        manifest.finish(outcomes, interrupted=stopped).write(store, final=True)
        if stopped:
            done_now = len({record.unit_id for outcome in outcomes for record in outcome.records})
            raise Interrupted(f"stopped after the units in flight ({done_now} of {len(todo)} units run); everything "
                              f"measured so far is in {store.root} (continue with --resume)")
        listener(Event("analysis"))
        report, stored_manifest = _report_unless_stopped(store, loaded.scenario, manifest, stop)
        phases["report"] = time.monotonic() - mark
    code = exit_code_for(report.failed_units, report.infrastructure_failures, report.expectations_violated,
                         bool(aborted))
    return RunOutcome(
        results_dir=store.root, analysis=report.analysis, files=report.files, failed_units=report.failed_units,
        infrastructure_failures=report.infrastructure_failures, expectations_violated=report.expectations_violated,
        exit_code=code, vgf=report.vgf, plan=plan, units_run=len({r.unit_id for o in outcomes for r in o.records}),
        units_skipped=skipped, units_spared=len(stored_manifest.plan.spared), sessions=outcomes, aborted=aborted,
        builds=builds, wall_seconds=time.monotonic() - began,
        phase_seconds=phases,
    )


def _report_unless_stopped(store: ResultStore, scenario: Scenario, manifest: Manifest,
                           stop: threading.Event | None) -> tuple[ReportOutcome, Manifest]:
    """The run's report, from the manifest read back as stored (as ``rebuild_report`` reads it: byte-identical
    files). A stop that comes while it is written (a first Ctrl-C, SIGTERM, SIGHUP, or a second one that interrupts
    it) is honoured, never swallowed: the manifest is marked ``interrupted`` and ``Interrupted`` raised (exit 130,
    143). Each report file is replaced atomically, so one a second signal cut short is the old file or the new."""
    stored = Manifest.read(store) or manifest
    try:
        report = write_report(store, scenario, stored)
    except KeyboardInterrupt as exc:
        _mark_interrupted(store, stored)
        raise Interrupted(f"interrupted while the report was written; everything measured is in {store.root} "
                          f"(`fvp-harness report {store.root}` writes the report)") from exc
    if stop is not None and stop.is_set():
        _mark_interrupted(store, stored)
        raise Interrupted(f"stopped while the report was written (it is complete: {store.root})")
    return report, stored


def _mark_interrupted(store: ResultStore, manifest: Manifest) -> None:
    """The stored manifest's status becomes ``interrupted`` (what the report phase was stopped in); a disk that
    refuses it leaves it as it was (the report phase keeps no reserve: the final status was written already)."""
    manifest.status = "interrupted"
    with contextlib.suppress(OSError):
        manifest.write(store)


def _boot_timeout(loaded: LoadedScenario, scale: float) -> float:
    """The scaled boot timeout: a preflight probe never waits longer than a boot would."""
    fvp = loaded.scenario.fvp
    return fvp.timeouts.boot * fvp.timeout_scale * scale


def _early_boots(loaded: LoadedScenario, options: RunOptions, store: ResultStore, factory: TargetFactory,
                 listener: Listener) -> PreBoot:
    """The sessions' first instances, booting while the artifacts build (``run.preboot``): one per session the
    plan will have, when the units to run are known without the artifacts (see that module for when not)."""
    scenario = loaded.scenario
    sessions: list[str] = []
    if options.early_boot and not (options.resume or options.fresh_boot_per_unit or scenario.target == "host"
                                   or loaded.profile.baremetal):
        models = [m for m in scenario.models if not options.only_models or m in options.only_models]
        groups = scenario.run.planned_repetitions * len(models)
        sessions = [f"s{index}" for index in range(min(scenario.fvp.instances, groups))]
    return PreBoot(factory, sessions, lambda name: store.log_path(name, "fvp.log").parent,
                   lambda session: free_instance_name(store.logs_dir, session)[0], listener)
