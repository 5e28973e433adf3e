"""A run's report files from an ``result.AnalysisResult``: ``report.md``, ``.csv``, ``.json``,
``.png`` (and ``report.samples.png``, ``report.events.csv``), each rendered by its own module and
written here. Renders only: no statistics, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fvp_harness.files import atomic_write
from fvp_harness.report.rendering.captions import chart_title, default_title
from fvp_harness.report.rendering.charts import has_samples, render_png, samples_figure
from fvp_harness.report.rendering.context import ReportContext
from fvp_harness.report.rendering.csv_report import render_csv
from fvp_harness.report.rendering.etdump_tables import events_csv
from fvp_harness.report.rendering.json_report import render_json
from fvp_harness.report.rendering.markdown import render_markdown
from fvp_harness.report.rendering.order import build_order
from fvp_harness.report.rendering.report_files import save_png, write_report_files
from fvp_harness.report.stats.etdump_events import EventReport
from fvp_harness.report.stats.result import AnalysisResult
from fvp_harness.store.folder import EVENTS_CSV_FILE, REPORT_FILES, REPORT_SAMPLES_FILE

__all__ = ["render_report"]


def render_report(
    result: AnalysisResult,
    out_dir: Path,
    outputs: Sequence[str] = ("markdown", "csv", "json", "png"),
    title: str | None = None,
    context: ReportContext | None = None,
    events: EventReport | None = None,
) -> dict[str, Path]:
    """Write the requested outputs into ``out_dir`` (``report.md/.csv/.json/.png``; with ``png``
    ``report.samples.png``, the distributions; with ``events`` and the ``csv`` output
    ``report.events.csv``); return name -> path of the outputs asked for.

    ``out_dir`` is the folder ``store.ResultStore`` owns (``store.root``); nothing else is written.
    """
    context = context or ReportContext()
    links = ([REPORT_FILES["png"], *([REPORT_SAMPLES_FILE] if has_samples(result) else [])]
             if "png" in outputs else [])
    text = {
        "markdown": lambda: render_markdown(result, title, context, events, links),
        "csv": lambda: render_csv(result, context),
        "json": lambda: render_json(result, title, context, events),
    }
    png_title = chart_title(title or default_title(result, context), context)
    builds = build_order(result, context)

    def charts(path: Path) -> None:
        render_png(result, path, png_title)
        figure = samples_figure(result, builds, png_title)
        samples = path.with_name(REPORT_SAMPLES_FILE)
        if figure is not None:
            save_png(figure, samples, layout=False)
        else:
            # nothing to draw: no stale picture of an earlier run either
            samples.unlink(missing_ok=True)

    written = write_report_files(out_dir, outputs, REPORT_FILES, text, charts)
    # the event rows, as report.json's etdump_events holds them
    if events is not None and "csv" in written:
        written["events_csv"] = Path(out_dir) / EVENTS_CSV_FILE
        atomic_write(written["events_csv"], events_csv(events))
    return written
