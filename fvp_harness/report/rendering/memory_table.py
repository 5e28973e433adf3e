"""The report's "Memory" table: each memory metric (``scenario.metrics.MEMORY_METRICS``) of each
model, baseline -> candidate in bytes and the change, under the pair's time table."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from fvp_harness.report.format import markdown_table
from fvp_harness.report.stats.findings import Comparison
from fvp_harness.scenario.metrics import MEMORY_METRICS

__all__ = ["memory_rows", "memory_section"]


def _bytes(value: float) -> str:
    return f"{value:,.0f}"


def _change(base: float, cand: float) -> str:
    if base == cand:
        return "no change"
    text = f"{cand - base:+,.0f} B"
    return text + (f" ({100.0 * (cand / base - 1.0):+.1f}%)" if base else "")


def memory_rows(frame: pd.DataFrame, comparison: Comparison) -> list[list[str]]:
    """[model, metric, "baseline -> candidate B", change] for every memory metric both builds
    measured, models in the comparison's order, metrics in the scenario's."""
    if frame.empty:
        return []
    b, c = comparison.baseline, comparison.candidate
    ok = frame[
        (frame["status"] == "ok")
        & frame["metric"].isin(MEMORY_METRICS)
        & frame["build"].isin([b, c])
    ]
    if ok.empty:
        return []
    metrics = list(dict.fromkeys(ok["metric"]))
    stats = ok.groupby(["model", "metric", "build"])["value"].agg(["median", "min", "max"])
    rows: list[list[str]] = []
    for model in (m.model for m in comparison.models):
        for metric in metrics:
            if (model, metric, b) not in stats.index or (model, metric, c) not in stats.index:
                continue
            base, cand = stats.loc[(model, metric, b)], stats.loc[(model, metric, c)]
            shown = f"{_bytes(base['median'])} -> {_bytes(cand['median'])} B"
            spread = [
                f"{build} {_bytes(s['min'])} … {_bytes(s['max'])}"
                for build, s in ((b, base), (c, cand))
                if s["min"] != s["max"]
            ]
            change = _change(float(base["median"]), float(cand["median"]))
            rows.append(
                [
                    model,
                    f"`{metric}`",
                    shown,
                    change + (f" (runs: {'; '.join(spread)})" if spread else ""),
                ]
            )
    return rows


def memory_section(frame: pd.DataFrame, comparison: Comparison, heading: str) -> list[str]:
    """The section's markdown lines (none when nothing was measured in bytes)."""
    rows = memory_rows(frame, comparison)
    if not rows:
        return []
    headers: Sequence[str] = [
        "Model",
        "Memory",
        f"{comparison.baseline} -> {comparison.candidate}",
        "Change",
    ]
    return [heading, "", markdown_table(rows, headers, ["left", "left", "right", "right"]), ""]
