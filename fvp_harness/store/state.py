"""What a stored run amounts to, read from its records and its folder's lock, not from the
manifest alone.

Why it is shaped so: docs/architecture.md, "Inside `store/`"."""

from __future__ import annotations

import contextlib
import os

from fvp_harness.errors import ConfigurationError
from fvp_harness.store.folder import LOCK_FILE, ResultStore, StoredRun

try:  # POSIX; elsewhere a ``running`` manifest is taken at its word
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["lock_held", "ok_builds", "run_state"]


def ok_builds(run: StoredRun) -> set[str]:
    """The builds with at least one ok record in ``run``; a ConfigurationError when its records
    cannot be read."""
    records = ResultStore(run.path, create=False).records()
    return {record.build for record in records if record.status == "ok"}


def lock_held(run: StoredRun) -> bool:
    """True while a live process holds the folder's lock (``ResultStore.lock``: ``run``, ``make``,
    the pytest plugin hold it for the whole run). Probed with a shared lock taken and dropped at
    once (a writer starting in that instant is told another process writes, and may start again);
    an archived run (``runs/<id>/``) is never written again, so its lock is never held."""
    if not run.current:
        return False
    if fcntl is None:  # pragma: no cover - no way to tell: the manifest's word stands
        return True
    try:
        fd = os.open(run.path / LOCK_FILE, os.O_RDONLY)
    except OSError:  # no lock file (never locked) or unreadable: nobody writes now
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def run_state(run: StoredRun) -> str:
    """``running`` (its writer is alive), ``interrupted`` (stopped, or a ``running`` nobody writes
    any more), ``aborted``, ``failed`` (finished, nothing measured ok), ``complete``, ``damaged``
    (records that cannot be read); the manifest's own word for a status this version does not know,
    ``?`` without a manifest."""
    status = run.status
    if status == "running":
        return "running" if lock_held(run) else "interrupted"
    if status == "complete":
        try:
            measured = ok_builds(run)
        except ConfigurationError:
            return "damaged"
        return "complete" if measured else "failed"
    return status or "?"
