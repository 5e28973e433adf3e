"""Fail-fast through the real command line on the simulator (issue 38, finding 2): a runner that
crashes on every unit stops ``run`` and ``make`` within 2 units per build, with one line naming the
failure and the unit log; ``-k`` runs every unit."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.sim]

SECOND_MODEL = """  resnet8:
    file: ${vars.artifacts}/resnet8.model
    build: "{fvp_harness} sim model resnet8 --seed ${vars.seed} --macs 256 -o {output}"
    inputs:
      - file: ${vars.artifacts}/resnet8.input.bin
        build: "{fvp_harness} sim input resnet8 --seed ${vars.seed} -o {output}"
"""
CRASH = ("--set", "fvp.sim.runner_fault=crash", "--set", "run.repetitions=3")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """smoke with two models (12 units at 3 repetitions), and a copy of it for make."""
    root = tmp_path_factory.mktemp("failfast")
    (root / "scenarios").mkdir()
    text = (REPO / "scenarios" / "smoke.yaml").read_text(encoding="utf-8")
    assert "\nrun:\n" in text
    text = text.replace("\nrun:\n", f"{SECOND_MODEL}\nrun:\n", 1)
    (root / "scenarios" / "two.yaml").write_text(text, encoding="utf-8")
    (root / "scenarios" / "three.yaml").write_text(text, encoding="utf-8")
    return root


def _records(folder: Path) -> list[dict]:
    return [
        json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines() if line
    ]


def _per_build(records: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in records:
        counts[record["build"]] = counts.get(record["build"], 0) + 1
    return counts


def _stop_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "stopped early" in line]


def test_run_stops_within_two_units_per_build_with_one_line(workdir: Path) -> None:
    done = run_cli(workdir, "run", "scenarios/two.yaml", "-o", "out/fast", *CRASH)
    assert done.returncode == 1, done.stdout + done.stderr
    out = workdir / "out" / "fast"
    records = _records(out)
    assert all(r["status"] == "failed" for r in records)
    assert max(_per_build(records).values()) <= 2 and len(records) < 12, _per_build(records)
    lines = _stop_lines(done.stderr)
    assert len(lines) == 1, done.stderr
    assert "status 139" in lines[0] and "--keep-going" in lines[0]
    log = re.search(r"\(log: ([^)]+\.log)\)", lines[0])
    assert log is not None and (workdir / log.group(1)).is_file(), lines[0]
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert (
        "not run (of 12 planned)" in done.stdout and f"{12 - len(records)} not run" in done.stdout
    )
    assert "NOT RUN" in done.stdout


def test_keep_going_runs_every_unit(workdir: Path) -> None:
    done = run_cli(workdir, "run", "scenarios/two.yaml", "-o", "out/all", "-k", *CRASH)
    assert done.returncode == 1, done.stdout + done.stderr
    assert len(_records(workdir / "out" / "all")) == 12
    assert not _stop_lines(done.stderr)


def test_make_stops_each_scenario_within_two_units_per_build(workdir: Path) -> None:
    done = run_cli(workdir, "make", "-j", "1", "--results", "made", *CRASH)
    assert done.returncode == 1, done.stdout + done.stderr
    assert len(_stop_lines(done.stderr)) == 1, done.stderr
    for stem in ("two", "three"):
        path = workdir / "made" / stem
        records = _records(path) if (path / "records.jsonl").is_file() else []
        assert not records or max(_per_build(records).values()) <= 2, (stem, _per_build(records))
    assert "NOT RUN" in done.stdout + done.stderr
