"""Records -> tidy DataFrame -> statistics -> A/B comparison. Pure: no files, no screen, no clock.

The statistics, and why (details and exact verdict rules in ``docs/results-format.md``):

- Samples are not independent. Iterations inside one runner process share its heap layout, caches and FVP
  state, so pooling 3 processes x 10 iterations and treating them as 30 independent values is how pyperf-style
  tools end up calling identical code "significantly different". Confidence intervals here come from a
  **two-level bootstrap**: resample units (processes) with replacement, then iterations inside each chosen
  unit. With few processes the interval honestly widens.
- The headline number is the saving of the **median** (robust to the odd slow iteration), with a bootstrap CI
  of the saved percentage, and a Mann-Whitney U p-value (reported, and required for a faster/slower verdict).
- The verdict compares the CI with the scenario's minimum effect, so a change smaller than what the user cares
  about is "no change" only when the CI proves it is small, and "inconclusive" when the data cannot tell.
- Drift (a trend over execution order inside one build) is flagged: interleaving cancels it between builds,
  but a drifting platform still deserves a look.

Every random draw comes from a generator seeded by ``seed`` and the group's name, so the same records always
give the same numbers, in any order of groups.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np
import pandas as pd
from scipy import stats

from fvp_harness.report import format as fmt
from fvp_harness.store.records import Record

__all__ = [
    "NPU_CYCLE_METRICS",
    "VERDICTS",
    "AnalysisResult",
    "CompareLike",
    "Comparison",
    "DriftFlag",
    "Expectation",
    "FailedUnit",
    "GeoMean",
    "IdentityCheck",
    "MetricChange",
    "ModelComparison",
    "PrimaryChoice",
    "Settings",
    "analyse",
    "bootstrap_medians",
    "choose_primary",
    "compare",
    "decide_verdict",
    "detect_drift",
    "expectations_violated",
    "primary_candidates",
    "select_latest",
    "summarise",
    "to_frame",
    "units_frame",
]

Verdict = Literal["faster", "slower", "no change", "inconclusive", "not measured"]
VERDICTS: tuple[Verdict, ...] = ("faster", "slower", "no change", "inconclusive", "not measured")
Status = Literal["pass", "fail", "unverified"]

NPU_CYCLE_METRICS = ("npu_cycles", "bm_npu_cycles", "mlia_npu_active")
"""Metrics the report shows in its NPU-cycles column, first one present wins."""

_UNIT_IDENTITY = ["scenario", "unit_id", "key", "instance", "build", "model", "repetition", "attempt", "status"]
"""Which unit a row belongs to: the leading columns of both the sample frame and the unit frame."""

FRAME_COLUMNS = [*_UNIT_IDENTITY, "metric", "iteration", "value", "unit_of_measure", "order"]
UNIT_COLUMNS = [
    *_UNIT_IDENTITY,
    "failure_class",
    "failure",
    "log",
    "outputs",
    "build_id_seen",
    "started",
    "duration_s",
]
SUMMARY_COLUMNS = [
    "model",
    "build",
    "metric",
    "unit_of_measure",
    "n",
    "units",
    "median",
    "mean",
    "std",
    "p5",
    "p95",
    "ci_low",
    "ci_high",
]


class CompareLike(Protocol):
    """What ``compare`` needs of a comparison spec; ``scenario.Compare`` satisfies it."""

    @property
    def baseline(self) -> str: ...
    @property
    def candidate(self) -> str: ...
    @property
    def primary(self) -> str | list[str]: ...
    @property
    def expect_identical(self) -> list[str]: ...
    @property
    def min_effect(self) -> float: ...


@dataclass(frozen=True)
class Settings:
    """Statistical knobs. ``alpha`` is the significance level a faster/slower verdict needs from Mann-Whitney;
    ``drift_alpha`` the Spearman level for a drift flag."""

    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0
    alpha: float = 0.05
    drift_alpha: float = 0.01


# --- records -> frames --------------------------------------------------------------------------------------


def select_latest(records: Iterable[Record]) -> list[Record]:
    """One record per (scenario, unit id): the last ``ok`` one, else the last one. Keeps execution order.

    Retries and ``--resume`` append new attempts of a unit; analysing all of them would count a unit twice.
    """
    records = list(records)
    chosen: dict[tuple[str, str], int] = {}
    for index, record in enumerate(records):
        ident = (record.scenario, record.unit_id)
        previous = chosen.get(ident)
        if previous is None or record.status == "ok" or records[previous].status != "ok":
            chosen[ident] = index
    return [records[i] for i in sorted(chosen.values())]


def _execution_order(records: Sequence[Record]) -> list[int]:
    """Positions of records sorted by start time, ties (and unparsable times) broken by file order."""
    return sorted(range(len(records)), key=lambda i: (records[i].started, i))


def to_frame(records: Iterable[Record], *, latest_only: bool = True) -> pd.DataFrame:
    """Tidy samples: one row per (unit, metric, iteration) with the unit's identity and status.

    ``order`` numbers every sample in execution order across the whole run (by unit start time, then
    iteration), for drift checks. ``latest_only`` applies ``select_latest`` first.
    """
    recs = select_latest(records) if latest_only else list(records)
    columns: dict[str, list[object]] = {name: [] for name in FRAME_COLUMNS}
    counter = 0
    for i in _execution_order(recs):
        record = recs[i]
        for metric, values in record.samples.items():
            uom = record.metric_units.get(metric, "")
            for iteration, value in enumerate(values):
                columns["scenario"].append(record.scenario)
                columns["unit_id"].append(record.unit_id)
                columns["key"].append(record.key)
                columns["instance"].append(record.instance)
                columns["build"].append(record.build)
                columns["model"].append(record.model)
                columns["repetition"].append(record.repetition)
                columns["attempt"].append(record.attempt)
                columns["status"].append(record.status)
                columns["metric"].append(metric)
                columns["iteration"].append(iteration)
                columns["value"].append(float(value))
                columns["unit_of_measure"].append(uom)
                columns["order"].append(counter)
                counter += 1
    frame = pd.DataFrame(columns)
    return frame.astype(
        {
            "repetition": "int64",
            "attempt": "int64",
            "iteration": "int64",
            "value": "float64",
            "order": "int64",
        }
    )


def _outputs_digest(outputs: Mapping[str, str]) -> str:
    return ";".join(f"{name}={digest}" for name, digest in sorted(outputs.items()))


def units_frame(records: Iterable[Record], *, latest_only: bool = True) -> pd.DataFrame:
    """One row per unit, in execution order: identity, status, failure class and text, log path, outputs
    (``name=sha256;...``)."""
    recs = select_latest(records) if latest_only else list(records)
    recs = [recs[i] for i in _execution_order(recs)]
    rows = [
        {
            "scenario": r.scenario,
            "unit_id": r.unit_id,
            "key": r.key,
            "instance": r.instance,
            "build": r.build,
            "model": r.model,
            "repetition": r.repetition,
            "attempt": r.attempt,
            "status": r.status,
            "failure_class": r.failure_class or "",
            "failure": r.failure or "",
            "log": r.log or "",
            "outputs": _outputs_digest(r.outputs),
            "build_id_seen": r.build_id_seen or "",
            "started": r.started,
            "duration_s": float(r.duration_s),
        }
        for r in recs
    ]
    return pd.DataFrame(rows, columns=UNIT_COLUMNS).astype(
        {"repetition": "int64", "attempt": "int64", "duration_s": "float64"}
    )


# --- bootstrap ----------------------------------------------------------------------------------------------


def _rng(seed: int, *labels: str) -> np.random.Generator:
    """A generator that depends on the seed and the group's labels only, not on the order of groups."""
    return np.random.default_rng([seed, *(zlib.crc32(label.encode()) for label in labels)])


def bootstrap_medians(groups: Sequence[np.ndarray], resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap distribution (``resamples`` values) of the median of samples that come in ``groups`` (units).

    Two levels: draw as many units as there are, with replacement; from each drawn unit draw ``m`` samples
    with replacement, where ``m`` is the mean unit size (exactly the unit size when all units are equal). With
    one unit it is the plain bootstrap. Vectorised in chunks so memory stays bounded for long runs.
    """
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if not groups:
        return np.full(resamples, np.nan)
    flat = np.concatenate(groups)
    sizes = np.array([len(g) for g in groups])
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    k = len(groups)
    m = max(1, round(len(flat) / k))
    out = np.empty(resamples)
    chunk = max(1, 4_000_000 // max(1, k * m))
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        if k == 1:
            idx = rng.integers(0, len(flat), size=(b, len(flat)))
        else:
            chosen = rng.integers(0, k, size=(b, k))
            within = (rng.random((b, k, m)) * sizes[chosen][..., None]).astype(np.int64)
            idx = (offsets[chosen][..., None] + within).reshape(b, k * m)
        out[start : start + b] = np.median(flat[idx], axis=1)
    return out


def _interval(draws: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    finite = draws[np.isfinite(draws)]
    if len(finite) < max(10, len(draws) // 2):
        return None, None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


# --- summaries ----------------------------------------------------------------------------------------------


def _first_seen(values: pd.Series) -> list[str]:
    return list(dict.fromkeys(values.tolist()))


def summarise(frame: pd.DataFrame, settings: Settings | None = None) -> pd.DataFrame:
    """Per (model, build, metric) of ok units: n, units, median, mean, std, p5, p95, bootstrap CI of the
    median.

    Rows follow the order models, builds and metrics first appear in the frame (the run order), so the table
    is stable for the same records.
    """
    settings = settings or Settings()
    ok = frame[frame["status"] == "ok"] if len(frame) else frame
    rows: list[dict[str, object]] = []
    if len(ok):
        for (model, build, metric), group in ok.groupby(["model", "build", "metric"], sort=False):
            values = group["value"].to_numpy()
            units = [g["value"].to_numpy() for _, g in group.groupby("unit_id", sort=False)]
            rng = _rng(settings.seed, str(model), str(build), str(metric))
            draws = bootstrap_medians(units, settings.resamples, rng)
            low, high = _interval(draws, settings.confidence)
            rows.append(
                {
                    "model": model,
                    "build": build,
                    "metric": metric,
                    "unit_of_measure": group["unit_of_measure"].iloc[0],
                    "n": len(values),
                    "units": len(units),
                    "median": float(np.median(values)),
                    "mean": float(np.mean(values)),
                    "std": float(np.std(values, ddof=1)) if len(values) > 1 else 0.0,
                    "p5": float(np.percentile(values, 5)),
                    "p95": float(np.percentile(values, 95)),
                    "ci_low": low,
                    "ci_high": high,
                }
            )
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    return summary.astype({"n": "int64", "units": "int64", "ci_low": "float64", "ci_high": "float64"})


# --- comparison objects -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IdentityCheck:
    """Whether a metric (or ``outputs``) has one single value across every ok unit of both builds for a model.

    ``values`` maps build -> its distinct values with counts (``85092 x30``), so a failure shows what
    differed. ``unverified`` when there is nothing to compare (a build has no values).
    """

    model: str
    name: str
    status: Status
    values: dict[str, list[str]]
    detail: str


@dataclass(frozen=True)
class MetricChange:
    """Median of a secondary metric (e.g. NPU cycles) per build for one model; are all values equal?"""

    metric: str
    unit: str
    baseline_median: float | None
    candidate_median: float | None
    identical: bool | None


@dataclass(frozen=True)
class DriftFlag:
    """A monotonic trend of a metric over execution order inside one build (Spearman), and its size."""

    model: str
    build: str
    metric: str
    n: int
    rho: float
    p_value: float
    change_pct: float
    """Median of the last third minus median of the first third, in % of the overall median."""
    flagged: bool


@dataclass(frozen=True)
class ModelComparison:
    """Candidate vs baseline for one model on the primary metric. ``saved_pct = 100 * (1 - ratio)``."""

    model: str
    metric: str
    unit: str
    n_baseline: int
    n_candidate: int
    units_baseline: int
    units_candidate: int
    baseline_median: float | None
    candidate_median: float | None
    baseline_ci: tuple[float | None, float | None]
    candidate_ci: tuple[float | None, float | None]
    ratio: float | None
    saved_pct: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    """Mann-Whitney U, two-sided, over all samples of both builds."""
    p_units: float | None
    """Welch t-test over log unit medians (each process counted once); None if a build has < 2 units."""
    verdict: Verdict
    reason: str
    identity: tuple[IdentityCheck, ...] = ()
    others: tuple[MetricChange, ...] = ()


@dataclass(frozen=True)
class GeoMean:
    """Geometric mean of the per-model ratios (models with a ratio), its CI as saved %, and a verdict."""

    models: int
    ratio: float
    saved_pct: float
    ci_low: float | None
    ci_high: float | None
    verdict: Verdict
    reason: str


@dataclass(frozen=True)
class FailedUnit:
    """A unit whose latest attempt failed: what, how (class and text) and where to look (log path)."""

    unit_id: str
    build: str
    model: str
    repetition: int
    attempt: int
    failure_class: str
    failure: str
    log: str


@dataclass(frozen=True)
class Expectation:
    """One checked expectation: ``identity`` (``name`` = a metric or ``outputs``) or ``min_effect``."""

    kind: Literal["identity", "min_effect"]
    model: str
    name: str
    status: Status
    detail: str


@dataclass(frozen=True)
class PrimaryChoice:
    """Which metric headlines the comparison, and why (a scenario may list several in order of preference)."""

    metric: str
    candidates: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Comparison:
    """Everything the A/B table shows. ``primary_choice`` says why ``primary`` is the headline metric."""

    baseline: str
    candidate: str
    primary: str
    unit: str
    min_effect: float
    models: tuple[ModelComparison, ...]
    geomean: GeoMean | None
    expectations: tuple[Expectation, ...]
    primary_choice: PrimaryChoice | None = None


@dataclass(frozen=True, eq=False)
class AnalysisResult:
    """What ``report`` renders: the frames, the summary, the comparison (None without a ``compare`` spec),
    drift
    checks and failed units."""

    frame: pd.DataFrame
    units: pd.DataFrame
    summary: pd.DataFrame
    comparison: Comparison | None
    drift: tuple[DriftFlag, ...]
    failed_units: tuple[FailedUnit, ...]
    settings: Settings = field(default_factory=Settings)


# --- verdicts -----------------------------------------------------------------------------------------------


def decide_verdict(
    ci_low: float | None,
    ci_high: float | None,
    p_value: float | None,
    min_effect: float,
    alpha: float = 0.05,
) -> tuple[Verdict, str]:
    """The verdict from the CI of the saved % (positive = candidate faster), the p-value and the minimum
    effect m.

    - no change: the whole CI lies within [-m, +m];
    - faster: the whole CI lies above +m, and p < alpha (when there is a p-value);
    - slower: the whole CI lies below -m, and p < alpha (when there is a p-value);
    - inconclusive: anything else (the CI straddles a boundary, or the test disagrees with the CI).
    A missing CI (too few samples, zero baseline) is inconclusive.
    """
    if ci_low is None or ci_high is None:
        return "inconclusive", "no confidence interval (too few samples or a zero baseline)"
    ci = f"CI [{fmt.signed_percent(ci_low, 2)}, {fmt.signed_percent(ci_high, 2)}]"
    if -min_effect <= ci_low and ci_high <= min_effect:
        return "no change", f"{ci} lies within ±{min_effect:g}%"
    significant = p_value is None or p_value < alpha
    p_text = f"p={p_value:.3g}" if p_value is not None else ""
    if ci_low > min_effect:
        if significant:
            return "faster", f"{ci} lies above +{min_effect:g}%"
        return "inconclusive", f"{ci} lies above +{min_effect:g}% but {p_text} ≥ {alpha:g}"
    if ci_high < -min_effect:
        if significant:
            return "slower", f"{ci} lies below -{min_effect:g}%"
        return "inconclusive", f"{ci} lies below -{min_effect:g}% but {p_text} ≥ {alpha:g}"
    return "inconclusive", f"{ci} straddles ±{min_effect:g}%: more repetitions would settle it"


def _unit_level_interval(
    base_groups: Sequence[np.ndarray], cand_groups: Sequence[np.ndarray], ratio: float, confidence: float
) -> tuple[tuple[float, float], float] | None:
    """Welch t-interval of the saved % from log unit medians, and its p-value.

    Why: a percentile bootstrap over 3 processes has only 10 distinct unit draws and its interval is far too
    narrow when processes differ (the pyperf "identical code is significantly different" pain). The t-interval
    counts each process once and uses Student quantiles, so few processes give an honestly wide interval.
    None when a build has fewer than 2 units or a non-positive median.
    """
    if len(base_groups) < 2 or len(cand_groups) < 2 or ratio <= 0:
        return None
    bmeds = np.array([np.median(g) for g in base_groups])
    cmeds = np.array([np.median(g) for g in cand_groups])
    if (bmeds <= 0).any() or (cmeds <= 0).any():
        return None
    lb, lc = np.log(bmeds), np.log(cmeds)
    vb, vc = lb.var(ddof=1) / len(lb), lc.var(ddof=1) / len(lc)
    se = math.sqrt(vb + vc)
    centre = float(lc.mean() - lb.mean())
    if se == 0:
        saved = 100.0 * (1.0 - math.exp(centre))
        return (saved, saved), (1.0 if centre == 0 else 0.0)
    denominator = vb**2 / (len(lb) - 1) + vc**2 / (len(lc) - 1)
    df = (vb + vc) ** 2 / denominator if denominator > 0 else len(lb) + len(lc) - 2
    quantile = float(stats.t.ppf(1 - (1 - confidence) / 2, df))
    low = 100.0 * (1.0 - math.exp(centre + quantile * se))
    high = 100.0 * (1.0 - math.exp(centre - quantile * se))
    p_units = float(2 * stats.t.sf(abs(lc.mean() - lb.mean()) / se, df))
    return (low, high), p_units


def _mann_whitney(a: np.ndarray, b: np.ndarray) -> float | None:
    if len(a) == 0 or len(b) == 0:
        return None
    if np.ptp(np.concatenate([a, b])) == 0:
        return 1.0  # all values equal: no evidence of a difference (scipy would divide by a zero variance)
    return float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)


# --- identity -----------------------------------------------------------------------------------------------


def _fmt_value(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _counted(values: Sequence[object]) -> list[str]:
    counts: dict[str, int] = {}
    for value in values:
        text = _fmt_value(value)
        counts[text] = counts.get(text, 0) + 1
    return [f"{text} x{count}" for text, count in counts.items()]


_LONG_HEX = re.compile(r"\b([0-9a-f]{12})[0-9a-f]{20,}\b")


def _short_hashes(value: object) -> object:
    """Outputs digests list full sha256 values; twelve hex digits are enough to see which files differ."""
    return _LONG_HEX.sub(r"\1…", value) if isinstance(value, str) else value


def _identity(model: str, name: str, per_build: dict[str, list[object]]) -> IdentityCheck:
    listing = {build: _counted([_short_hashes(v) for v in values]) for build, values in per_build.items()}
    empty = [build for build, values in per_build.items() if not values]
    if empty:
        return IdentityCheck(model, name, "unverified", listing, f"no {name} recorded for {', '.join(empty)}")
    distinct = {_fmt_value(v) for values in per_build.values() for v in values}
    if name == "outputs" and distinct == {""}:
        return IdentityCheck(model, name, "unverified", listing, "no output hashes recorded")
    if len(distinct) == 1:
        value = next(iter(distinct))
        shown = value if name != "outputs" else f"{len(value.split(';'))} file(s)"
        return IdentityCheck(model, name, "pass", listing, f"all identical ({shown})")
    detail = "; ".join(f"{build}: {', '.join(vals)}" for build, vals in listing.items())
    return IdentityCheck(model, name, "fail", listing, f"values differ: {detail}")


# --- drift --------------------------------------------------------------------------------------------------


def detect_drift(
    frame: pd.DataFrame, metric: str, min_effect: float = 1.0, settings: Settings | None = None
) -> tuple[DriftFlag, ...]:
    """Spearman correlation of ``metric`` with execution order, per (model, build), over ok units.

    Flagged when p < ``drift_alpha`` and the trend's size (median of the last third minus the first third, in
    % of the median) is at least ``min_effect``: a trend too small to matter, or not significant, is not
    flagged. Needs 8 samples; constant series never drift.
    """
    settings = settings or Settings()
    sel = frame[(frame["metric"] == metric) & (frame["status"] == "ok")] if len(frame) else frame
    flags: list[DriftFlag] = []
    if not len(sel):
        return ()
    for (model, build), group in sel.groupby(["model", "build"], sort=False):
        group = group.sort_values("order")
        values = group["value"].to_numpy()
        n = len(values)
        if n < 8 or np.ptp(values) == 0:
            continue
        rho, p_value = stats.spearmanr(np.arange(n), values)
        third = max(1, n // 3)
        median = float(np.median(values))
        change = (
            (float(np.median(values[-third:])) - float(np.median(values[:third]))) / median * 100 if median else 0.0
        )
        flagged = bool(p_value < settings.drift_alpha and abs(change) >= min_effect)
        flags.append(DriftFlag(str(model), str(build), metric, n, float(rho), float(p_value), change, flagged))
    return tuple(flags)


# --- comparison ---------------------------------------------------------------------------------------------


def primary_candidates(spec: CompareLike) -> list[str]:
    """``spec.primary`` as a list in order of preference."""
    return [spec.primary] if isinstance(spec.primary, str) else list(spec.primary)


def choose_primary(frame: pd.DataFrame, spec: CompareLike) -> PrimaryChoice:
    """The first metric of ``spec.primary`` that every ok unit of the two compared builds produced.

    Why per unit and not per model: a metric some units lack (a stock runner prints no CPU-time line) would
    compare different sets of units; the next metric in the list that all of them printed is a fair headline.
    When none qualifies, the one most units produced is taken and the reason says so.
    """
    candidates = tuple(primary_candidates(spec))
    builds = (spec.baseline, spec.candidate)
    ok = frame[(frame["status"] == "ok") & (frame["build"].isin(builds))] if len(frame) else frame
    if len(candidates) == 1:
        return PrimaryChoice(candidates[0], candidates, "the scenario's compare.primary")
    units = set(ok["unit_id"]) if len(ok) else set()
    if not units:
        return PrimaryChoice(candidates[0], candidates, f"first of {', '.join(candidates)}: no unit of "
                             f"{spec.baseline} or {spec.candidate} ran successfully")
    having = {name: set(ok.loc[ok["metric"] == name, "unit_id"]) for name in candidates}
    counts = ", ".join(f"{name}: {len(having[name])} of {len(units)} units" for name in candidates)
    for name in candidates:
        if having[name] == units:
            why = f"first of {', '.join(candidates)} that every unit produced"
            if name != candidates[0]:  # say what the preferred ones lacked
                why += f" ({counts})"
            return PrimaryChoice(name, candidates, why)
    best = max(candidates, key=lambda name: len(having[name]))
    return PrimaryChoice(best, candidates, f"no metric of {', '.join(candidates)} was produced by every unit "
                         f"({counts}); the most complete one is used")


def _metric_name(metric: object) -> str:
    return metric if isinstance(metric, str) else str(getattr(metric, "name"))  # noqa: B009 - duck-typed spec


def compare(
    frame: pd.DataFrame,
    spec: CompareLike,
    metrics: Sequence[object] = (),
    *,
    units: pd.DataFrame | None = None,
    settings: Settings | None = None,
) -> Comparison:
    """Candidate vs baseline per model on the primary metric (``choose_primary``), plus identity checks and
    secondary metrics.

    ``metrics`` (names or MetricSpec-like objects) adds secondary metrics shown beside the primary (e.g. NPU
    cycles); ``expect_identical`` metrics are always included. ``units`` (from ``units_frame``) is needed for
    the ``outputs`` identity check; without it that check is unverified.
    """
    settings = settings or Settings()
    choice = choose_primary(frame, spec)
    primary = choice.metric
    ok = frame[frame["status"] == "ok"] if len(frame) else frame
    builds = (spec.baseline, spec.candidate)
    models = _first_seen(frame["model"]) if len(frame) else []
    if units is not None and len(units):
        models = list(dict.fromkeys([*models, *_first_seen(units["model"])]))
    others = list(dict.fromkeys([*(_metric_name(m) for m in metrics), *spec.expect_identical]))
    others = [m for m in others if m not in ("outputs", primary)]
    primary_rows = ok[ok["metric"] == primary] if len(ok) else ok
    unit_label = primary_rows["unit_of_measure"].iloc[0] if len(primary_rows) else ""

    results: list[ModelComparison] = []
    ratio_draws: list[np.ndarray] = []
    expectations: list[Expectation] = []
    for model in models:
        sel = primary_rows[primary_rows["model"] == model] if len(primary_rows) else primary_rows
        groups: dict[str, list[np.ndarray]] = {}
        for build in builds:
            rows = sel[sel["build"] == build] if len(sel) else sel
            groups[build] = [g["value"].to_numpy() for _, g in rows.groupby("unit_id", sort=False)] if len(rows) else []
        base_groups, cand_groups = groups[spec.baseline], groups[spec.candidate]
        base = np.concatenate(base_groups) if base_groups else np.array([])
        cand = np.concatenate(cand_groups) if cand_groups else np.array([])
        bmed = float(np.median(base)) if len(base) else None
        cmed = float(np.median(cand)) if len(cand) else None
        ratio = saved = low = high = p_value = p_units = None
        bci: tuple[float | None, float | None] = (None, None)
        cci: tuple[float | None, float | None] = (None, None)
        if bmed is None or cmed is None:
            missing = [b for b, v in ((spec.baseline, base), (spec.candidate, cand)) if not len(v)]
            verdict: Verdict = "not measured"
            reason = f"no {primary} samples for {', '.join(missing)}"
        else:
            bdraws = bootstrap_medians(base_groups, settings.resamples, _rng(settings.seed, model, spec.baseline))
            cdraws = bootstrap_medians(cand_groups, settings.resamples, _rng(settings.seed, model, spec.candidate))
            bci, cci = _interval(bdraws, settings.confidence), _interval(cdraws, settings.confidence)
            p_value = _mann_whitney(base, cand)
            if bmed == 0:
                verdict, reason = "inconclusive", "baseline median is 0: no ratio"
            else:
                ratio = cmed / bmed
                saved = 100.0 * (1.0 - ratio)
                with np.errstate(divide="ignore", invalid="ignore"):
                    draws = cdraws / bdraws
                draws = np.where(np.isfinite(draws) & (draws > 0), draws, np.nan)
                low, high = _interval(100.0 * (1.0 - draws), settings.confidence)
                cluster = _unit_level_interval(base_groups, cand_groups, ratio, settings.confidence)
                if cluster is not None:
                    (t_low, t_high), p_units = cluster
                    if low is not None and high is not None:
                        low, high = min(low, t_low), max(high, t_high)
                if len(base) < 2 or len(cand) < 2:
                    verdict, reason = "inconclusive", "fewer than 2 samples in a build"
                else:
                    verdict, reason = decide_verdict(low, high, p_value, spec.min_effect, settings.alpha)
                if ratio > 0 and np.isfinite(draws).any():
                    ratio_draws.append(draws)
        identity: list[IdentityCheck] = []
        for name in spec.expect_identical:
            if name == "outputs":
                per_build: dict[str, list[object]] = {}
                for build in builds:
                    rows_u = (
                        units[(units["model"] == model) & (units["build"] == build) & (units["status"] == "ok")]
                        if units is not None and len(units)
                        else None
                    )
                    per_build[build] = rows_u["outputs"].tolist() if rows_u is not None else []
            else:
                per_build = {
                    build: (
                        ok[(ok["model"] == model) & (ok["build"] == build) & (ok["metric"] == name)]["value"].tolist()
                        if len(ok)
                        else []
                    )
                    for build in builds
                }
            check = _identity(model, name, per_build)
            identity.append(check)
            expectations.append(Expectation("identity", model, name, check.status, check.detail))
        changes: list[MetricChange] = []
        for name in others:
            rows_m = ok[(ok["model"] == model) & (ok["metric"] == name)] if len(ok) else ok
            if not len(rows_m):
                continue
            vals = {b: rows_m[rows_m["build"] == b]["value"].to_numpy() for b in builds}
            both = [v for v in vals.values() if len(v)]
            identical = bool(np.ptp(np.concatenate(both)) == 0) if len(both) == 2 else None
            changes.append(
                MetricChange(
                    name,
                    str(rows_m["unit_of_measure"].iloc[0]),
                    float(np.median(vals[spec.baseline])) if len(vals[spec.baseline]) else None,
                    float(np.median(vals[spec.candidate])) if len(vals[spec.candidate]) else None,
                    identical,
                )
            )
        expectations.append(_effect_expectation(model, verdict, reason, saved, spec.min_effect))
        results.append(
            ModelComparison(
                model=model,
                metric=primary,
                unit=unit_label,
                n_baseline=len(base),
                n_candidate=len(cand),
                units_baseline=len(base_groups),
                units_candidate=len(cand_groups),
                baseline_median=bmed,
                candidate_median=cmed,
                baseline_ci=bci,
                candidate_ci=cci,
                ratio=ratio,
                saved_pct=saved,
                ci_low=low,
                ci_high=high,
                p_value=p_value,
                p_units=p_units,
                verdict=verdict,
                reason=reason,
                identity=tuple(identity),
                others=tuple(changes),
            )
        )
    return Comparison(
        baseline=spec.baseline,
        candidate=spec.candidate,
        primary=primary,
        unit=unit_label,
        min_effect=spec.min_effect,
        models=tuple(results),
        geomean=_geomean(results, ratio_draws, spec.min_effect, settings),
        expectations=tuple(expectations),
        primary_choice=choice,
    )


def _effect_expectation(model: str, verdict: Verdict, reason: str, saved: float | None, m: float) -> Expectation:
    """The minimum-effect expectation: the candidate must not be slower by more than ``min_effect``.

    ``slower`` fails it; ``not measured`` and ``inconclusive`` leave it unverified; faster and no change pass.
    """
    if verdict == "slower":
        status: Status = "fail"
    elif verdict in ("not measured", "inconclusive"):
        status = "unverified"
    else:
        status = "pass"
    shown = f"saved {saved:.1f}%; " if saved is not None else ""
    return Expectation("min_effect", model, f"not slower than -{m:g}%", status, f"{verdict}: {shown}{reason}")


def _geomean(
    results: Sequence[ModelComparison], draws: Sequence[np.ndarray], min_effect: float, settings: Settings
) -> GeoMean | None:
    ratios = [r.ratio for r in results if r.ratio is not None and r.ratio > 0]
    if len(ratios) < 2 or len(draws) != len(ratios):
        return None
    ratio = float(math.exp(sum(math.log(r) for r in ratios) / len(ratios)))
    with np.errstate(invalid="ignore"):
        stacked = np.exp(np.mean(np.log(np.vstack(draws)), axis=0))
    low, high = _interval(100.0 * (1.0 - stacked), settings.confidence)
    verdict, reason = decide_verdict(low, high, None, min_effect, settings.alpha)
    return GeoMean(len(ratios), ratio, 100.0 * (1.0 - ratio), low, high, verdict, reason)


def _failed_units(units: pd.DataFrame) -> tuple[FailedUnit, ...]:
    if not len(units):
        return ()
    failed = units[units["status"] != "ok"]
    return tuple(
        FailedUnit(
            str(row["unit_id"]),
            str(row["build"]),
            str(row["model"]),
            int(row["repetition"]),
            int(row["attempt"]),
            str(row["failure_class"]) or "unknown",
            str(row["failure"]),
            str(row["log"]),
        )
        for row in failed.to_dict("records")
    )


def analyse(
    records: Iterable[Record],
    spec: CompareLike | None = None,
    metrics: Sequence[object] = (),
    settings: Settings | None = None,
) -> AnalysisResult:
    """The whole pipeline for ``report``: frames, summary, comparison (if ``spec``), drift of the primary
    metric
    (``cpu_time`` without a spec) and failed units."""
    settings = settings or Settings()
    records = list(records)
    frame = to_frame(records)
    units = units_frame(records)
    comparison = compare(frame, spec, metrics, units=units, settings=settings) if spec is not None else None
    primary = comparison.primary if comparison is not None else "cpu_time"
    min_effect = spec.min_effect if spec is not None else 1.0
    return AnalysisResult(
        frame=frame,
        units=units,
        summary=summarise(frame, settings),
        comparison=comparison,
        drift=detect_drift(frame, primary, min_effect, settings),
        failed_units=_failed_units(units),
        settings=settings,
    )


def expectations_violated(result: AnalysisResult, *, strict: bool = False) -> bool:
    """True when any expectation failed (an identity check differs, or a model got slower than -min_effect).

    ``strict`` also counts ``unverified`` ones (nothing to compare, inconclusive, not measured), for CI jobs
    that must prove the expectation rather than merely not disprove it. Failed units are reported separately
    (``result.failed_units``), so "nothing measured" and "regression" stay distinguishable.
    """
    if result.comparison is None:
        return False
    bad = {"fail", "unverified"} if strict else {"fail"}
    return any(e.status in bad for e in result.comparison.expectations)
