"""Runners and programs the platform cannot run are refused before any unit, through the real
command line (exit 2, one message naming the file, the build and the fix): each of these used to
fail every unit instead (``Exec format error``, 126, or a program that does not load). Stand-in
FVP binaries are sh scripts around the simulator that log every launch, as in
``test_preflight_e2e.py``: the probes may run, the model never starts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.formats.programs import flatc_program
from tests.helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.sim]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    return tmp_path


def _harness(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = run_cli(root, *args, timeout=180, env=dict(os.environ), scratch=root / "scratch")
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _host_elf(folder: Path, name: str = "executor_runner") -> Path:
    """A real ELF program of this host (x86-64 here): what a runner built for the wrong machine
    looks like."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    shutil.copy(shutil.which("true") or "/bin/true", path)
    return path


def _nothing_ran(folder: Path) -> None:
    assert (
        not (folder / "records.jsonl").exists()
        or not (folder / "records.jsonl").read_text().strip()
    )
    assert (
        not [path for path in (folder / "logs").glob("s*")] if (folder / "logs").exists() else True
    )


def test_a_runner_for_another_cpu_is_refused_by_doctor_run_and_make(workdir: Path) -> None:
    launches = workdir / "bin" / "launches"
    binary = workdir / "bin" / "FVP_Corstone-1000-A320"
    binary.parent.mkdir()
    binary.write_text(
        f'#!/bin/sh\necho "$*" >> "{launches}"\nexec "{sys.executable}" -m fvp_harness.sim "$@"\n'
    )
    binary.chmod(0o755)
    firmware = workdir / "firmware"
    firmware.mkdir()
    (firmware / "bl1.bin").write_bytes(b"\x00" * 256)
    (firmware / "flash.wic").write_bytes(b"\xff" * 4096)
    runner = _host_elf(workdir / "x86")
    args = [
        "scenarios/smoke.yaml",
        "--fvp",
        str(binary),
        "--set",
        f"fvp.firmware.bl1={firmware / 'bl1.bin'}",
        "--set",
        f"fvp.firmware.flash={firmware / 'flash.wic'}",
        "--set",
        f"builds.after.runner={runner}",
        "--set",
        "builds.after.build=null",
    ]
    doctor = _harness(workdir, "doctor", *args)
    assert doctor.returncode == 2, doctor.stdout + doctor.stderr
    assert any(
        "FAIL" in row and "programs" in row and "builds.after.runner" in row
        for row in doctor.stdout.splitlines()
    ), doctor.stdout
    done = _harness(workdir, "run", *args, "-o", "out")
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        f"builds.after.runner: {runner} is an ELF executable for x86-64 (64-bit), and platform "
        "corstone1000-a320 runs AArch64 (64-bit Arm, Linux) programs: build the runner for aarch64 "
        "(e.g. with aarch64-linux-gnu-g++)"
    ) in done.stderr
    assert "nothing was booted" in done.stderr
    assert set(launches.read_text().split("\n")) <= {"--version", "--list-params", ""}, (
        "only the probes"
    )
    assert not (workdir / ".artifacts").exists(), "nothing built"
    _nothing_ran(workdir / "out")
    made = _harness(workdir, "make", *args, "--results", "made")
    assert made.returncode == 2 and "builds.after.runner" in made.stdout + made.stderr, (
        made.stdout + made.stderr
    )
    assert not (workdir / ".artifacts").exists()


def test_the_simulator_refuses_a_real_elf_runner_and_a_real_program_up_front(workdir: Path) -> None:
    runner = _host_elf(workdir / "real")
    done = _harness(
        workdir,
        "run",
        "scenarios/smoke.yaml",
        "-o",
        "out",
        "--set",
        f"builds.after.runner={runner}",
        "--set",
        "builds.after.build=null",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        f"builds.after.runner: {runner} is a real program (an ELF executable for x86-64 (64-bit)), "
        "and the embedded simulator (fvp.binary: sim) runs only its own emulated runners"
    ) in done.stderr
    assert "point fvp.binary (or --fvp) at a real FVP" in done.stderr
    _nothing_ran(workdir / "out")
    program = flatc_program(workdir / "programs" / "ds_cnn.pte")
    done = _harness(
        workdir,
        "run",
        "scenarios/smoke.yaml",
        "-o",
        "out2",
        "--set",
        f"models.ds_cnn.file={program}",
        "--set",
        "models.ds_cnn.build=null",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        f"models.ds_cnn.file (every build): {program} is a real ExecuTorch program (ET12), and the "
        "simulator's emulated runners read only its own model files"
    ) in done.stderr
    _nothing_ran(workdir / "out2")


def _host_args(workdir: Path) -> list[str]:
    before, after = (
        _host_elf(workdir / "host", "runner-before"),
        _host_elf(workdir / "host", "runner-after"),
    )
    return [
        "--set",
        "target=host",
        "--set",
        f"builds.before.runner={before}",
        "--set",
        "builds.before.build=null",
        "--set",
        f"builds.after.runner={after}",
        "--set",
        "builds.after.build=null",
    ]


def test_an_ethos_u_program_on_this_host_is_refused_before_and_after_its_build(
    workdir: Path,
) -> None:
    program = flatc_program(workdir / "programs" / "ds_cnn_ethos.pte", backend="EthosUBackend")
    done = _harness(
        workdir,
        "run",
        "scenarios/smoke.yaml",
        "-o",
        "out",
        *_host_args(workdir),
        "--set",
        f"models.ds_cnn.file={program}",
        "--set",
        "models.ds_cnn.build=null",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        f"models.ds_cnn.file (every build): {program} is delegated to the Ethos-U NPU "
        "(EthosUBackend, method forward), and this host (target: host) has no Ethos-U"
    ) in done.stderr
    assert "nothing was built or run" in done.stderr and not (workdir / ".artifacts").exists()
    _nothing_ran(workdir / "out")
    built = (
        workdir / "later" / "ds_cnn.pte"
    )  # made by the scenario's build: checked after it, before the first unit
    done = _harness(
        workdir,
        "run",
        "scenarios/smoke.yaml",
        "-o",
        "out2",
        *_host_args(workdir),
        "--set",
        f"models.ds_cnn.file={built}",
        "--set",
        f"models.ds_cnn.build=cp {program} {{output}}",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        built.is_file()
        and "before the first unit" in done.stderr
        and "EthosUBackend" in done.stderr
    )
    assert not (workdir / "out2" / "records.jsonl").is_file() or not json.loads(
        "[" + ",".join((workdir / "out2" / "records.jsonl").read_text().split()) + "]"
    )
