"""Where commands run: the only package that spawns models or opens sockets (besides ``sim``).

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

from fvp_harness.targets.baremetal import BaremetalTarget, LaunchesModel
from fvp_harness.targets.base import (
    CommandResult,
    CopiesOverSsh,
    FvpSettings,
    NamesPhases,
    SharesHostFiles,
    StreamsCommands,
    Target,
)
from fvp_harness.targets.console import CommandTimeout
from fvp_harness.targets.fake import FakeTarget
from fvp_harness.targets.fvp_target import FvpTarget
from fvp_harness.targets.host import HostTarget

__all__ = [
    "BaremetalTarget",
    "CommandResult",
    "CommandTimeout",
    "CopiesOverSsh",
    "FakeTarget",
    "FvpSettings",
    "FvpTarget",
    "HostTarget",
    "LaunchesModel",
    "NamesPhases",
    "SharesHostFiles",
    "StreamsCommands",
    "Target",
]
