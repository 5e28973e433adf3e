"""``report.png``: the bar chart of the primary metric's medians per model with CI whiskers (or, for several pairs,
each candidate's change against its baseline). The one report module that imports matplotlib at the top: it is
loaded only when a chart is drawn (``render.render_report`` imports it late)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fvp_harness.report import format as fmt
from fvp_harness.report.rendering.cells import metric_label
from fvp_harness.report.rendering.report_files import save_png
from fvp_harness.report.stats.findings import Comparison
from fvp_harness.report.stats.result import AnalysisResult

__all__ = ["PAIR_PALETTE", "render_png"]


def _error(median: float | None, ci: tuple[float | None, float | None]) -> tuple[float, float]:
    if median is None or ci[0] is None or ci[1] is None:
        return 0.0, 0.0
    return max(0.0, median - ci[0]), max(0.0, ci[1] - median)


PAIR_PALETTE = ("#1f6fb4", "#d08c2b", "#3b9b5b", "#9b3b8c", "#c94f4f", "#4fa3a3", "#8c8c8c")
"""Bar colours of the combined chart, one per pair in order (repeating beyond seven)."""


def _change_bar(saved: float | None, low: float | None, high: float | None) -> tuple[float, float, float]:
    """A saving and its CI as a change bar: (change %, error below, error above); change = −saved (negative is a
    smaller, i.e. better, value). NaN height when there is no saving (no bar is drawn, none is implied)."""
    if saved is None:
        return math.nan, 0.0, 0.0
    change = -saved
    if low is None or high is None:
        return change, 0.0, 0.0
    return change, max(0.0, change + high), max(0.0, -low - change)


def _render_pairs_png(comparisons: Sequence[Comparison], path: Path, title: str | None) -> Path:
    """The combined chart of several pairs: one group per model (and the geometric mean), one bar per pair with the
    candidate's change of its primary metric against its baseline in %, 95% CI whiskers and the change printed at
    the bar's end. Changes in % put pairs with different baselines or units on one axis."""
    figure = Figure(figsize=(max(8.0, 1.2 + 1.1 * len(comparisons) * 2), 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    models = list(dict.fromkeys(m.model for c in comparisons for m in c.models))
    geomean = any(c.geomean is not None for c in comparisons)
    groups = [*models, "geometric mean"] if geomean else models
    width = 0.8 / len(comparisons)
    for index, comparison in enumerate(comparisons):
        by_model = {m.model: m for m in comparison.models}
        bars = [_change_bar(*((m.saved_pct, m.ci_low, m.ci_high) if m is not None else (None, None, None)))
                for m in (by_model.get(model) for model in models)]  # fmt: skip
        if geomean:
            gm = comparison.geomean
            bars.append(_change_bar(gm.saved_pct, gm.ci_low, gm.ci_high) if gm is not None else (math.nan, 0.0, 0.0))
        xs = [i + (index - (len(comparisons) - 1) / 2) * width for i in range(len(groups))]
        heights = [bar[0] for bar in bars]
        yerr = [[bar[1] for bar in bars], [bar[2] for bar in bars]]
        axes.bar(xs, heights, width, label=comparison.label, color=PAIR_PALETTE[index % len(PAIR_PALETTE)],
                 yerr=yerr, capsize=3, ecolor="#333333")
        for x, (change, below, above) in zip(xs, bars, strict=True):
            if math.isfinite(change):
                end = change - below if change < 0 else change + above
                axes.annotate("0%" if round(change) == 0 else f"{change:+.0f}%", (x, end), textcoords="offset points",
                              xytext=(0, -10 if change < 0 else 3), ha="center", fontsize=8)
    axes.axhline(0.0, color="#333333", linewidth=0.8)
    axes.set_xticks(range(len(groups)), groups)
    primaries = {c.primary for c in comparisons}
    label, per = metric_label(next(iter(primaries)))
    what = f"{label} {per}" if len(primaries) == 1 else "primary metric"
    baselines = list(dict.fromkeys(c.baseline for c in comparisons))
    against = baselines[0] if len(baselines) == 1 else "baseline"
    axes.set_ylabel(f"{what}: change vs {against} (%)")
    if title:
        figure.suptitle(title, fontsize=11)
    axes.margins(y=0.15)
    axes.legend(frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=min(4, len(comparisons)))
    axes.spines[["top", "right"]].set_visible(False)
    return save_png(figure, path)


def render_png(result: AnalysisResult, path: Path, title: str | None = None) -> Path:
    """Bar chart of the primary metric's median per model, baseline beside candidate, with CI whiskers and the
    saving above each pair. Without a comparison: medians per build of the first metric in the summary. Several
    pairs: the combined chart of each candidate's change against its baseline (``_render_pairs_png``)."""
    if len(result.comparisons) > 1:
        return _render_pairs_png(result.comparisons, path, title)
    figure = Figure(figsize=(8, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    comparison = result.comparison
    if comparison is not None and comparison.models:
        names = [m.model for m in comparison.models]
        series = [
            (
                comparison.baseline,
                [m.baseline_median for m in comparison.models],
                "#8c8c8c",
                [_error(m.baseline_median, m.baseline_ci) for m in comparison.models],
            ),
            (
                comparison.candidate,
                [m.candidate_median for m in comparison.models],
                "#1f6fb4",
                [_error(m.candidate_median, m.candidate_ci) for m in comparison.models],
            ),
        ]
        label, per = metric_label(comparison.primary)
        ylabel = f"{label} {per}" + (f" ({comparison.unit})" if comparison.unit else "")
    else:
        summary = result.summary
        metric = summary["metric"].iloc[0] if len(summary) else ""
        rows = summary[summary["metric"] == metric] if len(summary) else summary
        names = list(dict.fromkeys(rows["model"].tolist())) if len(rows) else []
        builds = list(dict.fromkeys(rows["build"].tolist())) if len(rows) else []
        series = []
        palette = ["#8c8c8c", "#1f6fb4", "#d08c2b", "#3b9b5b"]
        for index, build in enumerate(builds):
            medians: list[float | None] = []
            errors: list[tuple[float, float]] = []
            for name in names:
                hit = rows[(rows["model"] == name) & (rows["build"] == build)]
                if len(hit):
                    med = float(hit["median"].iloc[0])
                    ci = (hit["ci_low"].iloc[0], hit["ci_high"].iloc[0])
                    medians.append(med)
                    errors.append(_error(med, (None if pd.isna(ci[0]) else ci[0], None if pd.isna(ci[1]) else ci[1])))
                else:
                    medians.append(None)
                    errors.append((0.0, 0.0))
            series.append((build, medians, palette[index % len(palette)], errors))
        ylabel = str(metric)
    width = 0.8 / max(1, len(series))
    for index, (name, medians, colour, errors) in enumerate(series):
        xs = [i + (index - (len(series) - 1) / 2) * width for i in range(len(names))]
        heights = [0.0 if v is None else v for v in medians]
        yerr = [[e[0] for e in errors], [e[1] for e in errors]]
        axes.bar(xs, heights, width, label=name, color=colour, yerr=yerr, capsize=3, ecolor="#333333")
    if comparison is not None:
        for i, m in enumerate(comparison.models):
            top = max(v for v in (m.baseline_median, m.candidate_median, 0.0) if v is not None)
            if m.saved_pct is not None:
                axes.annotate(
                    fmt.saving_phrase(m.saved_pct, 0),
                    (i, top),
                    textcoords="offset points",
                    xytext=(0, 8),
                    ha="center",
                    fontsize=9,
                )
    axes.set_xticks(range(len(names)), names)
    axes.set_ylabel(ylabel)
    if title:
        figure.suptitle(title, fontsize=11)
    axes.margins(y=0.15)
    axes.legend(frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=max(1, len(series)))
    axes.spines[["top", "right"]].set_visible(False)
    return save_png(figure, path)
