"""``report.samples.png``: every sample of the primary metric, per model, build and runner process.

Why: a median and its CI hide the shape behind them. A reviewer looking at one strip per runner process sees at a
glance a bimodal build, an outlier iteration, a process that ran slower than its siblings (process-to-process
variation, which the CI accounts for) or a drift within a process; pytest-benchmark and pyperf users expect such a
picture. Each panel is one model: per build one strip of dots per unit (process), in run order, with the build's
median as a line across its strips and the CI of that median as a band, the numbers the tables show.

Pure: it builds a matplotlib ``Figure`` from the analysis alone (no file, no clock); ``render.render_report``
saves it. The dots' horizontal spread is a fixed function of the iteration's position, not random, so the same
records give the same bytes. matplotlib is imported when a figure is made, not when the module is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fvp_harness.report.analysis import AnalysisResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["BUILD_COLOURS", "distribution_metric", "samples_figure"]

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


def _spread(index: int, count: int, width: float = 0.32) -> float:
    """A dot's horizontal offset inside its strip: golden-ratio steps over ±width/2 (even, deterministic)."""
    if count <= 1:
        return 0.0
    return ((index * 0.6180339887) % 1.0 - 0.5) * width


def samples_figure(result: AnalysisResult, builds: Sequence[str], title: str | None = None) -> Figure | None:
    """The figure (None when there is nothing to draw: no ok sample of the metric). ``builds`` in report order."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # late: heavy, only when a figure is made
    from matplotlib.figure import Figure

    metric = distribution_metric(result)
    frame = result.frame
    if metric is None or not len(frame):
        return None
    rows = frame[(frame["metric"] == metric) & (frame["status"] == "ok")]
    if not len(rows):
        return None
    models = list(dict.fromkeys(rows["model"]))[:MAX_PANELS]
    order = [b for b in builds if b in set(rows["build"])] + sorted(set(rows["build"]) - set(builds))
    summary = result.summary
    columns = min(2, len(models))
    lines = math.ceil(len(models) / columns)
    figure = Figure(figsize=(6.0 * columns, 3.2 * lines + 0.6), dpi=100)
    FigureCanvasAgg(figure)
    unit = str(rows["unit_of_measure"].iloc[0] or "")
    for panel, model in enumerate(models):
        axes = figure.add_subplot(lines, columns, panel + 1)
        here = rows[rows["model"] == model]
        x = 0.0
        ticks: list[float] = []
        labels: list[str] = []
        for index, build in enumerate(order):
            colour = BUILD_COLOURS[index % len(BUILD_COLOURS)]
            mine = here[here["build"] == build]
            if not len(mine):
                continue
            start = x
            for unit_id in dict.fromkeys(mine.sort_values("order")["unit_id"]):
                values = mine[mine["unit_id"] == unit_id]["value"].to_numpy()
                xs = [x + _spread(i, len(values)) for i in range(len(values))]
                axes.scatter(xs, values, s=9, color=colour, alpha=0.75, linewidths=0)
                ticks.append(x)
                labels.append(str(unit_id).split("-", 1)[0])  # r0, r1: the repetition names the process
                x += 1.0
            axes.annotate(build, xy=((start + x - 1.0) / 2, 0), xycoords=("data", "axes fraction"),
                          xytext=(0, -20), textcoords="offset points", ha="center", fontsize=8, color=colour)
            hit = summary[(summary["model"] == model) & (summary["build"] == build) & (summary["metric"] == metric)]
            if len(hit):
                median, low, high = (float(hit[k].iloc[0]) for k in ("median", "ci_low", "ci_high"))
                left, right = start - 0.45, x - 0.55
                if math.isfinite(low) and math.isfinite(high):
                    axes.fill_between([left, right], low, high, color=colour, alpha=0.18, linewidth=0)
                axes.plot([left, right], [median, median], color=colour, linewidth=1.6, label=build)
            x += 0.6  # a gap between builds
        axes.set_xticks(ticks, labels, fontsize=7)
        axes.set_title(model, fontsize=10)
        axes.set_ylabel(f"{metric}" + (f" ({unit})" if unit else ""), fontsize=8)
        axes.tick_params(axis="y", labelsize=7)
        axes.spines[["top", "right"]].set_visible(False)
        if panel == 0:
            axes.legend(frameon=False, fontsize=7, loc="best")
    heading = (f"Every sample per runner process (dots), build median (line) and its "
               f"{result.settings.confidence * 100:g}% CI (band)")
    figure.suptitle(f"{title}\n{heading}" if title else heading, fontsize=10)
    return figure
