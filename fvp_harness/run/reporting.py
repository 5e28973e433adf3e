"""A run's report step: analyse every stored record, render the report files, and the exit code they
mean (``write_report``, ``rebuild_report`` for ``fvp-harness report DIR``, the ``run.until``
replay)."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fvp_harness.errors import (
    EXIT_FAILED,
    EXIT_INFRASTRUCTURE,
    EXIT_OK,
    ConfigurationError,
    Interrupted,
)
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
    UntilLike,
    planned_units,
    replay,
    round_builds,
    spared_units,
    unit_parts,
)
from fvp_harness.run.manifest import Manifest, PlanInfo
from fvp_harness.scenario.model import Scenario
from fvp_harness.store.folder import (
    ResultStore,
)
from fvp_harness.store.records import Record
from fvp_harness.vgf.report import VgfComparison, report_results_folder

__all__ = [
    "ReportOutcome",
    "exit_code_for",
    "in_plan_order",
    "rebuild_report",
    "report_unless_stopped",
    "until_sampling",
    "write_report",
]


@dataclass
class ReportOutcome:
    """What a report (re)build produced and what it means for the exit code.

    ``files``: output name -> path; the A/B report's under ``markdown``/``csv``/``json``/``png``,
    the VGF report's (when the folder holds VGF benchmark reports) under ``vgf_markdown``...
    ``expectations_violated`` covers both reports; ``vgf`` is the VGF comparison, or None."""

    results_dir: Path
    analysis: AnalysisResult
    files: dict[str, Path]
    failed_units: int
    infrastructure_failures: int
    expectations_violated: bool
    exit_code: int
    vgf: VgfComparison | None = None


def exit_code_for(failed_units: int, infrastructure: int, violated: bool,
                  aborted: bool = False) -> int:
    """3 when the platform failed (an aborted session, a unit lost to infrastructure), else 1 when a
    unit failed or an expectation was violated, else 0 (docs: README exit codes)."""
    if aborted or infrastructure:
        return EXIT_INFRASTRUCTURE
    if failed_units or violated:
        return EXIT_FAILED
    return EXIT_OK


def in_plan_order(records: Sequence[Record], plan: PlanInfo) -> list[Record]:
    """``records`` with the models in the order the plan first runs them, each model's records in
    the order they were stored (a stable sort keeps each model's execution order, which drift
    detection reads).

    Why: the report lists models in the order the analysis first meets them, and records are stored
    as units finish; with ``instances: 2`` (two launches side by side) that order is a race, and the
    same run gave its rows in another order from one ``report`` to the next. Not the scenario's
    order: ``report DIR`` reads the scenario back from ``manifest.json``, whose keys are sorted; the
    plan's unit lists keep their order."""
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
    (``report.*``, the manifest as stored gives its context) and, when the folder holds fetched VGF
    benchmark reports, the VGF report (``vgf_report.*``, builds and minimum effect from the
    scenario's ``compare``). The caller holds the store's lock. The outcome's exit code counts
    failed units and both reports' expectations.

    With ``run.until`` the units the stopping rule spared are written into the manifest
    (``plan.spared``) when they differ from what it holds: this is where a run (and ``make``)
    records them, and ``report DIR`` adds them to a run stored before they were recorded, so readers
    of the stored run never count them as not run."""
    records = in_plan_order(store.records(), manifest.plan)
    stored_keys: dict[str, set[str]] = {}
    for record in records:
        stored_keys.setdefault(record.unit_id, set()).add(record.key)
    planned = manifest.plan.planned(stored_keys) if manifest.plan.keys else None
    sampling: tuple[SamplingNote, ...] = ()
    from_stored = scenario.compare is not None and bool(scenario.compare.baseline_from)
    stored = load_stored_baseline(scenario, manifest.to_json(), store.root) if from_stored else None
    if scenario.run.until is not None and planned is not None:
        # the replay decides afresh over every selected unit: the recorded list is its copy, never
        # its input
        every = manifest.plan.model_copy(update={"spared": []}).planned(stored_keys)
        planned, sampling, spared = until_sampling(
            scenario, scenario.run.until, every, records, stored, cache=SummaryCache(store.root)
        )
        if spared != manifest.plan.spared:
            manifest.plan.spared = spared
            manifest.write(store)
    if stored is not None:  # the baseline was measured by a stored run
        result, context = analyse_with_stored_baseline(
            records, scenario, manifest.to_json(), planned, store.root, stored
        )
    else:
        result = analyse(records, scenario.compare, scenario.metrics, planned=planned)
        context = ReportContext.from_manifest(manifest.to_json())
    if sampling:
        result = dataclasses.replace(result, sampling=sampling)
    # this run's traces against the stored baseline's, the re-run units left out
    if stored is not None:
        events = stored_baseline_events(records, result, store.root, stored,
                                        warmup=scenario.run.warmup, planned=planned)
    else:
        events = compare_events(store.root, records, result, warmup=scenario.run.warmup,
                                planned=planned)
    files = dict(render_report(result, store.root, scenario.report.outputs, scenario.report.title,
                               context, events=events))
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
    # the platform (or the harness) gave out
    if result.not_run and manifest.status in ("aborted", "running"):
        infra += len(result.not_run)
    violated = expectations_violated(result) or (comparison is not None and comparison.violated)
    unfinished = len(failed) + len(result.not_run)
    return ReportOutcome(store.root, result, files, unfinished, infra, violated,
                         exit_code_for(unfinished, infra, violated), comparison)


def _unit_build(unit_id: str, model: str, repetition: int) -> str:
    """The build part of a plan unit id ``r<rep>-<build>-<model>`` whose model and repetition are
    known."""
    return unit_id[len(f"r{repetition}-"): -len(model) - 1]


def until_sampling(scenario: Scenario, until: UntilLike, planned: Mapping[str, str],
                   records: Sequence[Record],
                   stored: StoredBaseline | None = None, *, cache: SummaryCache | None = None
                   ) -> tuple[dict[str, str], tuple[SamplingNote, ...], list[str]]:
    """``run.until`` over a run's stored records: the units a report accounts for (``planned`` less
    the ones the stopping rule spared), one note per model, and the spared unit ids, all replayed
    from the records exactly as the run decided (``run.adaptive.replay``). ``stored``: the stored
    baseline of a ``compare.baseline_from`` run, judged with every round as the live rule judged it.
    ``write_report`` decides here, so ``run``, ``make`` and ``report DIR`` record the same
    ``plan.spared``."""
    builds = list(scenario.builds)
    wanted = [r for r in records if planned.get(r.unit_id) == r.key]
    # models in the order they ran (the manifest's scenario may list them in another order; the
    # report must not move)
    models = list(dict.fromkeys([*(r.model for r in wanted), *sorted(scenario.models)]))
    parts = {unit_id: unit_parts(unit_id, builds, models) for unit_id in planned}
    units = [(unit_id, part[0], part[1], planned[unit_id])
             for unit_id, part in parts.items() if part is not None]
    rounds = round_builds((_unit_build(unit_id, model, rep), rep)
                          for unit_id, model, rep, _key in units)
    judged = stored.merged(wanted) if stored is not None else wanted
    state = replay(judged, scenario.compare, until, models=models, builds=rounds,
                   metrics=scenario.metrics,
                   fixed=stored.records if stored is not None else (), cache=cache)
    measured = {r.unit_id for r in wanted}
    spared = spared_units(((unit_id, model, rep) for unit_id, model, rep, _key in units), state,
                          measured)
    chosen = planned_units(units, state, measured)
    chosen.update({unit_id: key for unit_id, key in planned.items() if parts[unit_id] is None})
    notes = tuple(SamplingNote(m.model, m.repetitions, m.reason, m.detail) for m in state.models)
    return chosen, notes, spared


def rebuild_report(results_dir: Path | str) -> ReportOutcome:
    """Rebuild ``report.*`` in ``results_dir`` from its manifest and records alone (no model, no
    artifacts)."""
    store = ResultStore(results_dir, create=False)
    if not store.root.is_dir():
        raise ConfigurationError(f"{store.root} is not a results folder (it does not exist)")
    manifest = Manifest.read(store)
    if manifest is None:
        raise ConfigurationError(f"{store.root} has no manifest.json; run the scenario first, or "
                                 "point at the folder a run wrote")
    scenario = manifest.resolved_scenario
    with store.lock():
        return write_report(store, scenario, manifest)


def report_unless_stopped(store: ResultStore, scenario: Scenario, manifest: Manifest,
                           stop: threading.Event | None) -> tuple[ReportOutcome, Manifest]:
    """The run's report, from the manifest read back as stored (as ``rebuild_report`` reads it:
    byte-identical files). A stop that comes while it is written (a first Ctrl-C, SIGTERM, SIGHUP,
    or a second one that interrupts it) is honoured, never swallowed: the manifest is marked
    ``interrupted`` and ``Interrupted`` raised (exit 130, 143). Each report file is replaced
    atomically, so one a second signal cut short is the old file or the new."""
    stored = Manifest.read(store) or manifest
    try:
        report = write_report(store, scenario, stored)
    except KeyboardInterrupt as exc:
        _mark_interrupted(store, stored)
        raise Interrupted("interrupted while the report was written; everything measured is in "
                          f"{store.root} (`fvp-harness report {store.root}` writes the "
                          "report)") from exc
    if stop is not None and stop.is_set():
        _mark_interrupted(store, stored)
        raise Interrupted(f"stopped while the report was written (it is complete: {store.root})")
    return report, stored


def _mark_interrupted(store: ResultStore, manifest: Manifest) -> None:
    """The stored manifest's status becomes ``interrupted`` (what the report phase was stopped in);
    a disk that refuses it leaves it as it was (the report phase keeps no reserve: the final status
    was written already)."""
    manifest.status = "interrupted"
    with contextlib.suppress(OSError):
        manifest.write(store)
