"""How one finding reads in a table cell, the same in every output (markdown, CSV, JUnit, the
terminal): a metric's label, the NPU-cycles cell, whether outputs were identical, a gate's change,
CI and limit, an expectation's name."""

from __future__ import annotations

from fvp_harness.report import format as fmt
from fvp_harness.report.stats.findings import Expectation, GateCheck, ModelComparison

__all__ = [
    "METRIC_LABELS",
    "NPU_CYCLE_METRICS",
    "expectation_label",
    "gate_allowed",
    "gate_change",
    "gate_interval",
    "metric_label",
    "npu_cell",
    "npu_values",
    "outputs_cell",
    "outputs_status",
]


NPU_CYCLE_METRICS = ("npu_cycles", "bm_npu_cycles", "mlia_npu_active")
"""Metrics the report shows in its NPU-cycles column, first one present wins."""

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


def metric_label(metric: str) -> tuple[str, str]:
    return METRIC_LABELS.get(metric, (metric, "median"))


def npu_cell(model: ModelComparison) -> str:
    for change in model.others:
        if change.metric in NPU_CYCLE_METRICS:
            if change.identical:
                return f"= {fmt.number(change.baseline_median)}"
            return f"{fmt.number(change.baseline_median)} -> {fmt.number(change.candidate_median)}"
    return "n/a"


def npu_values(model: ModelComparison) -> tuple[float | None, float | None, bool | None]:
    for change in model.others:
        if change.metric in NPU_CYCLE_METRICS:
            return change.baseline_median, change.candidate_median, change.identical
    return None, None, None


def outputs_status(model: ModelComparison) -> str:
    for check in model.identity:
        if check.name == "outputs":
            return {"pass": "pass", "fail": "fail"}.get(check.status, "unverified")
    return "unverified"


def outputs_cell(model: ModelComparison) -> str:
    return {"pass": "✓ yes", "fail": "✗ no"}.get(outputs_status(model), "not checked")


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


def expectation_label(e: Expectation) -> str:
    """How an expectation is named in tables: ``identical npu_cycles``, ``identical load_time
    (±5%)``, ``gate load_time (≤ +10%)``, ``min effect: not slower than -1%``."""
    if e.kind == "identity":
        return f"identical {e.name}" + (f" ({e.limit})" if e.limit else "")
    if e.kind == "gate":
        return f"gate {e.name}" + (f" (≤ {e.limit})" if e.limit else "")
    return f"min effect: {e.name}"
