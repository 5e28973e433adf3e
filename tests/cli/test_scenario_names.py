"""``run`` and ``make`` take the scenario names ``report`` and ``history`` take (issue 38, item 9):
a scenario file stem means the file its results folder (``results/<stem>``) was run from, and a
name that is neither is refused with the closest scenario file, by every verb alike. Through the
real command line; nothing boots."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO
from tests.report.stored_runs import write_run

VALUES = {("before", "ds_cnn"): 2.0, ("after", "ds_cnn"): 1.0}


def _clone(tmp_path: Path) -> None:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    smoke = str(tmp_path / "scenarios" / "smoke.yaml")
    write_run(
        tmp_path / "results" / "smoke",
        VALUES,
        run_id="20260301-100000-aaaa",
        changes={"scenario.file": smoke},
    )
    driver = str(
        tmp_path / "scenarios" / "driver_reuse.yaml"
    )  # run -o results/pr-42 of another scenario
    write_run(
        tmp_path / "results" / "pr-42",
        VALUES,
        run_id="20260301-100000-bbbb",
        changes={"scenario.file": driver},
    )


def test_run_and_make_take_the_stem_report_and_history_take(tmp_path: Path) -> None:
    _clone(tmp_path)
    assert (
        run_cli(tmp_path, "runs", "smoke").returncode == 0
    )  # what report, runs and history accepted already
    # accepted: the scenario loads (the unknown build is refused after it, before anything boots)
    ran = run_cli(tmp_path, "run", "smoke", "--only-build", "nosuch", timeout=120)
    assert ran.returncode == 2 and "--only-build" in ran.stderr and "nosuch" in ran.stderr, (
        ran.stderr
    )
    assert "scenario file not found" not in ran.stderr
    made = run_cli(tmp_path, "make", "-n", "smoke", timeout=120)
    assert made.returncode == 0, made.stdout + made.stderr
    assert "smoke/r0-after-ds_cnn" in made.stdout, made.stdout
    assert run_cli(tmp_path, "validate", "smoke").returncode == 0
    assert not (tmp_path / "results" / "smoke" / "logs").exists()


@pytest.mark.slow  # seven CLI processes, each importing the pipeline before it refuses
def test_a_name_that_is_no_scenario_is_refused_with_the_closest_by_every_verb(
    tmp_path: Path,
) -> None:
    _clone(tmp_path)
    for verb in (["run"], ["make", "-n"], ["validate"]):
        done = run_cli(tmp_path, *verb, "smok", timeout=120)
        assert done.returncode == 2, done.stderr
        assert "did you mean 'scenarios/smoke.yaml'?" in done.stderr, (verb, done.stderr)
    report = run_cli(tmp_path, "report", "smok")
    assert report.returncode == 2 and "did you mean 'results/smoke'?" in report.stderr, (
        report.stderr
    )
    typo = run_cli(tmp_path, "run", "scenarios/smoke.yml", timeout=120)
    assert typo.returncode == 2 and "did you mean 'scenarios/smoke.yaml'?" in typo.stderr, (
        typo.stderr
    )
    other = run_cli(
        tmp_path, "run", "pr-42", timeout=120
    )  # results/pr-42 holds runs of another scenario file
    assert other.returncode == 2, other.stderr
    assert "results/pr-42 holds runs of scenarios/driver_reuse.yaml" in other.stderr, other.stderr
