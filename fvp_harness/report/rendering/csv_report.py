"""``report.csv``: one row per model on the primary metric, the geometric mean and the gates, pair
after pair (or the per-build summary without a comparison), every row labelled with what measured
it."""

from __future__ import annotations

import io

import pandas as pd

from fvp_harness.report.rendering.cells import npu_values, outputs_status
from fvp_harness.report.rendering.context import ReportContext
from fvp_harness.report.rendering.order import build_order, ordered_summary
from fvp_harness.report.stats.findings import Comparison
from fvp_harness.report.stats.result import AnalysisResult

__all__ = ["CSV_COLUMNS", "PAIR_COLUMN", "render_csv"]


CSV_COLUMNS = [
    "model", "metric", "unit", "baseline", "candidate", "baseline_median", "candidate_median",
    "ratio",
    "saved_pct", "ci_low", "ci_high", "p_value", "p_units", "n_baseline", "n_candidate",
    "units_baseline",
    "units_candidate", "npu_baseline", "npu_candidate", "npu_identical", "outputs_identical",
    "verdict", "row", "change", "change_ci_low", "change_ci_high", "change_unit", "max_regression",
    "p_pooled_iterations_mann_whitney", "simulated", "measured_on",
]  # fmt: skip
"""``row``: ``primary`` (a model on the primary metric), ``geomean`` or ``gate`` (a gated metric of
a model: its ``change`` candidate − baseline with CI, in ``change_unit`` (``%`` of the baseline
median, or the metric's unit), the allowed ``max_regression`` in the same unit, and the gate's
verdict). ``p_value`` is the process-level p the markdown shows, ``p_units`` the Welch t-test's over
unit medians, ``p_pooled_iterations_mann_whitney`` the Mann-Whitney U over pooled iterations (which
treats iterations of one process as independent: here only, labelled so); ``simulated`` and
``measured_on`` say on every row what measured it. With several pairs a last column ``pair``
(``u85-256 vs u85-128``) names each row's pair; a two-build report keeps the columns it always had
(``baseline`` and ``candidate`` name the pair in both)."""

PAIR_COLUMN = "pair"


def _comparison_rows(comparison: Comparison) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for m in comparison.models:
        npu_b, npu_c, npu_same = npu_values(m)
        rows.append(
            {
                "model": m.model,
                "metric": m.metric,
                "unit": m.unit,
                "baseline": comparison.baseline,
                "candidate": comparison.candidate,
                "baseline_median": m.baseline_median,
                "candidate_median": m.candidate_median,
                "ratio": m.ratio,
                "saved_pct": m.saved_pct,
                "ci_low": m.ci_low,
                "ci_high": m.ci_high,
                "p_value": m.p_value,
                "p_units": m.p_units,
                "p_pooled_iterations_mann_whitney": m.p_pooled,
                "n_baseline": m.n_baseline,
                "n_candidate": m.n_candidate,
                "units_baseline": m.units_baseline,
                "units_candidate": m.units_candidate,
                "npu_baseline": npu_b,
                "npu_candidate": npu_c,
                "npu_identical": "" if npu_same is None else str(npu_same).lower(),
                "outputs_identical": outputs_status(m),
                "verdict": m.verdict,
                "row": "primary",
            }
        )
    gm = comparison.geomean
    if gm is not None:
        rows.append(
            {
                "model": "geometric mean",
                "metric": comparison.primary,
                "unit": "",
                "baseline": comparison.baseline,
                "candidate": comparison.candidate,
                "ratio": gm.ratio,
                "saved_pct": gm.saved_pct,
                "ci_low": gm.ci_low,
                "ci_high": gm.ci_high,
                "verdict": gm.verdict,
                "row": "geomean",
            }
        )
    for g in comparison.gates:
        ratio = (
            g.candidate_median / g.baseline_median
            if g.baseline_median and g.candidate_median is not None
            else None
        )
        rows.append(
            {
                "model": g.model,
                "metric": g.metric,
                "unit": g.unit,
                "baseline": comparison.baseline,
                "candidate": comparison.candidate,
                "baseline_median": g.baseline_median,
                "candidate_median": g.candidate_median,
                "ratio": ratio,
                "saved_pct": None if ratio is None else 100.0 * (1.0 - ratio),
                "n_baseline": g.n_baseline,
                "n_candidate": g.n_candidate,
                "verdict": g.verdict,
                "row": "gate",
                "change": g.change,
                "change_ci_low": g.ci_low,
                "change_ci_high": g.ci_high,
                "change_unit": "%" if g.relative else g.unit,
                "max_regression": g.allowed,
            }
        )
    return rows


def render_csv(result: AnalysisResult, context: ReportContext | None = None) -> str:
    """``report.csv``: one row per model plus the geometric mean and the gates (the comparison; pair
    after pair, with a ``pair`` column, when there are several), or the per-build summary when the
    scenario has no comparison. Every row carries ``simulated`` and ``measured_on`` (the label
    travels with the numbers). Floats with 6 significant digits."""
    context = context or ReportContext()
    comparisons = result.comparisons
    if len(comparisons) == 1:
        frame = pd.DataFrame(_comparison_rows(comparisons[0]), columns=CSV_COLUMNS)
    elif comparisons:
        rows = [{**row, PAIR_COLUMN: c.label} for c in comparisons for row in _comparison_rows(c)]
        frame = pd.DataFrame(rows, columns=[*CSV_COLUMNS, PAIR_COLUMN])
    else:
        frame = ordered_summary(result.summary, build_order(result)).copy()
    frame["simulated"] = "true" if context.simulated else "false"
    frame["measured_on"] = context.measured_on or ""
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False, lineterminator="\n", float_format="%.6g")
    return buffer.getvalue()
