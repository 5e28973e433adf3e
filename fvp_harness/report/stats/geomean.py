"""The geometric mean of the per-model ratios of one comparison, its CI as saved %, and a verdict by
the same rule as a model's.

Why its CI is built from the models' own intervals: each model's CI is the two-level bootstrap's
widened to the Welch t-interval over unit medians (few runner processes give an honestly wide one).
Pooling the raw bootstrap draws skipped that widening and averaged the models as if their errors
were independent, though one machine measured them all: two inconclusive models made a bold
"faster". The geometric mean of the models' ratio bounds is the interval of the geometric mean when
the models' errors move together, the worst case for a mean, so it never claims more than its parts;
the draw-by-draw bootstrap interval widens it further when that is wider."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fvp_harness.report.stats.bootstrap import percentile_interval
from fvp_harness.report.stats.findings import GeoMean, ModelComparison
from fvp_harness.report.stats.spec import Settings
from fvp_harness.report.stats.verdicts import decide_exact, decide_verdict
from fvp_harness.scenario.metrics import MEMORY_METRICS

__all__ = ["geomean"]


def geomean(
    results: Sequence[ModelComparison],
    draws: Sequence[np.ndarray],
    min_effect: float,
    settings: Settings,
) -> GeoMean | None:
    """None with fewer than 2 models with a ratio. ``draws``: the bootstrap draws of the ratio of
    every model that has them (``primary_comparison``); they widen the interval only when every
    model has them."""
    rows = [r for r in results if r.ratio is not None and r.ratio > 0]
    if len(rows) < 2:
        return None
    ratio = float(math.exp(sum(math.log(r.ratio) for r in rows if r.ratio) / len(rows)))
    saved = 100.0 * (1.0 - ratio)
    if all(r.exact for r in rows):  # every ratio exact: so is their mean, no interval to draw
        verdict, reason = decide_exact(saved, min_effect, size=rows[0].metric in MEMORY_METRICS)
        return GeoMean(len(rows), ratio, saved, None, None, verdict, reason)
    low, high = _combined(rows)
    if low is not None and high is not None and len(draws) == len(rows):
        with np.errstate(invalid="ignore"):
            stacked = np.exp(np.mean(np.log(np.vstack(draws)), axis=0))
        b_low, b_high = percentile_interval(100.0 * (1.0 - stacked), settings.confidence)
        if b_low is not None and b_high is not None:
            low, high = min(low, b_low), max(high, b_high)
    verdict, reason = decide_verdict(low, high, None, min_effect, settings.alpha)
    if low is None:
        reason = ("no confidence interval: a model's ratio has none (fewer than 2 samples in a "
                  "build, or no CI)")
    return GeoMean(len(rows), ratio, saved, low, high, verdict, reason)


def _combined(rows: Sequence[ModelComparison]) -> tuple[float | None, float | None]:
    """The saved-% interval whose ratio bounds are the geometric means of the models' ratio bounds
    (an exact row counts with its ratio at both ends); (None, None) when a model has no interval."""
    lows: list[float] = []
    highs: list[float] = []
    for row in rows:
        if row.exact and row.ratio is not None:
            lows.append(math.log(row.ratio))
            highs.append(math.log(row.ratio))
            continue
        if row.ci_low is None or row.ci_high is None or min(row.n_baseline, row.n_candidate) < 2:
            return None, None
        ratio_low, ratio_high = 1.0 - row.ci_high / 100.0, 1.0 - row.ci_low / 100.0
        if ratio_low <= 0 or not math.isfinite(ratio_high):
            return None, None
        lows.append(math.log(ratio_low))
        highs.append(math.log(ratio_high))
    ratio_low, ratio_high = math.exp(sum(lows) / len(lows)), math.exp(sum(highs) / len(highs))
    return 100.0 * (1.0 - ratio_high), 100.0 * (1.0 - ratio_low)
