"""Where commands run. The only package that spawns processes or opens sockets (besides ``sim``).

``open_target(scenario, log_dir=...)`` is the entry point: it yields an opened ``FvpTarget`` (a simulated or real
model, booted and logged in) or a ``HostTarget`` (``target: host``), and always closes it. See docs/targets.md.
"""

from fvp_harness.targets.base import CommandResult, Target
from fvp_harness.targets.console import CommandTimeout
from fvp_harness.targets.host import HostTarget
from fvp_harness.targets.fvp_target import FvpTarget, open_target

__all__ = ["CommandResult", "CommandTimeout", "FvpTarget", "HostTarget", "Target", "open_target"]
