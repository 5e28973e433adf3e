"""``scenarios/vela_check.yaml`` end to end on the embedded simulator: the report puts the measured
NPU cycles next to Vela's estimates, agrees where the estimate is Vela's own and flags the
deliberately wrong one."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.sim]


def test_vela_check_scenario_shows_measured_vs_estimated_and_flags_the_wrong_estimate(
        tmp_path: Path) -> None:
    pytest.importorskip("ethosu.vela", reason="the scenario's model build runs Vela")
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    done = run_cli(tmp_path, "run", "scenarios/vela_check.yaml", "-q")
    out, err = done.stdout, done.stderr
    assert done.returncode == 0, err + out

    folder = tmp_path / "results" / "vela_check"
    report = (folder / "report.md").read_text()
    section = report[report.index("## NPU cycles: measured vs Vela"):]
    section = section[:section.index("\n## ", 3)] if "\n## " in section[3:] else section
    rows = {tuple(cells[:2]): cells[2:] for cells in (
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in section.splitlines() if line.startswith("| ") and "---" not in line)}
    for build in ("before", "after"):
        measured, estimate, ratio, check, _config = rows["ds_cnn", build]
        assert measured == estimate and ratio == "1.000" and check == "✓ within"
        measured, estimate, ratio, check, _config = rows["resnet8", build]
        assert estimate == "42,273" and ratio == "2.000" and check.startswith("⚠ outside")
    assert "**2 of 4 ratios outside their band:**" in section
    context = json.loads((folder / "report.json").read_text())["context"]
    assert set(context["vela"]["specs"]) == {"ds_cnn", "resnet8"}
    # the estimate the model's build kept is the one its file counts with
    info = subprocess.run([sys.executable, "-m", "fvp_harness", "sim", "info",
                           ".artifacts/vela_check/ds_cnn.model"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(info.stdout)["npu_cycles_source"].startswith("Vela ")
