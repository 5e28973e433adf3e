"""History across stored runs: one row per run, a step detector per model, and the table, CSV, JSON
and charts.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import itertools
import json
import math
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fvp_harness.errors import ConfigurationError, check_names
from fvp_harness.files import atomic_write
from fvp_harness.report import format as fmt
from fvp_harness.report.format import markdown_table
from fvp_harness.report.rendering.cells import NPU_CYCLE_METRICS
from fvp_harness.report.rendering.json_report import jsonable
from fvp_harness.report.rendering.junit import Case, Suite
from fvp_harness.report.rendering.report_files import save_png
from fvp_harness.report.stats.frames import to_frame
from fvp_harness.report.stats.samples import select_latest
from fvp_harness.report.stats.spec import Settings
from fvp_harness.report.stats.summary import summarise
from fvp_harness.report.stored.stored_compare import LoadedRun, comparable, dotted_get, load_run
from fvp_harness.report.stored.summary_cache import cached_run_points
from fvp_harness.scenario.metrics import MEMORY_METRICS
from fvp_harness.store.folder import ResultStore
from fvp_harness.store.records import Record

__all__ = [
    "HISTORY_FILES",
    "HISTORY_FORMAT_VERSION",
    "History",
    "Point",
    "RunRow",
    "Step",
    "bisect_command",
    "chart_name",
    "detect_steps",
    "history_from_runs",
    "history_suite",
    "load_history",
    "point_cell",
    "render_chart",
    "render_csv",
    "render_history",
    "render_json",
    "render_markdown",
    "step_bisect",
    "step_penalty",
]

HISTORY_FORMAT_VERSION = 1
"""Version of ``history.json``."""
Z_MIN = 3.0
"""A fitted step counts only when the two levels differ by at least this many standard errors."""


@dataclass(frozen=True)
class RunRow:
    """One stored run: id, git commit and branch, start time, host, status."""

    run_id: str
    commit: str | None
    branch: str | None
    started: str | None
    host: str | None
    status: str | None
    source_commit: str | None = None
    """The commit the tracked build's runner was built from (the manifest's
    ``builds.X.source.commit``)."""

    @property
    def label(self) -> str:
        """What a chart's x axis shows: the short commit, else the run id."""
        return self.commit[:7] if self.commit else self.run_id


@dataclass(frozen=True)
class Point:
    """One model in one run: the metric's median with its CI and sample count, and the NPU cycles'
    median; None where the run did not measure it."""

    median: float | None
    ci_low: float | None
    ci_high: float | None
    n: int = 0
    npu_cycles: float | None = None


@dataclass(frozen=True)
class Step:
    """A change of level in one model's series: the new level starts at run ``index`` (``run_id``).
    ``change_pct`` is ``100 * (after / before - 1)``; ``kind`` regression (up), improvement (down)
    or shift (smaller than the threshold or not significant); ``in_effect``: a regression whose
    level still holds at the newest run."""

    model: str
    index: int
    run_id: str
    before: float
    after: float
    change_pct: float
    z: float
    kind: str
    in_effect: bool = False


@dataclass(frozen=True)
class History:
    """Everything ``render_history`` shows: the runs, per model its points (one per run) and fitted
    levels, the steps, and what was tracked."""

    scenario: str
    build: str
    metric: str
    unit: str
    threshold: float
    runs: tuple[RunRow, ...]
    points: Mapping[str, tuple[Point, ...]]
    levels: Mapping[str, tuple[float | None, ...]]
    steps: tuple[Step, ...]
    npu_metric: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    scenario_file: str | None = None
    """The newest run's scenario file (its manifest's ``scenario.file``): what a ``bisect`` command
    names."""

    @property
    def models(self) -> list[str]:
        return list(self.points)

    @property
    def regressions(self) -> list[Step]:
        return [step for step in self.steps if step.kind == "regression"]

    @property
    def in_effect(self) -> list[Step]:
        """Regressions whose level still holds at the newest run (what makes ``history`` exit 1)."""
        return [step for step in self.steps if step.kind == "regression" and step.in_effect]


# --- step detection -------------------------------------------------------------------------------


def step_penalty(count: int) -> float:
    """The cost of one more segment, in units of chi-square: ``4 ln n + 8`` (n at least 3). Pure
    noise with known sigmas buys that much about once in 3000 series of 5 to 40 runs (the best split
    of noise gains about ``2 ln n``); a real step of k sigmas gains about ``k^2`` times the harmonic
    size of the two sides, so a 20 % step over 1 % noise gains hundreds."""
    return 4.0 * math.log(max(count, 3)) + 8.0


def _noise(values: np.ndarray) -> float:
    """Run-to-run noise from the series: 1.4826 * median |first difference| / sqrt(2) (robust to a
    few steps)."""
    if len(values) < 3:
        return 0.0
    return float(1.4826 * np.median(np.abs(np.diff(values))) / math.sqrt(2.0))


def detect_steps(values: Sequence[float] | np.ndarray, sigmas: Sequence[float] | np.ndarray,
                 penalty: float | None = None) -> list[int]:
    """Where a piecewise constant fit of ``values`` (each with uncertainty ``sigmas``, > 0) starts
    each new level: the optimal partition minimising the weighted squared error plus ``penalty`` per
    segment (``step_penalty`` by default). Returns the indices of the first value of every segment
    after the first (ascending)."""
    y = np.asarray(values, dtype=float)
    n = len(y)
    if n < 2:
        return []
    w = 1.0 / np.square(np.asarray(sigmas, dtype=float))
    beta = step_penalty(n) if penalty is None else penalty
    sw = np.concatenate([[0.0], np.cumsum(w)])
    swy = np.concatenate([[0.0], np.cumsum(w * y)])
    swyy = np.concatenate([[0.0], np.cumsum(w * y * y)])

    # weighted squared error of values[i:j] around their weighted mean
    def cost(i: int, j: int) -> float:
        total = sw[j] - sw[i]
        return float(swyy[j] - swyy[i] - (swy[j] - swy[i]) ** 2 / total) if total > 0 else 0.0

    best = [0.0] + [math.inf] * n
    start = [0] * (n + 1)
    best[0] = -beta
    for j in range(1, n + 1):
        for i in range(j):
            candidate = best[i] + cost(i, j) + beta
            if candidate < best[j] - 1e-12:
                best[j], start[j] = candidate, i
    cuts: list[int] = []
    j = n
    while j > 0:
        i = start[j]
        if i > 0:
            cuts.append(i)
        j = i
    return sorted(cuts)


def _segments(y: np.ndarray, w: np.ndarray,
              cuts: Sequence[int]) -> list[tuple[int, int, float, float]]:
    """(start, end, weighted mean, its standard error) of each fitted segment."""
    bounds = [0, *cuts, len(y)]
    out = []
    for start, end in itertools.pairwise(bounds):
        weight = float(np.sum(w[start:end]))
        out.append((start, end, float(np.sum(w[start:end] * y[start:end]) / weight),
                    1.0 / math.sqrt(weight)))
    return out


def _series_steps(model: str, runs: Sequence[RunRow], points: Sequence[Point],
                  threshold: float) -> tuple[list[Step], list[float | None]]:
    """Steps and the fitted level of every run (None for a gap) of one model's series."""
    present = [i for i, point in enumerate(points) if point.median is not None]
    levels: list[float | None] = [None] * len(points)
    if not present:
        return [], levels
    y = np.array([points[i].median for i in present], dtype=float)
    own = []
    for i in present:
        point = points[i]
        half = ((point.ci_high - point.ci_low) / 2.0 if point.ci_low is not None and
                point.ci_high is not None else 0.0)
        own.append(max(0.0, half) / 1.96)
    tau = _noise(y)
    floor = 1e-6 * max(1e-12, float(np.median(np.abs(y))))
    sigma = np.sqrt(np.square(np.array(own)) + tau**2)
    sigma = np.maximum(sigma, floor)
    w = 1.0 / np.square(sigma)
    cuts = detect_steps(y, sigma)
    segments = _segments(y, w, cuts)
    for start, end, level, _se in segments:
        for k in range(start, end):
            levels[present[k]] = level
    steps: list[Step] = []
    newest = segments[-1][2]
    for (_s0, _e0, before, se0), (s1, _e1, after, se1) in itertools.pairwise(segments):
        change = 100.0 * (after / before - 1.0) if before else math.inf
        z = (after - before) / math.sqrt(se0**2 + se1**2)
        significant = abs(z) >= Z_MIN and abs(change) >= threshold
        kind = ("regression" if change > 0 else "improvement") if significant else "shift"
        in_effect = (kind == "regression" and before > 0 and newest > before
                     and 100.0 * (newest / before - 1.0) >= threshold)
        index = present[s1]
        steps.append(Step(model, index, runs[index].run_id, before, after, change, z, kind,
                          in_effect))
    return steps, levels


# --- data -----------------------------------------------------------------------------------------


def _choose_metric(run: LoadedRun, build: str, wanted: str | None) -> str:
    """The metric to track: ``wanted``, else the first of the scenario's ``compare.primary`` that
    every ok unit of ``build`` produced in this run (the report's rule), else the first metric any
    unit of it produced."""
    if wanted:
        return wanted
    compare = run.scenario.compare
    candidates = compare.primary_candidates if compare is not None else []
    ok = [record for record in run.records if record.build == build and record.status == "ok"]
    for name in candidates:
        if ok and all(record.samples.get(name) for record in ok):
            return name
    for record in ok:
        for name in record.samples:
            if name not in NPU_CYCLE_METRICS:
                return name
    return candidates[0] if candidates else "cpu_time"


def _default_build(run: LoadedRun) -> str:
    compare = run.scenario.compare
    if compare is not None:
        return compare.candidate
    return list(run.scenario.builds)[-1]


def _run_row(run: LoadedRun, build: str) -> RunRow:
    host = run.manifest.get("host")
    hostname = host.get("hostname") if isinstance(host, Mapping) else None
    builds = run.manifest.get("builds")
    declared = builds.get(build) if isinstance(builds, Mapping) else None
    source = declared.get("source") if isinstance(declared, Mapping) else None
    commit = source.get("commit") if isinstance(source, Mapping) else None
    return RunRow(
        run.run.run_id,
        run.run.commit,
        run.run.branch,
        run.run.started,
        str(hostname) if hostname else None,
        run.run.status,
        commit if isinstance(commit, str) else None,
    )


def _scenario_file(run: LoadedRun) -> str | None:
    scenario = run.manifest.get("scenario")
    file = scenario.get("file") if isinstance(scenario, Mapping) else None
    if not isinstance(file, str) or not file:
        return None
    with contextlib.suppress(ValueError, OSError):
        return str(Path(file).resolve().relative_to(Path.cwd().resolve()))
    return file


def bisect_command(scenario: str, build: str, metric: str, good: str, bad: str) -> str:
    """The ``fvp-harness bisect`` command line for a step between two commits."""
    return (
        f"fvp-harness bisect {shlex.quote(scenario)} --build {shlex.quote(build)} "
        f"--metric {shlex.quote(metric)} --good {good[:12]} --bad {bad[:12]}"
    )


def step_bisect(history: History, step: Step) -> str | None:
    """The ``bisect`` command for ``step`` when the runs on either side of it record different
    commits of the build's source (``builds.X.source``), else None: which commit between them moved
    the level. The good side is the last run that measured the model: a failed run between them
    says nothing of its commit's level."""
    points = history.points[step.model]
    good = next((i for i in range(step.index - 1, -1, -1) if points[i].median is not None), None)
    if good is None or history.scenario_file is None:
        return None
    before, after = (
        history.runs[good].source_commit,
        history.runs[step.index].source_commit,
    )
    if before is None or after is None or before == after:
        return None
    return bisect_command(history.scenario_file, history.build, history.metric, before, after)


def history_from_runs(runs: Sequence[LoadedRun], *, build: str | None = None,
                      metric: str | None = None,
                      threshold: float | None = None, settings: Settings | None = None) -> History:
    """The history of ``runs`` (oldest first): ``build`` (default: the newest run's
``compare.candidate``), ``metric`` (default: its primary metric), ``threshold`` in percent (default:
its ``compare.min_effect``; 0 for a memory metric, whose exact sizes make any significant step a
step).

    A ``build`` no run recorded, or a ``metric`` no record of that build carries, is ``UnknownName``
    (exit 2) before anything is written: a typo must not turn a nightly regression job green with a
    history of ``n/a``."""
    if not runs:
        raise ValueError("history_from_runs needs at least one run")
    newest = runs[-1]
    if build is not None:
        check_names("--build", [build], dict.fromkeys(r.build for run in runs for r in run.records),
                    what="build")
    build = build or _default_build(newest)
    if metric is not None:
        measured = dict.fromkeys(name for run in runs for r in run.records if r.build == build
                                 for name in r.samples)
        check_names("--metric", [metric], measured, what="metric",
                    plural=f"the metrics of build {build!r} there are")
    metric = _choose_metric(newest, build, metric)
    if threshold is None and metric in MEMORY_METRICS:
        threshold = 0.0  # a size does not drift: any significant step is one (noise still counts)
    if threshold is None:
        threshold = (newest.scenario.compare.min_effect if newest.scenario.compare is not None
                     else 5.0)
    settings = settings or Settings()
    rows = tuple(_run_row(run, build) for run in runs)
    per_run: list[dict[str, Point]] = []
    unit = ""
    npu_metric: str | None = None
    models: list[str] = []
    for run in runs:
        chosen = [r for r in select_latest(run.records) if r.build == build]
        found, run_unit, run_npu = cached_run_points(
            run.run.path, chosen, metric, settings, _run_points, Point
        )
        unit, npu_metric = unit or run_unit, npu_metric or run_npu
        for model in found:
            if model not in models:
                models.append(model)
        per_run.append(found)
    points = {model: tuple(found.get(model, Point(None, None, None)) for found in per_run)
              for model in models}
    steps: list[Step] = []
    levels: dict[str, tuple[float | None, ...]] = {}
    for model, series in points.items():
        found_steps, fitted = _series_steps(model, rows, series, threshold)
        steps += found_steps
        levels[model] = tuple(fitted)
    notes: list[str] = []
    missing = [row.run_id for row, found in zip(rows, per_run, strict=True)
               if not any(point.median is not None for point in found.values())]
    if missing:
        notes.append(f"{len(missing)} run(s) measured no {metric} of build {build}: "
                     f"{', '.join(missing)}")
    notes += _measured_changes(runs, models, build, metric, steps)
    return History(newest.scenario.name, build, metric, unit, float(threshold), rows, points,
                   levels, tuple(steps), npu_metric, tuple(notes), _scenario_file(newest))


def _measured_changes(runs: Sequence[LoadedRun], models: Sequence[str], build: str, metric: str,
                      steps: Sequence[Step]) -> list[str]:
    """A note for each run that measured something else than the run before it: another scenario in
    the same results folder (``run -o``), or what ``compare`` refuses to compare (model or input
    bytes of a model both runs measured, platform, FVP, run command, warm-up, the metric's
    definition, ...). Why: a series is only a history of the code while the rest stayed the same; a
    step where the scenario was edited is the edit's doing, and nobody could tell from the table
    (``compare`` refuses such a pair; here the runs stay in the series, said once at the run it
    happens)."""
    notes: list[str] = []
    for index in range(1, len(runs)):
        before, after = runs[index - 1].manifest, runs[index].manifest
        both = [
            model
            for model in models
            if all(
                any(r.build == build and r.model == model for r in run.records)
                for run in (runs[index - 1], runs[index])
            )
        ]
        found = list(comparable(before, after, models=both, builds=[build], metrics=[metric],
                                sides=("previous run", "this run")).problems)
        names = dotted_get(before, "scenario.name"), dotted_get(after, "scenario.name")
        if names[0] != names[1]:
            found.insert(0, f"scenario {names[0]!r} (previous run) -> {names[1]!r} (this run)")
        if not found:
            continue
        here = sorted(step.model for step in steps if step.index == index and step.kind != "shift")
        cause = (f"; the step of {', '.join(here)} at this run may be that change's doing" if here
                 else "")
        more = f"; ... ({len(found) - 3} more)" if len(found) > 3 else ""
        notes.append(f"run {runs[index].run.run_id} measured something else than the run before it "
                     f"({runs[index - 1].run.run_id}): {'; '.join(found[:3])}{more}{cause}")
    return notes


def _run_points(chosen: Sequence[Record], metric: str,
                settings: Settings) -> tuple[dict[str, Point], str, str | None]:
    """One run's point per model (``chosen``: its latest records of the followed build), the
    metric's unit and the NPU cycle metric it measured: what ``summary_cache.cached_run_points``
    keeps per run folder."""
    frame = to_frame(chosen, latest_only=False)
    keep = [metric, *NPU_CYCLE_METRICS]
    frame = frame[frame["metric"].isin(keep)] if len(frame) else frame
    summary = summarise(frame, settings)
    found: dict[str, Point] = {}
    unit = ""
    npu_metric: str | None = None
    for model in dict.fromkeys(r.model for r in chosen):
        rows_m = summary[(summary["model"] == model)] if len(summary) else summary
        main = rows_m[rows_m["metric"] == metric] if len(rows_m) else rows_m
        npu = None
        for name in NPU_CYCLE_METRICS:
            hit = rows_m[rows_m["metric"] == name] if len(rows_m) else rows_m
            if len(hit):
                npu, npu_metric = float(hit["median"].iloc[0]), npu_metric or name
                break
        if len(main):
            row = main.iloc[0]
            unit = unit or str(row["unit_of_measure"])
            found[model] = Point(float(row["median"]), _number(row["ci_low"]),
                                 _number(row["ci_high"]), int(row["n"]), npu)
        else:
            found[model] = Point(None, None, None, 0, npu)
    return found, unit, npu_metric


def _number(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def load_history(results_dir: Path) -> list[LoadedRun]:
    """Every stored run of a scenario's results folder, oldest first, read for
    ``history_from_runs``. Runs whose manifest cannot be read are skipped (their folder is named in
    the ConfigurationError when none is left)."""
    store = ResultStore(results_dir, create=False)
    if not store.root.is_dir():
        raise ConfigurationError(f"{store.root}: no such results folder (run the scenario first)")
    stored = store.stored_runs()
    loaded: list[LoadedRun] = []
    skipped: list[str] = []
    for run in stored:
        try:
            loaded.append(load_run(run))
        except ConfigurationError as exc:
            skipped.append(f"{run.path}: {str(exc).splitlines()[0]}")
    if not loaded:
        raise ConfigurationError(f"{store.root} holds no readable stored run" + (
            ":\n" + "\n".join(f"  {line}" for line in skipped) if skipped else ""))
    return loaded


# --- rendering ------------------------------------------------------------------------------------


def point_cell(point: Point, unit: str) -> str:
    """A run's median with its CI and unit, as the history table (and the dashboard) show it."""
    if point.median is None:
        return fmt.MISSING
    ci = ""
    if point.ci_low is not None and point.ci_high is not None:
        ci = f" [{fmt.number(point.ci_low)} … {fmt.number(point.ci_high)}]"
    return f"{fmt.number(point.median)}{ci}" + (f" {unit}" if unit else "")


def _flags(history: History) -> dict[tuple[str, int], Step]:
    return {(step.model, step.index): step for step in history.steps if step.kind != "shift"}


def chart_name(model: str) -> str:
    """``history-<model>.png`` with the model name made safe for a file name."""
    return "history-" + re.sub(r"[^A-Za-z0-9_.+-]", "_", model) + ".png"


def render_markdown(history: History) -> str:
    """``history.md``: the table (one row per run), the steps found, notes, and the charts."""
    unit = f" ({history.unit})" if history.unit else ""
    lines = [f"# {history.scenario}: history of {history.metric} ({history.build})", ""]
    lines += [f"{len(history.runs)} stored run(s), oldest first. Each cell: the median of "
              f"{history.metric}{unit} per inference of build **{history.build}** with its 95% CI; "
              "NPU cycles beside it. Steps: a piecewise constant fit over the whole series "
              "(penalised least squares), reported when a level changes by at least "
              f"{history.threshold:g}% and |z| ≥ {Z_MIN:g}; ▲ marks the run a regression starts "
              "at, ▼ an improvement.", ""]
    flags = _flags(history)
    headers = ["Run", "Commit", "Date", "Host", *[f"{model}" for model in history.models],
               "NPU cycles"]
    rows = []
    for index, run in enumerate(history.runs):
        cells = []
        npu_bits = []
        for model in history.models:
            point = history.points[model][index]
            step = flags.get((model, index))
            mark = "" if step is None else (" ▲ " if step.kind == "regression"
                                            else " ▼ ") + fmt.signed_percent(
                step.change_pct, 1)
            cells.append(point_cell(point, history.unit) + mark)
            if point.npu_cycles is not None:
                npu_bits.append(f"{model} {fmt.number(point.npu_cycles)}")
        when = (run.started or "")[:16].replace("T", " ")
        commit = (run.commit or "")[:7] + (f" ({run.branch})" if run.branch else "")
        rows.append([run.run_id, commit or fmt.MISSING, when or fmt.MISSING,
                     run.host or fmt.MISSING, *cells, "; ".join(npu_bits) or fmt.MISSING])
    lines += [markdown_table(rows, headers,
                             ["left"] * 4 + ["right"] * len(history.models) + ["left"]), ""]
    lines += ["## Regressions", ""]
    regressions = history.regressions
    if regressions:
        for step in regressions:
            run = history.runs[step.index]
            effect = ("still in effect at the newest run" if step.in_effect
                      else "no longer in effect")
            lines.append(f"- **{fmt.markdown_cell(step.model)}**: "
                         f"{fmt.signed_percent(step.change_pct, 1)} at run {run.run_id}"
                         + (f" (commit {run.commit[:7]})" if run.commit else "")
                         + f": level {fmt.number(step.before)} -> {fmt.number(step.after)}"
                         + (f" {history.unit}" if history.unit else "")
                         + f" (z = {step.z:.1f}); {effect}.")
            command = step_bisect(history, step)
            if command is not None:
                lines.append(f"  Find the commit: `{command}`")
    else:
        lines.append(f"None: no level of {history.metric} went up by {history.threshold:g}% or "
                     "more.")
    lines.append("")
    improvements = [step for step in history.steps if step.kind == "improvement"]
    if improvements:
        lines += ["## Improvements", ""]
        for step in improvements:
            lines.append(f"- **{fmt.markdown_cell(step.model)}**: "
                         f"{fmt.signed_percent(step.change_pct, 1)} at run "
                         f"{history.runs[step.index].run_id} (z = {step.z:.1f}).")
        lines.append("")
    if history.notes:
        lines += ["## Notes", "", *(f"- {fmt.markdown_cell(note)}" for note in history.notes), ""]
    lines += ["## Trends", "", *(f"![{model}]({chart_name(model)})" for model in history.models),
              ""]
    return "\n".join(lines).rstrip("\n") + "\n"


CSV_COLUMNS = ["run_id", "commit", "branch", "started", "host", "status", "model", "build",
               "metric", "unit",
               "median", "ci_low", "ci_high", "n", "npu_cycles", "level", "step", "change_pct"]


def _float_text(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def render_csv(history: History) -> str:
    """``history.csv``: one row per (run, model) with the fitted level and the step starting there
    (if any)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    flags = _flags(history)
    for index, run in enumerate(history.runs):
        for model in history.models:
            point = history.points[model][index]
            step = flags.get((model, index))
            writer.writerow([run.run_id, run.commit or "", run.branch or "", run.started or "",
                             run.host or "",
                             run.status or "", model, history.build, history.metric, history.unit,
                             _float_text(point.median), _float_text(point.ci_low),
                             _float_text(point.ci_high),
                             point.n, _float_text(point.npu_cycles),
                             _float_text(history.levels[model][index]),
                             "" if step is None else step.kind,
                             "" if step is None else _float_text(step.change_pct)])
    return buffer.getvalue()


def render_json(history: History) -> str:
    """``history.json``: the same data, machine-readable and versioned."""
    data = {
        "format": "fvp-harness-history",
        "format_version": HISTORY_FORMAT_VERSION,
        "scenario": history.scenario,
        "build": history.build,
        "metric": history.metric,
        "unit": history.unit,
        "threshold_pct": history.threshold,
        "runs": [dataclasses.asdict(run) for run in history.runs],
        "series": {model: [dataclasses.asdict(point) for point in points]
                   for model, points in history.points.items()},
        "levels": {model: list(levels) for model, levels in history.levels.items()},
        "steps": [dataclasses.asdict(step) for step in history.steps],
        "regressions_in_effect": [{"model": step.model, "run_id": step.run_id,
                                   "change_pct": step.change_pct}
                                  for step in history.in_effect],
        "notes": list(history.notes),
    }
    return json.dumps(jsonable(data), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_chart(history: History, model: str, path: Path) -> Path:
    """One model's trend: the median per run with its CI, the fitted levels as a step line,
    regressions in red."""
    # late: matplotlib (half a second to import) loads only when a chart is really drawn, as in
    # report.charts
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 4), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    points = history.points[model]
    xs: list[int] = []
    ys: list[float] = []
    low: list[float] = []
    high: list[float] = []
    for index, point in enumerate(points):
        if point.median is None:
            continue
        xs.append(index)
        ys.append(point.median)
        low.append(max(0.0, point.median - point.ci_low) if point.ci_low is not None else 0.0)
        high.append(max(0.0, point.ci_high - point.median) if point.ci_high is not None else 0.0)
    axes.errorbar(xs, ys, yerr=[low, high], fmt="o", color="#1f6fb4", ecolor="#333333", capsize=3,
                  label=f"median ({history.build})")
    fitted = [(i, level) for i, level in enumerate(history.levels[model]) if level is not None]
    if fitted:
        axes.step([i for i, _ in fitted], [level for _, level in fitted], where="mid",
                  color="#8c8c8c",
                  linewidth=1.5, label="fitted level")
    for step in history.steps:
        if step.model != model or step.kind == "shift":
            continue
        colour = "#c0392b" if step.kind == "regression" else "#3b9b5b"
        axes.axvline(step.index - 0.5, color=colour, linestyle="--", linewidth=1)
        axes.annotate(fmt.signed_percent(step.change_pct, 1), (step.index - 0.5, step.after),
                      textcoords="offset " "points", xytext=(4, 6), color=colour, fontsize=9)
    labels = [run.label for run in history.runs]
    if len(set(labels)) < len(labels):  # several runs of one commit: their ids tell them apart
        labels = [run.run_id for run in history.runs]
    axes.set_xticks(range(len(history.runs)), labels, rotation=30, ha="right", fontsize=8)
    axes.set_xlim(-0.5, max(0.5, len(history.runs) - 0.5))
    axes.set_ylabel(f"{history.metric}" + (f" ({history.unit})" if history.unit else ""))
    axes.set_title(f"{history.scenario}: {model}", fontsize=11)
    axes.margins(y=0.2)
    axes.spines[["top", "right"]].set_visible(False)
    axes.legend(frameon=False, fontsize=8, loc="best")
    return save_png(figure, path)


HISTORY_FILES = {"markdown": "history.md", "csv": "history.csv", "json": "history.json"}
"""The history's text files by output name; charts are ``chart_name(model)`` beside them."""


def render_history(history: History, out_dir: Path, *, charts: bool = True) -> dict[str, Path]:
    """Write ``history.md``, ``.csv``, ``.json`` and (``charts``) one PNG per model into
    ``out_dir``; returns output name (``chart:<model>`` for charts) -> path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for name, render in (("markdown", render_markdown), ("csv", render_csv), ("json", render_json)):
        path = out_dir / HISTORY_FILES[name]
        atomic_write(path, render(history))
        written[name] = path
    if charts:
        for model in history.models:
            written[f"chart:{model}"] = render_chart(history, model, out_dir / chart_name(model))
    return written


def history_suite(history: History) -> Suite:
    """The history as a JUnit test suite: one test case per model, failed while a regression is in
    effect (the message names the run, the commit and the step), passed otherwise."""
    cases = []
    effect = {step.model: step for step in history.in_effect}
    for model in history.models:
        name = f"{model}: no regression of {history.metric} ({history.build})"
        step = effect.get(model)
        if step is None:
            cases.append(Case(history.scenario, name))
            continue
        run = history.runs[step.index]
        message = (f"{fmt.signed_percent(step.change_pct, 1)} at run {run.run_id}"
                   + (f" (commit {run.commit[:7]})" if run.commit else "")
                   + f": level {fmt.number(step.before)} -> {fmt.number(step.after)}"
                   + (f" {history.unit}" if history.unit else "")
                   + f", z = {step.z:.1f}; still in effect")
        cases.append(Case(history.scenario, name, "failure", "regression", message, message))
    properties = (("metric", history.metric), ("build", history.build),
                  ("runs", str(len(history.runs))))
    return Suite(f"{history.scenario} history", tuple(cases), properties)
