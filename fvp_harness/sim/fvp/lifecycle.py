"""How a simulated model ends, and what it prints when it does.

Reasons, what each prints on stdout, whether ``--stat`` follows, and the exit status:

- ``user`` (SIGINT, as a real model on Ctrl-C): ``Stopping simulation...``, a blank line, then
  ``Info: /OSCI/SystemC: Simulation stopped by user.``; --stat; exit 0.
- ``timelimit``: ``Info: Simulation is stopping. Reason: CPU time has been exceeded.``; --stat; exit
  0.
- ``simlimit``: ``Info: Simulation is stopping. Reason: simulated time has been exceeded.``; --stat;
  exit 0.
- ``poweroff`` (guest ``poweroff``): ``Info: Simulation is stopping. Reason: the guest powered
  off.``; --stat; exit 0.
- ``term`` (SIGTERM, SIGHUP): nothing; the process ends by that signal, as with its default action
  (-15).
- ``parent``: nothing; the parent process is gone, so the model must not outlive it; exit 1.
- ``crash`` (``fault_crash``): nothing, no --stat; exit 139; temp files are still removed.

``--timelimit`` counts wall seconds: the real model spins a host CPU at 100 % so its CPU time and
wall time agree, while the simulator idles. ``--stat`` reports measured user/system/wall times and
the simulated time and instructions of ``host.cpu0``; MIPS and the performance index are per wall
second, which is what they mean for a model that keeps one host CPU busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable

from fvp_harness.sim.clock import SimClock

__all__ = ["STOP_TEXT", "StopRequests", "stat_block", "watch_limits", "watch_parent"]

STOP_TEXT: dict[str, str] = {
    "user": "Stopping simulation...\n\nInfo: /OSCI/SystemC: Simulation stopped by user.\n",
    "timelimit": "Info: Simulation is stopping. Reason: CPU time has been exceeded.\n",
    "simlimit": "Info: Simulation is stopping. Reason: simulated time has been exceeded.\n",
    "poweroff": "Info: Simulation is stopping. Reason: the guest powered off.\n",
}
"""What the model prints for each way it stops politely."""

PRINTS_STAT = frozenset(STOP_TEXT)

EXIT_STATUS: dict[str, int] = {
    "user": 0, "timelimit": 0, "simlimit": 0, "poweroff": 0, "parent": 1, "crash": 139,
}



class StopRequests:
    """The stop future both simulated platforms (Corstone-1000 and bare-metal) end their event loop
    on: any thread may ask, the loop thread sets the first reason, later requests are ignored (the
    first reason is the exit's)."""

    _loop: asyncio.AbstractEventLoop | None = None
    _stop: asyncio.Future[str] | None = None

    def request_stop(self, reason: str) -> None:
        """Ask the loop to stop for ``reason`` (any thread)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._set_stop, reason)

    def _set_stop(self, reason: str) -> None:
        if self._stop is not None and not self._stop.done():
            self._stop.set_result(reason)


def stat_block(model_name: str, clock: SimClock, cpu: str = "host.cpu0") -> str:
    """The ``--stat`` block, labels padded to 40 columns and rules of 79, as Fast Models print
    it."""
    times = os.times()
    wall = max(clock.wall_elapsed(), 1e-9)
    sim = clock.now()
    inst = clock.instructions
    rows = [
        ("Simulated time", f"{sim:.6f}s"),
        ("User time", f"{times.user:.6f}s"),
        ("System time", f"{times.system:.6f}s"),
        ("Wall time", f"{wall:.6f}s"),
        ("Performance index", f"{sim / wall:.2f}"),
        (cpu, f"{inst / wall / 1e6:6.2f} MIPS ({inst:12d} Inst)"),
    ]
    lines = [f"--- {model_name} statistics: ".ljust(79, "-")]
    lines += [f"{label:<40}: {value}" for label, value in rows]
    lines.append("-" * 79)
    return "\n".join(lines) + "\n"


async def watch_limits(clock: SimClock, timelimit: float | None, simlimit: float | None,
                       stop: Callable[[str], None], period: float = 0.05) -> None:
    """End the simulation when ``--timelimit`` (wall seconds) or ``--simlimit`` (simulated seconds)
    is reached."""
    if timelimit is None and simlimit is None:
        return
    while True:
        if timelimit is not None and clock.wall_elapsed() >= timelimit:
            stop("timelimit")
            return
        if simlimit is not None and clock.now() >= simlimit:
            stop("simlimit")
            return
        await asyncio.sleep(period)


async def watch_parent(stop: Callable[[str], None], parent: int, period: float = 0.5) -> None:
    """End the simulation when the parent process goes away (re-parenting changes ``getppid()``), so
    an orphaned model never keeps ports and temp files alive. ``parent`` is the ppid seen first
    thing at start-up, so a parent that dies while the modules load is caught too. A model started
    directly under init (ppid 1) is left alone."""
    if parent == 1:
        return
    while True:
        if os.getppid() != parent:
            stop("parent")
            return
        await asyncio.sleep(period)
