"""The faults a runner build injects (``--fault``: crash, hang, truncate, timeout) and the noise
knobs (``runner_seed``, ``runner_jitter``, ``runner_outlier_rate``, ``runner_drift``,
``runner_slowdown``).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from fvp_harness.sim.workloads.executor_runner.flags import UsageError

__all__ = ["FAULT_KINDS", "FaultSpec", "Noise", "noise_from_knobs", "parse_faults", "slowdown",
           "slowdown_factors"]

FAULT_KINDS = ("crash", "hang", "truncate", "timeout")


# --- faults and noise -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FaultSpec:
    """Injected faults: each is the number of completed iterations after which it strikes (None:
    off)."""

    crash: int | None = None
    hang: int | None = None
    truncate: int | None = None
    timeout: int | None = None

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.crash, self.hang, self.truncate, self.timeout))


def parse_faults(spec: str) -> FaultSpec:
    """``"crash=3,hang=0"`` -> FaultSpec; a bare kind means after 0 iterations. UsageError on
    unknown kinds."""
    found: dict[str, int] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item or item.lower() in ("none", "off"):
            continue
        kind, _, count = item.partition("=")
        kind = kind.strip().lower().removesuffix("_after")
        if kind not in FAULT_KINDS:
            raise UsageError(f"unknown runner fault {kind!r} (known: {', '.join(FAULT_KINDS)}; "
                             "e.g. crash=3)")
        try:
            found[kind] = int(count) if count.strip() else 0
        except ValueError:
            raise UsageError(f"runner fault {item!r}: the count must be an integer") from None
        if found[kind] < 0:
            raise UsageError(f"runner fault {item!r}: the count must not be negative")
    return FaultSpec(**found)


@dataclass(frozen=True)
class Noise:
    seed: int
    jitter: float
    outlier_rate: float
    drift: float


def _knob_float(knobs: Mapping[str, str], name: str, default: float, high: float) -> float:
    text = knobs.get(name)
    if text is None or text == "":
        return default
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"knob {name}: {text!r} is not a number") from None
    if not 0.0 <= value <= high:
        raise UsageError(f"knob {name}: {value} is outside 0..{high}")
    return value


def noise_from_knobs(knobs: Mapping[str, str]) -> Noise:
    seed_text = knobs.get("runner_seed") or knobs.get("seed") or "0"
    try:
        seed = int(seed_text, 0)
    except ValueError:
        seed = zlib.crc32(seed_text.encode())
    return Noise(
        seed & 0xFFFFFFFF,
        _knob_float(knobs, "runner_jitter", 0.01, 0.5),
        _knob_float(knobs, "runner_outlier_rate", 0.002, 1.0),
        _knob_float(knobs, "runner_drift", 0.0, 10.0),
    )


def slowdown(knobs: Mapping[str, str], model: str, driver: str) -> float:
    """The ``runner_slowdown`` knob's factor on the driver's CPU time: comma-separated
    ``[DRIVER:][MODEL=]FACTOR`` items, ``DRIVER`` a build's driver mode (``reuse`` or
    ``per-inference``), ``MODEL`` an architecture name; the most specific item that matches wins, 1
    when none does. ``reuse:resnet8=1.2`` makes the reuse build 20 % slower on resnet8 only: how a
    test makes one build slower for one model (a regression to find in a history of runs) without a
    second runner build; ``1.1`` slows every build and model (a platform that moved)."""
    factors = slowdown_factors(knobs.get("runner_slowdown") or "")
    return next((factors[key] for key in ((driver, model), ("*", model), (driver, "*"), ("*", "*"))
                 if key in factors), 1.0)


def slowdown_factors(text: str) -> dict[tuple[str, str], float]:
    """Every item of a ``runner_slowdown`` value by ``(driver, model)`` (``*``: any); UsageError
    for an item whose factor is no number within 0.1..100, whichever build and model it is for."""
    factors: dict[tuple[str, str], float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        scope, colon, rest = item.partition(":")
        mode, rest = (scope.strip(), rest) if colon else ("*", scope)
        name, sep, value = rest.partition("=")
        chosen = (value if sep else name).strip()
        try:
            factor = float(chosen)
        except ValueError:
            raise UsageError(f"knob runner_slowdown: {chosen!r} is not a number (e.g. 1.2, "
                             "resnet8=1.2 or reuse:resnet8=1.2)") from None
        if not 0.1 <= factor <= 100.0:
            raise UsageError(f"knob runner_slowdown: {factor} is outside 0.1..100")
        factors[(mode, name.strip() if sep else "*")] = factor
    return factors


