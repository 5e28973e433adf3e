"""Drift: a monotonic trend of a metric over execution order inside one build (Spearman), and its
size.

Interleaving cancels drift between builds, but a drifting platform still deserves a look: the report
warns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fvp_harness.report.stats.findings import DriftFlag
from fvp_harness.report.stats.samples import Samples
from fvp_harness.report.stats.spec import Settings

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["detect_drift", "drift_of_samples"]


def detect_drift(
    frame: pd.DataFrame, metric: str, min_effect: float = 1.0, settings: Settings | None = None
) -> tuple[DriftFlag, ...]:
    """Spearman correlation of ``metric`` with execution order, per (model, build), over ok units.

    Flagged when p < ``drift_alpha`` and the trend's size (median of the last third minus the
    first third, in % of the first third's: how far the series moved from where it started,
    never below -100% for positive values) is at least ``min_effect``: a trend too small to
    matter, or not significant, is not flagged. Needs 8 samples; constant series never drift.
    """
    settings = settings or Settings()
    sel = frame[(frame["metric"] == metric) & (frame["status"] == "ok")] if len(frame) else frame
    if not len(sel):
        return ()
    flags = (_drift_flag(str(model), str(build), metric,
                         group.sort_values("order")["value"].to_numpy(), min_effect, settings)
             for (model, build), group in sel.groupby(["model", "build"], sort=False))  # fmt: skip
    return tuple(flag for flag in flags if flag is not None)


def drift_of_samples(samples: Samples, metric: str, min_effect: float,
                     settings: Settings) -> tuple[DriftFlag, ...]:
    """``detect_drift`` of a frame whose rows are in execution order (``analyse``'s: ``order``
    counts its rows), from the grouped samples."""
    flags = (_drift_flag(str(model), str(build), metric, group.values, min_effect, settings)
             for (model, build, name), group in samples.groups.items()
             if name == metric)  # fmt: skip
    return tuple(flag for flag in flags if flag is not None)


def _drift_flag(model: str, build: str, metric: str, values: np.ndarray, min_effect: float,
                settings: Settings ) -> DriftFlag | None:
    """The trend of one build's ``values`` (in execution order); None when there is none to
    measure."""
    n = len(values)
    if n < 8 or np.ptp(values) == 0:
        return None
    from scipy import stats  # late: as in pvalues, scipy loads when a drift check really runs

    rho, p_value = stats.spearmanr(np.arange(n), values)
    third = max(1, n // 3)
    start = float(np.median(values[:third]))  # the base: where the series started
    change = (float(np.median(values[-third:])) - start) / abs(start) * 100 if start else 0.0
    flagged = bool(p_value < settings.drift_alpha and abs(change) >= min_effect)
    return DriftFlag(model, build, metric, n, float(rho), float(p_value), change, flagged)
