"""One series' chart of the history site: an inline SVG whose points link to the runs' pages.

Why three y axes: an autoscaled axis stretches ±0.5 % of noise on a flat series over the whole
chart, so every morning looks like an alarm. ``relative`` (the default view) plots the change
against the series' first fitted level in percent and always shows at least ±2 × the step threshold,
so noise stays a thin band and a step reads as its size; ``zero`` plots the metric from zero;
``zoom`` is the autoscaled view for looking closely. The site draws all three and a reader switches
between them (``dashboard``: a CSS-only switch, the pages run no script).

The x axis is one slot per run, oldest first, labelled with the run's commit and day (the tooltip of
each point adds the commit's subject, the run and the value). A run that measured nothing for the
series (its units failed, or it did not run the model) is an orange ``×`` at the foot of the chart
in its slot, linking to its run's page, never a silent gap. Element ids (all under ``chart_id``):
``-points``, ``-npu``, ``-failed`` (one link per run each), ``-regression-<run index>`` /
``-improvement-<run index>`` (and ``-label``).

Written by hand, not by matplotlib: a few hundred elements whose ids, links and tooltips the site
needs, in about a millisecond (matplotlib took 0.6 s a chart on a loaded CI machine, and a site
draws three per series).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fvp_harness.report import format as fmt

if TYPE_CHECKING:
    from fvp_harness.report.stored.history import History, Step

__all__ = ["AXES", "DEFAULT_AXIS", "chart_svg", "reference_level", "relative_span"]

AXES = ("relative", "zero", "zoom")
"""The y axes a chart can be drawn on (see the module's docstring), the default first."""
DEFAULT_AXIS = AXES[0]
REGRESSION, IMPROVEMENT, POINT, NPU, FAILED = "#c0392b", "#3b9b5b", "#1f6fb4", "#7b5aa6", "#d35400"
MAX_TICK_LABELS = 14
"""More runs than this: only every k-th slot is labelled (each point's tooltip still names its
commit)."""


def reference_level(history: History, model: str) -> float | None:
    """What ``relative`` divides by: the series' first fitted level (else its first median); None
    when the series has no positive value."""
    for value in (*history.levels[model], *(point.median for point in history.points[model])):
        if value is not None and value > 0:
            return float(value)
    return None


def relative_span(threshold: float) -> float:
    """Half the height, in percent, a ``relative`` axis always shows: twice the step threshold, at
    least 2 %."""
    return max(2.0 * threshold, 2.0)


def _scale(axis: str, reference: float | None) -> Callable[[float], float]:
    if axis == "relative" and reference:
        return lambda value: 100.0 * (value / reference - 1.0)
    return lambda value: value



@dataclass(frozen=True)
class _Panel:
    """A plot area of the chart: its box in SVG pixels and the y range it shows."""

    top: float
    height: float
    low: float
    high: float

    def y(self, value: float) -> float:
        span = self.high - self.low or 1.0
        return self.top + self.height * (1.0 - (value - self.low) / span)


WIDTH, LEFT, RIGHT, HEAD, FOOT = 900, 74, 16, 46, 70
MAIN_HEIGHT, NPU_HEIGHT, GAP = 230, 80, 22


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``low`` .. ``high`` (steps of 1, 2, 2.5 or 5 times a power of
    ten)."""
    span = high - low
    if span <= 0 or not math.isfinite(span):
        return [low]
    raw = span / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    return [first + k * step for k in range(int((high - first) / step + 1e-9) + 1)]


def _tick_text(value: float, relative: bool) -> str:
    if relative:
        return f"{value:+g} %" if abs(value) > 1e-12 else "0 %"
    return fmt.number(value)


def _range(axis: str, values: Sequence[float], span: float) -> tuple[float, float]:
    """The y range of one panel on ``axis`` for ``values`` (already scaled)."""
    finite = [v for v in values if math.isfinite(v)]
    if axis == "relative":
        low, high = min([-span, *finite]), max([span, *finite])
        pad = 0.08 * (high - low)
        return low - pad, high + pad
    if axis == "zero":
        top = max(finite, default=1.0)
        return 0.0, (top if top > 0 else 1.0) * 1.25
    low, high = min(finite, default=0.0), max(finite, default=1.0)
    pad = 0.25 * (high - low) if high > low else max(abs(high) * 0.05, 1e-9)
    return low - pad, high + pad


def chart_svg(history: History, model: str, *, chart_id: str, link: Callable[[int], str],
              labels: Sequence[str] | None = None, titles: Sequence[str] | None = None,
              failed: Mapping[int, str] | None = None, axis: str = "zoom") -> str:
    """One model's chart as an SVG element for inlining into HTML: the median of ``history.metric``
    per run with its CI, the fitted level, each step of ``history.steps`` marked at the run it
    starts (red: regression, green: improvement; the change written beside it), and below it the NPU
    cycles per run, on the y ``axis`` of ``AXES``. ``labels``: each run's x tick (default: its short
    commit); ``titles``: each run's tooltip; ``failed``: run index -> why it has no point (an orange
    ``×`` in its slot). Every point and mark links to ``link(run index)``; ``chart_id`` prefixes
    every element id, so several charts can share one page."""
    if axis not in AXES:
        raise ValueError(f"axis {axis!r}: one of {', '.join(AXES)}")
    points = history.points[model]
    count = len(history.runs)
    failed = dict(failed or {})
    reference = reference_level(history, model)
    relative = axis == "relative" and reference is not None
    # nothing to be relative to: autoscaled
    shown_axis = axis if relative or axis != "relative" else "zoom"
    scale = _scale("relative" if relative else shown_axis, reference)
    measured = [i for i, point in enumerate(points) if point.median is not None]
    with_npu = [i for i, point in enumerate(points) if point.npu_cycles is not None]
    npu_reference = next((points[i].npu_cycles for i in with_npu if points[i].npu_cycles), None)
    npu_relative = relative and npu_reference is not None
    npu_scale = _scale("relative" if npu_relative else shown_axis, npu_reference)
    span = relative_span(history.threshold)
    spread = [scale(v) for i in measured
              for v in (points[i].median, points[i].ci_low, points[i].ci_high)
              if v is not None]
    spread += [scale(level) for level in history.levels[model] if level is not None]
    main = _Panel(HEAD, MAIN_HEIGHT, *_range(shown_axis, spread, span))
    npu = None
    if with_npu:
        cycles = [npu_scale(points[i].npu_cycles) for i in with_npu]  # type: ignore[arg-type]
        npu = _Panel(HEAD + MAIN_HEIGHT + GAP, NPU_HEIGHT, *_range(shown_axis, cycles, span))
    bottom = (npu or main).top + (npu or main).height
    height = bottom + FOOT
    plot_width = WIDTH - LEFT - RIGHT

    def x(index: float) -> float:
        return LEFT + plot_width * (index + 0.5) / max(count, 1)

    tips = list(titles or ())

    def anchor(index: int, shape: str) -> str:
        tip = f"<title>{html.escape(tips[index], quote=False)}</title>" if index < len(tips) else ""
        return f'<a href="{html.escape(link(index), quote=True)}">{tip}{shape}</a>'

    unit = f" ({history.unit})" if history.unit else ""
    label = f"{history.scenario}: {model}, {history.metric} over {count} runs ({shown_axis} axis)"
    out = ['<svg xmlns="http://www.w3.org/2000/svg" role="img" '
           f'aria-label="{html.escape(label, quote=True)}" '
           f'viewBox="0 0 {WIDTH} {height:.0f}" width="{WIDTH}" height="{height:.0f}" '
           'font-family="sans-serif" '
           f'font-size="11">',
           f'<text x="{LEFT}" y="16" '
           f'font-size="14">{html.escape(f"{history.scenario}: {model}")}</text>',
           _legend(history, bool(failed))]
    main_title = f"{history.metric}, % vs first level" if relative else f"{history.metric}{unit}"
    out += _frame(main, main_title, relative, x, count)
    if npu is not None:
        out += _frame(npu, "NPU cycles" + (" (%)" if npu_relative else ""), npu_relative, x, count)
    for step in history.steps:
        if step.model == model and step.kind != "shift":
            out.append(_step(step, chart_id, x, main, npu, scale))
    fitted = [(i, scale(level))
              for i, level in enumerate(history.levels[model]) if level is not None]
    if fitted:
        path = []
        start = x(fitted[0][0])
        # a level holds until halfway to the next measured run: the step's line
        for k, (i, level) in enumerate(fitted):
            end = x(fitted[k + 1][0] - 0.5) if k < len(fitted) - 1 else x(i)
            y = main.y(level)
            path.append(f"{'M' if not k else 'L'}{start:.1f},{y:.1f}L{end:.1f},{y:.1f}")
            start = end
        out.append(f'<path class="level" d="{"".join(path)}" fill="none" stroke="#8c8c8c" '
                   'stroke-width="1.3"/>')
    whiskers = []
    for i in measured:
        point = points[i]
        if point.ci_low is not None and point.ci_high is not None:
            cx, low, high = x(i), main.y(scale(point.ci_low)), main.y(scale(point.ci_high))
            whiskers.append(f"M{cx:.1f},{low:.1f}V{high:.1f}"
                            f"M{cx - 3:.1f},{low:.1f}h6M{cx - 3:.1f},{high:.1f}h6")
    if whiskers:
        out.append(f'<path class="ci" d="{"".join(whiskers)}" stroke="#555555" fill="none"/>')
    medians = {i: main.y(scale(point.median)) for i, point in enumerate(points)
               if point.median is not None}
    dots = "".join(anchor(i, f'<circle cx="{x(i):.1f}" cy="{y:.1f}" r="4.5" fill="{POINT}"/>')
                   for i, y in medians.items())
    out.append(f'<g id="{chart_id}-points">{dots}</g>')
    if failed:
        foot = main.top + main.height - 8
        marks = "".join(anchor(i, f'<path d="M{x(i) - 5:.1f},{foot - 5:.1f}l10,10m-10,0l10,-10" '
                                  f'stroke="{FAILED}" stroke-width="2.4"/>')
                        for i in sorted(failed))
        out.append(f'<g id="{chart_id}-failed">{marks}</g>')
    if npu is not None:
        tops = {i: npu.y(npu_scale(point.npu_cycles)) - 3.5 for i, point in enumerate(points)
                if point.npu_cycles is not None}
        squares = "".join(anchor(i, f'<rect x="{x(i) - 3.5:.1f}" y="{top:.1f}" width="7" '
                                    f'height="7" fill="{NPU}"/>') for i, top in tops.items())
        out.append(f'<g id="{chart_id}-npu">{squares}</g>')
    out.append(_x_labels(history, labels, x, bottom))
    out.append("</svg>")
    return "".join(out)


def _legend(history: History, failed: bool) -> str:
    items = [(f'<circle cx="5" cy="-4" r="4" fill="{POINT}"/>', f"median ({history.build})"),
             ('<path d="M5,-10V2M2,-10h6M2,2h6" stroke="#555555"/>', "95 % CI"),
             ('<path d="M0,-4h12" stroke="#8c8c8c" stroke-width="1.3"/>', "fitted level")]
    if failed:
        items.append((f'<path d="M1,-8l8,8m-8,0l8,-8" stroke="{FAILED}" stroke-width="2.2"/>',
                      "no result (failed or not run)"))
    parts: list[str] = []
    left = float(LEFT)
    for shape, text in items:
        parts.append(f'<g transform="translate({left:.0f},{HEAD - 14})">{shape}'
                     f'<text x="16" y="0" fill="#333333">{html.escape(text)}</text></g>')
        left += 34 + 6.2 * len(text)
    return f'<g class="legend">{"".join(parts)}</g>'


def _frame(panel: _Panel, title: str, relative: bool, x: Callable[[float], float],
           count: int) -> list[str]:
    """A panel's grid lines, y ticks, y title and a faint line at zero % (``relative``)."""
    parts = [f'<text transform="translate(14,{panel.top + panel.height / 2:.1f}) rotate(-90)" '
             f'text-anchor="middle" fill="#333333">{html.escape(title)}</text>']
    for value in _nice_ticks(panel.low, panel.high, 5 if panel.height > 120 else 2):
        y = panel.y(value)
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
                     f'stroke="{"#bbbbbb" if relative and abs(value) < 1e-12 else "#eeeeee"}"/>'
                     f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#333333">'
                     f'{html.escape(_tick_text(value, relative))}</text>')
    bottom = panel.top + panel.height
    parts.append(f'<path d="M{LEFT},{panel.top}V{bottom:.1f}H{WIDTH - RIGHT}" fill="none" '
                 'stroke="#333333"/>')
    ticks = "".join(f"M{x(i):.1f},{bottom:.1f}v4" for i in range(count))
    parts.append(f'<path d="{ticks}" stroke="#333333"/>')
    return parts


def _step(step: Step, chart_id: str, x: Callable[[float], float], main: _Panel, npu: _Panel | None,
          scale: Callable[[float], float]) -> str:
    """A step: a dashed line between the last run of the old level and the first of the new, its
    change written beside it; the group's id names its kind and run index."""
    colour = REGRESSION if step.kind == "regression" else IMPROVEMENT
    where = x(step.index - 0.5)
    bottom = (npu or main).top + (npu or main).height
    arrow = "▲" if step.kind == "regression" else "▼"
    text = f"{arrow} {step.kind} {fmt.signed_percent(step.change_pct, 1)}"
    y = min(max(main.y(scale(step.after)) - 10, main.top + 12), main.top + main.height - 4)
    return (f'<g id="{chart_id}-{step.kind}-{step.index}"><path '
            f'd="M{where:.1f},{main.top}V{bottom:.1f}" '
            f'stroke="{colour}" stroke-width="1.4" stroke-dasharray="6 4"/></g>'
            f'<text id="{chart_id}-{step.kind}-{step.index}-label" x="{where + 6:.1f}" y="{y:.1f}" '
            f'fill="{colour}" font-size="13">{html.escape(text)}</text>')


def _x_labels(history: History, labels: Sequence[str] | None, x: Callable[[float], float],
              bottom: float) -> str:
    """The runs' slots labelled, slanted; with more than ``MAX_TICK_LABELS`` runs every k-th and the
    newest."""
    count = len(history.runs)
    shown = list(labels) if labels is not None else [run.label for run in history.runs]
    every = max(1, math.ceil(count / MAX_TICK_LABELS))
    parts = []
    for index, text in enumerate(shown):
        if index % every and index != count - 1:
            continue
        parts.append(f'<text transform="translate({x(index) + 4:.1f},{bottom + 14:.1f}) '
                     'rotate(-30)" '
                     f'text-anchor="end" fill="#333333">{html.escape(text)}</text>')
    return f'<g class="runs">{"".join(parts)}</g>'
