"""``scenario/fit.py``: which runners and programs a platform refuses before anything boots, from
the files' own bytes: the ELF machine against the profile's architecture, the simulator's own
artifacts, Ethos-U programs where there is no NPU. Each case was a failure of every unit before
(126, or a program that does not load)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fvp_harness.errors import ConfigurationError
from fvp_harness.profiles import load_profile
from fvp_harness.run.doctor import fit_checks
from fvp_harness.run.plan import build_plan
from fvp_harness.scenario import load_scenario
from fvp_harness.scenario.fit import misfits, refuse_misfits
from fvp_harness.scenario.model import Scenario
from fvp_harness.sim.baremetal.artifact import BareMetalArtifact, encode_artifact
from tests.formats.programs import flatc_program


def elf(path: Path, machine: int, elf_class: int) -> Path:
    """The first bytes of an ELF executable for ``machine`` (what the kernel and the check read)."""
    head = b"\x7fELF" + bytes([elf_class, 1, 1, 0]) + bytes(8) + (2).to_bytes(2, "little")
    path.write_bytes(head + machine.to_bytes(2, "little") + bytes(44))
    path.chmod(0o755)
    return path


AARCH64, ARM, X86_64 = (183, 2), (40, 1), (62, 2)


def scenario(
    tmp_path: Path, runner: Path, model: Path, *, binary: str = "/opt/FVP", target: str = "fvp"
) -> Scenario:
    return Scenario.model_validate(
        {
            "name": "s",
            "target": target,
            "fvp": {"binary": binary},
            "builds": {"before": {"runner": str(runner)}, "after": {"runner": str(runner)}},
            "models": {"m": {"file": str(model)}},
        }
    )


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "m.model"
    path.write_bytes(b"FVPSIMMD" + bytes(56))
    return path


@pytest.mark.parametrize(
    ("platform", "good", "bad"),
    [
        ("qemu-aarch64-virt", AARCH64, X86_64),
        ("corstone1000-a320", AARCH64, ARM),
        ("corstone1000", AARCH64, X86_64),
        ("corstone300-u55", ARM, AARCH64),
        ("corstone320-u85", ARM, X86_64),
    ],
)
def test_a_runner_for_another_cpu_is_refused_naming_file_build_and_fix(
    tmp_path, model, platform, good, bad
):
    profile = load_profile(platform)
    fine = scenario(tmp_path, elf(tmp_path / "good", *good), model)
    assert misfits(fine, profile) == []
    wrong = scenario(tmp_path, elf(tmp_path / "bad", *bad), model)
    problems = misfits(wrong, profile)
    assert len(problems) == 2 and problems[0].startswith(
        f"builds.before.runner: {tmp_path / 'bad'} is an ELF "
    )
    assert f"platform {platform} runs" in problems[0] and "build the runner for" in problems[0]
    with pytest.raises(ConfigurationError, match="nothing was booted"):
        refuse_misfits(wrong, profile)


def test_the_simulator_refuses_a_real_elf_runner_and_a_real_program(tmp_path, model):
    profile = load_profile("corstone1000-a320")
    runner = elf(tmp_path / "executor_runner", *AARCH64)
    problems = misfits(scenario(tmp_path, runner, model, binary="sim"), profile)
    assert len(problems) == 2
    assert "is a real program (an ELF executable for AArch64 (64-bit))" in problems[0]
    assert (
        "`fvp-harness sim runner`" in problems[0]
        and "point fvp.binary (or --fvp) at a real FVP" in problems[0]
    )
    sim_runner = tmp_path / "sim_runner"
    sim_runner.write_bytes(b"FVPSIMRN" + bytes(56))
    program = flatc_program(tmp_path / "real.pte")
    problems = misfits(scenario(tmp_path, sim_runner, program, binary="sim"), profile)
    assert problems == [
        f"models.m.file (every build): {program} is a real ExecuTorch program (ET12), and the "
        "simulator's emulated runners read only its own model files (`fvp-harness sim model`); "
        "point fvp.binary (or --fvp) at a real FVP, or run it on QEMU (platform: "
        "qemu-aarch64-virt) or on this host (target: host) with a real runner"
    ]
    bare = misfits(
        scenario(tmp_path, elf(tmp_path / "arm", *ARM), model, binary="sim"),
        load_profile("corstone300-u55"),
    )
    assert len(bare) == 2 and "`fvp-harness sim baremetal-runner`" in bare[0]


def test_the_simulators_bare_metal_runner_elf_runs_on_the_simulator_only(tmp_path, model):
    """The emulated arm_executor_runner is an EM_ARM ELF now (so the harness reads its sections):
    the simulator still takes it (its .fvpsim section says whose it is), so does a binary given with
    --fvp (a stand-in named like the real model runs it: 32-bit Arm, as the platform's), and a real
    EM_ARM runner without that section is still refused on the simulator."""
    runner = tmp_path / "sim.elf"
    runner.write_bytes(encode_artifact(BareMetalArtifact(semihosting=True)))
    assert runner.read_bytes()[:4] == b"\x7fELF"
    corstone = load_profile("corstone300-u55")
    assert misfits(scenario(tmp_path, runner, model, binary="sim"), corstone) == []
    assert misfits(scenario(tmp_path, runner, model), corstone) == []
    # the same ELF, the section renamed: a real runner to the check
    stripped = tmp_path / "stripped.elf"
    stripped.write_bytes(runner.read_bytes().replace(b".fvpsim", b".other"))
    refused = misfits(scenario(tmp_path, stripped, model, binary="sim"), corstone)
    assert (len(refused) == 2 and
            "is a real program (an ELF executable for ARM (AArch32) (32-bit))" in refused[0])


def test_an_ethos_u_program_is_refused_where_there_is_no_npu(tmp_path):
    runner = elf(tmp_path / "r", *AARCH64)
    ethos = flatc_program(tmp_path / "ethos.pte", backend="EthosUBackend")
    xnnpack = flatc_program(tmp_path / "xnn.pte", backend="XnnpackBackend")
    qemu = load_profile("qemu-aarch64-virt")
    problems = misfits(scenario(tmp_path, runner, ethos), qemu)
    assert problems == [
        f"models.m.file (every build): {ethos} is delegated to the Ethos-U NPU (EthosUBackend, "
        "method forward), and platform qemu-aarch64-virt has no Ethos-U: the runtime refuses it at "
        "method load (Backend EthosUBackend is not registered); export it for the CPU (portable or "
        "XNNPACK), or run it on a platform with the NPU (corstone1000-a320, corstone300-u55, "
        "corstone320-u85)"
    ]
    assert misfits(scenario(tmp_path, runner, xnnpack), qemu) == []
    assert misfits(scenario(tmp_path, runner, ethos), load_profile("corstone1000-a320")) == []
    assert (
        "corstone1000 has no Ethos-U"
        in misfits(scenario(tmp_path, runner, ethos), load_profile("corstone1000"))[0]
    )
    host = misfits(scenario(tmp_path, runner, ethos, target="host"), qemu)
    assert len(host) == 1 and "and this host (target: host) has no Ethos-U" in host[0]


def test_a_build_of_its_own_program_is_named_and_a_damaged_program_is_refused(tmp_path):
    runner = elf(tmp_path / "r", *AARCH64)
    ethos = flatc_program(tmp_path / "ethos.pte", backend="EthosUBackend")
    own = Scenario.model_validate(
        {
            "name": "s",
            "fvp": {"binary": "/opt/FVP"},
            "builds": {
                "before": {"runner": str(runner)},
                "after": {"runner": str(runner), "models": {"m": {"file": str(ethos)}}},
            },
            "models": {"m": {"file": str(flatc_program(tmp_path / "cpu.pte"))}},
        }
    )
    problems = misfits(own, load_profile("qemu-aarch64-virt"))
    assert len(problems) == 1 and problems[0].startswith(
        f"builds.after.models.m.file (build after): {ethos} is "
    )
    cut = tmp_path / "cut.pte"
    cut.write_bytes(ethos.read_bytes()[:40])
    problems = misfits(scenario(tmp_path, runner, cut), load_profile("qemu-aarch64-virt"))
    assert len(problems) == 1 and "cannot be read as an ExecuTorch program" in problems[0]


def test_files_not_built_yet_wait_for_their_build(tmp_path):
    missing = scenario(tmp_path, tmp_path / "not-yet", tmp_path / "not-yet.pte", binary="sim")
    assert misfits(missing, load_profile("corstone1000-a320")) == []


def test_doctor_lists_the_check(tmp_path, model):
    profile = load_profile("qemu-aarch64-virt")
    checks = fit_checks(scenario(tmp_path, elf(tmp_path / "bad", *X86_64), model), profile)
    assert [(check.name, check.status) for check in checks] == [
        ("programs", "fail"),
        ("programs", "fail"),
    ]
    checks = fit_checks(scenario(tmp_path, elf(tmp_path / "good", *AARCH64), model), profile)
    assert [(check.name, check.status, check.detail) for check in checks] == [
        ("programs", "ok", "the runners and programs that exist fit qemu-aarch64-virt (aarch64)")
    ]


def test_the_architecture_is_no_part_of_a_content_key(write):
    write("r", "runner")
    write("m", "model")
    path = write(
        "s.yaml",
        "name: s\nplatform: qemu-aarch64-virt\nbuilds: {b: {runner: r}}\nmodels: {m: {file: m}}\n",
    )
    loaded = load_scenario(path)
    key = build_plan(loaded).units[0].key
    other = loaded.profile.model_copy(update={"architecture": "arm"})
    assert build_plan(loaded.scenario, loaded.path, other).units[0].key == key


@pytest.mark.slow
def test_real_programs_exported_with_executorch(tmp_path):
    """The real lane: programs the ExecuTorch toolchain exports (portable, XNNPACK, Ethos-U85-256),
    read as the runtime would: only the Ethos-U one is refused where there is no NPU, and none
    where there is one."""
    from tests.formats.toolchain import export_programs

    programs = export_programs(tmp_path / "pte")
    runner = elf(tmp_path / "r", *AARCH64)
    for platform in ("qemu-aarch64-virt", "corstone1000-a320"):
        profile = load_profile(platform)
        refused = {
            kind
            for kind, path in programs.items()
            if misfits(scenario(tmp_path, runner, path), profile)
        }
        assert refused == ({"ethos-u85-256"} if platform == "qemu-aarch64-virt" else set()), (
            platform
        )
    host = misfits(
        scenario(tmp_path, runner, programs["ethos-u85-256"], target="host"),
        load_profile("qemu-aarch64-virt"),
    )
    assert len(host) == 1 and "EthosUBackend, method forward" in host[0]
