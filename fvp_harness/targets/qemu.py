"""QEMU as a platform (profiles of ``kind: qemu``): its command line, launched natively by
``FvpProcess``.

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from fvp_harness.errors import ConfigurationError
from fvp_harness.profiles import Profile
from fvp_harness.targets.launch import (
    OWNER_ENV,
    SIM_BINARY,
    LaunchSpec,
    find_free_port,
    resolve_binary,
)

__all__ = ["SSH_PORT_FIELD", "qemu_launch"]

SSH_PORT_FIELD = "{ssh_port}"
"""Where in a qemu profile's ``args`` the host port of the ssh forward goes."""


def qemu_launch(profile: Profile, fvp: object, *, ssh_port: int | None = None,
                binary: str | None = None,
                base_dir: Path | None = None,
                environ: Mapping[str, str] | None = None) -> LaunchSpec:
    """argv + environment of one QEMU instance: program, profile ``args`` (``{ssh_port}`` filled
    in), firmware options (``-kernel PATH``), the scenario's ``fvp.args``. ``fvp.params`` are
    refused: QEMU has no -C."""
    chosen = binary or getattr(fvp, "binary", "") or "auto"
    if chosen == SIM_BINARY:
        # no simulator plays QEMU; the default binary means the profile's executable
        chosen = "auto"
    program = resolve_binary(chosen, profile)
    if getattr(fvp, "params", None):
        raise ConfigurationError(f"profile {profile.name} launches QEMU, which takes no -C "
                                 "parameters; put QEMU options in fvp.args instead of fvp.params")
    port = ssh_port if ssh_port is not None else find_free_port()
    uses_ssh = any(SSH_PORT_FIELD in arg for arg in profile.args)
    args = [arg.replace(SSH_PORT_FIELD, str(port)) for arg in profile.args]
    firmware: dict[str, str] = {}
    for name, path in dict(getattr(fvp, "firmware", {}) or {}).items():
        resolved = Path(os.path.expandvars(str(path))).expanduser()
        if not resolved.is_absolute() and base_dir is not None:
            resolved = base_dir / resolved
        firmware[name] = str(resolved)
    unknown = sorted(set(firmware) - set(profile.firmware))
    if unknown:
        raise ConfigurationError(f"fvp.firmware names {', '.join(unknown)}, which profile "
                                 f"{profile.name} does not know (known: "
                                 f"{', '.join(profile.firmware) or 'none'})")
    argv = [*program, *args, *profile.firmware_args(firmware),
            *(str(a) for a in getattr(fvp, "args", []) or [])]
    env = {key: value for key, value in (os.environ if environ is None else environ).items()}
    # who started this instance: lets a leak check find exactly our processes
    env[OWNER_ENV] = str(os.getpid())
    ports = [port] if uses_ssh else []
    return LaunchSpec(argv=argv, env=env, params={}, ssh_port=ports[0] if ports else None,
                      simulated=False,
                      ssh_ports=ports, ssh_forwards={"hostfwd": port} if uses_ssh else {})
