"""Fault injection: the ways a real model misbehaves, on demand, for the harness's reliability
tests.

Each fault is a ``fault_*`` knob (``knobs.py``); what each does and what the harness makes of it:
docs/simulator.md, "Fault knobs".
"""

from __future__ import annotations

from dataclasses import dataclass

from fvp_harness.sim.corstone1000.boot import BootStep
from fvp_harness.sim.knobs import Knobs

__all__ = ["BootPlan", "boot_plan"]


@dataclass(frozen=True)
class BootPlan:
    """The steps to play, the share of the normal boot they stand for (to keep the pace), and how it
    ends: ``login`` (normal), ``hang``, ``panic`` or ``crash``."""

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
