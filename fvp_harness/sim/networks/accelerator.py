"""Ethos-U accelerator configurations the simulator compiles for: ``ethos-u55-128``,
``ethos-u85-256``, ...

Why a type of its own: a model file is compiled for one NPU family and MAC count (as Vela's
``--accelerator-config`` is), the Linux platform has an Ethos-U85 and the bare-metal Corstone-300 an
Ethos-U55, and every place that names a configuration (the model file, ``fvp-harness sim model``,
the cycle model, the mismatch error a runner prints) must spell it the way Vela and ExecuTorch's
``EthosUCompileSpec`` do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["ACCELERATOR_MACS", "Accelerator", "parse_accelerator"]

Family = Literal["ethos-u55", "ethos-u85"]

ACCELERATOR_MACS: dict[str, tuple[int, ...]] = {
    "ethos-u55": (32, 64, 128, 256),
    "ethos-u85": (128, 256, 512, 1024, 2048),
}
"""The MAC configurations each family is built in (Vela 5.x's ``--accelerator-config`` choices)."""

_NAME = re.compile(r"(ethos-u55|ethos-u85)-(\d+)")


@dataclass(frozen=True)
class Accelerator:
    """One NPU configuration: family and MACs per cycle."""

    family: Family
    num_macs: int

    def __post_init__(self) -> None:
        if self.num_macs not in ACCELERATOR_MACS[self.family]:
            known = ", ".join(f"{self.family}-{m}" for m in ACCELERATOR_MACS[self.family])
            raise ValueError(f"{self.family} has no {self.num_macs}-MAC configuration (known: "
                             f"{known})")

    @property
    def name(self) -> str:
        """Vela's spelling, e.g. ``ethos-u85-256``."""
        return f"{self.family}-{self.num_macs}"

    def __str__(self) -> str:
        return self.name


def parse_accelerator(text: str) -> Accelerator:
    """``ethos-u55-128`` -> Accelerator; ValueError naming the known configurations otherwise."""
    match = _NAME.fullmatch(text.strip().lower())
    if not match:
        known = ", ".join(f"{family}-{m}" for family, macs in ACCELERATOR_MACS.items()
                          for m in macs)
        raise ValueError(f"unknown accelerator {text!r} (known: {known})")
    family: Family = "ethos-u55" if match.group(1) == "ethos-u55" else "ethos-u85"
    return Accelerator(family, int(match.group(2)))
