"""``kind_of``: the one place a target's declared abilities (``targets.base``'s Protocols,
``LaunchesModel``) choose how its units run and its artifacts arrive (``run.unit_kind.UnitKind``).
"""

from __future__ import annotations

from fvp_harness.run.guest_unit import GuestCommands, HostProcess
from fvp_harness.run.launch_unit import ModelLaunch
from fvp_harness.run.unit_kind import UnitKind
from fvp_harness.targets.baremetal import LaunchesModel
from fvp_harness.targets.base import (
    CommandResult,
    CopiesOverSsh,
    NamesPhases,
    SharesHostFiles,
    Target,
)

__all__ = ["kind_of"]


def kind_of(target: Target) -> UnitKind:
    """A model launch per unit for a target that ``LaunchesModel`` (bare metal); host processes for
    one that ``SharesHostFiles`` (``target: host``); else guest commands over its console or ssh.
    Ask once per open target: a host target shares its files only while it is open."""
    files = target if isinstance(target, SharesHostFiles) else None
    if isinstance(target, LaunchesModel):
        return ModelLaunch(target, target, files)
    if isinstance(target, NamesPhases):
        phased = target

        def run_unit(command: str, timeout: float) -> CommandResult:
            return phased.run_in_phase(
                command, timeout, "unit"
            )  # its timeout message names the unit phase
    else:
        run_unit = target.run
    if files is not None:
        return HostProcess(target, files, run_unit=run_unit)
    return GuestCommands(
        target, ssh=target if isinstance(target, CopiesOverSsh) else None, run_unit=run_unit
    )
