"""Issue 38 (2): ``run.until`` never extends a run that has produced no sample. A runner that fails
every unit (the simulator's ``runner_fault`` knob) used to be sampled up to
``until.max_repetitions`` because nothing could be judged; through the real command line the run now
stops after the first round (one unit per build)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fvp_harness.errors import EXIT_FAILED
from tests.e2e.cli import run_cli
from tests.helpers import REPO


@pytest.mark.slow
def test_a_runner_that_always_fails_is_not_sampled_to_max_repetitions(tmp_path: Path) -> None:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    text = (tmp_path / "scenarios" / "smoke.yaml").read_text(encoding="utf-8")
    assert "  repetitions: 2\n" in text
    (tmp_path / "scenarios" / "dead.yaml").write_text(
        text.replace(
            "  repetitions: 2\n", "  until: {ci_width: 1, min_repetitions: 2, max_repetitions: 5}\n"
        ),
        encoding="utf-8",
    )
    done = run_cli(
        tmp_path, "run", "scenarios/dead.yaml", "-o", "out", "--set", "fvp.sim.runner_fault=crash=0"
    )
    assert done.returncode == EXIT_FAILED, done.stderr + done.stdout
    records = [
        json.loads(line) for line in (tmp_path / "out" / "records.jsonl").read_text().splitlines()
    ]
    assert sorted((r["build"], r["repetition"], r["status"]) for r in records) == [
        ("after", 0, "failed"),
        ("before", 0, "failed"),
    ]
    assert "2 units run, 8 spared by the stopping rule (run.until)" in done.stdout + done.stderr
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "| ds_cnn  |             1 | no sample" in report
