"""``report.json``: everything the markdown shows, machine-readable and versioned
(``REPORT_FORMAT_VERSION``), and ``jsonable``, how every JSON file the harness writes rounds its
numbers."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any

from fvp_harness.report.rendering.captions import default_title
from fvp_harness.report.rendering.context import ReportContext
from fvp_harness.report.rendering.etdump_tables import events_json
from fvp_harness.report.rendering.order import build_order, ordered_summary
from fvp_harness.report.rendering.verdict import verdict_object
from fvp_harness.report.stats.etdump_events import EventReport
from fvp_harness.report.stats.result import AnalysisResult, expectations_violated

__all__ = ["REPORT_FORMAT_VERSION", "jsonable", "render_json"]


REPORT_FORMAT_VERSION = 4
"""Version of ``report.json``; bumped when a field changes meaning or disappears. 2:
``failed_units[].unit`` became ``unit_id`` (the unit's id, as in records). 3: ``comparisons`` holds
one comparison per pair of builds; ``comparison`` is only the first of them, while
``expectations_violated`` and ``verdict`` cover every pair. 4: a model's ``p_value`` is the
process-level one (``pvalues.process_level_p``; the pooled Mann-Whitney is ``p_pooled``);
``machine`` (the manifest's machine record), ``simulated`` and ``measured_on`` are added."""


def jsonable(value: Any) -> Any:
    """``value`` (dataclass dicts, numpy scalars, tuples) as plain JSON types for ``json.dumps``:
    NaN and infinities become null; floats rounded to 12 significant digits so noise in the last
    bits of a platform's float maths does not change the file."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) or hasattr(value, "__float__"):
        number = float(value)
        return float(f"{number:.12g}") if math.isfinite(number) else None
    return str(value)


def render_json(result: AnalysisResult, title: str | None = None,
                context: ReportContext | None = None, events: EventReport | None = None) -> str:
    """``report.json``: everything the markdown shows, machine-readable and versioned
    (``format_version``). ``comparisons`` has one entry per pair; ``comparison`` repeats the first
    (format 2 readers keep working)."""
    context = context or ReportContext()
    comparison = result.comparison
    data: dict[str, Any] = {
        "format": "fvp-harness-report",
        "format_version": REPORT_FORMAT_VERSION,
        "title": title or default_title(result, context),
        "builds": build_order(result, context),
        # top level
        "context": {k: v for k, v in dataclasses.asdict(context).items() if k != "machine"},
        "settings": dataclasses.asdict(result.settings),
        "comparison": dataclasses.asdict(comparison) if comparison is not None else None,
        "comparisons": [dataclasses.asdict(c) for c in result.comparisons],
        "summary": ordered_summary(result.summary,
                                   build_order(result, context)).to_dict(orient="records"),
        "failed_units": [dataclasses.asdict(f) for f in result.failed_units],
        "not_run": [dataclasses.asdict(u) for u in result.not_run],
        "planned_units": result.planned,
        "excluded_records": result.excluded_records,
        "dropped_samples": [dataclasses.asdict(d) for d in result.dropped],
        "drift": [dataclasses.asdict(d) for d in result.drift],
        "expectations_violated": expectations_violated(result),
        # status, reasons, violated gates, not-run units: report.verdict
        "verdict": verdict_object(result),
        "simulated": context.simulated,
        "measured_on": context.measured_on,
        "machine": context.machine,
    }
    if result.sampling:  # run.until only, so other reports stay as they were
        data["sampling"] = [dataclasses.asdict(n) for n in result.sampling]
    if events is not None:  # traced builds only, so other reports stay as they were
        data["etdump_events"] = events_json(events)
    return json.dumps(jsonable(data), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
