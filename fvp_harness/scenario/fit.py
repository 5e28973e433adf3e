"""Can the platform run a scenario's runners and programs? Read from the files on this host, before
anything boots.

Each refusal would otherwise fail every unit minutes later and look like the runner's fault:
docs/targets.md, "Programs the platform cannot run". The simulator's magic numbers are repeated from
``sim/`` (the harness never imports it).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from fvp_harness.errors import ConfigurationError
from fvp_harness.formats.pte import ETHOS_U_BACKEND, PteError, program_identifier, read_program
from fvp_harness.profiles import Profile
from fvp_harness.scenario.executable import elf_header, is_sim_baremetal_runner
from fvp_harness.scenario.model import Scenario

__all__ = ["ARCHITECTURES", "misfits", "model_problem", "refuse_misfits", "runner_problem"]

ARCHITECTURES: dict[str, tuple[int, int, str, str]] = {
    # profile.architecture -> ELF e_machine, ELF class, what it is, a compiler that builds for it
    "aarch64": (183, 2, "AArch64 (64-bit Arm, Linux)", "aarch64-linux-gnu-g++"),
    "arm": (40, 1, "32-bit Arm (Cortex-M, bare metal)", "arm-none-eabi-gcc"),
}
_HEAD = 64
_OTHER_TARGETS = (
    "point fvp.binary (or --fvp) at a real FVP, or run it on QEMU (platform: qemu-aarch64-virt) or "
    "on this host (target: host)"
)


def _head(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(_HEAD)
    except OSError:  # missing (built later) or unreadable: the artifact checks say so
        return None


def runner_problem(
    scenario: Scenario, profile: Profile, build: str, *, simulated: bool | None = None
) -> str | None:
    """Why the platform cannot run ``build``'s runner, or None (also when the file is not there
    yet). ``simulated``: whether the model is the simulator (default ``fvp.binary: sim``;
    doctor's ``--fvp`` may say otherwise)."""
    runner = scenario.builds[build].runner
    head = _head(runner)
    header = elf_header(head) if head else None
    if header is None or scenario.target == "host":  # host runners: scenario.executable
        return None
    where = f"builds.{build}.runner: {runner}"
    if scenario.fvp.is_sim if simulated is None else simulated:
        if is_sim_baremetal_runner(runner):
            return None  # the simulator's own bare-metal runner
        tool = "sim baremetal-runner" if profile.baremetal else "sim runner"
        return (
            f"{where} is a real program (an ELF executable for {header.what}), and the embedded "
            "simulator (fvp.binary: sim) runs only its own emulated runners (`fvp-harness "
            f"{tool}`); {_OTHER_TARGETS}"
        )
    if profile.architecture is None or profile.architecture not in ARCHITECTURES:
        return None
    machine, elf_class, what, compiler = ARCHITECTURES[profile.architecture]
    if (header.machine, header.elf_class) != (machine, elf_class):
        return (
            f"{where} is an ELF executable for {header.what}, and platform {profile.name} runs "
            f"{what} programs: build the runner for {profile.architecture} (e.g. with {compiler})"
        )
    return None


def model_problem(
    scenario: Scenario, profile: Profile, build: str, model: str, *, simulated: bool | None = None
) -> str | None:
    """Why the platform cannot run ``build``'s program of ``model``, or None (also when it is not
    there yet)."""
    path = scenario.model_file(build, model)
    head = _head(path)
    identifier = program_identifier(head) if head else None
    if identifier is None:
        return None
    declared = scenario.model_artifact(build, model)
    owner = f"build {build}" if declared.startswith("builds.") else "every build"
    where = f"{declared} ({owner}): {path}"
    if (scenario.fvp.is_sim if simulated is None else simulated) and scenario.target != "host":
        return (
            f"{where} is a real ExecuTorch program ({identifier}), and the simulator's emulated "
            f"runners read only its own model files (`fvp-harness sim model`); {_OTHER_TARGETS} "
            "with a real runner"
        )
    if scenario.target != "host" and profile.npu_family is not None:
        return None
    try:
        program = read_program(Path(path).read_bytes())
    except (PteError, OSError) as exc:
        return f"{where} cannot be read as an ExecuTorch program: {exc}"
    methods = [plan.name for plan in program.plans if ETHOS_U_BACKEND in plan.backends]
    if not methods:
        return None
    place = "this host (target: host)" if scenario.target == "host" else f"platform {profile.name}"
    return (
        f"{where} is delegated to the Ethos-U NPU ({ETHOS_U_BACKEND}, method "
        f"{', '.join(methods)}), and {place} has no Ethos-U: the runtime refuses it at method load "
        "(Backend EthosUBackend is not registered); export it for the CPU (portable or XNNPACK), "
        "or run it on a platform with the NPU (corstone1000-a320, corstone300-u55, corstone320-u85)"
    )


def misfits(
    scenario: Scenario,
    profile: Profile,
    builds: Iterable[str] | None = None,
    *,
    simulated: bool | None = None,
) -> list[str]:
    """Every problem of the runners and programs of ``builds`` (default: all) on the platform, in
    scenario order; files not built yet are left out. ``simulated``: as ``runner_problem``."""
    problems: list[str] = []
    seen: set[str] = set()
    for build in builds if builds is not None else scenario.builds:
        problem = runner_problem(scenario, profile, build, simulated=simulated)
        if problem is not None:
            problems.append(problem)
        for model in scenario.models:
            path = scenario.model_file(build, model)
            if path in seen and scenario.model_artifact(build, model).startswith("models."):
                continue  # one model file shared by every build: said once
            seen.add(path)
            problem = model_problem(scenario, profile, build, model, simulated=simulated)
            if problem is not None:
                problems.append(problem)
    return problems


def refuse_misfits(
    scenario: Scenario,
    profile: Profile,
    builds: Iterable[str] | None = None,
    *,
    when: str = "nothing was booted",
) -> None:
    """``misfits`` as a ``ConfigurationError`` (exit 2) naming every problem; nothing when there is
    none."""
    problems = misfits(scenario, profile, builds)
    if problems:
        raise ConfigurationError(
            f"the platform cannot run these files ({when}):\n"
            + "\n".join(f"  {problem}" for problem in problems)
        )
