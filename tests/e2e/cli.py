"""Running ``fvp-harness`` as a user does, a separate process, and proving it left no model behind.

Every end-to-end test drives the CLI through ``run_cli``: the process is killed if it outlives
``timeout``, and the models it started (each carries the harness's pid in ``FVP_HARNESS_OWNER_PID``)
must be gone within ``grace`` seconds; strays are killed so one leak does not poison the next test,
and the test fails naming them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.helpers import eventually
from tests.proc_scan import processes_with_env

__all__ = ["MARK", "Finished", "assert_no_models_left", "run_cli"]

MARK = "FVP_HARNESS_TEST_MARK"
"""Environment variable whose unique value marks every process of one ``run_cli(...,
scratch=...)``."""


def assert_no_models_left(pid: int, grace: float = 5.0) -> None:
    """Fail (after killing them) if processes the harness process ``pid`` started are alive after
    ``grace`` seconds."""
    eventually(lambda: not processes_with_env("FVP_HARNESS_OWNER_PID", str(pid)), timeout=grace,
               interval=0.1)
    left = processes_with_env("FVP_HARNESS_OWNER_PID", str(pid))
    for stray in left:
        os.kill(stray, signal.SIGKILL)
    assert not left, f"simulator processes left running: {left}"


class Finished(subprocess.CompletedProcess):  # type: ignore[type-arg]
    """A finished run; ``acted_after``: seconds from ``then`` (e.g. a SIGTERM) to the process's exit
    (None: never acted)."""

    acted_after: float | None = None


def run_cli(cwd: Path, *args: str, timeout: float = 300, env: Mapping[str, str] | None = None,
            scratch: Path | None = None, when: Callable[[], bool] | None = None,
            then: Callable[[subprocess.Popen[str]], None] | None = None) -> Finished:
    """``python -m fvp_harness ARGS`` in ``cwd``; its output, once the process and every model it
    started are gone.

    ``scratch``: a stricter check for tests of the process rules. The run gets a private ``TMPDIR``
    in a fresh folder under ``scratch`` and a unique ``MARK`` in its environment, which every
    descendant inherits (also a stand-in model that is not the harness's child, or that dropped
    ``FVP_HARNESS_OWNER_PID``); no marked process may outlive it and no temp file may be left
    behind.

    ``then(proc)`` is called once ``when()`` holds (polled every 50 ms; at once without ``when``): a
    fault injected mid-run; ``Finished.acted_after`` says how long the process took to exit after
    it."""
    token = uuid.uuid4().hex
    private_tmp = None
    child_env = dict(os.environ if env is None else env)
    if scratch is not None:
        private_tmp = scratch / f"tmp-{token[:8]}"
        private_tmp.mkdir(parents=True)
        child_env.update({MARK: token, "TMPDIR": str(private_tmp)})
    proc = subprocess.Popen([sys.executable, "-m", "fvp_harness", *args], cwd=cwd, text=True,
                            env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    acted: float | None = None
    try:
        # act once ``when()`` holds (a fault injected mid-run: a signal, a full disk)
        if then is not None:
            end = time.monotonic() + timeout
            while proc.poll() is None and time.monotonic() < end and not (when is None or when()):
                time.sleep(0.05)
            if proc.poll() is None:
                then(proc)
                acted = time.monotonic()
            timeout = max(1.0, end - time.monotonic())
        out, err = proc.communicate(timeout=timeout)
        exited = time.monotonic()
    finally:
        if proc.poll() is None:
            proc.kill()
            out, err = proc.communicate()
        if scratch is None:
            assert_no_models_left(proc.pid)
        else:
            _assert_none_marked(token, f"fvp-harness {' '.join(args)}")
    if private_tmp is not None:
        assert not list(private_tmp.iterdir()), (
            f"temp files left behind: {list(private_tmp.iterdir())}")
    done = Finished(proc.args, proc.returncode, out, err)
    done.acted_after = None if acted is None else round(exited - acted, 2)
    return done


def _assert_none_marked(token: str, what: str, grace: float = 5.0) -> None:
    """Fail (after killing them) if processes carrying ``MARK=token`` are alive after ``grace``
    seconds."""
    eventually(lambda: not processes_with_env(MARK, token), timeout=grace, interval=0.1)
    left = processes_with_env(MARK, token)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes left running after `{what}`: {left}"
