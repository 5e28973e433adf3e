"""``history``: step detection over the series (a 20 % step flagged at the run it starts, in that
model only; noise never flagged), the table, CSV, JSON and charts, and its JUnit suite."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fvp_harness.report.stored.history import (
    chart_name,
    detect_steps,
    history_from_runs,
    history_suite,
    load_history,
    render_history,
    step_penalty,
)
from tests.report.stored_runs import write_run

BASE = {("after", "m1"): 1.0, ("after", "m2"): 2.0, ("before", "m1"): 2.0, ("before", "m2"): 4.0}


def test_a_single_step_is_found_where_it_starts():
    values = np.array([1.00, 1.01, 1.20, 1.19, 1.21])
    assert detect_steps(values, np.full(5, 0.01)) == [2]


def test_two_steps_are_both_found():
    values = np.array([1.0] * 6 + [1.3] * 6 + [1.1] * 6) + 0.005 * np.sin(np.arange(18))
    assert detect_steps(values, np.full(18, 0.01)) == [6, 12]


@pytest.mark.parametrize("seed", range(20))
def test_noise_alone_is_not_split_into_steps(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    values = 1.0 + 0.01 * rng.standard_normal(n)
    assert detect_steps(values, np.full(n, 0.01)) == []


def test_the_penalty_grows_with_the_series():
    assert step_penalty(100) > step_penalty(10) > 0


def _five_runs(tmp_path, *, jump: float = 1.2, model: str = "m1", spread: float = 0.01) -> list:
    folder = tmp_path / "demo"
    for index in range(5):
        values = dict(BASE)
        if index >= 2:  # the third run introduced the regression, and it stays
            values[("after", model)] *= jump
        write_run(folder, values, run_id=f"2026030{index + 1}-100000-000{index}",
                  commit=f"{index + 1}" * 40,
                  started=f"2026-03-0{index + 1}T10:00:00Z", seed=index, spread=spread)
    return load_history(folder)


def test_a_20_percent_regression_at_run_3_of_5_is_flagged_in_that_model_only(tmp_path):
    history = history_from_runs(_five_runs(tmp_path))
    assert (history.build, history.metric, history.threshold) == ("after", "cpu_time", 5.0)
    flagged = [(step.model, step.index, step.kind)
               for step in history.steps if step.kind != "shift"]
    assert flagged == [("m1", 2, "regression")]
    step = history.steps[0]
    assert step.run_id == "20260303-100000-0002" and step.in_effect
    assert step.change_pct == pytest.approx(20.0, abs=2.0)
    assert history.in_effect == [step]
    # one level: no step in m2
    assert history.levels["m2"][0] == pytest.approx(history.levels["m2"][4])


def test_noise_between_runs_is_not_a_regression(tmp_path):
    history = history_from_runs(_five_runs(tmp_path, jump=1.0, spread=0.02))
    assert [step for step in history.steps if step.kind != "shift"] == []
    assert history.in_effect == []


def test_an_improvement_is_reported_but_is_no_regression(tmp_path):
    history = history_from_runs(_five_runs(tmp_path, jump=0.8, model="m2"))
    assert ([(s.model, s.index, s.kind) for s in history.steps if s.kind != "shift"]
            == [("m2", 2, "improvement")])
    assert history.in_effect == []


def test_a_regression_that_was_undone_is_no_longer_in_effect(tmp_path):
    folder = tmp_path / "demo"
    for index, factor in enumerate([1.0, 1.0, 1.2, 1.2, 1.0, 1.0]):
        values = dict(BASE) | {("after", "m1"): factor}
        write_run(folder, values, run_id=f"run-{index}", started=f"2026-03-0{index + 1}T10:00:00Z",
                  seed=index)
    history = history_from_runs(load_history(folder))
    kinds = [(s.model, s.index, s.kind, s.in_effect) for s in history.steps if s.kind != "shift"]
    assert kinds == [("m1", 2, "regression", False), ("m1", 4, "improvement", False)]


@pytest.mark.parametrize(("sizes", "expected"), [
    # one page more from run 3 on
    ([8_000_000] * 2 + [8_004_096] * 3, [("m1", 2, "regression", True)]),
    ([8_000_000] * 5, []),
    ([8_000_000] * 3 + [8_004_096] * 3 + [8_000_000] * 3,
     [("m1", 3, "regression", False), ("m1", 6, "improvement", False)]),
])
def test_a_memory_step_is_a_regression_however_small(tmp_path, sizes, expected):
    """A size is exact: a step of one 4 KiB page in 8 MB (0.05 %, far below the scenario's 5 %
    min_effect) is a regression, in effect until the size comes back; the time series of the same
    runs has no step."""
    folder = tmp_path / "demo"
    for index, size in enumerate(sizes):
        write_run(folder, BASE, run_id=f"run-{index}", started=f"2026-03-0{index + 1}T10:00:00Z",
                  seed=index, sizes={("after", "m1"): size, ("after", "m2"): 9_000_000})
    history = history_from_runs(load_history(folder), metric="peak_rss")
    assert (history.metric, history.unit, history.threshold) == ("peak_rss", "bytes", 0.0)
    assert [(s.model, s.index, s.kind, s.in_effect) for s in history.steps] == expected
    assert not [s for s in history_from_runs(load_history(folder)).steps if s.kind != "shift"]


def test_history_files_say_which_run_and_model(tmp_path):
    history = history_from_runs(_five_runs(tmp_path))
    out = tmp_path / "out"
    written = render_history(history, out)
    markdown = written["markdown"].read_text(encoding="utf-8")
    assert "| 20260303-100000-0002 | 3333333 (main)" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| 20260303-100000-0002"))
    assert "▲ +" in row and markdown.count("▲") == 2  # the legend line and that one cell
    assert "- **m1**: +" in markdown and "still in effect" in markdown
    rows = written["csv"].read_text(encoding="utf-8").splitlines()
    assert rows[0].startswith("run_id,commit,branch,started,host,status,model,build,metric")
    assert len(rows) == 1 + 5 * 2
    flagged = [row for row in rows[1:] if ",regression," in row]
    assert (len(flagged) == 1 and flagged[0].startswith("20260303-100000-0002,") and
            ",m1," in flagged[0])
    data = json.loads(written["json"].read_text(encoding="utf-8"))
    assert data["regressions_in_effect"][0]["model"] == "m1"
    for model in ("m1", "m2"):
        assert (out / chart_name(model)).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # byte-stable: the same runs give the same files
    again = render_history(history, tmp_path / "again")
    for name, path in written.items():
        assert path.read_bytes() == again[name].read_bytes(), name


def test_history_suite_fails_the_model_with_a_regression_in_effect(tmp_path):
    suite = history_suite(history_from_runs(_five_runs(tmp_path)))
    outcomes = {case.name.split(":")[0]: case for case in suite.cases}
    assert (outcomes["m1"].outcome == "failure" and
            "at run 20260303-100000-0002" in outcomes["m1"].message)
    assert outcomes["m2"].outcome == "passed"


def test_a_run_without_the_build_leaves_a_gap(tmp_path):
    folder = tmp_path / "demo"
    write_run(folder, BASE, run_id="run-0", started="2026-03-01T10:00:00Z")
    write_run(folder, {("before", "m1"): 2.0}, run_id="run-1", started="2026-03-02T10:00:00Z")
    write_run(folder, BASE, run_id="run-2", started="2026-03-03T10:00:00Z")
    history = history_from_runs(load_history(folder))
    assert history.points["m1"][1].median is None
    assert any("run-1" in note for note in history.notes)


def test_the_simulator_knob_that_makes_one_build_slower_for_one_model():
    from fvp_harness.sim.workloads.executor_runner.faults import slowdown as _slowdown
    from fvp_harness.sim.workloads.executor_runner.flags import UsageError

    knob = {"runner_slowdown": "reuse:resnet8=1.2"}
    assert _slowdown(knob, "resnet8", "reuse") == 1.2
    assert (_slowdown(knob, "resnet8", "per-inference") == 1.0 and
            _slowdown(knob, "ds_cnn", "reuse") == 1.0)
    assert _slowdown({"runner_slowdown": "1.1,ds_cnn=1.3"}, "ds_cnn", "reuse") == 1.3
    assert _slowdown({"runner_slowdown": "1.1,ds_cnn=1.3"}, "resnet8", "per-inference") == 1.1
    assert _slowdown({}, "resnet8", "reuse") == 1.0
    with pytest.raises(UsageError, match="not a number"):
        _slowdown({"runner_slowdown": "resnet8=fast"}, "resnet8", "reuse")
