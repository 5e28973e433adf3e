"""Today's Corstone-1000 image through the user's path: the CLI as a process, the simulator as the
model.

meta-arm 2026.05 boots an image whose NPU is the in-kernel accel driver's /dev/accel/accel0, with no
/dev/ethosu0 (recipes-kernel/linux/files/corstone1000/ethosu.cfg), and a musl C library
(kas/corstone1000-firmware-only.yml). ExecuTorch's delegate opens /dev/ethosu0
(backends/arm/runtime/EthosUBackend_Cortex_A.cpp:44): ``doctor --boot`` and ``run`` must both stop
with exit 2 before any unit, naming both nodes and the fix. The C-library cases (a glibc runner on a
musl image refused, a musl or static one accepted and started) are proven without a boot:
tests/run/test_guest_needs.py and tests/sim/corstone1000/test_releases.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.sim]


def _records(folder: Path) -> list[dict]:
    path = folder / "records.jsonl"
    return ([json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            if path.is_file() else [])


def test_todays_image_is_refused_by_doctor_and_run_before_any_unit(tmp_path: Path) -> None:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    smoke = "scenarios/smoke.yaml"

    def harness(*args: str) -> tuple[int, str]:
        done = run_cli(tmp_path, *args, "--set", "run.repetitions=1", timeout=300)
        assert "Traceback" not in done.stderr, done.stderr
        return done.returncode, done.stdout + done.stderr

    code, text = harness("doctor", smoke, "--set", "fvp.sim.release=2026.05", "--boot")
    assert code == 2, text
    assert ("/dev/ethosu0" in text and "/dev/accel/accel0" in text and
            "fvp.sim.release=2025.12" in text)

    code, text = harness("run", smoke, "--set", "fvp.sim.release=2026.05", "-o",
                         str(tmp_path / "today"))
    assert code == 2, text
    assert "configuration error" in text and "/dev/ethosu0" in text and "/dev/accel/accel0" in text
    assert "Fix: boot an image with the ethos-u kernel driver" in text
    assert _records(tmp_path / "today") == []  # before any unit
