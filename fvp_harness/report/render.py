"""Markdown, CSV, JSON and PNG from an ``analysis.AnalysisResult``. Renders only: no statistics, no clock.

The markdown table is headed like the published driver-reuse table (``Model | <metric> per inference,
before -> after | Saved``) so it can be pasted into a pull request, then adds what that table lacked: the CI
of the saving, the p-value, sample counts, NPU cycles, output identity and a verdict, a geometric-mean row,
a verdict row per gated metric, the expectations with a clear PASS/FAIL, the verdict for the whole run (PASS,
FAIL or NOT VERIFIED, with its reasons), and the failed and not-run units with their class and log.

A scenario that compares more than two builds (``compare.candidates`` or ``compare.pairs``) gets an overview of
every pair, then the same sections once per pair (headed ``u85-256 vs u85-128``), a ``pair`` column in the CSV,
``comparisons`` in the JSON and a combined chart of each candidate's change; a two-build report is exactly what it
was before (apart from ``report.json``'s format version and its added ``comparisons``).

Determinism: the same records give byte-identical markdown, CSV and JSON (dates come from the manifest
through ``ReportContext``, never from the clock; floats are formatted to fixed precision), and the PNG
carries no timestamp or software tag, so committed reports only change when the data does.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fvp_harness.files import atomic_write
from fvp_harness.report import format as fmt
from fvp_harness.report import machine as machine_record
from fvp_harness.report.analysis import (
    NPU_CYCLE_METRICS,
    AnalysisResult,
    Comparison,
    Expectation,
    GateCheck,
    ModelComparison,
    expectations_violated,
    run_verdict,
)
from fvp_harness.report.distributions import has_samples, samples_figure
from fvp_harness.report.etdump_events import EventReport, events_csv, events_json, events_markdown
from fvp_harness.report.format import markdown_table
from fvp_harness.report.vela_estimates import VelaInputs, load_vela_inputs, vela_section
from fvp_harness.report.verdict import verdict_object
from fvp_harness.store.folder import EVENTS_CSV_FILE, REPORT_FILES, REPORT_SAMPLES_FILE

__all__ = [
    "REPORT_FORMAT_VERSION",
    "ReportContext",
    "build_order",
    "chart_title",
    "expectation_label",
    "expectations_markdown",
    "expectations_violated",
    "gate_allowed",
    "gate_change",
    "gate_interval",
    "jsonable",
    "markdown_table",
    "render_csv",
    "render_json",
    "render_markdown",
    "render_png",
    "render_report",
    "save_png",
    "verdict_lines",
    "write_report_files",
]

REPORT_FORMAT_VERSION = 4
"""Version of ``report.json``; bumped when a field changes meaning or disappears. 2: ``failed_units[].unit``
became ``unit_id`` (the unit's id, as in records). 3: ``comparisons`` holds one comparison per pair of builds;
``comparison`` is only the first of them, while ``expectations_violated`` and ``verdict`` cover every pair.
4: a model's ``p_value`` is the process-level one (``analysis.process_level_p``; the pooled Mann-Whitney is
``p_pooled``); ``machine`` (the manifest's machine record), ``simulated`` and ``measured_on`` are added."""

OutputName = Literal["markdown", "csv", "json", "png"]

METRIC_LABELS: dict[str, tuple[str, str]] = {
    # metric -> (label, "per ..." phrase) for the table header
    "cpu_time": ("CPU time", "per inference"),
    "npu_cycles": ("NPU cycles", "per inference"),
    "iteration_time": ("Iteration time", "per inference"),
    "run_time": ("Run time", "per run"),
    "load_time": ("Load time", "per run"),
    "bm_npu_cycles": ("NPU cycles", "per inference"),
    "bm_execute_cycles": ("CPU cycles in execute()", "per inference"),
    "bm_cpu_cycles": ("CPU cycles", "per inference"),
    "mlia_npu_active": ("NPU active cycles", "per run"),
}


@dataclass(frozen=True)
class ReportContext:
    """Where the numbers come from, for the line under the title. Build it with ``from_manifest``."""

    scenario: str | None = None
    platform: str | None = None
    fvp: str | None = None
    builds: dict[str, str] = field(default_factory=dict)
    """Build name -> what identifies it (id text, runner sha256)."""
    date: str | None = None
    host: str | None = None
    """For a run on this host (``target: host``), the machine it ran on; then no platform and no FVP are claimed."""
    vela: VelaInputs | None = None
    """The Vela estimates the scenario's ``models.<name>.vela`` name, read (``report/vela_estimates.py``)."""
    deploy: str | None = None
    """``deploy.method: auto``: how each instance got the artifacts (``s0 ssh``), from the manifest's instances."""
    simulated: bool = False
    """Some unit ran on the embedded simulator: every output that can travel alone says so (``report/machine``)."""
    measured_on: str | None = None
    """What measured the numbers, in one phrase: the simulator's release, the FVP build (version, sha256), or the
    host; the table's caption line, the CSV column, the PNG titles say it."""
    sources: dict[str, str] = field(default_factory=dict)
    """Build name -> ``repository@commit`` of its declared ``builds.X.source`` (shown in the table's header)."""
    machine: dict[str, Any] | None = None
    """The manifest's machine record (host, harness, model, builds' sources): ``report.json`` and the footer."""

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any] | None) -> ReportContext:
        """Read the fields documented in ``docs/results-format.md``; anything missing is simply not shown."""
        if not manifest:
            return cls()
        scenario = manifest.get("scenario")
        name = scenario.get("name") if isinstance(scenario, Mapping) else scenario
        fvp = manifest.get("fvp")
        fvp_text = None
        if isinstance(fvp, Mapping):
            parts = [str(fvp[k]) for k in ("binary", "version") if fvp.get(k)]
            fvp_text = " ".join(parts) or None
        elif fvp:
            fvp_text = str(fvp)
        builds: dict[str, str] = {}
        raw_builds = manifest.get("builds")
        if isinstance(raw_builds, Mapping):
            for build, info in raw_builds.items():
                if isinstance(info, Mapping):
                    bits = []
                    if info.get("id"):
                        bits.append(f"id `{info['id']}`")
                    if info.get("sha256"):
                        bits.append(f"runner sha256 `{str(info['sha256'])[:12]}`")
                    builds[str(build)] = ", ".join(bits)
                else:
                    builds[str(build)] = str(info)
        when = manifest.get("finished") or manifest.get("started")
        resolved = scenario.get("resolved") if isinstance(scenario, Mapping) else None
        host_text = None
        if isinstance(resolved, Mapping) and resolved.get("target") == "host":  # no model ran: name the machine
            host = manifest.get("host")
            bits = [str(host[k]) for k in ("hostname", "machine") if host.get(k)] if isinstance(host, Mapping) else []
            host_text = (f"{bits[0]} ({bits[1]})" if len(bits) == 2 else " ".join(bits)) or "this host"
        return cls(
            scenario=str(name) if name else None,
            platform=str(manifest["platform"]) if manifest.get("platform") and host_text is None else None,
            fvp=fvp_text if host_text is None else None,
            builds=builds,
            date=str(when)[:10] if when else None,
            host=host_text,
            vela=load_vela_inputs(manifest),
            deploy=_deploy_text(manifest.get("instances")),
            simulated=machine_record.is_simulated(manifest),
            measured_on=machine_record.measured_on(manifest),
            sources=machine_record.declared_sources(manifest),
            machine=machine_record.machine_record(manifest),
        )


def _deploy_text(instances: object) -> str | None:
    """``s0 ssh, s0.2 console (...)``: the ``deploy`` of each instance that recorded one (``auto`` only)."""
    if not isinstance(instances, Mapping):
        return None
    shown = [f"{name} {entry['deploy']}" for name, entry in instances.items()
             if isinstance(entry, Mapping) and entry.get("deploy")]
    return ", ".join(shown) or None


# --- formatting helpers -------------------------------------------------------------------------------------


def _label(metric: str) -> tuple[str, str]:
    return METRIC_LABELS.get(metric, (metric, "median"))


def _npu(model: ModelComparison) -> str:
    for change in model.others:
        if change.metric in NPU_CYCLE_METRICS:
            if change.identical:
                return f"= {fmt.number(change.baseline_median)}"
            return f"{fmt.number(change.baseline_median)} -> {fmt.number(change.candidate_median)}"
    return "n/a"


def _npu_values(model: ModelComparison) -> tuple[float | None, float | None, bool | None]:
    for change in model.others:
        if change.metric in NPU_CYCLE_METRICS:
            return change.baseline_median, change.candidate_median, change.identical
    return None, None, None


def _outputs_status(model: ModelComparison) -> str:
    for check in model.identity:
        if check.name == "outputs":
            return {"pass": "pass", "fail": "fail"}.get(check.status, "unverified")
    return "unverified"


def _outputs_cell(model: ModelComparison) -> str:
    return {"pass": "✓ yes", "fail": "✗ no"}.get(_outputs_status(model), "not checked")


# --- build order --------------------------------------------------------------------------------------------


def build_order(result: AnalysisResult, context: ReportContext | None = None) -> list[str]:
    """The order every output lists builds in: each comparison's baseline, then its candidate (pair after pair,
    each build once), then the other builds in the order they first ran (the scenario's order for the built-in
    run orders), then builds only the manifest names. Without a comparison: the order they first ran.

    Why not the manifest's order: ``manifest.json`` is written with sorted keys, which would put ``after`` before
    ``before``; and per model the run order alternates (ABBA), which would mix the per-build table.
    """
    names: list[str] = []
    for comparison in result.comparisons:
        names += [comparison.baseline, comparison.candidate]
    if len(result.summary):
        names += [str(b) for b in result.summary["build"]]
    if context is not None:
        names += list(context.builds)
    return list(dict.fromkeys(names))


def _rank(builds: Sequence[str]) -> Any:
    """A sort key putting build names in ``builds`` order (unknown ones last, by name)."""
    index = {name: i for i, name in enumerate(builds)}
    return lambda name: (index.get(name, len(index)), name)


def _ordered_summary(summary: pd.DataFrame, builds: Sequence[str]) -> pd.DataFrame:
    """The summary with each model's rows in ``builds`` order; models and metrics keep their run order."""
    if not len(summary):
        return summary
    models = list(dict.fromkeys(summary["model"]))
    rank = {name: i for i, name in enumerate(builds)}
    keys = [
        (models.index(model), rank.get(str(build), len(rank)), position)
        for position, (model, build) in enumerate(zip(summary["model"], summary["build"], strict=True))
    ]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return summary.iloc[order].reset_index(drop=True)


# --- markdown -----------------------------------------------------------------------------------------------


def _default_title(result: AnalysisResult, context: ReportContext) -> str:
    """``<scenario>: after vs before``; several candidates of one baseline: ``<scenario>: u85-256, u85-512 vs
    u85-128``; pairs with different baselines: ``<scenario>: b vs a; d vs c``."""
    name = context.scenario or "benchmark"
    comparisons = result.comparisons
    if not comparisons:
        return name
    baselines = list(dict.fromkeys(c.baseline for c in comparisons))
    if len(baselines) == 1:
        return f"{name}: {', '.join(c.candidate for c in comparisons)} vs {baselines[0]}"
    return f"{name}: {'; '.join(c.label for c in comparisons)}"


def _context_line(
    context: ReportContext, comparisons: Sequence[Comparison], builds_in_order: Sequence[str]
) -> str:
    """Platform and FVP (or the host, for ``target: host``), the builds the manifest names (and the compared ones),
    date."""
    named = set(context.builds)
    for comparison in comparisons:
        named |= {comparison.baseline, comparison.candidate}
    builds_in_order = [name for name in builds_in_order if name in named]
    parts = []
    if context.platform:
        parts.append(f"Platform: **{context.platform}**")
    if context.fvp:
        parts.append(f"FVP: **{context.fvp}**")
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


def _comparison_table(comparison: Comparison, sources: Mapping[str, str] | None = None) -> str:
    label, per = _label(comparison.primary)
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
        "n",
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
                fmt.saved_percent(m.saved_pct),
                fmt.saved_interval(m.ci_low, m.ci_high),
                fmt.p_value(m.p_value),
                f"{m.n_baseline}/{m.n_candidate}",
                _npu(m),
                _outputs_cell(m),
                m.verdict,
            ]
        )
    gm = comparison.geomean
    if gm is not None:
        rows.append(
            [
                f"**Geometric mean** ({gm.models} models)",
                f"ratio {gm.ratio:.3f}",
                fmt.saved_percent(gm.saved_pct),
                fmt.saved_interval(gm.ci_low, gm.ci_high),
                "",
                "",
                "",
                "",
                gm.verdict,
            ]
        )
    return markdown_table(rows, headers, ["left", "right", "right", "right", "right", "right", "right", "left", "left"])


def gate_change(gate: GateCheck) -> str:
    """A gate's change as the tables show it: ``+203%``, ``+0.85 ms``, ``n/a``."""
    if gate.change is None:
        return fmt.MISSING
    if gate.relative:
        return fmt.signed_percent(gate.change, 0 if abs(gate.change) >= 100 else 1)
    return _signed_number(gate.change) + (f" {gate.unit}" if gate.unit else "")


def _signed_number(value: float) -> str:
    return "0" if value == 0 else ("-" if value < 0 else "+") + fmt.number(abs(value))


def gate_interval(gate: GateCheck) -> str:
    """The CI of a gate's change: ``+150.0 … +260.0%`` or ``+0.80 … +0.90 ms``."""
    if gate.ci_low is None or gate.ci_high is None:
        return fmt.MISSING
    if gate.relative:
        return fmt.signed_percent_interval(gate.ci_low, gate.ci_high)
    low, high = _signed_number(gate.ci_low), _signed_number(gate.ci_high)
    return f"{low} … {high}" + (f" {gate.unit}" if gate.unit else "")


def gate_allowed(gate: GateCheck) -> str:
    """A gate's limit: ``≤ +10%``, ``≤ +0.2 ms``, ``≤ 0 cycles``."""
    amount = f"+{gate.allowed:g}" if gate.allowed else "0"
    return f"≤ {amount}" + ("%" if gate.relative else f" {gate.unit}" if gate.unit else "")


def _gates_section(comparison: Comparison, heading: str = "## Gates") -> list[str]:
    """``## Gates``: one verdict row per gated metric and model."""
    if not comparison.gates:
        return []
    b, c = comparison.baseline, comparison.candidate
    rows = [
        [g.model, g.metric,
         f"{fmt.number(g.baseline_median)} -> {fmt.number(g.candidate_median)}" + (f" {g.unit}" if g.unit else ""),
         gate_change(g), gate_interval(g), gate_allowed(g), f"{g.n_baseline}/{g.n_candidate}", g.verdict]
        for g in comparison.gates
    ]  # fmt: skip
    headers = ["Model", "Metric", f"{b} -> {c}", "Change", "95% CI of change", "Allowed", "n", "Verdict"]
    table = markdown_table(rows, headers, ["left", "left", "right", "right", "right", "right", "right", "left"])
    note = (
        f"Change = {c} − {b} (in % of the {b} median, or in the metric's unit); positive is worse. A gate is "
        "*violated* when the whole CI lies above the allowed regression, *within* when it lies at or below it, "
        "*inconclusive* when it straddles it (unverified: it does not fail the run, but the run is NOT VERIFIED)."
    )
    return [heading, "", table, "", note, ""]


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


def _method_note(result: AnalysisResult, comparison: Comparison) -> str:
    s = result.settings
    b, c, m = comparison.baseline, comparison.candidate, comparison.min_effect
    return (
        f"Medians over all measured iterations of every unit (one unit is one runner process); Saved = 100 × "
        f"(1 − {c} / {b}): +64% means {c} takes 64% less, \"20% slower\" that it takes 20% more. "
        f"{s.confidence * 100:g}% CI of saved: two-level bootstrap ({s.resamples} resamples, seed {s.seed}) "
        "over units then iterations, widened to the Welch t-interval over unit medians when that is wider. "
        "p: two-sided, for \"no change\", at the same level as the CI: the larger of the bootstrap's (the share "
        "of resamples on the far side of no change) and the Welch t-test's over unit medians (each process "
        f"counted once). n: iterations {b}/{c}. Verdict: *no change* when the CI lies within ±{m:g}%, "
        f"*faster*/*slower* when it lies entirely beyond that (and p < {s.alpha:g}), otherwise *inconclusive*."
    )


def _caption_line(comparison: Comparison, context: ReportContext) -> str:
    """The line directly above a comparison table, which any paste of the table keeps: what measured it. A
    simulated run says so in its first word."""
    label, per = _label(comparison.primary)
    what = f"{label} {per}, {comparison.baseline} -> {comparison.candidate}"
    if context.simulated:
        shown = context.measured_on if context.measured_on and "simulator" in context.measured_on else None
        return f"**Simulated, not measured on an FVP** ({shown or 'fvp-harness sim'}): {what}."
    if context.measured_on:
        return f"Measured on {context.measured_on}: {what}."
    return ""  # nothing known of the source: no caption that would only repeat the header


def _numbers_note(comparison: Comparison, context: ReportContext) -> str:
    """What these numbers are, under the table: what a CPU time or an NPU cycle count from this source means."""
    return machine_record.numbers_note(comparison.primary, context.simulated, context.host is not None)


def expectations_markdown(
    rows: Sequence[tuple[str, str, str, str]], heading: str = "## Expectations"
) -> list[str]:
    """The ``## Expectations`` section as lines: a **PASS**/**FAIL** line, then one table row per expectation.

    ``rows`` are ``(model, expectation, status, detail)`` with status ``pass``, ``fail`` or ``unverified``; the
    A/B report and the VGF report both use it so the two read alike. ``heading`` is the section's heading line
    (one level deeper inside a pair's section).
    """
    failed = [r for r in rows if r[2] == "fail"]
    unverified = [r for r in rows if r[2] == "unverified"]
    if failed:
        head = f"**FAIL**: {len(failed)} of {len(rows)} expectations violated"
    elif len(unverified) == len(rows):
        # nothing measured (or nothing declared) is not a pass: say so instead of a green word over no evidence
        head = f"**NOT VERIFIED**: none of {len(rows)} expectations could be checked"
        unverified = []
    else:
        head = f"**PASS**: no expectation violated ({len(rows) - len(unverified)} of {len(rows)} verified)"
    if unverified:
        head += f"; {len(unverified)} could not be verified"
    lines = [heading, "", head + ".", ""]
    if rows:
        table = [[model, check, status.upper(), detail] for model, check, status, detail in rows]
        lines += [markdown_table(table, ["Model", "Expectation", "Result", "Detail"], ["left"] * 4), ""]
    return lines


def expectation_label(e: Expectation) -> str:
    """How an expectation is named in tables: ``identical npu_cycles``, ``identical load_time (±5%)``,
    ``gate load_time (≤ +10%)``, ``min effect: not slower than -1%``."""
    if e.kind == "identity":
        return f"identical {e.name}" + (f" ({e.limit})" if e.limit else "")
    if e.kind == "gate":
        return f"gate {e.name}" + (f" (≤ {e.limit})" if e.limit else "")
    return f"min effect: {e.name}"


def _expectations_section(comparison: Comparison, heading: str = "## Expectations") -> list[str]:
    rows = [(e.model, expectation_label(e), e.status, e.detail) for e in comparison.expectations]
    return expectations_markdown(rows, heading)


_STOP_TEXT = {"ci_width": "CI narrow enough", "verdict settled": "verdict settled",
              "max_repetitions": "max_repetitions reached"}


def _sampling_section(result: AnalysisResult) -> list[str]:
    """``run.until``: how many repetitions each model needed and why it stopped (nothing without ``until``)."""
    if not result.sampling:
        return []
    rows = [[n.model, n.repetitions, _STOP_TEXT.get(n.reason, n.reason) if n.reason else "not stopped (run cut short)",
             n.detail or "-"] for n in result.sampling]
    table = markdown_table(rows, ["Model", "Repetitions", "Stopped because", "Detail"],
                           ["left", "right", "left", "left"])
    return ["## Repetitions needed (run.until)", "",
            "Rounds of one unit per build ran until each model's primary comparison was precise enough or decided; "
            "units its rule skipped are not counted as not run.", "", table, ""]


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
        [f.unit_id, f.build, f.model, f.attempt, f.failure_class, f.failure or "(no message)", f.log or "n/a"]
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
        by_metric.setdefault(left_out.metric, []).append((left_out.unit_id, left_out.count, left_out.kinds))
    for metric, items in by_metric.items():
        total = sum(count for _, count, _ in items)
        units = ", ".join(f"{unit_id} ({kinds})" for unit_id, _, kinds in items[:6])
        more = f", … ({len(items) - 6} more units)" if len(items) > 6 else ""
        notes.append(
            f"Left out {total} stored {metric} value(s) that are no measurement (not finite, or negative or "
            f"implausibly large for a built-in metric) in {len(items)} unit(s): {units}{more}. Records of older "
            "versions may hold them; every number above is computed without them."
        )
    if result.excluded_records:
        notes.append(
            f"Left out {result.excluded_records} stored record(s) whose content key is not the one this run planned "
            "for their unit: they were measured with other settings."
        )
    for d in result.drift:
        if d.flagged:
            notes.append(
                f"Drift: {d.metric} of {d.model} / {d.build} trends over execution order "
                f"(Spearman ρ = {d.rho:.2f}, p = {fmt.p_value(d.p_value)}, last third vs first third "
                f"{d.change_pct:+.1f}%). Interleaving cancels drift between builds; check the host load."
            )
    fewest: dict[str, int] = {}  # per model, over every pair (pairs share builds: one note per model)
    for comparison in result.comparisons:
        for m in comparison.models:
            if m.verdict != "not measured":
                fewest[m.model] = min(fewest.get(m.model, m.units_baseline), m.units_baseline, m.units_candidate)
    for model, processes in fewest.items():
        if processes < 3 and not result.sampling:  # run.until chose the count on the CI itself
            notes.append(
                f"{model}: only {processes} runner process(es) in a build; process-to-process "
                "variation is poorly known: raise run.repetitions."
            )
    return notes


def _summary_table(summary: pd.DataFrame) -> str:
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
        ci = "n/a" if pd.isna(row["ci_low"]) else f"{fmt.number(row['ci_low'])} … {fmt.number(row['ci_high'])}"
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
    """One pair's result for one model: ``600 (saved 40.0%, faster)``; with its own baseline and unit when the
    pairs do not share them (``1,000 -> 600 cycles (saved 40.0%, faster)``)."""
    if m is None:
        return fmt.MISSING
    unit = f" {comparison.unit}" if comparison.unit else ""
    if shared:
        medians = fmt.number(m.candidate_median)
    else:
        medians = f"{fmt.number(m.baseline_median)} -> {fmt.number(m.candidate_median)}{unit}"
    saving = f"{fmt.saving_phrase(m.saved_pct)}, " if m.saved_pct is not None else ""
    return f"{medians} ({saving}{m.verdict})"


def _overview_section(comparisons: Sequence[Comparison]) -> list[str]:
    """``## Overview`` of several pairs: a row per model, a column per pair. When every pair has one baseline and
    one primary metric (a sweep: u85-128 against u85-256 and u85-512) the baseline gets a column of its own and
    each candidate column holds the candidate's median, its saving and verdict."""
    first = comparisons[0]
    shared = len({c.baseline for c in comparisons}) == 1 and len({(c.primary, c.unit) for c in comparisons}) == 1
    models = list(dict.fromkeys(m.model for c in comparisons for m in c.models))
    if shared:
        label, per = _label(first.primary)
        unit = f" ({first.unit})" if first.unit else ""
        intro = (f"{label} {per}{unit}: median of **{first.baseline}** and of each candidate, with the candidate's "
                 f"saving against {first.baseline} and its verdict. Each pair's section below has the details.")
        headers = ["Model", f"{first.baseline} (baseline)", *(c.candidate for c in comparisons)]
    else:
        intro = ("Each pair on its primary metric: medians baseline -> candidate, the saving and the verdict. Each "
                 "pair's section below has the details.")
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


def _comparison_section(
    result: AnalysisResult, comparison: Comparison, builds: Sequence[str], several: bool,
    context: ReportContext, links: Sequence[str] = (),
) -> list[str]:
    """One pair: its table, method note, gates, expectations and identity differences. With several pairs the
    section is headed by the pair (``## u85-256 vs u85-128``) and its parts are one level deeper."""
    sub = "###" if several else "##"
    lines = [f"## {fmt.markdown_cell(comparison.label)}", ""] if several else []
    choice = comparison.primary_choice
    if choice is not None and len(choice.candidates) > 1:  # say which of the preferred metrics headlines
        lines += [f"Primary metric: **{comparison.primary}** ({choice.reason}).", ""]
    caption = _caption_line(comparison, context)
    lines += [*([caption, ""] if caption else []), _comparison_table(comparison, context.sources), "",
              _numbers_note(comparison, context), "", _method_note(result, comparison), ""]
    if links:
        what = ("the charts (medians with CIs; every sample per build and runner process)" if len(links) > 1
                else "the chart (medians with CIs)")
        lines += [" · ".join(f"[{name}]({name})" for name in links) + f": {what}.", ""]
    lines += _gates_section(comparison, f"{sub} Gates")
    lines += _expectations_section(comparison, f"{sub} Expectations")
    differing = [c for m in comparison.models for c in m.identity if c.status == "fail"]
    if differing:
        lines += [f"{sub}# Identity differences", ""]
        for check in differing:
            lines.append(f"- **{fmt.markdown_cell(check.model)}** `{check.name}`:")
            for build in sorted(check.values, key=_rank(builds)):
                values = check.values[build]
                lines.append(f"  - {build}: {', '.join(values) or '(none)'}")
        lines.append("")
    return lines


def render_markdown(result: AnalysisResult, title: str | None = None, context: ReportContext | None = None,
                    events: EventReport | None = None, links: Sequence[str] = ()) -> str:
    """The whole ``report.md`` as text (LF line ends, ends with one newline); ``events``: the ETDump event
    comparison (``report/etdump_events.py``), shown after the comparisons. ``links``: the chart files written
    beside it (``report.png``, ``report.samples.png``), linked under the first comparison's table."""
    context = context or ReportContext()
    comparisons = result.comparisons
    several = len(comparisons) > 1
    builds = build_order(result, context)
    lines = [f"# {title or _default_title(result, context)}", ""]
    line = _context_line(context, comparisons, builds)
    if line:
        lines += [line, ""]
    lines += verdict_lines(result)
    if several:
        lines += _overview_section(comparisons)
    for index, comparison in enumerate(comparisons):
        lines += _comparison_section(result, comparison, builds, several, context, links if index == 0 else ())
    lines += events_markdown(events)  # where the time went, event by event: report/etdump_events
    lines += vela_section(result, context.vela)  # measured NPU cycles vs Vela's estimates: report/vela_estimates
    lines += _sampling_section(result)
    lines += _failures_section(result)
    notes = _warnings(result)
    if notes:
        lines += ["## Warnings", "", *(f"- {n}" for n in notes), ""]
    if len(result.summary):
        lines += ["## Per build", "", _summary_table(_ordered_summary(result.summary, builds)), ""]
    lines += machine_record.machine_section(context.machine, builds)
    return "\n".join(lines).rstrip("\n") + "\n"


# --- CSV and JSON -------------------------------------------------------------------------------------------

CSV_COLUMNS = [
    "model", "metric", "unit", "baseline", "candidate", "baseline_median", "candidate_median", "ratio",
    "saved_pct", "ci_low", "ci_high", "p_value", "p_units", "n_baseline", "n_candidate", "units_baseline",
    "units_candidate", "npu_baseline", "npu_candidate", "npu_identical", "outputs_identical", "verdict",
    "row", "change", "change_ci_low", "change_ci_high", "change_unit", "max_regression",
    "p_pooled_iterations_mann_whitney", "simulated", "measured_on",
]  # fmt: skip
"""``row``: ``primary`` (a model on the primary metric), ``geomean`` or ``gate`` (a gated metric of a model: its
``change`` candidate − baseline with CI, in ``change_unit`` (``%`` of the baseline median, or the metric's unit),
the allowed ``max_regression`` in the same unit, and the gate's verdict). ``p_value`` is the process-level p the
markdown shows, ``p_units`` the Welch t-test's over unit medians, ``p_pooled_iterations_mann_whitney`` the Mann-Whitney
U over pooled iterations (which treats iterations of one process as independent: here only, labelled so);
``simulated`` and ``measured_on`` say on every row what measured it. With several pairs a last column
``pair`` (``u85-256 vs u85-128``) names each row's pair; a two-build report keeps the columns it always had
(``baseline`` and ``candidate`` name the pair in both)."""

PAIR_COLUMN = "pair"


def _comparison_rows(comparison: Comparison) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for m in comparison.models:
        npu_b, npu_c, npu_same = _npu_values(m)
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
                "outputs_identical": _outputs_status(m),
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
    """``report.csv``: one row per model plus the geometric mean and the gates (the comparison; pair after pair,
    with a ``pair`` column, when there are several), or the per-build summary when the scenario has no comparison.
    Every row carries ``simulated`` and ``measured_on`` (the label travels with the numbers). Floats with 6
    significant digits."""
    context = context or ReportContext()
    comparisons = result.comparisons
    if len(comparisons) == 1:
        frame = pd.DataFrame(_comparison_rows(comparisons[0]), columns=CSV_COLUMNS)
    elif comparisons:
        rows = [{**row, PAIR_COLUMN: c.label} for c in comparisons for row in _comparison_rows(c)]
        frame = pd.DataFrame(rows, columns=[*CSV_COLUMNS, PAIR_COLUMN])
    else:
        frame = _ordered_summary(result.summary, build_order(result)).copy()
    frame["simulated"] = "true" if context.simulated else "false"
    frame["measured_on"] = context.measured_on or ""
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False, lineterminator="\n", float_format="%.6g")
    return buffer.getvalue()


def jsonable(value: Any) -> Any:
    """``value`` (dataclass dicts, numpy scalars, tuples) as plain JSON types for ``json.dumps``: NaN and
    infinities become null; floats rounded to 12 significant digits so noise in the last bits of a platform's
    float maths does not change the file."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) or hasattr(value, "__float__"):
        number = float(value)
        return float(f"{number:.12g}") if math.isfinite(number) else None
    return str(value)


def render_json(result: AnalysisResult, title: str | None = None, context: ReportContext | None = None,
                events: EventReport | None = None) -> str:
    """``report.json``: everything the markdown shows, machine-readable and versioned (``format_version``).
    ``comparisons`` has one entry per pair; ``comparison`` repeats the first (format 2 readers keep working)."""
    context = context or ReportContext()
    comparison = result.comparison
    data: dict[str, Any] = {
        "format": "fvp-harness-report",
        "format_version": REPORT_FORMAT_VERSION,
        "title": title or _default_title(result, context),
        "builds": build_order(result, context),
        "context": {k: v for k, v in dataclasses.asdict(context).items() if k != "machine"},  # top level
        "settings": dataclasses.asdict(result.settings),
        "comparison": dataclasses.asdict(comparison) if comparison is not None else None,
        "comparisons": [dataclasses.asdict(c) for c in result.comparisons],
        "summary": _ordered_summary(result.summary, build_order(result, context)).to_dict(orient="records"),
        "failed_units": [dataclasses.asdict(f) for f in result.failed_units],
        "not_run": [dataclasses.asdict(u) for u in result.not_run],
        "planned_units": result.planned,
        "excluded_records": result.excluded_records,
        "dropped_samples": [dataclasses.asdict(d) for d in result.dropped],
        "drift": [dataclasses.asdict(d) for d in result.drift],
        "expectations_violated": expectations_violated(result),
        "verdict": verdict_object(result),  # status, reasons, violated gates, not-run units: report.verdict
        "simulated": context.simulated,
        "measured_on": context.measured_on,
        "machine": context.machine,
    }
    if result.sampling:  # run.until only, so other reports stay as they were
        data["sampling"] = [dataclasses.asdict(n) for n in result.sampling]
    if events is not None:  # traced builds only, so other reports stay as they were
        data["etdump_events"] = events_json(events)
    return json.dumps(jsonable(data), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# --- PNG ----------------------------------------------------------------------------------------------------


def _error(median: float | None, ci: tuple[float | None, float | None]) -> tuple[float, float]:
    if median is None or ci[0] is None or ci[1] is None:
        return 0.0, 0.0
    return max(0.0, median - ci[0]), max(0.0, ci[1] - median)


PAIR_PALETTE = ("#1f6fb4", "#d08c2b", "#3b9b5b", "#9b3b8c", "#c94f4f", "#4fa3a3", "#8c8c8c")
"""Bar colours of the combined chart, one per pair in order (repeating beyond seven)."""


def _change_bar(saved: float | None, low: float | None, high: float | None) -> tuple[float, float, float]:
    """A saving and its CI as a change bar: (change %, error below, error above); change = −saved (negative is a
    smaller, i.e. better, value). NaN height when there is no saving (no bar is drawn, none is implied)."""
    if saved is None:
        return math.nan, 0.0, 0.0
    change = -saved
    if low is None or high is None:
        return change, 0.0, 0.0
    return change, max(0.0, change + high), max(0.0, -low - change)


def _render_pairs_png(comparisons: Sequence[Comparison], path: Path, title: str | None) -> Path:
    """The combined chart of several pairs: one group per model (and the geometric mean), one bar per pair with the
    candidate's change of its primary metric against its baseline in %, 95% CI whiskers and the change printed at
    the bar's end. Changes in % put pairs with different baselines or units on one axis."""
    figure = Figure(figsize=(max(8.0, 1.2 + 1.1 * len(comparisons) * 2), 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    models = list(dict.fromkeys(m.model for c in comparisons for m in c.models))
    geomean = any(c.geomean is not None for c in comparisons)
    groups = [*models, "geometric mean"] if geomean else models
    width = 0.8 / len(comparisons)
    for index, comparison in enumerate(comparisons):
        by_model = {m.model: m for m in comparison.models}
        bars = [_change_bar(*((m.saved_pct, m.ci_low, m.ci_high) if m is not None else (None, None, None)))
                for m in (by_model.get(model) for model in models)]  # fmt: skip
        if geomean:
            gm = comparison.geomean
            bars.append(_change_bar(gm.saved_pct, gm.ci_low, gm.ci_high) if gm is not None else (math.nan, 0.0, 0.0))
        xs = [i + (index - (len(comparisons) - 1) / 2) * width for i in range(len(groups))]
        heights = [bar[0] for bar in bars]
        yerr = [[bar[1] for bar in bars], [bar[2] for bar in bars]]
        axes.bar(xs, heights, width, label=comparison.label, color=PAIR_PALETTE[index % len(PAIR_PALETTE)],
                 yerr=yerr, capsize=3, ecolor="#333333")
        for x, (change, below, above) in zip(xs, bars, strict=True):
            if math.isfinite(change):
                end = change - below if change < 0 else change + above
                axes.annotate("0%" if round(change) == 0 else f"{change:+.0f}%", (x, end), textcoords="offset points",
                              xytext=(0, -10 if change < 0 else 3), ha="center", fontsize=8)
    axes.axhline(0.0, color="#333333", linewidth=0.8)
    axes.set_xticks(range(len(groups)), groups)
    primaries = {c.primary for c in comparisons}
    label, per = _label(next(iter(primaries)))
    what = f"{label} {per}" if len(primaries) == 1 else "primary metric"
    baselines = list(dict.fromkeys(c.baseline for c in comparisons))
    against = baselines[0] if len(baselines) == 1 else "baseline"
    axes.set_ylabel(f"{what}: change vs {against} (%)")
    if title:
        figure.suptitle(title, fontsize=11)
    axes.margins(y=0.15)
    axes.legend(frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=min(4, len(comparisons)))
    axes.spines[["top", "right"]].set_visible(False)
    return save_png(figure, path)


def render_png(result: AnalysisResult, path: Path, title: str | None = None) -> Path:
    """Bar chart of the primary metric's median per model, baseline beside candidate, with CI whiskers and the
    saving above each pair. Without a comparison: medians per build of the first metric in the summary. Several
    pairs: the combined chart of each candidate's change against its baseline (``_render_pairs_png``)."""
    if len(result.comparisons) > 1:
        return _render_pairs_png(result.comparisons, path, title)
    figure = Figure(figsize=(8, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    comparison = result.comparison
    if comparison is not None and comparison.models:
        names = [m.model for m in comparison.models]
        series = [
            (
                comparison.baseline,
                [m.baseline_median for m in comparison.models],
                "#8c8c8c",
                [_error(m.baseline_median, m.baseline_ci) for m in comparison.models],
            ),
            (
                comparison.candidate,
                [m.candidate_median for m in comparison.models],
                "#1f6fb4",
                [_error(m.candidate_median, m.candidate_ci) for m in comparison.models],
            ),
        ]
        label, per = _label(comparison.primary)
        ylabel = f"{label} {per}" + (f" ({comparison.unit})" if comparison.unit else "")
    else:
        summary = result.summary
        metric = summary["metric"].iloc[0] if len(summary) else ""
        rows = summary[summary["metric"] == metric] if len(summary) else summary
        names = list(dict.fromkeys(rows["model"].tolist())) if len(rows) else []
        builds = list(dict.fromkeys(rows["build"].tolist())) if len(rows) else []
        series = []
        palette = ["#8c8c8c", "#1f6fb4", "#d08c2b", "#3b9b5b"]
        for index, build in enumerate(builds):
            medians: list[float | None] = []
            errors: list[tuple[float, float]] = []
            for name in names:
                hit = rows[(rows["model"] == name) & (rows["build"] == build)]
                if len(hit):
                    med = float(hit["median"].iloc[0])
                    ci = (hit["ci_low"].iloc[0], hit["ci_high"].iloc[0])
                    medians.append(med)
                    errors.append(_error(med, (None if pd.isna(ci[0]) else ci[0], None if pd.isna(ci[1]) else ci[1])))
                else:
                    medians.append(None)
                    errors.append((0.0, 0.0))
            series.append((build, medians, palette[index % len(palette)], errors))
        ylabel = str(metric)
    width = 0.8 / max(1, len(series))
    for index, (name, medians, colour, errors) in enumerate(series):
        xs = [i + (index - (len(series) - 1) / 2) * width for i in range(len(names))]
        heights = [0.0 if v is None else v for v in medians]
        yerr = [[e[0] for e in errors], [e[1] for e in errors]]
        axes.bar(xs, heights, width, label=name, color=colour, yerr=yerr, capsize=3, ecolor="#333333")
    if comparison is not None:
        for i, m in enumerate(comparison.models):
            top = max(v for v in (m.baseline_median, m.candidate_median, 0.0) if v is not None)
            if m.saved_pct is not None:
                axes.annotate(
                    fmt.saving_phrase(m.saved_pct, 0),
                    (i, top),
                    textcoords="offset points",
                    xytext=(0, 8),
                    ha="center",
                    fontsize=9,
                )
    axes.set_xticks(range(len(names)), names)
    axes.set_ylabel(ylabel)
    if title:
        figure.suptitle(title, fontsize=11)
    axes.margins(y=0.15)
    axes.legend(frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=max(1, len(series)))
    axes.spines[["top", "right"]].set_visible(False)
    return save_png(figure, path)


# --- files --------------------------------------------------------------------------------------------------


def save_png(figure: Figure, path: Path, *, layout: bool = True) -> Path:
    """Lay out ``figure`` and write it to ``path`` as PNG with ``files.atomic_write``, without the Software tag
    or a date, so the same figure gives the same bytes.

    The layout is done once: ``tight_layout`` leaves a placeholder layout engine behind, and with any engine set
    ``savefig`` lays the figure out again in a draw of its own before the real one (a tenth of the chart's cost,
    for nothing: the placeholder changes no position). Removing the engine after the layout gives the same bytes."""
    if layout:  # a figure laid out by its maker (``layout=False``) is saved as it is
        figure.tight_layout()
        figure.set_layout_engine(None)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    atomic_write(path, buffer.getvalue())
    return path


def write_report_files(
    out_dir: Path,
    outputs: Sequence[str],
    file_names: Mapping[str, str],
    text: Mapping[str, Callable[[], str]],
    png: Callable[[Path], object],
) -> dict[str, Path]:
    """Write the requested ``outputs`` into ``out_dir`` (created): ``file_names`` maps an output name to its file,
    ``text`` an output to a function returning its text (written with ``files.atomic_write``), ``png`` writes the
    ``png`` output to the path given. Unknown names are refused before anything is written. Returns output name
    -> path, in the order asked. The A/B and the VGF report both write through it."""
    out_dir = Path(out_dir)
    unknown = [o for o in outputs if o not in file_names]
    if unknown:
        raise ValueError(f"unknown report output(s) {unknown}; choose from {sorted(file_names)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for name in outputs:
        path = out_dir / file_names[name]
        if name in text:
            atomic_write(path, text[name]())
        else:
            png(path)
        written[name] = path
    return written


def render_report(
    result: AnalysisResult,
    out_dir: Path,
    outputs: Sequence[str] = ("markdown", "csv", "json", "png"),
    title: str | None = None,
    context: ReportContext | None = None,
    events: EventReport | None = None,
) -> dict[str, Path]:
    """Write the requested outputs into ``out_dir`` (``report.md/.csv/.json/.png``; with ``png``
    ``report.samples.png``, the distributions; with ``events`` and the ``csv`` output ``report.events.csv``);
    return name -> path of the outputs asked for.

    ``out_dir`` is the folder ``store.ResultStore`` owns (``store.root``); nothing else is written.
    """
    context = context or ReportContext()
    links = [REPORT_FILES["png"], *([REPORT_SAMPLES_FILE] if has_samples(result) else [])] if "png" in outputs else []
    text = {
        "markdown": lambda: render_markdown(result, title, context, events, links),
        "csv": lambda: render_csv(result, context),
        "json": lambda: render_json(result, title, context, events),
    }
    png_title = chart_title(title or _default_title(result, context), context)
    builds = build_order(result, context)

    def charts(path: Path) -> None:
        render_png(result, path, png_title)
        figure = samples_figure(result, builds, png_title)
        samples = path.with_name(REPORT_SAMPLES_FILE)
        if figure is not None:
            save_png(figure, samples, layout=False)
        else:
            samples.unlink(missing_ok=True)  # nothing to draw: no stale picture of an earlier run either

    written = write_report_files(out_dir, outputs, REPORT_FILES, text, charts)
    if events is not None and "csv" in written:  # the event rows, as report.json's etdump_events holds them
        written["events_csv"] = Path(out_dir) / EVENTS_CSV_FILE
        atomic_write(written["events_csv"], events_csv(events))
    return written


def chart_title(title: str, context: ReportContext) -> str:
    """A chart's title with what measured it on a second line, so a chart shown alone keeps the label."""
    if context.simulated:
        return f"{title}\nSIMULATED ({context.measured_on or 'fvp-harness sim'}), not measured on an FVP"
    return f"{title}\nmeasured on {context.measured_on}" if context.measured_on else title
