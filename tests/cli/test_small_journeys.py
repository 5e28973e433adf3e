"""The small mistakes a new user meets first (issue 29, item 7), each through the real command line:
``report`` given the scenario file, ``prune``'s help and its negative age, ``make -n`` on a broken
scenario, ``sim info`` on a file that is no artifact, the example test file without options, and the
top-level folders a clone must keep."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO, skip_or_fail_in_ci
from tests.report.stored_runs import SCENARIO, write_run

BASE = {("before", "m1"): 2.0, ("after", "m1"): 1.0}
TWO_MODELS = {("before", "m1"): 2.0, ("after", "m1"): 1.0, ("before", "m2"): 4.0,
              ("after", "m2"): 2.0}


def test_report_given_a_scenario_file_reports_its_results_folder(tmp_path: Path) -> None:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    missing = run_cli(tmp_path, "report", "scenarios/smoke.yaml")
    assert missing.returncode == 2, missing.stderr
    assert ("is a scenario file; its results folder results/smoke does not exist "
            "yet" in missing.stderr)
    assert "fvp-harness run scenarios/smoke.yaml" in missing.stderr
    write_run(tmp_path / "results" / "smoke", BASE, run_id="20260301-100000-aaaa")
    done = run_cli(tmp_path, "report", "scenarios/smoke.yaml", "-q")
    assert done.returncode == 0, done.stderr + done.stdout
    assert (tmp_path / "results" / "smoke" / "report.md").is_file()


def test_runs_and_prune_take_the_scenario_file_or_its_stem_as_report_does(tmp_path: Path) -> None:
    """``report scenarios/smoke.yaml`` reads results/smoke; ``runs`` and ``prune`` said
    "scenarios/smoke.yaml: no such results folder" for the same name, and the stem ``smoke`` (which
    history and compare take) as well."""
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    folder = tmp_path / "results" / "smoke"
    write_run(folder, BASE, run_id="20260301-100000-aaaa")
    write_run(folder, BASE, run_id="20260302-100000-bbbb")
    for name in ("scenarios/smoke.yaml", "smoke"):
        listed = run_cli(tmp_path, "runs", name)
        assert listed.returncode == 0, listed.stderr
        assert ("20260301-100000-aaaa" in listed.stdout and
                "* 20260302-100000-bbbb" in listed.stdout), listed.stdout
    dry = run_cli(tmp_path, "prune", "smoke", "--keep", "0", "-n")
    assert dry.returncode == 0 and "would delete 20260301-100000-aaaa" in dry.stdout, (
        dry.stdout + dry.stderr)
    pruned = run_cli(tmp_path, "prune", "scenarios/smoke.yaml", "--keep", "0")
    assert pruned.returncode == 0, pruned.stderr
    assert (not (folder / "runs" / "20260301-100000-aaaa").exists() and
            (folder / "manifest.json").is_file())
    unrun = run_cli(tmp_path, "runs", "scenarios/driver_reuse.yaml")
    assert (unrun.returncode == 2 and
            "its results folder results/driver_reuse does not exist yet" in unrun.stderr)


def test_prune_help_names_only_options_that_exist_and_refuses_a_negative_age(
        tmp_path: Path) -> None:
    helped = run_cli(tmp_path, "prune", "--help")
    assert helped.returncode == 0
    assert "--newer-than" not in helped.stdout and "--older-than" in helped.stdout
    folder = tmp_path / "results" / "demo"
    write_run(folder, BASE, run_id="20260301-100000-aaaa")
    write_run(folder, BASE, run_id="20260302-100000-bbbb")
    refused = run_cli(tmp_path, "prune", str(folder), "--older-than", "-1")
    assert (refused.returncode == 2 and
            "--older-than -1: must be 0 or more days" in refused.stderr), refused.stderr
    assert (folder / "runs" / "20260301-100000-aaaa").is_dir(), "nothing deleted"


def test_make_dry_run_lists_a_broken_scenario_s_problems(tmp_path: Path) -> None:
    text = (REPO / "scenarios" / "smoke.yaml").read_text(encoding="utf-8")
    text = text.replace("iterations:", "iteratons:", 1).replace("repetitions:", "repetitons:", 1)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "broken.yaml").write_text(text, encoding="utf-8")
    done = run_cli(tmp_path, "make", "-n", "scenarios/")
    assert done.returncode == 2, done.stderr + done.stdout
    assert "2 problems" in done.stdout
    assert ("did you mean 'iterations'?" in done.stdout and
            "did you mean 'repetitions'?" in done.stdout), done.stdout


def test_sim_info_on_a_file_that_is_no_artifact_is_bad_input(tmp_path: Path) -> None:
    stranger = tmp_path / "passwd"
    stranger.write_text("root:x:0:0:root:/root:/bin/sh\n")
    done = run_cli(tmp_path, "sim", "info", str(stranger))
    assert done.returncode == 2, done.stderr
    assert "is neither a simulator model file nor a runner artifact" in done.stderr
    assert run_cli(tmp_path, "sim", "info", str(tmp_path / "nosuch")).returncode == 2


@pytest.mark.slow
def test_the_example_test_file_without_options_skips_with_the_reason() -> None:
    """docs/pytest-plugin.md: without a configured FVP the example's tests skip; they used to error
    on "fixture 'fvp_target' not found" because nothing asked for the plugin."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p",
                           "no:cacheprovider",
                           "examples/test_fvp_example.py"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 skipped" in done.stdout and "no FVP scenario configured" in done.stdout, done.stdout
    assert "not found" not in done.stdout


def test_the_tracked_tree_keeps_the_top_level_entries_the_layout_promises() -> None:
    """docs/results-format.md and the README promise these at the top of a clone; a commit that
    deletes one (as one deleted results/README.md, the only tracked file of results/) fails here."""
    if not (REPO / ".git").exists():
        skip_or_fail_in_ci("not a git checkout (run from a clone)",
                           "CI=true but the project is not a git checkout: the tracked tree cannot "
                           "be checked")
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files"], capture_output=True, text=True,
                            check=True, timeout=30).stdout.splitlines()
    top = {line.split("/", 1)[0] for line in listed}
    missing = {"pyproject.toml", "fvp_harness", "scenarios", "tests", "results", "README.md"} - top
    assert not missing, f"the tracked tree lost {sorted(missing)}"
    assert "results/README.md" in listed


def test_history_says_where_the_runs_of_a_series_measured_something_else(tmp_path: Path) -> None:
    """A model file edited between runs, then another scenario run into the same folder (``run
    -o``): ``compare`` refuses such pairs, but ``history`` put them in one series without a word,
    and called the edit's step a regression of the code. Now each such run gets a note (terminal,
    history.md, history.json) naming what changed, and a step found there says it may be that
    change's doing."""
    folder = tmp_path / "results" / "demo"
    for index in range(6):
        values = dict(TWO_MODELS) | ({("after", "m1"): 1.2} if index >= 2 else {})
        changes = {("artifacts", "models.m1.file"): "sha-m1-edited"} if index >= 2 else {}
        other = dict(SCENARIO, name="other") if index == 5 else None
        write_run(folder, values, run_id=f"2026030{index + 1}-100000-000{index}",
                  commit=f"{index + 1}" * 40,
                  started=f"2026-03-0{index + 1}T10:00:00Z", seed=index, changes=changes,
                  scenario=other)
    done = run_cli(tmp_path, "history", "demo")
    assert done.returncode == 1, done.stderr + done.stdout  # the step itself is still reported
    notes = [line for line in done.stdout.splitlines() if line.startswith("note: ")]
    assert len(notes) == 2, done.stdout
    assert notes[0].startswith(
        "note: run 20260303-100000-0002 measured something else than the run before it "
                               "(20260302-100000-0001): m1: model file bytes differ"), notes[0]
    assert "the step of m1 at this run may be that change's doing" in notes[0]
    assert ("run 20260306-100000-0005" in notes[1] and
            "scenario 'demo' (previous run) -> 'other'" in notes[1])
    markdown = (folder / "history" / "history.md").read_text(encoding="utf-8")
    assert "## Notes" in markdown and "m1: model file bytes differ" in markdown
    data = json.loads((folder / "history" / "history.json").read_text(encoding="utf-8"))
    assert len([note for note in data["notes"] if "measured something else" in note]) == 2


def test_doctor_quiet_shows_only_what_needs_attention(tmp_path: Path) -> None:
    """``doctor -q`` printed the same twelve lines as ``doctor`` (header, every start and every ok);
    now it prints the checks that fail or warn, with their fix, and the last line."""
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    full = run_cli(tmp_path, "doctor", "scenarios/smoke.yaml")
    assert full.returncode == 0, full.stdout + full.stderr
    assert full.stdout.startswith("doctor scenarios/smoke.yaml") and "  ok    binary" in full.stdout
    quiet = run_cli(tmp_path, "doctor", "scenarios/smoke.yaml", "-q")
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    lines = quiet.stdout.splitlines()
    assert lines[-1].startswith("all checks passed"), quiet.stdout
    assert not [line for line in lines[:-1] if not line.lstrip().startswith(("warn", "fix:"))], (
        quiet.stdout)
    failing = run_cli(tmp_path, "doctor", "scenarios/smoke.yaml", "-q", "--fvp",
                      str(tmp_path / "no-such-FVP"))
    assert failing.returncode == 2, failing.stdout + failing.stderr
    assert "  FAIL  binary" in failing.stdout and "fix: " in failing.stdout, failing.stdout
    assert "  ok  " not in failing.stdout and not failing.stdout.startswith("doctor ")
    assert failing.stdout.splitlines()[-1].startswith("some checks failed (exit 2): binary")
