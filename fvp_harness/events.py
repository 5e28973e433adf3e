"""What the library reports while it works: ``Event``, and the ``Listener`` it hands events to.

The library (artifacts, execute, pipeline, batch) never prints: it calls ``listener(Event(...))``, a plain
callable, from whichever thread does the work. What to do with events is the caller's choice: the CLI shows them
with ``cli.progress.ProgressView`` (rich), a test collects them in a list, a library user ignores them. This module
imports nothing, so every layer may report progress without pulling in a display library.

Event kinds (``Event.kind``) and the fields they use:

=================  =================================================================================
``archived``       ``name``: the folder the previous run was moved to (``runs/<id>``) before a new run
``baseline``       ``name`` (the baseline build), ``detail``: where ``compare.baseline_from`` takes it from, or
                   (``status`` ``warning``) a soft difference between that run and this one
``rerun``          ``unit``, ``detail``: ``--resume`` measures it again, and why (``changed: run``, ...)
``build``          ``name`` artifact built, ``seconds``
``plan``           ``total`` units to run, ``skipped`` (already stored, ``--resume``), ``sessions``; with
                   ``run.until`` ``count``: the most rounds the rule may run (``total`` is then a ceiling)
``boot``           ``session`` (instance name) is booting (``detail`` ``reused``: ``make`` lends it an instance
                   that is already booted)
``booted``         ``session``, ``seconds`` from launch to a ready shell (``detail`` ``reused``: no boot happened)
``deploy``         ``session``, ``count`` artifacts being put into the guest
``deployed``       ``session``, ``seconds``
``unit``           ``session``, ``unit`` starts
``unit_done``      ``session``, ``unit``, ``status`` (ok / failed), ``seconds``, ``detail`` (failure text)
``retry``          ``session``, ``unit``, ``detail`` (the infrastructure failure), on a fresh instance
``unit_skipped``   ``session``, ``unit`` not run: ``run.until`` stopped its model (enough repetitions)
``closed``         ``session`` stopped
``analysis``       analysis and report are being written
``stopping``       a stop was requested (first Ctrl-C): the units in flight finish, nothing new starts
=================  =================================================================================

``scenario`` names the scenario an event belongs to when several run at once (``make``: ``build``, ``analysis``;
unit events carry it in ``session``, ``smoke/s0``).
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
