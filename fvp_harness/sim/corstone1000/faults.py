"""Fault injection: the ways a real model misbehaves, on demand, for the harness's reliability tests.

Each fault is a knob (``FVP_SIM_FAULT_...`` or ``--sim fault_...=...``; see ``knobs.py``):

``fault_boot_hang=STAGE``
    The boot prints the first two non-empty lines of STAGE (``tfm``, ``tfa``, ``optee``, ``uboot``, ``kernel``,
    ``init``; for ``login`` the whole getty banner) and then nothing more; no login prompt ever comes, ssh
    never answers. The model keeps running until stopped (a harness should report a boot timeout).
``fault_panic=boot``
    Halfway through the kernel log, ``Kernel panic - not syncing: ...`` with a call trace and the
    ``---[ end Kernel panic ...]---`` line; then the console ignores input and ssh refuses connections.
``fault_panic=N``
    The same panic when the Nth console command line is entered (the command does not run).
``fault_console_drop=N``
    When the Nth console command line is entered, host_terminal_0 closes its client connection and stops
    listening (reconnects are refused). The model and ssh keep running.
``fault_crash=boot`` / ``fault_crash=N``
    The model process exits with status 139, printing nothing (no stop text, no --stat), halfway through the
    kernel log or when the Nth console command line is entered. Temp files are still removed.
``fault_slow_console=BYTES_PER_SECOND``
    host_terminal_0 delivers output no faster than this (still buffered and bounded, never lost to speed).
``fault_garbage=P``
    Each output chunk on host_terminal_0 gets, with probability P, 1-8 random bytes in 0x80-0xfe mixed in at
    a random point (line noise; never CR, LF or telnet IAC).
``fault_refuse_ssh=true``
    Forwarded ssh ports accept and immediately close every connection (as when dropbear is not running).
``fault_busy_ports=N``
    The first N ports from every terminal's ``start_port`` count as busy, so the model steps past them as
    when other programs hold them; the banner shows where each terminal really is.
"""

from __future__ import annotations

from dataclasses import dataclass

from fvp_harness.sim.corstone1000.boot import BootStep
from fvp_harness.sim.knobs import Knobs

__all__ = ["BootPlan", "boot_plan"]


@dataclass(frozen=True)
class BootPlan:
    """The steps to play, the share of the normal boot they stand for (to keep the pace), and how it ends:
    ``login`` (normal), ``hang``, ``panic`` or ``crash``."""

    steps: list[BootStep]
    fraction: float
    ending: str


def boot_plan(knobs: Knobs, steps: list[BootStep]) -> BootPlan:
    """Cut the boot short where a boot fault says so."""
    total = sum(s.weight for s in steps) or 1.0
    end = len(steps)
    ending = "login"
    if knobs.fault_boot_hang is not None:
        stage = knobs.fault_boot_hang
        in_stage = [i for i, s in enumerate(steps) if s.stage == stage]
        shown = [i for i in in_stage if steps[i].text.strip()]
        whole_stage = in_stage[-1] + 1 if in_stage else len(steps)
        # the stage's first two lines with text, then silence (the getty banner is shown whole)
        end = whole_stage if stage == "login" or len(shown) < 2 else shown[1] + 1
        ending = "hang"
    elif knobs.fault_panic == 0 or knobs.fault_crash == 0:
        kernel = [i for i, s in enumerate(steps) if s.stage == "kernel"]
        end = kernel[len(kernel) // 2] if kernel else len(steps)
        ending = "panic" if knobs.fault_panic == 0 else "crash"
    kept = steps[:end]
    return BootPlan(kept, sum(s.weight for s in kept) / total, ending)
