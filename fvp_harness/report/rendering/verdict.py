"""The ``verdict`` object of ``report.json``: what a CI step reads with one ``jq``."""

from __future__ import annotations

from typing import Any

from fvp_harness.report.stats.result import AnalysisResult, run_verdict

__all__ = ["verdict_object"]


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def verdict_object(result: AnalysisResult) -> dict[str, Any]:
    """``{status, reasons, violated_gates, violated_expectations, failed_units, not_run}`` (JSON
    types; floats are rounded by the caller's ``json_report.jsonable`` like every other number of
    ``report.json``)."""
    verdict = run_verdict(result)
    gates = [
        {"model": g.model, "metric": g.metric, "baseline": c.baseline, "candidate": c.candidate,
         "baseline_median": g.baseline_median, "candidate_median": g.candidate_median,
         "change": g.change, "ci_low": g.ci_low, "ci_high": g.ci_high, "allowed": g.allowed,
         "unit": "%" if g.relative else g.unit, "n_baseline": g.n_baseline,
         "n_candidate": g.n_candidate, "detail": g.detail}
        for c in result.comparisons for g in c.gates if g.verdict == "violated"
    ]
    expectations = [
        {"kind": e.kind, "model": e.model, "name": e.name, "baseline": c.baseline,
         "candidate": c.candidate, "limit": e.limit, "detail": e.detail}
        for c in result.comparisons for e in c.expectations if e.status == "fail"
    ]
    failed = [
        {"unit_id": f.unit_id, "build": f.build, "model": f.model, "failure_class": f.failure_class,
         "failure": _first_line(f.failure), "log": f.log}
        for f in result.failed_units
    ]
    not_run = [{"unit_id": u.unit_id, "build": u.build, "model": u.model,
                "repetition": u.repetition}
               for u in result.not_run]
    return {
        "status": verdict.status,
        "reasons": list(verdict.reasons),
        "violated_gates": gates,
        "violated_expectations": expectations,
        "failed_units": failed,
        "not_run": not_run,
    }
