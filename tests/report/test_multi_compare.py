"""More than two builds: one baseline against several candidates (a sweep of NPU sizes), or any list
of pairs.

Each pair is judged on its own (verdicts, identity checks, gates), the run's verdict and exit status
consider every pair, and the report has an overview, a section per pair, a ``pair`` column in the
CSV, ``comparisons`` in the JSON and a combined chart."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fvp_harness.cli.verb_run import format_summary
from fvp_harness.report import format as fmt
from fvp_harness.report.rendering.context import ReportContext
from fvp_harness.report.rendering.csv_report import render_csv
from fvp_harness.report.rendering.json_report import REPORT_FORMAT_VERSION, render_json
from fvp_harness.report.rendering.markdown import render_markdown
from fvp_harness.report.rendering.order import build_order
from fvp_harness.report.rendering.render import render_report
from fvp_harness.report.stats.analysis import analyse
from fvp_harness.report.stats.result import AnalysisResult, expectations_violated, run_verdict
from fvp_harness.report.stats.spec import Settings
from fvp_harness.scenario.model import Compare, Gate
from fvp_harness.store.records import Record
from tests.helpers import interleaved, record

BASE, MID, TOP = "u85-128", "u85-256", "u85-512"
MODELS = ("kws", "resnet8")
CPU_MS = {BASE: 2.0, MID: 1.5, TOP: 1.2}
"""Median CPU time per inference per build: each larger NPU is clearly faster."""
CONTEXT = ReportContext(scenario="macs", platform="corstone320-u85")


def sweep(
    builds: tuple[str, ...] = (BASE, MID, TOP),
    *,
    load_ms: Mapping[str, float] | None = None,
    outputs: Mapping[str, str] | None = None,
    seed: int = 0,
) -> list[Record]:
    """Three repetitions of every build x model, interleaved: ``cpu_time`` (10 per unit, 1% noise),
    ``load_time`` (once per unit, 1% noise; 5 ms unless ``load_ms`` says otherwise) and one output
    file (the same hash for every build unless ``outputs`` gives a build another one)."""
    rng = np.random.default_rng(seed)
    records = []
    for second, rep, model, build in interleaved(range(1, 4), MODELS, builds):
        cpu = CPU_MS.get(build, 1.0) * (1 + 0.01 * rng.standard_normal(10))
        load = (load_ms or {}).get(build, 5.0) * (1 + 0.01 * rng.standard_normal(1))
        records.append(record(
            f"r{rep}-{build}-{model}", key=f"{rep}-{build}-{model}", build=build, model=model,
            repetition=rep, samples={"cpu_time": cpu.tolist(), "load_time": load.tolist()},
            metric_units={"cpu_time": "ms", "load_time": "ms"},
            outputs={"out-0.bin": (outputs or {}).get(build, "ab" * 32)},
            started=f"2026-03-01T10:{second:02d}:00Z",
        ))
    return records


def analysed(records: list[Record], spec: Compare | None = None) -> AnalysisResult:
    spec = spec or Compare(baseline=BASE, candidates=[MID, TOP], expect_identical=["outputs"])
    return analyse(records, spec, ["load_time"], Settings(resamples=300))


def by_pair(result: AnalysisResult) -> dict[str, object]:
    return {c.label: c for c in result.comparisons}


# --- analysis -------------------------------------------------------------------------------------


def test_each_candidate_is_judged_against_the_baseline() -> None:
    result = analysed(sweep())
    assert [(c.baseline, c.candidate) for c in result.comparisons] == [(BASE, MID), (BASE, TOP)]
    assert result.comparison is result.comparisons[0]  # code that knows one pair reads the first
    mid, top = result.comparisons
    for comparison, saved in ((mid, 25.0), (top, 40.0)):
        assert [m.model for m in comparison.models] == list(MODELS)
        for m in comparison.models:
            assert m.verdict == "faster" and m.saved_pct == pytest.approx(saved, abs=2.0)
        assert (comparison.geomean is not None and
                comparison.geomean.saved_pct == pytest.approx(saved, abs=2.0))
    # one baseline, measured once: both pairs see the same baseline numbers
    assert [m.baseline_median for m in mid.models] == [m.baseline_median for m in top.models]
    assert run_verdict(result).status == "PASS" and not expectations_violated(result)


def test_identity_checks_are_per_pair() -> None:
    result = analysed(sweep(outputs={TOP: "cd" * 32}))
    pairs = by_pair(result)
    mid, top = pairs[f"{MID} vs {BASE}"], pairs[f"{TOP} vs {BASE}"]
    assert {check.status for m in mid.models for check in m.identity} == {"pass"}
    assert {check.status for m in top.models for check in m.identity} == {"fail"}
    failing = top.models[0].identity[0]
    assert set(failing.values) == {BASE, TOP}  # the check lists the builds of its own pair only
    verdict = run_verdict(result)
    assert verdict.status == "FAIL" and expectations_violated(result)
    assert all(f"{TOP} vs {BASE}" in reason for reason in verdict.reasons), verdict.reasons
    assert not any(f"{MID} vs {BASE}" in reason for reason in verdict.reasons)


def test_gates_are_per_pair_and_one_violated_pair_fails_the_run() -> None:
    spec = Compare(baseline=BASE, candidates=[MID, TOP], expect_identical=["outputs"],
                   gates={"load_time": Gate(max_regression="10%")})
    result = analysed(sweep(load_ms={TOP: 15.0}), spec)
    pairs = by_pair(result)
    assert {g.verdict for g in pairs[f"{MID} vs {BASE}"].gates} == {"within"}
    top_gates = pairs[f"{TOP} vs {BASE}"].gates
    assert ([g.model for g in top_gates] == list(MODELS) and
            {g.verdict for g in top_gates} == {"violated"})
    assert all(g.change is not None and g.change == pytest.approx(200.0, abs=5.0)
               for g in top_gates)
    verdict = run_verdict(result)
    assert verdict.status == "FAIL"
    assert (verdict.reasons[0].startswith("gate load_time: ") and
            f"(kws, {TOP} vs {BASE}, a rise " in verdict.reasons[0])
    assert expectations_violated(result)
    assert len(result.expectations) == sum(len(c.expectations) for c in result.comparisons)


def test_a_pair_whose_candidate_never_ran_is_not_verified() -> None:
    result = analysed(sweep(builds=(BASE, MID)))
    top = by_pair(result)[f"{TOP} vs {BASE}"]
    assert {m.verdict for m in top.models} == {"not measured"}
    verdict = run_verdict(result)
    assert verdict.status == "NOT VERIFIED"
    assert f"cpu_time not measured for kws, resnet8 ({TOP} vs {BASE})" in verdict.reasons


def test_pairs_with_their_own_baselines_and_builds_in_no_pair() -> None:
    records = sweep(builds=(BASE, MID, TOP, "u85-1024"))
    spec = Compare.model_validate({"pairs": [{"baseline": BASE, "candidate": MID},
                                             {"baseline": MID, "candidate": TOP}],
                                   "expect_identical": ["outputs"]})
    result = analysed(records, spec)
    assert [c.label for c in result.comparisons] == [f"{MID} vs {BASE}", f"{TOP} vs {MID}"]
    second = result.comparisons[1]
    assert all(m.saved_pct == pytest.approx(20.0, abs=2.0) for m in second.models)  # 1.5 -> 1.2 ms
    assert "u85-1024" in set(result.summary["build"])  # measured, in no pair: still summarised
    assert build_order(result) == [BASE, MID, TOP, "u85-1024"]


@dataclass(frozen=True)
class _OldSpec:
    """A spec object from before pairs existed (no ``build_pairs``)."""

    baseline: str
    candidate: str
    primary: str = "cpu_time"
    min_effect: float = 1.0
    expect_identical: list[str] = field(default_factory=lambda: ["outputs"])


def test_a_spec_without_pairs_compares_its_one_pair() -> None:
    result = analyse(sweep(), _OldSpec(BASE, TOP), settings=Settings(resamples=200))
    assert [(c.baseline, c.candidate) for c in result.comparisons] == [(BASE, TOP)]


# --- rendering ------------------------------------------------------------------------------------


def test_markdown_has_an_overview_and_a_section_per_pair() -> None:
    spec = Compare(baseline=BASE, candidates=[MID, TOP], expect_identical=["outputs"],
                   gates={"load_time": Gate(max_regression="10%")})
    result = analysed(sweep(load_ms={TOP: 15.0}), spec)
    markdown = render_markdown(result, context=CONTEXT)
    lines = markdown.split("\n")
    assert lines[0] == f"# macs: {MID}, {TOP} vs {BASE}"
    assert "**Verdict: FAIL**" in markdown
    headings = [line for line in lines if line.startswith("#")]
    assert headings == [
        f"# macs: {MID}, {TOP} vs {BASE}", "## Overview",
        f"## {MID} vs {BASE}", "### Gates", "### Expectations",
        f"## {TOP} vs {BASE}", "### Gates", "### Expectations",
        "## Failures", "## Per build",
    ]
    overview = lines[lines.index("## Overview"):lines.index(f"## {MID} vs {BASE}")]
    header = next(line for line in overview if line.startswith("| Model"))
    assert [c.strip() for c in header.split("|")[1:-1]] == ["Model", f"{BASE} (baseline)", MID, TOP]
    kws = next(line for line in overview if line.startswith("| kws"))
    cells = [c.strip() for c in kws.split("|")[1:-1]]
    mid, top = (c.models[0] for c in result.comparisons)
    assert cells[1] == fmt.number(mid.baseline_median) == fmt.number(top.baseline_median)
    assert cells[2] == (f"{fmt.number(mid.candidate_median)} (saved {fmt.percent(mid.saved_pct)}, "
                        "faster)")
    assert cells[3] == (f"{fmt.number(top.candidate_median)} (saved {fmt.percent(top.saved_pct)}, "
                        "faster)")
    # each pair's table is headed by its own builds, and the violated gate sits in the second
    # section only
    first, second = markdown.split(f"## {TOP} vs {BASE}")
    assert f"CPU time per inference, {BASE} -> {MID}" in first and "| violated" not in first
    assert f"CPU time per inference, {BASE} -> {TOP}" in second and "| violated" in second


def test_two_pairs_that_share_nothing_get_one_column_each() -> None:
    spec = Compare.model_validate({"pairs": [{"baseline": BASE, "candidate": MID},
                                             {"baseline": MID, "candidate": TOP}],
                                   "expect_identical": ["outputs"]})
    result = analysed(sweep(), spec)
    markdown = render_markdown(result, context=CONTEXT)
    assert markdown.startswith(f"# macs: {MID} vs {BASE}; {TOP} vs {MID}\n")
    header = next(line
                  for line in markdown.split("\n") if line.startswith("| Model") and "vs" in line)
    assert ([c.strip() for c in header.split("|")[1:-1]]
            == ["Model", f"{MID} vs {BASE}", f"{TOP} vs {MID}"])
    m = result.comparisons[1].models[0]
    assert m.saved_pct is not None and 15 < m.saved_pct < 25
    cell = (f"{fmt.number(m.baseline_median)} -> {fmt.number(m.candidate_median)} ms (saved "
            f"{fmt.percent(m.saved_pct)}, faster)")
    assert f"| {cell} |" in markdown


def test_csv_has_a_pair_column_and_rows_of_every_pair() -> None:
    result = analysed(sweep())
    frame = pd.read_csv(io.StringIO(render_csv(result)))
    assert list(frame.columns)[-1] == "pair"
    primary = frame[frame["row"] == "primary"]
    assert primary["pair"].tolist() == [f"{MID} vs {BASE}"] * 2 + [f"{TOP} vs {BASE}"] * 2
    assert (primary["candidate"] + " vs "
            + primary["baseline"]).tolist() == primary["pair"].tolist()
    assert (frame[frame["row"] == "geomean"]["pair"].tolist()
            == [f"{MID} vs {BASE}", f"{TOP} vs {BASE}"])


def test_a_two_build_csv_keeps_its_columns() -> None:
    result = analysed(sweep(builds=(BASE, MID)),
                      Compare(baseline=BASE, candidate=MID, expect_identical=["outputs"]))
    assert "pair" not in pd.read_csv(io.StringIO(render_csv(result))).columns
    assert ("## Overview" not in render_markdown(result) and
            "## Expectations" in render_markdown(result))


def test_json_lists_every_comparison_and_keeps_the_first_as_comparison() -> None:
    spec = Compare(baseline=BASE, candidates=[MID, TOP], expect_identical=["outputs"],
                   gates={"load_time": Gate(max_regression="10%")})
    data = json.loads(render_json(analysed(sweep(load_ms={TOP: 15.0}), spec), context=CONTEXT))
    assert data["format_version"] == REPORT_FORMAT_VERSION == 4
    assert ([(c["baseline"], c["candidate"]) for c in data["comparisons"]]
            == [(BASE, MID), (BASE, TOP)])
    assert data["comparison"] == data["comparisons"][0]
    assert data["expectations_violated"] is True and data["verdict"]["status"] == "FAIL"
    assert data["builds"][:3] == [BASE, MID, TOP]
    assert {g["verdict"] for g in data["comparisons"][1]["gates"]} == {"violated"}


def test_png_is_the_combined_chart_and_deterministic(tmp_path: Path) -> None:
    result = analysed(sweep())
    first = render_report(result, tmp_path / "a", outputs=["png"],
                          context=CONTEXT)["png"].read_bytes()
    again = render_report(result, tmp_path / "b", outputs=["png"],
                          context=CONTEXT)["png"].read_bytes()
    two = analysed(sweep(builds=(BASE, MID)),
                   Compare(baseline=BASE, candidate=MID, expect_identical=["outputs"]))
    single = render_report(two, tmp_path / "c", outputs=["png"],
                           context=CONTEXT)["png"].read_bytes()
    assert first.startswith(b"\x89PNG\r\n\x1a\n") and first == again
    assert first != single  # several pairs draw the change chart, not the two-build medians


def test_terminal_summary_shows_every_pair() -> None:
    summary = format_summary(analysed(sweep(outputs={TOP: "cd" * 32})))
    assert (f"cpu_time (ms): {MID} vs {BASE}" in summary and
            f"cpu_time (ms): {TOP} vs {BASE}" in summary)
    assert summary.count("expectations: ") == 2 and "expectations: FAIL" in summary
    assert "verdict: FAIL" in summary
