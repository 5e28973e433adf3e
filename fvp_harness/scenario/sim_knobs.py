"""``fvp.sim`` knob values checked when a scenario loads, by the simulator's own rules
(``sim/knob_check.py``): the one scenario module that reads the simulator, so a bad value is refused
naming its field instead of failing every unit the same way (docs/architecture.md, "Rules")."""

from __future__ import annotations

from fvp_harness.scenario.model import FvpConfig

__all__ = ["sim_knob_problems"]


def sim_knob_problems(fvp: FvpConfig, *, baremetal: bool) -> list[tuple[tuple[str, ...], str]]:
    """``(path, message)`` for each ``fvp.sim`` knob the simulator would refuse; none for a real
    model."""
    if not fvp.is_sim or not fvp.sim:
        return []
    # late: the simulator's modules (numpy among them) load only for a scenario that sets knobs
    from fvp_harness.sim.knob_check import knob_problems

    found = knob_problems(fvp.sim, baremetal=baremetal)
    return [(("fvp", "sim", name), message) for name, message in found.items()]
