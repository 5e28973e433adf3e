"""A scenario's instances: open the target a scenario names (an FVP, the simulator, a bare-metal
platform, or this host) and ask a model binary for its identity.

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Literal

from fvp_harness.profiles import Profile, load_profile
from fvp_harness.scenario import LoadedScenario, Scenario, load_scenario
from fvp_harness.targets.baremetal import BaremetalTarget, model_program
from fvp_harness.targets.base import Target
from fvp_harness.targets.fvp import query_version, sim_environment
from fvp_harness.targets.fvp_target import FvpTarget
from fvp_harness.targets.host import HostTarget

__all__ = [
    "TargetFactory",
    "default_target_factory",
    "make_target",
    "open_target",
    "query_fvp_version",
    "resolve_scenario",
    "transfer_for",
]

TargetFactory = Callable[[str, Path], AbstractContextManager[Target]]
"""``factory(instance_name, log_dir)`` -> a context manager that yields an open ``Target`` and
closes it."""


def resolve_scenario(scenario: str | Path | LoadedScenario | Scenario, *,
                     profile: Profile | None = None,
                     overrides: Iterable[str] = (), fvp_binary: str | None = None
                     ) -> tuple[Scenario, Profile, Path | None]:
    """(scenario, profile, scenario folder) from a path, a ``LoadedScenario`` or a ``Scenario``. A
    path is loaded without checking that artifact files exist (opening a target needs none of
    them)."""
    if isinstance(scenario, (str, Path)):
        scenario = load_scenario(Path(scenario), list(overrides), fvp_binary=fvp_binary,
                                 check_files=False)
    if isinstance(scenario, LoadedScenario):
        return scenario.scenario, profile or scenario.profile, scenario.directory
    return scenario, profile or load_profile(scenario.platform), None


def transfer_for(method: str) -> Literal["console", "ssh", "auto"]:
    """How an instance's ``put``/``get`` move files for a scenario's ``deploy.method``: as the run
    deploys, so ``open_target(...).put`` and the pytest fixtures take ssh where the run's ``auto``
    does (tens of MB/s instead of the console's one or two); ``preloaded`` (the run copies nothing)
    copies a user's file as ``auto`` would."""
    if method in ("console", "ssh"):
        return "console" if method == "console" else "ssh"
    return "auto"


def make_target(
    scenario: Scenario,
    profile: Profile,
    *,
    log_dir: Path | str,
    name: str = "s0",
    timeout_scale: float = 1.0,
    binary: str | None = None,
    base_dir: Path | None = None,
    quiet_kernel: bool = True,
    kernel_line: str | None = "default",
) -> FvpTarget | HostTarget:
    """The (not yet opened) target of a scenario: this host for ``target: host``, a
    ``BaremetalTarget`` (one model launch per unit) for a bare-metal platform, else an FVP instance
    whose ``put``/``get`` move files the way the run deploys them (``transfer_for``)."""
    if scenario.target == "host":
        return HostTarget(log_dir=Path(log_dir), name=name,
                          command_timeout=scenario.fvp.timeouts.command,
                          timeout_scale=scenario.fvp.timeout_scale * timeout_scale,
                          redact=scenario.secret_values(), max_output=scenario.run.max_output)
    if profile.baremetal:
        return BaremetalTarget(scenario.fvp, profile, log_dir=log_dir, name=name,
                               timeout_scale=timeout_scale,
                               binary=binary, timelimit=scenario.fvp.timelimit,
                               redact=scenario.secret_values())
    transfer = transfer_for(scenario.deploy.method)
    return FvpTarget(scenario.fvp, profile, log_dir=log_dir, name=name, timeout_scale=timeout_scale,
                     binary=binary,
                     base_dir=base_dir, quiet_kernel=quiet_kernel, kernel_line=kernel_line,
                     transfer=transfer,
                     redact=scenario.secret_values())  # secret env values: *** in the terminal logs


@contextlib.contextmanager
def open_target(
    scenario: str | Path | LoadedScenario | Scenario,
    *,
    log_dir: Path | str,
    timeout_scale: float = 1.0,
    name: str = "s0",
    profile: Profile | None = None,
    binary: str | None = None,
    overrides: Iterable[str] = (),
    quiet_kernel: bool = True,
    kernel_line: str | None = "default",
) -> Iterator[FvpTarget | HostTarget]:
    """Open the scenario's target (an FVP instance, a bare-metal platform, or this host for
    ``target: host``) and close it at exit.

    ``scenario``: a scenario path, a ``LoadedScenario`` or a ``Scenario``. ``binary`` overrides
    ``fvp.binary`` (the CLI's ``--fvp``). ``timeout_scale`` multiplies every timeout on top of
    ``fvp.timeout_scale``. ``quiet_kernel=False`` keeps kernel messages on the console (``dmesg -n
    1`` is skipped), and ``kernel_line=None`` keeps kernel-looking lines in command output (needed
    to read ``dmesg`` itself).
    """
    resolved, resolved_profile, base_dir = resolve_scenario(
        scenario, profile=profile, overrides=overrides, fvp_binary=binary
    )
    target = make_target(resolved, resolved_profile, log_dir=log_dir, name=name,
                         timeout_scale=timeout_scale,
                         binary=binary, base_dir=base_dir, quiet_kernel=quiet_kernel,
                         kernel_line=kernel_line)
    target.open()
    try:
        yield target
    finally:
        target.close()


def default_target_factory(loaded: LoadedScenario, timeout_scale: float = 1.0) -> TargetFactory:
    """Instances from ``open_target`` (an FVP, the simulator, or this host) for ``execute``."""

    def factory(name: str, log_dir: Path) -> AbstractContextManager[Target]:
        return open_target(loaded, log_dir=log_dir, name=name, timeout_scale=timeout_scale)

    return factory


def query_fvp_version(loaded: LoadedScenario, timeout_scale: float = 1.0) -> tuple[str | None, str]:
    """The model's ``--version`` (parsed with the profile's pattern) and its whole banner; (None,
    "") for host targets. The binary is resolved the way a boot resolves it, so a missing binary
    fails here, before any build. A model silent for 60 s or its whole scaled boot timeout
    (whichever is shorter) is left to fail at boot. A banner is asked once per process per binary
    (and simulator knobs): it costs a model start-up."""
    scenario = loaded.scenario
    if scenario.target == "host":
        return None, ""
    # the simulator with --platform on bare metal
    program = model_program(scenario.fvp.binary, loaded.profile)
    knobs = dict(scenario.fvp.sim) if scenario.fvp.is_sim else {}
    env = sim_environment(knobs)
    fvp = scenario.fvp
    _status, text = query_version(program, env,
                                  min(60.0, fvp.timeouts.boot * fvp.timeout_scale * timeout_scale))
    match = re.search(loaded.profile.version_pattern, text)
    lines = text.strip().splitlines()
    version = match.group(1) if match else lines[0] if lines else None
    return version, text.strip()
