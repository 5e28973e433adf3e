"""How a terminal shows a run's events: ``ProgressView`` on a rich console.

A live bar with units done/total and an ETA on a terminal; one plain line per event when the output is not a
terminal or with ``-q``. The library only emits ``events.Event``s; this is the CLI's display of them. Tests inject
the console (``Console(file=StringIO())``) and the clock, so they need no terminal and no sleeps.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from fvp_harness.events import Event

__all__ = ["ProgressView"]


class ProgressView:
    """Shows events on a rich ``Console``: a live progress bar on a terminal, plain lines otherwise.

    ``plain`` forces plain lines (``-q``, or output to a file / CI log). ``clock`` feeds rich's ETA (tests pass a
    fake). Use it as a context manager around the run so the live display is stopped even on Ctrl-C. Thread-safe:
    sessions running in parallel report from their own threads.
    """

    def __init__(self, console: Console, *, plain: bool | None = None, clock: Callable[[], float] = time.monotonic,
                 quiet: bool = False) -> None:
        self.console = console
        self.plain = (not console.is_terminal) if plain is None else plain
        self.quiet = quiet
        self._clock = clock
        self._lock = threading.Lock()
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._done = 0
        self._failed = 0
        self._total = 0

    def __enter__(self) -> ProgressView:
        if not self.plain:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[state]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.console,
                get_time=self._clock,
                transient=False,
            )
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._handle(event)

    # -- rendering ---------------------------------------------------------------------------------------------

    def _line(self, text: str, *, important: bool = False) -> None:
        if self.quiet and not important:
            return
        if self._progress is not None:
            self._progress.console.print(text, highlight=False, markup=False)
        else:
            self.console.print(text, highlight=False, markup=False, soft_wrap=True)

    def _state(self, text: str) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, state=text)

    def _handle(self, event: Event) -> None:
        kind = event.kind
        if kind == "build":
            self._line(f"built {event.name} ({event.seconds or 0:.1f} s)")
        elif kind == "plan":
            self._total = event.total or 0
            skipped = f", {event.skipped} already stored" if event.skipped else ""
            self._line(f"{self._total} units to run on {event.sessions} instance(s){skipped}")
            if self._progress is not None:
                self._task = self._progress.add_task("units", total=self._total, state="")
        elif kind == "boot":
            self._state(f"{event.session}: booting")
            self._line(f"{event.session}: booting")
        elif kind == "booted":
            self._state(f"{event.session}: ready")
            self._line(f"{event.session}: ready after {event.seconds or 0:.1f} s")
        elif kind == "deploy":
            self._state(f"{event.session}: deploying {event.count} artifacts")
        elif kind == "deployed":
            self._line(f"{event.session}: artifacts deployed in {event.seconds or 0:.1f} s")
        elif kind == "unit":
            self._state(f"{event.session}: {event.unit}")
        elif kind == "unit_done":
            self._done += 1
            if event.status != "ok":
                self._failed += 1
            if self._progress is not None and self._task is not None:
                self._progress.update(self._task, completed=self._done)
            if event.status != "ok":
                self._line(f"{event.session}: {event.unit} FAILED: {event.detail}", important=True)
            elif self.plain:
                self._line(f"[{self._done}/{self._total}] {event.session}: {event.unit} ok "
                           f"({event.seconds or 0:.2f} s)")
        elif kind == "retry":
            self._line(f"{event.session}: {event.unit}: infrastructure failure, retrying on a fresh instance: "
                       f"{event.detail}", important=True)
        elif kind == "closed":
            self._state(f"{event.session}: stopped")
        elif kind == "analysis":
            self._state("analysis and report")
            self._line("analysing and writing the report")
        elif kind == "archived":
            self._line(f"the previous run is kept in {event.name}")
        elif kind == "rerun":
            self._line(f"{event.unit} runs again: {event.detail}")
        elif kind == "stopping":
            self._state("stopping")
            self._line("stopping: the units in flight finish and are kept, nothing new starts "
                       "(Ctrl-C again to stop at once)", important=True)

    @property
    def counts(self) -> tuple[int, int, int]:
        """(done, failed, total) units seen so far."""
        return self._done, self._failed, self._total
