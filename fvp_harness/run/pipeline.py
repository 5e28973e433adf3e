"""One scenario from YAML to report: build artifacts, plan, manifest, sessions, analysis, report.

``run_scenario`` is what ``fvp-harness run`` does, as a library call; ``rebuild_report`` is what
``fvp-harness report DIR`` does: it reads only ``manifest.json`` and ``records.jsonl`` (and the VGF reports a run
fetched), so the report files it writes are byte-identical to the ones the run wrote. The batch engine
(``batch.py``) shares the steps: ``build_manifest``, ``manifest_sessions`` and ``write_report``.

Order of work, and why:

1. ask the model binary for its ``--version`` banner (no boot; fails fast with exit 2 if the binary is missing);
2. build missing or stale artifacts (``artifacts.py``; all of them with ``RunOptions.rebuild``), hash everything,
   and re-plan with those hashes so every content key is final before a single unit runs;
3. open the results folder (``store``): a plain run starts it over, ``--resume`` refuses a folder whose key
   metadata differ (other FVP, other artifacts) and skips units whose key is already stored ok;
4. write the manifest *before* running (a killed run still says what it was), run the sessions (``execute``),
   then rewrite it with the instances' argv, version, ports and ``--stat`` blocks and the end time;
5. analyse every stored record and render the report into the same folder, plus the VGF report
   (``vgf_report.report_results_folder``) when the run fetched VGF benchmark reports.

A ``stop`` event (the CLI's first Ctrl-C) lets the units in flight finish and be recorded, then ends the run as
interrupted (manifest ``interrupted``, no report, ``Interrupted`` raised: continue with ``--resume``).
"""

from __future__ import annotations

import os
import platform
import re
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fvp_harness import __version__
from fvp_harness.report.analysis import AnalysisResult, analyse, expectations_violated
from fvp_harness.run.artifacts import BUILD_TIMEOUT_S, BuildResult, BuildStep, artifact_digests, build_artifacts
from fvp_harness.errors import (
    EXIT_FAILED,
    EXIT_INFRASTRUCTURE,
    EXIT_OK,
    ConfigurationError,
    Interrupted,
)
from fvp_harness.run.execute import DeployFunction, ExecuteOptions, SessionOutcome, TargetFactory, execute_plan, utc_now
from fvp_harness.run.plan import Plan, Unit, build_plan
from fvp_harness.events import Event, Listener, null_listener
from fvp_harness.report.render import ReportContext, render_report
from fvp_harness.scenario.model import Scenario
from fvp_harness.scenario.load import LoadedScenario
from fvp_harness.run.scrape import PARSERS_VERSION
from fvp_harness.store.folder import ResultStore, results_dir_for
from fvp_harness.vgf.report import VgfComparison, report_results_folder

__all__ = [
    "ReportOutcome",
    "RunOptions",
    "RunOutcome",
    "build_manifest",
    "default_target_factory",
    "exit_code_for",
    "manifest_sessions",
    "query_fvp_version",
    "rebuild_report",
    "run_scenario",
    "select_units",
    "write_report",
]


@dataclass(frozen=True)
class RunOptions:
    """The ``run`` verb's choices. ``output_dir`` is ``-o DIR``; without it results go to
    ``<results_base>/<scenario file stem>/``."""

    output_dir: Path | None = None
    results_base: Path = Path("results")
    resume: bool = False
    fresh_boot_per_unit: bool = False
    timeout_scale: float = 1.0
    only_builds: tuple[str, ...] = ()
    only_models: tuple[str, ...] = ()
    rebuild: bool = False
    """``--rebuild``: run every artifact's build command, even when its file is up to date."""


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


def query_fvp_version(loaded: LoadedScenario, timeout_scale: float = 1.0) -> tuple[str | None, str]:
    """The model's ``--version`` (parsed with the profile's pattern) and its whole banner; (None, "") for host
    targets. The binary is resolved the way a boot resolves it, so a missing binary fails here, before any build.
    A model silent for 60 s or its whole scaled boot timeout (whichever is shorter) is left to fail at boot."""
    scenario = loaded.scenario
    if scenario.target == "host":
        return None, ""
    from fvp_harness.targets.fvp import query_model, resolve_binary, sim_environment

    program = resolve_binary(scenario.fvp.binary, loaded.profile)
    if scenario.fvp.is_sim:
        program = program[:3]
    env = sim_environment(dict(scenario.fvp.sim) if scenario.fvp.is_sim else {})
    fvp = scenario.fvp
    _status, text = query_model(program, "--version", env,
                                min(60.0, fvp.timeouts.boot * fvp.timeout_scale * timeout_scale))
    match = re.search(loaded.profile.version_pattern, text)
    lines = text.strip().splitlines()
    version = match.group(1) if match else lines[0] if lines else None
    return version, text.strip()


def default_target_factory(loaded: LoadedScenario, timeout_scale: float = 1.0) -> TargetFactory:
    """Instances from ``target.session.open_target`` (an FVP, the simulator, or this host)."""
    from fvp_harness.targets.fvp_target import open_target

    def factory(name: str, log_dir: Path) -> Any:
        return open_target(loaded, log_dir=log_dir, name=name, timeout_scale=timeout_scale)

    return factory


def select_units(plan: Plan, only_builds: Sequence[str] = (), only_models: Sequence[str] = ()) -> list[Unit]:
    """The plan's units restricted to some builds / models (in plan order); unknown names are input errors."""
    for names, known, what in ((only_builds, plan.scenario.builds, "build"),
                               (only_models, plan.scenario.models, "model")):
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ConfigurationError(f"--only-{what}: no {what} named {', '.join(unknown)} "
                                     f"(this scenario has: {', '.join(known)})")
    return [unit for unit in plan.units
            if (not only_builds or unit.build in only_builds) and (not only_models or unit.model in only_models)]


def _host() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }


def build_manifest(loaded: LoadedScenario, plan: Plan, version: str | None, banner: str, options: RunOptions,
                   builds: Sequence[BuildResult], started: str) -> dict[str, Any]:
    """The ``manifest.json`` written before any unit runs: the resolved scenario and its files, the profile, the
    model's identity (``version`` and ``banner`` from ``query_fvp_version``), every artifact's sha256, the
    ``builds`` that ran, harness/parser versions, this host, the options and the plan's sessions. ``status`` is
    ``running``; the caller fills ``sessions`` (``manifest_sessions``), ``finished`` and ``status`` afterwards."""
    scenario = loaded.scenario
    digests = artifact_digests(plan.artifacts)
    return {
        "scenario": {"name": scenario.name, "file": str(loaded.path), "resolved": scenario.model_dump(mode="json")},
        "scenario_files": [str(path) for path in loaded.files],
        "overrides": list(loaded.overrides),
        "platform": loaded.profile.name,
        "profile": loaded.profile.model_dump(mode="json"),
        "fvp": {
            "binary": scenario.fvp.binary,
            "version": version,
            "banner": banner,
            "argv": None,
            "identity": dict(plan.fvp),
            "params": dict(scenario.fvp.params),
            "args": list(scenario.fvp.args),
            "sim": dict(scenario.fvp.sim) if scenario.fvp.is_sim else {},
        },
        "artifacts": digests,
        "artifact_paths": {name: str(state.path) for name, state in sorted(plan.artifacts.items())},
        "builds": {
            name: {"id": build.id, "runner": build.runner, "sha256": digests.get(f"builds.{name}.runner"),
                   "env": dict(build.env), "args": list(build.args)}
            for name, build in scenario.builds.items()
        },
        "built": [{"name": result.step.name, "command": result.step.command, "reason": result.step.reason,
                   "seconds": round(result.seconds, 3)} for result in builds],
        "harness_version": __version__,
        "parsers_version": PARSERS_VERSION,
        "host": _host(),
        "started": started,
        "finished": None,
        "status": "running",
        "options": {"resume": options.resume, "fresh_boot_per_unit": options.fresh_boot_per_unit,
                    "timeout_scale": options.timeout_scale, "only_builds": list(options.only_builds),
                    "only_models": list(options.only_models), "rebuild": options.rebuild},
        "plan": {"units": len(plan.units), "order": scenario.run.order,
                 "sessions": {session.name: list(session.units) for session in plan.sessions}},
        "sessions": {},
    }


def manifest_sessions(outcomes: Sequence[SessionOutcome]) -> dict[str, Any]:
    """The manifest's ``sessions`` entries of these session outcomes, by instance name (``s0``, ``s0.2``): per
    booted instance its session, argv, version, ports, boot/deploy seconds, units run, ``--stat`` block, exit and
    error. Callers merge them over the entries already stored (``--resume``, ``make``)."""
    result: dict[str, Any] = {}
    for outcome in outcomes:
        for info in outcome.instances:
            meta = info.metadata
            result[info.name] = {
                "session": info.session,
                "argv": meta.get("argv"),
                "version": meta.get("version"),
                "ports": meta.get("ports"),
                "boot_seconds": info.boot_seconds,
                "deploy_seconds": info.deploy_seconds,
                "units": info.units,
                "stat": meta.get("stat"),
                "exit": meta.get("exit"),
                "error": info.error,
            }
    return result


def write_report(store: ResultStore, scenario: Scenario, manifest: Mapping[str, Any]) -> ReportOutcome:
    """Analyse every record in ``store`` and write the report files into its folder: the A/B report
    (``report.*``, the manifest as stored gives its context) and, when the folder holds fetched VGF benchmark
    reports, the VGF report (``vgf_report.*``, builds and minimum effect from the scenario's ``compare``). The
    caller holds the store's lock. The outcome's exit code counts failed units and both reports' expectations."""
    records = store.records()
    result = analyse(records, scenario.compare, scenario.metrics)
    files = dict(render_report(result, store.root, scenario.report.outputs, scenario.report.title,
                               ReportContext.from_manifest(manifest)))
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
    violated = expectations_violated(result) or (comparison is not None and comparison.violated)
    return ReportOutcome(store.root, result, files, len(failed), infra, violated,
                         exit_code_for(len(failed), infra, violated), comparison)


def rebuild_report(results_dir: Path | str) -> ReportOutcome:
    """Rebuild ``report.*`` in ``results_dir`` from its manifest and records alone (no model, no artifacts)."""
    store = ResultStore(results_dir, create=False)
    if not store.root.is_dir():
        raise ConfigurationError(f"{store.root} is not a results folder (it does not exist)")
    manifest = store.read_manifest()
    stored = manifest.get("scenario") if manifest is not None else None
    resolved = stored.get("resolved") if isinstance(stored, Mapping) else None
    if manifest is None or not isinstance(resolved, Mapping):
        raise ConfigurationError(f"{store.root} has no manifest.json with a resolved scenario; run the scenario "
                                 "first, or point at the folder a run wrote")
    try:
        scenario = Scenario.model_validate(resolved)
    except ValueError as exc:
        raise ConfigurationError(f"{store.manifest_path}: the stored scenario is not valid: {exc}") from exc
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
    store = ResultStore(results_dir_for(loaded.path, options.results_base, options.output_dir))
    with store.lock():
        version, banner = query_fvp_version(loaded, options.timeout_scale)
        phases["version"] = time.monotonic() - began
        if not options.resume:
            store.reset()  # a plain run starts the folder over (the user asked for a new measurement)
        mark = time.monotonic()
        scale = options.timeout_scale

        def log_for(step: BuildStep) -> Path:
            return store.log_path("build", step.log_name)

        def built(result: BuildResult) -> None:
            listener(Event("build", name=result.step.name, seconds=result.seconds))

        builds, states = build_artifacts(loaded, log_path_for=log_for, timeout=BUILD_TIMEOUT_S * scale,
                                         on_built=built, force=options.rebuild)
        phases["build"] = time.monotonic() - mark
        plan = build_plan(loaded, fvp_version=version, artifacts=states)
        units = select_units(plan, options.only_builds, options.only_models)
        started = utc_now()
        manifest = build_manifest(loaded, plan, version, banner, options, builds, started)
        if options.resume:
            store.check_compatible(manifest)
            previous = store.read_manifest() or {}
            manifest["started"] = previous.get("started") or started
            manifest["sessions"] = dict(previous.get("sessions") or {})
            done = store.done_keys()
        else:
            done = set()
        todo = [unit for unit in units if unit.key not in done]
        skipped = len(units) - len(todo)
        store.write_manifest(manifest)
        sessions_used = len({unit.session for unit in todo})
        listener(Event("plan", total=len(todo), skipped=skipped, sessions=sessions_used))
        mark = time.monotonic()
        outcomes: list[SessionOutcome] = []
        execute_options = ExecuteOptions(fresh_boot_per_unit=options.fresh_boot_per_unit)
        try:
            outcomes = execute_plan(plan, store, factory or default_target_factory(loaded, scale), units=todo,
                                    options=execute_options, listener=listener, deploy=deploy, stop=stop)
        except KeyboardInterrupt as exc:
            manifest["status"] = "interrupted"
            manifest["finished"] = utc_now()
            store.write_manifest(manifest)
            raise Interrupted(f"interrupted; everything measured so far is in {store.root} (continue with "
                              "--resume)") from exc
        phases["execute"] = time.monotonic() - mark
        mark = time.monotonic()
        aborted = [outcome.aborted for outcome in outcomes if outcome.aborted]
        stopped = any(outcome.stopped for outcome in outcomes)
        manifest["sessions"] = {**manifest["sessions"], **manifest_sessions(outcomes)}
        argvs = [info["argv"] for info in manifest["sessions"].values() if info.get("argv")]
        manifest["fvp"]["argv"] = argvs[0] if argvs else None
        manifest["finished"] = utc_now()
        manifest["status"] = "interrupted" if stopped else "aborted" if aborted else "complete"
        if aborted:
            manifest["aborted"] = aborted
        store.write_manifest(manifest)
        if stopped:
            done_now = len({record.unit for outcome in outcomes for record in outcome.records})
            raise Interrupted(f"stopped after the units in flight ({done_now} of {len(todo)} units run); everything "
                              f"measured so far is in {store.root} (continue with --resume)")
        listener(Event("analysis"))
        # the report reads the manifest back as stored, exactly as ``rebuild_report`` does (byte-identical files)
        report = write_report(store, loaded.scenario, store.read_manifest() or manifest)
        phases["report"] = time.monotonic() - mark
    code = exit_code_for(report.failed_units, report.infrastructure_failures, report.expectations_violated,
                         bool(aborted))
    return RunOutcome(
        results_dir=store.root, analysis=report.analysis, files=report.files, failed_units=report.failed_units,
        infrastructure_failures=report.infrastructure_failures, expectations_violated=report.expectations_violated,
        exit_code=code, vgf=report.vgf, plan=plan, units_run=len({r.unit for o in outcomes for r in o.records}),
        units_skipped=skipped, sessions=outcomes, aborted=aborted, builds=builds, wall_seconds=time.monotonic() - began,
        phase_seconds=phases,
    )

