"""What every model launch needs, whatever launches it: the program at the front of argv, free
ports, the simulator's environment, and ``LaunchSpec``.

Its own module so that ``targets.fvp`` (FVP command lines) and ``targets.qemu`` (QEMU's) build on
one set of helpers and import each other in one direction only: ``fvp.build_launch`` hands a ``kind:
qemu`` profile to ``qemu``.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from fvp_harness.errors import ConfigurationError
from fvp_harness.profiles import Profile

__all__ = [
    "OWNER_ENV",
    "SIM_BINARY",
    "SIM_ENV_PREFIX",
    "LaunchSpec",
    "find_free_port",
    "format_param",
    "port_is_free",
    "resolve_binary",
    "sim_environment",
]

SIM_BINARY = "sim"
SIM_ENV_PREFIX = "FVP_SIM_"
OWNER_ENV = "FVP_HARNESS_OWNER_PID"


def format_param(value: object) -> str:
    """A -C value as text: booleans as ``true``/``false`` (what FVPs accept), everything else
    ``str()``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def find_free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the kernel picks it), for this instance's SSH
    forward.

    There is a window between closing the probe and the model binding the port; the kernel hands out
    ephemeral ports round-robin, so two instances launched together still get different ones.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True if ``port`` can be bound on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def resolve_binary(binary: str, profile: Profile) -> list[str]:
    """The program part of argv.

    ``sim`` -> this Python running ``-m fvp_harness.sim``; a path (contains a slash) -> that file; a
    bare name -> looked up on PATH; an empty or ``auto`` value -> the profile's executables tried in
    order on PATH. Raises ConfigurationError naming what was tried and how to fix it.
    """
    if binary == SIM_BINARY:
        return [sys.executable, "-m", "fvp_harness.sim"]
    candidates = list(profile.executables) if binary in ("", "auto") else [binary]
    for name in candidates:
        if os.sep in name or "/" in name:
            path = Path(name).expanduser()
            if path.is_file() and os.access(path, os.X_OK):
                # not resolved: a link named like the model must keep its name
                return [os.path.abspath(path)]
            continue
        found = shutil.which(name)
        if found:
            return [found]
    tried = ", ".join(candidates)
    raise ConfigurationError(
        f"FVP binary not found (tried {tried}); install the model from Arm and put it on PATH, "
        "pass --fvp PATH, or use --fvp sim for the embedded simulator"
    )


def sim_environment(sim_knobs: Mapping[str, object],
                    base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a launch: ``base`` (default: ours) without stale ``FVP_SIM_*`` plus the
    scenario's knobs.

    Stale knobs are removed so a variable left in the user's shell cannot silently inject a fault.
    """
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith(SIM_ENV_PREFIX)}
    for name, value in sim_knobs.items():
        env[SIM_ENV_PREFIX + str(name).upper()] = format_param(value)
    return env


@dataclass(frozen=True)
class LaunchSpec:
    """Everything needed to start one instance; recorded into the session metadata.

    ``ssh_forwards`` maps each of the profile's forward parameters to the host port it got;
    ``ssh_ports`` are the ones on network devices the launch parameters leave switched on, in
    profile order (the SSH client tries them in turn and keeps the first that answers); ``ssh_port``
    is the first of those, or None.
    """

    argv: list[str]
    env: dict[str, str]
    params: dict[str, str]
    ssh_port: int | None
    simulated: bool
    cwd: str | None = None
    ssh_ports: list[int] = field(default_factory=list)
    ssh_forwards: dict[str, int] = field(default_factory=dict)
