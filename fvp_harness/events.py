"""What the library reports while it works: ``Event``, and the ``Listener`` it hands events to.

The library never prints: it calls ``listener(Event(...))``, a plain callable, from whichever thread
does the work; the CLI shows events (``cli.progress.ProgressView``), a test collects them. This
module imports nothing, so every layer may report progress. The event kinds and their fields:
docs/architecture.md, "Events".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Event", "Listener", "null_listener"]


@dataclass(frozen=True)
class Event:
    """One thing that happened during a run (see the module docstring for kinds and fields)."""

    kind: str
    session: str | None = None
    unit: str | None = None
    name: str | None = None
    status: str | None = None
    seconds: float | None = None
    total: int | None = None
    skipped: int | None = None
    sessions: int | None = None
    count: int | None = None
    detail: str | None = None
    scenario: str | None = None


Listener = Callable[[Event], None]
"""What the library calls with each event; must be cheap and thread-safe."""


def null_listener(event: Event) -> None:
    """The default listener: ignore everything (library use, tests)."""
