"""Preflight: what would otherwise fail minutes into a run, checked in seconds without booting.

Real models silently ignore some misspelt networking parameters and take minutes to show a missing firmware file, so
``fvp-harness doctor`` asks the model itself: ``--version`` (it runs, and which version), ``--list-params`` (every
``-C`` the profile and scenario set exists), and checks the firmware files, the ports and the SSH client library.
Each check says what to do when it fails. Only ``targets/`` spawns processes, so the model is asked through
``targets.fvp`` helpers (argument lists, timeouts) and never booted.
"""

from __future__ import annotations

import difflib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from fvp_harness.errors import ConfigurationError
from fvp_harness.profiles import Profile
from fvp_harness.scenario import FvpConfig, Scenario
from fvp_harness.targets.fvp import (
    SIM_BINARY,
    build_launch,
    find_free_port,
    port_is_free,
    query_model,
    resolve_binary,
)

__all__ = ["Check", "doctor_exit_code", "parse_param_names", "run_doctor"]

Status = Literal["ok", "warn", "fail", "skip"]


@dataclass(frozen=True)
class Check:
    """One line of the checklist. ``failure_class`` (configuration | infrastructure) decides the exit code."""

    name: str
    status: Status
    detail: str
    fix: str = ""
    failure_class: str = "configuration"

    @property
    def ok(self) -> bool:
        return self.status != "fail"


def parse_param_names(listing: str) -> set[str]:
    """Parameter names from ``--list-params`` output (``name=default  # (type...) ...`` lines)."""
    names = set()
    for line in listing.splitlines():
        match = re.match(r"^\s*([A-Za-z_][\w.\-\[\]]*)=", line)
        if match:
            names.add(match.group(1))
    return names


def run_doctor(scenario: Scenario, profile: Profile, *, base_dir: Path | None = None, binary: str | None = None,
               command_timeout: float = 60.0) -> list[Check]:
    """Run every preflight check for ``scenario`` on ``profile``; returns the checklist (never raises for a
    failed check)."""
    checks: list[Check] = []
    fvp = scenario.fvp
    chosen = binary or fvp.binary
    simulated = chosen == SIM_BINARY
    program: list[str] | None
    try:
        resolved = resolve_binary(chosen, profile)
    except ConfigurationError as exc:
        checks.append(Check("binary", "fail", str(exc), "install the FVP, add it to PATH, or pass --fvp PATH "
                                                         "(--fvp sim for the simulator)"))
        program = None
    else:
        program = resolved
        what = "embedded simulator" if simulated else resolved[0]
        checks.append(Check("binary", "ok", f"{what}"))

    try:
        spec = build_launch(profile, fvp, binary=chosen if program else SIM_BINARY, base_dir=base_dir,
                            ssh_port=find_free_port())
    except ConfigurationError as exc:
        checks.append(Check("launch", "fail", str(exc), "fix fvp.firmware / fvp.params in the scenario"))
        return checks

    if program is not None:
        status, text = query_model(program, "--version", spec.env, command_timeout)
        match = re.search(profile.version_pattern, text)
        if status == 0 and match:
            checks.append(Check("version", "ok", f"{match.group(1)}"))
        elif status == 0:
            checks.append(Check("version", "warn", f"--version printed no banner matching "
                                f"{profile.version_pattern!r}: {text.strip()[:120]!r}",
                                "check that the binary is the model the profile describes"))
        else:
            checks.append(Check("version", "fail", f"`{Path(program[-1]).name} --version` failed: "
                                f"{text.strip()[-300:] or status}",
                                "run the model by hand to see why (licence, missing libraries)",
                                failure_class="infrastructure"))

        status, listing = query_model(program, "--list-params", spec.env, command_timeout)
        known = parse_param_names(listing) if status == 0 else set()
        if not known:
            checks.append(Check("parameters", "warn", "could not read --list-params; parameters not checked",
                                "run the model with --list-params by hand", failure_class="infrastructure"))
        else:
            # every -C of the argv: profile and scenario params, firmware given as -C, scenario args
            given = list(dict.fromkeys(arg.split("=", 1)[0] for flag, arg in zip(spec.argv, spec.argv[1:], strict=False)
                                       if flag in ("-C", "--parameter")))
            unknown = [name for name in given if name not in known]
            if unknown:
                hints = []
                for name in unknown:
                    close = difflib.get_close_matches(name, sorted(known), n=1)
                    hints.append(f"{name}" + (f" (did you mean {close[0]}?)" if close else ""))
                checks.append(Check("parameters", "fail", f"unknown to the model: {', '.join(hints)}",
                                    "fix the names in fvp.params or the profile (real models ignore some "
                                    "misspelt parameters silently)"))
            else:
                checks.append(Check("parameters", "ok", f"all {len(given)} -C parameters exist"))
    else:
        checks.append(Check("version", "skip", "no binary"))
        checks.append(Check("parameters", "skip", "no binary"))

    checks.extend(_firmware_checks(profile, fvp, base_dir, simulated))
    checks.append(_port_check(profile, spec.params))
    checks.append(_ssh_check(scenario, profile, spec.ssh_ports))
    return checks


def _firmware_checks(profile: Profile, fvp: FvpConfig, base_dir: Path | None, simulated: bool) -> list[Check]:
    checks = []
    given = dict(fvp.firmware)
    for name, spec in profile.firmware.items():
        path = given.get(name)
        if path is None:
            if spec.required and not simulated:
                checks.append(Check(f"firmware {name}", "fail", f"not given ({spec.description})",
                                    f"set fvp.firmware.{name} to the file from the Arm release"))
            continue
        resolved = Path(path).expanduser()
        if not resolved.is_absolute() and base_dir is not None:
            resolved = base_dir / resolved
        if resolved.is_file():
            checks.append(Check(f"firmware {name}", "ok", str(resolved)))
        else:
            checks.append(Check(f"firmware {name}", "fail", f"{resolved} does not exist",
                                f"fix fvp.firmware.{name}"))
    if not checks:
        checks.append(Check("firmware", "ok" if simulated else "skip",
                            "none needed by the simulator" if simulated else "profile needs none"))
    return checks


def _port_check(profile: Profile, params: dict[str, str]) -> Check:
    busy = []
    for name, prefix in profile.terminals.items():
        port = int(params.get(f"{prefix}.start_port", "5000"))
        if not port_is_free(port):
            busy.append(f"{name}:{port}")
    try:
        find_free_port()
    except OSError as exc:
        return Check("ports", "fail", f"cannot bind a local TCP port: {exc}", "check the loopback interface",
                     failure_class="infrastructure")
    if busy:
        return Check("ports", "warn", f"start ports busy ({', '.join(busy)}); the model will step to the next "
                     "free port", "nothing to do unless other tools expect fixed ports")
    return Check("ports", "ok", "terminal start ports free; each SSH forward gets a free port per instance")


def _ssh_check(scenario: Scenario, profile: Profile, ssh_ports: list[int]) -> Check:
    needed = scenario.deploy.method == "ssh"
    if importlib.util.find_spec("asyncssh") is None:
        return Check("ssh client", "fail" if needed else "warn", "asyncssh is not installed",
                     "pip install asyncssh", failure_class="configuration")
    import asyncssh

    if needed and not ssh_ports:
        forwards = ", ".join(profile.ssh_forward_params) or "none"
        return Check("ssh client", "fail", f"deploy.method is ssh, but no SSH forward ({forwards}) is on a network "
                     "device the parameters leave switched on",
                     "switch a device on in fvp.params (see the profile's ssh_forward_enabled_by) or deploy by "
                     "console")
    return Check("ssh client", "ok", f"asyncssh {asyncssh.__version__}")


def doctor_exit_code(checks: list[Check]) -> int:
    """0 when nothing failed; 2 when the input must change (configuration); 3 when the platform failed."""
    failed = [check for check in checks if check.status == "fail"]
    if not failed:
        return 0
    return 2 if any(check.failure_class == "configuration" for check in failed) else 3
