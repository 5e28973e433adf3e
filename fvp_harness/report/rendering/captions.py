"""The words around the tables: a report's default title, the context line under it, the caption
line above a comparison table (what measured it, which any paste of the table keeps), the notes
under it, and a chart's title.
"""

from __future__ import annotations

from collections.abc import Sequence

from fvp_harness.report.rendering import machine as machine_record
from fvp_harness.report.rendering.cells import metric_label
from fvp_harness.report.rendering.context import ReportContext
from fvp_harness.report.stats.findings import Comparison
from fvp_harness.report.stats.result import AnalysisResult

__all__ = ["caption_line", "chart_title", "context_line", "default_title", "method_note",
           "numbers_note"]


def default_title(result: AnalysisResult, context: ReportContext) -> str:
    """``<scenario>: after vs before``; several candidates of one baseline: ``<scenario>: u85-256,
    u85-512 vs u85-128``; pairs with different baselines: ``<scenario>: b vs a; d vs c``."""
    name = context.scenario or "benchmark"
    comparisons = result.comparisons
    if not comparisons:
        return name
    baselines = list(dict.fromkeys(c.baseline for c in comparisons))
    if len(baselines) == 1:
        return f"{name}: {', '.join(c.candidate for c in comparisons)} vs {baselines[0]}"
    return f"{name}: {'; '.join(c.label for c in comparisons)}"


def context_line(
    context: ReportContext, comparisons: Sequence[Comparison], builds_in_order: Sequence[str]
) -> str:
    """Platform and FVP (or the host, for ``target: host``), the builds the manifest names (and the
    compared ones), date."""
    named = set(context.builds)
    for comparison in comparisons:
        named |= {comparison.baseline, comparison.candidate}
    builds_in_order = [name for name in builds_in_order if name in named]
    parts = []
    if context.platform:
        parts.append(f"Platform: **{context.platform}**")
    if context.fvp:
        parts.append(f"{context.model_label}: **{context.fvp}**")
    if context.host:
        parts.append(f"Host: **{context.host}**")
    if builds_in_order:
        shown = [f"**{name}**" + (f" ({context.builds[name]})" if context.builds.get(name) else "")
                 for name in builds_in_order]  # fmt: skip
        parts.append("builds: " + ", ".join(shown))
    if context.date:
        parts.append(f"date: {context.date}")
    if context.deploy:
        parts.append(f"deploy: {context.deploy}")
    return " · ".join(parts)


def method_note(result: AnalysisResult, comparison: Comparison) -> str:
    s = result.settings
    b, c, m = comparison.baseline, comparison.candidate, comparison.min_effect
    geometric = exact = ""
    if comparison.geomean is not None:
        geometric = (" Geometric mean: the CI's ratio bounds are the geometric means of the "
                     "models' bounds, so it is never narrower than its parts allow.")
    if any(row.exact for row in comparison.models):
        exact = (f" *exact*: every sample of each build was one number (a counter, not a noisy "
                 f"time), so the change is exact: no interval and no p; it is weighed against "
                 f"±{m:g}% alone.")
    return (
        "Medians over all measured iterations of every unit (one unit is one runner process); "
        f"Saved = 100 × (1 − {c} / {b}): +64% means {c} takes 64% less, \"20% slower\" that it "
        f"takes 20% more. {s.confidence * 100:g}% CI of saved: two-level bootstrap ({s.resamples} "
        f"resamples, seed {s.seed}) over units then iterations, widened to the Welch t-interval "
        "over unit medians when that is wider. p: two-sided, for \"no change\", at the same level "
        "as the CI: the larger of the bootstrap's (the share of resamples on the far side of no "
        "change) and the Welch t-test's over unit medians (each process counted once). Processes: "
        f"runner processes (units) {b}/{c}, what the CI and p count (each one's iterations are "
        f"resampled inside it; their number is `n` under Per build).{geometric} Verdict: *no "
        f"change* when the CI lies within ±{m:g}%, *faster*/*slower* when it lies entirely beyond "
        f"that (and p < {s.alpha:g}), otherwise *inconclusive*.{exact}"
    )


def caption_line(comparison: Comparison, context: ReportContext) -> str:
    """The line directly above a comparison table, which any paste of the table keeps: what measured
    it. A simulated run says so in its first word."""
    label, per = metric_label(comparison.primary)
    what = f"{label} {per}, {comparison.baseline} -> {comparison.candidate}"
    if context.simulated:
        shown = (context.measured_on if context.measured_on and
                 "simulator" in context.measured_on else None)
        return f"**Simulated, not measured on an FVP** ({shown or 'fvp-harness sim'}): {what}."
    if context.measured_on:
        return f"Measured on {context.measured_on}: {what}."
    return ""  # nothing known of the source: no caption that would only repeat the header


def numbers_note(comparison: Comparison, context: ReportContext) -> str:
    """What these numbers are, under the table: what a CPU time or an NPU cycle count from this
    source means."""
    host, qemu = context.host is not None, context.model_label == "QEMU"
    return machine_record.numbers_note(comparison.primary, context.simulated, host, qemu=qemu)


def chart_title(title: str, context: ReportContext) -> str:
    """A chart's title with what measured it on a second line, so a chart shown alone keeps the
    label."""
    if context.simulated:
        return (f"{title}\nSIMULATED ({context.measured_on or 'fvp-harness sim'}), not measured on "
                "an FVP")
    return f"{title}\nmeasured on {context.measured_on}" if context.measured_on else title
