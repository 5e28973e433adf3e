"""Instances on the embedded simulator through the CLI: ``fvp.instances: 2`` (two models boot side
by side, every unit runs exactly once on one of them, work stealing may move not-started groups
between them, each (repetition, model) group stays on one instance's session, the report accounts
for every unit), and the early boot (the model boots while the artifacts build; a failed build
leaves no model behind)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.sim]


def test_two_instances_run_every_unit_once_and_keep_groups_together(tmp_path: Path) -> None:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    out = tmp_path / "out"
    done = run_cli(tmp_path, "run", "scenarios/driver_reuse.yaml", "-o", str(out), "--set",
                   "fvp.instances=2",
                   "--set", "run.until=null", "--set", "run.repetitions=2", timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(line)
               for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    ids = [record["unit_id"] for record in records]
    assert len(ids) == len(set(ids)) == 16, "every unit exactly once"
    assert all(record["status"] == "ok" for record in records)
    sessions: dict[tuple[int, str], set[str]] = {}
    for record in records:
        sessions.setdefault((record["repetition"], record["model"]),
                            set()).add(record["instance"].split(".")[0])
    assert all(len(names) == 1 for names in sessions.values()), (
        f"a group was split between sessions: {sessions}")
    assert {name for names in sessions.values() for name in names} == {"s0", "s1"}, (
        "both instances worked")
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(manifest["instances"]) == ["s0", "s1"]
    report = (out / "report.md").read_text()
    assert "Not run" not in report and "NOT VERIFIED" not in report


def test_a_failed_build_leaves_no_early_booted_model_behind(tmp_path: Path) -> None:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    done = run_cli(tmp_path, "run", "scenarios/driver_reuse.yaml", "-o", str(tmp_path / "out"),
                   # run_cli fails the test if a model is left
                   "--set", "builds.after.build=\"exit 3\"", timeout=240)
    text = done.stdout + done.stderr
    # a failed build is the test's failure (exit 1), not the platform's
    assert done.returncode == 1, text
    assert "booting (while the artifacts build)" in text and "builds.after.runner" in text
    assert (not (tmp_path / "out" / "records.jsonl").exists() or
            not (tmp_path / "out" / "records.jsonl").read_text())
