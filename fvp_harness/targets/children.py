"""Host processes the harness starts for the user (host runners, build commands): each one ours to end, whole.

Why a module of its own: a runner or a build is the user's shell text, and shell text starts what it likes. A
runner that starts ``setsid sleep 100000 &`` with its stdout open used to hang the harness (the pipe never reached
EOF, and the wait after the kill had no deadline) and the child outlived it. So every such command is a
``ProcessTree``:

- it runs in its own session (process group) with the parent-death signal (``fvp.dies_with_harness``: SIGKILL when
  the harness dies, even by SIGKILL), and with ``FVP_HARNESS_JOB=<token>`` in its environment, which every
  descendant inherits;
- on Linux the harness is a child subreaper (``PR_SET_CHILD_SUBREAPER``) while any tree is live, so a grandchild
  whose parent died is re-parented to the harness rather than to init: it stays in reach of the ppid walk below,
  and is reaped here (only while a tree is live: a long-lived process would otherwise collect zombies of every
  child's orphans);
- ``end()`` finds the whole tree however it escaped: the process group, the ppid descendants of the shell (taken
  while it still lives) and every process carrying the token (a ``setsid`` child in a session of its own), sends
  SIGTERM, waits ``grace`` seconds, then SIGKILLs what is left and reaps what was re-parented to us. It is called
  on success too: nothing a command started outlives the command;
- the live trees are registered, so ``end_all`` (atexit, the CLI's second stop) ends them on the harness's way out.

Every wait here has a deadline; nothing raises from ``end`` (it runs in ``finally`` blocks).
"""

from __future__ import annotations

import atexit
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from fvp_harness.targets.fvp import dies_with_harness

__all__ = ["END_GRACE_S", "JOB_ENV", "ProcessTree", "enable_subreaper", "end_all", "marked_processes"]

log = logging.getLogger(__name__)

JOB_ENV = "FVP_HARNESS_JOB"
"""Environment variable whose per-command token marks every descendant of a ``ProcessTree``."""

END_GRACE_S = 2.0
"""Seconds between SIGTERM and SIGKILL when a tree is ended (a build may want to remove its temp files)."""

_PR_SET_CHILD_SUBREAPER = 36
_subreaper_lock = threading.Lock()
_subreaper = False

_LIVE: set[ProcessTree] = set()
_PENDING = [0]
"""Trees being started (not yet in ``_LIVE``): the subreaper stays on for them."""
_LIVE_LOCK = threading.Lock()


def _leave() -> None:
    """A start that failed: it no longer holds the subreaper."""
    with _LIVE_LOCK:
        _PENDING[0] -= 1
        if not _LIVE and not _PENDING[0]:
            _release_subreaper()


def _prctl_subreaper(on: bool) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def enable_subreaper() -> bool:
    """Make the harness a child subreaper (Linux): orphaned descendants of its children are re-parented to it.
    False where that is not possible (then the token scan alone finds escaped processes). ``ProcessTree`` holds it
    only while a tree is live (``_hold_subreaper``): a long-lived process (a pytest worker, the Python API) would
    otherwise adopt, and keep as zombies, the orphans of every child it has, a simulator's included."""
    global _subreaper
    with _subreaper_lock:
        if not _subreaper:
            _subreaper = _prctl_subreaper(True)
        return bool(_subreaper)


def _release_subreaper() -> None:
    """The last live tree has ended: stop adopting orphans (each tree's end reaped the members it adopted)."""
    global _subreaper
    with _subreaper_lock:
        if _subreaper:
            _prctl_subreaper(False)
            _subreaper = False


def _stat(pid: int) -> tuple[int, int, int] | None:
    """(ppid, process group, start time) of a live, non-zombie process; None when gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[1]), int(fields[2]), int(fields[19])


def _all_pids() -> list[int]:
    try:
        return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return []


def marked_processes(token: str) -> set[int]:
    """Live processes whose environment carries ``JOB_ENV=token`` (the environment a process started with)."""
    needle = f"{JOB_ENV}={token}".encode()
    found = set()
    for pid in _all_pids():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and _stat(pid) is not None:
            found.add(pid)
    return found


def _descendants(roots: Sequence[int]) -> set[int]:
    """Every live process below ``roots`` by parent pid (one /proc scan)."""
    children: dict[int, list[int]] = {}
    for pid in _all_pids():
        stat = _stat(pid)
        if stat is not None:
            children.setdefault(stat[0], []).append(pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _reap_adopted(pids: Sequence[int]) -> None:
    """Reap the processes of ``pids`` that were re-parented to us (subreaper) and have exited (no wait)."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        except OSError:
            pass


class ProcessTree:
    """One host command and everything it starts (see the module docstring). ``proc`` is its ``Popen``."""

    def __init__(self, proc: subprocess.Popen[bytes], token: str, label: str) -> None:
        self.proc = proc
        self.token = token
        self.label = label
        self._known: dict[int, int] = {}
        """pid -> start time of every descendant seen so far (a pid reused by a stranger is never signalled)."""
        self._ended = False

    @classmethod
    def start(cls, argv: Sequence[str], *, label: str, cwd: Path | str | None = None,
              env: Mapping[str, str] | None = None, stdin: int | IO[Any] | None = subprocess.DEVNULL,
              stdout: int | IO[Any] | None = None, stderr: int | IO[Any] | None = None) -> ProcessTree:
        """Start ``argv`` in a new session, dying with the harness, marked with a fresh token; registered until
        ``end``. Raises OSError when it cannot start."""
        with _LIVE_LOCK:
            enable_subreaper()  # before the start: an orphan of its first instant is adopted too
            _PENDING[0] += 1
        token = uuid.uuid4().hex
        child_env = dict(os.environ if env is None else env)
        child_env[JOB_ENV] = token
        try:
            proc = subprocess.Popen(dies_with_harness(list(argv)), cwd=cwd, env=child_env, stdin=stdin,
                                    stdout=stdout, stderr=stderr, start_new_session=True)
        except BaseException:
            _leave()
            raise
        tree = cls(proc, token, label)
        with _LIVE_LOCK:
            _LIVE.add(tree)
            _PENDING[0] -= 1
        _install_atexit()
        return tree

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _members(self) -> dict[int, int]:
        """Every live process of the tree now: the group, the ppid descendants, the token carriers."""
        found: set[int] = set()
        if self.proc.poll() is None:
            found.add(self.proc.pid)
        found |= _descendants([self.proc.pid, *self._known])
        found |= marked_processes(self.token)
        for pid in _all_pids():
            stat = _stat(pid)
            if stat is not None and stat[1] == self.proc.pid:
                found.add(pid)
        members: dict[int, int] = {}
        for pid in found:
            stat = _stat(pid)
            if stat is None or pid == os.getpid():
                continue
            if pid in self._known and self._known[pid] != stat[2]:
                continue  # the pid was reused by another process
            members[pid] = stat[2]
        self._known.update(members)
        return members

    def wait(self, timeout: float) -> int | None:
        """The command's exit status, waiting at most ``timeout`` seconds (None: still running)."""
        try:
            return self.proc.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return None

    def end(self, grace: float = END_GRACE_S) -> None:
        """End the whole tree: SIGTERM to every member (and the group), ``grace`` seconds, then SIGKILL what is
        left, reap the shell and what was re-parented to us. Never raises; safe to call twice."""
        try:
            self._end(grace)
        except Exception:  # cleanup must not hide why we are ending it
            log.exception("ending %s failed", self.label)
        finally:
            with _LIVE_LOCK:
                was_live = self in _LIVE
                _LIVE.discard(self)
                if was_live and not _LIVE and not _PENDING[0]:
                    _release_subreaper()

    def _end(self, grace: float) -> None:
        members = self._members()
        if members:
            log.debug("%s: ending %s process(es): %s", self.label, len(members), sorted(members))
            _signal_group(self.proc.pid, signal.SIGTERM)
            for pid in members:
                _signal(pid, signal.SIGTERM)
            end = time.monotonic() + grace
            while time.monotonic() < end:
                self.proc.poll()
                _reap_adopted(list(members))
                if not any(_stat(pid) is not None for pid in members) and not self._members():
                    break
                time.sleep(0.02)
        for _ in range(3):  # whatever is left (or was started meanwhile): SIGKILL, until nothing answers
            left = self._members()
            if not left:
                break
            _signal_group(self.proc.pid, signal.SIGKILL)
            for pid in left:
                _signal(pid, signal.SIGKILL)
            end = time.monotonic() + 1.0
            while time.monotonic() < end and any(_stat(pid) is not None for pid in left):
                self.proc.poll()
                _reap_adopted(list(left))
                time.sleep(0.01)
        if self.proc.poll() is None:
            _signal_group(self.proc.pid, signal.SIGKILL)
            with _suppress_timeout():
                self.proc.wait(timeout=1.0)
        _reap_adopted(list(self._known))
        self._ended = True


class _suppress_timeout:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> bool:
        return kind is not None and issubclass(kind, subprocess.TimeoutExpired)


def end_all(grace: float = END_GRACE_S) -> None:
    """End every live tree (the harness is leaving: atexit, a second stop). Never raises."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for tree in live:
        tree.end(grace)


_atexit_done = False


def _install_atexit() -> None:
    global _atexit_done
    if not _atexit_done:
        _atexit_done = True
        atexit.register(end_all, 0.5)
