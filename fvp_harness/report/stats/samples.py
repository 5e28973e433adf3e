"""Which stored samples count: one record per unit (``select_latest``), records in execution order, and per record
and metric the values that are measurements (``sample_blocks``); the others are left out and reported
(``DroppedSamples``).

Nothing is averaged that is no measurement: NaN, infinities, and for built-in metrics (times and counters)
negative or >= 2^63 values, and whatever ``scenario.metrics.check_sample`` refuses for the unit of measure. Scraping
refuses these since parsers version 2; records of older versions may hold them. Pure Python: the frames
(``report.frames``) and the grouped arrays (``report.sample_groups``) are built from these blocks.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from fvp_harness.report.stats.findings import DroppedSamples
from fvp_harness.scenario.metrics import BUILTIN_METRICS, check_sample, plausible_range
from fvp_harness.store.records import Record

__all__ = ["PLAUSIBLE_LIMIT", "SampleBlock", "execution_order", "invalid_reason", "outputs_digest", "sample_blocks",
           "select_latest"]

PLAUSIBLE_LIMIT = 2.0**63
"""Built-in metrics are times and counters: a value this large (a 64-bit counter printed with ``%d`` by old
builds) or negative is not a measurement."""


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


def execution_order(records: Sequence[Record]) -> list[int]:
    """Positions of records sorted by start time, ties (and unparsable times) broken by file order."""
    return sorted(range(len(records)), key=lambda i: (records[i].started, i))


def invalid_reason(metric: str, value: float, unit: str = "") -> str | None:
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


@functools.lru_cache(maxsize=256)
def _accepted(metric: str, unit: str) -> tuple[float, float]:
    """A closed range of values ``invalid_reason`` accepts for ``metric`` in ``unit`` (empty when none is found):
    the samples inside it need no check of their own.

    Why it holds: every rule of ``invalid_reason`` is a bound (not finite, below a floor, above a ceiling), so the
    values it accepts form one interval; both ends of this range are checked with ``invalid_reason`` itself, so
    everything between them is accepted too. The range is ``scenario.metrics.plausible_range`` (narrowed below
    2^63 for a built-in metric), its top end stepped down while rounding puts it just outside."""
    low, high = plausible_range(unit, "run")
    if metric in BUILTIN_METRICS:
        low, high = max(low, 0.0), min(high, math.nextafter(PLAUSIBLE_LIMIT, 0.0))
    for _ in range(8):
        if invalid_reason(metric, high, unit) is None:
            break
        high = math.nextafter(high, -math.inf)
    if low > high or invalid_reason(metric, low, unit) is not None or invalid_reason(metric, high, unit) is not None:
        return math.inf, -math.inf
    return low, high


@dataclass(frozen=True)
class SampleBlock:
    """The kept samples of one metric of one record, in the record's order: one stretch of the sample frame's rows
    (``frames.to_frame``), all of one unit, metric and unit of measure. ``iterations`` are the values' positions in
    the record (a value left out leaves a gap)."""

    record: Record
    metric: str
    uom: str
    iterations: Sequence[int]
    values: list[float]


def sample_blocks(records: Sequence[Record]) -> tuple[list[SampleBlock], tuple[DroppedSamples, ...]]:
    """The records' kept samples as blocks in execution order (records by start time, then each record's metrics in
    its order; no empty block), and the values left out.

    Why blocks and not rows: every row of a block shares its unit's identity, so the frame's columns and the
    statistics' groups are built a block at a time; a value is checked on its own only when the block has one
    outside the range every value of its metric may take (``_accepted``)."""
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
    """A unit's output files as one text, ``name=sha256;...`` by name: what the ``outputs`` identity check compares."""
    return ";".join(f"{name}={digest}" for name, digest in sorted(outputs.items()))
