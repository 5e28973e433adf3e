"""Comparing stored runs: which pairs of runs are refused and why, the comparisons of labelled
builds, a baseline taken from a stored run with its drift check, and how runs are named
(``store.locate``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fvp_harness.errors import ConfigurationError
from fvp_harness.report.stats.result import run_verdict
from fvp_harness.report.stored.stored_compare import (
    DRIFT_CHECK,
    RERUN_SUFFIX,
    analyse_with_stored_baseline,
    comparable,
    compare_runs,
    load_run,
)
from fvp_harness.scenario.model import Scenario
from fvp_harness.store.folder import ResultStore, StoredRun
from fvp_harness.store.locate import find_run, parse_run_spec, pinned_spec
from tests.report.stored_runs import SCENARIO, manifest_for, write_run

BASE = {("before", "m1"): 2.0, ("after", "m1"): 1.0, ("before", "m2"): 3.0, ("after", "m2"): 1.5}


def _manifest(**changes: object) -> dict:
    data = manifest_for(SCENARIO, run_id="r1", commit="a" * 40, branch="main",
                        started="2026-03-01T10:00:00Z", keys={"r0-before-m1": "k"})
    for dotted, value in changes.items():
        target = data
        parts = dotted.split("__")
        for part in parts[:-1]:
            target = target[part]
        target[parts[-1]] = value
    return data


# --- refusal rules --------------------------------------------------------------------------------


def test_identical_setups_are_comparable_without_warnings():
    check = comparable(_manifest(), _manifest(run__id="r2"), models=["m1", "m2"], builds=["after"])
    assert check.problems == () and check.warnings == ()


@pytest.mark.parametrize(("change", "words"), [
    ({"platform": "corstone300"}, "platform: 'corstone1000-a320' (A) -> 'corstone300' (B)"),
    ({"fvp__binary": "/opt/FVP"}, "fvp.binary"),
    ({"fvp__params": {"host.ethosu.num_macs": 128}}, "fvp.params (model parameters)"),
    ({"parsers_version": 3}, "parsers version"),
    ({"artifacts__models.m1.file": "other"}, "m1: model file bytes differ"),
    ({"options__fresh_boot_per_unit": True}, "--fresh-boot-per-unit"),
])
def test_a_different_platform_fvp_model_or_setting_is_refused(change, words):
    check = comparable(_manifest(), _manifest(**change), models=["m1", "m2"])
    assert any(words in problem for problem in check.problems), check.problems
    with pytest.raises(ConfigurationError, match="cannot be compared") as info:
        check.raise_if_refused("compare A B")
    assert words in str(info.value)


def test_run_settings_that_change_what_is_measured_are_refused():
    b = _manifest()
    b["scenario"]["resolved"]["run"]["warmup"] = 5
    b["scenario"]["resolved"]["run"]["command"] = "{runner} --other"
    problems = comparable(_manifest(), b, models=["m1"]).problems
    assert any(p.startswith("run.warmup: 1 (A) -> 5 (B)") for p in problems), problems
    assert any(p.startswith("run.command") for p in problems)


def test_a_refusal_names_the_field_that_differs_with_both_values():
    """Issue 38, finding 9: the two dicts were printed cut at 80 characters, hiding the field
    that differed. Now each differing field is named by its path, with both values."""
    params = {f"mps4_board.subsystem.param_{i:02d}": i for i in range(12)}
    a = _manifest(fvp__params={**params, "mps4_board.subsystem.ethosu.num_macs": 256})
    b = _manifest(fvp__params={**params, "mps4_board.subsystem.ethosu.num_macs": 128})
    b["scenario"]["resolved"]["run"]["command"] = "{runner} " + "--flag " * 20 + "--last=2"
    a["scenario"]["resolved"]["run"]["command"] = "{runner} " + "--flag " * 20 + "--last=1"
    problems = comparable(a, b, models=["m1"]).problems
    named = "mps4_board.subsystem.ethosu.num_macs: 256 (A) -> 128 (B)"
    assert f"fvp.params (model parameters): {named}" in problems, problems
    command = next(p for p in problems if p.startswith("run.command"))
    assert "--last=1' (A)" in command and "--last=2' (B)" in command, command
    b["fvp"]["params"]["mps4_board.subsystem.extra"] = 1
    problems = comparable(a, b, models=["m1"]).problems
    problem = next(p for p in problems if p.startswith("fvp.params"))
    assert "mps4_board.subsystem.extra: (absent) (A) -> 1 (B)" in problem, problem


def test_a_real_fvp_reporting_another_version_is_refused():
    a = _manifest(fvp__binary="/opt/FVP",
                  fvp__identity={"binary": "/opt/FVP", "size": 1, "mtime_ns": 1})
    b = _manifest(fvp__binary="/opt/FVP",
                  fvp__identity={"binary": "/opt/FVP", "size": 1, "mtime_ns": 2})
    # a re-installed identical binary: same platform
    assert comparable(a, b, models=["m1"]).problems == ()
    b["fvp"]["version"] = "11.31.1"
    assert any("FVP identity" in p for p in comparable(a, b, models=["m1"]).problems)


def test_model_bytes_of_a_model_not_compared_do_not_matter():
    b = _manifest(**{"artifacts__models.m2.file": "other"})
    assert comparable(_manifest(), b, models=["m1"]).problems == ()
    assert comparable(_manifest(), b, models=["m1", "m2"]).problems != ()


def test_soft_differences_are_warnings_only():
    b = _manifest(harness_version="1.0", host__hostname="ci-2", fvp__sim={"runner_jitter": "0.02"})
    b["scenario"]["resolved"]["run"]["iterations"] = 30
    check = comparable(_manifest(), b, models=["m1", "m2"])
    assert check.problems == ()
    text = "\n".join(check.warnings)
    for words in ("harness version: '0.9' (A) -> '1.0' (B)", "host: 'ci-1' (A) -> 'ci-2' (B)",
                  "run.iterations", "simulator knobs"):
        assert words in text


def test_a_profile_field_only_a_newer_harness_writes_is_no_difference():
    b = _manifest()
    b["profile"]["kind"] = "linux"  # added by a newer version
    assert comparable(_manifest(), b, models=["m1"]).problems == ()
    b["profile"]["console"] = "host_terminal_1"
    assert any("profile" in p for p in comparable(_manifest(), b, models=["m1"]).problems)


# --- comparing two stored runs --------------------------------------------------------------------


def test_compare_runs_compares_every_common_build_with_the_in_run_statistics(tmp_path):
    write_run(tmp_path / "demo", BASE, run_id="run-a", commit="a" * 40, seed=1)
    slower = dict(BASE) | {("after", "m1"): 1.3}  # +30% for after/m1 only
    write_run(tmp_path / "demo", slower, run_id="run-b", commit="b" * 40, seed=2)
    runs = ResultStore(tmp_path / "demo").stored_runs()
    done = compare_runs(load_run(runs[0]), load_run(runs[1]))
    assert done.labels == ("aaaaaaa", "bbbbbbb")
    pairs = [(c.baseline, c.candidate) for c in done.result.comparisons]
    assert pairs == [("before@aaaaaaa", "before@bbbbbbb"), ("after@aaaaaaa", "after@bbbbbbb")]
    before, after = done.result.comparisons
    assert {m.model: m.verdict for m in before.models} == {"m1": "no change", "m2": "no change"}
    assert {m.model: m.verdict for m in after.models} == {"m1": "slower", "m2": "no change"}
    m1 = next(m for m in after.models if m.model == "m1")
    assert m1.saved_pct is not None and abs(m1.saved_pct + 30) < 1.5  # 1.0 -> 1.3 ms: saved -30%
    assert (m1.ci_low is not None and m1.ci_high is not None and
            m1.ci_low <= m1.saved_pct <= m1.ci_high)
    gate = next(g for g in after.gates if g.model == "m1")
    # the scenario's 10% gate
    assert gate.verdict == "violated" and gate.ci_low is not None and gate.ci_low > 10
    verdict = run_verdict(done.result)
    assert verdict.status == "FAIL" and any("gate cpu_time" in reason for reason in verdict.reasons)
    assert "run run-a" in done.context.builds["after@aaaaaaa"]


def test_compare_runs_refuses_runs_that_measured_other_model_bytes(tmp_path):
    write_run(tmp_path / "demo", BASE, run_id="run-a")
    write_run(tmp_path / "demo", BASE, run_id="run-b",
              changes={("artifacts", "models.m1.file"): "rebuilt"})
    runs = ResultStore(tmp_path / "demo").stored_runs()
    with pytest.raises(ConfigurationError, match=r"m1: model file bytes differ"):
        compare_runs(load_run(runs[0]), load_run(runs[1]))


def test_compare_runs_with_nothing_in_common_says_what_each_has(tmp_path):
    write_run(tmp_path / "x", {("before", "m1"): 2.0}, run_id="run-a")
    write_run(tmp_path / "y", {("after", "m2"): 1.0}, run_id="run-b")
    with pytest.raises(ConfigurationError, match="nothing to compare") as info:
        compare_runs(load_run(find_run(str(tmp_path / "x"))),
                     load_run(find_run(str(tmp_path / "y"))))
    assert "builds before" in str(info.value) and "builds after" in str(info.value)


def test_each_metric_asked_for_gets_its_own_comparison(tmp_path):
    write_run(tmp_path / "demo", BASE, run_id="run-a")
    write_run(tmp_path / "demo", BASE, run_id="run-b")
    runs = ResultStore(tmp_path / "demo").stored_runs()
    done = compare_runs(load_run(runs[0]), load_run(runs[1]), metrics=["cpu_time", "npu_cycles"],
                        builds=["after"])
    assert [(c.candidate, c.primary) for c in done.result.comparisons] == [
        ("after@B", "cpu_time"),
        ("after@B", "npu_cycles"),
    ]
    with pytest.raises(ConfigurationError,
                       match="no build named 'nope'; the builds both runs measured: after, before"):
        compare_runs(load_run(runs[0]), load_run(runs[1]), builds=["nope"])


# --- a baseline taken from a stored run -----------------------------------------------------------


def _baseline_run(tmp_path: Path, rerun_median: float) -> tuple[object, object]:
    folder = tmp_path / "demo"
    write_run(folder, BASE, run_id="stored", commit="c" * 40, seed=3)
    scenario_data = dict(SCENARIO) | {"compare": dict(SCENARIO["compare"])
                                      | {"baseline_from": "@stored"}}
    current = write_run(folder,
                        {("before", "m1"): rerun_median, ("after", "m1"): 1.0,
                         ("after", "m2"): 1.5},
                        run_id="now", seed=4, reps=1, scenario=scenario_data)
    scenario = Scenario.model_validate(scenario_data)
    manifest = current.read_manifest()
    assert manifest is not None
    planned = manifest["plan"]["keys"]
    return analyse_with_stored_baseline(current.records(), scenario, manifest, planned, folder)


def test_a_steady_platform_keeps_the_verdicts_and_says_so(tmp_path):
    result, context = _baseline_run(tmp_path, 2.0)
    comparison = result.comparisons[0]
    assert (comparison.baseline, comparison.candidate) == ("before", "after")
    assert {m.model: m.verdict for m in comparison.models} == {"m1": "faster", "m2": "faster"}
    drift = [e for e in comparison.expectations if e.name == DRIFT_CHECK]
    assert [(e.model, e.status) for e in drift] == [("m1", "pass")]
    # the re-run units are shown as their own build
    assert "before" + RERUN_SUFFIX in set(result.summary["build"])
    assert context.builds["before"].startswith("stored run stored")
    assert "steady" in context.builds["before" + RERUN_SUFFIX]
    assert run_verdict(result).status == "PASS"


def test_a_platform_that_moved_makes_every_verdict_inconclusive(tmp_path):
    # the re-run baseline measures 20% more than the stored one
    result, context = _baseline_run(tmp_path, 2.4)
    comparison = result.comparisons[0]
    assert {m.verdict for m in comparison.models} == {"inconclusive"}
    assert all("platform moved" in m.reason for m in comparison.models)
    assert {g.verdict for g in comparison.gates} <= {"inconclusive", "not measured"}
    verdict = run_verdict(result)
    assert verdict.status == "NOT VERIFIED"
    assert any("drift check" in reason and "moved" in reason for reason in verdict.reasons)
    assert "MOVED" in context.builds["before" + RERUN_SUFFIX]


def test_a_stored_run_without_the_baseline_build_is_refused(tmp_path):
    folder = tmp_path / "demo"
    write_run(folder, {("after", "m1"): 1.0}, run_id="stored")
    scenario = Scenario.model_validate(
        dict(SCENARIO) | {"compare": dict(SCENARIO["compare"]) | {"baseline_from": "@stored"}}
    )
    with pytest.raises(ConfigurationError, match="no record of build 'before'"):
        analyse_with_stored_baseline([], scenario, {"run": {"id": "now"}}, None, folder)


# --- naming runs ----------------------------------------------------------------------------------


def _history(folder: Path) -> None:
    write_run(folder, BASE, run_id="20260301-100000-0001", commit="1" * 40, branch="main",
              started="2026-03-01T10:00:00Z")
    write_run(folder, BASE, run_id="20260302-100000-0002", commit="2" * 40, branch="feature",
              started="2026-03-02T10:00:00Z")
    write_run(folder, BASE, run_id="20260303-100000-0003", commit="3" * 40, branch="main",
              started="2026-03-03T10:00:00Z")


def test_runs_are_found_by_folder_id_commit_branch_and_steps_back(tmp_path):
    folder = tmp_path / "results" / "demo"
    _history(folder)
    base = tmp_path / "results"
    # a scenario folder: its newest run
    assert find_run(str(folder)).run_id == "20260303-100000-0003"
    assert find_run(str(folder / "runs" / "20260301-100000-0001")).run_id == "20260301-100000-0001"
    assert find_run("demo@2222", results_base=base).run_id == "20260302-100000-0002"
    assert find_run("demo@main", results_base=base).run_id == "20260303-100000-0003"
    assert find_run("demo@main#-2", results_base=base).run_id == "20260301-100000-0001"
    assert find_run(f"{folder}@latest#-1").run_id == "20260302-100000-0002"
    assert find_run("@feature", scenario_folder=folder).run_id == "20260302-100000-0002"
    scenario_file = tmp_path / "demo.yaml"
    scenario_file.write_text("name: demo\n")
    assert find_run(f"{scenario_file}@20260301-100000-0001", results_base=base).commit == "1" * 40


def test_a_pinned_run_is_found_again_after_it_was_archived(tmp_path):
    folder = tmp_path / "demo"
    write_run(folder, BASE, run_id="first")
    pin = pinned_spec(find_run(str(folder)), folder)
    write_run(folder, BASE, run_id="second")  # moves "first" into runs/first/
    found = find_run(pin)
    assert found.run_id == "first" and found.path == folder / "runs" / "first"


def test_an_unknown_ref_lists_the_runs_there_are(tmp_path):
    folder = tmp_path / "demo"
    _history(folder)
    with pytest.raises(ConfigurationError) as info:
        find_run(f"{folder}@release-9")
    text = str(info.value)
    assert ("no stored run" in text and
            "run 20260302-100000-0002 (commit 2222222, branch feature" in text)
    with pytest.raises(ConfigurationError, match="goes past the oldest"):
        find_run(f"{folder}@latest#-7")
    with pytest.raises(ConfigurationError, match="needs a scenario"):
        find_run("@main")
    with pytest.raises(ConfigurationError, match="nothing after '@'"):
        parse_run_spec("demo@")


def test_a_drift_check_with_no_re_run_unit_measured_leaves_the_run_not_verified(tmp_path):
    folder = tmp_path / "demo"
    write_run(folder, BASE, run_id="stored", seed=3)
    scenario_data = dict(SCENARIO) | {"compare": dict(SCENARIO["compare"])
                                      | {"baseline_from": "@stored"}}
    current = write_run(folder, {("after", "m1"): 1.0, ("after", "m2"): 1.5}, run_id="now", seed=4,
                        scenario=scenario_data)
    manifest = current.read_manifest()
    assert manifest is not None
    result, _context = analyse_with_stored_baseline(
        current.records(),
        Scenario.model_validate(scenario_data),
        manifest,
        manifest["plan"]["keys"],
        folder,
    )
    verdict = run_verdict(result)
    assert verdict.status == "NOT VERIFIED"
    assert any("no before unit was re-run" in reason for reason in verdict.reasons), verdict.reasons


# --- run.until's spared units ---------------------------------------------------------------------


def _adaptive_runs(tmp_path: Path, spared: bool) -> tuple[ResultStore, ResultStore]:
    """Two stored runs that measured 2 rounds of a plan of 3; the third round is recorded as spared,
    or not."""
    rounds = {f"r2-{build}-{model}": f"key-r2-{build}-{model}" for build, model in BASE}
    stores = []
    for index, run_id in enumerate(("run-a", "run-b")):
        store = write_run(tmp_path / f"{run_id}", BASE, run_id=run_id, seed=index, reps=2)
        manifest = store.read_manifest() or {}
        manifest["plan"]["keys"].update(rounds)
        manifest["plan"]["units"] = len(manifest["plan"]["keys"])
        if spared:
            manifest["plan"]["spared"] = sorted(rounds)
        store.write_manifest(manifest)
        stores.append(store)
    return stores[0], stores[1]


@pytest.mark.parametrize("spared", [True, False])
def test_units_the_stopping_rule_spared_are_not_run_only_when_not_recorded_as_spared(
        tmp_path: Path, spared: bool) -> None:
    a, b = _adaptive_runs(tmp_path, spared)
    result = compare_runs(load_run(StoredRun.of(a.root, current=True)),
                          load_run(StoredRun.of(b.root, current=True)))
    if spared:
        assert result.result.not_run == () and run_verdict(result.result).status == "PASS"
    else:  # a unit that really did not run still counts as not run
        assert len(result.result.not_run) == 8
    listed = StoredRun.of(a.root, current=True)
    assert (listed.units, listed.spared) == ((8, 4) if spared else (12, 0))
