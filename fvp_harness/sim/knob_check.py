"""Every simulator knob value checked at once, before anything boots: the harness's scenario loader
asks here (``scenario/sim_knobs.py``, the one harness module that reads the simulator besides
``cli/verb_sim``), so a bad ``fvp.sim`` value is refused at load, naming its field, instead of
failing every unit the same way."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping

from fvp_harness.sim.baremetal.artifact import parse_faults as parse_baremetal_faults
from fvp_harness.sim.corstone1000.releases import UnknownRelease, image_of
from fvp_harness.sim.knobs import PLATFORM_KNOBS, KnobError, parse_knobs
from fvp_harness.sim.workloads.executor_runner.faults import (
    noise_from_knobs,
    parse_faults,
    slowdown_factors,
)
from fvp_harness.sim.workloads.executor_runner.flags import UsageError
from fvp_harness.sim.workloads.executor_runner.partitioned import (
    PARTITION_CYCLES_KNOB,
    partition_factors,
)
from fvp_harness.sim.workloads.vgf_runner import KNOB_RANGES, REJECT_CHOICES, knob_value

__all__ = ["KNOWN_KNOBS", "knob_problems"]


def _platform(name: str, text: str, baremetal: bool) -> None:
    knobs = parse_knobs(environ={}, options=[f"{name}={text}"])
    if not baremetal:
        image_of(knobs)


def _vgf_reject(name: str, text: str, baremetal: bool) -> None:
    if text.strip().lower() not in REJECT_CHOICES:
        raise UsageError(
            f"knob vgf_reject: {text.strip().lower()!r}: expected input, output, all or none"
        )


def _runner_fault(name: str, text: str, baremetal: bool) -> None:
    if baremetal:
        parse_baremetal_faults(text)
    else:
        parse_faults(text)


_CHECKS: dict[str, Callable[[str, str, bool], object]] = {
    **dict.fromkeys(PLATFORM_KNOBS, _platform),
    **dict.fromkeys(KNOB_RANGES, lambda name, text, _: knob_value({name: text}, name, 0)),
    "runner_seed": lambda name, text, _: noise_from_knobs({name: text}),
    "runner_drift": lambda name, text, _: noise_from_knobs({name: text}),
    "runner_slowdown": lambda name, text, _: slowdown_factors(text),
    PARTITION_CYCLES_KNOB: lambda name, text, _: partition_factors({name: text}, "", 1 << 30),
    "runner_fault": _runner_fault,
    "vgf_reject": _vgf_reject,
}

KNOWN_KNOBS: frozenset[str] = frozenset(_CHECKS)
"""Every knob the platforms and the emulated runners read; a workload may read more of its own."""


def knob_problems(knobs: Mapping[str, object], *, baremetal: bool = False) -> dict[str, str]:
    """What is wrong with each knob value (by the name as given), as the simulator would say it at
    boot or at the runner's start. A knob the simulator does not know is left to its workload,
    unless it is a ``fault_*`` one or a near miss of a known name (a typo would do nothing).
    ``baremetal``: the knobs of a Corstone-300/320 launch (``runner_fault`` takes the bare-metal
    runner's faults; no Corstone-1000 image)."""
    problems: dict[str, str] = {}
    for given, value in knobs.items():
        name = given.lower()
        check = _CHECKS.get(name)
        if check is None:
            close = difflib.get_close_matches(name, sorted(KNOWN_KNOBS), n=1, cutoff=0.8)
            if close or name.startswith("fault_"):
                hint = (
                    f"did you mean {close[0]!r}?"
                    if close
                    else "known: "
                    + ", ".join(
                        sorted(known for known in KNOWN_KNOBS if known.startswith("fault_"))
                    )
                )
                problems[given] = f"unknown knob {given!r}; {hint}"
            continue
        text = "true" if value is True else "false" if value is False else str(value)
        try:
            check(name, text, baremetal)
        except (KnobError, UnknownRelease, UsageError, ValueError) as exc:
            problems[given] = str(exc).removeprefix(f"knob {name}: ")
    return problems
