"""Seats: how many model instances may be live at once (docs/batch.md, `-j` and `--max-instances`).

``-j N`` is N seats of this process, pre-boots included. ``--max-instances M`` (or the
environment's ``FVP_HARNESS_MAX_INSTANCES``) adds M seats that every ``run`` and ``make`` of this
user on this host share: lock files ``seat-<i>.lock`` in a folder (``FVP_HARNESS_SEATS_DIR``,
default a per-user folder under the temp dir), each held with ``fcntl.flock`` while an instance
lives. A killed holder frees its seat, because the kernel drops its lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from fvp_harness.errors import ConfigurationError, InfrastructureError, Interrupted
from fvp_harness.run.instances import TargetFactory
from fvp_harness.targets.base import Target

__all__ = [
    "MAX_INSTANCES_ENV",
    "SEATS_DIR_ENV",
    "SEAT_WAIT_S",
    "Seat",
    "Seats",
    "max_instances_from_env",
    "seated",
    "shared_factory",
]

MAX_INSTANCES_ENV = "FVP_HARNESS_MAX_INSTANCES"
SEATS_DIR_ENV = "FVP_HARNESS_SEATS_DIR"
SEAT_WAIT_S = 6 * 3600.0
"""The longest a boot waits for a free shared seat (another process's run may hold it that long)."""
_POLL_S = 0.05


def max_instances_from_env() -> int | None:
    """``FVP_HARNESS_MAX_INSTANCES`` as a positive int, None when unset; ConfigurationError
    otherwise."""
    text = os.environ.get(MAX_INSTANCES_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ConfigurationError(f"{MAX_INSTANCES_ENV}={text!r}: expected a positive whole number")
    return int(text)


def _seats_dir() -> Path:
    named = os.environ.get(SEATS_DIR_ENV)
    if named:
        return Path(named)
    return Path(tempfile.gettempdir()) / f"fvp-harness-seats-{os.getuid()}"


class Seat:
    """One held seat: a local slot and, with shared seats, one locked file (``release`` is
    idempotent)."""

    def __init__(self, seats: Seats, handle: int | None) -> None:
        self._seats = seats
        self._handle = handle
        self._released = False

    def release(self) -> None:
        with self._seats.lock:
            if self._released:
                return
            self._released = True
            self._seats.live -= 1
        if self._handle is not None:
            os.close(self._handle)  # closing the descriptor drops its flock


class Seats:
    """At most ``local`` live instances in this process and, when ``shared`` is given, at most
    ``shared`` across every process using the same seats folder. Thread-safe."""

    def __init__(
        self, local: int | None, shared: int | None = None, folder: Path | None = None
    ) -> None:
        self.local = local
        self.shared = shared
        self.folder = folder or _seats_dir()
        self.lock = threading.Lock()
        self.live = 0
        self.peak = 0
        """The most instances this process held at once (a test checks it never exceeds the cap)."""
        if shared is not None:
            try:
                self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as exc:
                raise ConfigurationError(
                    f"instance seats folder {self.folder}: {exc.strerror}"
                ) from exc

    def try_acquire(self) -> Seat | None:
        """A seat if one is free now, else None (a pre-boot then does not boot ahead)."""
        with self.lock:
            if self.local is not None and self.live >= self.local:
                return None
            handle = self._lock_file() if self.shared is not None else None
            if self.shared is not None and handle is None:
                return None
            self.live += 1
            self.peak = max(self.peak, self.live)
            return Seat(self, handle)

    def acquire(
        self, stopped: Callable[[], bool], what: str, timeout: float = SEAT_WAIT_S
    ) -> Seat | None:
        """Wait for a seat; None when ``stopped()`` turned true first. Raises InfrastructureError
        naming what waited and the folder after ``timeout`` seconds."""
        end = time.monotonic() + timeout
        while True:
            seat = self.try_acquire()
            if seat is not None:
                return seat
            if stopped():
                return None
            if time.monotonic() >= end:
                where = f" (shared seats in {self.folder})" if self.shared is not None else ""
                raise InfrastructureError(
                    f"{what}: no free instance seat after {timeout:.0f} s: {self.live} live here, "
                    f"at most {self.local} (-j) here and {self.shared} (--max-instances) on this "
                    f"host{where}"
                )
            time.sleep(_POLL_S)

    def _lock_file(self) -> int | None:
        assert self.shared is not None
        for index in range(self.shared):
            path = self.folder / f"seat-{index}.lock"
            handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(handle)
                continue
            return handle
        return None


def shared_factory(
    factory: TargetFactory, shared: int | None, stopped: Callable[[], bool]
) -> TargetFactory:
    """``factory`` whose instances each hold one of ``shared`` host-wide seats while they live
    (``run --max-instances``: its early boots too); ``factory`` itself when ``shared`` is None."""
    if shared is None:
        return factory
    seats = Seats(None, shared)

    def make(name: str, log_dir: Path) -> contextlib.AbstractContextManager[Target]:
        seat = seats.acquire(stopped, name)
        if seat is None:
            raise Interrupted(f"{name}: stopped while waiting for a free instance seat")
        return seated(seat, factory(name, log_dir))

    return make


@contextlib.contextmanager
def seated(seat: Seat, context: contextlib.AbstractContextManager[Target]) -> Iterator[Target]:
    """``context`` entered while ``seat`` is held; the seat is released once it is closed (or its
    boot failed)."""
    try:
        with context as target:
            yield target
    finally:
        seat.release()
