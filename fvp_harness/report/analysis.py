"""Records -> tidy DataFrame -> statistics -> A/B comparison (one per pair of builds). Pure: no files, no screen,
no clock.

The statistics, and why (details and exact verdict rules in ``docs/results-format.md``):

- Samples are not independent. Iterations inside one runner process share its heap layout, caches and FVP
  state, so pooling 3 processes x 10 iterations and treating them as 30 independent values is how pyperf-style
  tools end up calling identical code "significantly different". Confidence intervals here come from a
  **two-level bootstrap**: resample units (processes) with replacement, then iterations inside each chosen
  unit. With few processes the interval honestly widens.
- The headline number is the saving of the **median** (robust to the odd slow iteration), with a bootstrap CI
  of the saved percentage, and a p-value computed at the same level as that CI (``process_level_p``: the larger of
  the two-level bootstrap's p and the Welch t-test's over unit medians, as the CI is the wider of the two
  intervals), required for a faster/slower verdict. The Mann-Whitney U over pooled iterations is kept as
  ``p_pooled`` for the CSV only: it treats iterations of one process as independent, which they are not.
- The verdict compares the CI with the scenario's minimum effect, so a change smaller than what the user cares
  about is "no change" only when the CI proves it is small, and "inconclusive" when the data cannot tell.
- Drift (a trend over execution order inside one build) is flagged: interleaving cancels it between builds,
  but a drifting platform still deserves a look.
- Other metrics are judged the same way: a **gate** (largest allowed regression) is violated only when the whole
  CI of the change lies beyond it, and an identity check with a **tolerance** passes only when the whole CI lies
  within it; a CI that straddles the limit is unverified, never a pass or a failure.
- Nothing is averaged that is no measurement (NaN, infinities, impossible counter values are left out and
  reported), records of other settings do not mix in (``planned``), and the run's verdict is PASS, FAIL or NOT
  VERIFIED with its reasons: what nobody could check is never called a pass.

Every random draw comes from a generator seeded by ``seed`` and the group's name, so the same records always
give the same numbers, in any order of groups.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd
from scipy import stats

from fvp_harness.report import format as fmt
from fvp_harness.report.partitions import compare_partitions
from fvp_harness.scenario.metrics import BUILTIN_METRICS, check_sample
from fvp_harness.store.records import Record

__all__ = [
    "NPU_CYCLE_METRICS",
    "VERDICTS",
    "AnalysisResult",
    "CompareLike",
    "Comparison",
    "DriftFlag",
    "DroppedSamples",
    "Expectation",
    "FailedUnit",
    "GateCheck",
    "GateLike",
    "GeoMean",
    "IdentityCheck",
    "MetricChange",
    "ModelComparison",
    "NotRunUnit",
    "PrimaryChoice",
    "RunVerdict",
    "SamplingNote",
    "Settings",
    "ToleranceLike",
    "analyse",
    "bootstrap_medians",
    "bootstrap_p",
    "build_pairs",
    "choose_primary",
    "compare",
    "decide_gate",
    "decide_verdict",
    "detect_drift",
    "expectations_violated",
    "percentile_interval",
    "primary_candidates",
    "primary_comparisons",
    "process_level_p",
    "run_verdict",
    "select_latest",
    "summarise",
    "to_frame",
    "units_frame",
]

Verdict = Literal["faster", "slower", "no change", "inconclusive", "not measured"]
VERDICTS: tuple[Verdict, ...] = ("faster", "slower", "no change", "inconclusive", "not measured")
Status = Literal["pass", "fail", "unverified"]
GateVerdict = Literal["within", "violated", "inconclusive", "not measured"]
"""A gate's verdict: ``within`` (pass) the CI lies entirely at or below the allowed regression; ``violated`` (fail)
it lies entirely above; ``inconclusive`` (unverified) it straddles the limit or there is no CI; ``not measured``
(unverified) a build has no valid samples of the metric."""

log = logging.getLogger(__name__)

PLAUSIBLE_LIMIT = 2.0**63
"""Built-in metrics are times and counters: a value this large (a 64-bit counter printed with ``%d`` by old
builds) or negative is not a measurement."""

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


class ToleranceLike(Protocol):
    """An ``expect_identical`` entry with a tolerance (``scenario.IdentityTolerance``): ``amount`` is in percent of
    the baseline median when ``relative``, else in the metric's unit; ``exact`` when no tolerance was given."""

    @property
    def metric(self) -> str: ...
    @property
    def exact(self) -> bool: ...
    @property
    def relative(self) -> bool: ...
    @property
    def amount(self) -> float: ...


class GateLike(Protocol):
    """A gate (``scenario.Gate``): the largest allowed regression, ``amount`` in percent of the baseline median
    when ``relative``, else in ``unit`` (None: any unit, for an amount of 0)."""

    @property
    def relative(self) -> bool: ...
    @property
    def amount(self) -> float: ...
    @property
    def unit(self) -> str | None: ...


class CompareLike(Protocol):
    """What ``compare`` needs of a comparison spec; ``scenario.Compare`` satisfies it. ``expect_identical`` holds
    names (exact) or ``ToleranceLike`` entries. Optional (read with ``getattr``, so older spec objects keep
    working): ``gates`` (metric -> ``GateLike``), and ``build_pairs``, every ``(baseline, candidate)`` pair to
    compare in order (``analyse`` compares each; without it the one pair ``(baseline, candidate)``)."""

    @property
    def baseline(self) -> str: ...
    @property
    def candidate(self) -> str: ...
    @property
    def primary(self) -> str | list[str]: ...
    @property
    def expect_identical(self) -> Sequence[object]: ...
    @property
    def min_effect(self) -> float: ...


@dataclass(frozen=True)
class Settings:
    """Statistical knobs. ``alpha`` is the significance level a faster/slower verdict needs from the process-level
    p-value (``process_level_p``); ``drift_alpha`` the Spearman level for a drift flag. The bootstrap's p cannot go
    below ``2 / (resamples + 1)``: with fewer than ``2 / alpha`` resamples no verdict could be faster or slower."""

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


def _invalid(metric: str, value: float, unit: str = "") -> str | None:
    """Why a stored sample is no measurement (None when it is one): not finite; for a built-in metric (times and
    counters) negative or at least 2^63; and, for any metric, what ``scenario.metrics.check_sample`` refuses for its
    unit of measure (a time beyond a day, a negative counter). Scraping refuses these since parsers version 2;
    records of older versions may hold them."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if metric in BUILTIN_METRICS:
        if value < 0:
            return "negative"
        if value >= PLAUSIBLE_LIMIT:
            return ">= 2^63"
    why = check_sample(value, unit, "run")  # per-run limits: the looser ones (a record does not say which)
    if why is None:
        return None
    return "negative" if why.startswith("negative") else ">= 2^63" if "2**63" in why else why.split(" (")[0]


def _columns(recs: Sequence[Record]) -> tuple[dict[str, list[object]], tuple[DroppedSamples, ...]]:
    """The sample frame's columns as lists (rows in execution order) and the values left out: what ``_frame`` turns
    into a DataFrame, and what the statistics group without one (``_Samples``)."""
    columns: dict[str, list[object]] = {name: [] for name in FRAME_COLUMNS}
    dropped: list[DroppedSamples] = []
    counter = 0
    for i in _execution_order(recs):
        record = recs[i]
        for metric, values in record.samples.items():
            uom = record.metric_units.get(metric, "")
            kinds: dict[str, int] = {}
            for iteration, value in enumerate(values):
                why = _invalid(metric, float(value), uom)
                if why is not None:
                    kinds[why] = kinds.get(why, 0) + 1
                    continue
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
            if kinds:
                shown = ", ".join(f"{kind} x{count}" for kind, count in kinds.items())
                dropped.append(DroppedSamples(record.unit_id, record.build, record.model, metric,
                                              sum(kinds.values()), len(values), shown))
    return columns, tuple(dropped)


def _frame_of(columns: Mapping[str, Sequence[object]]) -> pd.DataFrame:
    types = {"repetition": "int64", "attempt": "int64", "iteration": "int64", "value": "float64", "order": "int64"}
    return _typed(pd.DataFrame(columns), types)


def _typed(frame: pd.DataFrame, types: Mapping[str, str]) -> pd.DataFrame:
    """``frame.astype(types)`` for the columns not of their type already (pandas infers them from the values, except
    in an empty frame): the same frame, without the copy."""
    wrong = {name: kind for name, kind in types.items() if frame[name].dtype != kind}
    return frame.astype(wrong) if wrong else frame


def _frame(recs: Sequence[Record]) -> tuple[pd.DataFrame, tuple[DroppedSamples, ...]]:
    columns, dropped = _columns(recs)
    return _frame_of(columns), dropped


def to_frame(records: Iterable[Record], *, latest_only: bool = True) -> pd.DataFrame:
    """Tidy samples: one row per (unit, metric, iteration) with the unit's identity and status.

    ``order`` numbers every sample in execution order across the whole run (by unit start time, then
    iteration), for drift checks. ``latest_only`` applies ``select_latest`` first.

    Stored values that are no measurement are left out with a logged warning (``analyse`` keeps them as
    ``AnalysisResult.dropped`` for the report): NaN and infinities of any metric, and negative or >= 2^63 values
    of a built-in metric (times and counters). ``iteration`` keeps the value's position in the record.
    """
    recs = select_latest(records) if latest_only else list(records)
    frame, dropped = _frame(recs)
    for item in dropped:
        log.warning("%s: %d %s value(s) left out (%s)", item.unit_id, item.count, item.metric, item.kinds)
    return frame


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
    return _typed(pd.DataFrame(rows, columns=UNIT_COLUMNS),
                  {"repetition": "int64", "attempt": "int64", "duration_s": "float64"})


def _unit_columns(recs: Sequence[Record]) -> dict[str, list[Any]]:
    """What the statistics read of the unit frame, as lists in execution order (``units_frame``'s rows):
    model, build, status and the outputs digest; and, for the per-partition identity check, each unit's id and
    ``Record.partitions`` (not in ``units_frame``: a report table has no place for them)."""
    recs = [recs[i] for i in _execution_order(recs)]
    return {"model": [r.model for r in recs], "build": [r.build for r in recs],
            "status": [r.status for r in recs], "outputs": [_outputs_digest(r.outputs) for r in recs],
            "unit_id": [r.unit_id for r in recs], "partitions": [r.partitions for r in recs]}


# --- the samples, grouped once ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Group:
    """The ok samples of one (model, build, metric): ``values`` in frame order, ``units`` one array per unit id in
    the order the units first appear (what ``groupby("unit_id", sort=False)`` gives), ``uom`` the first row's unit
    of measure."""

    values: np.ndarray
    units: list[np.ndarray]
    unit_ids: tuple[str, ...]
    uom: str


class _Samples:
    """Every lookup the statistics make, from one pass over the rows: the ok samples grouped by (model, build,
    metric) and unit, the first unit of measure per (model, metric) and per metric, the models, and the ok units'
    outputs per (model, build).

    Why: the analysis used to select with a pandas boolean mask per (model, build, metric) and per check, and to
    group every selection again by unit: several hundred pandas indexing calls of 0.1 ms or more per analysis, about
    half of its time, and most of what ``run.until`` spent after each round while the model idled. The groups are
    exactly the frame's: rows in frame order, groups and units in the order they first appear (as pandas'
    ``groupby(..., sort=False)``), so every number is computed from the same arrays in the same order as before.
    """

    def __init__(self, rows: Mapping[str, Sequence[Any]], values: np.ndarray,
                 units: Mapping[str, Sequence[Any]] | None = None) -> None:
        """``rows``: the sample frame's ``model``, ``build``, ``metric``, ``unit_id``, ``status`` and
        ``unit_of_measure`` columns as sequences, ``values`` its ``value`` column; ``units`` the unit frame's
        ``model``, ``build``, ``status`` and ``outputs`` (None: no unit frame)."""
        positions: dict[tuple[str, str, str], list[int]] = {}
        by_unit: dict[tuple[str, str, str], dict[str, list[int]]] = {}
        self.uom: dict[tuple[str, str], str] = {}
        """(model, metric) -> the unit of measure of its first ok row, any build."""
        self.metric_uom: dict[str, str] = {}
        """metric -> the unit of measure of its first ok row, any model and build."""
        uoms = rows["unit_of_measure"]
        columns = zip(rows["model"], rows["build"], rows["metric"], rows["unit_id"], rows["status"], uoms,
                      strict=True)
        for i, (model, build, metric, unit_id, status, uom) in enumerate(columns):
            if status != "ok":
                continue
            key = (model, build, metric)
            positions.setdefault(key, []).append(i)
            by_unit.setdefault(key, {}).setdefault(unit_id, []).append(i)
            self.uom.setdefault((model, metric), uom)
            self.metric_uom.setdefault(metric, uom)
        self.groups = {key: _Group(values[where], [values[p] for p in by_unit[key].values()], tuple(by_unit[key]),
                                   uoms[where[0]])
                       for key, where in positions.items()}  # fmt: skip
        """(model, build, metric) -> ``_Group``, in the order the groups first appear."""
        self.models = list(dict.fromkeys(rows["model"]))
        """Models in the order they first appear in the frame (any status), then those only the unit frame has."""
        self.outputs: dict[tuple[str, str], list[str]] = {}
        """(model, build) -> the outputs digest of each ok unit, in unit frame order."""
        self.partitions: dict[str, Mapping[str, Sequence[Sequence[float]]]] = {}
        """unit id -> its ``Record.partitions`` (ok units that have any; only from records, not from a frame)."""
        if units is not None and "partitions" in units:
            self.partitions = {unit_id: calls for unit_id, status, calls
                               in zip(units["unit_id"], units["status"], units["partitions"], strict=True)
                               if status == "ok" and calls}  # fmt: skip
        if units is not None and len(units["model"]):
            self.models = list(dict.fromkeys([*self.models, *units["model"]]))
            for model, build, status, outputs in zip(units["model"], units["build"], units["status"],
                                                     units["outputs"], strict=True):
                if status == "ok":
                    self.outputs.setdefault((model, build), []).append(outputs)

    @classmethod
    def of_frames(cls, frame: pd.DataFrame, units: pd.DataFrame | None = None) -> _Samples:
        """From a sample frame (``to_frame``) and optionally a unit frame (``units_frame``)."""
        names = ["model", "build", "metric", "unit_id", "status", "unit_of_measure"]
        rows = {name: frame[name].tolist() for name in names}
        unit_rows = ({name: units[name].tolist() for name in ("model", "build", "status", "outputs")}
                     if units is not None else None)  # fmt: skip
        return cls(rows, frame["value"].to_numpy(), unit_rows)

    def units_of(self, model: str, build: str, metric: str) -> list[np.ndarray]:
        """One array of ok samples per unit (empty without any)."""
        group = self.groups.get((model, build, metric))
        return group.units if group is not None else []

    def calls_of(self, model: str, build: str, metric: str) -> list[tuple[float, ...]]:
        """Each ok inference's per-call values of ``metric`` (``Record.partitions``; a unit without them counts
        each sample as one call), in frame order."""
        group = self.groups.get((model, build, metric))
        if group is None:
            return []
        calls: list[tuple[float, ...]] = []
        for unit_id, values in zip(group.unit_ids, group.units, strict=True):
            kept = self.partitions.get(unit_id, {}).get(metric)
            if kept is not None and len(kept) == len(values):
                calls.extend(tuple(float(v) for v in inference) for inference in kept)
            else:
                calls.extend((float(v),) for v in values)
        return calls

    def values_of(self, model: str, build: str, metric: str) -> np.ndarray:
        """The ok samples in frame order (an empty float array without any)."""
        group = self.groups.get((model, build, metric))
        return group.values if group is not None else np.array([], dtype=float)

    def unit_ids(self, builds: Sequence[str], metric: str | None = None) -> set[str]:
        """The ids of units of ``builds`` with an ok sample (of ``metric``, or of any metric)."""
        return {unit_id for (_, build, name), group in self.groups.items()
                if build in builds and (metric is None or name == metric) for unit_id in group.unit_ids}


# --- bootstrap ----------------------------------------------------------------------------------------------


def _rng(seed: int, *labels: str) -> np.random.Generator:
    """A generator that depends on the seed and the group's labels only, not on the order of groups."""
    return np.random.default_rng([seed, *(zlib.crc32(label.encode()) for label in labels)])


def bootstrap_medians(groups: Sequence[np.ndarray], resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap distribution (``resamples`` values) of the median of samples that come in ``groups`` (units).

    Two levels: draw as many units as there are, with replacement; from each drawn unit draw ``m`` samples
    with replacement, where ``m`` is the mean unit size (exactly the unit size when all units are equal). With
    one unit it is the plain bootstrap. Vectorised in chunks so memory stays bounded for long runs.

    The medians of the resamples are ``np.median``'s numbers, found faster (``_row_medians``; constant samples need
    none), and the generator is called exactly as it always was, so a seed gives the same draws as before.
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
    block = max(1, _BLOCK_VALUES // (k * m))
    exact = _sortable(flat)
    constant = _one_value(flat)
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        # the same calls of ``rng`` in every case, so the generator ends where it always did
        if k == 1:
            idx = rng.integers(0, len(flat), size=(b, len(flat)))
        else:
            chosen = rng.integers(0, k, size=(b, k))
            draw = rng.random((b, k, m))
        if constant:  # every resample holds only that value, so every median is it
            out[start : start + b] = flat[0]
            continue
        for low in range(0, b, block):  # row by row the same numbers; small blocks keep the temporaries cheap
            high = min(b, low + block)
            if k == 1:
                picked = flat[idx[low:high]]
            else:
                within = (draw[low:high] * sizes[chosen[low:high]][..., None]).astype(np.int64)
                picked = flat[(offsets[chosen[low:high]][..., None] + within).reshape(high - low, k * m)]
            out[start + low : start + high] = _row_medians(picked) if exact else np.median(picked, axis=1)
    return out


_BLOCK_VALUES = 8192
"""Resampled values handled at once after the draws. Why not all 2000 x 20 at once: every temporary of that size
(a third of a megabyte, above the allocator's mmap threshold) is fresh memory from the system, and on the small VMs
the harness runs on its page faults took about half of the bootstrap's time; temporaries of 64 KiB are reused from
the heap. (Larger blocks gained nothing, smaller ones lose to per-call overhead.)"""
_HALF_MAX = float(np.finfo(np.float64).max) / 2
"""Below this the mean of two equal values is the value itself (their sum does not overflow)."""


def _bootstrap(groups: Sequence[np.ndarray], settings: Settings, *labels: str) -> np.ndarray:
    """``bootstrap_medians`` of ``groups`` with the generator of ``labels`` (``_rng``), as every statistic here
    draws. A sample of one single value (NPU cycle counts, mostly) gives that value in every resample, whatever the
    draws: then the generator, which nobody else sees, is not even made."""
    values = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if values and _one_value(flat := np.concatenate(values)):
        return np.full(settings.resamples, flat[0])
    return bootstrap_medians(groups, settings.resamples, _rng(settings.seed, *labels))


def _one_value(values: np.ndarray) -> bool:
    """Whether every median of resamples of ``values`` is ``values[0]`` exactly, as ``np.median`` computes it: one
    single value (not NaN, not -0.0), small enough that the mean of two copies of it is itself."""
    return _sortable(values) and bool(values.min() == values.max()) and abs(float(values[0])) < _HALF_MAX


def _sortable(values: np.ndarray) -> bool:
    """Whether sorting finds exactly the middle values ``np.median`` finds: no NaN (``np.median`` makes a row with a
    NaN NaN) and no negative zero (equal to 0.0, so which of the two a partition or a sort puts in the middle, and
    the sign of the median, may differ)."""
    return not bool(np.isnan(values).any() or (np.signbit(values) & (values == 0)).any())


def _row_medians(rows: np.ndarray) -> np.ndarray:
    """``np.median(rows, axis=1)``, bit for bit, for rows ``_sortable`` accepts, several times faster. Sorts
    ``rows`` in place.

    Why: ``np.median`` partitions every row (an introselect per row, plus one for its NaN check), which for the
    bootstrap's short rows (20-300 values, 2000 of them) costs five times a plain sort of the same rows. A sort
    finds the same middle values; their mean is then taken exactly as ``np.median`` takes it (``np.mean`` over the
    middle one or two), so every draw, and every interval built on them, stays the same number."""
    n = rows.shape[1]
    rows.sort(axis=1)
    half = n // 2
    middle = rows[:, half : half + 1] if n % 2 else rows[:, half - 1 : half + 1]
    return np.mean(middle, axis=1)


def percentile_interval(draws: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    """The ``confidence`` percentile interval of bootstrap ``draws`` (None, None when too few are finite)."""
    finite = draws[np.isfinite(draws)]
    if len(finite) < max(10, len(draws) // 2):
        return None, None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


# --- summaries ----------------------------------------------------------------------------------------------


def summarise(frame: pd.DataFrame, settings: Settings | None = None) -> pd.DataFrame:
    """Per (model, build, metric) of ok units: n, units, median, mean, std, p5, p95, bootstrap CI of the
    median.

    Rows follow the order models, builds and metrics first appear in the frame (the run order), so the table
    is stable for the same records.
    """
    return _summarise(_Samples.of_frames(frame), settings or Settings())


def _summarise(samples: _Samples, settings: Settings) -> pd.DataFrame:
    rows: list[dict[str, object]] = []
    for (model, build, metric), group in samples.groups.items():
        values = group.values
        p5, p95 = np.percentile(values, [5, 95])  # one call, the same two numbers as two
        draws = _bootstrap(group.units, settings, str(model), str(build), str(metric))
        low, high = percentile_interval(draws, settings.confidence)
        rows.append(
            {
                "model": model,
                "build": build,
                "metric": metric,
                "unit_of_measure": group.uom,
                "n": len(values),
                "units": len(group.units),
                "median": float(np.median(values)),
                "mean": float(np.mean(values)),
                "std": float(np.std(values, ddof=1)) if len(values) > 1 else 0.0,
                "p5": float(p5),
                "p95": float(p95),
                "ci_low": low,
                "ci_high": high,
            }
        )
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    return _typed(summary, {"n": "int64", "units": "int64", "ci_low": "float64", "ci_high": "float64"})


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
    tolerance: str = ""
    """The allowed difference (``±5%``, ``±0.1 ms``) of a check with a tolerance; empty for an exact one. With a
    tolerance the check is judged on the CI of the change, and ``values`` lists each build's median."""


@dataclass(frozen=True)
class GateCheck:
    """A gate on one metric for one model: the change candidate - baseline and its CI against the largest allowed
    regression. ``relative``: ``change``, its CI and ``allowed`` are in % of the baseline median; else in
    ``unit``. See ``decide_gate`` for the verdict."""

    model: str
    metric: str
    unit: str
    relative: bool
    allowed: float
    baseline_median: float | None
    candidate_median: float | None
    n_baseline: int
    n_candidate: int
    change: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: GateVerdict
    status: Status
    detail: str


@dataclass(frozen=True)
class DroppedSamples:
    """Stored values of one metric of one unit that are no measurement (NaN, infinities; negative or >= 2^63 for a
    built-in metric), left out of every number. ``kinds``: ``NaN x2, negative x1``."""

    unit_id: str
    build: str
    model: str
    metric: str
    count: int
    of: int
    kinds: str


@dataclass(frozen=True)
class NotRunUnit:
    """A planned unit with no record of its planned content key (``analyse(..., planned=...)``). ``build``,
    ``model`` and ``repetition`` come from a stored record of the unit id when there is one, else from the id.
    ``other_keys`` counts stored records of this unit id with another key (other settings)."""

    unit_id: str
    key: str
    build: str
    model: str
    repetition: int | None
    other_keys: int = 0


@dataclass(frozen=True)
class RunVerdict:
    """The verdict for the whole run and why: ``FAIL`` (an expectation was violated, or a unit failed),
    ``NOT VERIFIED`` (nothing failed, but a planned unit did not run, a model's primary metric was not measured,
    a gate could not be checked, or no expectation could), else ``PASS``. ``reasons`` name each cause (and for
    PASS what could not be verified)."""

    status: Literal["PASS", "FAIL", "NOT VERIFIED"]
    reasons: tuple[str, ...]


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
    """The headline p-value, at the level of the CI (``process_level_p``): the larger of the two-level bootstrap's
    two-sided p and ``p_units``."""
    p_units: float | None
    """Welch t-test over log unit medians (each process counted once); None if a build has < 2 units."""
    verdict: Verdict
    reason: str
    identity: tuple[IdentityCheck, ...] = ()
    others: tuple[MetricChange, ...] = ()
    p_pooled: float | None = None
    """Mann-Whitney U, two-sided, over the pooled iterations of both builds: treats iterations of one runner process
    as independent (they are not), so it is only in the CSV, labelled so, never in the markdown or a verdict."""


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
    """One checked expectation: ``identity`` (``name`` = a metric or ``outputs``), ``gate`` (``name`` = the gated
    metric) or ``min_effect``. ``limit``: the tolerance of an identity check (``±5%``) or a gate's allowed
    regression (``+10%``); empty otherwise."""

    kind: Literal["identity", "gate", "min_effect"]
    model: str
    name: str
    status: Status
    detail: str
    limit: str = ""


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
    gates: tuple[GateCheck, ...] = ()
    """One row per (gated metric, model), models in run order, gates in the scenario's order."""

    @property
    def label(self) -> str:
        """How reports name the pair: ``u85-256 vs u85-128`` (candidate first, as in the titles)."""
        return f"{self.candidate} vs {self.baseline}"


@dataclass(frozen=True)
class SamplingNote:
    """``run.until`` (adaptive sampling, ``run.adaptive``): how many repetitions a model needed and why it stopped
    (``ci_width``, ``verdict settled``, ``max_repetitions``; None when it still needed rounds: an interrupted run),
    ``detail`` the numbers behind it."""

    model: str
    repetitions: int
    reason: str | None
    detail: str


@dataclass(frozen=True, eq=False)
class AnalysisResult:
    """What ``report`` renders: the frames, the summary, the comparisons (one per pair of the ``compare`` spec, in
    its order; none without a spec), drift checks and failed units. ``comparison`` is the first one (or None), for
    code that knows only two builds.

    With ``analyse(..., planned=...)``: ``planned`` is how many units the plan wanted, ``not_run`` the planned
    units without any record of their planned key (a planned unit whose latest record of that key failed is in
    ``failed_units``), ``excluded_records`` how many stored records were left out because their key is not the
    planned one of their unit (other settings). Without it ``planned`` is None and the others are empty.
    ``dropped``: stored values that are no measurement, left out of every number."""

    frame: pd.DataFrame
    units: pd.DataFrame
    summary: pd.DataFrame
    comparisons: tuple[Comparison, ...]
    drift: tuple[DriftFlag, ...]
    failed_units: tuple[FailedUnit, ...]
    settings: Settings = field(default_factory=Settings)
    dropped: tuple[DroppedSamples, ...] = ()
    not_run: tuple[NotRunUnit, ...] = ()
    excluded_records: int = 0
    planned: int | None = None
    sampling: tuple[SamplingNote, ...] = ()
    """``run.until``: one note per model (the run layer adds them; units its rule skipped are not planned)."""

    @property
    def comparison(self) -> Comparison | None:
        """The first comparison (the only one of a two-build scenario), or None without a ``compare`` spec."""
        return self.comparisons[0] if self.comparisons else None

    @property
    def expectations(self) -> tuple[Expectation, ...]:
        """Every comparison's expectations, pair after pair."""
        return tuple(e for comparison in self.comparisons for e in comparison.expectations)

    @property
    def verdict(self) -> RunVerdict:
        """``run_verdict(self)``."""
        return run_verdict(self)


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
    ci = f"CI {fmt.saved_interval(ci_low, ci_high)}"
    band = f"the ±{min_effect:g}% that counts as no change"
    if -min_effect <= ci_low and ci_high <= min_effect:
        return "no change", f"{ci} lies inside {band}"
    significant = p_value is None or p_value < alpha
    p_text = f"p = {p_value:.3g}" if p_value is not None else ""
    if ci_low > min_effect or ci_high < -min_effect:
        side = "saving" if ci_low > min_effect else "loss"
        if significant:
            return ("faster" if side == "saving" else "slower"), f"{ci}: all of it a {side} beyond {band}"
        return "inconclusive", f"{ci} lies beyond {band}, but {p_text} is not below {alpha:g}"
    return "inconclusive", f"{ci} overlaps {band}: more repetitions would settle it"


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


def bootstrap_p(ratio_draws: np.ndarray) -> float | None:
    """Two-sided p-value of "no change" from the two-level bootstrap draws of the ratio candidate / baseline:
    twice the smaller share of draws on either side of 1, each counted with the add-one rule, so it can never be 0
    and its floor is ``2 / (resamples + 1)``. Why this one: it is read off the very draws the CI is read from, so a
    95% CI that excludes 0% saved and p < 0.05 say the same thing. None with fewer than 10 finite draws."""
    finite = ratio_draws[np.isfinite(ratio_draws)]
    if len(finite) < 10:
        return None
    at_or_above = int(np.count_nonzero(finite >= 1.0))
    at_or_below = int(np.count_nonzero(finite <= 1.0))
    return min(1.0, 2.0 * (min(at_or_above, at_or_below) + 1) / (len(finite) + 1))


def process_level_p(boot: float | None, units: float | None) -> float | None:
    """The headline p-value: the larger of the bootstrap's and the Welch t-test's over unit medians (when a build
    has >= 2 units), exactly as the CI is the wider of the two intervals; either alone when the other is None."""
    known = [p for p in (boot, units) if p is not None]
    return max(known) if known else None


def _mann_whitney(a: np.ndarray, b: np.ndarray) -> float | None:
    if len(a) == 0 or len(b) == 0:
        return None
    if np.ptp(np.concatenate([a, b])) == 0:
        return 1.0  # all values equal: no evidence of a difference (scipy would divide by a zero variance)
    return float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)


def _unit_level_difference(
    base_groups: Sequence[np.ndarray], cand_groups: Sequence[np.ndarray], confidence: float
) -> tuple[float, float] | None:
    """Welch t-interval of candidate - baseline from the unit medians (each process counted once), in the
    metric's unit: the absolute twin of ``_unit_level_interval``. None when a build has fewer than 2 units."""
    if len(base_groups) < 2 or len(cand_groups) < 2:
        return None
    bmeds = np.array([np.median(g) for g in base_groups])
    cmeds = np.array([np.median(g) for g in cand_groups])
    vb, vc = bmeds.var(ddof=1) / len(bmeds), cmeds.var(ddof=1) / len(cmeds)
    se = math.sqrt(vb + vc)
    centre = float(cmeds.mean() - bmeds.mean())
    if se == 0:
        return centre, centre
    denominator = vb**2 / (len(bmeds) - 1) + vc**2 / (len(cmeds) - 1)
    df = (vb + vc) ** 2 / denominator if denominator > 0 else len(bmeds) + len(cmeds) - 2
    quantile = float(stats.t.ppf(1 - (1 - confidence) / 2, df))
    return centre - quantile * se, centre + quantile * se


# --- changes of other metrics: gates and tolerances ---------------------------------------------------------


@dataclass(frozen=True)
class _Change:
    """Candidate - baseline of one metric for one model: in % of the baseline median (relative) or in the metric's
    unit, with its CI; ``why`` says what is missing when ``change`` or the CI is None."""

    n_baseline: int
    n_candidate: int
    baseline_median: float | None
    candidate_median: float | None
    change: float | None
    low: float | None
    high: float | None
    why: str


def _measure_change(
    samples: _Samples, model: str, metric: str, builds: tuple[str, str], relative: bool, settings: Settings
) -> _Change:
    """The change of ``metric`` (its ok samples for ``model``) from ``builds[0]`` to ``builds[1]``.

    The CI is built like the primary comparison's: the two-level bootstrap of the medians (ratio or difference),
    widened to the Welch t-interval over unit medians when that is wider and each build has >= 2 units."""
    base_groups = samples.units_of(model, builds[0], metric)
    cand_groups = samples.units_of(model, builds[1], metric)
    base = np.concatenate(base_groups) if base_groups else np.array([])
    cand = np.concatenate(cand_groups) if cand_groups else np.array([])
    bmed = float(np.median(base)) if len(base) else None
    cmed = float(np.median(cand)) if len(cand) else None
    if bmed is None or cmed is None:
        missing = [b for b, v in zip(builds, (base, cand), strict=True) if not len(v)]
        return _Change(len(base), len(cand), bmed, cmed, None, None, None,
                       f"no valid {metric} samples for {', '.join(missing)}")
    if relative and bmed == 0:
        return _Change(len(base), len(cand), bmed, cmed, None, None, None,
                       "the baseline median is 0: no percentage (give an absolute amount instead)")
    change = 100.0 * (cmed / bmed - 1.0) if relative else cmed - bmed
    if len(base) < 2 or len(cand) < 2:
        return _Change(len(base), len(cand), bmed, cmed, change, None, None,
                       "no confidence interval: fewer than 2 samples in a build")
    bdraws = _bootstrap(base_groups, settings, model, metric, builds[0])
    cdraws = _bootstrap(cand_groups, settings, model, metric, builds[1])
    wide: tuple[float, float] | None
    if relative:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = cdraws / bdraws
        ratios = np.where(np.isfinite(ratios) & (ratios > 0), ratios, np.nan)
        low, high = percentile_interval(100.0 * (ratios - 1.0), settings.confidence)
        cluster = _unit_level_interval(base_groups, cand_groups, cmed / bmed, settings.confidence)
        wide = (-cluster[0][1], -cluster[0][0]) if cluster is not None else None  # saved % -> change %
    else:
        low, high = percentile_interval(cdraws - bdraws, settings.confidence)
        wide = _unit_level_difference(base_groups, cand_groups, settings.confidence)
    if low is not None and high is not None and wide is not None:
        low, high = min(low, wide[0]), max(high, wide[1])
    why = "" if low is not None else "no confidence interval (too few distinct draws)"
    return _Change(len(base), len(cand), bmed, cmed, change, low, high, why)


def _change_words(value: float, relative: bool, unit: str) -> str:
    """A change (candidate - baseline) in words: ``57.2% lower``, ``203% higher``, ``0.85 ms higher``, ``unchanged``;
    a reader need not know which sign means worse."""
    if value == 0:
        return "unchanged"
    direction = "higher" if value > 0 else "lower"
    if relative:
        return f"{abs(value):.{0 if abs(value) >= 100 else 1}f}% {direction}"
    return fmt.number(abs(value)) + (f" {unit}" if unit else "") + f" {direction}"


def _allowed_words(amount: float, relative: bool, unit: str) -> str:
    """A gate's limit in words: ``a rise of at most 10%``, ``a rise of at most 0.2 ms``, ``no rise``."""
    if not amount:
        return "no rise"
    return f"a rise of at most {amount:g}" + ("%" if relative else f" {unit}" if unit else "")


def _signed_amount(value: float, relative: bool, unit: str) -> str:
    """A change as the gate and tolerance texts show it: ``+203%``, ``+2.1%``, ``+0.85 ms``."""
    if relative:
        return f"{value:+.{0 if abs(value) >= 100 else 1}f}%"
    shown = "0" if value == 0 else ("-" if value < 0 else "+") + fmt.number(abs(value))
    return shown + (f" {unit}" if unit else "")


def _interval_text(low: float, high: float, relative: bool, unit: str) -> str:
    if relative:
        return fmt.signed_percent_interval(low, high)
    return f"{_signed_amount(low, False, '')} … {_signed_amount(high, False, unit)}"


def _limit_text(amount: float, relative: bool, unit: str, sign: str = "+") -> str:
    """The user's limit as written: ``+10%``, ``+0.2 ms``, ``±5%`` (``0 cycles`` for none at all)."""
    text = f"{sign}{amount:g}" if amount else "0"
    return f"{text}%" if relative else text + (f" {unit}" if unit else "")


def decide_gate(ci_low: float | None, ci_high: float | None, allowed: float) -> tuple[GateVerdict, Status]:
    """A gate's verdict from the CI of the change (positive = worse) and the largest allowed regression:
    ``violated`` when the whole CI lies above ``allowed``, ``within`` when it lies at or below it, else
    ``inconclusive`` (also without a CI), which counts as unverified."""
    if ci_low is None or ci_high is None:
        return "inconclusive", "unverified"
    if ci_low > allowed:
        return "violated", "fail"
    if ci_high <= allowed:
        return "within", "pass"
    return "inconclusive", "unverified"


def _gate_check(
    model: str, metric: str, gate: GateLike, samples: _Samples, builds: tuple[str, str], settings: Settings
) -> GateCheck:
    unit = str(samples.uom.get((model, metric), ""))
    relative, allowed = gate.relative, float(gate.amount)
    shown_unit = (unit or gate.unit or "") if not relative else ""
    change = _measure_change(samples, model, metric, builds, relative, settings)

    def check(verdict: GateVerdict, status: Status, detail: str) -> GateCheck:
        return GateCheck(model, metric, unit, relative, allowed, change.baseline_median, change.candidate_median,
                         change.n_baseline, change.n_candidate, change.change, change.low, change.high, verdict,
                         status, detail)

    if not relative and gate.unit and unit and gate.unit != unit:
        return check("inconclusive", "unverified", f"the gate is in {gate.unit} but {metric} is recorded in "
                     f"{unit}: not comparable")
    if change.baseline_median is None or change.candidate_median is None:
        return check("not measured", "unverified", change.why)
    if change.change is None:
        return check("inconclusive", "unverified", change.why)
    shown = _change_words(change.change, relative, shown_unit)
    if change.low is None or change.high is None:
        return check("inconclusive", "unverified", f"{shown}: {change.why}")
    verdict, status = decide_gate(change.low, change.high, allowed)
    ci = _interval_text(change.low, change.high, relative, shown_unit)
    words = _allowed_words(allowed, relative, shown_unit)
    if verdict == "violated":
        detail = f"{shown}, more than allowed ({words}; CI of the change {ci}, all of it above)"
    elif verdict == "within":
        detail = f"{shown}, within what is allowed ({words}; CI of the change {ci}, all of it within)"
    else:
        detail = (f"{shown}: the CI of the change ({ci}) reaches past what is allowed ({words}); more repetitions "
                  "would settle it")
    return check(verdict, status, detail)


def _tolerance_check(
    model: str, metric: str, tolerance: ToleranceLike, samples: _Samples, builds: tuple[str, str],
    settings: Settings,
) -> IdentityCheck:
    """``expect_identical`` with a tolerance t: pass when the CI of the change lies within ±t, fail when it lies
    entirely beyond it (either side), unverified when it straddles ±t or a build has no values."""
    unit = str(samples.uom.get((model, metric), ""))
    relative, amount = tolerance.relative, float(tolerance.amount)
    limit = _limit_text(amount, relative, unit, sign="±")
    change = _measure_change(samples, model, metric, builds, relative, settings)
    listing = {
        build: ([f"median {fmt.number(median)}{' ' + unit if unit else ''} (n={n})"] if median is not None else [])
        for build, median, n in ((builds[0], change.baseline_median, change.n_baseline),
                                 (builds[1], change.candidate_median, change.n_candidate))
    }  # fmt: skip
    if change.change is None:
        return IdentityCheck(model, metric, "unverified", listing, change.why, limit)
    shown = _signed_amount(change.change, relative, unit)
    if change.low is None or change.high is None:
        return IdentityCheck(model, metric, "unverified", listing, f"{shown}: {change.why}", limit)
    ci = _interval_text(change.low, change.high, relative, unit)
    if -amount <= change.low and change.high <= amount:
        return IdentityCheck(model, metric, "pass", listing, f"{shown} within {limit} (CI {ci})", limit)
    if change.low > amount or change.high < -amount:
        return IdentityCheck(model, metric, "fail", listing, f"{shown} beyond {limit} (CI {ci})", limit)
    return IdentityCheck(model, metric, "unverified", listing,
                         f"{shown}: CI {ci} straddles {limit}; more repetitions would settle it", limit)


def _identity_entries(spec: CompareLike) -> list[tuple[str, ToleranceLike | None]]:
    """``expect_identical`` as (name, tolerance or None for an exact check)."""
    entries: list[tuple[str, ToleranceLike | None]] = []
    for item in spec.expect_identical:
        if isinstance(item, str):
            entries.append((item, None))
        else:
            tolerance: ToleranceLike = item  # type: ignore[assignment]  # duck-typed entry
            entries.append((tolerance.metric, None if tolerance.exact else tolerance))
    return entries


def _gates(spec: CompareLike) -> Mapping[str, GateLike]:
    return getattr(spec, "gates", None) or {}


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
    if not len(sel):
        return ()
    flags = (_drift_flag(str(model), str(build), metric, group.sort_values("order")["value"].to_numpy(), min_effect,
                         settings)
             for (model, build), group in sel.groupby(["model", "build"], sort=False))  # fmt: skip
    return tuple(flag for flag in flags if flag is not None)


def _drift(samples: _Samples, metric: str, min_effect: float, settings: Settings) -> tuple[DriftFlag, ...]:
    """``detect_drift`` of a frame whose rows are in execution order (``analyse``'s: ``order`` counts its rows),
    from the grouped samples."""
    flags = (_drift_flag(str(model), str(build), metric, group.values, min_effect, settings)
             for (model, build, name), group in samples.groups.items() if name == metric)  # fmt: skip
    return tuple(flag for flag in flags if flag is not None)


def _drift_flag(model: str, build: str, metric: str, values: np.ndarray, min_effect: float, settings: Settings
                ) -> DriftFlag | None:
    """The trend of one build's ``values`` (in execution order); None when there is none to measure."""
    n = len(values)
    if n < 8 or np.ptp(values) == 0:
        return None
    rho, p_value = stats.spearmanr(np.arange(n), values)
    third = max(1, n // 3)
    median = float(np.median(values))
    change = (float(np.median(values[-third:])) - float(np.median(values[:third]))) / median * 100 if median else 0.0
    flagged = bool(p_value < settings.drift_alpha and abs(change) >= min_effect)
    return DriftFlag(model, build, metric, n, float(rho), float(p_value), change, flagged)


# --- comparison ---------------------------------------------------------------------------------------------


def primary_candidates(spec: CompareLike) -> list[str]:
    """``spec.primary`` as a list in order of preference."""
    return [spec.primary] if isinstance(spec.primary, str) else list(spec.primary)


def build_pairs(spec: CompareLike) -> list[tuple[str, str]]:
    """Every ``(baseline, candidate)`` pair ``spec`` compares, in order: its ``build_pairs`` when it has them (see
    ``CompareLike``), else the one pair ``(spec.baseline, spec.candidate)``."""
    pairs = getattr(spec, "build_pairs", None)
    return [(str(b), str(c)) for b, c in pairs] if pairs else [(spec.baseline, spec.candidate)]


def choose_primary(frame: pd.DataFrame, spec: CompareLike, pair: tuple[str, str] | None = None) -> PrimaryChoice:
    """The first metric of ``spec.primary`` that every ok unit of the two compared builds produced (``pair``,
    default ``(spec.baseline, spec.candidate)``).

    Why per unit and not per model: a metric some units lack (a stock runner prints no CPU-time line) would
    compare different sets of units; the next metric in the list that all of them printed is a fair headline.
    When none qualifies, the one most units produced is taken and the reason says so. Each pair chooses for its
    own two builds.
    """
    return _choose_primary(_Samples.of_frames(frame), spec, pair or (spec.baseline, spec.candidate))


def _choose_primary(samples: _Samples, spec: CompareLike, builds: tuple[str, str]) -> PrimaryChoice:
    candidates = tuple(primary_candidates(spec))
    if len(candidates) == 1:
        return PrimaryChoice(candidates[0], candidates, "the scenario's compare.primary")
    units = samples.unit_ids(builds)
    if not units:
        return PrimaryChoice(candidates[0], candidates, f"first of {', '.join(candidates)}: no unit of "
                             f"{builds[0]} or {builds[1]} ran successfully")
    having = {name: samples.unit_ids(builds, name) for name in candidates}
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
    pair: tuple[str, str] | None = None,
) -> Comparison:
    """Candidate vs baseline per model on the primary metric (``choose_primary``), plus identity checks, gates
    and secondary metrics.

    ``pair`` is the ``(baseline, candidate)`` to compare (default ``(spec.baseline, spec.candidate)``; ``analyse``
    calls this once per pair of the spec). ``metrics`` (names or MetricSpec-like objects) adds secondary metrics
    shown beside the primary (e.g. NPU cycles); ``expect_identical`` metrics are always included. ``units`` (from
    ``units_frame``) is needed for the ``outputs`` identity check; without it that check is unverified. Each gate
    of ``spec.gates`` gives one ``GateCheck`` and one expectation per model. Every model in the frame gets a row,
    so a model the pair's builds never ran is ``not measured`` in this pair.
    """
    builds = pair or (spec.baseline, spec.candidate)
    return _compare(_Samples.of_frames(frame, units), spec, metrics, settings or Settings(), builds)


def _compare(samples: _Samples, spec: CompareLike, metrics: Sequence[object], settings: Settings,
             builds: tuple[str, str]) -> Comparison:
    baseline, candidate = builds
    choice = _choose_primary(samples, spec, builds)
    primary = choice.metric
    identity_entries = _identity_entries(spec)
    gates = _gates(spec)
    others = list(dict.fromkeys([*(_metric_name(m) for m in metrics), *(name for name, _ in identity_entries)]))
    others = [m for m in others if m not in ("outputs", primary)]
    unit_label = samples.metric_uom.get(primary, "")

    results: list[ModelComparison] = []
    ratio_draws: list[np.ndarray] = []
    expectations: list[Expectation] = []
    gate_checks: list[GateCheck] = []
    for model in samples.models:
        row, draws = _primary_comparison(samples, model, builds, primary, unit_label, spec.min_effect, settings)
        if draws is not None:
            ratio_draws.append(draws)
        identity: list[IdentityCheck] = []
        for name, tolerance in identity_entries:
            if tolerance is not None:
                check = _tolerance_check(model, name, tolerance, samples, builds, settings)
                identity.append(check)
                expectations.append(Expectation("identity", model, name, check.status, check.detail, check.tolerance))
                continue
            per_build: dict[str, list[object]]
            if name == "outputs":
                per_build = {build: list(samples.outputs.get((model, build), [])) for build in builds}
            else:
                per_build = {build: samples.values_of(model, build, name).tolist() for build in builds}
            check = _identity(model, name, per_build)
            if name != "outputs" and samples.partitions and check.status != "unverified":
                by_partition = compare_partitions({build: samples.calls_of(model, build, name) for build in builds})
                if by_partition is not None:  # a partly delegated model: judged call by call, naming the partition
                    check = dataclasses.replace(check, status=by_partition[0], detail=by_partition[1])
            identity.append(check)
            expectations.append(Expectation("identity", model, name, check.status, check.detail))
        for name, gate in gates.items():
            gate_check = _gate_check(model, name, gate, samples, builds, settings)
            gate_checks.append(gate_check)
            limit = _limit_text(gate_check.allowed, gate_check.relative,
                                "" if gate_check.relative else gate_check.unit or (gate.unit or ""))
            expectations.append(Expectation("gate", model, name, gate_check.status, gate_check.detail, limit))
        changes = [change for name in others if (change := _metric_change(samples, model, name, builds)) is not None]
        expectations.append(_effect_expectation(model, row.verdict, row.reason, row.saved_pct, spec.min_effect))
        results.append(dataclasses.replace(row, identity=tuple(identity), others=tuple(changes)))
    return Comparison(
        baseline=baseline,
        candidate=candidate,
        primary=primary,
        unit=unit_label,
        min_effect=spec.min_effect,
        models=tuple(results),
        geomean=_geomean(results, ratio_draws, spec.min_effect, settings),
        expectations=tuple(expectations),
        primary_choice=choice,
        gates=tuple(gate_checks),
    )


def _metric_change(samples: _Samples, model: str, name: str, builds: tuple[str, str]) -> MetricChange | None:
    """A secondary metric's median per build for ``model`` (None when no build of the frame measured it)."""
    if (model, name) not in samples.uom:
        return None
    vals = {b: samples.values_of(model, b, name) for b in builds}
    both = [v for v in vals.values() if len(v)]
    identical = bool(np.ptp(np.concatenate(both)) == 0) if len(both) == 2 else None
    baseline, candidate = builds
    return MetricChange(
        name,
        str(samples.uom[(model, name)]),
        float(np.median(vals[baseline])) if len(vals[baseline]) else None,
        float(np.median(vals[candidate])) if len(vals[candidate]) else None,
        identical,
    )


def _primary_comparison(samples: _Samples, model: str, builds: tuple[str, str], primary: str, unit_label: str,
                        min_effect: float, settings: Settings) -> tuple[ModelComparison, np.ndarray | None]:
    """One model's row on the primary metric, without identity checks and secondary metrics, and the bootstrap
    draws of its ratio for the geometric mean (None when it has no ratio)."""
    baseline, candidate = builds
    base_groups = samples.units_of(model, baseline, primary)
    cand_groups = samples.units_of(model, candidate, primary)
    base = np.concatenate(base_groups) if base_groups else np.array([])
    cand = np.concatenate(cand_groups) if cand_groups else np.array([])
    bmed = float(np.median(base)) if len(base) else None
    cmed = float(np.median(cand)) if len(cand) else None
    ratio = saved = low = high = p_value = p_units = p_pooled = None
    bci: tuple[float | None, float | None] = (None, None)
    cci: tuple[float | None, float | None] = (None, None)
    ratio_draws: np.ndarray | None = None
    if bmed is None or cmed is None:
        missing = [b for b, v in ((baseline, base), (candidate, cand)) if not len(v)]
        verdict: Verdict = "not measured"
        reason = f"no {primary} samples for {', '.join(missing)}"
    else:
        bdraws = _bootstrap(base_groups, settings, model, baseline)
        cdraws = _bootstrap(cand_groups, settings, model, candidate)
        bci, cci = percentile_interval(bdraws, settings.confidence), percentile_interval(cdraws, settings.confidence)
        p_pooled = _mann_whitney(base, cand)
        if bmed == 0:
            verdict, reason = "inconclusive", "baseline median is 0: no ratio"
        else:
            ratio = cmed / bmed
            saved = 100.0 * (1.0 - ratio)
            with np.errstate(divide="ignore", invalid="ignore"):
                draws = cdraws / bdraws
            draws = np.where(np.isfinite(draws) & (draws > 0), draws, np.nan)
            low, high = percentile_interval(100.0 * (1.0 - draws), settings.confidence)
            cluster = _unit_level_interval(base_groups, cand_groups, ratio, settings.confidence)
            if cluster is not None:
                (t_low, t_high), p_units = cluster
                if low is not None and high is not None:
                    low, high = min(low, t_low), max(high, t_high)
            p_value = process_level_p(bootstrap_p(draws), p_units)
            if len(base) < 2 or len(cand) < 2:
                verdict, reason = "inconclusive", "fewer than 2 samples in a build"
            else:
                verdict, reason = decide_verdict(low, high, p_value, min_effect, settings.alpha)
            if ratio > 0 and np.isfinite(draws).any():
                ratio_draws = draws
    row = ModelComparison(
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
        p_pooled=p_pooled,
        verdict=verdict,
        reason=reason,
    )
    return row, ratio_draws


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
    shown = f"{fmt.saving_phrase(saved)}; " if saved is not None else ""
    return Expectation("min_effect", model, f"not more than {m:g}% slower", status, f"{verdict}: {shown}{reason}")


def _geomean(
    results: Sequence[ModelComparison], draws: Sequence[np.ndarray], min_effect: float, settings: Settings
) -> GeoMean | None:
    ratios = [r.ratio for r in results if r.ratio is not None and r.ratio > 0]
    if len(ratios) < 2 or len(draws) != len(ratios):
        return None
    ratio = float(math.exp(sum(math.log(r) for r in ratios) / len(ratios)))
    with np.errstate(invalid="ignore"):
        stacked = np.exp(np.mean(np.log(np.vstack(draws)), axis=0))
    low, high = percentile_interval(100.0 * (1.0 - stacked), settings.confidence)
    verdict, reason = decide_verdict(low, high, None, min_effect, settings.alpha)
    return GeoMean(len(ratios), ratio, 100.0 * (1.0 - ratio), low, high, verdict, reason)


def _failed_units(units: pd.DataFrame) -> tuple[FailedUnit, ...]:
    if not len(units) or (units["status"] == "ok").all():
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


_UNIT_ID = re.compile(r"^r(\d+)-(.+)$")


def _not_run_unit(unit_id: str, key: str, others: Sequence[Record], builds: Iterable[str]) -> NotRunUnit:
    """Build, model and repetition of a planned unit without a record of its key: from a stored record of the same
    unit id (other settings) when there is one, else from the id ``r<rep>-<build>-<model>`` (the longest known
    build name that fits, since names may contain ``-``)."""
    if others:
        last = others[-1]
        return NotRunUnit(unit_id, key, last.build, last.model, last.repetition, len(others))
    match = _UNIT_ID.match(unit_id)
    if match is None:
        return NotRunUnit(unit_id, key, "", "", None)
    rest = match.group(2)
    fitting = [b for b in builds if rest.startswith(f"{b}-") and len(rest) > len(b) + 1]
    build = max(fitting, key=len) if fitting else rest.split("-", 1)[0]
    model = rest[len(build) + 1 :]
    return NotRunUnit(unit_id, key, build, model, int(match.group(1)))


def analyse(
    records: Iterable[Record],
    spec: CompareLike | None = None,
    metrics: Sequence[object] = (),
    settings: Settings | None = None,
    planned: Mapping[str, str] | None = None,
) -> AnalysisResult:
    """The whole pipeline for ``report``: frames, summary, one comparison per pair of ``spec`` (``build_pairs``),
    drift of the primary metric (each pair's; ``cpu_time`` without a spec), failed units and left-out values.
    Builds in no pair are still summarised.

    ``planned`` maps the unit id of every unit the plan wanted to its content key (``{u.id: u.key for u in
    plan.units}``; the manifest's ``plan.keys``). Then only records whose key is the planned key of their unit
    count (the others belong to other settings: counted in ``excluded_records``), and planned units without a
    record of their key are listed in ``not_run`` (those whose latest record of their key failed are in
    ``failed_units`` as always). Without ``planned`` every record counts, as before.
    """
    settings = settings or Settings()
    records = list(records)
    not_run: list[NotRunUnit] = []
    excluded = 0
    if planned is not None:
        wanted = [r for r in records if planned.get(r.unit_id) == r.key]
        excluded = len(records) - len(wanted)
        have = {r.unit_id for r in wanted}
        stale: dict[str, list[Record]] = {}
        for r in records:
            if r.unit_id in planned and r.unit_id not in have:
                stale.setdefault(r.unit_id, []).append(r)
        known_builds = [*(b for pair in (build_pairs(spec) if spec is not None else []) for b in pair),
                        *(r.build for r in records)]
        known_builds = list(dict.fromkeys(known_builds))
        not_run = [_not_run_unit(unit_id, key, stale.get(unit_id, []), known_builds)
                   for unit_id, key in planned.items() if unit_id not in have]  # fmt: skip
        records = wanted
    latest = select_latest(records)
    columns, dropped = _columns(latest)
    samples = _samples(columns, latest)
    units = units_frame(latest, latest_only=False)
    comparisons: tuple[Comparison, ...] = ()
    if spec is not None:
        comparisons = tuple(_compare(samples, spec, metrics, settings, pair) for pair in build_pairs(spec))
    primaries = list(dict.fromkeys(c.primary for c in comparisons)) or ["cpu_time"]
    min_effect = spec.min_effect if spec is not None else 1.0
    return AnalysisResult(
        frame=_frame_of(columns),
        units=units,
        summary=_summarise(samples, settings),
        comparisons=comparisons,
        drift=tuple(flag for metric in primaries for flag in _drift(samples, metric, min_effect, settings)),
        failed_units=_failed_units(units),
        settings=settings,
        dropped=dropped,
        not_run=tuple(not_run),
        excluded_records=excluded,
        planned=None if planned is None else len(planned),
    )


def _samples(columns: Mapping[str, Sequence[object]], latest: Sequence[Record]) -> _Samples:
    """The grouped samples of ``_columns(latest)``, with the units of ``latest`` (as ``units_frame`` has them)."""
    return _Samples(columns, np.array(columns["value"], dtype=np.float64), _unit_columns(latest))


def primary_comparisons(records: Iterable[Record], spec: CompareLike, settings: Settings | None = None
                        ) -> list[tuple[tuple[str, str], tuple[ModelComparison, ...]]]:
    """Each pair of ``spec`` (``build_pairs``, in order) with its models' rows on the primary metric: exactly the
    numbers of ``analyse(records, spec, settings=settings)``'s comparisons' ``models``, but without their identity
    checks and secondary metrics (``identity`` and ``others`` are empty), and without the summary, drift checks,
    gates and frames ``analyse`` also builds.

    Why: ``run.adaptive`` judges every round on these rows alone, while the model waits; the rest of the analysis
    was most of what it cost. Every record counts (no ``planned``), as in ``analyse`` without it."""
    settings = settings or Settings()
    latest = select_latest(records)
    columns, _ = _columns(latest)
    samples = _samples(columns, latest)
    out: list[tuple[tuple[str, str], tuple[ModelComparison, ...]]] = []
    for pair in build_pairs(spec):
        primary = _choose_primary(samples, spec, pair).metric
        unit_label = samples.metric_uom.get(primary, "")
        rows = tuple(_primary_comparison(samples, model, pair, primary, unit_label, spec.min_effect, settings)[0]
                     for model in samples.models)  # fmt: skip
        out.append((pair, rows))
    return out


def expectations_violated(result: AnalysisResult, *, strict: bool = False) -> bool:
    """True when any expectation of any pair failed (an identity check differs or lies beyond its tolerance, a
    gate is violated, or a model got slower than -min_effect).

    ``strict`` also counts ``unverified`` ones (nothing to compare, inconclusive, not measured, a gate whose CI
    straddles its limit), for CI jobs that must prove the expectation rather than merely not disprove it. Failed
    and not-run units are reported separately (``result.failed_units``, ``result.not_run``), so "nothing
    measured" and "regression" stay distinguishable.
    """
    bad = {"fail", "unverified"} if strict else {"fail"}
    return any(e.status in bad for e in result.expectations)


def _label(expectation: Expectation) -> str:
    limit = f" ({expectation.limit})" if expectation.limit else ""
    if expectation.kind == "gate":
        return f"gate {expectation.name}"
    if expectation.kind == "identity":
        return f"identical {expectation.name}{limit}"
    return f"min effect ({expectation.name})"


def _listed(ids: Sequence[str], most: int = 6) -> str:
    shown = ", ".join(ids[:most])
    return shown + (f", … ({len(ids) - most} more)" if len(ids) > most else "")


def run_verdict(result: AnalysisResult) -> RunVerdict:
    """PASS, FAIL or NOT VERIFIED for the whole run, with the reasons (see ``RunVerdict``).

    FAIL: an expectation of any pair failed (each one is a reason: ``gate load_time: +203% > +10% allowed
    (resnet8, ...)``) or a unit's latest attempt failed. NOT VERIFIED (when nothing failed): a planned unit did not
    run, a model's primary metric was not measured, a gate could not be verified, or none of the expectations could
    be checked. PASS otherwise; its reasons list what could not be verified (inconclusive, no values), if anything.
    With several pairs every reason names its pair (``resnet8, u85-256 vs u85-128``).
    The exit code is the callers' (``run.pipeline``): a FAIL is exit 1 (3 when a failure is infrastructure).
    """
    comparisons = result.comparisons
    several = len(comparisons) > 1
    expectations = [(c, e) for c in comparisons for e in c.expectations]

    def where(comparison: Comparison, model: str) -> str:
        return f"{model}, {comparison.label}" if several else model

    failed_reasons: list[str] = []
    for c, e in expectations:
        if e.status == "fail":
            if e.kind == "gate":
                head, _, rest = e.detail.partition(" (")
                failed_reasons.append(f"gate {e.name}: {head} ({where(c, e.model)}" + (f", {rest}" if rest else ")"))
            else:
                failed_reasons.append(f"{_label(e)} ({where(c, e.model)}): {e.detail}")
    if result.failed_units:
        ids = [f.unit_id for f in result.failed_units]
        failed_reasons.append(f"{len(ids)} unit(s) failed: {_listed(ids)}")
    if failed_reasons:
        return RunVerdict("FAIL", tuple(failed_reasons))
    open_reasons: list[str] = []
    if result.not_run:
        ids = [u.unit_id for u in result.not_run]
        open_reasons.append(f"{len(ids)} of {result.planned} planned unit(s) did not run: {_listed(ids)}")
    for comparison in comparisons:
        unmeasured = [m.model for m in comparison.models if m.verdict == "not measured"]
        if unmeasured:
            pair = f" ({comparison.label})" if several else ""
            open_reasons.append(f"{comparison.primary} not measured for {', '.join(unmeasured)}{pair}")
    if comparisons and not any(c.models for c in comparisons):
        open_reasons.append("nothing was measured")
    for c, e in expectations:
        if e.kind == "gate" and e.status == "unverified":
            open_reasons.append(f"gate {e.name} ({where(c, e.model)}) not verified: {e.detail}")
    if expectations and all(e.status == "unverified" for _, e in expectations):
        open_reasons.append(f"none of {len(expectations)} expectations could be checked")
    if open_reasons:
        return RunVerdict("NOT VERIFIED", tuple(open_reasons))
    caveats = [f"{_label(e)} ({where(c, e.model)}) not verified: {e.detail}"
               for c, e in expectations if e.status == "unverified"]  # fmt: skip
    return RunVerdict("PASS", tuple(caveats))
