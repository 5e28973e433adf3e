"""Simulated time and instruction counts: what kernel timestamps, ``--simlimit`` and ``--stat`` are
made of.

A real FVP is not cycle accurate: it issues about one instruction per clock tick, so simulated time
and instruction counts follow the guest's work, not the host's. Here the work is declared: boot
stages and shell commands spend a little, guest programs call ``GuestContext.advance``. While the
guest idles, simulated time still passes at ``idle_ratio`` simulated seconds per wall second (an
idle model keeps ticking), but no instructions are counted. While a guest program runs (``working``)
the guest is busy, not idle: its time is only the work it declares, so the wall time the simulator
itself needs (numpy inference, Python) never leaks into what a program measures (``Iteration i of n:
X ms``) or into its log timestamps. With ``speed``, a thread's paced steps are due one after the
other from its program's start, so that wall time is spent inside the pace rather than added to it:
a program takes its simulated time / ``speed``, as on a real model (at 0.2 a unit took 35 % longer).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

__all__ = ["PACE_CREDIT_S", "SimClock"]

PACE_CREDIT_S = 0.05
"""How far behind its pace a thread's paced work may be and catch up: the simulator's own CPU
between two paced steps (decoding the output, a driver's bookkeeping) is spent inside the model's
time instead of on top of it, as a real model's host work is its simulated time; a longer pause
(waiting for input) is not made up for."""


class SimClock:
    """Thread-safe simulated clock shared by the boot, the shells (console and ssh) and guest
    programs."""

    def __init__(
        self,
        clock_hz: int = 100_000_000,
        speed: float = 0.0,
        idle_ratio: float = 1.0,
        wall: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._lock = threading.Lock()
        self._wall = wall
        self._sleep = sleep
        self.clock_hz = clock_hz
        self.speed = speed
        self.idle_ratio = idle_ratio
        self.wall_start = wall()
        self._busy = 0.0  # simulated seconds of declared work
        self._instructions = 0
        self._idle_from: float | None = None  # wall time when idle accounting started (after boot)
        # wall seconds spent pacing declared work or running programs, not idle
        self._sleeping = 0.0
        self._working = 0  # programs running now (the console and ssh shells may run one each)
        self._working_since = 0.0
        # per thread: the wall time its paced work declared so far is due to end
        self._pace = threading.local()

    def start_idle(self) -> None:
        """From now on, wall time with nothing declared counts as idle simulated time (called when
        boot ends)."""
        with self._lock:
            if self._idle_from is None:
                self._idle_from = self._wall()

    def advance(self, seconds: float, instructions: int | None = None, pace: bool = True) -> None:
        """Spend ``seconds`` of simulated time; ``instructions`` defaults to one per clock tick.

        With ``pace`` and a ``speed`` above zero, also waits until ``seconds / speed`` wall seconds
        after the end due of this thread's previous paced step (``PACE_CREDIT_S``), so a slow
        model's pace can be imitated; the waiting is not counted again as idle time.
        """
        seconds = max(0.0, float(seconds))
        if instructions is None or instructions <= 0:
            instructions = int(seconds * self.clock_hz)
        count = int(instructions)
        with self._lock:
            self._busy += seconds
            self._instructions += count
        if pace and self.speed > 0 and seconds > 0:
            now = self._wall()
            due = getattr(self._pace, "due", None)
            if due is None or due < now - PACE_CREDIT_S:
                due = now  # nothing declared lately: the pace starts now
            due += seconds / self.speed
            self._pace.due = due
            wait = due - now
            if wait > 0:
                self._sleep(wait)
                with self._lock:
                    if not self._working:  # a running program's whole wall span is excluded already
                        self._sleeping += wait

    @contextlib.contextmanager
    def working(self) -> Iterator[None]:
        """While a guest program runs: wall time is not idle time (see the module docstring). Nests
        and overlaps: the span counts from the first program's start to the last one's end."""
        with self._lock:
            if not self._working:
                self._working_since = self._wall()
            self._working += 1
        # its own start-up (loading the model, ...) is paced work's time too
        self._pace.due = self._wall()
        try:
            yield
        finally:
            with self._lock:
                self._working -= 1
                if not self._working:
                    self._sleeping += self._wall() - self._working_since

    def now(self) -> float:
        """Simulated seconds since the model started."""
        with self._lock:
            idle = 0.0
            if self._idle_from is not None:
                wall = self._wall()
                busy_span = wall - self._working_since if self._working else 0.0
                idle = max(0.0,
                           wall - self._idle_from - self._sleeping - busy_span) * self.idle_ratio
            return self._busy + idle

    @property
    def instructions(self) -> int:
        """Instructions executed by host.cpu0 so far."""
        with self._lock:
            return self._instructions

    def wall_elapsed(self) -> float:
        """Wall seconds since the model started."""
        return self._wall() - self.wall_start
