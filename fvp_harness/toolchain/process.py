"""One command of the toolchain (pip, the exporter) run as its own process group, ended whole.

Why not plain ``subprocess.run``: on a timeout or a Ctrl-C it kills only the command itself, and pip
or torch may have started processes of their own. Here the command leads a new session, and whatever
happens (a timeout, an interrupt, an error in the caller's thread) the whole group is killed before
the call returns, so no process of a build or an export outlives it.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence

__all__ = ["run_whole"]


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_whole(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    merge_output: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (a list, no shell) with ``timeout``; its stdout and stderr as text
    (``merge_output``: stderr into stdout). ``subprocess.TimeoutExpired`` (with the output so far)
    when it outlives ``timeout``; the process group is killed then, on any other exception, and
    after a normal exit (leftovers)."""
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_output else subprocess.PIPE,
        text=True,
        errors="replace",
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        raise subprocess.TimeoutExpired(list(argv), timeout, output=out, stderr=err) from None
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    _kill_group(proc)
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err or "")
