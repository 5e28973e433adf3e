"""Where the time went: the ETDump events of two builds, compared event by event, per model."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from fvp_harness.report.stats.bootstrap import bootstrap_medians, percentile_interval
from fvp_harness.report.stats.etdump import EtdumpError, EtdumpEvent, EtdumpFile, read_etdump
from fvp_harness.store.folder import FETCHED_DIR
from fvp_harness.store.records import Record

if TYPE_CHECKING:
    from fvp_harness.report.stats.result import AnalysisResult
    from fvp_harness.report.stats.spec import Settings

__all__ = ["EXECUTE_BLOCK", "LOAD_BLOCK", "EventComparison", "EventReport", "EventRow", "Trace",
           "compare_events", "compare_traces", "load_traces"]

ETDUMP_FILE = "etdump.bin"
EXECUTE_BLOCK, LOAD_BLOCK = "Execute", "Default"
"""The per-inference blocks (one per ``Method::execute``) and the method load's
(``Program::load_method``)."""


@dataclass(frozen=True)
class Trace:
    """One unit's decoded ETDump, with what the report needs to place it."""

    unit_id: str
    build: str
    model: str
    time_unit: str
    file: EtdumpFile


def load_traces(root: Path, records: Sequence[Record], planned: Mapping[str, str] | None = None, *,
                label: str | None = None) -> tuple[list[Trace], list[str]]:
    """The ETDump of every ok unit (its latest record; with ``planned``, only a record of its
    planned key) that kept one, and a warning per file that cannot be read. ``label``: the traces'
    builds and units named as a comparison across stored runs names them (``after@3f2a1bc``,
    ``stored_compare``), the files still read from ``root`` under the unit's own id."""
    latest: dict[str, Record] = {}
    for record in records:
        if planned is not None and planned.get(record.unit_id) != record.key:
            continue
        # records are appended in order: the last one is the latest attempt
        latest[record.unit_id] = record
    traces: list[Trace] = []
    warnings: list[str] = []
    for unit_id, record in latest.items():
        names = str(record.extra.get("etdump") or "").split(",")
        if record.status != "ok" or ETDUMP_FILE not in names:
            continue
        path = Path(FETCHED_DIR) / unit_id / ETDUMP_FILE
        try:
            decoded = read_etdump((root / path).read_bytes())
        except (OSError, EtdumpError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            warnings.append(f"{unit_id}: {path.as_posix()} cannot be read ({why}); its ETDump "
                            "events are left out")
            continue
        # a traced Linux runner's ticks are nanoseconds; a bare-metal runner's are CPU cycles
        unit = "ns" if record.extra.get("etdump_sha256") else "cycles"
        build, name = (
            (record.build, unit_id)
            if label is None
            else (f"{record.build}@{label}", f"{unit_id}@{label}")
        )
        traces.append(Trace(name, build, record.model, unit, decoded))
    return traces, warnings


@dataclass(frozen=True)
class EventRow:
    """One event of one model in one pair (``present``: ``both``, or which build alone has it)."""

    model: str
    event: str
    occurrence: int
    chain_index: int
    instruction_id: int
    present: str
    n_baseline: int
    n_candidate: int
    baseline_median: float | None = None
    baseline_ci: tuple[float | None, float | None] = (None, None)
    candidate_median: float | None = None
    candidate_ci: tuple[float | None, float | None] = (None, None)
    change: float | None = None
    change_ci: tuple[float | None, float | None] = (None, None)
    self_saved: float | None = None
    self_saved_ci: tuple[float | None, float | None] = (None, None)
    share_pct: float | None = None


@dataclass(frozen=True)
class EventComparison:
    """The events of one model in one pair, and the total they are shares of (the outermost event's
    saving)."""

    baseline: str
    candidate: str
    model: str
    time_unit: str
    rows: tuple[EventRow, ...]
    total_event: str | None = None
    total_saved: float | None = None
    total_saved_ci: tuple[float | None, float | None] = (None, None)
    self_saved_sum: float | None = None
    run_block: str = EXECUTE_BLOCK
    """``Execute``: per inference; ``Default``: the method load, once per process."""

    @property
    def shares_within_ci(self) -> bool | None:
        """Whether the self savings add up to the total saving within its CI."""
        low, high = self.total_saved_ci
        if self.self_saved_sum is None or low is None or high is None:
            return None
        return low <= self.self_saved_sum <= high


@dataclass(frozen=True)
class EventReport:
    """Every comparison of the section, the unreadable files, and ``note``: why there is no
    comparison when the reason is not that no model has traces of both builds (``compare A B`` when
    only one run kept traces)."""

    comparisons: tuple[EventComparison, ...]
    warnings: tuple[str, ...] = field(default_factory=tuple)
    note: str | None = None


# --- per block: nesting and self time -------------------------------------------------------------


def _self_times(events: Sequence[EtdumpEvent]) -> list[int]:
    """Each event's duration less its direct children's (the events it encloses in time, nearest
    enclosing one their parent; of two with the same span the one written later, which ETDumpGen
    writes when it ends, is outer)."""
    own = [e.duration for e in events]
    for i, inner in enumerate(events):
        parent, span = None, None
        for j, outer in enumerate(events):
            if j == i or not (outer.start <= inner.start and inner.end <= outer.end):
                continue
            if outer.duration == inner.duration and j < i:
                continue
            if (span is None or outer.duration < span or
                (outer.duration == span and parent is not None and j < parent)):
                parent, span = j, outer.duration
        if parent is not None:
            own[parent] -= inner.duration
    return own


_Key = tuple[str, int]  # (event name, occurrence of that name in its block)


@dataclass
class _Collected:
    """Per build and event key: per unit, the durations and self times of its measured blocks."""

    duration: dict[_Key, list[list[float]]] = field(default_factory=dict)
    own: dict[_Key, list[list[float]]] = field(default_factory=dict)
    where: dict[_Key, tuple[int, int]] = field(default_factory=dict)
    order: list[_Key] = field(default_factory=list)
    outermost: dict[_Key, int] = field(default_factory=dict)


def _collect(traces: Sequence[Trace], warmup: int, run_block: str = EXECUTE_BLOCK) -> _Collected:
    out = _Collected()
    for trace in traces:
        blocks: dict[int, list[EtdumpEvent]] = {}
        for event in trace.file.events:
            if event.run_block == run_block:
                blocks.setdefault(event.block, []).append(event)
        unit_duration: dict[_Key, list[float]] = {}
        unit_own: dict[_Key, list[float]] = {}
        for index in sorted(blocks)[warmup:]:
            events = blocks[index]
            seen: dict[str, int] = {}
            own = _self_times(events)
            for event, self_time in zip(events, own, strict=True):
                key = (event.event, seen.get(event.event, 0))
                seen[event.event] = key[1] + 1
                if key not in out.where:
                    out.where[key] = (event.chain_index, event.instruction_id)
                    out.order.append(key)
                unit_duration.setdefault(key, []).append(float(event.duration))
                unit_own.setdefault(key, []).append(float(self_time))
            last = events[-1]  # written last: the outermost event (Method::execute)
            outer = (last.event, seen[last.event] - 1)
            out.outermost[outer] = out.outermost.get(outer, 0) + 1
        for key, values in unit_duration.items():
            out.duration.setdefault(key, []).append(values)
            out.own.setdefault(key, []).append(unit_own[key])
    return out


# --- statistics -----------------------------------------------------------------------------------


def _draws(groups: Sequence[Sequence[float]], settings: Settings, *labels: str) -> np.ndarray:
    arrays = [np.asarray(g, dtype=float) for g in groups if len(g)]
    rng = np.random.default_rng([settings.seed, *(zlib.crc32(label.encode()) for label in labels)])
    return bootstrap_medians(arrays, settings.resamples, rng)


def _interval(draws: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    return percentile_interval(draws, confidence)


def _median(groups: Sequence[Sequence[float]]) -> float | None:
    values = [v for g in groups for v in g]
    return float(np.median(values)) if values else None


def _compare_model(model: str, baseline: str, candidate: str, base: _Collected, cand: _Collected,
                   unit: str,
                   settings: Settings, run_block: str = EXECUTE_BLOCK) -> EventComparison:
    rows: list[EventRow] = []
    keys = [*base.order, *(k for k in cand.order if k not in base.duration)]
    for key in keys:
        name, occurrence = key
        chain, instruction = base.where.get(key) or cand.where[key]
        b_groups, c_groups = base.duration.get(key, []), cand.duration.get(key, [])
        nb, nc = sum(map(len, b_groups)), sum(map(len, c_groups))
        if not b_groups or not c_groups:
            one = baseline if b_groups else candidate
            groups = b_groups or c_groups
            median = _median(groups)
            ci = _interval(_draws(groups, settings, model, name, str(occurrence), one),
                           settings.confidence)
            row = EventRow(model, name, occurrence, chain, instruction, f"{one} only", nb, nc)
            rows.append(replace(row, baseline_median=median, baseline_ci=ci) if b_groups
                        else replace(row, candidate_median=median, candidate_ci=ci))
            continue
        labels = (model, name, str(occurrence))
        bd, cd = (
            _draws(b_groups, settings, *labels, baseline),
            _draws(c_groups, settings, *labels, candidate),
        )
        bmed, cmed = _median(b_groups), _median(c_groups)
        assert bmed is not None and cmed is not None
        b_own, c_own = _median(base.own[key]), _median(cand.own[key])
        own_draws = (_draws(base.own[key], settings, *labels, "self", baseline)
                     - _draws(cand.own[key], settings, *labels, "self", candidate))
        rows.append(EventRow(
            model, name, occurrence, chain, instruction, "both", nb, nc, bmed,
            _interval(bd, settings.confidence),
            cmed, _interval(cd, settings.confidence), cmed - bmed,
            _interval(cd - bd, settings.confidence),
            (b_own - c_own) if b_own is not None and c_own is not None else None,
            _interval(own_draws, settings.confidence)))
    total_key = max(base.outermost, key=lambda k: base.outermost[k]) if base.outermost else None
    total = next((r for r in rows if total_key and (r.event, r.occurrence) == total_key and
                  r.present == "both"),
                 None)
    total_saved = -total.change if total is not None and total.change is not None else None
    total_ci: tuple[float | None, float | None] = (None, None)
    if total is not None and total.change_ci[0] is not None and total.change_ci[1] is not None:
        total_ci = (-total.change_ci[1], -total.change_ci[0])
    if total_saved:
        rows = [_with_share(r, total_saved) for r in rows]
    saved = [r.self_saved for r in rows if r.self_saved is not None]
    rows.sort(key=lambda r: (r.present != "both",
                             -(r.share_pct if r.share_pct is not None else -1e300)))
    return EventComparison(baseline, candidate, model, unit, tuple(rows),
                           total_key[0] if total_key else None,
                           total_saved, total_ci, float(sum(saved)) if saved else None, run_block)


def _with_share(row: EventRow, total: float) -> EventRow:
    if row.self_saved is None:
        return row
    return replace(row, share_pct=100.0 * row.self_saved / total)


def compare_events(root: Path, records: Sequence[Record], result: AnalysisResult, *,
                   warmup: int = 0, planned: Mapping[str, str] | None = None) -> EventReport | None:
    """The event comparison of every pair and model of ``result`` whose units kept an ETDump; None
    when no unit did (the section is off) and no file was unreadable."""
    traces, warnings = load_traces(root, records, planned)
    if not traces and not warnings:
        return None
    pairs = [(c.baseline, c.candidate) for c in result.comparisons]
    return compare_traces(traces, pairs, result.settings, warmup=warmup, warnings=warnings)


def compare_traces(traces: Sequence[Trace], pairs: Sequence[tuple[str, str]], settings: Settings, *,
                   warmup: int = 0, warnings: Sequence[str] = ()) -> EventReport:
    """The event comparison of each (baseline, candidate) pair and each model both builds have
    traces of."""
    by: dict[tuple[str, str], list[Trace]] = {}
    for trace in traces:
        by.setdefault((trace.model, trace.build), []).append(trace)
    models = list(dict.fromkeys(trace.model for trace in traces))
    comparisons: list[EventComparison] = []
    # a pair compared on several metrics: its events once
    for baseline, candidate in dict.fromkeys(pairs):
        for model in models:
            base, cand = by.get((model, baseline), []), by.get((model, candidate), [])
            if not base or not cand:
                continue
            comparisons.append(_compare_model(model, baseline, candidate, _collect(base, warmup),
                                              _collect(cand, warmup), base[0].time_unit, settings))
            loads = _collect(base, 0, LOAD_BLOCK), _collect(cand, 0, LOAD_BLOCK)
            # what each process paid once, where the set-up may have gone
            if loads[0].order and loads[1].order:
                comparisons.append(
                    _compare_model(
                        model, baseline, candidate, *loads, base[0].time_unit, settings, LOAD_BLOCK
                    )
                )
    return EventReport(tuple(comparisons), tuple(warnings))
