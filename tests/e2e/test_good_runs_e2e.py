"""Only good runs are baselines, on the simulator through the real command line (issue 38,
findings 3 and 5):

- docs/ci.md's pull-request pattern in its YAML form (``compare.baseline_from: "@main"`` in the
  scenario, the run written with ``-o results/pr-42``) takes main's run from the scenario's own
  results folder, passing over a newer run of main in which every unit failed, and says so;
- a run killed with SIGKILL mid-way (its manifest stays ``running``) is ``interrupted`` in
  ``runs``, and ``report`` says why it exits 3.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.cli import assert_no_models_left, run_cli
from tests.helpers import REPO, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.sim]


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=60,
    )


def _clone(root: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is needed to record the branch of each run")
    shutil.copytree(REPO / "scenarios", root / "scenarios")
    (root / ".gitignore").write_text("/results/\n/.artifacts/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "main")
    return root


def _doc_compare_lines() -> list[str]:
    """The lines docs/ci.md's "A pull request measures only its candidate" adds to ``compare``."""
    page = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    block = page.split("## A pull request measures only its candidate", 1)[1].split("```yaml\n", 1)[
        1
    ]
    lines = block.split("```", 1)[0].splitlines(keepends=True)
    added = [
        line
        for line in lines
        if line.startswith("  ") and not line.startswith(("  baseline:", "  candidate:"))
    ]
    assert any('baseline_from: "@main"' in line for line in added), added
    return added


def _run_ids(folder: Path) -> list[str]:
    folders = (
        [*sorted((folder / "runs").iterdir()), folder] if (folder / "runs").is_dir() else [folder]
    )
    return [json.loads((path / "manifest.json").read_text())["run"]["id"] for path in folders]


@pytest.mark.timeout(900)
def test_the_yaml_pull_request_pattern_takes_main_s_good_run_and_skips_a_failed_one(
    tmp_path: Path,
) -> None:
    root = _clone(tmp_path)
    good = run_cli(root, "run", "scenarios/smoke.yaml", "-q")
    assert good.returncode == 0, good.stdout + good.stderr
    # a run of main in which every unit failed (not the build the scenario names): "complete"
    failed = run_cli(
        root,
        "run",
        "scenarios/smoke.yaml",
        "-q",
        "--set",
        "builds.before.id=not-this-build",
        "--set",
        "builds.after.id=not-this-build",
    )
    assert failed.returncode == 1, failed.stdout + failed.stderr
    folder = root / "results" / "smoke"
    good_id, failed_id = _run_ids(folder)
    assert json.loads((folder / "manifest.json").read_text())["status"] == "complete"
    listed = run_cli(root, "runs", "smoke")
    assert [line.split()[-4] for line in listed.stdout.splitlines()[1:]] == [
        "complete",
        "failed",
    ], listed.stdout
    # the pull request: docs/ci.md's compare lines as the page shows them, written to -o "$PR"
    scenario = root / "scenarios" / "smoke.yaml"
    text = scenario.read_text(encoding="utf-8")
    scenario.write_text(
        text.replace("  min_effect: 5\n", "  min_effect: 5\n" + "".join(_doc_compare_lines())),
        encoding="utf-8",
    )
    _git(root, "checkout", "-q", "-b", "pr")
    _git(root, "commit", "-q", "-am", "pull request")
    pr = run_cli(root, "run", "scenarios/smoke.yaml", "-o", "results/pr-42", "--junit", "junit.xml")
    assert pr.returncode == 0, pr.stdout + pr.stderr
    assert f"baseline before: skipped run {failed_id}" in pr.stderr, pr.stderr
    assert "no ok record of build 'before' (failed" in pr.stderr
    assert f"baseline before: from stored run {good_id}" in pr.stderr, pr.stderr
    manifest = json.loads((root / "results" / "pr-42" / "manifest.json").read_text())
    assert (
        manifest["scenario"]["resolved"]["compare"]["baseline_from"]
        == f"{folder.resolve()}@{good_id}"
    )
    units = [
        json.loads(line)
        for line in (root / "results" / "pr-42" / "records.jsonl").read_text().splitlines()
    ]
    drift = yaml.safe_load("".join(_doc_compare_lines()))["drift_check"]["units"]
    assert (
        sorted({unit["build"] for unit in units}) == ["after", "before"] and len(units) == 2 + drift
    )


@pytest.mark.timeout(600)
def test_a_killed_run_is_interrupted_in_runs_and_report_says_why_it_exits_3(tmp_path: Path) -> None:
    root = _clone(tmp_path)
    folder = root / "results" / "smoke"
    records = folder / "records.jsonl"
    harness = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fvp_harness",
            "run",
            "scenarios/smoke.yaml",
            "-q",
            "--set",
            "run.repetitions=6",
        ],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=os.environ | {"PYTHONPATH": str(REPO)},
    )
    try:
        wait_until(lambda: records.is_file() and records.read_text().count("\n") >= 1, timeout=240)
    finally:
        os.kill(harness.pid, signal.SIGKILL)
        harness.wait(timeout=60)
        assert_no_models_left(harness.pid, grace=30)
    assert json.loads((folder / "manifest.json").read_text())["status"] == "running"
    listed = run_cli(root, "runs", "smoke")
    assert listed.returncode == 0 and listed.stdout.splitlines()[1].split()[-4] == "interrupted", (
        listed.stdout
    )
    report = run_cli(root, "report", "-q", "smoke")
    assert report.returncode == 3, report.stdout + report.stderr
    assert (
        "exit 3 (infrastructure): the run ended interrupted (its manifest still says running "
        "and no process writes it: killed) with" in report.stderr
    ), report.stderr
