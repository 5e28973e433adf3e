"""How numbers look in every table the harness writes: markdown and CSV reports, the VGF report, the
terminal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tabulate import tabulate

__all__ = [
    "byte_count",
    "count",
    "duration_ns",
    "markdown_cell",
    "markdown_table",
    "number",
    "p_value",
    "percent",
    "percent_interval",
    "quantity",
    "quantity_with_interval",
    "saved_interval",
    "saved_percent",
    "saving_phrase",
    "signed_percent",
    "signed_percent_interval",
    "signed_quantity",
]

MISSING = "n/a"


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def number(value: float | None, missing: str = MISSING) -> str:
    """Three significant digits or more, thousands separators for counters: 2.60, 0.931, 85,092."""
    if value is None or not math.isfinite(value):
        return missing
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 0.1 or magnitude == 0:
        return f"{value:.2f}"
    return f"{value:.3g}"


def percent(value: float | None, missing: str = MISSING) -> str:
    """A share saved or changed: ``64.3%``."""
    return f"{value:.1f}%" if _finite(value) else missing


def percent_interval(low: float | None, high: float | None, missing: str = MISSING) -> str:
    """A confidence interval of a percentage: ``63.8 … 64.7%``."""
    return f"{low:.1f} … {high:.1f}%" if _finite(low) and _finite(high) else missing


def signed_percent(value: float | None, digits: int = 1, missing: str = MISSING) -> str:
    """A change with its direction: ``+3.2%``, ``-0.4%``."""
    return f"{value:+.{digits}f}%" if _finite(value) else missing


def signed_percent_interval(low: float | None, high: float | None, missing: str = MISSING) -> str:
    """A confidence interval of a change: ``+1.0 … +5.2%``."""
    return f"{low:+.1f} … {high:+.1f}%" if _finite(low) and _finite(high) else missing


def saved_percent(value: float | None, digits: int = 1, missing: str = MISSING) -> str:
    """A saving as a reader says it: ``+64.3%`` saved, ``20.0% slower`` for a loss, ``0.0%`` when it
    rounds to nothing (never ``-0.0%``, never a negative saving a reader must turn round)."""
    if not _finite(value):
        return missing
    assert value is not None
    shown = round(value, digits)
    if shown == 0:
        return f"{0:.{digits}f}%"
    return f"+{shown:.{digits}f}%" if shown > 0 else f"{-shown:.{digits}f}% slower"


def saving_phrase(value: float | None, digits: int = 1, missing: str = MISSING) -> str:
    """A saving in a sentence or a chart label: ``saved 64.3%``, ``20.0% slower``, ``no change``
    (rounds to 0)."""
    if not _finite(value):
        return missing
    assert value is not None
    shown = round(value, digits)
    if shown == 0:
        return "no change"
    return f"saved {shown:.{digits}f}%" if shown > 0 else f"{-shown:.{digits}f}% slower"


def saved_interval(low: float | None, high: float | None, digits: int = 1,
                   missing: str = MISSING) -> str:
    """A CI of a saving in the words of ``saved_percent``: ``62.9 … 65.9%`` (all saved), ``18.0 …
    22.0% slower`` (all a loss), ``3.0% slower … 5.2%`` (it reaches both sides)."""
    if not (_finite(low) and _finite(high)):
        return missing
    assert low is not None and high is not None
    lo, hi = round(low, digits), round(high, digits)
    if lo >= 0:
        return f"{lo:.{digits}f} … {hi:.{digits}f}%"
    if hi <= 0:
        return f"{-hi:.{digits}f} … {-lo:.{digits}f}% slower"
    return f"{-lo:.{digits}f}% slower … {hi:.{digits}f}%"


def p_value(value: float | None) -> str:
    """A p-value for a table cell: three decimals, ``<0.001`` below that, ``n/a`` for None."""
    if value is None or not math.isfinite(value):
        return MISSING
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def duration_ns(ns: float | None) -> str:
    """Nanoseconds the way people read them: 270 ns, 3.59 µs, 243 µs, 1.25 ms."""
    if not _finite(ns):
        return MISSING
    assert ns is not None
    magnitude = abs(ns)
    for scale, unit in ((1e6, "ms"), (1e3, "µs")):
        if magnitude >= scale:
            value = ns / scale
            return f"{value:.3g} {unit}" if abs(value) < 100 else f"{value:.0f} {unit}"
    return f"{ns:.0f} ns"


def byte_count(value: float | None) -> str:
    """Bytes with thousands separators: ``1,204,224 B``."""
    return f"{value:,.0f} B" if _finite(value) else MISSING


def count(value: float | None) -> str:
    """A count (whole, or a median of counts): ``12``, ``2.50``."""
    if value is None or not math.isfinite(value):
        return MISSING
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def quantity(unit: str, value: float | None) -> str:
    """A value in its unit: nanoseconds as a duration, ``B`` as bytes, anything else as a count."""
    return (duration_ns(value) if unit == "ns" else byte_count(value) if unit == "B"
            else count(value))


def signed_quantity(unit: str, value: float | None) -> str:
    """A change in its unit, with its direction (``+``, ``−``, or ``0``)."""
    if value is None or not math.isfinite(value):
        return MISSING
    text = quantity(unit, abs(value))
    return "0" if value == 0 else ("+" if value > 0 else "−") + text


def quantity_with_interval(unit: str, median: float | None,
                           ci: tuple[float | None, float | None]) -> str:
    """A median with its interval, ``243 µs [240 µs … 247 µs]`` (the interval only when it has
    width)."""
    text = quantity(unit, median)
    if ci[0] is None or ci[1] is None or ci[0] == ci[1]:
        return text
    return f"{text} [{quantity(unit, ci[0])} … {quantity(unit, ci[1])}]"


def markdown_cell(text: object) -> str:
    """Escape what breaks a GitHub pipe table: ``|`` and line breaks."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def markdown_table(rows: Sequence[Sequence[object]], headers: Sequence[str],
                   align: Sequence[str]) -> str:
    """A GitHub pipe table; every cell escaped (``|``, line breaks), numbers kept as the caller
    formatted them. ``align`` holds one of ``left``/``right``/``center`` per column."""
    return tabulate(
        [[markdown_cell(c) for c in row] for row in rows],
        headers=[markdown_cell(h) for h in headers],
        tablefmt="pipe",
        colalign=list(align),
        disable_numparse=True,
    )
