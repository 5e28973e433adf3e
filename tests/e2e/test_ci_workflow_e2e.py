"""docs/ci.md's workflow, step by step through the real command line, on the shipped scenarios as
shipped.

``driver_reuse.yaml`` samples adaptively (``run.until``), ``smoke.yaml`` is a fixed matrix; both
must give the exit codes the page promises. On a fresh git checkout of the scenarios: main's stored
run (twice: an A/A compare of two plain runs says PASS, with no "not run" unit), the pull request's
run against main's stored baseline (``--baseline-from driver_reuse@main -o results/pr-42 --junit
junit.xml --github-summary``), ``compare`` with main's candidate, the ``jq`` gate, JUnit, the GitHub
summary, ``report`` of every folder (``make report``) and ``history``. The point of the adaptive
case: what the stopping rule spared is recorded as spared and never counted as "not run" by any
reader of the stored runs.

The adaptive case on driver_reuse.yaml runs once, as docs/ci.md's workflow verbatim
(``tests/e2e/test_doc_commands.py::test_ci_workflow_on_the_shipped_adaptive_scenario`` makes the
same checks on that run); here the fixed matrix of smoke.yaml. ``_workflow`` still takes
``adaptive`` for a scenario of either kind.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.sim]

PR = "results/pr-42"


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid",
                           *args], cwd=root,
                          text=True, capture_output=True, check=True)
    return done.stdout.strip()


def _checkout(root: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is needed to record commits")
    shutil.copytree(REPO / "scenarios", root / "scenarios")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "scenarios")
    _git(root, "commit", "-q", "-m", "scenarios")
    return root


def _harness(root: Path, *args: str,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = run_cli(root, *args, timeout=600, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _gate(root: Path, report: str) -> int:
    """``jq -e '.verdict.violated_gates == []' REPORT``'s exit code (the same test in Python without
    jq)."""
    if shutil.which("jq") is not None:
        return subprocess.run(["jq", "-e", ".verdict.violated_gates == []", report], cwd=root,
                              capture_output=True).returncode
    return 0 if json.loads((root / report).read_text())["verdict"]["violated_gates"] == [] else 1


def _junit_errors(path: Path) -> list[int]:
    return [int(n) for n in re.findall(r'<testsuite [^>]*errors="(\d+)"', path.read_text())]


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def _workflow(root: Path, scenario: str, adaptive: bool) -> None:
    stem = Path(scenario).stem
    summary = root / "summary.md"
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary)}
    # main: measure both builds and store the run (twice: the second keeps the first in runs/<id>)
    main = _harness(root, "run", scenario, "--junit", "junit.xml", "--github-summary", env=env)
    assert main.returncode == 0, main.stdout + main.stderr
    assert _junit_errors(root / "junit.xml") == [0]
    again = _harness(root, "run", scenario, "-q")
    assert again.returncode == 0, again.stderr
    folder = root / "results" / stem
    manifest = _manifest(folder)
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    spared = manifest["plan"]["spared"]
    if adaptive:
        assert spared, "the stopping rule spared rounds, and the manifest records them"
        assert "spared by the stopping rule (run.until)" in main.stdout
    else:
        assert spared == []
    assert not {r["unit_id"] for r in records} & set(spared), "a spared unit never has a record"
    assert len(records) + len(spared) == manifest["plan"]["units"]

    runs = _harness(root, "runs", f"results/{stem}")
    assert runs.returncode == 0
    header, *lines = runs.stdout.splitlines()
    assert header.split()[:3] == ["run", "started", "status"], runs.stdout
    assert (len(lines) == 2 and
            all(re.search(rf"\s{len(records)}\s+results/", line) for line in lines)), runs.stdout
    assert all(("spared by run.until" in line) == adaptive for line in lines)

    # an A/A compare of two plain runs of one commit: PASS (or no change), nothing "not run", even
    # with --strict
    same = _harness(root, "compare", f"{stem}@latest#-1", f"{stem}@latest", "--strict", "-o", "aa",
                    "--junit", "aa.xml")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "NOT RUN" not in same.stdout and "did not run" not in same.stdout + same.stderr
    verdict = json.loads((root / "aa/report.json").read_text())["verdict"]
    assert verdict["status"] == "PASS" and verdict["not_run"] == [], verdict
    assert _junit_errors(root / "aa.xml") == [0]

    # the pull request: its own commit, its candidate against main's stored baseline
    _git(root, "checkout", "-q", "-b", "pr")
    _git(root, "commit", "-q", "--allow-empty", "-m", "the change")
    pr = _harness(root, "run", scenario, "--baseline-from", f"{stem}@main", "-o", PR, "--junit",
                  "junit.xml", "--github-summary", env=env)
    assert pr.returncode == 0, pr.stdout + pr.stderr
    assert f"baseline before: from stored run {manifest['run']['id']}" in pr.stderr
    report = json.loads((root / PR / "report.json").read_text())
    assert (report["verdict"]["status"] in ("PASS", "NOT VERIFIED") and
            report["verdict"]["not_run"] == [])
    assert _junit_errors(root / "junit.xml") == [0]
    pr_records = [json.loads(line)
                  for line in (root / PR / "records.jsonl").read_text().splitlines()]
    drift = sorted(r["unit_id"] for r in pr_records if r["build"] == "before")
    assert 1 <= len(drift) <= 2, "the drift-check units (drift_check.units: 2 by default) still run"
    if adaptive:
        assert "## Repetitions needed (run.until)" in (root / PR / "report.md").read_text()
        assert _manifest(root / PR)["plan"]["spared"], "the candidate side sampled adaptively"
        assert "at most" in pr.stderr and "round 1/≤" in pr.stderr

    vs_main = _harness(root, "compare", f"{stem}@main", PR, "--build", "after", "-o",
                       f"{PR}/vs-main", "--junit", "junit-compare.xml", "--github-summary", env=env)
    assert vs_main.returncode == 0, vs_main.stdout + vs_main.stderr
    assert "NOT RUN" not in vs_main.stdout
    assert json.loads((root / PR / "vs-main/report.json").read_text())["verdict"]["not_run"] == []
    assert _junit_errors(root / "junit-compare.xml") == [0]
    assert _gate(root, f"{PR}/report.json") == 0 and _gate(root, f"{PR}/vs-main/report.json") == 0
    assert summary.read_text().count("# ") >= 3, (
        "run, PR run and compare each appended their report")

    # `make report`: every folder's report rebuilt from its stored records; then the nightly history
    for path in (f"results/{stem}", PR):
        rebuilt = _harness(root, "report", "-q", path)
        assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    history = _harness(root, "history", stem, "--junit", "junit-history.xml", "--github-summary",
                       env=env)
    assert history.returncode == 0, history.stdout + history.stderr


def test_ci_workflow_on_a_fixed_matrix_scenario(tmp_path: Path) -> None:
    _workflow(_checkout(tmp_path), "scenarios/smoke.yaml", adaptive=False)
