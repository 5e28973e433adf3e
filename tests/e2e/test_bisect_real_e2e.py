"""``fvp-harness bisect`` on the real-ExecuTorch lane: a git repository whose commits carry our
runner's C++ source, one of them changing it so that the Method is re-created for every inference
(the step), the runner built from each commit with CMake against the executorch wheel's runtime, the
real runtime measuring an XNNPACK program on this host. The bisect names that commit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from fvp_harness.toolchain.runner_build import SOURCE_DIR
from tests.e2e.cli import run_cli
from tests.toolchain.lane import require_lane

pytestmark = [pytest.mark.slow, pytest.mark.executorch]

COMMITS, STEP = 8, 5
BEFORE_TOGGLE = "#if FVP_RUNNER_BEFORE"
REGRESSION = ("#undef FVP_RUNNER_BEFORE\n"
              "#define FVP_RUNNER_BEFORE 1  // load the Method and its planned memory for every "
              "inference\n")

SCENARIO = """\
name: et_bisect
description: our runner on ExecuTorch's runtime, built from a commit of a local repository
target: host
vars:
  artifacts: ${scenario_dir}/.artifacts
builds:
  runner:
    runner: ${vars.artifacts}/executor_runner
    build: "{fvp_harness} toolchain runner --arch host --variant after --source {source}/runner
      -o {output}"
    source: {repository: ./repo, commit: main}
models:
  deep_autoencoder_xnnpack:
    file: ${vars.artifacts}/deep_autoencoder.xnnpack.pte
    build: "{fvp_harness} toolchain export deep_autoencoder --kind xnnpack --seed 1 -o {output}"
    inputs:
      - file: ${vars.artifacts}/deep_autoencoder.input.bin
        build: "{fvp_harness} toolchain export deep_autoencoder --input-only --seed 1 -o {output}"
run:
  command: "{runner} --model_path={model} --inputs={inputs} --num_executions={iterations}
    --output_file={output}"
  warmup: 2
  iterations: 20
  until: {ci_width: 10, min_repetitions: 2, max_repetitions: 6}
metrics:
  - name: iteration_time
    required: true
"""


IDENTITY = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
            "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.com"}


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True, timeout=30, env={**os.environ, **IDENTITY})
    return done.stdout.strip()


def _repository(repo: Path) -> list[str]:
    """``COMMITS`` commits of the runner's source; commit ``STEP`` makes the ``after`` build behave
    as ``before``."""
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shutil.copytree(SOURCE_DIR, repo / "runner", ignore=shutil.ignore_patterns("__pycache__"))
    source = repo / "runner" / "executor_runner.cpp"
    for index in range(COMMITS):
        with (repo / "CHANGES").open("a") as changes:
            changes.write(f"change {index}\n")
        subject = f"runtime: change {index}"
        if index == STEP:
            text = source.read_text()
            assert BEFORE_TOGGLE in text, (
                "the runner's source changed: update the test's regression")
            source.write_text(text.replace(BEFORE_TOGGLE, REGRESSION + BEFORE_TOGGLE, 1))
            subject = "runner: load the method for every inference"
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", subject)
    return _git(repo, "rev-list", "--reverse", "main").split()


def test_bisect_finds_the_commit_that_changed_our_runner_on_the_real_runtime(
        tmp_path: Path) -> None:
    require_lane()
    commits = _repository(tmp_path / "repo")
    (tmp_path / "et_bisect.yaml").write_text(SCENARIO)
    env = dict(os.environ, FVP_HARNESS_BUILD_CACHE=str(tmp_path / "cache"))
    began = time.monotonic()
    done = run_cli(tmp_path, "bisect", "et_bisect.yaml", "--good", commits[0], "--bad", "main",
                   env=env, timeout=1200)
    wall = time.monotonic() - began
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert f"first bad commit: {commits[STEP]}" in done.stdout, done.stdout[-3000:]
    assert "runner: load the method for every inference" in done.stdout
    data = json.loads((tmp_path / "results" / "et_bisect" / "bisect" / "bisect.json").read_text())
    assert data["first_bad"] == commits[STEP] and data["last_good"] == commits[STEP - 1]
    print(f"\nreal-lane bisect: {data['builds']} builds, {data['units']} units, {wall:.1f} s wall; "
          f"measuring every commit: {COMMITS} builds")
