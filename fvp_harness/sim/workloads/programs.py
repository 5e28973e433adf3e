"""The workloads as guest programs: which file runs which emulated runner, told by its leading
bytes.

A platform that composes a guest with the workloads (``corstone1000/platform.py``) calls
``register`` once; the guest's registry (``guest/programs.py``) then finds the runner for a file the
shell executes. The registry is the seam: the workloads register into it and the guest never imports
them. Only the magic bytes are known here (``networks/magic.py``), so numpy and the runners load
when a guest first executes one, or on a thread while a boot plays (``preload``), never before the
model listens on its terminals.
"""

from __future__ import annotations

import threading

from fvp_harness.sim.guest.programs import GuestContext, register_program
from fvp_harness.sim.networks.magic import is_runner, is_vgf_runner, runner_loader

__all__ = ["executor_runner", "executor_runner_vgf", "preload", "register"]


def executor_runner(ctx: GuestContext) -> int:
    """A runner build: the emulated Linux ``executor_runner`` (``workloads/executor_runner``)."""
    # late: numpy and the runner load only when a guest executes a runner file
    from fvp_harness.sim.workloads.executor_runner import executor_runner as program

    return program(ctx)


def executor_runner_vgf(ctx: GuestContext) -> int:
    """A VGF runner artifact: the emulated ``executor_runner`` in VGF benchmark mode
    (``workloads/vgf_runner.py``)."""
    # late: numpy and the runner load only when a guest executes a VGF runner artifact
    from fvp_harness.sim.workloads.vgf_runner import executor_runner_vgf as program

    return program(ctx)


_lock = threading.Lock()
_registered = False


def register() -> None:
    """Register the workloads' programs with the guest's registry (once per process; later calls do
    nothing)."""
    global _registered
    with _lock:
        if _registered:
            return
        _registered = True
        # a glibc or musl build needs its loader
        register_program(is_runner, executor_runner, runner_loader)
        register_program(is_vgf_runner, executor_runner_vgf)


def preload() -> None:
    """Load the Linux runner (numpy, the networks) now, off the guest's critical path: a platform
    calls this on a thread while its boot plays, whose paced waits leave the host idle, so the first
    runner a guest executes does not spend a third of a second importing (that first unit was the
    slowest of every instance)."""
    # late: numpy and the runner load on the caller's thread, while a boot plays
    from fvp_harness.sim.workloads.executor_runner import executor_runner as program  # noqa: F401
