"""Deadlines with named phases, so every timeout says what it waited for, for how long, and where to
look.

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["PHASES", "Deadline", "TimeoutBudget"]

Clock = Callable[[], float]

PHASES = ("boot", "login", "command", "deploy", "unit", "session")
"""The phases a scenario can set in ``fvp.timeouts`` (their names are the config keys shown in
messages)."""


@dataclass
class Deadline:
    """A point in time by which one named phase must be done.

    ``seconds`` is the scaled budget the phase was given (kept for messages); ``config_key`` names
    the scenario setting that controls it (``fvp.timeouts.boot``), so a timeout message can say
    which knob to turn.
    """

    phase: str
    seconds: float
    clock: Clock = time.monotonic
    config_key: str | None = None
    parent: Deadline | None = None
    start: float = field(default=0.0)

    def __post_init__(self) -> None:
        if not self.start:
            self.start = self.clock()

    @classmethod
    def after(cls, seconds: float, phase: str, *, clock: Clock = time.monotonic,
              config_key: str | None = None ) -> Deadline:
        """A deadline ``seconds`` from now."""
        return cls(phase=phase, seconds=float(seconds), clock=clock, config_key=config_key)

    @property
    def end(self) -> float:
        own = self.start + self.seconds
        return min(own, self.parent.end) if self.parent is not None else own

    def remaining(self) -> float:
        """Seconds left (never negative)."""
        return max(0.0, self.end - self.clock())

    def elapsed(self) -> float:
        return self.clock() - self.start

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def slice(self, most: float) -> float:
        """The shorter of ``most`` and what is left: the timeout for one poll inside a waiting
        loop."""
        return max(0.0, min(most, self.remaining()))

    def child(self, phase: str, seconds: float | None = None, *,
              config_key: str | None = None) -> Deadline:
        """A nested phase that ends at its own budget or at this deadline, whichever comes first."""
        budget = self.remaining() if seconds is None else float(seconds)
        return Deadline(phase=phase, seconds=budget, clock=self.clock,
                        config_key=config_key or self.config_key, parent=self)

    def limiting(self) -> Deadline:
        """The deadline that actually ends first (this one or an ancestor): the one a timeout
        message should name."""
        own_end = self.start + self.seconds
        if self.parent is not None and self.parent.end < own_end:
            return self.parent.limiting()
        return self

    def message(self, waited_for: str, *, log_path: Path | str | None = None,
                extra: str = "") -> str:
        """A timeout message: what was awaited, for how long, in which phase, where the log is, what
        to change.

        Example: ``no login prompt on host_terminal_0 after 300 s (phase boot); see
        logs/s1/host_terminal_0.log; raise fvp.timeouts.boot or pass --timeout-scale``.
        """
        limiting = self.limiting()
        text = f"{waited_for} after {limiting.seconds:.4g} s (phase {limiting.phase})"
        if extra:
            text += f" ({extra})"
        if log_path is not None:
            text += f"; see {log_path}"
        knob = (limiting.config_key or
                (f"fvp.timeouts.{limiting.phase}" if limiting.phase in PHASES else None))
        if knob:
            text += f"; raise {knob} or pass --timeout-scale"
        else:
            text += "; pass --timeout-scale to allow more time"
        return text


@dataclass(frozen=True)
class TimeoutBudget:
    """The scenario's timeouts multiplied by every scale factor, resolved once per session.

    Built from ``scenario.fvp.timeouts`` (any object with the phase attributes),
    ``fvp.timeout_scale`` and the CLI's ``--timeout-scale``.
    """

    seconds: dict[str, float]
    scale: float = 1.0
    clock: Clock = time.monotonic

    @classmethod
    def from_config(cls, timeouts: object, *, scenario_scale: float = 1.0, cli_scale: float = 1.0,
                    clock: Clock = time.monotonic) -> TimeoutBudget:
        scale = float(scenario_scale) * float(cli_scale)
        if scale <= 0:
            raise ValueError(f"timeout scale must be positive, got {scale}")
        values = {phase: float(getattr(timeouts, phase)) * scale
                  for phase in PHASES if hasattr(timeouts, phase)}
        return cls(seconds=values, scale=scale, clock=clock)

    def __getitem__(self, phase: str) -> float:
        return self.seconds[phase]

    def start(self, phase: str, *, parent: Deadline | None = None,
              seconds: float | None = None) -> Deadline:
        """A fresh deadline for ``phase`` (optionally capped by ``parent``)."""
        budget = self.seconds[phase] if seconds is None else seconds * self.scale
        deadline = Deadline(phase=phase, seconds=budget, clock=self.clock,
                            config_key=f"fvp.timeouts.{phase}", parent=parent)
        return deadline
