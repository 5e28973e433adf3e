"""The geometric mean of the per-model ratios of one comparison, with its bootstrap CI (the per-model ratio draws
combined draw by draw) and a verdict by the same rule as a model's."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fvp_harness.report.stats.bootstrap import percentile_interval
from fvp_harness.report.stats.findings import GeoMean, ModelComparison
from fvp_harness.report.stats.spec import Settings
from fvp_harness.report.stats.verdicts import decide_verdict

__all__ = ["geomean"]


def geomean(
    results: Sequence[ModelComparison], draws: Sequence[np.ndarray], min_effect: float, settings: Settings
) -> GeoMean | None:
    ratios = [r.ratio for r in results if r.ratio is not None and r.ratio > 0]
    if len(ratios) < 2 or len(draws) != len(ratios):
        return None
    ratio = float(math.exp(sum(math.log(r) for r in ratios) / len(ratios)))
    with np.errstate(invalid="ignore"):
        stacked = np.exp(np.mean(np.log(np.vstack(draws)), axis=0))
    low, high = percentile_interval(100.0 * (1.0 - stacked), settings.confidence)
    verdict, reason = decide_verdict(low, high, None, min_effect, settings.alpha)
    return GeoMean(len(ratios), ratio, 100.0 * (1.0 - ratio), low, high, verdict, reason)
