"""How units run on one kind of target: a guest command over a console or ssh, a host process, a
bare-metal model launch. One implementation per kind (``run.guest_unit``, ``run.launch_unit``),
chosen once per target from the abilities it declares (``run.kinds.kind_of``); deploy and the unit's
steps ask it instead of the target's class."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fvp_harness.errors import UnitFailure
from fvp_harness.run.framed import FramedResult
from fvp_harness.run.plan import Unit
from fvp_harness.run.unit_command import UnitCommand
from fvp_harness.run.unit_context import UnitContext
from fvp_harness.targets.base import CommandResult, CopiesOverSsh, Target

__all__ = ["Ran", "UnitKind", "Uploads"]


@dataclass(frozen=True)
class Ran:
    """What running a unit's command gave, whatever the kind."""

    result: CommandResult | None
    """The runner's own text and exit status; None when ``failure`` says why there is none."""
    failure: UnitFailure | None = None
    """The unit failed before its runner's status was known (its folder could not be prepared, say).
    """
    framed: FramedResult | None = None
    """A guest unit's framed line: the output digests and peak resident set came with it."""
    provenance: Mapping[str, Any] = field(default_factory=dict)
    """A launch's ``model_sha256`` and ``inputs_sha256``: the files as the model got them."""
    kept: tuple[str, ...] = ()
    """ETDump files a semihosting runner wrote into its folder: kept like ``run.fetch`` files, not
    outputs."""


class Uploads(Protocol):
    """What a guest kind copies through (``run.deploy.Deployer``)."""

    timeout: float | None

    def upload(self, local: Path, remote: str, digest: str, ssh: CopiesOverSsh | None) -> str:
        """Copy ``local`` to ``remote`` by the deploy method; returns how it went."""
        ...


class UnitKind(Protocol):
    """One kind of target, bound to one target."""

    target: Target
    in_place: bool
    """Nothing is deployed: the model reads every artifact where it is on this host (bare metal)."""

    def guest_dir(self) -> str | None:
        """The target's own artifact folder (a host target's working folder), or None: the
        scenario's."""
        ...

    def copy(self, uploads: Uploads, local: Path, remote: str, digest: str) -> str:
        """Put ``local`` at ``remote`` and check its sha256 there; returns the method, for the
        manifest."""
        ...

    def render(
        self, ctx: UnitContext, unit: Unit, placed: Mapping[Path, str], guest_root: str
    ) -> UnitCommand:
        """The unit's command (or launch) with the deployed paths filled in."""
        ...

    def prepare(self, ctx: UnitContext, rendered: UnitCommand) -> None:
        """Make the unit's folder, when running it does not (raises ``UnitFailure``)."""
        ...

    def run(
        self,
        ctx: UnitContext,
        rendered: UnitCommand,
        timeout: float,
        fetched: Sequence[str],
        log_rel: str,
    ) -> Ran:
        """Run the unit under ``timeout`` (``log_rel``: its log, for messages). Raises
        ``CommandFailed`` when the runner hung (a test failure), ``InfrastructureError`` when the
        instance failed under it."""
        ...

    def outputs(
        self, ctx: UnitContext, rendered: UnitCommand, ran: Ran, exclude: Sequence[str]
    ) -> dict[str, str]:
        """``Record.outputs``: the digests of what the runner wrote, without the ``exclude`` guest
        paths."""
        ...

    def cleanup(self, ctx: UnitContext, rendered: UnitCommand, fetched: Sequence[str]) -> None:
        """Remove the unit's folder when running it did not."""
        ...
