"""How a terminal shows a run's events: ``ProgressView`` on a rich console.

A live bar with units done/total and an ETA on a terminal; one plain line per event when the output
is not a terminal (a CI log) or with ``-q``. The library only emits ``events.Event``s; this is the
CLI's display of them. Tests inject the console (``Console(file=StringIO())``) and the clock, so
they need no terminal and no sleeps.

What a CI log needs from these lines, and why each rule is here:

- every line of ``make`` names its scenario (unit lines through their session, ``smoke/s0``; build
  and analysis lines through ``Event.scenario``), because scenarios run at once and interleave;
- a unit failure is one line, printed once, cut to the width (``…``): its first line of text and the
  log that holds the rest, relative to the current folder; the run's summary then lists those units
  by id only (``failed_shown``);
- an instance ``make`` lends to the next job is not booted again, so it does not claim "ready after
  0.0 s";
- under ``run.until`` (the ``plan`` event's ``count``: the most rounds the rule may run) the plan is
  a ceiling, not a promise: lines and bar show the round and the units run so far against the most
  the rule may still run (``[round 2/≤10: 12/≤80]``), every unit the rule spares lowers that
  ceiling, and the time left is an upper bound from the rounds so far (``≤ 0:40 left``: the mean
  unit time so far times the units still possible), never rich's guess from a total the rule will
  not reach.
"""

from __future__ import annotations

import os
import re
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

from fvp_harness.cli.closed_pipe import silence_stream
from fvp_harness.events import Event

__all__ = ["LOG_WIDTH", "OutputConsole", "ProgressView", "fit_line", "format_seconds"]

LOG_WIDTH = 160
"""Width of a line when the output is not a terminal (a CI log, a file): wide enough for a unit id,
a reason and a log path, narrow enough to read without scrolling."""


class OutputConsole(Console):
    """A rich ``Console`` that outlives its reader (``fvp-harness run X 2>&1 | head -2``): on EPIPE
    it goes quiet, points its stream at /dev/null and calls ``on_closed`` once, where rich's own
    console raises ``SystemExit(1)`` from whichever thread printed (a session's, mid-unit: the run
    died with its manifest ``running``)."""

    def __init__(self, *args: object, on_closed: Callable[[], None] | None = None,
                 **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.on_closed = on_closed
        self.closed = False

    def on_broken_pipe(self) -> None:
        self.quiet = True
        silence_stream(self.file)
        if not self.closed:
            self.closed = True
            if self.on_closed is not None:
                self.on_closed()


_LOG_TAIL = re.compile(r"\s*\(log: (?P<log>[^()]+)\)\s*$")


def _relative(path: str) -> str:
    """``path`` relative to the current folder when it is inside it (shorter lines), else as
    given."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return relative if not relative.startswith("..") else path


def fit_line(head: str, reason: str, width: int, log: str | None = None) -> str:
    """``head`` + the first line of ``reason`` + `` [log]``, cut to ``width`` characters with ``…``
    (the reason is cut first; the log path is dropped only when the reason would keep fewer than 24
    characters)."""
    first = reason.strip().splitlines()[0] if reason.strip() else "(no message)"
    tail = f" [{log}]" if log else ""
    budget = width - len(head) - len(tail)
    if tail and budget < 24:
        tail, budget = "", width - len(head)
    if len(first) > budget:
        first = first[: max(1, budget - 1)] + "…"
    return head + first + tail


_ROUND = re.compile(r"^r(?P<rep>\d+)-")


def format_seconds(seconds: float) -> str:
    """``M:SS`` (``H:MM:SS`` from an hour), as rich shows elapsed time."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class ProgressView:
    """Shows events on a rich ``Console``: a live progress bar on a terminal, plain lines otherwise.

    ``plain`` forces plain lines (``-q``, or output to a file / CI log). ``clock`` feeds rich's ETA
    (tests pass a fake). ``width`` is how long a line may be (default: the terminal's width,
    ``LOG_WIDTH`` when not a terminal). Use it as a context manager around the run so the live
    display is stopped even on Ctrl-C. Thread-safe: sessions running in parallel report from their
    own threads.
    """

    def __init__(self, console: Console, *, plain: bool | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 quiet: bool = False, width: int | None = None) -> None:
        self.console = console
        self.plain = (not console.is_terminal) if plain is None else plain
        self.quiet = quiet
        self.width = width or (console.width if console.is_terminal else LOG_WIDTH)
        self._clock = clock
        self._lock = threading.Lock()
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._done = 0
        self._failed = 0
        self._total = 0
        self._rounds = 0
        """``run.until``: the most rounds the rule may run (0: a fixed matrix, ``total`` is what
        will run)."""
        self._round = 0
        self._spared = 0
        self._unit_seconds = 0.0
        self.failed_shown: list[str] = []
        """Units whose failure was printed (``unit`` in ``run``, ``scenario/unit`` in ``make``), in
        order."""

    def __enter__(self) -> ProgressView:
        return self

    def _start_bar(self, adaptive: bool) -> None:
        """The live bar, once the plan says what kind of run this is: with ``run.until`` the count
        reads ``12/≤80`` and the time left is ``_left()``'s upper bound; else rich's count and
        ETA."""
        if self.plain or self._progress is not None:
            return
        columns = [TextColumn("[bold]{task.description}"), BarColumn()]
        if adaptive:
            columns += [TextColumn("{task.completed}/≤{task.total}"),
                        TextColumn("{task.fields[state]}"),
                        TimeElapsedColumn(), TextColumn("{task.fields[left]}")]
        else:
            columns += [MofNCompleteColumn(), TextColumn("{task.fields[state]}"),
                        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()]
        self._progress = Progress(*columns, console=self.console, get_time=self._clock,
                                  transient=False)
        self._progress.start()

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._handle(event)

    # -- rendering ---------------------------------------------------------------------------------

    def _line(self, text: str, *, important: bool = False) -> None:
        if self.quiet and not important:
            return
        if self._progress is not None:
            self._progress.console.print(text, highlight=False, markup=False, soft_wrap=True)
        else:
            self.console.print(text, highlight=False, markup=False, soft_wrap=True)

    def _state(self, text: str) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, state=text)

    def _failure(self, head: str, detail: str | None) -> str:
        """One line for a failure: its first line of text and the log path the library appended
        (``(log: X)``)."""
        text = (detail or "").strip()
        match = _LOG_TAIL.search(text)
        log = None
        if match is not None:
            log, text = _relative(match.group("log").strip()), text[: match.start()]
        return fit_line(head, text, self.width, log)

    def _handle(self, event: Event) -> None:
        kind = event.kind
        where = f"{event.scenario}: " if event.scenario else ""
        if kind == "build":
            self._line(f"{where}built {event.name} ({event.seconds or 0:.1f} s)")
        elif kind == "plan":
            self._total = event.total or 0
            self._rounds = event.count or 0
            skipped = f", {event.skipped} already stored" if event.skipped else ""
            if self._rounds:
                self._line(f"{where}at most {self._total} units to run in up to {self._rounds} "
                           f"rounds on {event.sessions} instance(s){skipped} (run.until: each "
                           "model stops once its CI is narrow enough or its verdict settled)")
            else:
                self._line(f"{where}{self._total} units to run on {event.sessions} "
                           f"instance(s){skipped}")
            self._start_bar(bool(self._rounds))
            if self._progress is not None:
                self._task = self._progress.add_task(
                    self._description(), total=self._total, state="", left=self._left()
                )
        elif kind == "boot":
            if event.detail == "reused":
                self._state(f"{event.session}: reusing the booted instance")
                self._line(f"{event.session}: on the instance already booted for the previous job")
            # run.preboot: the boot needs no artifact, so it starts first
            elif event.detail == "early":
                self._state(f"{event.session}: booting")
                self._line(f"{event.session}: booting (while the artifacts build)")
            else:
                self._state(f"{event.session}: booting")
                self._line(f"{event.session}: booting")
        elif kind == "booted":
            self._state(f"{event.session}: ready")
            if event.detail != "reused":
                self._line(f"{event.session}: ready after {event.seconds or 0:.1f} s")
        elif kind == "deploy":
            self._state(f"{event.session}: deploying {event.count} artifacts")
        elif kind == "deployed":
            self._line(f"{event.session}: artifacts deployed in {event.seconds or 0:.1f} s")
        elif kind == "unit":
            self._state(f"{event.session}: {event.unit}")
        elif kind == "unit_done":
            self._done += 1
            self._unit_seconds += event.seconds or 0.0
            match = _ROUND.match(event.unit or "")
            if match is not None:
                self._round = max(self._round, int(match.group("rep")) + 1)
            if event.status != "ok":
                self._failed += 1
            self._update_bar()
            if event.status != "ok":
                scenario = ((event.session or "").split("/")[0] if "/" in (event.session or "")
                            else "")
                self.failed_shown.append(f"{scenario}/{event.unit}" if scenario
                                         else str(event.unit))
                self._line(self._failure(f"{event.session}: {event.unit} FAILED: ", event.detail),
                           important=True)
            elif self.plain:
                self._line(f"[{self._count()}] {event.session}: {event.unit} ok "
                           f"({event.seconds or 0:.2f} s)")
        # run.until: its model needs no more rounds; the ceiling comes down
        elif kind == "unit_skipped":
            self._spared += 1
            self._total = max(self._done, self._total - 1)
            self._update_bar()
        elif kind == "retry":
            self._line(self._failure(f"{event.session}: {event.unit}: infrastructure failure, "
                                     "retrying on a fresh instance: ", event.detail),
                       important=True)
        elif kind == "stolen":  # work stealing: an idle instance took units dealt to a busier one
            self._line(f"{event.session}: took {event.count} not-started unit(s) of a busier "
                       f"instance: {event.detail}")
        elif kind == "closed":
            self._state(f"{event.session}: stopped")
        elif kind == "analysis":
            self._state("analysis and report")
            self._line(f"{where}analysing and writing the report")
        elif kind == "archived":
            self._line(f"{where}the previous run is kept in {event.name}")
        elif kind == "baseline":
            if event.status == "warning":
                self._line(fit_line(f"{where}warning: stored baseline differs: ",
                                    event.detail or "", self.width),
                           important=True)
            elif event.status == "skipped":  # a run the ref passed over: said even with -q
                self._line(f"{where}baseline {event.name}: skipped {event.detail}", important=True)
            else:
                self._line(f"{where}baseline {event.name}: {event.detail}")
        elif kind == "rerun":
            self._line(f"{where}{event.unit} runs again: {event.detail}")
        elif kind == "fail_fast":  # run.fail_fast: one line, the failure and its unit log
            self._state("stopping")
            self._line(event.detail or "stopped early", important=True)
        elif kind == "stopping":
            self._state("stopping")
            self._line("stopping: the units in flight finish and are kept, nothing new starts "
                       "(Ctrl-C again to stop at once)", important=True)

    def _count(self) -> str:
        """``3/8``; under ``run.until`` ``round 2/≤10: 12/≤80`` (the most the rule may still
        run)."""
        if not self._rounds:
            return f"{self._done}/{self._total}"
        return f"round {self._round}/≤{self._rounds}: {self._done}/≤{self._total}"

    def _description(self) -> str:
        return f"round {max(self._round, 1)}/≤{self._rounds}" if self._rounds else "units"

    def _left(self) -> str:
        """``run.until``: an upper bound of the time left, from the rounds so far (mean unit time
        times the units the rule may still run); empty before the first unit."""
        if not self._rounds or not self._done:
            return ""
        left = self._unit_seconds / self._done * max(0, self._total - self._done)
        return f"≤ {format_seconds(left)} left"

    def _update_bar(self) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=self._done, total=self._total,
                                  description=self._description(), left=self._left())

    @property
    def spared(self) -> int:
        """Units ``run.until``'s stopping rule spared (``unit_skipped`` events) so far."""
        return self._spared

    @property
    def counts(self) -> tuple[int, int, int]:
        """(done, failed, total) units seen so far."""
        return self._done, self._failed, self._total
