"""Copy vs zero-copy VGF runs -> "boundary cost removed / boundary cost remaining / execution
changed?".

The question a VGF zero-copy change must answer is not "is it faster" alone but where the time went:
which boundary costs zero-copy removed (input/output copies and their memcpy time), which boundary
costs it brought or left (imports, binding refresh, buffers the driver refused and copied anyway),
and whether the VGF execution itself changed (it should not: zero-copy moves where I/O lives, not
what the GPU computes). This module answers that from the same tidy DataFrame the A/B path uses
(``frames.to_frame`` over ``vgf.reader.to_record`` records), with the A/B statistics
(``comparison.compare``: two-level bootstrap CIs of medians, Mann-Whitney p, ``decide_verdict``),
and renders markdown, CSV, JSON and PNG with the A/B report's public helpers
(``report.markdown_table``, ``expectations_markdown``, ``jsonable``, ``save_png``,
``write_report_files``).

Pure except ``render_vgf_report``, which writes the files into a folder it is given.
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from fvp_harness.report import format as fmt
from fvp_harness.report.format import markdown_table
from fvp_harness.report.rendering.json_report import jsonable
from fvp_harness.report.rendering.md_tables import expectations_markdown
from fvp_harness.report.rendering.report_files import save_png, write_report_files
from fvp_harness.report.stats.comparison import compare
from fvp_harness.report.stats.frames import to_frame
from fvp_harness.report.stats.spec import Settings
from fvp_harness.store.folder import VGF_REPORT_FILES
from fvp_harness.store.records import Record
from fvp_harness.vgf.reader import (
    VGF_METRIC_UNITS,
    NoVgfReports,
    VgfRun,
    find_reports,
    load_results,
)

__all__ = [
    "SECTIONS",
    "VGF_REPORT_FORMAT_VERSION",
    "VgfComparison",
    "VgfExpectation",
    "VgfMetricRow",
    "compare_vgf",
    "render_vgf_csv",
    "render_vgf_json",
    "render_vgf_markdown",
    "render_vgf_png",
    "render_vgf_report",
    "report_results_folder",
]

VGF_REPORT_FORMAT_VERSION = 1

Section = Literal["latency", "removed", "remaining", "execution"]
SECTIONS: dict[Section, tuple[str, ...]] = {
    "latency": ("latency_ns",),
    "removed": ("in_copy_bytes", "out_copy_bytes", "in_memcpy_ns", "out_memcpy_ns", "memcpy_ns"),
    "remaining": ("imports", "import_ns", "binding_refresh_ns", "in_zero_copy_bytes",
                  "out_zero_copy_bytes", "fallback_count", "rejection_count", "boundary_ns"),
    "execution": ("execute_ns", "submit_wait_ns"),
}  # fmt: skip
"""Which metric goes in which part of the report. ``boundary_ns`` (memcpy + import + binding
refresh) closes the "remaining" table: the net boundary cost per inference in each mode."""

LABELS = {
    "latency_ns": "per-inference latency",
    "in_copy_bytes": "input copy bytes",
    "out_copy_bytes": "output copy bytes",
    "in_memcpy_ns": "input memcpy time",
    "out_memcpy_ns": "output memcpy time",
    "memcpy_ns": "memcpy time, in + out",
    "imports": "imports",
    "import_ns": "import time",
    "binding_refresh_ns": "binding refresh time",
    "in_zero_copy_bytes": "input zero-copy bytes",
    "out_zero_copy_bytes": "output zero-copy bytes",
    "fallback_count": "fallbacks to copy",
    "rejection_count": "import rejections",
    "boundary_ns": "**boundary cost total** (memcpy + import + refresh)",
    "execute_ns": "VGF execution time",
    "submit_wait_ns": "submit + wait time",
}

Status = Literal["pass", "fail", "unverified"]


@dataclass(frozen=True)
class VgfMetricRow:
    """One metric for one model: each mode's median and 95% CI, the change, and what it means.

    ``change_pct`` is the candidate relative to the baseline (negative = less), with the CI from the
    A/B analysis; ``verdict`` is the A/B verdict for time metrics (``no
    change``/``faster``/``slower``/ ``inconclusive``), or for boundary quantities
    ``removed``/``partly removed``/``not removed``/``appeared``/
    ``none``/``same``/``more``/``less``.
    """

    model: str
    section: Section
    metric: str
    unit: str
    baseline_median: float | None
    baseline_ci: tuple[float | None, float | None]
    candidate_median: float | None
    candidate_ci: tuple[float | None, float | None]
    change: float | None
    change_pct: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    n_baseline: int
    n_candidate: int
    verdict: str


@dataclass(frozen=True)
class VgfExpectation:
    """A checked claim: copies removed, execution unchanged, every execute succeeded, the modes are
    what the arguments say, one device."""

    model: str
    name: str
    status: Status
    detail: str


@dataclass(frozen=True)
class VgfComparison:
    """Everything the VGF report shows."""

    baseline: str
    candidate: str
    min_effect: float
    rows: tuple[VgfMetricRow, ...]
    expectations: tuple[VgfExpectation, ...]
    devices: dict[str, list[str]]
    """Build -> distinct device labels of its runs."""
    runs: dict[str, list[dict[str, Any]]]
    """Build -> per run: file, model, zero_copy, warmup, iterations, inferences, sha256."""
    rejections: dict[str, dict[str, int]]
    """Build -> reason -> count, over its runs."""
    warnings: tuple[str, ...]
    settings: Settings = field(default_factory=Settings)

    def row(self, model: str, metric: str) -> VgfMetricRow | None:
        return next((r for r in self.rows if r.model == model and r.metric == metric), None)

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys(r.model for r in self.rows))

    @property
    def violated(self) -> bool:
        """True when an expectation failed (the CLI's exit status 1)."""
        return any(e.status == "fail" for e in self.expectations)


@dataclass(frozen=True)
class _Spec:
    """A ``CompareLike`` for one metric."""

    baseline: str
    candidate: str
    primary: str
    min_effect: float
    expect_identical: list[str] = field(default_factory=list)


# --- analysis -------------------------------------------------------------------------------------


def _quantity_verdict(section: Section, base: float | None, cand: float | None) -> str:
    if base is None or cand is None:
        return "not measured"
    if section == "removed":
        if base == 0:
            return "none" if cand == 0 else "appeared"
        if cand <= 0.01 * base:
            return "removed"
        return "partly removed" if cand < base else "not removed"
    if base == 0:
        return "none" if cand == 0 else "appeared"
    if cand == 0:
        return "gone"
    return "same" if cand == base else ("more" if cand > base else "less")


def compare_vgf(
    frame: pd.DataFrame,
    baseline: str,
    candidate: str,
    *,
    runs: Mapping[str, Sequence[VgfRun]] | None = None,
    min_effect: float = 2.0,
    settings: Settings | None = None,
) -> VgfComparison:
    """Compare the ``candidate`` build (zero-copy) with the ``baseline`` (copy) per model and
    metric.

    ``frame`` is ``frames.to_frame`` of ``vgf.reader.to_record`` records. ``runs`` (build -> the
    parsed reports) adds device, config, rejection reasons and reader warnings; without it those
    parts stay empty. ``min_effect`` (percent) is the change in a time metric that counts as a
    change (execution "unchanged" means its CI of the change lies within +-min_effect).
    """
    settings = settings or Settings()
    runs = runs or {}
    rows: list[VgfMetricRow] = []
    present = set(frame["metric"]) if len(frame) else set()
    for section, metrics in SECTIONS.items():
        for metric in metrics:
            if metric not in present:
                continue
            spec = _Spec(baseline, candidate, metric, min_effect)
            result = compare(frame, spec, settings=settings)
            for m in result.models:
                base, cand = m.baseline_median, m.candidate_median
                change = cand - base if base is not None and cand is not None else None
                timed = metric.endswith("_ns") and section in ("latency", "execution")
                verdict: str
                if timed:
                    verdict = m.verdict
                    if base == 0 and cand == 0:
                        verdict = "none"
                else:
                    verdict = _quantity_verdict(section, base, cand)
                rows.append(
                    VgfMetricRow(
                        model=m.model,
                        section=section,
                        metric=metric,
                        unit=VGF_METRIC_UNITS.get(metric, ""),
                        baseline_median=base,
                        baseline_ci=m.baseline_ci,
                        candidate_median=cand,
                        candidate_ci=m.candidate_ci,
                        change=change,
                        change_pct=-m.saved_pct if m.saved_pct is not None else None,
                        ci_low=-m.ci_high if m.ci_high is not None else None,
                        ci_high=-m.ci_low if m.ci_low is not None else None,
                        p_value=m.p_value,
                        n_baseline=m.n_baseline,
                        n_candidate=m.n_candidate,
                        verdict=verdict,
                    )
                )
    # one model's rows together, in report order, models in the order they ran
    models = list(dict.fromkeys(r.model for r in rows))
    order = [metric for metrics in SECTIONS.values() for metric in metrics]
    rows.sort(key=lambda r: (models.index(r.model), order.index(r.metric)))
    comparison = VgfComparison(
        baseline=baseline,
        candidate=candidate,
        min_effect=min_effect,
        rows=tuple(rows),
        expectations=(),
        devices={b: list(dict.fromkeys(r.device.label() for r in rs)) for b, rs in runs.items()},
        runs={b: [_run_facts(r) for r in rs] for b, rs in runs.items()},
        rejections={b: _merged_rejections(rs) for b, rs in runs.items()},
        warnings=tuple(f"{r.path}: {w}" for rs in runs.values() for r in rs for w in r.warnings),
        settings=settings,
    )
    return dataclasses.replace(comparison, expectations=_expectations(comparison, frame, runs))


def _run_facts(run: VgfRun) -> dict[str, Any]:
    return {
        "file": run.path,
        "model": run.model,
        "zero_copy": run.config.zero_copy,
        "warmup": run.config.warmup,
        "iterations": run.config.iterations,
        "inferences": run.inferences,
        "failures": run.failures,
        "sha256": run.sha256,
    }


def _merged_rejections(runs: Sequence[VgfRun]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for run in runs:
        for reason, count in run.rejections.items():
            merged[reason] = merged.get(reason, 0) + count
    return merged


def _expectations(
    c: VgfComparison, frame: pd.DataFrame, runs: Mapping[str, Sequence[VgfRun]]
) -> tuple[VgfExpectation, ...]:
    out: list[VgfExpectation] = []
    for model in c.models:
        copies = _copy_row(c, model)
        if copies is None:
            out.append(VgfExpectation(model, "copies removed", "unverified",
                                      "no copy byte counts in the reports"))
        else:
            base, cand = copies
            if base is None or base == 0:
                out.append(VgfExpectation(model, "copies removed", "unverified",
                                          f"{c.baseline} copied nothing"))
            elif cand is not None and cand <= 0.01 * base:
                moved = f"{fmt.byte_count(base)} -> {fmt.byte_count(cand)}"
                out.append(VgfExpectation(model, "copies removed", "pass", moved))
            else:
                reasons = ("; ".join(c.rejections.get(c.candidate, {})) or
                           "no rejection reason reported")
                moved = f"{fmt.byte_count(base)} -> {fmt.byte_count(cand)}"
                out.append(VgfExpectation(model, "copies removed", "fail", f"{moved} ({reasons})"))
        execute = c.row(model, "execute_ns")
        if execute is None:
            out.append(VgfExpectation(model, "execution unchanged", "unverified",
                                      "no execute_ns in the reports"))
        else:
            statuses: dict[str, Status] = {"no change": "pass", "faster": "fail", "slower": "fail"}
            status = statuses.get(execute.verdict, "unverified")
            out.append(
                VgfExpectation(
                    model,
                    "execution unchanged",
                    status,
                    f"{execute.verdict}: change {fmt.signed_percent(execute.change_pct)}, "
                    f"CI {fmt.signed_percent_interval(execute.ci_low, execute.ci_high)}, limit "
                    f"±{c.min_effect:g}%",
                )
            )
        sel = (frame[(frame["model"] == model) & (frame["metric"] == "success")] if len(frame)
               else frame)
        if len(sel):
            failed = {str(b): int((g["value"] == 0).sum())
                      for b, g in sel.groupby("build", sort=False)}
            bad = {b: n for b, n in failed.items() if n}
            detail = (", ".join(f"{b}: {n} failed" for b, n in bad.items()) or
                      "every execute succeeded")
            out.append(VgfExpectation(model, "executes succeeded", "fail" if bad else "pass",
                                      detail))
    if runs:
        wrong = []
        unknown = 0
        for build, want in ((c.baseline, False), (c.candidate, True)):
            for run in runs.get(build, ()):
                if run.config.zero_copy is None:
                    unknown += 1
                elif run.config.zero_copy is not want:
                    wrong.append(
                        f"{run.path} says zero_copy={str(run.config.zero_copy).lower()} but is the "
                        f"{build} run"
                    )
        if wrong:
            out.append(VgfExpectation("*", "modes as given", "fail",
                                      "; ".join(wrong) + " (arguments swapped?)"))
        else:
            out.append(
                VgfExpectation(
                    "*",
                    "modes as given",
                    "unverified" if unknown else "pass",
                    f"{unknown} report(s) do not say their mode" if unknown
                    else "config.zero_copy matches",
                )
            )
        labels = {label for labels in c.devices.values() for label in labels}
        if len(labels) > 1:
            out.append(VgfExpectation("*", "one device", "fail",
                                      "runs used different devices: " + "; ".join(labels)))
        else:
            out.append(VgfExpectation("*", "one device", "pass", next(iter(labels), "unknown")))
    return tuple(out)


def _copy_row(c: VgfComparison, model: str) -> tuple[float | None, float | None] | None:
    ins, outs = c.row(model, "in_copy_bytes"), c.row(model, "out_copy_bytes")
    if ins is None and outs is None:
        return None
    parts = [r for r in (ins, outs) if r is not None]
    if any(r.baseline_median is None or r.candidate_median is None for r in parts):
        return None, None
    return sum(r.baseline_median or 0 for r in parts), sum(r.candidate_median or 0 for r in parts)


# --- formatting -----------------------------------------------------------------------------------


def _label(metric: str) -> str:
    return LABELS.get(metric, metric)


# --- markdown -------------------------------------------------------------------------------------


def render_vgf_markdown(c: VgfComparison, title: str | None = None) -> str:
    """The whole ``vgf_report.md``."""
    b, z = c.baseline, c.candidate
    lines = [f"# {title or f'VGF zero-copy I/O: {z} vs {b}'}", ""]
    facts = []
    devices = list(dict.fromkeys(label for labels in c.devices.values() for label in labels))
    if devices:
        facts.append("Device: " + "; ".join(f"**{d}**" for d in devices))
    for build in (b, z):
        runs = c.runs.get(build, [])
        if runs:
            n = sum(r["inferences"] for r in runs)
            facts.append(f"{build}: {len(runs)} run(s), {n} measured inferences")
    if facts:
        lines += [" · ".join(facts), ""]
    lines += _headline(c)
    lines += ["## Per-inference latency", ""]
    lines += [_timed_table(c, "latency"), ""]
    lines += ["## Boundary cost removed", "",
              f"What {z} no longer pays at the ExecuTorch/VGF boundary.", ""]
    lines += [_quantity_table(c, "removed", "Removed"), ""]
    lines += ["## Boundary cost remaining", "",
              f"What {z} pays instead (imports, binding refresh) or still pays "
              "(buffers that fell back to a copy).", ""]  # fmt: skip
    lines += [_quantity_table(c, "remaining", "Change"), ""]
    lines += ["## Execution changed?", "",
              f"Zero-copy should not change the device's work: *no change* when the CI of "
              f"the change lies within ±{c.min_effect:g}%.", ""]  # fmt: skip
    lines += [_timed_table(c, "execution"), ""]
    lines += ["## Fallbacks and rejections", ""]
    any_rejection = False
    for build in (b, z):
        for reason, count in c.rejections.get(build, {}).items():
            any_rejection = True
            lines.append(f"- {build}: {reason} (×{count})")
    if not any_rejection:
        lines.append("None: every buffer was imported as requested (or the reports list no "
                     "reasons).")
    lines.append("")
    lines += _expectation_lines(c)
    if c.warnings:
        lines += ["## Reader warnings", "", *(f"- {w}" for w in c.warnings), ""]
    s = c.settings
    lines += [
        "## Method",
        "",
        "Medians over every measured inference of every run (warmup dropped). "
        f"{s.confidence * 100:g}% CIs: two-level bootstrap ({s.resamples} resamples, seed "
        f"{s.seed}) over runs then inferences, as in the A/B report; the change's CI is widened to "
        "the Welch t-interval over run medians when that is wider. p: two-sided, at the level of "
        "the CI (the larger of the bootstrap's and the Welch t-test's over run medians). Boundary "
        "cost total = input + output memcpy + import + binding refresh time.", "",
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


def _headline(c: VgfComparison) -> list[str]:
    out = []
    for model in c.models:
        bits = []
        memcpy = c.row(model, "memcpy_ns")
        if memcpy is not None:
            before, after = fmt.duration_ns(memcpy.baseline_median), fmt.duration_ns(
                memcpy.candidate_median)
            bits.append(f"memcpy {before} -> {after}")
        imports = c.row(model, "import_ns")
        refresh = c.row(model, "binding_refresh_ns")
        added = sum((r.candidate_median or 0) - (r.baseline_median or 0)
                    for r in (imports, refresh) if r is not None)
        if imports is not None or refresh is not None:
            bits.append(f"import + refresh {fmt.signed_quantity('ns', added)}")
        total = c.row(model, "boundary_ns")
        if total is not None and total.change is not None:
            word = "saves" if total.change < 0 else "costs"
            bits.append(f"net boundary {word} {fmt.duration_ns(abs(total.change))} per inference")
        execute = c.row(model, "execute_ns")
        if execute is not None:
            bits.append(f"execution {execute.verdict} ({fmt.signed_percent(execute.change_pct)})")
        latency = c.row(model, "latency_ns")
        if latency is not None:
            before, after = fmt.duration_ns(latency.baseline_median), fmt.duration_ns(
                latency.candidate_median)
            bits.append(f"latency {before} -> {after} ({latency.verdict})")
        if bits:
            out.append(f"- **{model}**: " + "; ".join(bits))
    return [*out, ""] if out else []


def _timed_table(c: VgfComparison, section: Section) -> str:
    headers = ["Model", "Metric", f"{c.baseline} (95% CI)", f"{c.candidate} (95% CI)", "Change",
               "95% CI of change", "p", "n", "Verdict"]  # fmt: skip
    rows = [
        [r.model, _label(r.metric),
         fmt.quantity_with_interval(r.unit, r.baseline_median, r.baseline_ci),
         fmt.quantity_with_interval(r.unit, r.candidate_median, r.candidate_ci),
         f"{fmt.signed_quantity(r.unit, r.change)} ({fmt.signed_percent(r.change_pct)})",
         fmt.signed_percent_interval(r.ci_low, r.ci_high), fmt.p_value(r.p_value),
         f"{r.n_baseline}/{r.n_candidate}", r.verdict]
        for r in c.rows if r.section == section
    ]  # fmt: skip
    if not rows:
        return "Not reported."
    return markdown_table(rows, headers,
                          ["left", "left", "right", "right", "right", "right", "right", "right",
                           "left"])


def _quantity_table(c: VgfComparison, section: Section, change_title: str) -> str:
    headers = ["Model", "Per inference", f"{c.baseline}", f"{c.candidate}", change_title,
               "What happened"]
    rows = []
    for r in c.rows:
        if r.section != section:
            continue
        if section == "removed" and r.change is not None and r.change <= 0:
            change = fmt.quantity(r.unit, -r.change)  # what went away, as a plain amount
        elif section == "removed" and r.change is not None:
            change = f"{fmt.signed_quantity(r.unit, -r.change)} (grew)"
        else:
            change = fmt.signed_quantity(r.unit, r.change)
        rows.append([r.model, _label(r.metric), fmt.quantity(r.unit, r.baseline_median),
                     fmt.quantity(r.unit, r.candidate_median), change, r.verdict])  # fmt: skip
    if not rows:
        return "Not reported."
    return markdown_table(rows, headers, ["left", "left", "right", "right", "right", "left"])


def _expectation_lines(c: VgfComparison) -> list[str]:
    return expectations_markdown([(e.model, e.name, e.status, e.detail) for e in c.expectations])


# --- CSV, JSON, PNG -------------------------------------------------------------------------------

CSV_COLUMNS = ["model", "section", "metric", "unit", "baseline", "candidate", "baseline_median",
               "baseline_ci_low",
               "baseline_ci_high", "candidate_median", "candidate_ci_low", "candidate_ci_high",
               "change",
               "change_pct", "change_ci_low", "change_ci_high", "p_value", "n_baseline",
               "n_candidate", "verdict"]  # fmt: skip


def render_vgf_csv(c: VgfComparison) -> str:
    """One row per (model, metric), in report order; 6 significant digits."""
    rows = [
        {
            "model": r.model, "section": r.section, "metric": r.metric, "unit": r.unit,
            "baseline": c.baseline,
            "candidate": c.candidate, "baseline_median": r.baseline_median,
            "baseline_ci_low": r.baseline_ci[0],
            "baseline_ci_high": r.baseline_ci[1], "candidate_median": r.candidate_median,
            "candidate_ci_low": r.candidate_ci[0], "candidate_ci_high": r.candidate_ci[1],
            "change": r.change,
            "change_pct": r.change_pct, "change_ci_low": r.ci_low, "change_ci_high": r.ci_high,
            "p_value": r.p_value, "n_baseline": r.n_baseline, "n_candidate": r.n_candidate,
            "verdict": r.verdict,
        }
        for r in c.rows
    ]  # fmt: skip
    buffer = io.StringIO()
    pd.DataFrame(rows, columns=CSV_COLUMNS).to_csv(
        buffer, index=False, lineterminator="\n", float_format="%.6g"
    )
    return buffer.getvalue()


def render_vgf_json(c: VgfComparison, title: str | None = None) -> str:
    """Everything the markdown shows, machine-readable and versioned."""
    data = {
        "format": "fvp-harness-vgf-report",
        "format_version": VGF_REPORT_FORMAT_VERSION,
        "title": title or f"VGF zero-copy I/O: {c.candidate} vs {c.baseline}",
        **dataclasses.asdict(c),
        "expectations_violated": c.violated,
    }
    return json.dumps(jsonable(data), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


_PARTS = (("in_memcpy_ns", "input memcpy", "#d08c2b"),
          ("out_memcpy_ns", "output memcpy", "#e8b86d"),
          ("import_ns", "import", "#8e5ea2"), ("binding_refresh_ns", "binding refresh", "#c7a6d9"),
          ("submit_wait_ns", "submit + wait (VGF execution)", "#1f6fb4"))  # fmt: skip


def render_vgf_png(c: VgfComparison, path: Path, title: str | None = None) -> Path:
    """Per model and mode, a stacked bar of where one inference's time goes (memcpy, import, binding
    refresh, submit + wait, the rest of the latency), with the latency's median and CI as a whisker
    on top."""
    # late: matplotlib (half a second to import) loads only when a chart is really drawn, as in
    # report.charts
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    labels: list[str] = []
    x = 0.0
    used: set[str] = set()
    for model in c.models:
        for build, which in ((c.baseline, "baseline"), (c.candidate, "candidate")):
            bottom = 0.0
            for metric, name, colour in _PARTS:
                row = c.row(model, metric)
                value = (getattr(row, f"{which}_median") or 0.0) / 1e3 if row is not None else 0.0
                if value > 0:
                    axes.bar(x, value, 0.6, bottom=bottom, color=colour,
                             label=None if name in used else name)
                    used.add(name)
                    bottom += value
            latency = c.row(model, "latency_ns")
            if latency is not None:
                median = getattr(latency, f"{which}_median")
                ci = getattr(latency, f"{which}_ci")
                if median is not None:
                    rest = median / 1e3 - bottom
                    if rest > 0:
                        axes.bar(x, rest, 0.6, bottom=bottom, color="#bbbbbb",
                                 label=None if "other" in used else "other (runner)")  # fmt: skip
                        used.add("other")
                    if ci[0] is not None and ci[1] is not None:
                        axes.errorbar(x, median / 1e3, yerr=[[max(0.0, (median - ci[0]) / 1e3)],
                                      [max(0.0, (ci[1] - median) / 1e3)]], color="#333333",
                                      capsize=3)  # fmt: skip
            labels.append(f"{model}\n{build}")
            x += 1
        x += 0.5
    positions = []
    pos = 0.0
    for _ in c.models:
        positions += [pos, pos + 1]
        pos += 2.5
    axes.set_xticks(positions, labels, fontsize=8)
    axes.set_ylabel("time per inference (µs)")
    figure.suptitle(title or f"VGF zero-copy I/O: {c.candidate} vs {c.baseline}", fontsize=11)
    axes.margins(y=0.12)
    # legend in the order of the stack (bottom to top reads top to bottom), whatever each bar
    # happened to use
    names = [name for _, name, _ in _PARTS] + ["other (runner)"]
    handles, texts = axes.get_legend_handles_labels()
    order = sorted(range(len(texts)),
                   key=lambda i: -names.index(texts[i]) if texts[i] in names else 0)
    axes.legend([handles[i] for i in order], [texts[i] for i in order], frameon=False, fontsize=8,
                loc="upper left", bbox_to_anchor=(1.0, 1.0))  # fmt: skip
    axes.spines[["top", "right"]].set_visible(False)
    return save_png(figure, path)


def render_vgf_report(
    c: VgfComparison,
    out_dir: Path,
    outputs: Sequence[str] = ("markdown", "csv", "json", "png"),
    title: str | None = None,
) -> dict[str, Path]:
    """Write ``vgf_report.md/.csv/.json/.png`` into ``out_dir`` (created); return output name ->
    path."""
    text = {
        "markdown": lambda: render_vgf_markdown(c, title),
        "csv": lambda: render_vgf_csv(c),
        "json": lambda: render_vgf_json(c, title),
    }
    return write_report_files(out_dir, outputs, VGF_REPORT_FILES, text,
                              lambda path: render_vgf_png(c, path, title))


def report_results_folder(
    root: Path,
    records: Sequence[Record],
    *,
    baseline: str | None = None,
    candidate: str | None = None,
    min_effect: float = 2.0,
    outputs: Sequence[str] = ("markdown", "csv", "json", "png"),
    title: str | None = None,
    settings: Settings | None = None,
) -> tuple[VgfComparison, dict[str, Path]] | None:
    """The VGF report of a results folder: the kept VGF reports (``fetched/<unit>/*.json``) matched
    to the stored ``records``, compared and written as ``vgf_report.*`` beside the A/B report. None
    when the folder holds no VGF report (other fetched JSON is ignored), so a caller can call it for
    every scenario; a folder whose only VGF reports are broken raises ``VgfFormatError`` (they were
    meant to be read).

    Meant for ``pipeline`` after the A/B report (pass
    ``scenario.compare.baseline/candidate/min_effect`` when the scenario has a ``compare`` block)
    and for ``fvp-harness vgf --results DIR``.
    """

    if not any(True for _ in find_reports(root)):
        return None
    try:
        data = load_results(root, baseline=baseline, candidate=candidate, records=records)
    except NoVgfReports:
        return None
    comparison = compare_vgf(
        to_frame(data.records),
        data.baseline,
        data.candidate,
        runs=data.runs,
        min_effect=min_effect,
        settings=settings,
    )
    if data.warnings:
        comparison = dataclasses.replace(comparison,
                                         warnings=(*data.warnings, *comparison.warnings))
    return comparison, render_vgf_report(comparison, root, outputs, title)
