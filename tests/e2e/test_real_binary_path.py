"""The real-FVP code path end to end: the simulator disguised as ``FVP_Corstone-1000-A320``.

Every other end-to-end test uses ``fvp.binary: sim``, which takes the simulator's own paths
(``python -m fvp_harness.sim``, ``FVP_SIM_*`` knobs, no firmware). Here a small sh script named like
the real model stands on PATH (or at a path) and the shipped smoke scenario is pointed at it with
``--fvp`` and the firmware files a real model needs, so the harness takes exactly the path it takes
for a real binary: name lookup, firmware as ``-C`` and ``--data``, no knobs (the simulator's default
1.5 s boot applies). Broken binaries (a misspelt parameter, a licence failure, a model that hangs
silently) must end in their failure class with the model's own words, quickly, and leave no process
behind.

Each CLI run is a child process carrying a marker variable that every process it starts inherits;
after it exits, no process with the marker may be left, and TMPDIR (private per test) must be empty
again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fvp_harness.profiles import load_profile
from tests.e2e.cli import run_cli
from tests.helpers import REPO
from tests.proc_scan import process_group_members

pytestmark = [pytest.mark.slow, pytest.mark.sim]

MODEL = "FVP_Corstone-1000-A320"
VERSION = "11.30.27 (simulated by fvp-harness sim)"


# -- helpers ---------------------------------------------------------------------------------------


def _install(folder: Path, script: str) -> Path:
    """An executable sh script named like the real model in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / MODEL
    path.write_text("#!/bin/sh\n" + script, encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the scenarios (the smoke artifacts are built once into <copy>/.artifacts and
    shared)."""
    root = tmp_path_factory.mktemp("realbin")
    shutil.copytree(REPO / "scenarios", root / "scenarios")
    return root


@pytest.fixture
def firmware(tmp_path: Path) -> list[str]:
    """Dummy firmware files, as ``--set`` options."""
    folder = tmp_path / "firmware"
    folder.mkdir()
    (folder / "bl1.bin").write_bytes(b"\x00" * 256)
    (folder / "corstone1000-flash-firmware-image.wic").write_bytes(b"\xff" * 4096)
    return ["--set", f"fvp.firmware.bl1={folder / 'bl1.bin'}",
            "--set", f"fvp.firmware.flash={folder / 'corstone1000-flash-firmware-image.wic'}"]


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``on_path(script)``: install the script as the model in tmp_path/bin, first on PATH."""
    bin_dir = tmp_path / "bin"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")

    def _on_path(script: str) -> Path:
        return _install(bin_dir, script)

    return _on_path


@pytest.fixture
def disguised_sim() -> str:
    """The simulator started exactly as a real model's executable would be."""
    return f'exec "{sys.executable}" -m fvp_harness.sim "$@"\n'


@pytest.fixture
def harness(workdir: Path, tmp_path: Path):
    """``harness(*args, timeout=120, env=None)``: run the CLI from the workdir; check nothing it
    started lives on."""

    def _run(*args: str, timeout: float = 120, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
        return run_cli(workdir, *args, timeout=timeout, env={**os.environ, **(env or {})},
                       scratch=tmp_path)

    return _run


def checklist(stdout: str) -> dict[str, tuple[str, str]]:
    """``doctor`` output as {check name: (status, detail)} (without the seconds a probe took)."""
    rows = {}
    for line in stdout.splitlines():
        match = re.match(r"^\s+(ok|warn|FAIL|skip)\s+(\S+(?: \S+)*)\s{2,}(.*?)(?: \(\d+\.\d s\))?$",
                         line)
        if match:
            rows[match.group(2)] = (match.group(1), match.group(3))
    return rows


def expected_c_params() -> int:
    """How many -C options the launch carries: the profile's parameters plus the firmware bl1 given
    as -C."""
    return len(load_profile("corstone1000-a320").params) + 1  # se.trustedBootROMloader.fname


# -- the disguised simulator -----------------------------------------------------------------------


def test_doctor_asks_the_binary_on_path(harness, on_path, disguised_sim: str,
                                        firmware: list[str]) -> None:
    binary = on_path(disguised_sim)
    done = harness("doctor", "scenarios/smoke.yaml", "--fvp", MODEL, *firmware)
    assert done.returncode == 0, done.stdout + done.stderr
    checks = checklist(done.stdout)
    assert checks["binary"] == ("ok", str(binary))
    assert checks["version"] == ("ok", VERSION)
    assert checks["parameters"] == ("ok", f"all {expected_c_params()} -C parameters exist")
    assert checks["firmware bl1"][0] == checks["firmware flash"][0] == "ok"
    assert checks["firmware bl1"][1].endswith("bl1.bin")


def test_run_through_the_binary_on_path(harness, workdir: Path, on_path, disguised_sim: str,
                                        firmware: list[str], tmp_path: Path) -> None:
    """A whole smoke run; simulator knobs (scenario or a stale shell variable) must not reach a real
    binary."""
    binary = on_path(disguised_sim)
    out = tmp_path / "out"
    done = harness("run", "scenarios/smoke.yaml", "--fvp", MODEL, *firmware, "-o", str(out), "-q",
                   "--set", "fvp.sim.fault_crash=boot", env={"FVP_SIM_FAULT_PANIC": "boot"})
    assert done.returncode == 0, done.stdout + done.stderr

    report = (out / "report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| ds_cnn"))
    assert "✓ yes" in row, row  # outputs identical
    assert re.search(r"\|\s+= [\d,]+ \|", row), row  # NPU cycles unchanged
    assert "**PASS**" in report and f"{MODEL} {VERSION}" in report

    manifest = json.loads((out / "manifest.json").read_text())
    fvp = manifest["fvp"]
    assert fvp["banner"].startswith(f"Fast Models [{VERSION}]")
    argv = fvp["argv"]
    assert argv[0] == str(binary) and "fvp_harness.sim" not in argv
    bl1, flash = firmware[1].split("=", 1)[1], firmware[3].split("=", 1)[1]
    assert argv[argv.index(f"se.trustedBootROMloader.fname={bl1}") - 1] == "-C"
    assert argv[argv.index("--data") + 1] == f"board.flash0={flash}@0x68000000"
    session = manifest["instances"]["s0"]
    assert session["argv"] == argv and session["version"] == VERSION
    assert session["stat"] and session["exit"] == "exit status 0"
    assert session["boot_seconds"] >= 1.4, "the simulator's default boot time, no knobs passed"


def test_binary_given_as_a_path_behind_a_wrapper(harness, tmp_path: Path,
                                                 firmware: list[str]) -> None:
    """``--fvp /abs/path`` (not on PATH), and a wrapper script that does not exec (as licence
    wrappers often do): the polite stop must reach the model behind it (its --stat block is
    kept)."""
    binary = _install(tmp_path / "opt" / "models" / "Linux64_GCC-9.3",
                      f'ARMLMD_LICENSE_FILE=27000@localhost "{sys.executable}" -m fvp_harness.sim '
                      '"$@"\n')
    doctor = harness("doctor", "scenarios/smoke.yaml", "--fvp", str(binary), *firmware)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert checklist(doctor.stdout)["binary"] == ("ok", str(binary))

    out = tmp_path / "out"
    done = harness("run", "scenarios/smoke.yaml", "--fvp", str(binary), *firmware, "-o", str(out),
                   "-q", "--set", "run.repetitions=1")
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    session = manifest["instances"]["s0"]
    assert session["argv"][0] == str(binary) and session["version"] == VERSION
    assert "Simulated time" in session["stat"], session  # the model itself got the polite SIGINT


def test_misspelt_parameter_is_caught(harness, on_path, disguised_sim: str, firmware: list[str],
                                      tmp_path: Path) -> None:
    on_path(disguised_sim)
    typo = ["--set", "fvp.params.host.ethosu.num_mac=256"]
    doctor = harness("doctor", "scenarios/smoke.yaml", "--fvp", MODEL, *firmware, *typo)
    assert doctor.returncode == 2, doctor.stdout + doctor.stderr
    status, detail = checklist(doctor.stdout)["parameters"]
    assert status == "FAIL" and "host.ethosu.num_mac (did you mean host.ethosu.num_macs?)" in detail

    began = time.monotonic()
    done = harness("run", "scenarios/smoke.yaml", "--fvp", MODEL, *firmware, *typo, "-o",
                   str(tmp_path / "out"))
    # doctor's own check, before anything is built or booted: a configuration error, nothing retried
    assert done.returncode == 2, done.stdout + done.stderr
    assert time.monotonic() - began < 30
    assert "host.ethosu.num_mac (did you mean host.ethosu.num_macs?)" in done.stderr
    assert "nothing was booted" in done.stderr and "session aborted" not in done.stderr
    assert not (tmp_path / "out" / "logs").exists()


# -- broken binaries -------------------------------------------------------------------------------


def test_licence_failure_is_reported_in_the_models_words(
    harness, on_path, firmware: list[str], tmp_path: Path
) -> None:
    on_path('echo "ERROR: License checkout failed for feature FM_Corstone-1000-A320 (no server)" '
            '>&2\nexit 1\n')
    words = "ERROR: License checkout failed for feature FM_Corstone-1000-A320 (no server)"
    doctor = harness("doctor", "scenarios/smoke.yaml", "--fvp", MODEL, *firmware)
    # deterministic: a second try is refused alike
    assert doctor.returncode == 2, doctor.stdout + doctor.stderr
    assert words in checklist(doctor.stdout)["version"][1]
    assert words in checklist(doctor.stdout)["parameters"][1]

    done = harness("run", "scenarios/smoke.yaml", "--fvp", MODEL, *firmware, "-o",
                   str(tmp_path / "out"))
    # the same checks, before the boot; nothing retried
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"version: `{MODEL} --version` failed (exit status 1): {words}" in done.stderr
    assert "nothing was booted" in done.stderr and not (tmp_path / "out" / "logs").exists()


def test_silent_hung_binary_is_a_port_error_and_leaves_nothing(
    harness, on_path, firmware: list[str], tmp_path: Path
) -> None:
    """Prints nothing, never exits (not even for --version), through a wrapper whose child is the
    hung process: the run gives up after the scaled-down boot timeout and kills every process group
    it started."""
    pids = tmp_path / "pids"
    on_path(f'echo $$ >> "{pids}"\nsleep 600\n')
    began = time.monotonic()
    done = harness("run", "scenarios/smoke.yaml", "--fvp", MODEL, *firmware, "-o",
                   str(tmp_path / "out"), "--set", "fvp.timeouts.boot=2")
    elapsed = time.monotonic() - began
    assert done.returncode == 3, done.stdout + done.stderr
    aborted = next(line for line in done.stderr.splitlines() if line.startswith("session aborted:"))
    # PortError
    assert "no port banner for host_terminal_0" in aborted and "after 2 s (phase boot)" in aborted
    assert "raise fvp.timeouts.boot" in aborted and "fvp.log" in aborted
    assert elapsed < 40, f"took {elapsed:.1f} s"
    started = [int(pid) for pid in pids.read_text().split()]
    # the preflight's two probes and --version for the run, then per boot (2 tries): the model, its
    # --version
    assert len(started) == 7, started
    assert not [pgid for pgid in started if process_group_members(pgid)], "process groups left"
