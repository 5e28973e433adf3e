"""The report's charts: ``report.png`` (``render_png``: the primary metric's medians per model with
CI whiskers, or for several pairs each candidate's change against its baseline) and
``report.samples.png`` (``samples_figure``: every sample per model, build and runner process).
matplotlib is imported when a chart is drawn, not when the module is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fvp_harness.report import format as fmt
from fvp_harness.report.rendering.cells import metric_label
from fvp_harness.report.rendering.report_files import save_png
from fvp_harness.report.stats.findings import Comparison
from fvp_harness.report.stats.result import AnalysisResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["BUILD_COLOURS", "PAIR_PALETTE", "distribution_metric", "has_samples", "render_png",
           "samples_figure"]


def _error(median: float | None, ci: tuple[float | None, float | None]) -> tuple[float, float]:
    if median is None or ci[0] is None or ci[1] is None:
        return 0.0, 0.0
    return max(0.0, median - ci[0]), max(0.0, ci[1] - median)


PAIR_PALETTE = ("#1f6fb4", "#d08c2b", "#3b9b5b", "#9b3b8c", "#c94f4f", "#4fa3a3", "#8c8c8c")
"""Bar colours of the combined chart, one per pair in order (repeating beyond seven)."""


def _change_bar(saved: float | None, low: float | None,
                high: float | None) -> tuple[float, float, float]:
    """A saving and its CI as a change bar: (change %, error below, error above); change = −saved
    (negative is a smaller, i.e. better, value). NaN height when there is no saving (no bar is
    drawn, none is implied)."""
    if saved is None:
        return math.nan, 0.0, 0.0
    change = -saved
    if low is None or high is None:
        return change, 0.0, 0.0
    return change, max(0.0, change + high), max(0.0, -low - change)


def _render_pairs_png(comparisons: Sequence[Comparison], path: Path, title: str | None) -> Path:
    """The combined chart of several pairs: one group per model (and the geometric mean), one bar
    per pair with the candidate's change of its primary metric against its baseline in %, 95% CI
    whiskers and the change printed at the bar's end. Changes in % put pairs with different
    baselines or units on one axis."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # heavy: only when a chart is drawn
    from matplotlib.figure import Figure

    figure = Figure(figsize=(max(8.0, 1.2 + 1.1 * len(comparisons) * 2), 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    models = list(dict.fromkeys(m.model for c in comparisons for m in c.models))
    geomean = any(c.geomean is not None for c in comparisons)
    groups = [*models, "geometric mean"] if geomean else models
    width = 0.8 / len(comparisons)
    for index, comparison in enumerate(comparisons):
        by_model = {m.model: m for m in comparison.models}
        bars = [_change_bar(*((m.saved_pct, m.ci_low, m.ci_high) if m is not None
                              else (None, None, None)))
                for m in (by_model.get(model) for model in models)]  # fmt: skip
        if geomean:
            gm = comparison.geomean
            bars.append(_change_bar(gm.saved_pct, gm.ci_low, gm.ci_high) if gm is not None
                        else (math.nan, 0.0, 0.0))
        xs = [i + (index - (len(comparisons) - 1) / 2) * width for i in range(len(groups))]
        heights = [bar[0] for bar in bars]
        yerr = [[bar[1] for bar in bars], [bar[2] for bar in bars]]
        axes.bar(xs, heights, width, label=comparison.label,
                 color=PAIR_PALETTE[index % len(PAIR_PALETTE)],
                 yerr=yerr, capsize=3, ecolor="#333333")
        for x, (change, below, above) in zip(xs, bars, strict=True):
            if math.isfinite(change):
                end = change - below if change < 0 else change + above
                axes.annotate("0%" if round(change) == 0 else f"{change:+.0f}%", (x, end),
                              textcoords="offset points",
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
    axes.legend(frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0),
                ncol=min(4, len(comparisons)))
    axes.spines[["top", "right"]].set_visible(False)
    return save_png(figure, path)


def render_png(result: AnalysisResult, path: Path, title: str | None = None) -> Path:
    """Bar chart of the primary metric's median per model, baseline beside candidate, with CI
    whiskers and the saving above each pair. Without a comparison: medians per build of the first
    metric in the summary. Several pairs: the combined chart of each candidate's change against its
    baseline (``_render_pairs_png``)."""
    if len(result.comparisons) > 1:
        return _render_pairs_png(result.comparisons, path, title)
    import pandas as pd
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # heavy: only when a chart is drawn
    from matplotlib.figure import Figure

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
                    errors.append(_error(med,
                                         (None if pd.isna(ci[0]) else ci[0],
                                          None if pd.isna(ci[1]) else ci[1])))
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
        axes.bar(xs, heights, width, label=name, color=colour, yerr=yerr, capsize=3,
                 ecolor="#333333")
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
    axes.legend(frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0),
                ncol=max(1, len(series)))
    axes.spines[["top", "right"]].set_visible(False)
    return save_png(figure, path)

BUILD_COLOURS = ("#8c8c8c", "#1f6fb4", "#d08c2b", "#3b9b5b", "#9b3b8c", "#c94f4f")
"""One colour per build in report order (the bar chart's first two: baseline grey, candidate
blue)."""

MAX_PANELS = 24
"""At most this many models get a panel (a huge sweep stays a readable picture; the tables have
every model)."""


def distribution_metric(result: AnalysisResult) -> str | None:
    """The metric drawn: the first comparison's primary metric, else the first metric of the
    summary."""
    if result.comparison is not None:
        return result.comparison.primary
    summary = result.summary
    return str(summary["metric"].iloc[0]) if len(summary) else None


def has_samples(result: AnalysisResult) -> bool:
    """Whether ``samples_figure`` has anything to draw (an ok sample of ``distribution_metric``):
    the markdown links the chart only then."""
    metric = distribution_metric(result)
    frame = result.frame
    return metric is not None and bool(len(frame)) and bool(
        ((frame["metric"] == metric) & (frame["status"] == "ok")).any())


def _spread(index: int, count: int, width: float = 0.32) -> float:
    """A dot's horizontal offset inside its strip: golden-ratio steps over ±width/2 (even,
    deterministic)."""
    if count <= 1:
        return 0.0
    return ((index * 0.6180339887) % 1.0 - 0.5) * width


def _samples_by_panel(
    result: AnalysisResult, metric: str
) -> tuple[dict[str, dict[str, dict[str, list[float]]]], str]:
    """model -> build -> unit id -> values (run order), and the metric's unit, from the tidy frame
    in one pass."""
    frame = result.frame
    rows = frame[(frame["metric"] == metric) & (frame["status"] == "ok")].sort_values(
        "order", kind="stable"
    )
    grouped: dict[str, dict[str, dict[str, list[float]]]] = {}
    for model, build, unit_id, value in zip(rows["model"], rows["build"], rows["unit_id"],
                                            rows["value"], strict=True):
        grouped.setdefault(str(model), {}).setdefault(str(build), {}).setdefault(
            str(unit_id), []
        ).append(float(value))
    unit = str(rows["unit_of_measure"].iloc[0] or "") if len(rows) else ""
    return grouped, unit


def _medians(result: AnalysisResult,
             metric: str) -> dict[tuple[str, str], tuple[float, float, float]]:
    """(model, build) -> (median, CI low, CI high) of the summary, the numbers ``## Per build``
    shows."""
    summary = result.summary
    if not len(summary):
        return {}
    mine = summary[summary["metric"] == metric]
    return {(str(m), str(b)): (float(med), float(lo), float(hi))
            for m, b, med, lo, hi in zip(mine["model"], mine["build"], mine["median"],
                                         mine["ci_low"], mine["ci_high"], strict=True)}


def samples_figure(result: AnalysisResult, builds: Sequence[str],
                   title: str | None = None) -> Figure | None:
    """The figure (None when there is nothing to draw: no ok sample of the metric). ``builds`` in
    report order.

    Drawn for speed as well as looks (it is made for every report with a chart): one line of markers
    per build rather than a scatter per process, few y ticks, titles as plain text, and a fixed
    layout instead of ``tight_layout``, which measures every text of every panel."""
    # late: heavy, only when a figure is made
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    metric = distribution_metric(result)
    if metric is None or not len(result.frame):
        return None
    grouped, unit = _samples_by_panel(result, metric)
    if not grouped:
        return None
    medians = _medians(result, metric)
    models = list(grouped)[:MAX_PANELS]
    seen = {b for per_build in grouped.values() for b in per_build}
    order = [b for b in builds if b in seen] + sorted(seen - set(builds))
    colours = {b: BUILD_COLOURS[i % len(BUILD_COLOURS)] for i, b in enumerate(order)}
    columns = min(2, len(models))
    lines = math.ceil(len(models) / columns)
    height = 3.0 * lines + 1.0
    figure = Figure(figsize=(6.0 * columns, height), dpi=90)
    FigureCanvasAgg(figure)
    figure.subplots_adjust(left=0.14 / columns, right=0.99, bottom=0.75 / height,
                           top=1 - 1.2 / height, hspace=0.8, wspace=0.22)
    for panel, model in enumerate(models):
        axes = figure.add_subplot(lines, columns, panel + 1)
        centres = {b: medians[(model, b)][0] for b in order if (model, b) in medians}
        relative = bool(centres) and all(math.isfinite(c) and c > 0 for c in centres.values())
        x = 0.0
        ticks: list[float] = []
        labels: list[str] = []
        for build in order:
            processes = grouped[model].get(build)
            if not processes:
                continue
            colour = colours[build]
            start = x
            xs: list[float] = []
            ys: list[float] = []
            scale = 100.0 / centres[build] if relative and build in centres else None
            for unit_id, values in processes.items():
                xs += [x + _spread(i, len(values)) for i in range(len(values))]
                ys += [(v * scale - 100.0) for v in values] if scale is not None else values
                ticks.append(x)
                labels.append(unit_id.split("-", 1)[0])  # r0, r1: the repetition names the process
                x += 1.0
            axes.plot(xs, ys, linestyle="none", marker="o", markersize=2.6, color=colour,
                      alpha=0.75, markeredgewidth=0)
            named = build
            if build in centres:
                named += f" · {fmt.number(centres[build])}" + (f" {unit}" if unit else "")
            axes.text((start + x - 1.0) / 2, -0.16, named, transform=axes.get_xaxis_transform(),
                      ha="center", va="top", fontsize=8, color=colour)
            if (model, build) in medians:
                median, low, high = medians[(model, build)]
                if scale is not None:
                    median, low, high = (value * scale - 100.0 for value in (median, low, high))
                left, right = start - 0.45, x - 0.55
                if math.isfinite(low) and math.isfinite(high):
                    axes.fill_between([left, right], low, high, color=colour, alpha=0.18,
                                      linewidth=0)
                axes.plot([left, right], [median, median], color=colour, linewidth=1.6)
            x += 0.6  # a gap between builds
        axes.set_xticks(ticks, labels, fontsize=7)
        axes.yaxis.set_major_locator(MaxNLocator(4))
        axes.tick_params(axis="y", labelsize=7)
        axes.text(0.5, 1.03, model, transform=axes.transAxes, ha="center", va="bottom", fontsize=10)
        axes.set_ylabel(f"{metric}: % from the build's median" if relative else
                        f"{metric}" + (f" ({unit})" if unit else ""), fontsize=8)
        axes.spines[["top", "right"]].set_visible(False)
    heading = ("Every sample per runner process (dots) as % from its build's median (line), with "
               f"the {result.settings.confidence * 100:g}% CI of that median (band)")
    figure.suptitle(f"{title}\n{heading}" if title else heading, fontsize=10)
    return figure
