"""The per-build summary: per (model, build, metric) of ok units n, units, median, mean, std, p5,
p95 and the bootstrap CI of the median (the report's ``## Per build`` table, ``report.csv`` without
a comparison, history's points)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fvp_harness.report.stats.bootstrap import bootstrap_draws, percentile_interval
from fvp_harness.report.stats.frames import typed
from fvp_harness.report.stats.samples import Samples
from fvp_harness.report.stats.spec import Settings

__all__ = ["SUMMARY_COLUMNS", "summarise", "summarise_samples"]


SUMMARY_COLUMNS = [
    "model",
    "build",
    "metric",
    "unit_of_measure",
    "n",
    "units",
    "median",
    "mean",
    "std",
    "p5",
    "p95",
    "ci_low",
    "ci_high",
]


def summarise(frame: pd.DataFrame, settings: Settings | None = None) -> pd.DataFrame:
    """Per (model, build, metric) of ok units: n, units, median, mean, std, p5, p95, bootstrap CI of
    the median.

    Rows follow the order models, builds and metrics first appear in the frame (the run order), so
    the table is stable for the same records.
    """
    return summarise_samples(Samples.of_frames(frame), settings or Settings())


def summarise_samples(samples: Samples, settings: Settings) -> pd.DataFrame:
    rows: list[dict[str, object]] = []
    for (model, build, metric), group in samples.groups.items():
        values = group.values
        p5, p95 = np.percentile(values, [5, 95])  # one call, the same two numbers as two
        draws = bootstrap_draws(group.units, settings, str(model), str(build), str(metric))
        low, high = percentile_interval(draws, settings.confidence)
        rows.append(
            {
                "model": model,
                "build": build,
                "metric": metric,
                "unit_of_measure": group.uom,
                "n": len(values),
                "units": len(group.units),
                "median": float(np.median(values)),
                "mean": float(np.mean(values)),
                "std": float(np.std(values, ddof=1)) if len(values) > 1 else 0.0,
                "p5": float(p5),
                "p95": float(p95),
                "ci_low": low,
                "ci_high": high,
            }
        )
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    return typed(summary,
                 {"n": "int64", "units": "int64", "ci_low": "float64", "ci_high": "float64"})
