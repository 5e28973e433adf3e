"""Stored baselines and history end to end on the simulator, through the real command line (child
processes):

- two stored runs of ``driver_reuse`` (the second measures the ``before`` runner as its ``after``
  build too, a real difference) compared with ``fvp-harness compare`` give the verdicts of the first
  run's in-run A/B, within the CIs;
- ``run --baseline-from`` measures only the candidate plus the drift check, passes on a steady
  platform and is NOT VERIFIED (inconclusive) when the simulator is made 15 % slower;
- ``history`` over five stored runs, each of its own git commit, where the third made ``resnet8`` 20
  % slower (the simulator's ``runner_slowdown`` knob), flags that run and that model only.

Kept cheap: two models, three iterations, few repetitions. The scenarios are copied into a git
repository in tmp, so runs record real commits and ``SCENARIO@REF`` resolves them.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.sim]

xmlschema = pytest.importorskip("xmlschema")
XSD = REPO / "tests" / "report" / "junit-10.xsd"
SMALL = ["--set", "run.iterations=3", "--set", "run.until=null", "--only-model", "resnet8",
         "--only-model", "ds_cnn"]
BEFORE_RUNNER = ["--set", "builds.after.runner=${vars.artifacts}/executor_runner-before",
                 "--set",
                 'builds.after.build="{fvp_harness} sim runner --driver per-inference '
                 '--cpu-time-report -o {output}"']


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid",
                           *args], cwd=root,
                          text=True, capture_output=True, check=True)
    return done.stdout.strip()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stored")
    shutil.copytree(REPO / "scenarios", root / "scenarios")
    if shutil.which("git") is None:
        pytest.skip("git is needed to record commits")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "scenarios")
    _git(root, "commit", "-q", "-m", "scenarios")
    return root


def harness(workdir: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = run_cli(workdir, *args, timeout=timeout)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _primary(report: dict, candidate_prefix: str) -> dict[str, dict]:
    comparisons = report.get("comparisons") or [report["comparison"]]
    chosen = next(c for c in comparisons if c["candidate"].startswith(candidate_prefix))
    return {m["model"]: m for m in chosen["models"]}


@pytest.fixture(scope="module")
def two_runs(workdir: Path) -> tuple[str, str]:
    """Run A: the A/B as shipped. Run B: its `after` build is the `before` runner. Both in
    results/driver_reuse."""
    first = harness(workdir, "run", "scenarios/driver_reuse.yaml", *SMALL, "--set",
                    "run.repetitions=3", "--set", "fvp.sim.runner_seed=11", "-q")
    assert first.returncode == 0, first.stderr
    second = harness(workdir, "run", "scenarios/driver_reuse.yaml", *SMALL, *BEFORE_RUNNER,
                     "--set", "run.repetitions=3", "--set", "fvp.sim.runner_seed=12", "-q")
    # its in-run A/B: `after` is the before runner, no change
    assert second.returncode == 0, second.stderr
    folders = [*sorted((workdir / "results/driver_reuse/runs").iterdir()),
               workdir / "results/driver_reuse"]
    runs = [json.loads((folder / "manifest.json").read_text())["run"]["id"] for folder in folders]
    return runs[0], runs[1]


def test_compare_of_two_stored_runs_matches_the_in_run_ab(workdir: Path, two_runs: tuple[str, str]):
    run_a, run_b = two_runs
    commit = _git(workdir, "rev-parse", "HEAD")
    # run B is the baseline (its `after` is the per-inference runner), run A the candidate: run A's
    # in-run A/B again. @<commit> names the newest run of that commit (B), latest#-1 the one before
    # the newest (A)
    done = harness(workdir, "compare", f"driver_reuse@{commit[:8]}", "driver_reuse@latest#-1", "-o",
                   "cmp", "--junit", "cmp/junit.xml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"A: run {run_b}" in done.stdout and f"B: run {run_a}" in done.stdout
    cross = json.loads((workdir / "cmp/report.json").read_text())
    in_run = json.loads((workdir / "results/driver_reuse/runs" / run_a / "report.json").read_text())
    ab = _primary(in_run, "after")
    crossed = _primary(cross, "after@")
    assert set(crossed) == {"resnet8", "ds_cnn"}
    for model, row in crossed.items():
        expected = ab[model]
        assert row["verdict"] == expected["verdict"] == "faster", (
            model,
            row["verdict"],
            expected["verdict"],
        )
        assert (row["ci_low"] <= expected["ci_high"] and
                expected["ci_low"] <= row["ci_high"]), (model, row, expected)
        assert abs(row["saved_pct"] - expected["saved_pct"]) < 3.0
    same = _primary(cross, "before@")
    assert ({model: row["verdict"] for model, row in same.items()}
            == {"resnet8": "no change", "ds_cnn": "no change"})
    assert cross["verdict"]["status"] == "PASS"
    xmlschema.XMLSchema(str(XSD)).validate(str(workdir / "cmp/junit.xml"))


def test_compare_refuses_runs_of_other_model_bytes(workdir: Path, two_runs: tuple[str, str]):
    other = harness(workdir, "run", "scenarios/driver_reuse.yaml", *SMALL, "--set",
                    "run.repetitions=2",
                    "--set", "vars.seed=2", "--set",
                    "vars.artifacts=${scenario_dir}/../.artifacts/seed2",
                    "-o", "results/other_models", "-q")
    assert other.returncode in (0, 1), other.stderr
    done = harness(workdir, "compare", f"driver_reuse@{two_runs[0]}", "results/other_models")
    assert done.returncode == 2
    assert ("resnet8: model file bytes differ" in done.stderr and
            "ds_cnn: input file bytes differ" in done.stderr)


def test_baseline_from_a_stored_run_measures_the_candidate_and_checks_drift(
    workdir: Path, two_runs: tuple[str, str]
):
    run_a = two_runs[0]
    steady = harness(workdir, "run", "scenarios/driver_reuse.yaml", *SMALL, "--set",
                     "run.repetitions=3",
                     "--baseline-from", f"driver_reuse@{run_a}", "-o", "results/pr", "--set",
                     "fvp.sim.runner_seed=13", "--junit", "pr-junit.xml")
    assert steady.returncode == 0, steady.stdout + steady.stderr
    assert f"baseline before: from stored run {run_a}" in steady.stderr
    manifest = json.loads((workdir / "results/pr/manifest.json").read_text())
    planned = sorted(manifest["plan"]["selected"])
    # the drift check
    assert [u for u in planned if "-before-" in u] == ["r0-before-ds_cnn", "r0-before-resnet8"]
    # every candidate unit: 3 repetitions x 2 models
    assert len([u for u in planned if "-after-" in u]) == 6
    # pinned
    assert manifest["scenario"]["resolved"]["compare"]["baseline_from"].endswith(f"@{run_a}")
    report = json.loads((workdir / "results/pr/report.json").read_text())
    assert report["verdict"]["status"] == "PASS"
    assert ({m: row["verdict"] for m, row in _primary(report, "after").items()}
            == {"resnet8": "faster", "ds_cnn": "faster"})
    assert (
        "drift check: resnet8 steady, ds_cnn steady"
        in (workdir / "results/pr/report.md").read_text()
    )
    xmlschema.XMLSchema(str(XSD)).validate(str(workdir / "pr-junit.xml"))

    moved = harness(workdir, "run", "scenarios/driver_reuse.yaml", *SMALL, "--set",
                    "run.repetitions=2",
                    "--baseline-from", f"driver_reuse@{run_a}", "-o", "results/pr-moved",
                    "--set", "fvp.sim.runner_slowdown=1.15", "-q")
    assert moved.returncode == 0, moved.stderr  # not verified is no failure of the candidate
    report = json.loads((workdir / "results/pr-moved/report.json").read_text())
    assert report["verdict"]["status"] == "NOT VERIFIED"
    assert any("platform moved" in reason for reason in report["verdict"]["reasons"])
    assert {row["verdict"] for row in _primary(report, "after").values()} == {"inconclusive"}
    # `report DIR` reads the pinned stored run again
    rebuilt = harness(workdir, "report", "results/pr-moved", "-q")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads((workdir / "results/pr-moved/report.json").read_text()) == report


def test_history_flags_the_run_and_model_that_regressed(workdir: Path):
    commits = []
    for index in range(5):
        _git(workdir, "commit", "-q", "--allow-empty", "-m", f"change {index + 1}")
        commits.append(_git(workdir, "rev-parse", "HEAD"))
        slower = ["--set", "fvp.sim.runner_slowdown=reuse:resnet8=1.2"] if index >= 2 else []
        done = harness(workdir, "run", "scenarios/driver_reuse.yaml", *SMALL, "--set",
                       "run.repetitions=2",
                       "--only-build", "after", "--set", f"fvp.sim.runner_seed={20 + index}",
                       *slower, "-o", "results/nightly", "-q")
        assert done.returncode in (0, 1), done.stderr
    history = harness(workdir, "history", "results/nightly", "--junit", "history.xml")
    assert history.returncode == 1, history.stdout + history.stderr  # a regression still in effect
    flagged = [line for line in history.stdout.splitlines()
               if line.startswith(("REGRESSION", "IMPROVEMENT"))]
    assert len(flagged) == 1 and flagged[0].startswith("REGRESSION: resnet8 +"), history.stdout
    assert f"(commit {commits[2][:7]})" in flagged[0]
    rows = list(
        csv.DictReader((workdir / "results/nightly/history/history.csv").read_text().splitlines()))
    assert [row["commit"] for row in rows[::2]] == commits
    steps = [(row["commit"], row["model"], row["step"]) for row in rows if row["step"]]
    assert steps == [(commits[2], "resnet8", "regression")]
    assert 15 < float(next(row["change_pct"] for row in rows if row["step"])) < 25
    assert (workdir / "results/nightly/history/history-resnet8.png").is_file()
    xmlschema.XMLSchema(str(XSD)).validate(str(workdir / "history.xml"))
