"""Where commands run: the only package that spawns models or opens sockets (besides ``sim``).

``base`` defines the ``Target`` protocol and the optional abilities; ``fvp_target.FvpTarget`` is a
booted model instance (simulated or real: ``fvp`` launches the process, ``terminal``/``console``
drive its consoles, ``ssh`` its forwarded port, ``transfer`` moves files), ``host.HostTarget`` is
this machine, ``baremetal.BaremetalTarget`` a Corstone-300/320 platform (one model launch per unit),
and ``fake.FakeTarget`` is an in-memory stand-in for unit tests of code that uses targets. This
package imports nothing above it: a scenario is turned into targets by ``run.instances``.
"""

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
