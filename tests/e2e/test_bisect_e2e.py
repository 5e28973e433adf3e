"""``fvp-harness bisect`` as a user runs it: the CLI as a subprocess, the runner built from commits
of a real git repository (examples/bisect/make_repo.sh: 16 commits, the step at commit 11, commit 7
does not build, commit 9 is noisy), the embedded simulator measuring. Each test prints builds, units
and wall time against measuring every commit (the issue's closing numbers)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO

pytestmark = pytest.mark.slow

STEP, BROKEN, NOISY = 11, 7, 9


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=30
    ).stdout.strip()


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, dict[str, str], list[str]]:
    """A folder laid out as the docs say (scenarios/bisect/bisect_sim.yaml, the repository under
    .artifacts), a private build cache, and the repository's commits oldest first."""
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "bisect").mkdir()
    shutil.copy(REPO / "scenarios" / "bisect" / "bisect_sim.yaml",
                tmp_path / "scenarios" / "bisect")
    repo = tmp_path / ".artifacts" / "bisect_sim" / "repo"
    subprocess.run(
        ["sh", str(REPO / "examples" / "bisect" / "make_repo.sh"), str(repo)],
        check=True,
        timeout=60,
        capture_output=True,
    )
    env = dict(os.environ, FVP_HARNESS_BUILD_CACHE=str(tmp_path / "cache"))
    commits = _git(repo, "rev-list", "--reverse", "main").split()
    assert len(commits) == 16
    return tmp_path, env, commits


def _result(folder: Path) -> dict:
    return json.loads((folder / "results" / "bisect_sim" / "bisect" / "bisect.json").read_text())


def test_bisect_finds_the_planted_commit_skipping_a_broken_one(project):
    folder, env, commits = project
    repo_before = _git(folder / ".artifacts" / "bisect_sim" / "repo", "status", "--porcelain")
    began = time.monotonic()
    done = run_cli(
        folder,
        "bisect",
        "scenarios/bisect/bisect_sim.yaml",
        "--good",
        "v1",
        "--bad",
        "main",
        env=env,
        timeout=600,
    )
    wall = time.monotonic() - began
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"first bad commit: {commits[STEP]}" in done.stdout
    assert "ethos-u: re-create the driver per inference" in done.stdout
    assert "Dev 11 <dev11@example.com>" in done.stdout
    data = _result(folder)
    assert data["first_bad"] == commits[STEP] and data["last_good"] == commits[STEP - 1]
    rows = {row["commit"]: row for row in data["measured"]}
    assert (
        rows[commits[BROKEN]]["verdict"] == "skipped"
    )  # tried (the first middle), skipped, a neighbour taken
    middle_builds = data["builds"] - 2  # the two ends are built too
    assert middle_builds <= 5, data
    noisy = rows[commits[NOISY]]["levels"]["ds_cnn"]
    quiet = rows[commits[STEP - 1]]["levels"]["ds_cnn"]
    assert noisy["high"] - noisy["low"] > 5 * (
        quiet["high"] - quiet["low"]
    )  # it was measured, noisy
    assert rows[commits[NOISY]]["verdict"] == "good"
    assert (folder / "results" / "bisect_sim" / "bisect" / "compare" / "report.md").is_file()
    assert (
        _git(folder / ".artifacts" / "bisect_sim" / "repo", "status", "--porcelain") == repo_before
    )
    assert _git(folder / ".artifacts" / "bisect_sim" / "repo", "worktree", "list").count("\n") == 0
    every = 16 * 2  # measuring every commit: 16 builds (one fails), 2 units each at least
    print(
        f"\nbisect: {data['builds']} builds ({middle_builds} in the middle), "
        f"{data['units']} units, "
        f"{wall:.1f} s wall; measuring every commit: 16 builds, >= {every - 2} units"
    )

    again = run_cli(
        folder,
        "bisect",
        "scenarios/bisect/bisect_sim.yaml",
        "--good",
        "v1",
        "--bad",
        "main",
        env=env,
        timeout=600,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "0 build(s), 0 unit(s) run" in again.stdout  # everything was stored and cached


def test_an_interrupted_bisect_resumes_without_rebuilding_or_remeasuring(project):
    folder, env, commits = project
    out = folder / "results" / "bisect_sim" / "bisect"

    def measured_middle() -> (
        bool
    ):  # the first middle commit's units are stored: interrupt during the next
        return (out / commits[8][:12] / "records.jsonl").is_file()

    first = run_cli(
        folder,
        "bisect",
        "scenarios/bisect/bisect_sim.yaml",
        "--good",
        "v1",
        "--bad",
        "main",
        env=env,
        timeout=600,
        when=measured_middle,
        then=lambda proc: proc.send_signal(signal.SIGINT),
    )
    assert first.returncode == 130, first.stdout + first.stderr
    assert not (out / "bisect.json").exists()
    kept = {path.parent.name: path.read_text() for path in out.glob("*/records.jsonl")}
    assert commits[0][:12] in kept and commits[-1][:12] in kept
    cached = sorted(path.name for path in (folder / "cache" / "builds").iterdir())

    second = run_cli(
        folder,
        "bisect",
        "scenarios/bisect/bisect_sim.yaml",
        "--good",
        "v1",
        "--bad",
        "main",
        env=env,
        timeout=600,
    )
    assert second.returncode == 0, second.stdout + second.stderr
    data = _result(folder)
    assert data["first_bad"] == commits[STEP]
    lines = [line for line in second.stdout.splitlines() if line.startswith("  ")]
    for commit, text in kept.items():  # what the first run stored was not measured again
        row = next(line for line in lines if line.strip().startswith(commit))
        assert ", built" not in row, row
        stored = [json.loads(line)["key"] for line in text.splitlines()]
        now = [
            json.loads(line)["key"]
            for line in (out / commit / "records.jsonl").read_text().splitlines()
        ]
        assert now[: len(stored)] == stored
    # every build the first run made is kept; the second made only the ones the first did not reach
    assert data["builds"] == 7 - len(cached), (data, cached)


def test_same_level_ends_cannot_decide_and_bad_refs_are_refused_before_any_build(project):
    folder, env, commits = project
    same = run_cli(
        folder,
        "bisect",
        "scenarios/bisect/bisect_sim.yaml",
        "--good",
        "v1",
        "--bad",
        commits[4],
        env=env,
        timeout=600,
    )
    assert same.returncode == 1, same.stdout + same.stderr
    assert "cannot decide: the two ends are at the same level" in same.stdout
    shutil.rmtree(folder / "cache")
    bad = run_cli(
        folder, "bisect", "scenarios/bisect/bisect_sim.yaml", "--good", "v2", "--bad", "mian",
        env=env
    )
    assert bad.returncode == 2
    assert "no commit named 'v2'" in bad.stderr
    typo = run_cli(
        folder, "bisect", "scenarios/bisect/bisect_sim.yaml", "--good", "v1", "--bad", "mian",
        env=env
    )
    assert typo.returncode == 2 and "did you mean 'main'?" in typo.stderr
    assert not (folder / "cache").exists()  # nothing was built


def test_run_builds_the_runner_at_the_scenarios_ref_and_records_it(project):
    folder, env, commits = project
    done = run_cli(folder, "run", "scenarios/bisect/bisect_sim.yaml", "-q", env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = json.loads((folder / "results" / "bisect_sim" / "manifest.json").read_text())
    source = manifest["builds"]["runner"]["source"]
    repo = folder / ".artifacts" / "bisect_sim" / "repo"
    assert source["ref"] == "main" and source["commit"] == commits[-1]
    assert source["tree"] == _git(repo, "rev-parse", "main^{tree}")
    record = json.loads(
        (folder / ".artifacts" / "bisect_sim" / ".executor_runner.build").read_text()
    )
    assert (
        record["source"]["commit"] == commits[-1]
    )  # the copy is the harness's: a build record beside it
    again = run_cli(
        folder,
        "run",
        "scenarios/bisect/bisect_sim.yaml",
        "-q",
        "--set",
        f"builds.runner.source.commit={commits[-2]}",
        env=env,
        timeout=300,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    manifest = json.loads((folder / "results" / "bisect_sim" / "manifest.json").read_text())
    assert manifest["builds"]["runner"]["source"]["commit"] == commits[-2]
    assert manifest["builds"]["runner"]["source"]["ref"] is None
    assert len(list((folder / "cache" / "builds").iterdir())) == 2


def test_history_prints_the_bisect_command_for_a_step_between_two_commits(project):
    folder, env, commits = project
    for commit in (
        commits[0],
        commits[9],
        commits[10],
        commits[-1],
    ):  # nightly runs: the step after commit 10
        done = run_cli(
            folder,
            "run",
            "scenarios/bisect/bisect_sim.yaml",
            "-q",
            "--set",
            f"builds.runner.source.commit={commit}",
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    history = run_cli(folder, "history", "bisect_sim", "--html", "site", env=env, timeout=300)
    assert history.returncode == 1, history.stdout + history.stderr  # the regression is in effect
    command = (
        f"fvp-harness bisect scenarios/bisect/bisect_sim.yaml --build runner --metric cpu_time "
        f"--good {commits[10][:12]} --bad {commits[-1][:12]}"
    )
    assert f"bisect it: {command}" in history.stdout
    assert command in (folder / "results" / "bisect_sim" / "history" / "history.md").read_text()
    assert command in (folder / "site" / "regressions.html").read_text()  # the site's step page
    found = run_cli(
        folder, *command.split()[1:], env=env, timeout=600
    )  # the printed command runs as printed
    assert found.returncode == 0, found.stdout + found.stderr
    assert f"first bad commit: {commits[STEP]}" in found.stdout
