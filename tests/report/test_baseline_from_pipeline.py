"""``compare.baseline_from`` through the run pipeline on fake targets (milliseconds, no simulator):
the plan keeps the candidate and the drift-check units, the stored run is checked before the first
unit and pinned in the manifest, ``report DIR`` rebuilds the same report, and a platform that moved
leaves the run NOT VERIFIED."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fvp_harness.errors import ConfigurationError
from fvp_harness.run.pipeline import RunOptions, RunOutcome, run_scenario
from fvp_harness.run.plan import build_plan, drift_check_units
from fvp_harness.run.reporting import rebuild_report
from fvp_harness.scenario import load_scenario
from fvp_harness.targets.base import CommandResult
from tests.fakes import FakeFleet, runner_output
from tests.helpers import join_early_boots

SCENARIO = """
name: fake
fvp: {binary: sim}
builds:
  before: {runner: bin/runner-before}
  after: {runner: bin/runner-after}
models:
  m1: {file: m1.model}
  m2: {file: m2.model}
  m3: {file: m3.model}
run:
  command: "{runner} --model_path={model} --num_executions={iterations} --unit={unit}
    --output_file={output}"
  warmup: 1
  iterations: 4
  repetitions: 2
metrics: [{name: cpu_time, required: true}, npu_cycles]
compare: {baseline: before, candidate: after, min_effect: 5}
report: {outputs: [markdown, csv, json]}
"""


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    (tmp_path / "bin").mkdir()
    for name in ("bin/runner-before", "bin/runner-after", "m1.model", "m2.model", "m3.model"):
        (tmp_path / name).write_text(name)
    path = tmp_path / "fake.yaml"
    path.write_text(SCENARIO)
    return path


def _run(path: Path, fleet: FakeFleet, out: Path, *overrides: str, resume: bool = False,
         only_builds: tuple[str, ...] = ()) -> RunOutcome:
    loaded = load_scenario(path, list(overrides))
    options = RunOptions(output_dir=out, results_base=out.parent, resume=resume,
                         only_builds=only_builds)
    return run_scenario(loaded, options, factory=fleet.factory, deploy=fleet.deploy)


def test_the_plan_keeps_the_candidate_and_the_drift_check_units(scenario):
    plain = build_plan(load_scenario(scenario))
    assert len(plain.units) == 12
    loaded = load_scenario(scenario, ["compare.baseline_from=x", "compare.drift_check={units: 4}"])
    assert drift_check_units(loaded.scenario) == [(0, "m1"), (0, "m2"), (0, "m3"), (1, "m1")]
    plan = build_plan(loaded)
    assert sorted(u.id for u in plan.units if u.build == "before") == [
        "r0-before-m1",
        "r0-before-m2",
        "r0-before-m3",
        "r1-before-m1",
    ]
    assert len([u for u in plan.units if u.build == "after"]) == 6
    kept = {u.id: u.key for u in plain.units}
    # the same units, the same keys: --resume and make agree
    assert all(kept[u.id] == u.key for u in plan.units)
    off = build_plan(load_scenario(scenario,
                                   ["compare.baseline_from=x", "compare.drift_check.units=0"]))
    assert [u.build for u in off.units] == ["after"] * 6
    assert load_scenario(
        scenario, ["compare.drift_check.max_shift=2.5%"]).scenario.compare.drift_check.max_shift \
        == 2.5


def test_a_run_with_a_stored_baseline_measures_only_the_candidate_and_pins_the_run(
    scenario, tmp_path
):
    stored = _run(scenario, FakeFleet(), tmp_path / "results" / "main")
    assert stored.exit_code == 0
    stored_id = json.loads((tmp_path / "results/main/manifest.json").read_text())["run"]["id"]
    fleet = FakeFleet()
    out = tmp_path / "results" / "pr"
    outcome = _run(scenario, fleet, out, f"compare.baseline_from={tmp_path / 'results' / 'main'}")
    ran = sorted(unit for _instance, unit in fleet.ran)
    assert [unit for unit in ran if "-before-" in unit] == ["r0-before-m1", "r0-before-m2"]
    assert len([unit for unit in ran if "-after-" in unit]) == 6
    assert outcome.exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    pinned = manifest["scenario"]["resolved"]["compare"]["baseline_from"]
    assert pinned == f"{tmp_path / 'results' / 'main'}@{stored_id}"
    report = json.loads((out / "report.json").read_text())
    assert report["verdict"]["status"] == "PASS"
    comparison = report["comparisons"][0] if report.get("comparisons") else report["comparison"]
    assert {m["model"]: m["verdict"] for m in comparison["models"]} == {
        "m1": "faster",
        "m2": "faster",
        "m3": "faster",
    }
    # stored only
    assert ({m["model"]: m["n_baseline"] for m in comparison["models"]}
            == {"m1": 8, "m2": 8, "m3": 8})
    drift = [e for e in comparison["expectations"] if e["name"] == "drift check"]
    assert [(e["model"], e["status"]) for e in drift] == [("m1", "pass"), ("m2", "pass")]
    text = (out / "report.md").read_text()
    assert (f"**before** (stored run {stored_id}" in text and
            "**before (re-run)** (drift check: m1 steady" in text)
    before = (out / "report.json").read_bytes()
    rebuild_report(out)  # `report DIR` finds the pinned run again and writes the same bytes
    assert (out / "report.json").read_bytes() == before


def test_a_platform_that_moved_since_the_stored_run_is_not_verified(scenario, tmp_path):
    _run(scenario, FakeFleet(), tmp_path / "results" / "main")

    # the whole platform got 20% slower
    def slower(unit: str, build: str, calls: int) -> CommandResult | None:
        cpu = {"before": 2.4, "after": 1.2}[build]
        return CommandResult("runner", 0, runner_output(build, 5, cpu=cpu), duration_s=0.01)

    outcome = _run(scenario, FakeFleet(slower), tmp_path / "results" / "pr",
                   "compare.baseline_from=main@latest", # this fake runner writes no output files
                   "compare.expect_identical=[npu_cycles]")
    assert outcome.exit_code == 0  # NOT VERIFIED is no failure of the candidate
    report = json.loads((tmp_path / "results/pr/report.json").read_text())
    assert report["verdict"]["status"] == "NOT VERIFIED"
    assert any("the platform moved" in reason for reason in report["verdict"]["reasons"])
    comparison = report["comparisons"][0] if report.get("comparisons") else report["comparison"]
    assert {m["verdict"] for m in comparison["models"]} == {"inconclusive"}


def test_a_stored_run_of_other_model_bytes_is_refused_before_any_unit_runs(scenario, tmp_path):
    _run(scenario, FakeFleet(), tmp_path / "results" / "main")
    (tmp_path / "m2.model").write_text("recompiled")
    fleet = FakeFleet()
    with pytest.raises(ConfigurationError) as info:
        _run(scenario, fleet, tmp_path / "results" / "pr", "compare.baseline_from=main")
    assert "m2: model file bytes differ" in str(info.value) and "(stored) ->" in str(info.value)
    assert fleet.ran == [], "refused before any unit runs"
    join_early_boots()
    assert all(target.closed for target in fleet.targets), (
        "an instance booted while the artifacts built is closed")


def test_a_stored_baseline_that_is_this_run_or_lacks_the_baseline_is_refused(scenario, tmp_path):
    # '@REF' is the scenario's own results folder (results/fake), whatever -o says
    _run(scenario, FakeFleet(), tmp_path / "results" / "fake")
    # --resume continues the newest run itself
    with pytest.raises(ConfigurationError, match="is this very run"):
        _run(scenario, FakeFleet(), tmp_path / "results" / "fake", "compare.baseline_from=@latest",
             resume=True)
    _run(scenario, FakeFleet(), tmp_path / "results" / "after-only", only_builds=("after",))
    fleet = FakeFleet()
    with pytest.raises(ConfigurationError, match="has no ok record of build 'before'"):
        _run(scenario, fleet, tmp_path / "results" / "pr", "compare.baseline_from=after-only")
    assert fleet.ran == []
