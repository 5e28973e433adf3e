"""Done-when of issue 25 in one test: the shipped QEMU scenario builds the real C program twice,
runs the A/B on the guest, reports a saving with identical outputs, keeps the real kernel's boot
text in the logs, and leaves no QEMU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO
from tests.qemu.lane import require_qemu

pytestmark = [pytest.mark.qemu, pytest.mark.slow]


def test_qemu_driver_reuse_scenario(tmp_path: Path) -> None:
    require_qemu(need_compiler=True)
    out = tmp_path / "results"
    proc = run_cli(REPO, "run", "scenarios/qemu/qemu_driver_reuse.yaml", "-o", str(out), "--set",
                   "run.iterations=5", "--set", "run.repetitions=2", timeout=280)
    # 1: a too-small sample on a busy machine
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    report = json.loads((out / "report.json").read_text())
    identities = [e for c in report["comparisons"]
                  for e in c["expectations"] if e["kind"] == "identity"]
    assert identities and all(e["status"] == "pass" for e in identities), identities
    assert not report["failed_units"] and report["verdict"]["status"] in ("PASS", "FAIL"), (
        report["verdict"])
    assert "saved" in (out / "report.md").read_text().lower()
    logs = out / "logs" / "s0"
    assert "Booting Linux on physical CPU" in (logs / "terminal_0.log").read_text()
    assert any("Iteration 1 of" in path.read_text() for path in logs.glob("r*-before-*.log"))
