"""Boot a run's instances while its artifacts build (the boot needs none of them), in threads of
their own, and hand each to the session that asks (docs/architecture.md, "One scheduler": what a
pre-boot must never do)."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from fvp_harness.events import Event, Listener, null_listener
from fvp_harness.run.instances import TargetFactory
from fvp_harness.targets.base import Target

__all__ = ["EarlyBootCancelled", "PreBoot", "PreBooted"]

log = logging.getLogger(__name__)


class EarlyBootCancelled(Exception):
    """Entering a ``PreBooted`` that was cancelled before anyone took it (its instance is
    closed)."""


class PreBooted(contextlib.AbstractContextManager[Target]):
    """One instance booting (or booted) in its own thread; entering waits for the boot and returns
    the target, or raises what the boot raised. ``boot_seconds`` is the boot's own duration (not the
    wait)."""

    def __init__(self, factory: TargetFactory, name: str, log_dir: Path) -> None:
        self.name = name
        self.log_dir = log_dir
        self._factory = factory
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._context: contextlib.AbstractContextManager[Target] | None = None
        self._target: Target | None = None
        self._error: BaseException | None = None
        self._cancelled = False
        self._taken = False
        self.boot_seconds: float | None = None
        self._thread = threading.Thread(target=self._boot, name=f"preboot-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _boot(self) -> None:
        began = time.monotonic()
        try:
            context = self._factory(self.name, self.log_dir)
            target = context.__enter__()
        # raised to the session that takes it (a failed boot, counted and retried)
        except BaseException as exc:
            self._error = exc
            self._done.set()
            return
        self.boot_seconds = round(time.monotonic() - began, 3)
        with self._lock:
            cancelled = self._cancelled
            if not cancelled:
                self._context, self._target = context, target
        if cancelled:  # nobody will take it: close it now that its boot is over
            try:
                context.__exit__(None, None, None)
            except Exception:  # cleanup must not hide why we are closing
                log.exception("closing %s failed", self.name)
        self._done.set()

    # -- the session's side ------------------------------------------------------------------------

    def __enter__(self) -> Target:
        with self._lock:
            self._taken = True
        self._done.wait()
        if self._error is not None:
            raise self._error
        if self._target is None:  # cancelled before anyone took it: its boot ended in a close
            raise EarlyBootCancelled(f"{self.name}: closed before a session took it")
        return self._target

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> bool | None:
        context = self._context
        self._context = None
        if context is None:
            return None
        return context.__exit__(kind, value, traceback)

    # -- nobody took it ----------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._thread.ident is not None

    def cancel(self, *, wait: bool = False) -> None:
        """Close the instance if nobody took it: now when booted, at the end of its boot otherwise;
        ``wait``: also wait for a boot in progress to end (and so for that close), so the instance
        cannot outlive the caller."""
        with self._lock:
            taken = self._taken
            if not taken:
                self._cancelled = True
                context, self._context = self._context, None
        if not taken and context is not None:
            try:
                context.__exit__(None, None, None)
            except Exception:  # cleanup must not hide why we are closing
                log.exception("closing %s failed", self.name)
        if wait and self.started and self._thread is not threading.current_thread():
            self._thread.join()


class PreBoot:
    """The early boots of one run (see the module docstring): ``take(session)`` hands a session its
    instance."""

    def __init__(self, factory: TargetFactory, sessions: Sequence[str],
                 log_dir_for: Callable[[str], Path],
                 name_for: Callable[[str], str], listener: Listener = null_listener) -> None:
        self._instances: dict[str, PreBooted] = {}
        for session in sessions:
            name = name_for(session)
            self._instances[session] = PreBooted(factory, name, log_dir_for(name))
        self._listener = listener
        self._lock = threading.Lock()

    def __enter__(self) -> PreBoot:
        for instance in self._instances.values():
            self._listener(Event("boot", session=instance.name, detail="early"))
            instance.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def take(self, session: str) -> PreBooted | None:
        """The instance booting for ``session`` (once; None when there is none or it was taken)."""
        with self._lock:
            return self._instances.pop(session, None)

    def close(self) -> None:
        """Close every instance no session took (see ``PreBooted.cancel``)."""
        with self._lock:
            left, self._instances = list(self._instances.values()), {}
        for instance in left:
            log.info("closing %s: booted early, no session took it", instance.name)
            instance.cancel()
