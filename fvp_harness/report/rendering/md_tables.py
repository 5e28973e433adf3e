"""The markdown tables of a report: a pair's comparison table, its gates and expectations, the
overview of several pairs and the per-build summary. The VGF report shares ``expectations_markdown``
so the two read alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from fvp_harness.report import format as fmt
from fvp_harness.report.format import markdown_table
from fvp_harness.report.rendering.cells import (
    expectation_label,
    gate_allowed,
    gate_change,
    gate_interval,
    metric_label,
    npu_cell,
    outputs_cell,
)
from fvp_harness.report.stats.findings import Comparison, ModelComparison
from fvp_harness.scenario.metrics import MEMORY_METRICS

__all__ = ["comparison_table", "expectations_markdown", "expectations_section", "gates_section",
           "overview_section", "summary_table"]


EXACT = "exact"
"""The CI cell of a saving that has none: every sample of each build was one number
(``ModelComparison.exact``)."""


def _verdict_word(verdict: str, metric: str) -> str:
    """A verdict or saving as the table says it: a size (``MEMORY_METRICS``) is smaller or larger,
    not faster or slower."""
    if metric in MEMORY_METRICS:
        return verdict.replace("faster", "smaller").replace("slower", "larger")
    return verdict


def comparison_table(comparison: Comparison, sources: Mapping[str, str] | None = None) -> str:
    label, per = metric_label(comparison.primary)
    sources = sources or {}
    b, c = comparison.baseline, comparison.candidate
    b_shown = f"{b} ({sources[b]})" if sources.get(b) else b
    c_shown = f"{c} ({sources[c]})" if sources.get(c) else c
    headers = [
        "Model",
        f"{label} {per}, {b_shown} -> {c_shown}",
        "Saved",
        "95% CI of saved",
        "p",
        "Processes",
        "NPU cycles",
        "Outputs identical",
        "Verdict",
    ]
    unit = f" {comparison.unit}" if comparison.unit else ""
    rows: list[list[object]] = []
    for m in comparison.models:
        values = f"{fmt.number(m.baseline_median)} -> {fmt.number(m.candidate_median)}{unit}"
        rows.append(
            [
                m.model,
                values,
                _verdict_word(fmt.saved_percent(m.saved_pct), comparison.primary),
                EXACT if m.exact else fmt.saved_interval(m.ci_low, m.ci_high),
                "" if m.exact else fmt.p_value(m.p_value),
                f"{m.units_baseline}/{m.units_candidate}",  # what the CI counts: runner processes
                npu_cell(m),
                outputs_cell(m),
                _verdict_word(m.verdict, comparison.primary),
            ]
        )
    gm = comparison.geomean
    if gm is not None:
        rows.append(
            [
                f"**Geometric mean** ({gm.models} models)",
                f"ratio {gm.ratio:.3f}",
                fmt.saved_percent(gm.saved_pct),
                EXACT if gm.exact else fmt.saved_interval(gm.ci_low, gm.ci_high),
                "",
                "",
                "",
                "",
                gm.verdict,
            ]
        )
    return markdown_table(rows, headers,
                          ["left", "right", "right", "right", "right", "right", "right", "left",
                           "left"])


def gates_section(comparison: Comparison, heading: str = "## Gates") -> list[str]:
    """``## Gates``: one verdict row per gated metric and model."""
    if not comparison.gates:
        return []
    b, c = comparison.baseline, comparison.candidate
    rows = [
        [g.model, g.metric,
         f"{fmt.number(g.baseline_median)} -> {fmt.number(g.candidate_median)}"
         + (f" {g.unit}" if g.unit else ""),
         gate_change(g), gate_interval(g), gate_allowed(g), f"{g.n_baseline}/{g.n_candidate}",
         g.verdict]
        for g in comparison.gates
    ]  # fmt: skip
    headers = ["Model", "Metric", f"{b} -> {c}", "Change", "95% CI of change", "Allowed", "n",
               "Verdict"]
    table = markdown_table(rows, headers,
                           ["left", "left", "right", "right", "right", "right", "right", "left"])
    note = (
        f"Change = {c} − {b} (in % of the {b} median, or in the metric's unit); positive is worse. "
        "A gate is *violated* when the whole CI lies above the allowed regression, *within* when "
        "it lies at or below it, *inconclusive* when it straddles it (unverified: it does not fail "
        "the run, but the run is NOT VERIFIED)."
    )
    return [heading, "", table, "", note, ""]


def expectations_markdown(
    rows: Sequence[tuple[str, str, str, str]], heading: str = "## Expectations"
) -> list[str]:
    """The ``## Expectations`` section as lines: a **PASS**/**FAIL** line, then one table row per
    expectation.

    ``rows`` are ``(model, expectation, status, detail)`` with status ``pass``, ``fail`` or
    ``unverified``; the A/B report and the VGF report both use it so the two read alike. ``heading``
    is the section's heading line (one level deeper inside a pair's section).
    """
    failed = [r for r in rows if r[2] == "fail"]
    unverified = [r for r in rows if r[2] == "unverified"]
    if failed:
        head = f"**FAIL**: {len(failed)} of {len(rows)} expectations violated"
    elif len(unverified) == len(rows):
        # nothing measured (or nothing declared) is not a pass: say so instead of a green word over
        # no evidence
        head = f"**NOT VERIFIED**: none of {len(rows)} expectations could be checked"
        unverified = []
    else:
        head = (f"**PASS**: no expectation violated ({len(rows) - len(unverified)} of {len(rows)} "
                "verified)")
    if unverified:
        head += f"; {len(unverified)} could not be verified"
    lines = [heading, "", head + ".", ""]
    if rows:
        table = [[model, check, status.upper(), detail] for model, check, status, detail in rows]
        lines += [markdown_table(table, ["Model", "Expectation", "Result", "Detail"], ["left"] * 4),
                  ""]
    return lines


def expectations_section(comparison: Comparison, heading: str = "## Expectations") -> list[str]:
    rows = [(e.model, expectation_label(e), e.status, e.detail) for e in comparison.expectations]
    return expectations_markdown(rows, heading)


def summary_table(summary: pd.DataFrame) -> str:
    headers = [
        "Model",
        "Build",
        "Metric",
        "n",
        "Units",
        "Median",
        "95% CI of median",
        "Mean",
        "Std",
        "p5",
        "p95",
    ]
    rows = []
    for row in summary.to_dict("records"):
        ci = (
            "n/a"
            if pd.isna(row["ci_low"])
            else (f"{fmt.number(row['ci_low'])} … {fmt.number(row['ci_high'])}")
        )
        one_number = row["std"] <= 1e-12 * abs(row["median"])  # std 0 but for rounding
        if row["n"] >= 2 and row["ci_low"] == row["ci_high"] and one_number:
            ci = EXACT  # one number in every sample: no interval of zero width
        uom = f" {row['unit_of_measure']}" if row["unit_of_measure"] else ""
        rows.append(
            [
                row["model"],
                row["build"],
                row["metric"],
                row["n"],
                row["units"],
                fmt.number(row["median"]) + uom,
                ci,
                fmt.number(row["mean"]),
                fmt.number(row["std"]),
                fmt.number(row["p5"]),
                fmt.number(row["p95"]),
            ]
        )
    return markdown_table(rows, headers, ["left", "left", "left"] + ["right"] * 8)


def _overview_cell(m: ModelComparison | None, comparison: Comparison, shared: bool) -> str:
    """One pair's result for one model: ``600 (saved 40.0%, faster)``; with its own baseline and
    unit when the pairs do not share them (``1,000 -> 600 cycles (saved 40.0%, faster)``)."""
    if m is None:
        return fmt.MISSING
    unit = f" {comparison.unit}" if comparison.unit else ""
    if shared:
        medians = fmt.number(m.candidate_median)
    else:
        medians = f"{fmt.number(m.baseline_median)} -> {fmt.number(m.candidate_median)}{unit}"
    saving = f"{fmt.saving_phrase(m.saved_pct)}, " if m.saved_pct is not None else ""
    return f"{medians} ({saving}{m.verdict})"


def overview_section(comparisons: Sequence[Comparison]) -> list[str]:
    """``## Overview`` of several pairs: a row per model, a column per pair. When every pair has one
    baseline and one primary metric (a sweep: u85-128 against u85-256 and u85-512) the baseline gets
    a column of its own and each candidate column holds the candidate's median, its saving and
    verdict."""
    first = comparisons[0]
    shared = (len({c.baseline for c in comparisons}) == 1 and
              len({(c.primary, c.unit) for c in comparisons}) == 1)
    models = list(dict.fromkeys(m.model for c in comparisons for m in c.models))
    if shared:
        label, per = metric_label(first.primary)
        unit = f" ({first.unit})" if first.unit else ""
        intro = (f"{label} {per}{unit}: median of **{first.baseline}** and of each candidate, with "
                 f"the candidate's saving against {first.baseline} and its verdict. Each pair's "
                 "section below has the details.")
        headers = ["Model", f"{first.baseline} (baseline)", *(c.candidate for c in comparisons)]
    else:
        intro = ("Each pair on its primary metric: medians baseline -> candidate, the saving and "
                 "the verdict. Each pair's section below has the details.")
        headers = ["Model", *(c.label for c in comparisons)]
    rows: list[list[object]] = []
    for model in models:
        found = [next((m for m in c.models if m.model == model), None) for c in comparisons]
        row: list[object] = [model]
        if shared:
            row.append(fmt.number(next((m.baseline_median for m in found if m is not None), None)))
        row += [_overview_cell(m, c, shared) for m, c in zip(found, comparisons, strict=True)]
        rows.append(row)
    if any(c.geomean is not None for c in comparisons):
        row = [f"**Geometric mean** ({len(models)} models)", *([""] if shared else [])]
        for c in comparisons:
            gm = c.geomean
            row.append(fmt.MISSING if gm is None else
                       f"ratio {gm.ratio:.3f} ({fmt.saving_phrase(gm.saved_pct)}, {gm.verdict})")
        rows.append(row)
    table = markdown_table(rows, headers, ["left"] + ["right"] * (len(headers) - 1))
    return ["## Overview", "", intro, "", table, ""]
