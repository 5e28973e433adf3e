"""Results you can trust: gates on secondary metrics, identity with a tolerance, stored values that
are no measurement, planned units that did not run, and one verdict for the whole run (PASS / FAIL /
NOT VERIFIED)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fvp_harness.cli.verb_run import format_summary
from fvp_harness.report import format as fmt
from fvp_harness.report.rendering.context import ReportContext
from fvp_harness.report.rendering.csv_report import render_csv
from fvp_harness.report.rendering.json_report import render_json
from fvp_harness.report.rendering.markdown import render_markdown
from fvp_harness.report.rendering.render import render_report
from fvp_harness.report.stats.analysis import analyse
from fvp_harness.report.stats.frames import to_frame
from fvp_harness.report.stats.result import AnalysisResult, expectations_violated, run_verdict
from fvp_harness.report.stats.spec import Settings
from fvp_harness.report.stats.verdicts import decide_gate
from fvp_harness.scenario.model import Compare
from fvp_harness.store.folder import ResultStore
from fvp_harness.store.records import Record
from tests.helpers import interleaved, record

FAST = Settings(resamples=500)
METRICS = ["npu_cycles", "load_time"]


def runs(
    *,
    load: Callable[[str], float] = lambda build: 0.42,
    load_noise: float = 0.01,
    cpu: Callable[[str], float] = lambda build: 2.6 if build == "before" else 0.93,
    npu: Callable[[str], float] = lambda build: 85092.0,
    reps: int = 3,
    models: Sequence[str] = ("resnet8",),
    builds: Sequence[str] = ("before", "after"),
    seed: int = 0,
    edit: Callable[[str, str, int, dict[str, list[float]]], None] | None = None,
) -> list[Record]:
    """Interleaved units with cpu_time (10 per run), npu_cycles (10) and load_time (1 per run,
    ``load_noise``)."""
    rng = np.random.default_rng(seed)
    out = []
    for second, rep, model, build in interleaved(range(1, reps + 1), models, builds):
        samples = {
            "cpu_time": list(cpu(build) * (1 + 0.01 * rng.standard_normal(10))),
            "npu_cycles": [npu(build)] * 10,
            "load_time": [load(build) * (1 + load_noise * float(rng.standard_normal()))],
        }
        if edit is not None:
            edit(build, model, rep, samples)
        out.append(record(
            f"r{rep}-{build}-{model}", key=f"k-{rep}-{build}-{model}", build=build, model=model,
            repetition=rep,
            samples=samples,
            metric_units={"cpu_time": "ms", "npu_cycles": "cycles", "load_time": "ms"},
            outputs={"out-0.bin": "ab" * 32},
            started=f"2026-03-01T10:{second // 60:02d}:{second % 60:02d}Z",
        ))
    return out


def tripled() -> list[Record]:
    """The issue's case: load time 0.42 -> 1.27 ms while the primary metric improves."""
    return runs(load=lambda build: 0.42 if build == "before" else 1.27)


GATED = Compare(gates={"load_time": {"max_regression": "10%"}, "npu_cycles": {"max_regression": 0}})


# --- gates ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("low", "high", "allowed", "expected"),
    [
        (150.0, 260.0, 10.0, ("violated", "fail")),
        (-3.0, 7.5, 10.0, ("within", "pass")),
        (-3.0, 10.0, 10.0, ("within", "pass")),  # at the limit is allowed
        (4.0, 14.0, 10.0, ("inconclusive", "unverified")),
        (0.0, 0.0, 0.0, ("within", "pass")),
        (8.0, 8.0, 0.0, ("violated", "fail")),
        (None, None, 10.0, ("inconclusive", "unverified")),
    ],
)
def test_decide_gate(low: float | None, high: float | None, allowed: float,
                     expected: tuple[str, str]) -> None:
    assert decide_gate(low, high, allowed) == expected


def test_a_tripled_secondary_metric_violates_its_gate_and_fails_the_run() -> None:
    ungated = analyse(tripled(), Compare(), METRICS, FAST)
    # before gates: only the per-build table showed it, exit 0
    assert not expectations_violated(ungated)

    result = analyse(tripled(), GATED, METRICS, FAST)
    comparison = result.comparison
    # the headline is still good
    assert comparison is not None and comparison.models[0].verdict == "faster"
    gates = {g.metric: g for g in comparison.gates}
    load = gates["load_time"]
    assert (load.verdict, load.status, load.relative, load.allowed,
            load.unit) == ("violated", "fail", True, 10.0, "ms")
    assert load.change == pytest.approx(100 * (1.27 / 0.42 - 1), abs=10)
    assert load.ci_low is not None and load.ci_low > 10
    assert load.detail.startswith(f"{load.change:.0f}% higher, more than allowed (a rise of at "
                                  "most 10%; CI ")
    assert (gates["npu_cycles"].verdict, gates["npu_cycles"].change) == ("within", 0.0)
    # a counter one number in every sample: decided on the exact change, no CI of zero width
    assert gates["npu_cycles"].detail == ("unchanged, within what is allowed (no rise; every "
                                          "sample of each build the same number: decided "
                                          "without a CI)")
    assert (gates["npu_cycles"].ci_low, gates["npu_cycles"].ci_high) == (None, None)
    kinds = [(e.kind, e.name, e.status, e.limit) for e in comparison.expectations]
    assert (("gate", "load_time", "fail", "+10%") in kinds and
            ("gate", "npu_cycles", "pass", "0 cycles") in kinds)
    assert expectations_violated(result)
    verdict = run_verdict(result)
    assert verdict.status == "FAIL"
    assert verdict.reasons[0].startswith(f"gate load_time: {load.change:.0f}% higher, more than "
                                         "allowed (resnet8, a rise ")


def test_a_small_change_is_within_its_gate() -> None:
    result = analyse(runs(load=lambda b: 0.42 if b == "before" else 0.43, load_noise=0.002, reps=5),
                     GATED, METRICS, FAST)
    gate = result.comparison.gates[0]  # type: ignore[union-attr]
    assert (gate.metric, gate.verdict, gate.status) == ("load_time", "within", "pass")
    assert gate.ci_high is not None and gate.ci_high <= 10
    assert run_verdict(result).status == "PASS" and not expectations_violated(result)


def test_a_gate_the_ci_straddles_is_unverified_and_the_run_not_verified() -> None:
    result = analyse(runs(load=lambda b: 0.42 if b == "before" else 0.46, load_noise=0.08), GATED,
                     METRICS, FAST)
    gate = next(g for g in result.comparison.gates if g.metric == "load_time")  # type: ignore[union-attr]
    assert (gate.verdict, gate.status) == ("inconclusive", "unverified")
    assert "reaches past what is allowed (a rise of at most 10%)" in gate.detail
    assert not expectations_violated(result) and expectations_violated(result, strict=True)
    verdict = run_verdict(result)
    assert verdict.status == "NOT VERIFIED"
    assert any(r.startswith("gate load_time (resnet8) not verified:") for r in verdict.reasons)


def test_a_counter_that_moves_violates_a_zero_gate() -> None:
    result = analyse(runs(npu=lambda b: 85092.0 if b == "before" else 85100.0), GATED, METRICS,
                     FAST)
    gate = next(g for g in result.comparison.gates if g.metric == "npu_cycles")  # type: ignore[union-attr]
    shown = (gate.verdict, gate.change, gate.ci_low, gate.ci_high)
    assert shown == ("violated", 8.0, None, None)  # exact: no CI of zero width
    assert gate.detail == ("8.00 cycles higher, more than allowed (no rise; every sample of each "
                           "build the same number: decided without a CI)")


def test_an_absolute_gate_is_in_the_metrics_unit() -> None:
    spec = Compare(gates={"load_time": {"max_regression": 0.2, "unit": "ms"}})
    gate = analyse(tripled(), spec, METRICS, FAST).comparison.gates[0]  # type: ignore[union-attr]
    assert (gate.relative, gate.verdict) == (False, "violated")
    assert gate.change == pytest.approx(0.85, abs=0.05) and gate.detail.startswith("0.8")
    assert "ms higher, more than allowed (a rise of at most 0.2 ms;" in gate.detail

    other_unit = Compare(gates={"load_time": {"max_regression": 200, "unit": "us"}})
    gate = analyse(tripled(), other_unit, METRICS, FAST).comparison.gates[0]  # type: ignore[union-attr]
    assert (gate.verdict, gate.status) == ("inconclusive", "unverified")
    assert gate.detail == "the gate is in us but load_time is recorded in ms: not comparable"


def test_a_gate_without_values_is_not_measured() -> None:
    def no_load_after(build: str, model: str, rep: int, samples: dict[str, list[float]]) -> None:
        if build == "after":
            del samples["load_time"]

    result = analyse(runs(edit=no_load_after), GATED, METRICS, FAST)
    gate = next(g for g in result.comparison.gates if g.metric == "load_time")  # type: ignore[union-attr]
    assert (gate.verdict, gate.status, gate.detail) == (
        "not measured",
        "unverified",
        "no valid load_time samples for after",
    )
    assert run_verdict(result).status == "NOT VERIFIED"


def test_gates_are_judged_per_model() -> None:
    result = analyse(runs(models=("a", "b")), GATED, METRICS, FAST)
    assert [(g.model, g.metric) for g in result.comparison.gates] == [  # type: ignore[union-attr]
        ("a", "load_time"), ("a", "npu_cycles"), ("b", "load_time"), ("b", "npu_cycles")]


# --- identity with a tolerance --------------------------------------------------------------------


def aa_runs(seed: int = 0) -> list[Record]:
    """An A/A run: the same build twice; load time has 3% run-to-run noise."""
    return runs(cpu=lambda b: 2.6, load_noise=0.03, reps=5, seed=seed)


def test_an_aa_run_fails_an_exact_load_time_check_but_passes_with_a_tolerance() -> None:
    exact = analyse(aa_runs(), Compare(expect_identical=["outputs", "npu_cycles", "load_time"]),
                    METRICS, FAST)
    assert expectations_violated(exact)  # the issue: load-time noise fails an exact check
    spec = Compare(expect_identical=["outputs", "npu_cycles", {"metric": "load_time", "rel": 0.1}])
    result = analyse(aa_runs(), spec, METRICS, FAST)
    checks = {c.name: c for c in result.comparison.models[0].identity}  # type: ignore[union-attr]
    load = checks["load_time"]
    assert (load.status, load.tolerance) == ("pass", "±10%")
    assert "within ±10% (CI " in load.detail
    assert (load.values["before"][0].startswith("median 0.4") and
            load.values["before"][0].endswith("ms (n=5)"))
    # still exact
    assert checks["npu_cycles"].status == "pass" and checks["npu_cycles"].tolerance == ""
    assert not expectations_violated(result) and run_verdict(result).status == "PASS"
    labels = [e.limit for e in result.comparison.expectations if e.name == "load_time"]  # type: ignore[union-attr]
    assert labels == ["±10%"]


def test_a_tolerance_fails_beyond_it_and_is_unverified_when_straddled() -> None:
    absolute = Compare(expect_identical=[{"metric": "load_time", "abs": 0.1}])
    check = analyse(tripled(), absolute, METRICS, FAST).comparison.models[0].identity[0]  # type: ignore[union-attr]
    assert ((check.status, check.tolerance) == ("fail", "±0.1 ms") and
            " beyond ±0.1 ms (CI " in check.detail)
    # beyond the tolerance on the other side too
    faster = runs(load=lambda b: 0.42 if b == "before" else 0.21)
    check = analyse(faster, absolute, METRICS, FAST).comparison.models[0].identity[0]  # type: ignore[union-attr]
    assert check.status == "fail"
    noisy = runs(load=lambda b: 0.42 if b == "before" else 0.44, load_noise=0.1)
    loose = Compare(expect_identical=[{"metric": "load_time", "rel": "5%"}])
    check = analyse(noisy, loose, METRICS, FAST).comparison.models[0].identity[0]  # type: ignore[union-attr]
    assert check.status == "unverified" and "straddles ±5%" in check.detail


# --- values that are no measurement ---------------------------------------------------------------


def test_non_finite_and_implausible_values_are_left_out_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    def spoil(build: str, model: str, rep: int, samples: dict[str, list[float]]) -> None:
        if (build, rep) == ("after", 1):
            samples["cpu_time"][:3] = [math.nan, math.inf, -1.0]
            samples["npu_cycles"][0] = 2.0**64
            # a scenario's own metric may be negative; never NaN
            samples["custom"] = [-5.0, math.nan]

    records = runs(edit=spoil)
    frame = to_frame(records)
    assert np.isfinite(frame["value"]).all()
    assert (frame[frame["metric"] == "custom"]["value"] == -5.0).all()
    assert ("r1-after-resnet8: 3 cpu_time value(s) left out (NaN x1, inf x1, negative "
            "x1)" in caplog.text)
    result = analyse(records, Compare(), METRICS, FAST)
    assert [(d.unit_id, d.metric, d.count, d.of, d.kinds) for d in result.dropped] == [
        ("r1-after-resnet8", "cpu_time", 3, 10, "NaN x1, inf x1, negative x1"),
        ("r1-after-resnet8", "npu_cycles", 1, 10, ">= 2^63 x1"),
        ("r1-after-resnet8", "custom", 1, 2, "NaN x1"),
    ]
    model = result.comparison.models[0]  # type: ignore[union-attr]
    assert model.n_candidate == 27 and model.verdict == "faster"
    markdown = render_markdown(result)
    assert "Left out 3 stored cpu_time value(s) that are no measurement" in markdown
    assert "r1-after-resnet8 (NaN x1, inf x1, negative x1)" in markdown
    assert "nan" not in markdown.replace("NaN x1", "").lower()


def test_a_build_with_only_nan_is_not_measured_never_pass() -> None:
    def all_nan(build: str, model: str, rep: int, samples: dict[str, list[float]]) -> None:
        if build == "after":
            samples["cpu_time"] = [math.nan] * 10

    result = analyse(runs(edit=all_nan), Compare(), METRICS, FAST)
    model = result.comparison.models[0]  # type: ignore[union-attr]
    assert (model.verdict, model.saved_pct) == ("not measured", None)
    assert run_verdict(result).status == "NOT VERIFIED"
    assert run_verdict(result).reasons == ("cpu_time not measured for resnet8",)
    markdown = render_markdown(result)
    assert "nan%" not in markdown and "**Verdict: NOT VERIFIED**" in markdown
    summary = format_summary(result)
    assert "verdict: NOT VERIFIED" in summary and "nan" not in summary.replace("not measured", "")
    assert "warning: 30 stored value(s) of cpu_time left out" in summary


def test_formatting_never_shows_nan() -> None:
    for text in (fmt.percent(math.nan), fmt.percent_interval(math.nan, 1.0),
                 fmt.signed_percent(math.inf),
                 fmt.signed_percent_interval(1.0, math.nan), fmt.p_value(math.nan),
                 fmt.number(math.nan), fmt.count(math.nan), fmt.byte_count(math.inf)):
        assert text == "n/a"


# --- planned units --------------------------------------------------------------------------------


def planned_of(records: Sequence[Record]) -> dict[str, str]:
    return {r.unit_id: r.key for r in records}


def test_records_of_other_settings_are_left_out_and_missing_units_are_not_run() -> None:
    current = runs()
    old = [r.model_copy(update={"key": "old-" + r.key, "samples": {"cpu_time": [99.0] * 10}})
           for r in current]
    planned = planned_of(current)
    planned["r4-before-resnet8"] = "k-4"  # planned, never ran
    planned["r1-my-build-resnet8"] = "k-x"  # a build name with a dash
    stored = [*old, *current[:-1]]  # the last planned unit only has a record of other settings
    result = analyse(stored, Compare(), METRICS, FAST, planned=planned)
    assert result.excluded_records == len(old) and result.planned == len(planned)
    assert [(u.unit_id, u.build, u.model, u.repetition, u.other_keys) for u in result.not_run] == [
        (current[-1].unit_id, current[-1].build, "resnet8", 3, 1),
        ("r4-before-resnet8", "before", "resnet8", 4, 0),
        # no record says otherwise: the first dash
        ("r1-my-build-resnet8", "my", "build-resnet8", 1, 0),
    ]
    assert 99.0 not in set(result.frame["value"])  # the other settings' numbers are not mixed in
    assert len(result.units) == len(current) - 1
    verdict = run_verdict(result)
    assert (verdict.status == "NOT VERIFIED" and
            verdict.reasons[0].startswith("3 of 8 planned unit(s) did not run: "))

    known = analyse(stored, Compare(baseline="before", candidate="my-build"), METRICS, FAST,
                    planned=planned)
    # a known build name fits
    assert ("my-build", "resnet8") in [(u.build, u.model) for u in known.not_run]


def test_a_planned_unit_whose_latest_record_failed_is_a_failed_unit() -> None:
    current = runs()
    broken = current[1].model_copy(update={"status": "failed", "samples": {},
                                           "failure_class": "infrastructure",
                                           "failure": "boot timeout", "attempt": 2,
                                           "started": "2026-03-01T11:00:00Z"})
    stale_failure = current[2].model_copy(update={"key": "old", "status": "failed", "samples": {}})
    result = analyse([*current, broken, stale_failure], Compare(), METRICS, FAST,
                     planned=planned_of(current))
    # an ok record of the planned key wins; the stale failure is left out
    assert result.failed_units == ()
    result = analyse([*current[:1], broken, *current[2:], stale_failure], Compare(), METRICS, FAST,
                     planned=planned_of(current))
    assert ([(f.unit_id, f.failure_class) for f in result.failed_units]
            == [(current[1].unit_id, "infrastructure")])
    assert result.not_run == () and result.excluded_records == 1
    assert run_verdict(result).status == "FAIL"


def test_without_a_plan_everything_counts_as_before() -> None:
    records = runs()
    result = analyse([*records, records[0].model_copy(update={"key": "other"})], Compare(), METRICS,
                     FAST)
    assert (result.planned, result.not_run, result.excluded_records) == (None, (), 0)
    assert render_markdown(result).count("None: no recorded unit failed.") == 1


# --- the run's verdict and where everything shows -------------------------------------------------


def test_run_verdict_pass_lists_what_could_not_be_verified() -> None:
    result = analyse(runs(npu=lambda b: math.nan), Compare(), METRICS, FAST)  # no NPU values at all
    verdict = run_verdict(result)
    assert verdict.status == "PASS"
    assert verdict.reasons == ("identical npu_cycles (resnet8) not verified: no npu_cycles "
                               "recorded for before, after",)
    assert result.verdict == verdict


def test_run_verdict_without_anything_measured_is_not_verified() -> None:
    verdict = run_verdict(analyse([], Compare(), METRICS, FAST))
    assert verdict.status == "NOT VERIFIED" and "nothing was measured" in verdict.reasons


def full_result() -> AnalysisResult:
    """A gate violated, a planned unit not run, a failed unit and a dropped value: everything to
    show."""
    records = tripled()

    planned = planned_of(records)
    planned["r4-after-resnet8"] = "k-4"
    spoilt = [math.nan, *records[0].samples["cpu_time"][1:]]
    records[0] = records[0].model_copy(
        update={"samples": {**records[0].samples, "cpu_time": spoilt}}
    )
    records.append(record("r5-after-resnet8", status="failed", key="k-5", failure="exit 139",
                          build="after", repetition=5, started="2026-03-01T11:00:00Z"))
    planned["r5-after-resnet8"] = "k-5"
    return analyse(records, GATED, METRICS, FAST, planned=planned)


def test_markdown_shows_gates_verdict_and_not_run_units() -> None:
    markdown = render_markdown(full_result())
    lines = markdown.split("\n")
    assert lines[4] == "**Verdict: FAIL**"  # under the title and the context line
    assert any(line.startswith("- gate load_time: ")
               and "% higher, more than allowed (resnet8, a rise of at most 10%; CI " in line
               for line in lines)
    assert "- 1 unit(s) failed: r5-after-resnet8" in lines
    gates = markdown.split("## Gates")[1].split("##")[0]
    header = next(line for line in gates.split("\n") if line.startswith("| Model"))
    assert [c.strip() for c in header.split("|")[1:-1]] == [
        "Model", "Metric", "before -> after", "Change", "95% CI of change", "Allowed", "n",
        "Verdict"]
    assert "| violated" in gates and "≤ +10%" in gates and "≤ 0 cycles" in gates
    assert "| gate load_time (≤ +10%)" in markdown and "| gate npu_cycles (≤ 0 cycles)" in markdown
    failures = markdown.split("## Failures")[1].split("##")[0]
    assert "1 unit(s) failed (latest attempt); 1 of 8 planned unit(s) did not run." in failures
    row = next(line for line in failures.split("\n") if line.startswith("| r4-after-resnet8"))
    assert [c.strip() for c in row.split("|")[1:-1]] == [
        "r4-after-resnet8", "after", "resnet8", "-", "not run",
        "no record of this unit with its planned content key", "n/a"]
    assert "every unit ran" not in markdown
    assert "Left out 1 stored cpu_time value(s)" in markdown


def test_all_planned_units_ran_is_said_only_then() -> None:
    records = runs()
    markdown = render_markdown(analyse(records, Compare(), METRICS, FAST,
                                       planned=planned_of(records)))
    assert "None: all 6 planned units ran." in markdown
    assert ("**Verdict: PASS**: no expectation violated (3 of 3 verified); all 6 planned units "
            "ran." in markdown)


def test_csv_and_json_carry_gate_rows_verdict_and_not_run(tmp_path: Path) -> None:
    result = full_result()
    frame = pd.read_csv(pd.io.common.StringIO(render_csv(result)))
    assert frame["row"].tolist() == ["primary", "gate", "gate"]
    gate = frame[frame["metric"] == "load_time"].iloc[0]
    assert (gate["verdict"], gate["change_unit"], gate["max_regression"]) == ("violated", "%", 10)
    assert (gate["change_ci_low"] > 10 and
            gate["change"] == pytest.approx(-gate["saved_pct"], rel=1e-4))
    data = json.loads(render_json(result))
    assert (data["verdict"]["status"] == "FAIL" and
            data["verdict"]["reasons"][0].startswith("gate load_time: "))
    assert [g["verdict"] for g in data["comparison"]["gates"]] == ["violated", "within"]
    assert [u["unit_id"] for u in data["not_run"]] == ["r4-after-resnet8"]
    assert (data["planned_units"], data["excluded_records"]) == (8, 0)
    assert data["dropped_samples"][0]["kinds"] == "NaN x1" and data["expectations_violated"] is True


def test_terminal_summary_names_the_gate_and_the_verdict() -> None:
    summary = format_summary(full_result())
    lines = summary.split("\n")
    gate_row = next(line for line in lines if "load_time" in line and "VIOLATED" in line)
    assert "allowed ≤ +10%" in gate_row and "0.4" in gate_row
    assert any("npu_cycles" in line and "WITHIN" in line for line in lines)
    assert "expectations: FAIL (1 violated)" in lines and "verdict: FAIL" in lines
    assert any(line.startswith("  - gate load_time: ") and "higher" in line for line in lines)
    assert "units: 6 ok, 1 failed, 1 not run (of 8 planned)" in lines
    assert "  NOT RUN r4-after-resnet8: no record with its planned content key" in lines


def test_rebuilding_with_gates_and_a_plan_is_byte_identical(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "results" / "s")
    store.write_manifest({"scenario": {"name": "s"}, "started": "2026-03-01T10:00:00Z"})
    for item in tripled():
        store.append(item)
    planned = {**planned_of(tripled()), "r4-after-resnet8": "k-4"}

    def regenerate(out: Path) -> dict[str, bytes]:
        result = analyse(store.records(), GATED, METRICS, FAST, planned=planned)
        paths = render_report(result, out, outputs=["markdown", "csv", "json"],
                              context=ReportContext.from_manifest(store.read_manifest()))
        return {name: path.read_bytes() for name, path in paths.items()}

    assert regenerate(tmp_path / "one") == regenerate(tmp_path / "two")


def test_stored_samples_follow_the_scrapers_rule_for_their_unit() -> None:
    """A custom metric in a time or counter unit gets the same plausibility rule scraping applies
    (one rule, ``scenario.metrics.check_sample``): an older record's negative latency or two-day
    iteration is left out."""
    from fvp_harness.report.stats.frames import to_frame
    from tests.helpers import record

    stored = record("r1-after-m", samples={"latency": [-1.0, 2.0, 2.0e8], "delta": [-1.0]},
                    metric_units={"latency": "ms", "delta": ""})
    frame = to_frame([stored])
    assert sorted(frame[frame["metric"] == "latency"]["value"]) == [2.0]
    assert list(frame[frame["metric"] == "delta"]["value"]) == [-1.0], (
        "a unitless difference may be negative")
