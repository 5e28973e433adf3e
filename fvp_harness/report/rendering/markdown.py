"""``report.md``: the whole markdown report of an analysis, section by section."""

from __future__ import annotations

from collections.abc import Sequence

from fvp_harness.report import format as fmt
from fvp_harness.report.format import markdown_table
from fvp_harness.report.rendering import machine as machine_record
from fvp_harness.report.rendering.captions import (
    caption_line,
    context_line,
    default_title,
    method_note,
    numbers_note,
)
from fvp_harness.report.rendering.context import ReportContext
from fvp_harness.report.rendering.etdump_tables import events_markdown
from fvp_harness.report.rendering.md_tables import (
    comparison_table,
    expectations_section,
    gates_section,
    overview_section,
    summary_table,
)
from fvp_harness.report.rendering.memory_table import memory_section
from fvp_harness.report.rendering.order import build_order, ordered_summary, rank
from fvp_harness.report.rendering.vela_estimates import vela_section
from fvp_harness.report.stats.etdump_events import EventReport
from fvp_harness.report.stats.findings import Comparison
from fvp_harness.report.stats.result import AnalysisResult, run_verdict
from fvp_harness.scenario.metrics import MEMORY_METRICS

__all__ = ["render_markdown", "verdict_lines"]


def verdict_lines(result: AnalysisResult) -> list[str]:
    """The run's verdict as report lines: ``**Verdict: FAIL**`` and one bullet per reason."""
    verdict = run_verdict(result)
    head = f"**Verdict: {verdict.status}**"
    if verdict.status == "PASS":
        expectations = result.expectations
        checked = sum(1 for e in expectations if e.status != "unverified")
        if not result.comparisons:
            head += ": no comparison to check; no unit failed"
        else:
            head += f": no expectation violated ({checked} of {len(expectations)} verified)"
        if result.planned is not None:
            head += f"; all {result.planned} planned units ran"
        if verdict.reasons:
            head += "; could not be verified:"
    lines = [head + ("" if head.endswith(":") or verdict.reasons else "."), ""]
    if verdict.reasons:
        lines += [*(f"- {fmt.markdown_cell(reason)}" for reason in verdict.reasons), ""]
    return lines


_STOP_TEXT = {"ci_width": "CI narrow enough", "verdict settled": "verdict settled",
              "max_repetitions": "max_repetitions reached"}


def _sampling_section(result: AnalysisResult) -> list[str]:
    """``run.until``: how many repetitions each model needed and why it stopped (nothing without
    ``until``)."""
    if not result.sampling:
        return []
    rows = [[n.model, n.repetitions,
             _STOP_TEXT.get(n.reason, n.reason) if n.reason else "not stopped (run cut short)",
             n.detail or "-"] for n in result.sampling]
    table = markdown_table(rows, ["Model", "Repetitions", "Stopped because", "Detail"],
                           ["left", "right", "left", "left"])
    return ["## Repetitions needed (run.until)", "",
            "Rounds of one unit per build ran until each model's primary comparison was precise "
            "enough or decided; units its rule skipped are not counted as not run.", "", table, ""]


def _failures_section(result: AnalysisResult) -> list[str]:
    lines = ["## Failures", ""]
    if not result.failed_units and not result.not_run:
        if result.planned is not None:
            return [*lines, f"None: all {result.planned} planned units ran.", ""]
        return [*lines, "None: no recorded unit failed.", ""]
    counts = []
    if result.failed_units:
        counts.append(f"{len(result.failed_units)} unit(s) failed (latest attempt)")
    if result.not_run:
        counts.append(f"{len(result.not_run)} of {result.planned} planned unit(s) did not run")
    rows = [
        [f.unit_id, f.build, f.model, f.attempt, f.failure_class, f.failure or "(no message)",
         f.log or "n/a"]
        for f in result.failed_units
    ]
    for u in result.not_run:
        why = "no record of this unit with its planned content key"
        if u.other_keys:
            why += f" ({u.other_keys} stored record(s) of other settings left out)"
        rows.append([u.unit_id, u.build or "?", u.model or "?", "-", "not run", why, "n/a"])
    headers = ["Unit", "Build", "Model", "Attempt", "Class", "Failure", "Log"]
    table = markdown_table(rows, headers, ["left"] * 3 + ["right"] + ["left"] * 3)
    return [*lines, "; ".join(counts) + ".", "", table, ""]


def _warnings(result: AnalysisResult) -> list[str]:
    notes = []
    by_metric: dict[str, list[tuple[str, int, str]]] = {}
    for left_out in result.dropped:
        by_metric.setdefault(left_out.metric,
                             []).append((left_out.unit_id, left_out.count, left_out.kinds))
    for metric, items in by_metric.items():
        total = sum(count for _, count, _ in items)
        units = ", ".join(f"{unit_id} ({kinds})" for unit_id, _, kinds in items[:6])
        more = f", … ({len(items) - 6} more units)" if len(items) > 6 else ""
        notes.append(
            f"Left out {total} stored {metric} value(s) that are no measurement (not finite, or "
            f"negative or implausibly large for a built-in metric) in {len(items)} unit(s): "
            f"{units}{more}. Records of older versions may hold them; every number above is "
            "computed without them."
        )
    if result.excluded_records:
        notes.append(
            f"Left out {result.excluded_records} stored record(s) whose content key is not the one "
            "this run planned for their unit: they were measured with other settings."
        )
    for d in result.drift:
        if d.flagged:
            notes.append(
                f"Drift: {d.metric} of {d.model} / {d.build} trends over execution order "
                f"(Spearman ρ = {d.rho:.2f}, p = {fmt.p_value(d.p_value)}, last third vs first "
                f"third {d.change_pct:+.1f}%). Interleaving cancels drift between builds; check "
                "the host load."
            )
    # per model, over every pair (pairs share builds: one note per model)
    fewest: dict[str, int] = {}
    for comparison in result.comparisons:
        for m in comparison.models:
            if m.verdict != "not measured":
                fewest[m.model] = min(fewest.get(m.model, m.units_baseline), m.units_baseline,
                                      m.units_candidate)
    for model, processes in fewest.items():
        if processes < 3 and not result.sampling:  # run.until chose the count on the CI itself
            notes.append(
                f"{model}: only {processes} runner process(es) in a build; process-to-process "
                "variation is poorly known: raise run.repetitions."
            )
    return notes


def _comparison_section(
    result: AnalysisResult, comparison: Comparison, builds: Sequence[str], several: bool,
    context: ReportContext, links: Sequence[str] = (),
) -> list[str]:
    """One pair: its table, method note, gates, expectations and identity differences. With several
    pairs the section is headed by the pair (``## u85-256 vs u85-128``) and its parts are one level
    deeper."""
    sub = "###" if several else "##"
    lines = [f"## {fmt.markdown_cell(comparison.label)}", ""] if several else []
    choice = comparison.primary_choice
    # say which of the preferred metrics headlines
    if choice is not None and len(choice.candidates) > 1:
        lines += [f"Primary metric: **{comparison.primary}** ({choice.reason}).", ""]
    caption = caption_line(comparison, context)
    lines += [*([caption, ""] if caption else []), comparison_table(comparison, context.sources),
              "", numbers_note(comparison, context), "", method_note(result, comparison), ""]
    if links:
        what = ("the charts (medians with CIs; every sample per build and runner process)"
                if len(links) > 1 else "the chart (medians with CIs)")
        lines += [" · ".join(f"[{name}]({name})" for name in links) + f": {what}.", ""]
    lines += memory_section(result.frame, comparison, f"{sub} Memory")  # sizes: memory_table
    lines += gates_section(comparison, f"{sub} Gates")
    lines += expectations_section(comparison, f"{sub} Expectations")
    differing = [c for m in comparison.models for c in m.identity if c.status == "fail"]
    if differing:
        lines += [f"{sub}# Identity differences", ""]
        for check in differing:
            lines.append(f"- **{fmt.markdown_cell(check.model)}** `{check.name}`:")
            for build in sorted(check.values, key=rank(builds)):
                values = check.values[build]
                lines.append(f"  - {build}: {', '.join(values) or '(none)'}")
        lines.append("")
    return lines


def render_markdown(result: AnalysisResult, title: str | None = None,
                    context: ReportContext | None = None,
                    events: EventReport | None = None, links: Sequence[str] = ()) -> str:
    """The whole ``report.md`` as text (LF line ends, ends with one newline); ``events``: the ETDump
    event comparison (``stats/etdump_events.py``), shown after the comparisons. ``links``: the chart
    files written beside it (``report.png``, ``report.samples.png``), linked under the first
    comparison's table."""
    context = context or ReportContext()
    comparisons = result.comparisons
    several = len(comparisons) > 1
    builds = build_order(result, context)
    lines = [f"# {title or default_title(result, context)}", ""]
    line = context_line(context, comparisons, builds)
    if line:
        lines += [line, ""]
    lines += verdict_lines(result)
    if several:
        lines += overview_section(comparisons)
    for index, comparison in enumerate(comparisons):
        lines += _comparison_section(result, comparison, builds, several, context,
                                     links if index == 0 else ())
    lines += events_markdown(events)  # where the time went, event by event: etdump_tables
    # measured NPU cycles vs Vela's estimates: vela_estimates
    lines += vela_section(result, context.vela)
    lines += _sampling_section(result)
    lines += _failures_section(result)
    notes = _warnings(result)
    if notes:
        lines += ["## Warnings", "", *(f"- {n}" for n in notes), ""]
    timed = result.summary
    if comparisons and len(timed):  # sizes are in each pair's Memory table (and the CSV and JSON)
        timed = timed[~timed["metric"].isin(MEMORY_METRICS)]
    if len(timed):
        lines += ["## Per build", "", summary_table(ordered_summary(timed, builds)), ""]
    lines += machine_record.machine_section(context.machine, builds)
    return "\n".join(lines).rstrip("\n") + "\n"
