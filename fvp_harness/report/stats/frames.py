"""The tidy pandas frames of a run: one row per (unit, metric, iteration) sample (``to_frame``) and
one row per unit (``units_frame``), what ``AnalysisResult.frame`` and ``.units`` hold and the VGF
report and the pytest plugin read.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from fvp_harness.report.stats.samples import (
    SampleBlock,
    execution_order,
    outputs_digest,
    sample_blocks,
    select_latest,
)
from fvp_harness.store.records import Record

__all__ = ["FRAME_COLUMNS", "UNIT_COLUMNS", "frame_columns", "frame_of", "to_frame", "typed",
           "units_frame"]

log = logging.getLogger(__name__)

_UNIT_IDENTITY = ["scenario", "unit_id", "key", "instance", "build", "model", "repetition",
                  "attempt", "status"]
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


def frame_columns(blocks: Sequence[SampleBlock]) -> dict[str, list[object] | np.ndarray]:
    """The sample frame's columns, rows in block order (``samples.sample_blocks``: execution order),
    each unit's identity repeated once per kept value; ``order`` numbers the rows. The text columns
    are lists, the numbers arrays of their final type: pandas infers a column's type from a list
    value by value (half the frame's cost), and the frame is the same (``frame_of``)."""
    records = [block.record for block in blocks]
    counts = [len(block.values) for block in blocks]
    rows = sum(counts)

    def repeated(values: Iterable[object]) -> list[object]:
        return list(itertools.chain.from_iterable(map(itertools.repeat, values, counts)))

    def repeated_ints(values: Iterable[int]) -> np.ndarray:
        return np.repeat(np.fromiter(values, dtype=np.int64, count=len(records)), counts)

    columns: dict[str, list[object] | np.ndarray] = {
        "scenario": repeated([r.scenario for r in records]),
        "unit_id": repeated([r.unit_id for r in records]),
        "key": repeated([r.key for r in records]),
        "instance": repeated([r.instance for r in records]),
        "build": repeated([r.build for r in records]),
        "model": repeated([r.model for r in records]),
        "repetition": repeated_ints(r.repetition for r in records),
        "attempt": repeated_ints(r.attempt for r in records),
        "status": repeated([r.status for r in records]),
        "metric": repeated([block.metric for block in blocks]),
        "iteration": np.fromiter(
            itertools.chain.from_iterable(block.iterations for block in blocks),
            dtype=np.int64,
            count=rows,
        ),
        "value": np.fromiter(
            itertools.chain.from_iterable(block.values for block in blocks),
            dtype=np.float64,
            count=rows,
        ),
        "unit_of_measure": repeated([block.uom for block in blocks]),
        "order": np.arange(rows, dtype=np.int64),
    }
    return {name: columns[name] for name in FRAME_COLUMNS}


def frame_of(columns: Mapping[str, Sequence[object] | np.ndarray]) -> pd.DataFrame:
    """The sample frame of ``frame_columns``, with its integer and float columns typed (also when it
    is empty)."""
    types = {"repetition": "int64", "attempt": "int64", "iteration": "int64", "value": "float64",
             "order": "int64"}
    return typed(pd.DataFrame(columns), types)


def typed(frame: pd.DataFrame, types: Mapping[str, str]) -> pd.DataFrame:
    """``frame.astype(types)`` for the columns not of their type already (pandas infers them from
    the values, except in an empty frame): the same frame, without the copy."""
    wrong = {name: kind for name, kind in types.items() if frame[name].dtype != kind}
    return frame.astype(wrong) if wrong else frame


def to_frame(records: Iterable[Record], *, latest_only: bool = True) -> pd.DataFrame:
    """Tidy samples: one row per (unit, metric, iteration) with the unit's identity and status.

    ``order`` numbers every sample in execution order across the whole run (by unit start time, then
    iteration), for drift checks. ``latest_only`` applies ``select_latest`` first.

    Stored values that are no measurement are left out with a logged warning (``analyse`` keeps them
    as ``AnalysisResult.dropped`` for the report): NaN and infinities of any metric, and negative or
    >= 2^63 values of a built-in metric (times and counters). ``iteration`` keeps the value's
    position in the record.
    """
    recs = select_latest(records) if latest_only else list(records)
    blocks, dropped = sample_blocks(recs)
    for item in dropped:
        log.warning("%s: %d %s value(s) left out (%s)", item.unit_id, item.count, item.metric,
                    item.kinds)
    return frame_of(frame_columns(blocks))


def units_frame(records: Iterable[Record], *, latest_only: bool = True) -> pd.DataFrame:
    """One row per unit, in execution order: identity, status, failure class and text, log path,
    outputs (``name=sha256;...``)."""
    recs = select_latest(records) if latest_only else list(records)
    recs = [recs[i] for i in execution_order(recs)]
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
            "outputs": outputs_digest(r.outputs),
            "build_id_seen": r.build_id_seen or "",
            "started": r.started,
            "duration_s": float(r.duration_s),
        }
        for r in recs
    ]
    return typed(pd.DataFrame(rows, columns=UNIT_COLUMNS),
                 {"repetition": "int64", "attempt": "int64", "duration_s": "float64"})
