"""The order every output lists builds in (``build_order``), and the per-build summary in that
order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fvp_harness.report.stats.result import AnalysisResult

if TYPE_CHECKING:
    import pandas as pd

    from fvp_harness.report.rendering.context import ReportContext

__all__ = ["build_order", "ordered_summary", "rank"]


def build_order(result: AnalysisResult, context: ReportContext | None = None) -> list[str]:
    """The order every output lists builds in: each comparison's baseline, then its candidate (pair
    after pair, each build once), then the other builds in the order they first ran (the scenario's
    order for the built-in run orders), then builds only the manifest names. Without a comparison:
    the order they first ran.

    Why not the manifest's order: ``manifest.json`` is written with sorted keys, which would put
    ``after`` before ``before``; and per model the run order alternates (ABBA), which would mix the
    per-build table.
    """
    names: list[str] = []
    for comparison in result.comparisons:
        names += [comparison.baseline, comparison.candidate]
    if len(result.summary):
        names += [str(b) for b in result.summary["build"]]
    if context is not None:
        names += list(context.builds)
    return list(dict.fromkeys(names))


def rank(builds: Sequence[str]) -> Any:
    """A sort key putting build names in ``builds`` order (unknown ones last, by name)."""
    index = {name: i for i, name in enumerate(builds)}
    return lambda name: (index.get(name, len(index)), name)


def ordered_summary(summary: pd.DataFrame, builds: Sequence[str]) -> pd.DataFrame:
    """The summary with each model's rows in ``builds`` order; models and metrics keep their run
    order."""
    if not len(summary):
        return summary
    models = list(dict.fromkeys(summary["model"]))
    rank = {name: i for i, name in enumerate(builds)}
    keys = [
        (models.index(model), rank.get(str(build), len(rank)), position)
        for position, (model,
                       build) in enumerate(zip(summary["model"], summary["build"], strict=True))
    ]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return summary.iloc[order].reset_index(drop=True)
