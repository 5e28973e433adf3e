"""``run.until`` end to end on fake instances: rounds, skipped units, the report's note,
``--resume``."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from fvp_harness.errors import ConfigurationError
from fvp_harness.run.pipeline import RunOptions, run_scenario
from fvp_harness.run.reporting import rebuild_report
from fvp_harness.scenario import load_scenario
from fvp_harness.store.folder import ResultStore
from fvp_harness.targets.base import CommandResult
from tests.fakes import FakeFleet, runner_output

SCENARIO = """
name: adaptive
fvp: {binary: sim}
builds:
  before: {runner: bin/runner-before, id: id-before}
  after: {runner: bin/runner-after, id: id-after}
models:
  quiet: {file: quiet.model}
  noisy: {file: noisy.model}
run:
  command: "{runner} --model_path={model} --num_executions={iterations} --unit={unit}
    --output_file={output}"
  warmup: 1
  iterations: 5
  until: {ci_width: 2%, min_repetitions: 2, max_repetitions: 5}
metrics: [{name: cpu_time, required: true}]
compare: {baseline: before, candidate: after, min_effect: 5, expect_identical: [outputs]}
report: {outputs: [markdown, json]}
"""


def _noisy(unit: str, build: str, calls: int) -> CommandResult | None:
    """The noisy model's units print CPU times around 1 ms, ±30 % from process to process, for both
    builds: its CI stays wide and straddles ±5 %, so only the budget stops it."""
    if not unit.endswith("-noisy"):
        return None
    level = 1.0 + 0.3 * random.Random(unit).uniform(-1, 1)
    return CommandResult("runner", 0, runner_output(build, 6, cpu=level), duration_s=0.01)


def _scenario(tmp_path: Path, text: str = SCENARIO) -> Path:
    (tmp_path / "bin").mkdir(exist_ok=True)
    for name in ("bin/runner-before", "bin/runner-after", "quiet.model", "noisy.model"):
        (tmp_path / name).write_text(name)
    path = tmp_path / "adaptive.yaml"
    path.write_text(text)
    return path


def test_models_stop_independently_and_the_report_says_why(tmp_path: Path) -> None:
    fleet = FakeFleet(behaviour=_noisy)
    path = _scenario(tmp_path)
    out = tmp_path / "out"
    outcome = run_scenario(load_scenario(path), RunOptions(output_dir=out), factory=fleet.factory,
                           deploy=fleet.deploy)
    ran = [unit for _, unit in fleet.ran]
    assert sorted(u for u in ran if u.endswith("-quiet")) == sorted(
        f"r{rep}-{build}-quiet" for rep in (0, 1) for build in ("before", "after")), (
        "quiet stops after 2 rounds")
    assert len([u for u in ran if u.endswith("-noisy")]) == 10, "noisy runs all 5 rounds"
    assert fleet.boots == ["s0"], "rounds do not cost boots"
    notes = {note.model: note for note in outcome.analysis.sampling}
    assert (notes["quiet"].repetitions, notes["quiet"].reason) == (2, "ci_width")
    assert (notes["noisy"].repetitions, notes["noisy"].reason) == (5, "max_repetitions")
    assert outcome.analysis.not_run == (), "units the rule skipped are not 'did not run'"
    assert outcome.analysis.planned == 14
    assert outcome.exit_code == 0
    assert outcome.analysis.verdict.status == "PASS"
    markdown = (out / "report.md").read_text()
    assert "## Repetitions needed (run.until)" in markdown and "max_repetitions reached" in markdown
    report = json.loads((out / "report.json").read_text())
    assert [n["model"] for n in report["sampling"]] == ["quiet", "noisy"]
    before = {name: (out / name).read_bytes() for name in ("report.md", "report.json")}
    rebuild_report(out)
    assert {name: (out / name).read_bytes() for name in before} == before, (
        "the replay decides as the run did")
    resumed = run_scenario(load_scenario(path), RunOptions(output_dir=out, resume=True),
                           factory=fleet.factory, deploy=fleet.deploy)
    assert len(fleet.ran) == len(ran), "--resume measures nothing the rule skipped"
    assert resumed.exit_code == 0 and resumed.analysis.not_run == ()
    assert len(ResultStore(out).records()) == 14


def test_until_needs_interleaved_rounds_and_excludes_repetitions(tmp_path: Path) -> None:
    blocked = _scenario(tmp_path,
                        SCENARIO.replace("  warmup: 1\n", "  warmup: 1\n  order: blocked\n"))
    with pytest.raises(ConfigurationError, match="order: interleaved") as caught:
        load_scenario(blocked)
    assert "adaptive.yaml" in str(caught.value)
    with pytest.raises(ConfigurationError,
                       match=r"run.repetitions.*run.until chooses the repetitions"):
        load_scenario(blocked, ["run.order=interleaved", "run.repetitions=3"])
    fixed = load_scenario(blocked, ["run.order=interleaved", "run.until=null", "run.repetitions=3"])
    assert fixed.scenario.run.planned_repetitions == 3


def test_make_skips_the_rounds_the_rule_does_not_need_and_a_second_make_has_nothing_to_do(
        tmp_path: Path) -> None:
    # late: the batch engine only for this test
    from fvp_harness.batch.engine import MakeOptions, make
    from fvp_harness.run.lanes import LocalExecutor

    fleet = FakeFleet(behaviour=_noisy)
    path = _scenario(tmp_path)
    results = tmp_path / "results"
    first = make([path], MakeOptions(jobs=1, results_base=results),
                 executor=LocalExecutor(1, opener=fleet.opener))
    assert first.exit_code == 0 and first.units_not_run == 0
    ran = [unit for _, unit in fleet.ran]
    assert (len([u for u in ran if u.endswith("-quiet")]) == 4 and
            len([u for u in ran if u.endswith("-noisy")]) == 10)
    again = make([path], MakeOptions(jobs=1, results_base=results),
                 executor=LocalExecutor(1, opener=fleet.opener))
    assert again.nothing_to_do and len(fleet.ran) == len(ran), "skipped rounds are not stale"
    report = json.loads((results / "adaptive" / "report.json").read_text())
    assert ([(n["model"], n["repetitions"]) for n in report["sampling"]]
            == [("quiet", 2), ("noisy", 5)])
