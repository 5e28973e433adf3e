"""``--junit``: the XML validates against the JUnit schema common CI systems use (Jenkins'
junit-10.xsd, shipped beside this file), a violated gate is a failure carrying its numbers, failed
and not-run units are test cases, the bytes are the same for the same records, and ``report.json``'s
``verdict`` is readable with one ``jq``."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fvp_harness.report.rendering.json_report import render_json
from fvp_harness.report.rendering.junit import (
    Case,
    Suite,
    junit_xml,
    suite_from_result,
    write_junit,
)
from fvp_harness.report.stats.analysis import analyse
from fvp_harness.scenario.model import Scenario
from tests.helpers import record

xmlschema = pytest.importorskip("xmlschema")

XSD = Path(__file__).with_name("junit-10.xsd")


def _records(after_load: float = 3.0, *, failed: bool = True) -> list:
    """Two builds, one model, three units each: cpu_time 2.0 -> 1.0 ms, load_time 1.0 ->
    ``after_load`` ms; one extra unit of the candidate failed."""
    rows = []
    for rep in range(3):
        for build, cpu, load in (("before", 2.0, 1.0), ("after", 1.0, after_load)):
            jitter = 1 + 0.005 * (rep - 1)
            rows.append(
                record(
                    f"r{rep}-{build}-resnet8",
                    build=build,
                    repetition=rep,
                    key=f"k{rep}{build}",
                    samples={
                        "cpu_time": [cpu * jitter, cpu * jitter * 1.01, cpu * jitter * 0.99],
                        "load_time": [load * jitter],
                    },
                    metric_units={"cpu_time": "ms", "load_time": "ms"},
                )
            )
    if failed:
        rows.append(record("r3-after-resnet8", build="after", repetition=3, key="k3after",
                           status="failed",
                           failure="CommandFailed: the runner exited with status 139\nSegmentation "
                                   "fault \x1b[0m",
                           log="logs/s0/r3-after-resnet8.log"))
    return rows


SPEC = Scenario.model_validate({
    "name": "demo", "builds": {"before": {"runner": "/x/b"}, "after": {"runner": "/x/a"}},
    "models": {"resnet8": {"file": "/x/m"}},
    "metrics": ["cpu_time", "load_time"],
    "compare": {"baseline": "before", "candidate": "after", "expect_identical": ["outputs"],
                "gates": {"load_time": {"max_regression": "10%"}}},
})


def _result(**kwargs: object):
    planned = {f"r{rep}-{build}-resnet8": f"k{rep}{build}" for rep in range(4)
               for build in ("before", "after")}
    planned.pop("r3-before-resnet8")
    planned["r4-after-resnet8"] = "k4after"  # planned, never run
    return analyse(_records(**kwargs), SPEC.compare, SPEC.metrics, planned=planned)


def test_junit_output_validates_against_the_jenkins_schema(tmp_path):
    path = write_junit(tmp_path / "out" / "junit.xml", [suite_from_result("demo", _result())])
    xmlschema.XMLSchema(str(XSD)).validate(str(path))


def test_a_violated_gate_is_a_failure_with_its_numbers():
    root = ET.fromstring(junit_xml([suite_from_result("demo", _result())]))
    suite = root.find("testsuite")
    assert suite is not None
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    gate = cases["resnet8: gate load_time (≤ +10%)"]
    failure = gate.find("failure")
    assert failure is not None and failure.get("type") == "violated gate"
    assert failure.get("message",
                       "").startswith("200% higher, more than allowed (a rise of at most 10%; CI")
    text = failure.text or ""
    for words in ("baseline before: median 1.00 ms (n=3)", "candidate after: median 3.00 ms (n=3)",
                  "change: +200%", "allowed: ≤ +10%", "verdict: violated"):
        assert words in text, text
    assert cases["resnet8: identical outputs"].find("failure") is None  # a passed expectation


def test_failed_and_not_run_units_are_test_cases_with_their_reason():
    root = ET.fromstring(junit_xml([suite_from_result("demo", _result())]))
    cases = {case.get("name"): case for case in root.iter("testcase")}
    failed = cases["r3-after-resnet8"].find("failure")
    assert (failed is not None and
            failed.get("message") == "CommandFailed: the runner exited with status 139")
    assert "log: logs/s0/r3-after-resnet8.log" in (failed.text or "")
    assert "\x1b" not in (failed.text or "")  # characters XML 1.0 forbids are dropped
    not_run = cases["r4-after-resnet8"].find("error")
    assert not_run is not None and not_run.get("type") == "not run"
    suite = root.find("testsuite")
    assert suite is not None
    # the gate and the unit; the not-run unit
    assert (suite.get("failures"), suite.get("errors")) == ("2", "1")
    assert root.get("tests") == suite.get("tests")
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["verdict"] == "FAIL"


def test_an_unverified_expectation_is_skipped_with_the_reason():
    # +5% with a 10% gate: within, or straddling, never violated
    result = _result(after_load=1.05, failed=False)
    root = ET.fromstring(junit_xml([suite_from_result("demo", result)]))
    gate = next(case for case in root.iter("testcase")
                if case.get("name", "").startswith("resnet8: gate"))
    assert gate.find("failure") is None
    skipped = gate.find("skipped")
    if skipped is not None:
        assert "straddles" in (skipped.get("message") or "")


def test_the_same_records_give_the_same_bytes():
    first = junit_xml([suite_from_result("demo", _result())])
    second = junit_xml([suite_from_result("demo", _result())])
    assert (first == second and
            first.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites'))


def test_several_suites_are_counted_in_the_root():
    suites = [Suite("a", (Case("a", "x"), Case("a", "y", "failure", "t", "m", "d"))),
              Suite("b",
                    (Case("b", "z", "error", "t", "m", "d"),
                     Case("b", "w", "skipped", "t", "m", "")))]
    root = ET.fromstring(junit_xml(suites))
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "1", "1")
    xmlschema.XMLSchema(str(XSD)).validate(junit_xml(suites))


def test_report_json_verdict_names_violated_gates_and_not_run_units():
    verdict = json.loads(render_json(_result()))["verdict"]
    assert verdict["status"] == "FAIL"
    assert [(g["model"], g["metric"], g["baseline"], g["candidate"])
            for g in verdict["violated_gates"]] == [
        ("resnet8", "load_time", "before", "after")]
    gate = verdict["violated_gates"][0]
    assert (gate["change"] == pytest.approx(200.0, abs=1) and gate["allowed"] == 10 and
            gate["unit"] == "%")
    assert gate["ci_low"] > 10
    assert [u["unit_id"] for u in verdict["not_run"]] == ["r4-after-resnet8"]
    assert [u["unit_id"] for u in verdict["failed_units"]] == ["r3-after-resnet8"]
    assert {e["name"] for e in verdict["violated_expectations"]} == {"load_time"}
    assert verdict["reasons"] and verdict["reasons"][0].startswith("gate load_time: 200% higher")


def test_report_json_verdict_of_a_clean_run_is_pass_with_empty_lists():
    planned = {f"r{rep}-{build}-resnet8": f"k{rep}{build}" for rep in range(3)
               for build in ("before", "after")}
    result = analyse(_records(after_load=1.0, failed=False), SPEC.compare, SPEC.metrics,
                     planned=planned)
    verdict = json.loads(render_json(result))["verdict"]
    assert (verdict["violated_gates"] == [] and verdict["not_run"] == [] and
            verdict["failed_units"] == [])
    assert verdict["status"] in ("PASS", "NOT VERIFIED")
