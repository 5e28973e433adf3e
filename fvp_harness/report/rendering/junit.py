"""JUnit XML from an analysis: what Jenkins, GitLab, GitHub test reporters and most CI systems show
as test results.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from fvp_harness.files import atomic_write
from fvp_harness.report import format as fmt
from fvp_harness.report.rendering.cells import gate_allowed, gate_change, gate_interval
from fvp_harness.report.stats.findings import Comparison, Expectation, GateCheck
from fvp_harness.report.stats.result import AnalysisResult, run_verdict

__all__ = ["Case", "Suite", "junit_xml", "suite_from_result", "write_junit"]

Outcome = Literal["passed", "failure", "error", "skipped"]

_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_MESSAGE_MAX = 500


def _clean(text: str) -> str:
    """Text without the characters XML 1.0 cannot hold (console output may carry escape or NUL
    bytes)."""
    return _NOT_XML.sub("", text)


@dataclass(frozen=True)
class Case:
    """One ``<testcase>``: ``outcome`` passed, failure, error or skipped; ``kind`` is the failure's
    ``type`` attribute; ``message`` one line; ``text`` the details."""

    classname: str
    name: str
    outcome: Outcome = "passed"
    kind: str = ""
    message: str = ""
    text: str = ""


@dataclass(frozen=True)
class Suite:
    """One ``<testsuite>`` and its ``<properties>`` (name -> value, in order)."""

    name: str
    cases: tuple[Case, ...]
    properties: tuple[tuple[str, str], ...] = ()


def _expectation_name(e: Expectation) -> str:
    if e.kind == "gate":
        return f"{e.model}: gate {e.name}" + (f" (≤ {e.limit})" if e.limit else "")
    if e.kind == "identity":
        return f"{e.model}: identical {e.name}" + (f" ({e.limit})" if e.limit else "")
    return f"{e.model}: min effect ({e.name})"


def _interval_words(gate: GateCheck) -> str:
    """``95% CI +1 … +2 ms``, or ``exact`` for a size every run measured the same
    (``report.changes``)."""
    if gate.ci_low is None and gate.verdict in ("violated", "within"):
        return "exact: every run of each build measured the same"
    return f"95% CI {gate_interval(gate)}"


def _gate_text(gate: GateCheck, comparison: Comparison) -> str:
    median_unit = f" {gate.unit}" if gate.unit else ""
    return "\n".join([
        f"metric: {gate.metric}",
        f"baseline {comparison.baseline}: median {fmt.number(gate.baseline_median)}{median_unit} "
        f"(n={gate.n_baseline})",
        f"candidate {comparison.candidate}: median "
        f"{fmt.number(gate.candidate_median)}{median_unit} (n={gate.n_candidate})",
        f"change: {gate_change(gate)} ({_interval_words(gate)}); positive is worse",
        f"allowed: {gate_allowed(gate)}",
        f"verdict: {gate.verdict}",
        f"detail: {gate.detail}",
    ])


def _expectation_cases(classname: str, comparison: Comparison) -> list[Case]:
    gates = {(g.model, g.metric): g for g in comparison.gates}
    cases = []
    for e in comparison.expectations:
        gate = gates.get((e.model, e.name)) if e.kind == "gate" else None
        text = _gate_text(gate, comparison) if gate is not None else e.detail
        if e.status == "fail":
            kind = {"gate": "violated gate", "identity": "identity differs",
                    "min_effect": "slower"}.get(e.kind, e.kind)
            cases.append(Case(classname, _expectation_name(e), "failure", kind, e.detail, text))
        elif e.status == "unverified":
            cases.append(Case(classname, _expectation_name(e), "skipped", "not verified", e.detail,
                              text))
        else:
            cases.append(Case(classname, _expectation_name(e), "passed"))
    return cases


def suite_from_result(name: str, result: AnalysisResult,
                      properties: Sequence[tuple[str, str]] = ()) -> Suite:
    """The test suite of one report (see the module docstring); ``properties`` are added after
    ``verdict``."""
    cases: list[Case] = []
    several = len(result.comparisons) > 1
    for comparison in result.comparisons:
        classname = f"{name}.{comparison.candidate} vs {comparison.baseline}" if several else name
        cases += _expectation_cases(classname, comparison)
    for failed in result.failed_units:
        outcome: Outcome = "error" if failed.failure_class == "infrastructure" else "failure"
        message = (failed.failure.strip().splitlines() or ["(no message)"])[0]
        text = (f"{failed.failure.strip()}\nclass: {failed.failure_class}; attempt "
                f"{failed.attempt}; log: "
               f"{failed.log or 'n/a'}")
        cases.append(Case(f"{name}.units", failed.unit_id, outcome,
                          f"{failed.failure_class} failure", message, text))
    for missing in result.not_run:
        why = "no record of this unit with its planned content key (it did not run)"
        if missing.other_keys:
            why += f"; {missing.other_keys} stored record(s) of other settings left out"
        cases.append(Case(f"{name}.units", missing.unit_id, "error", "not run", why, why))
    verdict = run_verdict(result)
    props = (("verdict", verdict.status), *properties)
    return Suite(name, tuple(cases), tuple(props))


def junit_xml(suites: Sequence[Suite]) -> str:
    """The JUnit XML document (UTF-8 text with its declaration, LF line ends, ends with a
    newline)."""
    root = ET.Element("testsuites", {"name": "fvp-harness"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        counts = {
            "tests": len(suite.cases),
            "failures": sum(case.outcome == "failure" for case in suite.cases),
            "errors": sum(case.outcome == "error" for case in suite.cases),
            "skipped": sum(case.outcome == "skipped" for case in suite.cases),
        }
        for kind, count in counts.items():
            totals[kind] += count
        element = ET.SubElement(
            root,
            "testsuite",
            {"name": _clean(suite.name), **{kind: str(count) for kind, count in counts.items()}},
        )
        if suite.properties:
            properties = ET.SubElement(element, "properties")
            for name, value in suite.properties:
                ET.SubElement(properties, "property",
                              {"name": _clean(name), "value": _clean(value)})
        for case in suite.cases:
            node = ET.SubElement(element, "testcase",
                                 {"name": _clean(case.name), "classname": _clean(case.classname)})
            if case.outcome != "passed":
                tag = "skipped" if case.outcome == "skipped" else case.outcome
                message = _clean(case.message.strip().replace("\n", " "))
                if len(message) > _MESSAGE_MAX:
                    message = message[: _MESSAGE_MAX - 1] + "…"
                child = ET.SubElement(node, tag, {"type": _clean(case.kind), "message": message})
                child.text = _clean(case.text)
    for key in ("tests", "failures", "errors"):
        root.set(key, str(totals[key]))
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: Path | str, suites: Sequence[Suite]) -> Path:
    """Write ``junit_xml(suites)`` to ``path`` (folders created, replaced atomically)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, junit_xml(suites))
    return target
