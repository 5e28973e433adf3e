"""The samples: which stored samples count (one record per unit, ``select_latest``; per record and
metric the values that are measurements, ``sample_blocks``; the others are left out and reported,
``DroppedSamples``) and the samples grouped once for every lookup the statistics make (``Samples``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fvp_harness.report.stats.findings import DroppedSamples
from fvp_harness.scenario.metrics import BUILTIN_METRICS, check_sample, plausible_range
from fvp_harness.store.records import Record

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PLAUSIBLE_LIMIT", "Group", "SampleBlock", "Samples", "Span", "execution_order",
           "invalid_reason",
           "outputs_digest", "sample_blocks", "select_latest", "spans_of_rows", "unit_columns"]

PLAUSIBLE_LIMIT = 2.0**63
"""Built-in metrics are times and counters: a value this large (a 64-bit counter printed with ``%d``
by old builds) or negative is not a measurement."""


def select_latest(records: Iterable[Record]) -> list[Record]:
    """One record per (scenario, unit id): the last ``ok`` one, else the last one. Keeps execution
    order.

    Retries and ``--resume`` append new attempts of a unit; analysing all of them would count a unit
    twice.
    """
    records = list(records)
    chosen: dict[tuple[str, str], int] = {}
    for index, record in enumerate(records):
        ident = (record.scenario, record.unit_id)
        previous = chosen.get(ident)
        if previous is None or record.status == "ok" or records[previous].status != "ok":
            chosen[ident] = index
    return [records[i] for i in sorted(chosen.values())]


def execution_order(records: Sequence[Record]) -> list[int]:
    """Positions of records sorted by start time, ties (and unparsable times) broken by file
    order."""
    return sorted(range(len(records)), key=lambda i: (records[i].started, i))


def invalid_reason(metric: str, value: float, unit: str = "") -> str | None:
    """Why a stored sample is no measurement (None when it is one): not finite; for a built-in
    metric (times and counters) negative or at least 2^63; and, for any metric, what
    ``scenario.metrics.check_sample`` refuses for its unit of measure (a time beyond a day, a
    negative counter). Scraping refuses these since parsers version 2; records of older versions may
    hold them."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if metric in BUILTIN_METRICS:
        if value < 0:
            return "negative"
        if value >= PLAUSIBLE_LIMIT:
            return ">= 2^63"
    # per-run limits: the looser ones (a record does not say which)
    why = check_sample(value, unit, "run")
    if why is None:
        return None
    return ("negative" if why.startswith("negative") else ">= 2^63" if "2**63" in why
            else why.split(" (")[0])


@functools.lru_cache(maxsize=256)
def _accepted(metric: str, unit: str) -> tuple[float, float]:
    """A closed range of values ``invalid_reason`` accepts for ``metric`` in ``unit`` (empty when
    none is found): the samples inside it need no check of their own.

    Why it holds: every rule of ``invalid_reason`` is a bound (not finite, below a floor, above a
    ceiling), so the values it accepts form one interval; both ends of this range are checked with
    ``invalid_reason`` itself, so everything between them is accepted too. The range is
    ``scenario.metrics.plausible_range`` (narrowed below 2^63 for a built-in metric), its top end
    stepped down while rounding puts it just outside."""
    low, high = plausible_range(unit, "run")
    if metric in BUILTIN_METRICS:
        low, high = max(low, 0.0), min(high, math.nextafter(PLAUSIBLE_LIMIT, 0.0))
    for _ in range(8):
        if invalid_reason(metric, high, unit) is None:
            break
        high = math.nextafter(high, -math.inf)
    if (low > high or invalid_reason(metric, low, unit) is not None or
        invalid_reason(metric, high, unit) is not None):
        return math.inf, -math.inf
    return low, high


@dataclass(frozen=True)
class SampleBlock:
    """The kept samples of one metric of one record, in the record's order: one stretch of the
    sample frame's rows (``frames.to_frame``), all of one unit, metric and unit of measure.
    ``iterations`` are the values' positions in the record (a value left out leaves a gap)."""

    record: Record
    metric: str
    uom: str
    iterations: Sequence[int]
    values: list[float]


def sample_blocks(
    records: Sequence[Record],
) -> tuple[list[SampleBlock], tuple[DroppedSamples, ...]]:
    """The records' kept samples as blocks in execution order (records by start time, then each
    record's metrics in its order; no empty block), and the values left out.

    Why blocks and not rows: every row of a block shares its unit's identity, so the frame's columns
    and the statistics' groups are built a block at a time; a value is checked on its own only when
    the block has one outside the range every value of its metric may take (``_accepted``)."""
    blocks: list[SampleBlock] = []
    dropped: list[DroppedSamples] = []
    for i in execution_order(records):
        record = records[i]
        for metric, values in record.samples.items():
            uom = record.metric_units.get(metric, "")
            floats = [float(value) for value in values]
            low, high = _accepted(metric, uom)
            if all(low <= value <= high for value in floats):  # NaN compares false: checked below
                if floats:
                    blocks.append(SampleBlock(record, metric, uom, range(len(floats)), floats))
                continue
            kinds: dict[str, int] = {}
            iterations: list[int] = []
            kept: list[float] = []
            for iteration, value in enumerate(floats):
                why = invalid_reason(metric, value, uom)
                if why is not None:
                    kinds[why] = kinds.get(why, 0) + 1
                    continue
                iterations.append(iteration)
                kept.append(value)
            if kept:
                blocks.append(SampleBlock(record, metric, uom, iterations, kept))
            if kinds:
                shown = ", ".join(f"{kind} x{count}" for kind, count in kinds.items())
                dropped.append(DroppedSamples(record.unit_id, record.build, record.model, metric,
                                              sum(kinds.values()), len(values), shown))
    return blocks, tuple(dropped)


def outputs_digest(outputs: Mapping[str, str]) -> str:
    """A unit's output files as one text, ``name=sha256;...`` by name: what the ``outputs`` identity
    check compares."""
    return ";".join(f"{name}={digest}" for name, digest in sorted(outputs.items()))


_SPAN_COLUMNS = ("model", "build", "metric", "unit_id", "status", "unit_of_measure")
"""The sample frame's columns that place a row in its group (and the unit of measure the group
reports)."""


Span = tuple[int, int, Any, Any, Any, Any, Any, Any]
"""Rows ``start`` to ``end`` (exclusive) of the sample frame, all of one model, build, metric, unit
id, status and unit of measure: ``(start, end, model, build, metric, unit_id, status, uom)``. A
plain tuple: a stretch per record and metric is made for every analysis."""


def spans_of_rows(rows: Mapping[str, Sequence[Any]]) -> list[Span]:
    """The stretches of equal ``model``, ``build``, ``metric``, ``unit_id``, ``status`` and
    ``unit_of_measure`` in the frame columns ``rows`` (sequences of one length), in row order."""
    keys = list(zip(*(rows[name] for name in _SPAN_COLUMNS), strict=True))
    if not keys:
        return []
    starts = [0, *(i for i in range(1, len(keys)) if keys[i] != keys[i - 1])]
    ends = [*starts[1:], len(keys)]
    return [(start, end, *keys[start]) for start, end in zip(starts, ends, strict=True)]


def unit_columns(records: Sequence[Record]) -> dict[str, list[Any]]:
    """What the statistics read of the unit frame, as lists in execution order
    (``frames.units_frame``'s rows): model, build, status and the outputs digest; and, for the
    per-partition identity check, each unit's id and ``Record.partitions`` (not in ``units_frame``:
    a report table has no place for them)."""
    recs = [records[i] for i in execution_order(records)]
    return {"model": [r.model for r in recs], "build": [r.build for r in recs],
            "status": [r.status for r in recs],
            "outputs": [outputs_digest(r.outputs) for r in recs],
            "unit_id": [r.unit_id for r in recs], "partitions": [r.partitions for r in recs]}


@dataclass(frozen=True)
class Group:
    """The ok samples of one (model, build, metric): ``values`` in frame order, ``units`` one array
    per unit id in the order the units first appear (what ``groupby("unit_id", sort=False)`` gives),
    ``uom`` the first row's unit of measure."""

    values: np.ndarray
    units: list[np.ndarray]
    unit_ids: tuple[str, ...]
    uom: str


def _gathered(values: np.ndarray, spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """The rows of ``spans`` of ``values``, in order: the values indexing with their positions gives
    (a view for one stretch; nothing in the analysis writes into a group's arrays)."""
    if len(spans) == 1:
        start, end = spans[0]
        return values[start:end]
    return np.concatenate([values[start:end] for start, end in spans])


class Samples:
    """Every lookup the statistics make, from one pass over the stretches of rows (see the module's
    docstring)."""

    def __init__(self, spans: Sequence[Span], values: np.ndarray, models: Sequence[Any],
                 units: Mapping[str, Sequence[Any]] | None = None) -> None:
        """``spans``: the sample frame's stretches of rows (``spans_of_rows``) in row order;
        ``values`` its ``value`` column; ``models`` its ``model`` column (any status); ``units`` the
        unit frame's ``model``, ``build``, ``status`` and ``outputs`` (and, from records,
        ``unit_id`` and ``partitions``; None: no unit frame)."""
        by_unit: dict[tuple[Any, Any, Any], dict[Any, list[tuple[int, int]]]] = {}
        spans_of: dict[tuple[Any, Any, Any], list[tuple[int, int]]] = {}
        first_uom: dict[tuple[Any, Any, Any], Any] = {}
        self.uom: dict[tuple[str, str], str] = {}
        """(model, metric) -> the unit of measure of its first ok row, any build."""
        self.metric_uom: dict[str, str] = {}
        """metric -> the unit of measure of its first ok row, any model and build."""
        for start, end, model, build, metric, unit_id, status, uom in spans:
            if status != "ok":
                continue
            key = (model, build, metric)
            of_key = by_unit.get(key)
            # a new group; the first ok rows of a (model, metric) or metric start one
            if of_key is None:
                of_key = by_unit[key] = {}
                spans_of[key] = []
                first_uom[key] = uom
                self.uom.setdefault((model, metric), uom)
                self.metric_uom.setdefault(metric, uom)
            spans_of[key].append((start, end))
            rows = of_key.get(unit_id)
            if rows is None:
                of_key[unit_id] = [(start, end)]
            else:
                rows.append((start, end))
        self.groups = {key: Group(_gathered(values, where),
                                  [_gathered(values, rows) for rows in by_unit[key].values()],
                                  tuple(by_unit[key]), first_uom[key])
                       for key, where in spans_of.items()}  # fmt: skip
        """(model, build, metric) -> ``Group``, in the order the groups first appear."""
        self.models = list(dict.fromkeys(models))
        """Models in the order they first appear in the frame (any status), then those only the unit
        frame has."""
        self.outputs: dict[tuple[str, str], list[str]] = {}
        """(model, build) -> the outputs digest of each ok unit, in unit frame order."""
        self.partitions: dict[str, Mapping[str, Sequence[Sequence[float]]]] = {}
        """unit id -> its ``Record.partitions`` (ok units that have any; only from records, not from
        a frame)."""
        if units is not None and "partitions" in units:
            self.partitions = {unit_id: calls for unit_id, status, calls
                               in zip(units["unit_id"], units["status"], units["partitions"],
                                      strict=True)
                               if status == "ok" and calls}  # fmt: skip
        if units is not None and len(units["model"]):
            self.models = list(dict.fromkeys([*self.models, *units["model"]]))
            for model, build, status, outputs in zip(units["model"], units["build"],
                                                     units["status"],
                                                     units["outputs"], strict=True):
                if status == "ok":
                    self.outputs.setdefault((model, build), []).append(outputs)

    @classmethod
    def of_frames(cls, frame: pd.DataFrame, units: pd.DataFrame | None = None) -> Samples:
        """From a sample frame (``frames.to_frame``) and optionally a unit frame
        (``frames.units_frame``)."""
        rows = {name: frame[name].tolist() for name in _SPAN_COLUMNS}
        unit_rows = ({name: units[name].tolist()
                      for name in ("model", "build", "status", "outputs")}
                     if units is not None else None)  # fmt: skip
        return cls(spans_of_rows(rows), frame["value"].to_numpy(), rows["model"], unit_rows)

    @classmethod
    def of_records(cls, blocks: Sequence[SampleBlock], records: Sequence[Record]) -> Samples:
        """From ``samples.sample_blocks(records)`` and the units of ``records`` (as
        ``frames.units_frame`` has them): the groups of the frame ``frames.to_frame`` would make of
        them, without making it."""
        spans: list[Span] = []
        values: list[float] = []
        for block in blocks:
            r, start = block.record, len(values)
            values += block.values
            spans.append((start, len(values), r.model, r.build, block.metric, r.unit_id, r.status,
                          block.uom))
        models = [block.record.model for block in blocks]
        return cls(spans, np.array(values, dtype=np.float64), models, unit_columns(records))

    def units_of(self, model: str, build: str, metric: str) -> list[np.ndarray]:
        """One array of ok samples per unit (empty without any)."""
        group = self.groups.get((model, build, metric))
        return group.units if group is not None else []

    def calls_of(self, model: str, build: str, metric: str) -> list[tuple[float, ...]]:
        """Each ok inference's per-call values of ``metric`` (``Record.partitions``; a unit without
        them counts each sample as one call), in frame order."""
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
                if build in builds and (metric is None or name == metric)
                for unit_id in group.unit_ids}
