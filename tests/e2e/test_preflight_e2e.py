"""``run``'s preflight is ``doctor``'s: deterministic start failures end the run with exit 2 before
anything boots.

Stand-in binaries (sh scripts around the simulator, as ``test_real_binary_path.py`` and the
bare-metal tests name them) log every launch, so a test can count them: the probes (``--version``,
``--list-params``) and nothing else.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.sim]


def _stand_in(folder: Path, name: str, body: str) -> tuple[Path, Path]:
    """An executable ``folder/name`` that appends its arguments to ``folder/launches`` and then runs
    ``body``."""
    folder.mkdir(parents=True, exist_ok=True)
    launches = folder / "launches"
    path = folder / name
    path.write_text(f'#!/bin/sh\necho "$*" >> "{launches}"\n{body}', encoding="utf-8")
    path.chmod(0o755)
    return path, launches


def _launches(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.is_file() else []


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    return tmp_path


def _harness(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = run_cli(root, *args, timeout=120, env=dict(os.environ), scratch=root / "scratch")
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_corstone320_scenario_on_a_corstone300_binary_exits_2_without_a_launch(
        workdir: Path) -> None:
    binary, log = _stand_in(workdir / "bin", "FVP_Corstone_SSE-300_Ethos-U55",
                            f'exec "{sys.executable}" -m fvp_harness.sim --platform corstone300 '
                            '"$@"\n')
    doctor = _harness(workdir, "doctor", "scenarios/baremetal_macs.yaml", "--fvp", str(binary))
    assert doctor.returncode == 2, doctor.stdout + doctor.stderr
    probes = len(_launches(log))

    done = _harness(workdir, "run", "scenarios/baremetal_macs.yaml", "--fvp", str(binary), "-o",
                    "out")
    assert done.returncode == 2, done.stdout + done.stderr
    ran = _launches(log)[probes:]
    # the probes; the model itself never launched
    assert sorted(ran) == ["--list-params", "--version"], ran
    assert "nothing was booted" in done.stderr and "retry" not in done.stderr
    assert "unknown to the model: mps4_board.subsystem.ethosu.num_macs" in done.stderr
    assert "cpu0.semihosting-cmd_line (did you mean cpu0.semihosting-cmd_line?)" in done.stderr, (
        "the whole list")
    assert not (workdir / "out" / "logs").exists() and not (workdir / ".artifacts").exists(), (
        "nothing built")


def test_list_params_refused_by_the_licence_fails_doctor_and_run_alike(
    workdir: Path, tmp_path: Path
) -> None:
    words = ("ERROR: License checkout failed for feature FM_Corstone-1000-A320 (license server "
             "down: 27000@lic)")
    binary, log = _stand_in(
        tmp_path / "bin", "FVP_Corstone-1000-A320",
        f'case "$*" in *--list-params*) echo "{words}" >&2; exit 1;; esac\n'
        f'exec "{sys.executable}" -m fvp_harness.sim "$@"\n')
    folder = tmp_path / "firmware"
    folder.mkdir()
    (folder / "bl1.bin").write_bytes(b"\x00" * 256)
    (folder / "flash.wic").write_bytes(b"\xff" * 4096)
    firmware = ["--set", f"fvp.firmware.bl1={folder / 'bl1.bin'}",
                "--set", f"fvp.firmware.flash={folder / 'flash.wic'}"]

    doctor = _harness(workdir, "doctor", "scenarios/smoke.yaml", "--fvp", str(binary), *firmware)
    assert doctor.returncode == 2, doctor.stdout + doctor.stderr
    assert "all checks passed" not in doctor.stdout
    line = next(row
                for row in doctor.stdout.splitlines() if re.match(r"^\s+FAIL\s+parameters", row))
    assert words in line, line

    done = _harness(workdir, "run", "scenarios/smoke.yaml", "--fvp", str(binary), *firmware, "-o",
                    "out")
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"parameters: `--list-params` failed (exit status 1): {words}" in done.stderr
    assert all("--version" in launch or "--list-params" in launch for launch in _launches(log)), (
        _launches(log))
    assert not (workdir / "out" / "logs").exists()


def test_make_runs_the_same_preflight_before_it_builds_or_boots(workdir: Path) -> None:
    """``make`` starts the models on this machine as ``run`` does: the same checks, exit 2, nothing
    built."""
    binary, log = _stand_in(workdir / "bin", "FVP_Corstone_SSE-300_Ethos-U55",
                            f'exec "{sys.executable}" -m fvp_harness.sim --platform corstone300 '
                            '"$@"\n')
    done = _harness(workdir, "make", "scenarios/baremetal_macs.yaml", "--fvp", str(binary),
                    "--results", "out")
    assert done.returncode == 2, done.stdout + done.stderr
    assert set(_launches(log)) == {"--list-params", "--version"}, (
        "the probes; the model itself never launched")
    assert "unknown to the model: mps4_board.subsystem.ethosu.num_macs" in done.stdout + done.stderr
    assert (not (workdir / "out" / "baremetal_macs" / "logs").exists() and
            not (workdir / ".artifacts").exists())
