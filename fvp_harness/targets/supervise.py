"""The harness's side of ``targets/supervisor.py``: the argv that starts a command under a
supervisor, and the one way to end a supervised tree at once.

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["SUPERVISOR", "dies_with_harness", "stop_tree"]

SUPERVISOR = Path(__file__).with_name("supervisor.py")
"""The supervisor program (standard library only; run by path with ``python -I -S``)."""

_STOP = signal.SIGUSR2
"""What ``supervisor.py`` takes as "end everything now"."""


def dies_with_harness(argv: Sequence[str], grace: float = 2.0) -> list[str]:
    """``argv`` run under a supervisor (Linux; elsewhere as is): the command and everything it
    starts end when the harness dies, even by SIGKILL, and what the command leaves running when it
    exits gets SIGTERM, ``grace`` seconds, then SIGKILL. The supervisor exits as the command did;
    the caller starts it as the leader of a new session (``start_new_session``, or pexpect's pty
    fork), and signals sent to that process group reach the command (the supervisor ignores SIGINT,
    SIGTERM, SIGHUP, SIGQUIT)."""
    if not sys.platform.startswith("linux"):
        return list(argv)
    return [sys.executable, "-I", "-S", str(SUPERVISOR), str(os.getpid()), f"{grace:g}", "--",
            *argv]


def stop_tree(pid: int) -> None:
    """Ask the supervisor ``pid`` (a child of ours, not yet reaped) to SIGKILL every process it
    holds and exit; the caller waits for its exit. Elsewhere than Linux (no supervisor): SIGKILL to
    the process group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if sys.platform.startswith("linux"):
            os.kill(pid, _STOP)
        else:
            os.killpg(pid, signal.SIGKILL)
