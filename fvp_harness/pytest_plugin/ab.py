"""``fvp_ab``: run a scenario (or a subset of it) as ``fvp-harness run`` would, and hand the
analysis to the test as an ``AbResult`` it can assert on.

Why it is shaped like this:

- **The run is the harness's run.** ``run.pipeline.run_scenario`` builds, plans, measures, analyses
  and writes the report into ``ab/<scenario stem>/`` of the plugin's results folder; an earlier run
  there is kept in ``runs/<id>/`` like any other results folder, so every A/B a test session made
  can be looked at afterwards.
- **No boot of its own.** When the scenario's instance settings (platform, ``fvp:``, target, deploy
  method) are those of the test's ``fvp_target``, the run's session borrows that booted instance
  (``SharedTarget.lend``); otherwise (``set={"fvp.sim.speed": ...}``) it boots its own, counted in
  the boot log like every boot.
- **A result that cannot be a measurement is not returned.** With ``check`` (the default) a run
  whose units failed or did not run raises ``AbRunFailed`` naming each failure and its log; violated
  expectations do not raise: the test asserts on what it cares about (``result.saved``,
  ``result.identical``).
- **Assertions read well.** ``saved(model)`` is a number or an error saying why there is none;
  ``repr`` of the result shows the verdict and each model's saving, which pytest prints under a
  failed ``assert``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from fvp_harness.errors import HarnessError, Interrupted
from fvp_harness.pytest_plugin.settings import ScenarioSpec, override_text
from fvp_harness.pytest_plugin.target import BootLog, BootRecord, SharedTarget
from fvp_harness.report import format as fmt
from fvp_harness.report.rendering.context import ReportContext
from fvp_harness.report.rendering.markdown import render_markdown
from fvp_harness.report.stats.findings import Comparison, ModelComparison
from fvp_harness.report.stats.result import AnalysisResult
from fvp_harness.run.instances import TargetFactory, default_target_factory
from fvp_harness.run.manifest import Manifest
from fvp_harness.run.pipeline import RunOptions, RunOutcome, run_scenario
from fvp_harness.scenario.load import LoadedScenario
from fvp_harness.store.folder import ResultStore
from fvp_harness.targets.base import Target

__all__ = ["AbResult", "AbRunFailed", "AbRunner", "NotMeasured", "same_instance_settings"]

log = logging.getLogger(__name__)


class AbRunFailed(HarnessError):
    """An A/B run whose units failed or did not run: its numbers would not be a measurement."""


class NotMeasured(LookupError):
    """A model has no saving (its primary metric was not measured by both builds); the message says
    why."""


def _comparisons(analysis: AnalysisResult) -> tuple[Comparison, ...]:
    """Every comparison of the analysis (several candidate builds give several), first the main
    one."""
    several = getattr(analysis, "comparisons", None)
    if several is not None:
        return tuple(several)
    return () if analysis.comparison is None else (analysis.comparison,)


@dataclass(frozen=True, eq=False)
class AbResult:
    """One A/B run, for assertions.

    ``frame`` is the tidy DataFrame of every sample (``analysis.frame``), ``summary`` the per-build
    statistics, ``verdicts`` each model's verdict (``faster``, ``slower``, ``no change``,
    ``inconclusive``, ``not measured``), ``verdict`` the run's (``PASS``, ``FAIL``, ``NOT
    VERIFIED``), ``markdown`` the report as ``report.md`` has it. With several candidate builds,
    ``candidate=`` picks the comparison (default: the first).
    """

    outcome: RunOutcome
    markdown: str
    scenario: LoadedScenario
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def analysis(self) -> AnalysisResult:
        return self.outcome.analysis

    @property
    def results_dir(self) -> Path:
        return self.outcome.results_dir

    @property
    def frame(self) -> pd.DataFrame:
        return self.analysis.frame

    @property
    def summary(self) -> pd.DataFrame:
        return self.analysis.summary

    @property
    def exit_code(self) -> int:
        """What ``fvp-harness run`` would have exited with (0 ok, 1 a unit failed or an expectation
        was violated, 3 the platform failed)."""
        return self.outcome.exit_code

    @property
    def verdict(self) -> str:
        """``PASS``, ``FAIL`` or ``NOT VERIFIED`` (the report's first line says why)."""
        return self.analysis.verdict.status

    def comparison(self, candidate: str | None = None) -> Comparison:
        """The comparison against ``candidate`` (default: the first). Raises ``LookupError`` when
        the scenario compares nothing or not that build."""
        comparisons = _comparisons(self.analysis)
        if not comparisons:
            raise LookupError(f"{self.scenario.stem} compares no builds (its scenario has no "
                              "compare: section)")
        if candidate is None:
            return comparisons[0]
        for comparison in comparisons:
            if comparison.candidate == candidate:
                return comparison
        raise LookupError(f"{self.scenario.stem} has no comparison with candidate {candidate!r} "
                          f"(candidates: {', '.join(c.candidate for c in comparisons)})")

    def model(self, name: str, *, candidate: str | None = None) -> ModelComparison:
        """One model's comparison (medians, saving, CI, verdict, identity checks)."""
        comparison = self.comparison(candidate)
        for model in comparison.models:
            if model.model == name:
                return model
        raise LookupError(f"no model {name!r} in the A/B run of {self.scenario.stem} (it compared: "
                          f"{', '.join(m.model for m in comparison.models) or 'no model'})")

    @property
    def verdicts(self) -> dict[str, str]:
        """Model -> verdict of the (first) comparison."""
        try:
            comparison = self.comparison()
        except LookupError:
            return {}
        return {model.model: model.verdict for model in comparison.models}

    def saved(self, model: str, *, candidate: str | None = None) -> float:
        """Percent of the primary metric the candidate saves over the baseline for ``model`` (median
        based: ``100 * (1 - candidate / baseline)``; negative when slower). Raises ``NotMeasured``
        when there is no such number, with the reason."""
        found = self.model(model, candidate=candidate)
        if found.saved_pct is None:
            raise NotMeasured(f"{model}: no saving was measured ({found.verdict}: {found.reason}); "
                              f"see {self.results_dir / 'report.md'}")
        return float(found.saved_pct)

    def identical(self, name: str, *, model: str | None = None,
                  candidate: str | None = None) -> bool:
        """True when the identity check ``name`` (``outputs`` or a metric of
        ``compare.expect_identical``) passed for every model (or for ``model``): False when it
        failed or could not be verified. Raises ``LookupError`` when the scenario does not check
        ``name``."""
        comparison = self.comparison(candidate)
        models = ([self.model(model, candidate=candidate)] if model is not None
                  else list(comparison.models))
        checks = [check for item in models for check in item.identity if check.name == name]
        if not checks:
            known = sorted({check.name for item in comparison.models for check in item.identity})
            raise LookupError(f"{self.scenario.stem} checks no identity of {name!r} "
                              f"(compare.expect_identical lists: {', '.join(known) or 'nothing'}); "
                              "add it there or with set=")
        return all(check.status == "pass" for check in checks)

    def __repr__(self) -> str:
        parts = [f"{self.scenario.stem}: {self.verdict}"]
        try:
            comparison = self.comparison()
        except LookupError:
            comparison = None
        if comparison is not None:
            for item in comparison.models:
                # the report's words: "saved 12.0%", "20.4% slower", "no change"; never "saved
                # -20.4%"
                saved = "not measured" if item.saved_pct is None else fmt.saving_phrase(
                    item.saved_pct)
                failed = [check.name for check in item.identity if check.status != "pass"]
                extra = f", not identical/unverified: {', '.join(failed)}" if failed else ""
                parts.append(f"{item.model} {item.verdict} ({saved}{extra})")
        return f"<AbResult {'; '.join(parts)}; report: {self.results_dir / 'report.md'}>"


def same_instance_settings(one: LoadedScenario, other: LoadedScenario) -> bool:
    """True when an instance booted for ``one`` serves ``other`` as well: same target kind,
    platform, ``fvp:`` section and deploy method (secrets too: the instance's logs mask
    ``one``'s)."""
    a, b = one.scenario, other.scenario
    return (a.target == b.target and a.platform == b.platform and a.fvp == b.fvp
            and a.deploy.method == b.deploy.method and
            set(b.secret_values()) <= set(a.secret_values()))


def _failures_text(outcome: RunOutcome) -> str:
    analysis = outcome.analysis
    lines = [f"  {unit.unit_id}: {unit.failure_class}: {unit.failure} (log: "
             f"{outcome.results_dir / unit.log})" for unit in analysis.failed_units]
    lines += [f"  {unit.unit_id}: not run" for unit in analysis.not_run]
    lines += [f"  {aborted}" for aborted in outcome.aborted]
    return "\n".join(lines)


class AbRunner:
    """The ``fvp_ab`` fixture's value: ``fvp_ab(builds=..., models=..., repetitions=..., set=...)``
    runs the test's scenario (or ``scenario=PATH``) and returns an ``AbResult``."""

    def __init__(self, spec: ScenarioSpec, target: SharedTarget, *,
                 load: Callable[[ScenarioSpec], LoadedScenario],
                 respec: Callable[[Path | None, Sequence[str], str | None], ScenarioSpec],
                 build: Callable[[LoadedScenario], None],
                 results: Path, timeout_scale: float, boots: BootLog,
                 on_result: Callable[[AbResult], None]) -> None:
        self.spec = spec
        self.target = target
        self._load = load
        self._respec = respec
        self._build = build
        self._results = results
        self._timeout_scale = timeout_scale
        self._boots = boots
        self._on_result = on_result

    def __repr__(self) -> str:
        return f"<fvp_ab {self.spec.label}>"

    def __call__(self, *, builds: Iterable[str] = (), models: Iterable[str] = (),
                 repetitions: int | None = None,
                 iterations: int | None = None, set: Mapping[str, Any] | None = None,
                 scenario: str | Path | None = None, check: bool = True) -> AbResult:
        """Run the A/B and analyse it. ``builds``/``models``: only those (the run's
        ``--only-build``/``--only-model``; a comparison needs its baseline and candidate builds);
        ``repetitions``/``iterations``: ``run.repetitions`` and ``run.iterations``; ``set``: more
        overrides (``{"run.warmup": 0}``); ``scenario``: another scenario file (relative paths from
        the working folder). ``check``: raise ``AbRunFailed`` when a unit failed or did not run."""
        extra = [override_text("run.repetitions", repetitions)] if repetitions is not None else []
        extra += [override_text("run.iterations", iterations)] if iterations is not None else []
        extra += [override_text(name, value) for name, value in (set or {}).items()]
        path = Path(scenario).absolute() if scenario is not None else self.spec.path
        spec = self._respec(path, (*self.spec.overrides, *extra), self.spec.binary)
        loaded = self._load(spec)
        self._build(loaded)
        factory: TargetFactory
        if same_instance_settings(self.target.scenario, loaded):
            factory = self._borrowing_factory()
        else:
            log.info(
                "A/B run of %s needs other instance settings than fvp_target: it boots its own",
                spec.label)
            factory = self._own_factory(loaded)
        options = RunOptions(output_dir=self._results / loaded.stem,
                             timeout_scale=self._timeout_scale,
                             only_builds=tuple(builds), only_models=tuple(models))
        try:
            outcome = run_scenario(loaded, options, factory=factory)
        # Ctrl-C during the run: pytest must stop, not record a failed test
        except Interrupted as exc:
            raise KeyboardInterrupt(str(exc)) from exc
        result = AbResult(outcome, self._markdown(outcome, loaded), loaded, dict(outcome.files))
        self._on_result(result)
        unfinished = outcome.failed_units or outcome.aborted
        if check and unfinished:
            raise AbRunFailed(f"the A/B run of {spec.label} did not measure every unit (exit "
                              f"{outcome.exit_code}); results: "
                              f"{outcome.results_dir}\n{_failures_text(outcome)}")
        return result

    def _borrowing_factory(self) -> TargetFactory:
        handle = self.target

        def factory(name: str, log_dir: Path) -> AbstractContextManager[Target]:
            return handle.lend()

        return factory

    def _own_factory(self, loaded: LoadedScenario) -> TargetFactory:
        """Instances of the run's own (other ``fvp:`` settings than ``fvp_target``), each counted as
        a boot."""
        inner = default_target_factory(loaded, self._timeout_scale)
        boots = self._boots

        @contextlib.contextmanager
        def factory(name: str, log_dir: Path) -> Iterator[Target]:
            began = time.monotonic()
            label = f"{loaded.stem}/{name}"
            booted = False
            try:
                with inner(name, log_dir) as target:
                    booted = True
                    boots.add(BootRecord(label, loaded.stem, str(log_dir),
                                         round(time.monotonic() - began, 3)))
                    yield target
            except HarnessError as exc:
                if not booted:
                    boots.add(BootRecord(label, loaded.stem, str(log_dir),
                                         round(time.monotonic() - began, 3), str(exc)))
                raise

        return factory

    @staticmethod
    def _markdown(outcome: RunOutcome, loaded: LoadedScenario) -> str:
        path = outcome.files.get("markdown")
        if path is not None and Path(path).is_file():
            return Path(path).read_text(encoding="utf-8")
        # report.outputs has no markdown
        manifest = Manifest.read(ResultStore(outcome.results_dir, create=False))
        context = ReportContext.from_manifest(manifest.to_json() if manifest is not None else None)
        return render_markdown(outcome.analysis, loaded.scenario.report.title, context)
