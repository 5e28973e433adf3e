"""``report.samples.png``: every sample of the primary metric, per model, build and runner process.

Why: a median and its CI hide the shape behind them. A reviewer looking at one strip per runner process sees at a
glance a bimodal build, an outlier iteration, a process that ran slower than its siblings (process-to-process
variation, which the CI accounts for) or a drift within a process; pytest-benchmark and pyperf users expect such a
picture. Each panel is one model: per build one strip of dots per unit (process), in run order, with the build's
median as a line across its strips and the CI of that median as a band, the numbers the tables show. Values are
drawn as % from their build's median (the medians themselves are under each build's name): on one absolute axis a
3x saving would squash every build's spread into a flat line, and the spread is what this picture is for.

Pure: it builds a matplotlib ``Figure`` from the analysis alone (no file, no clock); ``render.render_report``
saves it. The dots' horizontal spread is a fixed function of the iteration's position, not random, so the same
records give the same bytes. matplotlib is imported when a figure is made, not when the module is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fvp_harness.report import format as fmt
from fvp_harness.report.stats.result import AnalysisResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["BUILD_COLOURS", "distribution_metric", "has_samples", "samples_figure"]

BUILD_COLOURS = ("#8c8c8c", "#1f6fb4", "#d08c2b", "#3b9b5b", "#9b3b8c", "#c94f4f")
"""One colour per build in report order (the bar chart's first two: baseline grey, candidate blue)."""

MAX_PANELS = 24
"""At most this many models get a panel (a huge sweep stays a readable picture; the tables have every model)."""


def distribution_metric(result: AnalysisResult) -> str | None:
    """The metric drawn: the first comparison's primary metric, else the first metric of the summary."""
    if result.comparison is not None:
        return result.comparison.primary
    summary = result.summary
    return str(summary["metric"].iloc[0]) if len(summary) else None


def has_samples(result: AnalysisResult) -> bool:
    """Whether ``samples_figure`` has anything to draw (an ok sample of ``distribution_metric``): the markdown links
    the chart only then."""
    metric = distribution_metric(result)
    frame = result.frame
    return metric is not None and bool(len(frame)) and bool(
        ((frame["metric"] == metric) & (frame["status"] == "ok")).any())


def _spread(index: int, count: int, width: float = 0.32) -> float:
    """A dot's horizontal offset inside its strip: golden-ratio steps over ±width/2 (even, deterministic)."""
    if count <= 1:
        return 0.0
    return ((index * 0.6180339887) % 1.0 - 0.5) * width


def _samples_by_panel(result: AnalysisResult, metric: str) -> tuple[dict[str, dict[str, dict[str, list[float]]]],
                                                                     str]:
    """model -> build -> unit id -> values (run order), and the metric's unit, from the tidy frame in one pass."""
    frame = result.frame
    rows = frame[(frame["metric"] == metric) & (frame["status"] == "ok")].sort_values("order", kind="stable")
    grouped: dict[str, dict[str, dict[str, list[float]]]] = {}
    for model, build, unit_id, value in zip(rows["model"], rows["build"], rows["unit_id"], rows["value"],
                                            strict=True):
        grouped.setdefault(str(model), {}).setdefault(str(build), {}).setdefault(str(unit_id), []).append(
            float(value))
    unit = str(rows["unit_of_measure"].iloc[0] or "") if len(rows) else ""
    return grouped, unit


def _medians(result: AnalysisResult, metric: str) -> dict[tuple[str, str], tuple[float, float, float]]:
    """(model, build) -> (median, CI low, CI high) of the summary, the numbers ``## Per build`` shows."""
    summary = result.summary
    if not len(summary):
        return {}
    mine = summary[summary["metric"] == metric]
    return {(str(m), str(b)): (float(med), float(lo), float(hi))
            for m, b, med, lo, hi in zip(mine["model"], mine["build"], mine["median"], mine["ci_low"],
                                         mine["ci_high"], strict=True)}


def samples_figure(result: AnalysisResult, builds: Sequence[str], title: str | None = None) -> Figure | None:
    """The figure (None when there is nothing to draw: no ok sample of the metric). ``builds`` in report order.

    Drawn for speed as well as looks (it is made for every report with a chart): one line of markers per build
    rather than a scatter per process, few y ticks, titles as plain text, and a fixed layout instead of
    ``tight_layout``, which measures every text of every panel."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # late: heavy, only when a figure is made
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
    figure.subplots_adjust(left=0.14 / columns, right=0.99, bottom=0.75 / height, top=1 - 1.2 / height,
                           hspace=0.8, wspace=0.22)
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
            axes.plot(xs, ys, linestyle="none", marker="o", markersize=2.6, color=colour, alpha=0.75,
                      markeredgewidth=0)
            named = build
            if build in centres:
                named += f" · {fmt.number(centres[build])}" + (f" {unit}" if unit else "")
            axes.text((start + x - 1.0) / 2, -0.16, named, transform=axes.get_xaxis_transform(), ha="center",
                      va="top", fontsize=8, color=colour)
            if (model, build) in medians:
                median, low, high = medians[(model, build)]
                if scale is not None:
                    median, low, high = (value * scale - 100.0 for value in (median, low, high))
                left, right = start - 0.45, x - 0.55
                if math.isfinite(low) and math.isfinite(high):
                    axes.fill_between([left, right], low, high, color=colour, alpha=0.18, linewidth=0)
                axes.plot([left, right], [median, median], color=colour, linewidth=1.6)
            x += 0.6  # a gap between builds
        axes.set_xticks(ticks, labels, fontsize=7)
        axes.yaxis.set_major_locator(MaxNLocator(4))
        axes.tick_params(axis="y", labelsize=7)
        axes.text(0.5, 1.03, model, transform=axes.transAxes, ha="center", va="bottom", fontsize=10)
        axes.set_ylabel(f"{metric}: % from the build's median" if relative else
                        f"{metric}" + (f" ({unit})" if unit else ""), fontsize=8)
        axes.spines[["top", "right"]].set_visible(False)
    heading = (f"Every sample per runner process (dots) as % from its build's median (line), with the "
               f"{result.settings.confidence * 100:g}% CI of that median (band)")
    figure.suptitle(f"{title}\n{heading}" if title else heading, fontsize=10)
    return figure
