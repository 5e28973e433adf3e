"""``target: host`` is checked before anything runs: a runner this host cannot execute is refused by
``validate``, by ``doctor`` and by ``run``, at the ``file:line:col`` of its ``runner`` field, and a
host report claims no FVP."""

from __future__ import annotations

import platform
import struct
import sys
from pathlib import Path

import pytest

from fvp_harness.cli.main import main
from fvp_harness.errors import ScenarioError
from fvp_harness.profiles import load_profile
from fvp_harness.report.rendering.captions import context_line
from fvp_harness.report.rendering.context import ReportContext
from fvp_harness.run.doctor import doctor_exit_code, run_doctor
from fvp_harness.scenario import load_scenario
from fvp_harness.scenario.executable import (
    SIM_BAREMETAL_MAGIC,
    SIM_BAREMETAL_SECTION,
    SIM_RUNNER_MAGIC,
    SIM_VGF_MAGIC,
    host_exec_problem,
    is_sim_baremetal_runner,
)
from fvp_harness.sim.baremetal.artifact import (
    BAREMETAL_MAGIC,
    BAREMETAL_SECTION,
    BareMetalArtifact,
    encode_artifact,
)
from fvp_harness.sim.networks.modelfile import RUNNER_MAGIC, RunnerArtifact, encode_runner
from fvp_harness.sim.workloads.vgf_runner import VGF_MAGIC, VgfArtifact, make_artifact

X86_64, AARCH64, ARM = 62, 183, 40


def _elf(path: Path, machine: int, *, bits: int = 64, e_type: int = 2, mode: int = 0o755) -> Path:
    """A file with just an ELF header: what the kernel (and the check) looks at."""
    ident = b"\x7fELF" + bytes([2 if bits == 64 else 1, 1, 1]) + bytes(9)
    path.write_bytes(ident + struct.pack("<HHI", e_type, machine, 1) + bytes(40))
    path.chmod(mode)
    return path


def _file(path: Path, data: bytes, mode: int = 0o755) -> Path:
    path.write_bytes(data)
    path.chmod(mode)
    return path


def test_the_simulators_magic_numbers_are_the_ones_the_check_knows() -> None:
    assert SIM_RUNNER_MAGIC == RUNNER_MAGIC and SIM_VGF_MAGIC == VGF_MAGIC
    assert (SIM_BAREMETAL_MAGIC, SIM_BAREMETAL_SECTION) == (BAREMETAL_MAGIC, BAREMETAL_SECTION)


def test_the_simulators_bare_metal_runner_is_named_not_taken_for_a_foreign_elf(
        tmp_path: Path) -> None:
    path = _file(tmp_path / "arm_executor_runner",
                 encode_artifact(BareMetalArtifact(semihosting=True)))
    assert is_sim_baremetal_runner(path)
    # an EM_ARM ELF, yet not a program for any host
    problem = host_exec_problem(path, machine="armv7l")
    assert (problem is not None and "the simulator's bare-metal runner" in problem and
            ".fvpsim" in problem)
    other = _file(tmp_path / "other", path.read_bytes().replace(b".fvpsim", b".other"))
    assert not is_sim_baremetal_runner(other) and host_exec_problem(other, machine="armv7l") is None


@pytest.mark.parametrize(("machine", "elf", "bits", "runs"), [
    ("x86_64", X86_64, 64, True),
    ("x86_64", AARCH64, 64, False),
    ("aarch64", AARCH64, 64, True),
    ("aarch64", X86_64, 64, False),
    ("aarch64", ARM, 32, True),
    ("armv7l", AARCH64, 64, False),
])
def test_an_elf_runs_where_its_machine_is_the_hosts(
    tmp_path: Path, machine: str, elf: int, bits: int, runs: bool
) -> None:
    problem = host_exec_problem(_elf(tmp_path / "runner", elf, bits=bits), machine=machine)
    if runs:
        assert problem is None
    else:
        assert (problem is not None and f"this host is {machine}" in problem and
                "Exec format error" in problem)


def test_an_aarch64_runner_names_its_machine(tmp_path: Path) -> None:
    problem = host_exec_problem(_elf(tmp_path / "runner", AARCH64), machine="x86_64")
    assert problem is not None and "ELF executable for AArch64 (64-bit, e_machine 183)" in problem


def test_an_object_file_is_not_an_executable(tmp_path: Path) -> None:
    problem = host_exec_problem(_elf(tmp_path / "runner.o", X86_64, e_type=1), machine="x86_64")
    assert problem is not None and "relocatable object" in problem


def test_a_simulator_runner_runs_only_in_the_simulators_guest(tmp_path: Path) -> None:
    runner = _file(tmp_path / "executor_runner", encode_runner(RunnerArtifact("reuse")))
    problem = host_exec_problem(runner)
    assert (problem is not None and "simulator runner artifact (FVPSIMRN)" in problem and
            "guest" in problem)


def test_the_vgf_runner_has_a_host_mode_through_the_python_that_made_it(tmp_path: Path) -> None:
    here = _file(tmp_path / "vgf-here", make_artifact(VgfArtifact(), python=sys.executable))
    assert host_exec_problem(here) is None
    elsewhere = _file(tmp_path / "vgf-elsewhere",
                      make_artifact(VgfArtifact(), python="/opt/nowhere/bin/python3"))
    problem = host_exec_problem(elsewhere)
    assert (problem is not None and "/opt/nowhere/bin/python3" in problem and
            "sim vgf-runner" in problem)


@pytest.mark.parametrize(("first_line", "problem"), [
    (b"#!/bin/sh", None),
    (b"#!/no/such/interpreter -x", "a script for /no/such/interpreter"),
    (b"#!/usr/bin/env fvp-harness-no-such-program",
     "fvp-harness-no-such-program, which is not on this host's PATH"),
    (b"#!", "names no interpreter"),
])
def test_a_script_needs_its_interpreter(tmp_path: Path, first_line: bytes,
                                        problem: str | None) -> None:
    found = host_exec_problem(_file(tmp_path / "runner.sh", first_line + b"\necho hi\n"))
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_a_runner_without_an_execute_bit_is_refused(tmp_path: Path) -> None:
    problem = host_exec_problem(_file(tmp_path / "runner.sh", b"#!/bin/sh\necho hi\n", mode=0o644))
    assert problem is not None and "no execute permission" in problem


def test_binary_data_and_folders_are_not_programs_but_text_is_a_shell_script(
        tmp_path: Path) -> None:
    pte = host_exec_problem(_file(tmp_path / "model.pte", b"\x1c\x00\x00\x00ET12" + bytes(64)))
    assert pte is not None and "neither an ELF executable nor a script" in pte
    assert "a folder" in (host_exec_problem(tmp_path) or "")
    assert host_exec_problem(_file(tmp_path / "plain", b"echo hi\n")) is None
    assert host_exec_problem(tmp_path / "not-built-yet") is None, "checked after its build"


# -- validate, doctor, report ----------------------------------------------------------------------


def _scenario(tmp_path: Path, runner: Path, target: str = "host") -> Path:
    model = _file(tmp_path / "m.model", b"x", mode=0o644)
    path = tmp_path / "host.yaml"
    path.write_text(
        "name: host\n"
        f"target: {target}\n"
        "builds:\n"
        f"  before:\n    runner: {runner.name}\n"
        f"  after:\n    runner: {runner.name}\n"
        f"models:\n  m:\n    file: {model.name}\n"
    )
    return path


def test_validate_refuses_a_runner_built_for_the_model_at_its_runner_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    foreign = X86_64 if platform.machine().lower() in ("aarch64", "arm64") else AARCH64
    path = _scenario(tmp_path, _elf(tmp_path / "executor_runner", foreign))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    problems = caught.value.problems
    assert (len(problems) == 2 and
            all("cannot run on this host (target: host)" in p for p in problems))
    assert (":5:13: builds.before.runner:" in problems[0] and
            ":7:13: builds.after.runner:" in problems[1])
    assert main(["validate", str(path)]) == 2
    assert ":5:13: builds.before.runner:" in capsys.readouterr().err


def test_set_target_host_is_refused_where_the_runner_is_written(tmp_path: Path) -> None:
    runner = _file(tmp_path / "executor_runner", encode_runner(RunnerArtifact("reuse")))
    path = _scenario(tmp_path, runner, target="fvp")
    load_scenario(path)  # on the simulator it is fine
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path, ["target=host"])
    assert any(":5:13: builds.before.runner:" in p and "FVPSIMRN" in p
               for p in caught.value.problems)


def test_doctor_refuses_the_runner_and_skips_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = _file(tmp_path / "executor_runner", encode_runner(RunnerArtifact("reuse")))
    path = _scenario(tmp_path, runner, target="fvp")
    assert main(["doctor", str(path), "--set", "target=host"]) == 2
    out = capsys.readouterr().out
    assert "skip  model" in out and "embedded simulator" not in out
    assert ("FAIL  runner before" in out and ":5:13: builds.before.runner:" in out and
            "FVPSIMRN" in out)
    assert "some checks failed (exit 2): runner before, runner after" in out


def test_doctor_passes_a_runner_this_host_runs(tmp_path: Path) -> None:
    path = _scenario(tmp_path, _file(tmp_path / "runner.sh", b"#!/bin/sh\necho hi\n"))
    loaded = load_scenario(path)
    checks = run_doctor(loaded.scenario, load_profile("corstone1000-a320"))
    assert {check.name: check.status for check in checks} == {
        "model": "skip", "runner before": "ok", "runner after": "ok", "programs": "ok"}
    assert doctor_exit_code(checks) == 0


def test_a_host_report_names_the_host_not_an_fvp() -> None:
    manifest = {"scenario": {"name": "vgf", "resolved": {"target": "host"}},
                "platform": "corstone1000-a320",
                "fvp": {"binary": "sim", "version": "11.30.27"},
                "host": {"hostname": "bench1", "machine": "x86_64"},
                "started": "2026-03-01T10:00:00Z"}
    context = ReportContext.from_manifest(manifest)
    line = context_line(context, (), [])
    assert "Host: **bench1 (x86_64)**" in line and "FVP" not in line and "Platform" not in line
    fvp = ReportContext.from_manifest({**manifest,
                                       "scenario": {"name": "vgf", "resolved": {"target": "fvp"}}})
    assert "FVP: **sim 11.30.27**" in context_line(fvp, (), []) and fvp.host is None


def test_host_commands_put_no_secret_on_a_world_readable_argv(tmp_path):
    """The shell gets the command as a 0600 script file, not as ``-c TEXT``: ``ps``
    (``/proc/PID/cmdline``) shows no environment value of the command; the runner still gets it in
    its environment."""
    from fvp_harness.targets.host import HostTarget

    secret = "argv-s3cr3t-value"
    with HostTarget(log_dir=tmp_path / "logs") as target:
        done = target.run(f"API_TOKEN={secret} sh -c 'tr \"\\0\" \" \" < /proc/$PPID/cmdline; "
                          "echo; printf %s \"$API_TOKEN\" | wc -c'; tr '\\0' ' ' < "
                          "/proc/$$/cmdline")
        leftovers = list(target.workdir.glob(".command-*"))
    assert done.exit_status == 0, done.output
    assert secret not in done.output and "/bin/sh" in done.output
    assert f"{len(secret)}\n" in done.output  # the child had it in its environment
    assert leftovers == []  # the script file is removed once the command ended
