"""Host processes the harness starts for the user (host runners, build commands): each one ours to
end, whole.

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

from __future__ import annotations

import atexit
import logging
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from fvp_harness.targets.supervise import dies_with_harness, stop_tree

__all__ = ["END_GRACE_S", "JOB_ENV", "ProcessTree", "end_all", "marked_processes"]

log = logging.getLogger(__name__)

JOB_ENV = "FVP_HARNESS_JOB"
"""Environment variable whose per-command token marks every descendant of a ``ProcessTree``."""

END_GRACE_S = 2.0
"""Seconds between SIGTERM and SIGKILL when a tree is ended (a build may want to remove its temp
files)."""

_LIVE: set[ProcessTree] = set()
_LIVE_LOCK = threading.Lock()


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
    """Live processes whose environment carries ``JOB_ENV=token`` (the environment a process started
    with)."""
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


class ProcessTree:
    """One host command and everything it starts (see the module docstring). ``proc`` is its
    ``Popen``."""

    def __init__(self, proc: subprocess.Popen[bytes], token: str, label: str) -> None:
        self.proc = proc
        self.token = token
        self.label = label
        self._known: dict[int, int] = {}
        """pid -> start time of every descendant seen so far (a pid reused by a stranger is never
        signalled)."""
        self._ended = False

    @classmethod
    def start(cls, argv: Sequence[str], *, label: str, cwd: Path | str | None = None,
              env: Mapping[str, str] | None = None,
              stdin: int | IO[Any] | None = subprocess.DEVNULL,
              stdout: int | IO[Any] | None = None, stderr: int | IO[Any] | None = None,
              grace: float = END_GRACE_S) -> ProcessTree:
        """Start ``argv`` under a supervisor in a new session, marked with a fresh token; registered
        until ``end``. ``grace``: what the command leaves running when it exits gets SIGTERM, this
        long, then SIGKILL. Raises OSError when it cannot start."""
        token = uuid.uuid4().hex
        child_env = dict(os.environ if env is None else env)
        child_env[JOB_ENV] = token
        proc = subprocess.Popen(dies_with_harness(list(argv), grace), cwd=cwd, env=child_env,
                                stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True)
        tree = cls(proc, token, label)
        with _LIVE_LOCK:
            _LIVE.add(tree)
        _install_atexit()
        return tree

    @property
    def pid(self) -> int:
        """The supervisor's pid (also the process group of the command)."""
        return self.proc.pid

    def poll(self) -> int | None:
        """The command's exit status once it and everything it left running are gone; None
        before."""
        return self.proc.poll()

    def _members(self) -> dict[int, int]:
        """Every live process of the tree now but the supervisor: its descendants, the group, the
        token carriers."""
        found: set[int] = set()
        found |= _descendants([self.proc.pid, *self._known])
        found |= marked_processes(self.token)
        for pid in _all_pids():
            stat = _stat(pid)
            if stat is not None and stat[1] == self.proc.pid:
                found.add(pid)
        members: dict[int, int] = {}
        for pid in found:
            stat = _stat(pid)
            if stat is None or pid in (os.getpid(), self.proc.pid):
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
        """End the whole tree: SIGTERM to the group and every member, ``grace`` seconds, then the
        supervisor SIGKILLs what is left and is reaped. Never raises; safe to call twice."""
        try:
            self._end(grace)
        except Exception:  # cleanup must not hide why we are ending it
            log.exception("ending %s failed", self.label)
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(self)

    def _end(self, grace: float) -> None:
        if self.proc.poll() is None:
            members = self._members()
            if members and grace > 0:
                log.debug("%s: ending %s process(es): %s", self.label, len(members),
                          sorted(members))
                # the supervisor ignores it; the command does not
                _signal_group(self.proc.pid, signal.SIGTERM)
                for pid in members:
                    _signal(pid, signal.SIGTERM)
                with _suppress_timeout():
                    self.proc.wait(timeout=grace)
            if self.proc.poll() is None:
                stop_tree(self.proc.pid)
                with _suppress_timeout():
                    self.proc.wait(timeout=3.0)
            # a supervisor that does not answer: the group, then below by token
            if self.proc.poll() is None:
                _signal_group(self.proc.pid, signal.SIGKILL)
                with _suppress_timeout():
                    self.proc.wait(timeout=1.0)
        # a supervisor killed by someone else left its holdings: by token and known pid
        for _ in range(3):
            left = self._members()
            if not left:
                break
            for pid in left:
                _signal(pid, signal.SIGKILL)
            end = time.monotonic() + 1.0
            while time.monotonic() < end and any(_stat(pid) is not None for pid in left):
                time.sleep(0.01)
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
