"""A series as a sparkline: the small SVG of each card on the history site's overview grid.

Written by hand, not by matplotlib: a line, a few marks and no text, a few hundred bytes each, so an
overview of dozens of series stays light and fast to write. Same reading as the series chart's
``relative`` axis (``site_chart``): the change against the series' first level, at least ±2 × the
step threshold tall, so noise is a thin line and a step is its size. A step is a dashed vertical
line (red up, green down), a run with no result a small orange ``×`` at the foot, the newest point a
dot (red while a regression is in effect).
"""

from __future__ import annotations

import html
from collections.abc import Collection
from typing import TYPE_CHECKING

from fvp_harness.report.stored.site_chart import (
    FAILED,
    IMPROVEMENT,
    POINT,
    REGRESSION,
    reference_level,
    relative_span,
)

if TYPE_CHECKING:
    from fvp_harness.report.stored.history import History

__all__ = ["sparkline_svg"]

WIDTH, HEIGHT, PAD = 200, 46, 5


def sparkline_svg(history: History, model: str, *, failed: Collection[int] = (),
                  label: str = "") -> str:
    """The sparkline of ``model``'s series (``failed``: run indices with no result); ``label`` its
    accessible name."""
    points = history.points[model]
    count = len(points)
    reference = reference_level(history, model)
    measured = [(i, p.median) for i, p in enumerate(points) if p.median is not None]
    values = [100.0 * (m / reference - 1.0)
              for _, m in measured] if reference else [m for _, m in measured]
    span = relative_span(history.threshold)
    if reference:
        low, high = min([-span, *values]), max([span, *values])
    else:
        low, high = min(values, default=0.0), max(values, default=1.0)
    high = high if high > low else low + 1.0

    def x(index: float) -> float:
        return PAD + (WIDTH - 2 * PAD) * (index / (count - 1) if count > 1 else 0.5)

    def y(value: float) -> float:
        return HEIGHT - PAD - (HEIGHT - 2 * PAD) * (value - low) / (high - low)

    parts = [f'<svg class="spark" role="img" aria-label="{html.escape(label, quote=True)}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
             'xmlns="http://www.w3.org/2000/svg">']
    if reference:
        parts.append(f'<line class="zero" x1="{PAD}" x2="{WIDTH - PAD}" y1="{y(0.0):.1f}" '
                     f'y2="{y(0.0):.1f}" '
                     'stroke="#dddddd" stroke-width="1"/>')
    for step in history.steps:
        if step.model != model or step.kind == "shift":
            continue
        colour = REGRESSION if step.kind == "regression" else IMPROVEMENT
        parts.append(f'<line class="{step.kind}" x1="{x(step.index - 0.5):.1f}" '
                     f'x2="{x(step.index - 0.5):.1f}" '
                     f'y1="{PAD - 3}" y2="{HEIGHT - PAD + 3}" stroke="{colour}" stroke-width="1.2" '
                     'stroke-dasharray="3 2"/>')
    if measured:
        line = " ".join(f"{x(i):.1f},{y(v):.1f}"
                        for (i, _), v in zip(measured, values, strict=True))
        parts.append(f'<polyline class="series" points="{line}" fill="none" stroke="{POINT}" '
                     'stroke-width="1.6" stroke-linejoin="round"/>')
        in_effect = any(step.model == model for step in history.in_effect)
        newest = measured[-1][0]
        parts.append(f'<circle class="newest" cx="{x(newest):.1f}" cy="{y(values[-1]):.1f}" '
                     'r="2.8" '
                     f'fill="{REGRESSION if in_effect else POINT}"/>')
    for index in sorted(failed):
        cx, cy = x(index), HEIGHT - PAD
        parts.append(f'<path class="failed" d="M{cx - 3:.1f},{cy - 3:.1f}L{cx + 3:.1f},{cy + 3:.1f}'
                     f'M{cx - 3:.1f},{cy + 3:.1f}L{cx + 3:.1f},{cy - 3:.1f}" stroke="{FAILED}" '
                     'stroke-width="1.8"/>')
    parts.append("</svg>")
    return "".join(parts)
