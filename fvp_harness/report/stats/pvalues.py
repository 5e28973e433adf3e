"""Process-level p-values and the unit-level intervals that widen the bootstrap's."""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import ModuleType

import numpy as np

__all__ = ["bootstrap_p", "mann_whitney", "process_level_p", "unit_level_difference",
           "unit_level_interval"]


def _stats() -> ModuleType:
    """``scipy.stats``, loaded at the first p-value: it is the heaviest import of the analysis
    (about a second of a cold start), and importing this module (every process that can analyse: the
    CLI, the pytest plugin, a test run's collection) should not pay for it before a comparison needs
    a Student quantile."""
    from scipy import stats

    return stats


def unit_level_interval(
    base_groups: Sequence[np.ndarray], cand_groups: Sequence[np.ndarray], ratio: float,
    confidence: float
) -> tuple[tuple[float, float], float] | None:
    """Welch t-interval of the saved % from log unit medians, and its p-value.

    Why: a percentile bootstrap over 3 processes has only 10 distinct unit draws and its interval is
    far too narrow when processes differ (the pyperf "identical code is significantly different"
    pain). The t-interval counts each process once and uses Student quantiles, so few processes give
    an honestly wide interval. None when a build has fewer than 2 units or a non-positive median.
    """
    if len(base_groups) < 2 or len(cand_groups) < 2 or ratio <= 0:
        return None
    bmeds = np.array([np.median(g) for g in base_groups])
    cmeds = np.array([np.median(g) for g in cand_groups])
    if (bmeds <= 0).any() or (cmeds <= 0).any():
        return None
    lb, lc = np.log(bmeds), np.log(cmeds)
    vb, vc = lb.var(ddof=1) / len(lb), lc.var(ddof=1) / len(lc)
    se = math.sqrt(vb + vc)
    centre = float(lc.mean() - lb.mean())
    if se == 0:
        saved = 100.0 * (1.0 - math.exp(centre))
        return (saved, saved), (1.0 if centre == 0 else 0.0)
    denominator = vb**2 / (len(lb) - 1) + vc**2 / (len(lc) - 1)
    df = (vb + vc) ** 2 / denominator if denominator > 0 else len(lb) + len(lc) - 2
    quantile = float(_stats().t.ppf(1 - (1 - confidence) / 2, df))
    low = 100.0 * (1.0 - math.exp(centre + quantile * se))
    high = 100.0 * (1.0 - math.exp(centre - quantile * se))
    p_units = float(2 * _stats().t.sf(abs(lc.mean() - lb.mean()) / se, df))
    return (low, high), p_units


def bootstrap_p(ratio_draws: np.ndarray) -> float | None:
    """Two-sided p-value of "no change" from the two-level bootstrap draws of the ratio candidate /
    baseline: twice the smaller share of draws on either side of 1, each counted with the add-one
    rule, so it can never be 0 and its floor is ``2 / (resamples + 1)``. Why this one: it is read
    off the very draws the CI is read from, so a 95% CI that excludes 0% saved and p < 0.05 say the
    same thing. None with fewer than 10 finite draws."""
    finite = ratio_draws[np.isfinite(ratio_draws)]
    if len(finite) < 10:
        return None
    at_or_above = int(np.count_nonzero(finite >= 1.0))
    at_or_below = int(np.count_nonzero(finite <= 1.0))
    return min(1.0, 2.0 * (min(at_or_above, at_or_below) + 1) / (len(finite) + 1))


def process_level_p(boot: float | None, units: float | None) -> float | None:
    """The headline p-value: the larger of the bootstrap's and the Welch t-test's over unit medians
    (when a build has >= 2 units), exactly as the CI is the wider of the two intervals; either alone
    when the other is None."""
    known = [p for p in (boot, units) if p is not None]
    return max(known) if known else None


def mann_whitney(a: np.ndarray, b: np.ndarray) -> float | None:
    if len(a) == 0 or len(b) == 0:
        return None
    if np.ptp(np.concatenate([a, b])) == 0:
        # all values equal: no evidence of a difference (scipy would divide by a zero variance)
        return 1.0
    return float(_stats().mannwhitneyu(a, b, alternative="two-sided").pvalue)


def unit_level_difference(
    base_groups: Sequence[np.ndarray], cand_groups: Sequence[np.ndarray], confidence: float
) -> tuple[float, float] | None:
    """Welch t-interval of candidate - baseline from the unit medians (each process counted once),
    in the metric's unit: the absolute twin of ``unit_level_interval``. None when a build has fewer
    than 2 units."""
    if len(base_groups) < 2 or len(cand_groups) < 2:
        return None
    bmeds = np.array([np.median(g) for g in base_groups])
    cmeds = np.array([np.median(g) for g in cand_groups])
    vb, vc = bmeds.var(ddof=1) / len(bmeds), cmeds.var(ddof=1) / len(cmeds)
    se = math.sqrt(vb + vc)
    centre = float(cmeds.mean() - bmeds.mean())
    if se == 0:
        return centre, centre
    denominator = vb**2 / (len(bmeds) - 1) + vc**2 / (len(cmeds) - 1)
    df = (vb + vc) ** 2 / denominator if denominator > 0 else len(bmeds) + len(cmeds) - 2
    quantile = float(_stats().t.ppf(1 - (1 - confidence) / 2, df))
    return centre - quantile * se, centre + quantile * se
