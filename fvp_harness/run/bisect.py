"""Find the commit that moved a measurement: ``fvp-harness bisect SCENARIO --good REF --bad REF``.

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from fvp_harness.errors import (
    EXIT_FAILED,
    EXIT_OK,
    ConfigurationError,
    Interrupted,
    UnitFailure,
    check_names,
)
from fvp_harness.files import atomic_write
from fvp_harness.report.stats.bootstrap import bootstrap_draws, percentile_interval
from fvp_harness.report.stats.spec import Settings
from fvp_harness.run.artifacts import source_repository
from fvp_harness.run.source_build import (
    CachedBuild,
    commit_line,
    commits_between,
    default_cache_dir,
    resolve_commit,
    tree_of,
)
from fvp_harness.scenario.load import LoadedScenario
from fvp_harness.scenario.model import is_local_repository
from fvp_harness.store.folder import ResultStore
from fvp_harness.store.records import Record

__all__ = [
    "BisectRequest",
    "BisectResult",
    "Level",
    "Measured",
    "bisect",
    "check_request",
    "judge",
    "level_of",
]

Verdict = Literal["good", "bad", "cannot decide", "skipped"]


@dataclass(frozen=True)
class Level:
    """One model's measured level at a commit: median and interval of the metric over its units."""

    median: float
    low: float
    high: float
    units: int

    def overlaps(self, other: Level) -> bool:
        return self.low <= other.high and other.low <= self.high


@dataclass
class Measured:
    """A commit of the range as the bisect saw it."""

    commit: str
    position: int
    verdict: Verdict | Literal["good end", "bad end"]
    levels: dict[str, Level] = field(default_factory=dict)
    units: int = 0
    built: bool = False
    note: str = ""
    folder: str = ""


@dataclass(frozen=True)
class BisectRequest:
    """What to bisect: the scenario (loaded with a function that applies extra ``--set`` texts), the
    build, metric and models, the repository and the two ends, where to write, and the rounds a
    commit may take."""

    load: Callable[[Sequence[str]], LoadedScenario]
    build: str
    metric: str
    models: tuple[str, ...]
    repository: Path
    good: str
    bad: str
    out: Path
    min_rounds: int = 2
    max_rounds: int = 10


@dataclass
class BisectResult:
    """How it ended: ``first_bad`` (None when undecided), the table, counts, and the files
    written."""

    commits: list[str]
    measured: list[Measured]
    first_bad: str | None
    last_good: str | None
    message: str
    builds: int
    units: int
    seconds: float
    subject: str = ""
    author: str = ""
    compare_report: Path | None = None
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.first_bad is not None else EXIT_FAILED


def check_request(
    loaded: LoadedScenario,
    build: str | None,
    metric: str | None,
    models: Sequence[str],
    repository: str | None,
) -> tuple[str, str, tuple[str, ...], Path]:
    """The build, metric, models and repository to use (defaults filled in), or
    ``ConfigurationError`` (exit 2) before anything builds: unknown names with "did you mean", a
    build that names no local repository."""
    scenario = loaded.scenario
    compare = scenario.compare
    if build is None:
        build = compare.candidate if compare is not None else next(iter(scenario.builds))
    check_names("--build", [build], scenario.builds, what="build")
    metrics = [spec.name for spec in scenario.metrics]
    if metric is None:
        primary = compare.primary if compare is not None else metrics[0]
        metric = primary if isinstance(primary, str) else primary[0]
    check_names("--metric", [metric], metrics, what="metric")
    check_names("--model", models, scenario.models, what="model")
    chosen = tuple(models) or tuple(scenario.models)
    declared = scenario.builds[build]
    if not declared.build:
        raise ConfigurationError(
            f"{loaded.path}: builds.{build} has no build command: bisect builds each commit"
        )
    if repository is not None:
        path = Path(repository).expanduser().resolve()
    elif declared.source is not None and is_local_repository(declared.source.repository):
        path = source_repository(loaded, build)
    else:
        raise ConfigurationError(
            f"{loaded.path}: builds.{build}.source names no local git repository; give "
            "--repository PATH (the checkout whose commits the build command builds)"
        )
    return build, metric, chosen, path


def level_of(
    records: Sequence[Record], build: str, model: str, metric: str, label: str
) -> Level | None:
    """The median and bootstrap interval of ``metric`` over the ok units of ``build`` x
    ``model``."""
    groups = [
        np.array(record.samples[metric])
        for record in records
        if record.build == build
        and record.model == model
        and record.status == "ok"
        and record.samples.get(metric)
    ]
    if not groups:
        return None
    settings = Settings()
    low, high = percentile_interval(
        bootstrap_draws(groups, settings, label, model, metric), settings.confidence
    )
    median = float(np.median(np.concatenate(groups)))
    return Level(
        median, median if low is None else low, median if high is None else high, len(groups)
    )


def judge(
    levels: dict[str, Level], good: dict[str, Level], bad: dict[str, Level], models: Sequence[str]
) -> tuple[Verdict, str]:
    """A commit's verdict from its levels and the ends' (only ``models`` whose ends differ
    count)."""
    verdicts: list[str] = []
    notes: list[str] = []
    for model in models:
        level = levels.get(model)
        if level is None:
            verdicts.append("cannot decide")
            continue
        near_good, near_bad = level.overlaps(good[model]), level.overlaps(bad[model])
        if near_good and not near_bad:
            verdicts.append("good")
        elif near_bad and not near_good:
            verdicts.append("bad")
        elif near_good and near_bad:
            verdicts.append("cannot decide")
        else:
            nearer = abs(level.median - good[model].median) <= abs(level.median - bad[model].median)
            verdicts.append("good" if nearer else "bad")
            notes.append(
                f"{model} between the levels, nearer the {'good' if nearer else 'bad'} one"
            )
    if "bad" in verdicts:
        return "bad", "; ".join(notes)
    if verdicts and all(item == "good" for item in verdicts):
        return "good", "; ".join(notes)
    return "cannot decide", "; ".join(notes)


class _Bisector:
    def __init__(
        self, request: BisectRequest, stop: threading.Event | None, say: Callable[[str], None]
    ) -> None:
        self.request = request
        self.stop = stop
        self.say = say
        self.builds = 0
        self.units = 0
        self.cache = default_cache_dir()

    def folder(self, commit: str) -> Path:
        return self.request.out / commit[:12]

    def _cached(self, loaded: LoadedScenario, commit: str) -> bool:
        template = loaded.scenario.builds[self.request.build].build or ""
        runner = Path(loaded.scenario.builds[self.request.build].runner).name
        cached = CachedBuild.of(
            self.cache, tree_of(self.request.repository, commit), template, runner
        )
        return cached.artifact.is_file() or cached.failure() is not None

    def run_rounds(self, commit: str, rounds: int) -> list[Record]:
        """Measure ``commit`` to ``rounds`` units per model (stored ones are kept); its ok records.
        Raises ``UnitFailure`` (stage ``build``) when the commit does not build."""
        # late: the pipeline pulls in the whole run machinery; this module's helpers stay light for
        # history
        from fvp_harness.run.pipeline import RunOptions, run_scenario

        request = self.request
        overrides = [
            f"builds.{request.build}.source={{repository: {json.dumps(str(request.repository))}, "
            f"commit: {commit}}}",
            "run.until=null",
            f"run.repetitions={rounds}",
        ]
        loaded = request.load(overrides)
        folder = self.folder(commit)
        store = ResultStore(folder)
        resume = store.has_run()
        before = len(store.records()) if resume else 0
        cached = self._cached(loaded, commit)
        options = RunOptions(
            output_dir=folder,
            resume=resume,
            only_builds=(request.build,),
            only_models=request.models,
        )
        try:
            run_scenario(loaded, options, stop=self.stop)
        except UnitFailure as exc:
            if exc.stage == "build" and not cached:
                self.builds += 1
            raise
        finally:
            after = ResultStore(folder)
            if after.has_run():
                self.units += max(0, len(after.records()) - before)
        if not cached:
            self.builds += 1
        return list(ResultStore(folder).records())

    def measure(
        self,
        commit: str,
        position: int,
        ends: tuple[dict[str, Level], dict[str, Level]] | None,
        models: Sequence[str],
    ) -> Measured:
        """Rounds until the commit is decided (or, for an end, once ``min_rounds``); its
        ``Measured``."""
        request = self.request
        rounds = request.min_rounds
        entry = Measured(commit, position, "cannot decide", folder=str(self.folder(commit)))
        while True:
            built_before = self.builds
            try:
                records = self.run_rounds(commit, rounds)
            except UnitFailure as exc:
                where = f" (log: {exc.log_path})" if exc.log_path is not None else ""
                entry.verdict, entry.note = "skipped", f"did not build{where}"
                entry.built = self.builds > built_before
                return entry
            entry.built = entry.built or self.builds > built_before
            entry.levels = {}
            for model in request.models:
                level = level_of(records, request.build, model, request.metric, commit)
                if level is not None:
                    entry.levels[model] = level
            entry.units = sum(level.units for level in entry.levels.values())
            if ends is None:
                return entry
            entry.verdict, entry.note = judge(entry.levels, ends[0], ends[1], models)
            if entry.verdict != "cannot decide" or rounds >= request.max_rounds:
                if entry.verdict == "cannot decide":
                    entry.note = (
                        f"its interval overlaps both ends' after {rounds} rounds "
                        f"(the limit, run.until.max_repetitions)"
                    )
                return entry
            rounds += 1

    def separated(self, good: Measured, bad: Measured) -> list[str]:
        return [
            model
            for model in self.request.models
            if model in good.levels
            and model in bad.levels
            and not good.levels[model].overlaps(bad.levels[model])
        ]

    def ends(self, good: str, bad: str, last: int) -> tuple[Measured, Measured, list[str]]:
        request = self.request
        rounds = request.min_rounds
        while True:
            measured = []
            for commit, position, name in ((good, 0, "good end"), (bad, last, "bad end")):
                try:
                    records = self.run_rounds(commit, rounds)
                except UnitFailure as exc:
                    raise ConfigurationError(
                        f"the {name} {commit[:12]} does not build, so nothing can be "
                        f"compared with it: {exc.message}"
                    ) from exc
                folder = str(self.folder(commit))
                entry = Measured(commit, position, name, folder=folder)  # type: ignore[arg-type]
                for model in request.models:
                    level = level_of(records, request.build, model, request.metric, commit)
                    if level is not None:
                        entry.levels[model] = level
                entry.units = sum(level.units for level in entry.levels.values())
                measured.append(entry)
            models = self.separated(measured[0], measured[1])
            if models or rounds >= request.max_rounds:
                return measured[0], measured[1], models
            rounds += 1


def _pick(low: int, high: int, skipped: set[int]) -> int | None:
    """The middle of (low, high), or the nearest position to it that was not skipped (``git bisect
    skip``)."""
    middle = (low + high) // 2
    for offset in range(high - low):
        for candidate in (middle + offset, middle - offset):
            if low < candidate < high and candidate not in skipped:
                return candidate
    return None


def bisect(
    request: BisectRequest,
    *,
    stop: threading.Event | None = None,
    say: Callable[[str], None] = lambda text: None,
) -> BisectResult:
    """Bisect ``request``'s range (see the module docstring); writes ``bisect.md``/``bisect.json``
    and the compare report into ``request.out``."""
    began = time.monotonic()
    repository = request.repository
    good = resolve_commit(repository, request.good, what="--good")
    bad = resolve_commit(repository, request.bad, what="--bad")
    if good == bad:
        raise ConfigurationError(f"--good and --bad are the same commit ({good[:12]})")
    line = commits_between(repository, good, bad)
    commits = [good, *line]
    worker = _Bisector(request, stop, say)
    say(
        f"{len(line)} commit(s) after {good[:12]} up to {bad[:12]} (first-parent); "
        "measuring both ends"
    )
    good_end, bad_end, models = worker.ends(good, bad, len(commits) - 1)
    table: dict[int, Measured] = {0: good_end, len(commits) - 1: bad_end}
    for entry in (good_end, bad_end):
        say(_row_text(entry, request.models))
    low, high = 0, len(commits) - 1
    skipped: set[int] = set()
    message = ""
    if not models:
        message = (
            f"cannot decide: the two ends are at the same level of {request.metric} (their "
            f"intervals overlap after {request.max_rounds} rounds): there is no step to find"
        )
    while models and high - low > 1:
        if stop is not None and stop.is_set():
            raise Interrupted(
                "bisect stopped; what it measured and built is kept: run it again to resume"
            )
        position = _pick(low, high, skipped)
        if position is None:
            message = (
                f"cannot decide between {commits[low][:12]} and {commits[high][:12]}: every "
                "commit in between failed to build"
            )
            break
        entry = worker.measure(
            commits[position], position, (good_end.levels, bad_end.levels), models
        )
        table[position] = entry
        say(_row_text(entry, request.models))
        if entry.verdict == "skipped":
            skipped.add(position)
        elif entry.verdict == "good":
            low = position
        elif entry.verdict == "bad":
            high = position
        else:
            message = (
                f"cannot decide {commits[position][:12]}: {entry.note}; the step is between "
                f"{commits[low][:12]} and {commits[high][:12]} "
                f"({high - low - 1} commit(s) untested)"
            )
            break
    found = bool(models) and not message
    result = BisectResult(
        commits,
        [table[key] for key in sorted(table)],
        commits[high] if found else None,
        commits[low] if found else None,
        message,
        worker.builds,
        worker.units,
        time.monotonic() - began,
    )
    if found:
        result.subject, result.author = commit_line(repository, commits[high])
        between = [commits[p][:12] for p in sorted(skipped) if p < high and p > low]
        result.message = f"first bad commit: {commits[high]}"
        if between:
            result.message += f" (or one of the skipped {', '.join(between)}: they did not build)"
        result.compare_report = _compare(request, Path(table[low].folder), Path(table[high].folder))
    result.seconds = time.monotonic() - began
    result.files = _write(result, request, models)
    return result


def _row_text(entry: Measured, models: Sequence[str]) -> str:
    parts = []
    for model in models:
        level = entry.levels.get(model)
        if level is not None:
            parts.append(
                f"{model} {level.median:.4g} [{level.low:.4g}, {level.high:.4g}] "
                f"({level.units} units)"
            )
    built = ", built" if entry.built else ""
    note = f"; {entry.note}" if entry.note else ""
    return f"  {entry.commit[:12]}  {entry.verdict:<13} {'; '.join(parts) or '-'}{built}{note}"


def _compare(request: BisectRequest, good_folder: Path, bad_folder: Path) -> Path | None:
    """The ``compare`` report of the last good run against the first bad one, in
    ``<out>/compare``."""
    from fvp_harness.report.rendering.render import render_report  # late: pandas and matplotlib
    from fvp_harness.report.stored.stored_compare import compare_runs, load_run
    from fvp_harness.store.locate import find_run

    a = load_run(find_run(str(good_folder)))
    b = load_run(find_run(str(bad_folder)))
    done = compare_runs(a, b, metrics=[request.metric], builds=[request.build])
    files = render_report(
        done.result, request.out / "compare", ["markdown", "json"], done.title, done.context
    )
    return files.get("markdown")


def _write(result: BisectResult, request: BisectRequest, models: Sequence[str]) -> dict[str, Path]:
    request.out.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# bisect: {request.metric} of {request.build}",
        "",
        f"Range: {result.commits[0][:12]}..{result.commits[-1][:12]} "
        f"({len(result.commits) - 1} commit(s), first-parent), repository {request.repository}",
        "",
        result.message or "",
        "",
    ]
    if result.first_bad is not None:
        lines += [f"- subject: {result.subject}", f"- author: {result.author}", ""]
    lines += [
        "| # | commit | verdict | "
        + " | ".join(f"{m} median [CI]" for m in request.models)
        + " | units |",
        "|---|---|---|" + "---|" * len(request.models) + "---|",
    ]
    for entry in result.measured:
        cells = []
        for model in request.models:
            level = entry.levels.get(model)
            cells.append(
                f"{level.median:.4g} [{level.low:.4g}, {level.high:.4g}]" if level else "-"
            )
        lines.append(
            f"| {entry.position} | {entry.commit[:12]} | {entry.verdict} | {' | '.join(cells)} | "
            f"{entry.units} |"
        )
    lines += [
        "",
        f"{result.builds} build(s), {result.units} unit(s) run, {result.seconds:.1f} s; "
        f"models deciding: {', '.join(models) or 'none'}",
    ]
    if result.compare_report is not None:
        lines.append(f"\nCompare report (last good vs first bad): {result.compare_report}")
    md = atomic_write(request.out / "bisect.md", "\n".join(lines) + "\n")
    data = {
        "first_bad": result.first_bad,
        "last_good": result.last_good,
        "message": result.message,
        "subject": result.subject,
        "author": result.author,
        "builds": result.builds,
        "units": result.units,
        "seconds": round(result.seconds, 3),
        "commits": result.commits,
        "metric": request.metric,
        "build": request.build,
        "models": list(request.models),
        "compare_report": str(result.compare_report) if result.compare_report else None,
        "measured": [asdict(entry) for entry in result.measured],
    }
    js = atomic_write(request.out / "bisect.json", json.dumps(data, indent=2) + "\n")
    return {"markdown": md, "json": js}
